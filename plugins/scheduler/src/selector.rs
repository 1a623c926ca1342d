//! Label selectors and node selector terms, as Kubernetes evaluates them
//! (`metav1.LabelSelectorAsSelector`, `nodeaffinity.NodeSelector`).
//!
//! A selector is read from a pod's JSON (`from_view`) or from a summary
//! (`decode`) into one model, and matches anything that can answer "the
//! value of label k" ([`Labels`]): a pod's labels, a node summary, or a
//! namespace known only by its name.

use std::borrow::Cow;

use crate::api;
use crate::wire::{Reader, Writer};

/// The label every namespace carries with its own name; it is all the
/// scheduler knows of a namespace (it does not read Namespaces).
pub(crate) const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Something with labels.
pub(crate) trait Labels {
    /// The value of label `key`, as bytes.
    fn label(&self, key: &str) -> Option<&[u8]>;
}

impl Labels for api::StrMap<'_> {
    fn label(&self, key: &str) -> Option<&[u8]> {
        self.get(key).map(str::as_bytes)
    }
}

/// A namespace seen through its `kubernetes.io/metadata.name` label only.
pub(crate) struct NamespaceByName<'a>(pub(crate) &'a str);

impl Labels for NamespaceByName<'_> {
    fn label(&self, key: &str) -> Option<&[u8]> {
        (key == NAMESPACE_NAME_LABEL).then_some(self.0.as_bytes())
    }
}

/// Labels in the summary encoding: a count, then key and value strings.
/// Looked up by scanning, without decoding anything else.
#[derive(Clone, Copy)]
pub(crate) struct EncodedLabels<'a> {
    /// The count and the pairs.
    bytes: &'a [u8],
}

impl<'a> EncodedLabels<'a> {
    /// Writes the labels as one length-prefixed block, so that readers
    /// step over them without reading each label.
    pub(crate) fn write(w: &mut Writer, labels: &api::StrMap<'_>) {
        let mut block = Writer::new();
        block.len(labels.0.len());
        for (k, v) in labels.iter() {
            block.str(k);
            block.str(v);
        }
        w.bytes(&block.finish());
    }

    /// Reads the labels at `r`, leaving `r` after them.
    pub(crate) fn read(r: &mut Reader<'a>) -> Option<Self> {
        Some(Self { bytes: r.bytes()? })
    }

    /// A reader at the first pair, and the number of pairs.
    fn pairs(&self) -> (Reader<'a>, usize) {
        let mut r = Reader::new(self.bytes);
        let n = r.len().unwrap_or(0);
        (r, n)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&'a [u8]> {
        self.entry(key).map(|(_, v)| v)
    }

    /// The values of labels `a` and `b`, in one pass.
    pub(crate) fn get_both(&self, a: &str, b: &str) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
        let (mut r, n) = self.pairs();
        let mut found = (None, None);
        for _ in 0..n {
            let (Some(k), Some(v)) = (r.bytes(), r.bytes()) else {
                break;
            };
            if k == a.as_bytes() {
                found.0 = Some(v);
            } else if k == b.as_bytes() {
                found.1 = Some(v);
            }
        }
        found
    }

    /// The label `key` as slices of the summary: its key and its value.
    /// Topology pairs are kept as these, so counting them copies nothing.
    pub(crate) fn entry(&self, key: &str) -> Option<(&'a [u8], &'a [u8])> {
        let (mut r, n) = self.pairs();
        for _ in 0..n {
            let k = r.bytes()?;
            let v = r.bytes()?;
            if k == key.as_bytes() {
                return Some((k, v));
            }
        }
        None
    }

    /// Every label, as UTF-8 text (pairs that are not are skipped).
    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        let (mut r, n) = self.pairs();
        (0..n).filter_map(move |_| {
            let k = r.bytes()?;
            let v = r.bytes()?;
            Some((std::str::from_utf8(k).ok()?, std::str::from_utf8(v).ok()?))
        })
    }

    /// Every label as raw bytes.
    pub(crate) fn iter_bytes(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let (mut r, n) = self.pairs();
        (0..n).map_while(move |_| Some((r.bytes()?, r.bytes()?)))
    }
}

impl Labels for EncodedLabels<'_> {
    fn label(&self, key: &str) -> Option<&[u8]> {
        self.get(key)
    }
}

/// An operator of a selector requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

