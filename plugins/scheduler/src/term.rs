//! A pod (anti-)affinity term: which pods it selects (a label selector in a
//! set of namespaces), the topology it spreads over, and its weight.
//!
//! Namespaces follow `GetNamespacesFromPodAffinityTerm`: a term naming no
//! namespaces and no namespace selector means the pod's own namespace; an
//! empty namespace selector (`{}`) means every namespace. The scheduler
//! does not read Namespaces, so a non-empty namespace selector is
//! evaluated against the one label every namespace is known to carry,
//! `kubernetes.io/metadata.name` (its name): selectors on that label are
//! exact, and other labels of a namespace count as absent.
//!
//! `matchLabelKeys` / `mismatchLabelKeys` are merged into the selector as
//! `key in (value)` / `key notin (value)` with the pod's own label values,
//! as the API server does when it admits the pod (merging twice is harmless).

use std::borrow::Cow;

use crate::api;
use crate::selector::{Labels, NamespaceByName, Op, Requirement, Selector};
use crate::wire::{Reader, Writer};

/// One pod affinity or anti-affinity term.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Term<'a> {
    pub(crate) selector: Selector<'a>,
    pub(crate) namespaces: Vec<Cow<'a, str>>,
    pub(crate) namespace_selector: Option<Selector<'a>>,
    pub(crate) topology_key: Cow<'a, str>,
    /// The weight of a preferred term; 1 for required ones.
    pub(crate) weight: i32,
}

impl<'a> Term<'a> {
    /// The term of the pod in `namespace` with `labels`.
    pub(crate) fn from_view(
        v: &api::PodAffinityTerm<'a>,
        namespace: &'a str,
        labels: &api::StrMap<'a>,
        weight: i32,
    ) -> Self {
        let mut selector = Selector::from_view(v.label_selector.as_ref());
        if !selector.is_nothing() {
            for (keys, op) in [
                (&v.match_label_keys, Op::In),
                (&v.mismatch_label_keys, Op::NotIn),
            ] {
                for key in keys {
                    if let Some(value) = labels.0.iter().find(|(k, _)| k == key).map(|(_, v)| v) {
                        selector.requirements.push(Requirement {
                            key: key.clone(),
                            op,
                            values: vec![value.clone()],
                        });
                    }
                }
            }
        }
        let namespace_selector = v
            .namespace_selector
            .as_ref()
            .map(|s| Selector::from_view(Some(s)));
        let namespaces = if v.namespaces.is_empty() && namespace_selector.is_none() {
            vec![Cow::Borrowed(namespace)]
        } else {
            v.namespaces.clone()
        };
        Self {
            selector,
            namespaces,
            namespace_selector,
            topology_key: v.topology_key.clone(),
            weight,
        }
    }

    /// Whether the term covers pods of `namespace`.
    pub(crate) fn covers_namespace(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|n| n == namespace)
            || self
                .namespace_selector
                .as_ref()
                .is_some_and(|s| s.matches(&NamespaceByName(namespace)))
    }

    /// Whether every namespace is covered (an empty namespace selector).
    pub(crate) fn covers_all_namespaces(&self) -> bool {
        self.namespace_selector
            .as_ref()
            .is_some_and(Selector::is_everything)
    }

    /// The namespaces a lookup has to search, if they can be listed (a
    /// namespace selector on the name label with `In` names them too).
    pub(crate) fn listed_namespaces(&self) -> Option<Vec<&str>> {
        let mut out: Vec<&str> = self.namespaces.iter().map(|n| n.as_ref()).collect();
        if let Some(s) = &self.namespace_selector {
            if s.is_nothing() {
                return Some(out);
            }
            let named = s
                .requirements
                .iter()
                .find(|r| r.op == Op::In && r.key == crate::selector::NAMESPACE_NAME_LABEL)?;
            out.extend(named.values.iter().map(|v| v.as_ref()));
        }
        Some(out)
    }

    /// Whether the term selects a pod in `namespace` with `labels`.
    pub(crate) fn matches(&self, namespace: &str, labels: &impl Labels) -> bool {
        self.covers_namespace(namespace) && self.selector.matches(labels)
    }

    pub(crate) fn encode(&self, w: &mut Writer) {
        self.selector.encode(w);
        w.len(self.namespaces.len());
        for n in &self.namespaces {
            w.str(n);
        }
        match &self.namespace_selector {
            None => w.u8(0),
            Some(s) => {
                w.u8(1);
                s.encode(w);
            }
        }
        w.str(&self.topology_key);
        w.ivar(i64::from(self.weight));
    }

    pub(crate) fn decode(r: &mut Reader<'a>) -> Option<Self> {
        let selector = Selector::decode(r)?;
        let n = r.len()?;
        let mut namespaces = Vec::with_capacity(n);
        for _ in 0..n {
            namespaces.push(Cow::Borrowed(r.str()?));
        }
        let namespace_selector = match r.u8()? {
            0 => None,
            _ => Some(Selector::decode(r)?),
        };
        let topology_key = Cow::Borrowed(r.str()?);
        let weight = i32::try_from(r.ivar()?).ok()?;
        Some(Self {
            selector,
            namespaces,
            namespace_selector,
            topology_key,
            weight,
        })
    }
}

