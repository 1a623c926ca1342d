//! A Pod as the scheduler sees it: what it asks of a node (selectors, node
//! affinity, tolerations, requests) and of other pods ((anti-)affinity
//! terms, topology spread constraints), read once from its JSON text.

use std::borrow::Cow;

use crate::api;
use crate::node::{Effect, Taint};
use crate::requests::{Requests, pod_requests};
use crate::selector::{NodeSelectorTerm, Op, Requirement, Selector};
use crate::term::Term;
use crate::volumes::VolumeFilter;

/// The scheduler this plugin is (`spec.schedulerName`).
pub(crate) const SCHEDULER_NAME: &str = "default-scheduler";

/// How a toleration compares values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TolerationOp {
    Equal,
    Exists,
    /// An operator this scheduler does not know: tolerates nothing.
    Other,
}

/// A toleration of the pod.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Toleration<'a> {
    pub(crate) key: Cow<'a, str>,
    pub(crate) op: TolerationOp,
    pub(crate) value: Cow<'a, str>,
    /// `None`: every effect.
    pub(crate) effect: Option<Effect>,
}

impl<'a> Toleration<'a> {
    fn from_view(v: &api::Toleration<'a>) -> Self {
        Self {
            key: v.key.clone(),
            op: match &*v.operator {
                "" | "Equal" => TolerationOp::Equal,
                "Exists" => TolerationOp::Exists,
                _ => TolerationOp::Other,
            },
            value: v.value.clone(),
            effect: (!v.effect.is_empty()).then(|| Effect::parse(&v.effect)),
        }
    }

    /// `Toleration.ToleratesTaint`: an empty key with `Exists` matches every
    /// taint (of the effect, if one is named).
    pub(crate) fn tolerates(&self, taint: &Taint<'_>) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.op {
            TolerationOp::Equal => self.value == taint.value,
            TolerationOp::Exists => true,
            TolerationOp::Other => false,
        }
    }
}

/// A topology spread constraint of the pod.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SpreadConstraint<'a> {
    pub(crate) max_skew: i32,
    pub(crate) topology_key: Cow<'a, str>,
    /// `DoNotSchedule` (a filter) rather than `ScheduleAnyway` (a score).
    pub(crate) hard: bool,
    pub(crate) selector: Selector<'a>,
    pub(crate) min_domains: i32,
    /// `nodeAffinityPolicy: Honor` (the default).
    pub(crate) honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (default `Ignore`).
    pub(crate) honor_taints: bool,
}

impl<'a> SpreadConstraint<'a> {
    fn from_view(v: &api::SpreadConstraint<'a>, labels: &api::StrMap<'a>) -> Option<Self> {
        let hard = match &*v.when_unsatisfiable {
            "DoNotSchedule" => true,
            "ScheduleAnyway" => false,
            _ => return None,
        };
        let mut selector = Selector::from_view(v.label_selector.as_ref());
        if !selector.is_nothing() {
            for key in &v.match_label_keys {
                if let Some((_, value)) = labels.0.iter().find(|(k, _)| k == key) {
                    selector.requirements.push(Requirement {
                        key: key.clone(),
                        op: Op::In,
                        values: vec![value.clone()],
                    });
                }
            }
        }
        Some(Self {
            max_skew: v.max_skew,
            topology_key: v.topology_key.clone(),
            hard,
            selector,
            min_domains: v.min_domains.unwrap_or(1),
            honor_node_affinity: v.node_affinity_policy.as_deref() != Some("Ignore"),
            honor_taints: v.node_taints_policy.as_deref() == Some("Honor"),
        })
    }
}

