//! The parts of Pods and Nodes the scheduler reads, as borrowing serde views
//! of their JSON text: strings stay slices of the text (unless escaped), and
//! every field not named here is skipped without being built.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, de};
use serde_json::value::RawValue;
use windlass_sdk::view::nullable;

/// A JSON object of strings (labels, a node selector, resource lists), in
/// the order the text has it. Values that are not strings (a YAML-written
/// `cpu: 1` is a JSON number) are kept as their JSON text.
#[derive(Default, Debug, Clone, PartialEq)]
pub(crate) struct StrMap<'a>(pub(crate) Vec<(Cow<'a, str>, Cow<'a, str>)>);

impl<'a> StrMap<'a> {
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_ref())
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_ref(), v.as_ref()))
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for StrMap<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = StrMap<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(StrMap::default())
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Self::Value, M::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(4));
                while let Some(k) = m.next_key::<Scalar<'a>>()? {
                    let v: Scalar<'a> = m.next_value()?;
                    out.push((k.0, v.0));
                }
                Ok(StrMap(out))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// A string, or a number or boolean kept as its text.
struct Scalar<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Scalar<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Scalar<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or a number")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Scalar(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Scalar(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Scalar(Cow::Owned(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Scalar(Cow::Owned(v.to_string())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Scalar(Cow::Owned(v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Scalar(Cow::Owned(v.to_string())))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Scalar(Cow::Borrowed(if v { "true" } else { "false" })))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Scalar(Cow::Borrowed("")))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The parts of a Pod the scheduler reads.
#[derive(Deserialize, Default)]
pub(crate) struct PodView<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) metadata: Meta<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) spec: PodSpec<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) status: PodStatus<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Meta<'a> {
    #[serde(borrow, default)]
    pub(crate) name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) uid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) resource_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) deletion_timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) labels: StrMap<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) owner_references: Vec<OwnerReference<'a>>,
}

/// The parts of an owner reference the scheduler reads (the controller of
/// a pod decides the default spread constraints).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OwnerReference<'a> {
    #[serde(borrow, default)]
    pub(crate) api_version: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) kind: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) uid: Cow<'a, str>,
    #[serde(default, deserialize_with = "nullable")]
    pub(crate) controller: bool,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodSpec<'a> {
    #[serde(borrow, default)]
    pub(crate) node_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) scheduler_name: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) node_selector: StrMap<'a>,
    #[serde(borrow, default)]
    pub(crate) affinity: Option<Affinity<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) tolerations: Vec<Toleration<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) containers: Vec<Container<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) init_containers: Vec<Container<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) overhead: StrMap<'a>,
    #[serde(borrow, default)]
    pub(crate) resources: Option<Resources<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) topology_spread_constraints: Vec<SpreadConstraint<'a>>,
    #[serde(default, deserialize_with = "nullable")]
    pub(crate) scheduling_gates: Vec<de::IgnoredAny>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) volumes: Vec<Volume<'a>>,
    /// Set by the API server's Priority admission (0 if absent).
    #[serde(default)]
    pub(crate) priority: Option<i32>,
    #[serde(borrow, default)]
    pub(crate) preemption_policy: Option<Cow<'a, str>>,
}

/// A pod volume, as far as claims go: a PersistentVolumeClaim it names, or
/// a generic ephemeral volume (whose claim is `<pod>-<volume>`).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Volume<'a> {
    #[serde(borrow, default)]
    pub(crate) name: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) persistent_volume_claim: Option<ClaimSource<'a>>,
    #[serde(default)]
    pub(crate) ephemeral: Option<de::IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClaimSource<'a> {
    #[serde(borrow, default)]
    pub(crate) claim_name: Cow<'a, str>,
}

/// The node affinity of a PersistentVolume (`spec.nodeAffinity.required`).
#[derive(Deserialize, Default)]
pub(crate) struct VolumeView<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) spec: VolumeSpec<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct VolumeSpec<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) node_affinity: VolumeNodeAffinity<'a>,
}

#[derive(Deserialize, Default)]
pub(crate) struct VolumeNodeAffinity<'a> {
    #[serde(borrow, default)]
    pub(crate) required: Option<NodeSelector<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Container<'a> {
    #[serde(borrow, default)]
    pub(crate) resources: Option<Resources<'a>>,
    #[serde(borrow, default)]
    pub(crate) restart_policy: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct Resources<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) requests: StrMap<'a>,
}

