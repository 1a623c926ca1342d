//! What a reconcile knows of its ReplicaSet's pods, read from the index at
//! the cost of what it needs: the counts from two sums in the common case
//! (steady, or scaling up), every pod's summary only when pods must be
//! ranked (scaling down, ended pods to prune), timed (`minReadySeconds`)
//! or compared with the template one by one (labels that differ).
//!
//! `index` files each pod twice: under its ReplicaSet's uid, and under the
//! uid and a hash of its exact label set, both with the same amounts
//! (`LIVE`, `READY`, `TERMINATING`, `ENDED`). When the second key's live
//! count, for the template's labels, equals the first's, every live pod
//! carries exactly the template's labels and all are fully labeled.

use std::time::Duration;

use windlass_sdk::{Error, IndexEntry, KindRef, Time, cache};

use crate::claim::orphans_key;
use crate::rank::{Availability, PodRank};
use crate::view::Labels;

/// The positions of the amounts each pod adds to its keys.
const LIVE: usize = 0;
const READY: usize = 1;
const TERMINATING: usize = 2;
const ENDED: usize = 3;

fn pods() -> KindRef {
    KindRef::new("v1", "Pod")
}

/// The index entry of a pod its ReplicaSet (of uid `owner`) controls.
pub(crate) fn entry(owner: &str, pod: &PodRank<'_>, summary: Vec<u8>) -> IndexEntry {
    let mut amounts = [0; 4];
    if pod.ended {
        amounts[ENDED] = 1;
    } else if pod.terminating {
        amounts[TERMINATING] = 1;
    } else {
        amounts[LIVE] = 1;
        amounts[READY] = i64::from(pod.ready);
    }
    IndexEntry::new()
        .key(owner)
        .key(labels_key(owner, &pod.labels))
        .amounts(amounts)
        .summary(summary)
}

/// The key of the pods of `owner` whose labels are exactly `labels`.
pub(crate) fn labels_key(owner: &str, labels: &Labels<'_>) -> String {
    // FNV-1a over `key\0value\0` in key order: labels hold no NUL.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (k, v) in labels {
        for b in k.bytes().chain([0]).chain(v.bytes()).chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{owner}#{h:016x}")
}

/// The pods of one ReplicaSet, as far as this reconcile needs them.
pub(crate) struct Pods<'a> {
    /// Live pods (not ended, not being deleted), best to keep first; empty
    /// when the counts sufficed.
    pub live: Vec<PodRank<'a>>,
    pub live_count: usize,
    pub ready: usize,
    pub available: usize,
    /// When the next ready pod becomes available.
    pub next_available: Option<Duration>,
    pub terminating: usize,
    /// Ended pods, which a prune deletes.
    pub ended: usize,
    pub fully_labeled: usize,
    /// Live orphan pods in the namespace (which the selector may or may
    /// not select).
    pub orphans: usize,
}

/// What to read the pods with: the summaries the index returns (kept here
/// so the pods can borrow from them).
pub(crate) struct Reader {
    summaries: Vec<Vec<u8>>,
}

impl Reader {
    pub fn new() -> Self {
        Self {
            summaries: Vec::new(),
        }
    }

    /// The pods of the ReplicaSet of uid `owner` wanting `desired` replicas.
    pub fn read<'a>(
        &'a mut self,
        owner: &str,
        namespace: &str,
        desired: usize,
        template: &Labels<'_>,
        min_ready: Duration,
        now: Time,
    ) -> Result<Pods<'a>, Error> {
        let keys = [owner, &labels_key(owner, template), &orphans_key(namespace)];
        let totals = cache::totals(&pods(), &keys)?;
        let at = |key: usize, slot: usize| -> usize {
            let sums = totals.get(key).map(Vec::as_slice).unwrap_or_default();
            usize::try_from(sums.get(slot).copied().unwrap_or(0)).unwrap_or(0)
        };
        let counted = Pods {
            live: Vec::new(),
            live_count: at(0, LIVE),
            ready: at(0, READY),
            available: at(0, READY),
            next_available: None,
            terminating: at(0, TERMINATING),
            ended: at(0, ENDED),
            fully_labeled: at(1, LIVE),
            orphans: at(2, LIVE),
        };
        let enough = min_ready.is_zero()
            && counted.ended == 0
            && counted.live_count <= desired
            && counted.fully_labeled == counted.live_count;
        if enough {
            return Ok(counted);
        }
        self.summaries = cache::lookup(&pods(), owner)?;
        let pods = Self::from_summaries(&self.summaries, template, min_ready, now)?;
        Ok(Pods {
            orphans: counted.orphans,
            ..pods
        })
    }

    fn from_summaries<'a>(
        summaries: &'a [Vec<u8>],
        template: &Labels<'_>,
        min_ready: Duration,
        now: Time,
    ) -> Result<Pods<'a>, Error> {
        let mut live: Vec<PodRank<'a>> = Vec::with_capacity(summaries.len());
        let (mut terminating, mut ended) = (0, 0);
        for summary in summaries {
            let pod: PodRank<'a> = serde_json::from_slice(summary)?;
            if pod.ended {
                ended += 1;
            } else if pod.terminating {
                terminating += 1;
            } else {
                live.push(pod);
            }
        }
        live.sort_by(PodRank::keep_first);
        let mut available = 0;
        let mut next_available: Option<Duration> = None;
        for p in &live {
            match p.availability(min_ready, now) {
                Availability::Yes => available += 1,
                Availability::After(d) => {
                    next_available = Some(next_available.map_or(d, |n| n.min(d)));
                }
                Availability::No => {}
            }
        }
        Ok(Pods {
            live_count: live.len(),
            ready: live.iter().filter(|p| p.ready).count(),
            available,
            next_available,
            terminating,
            ended,
            fully_labeled: live
                .iter()
                .filter(|p| template.iter().all(|(k, v)| p.labels.get(k) == Some(v)))
                .count(),
            live,
            orphans: 0,
        })
    }
}
