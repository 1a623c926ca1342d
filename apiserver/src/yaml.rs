//! YAML request bodies into JSON values, with a bound on what anchors and
//! aliases may expand to.
//!
//! An alias repeats its anchor's whole subtree, so a small document can
//! expand without limit (46 KB of nested aliases once took 17 s and 1.4 GB).
//! kube-apiserver decodes YAML with go-yaml, which counts decoded nodes and
//! refuses a document once too many of them came from aliases ("document
//! contains excessive aliasing": up to 99% of 400,000 nodes, sliding down
//! to 10% at 4,000,000). `serde_yaml_ng` expands aliases without saying
//! which nodes are repeats, so the count of repeats here is a lower bound:
//! a document without aliases cannot decode into more than two nodes per
//! byte of source (`{a,b}` is four nodes in five bytes), and whatever
//! exceeds that came from aliases. On top of that rule, decoding stops as
//! soon as the JSON being built passes the limit on a stored object, which
//! bounds memory and time for any source.

pub(crate) mod duplicates;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use tokio::sync::Semaphore;

use crate::limits::MAX_OBJECT_BYTES;
use crate::status::ApiError;

/// Why a YAML body was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum YamlError {
    #[error("{0}")]
    Syntax(serde_yaml_ng::Error),
    /// go-yaml's wording, which kube-apiserver passes on.
    #[error("yaml: document contains excessive aliasing")]
    ExcessiveAliasing,
    #[error(
        "the YAML document expands to more than {limit} bytes of JSON, the most a stored object may hold"
    )]
    TooLarge { limit: usize },
    /// Two large bodies are being decoded already (429).
    #[error("Too many requests, please try again later.")]
    Busy,
}

impl YamlError {
    /// The `Status` a client gets: 429 when busy, else 400 (as
    /// kube-apiserver answers a body it cannot decode).
    pub(crate) fn to_api(&self) -> ApiError {
        match self {
            Self::Busy => ApiError::new(429, "TooManyRequests", self.to_string()),
            e => ApiError::bad_request(format!("error decoding YAML: {e}")),
        }
    }
}

/// A body larger than this counts as large: `serde_yaml_ng` reads the
/// whole document into events before converting it, about 80 bytes of
/// memory per byte of a dense document and 160 for deep nesting, so 3 MiB
/// can briefly take 500 MB. At most [`LARGE_AT_ONCE`] large bodies are
/// decoded at a time; more get `429` (clients retry after `Retry-After`).
/// kubectl's YAML is far smaller (it sends JSON for most requests).
const LARGE: usize = 256 * 1024;
const LARGE_AT_ONCE: usize = 2;
static LARGE_DECODES: Semaphore = Semaphore::const_new(LARGE_AT_ONCE);

/// Decodes one YAML document into its JSON value.
pub(crate) fn from_slice(source: &[u8]) -> Result<Value, YamlError> {
    let _permit = if source.len() > LARGE {
        Some(LARGE_DECODES.try_acquire().map_err(|_| YamlError::Busy)?)
    } else {
        None
    };
    from_slice_within(source, MAX_OBJECT_BYTES)
}

/// [`from_slice`] with the JSON size limit given (tests use small ones).
pub(crate) fn from_slice_within(source: &[u8], max_bytes: usize) -> Result<Value, YamlError> {
    let mut budget = Budget {
        source: source.len(),
        max_bytes,
        nodes: 0,
        bytes: 0,
        refused: None,
    };
    let de = serde_yaml_ng::Deserializer::from_slice(source);
    let result = (Node {
        budget: &mut budget,
    })
    .deserialize(de);
    result.map_err(|e| {
        budget.refused.take().unwrap_or_else(|| {
            // serde_yaml_ng's own bound on alias jumps (a hundred per
            // event): the same excess, in go-yaml's words.
            if e.to_string().starts_with("repetition limit exceeded") {
                YamlError::ExcessiveAliasing
            } else {
                YamlError::Syntax(e)
            }
        })
    })
}

/// Below go-yaml's checks: fewer repeats or nodes than these are never refused.
const MIN_ALIASED: usize = 100;
const MIN_NODES: usize = 1000;
/// go-yaml's range over which the allowed share of repeated nodes slides
/// from 99% down to 10%.
const RATIO_LOW: usize = 400_000;
const RATIO_HIGH: usize = 4_000_000;

/// The share of `nodes` that go-yaml allows to come from aliases.
fn allowed_alias_ratio(nodes: usize) -> f64 {
    if nodes <= RATIO_LOW {
        0.99
    } else if nodes >= RATIO_HIGH {
        0.10
    } else {
        0.99 - 0.89 * ((nodes - RATIO_LOW) as f64 / (RATIO_HIGH - RATIO_LOW) as f64)
    }
}

/// What decoding has produced so far, against the limits.
struct Budget {
    /// Length of the YAML source.
    source: usize,
    max_bytes: usize,
    nodes: usize,
    /// Length of the JSON built so far.
    bytes: usize,
    refused: Option<YamlError>,
}

