//! Walking JSON values whose shape a client chose, without recursion: how
//! deep they nest, how many bytes they serialize to, and cloning, comparing
//! and dropping them. `serde_json`'s own `Clone`, `PartialEq` and `Drop`
//! recurse once per level, so a value nested deep enough overflows the
//! stack in any of them; these helpers are for values that have not yet been
//! held to [`MAX_DEPTH`] (a JSON patch's intermediate states, say).

use serde_json::{Map, Value};

/// How deep an object may nest: objects and arrays inside each other, the
/// outermost counting 1. `serde_json` (kube-rs, this server) parses at most
/// 127 levels by default, and the deepest response that carries an object
/// wraps it in 4 more (a watch event of a Table: event, Table, rows, row),
/// so an object may nest 123: every client can read back, list and watch
/// whatever it stored. (kube-apiserver's JSON decoder allows 10,000, and
/// client-go reads that much; no built-in kind comes near either.)
pub(crate) const MAX_DEPTH: usize = 123;

/// The nesting depth of `v`: 0 for a scalar, 1 for `{}` or `[1]`.
pub(crate) fn depth(v: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(v, 1)];
    while let Some((v, level)) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|c| (c, level + 1))),
            Value::Object(m) => stack.extend(m.values().map(|c| (c, level + 1))),
            _ => continue,
        }
        deepest = deepest.max(level);
    }
    deepest
}

/// The children of a container, each with the path segment naming it.
enum Children<'a> {
    Array(std::iter::Enumerate<std::slice::Iter<'a, Value>>),
    Object(serde_json::map::Iter<'a>),
}

impl<'a> Children<'a> {
    fn of(v: &'a Value) -> Option<Self> {
        match v {
            Value::Array(a) => Some(Self::Array(a.iter().enumerate())),
            Value::Object(m) => Some(Self::Object(m.iter())),
            _ => None,
        }
    }

    fn next(&mut self) -> Option<(String, &'a Value)> {
        match self {
            Self::Array(it) => it.next().map(|(i, c)| (format!("[{i}]"), c)),
            Self::Object(it) => it.next().map(|(k, c)| (format!(".{k}"), c)),
        }
    }
}

/// Where `v` first nests deeper than `max`, as a field path
/// (`spec.template.items[0]`), or `None` if it does not.
pub(crate) fn too_deep(v: &Value, max: usize) -> Option<String> {
    if depth(v) <= max {
        return None;
    }
    // Rare: worth naming the place, so walk again keeping the path.
    let mut frames: Vec<(Children<'_>, String)> = Vec::new();
    frames.push((Children::of(v)?, String::new()));
    if max == 0 {
        return Some(String::new());
    }
    while let Some((children, _)) = frames.last_mut() {
        let Some((segment, child)) = children.next() else {
            frames.pop();
            continue;
        };
        let Some(grandchildren) = Children::of(child) else {
            continue;
        };
        if frames.len() + 1 > max {
            let path: String = frames.iter().map(|(_, s)| s.as_str()).collect();
            return Some(
                format!("{path}{segment}")
                    .trim_start_matches('.')
                    .to_owned(),
            );
        }
        frames.push((grandchildren, segment));
    }
    None
}

/// The length of `v` serialized as compact JSON, as `serde_json` writes it.
pub(crate) fn json_len(v: &Value) -> usize {
    let mut len = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        len += match v {
            Value::Null => 4,
            Value::Bool(b) => 4 + usize::from(!b),
            Value::Number(n) => n.to_string().len(),
            Value::String(s) => string_len(s),
            Value::Array(a) => {
                stack.extend(a.iter());
                2 + a.len().saturating_sub(1)
            }
            Value::Object(m) => {
                stack.extend(m.values());
                let keys: usize = m.keys().map(|k| string_len(k) + 1).sum();
                2 + keys + m.len().saturating_sub(1)
            }
        };
    }
    len
}

/// The nesting depth of `v` (as [`depth`]) and at least its [`json_len`],
/// in one walk. The length is found without reading strings or printing
/// numbers: each string byte counted as its longest escape (6), each
/// number as the longest a number prints (24, `-1.7976931348623157e308`).
/// Where this is within a limit, so is the exact length, which then need
/// not be computed (every stored write checks its depth and size).
pub(crate) fn depth_and_len_bound(v: &Value) -> (usize, usize) {
    let (mut deepest, mut len) = (0, 0);
    let mut stack = vec![(v, 1)];
    while let Some((v, level)) = stack.pop() {
        len += match v {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 24,
            Value::String(s) => 2 + 6 * s.len(),
            Value::Array(a) => {
                deepest = deepest.max(level);
                stack.extend(a.iter().map(|c| (c, level + 1)));
                2 + a.len()
            }
            Value::Object(m) => {
                deepest = deepest.max(level);
                stack.extend(m.values().map(|c| (c, level + 1)));
                let keys: usize = m.keys().map(|k| 3 + 6 * k.len()).sum();
                2 + keys + m.len()
            }
        };
    }
    (deepest, len)
}

/// A JSON string's length with its quotes and escapes.
pub(crate) fn string_len(s: &str) -> usize {
    2 + s
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..0x20 => 6,
            _ => 1,
        })
        .sum::<usize>()
}

/// A container being rebuilt by [`clone`]: its copied children so far and
/// the originals still to copy.
enum Building<'a> {
    Array(Vec<Value>, std::slice::Iter<'a, Value>),
    Object(
        Map<String, Value>,
        serde_json::map::Iter<'a>,
        Option<String>,
    ),
}