impl Op {
    fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "In" => Op::In,
            "NotIn" => Op::NotIn,
            "Exists" => Op::Exists,
            "DoesNotExist" => Op::DoesNotExist,
            "Gt" => Op::Gt,
            "Lt" => Op::Lt,
            _ => return None,
        })
    }

    fn code(self) -> u8 {
        self as u8
    }

    fn from_code(c: u8) -> Option<Op> {
        [
            Op::In,
            Op::NotIn,
            Op::Exists,
            Op::DoesNotExist,
            Op::Gt,
            Op::Lt,
        ]
        .get(usize::from(c))
        .copied()
    }
}

/// One requirement: `key op values`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Requirement<'a> {
    pub(crate) key: Cow<'a, str>,
    pub(crate) op: Op,
    pub(crate) values: Vec<Cow<'a, str>>,
}

impl<'a> Requirement<'a> {
    #[cfg(test)]
    pub(crate) fn new(key: impl Into<Cow<'a, str>>, op: Op, values: &[&'a str]) -> Self {
        Self {
            key: key.into(),
            op,
            values: values.iter().map(|v| Cow::Borrowed(*v)).collect(),
        }
    }

    /// Whether a label of value `value` (or no label) satisfies this.
    pub(crate) fn matches_value(&self, value: Option<&[u8]>) -> bool {
        let has = |v: &[u8]| self.values.iter().any(|x| x.as_bytes() == v);
        match self.op {
            Op::In => value.is_some_and(has),
            Op::NotIn => !value.is_some_and(has),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
            Op::Gt | Op::Lt => {
                let (Some(v), [bound]) = (value, self.values.as_slice()) else {
                    return false;
                };
                let (Some(v), Ok(bound)) = (parse_i64(v), bound.parse::<i64>()) else {
                    return false;
                };
                if self.op == Op::Gt {
                    v > bound
                } else {
                    v < bound
                }
            }
        }
    }

    pub(crate) fn matches(&self, labels: &impl Labels) -> bool {
        self.matches_value(labels.label(&self.key))
    }

    /// Whether Kubernetes accepts this requirement in a selector (`numeric`:
    /// a node selector, which also has `Gt` and `Lt`).
    fn is_valid(&self, numeric: bool) -> bool {
        match self.op {
            Op::In | Op::NotIn => !self.values.is_empty(),
            Op::Exists | Op::DoesNotExist => self.values.is_empty(),
            Op::Gt | Op::Lt => {
                numeric && self.values.len() == 1 && self.values[0].parse::<i64>().is_ok()
            }
        }
    }

    fn from_view(v: &api::Requirement<'a>) -> Option<Self> {
        Some(Self {
            key: v.key.clone(),
            op: Op::parse(&v.operator)?,
            values: v.values.clone(),
        })
    }

    fn encode(&self, w: &mut Writer) {
        w.str(&self.key);
        w.u8(self.op.code());
        w.len(self.values.len());
        for v in &self.values {
            w.str(v);
        }
    }

    fn decode(r: &mut Reader<'a>) -> Option<Self> {
        let key = Cow::Borrowed(r.str()?);
        let op = Op::from_code(r.u8()?)?;
        let n = r.len()?;
        let mut values = Vec::with_capacity(n);
        for _ in 0..n {
            values.push(Cow::Borrowed(r.str()?));
        }
        Some(Self { key, op, values })
    }
}

fn parse_i64(b: &[u8]) -> Option<i64> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// A label selector: every requirement must hold. A missing selector
/// (`null`) or an invalid one selects nothing; an empty one (`{}`) selects
/// everything.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Selector<'a> {
    pub(crate) requirements: Vec<Requirement<'a>>,
    nothing: bool,
}

impl<'a> Selector<'a> {
    pub(crate) fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    pub(crate) fn of(requirements: Vec<Requirement<'a>>) -> Self {
        Self {
            requirements,
            nothing: false,
        }
    }

    /// The selector of a pod's JSON, as `LabelSelectorAsSelector` builds it.
    pub(crate) fn from_view(v: Option<&api::LabelSelector<'a>>) -> Self {
        let Some(v) = v else {
            return Self::nothing();
        };
        let mut requirements =
            Vec::with_capacity(v.match_labels.0.len() + v.match_expressions.len());
        for (k, val) in &v.match_labels.0 {
            requirements.push(Requirement {
                key: k.clone(),
                op: Op::In,
                values: vec![val.clone()],
            });
        }
        for e in &v.match_expressions {
            match Requirement::from_view(e) {
                Some(r) if r.is_valid(false) => requirements.push(r),
                _ => return Self::nothing(),
            }
        }
        Self::of(requirements)
    }