impl Budget {
    /// Counts a node of `bytes` bytes of JSON; an error once past a limit.
    fn take<E: de::Error>(&mut self, bytes: usize) -> Result<(), E> {
        self.nodes += 1;
        self.bytes += bytes;
        // At most two nodes per byte come from the source itself.
        let aliased = self.nodes.saturating_sub(2 * self.source);
        let refused = if aliased > MIN_ALIASED
            && self.nodes > MIN_NODES
            && aliased as f64 / self.nodes as f64 > allowed_alias_ratio(self.nodes)
        {
            YamlError::ExcessiveAliasing
        } else if self.bytes > self.max_bytes {
            // No document expands past eight times its size without aliases
            // (`{a,b}` is the worst: 9 bytes of JSON per 2 of YAML).
            if self.bytes > 8 * self.source {
                YamlError::ExcessiveAliasing
            } else {
                YamlError::TooLarge {
                    limit: self.max_bytes,
                }
            }
        } else {
            return Ok(());
        };
        let message = refused.to_string();
        self.refused = Some(refused);
        Err(E::custom(message))
    }
}

/// Deserializes one node into a JSON value, as `serde_json::Value` does,
/// counting it against the budget.
struct Node<'b> {
    budget: &'b mut Budget,
}

impl Node<'_> {
    fn number<E: de::Error>(self, n: Number) -> Result<Value, E> {
        self.budget.take(n.to_string().len())?;
        Ok(Value::Number(n))
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.budget.take(if v { 4 } else { 5 })?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.number(v.into())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.number(v.into())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        match Number::from_f64(v) {
            Some(n) => self.number(n),
            None => self.visit_none(),
        }
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.budget.take(crate::nesting::string_len(v))?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.budget.take(crate::nesting::string_len(&v))?;
        Ok(Value::String(v))
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.budget.take(4)?;
        Ok(Value::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.visit_none()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.budget.take(2)?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Node {
            budget: &mut *self.budget,
        })? {
            self.budget.bytes += 1;
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.budget.take(2)?;
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.budget.take(crate::nesting::string_len(&key) + 2)?;
            let value = map.next_value_seed(Node {
                budget: &mut *self.budget,
            })?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_as_serde_yaml_does() {
        for doc in [
            "a: 1\nb: [x, 2.5, true, null, ~]\nc: {d: e}\n'1': one\n",
            "- 1\n- -7\n- 18446744073709551615\n- .inf\n- 'quoted'\n",
            "anchors: &a {x: 1}\ncopy: *a\n",
            "",
        ] {
            let ours = from_slice(doc.as_bytes()).unwrap();
            let theirs: Value = serde_yaml_ng::from_slice(doc.as_bytes()).unwrap();
            assert_eq!(ours, theirs, "{doc}");
        }
        assert_eq!(
            from_slice(b"anchors: &a {x: 1}\ncopy: *a\n").unwrap()["copy"],
            json!({"x": 1})
        );
        assert!(matches!(from_slice(b"a: [1"), Err(YamlError::Syntax(_))));
    }

    /// The classic billion laughs: nine levels of ten aliases each.
    fn laughs(levels: usize) -> String {
        let mut doc = String::from(
            "a0: &a0 [\"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\", \"lol\"]\n",
        );
        for i in 1..levels {
            let p = i - 1;
            doc.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        doc
    }

    /// The limit: go-yaml's alias ratio, with repeats counted from two
    /// nodes per source byte.
    #[test]
    fn alias_bombs_are_excessive_aliasing() {
        let doc = laughs(9);
        assert!(doc.len() < 1_000);
        let err = from_slice(doc.as_bytes()).unwrap_err();
        assert!(matches!(err, YamlError::ExcessiveAliasing), "{err}");
        assert_eq!(
            err.to_string(),
            "yaml: document contains excessive aliasing"
        );
        // A few levels expand to a few thousand nodes: allowed, as go-yaml does.
        let v = from_slice(laughs(3).as_bytes()).unwrap();
        assert_eq!(v["a2"].as_array().unwrap().len(), 10);
    }

    /// The limit: the JSON built may not pass the stored-object limit.
    #[test]
    fn expansion_stops_at_the_byte_limit() {
        let big = format!("a: {}\n", "x".repeat(4_000));
        assert!(matches!(
            from_slice_within(big.as_bytes(), 1_000),
            Err(YamlError::TooLarge { limit: 1_000 })
        ));
        // Few aliases, each of a large anchor: more bytes than the source
        // could ever make without aliases.
        let doc = format!(
            "a: &a {}\nb: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n",
            "x".repeat(500)
        );
        assert!(matches!(
            from_slice_within(doc.as_bytes(), 5_000),
            Err(YamlError::ExcessiveAliasing)
        ));
        // The same without aliases is only too large.
        let plain = format!("a: [{}]\n", vec!["x".repeat(500); 11].join(", "));
        assert!(matches!(
            from_slice_within(plain.as_bytes(), 5_000),
            Err(YamlError::TooLarge { .. })
        ));
    }

    /// The limit: two bodies over 256 KiB decoded at once; a third waits
    /// its turn as a 429.
    #[test]
    fn large_bodies_take_turns() {
        let big = format!("a: {}\n", "x".repeat(300_000));
        let held = LARGE_DECODES
            .try_acquire_many(LARGE_AT_ONCE as u32)
            .unwrap();
        let err = from_slice(big.as_bytes()).unwrap_err();
        assert!(matches!(err, YamlError::Busy));
        assert_eq!(err.to_api().code, 429);
        assert!(
            from_slice(b"small: yes").is_ok(),
            "small bodies do not wait"
        );
        drop(held);
        assert!(from_slice(big.as_bytes()).is_ok());
    }
}