/// A deep copy of `v`.
pub(crate) fn clone(v: &Value) -> Value {
    let mut stack: Vec<Building<'_>> = Vec::new();
    let mut next = Some(v);
    loop {
        // Descend into `next`, or finish it at once if it is a scalar.
        let mut done = match next.take() {
            Some(Value::Array(a)) => {
                stack.push(Building::Array(Vec::with_capacity(a.len()), a.iter()));
                None
            }
            Some(Value::Object(m)) => {
                stack.push(Building::Object(Map::new(), m.iter(), None));
                None
            }
            Some(scalar) => Some(scalar.clone()),
            None => None,
        };
        // Hand finished values to their parents; pick the next child.
        loop {
            let Some(top) = stack.last_mut() else {
                return done.unwrap_or(Value::Null);
            };
            match top {
                Building::Array(items, rest) => {
                    if let Some(d) = done.take() {
                        items.push(d);
                    }
                    if let Some(c) = rest.next() {
                        next = Some(c);
                        break;
                    }
                }
                Building::Object(map, rest, key) => {
                    if let (Some(d), Some(k)) = (done.take(), key.take()) {
                        map.insert(k, d);
                    }
                    if let Some((k, c)) = rest.next() {
                        *key = Some(k.clone());
                        next = Some(c);
                        break;
                    }
                }
            }
            done = Some(match stack.pop().expect("checked above") {
                Building::Array(items, _) => Value::Array(items),
                Building::Object(map, _, _) => Value::Object(map),
            });
        }
    }
}

/// Whether `a` and `b` are equal, as `==` would say.
pub(crate) fn equal(a: &Value, b: &Value) -> bool {
    let mut stack = vec![(a, b)];
    while let Some((a, b)) = stack.pop() {
        match (a, b) {
            (Value::Array(x), Value::Array(y)) => {
                if x.len() != y.len() {
                    return false;
                }
                stack.extend(x.iter().zip(y));
            }
            (Value::Object(x), Value::Object(y)) => {
                if x.len() != y.len() {
                    return false;
                }
                for (k, xv) in x {
                    match y.get(k) {
                        Some(yv) => stack.push((xv, yv)),
                        None => return false,
                    }
                }
            }
            (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => {
                return false;
            }
            (x, y) => {
                if x != y {
                    return false;
                }
            }
        }
    }
    true
}

/// Drops `v` one container at a time (the default drop recurses per level).
pub(crate) fn drop(v: Value) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::Array(a) => stack.extend(a),
            Value::Object(m) => stack.extend(m.into_iter().map(|(_, c)| c)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `{"a":{"a":...{"a":leaf}}}`, `levels` objects deep, built and torn
    /// down without recursion.
    pub(crate) fn nested_objects(levels: usize, leaf: Value) -> Value {
        let mut v = leaf;
        for _ in 0..levels {
            let mut m = Map::new();
            m.insert("a".into(), v);
            v = Value::Object(m);
        }
        v
    }

    #[test]
    fn depth_and_where() {
        assert_eq!(depth(&json!(1)), 0);
        assert_eq!(depth(&json!({})), 1);
        assert_eq!(depth(&json!({"a": [1, {"b": []}]})), 4);
        let v = json!({"spec": {"x": [1, [2]]}});
        assert_eq!(too_deep(&v, 4), None);
        assert_eq!(too_deep(&v, 3).as_deref(), Some("spec.x[1]"));
        assert_eq!(too_deep(&v, 0).as_deref(), Some(""));
    }

    #[test]
    fn json_len_is_what_serde_writes() {
        for v in [
            json!(null),
            json!(true),
            json!(false),
            json!(-12.5),
            json!(18446744073709551615u64),
            json!("quote\" slash\\ nl\n tab\t bell\u{7} é ✓"),
            json!({"a": [1, 2, {"b": null, "": ""}], "c": {}, "d": []}),
        ] {
            assert_eq!(json_len(&v), serde_json::to_vec(&v).unwrap().len(), "{v}");
        }
    }

    #[test]
    fn the_bound_is_never_below_the_length() {
        for v in [
            json!(null),
            json!(false),
            json!(-2.2250738585072014e-308),
            json!(-9223372036854775808i64),
            json!("\u{1}\u{1f}"),
            json!({"\u{0}": ["\u{2}", -1.7976931348623157e308, {"\u{3}\n": null}], "": {}}),
        ] {
            let exact = serde_json::to_vec(&v).unwrap().len();
            let (deepest, bound) = depth_and_len_bound(&v);
            assert!(bound >= exact, "{v}: {exact}");
            assert_eq!(deepest, depth(&v), "{v}");
        }
    }

    #[test]
    fn clone_equal_and_drop_match_the_recursive_ones() {
        let v = json!({"a": [1, "x", {"b": [null, true, {}], "c": []}], "d": {"e": 2.5}});
        let c = clone(&v);
        assert_eq!(c, v);
        assert!(equal(&c, &v));
        assert!(!equal(&json!({"a": [1]}), &json!({"a": [2]})));
        assert!(!equal(&json!({"a": 1}), &json!({"b": 1})));
        assert!(!equal(&json!([1]), &json!({"0": 1})));
        assert!(!equal(&json!([1, 2]), &json!([1])));
        drop(c);
    }

    /// A million levels: far past what the recursive versions survive on a
    /// 2 MiB stack.
    #[test]
    fn a_million_levels_without_recursion() {
        let deep = nested_objects(1_000_000, json!("leaf"));
        assert_eq!(depth(&deep), 1_000_000);
        assert!(too_deep(&deep, MAX_DEPTH).is_some());
        assert_eq!(json_len(&deep), 1_000_000 * 6 + 6);
        let copy = clone(&deep);
        assert!(equal(&copy, &deep));
        drop(copy);
        drop(deep);
    }
}