/// Everything about a pod that scheduling looks at.
#[derive(Debug)]
pub(crate) struct PodInfo<'a> {
    pub(crate) namespace: &'a str,
    pub(crate) name: &'a str,
    pub(crate) uid: &'a str,
    /// `spec.priority` (0 when unset).
    pub(crate) priority: i32,
    /// `preemptionPolicy` is not `Never`.
    pub(crate) preempts: bool,
    /// `status.startTime`, RFC 3339 (preemption spares pods started
    /// earlier, at equal priority).
    pub(crate) start_time: Option<&'a str>,
    /// `status.nominatedNodeName`: where an earlier preemption made room.
    pub(crate) nominated_node: Option<&'a str>,
    pub(crate) labels: &'a api::StrMap<'a>,
    pub(crate) node_name: Option<&'a str>,
    pub(crate) node_selector: &'a api::StrMap<'a>,
    /// `None`: no required node affinity.
    pub(crate) required_node_affinity: Option<Vec<NodeSelectorTerm<'a>>>,
    pub(crate) preferred_node_affinity: Vec<(i32, NodeSelectorTerm<'a>)>,
    pub(crate) tolerations: Vec<Toleration<'a>>,
    pub(crate) requests: Requests,
    /// The requests scoring counts (defaults for what containers leave out).
    pub(crate) scoring_requests: Requests,
    pub(crate) affinity: Vec<Term<'a>>,
    pub(crate) anti_affinity: Vec<Term<'a>>,
    pub(crate) preferred_affinity: Vec<Term<'a>>,
    pub(crate) preferred_anti_affinity: Vec<Term<'a>>,
    /// Whether the pod has a `podAffinity` or `podAntiAffinity` at all.
    pub(crate) has_pod_affinity: bool,
    pub(crate) spread: Vec<SpreadConstraint<'a>>,
    /// The uid of the pod's controller when it is a ReplicaSet,
    /// ReplicationController or StatefulSet: the owners whose pods
    /// kube-scheduler's system default spread constraints count.
    pub(crate) spread_owner: Option<&'a str>,
    /// The node check of the pod's claims, when it has any (set by the
    /// caller from [`crate::volumes::PodVolumes`]).
    pub(crate) volumes: Option<VolumeFilter<'a>>,
}

impl<'a> PodInfo<'a> {
    pub(crate) fn new(view: &'a api::PodView<'a>) -> Self {
        let meta = &view.metadata;
        let spec = &view.spec;
        let namespace = meta.namespace.as_deref().unwrap_or("default");
        let labels = &meta.labels;
        let node_affinity = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref());
        let required_node_affinity = node_affinity.and_then(|n| n.required.as_ref()).map(|s| {
            s.node_selector_terms
                .iter()
                .map(NodeSelectorTerm::from_view)
                .collect()
        });
        let preferred_node_affinity = node_affinity
            .map(|n| {
                n.preferred
                    .iter()
                    .filter(|p| p.weight != 0)
                    .map(|p| (p.weight, NodeSelectorTerm::from_view(&p.preference)))
                    .collect()
            })
            .unwrap_or_default();
        let terms = |a: Option<&'a api::PodAffinity<'a>>| -> (Vec<Term<'a>>, Vec<Term<'a>>) {
            let Some(a) = a else {
                return (Vec::new(), Vec::new());
            };
            let required = a
                .required
                .iter()
                .map(|t| Term::from_view(t, namespace, labels, 1))
                .collect();
            let preferred = a
                .preferred
                .iter()
                .map(|w| Term::from_view(&w.pod_affinity_term, namespace, labels, w.weight))
                .collect();
            (required, preferred)
        };
        let affinity_view = spec.affinity.as_ref();
        let (affinity, preferred_affinity) =
            terms(affinity_view.and_then(|a| a.pod_affinity.as_ref()));
        let (anti_affinity, preferred_anti_affinity) =
            terms(affinity_view.and_then(|a| a.pod_anti_affinity.as_ref()));
        Self {
            namespace,
            name: &meta.name,
            uid: meta.uid.as_deref().unwrap_or(""),
            priority: spec.priority.unwrap_or(0),
            preempts: spec.preemption_policy.as_deref() != Some("Never"),
            start_time: view.status.start_time.as_deref(),
            nominated_node: view
                .status
                .nominated_node_name
                .as_deref()
                .filter(|n| !n.is_empty()),
            labels,
            node_name: spec.node_name.as_deref().filter(|n| !n.is_empty()),
            node_selector: &spec.node_selector,
            required_node_affinity,
            preferred_node_affinity,
            tolerations: spec.tolerations.iter().map(Toleration::from_view).collect(),
            requests: pod_requests(spec, false),
            scoring_requests: pod_requests(spec, true),
            affinity,
            anti_affinity,
            preferred_affinity,
            preferred_anti_affinity,
            has_pod_affinity: affinity_view
                .is_some_and(|a| a.pod_affinity.is_some() || a.pod_anti_affinity.is_some()),
            spread: spec
                .topology_spread_constraints
                .iter()
                .filter_map(|c| SpreadConstraint::from_view(c, labels))
                .collect(),
            spread_owner: spread_owner(&meta.owner_references),
            volumes: None,
        }
    }

    /// The owner the system default spread constraints count the pods of,
    /// when they apply: the pod has no constraints of its own (an explicit
    /// list replaces the defaults, as upstream).
    pub(crate) fn default_spread_owner(&self) -> Option<&'a str> {
        self.spread_owner.filter(|_| self.spread.is_empty())
    }

    /// Whether a taint is tolerated by one of the pod's tolerations.
    pub(crate) fn tolerates(&self, taint: &Taint<'_>) -> bool {
        self.tolerations.iter().any(|t| t.tolerates(taint))
    }
}