/// Writes a list of terms.
pub(crate) fn encode_all(w: &mut Writer, terms: &[Term<'_>]) {
    w.len(terms.len());
    for t in terms {
        t.encode(w);
    }
}

/// Reads a list of terms.
pub(crate) fn decode_all<'a>(r: &mut Reader<'a>) -> Option<Vec<Term<'a>>> {
    let n = r.len()?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(Term::decode(r)?);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(json: &str) -> api::PodAffinityTerm<'_> {
        serde_json::from_str(json).unwrap()
    }

    fn labels(pairs: &[(&'static str, &'static str)]) -> api::StrMap<'static> {
        api::StrMap(
            pairs
                .iter()
                .map(|(k, v)| (Cow::Borrowed(*k), Cow::Borrowed(*v)))
                .collect(),
        )
    }

    #[test]
    fn namespaces_of_a_term() {
        let own = labels(&[("app", "web")]);
        // (term, namespace of the other pod, selected?)
        let table: &[(&str, &str, bool)] = &[
            (
                r#"{"labelSelector":{"matchLabels":{"app":"web"}}}"#,
                "prod",
                true,
            ),
            (
                r#"{"labelSelector":{"matchLabels":{"app":"web"}}}"#,
                "dev",
                false,
            ),
            (
                r#"{"labelSelector":{"matchLabels":{"app":"web"}},"namespaces":["dev"]}"#,
                "dev",
                true,
            ),
            (
                r#"{"labelSelector":{"matchLabels":{"app":"web"}},"namespaces":["dev"]}"#,
                "prod",
                false,
            ),
            (
                r#"{"labelSelector":{"matchLabels":{"app":"web"}},"namespaceSelector":{}}"#,
                "anything",
                true,
            ),
            (
                r#"{"labelSelector":{"matchLabels":{"app":"web"}},
                    "namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"dev"}}}"#,
                "dev",
                true,
            ),
            (
                r#"{"labelSelector":{"matchLabels":{"app":"web"}},
                    "namespaceSelector":{"matchLabels":{"team":"a"}}}"#,
                "dev",
                false,
            ),
            (
                r#"{"labelSelector":{"matchLabels":{"app":"db"}}}"#,
                "prod",
                false,
            ),
            (r#"{}"#, "prod", false),
        ];
        for (json, ns, want) in table {
            let v = term(json);
            let t = Term::from_view(&v, "prod", &own, 1);
            assert_eq!(t.matches(ns, &own), *want, "{json} in {ns}");
        }
    }

    #[test]
    fn match_label_keys_use_the_pods_own_values() {
        let own = labels(&[("app", "web"), ("pod-template-hash", "abc")]);
        let v = term(
            r#"{"labelSelector":{"matchLabels":{"app":"web"}},"matchLabelKeys":["pod-template-hash"],
                "topologyKey":"kubernetes.io/hostname"}"#,
        );
        let t = Term::from_view(&v, "prod", &own, 1);
        assert!(t.matches("prod", &own));
        let other = labels(&[("app", "web"), ("pod-template-hash", "xyz")]);
        assert!(!t.matches("prod", &other));
    }

    #[test]
    fn terms_round_trip() {
        let own = labels(&[("app", "web")]);
        let v = term(
            r#"{"labelSelector":{"matchExpressions":[{"key":"app","operator":"In","values":["web","api"]}]},
                "namespaces":["a","b"],"namespaceSelector":{},"topologyKey":"zone"}"#,
        );
        let t = Term::from_view(&v, "prod", &own, 7);
        let mut w = Writer::new();
        encode_all(&mut w, std::slice::from_ref(&t));
        let buf = w.finish();
        assert_eq!(decode_all(&mut Reader::new(&buf)), Some(vec![t]));
    }
}
