//! Taints and tolerations matched as `k8s.io/api/core/v1` matches them
//! (`Toleration.ToleratesTaint`), for plugins that schedule, run or evict
//! pods. The fields are borrowed as written; an absent one is `""`.

/// A pod's toleration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Toleration<'a> {
    pub key: &'a str,
    /// `Equal` (also when empty) or `Exists`; any other operator
    /// tolerates nothing.
    pub operator: &'a str,
    pub value: &'a str,
    /// Empty: every effect.
    pub effect: &'a str,
}

/// A node's taint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Taint<'a> {
    pub key: &'a str,
    pub value: &'a str,
    pub effect: &'a str,
}

impl Toleration<'_> {
    /// Whether this toleration tolerates `taint`: the effects agree (or
    /// the toleration names none), the keys agree (or an empty key, which
    /// with `Exists` tolerates every taint), and the values are equal
    /// unless the operator is `Exists`.
    ///
    /// ```
    /// use windlass_sdk::taints::{Taint, Toleration};
    /// let gpu = Taint { key: "dedicated", value: "gpu", effect: "NoSchedule" };
    /// let all = Toleration { operator: "Exists", ..Default::default() };
    /// assert!(all.tolerates(&gpu));
    /// ```
    pub fn tolerates(&self, taint: &Taint<'_>) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator {
            "" | "Equal" => self.value == taint.value,
            "Exists" => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toleration(json: &str) -> serde_json::Value {
        serde_json::from_str(json).unwrap()
    }

    fn of(v: &serde_json::Value) -> Toleration<'_> {
        let s = |k: &str| v[k].as_str().unwrap_or("");
        Toleration {
            key: s("key"),
            operator: s("operator"),
            value: s("value"),
            effect: s("effect"),
        }
    }

    #[test]
    fn toleration_matching() {
        let t = Taint {
            key: "dedicated",
            value: "gpu",
            effect: "NoExecute",
        };
        let bare = Taint {
            key: "dedicated",
            value: "",
            effect: "NoExecute",
        };
        for (json, on_t, on_bare) in [
            (
                r#"{"key":"dedicated","value":"gpu","effect":"NoExecute"}"#,
                true,
                false,
            ),
            (
                r#"{"key":"dedicated","operator":"Equal","value":"gpu"}"#,
                true,
                false,
            ),
            (r#"{"key":"dedicated","operator":"Equal"}"#, false, true),
            (r#"{"key":"dedicated","operator":"Exists"}"#, true, true),
            (
                r#"{"key":"dedicated","operator":"Exists","effect":"NoExecute"}"#,
                true,
                true,
            ),
            (
                r#"{"key":"dedicated","operator":"Exists","effect":"NoSchedule"}"#,
                false,
                false,
            ),
            (r#"{"operator":"Exists"}"#, true, true),
            (r#"{"operator":"Exists","effect":"NoExecute"}"#, true, true),
            (r#"{"operator":"Equal","value":"gpu"}"#, true, false),
            (r#"{"key":"dedicated","value":"cpu"}"#, false, false),
            (r#"{"key":"other","operator":"Exists"}"#, false, false),
            (
                r#"{"key":"dedicated","operator":"Gt","value":"gpu"}"#,
                false,
                false,
            ),
        ] {
            let v = toleration(json);
            assert_eq!(of(&v).tolerates(&t), on_t, "{json} on dedicated=gpu");
            assert_eq!(of(&v).tolerates(&bare), on_bare, "{json} on dedicated");
        }
    }
}
