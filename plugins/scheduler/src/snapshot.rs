//! One decision's view of the cluster, read through the index: every node's
//! summary, the summaries of just the bound pods the pod's rules can
//! select, and the resource totals of just the nodes it looks at.
//!
//! [`Cluster`] is where those reads come from: the host's cache in a
//! plugin ([`HostCache`]), plain maps in tests and benchmarks.

use std::cell::{Cell, OnceCell};
use std::collections::HashMap;
use std::collections::hash_map::Entry;

use windlass_sdk::{Error, KindRef, Object, cache};

use crate::bound::{BoundPod, Terms};
use crate::hash::FnvMap;
use crate::keys;
use crate::node::NodeInfo;
use crate::plugins::Usage;
use crate::pod::PodInfo;
use crate::selector::Selector;
use crate::term::Term;

/// Where a decision reads the cluster from.
pub(crate) trait Cluster {
    /// The summaries of the nodes filed under `key` (every node, or a shard).
    fn nodes(&mut self, key: &str) -> Result<Vec<Vec<u8>>, Error>;
    /// How many nodes there are.
    fn node_count(&mut self) -> Result<usize, Error>;
    /// The summaries of the bound pods filed under `key`.
    fn pods(&mut self, key: &str) -> Result<Vec<Vec<u8>>, Error>;
    /// What the pods bound to each of `nodes` request there.
    fn usage(&mut self, nodes: &[&[u8]]) -> Result<Vec<Usage>, Error>;
    /// How many of the pods bound to each of `nodes` the controller
    /// `owner` (a uid) controls, not counting those being deleted (the
    /// totals of [`keys::owned_on`]).
    fn owned(&mut self, owner: &str, nodes: &[&[u8]]) -> Result<Vec<i64>, Error>;
    /// Every PodDisruptionBudget (preemption reads them, rarely).
    fn budgets(&mut self) -> Result<Vec<Object>, Error>;
}

/// The host's indexed caches.
pub(crate) struct HostCache;

fn node_kind() -> KindRef {
    KindRef::new("v1", "Node")
}

fn pod_kind() -> KindRef {
    KindRef::new("v1", "Pod")
}

impl Cluster for HostCache {
    fn nodes(&mut self, key: &str) -> Result<Vec<Vec<u8>>, Error> {
        cache::lookup(&node_kind(), key)
    }

    fn node_count(&mut self) -> Result<usize, Error> {
        let totals = cache::totals(&node_kind(), &[keys::NODES])?;
        let count = totals.first().and_then(|t| t.first()).copied().unwrap_or(0);
        Ok(usize::try_from(count).unwrap_or(0))
    }

    fn pods(&mut self, key: &str) -> Result<Vec<Vec<u8>>, Error> {
        cache::lookup(&pod_kind(), key)
    }

    fn usage(&mut self, nodes: &[&[u8]]) -> Result<Vec<Usage>, Error> {
        let totals = per_node_totals(keys::NODE_PREFIX, nodes)?;
        Ok(totals.iter().map(|t| Usage::from_totals(t)).collect())
    }

    fn owned(&mut self, owner: &str, nodes: &[&[u8]]) -> Result<Vec<i64>, Error> {
        let totals = per_node_totals(&keys::owned_prefix(owner), nodes)?;
        Ok(totals.iter().map(|t| Usage::from_totals(t).pods).collect())
    }

    fn budgets(&mut self) -> Result<Vec<Object>, Error> {
        cache::list(
            &KindRef::new("policy/v1", "PodDisruptionBudget"),
            None,
            None,
        )
    }
}

/// The pod index's totals of `<prefix><node>` for each of `nodes`.
fn per_node_totals(prefix: &str, nodes: &[&[u8]]) -> Result<Vec<Vec<i64>>, Error> {
    // One buffer for all the keys, sliced: a few allocations, not one per
    // node, and one UTF-8 check for all of them.
    let mut bytes = Vec::with_capacity(nodes.iter().map(|n| n.len() + prefix.len()).sum());
    let mut ends = Vec::with_capacity(nodes.len());
    for n in nodes {
        bytes.extend_from_slice(prefix.as_bytes());
        bytes.extend_from_slice(n);
        ends.push(bytes.len());
    }
    let text = String::from_utf8(bytes).map_err(|_| Error::retry("a node name is not UTF-8"))?;
    let mut start = 0;
    let node_keys: Vec<&str> = ends
        .iter()
        .map(|&end| {
            let k = &text[start..end];
            start = end;
            k
        })
        .collect();
    cache::totals(&pod_kind(), &node_keys)
}

/// Instruction-independent counts of what a decision read, for the
/// benchmark and for tests that pin the cost of a decision.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Node summaries decoded.
    pub nodes: usize,
    /// Bound pod summaries decoded.
    pub pods: usize,
    /// Index lookups of pods.
    pub lookups: usize,
    /// Nodes whose totals were read.
    pub usage_reads: usize,
    /// Nodes run through the filters.
    pub filtered: usize,
    /// Feasible nodes found (and scored).
    pub feasible: usize,
}

/// The pod summaries a decision looked up, by key.
#[derive(Default)]
pub(crate) struct Lookups {
    by_key: HashMap<String, Vec<Vec<u8>>>,
}

