//! What the kubelet files each bound pod under in the host's index: the
//! pod's node, and a few bytes that let a node's reconcile skip the pods
//! that need nothing now without reading them.
//!
//! The host calls `map` (and so wakes the node) only when this entry
//! changes, so it holds everything whose change needs the kubelet: whether
//! the pod's status is already the kubelet's word on it (which covers its
//! phase, readiness, containers and deletion), when it next changes by
//! itself (which covers the `exit-after` annotation and grace periods),
//! whether it is being deleted, and the IP it holds.

use windlass_sdk::{ObjectRef, Time};

use crate::network::Ipv4;
use crate::pod::{self, Place};
use crate::view::Pod;

const VERSION: u8 = 1;
const ATTEND: u8 = 1;
const DELETING: u8 = 2;
const ENDED: u8 = 4;

/// One pod's entry, as the node's reconcile reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    pub namespace: String,
    pub name: String,
    /// The status is not (yet) the kubelet's, or the pod is to be removed:
    /// read it now.
    pub attend: bool,
    /// It has a `deletionTimestamp` (no taint eviction to consider).
    pub deleting: bool,
    /// Succeeded or Failed: its IP is free again.
    pub ended: bool,
    /// The pod IP it holds.
    pub ip: Option<Ipv4>,
    /// When it next changes by itself.
    pub due: Option<Time>,
}

impl Summary {
    /// The summary of a bound pod: its stored status checked against what
    /// the kubelet would report at the last instant that status records.
    pub(crate) fn of(pod: &Pod<'_>) -> Self {
        let s = &pod.status;
        let ended = matches!(s.phase.as_deref(), Some("Succeeded" | "Failed"));
        let host_network = pod.spec.host_network == Some(true);
        let placed = s.host_ip.is_some() && (s.pod_ip.is_some() || host_network);
        let (attend, due) = if ended || placed && s.start_time.is_some() {
            let at = pod::as_of(pod);
            let place = Place {
                host_ip: s.host_ip.as_deref().unwrap_or_default(),
                pod_ip: None,
                record: false,
                start_events: false,
            };
            let sync = pod::sync(pod, at, &place);
            let attend = sync.status.is_some() || sync.remove || sync.due.is_some_and(|d| d <= at);
            (attend, sync.due)
        } else {
            (true, None)
        };
        Summary {
            namespace: pod
                .metadata
                .namespace
                .as_deref()
                .unwrap_or_default()
                .to_owned(),
            name: pod.metadata.name.to_string(),
            attend,
            deleting: pod.metadata.deletion_timestamp.is_some(),
            ended,
            ip: s
                .pod_ip
                .as_deref()
                .and_then(Ipv4::parse)
                .filter(|_| !host_network),
            due,
        }
    }

    /// The pod this summarises.
    pub(crate) fn pod_ref(&self) -> ObjectRef {
        ObjectRef::new("v1", "Pod", &*self.namespace, &*self.name)
    }

    /// Whether the node's reconcile must read the pod at `now`.
    pub(crate) fn needs_reading(&self, now: Time, tainted: bool) -> bool {
        self.attend || self.due.is_some_and(|d| d <= now) || tainted && !self.deleting
    }

    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.namespace.len() + self.name.len());
        let flags = [
            (self.attend, ATTEND),
            (self.deleting, DELETING),
            (self.ended, ENDED),
        ]
        .into_iter()
        .filter(|(set, _)| *set)
        .fold(0, |acc, (_, bit)| acc | bit);
        out.extend([VERSION, flags]);
        out.extend(self.ip.map_or(0, |ip| ip.0).to_le_bytes());
        out.extend(self.due.map_or(i64::MIN, Time::millis).to_le_bytes());
        for s in [&self.namespace, &self.name] {
            out.extend(u16::try_from(s.len()).unwrap_or(u16::MAX).to_le_bytes());
            out.extend(s.as_bytes());
        }
        out
    }

    pub(crate) fn decode(bytes: &[u8]) -> Option<Self> {
        let (head, rest) = bytes.split_first_chunk::<2>()?;
        let [version, flags] = *head;
        if version != VERSION {
            return None;
        }
        let (ip, rest) = rest.split_first_chunk::<4>()?;
        let (due, mut rest) = rest.split_first_chunk::<8>()?;
        let mut text = || -> Option<String> {
            let (len, tail) = rest.split_first_chunk::<2>()?;
            let len = usize::from(u16::from_le_bytes(*len));
            let s = std::str::from_utf8(tail.get(..len)?).ok()?.to_owned();
            rest = &tail[len..];
            Some(s)
        };
        let (namespace, name) = (text()?, text()?);
        let ip = u32::from_le_bytes(*ip);
        let due = i64::from_le_bytes(*due);
        Some(Summary {
            namespace,
            name,
            attend: flags & ATTEND != 0,
            deleting: flags & DELETING != 0,
            ended: flags & ENDED != 0,
            ip: (ip != 0).then_some(Ipv4(ip)),
            due: (due != i64::MIN).then(|| Time::from_millis(due)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let s = Summary {
            namespace: "default".into(),
            name: "web-1".into(),
            attend: false,
            deleting: true,
            ended: false,
            ip: Ipv4::parse("10.244.1.9"),
            due: Some(Time::from_millis(1_700_000_000_123)),
        };
        assert_eq!(Summary::decode(&s.encode()), Some(s.clone()));
        let bare = Summary {
            ip: None,
            due: None,
            attend: true,
            ..s
        };
        assert_eq!(Summary::decode(&bare.encode()), Some(bare));
        assert_eq!(Summary::decode(b"\x09"), None);
        assert_eq!(Summary::decode(&[]), None);
    }
}
