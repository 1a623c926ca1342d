//! Resource lists (`{cpu: 500m, memory: 1Gi}`): read from JSON and written
//! back in canonical form, and the arithmetic quota needs (add, subtract,
//! mask, compare), with the API server's semantics for absent keys.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::{Quantity, QuantityError};

/// Named quantities, ordered by name (as the API server prints them).
pub type ResourceList = BTreeMap<String, Quantity>;

/// A quantity in a resource list that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}: {error}")]
pub struct InvalidQuantity {
    /// The resource name whose value is bad.
    pub name: String,
    /// Why.
    pub error: QuantityError,
}

/// Parses one quantity from JSON: a string, or a number (YAML's `cpu: 1`).
pub fn quantity_from_json(v: &Value) -> Result<Quantity, QuantityError> {
    match v {
        Value::String(s) => Quantity::parse(s.trim()),
        Value::Number(n) => Quantity::parse(&n.to_string()),
        _ => Err(QuantityError::Format),
    }
}

/// Reads a resource list; `null` or a missing field is an empty list.
pub fn parse_list(v: &Value) -> Result<ResourceList, InvalidQuantity> {
    let Some(m) = v.as_object() else {
        return if v.is_null() {
            Ok(ResourceList::new())
        } else {
            Err(InvalidQuantity {
                name: String::new(),
                error: QuantityError::Format,
            })
        };
    };
    m.iter()
        .map(|(name, q)| {
            quantity_from_json(q)
                .map(|q| (name.clone(), q))
                .map_err(|error| InvalidQuantity {
                    name: name.clone(),
                    error,
                })
        })
        .collect()
}

/// A resource list as JSON, each quantity in canonical form.
pub fn list_to_json(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, q)| (k.clone(), Value::String(q.to_string())))
            .collect::<Map<String, Value>>(),
    )
}

/// `a + b`: every key of either, summed where both have it (`Add`).
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    add_into(&mut out, b);
    out
}

/// `a += b`, as [`add`].
pub fn add_into(a: &mut ResourceList, b: &ResourceList) {
    for (k, q) in b {
        a.entry(k.clone()).or_insert(Quantity::ZERO).add(q);
    }
}

/// `a - b` with results below zero (and keys only in `b`) as zero, as
/// upstream's `SubtractWithNonNegativeResult`.
pub fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    for (k, q) in a {
        let mut d = *q;
        if let Some(o) = b.get(k) {
            d.sub(o);
        }
        out.insert(k.clone(), if d.is_negative() { Quantity::ZERO } else { d });
    }
    for k in b.keys() {
        out.entry(k.clone()).or_insert(Quantity::ZERO);
    }
    out
}

/// The entries of `list` whose names are in `names`.
pub fn mask<'a>(list: &ResourceList, names: impl IntoIterator<Item = &'a str>) -> ResourceList {
    names
        .into_iter()
        .filter_map(|n| list.get(n).map(|q| (n.to_owned(), *q)))
        .collect()
}

/// The names whose value in `a` is above their value in `b` (names only in
/// one of the two are never over), as upstream's `LessThanOrEqual`.
pub fn exceeded(a: &ResourceList, b: &ResourceList) -> Vec<String> {
    b.iter()
        .filter(|(k, limit)| a.get(*k).is_some_and(|q| q > limit))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Whether two lists have the same names with equal values.
pub fn equal(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len() && a.iter().all(|(k, q)| b.get(k) == Some(q))
}

/// The list without its zero entries.
pub fn without_zeros(list: &ResourceList) -> ResourceList {
    list.iter()
        .filter(|(_, q)| !q.is_zero())
        .map(|(k, q)| (k.clone(), *q))
        .collect()
}

/// The names with a value below zero.
pub fn negative_names(list: &ResourceList) -> Vec<String> {
    list.iter()
        .filter(|(_, q)| q.is_negative())
        .map(|(k, _)| k.clone())
        .collect()
}

/// `name=value,…` sorted by name, as the API server's quota messages print.
pub fn pretty(list: &ResourceList) -> String {
    list.iter()
        .map(|(k, q)| format!("{k}={q}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn list(v: Value) -> ResourceList {
        parse_list(&v).unwrap()
    }

    #[test]
    fn reads_strings_and_numbers_and_writes_canonical_strings() {
        let l = list(json!({"cpu": 0.5, "memory": "1024Mi", "pods": 4}));
        assert_eq!(
            list_to_json(&l),
            json!({"cpu": "500m", "memory": "1Gi", "pods": "4"})
        );
        assert!(parse_list(&Value::Null).unwrap().is_empty());
        let err = parse_list(&json!({"cpu": "lots"})).unwrap_err();
        assert_eq!(err.name, "cpu");
        assert_eq!(err.error, QuantityError::Format);
        assert!(parse_list(&json!({"cpu": true})).is_err());
        assert!(parse_list(&json!(["cpu"])).is_err());
    }

    #[test]
    fn arithmetic_over_absent_keys() {
        let a = list(json!({"cpu": "1", "pods": "2"}));
        let b = list(json!({"cpu": "500m", "memory": "1Gi"}));
        assert_eq!(
            list_to_json(&add(&a, &b)),
            json!({"cpu": "1500m", "memory": "1Gi", "pods": "2"})
        );
        assert_eq!(
            list_to_json(&subtract_non_negative(&b, &a)),
            json!({"cpu": "0", "memory": "1Gi", "pods": "0"})
        );
        assert_eq!(
            list_to_json(&mask(&a, ["pods", "services"])),
            json!({"pods": "2"})
        );
        let hard = list(json!({"cpu": "1200m", "pods": "2", "memory": "1"}));
        assert_eq!(exceeded(&add(&a, &b), &hard), ["cpu", "memory"]);
        assert!(equal(
            &list(json!({"m": "1Gi"})),
            &list(json!({"m": "1073741824"}))
        ));
        assert!(!equal(&a, &b));
        assert_eq!(pretty(&a), "cpu=1,pods=2");
        assert_eq!(without_zeros(&list(json!({"a": "0", "b": "1"}))).len(), 1);
        assert_eq!(negative_names(&list(json!({"a": "-1", "b": "1"}))), ["a"]);
    }
}