/// The uid of the controller among `refs` whose pods the default spread
/// constraints count. kube-scheduler counts the pods its selector selects
/// (with those of the Services that select the pod); windlass counts the
/// pods the same controller controls, which is the same set for a
/// controller that owns what it selects, and reads no Services.
fn spread_owner<'a>(refs: &'a [api::OwnerReference<'a>]) -> Option<&'a str> {
    let c = refs.iter().find(|r| r.controller)?;
    let counted = matches!(
        (&*c.api_version, &*c.kind),
        ("apps/v1", "ReplicaSet" | "StatefulSet") | ("v1", "ReplicationController")
    );
    (counted && !c.uid.is_empty()).then_some(&*c.uid)
}

/// Whether this scheduler is the one `spec.schedulerName` asks for.
pub(crate) fn is_ours(view: &api::PodView<'_>) -> bool {
    view.spec
        .scheduler_name
        .as_deref()
        .is_none_or(|n| n.is_empty() || n == SCHEDULER_NAME)
}

/// Whether the pod has finished (`Succeeded` or `Failed`): it holds no
/// resources and no scheduler looks at it again.
pub(crate) fn is_terminal(view: &api::PodView<'_>) -> bool {
    matches!(view.status.phase.as_deref(), Some("Succeeded" | "Failed"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerations_match_taints_like_kubernetes() {
        let taint = |key, value, effect| Taint { key, value, effect };
        let gpu = taint("dedicated", "gpu", Effect::NoSchedule);
        // (toleration JSON, taint, tolerated?)
        let table: &[(&str, Taint<'_>, bool)] = &[
            (
                r#"{"key":"dedicated","operator":"Equal","value":"gpu","effect":"NoSchedule"}"#,
                gpu,
                true,
            ),
            (r#"{"key":"dedicated","value":"gpu"}"#, gpu, true),
            (r#"{"key":"dedicated","value":"cpu"}"#, gpu, false),
            (r#"{"key":"dedicated","operator":"Exists"}"#, gpu, true),
            (r#"{"key":"other","operator":"Exists"}"#, gpu, false),
            (r#"{"operator":"Exists"}"#, gpu, true),
            (r#"{"operator":"Exists","effect":"NoExecute"}"#, gpu, false),
            (
                r#"{"key":"dedicated","operator":"Exists","effect":"NoSchedule"}"#,
                gpu,
                true,
            ),
            (
                r#"{"key":"dedicated","value":"gpu","effect":"PreferNoSchedule"}"#,
                gpu,
                false,
            ),
            (
                r#"{"key":"dedicated","operator":"Gt","value":"1"}"#,
                gpu,
                false,
            ),
            // An empty key with Equal only matches a taint with an empty key and value.
            (r#"{"operator":"Equal"}"#, gpu, false),
            (
                r#"{"operator":"Equal"}"#,
                taint("", "", Effect::NoSchedule),
                true,
            ),
        ];
        for (json, t, want) in table {
            let v: api::Toleration<'_> = serde_json::from_str(json).unwrap();
            assert_eq!(
                Toleration::from_view(&v).tolerates(t),
                *want,
                "{json} vs {t:?}"
            );
        }
    }

    #[test]
    fn reads_a_pods_constraints() {
        let json = r#"{"metadata":{"name":"web-1","namespace":"prod","labels":{"app":"web"}},
          "spec":{"schedulerName":"default-scheduler",
            "affinity":{
              "nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[
                {"weight":0,"preference":{"matchExpressions":[{"key":"a","operator":"Exists"}]}},
                {"weight":5,"preference":{"matchExpressions":[{"key":"b","operator":"Exists"}]}}]},
              "podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
                {"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}]}},
            "topologySpreadConstraints":[
              {"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule",
               "labelSelector":{"matchLabels":{"app":"web"}}},
              {"maxSkew":2,"topologyKey":"zone","whenUnsatisfiable":"Sometimes"}]}}"#;
        let view: api::PodView<'_> = serde_json::from_str(json).unwrap();
        let pod = PodInfo::new(&view);
        assert_eq!(pod.namespace, "prod");
        assert!(pod.required_node_affinity.is_none());
        assert_eq!(pod.preferred_node_affinity.len(), 1);
        assert_eq!(pod.anti_affinity.len(), 1);
        assert_eq!(pod.anti_affinity[0].namespaces, ["prod"]);
        assert!(pod.has_pod_affinity);
        assert_eq!(pod.spread.len(), 1);
        assert!(
            pod.spread[0].hard && pod.spread[0].honor_node_affinity && !pod.spread[0].honor_taints
        );
        assert!(is_ours(&view));
    }
}
