//! A pod already bound to a node, as other pods' scheduling sees it through
//! its index summary: where it runs, its namespace and labels (for other
//! pods' affinity and spread rules), its own affinity terms (its
//! anti-affinity may keep other pods away; its affinity terms add to their
//! scores), and what preemption weighs: its name and uid, priority,
//! requests and start time.

use crate::pod::PodInfo;
use crate::requests::Requests;
use crate::selector::{EncodedLabels, Labels};
use crate::term::{self, Term};
use crate::wire::{Reader, Writer};

const VERSION: u8 = 2;
const TERMINATING: u8 = 1;

/// The four lists of pod affinity terms a pod can have.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Terms<'a> {
    pub(crate) affinity: Vec<Term<'a>>,
    pub(crate) anti_affinity: Vec<Term<'a>>,
    pub(crate) preferred_affinity: Vec<Term<'a>>,
    pub(crate) preferred_anti_affinity: Vec<Term<'a>>,
}

/// One bound pod, decoded from its summary without copying.
#[derive(Clone, Copy)]
pub(crate) struct BoundPod<'a> {
    /// The node's name, as bytes (nodes are found by them).
    pub(crate) node: &'a [u8],
    pub(crate) namespace: &'a str,
    /// Being deleted: still holds its resources, but no longer counts for
    /// topology spreading.
    pub(crate) terminating: bool,
    pub(crate) name: &'a str,
    pub(crate) uid: &'a str,
    pub(crate) priority: i32,
    pub(crate) requests: Requests,
    /// `status.startTime`, `""` if unset.
    pub(crate) start_time: &'a str,
    pub(crate) labels: EncodedLabels<'a>,
    terms: &'a [u8],
}

impl<'a> BoundPod<'a> {
    /// The summary `index` files a bound pod with.
    pub(crate) fn encode(pod: &PodInfo<'_>, node: &str, terminating: bool) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(VERSION);
        w.str(node);
        w.str(pod.namespace);
        let mut flags = 0;
        if terminating {
            flags |= TERMINATING;
        }
        w.u8(flags);
        w.str(pod.name);
        w.str(pod.uid);
        w.ivar(i64::from(pod.priority));
        pod.requests.write(&mut w);
        w.str(pod.start_time.unwrap_or(""));
        EncodedLabels::write(&mut w, pod.labels);
        for list in [
            &pod.affinity,
            &pod.anti_affinity,
            &pod.preferred_affinity,
            &pod.preferred_anti_affinity,
        ] {
            term::encode_all(&mut w, list);
        }
        w.finish()
    }

    /// Reads a summary; `None` if it is not one.
    pub(crate) fn decode(buf: &'a [u8]) -> Option<Self> {
        let mut r = Reader::new(buf);
        if r.u8()? != VERSION {
            return None;
        }
        let node = r.bytes()?;
        let namespace = r.str()?;
        let flags = r.u8()?;
        let name = r.str()?;
        let uid = r.str()?;
        let priority = i32::try_from(r.ivar()?).ok()?;
        let requests = Requests::read(&mut r)?;
        let start_time = r.str()?;
        let labels = EncodedLabels::read(&mut r)?;
        Some(Self {
            node,
            namespace,
            terminating: flags & TERMINATING != 0,
            name,
            uid,
            priority,
            requests,
            start_time,
            labels,
            terms: r.rest(),
        })
    }

    /// The encoded terms: equal bytes are equal terms.
    pub(crate) fn terms_bytes(&self) -> &'a [u8] {
        self.terms
    }

    /// All of the pod's affinity terms.
    pub(crate) fn terms(&self) -> Option<Terms<'a>> {
        let mut r = Reader::new(self.terms);
        Some(Terms {
            affinity: term::decode_all(&mut r)?,
            anti_affinity: term::decode_all(&mut r)?,
            preferred_affinity: term::decode_all(&mut r)?,
            preferred_anti_affinity: term::decode_all(&mut r)?,
        })
    }
}

impl Labels for BoundPod<'_> {
    fn label(&self, key: &str) -> Option<&[u8]> {
        self.labels.get(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api;

    #[test]
    fn summaries_round_trip() {
        let json = r#"{"metadata":{"name":"web-1","namespace":"prod","uid":"u1","labels":{"app":"web"}},
          "status":{"startTime":"2026-01-01T00:00:00Z"},
          "spec":{"affinity":{
              "podAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
                {"weight":3,"podAffinityTerm":{"labelSelector":{"matchLabels":{"app":"db"}},"topologyKey":"zone"}}]},
              "podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
                {"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}]}},
            "priority":-5,
            "containers":[{"resources":{"requests":{"cpu":"250m","memory":"1Ki"}}}]}}"#;
        let view: api::PodView<'_> = serde_json::from_str(json).unwrap();
        let pod = PodInfo::new(&view);
        let buf = BoundPod::encode(&pod, "n1", true);
        let b = BoundPod::decode(&buf).unwrap();
        assert_eq!((b.node, b.namespace), (&b"n1"[..], "prod"));
        assert!(b.terminating);
        assert_eq!((b.name, b.uid, b.priority), ("web-1", "u1", -5));
        assert_eq!((b.requests.cpu, b.requests.memory), (250, 1024));
        assert_eq!(b.start_time, "2026-01-01T00:00:00Z");
        assert_eq!(b.label("app"), Some(&b"web"[..]));
        let terms = b.terms().unwrap();
        assert_eq!(terms.anti_affinity, pod.anti_affinity);
        assert_eq!(terms.preferred_affinity, pod.preferred_affinity);
        assert!(terms.affinity.is_empty() && terms.preferred_anti_affinity.is_empty());
    }
}