impl Lookups {
    /// Looks up every key the pod's rules need (once each).
    pub(crate) fn fetch_for(
        pod: &PodInfo<'_>,
        cluster: &mut impl Cluster,
        stats: &mut Stats,
    ) -> Result<Self, Error> {
        let mut wanted: Vec<String> = vec![keys::AFFINITY.to_owned()];
        let own = [pod.namespace];
        if let Some(first) = pod.affinity.first() {
            wanted.extend(term_keys(first));
        }
        for t in pod
            .anti_affinity
            .iter()
            .chain(&pod.preferred_affinity)
            .chain(&pod.preferred_anti_affinity)
        {
            wanted.extend(term_keys(t));
        }
        for c in &pod.spread {
            wanted.extend(keys::for_selector(&c.selector, Some(&own)));
        }
        let mut by_key = HashMap::with_capacity(wanted.len());
        for k in wanted {
            if let Entry::Vacant(slot) = by_key.entry(k) {
                stats.lookups += 1;
                let found = cluster.pods(slot.key())?;
                slot.insert(found);
            }
        }
        Ok(Self { by_key })
    }

    fn get(&self, key: &str) -> &[Vec<u8>] {
        self.by_key.get(key).map_or(&[], Vec::as_slice)
    }

    /// Whether any bound pod was found at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.by_key.values().all(Vec::is_empty)
    }
}

/// The keys that find every pod a term selects.
fn term_keys(t: &Term<'_>) -> Vec<String> {
    if t.covers_all_namespaces() {
        return keys::for_selector(&t.selector, None);
    }
    let listed = t.listed_namespaces();
    keys::for_selector(&t.selector, listed.as_deref())
}

/// The nodes and the looked-up pods of one decision.
pub(crate) struct Snapshot<'a> {
    pub(crate) nodes: Vec<NodeInfo<'a>>,
    by_name: FnvMap<&'a [u8], usize>,
    lookups: &'a Lookups,
    decoded: Cell<usize>,
    with_affinity: OnceCell<WithAffinity<'a>>,
}

/// The bound pods that have pod (anti-)affinity of their own, each with
/// the index of its terms: terms are decoded once per distinct encoding,
/// and the replicas of one workload share theirs.
pub(crate) struct WithAffinity<'a> {
    pub(crate) pods: Vec<(BoundPod<'a>, usize)>,
    pub(crate) terms: Vec<Terms<'a>>,
}

impl<'a> Snapshot<'a> {
    /// Decodes the node summaries (a summary that does not decode, say from
    /// an older version of this plugin, is left out until it is re-indexed).
    pub(crate) fn new(node_summaries: &'a [Vec<u8>], lookups: &'a Lookups) -> Self {
        let nodes: Vec<NodeInfo<'a>> = node_summaries
            .iter()
            .filter_map(|b| NodeInfo::decode(b))
            .collect();
        // Only pods need nodes found by name; plain pods skip building the map.
        let by_name = if lookups.is_empty() {
            FnvMap::default()
        } else {
            let mut by_name = FnvMap::with_capacity_and_hasher(nodes.len(), Default::default());
            by_name.extend(nodes.iter().enumerate().map(|(i, n)| (n.name, i)));
            by_name
        };
        Self {
            nodes,
            by_name,
            lookups,
            decoded: Cell::new(0),
            with_affinity: OnceCell::new(),
        }
    }

    /// Adds more nodes (the rest of the shards, when a window was not enough).
    pub(crate) fn add_nodes(&mut self, node_summaries: &'a [Vec<u8>]) {
        for b in node_summaries {
            if let Some(n) = NodeInfo::decode(b) {
                if !self.by_name.is_empty() {
                    self.by_name.insert(n.name, self.nodes.len());
                }
                self.nodes.push(n);
            }
        }
    }

    /// The node a bound pod runs on, if the snapshot has it.
    pub(crate) fn node_of(&self, pod: &BoundPod<'_>) -> Option<(usize, &NodeInfo<'a>)> {
        let i = *self.by_name.get(pod.node)?;
        Some((i, &self.nodes[i]))
    }

    /// How many pod summaries were decoded so far.
    pub(crate) fn decoded(&self) -> usize {
        self.decoded.get()
    }

    fn decode_under<'s>(&'s self, keys: Vec<String>) -> impl Iterator<Item = BoundPod<'a>> + 's {
        let lookups = self.lookups;
        keys.into_iter()
            .flat_map(move |k| lookups.get(&k).iter())
            .filter_map(move |b| {
                self.decoded.set(self.decoded.get() + 1);
                BoundPod::decode(b)
            })
    }

    /// Bound pods that may be selected by `t` (callers still match them).
    pub(crate) fn pods_for_term<'s>(
        &'s self,
        t: &Term<'_>,
    ) -> impl Iterator<Item = BoundPod<'a>> + 's {
        self.decode_under(term_keys(t))
    }

    /// Bound pods in `namespace` that may be selected by `selector`.
    pub(crate) fn pods_for_selector<'s>(
        &'s self,
        selector: &Selector<'_>,
        namespace: &str,
    ) -> impl Iterator<Item = BoundPod<'a>> + 's {
        self.decode_under(keys::for_selector(selector, Some(&[namespace])))
    }

    /// Bound pods with pod affinity or anti-affinity of their own.
    pub(crate) fn with_affinity(&self) -> &WithAffinity<'a> {
        self.with_affinity.get_or_init(|| {
            let mut seen: FnvMap<&'a [u8], usize> = FnvMap::default();
            let mut out = WithAffinity {
                pods: Vec::new(),
                terms: Vec::new(),
            };
            for p in self.decode_under(vec![keys::AFFINITY.to_owned()]) {
                let bytes = p.terms_bytes();
                let i = match seen.get(bytes) {
                    Some(&i) => i,
                    None => {
                        let Some(t) = p.terms() else {
                            continue;
                        };
                        out.terms.push(t);
                        seen.insert(bytes, out.terms.len() - 1);
                        out.terms.len() - 1
                    }
                };
                out.pods.push((p, i));
            }
            out
        })
    }
}
