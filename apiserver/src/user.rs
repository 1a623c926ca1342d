//! Who a request speaks for, once authenticated: the administrator, or a
//! service account by a token this server signed.

use serde_json::{Value, json};

use crate::satoken::ServiceAccount;

/// Who a request speaks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum User {
    /// The server's own token, or any client of a loopback server without one.
    Admin,
    /// A service account, by a token this server signed.
    ServiceAccount(ServiceAccount),
}

impl User {
    /// kube's `UserInfo` of this user.
    pub(crate) fn info(&self) -> Value {
        match self {
            Self::Admin => {
                json!({"username": "windlass-admin", "groups": ["system:masters", "system:authenticated"]})
            }
            Self::ServiceAccount(sa) => json!({
                "username": format!("system:serviceaccount:{}:{}", sa.namespace, sa.name),
                "uid": sa.uid,
                "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{}", sa.namespace), "system:authenticated"],
            }),
        }
    }
}