    /// Whether this selects nothing at all.
    pub(crate) fn is_nothing(&self) -> bool {
        self.nothing
    }

    /// Whether this is `{}` (selects everything).
    pub(crate) fn is_everything(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    pub(crate) fn matches(&self, labels: &impl Labels) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// The `In` requirement with the fewest values, if any: every object
    /// this selects carries one of those labels, so looking them up finds
    /// them all.
    pub(crate) fn narrowest_in(&self) -> Option<&Requirement<'a>> {
        self.requirements
            .iter()
            .filter(|r| r.op == Op::In)
            .min_by_key(|r| r.values.len())
    }

    pub(crate) fn encode(&self, w: &mut Writer) {
        w.u8(u8::from(self.nothing));
        w.len(self.requirements.len());
        for r in &self.requirements {
            r.encode(w);
        }
    }

    pub(crate) fn decode(r: &mut Reader<'a>) -> Option<Self> {
        let nothing = r.u8()? != 0;
        let n = r.len()?;
        let mut requirements = Vec::with_capacity(n);
        for _ in 0..n {
            requirements.push(Requirement::decode(r)?);
        }
        Some(Self {
            requirements,
            nothing,
        })
    }
}

/// One term of a node selector: label expressions and field expressions
/// (only `metadata.name`), all of which must hold. An empty term, or one
/// with an invalid requirement, matches no node.
#[derive(Clone, Debug, PartialEq, Default)]
pub(crate) struct NodeSelectorTerm<'a> {
    pub(crate) expressions: Vec<Requirement<'a>>,
    pub(crate) fields: Vec<Requirement<'a>>,
    invalid: bool,
}

impl<'a> NodeSelectorTerm<'a> {
    pub(crate) fn new(expressions: Vec<Requirement<'a>>, fields: Vec<Requirement<'a>>) -> Self {
        let invalid = expressions.iter().any(|r| !r.is_valid(true))
            || fields.iter().any(|r| !field_is_valid(r));
        Self {
            expressions,
            fields,
            invalid,
        }
    }

