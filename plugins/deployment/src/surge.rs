//! Rollout arithmetic: `maxSurge` and `maxUnavailable` (ints or
//! percentages, rounded as upstream rounds them), the new ReplicaSet's next
//! size, and the proportions a scaling event is spread by.

use serde_json::Value;

use crate::model::{DESIRED_REPLICAS, Deployment, MAX_REPLICAS, ReplicaSet, Strategy};

/// An `IntOrString` of a rolling update: `3` or `"25%"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntOrPercent {
    Int(i64),
    Percent(i64),
}

impl IntOrPercent {
    /// Reads a JSON number or a `"<n>%"` string.
    pub fn from_json(v: &Value) -> Result<Self, String> {
        if let Some(n) = v.as_i64() {
            return Ok(Self::Int(n));
        }
        match v.as_str().and_then(|s| s.strip_suffix('%')) {
            Some(p) => p
                .parse()
                .map(Self::Percent)
                .map_err(|_| format!("invalid value for IntOrString: {v}")),
            None => Err(format!(
                "invalid value for IntOrString: {v}: not an integer or a percentage"
            )),
        }
    }

    /// The value against `total` (`GetScaledValueFromIntOrPercent`):
    /// percentages round up or down as asked.
    pub fn scaled(self, total: i64, round_up: bool) -> i64 {
        match self {
            Self::Int(n) => n,
            Self::Percent(p) => {
                let product = p * total;
                if round_up {
                    product.div_euclid(100) + i64::from(product.rem_euclid(100) != 0)
                } else {
                    product.div_euclid(100)
                }
            }
        }
    }
}

/// `(surge, unavailable)` for `desired` replicas (`ResolveFenceposts`):
/// surge rounds up, unavailable down, and if both come to zero one pod may
/// be unavailable, so that a rollout can always proceed.
pub(crate) fn resolve_fenceposts(
    max_surge: IntOrPercent,
    max_unavailable: IntOrPercent,
    desired: i64,
) -> (i64, i64) {
    let surge = max_surge.scaled(desired, true);
    let unavailable = max_unavailable.scaled(desired, false);
    if surge == 0 && unavailable == 0 {
        return (0, 1);
    }
    (surge, unavailable)
}

/// How many pods a rollout may take away (`MaxUnavailable`): never more
/// than the replicas; none outside a rolling update or at zero replicas.
pub(crate) fn max_unavailable(d: &Deployment) -> i64 {
    match d.strategy {
        Strategy::RollingUpdate {
            max_surge,
            max_unavailable,
        } if d.replicas != 0 => resolve_fenceposts(max_surge, max_unavailable, d.replicas)
            .1
            .min(d.replicas),
        _ => 0,
    }
}

/// How many pods a rollout may add over the replicas (`MaxSurge`).
pub(crate) fn max_surge(d: &Deployment) -> i64 {
    match d.strategy {
        Strategy::RollingUpdate {
            max_surge,
            max_unavailable,
        } => resolve_fenceposts(max_surge, max_unavailable, d.replicas).0,
        Strategy::Recreate => 0,
    }
}

/// The size the new ReplicaSet may grow to now (`NewRSNewReplicas`), given
/// the planned sizes of all ReplicaSets (the new one's included): up to
/// `replicas + maxSurge` pods in all, never past `replicas` in the new one.
pub(crate) fn new_rs_new_replicas(d: &Deployment, all_replicas: i64, new_replicas: i64) -> i64 {
    match d.strategy {
        Strategy::RollingUpdate { max_surge, .. } => {
            let max_total = d.replicas + max_surge.scaled(d.replicas, true);
            if all_replicas >= max_total {
                return new_replicas;
            }
            let up = (max_total - all_replicas).min(d.replicas - new_replicas);
            new_replicas + up
        }
        Strategy::Recreate => d.replicas,
    }
}

/// Whether the new ReplicaSet holds every replica, and the Deployment
/// agrees (`IsSaturated`).
pub(crate) fn is_saturated(d: &Deployment, rs: &ReplicaSet) -> bool {
    rs.replicas == d.replicas
        && rs.int_annotation(DESIRED_REPLICAS) == Some(d.replicas)
        && rs.status.available == d.replicas
}

/// How many of `to_add` replicas (negative: to remove) `rs` takes when a
/// Deployment is scaled during a rollout, `added` having gone to the
/// ReplicaSets before it (`GetProportion`).
pub(crate) fn proportion(rs: &ReplicaSet, d: &Deployment, to_add: i64, added: i64) -> i64 {
    if rs.replicas == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = fraction(rs, d);
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

/// The change that keeps `rs` at the same share of the Deployment's
/// `replicas + maxSurge` as when it was last sized (its `max-replicas`
/// annotation, else the Deployment's current replicas), rounded half away
/// from zero (`getReplicaSetFraction`).
fn fraction(rs: &ReplicaSet, d: &Deployment) -> i64 {
    if d.replicas == 0 {
        return -rs.replicas;
    }
    let deployment_replicas = d.replicas + max_surge(d);
    let annotated = rs.int_annotation(MAX_REPLICAS).unwrap_or(d.status.replicas);
    if annotated == 0 {
        // Upstream never scales up from nothing; nor does it divide by it.
        return 0;
    }
    let size = (rs.replicas * deployment_replicas) as f64 / annotated as f64;
    size.round() as i64 - rs.replicas
}
