//! A Node as the scheduler sees it: name, labels, taints, allocatable
//! resources and `spec.unschedulable`, and nothing else, so that heartbeats,
//! conditions and images never change its summary (and never requeue
//! pending pods).

use crate::api;
use crate::quantity;
use crate::selector::{EncodedLabels, Labels};
use crate::wire::{Reader, Writer};

const VERSION: u8 = 2;
/// Version, flags, four i64.
const HEADER: usize = 2 + 4 * 8;

/// `status.allocatable` as numbers: millicores, bytes, bytes, pods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Allocatable {
    pub(crate) cpu: i64,
    pub(crate) memory: i64,
    pub(crate) ephemeral: i64,
    pub(crate) pods: i64,
}

impl Allocatable {
    fn from_list(list: &api::StrMap<'_>) -> Self {
        let get = |name: &str, parse: fn(&str) -> Option<i64>| {
            list.get(name).and_then(parse).unwrap_or(0).max(0)
        };
        Self {
            cpu: get("cpu", quantity::milli_value),
            memory: get("memory", quantity::value),
            ephemeral: get("ephemeral-storage", quantity::value),
            pods: get("pods", quantity::value),
        }
    }
}

/// How a taint affects pods that do not tolerate it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
    /// An effect this scheduler does not know; no filter or score uses it.
    Other,
}

impl Effect {
    pub(crate) fn parse(s: &str) -> Effect {
        match s {
            "NoSchedule" => Effect::NoSchedule,
            "PreferNoSchedule" => Effect::PreferNoSchedule,
            "NoExecute" => Effect::NoExecute,
            _ => Effect::Other,
        }
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(c: u8) -> Effect {
        match c {
            0 => Effect::NoSchedule,
            1 => Effect::PreferNoSchedule,
            2 => Effect::NoExecute,
            _ => Effect::Other,
        }
    }
}

/// A node taint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Taint<'a> {
    pub(crate) key: &'a str,
    pub(crate) value: &'a str,
    pub(crate) effect: Effect,
}

/// One node, decoded from its summary without copying.
#[derive(Clone, Copy)]
pub(crate) struct NodeInfo<'a> {
    /// The name, as bytes (see `name_str`).
    pub(crate) name: &'a [u8],
    pub(crate) unschedulable: bool,
    pub(crate) allocatable: Allocatable,
    pub(crate) labels: EncodedLabels<'a>,
    taint_count: usize,
    taint_bytes: &'a [u8],
}

impl<'a> NodeInfo<'a> {
    /// The summary `index` files a Node with: a fixed header (version,
    /// flags, allocatable as four little-endian i64), then the name, the
    /// labels and the taints. Every decision reads hundreds of these, so
    /// reading one costs a few loads, and nothing is validated or parsed
    /// until a filter asks for it.
    pub(crate) fn encode(view: &api::NodeView<'_>) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(VERSION);
        w.u8(u8::from(view.spec.unschedulable));
        let a = Allocatable::from_list(&view.status.allocatable);
        for v in [a.cpu, a.memory, a.ephemeral, a.pods] {
            w.fixed_i64(v);
        }
        w.str(&view.metadata.name);
        EncodedLabels::write(&mut w, &view.metadata.labels);
        w.len(view.spec.taints.len());
        for t in &view.spec.taints {
            w.str(&t.key);
            w.str(&t.value);
            w.u8(Effect::parse(&t.effect).code());
        }
        w.finish()
    }

    /// Reads a summary; `None` if it is not one.
    pub(crate) fn decode(buf: &'a [u8]) -> Option<Self> {
        if buf.len() < HEADER || buf[0] != VERSION {
            return None;
        }
        let at = |i: usize| -> i64 {
            let mut w = [0u8; 8];
            w.copy_from_slice(&buf[2 + 8 * i..10 + 8 * i]);
            i64::from_le_bytes(w)
        };
        let allocatable = Allocatable {
            cpu: at(0),
            memory: at(1),
            ephemeral: at(2),
            pods: at(3),
        };
        let mut r = Reader::new(&buf[HEADER..]);
        let name = r.bytes()?;
        let labels = EncodedLabels::read(&mut r)?;
        let taint_count = r.len()?;
        Some(Self {
            name,
            unschedulable: buf[1] != 0,
            allocatable,
            labels,
            taint_count,
            taint_bytes: r.rest(),
        })
    }

    /// The node's name as text (names are written from text, so this only
    /// fails on a corrupt summary).
    pub(crate) fn name_str(&self) -> &'a str {
        std::str::from_utf8(self.name).unwrap_or("")
    }

    /// The node's taints, in the order the node lists them.
    pub(crate) fn taints(&self) -> impl Iterator<Item = Taint<'a>> + 'a {
        let mut r = Reader::new(self.taint_bytes);
        (0..self.taint_count).map_while(move |_| {
            Some(Taint {
                key: r.str()?,
                value: r.str()?,
                effect: Effect::from_code(r.u8()?),
            })
        })
    }

    pub(crate) fn has_taints(&self) -> bool {
        self.taint_count > 0
    }

    /// The value of label `key`, as text.
    #[cfg(test)]
    pub(crate) fn label_str(&self, key: &str) -> Option<&'a str> {
        self.labels
            .get(key)
            .and_then(|v| std::str::from_utf8(v).ok())
    }
}

impl Labels for NodeInfo<'_> {
    fn label(&self, key: &str) -> Option<&[u8]> {
        self.labels.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(
        name: &str,
        cpu: &str,
        memory: &str,
        pods: &str,
        labels: &[(&str, &str)],
        taints: &[(&str, &str, &str)],
    ) -> Vec<u8> {
        let json = crate::testutil::node_json(name, cpu, memory, pods, labels, taints);
        let view: api::NodeView<'_> = serde_json::from_str(&json).unwrap();
        NodeInfo::encode(&view)
    }

    #[test]
    fn summaries_round_trip() {
        let buf = summary(
            "n1",
            "4",
            "8Gi",
            "110",
            &[("zone", "a"), ("kubernetes.io/hostname", "n1")],
            &[
                ("dedicated", "gpu", "NoSchedule"),
                ("x", "", "PreferNoSchedule"),
            ],
        );
        let n = NodeInfo::decode(&buf).unwrap();
        assert_eq!(n.name_str(), "n1");
        assert!(!n.unschedulable);
        assert_eq!(
            n.allocatable,
            Allocatable {
                cpu: 4000,
                memory: 8 << 30,
                ephemeral: 100 << 30,
                pods: 110
            }
        );
        assert_eq!(n.label_str("zone"), Some("a"));
        let taints: Vec<_> = n.taints().collect();
        assert_eq!(taints.len(), 2);
        assert_eq!(taints[0].key, "dedicated");
        assert_eq!(taints[0].value, "gpu");
        assert_eq!(taints[1].effect, Effect::PreferNoSchedule);
    }

    #[test]
    fn heartbeats_do_not_change_the_summary() {
        let with = |beat: &str| {
            let json = format!(
                r#"{{"metadata":{{"name":"n","resourceVersion":"{beat}"}},
                   "status":{{"allocatable":{{"cpu":"1"}},
                   "conditions":[{{"type":"Ready","status":"True","lastHeartbeatTime":"{beat}"}}]}}}}"#
            );
            let view: api::NodeView<'_> = serde_json::from_str(&json).unwrap();
            NodeInfo::encode(&view)
        };
        assert_eq!(with("2026-01-01T00:00:00Z"), with("2026-01-01T00:00:40Z"));
    }
}