    pub(crate) fn from_view(v: &api::NodeSelectorTerm<'a>) -> Self {
        let parse = |list: &[api::Requirement<'a>]| -> Option<Vec<Requirement<'a>>> {
            list.iter().map(Requirement::from_view).collect()
        };
        match (parse(&v.match_expressions), parse(&v.match_fields)) {
            (Some(e), Some(f)) => Self::new(e, f),
            _ => Self {
                invalid: true,
                ..Self::default()
            },
        }
    }

    pub(crate) fn matches(&self, node_name: &[u8], labels: &impl Labels) -> bool {
        if self.invalid || (self.expressions.is_empty() && self.fields.is_empty()) {
            return false;
        }
        self.expressions.iter().all(|r| r.matches(labels))
            && self.fields.iter().all(|r| r.matches_value(Some(node_name)))
    }

    /// The node names this term allows if it pins them with
    /// `metadata.name In`: the intersection of those requirements.
    pub(crate) fn pinned_names(&self) -> Option<Vec<&str>> {
        let mut names: Option<Vec<&str>> = None;
        for r in self.fields.iter().filter(|r| r.op == Op::In) {
            let these: Vec<&str> = r.values.iter().map(|v| v.as_ref()).collect();
            names = Some(match names {
                None => these,
                Some(prev) => prev.into_iter().filter(|n| these.contains(n)).collect(),
            });
        }
        names
    }
}

/// Field requirements: `metadata.name` with `In` or `NotIn` and exactly one value.
fn field_is_valid(r: &Requirement<'_>) -> bool {
    r.key == "metadata.name" && matches!(r.op, Op::In | Op::NotIn) && r.values.len() == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&'static str, &'static str)]) -> api::StrMap<'static> {
        api::StrMap(
            pairs
                .iter()
                .map(|(k, v)| (Cow::Borrowed(*k), Cow::Borrowed(*v)))
                .collect(),
        )
    }

    #[test]
    fn requirements_match_like_kubernetes() {
        let node = labels(&[("zone", "a"), ("cores", "16"), ("gpu", "")]);
        let table: &[(&str, Op, &[&str], bool)] = &[
            ("zone", Op::In, &["a", "b"], true),
            ("zone", Op::In, &["b"], false),
            ("missing", Op::In, &["a"], false),
            ("zone", Op::NotIn, &["b"], true),
            ("zone", Op::NotIn, &["a"], false),
            ("missing", Op::NotIn, &["a"], true),
            ("gpu", Op::Exists, &[], true),
            ("missing", Op::Exists, &[], false),
            ("missing", Op::DoesNotExist, &[], true),
            ("zone", Op::DoesNotExist, &[], false),
            ("cores", Op::Gt, &["8"], true),
            ("cores", Op::Gt, &["16"], false),
            ("cores", Op::Lt, &["32"], true),
            ("cores", Op::Lt, &["16"], false),
            ("zone", Op::Gt, &["1"], false),
            ("missing", Op::Lt, &["1"], false),
            ("cores", Op::Gt, &["x"], false),
        ];
        for (key, op, values, want) in table {
            let r = Requirement::new(*key, *op, values);
            assert_eq!(r.matches(&node), *want, "{key} {op:?} {values:?}");
        }
    }

    #[test]
    fn node_selector_terms() {
        let node = labels(&[("zone", "a")]);
        let term = |e: Vec<Requirement<'static>>, f: Vec<Requirement<'static>>| {
            NodeSelectorTerm::new(e, f)
        };
        let zone_a = || Requirement::new("zone", Op::In, &["a"]);
        let name = |op, v: &'static str| Requirement::new("metadata.name", op, &[v]);
        let table: Vec<(NodeSelectorTerm<'static>, bool)> = vec![
            (term(vec![], vec![]), false),
            (term(vec![zone_a()], vec![]), true),
            (term(vec![zone_a()], vec![name(Op::In, "n1")]), true),
            (term(vec![zone_a()], vec![name(Op::In, "n2")]), false),
            (term(vec![], vec![name(Op::NotIn, "n2")]), true),
            // Invalid: In without values, Gt with two values, a field that is not the name.
            (
                term(vec![Requirement::new("zone", Op::In, &[])], vec![]),
                false,
            ),
            (
                term(vec![Requirement::new("zone", Op::Gt, &["1", "2"])], vec![]),
                false,
            ),
            (
                term(
                    vec![],
                    vec![Requirement::new("metadata.uid", Op::In, &["n1"])],
                ),
                false,
            ),
        ];
        for (i, (t, want)) in table.iter().enumerate() {
            assert_eq!(t.matches(b"n1", &node), *want, "row {i}: {t:?}");
        }
    }

    #[test]
    fn missing_selectors_select_nothing_and_empty_ones_everything() {
        let pod = labels(&[("app", "web")]);
        assert!(!Selector::from_view(None).matches(&pod));
        let empty = api::LabelSelector::default();
        assert!(Selector::from_view(Some(&empty)).matches(&pod));
        let invalid = api::LabelSelector {
            match_expressions: vec![api::Requirement {
                key: "app".into(),
                operator: "Exists".into(),
                values: vec!["x".into()],
            }],
            ..Default::default()
        };
        assert!(!Selector::from_view(Some(&invalid)).matches(&pod));
    }

    #[test]
    fn selectors_round_trip_through_the_wire() {
        let s = Selector::of(vec![
            Requirement::new("app", Op::In, &["web", "api"]),
            Requirement::new("tier", Op::DoesNotExist, &[]),
        ]);
        let mut w = Writer::new();
        s.encode(&mut w);
        Selector::nothing().encode(&mut w);
        let buf = w.finish();
        let mut r = Reader::new(&buf);
        assert_eq!(Selector::decode(&mut r), Some(s));
        assert_eq!(Selector::decode(&mut r), Some(Selector::nothing()));
    }

    #[test]
    fn encoded_labels_are_found_by_scanning() {
        let mut w = Writer::new();
        EncodedLabels::write(&mut w, &labels(&[("a", "1"), ("b", "2")]));
        w.u8(9);
        let buf = w.finish();
        let mut r = Reader::new(&buf);
        let l = EncodedLabels::read(&mut r).unwrap();
        assert_eq!(l.get("b"), Some(&b"2"[..]));
        assert_eq!(l.get("c"), None);
        assert_eq!(l.iter().collect::<Vec<_>>(), [("a", "1"), ("b", "2")]);
        assert_eq!(r.u8(), Some(9));
    }
}
