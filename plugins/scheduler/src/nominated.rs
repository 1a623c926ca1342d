//! Nominated pods' claim on the room preemption made: a pod that preempted
//! others is nominated to their node (`status.nominatedNodeName`) and waits
//! for them to go. Until it is bound, kube-scheduler counts it on that node
//! for every pod of no higher priority than its own
//! (`RunFilterPluginsWithNominatedPods`), so that a lesser pod does not take
//! the room first. Only the filters count it; scores do not.

use windlass_sdk::Error;

use crate::keys;
use crate::plugins::Usage;
use crate::pod::PodInfo;
use crate::requests::Requests;
use crate::snapshot::Cluster;
use crate::wire::{Reader, Writer};

/// The pending pods nominated to nodes that the pod being scheduled must
/// leave room for.
#[derive(Default)]
pub(crate) struct Nominated {
    /// `(node, requests)`, one per nominated pod.
    claims: Vec<(Vec<u8>, Requests)>,
}

/// What a nominated pending pod is filed with after the namespace and name
/// its summary starts with (see `index`).
pub(crate) fn encode_claim(w: &mut Writer, pod: &PodInfo<'_>, node: &str) {
    w.str(node);
    w.str(pod.uid);
    w.ivar(i64::from(pod.priority));
    pod.requests.write(w);
}

impl Nominated {
    /// The claims `pod` must respect: those of other pods of at least its
    /// priority.
    pub(crate) fn fetch(pod: &PodInfo<'_>, cluster: &mut impl Cluster) -> Result<Self, Error> {
        let found = cluster.pods(keys::NOMINATED)?;
        let claims = (found.iter())
            .filter_map(|s| decode(s))
            .filter(|c| c.uid != pod.uid && c.priority >= pod.priority)
            .map(|c| (c.node.to_vec(), c.requests))
            .collect();
        Ok(Self { claims })
    }

    /// `usage` of `node` with the claims on it added.
    pub(crate) fn on(&self, node: &[u8], mut usage: Usage) -> Usage {
        for (_, r) in self.claims.iter().filter(|(n, _)| n == node) {
            let u = &mut usage.requested;
            u.cpu = u.cpu.saturating_add(r.cpu);
            u.memory = u.memory.saturating_add(r.memory);
            u.ephemeral = u.ephemeral.saturating_add(r.ephemeral);
            usage.pods += 1;
        }
        usage
    }
}

struct Claim<'a> {
    node: &'a [u8],
    uid: &'a str,
    priority: i32,
    requests: Requests,
}

fn decode(summary: &[u8]) -> Option<Claim<'_>> {
    let mut r = Reader::new(summary);
    let (_namespace, _name) = (r.str()?, r.str()?);
    let node = r.bytes()?;
    let uid = r.str()?;
    let priority = i32::try_from(r.ivar()?).ok()?;
    let requests = Requests::read(&mut r)?;
    Some(Claim {
        node,
        uid,
        priority,
        requests,
    })
}
