//! Structural defaulting of custom resources, as kube-apiserver does it when
//! it decodes a request body: a `null` the schema neither allows
//! (`nullable`) nor has a `default` for is dropped, then every missing
//! property with a `default` (and every disallowed `null` that has one) gets
//! a copy of it, and the walk goes on into what is there, defaults included,
//! so a defaulted object's own properties are defaulted too.

use serde_json::Value;

use super::{Node, Schema};

impl Schema {
    /// The `default` of the property (or item) at node `i`, if it has one.
    fn default_of(&self, i: usize) -> Option<&Value> {
        self.defaults.get(&i)
    }

    /// `null` is no value at node `i` (kube's `isNonNullableNull`).
    fn null_not_allowed(&self, i: usize, x: &Value) -> bool {
        x.is_null() && !self.nullable.contains(&i)
    }
}

/// Drops from `v` (under schema node `node`) the nulls of properties that
/// are not `nullable` and have no `default` (kube's
/// `PruneNonNullableNullsWithoutDefaults`). Items of a list are kept.
pub(super) fn prune_nulls(s: &Schema, node: usize, v: &mut Value) {
    match (s.nodes.get(node), v) {
        (
            Some(Node::Object {
                props, additional, ..
            }),
            Value::Object(m),
        ) => {
            m.retain(|k, x| {
                let child = props.get(k).or(additional.as_ref());
                !child.is_some_and(|&c| s.null_not_allowed(c, x) && s.default_of(c).is_none())
            });
            for (k, x) in m.iter_mut() {
                if let Some(&c) = props.get(k).or(additional.as_ref()) {
                    prune_nulls(s, c, x);
                }
            }
        }
        (Some(Node::Array(item)), Value::Array(xs)) => {
            for x in xs {
                prune_nulls(s, *item, x);
            }
        }
        _ => {}
    }
}

/// Fills the defaults of `v` under schema node `node` (kube's structural
/// `Default`).
pub(super) fn fill(s: &Schema, node: usize, v: &mut Value) {
    match (s.nodes.get(node), v) {
        (
            Some(Node::Object {
                props, additional, ..
            }),
            Value::Object(m),
        ) => {
            for (k, &c) in props {
                let Some(d) = s.default_of(c) else { continue };
                match m.get_mut(k) {
                    None => _ = m.insert(k.clone(), d.clone()),
                    Some(x) if s.null_not_allowed(c, x) => *x = d.clone(),
                    Some(_) => {}
                }
            }
            for (k, x) in m.iter_mut() {
                let child = match props.get(k) {
                    Some(&c) => c,
                    None => match additional {
                        Some(a) => {
                            if let Some(d) = s.default_of(*a)
                                && s.null_not_allowed(*a, x)
                            {
                                *x = d.clone();
                            }
                            *a
                        }
                        None => continue,
                    },
                };
                fill(s, child, x);
            }
        }
        (Some(Node::Array(item)), Value::Array(xs)) => {
            for x in xs {
                if let Some(d) = s.default_of(*item)
                    && s.null_not_allowed(*item, x)
                {
                    *x = d.clone();
                }
                fill(s, *item, x);
            }
        }
        _ => {}
    }
}