#[derive(Deserialize, Default, Debug, Clone)]
pub(crate) struct Toleration<'a> {
    #[serde(borrow, default)]
    pub(crate) key: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) operator: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) value: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) effect: Cow<'a, str>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Affinity<'a> {
    #[serde(borrow, default)]
    pub(crate) node_affinity: Option<NodeAffinity<'a>>,
    #[serde(borrow, default)]
    pub(crate) pod_affinity: Option<PodAffinity<'a>>,
    #[serde(borrow, default)]
    pub(crate) pod_anti_affinity: Option<PodAffinity<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct NodeAffinity<'a> {
    #[serde(
        borrow,
        default,
        rename = "requiredDuringSchedulingIgnoredDuringExecution"
    )]
    pub(crate) required: Option<NodeSelector<'a>>,
    #[serde(
        borrow,
        default,
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        deserialize_with = "nullable"
    )]
    pub(crate) preferred: Vec<PreferredSchedulingTerm<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeSelector<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) node_selector_terms: Vec<NodeSelectorTerm<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NodeSelectorTerm<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) match_expressions: Vec<Requirement<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) match_fields: Vec<Requirement<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct PreferredSchedulingTerm<'a> {
    #[serde(default)]
    pub(crate) weight: i32,
    #[serde(borrow, default)]
    pub(crate) preference: NodeSelectorTerm<'a>,
}

/// A requirement of a label selector, node selector or field selector.
#[derive(Deserialize, Default)]
pub(crate) struct Requirement<'a> {
    #[serde(borrow, default)]
    pub(crate) key: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) operator: Cow<'a, str>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) values: Vec<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LabelSelector<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) match_labels: StrMap<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) match_expressions: Vec<Requirement<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct PodAffinity<'a> {
    #[serde(
        borrow,
        default,
        rename = "requiredDuringSchedulingIgnoredDuringExecution",
        deserialize_with = "nullable"
    )]
    pub(crate) required: Vec<PodAffinityTerm<'a>>,
    #[serde(
        borrow,
        default,
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        deserialize_with = "nullable"
    )]
    pub(crate) preferred: Vec<WeightedPodAffinityTerm<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodAffinityTerm<'a> {
    #[serde(borrow, default)]
    pub(crate) label_selector: Option<LabelSelector<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) namespaces: Vec<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) topology_key: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) namespace_selector: Option<LabelSelector<'a>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) match_label_keys: Vec<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) mismatch_label_keys: Vec<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WeightedPodAffinityTerm<'a> {
    #[serde(default)]
    pub(crate) weight: i32,
    #[serde(borrow, default)]
    pub(crate) pod_affinity_term: PodAffinityTerm<'a>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SpreadConstraint<'a> {
    #[serde(default)]
    pub(crate) max_skew: i32,
    #[serde(borrow, default)]
    pub(crate) topology_key: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) when_unsatisfiable: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) label_selector: Option<LabelSelector<'a>>,
    #[serde(default)]
    pub(crate) min_domains: Option<i32>,
    #[serde(borrow, default)]
    pub(crate) node_affinity_policy: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) node_taints_policy: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) match_label_keys: Vec<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodStatus<'a> {
    #[serde(borrow, default)]
    pub(crate) phase: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) start_time: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) nominated_node_name: Option<Cow<'a, str>>,
    /// Kept as text: a status write copies the ones it does not change.
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) conditions: Vec<&'a RawValue>,
}

/// The fields of a pod condition the scheduler compares.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Condition<'a> {
    #[serde(borrow, default, rename = "type")]
    pub(crate) type_: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) status: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) reason: Option<Cow<'a, str>>,
}

/// The parts of a Node the scheduler reads.
#[derive(Deserialize, Default)]
pub(crate) struct NodeView<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) metadata: Meta<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) spec: NodeSpec<'a>,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) status: NodeStatus<'a>,
}

#[derive(Deserialize, Default)]
pub(crate) struct NodeSpec<'a> {
    #[serde(default, deserialize_with = "nullable")]
    pub(crate) unschedulable: bool,
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) taints: Vec<Taint<'a>>,
}

#[derive(Deserialize, Default)]
pub(crate) struct Taint<'a> {
    #[serde(borrow, default)]
    pub(crate) key: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) value: Cow<'a, str>,
    #[serde(borrow, default)]
    pub(crate) effect: Cow<'a, str>,
}

#[derive(Deserialize, Default)]
pub(crate) struct NodeStatus<'a> {
    #[serde(borrow, default, deserialize_with = "nullable")]
    pub(crate) allocatable: StrMap<'a>,
}

/// Just the kind of an object, to tell Pods from Nodes in `index` and `map`.
#[derive(Deserialize, Default)]
pub(crate) struct KindView<'a> {
    #[serde(borrow, default)]
    pub(crate) kind: Cow<'a, str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_numbers_and_nulls_the_way_yaml_writes_them() {
        let pod: PodView<'_> = serde_json::from_str(
            r#"{"metadata":{"name":"p","labels":null},
                "spec":{"containers":[{"resources":{"requests":{"cpu":1,"memory":"1Gi"}}}],
                        "tolerations":null,"nodeSelector":{"a":"b"}},
                "status":null}"#,
        )
        .unwrap();
        let req = &pod.spec.containers[0].resources.as_ref().unwrap().requests;
        assert_eq!(req.get("cpu"), Some("1"));
        assert_eq!(req.get("memory"), Some("1Gi"));
        assert!(pod.metadata.labels.0.is_empty());
        assert_eq!(pod.spec.node_selector.get("a"), Some("b"));
    }
}
