//! The status this controller writes: counts, and the `ReplicaFailure`
//! condition while creates are refused.

use serde::Serialize;
use serde_json::{Map, Value, json};
use windlass_sdk::{Error, Object, Time, conditions};

use crate::view::{RsStatus, RsView};

/// The status fields this controller owns.
pub(crate) struct Status<'m> {
    pub replicas: i64,
    pub fully_labeled: i64,
    pub ready: i64,
    pub available: i64,
    /// Pods being deleted that have not ended yet (upstream's
    /// `terminatingReplicas`, on by default since Kubernetes 1.34): what a
    /// Recreate rollout waits for.
    pub terminating: i64,
    pub observed_generation: i64,
    /// `Some(message)`: creates are being refused with this message.
    pub failed_create: Option<&'m str>,
}

impl Status<'_> {
    const FIELDS: [&'static str; 6] = [
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "terminatingReplicas",
        "observedGeneration",
    ];

    fn values(&self) -> [i64; 6] {
        [
            self.replicas,
            self.fully_labeled,
            self.ready,
            self.available,
            self.terminating,
            self.observed_generation,
        ]
    }

    /// Whether the object's status already says this. As upstream's
    /// `SetCondition`, a `ReplicaFailure` that is already there with the
    /// same reason is left as it is (its message is not compared).
    pub fn matches(&self, current: &RsStatus<'_>) -> bool {
        let counts = [
            current.replicas,
            current.fully_labeled_replicas,
            current.ready_replicas,
            current.available_replicas,
            current.terminating_replicas,
            current.observed_generation,
        ];
        counts == self.values() && self.failure_matches(current)
    }

    /// Whether the object's `ReplicaFailure` condition already says what
    /// this status would.
    pub fn failure_matches(&self, current: &RsStatus<'_>) -> bool {
        match (self.failed_create, current.replica_failure()) {
            (None, None) => true,
            (Some(_), Some(c)) => c.status == "True" && c.reason == "FailedCreate",
            _ => false,
        }
    }

    /// A status write: the ReplicaSet's identity and resourceVersion (so a
    /// stale write conflicts) and its status, keeping status fields this
    /// controller does not own.
    pub fn write_for(
        &self,
        rs: &RsView<'_>,
        current: &RsStatus<'_>,
        now: Time,
    ) -> Result<Object, Error> {
        #[derive(Serialize)]
        struct StatusWrite<'a> {
            #[serde(rename = "apiVersion")]
            api_version: &'a str,
            kind: &'a str,
            metadata: StatusWriteMeta<'a>,
            status: Map<String, Value>,
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct StatusWriteMeta<'a> {
            name: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            namespace: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            resource_version: Option<&'a str>,
        }
        let mut status = match rs
            .status
            .map(|s| serde_json::from_str(s.get()))
            .transpose()?
        {
            Some(Value::Object(s)) => s,
            _ => Map::new(),
        };
        for (field, value) in Self::FIELDS.iter().zip(self.values()) {
            status.insert((*field).to_owned(), value.into());
        }
        if !self.failure_matches(current) {
            self.set_failure(&mut status, now);
        }
        let meta = &rs.metadata;
        Object::from_serialize(&StatusWrite {
            api_version: &rs.api_version,
            kind: &rs.kind,
            metadata: StatusWriteMeta {
                name: &meta.name,
                namespace: meta.namespace.as_deref(),
                resource_version: meta.resource_version.as_deref(),
            },
            status,
        })
    }

    /// The `ReplicaFailure` condition as upstream's `calculateStatus` keeps
    /// it: a `FailedCreate` one added when a create failed and there is
    /// none (one already there stays as it is), removed once creates work.
    fn set_failure(&self, status: &mut Map<String, Value>, now: Time) {
        let mut conditions = match status.remove("conditions") {
            Some(Value::Array(c)) => c,
            _ => Vec::new(),
        };
        match self.failed_create {
            Some(message) if conditions::find(&conditions, "ReplicaFailure").is_none() => {
                let failure = json!({
                    "type": "ReplicaFailure",
                    "status": "True",
                    "reason": "FailedCreate",
                    "message": message,
                });
                conditions::set(&mut conditions, failure, now);
            }
            Some(_) => {}
            None => {
                conditions::remove(&mut conditions, "ReplicaFailure");
            }
        }
        if !conditions.is_empty() {
            status.insert("conditions".into(), Value::Array(conditions));
        }
    }
}
