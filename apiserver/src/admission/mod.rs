//! Admission as a cluster's API server does it for namespace governance:
//! LimitRange (defaults and bounds for pods and claims) and ResourceQuota
//! (refuse what would exceed a quota, charge what is admitted).
//!
//! A write passes through here in the order the real server uses:
//! 1. [`normalize`], with the other defaults: quantities in canonical form,
//!    pod requests defaulted to limits, limit range items defaulted;
//! 2. [`mutate`], before validation: unparsable quantities are a `400`,
//!    new pods get their LimitRange defaults;
//! 3. [`validation_errors`], inside validation: the `422`s;
//! 4. [`validate`], after validation: LimitRange bounds and quota checks,
//!    a `403` for a violation, else what to charge;
//! 5. [`Admitted::commit`], just before the object is stored, under the same
//!    lock: the charged quotas are written first (as upstream charges before
//!    it stores), and a quota being written gets its status.
//!
//! The rules themselves are pure functions over JSON in the submodules and
//! in `windlass_selector::quota` (shared with the `resourcequota` plugin).

mod limit_range;
mod requirements;
mod resource_quota;

use std::sync::Arc;

use serde_json::Value;
use windlass_selector::quota::Evaluator;
use windlass_selector::resources::list_to_json;

use limit_range::Range;
use resource_quota::Quota;

use crate::scope::Req;
use crate::state::{AckRx, Obj, State};
use crate::status::{ApiError, ApiResult, Target};

/// `(field, message)` validation causes.
pub(crate) type Causes = Vec<(String, String)>;

const QUOTAS: &str = "/resourcequotas";
const LIMIT_RANGES: &str = "/limitranges";

/// Decode-time normalization of the governed kinds (step 1).
pub(crate) fn normalize(group: &str, plural: &str, obj: &mut Value) {
    if !group.is_empty() {
        return;
    }
    match plural {
        "pods" => requirements::default_requests_to_limits(obj),
        "limitranges" => limit_range::default_range(obj),
        _ => {}
    }
    requirements::canonicalize(plural, obj);
}

/// Step 2: the decode check, and LimitRange defaults for a new pod.
pub(crate) fn mutate(
    st: &State,
    req: &Req<'_>,
    old: Option<&Value>,
    obj: &mut Value,
) -> ApiResult<()> {
    let (group, plural) = (req.res.group.as_str(), req.res.plural.as_str());
    if !group.is_empty() {
        return Ok(());
    }
    if let Some(why) = requirements::undecodable(plural, obj) {
        let kind = &req.res.kind;
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {kind}: {why}",
            req.version
        )));
    }
    // Pod resources cannot change after creation, so, as upstream, ranges
    // only default pods being created.
    if plural == "pods" && old.is_none() {
        let stored = st.list(LIMIT_RANGES, Some(req.ns));
        if !stored.is_empty() {
            let parsed: Vec<_> = stored.iter().map(|o| o.derived(Range::of)).collect();
            let ranges: Vec<&Range> = parsed.iter().map(|r| r.as_ref()).collect();
            limit_range::default_pod(&ranges, obj);
        }
    }
    Ok(())
}

/// Step 3: the validation causes of the governed kinds.
pub(crate) fn validation_errors(group: &str, plural: &str, obj: &Value) -> Causes {
    let mut errs = Causes::new();
    if group.is_empty() {
        match plural {
            "pods" => requirements::pod_errors(obj, &mut errs),
            "persistentvolumeclaims" => requirements::claim_errors(obj, &mut errs),
            "limitranges" => limit_range::errors(obj, &mut errs),
            "resourcequotas" => resource_quota::errors(obj, &mut errs),
            _ => {}
        }
    }
    errs
}

/// What an admitted write still has to do when it is stored.
#[derive(Debug, Default)]
#[must_use = "an admitted write must be stored, or its quota is not charged"]
pub(crate) struct Admitted {
    /// Quotas with their new `status.used`: the object to store, and how
    /// admission reads it (so the next write need not parse it again).
    charges: Vec<(Value, Quota)>,
    /// The object is a quota whose status must be (re)computed.
    quota_status: bool,
}

/// Step 4: LimitRange bounds and quota. `shown` is the name errors use (for
/// a generated name, its prefix: upstream admits before naming).
pub(crate) fn validate(
    st: &State,
    req: &Req<'_>,
    old: Option<&Value>,
    obj: &Value,
    shown: &str,
) -> ApiResult<Admitted> {
    let mut admitted = Admitted::default();
    if !req.res.namespaced || req.ns.is_empty() {
        return Ok(admitted);
    }
    let (group, plural) = (req.res.group.as_str(), req.res.plural.as_str());
    let forbidden = |why: String| {
        ApiError::forbidden(
            Target {
                group,
                resource: plural,
                name: shown,
            },
            &why,
        )
    };
    let deleting = old.is_some_and(crate::object::is_deleting);
    let limited = group.is_empty()
        && !deleting
        && match plural {
            "pods" => old.is_none(),
            // Claims are checked on create and whenever their spec changes.
            "persistentvolumeclaims" => old.is_none_or(|o| o["spec"] != obj["spec"]),
            _ => false,
        };
    if limited {
        let stored = st.list(LIMIT_RANGES, Some(req.ns));
        let parsed: Vec<_> = stored.iter().map(|o| o.derived(Range::of)).collect();
        let ranges: Vec<&Range> = parsed.iter().map(|r| r.as_ref()).collect();
        let violation = if plural == "pods" {
            limit_range::pod_violation(&ranges, obj)
        } else {
            limit_range::claim_violation(&ranges, obj)
        };
        if let Some(why) = violation {
            return Err(forbidden(why));
        }
    }
    admitted.quota_status = group.is_empty()
        && plural == "resourcequotas"
        && old.is_none_or(|o| o["spec"] != obj["spec"]);
    let stored = st.list(QUOTAS, Some(req.ns));
    if stored.is_empty() {
        return Ok(admitted);
    }
    let Some(ev) = Evaluator::of(group, plural) else {
        return Ok(admitted);
    };
    let parsed: Vec<_> = stored.iter().map(|o| o.derived(Quota::of)).collect();
    let quotas: Vec<&Quota> = parsed.iter().map(|q| q.as_ref()).collect();
    let charges = resource_quota::check(&quotas, &ev, old, obj).map_err(forbidden)?;
    for (i, used) in charges {
        let mut v = stored[i].value.clone();
        v["status"]["used"] = list_to_json(&used);
        let mut parsed = quotas[i].clone();
        parsed.used = used;
        admitted.charges.push((v, parsed));
    }
    Ok(admitted)
}

impl Admitted {
    /// Step 5: stores the object (`None`: deletes it) with the charged
    /// quotas, in one storage transaction, and gives a quota being written
    /// its status. Call under the same lock as [`validate`] (not for dry
    /// runs).
    pub(crate) fn store(
        self,
        st: &mut State,
        req: &Req<'_>,
        name: &str,
        mut obj: Option<Value>,
    ) -> (Arc<Obj>, AckRx) {
        st.write_together(|st| {
            for (quota, parsed) in self.charges {
                // Not awaited on its own: it commits with the object, so
                // the object's acknowledgement covers both.
                let name = parsed.name.clone();
                let (stored, _ack) = st.write_supersedable(QUOTAS, req.ns, &name, quota);
                stored.prime(parsed);
            }
            if self.quota_status
                && let Some(obj) = &mut obj
            {
                set_quota_status(st, req, obj);
            }
            st.write(&req.res.key(), req.ns, name, obj)
        })
    }
}

/// A quota being written gets the status the quota controller would give it.
fn set_quota_status(st: &State, req: &Req<'_>, obj: &mut Value) {
    let creating = st.get(QUOTAS, req.ns, crate::object::name(obj)).is_none();
    let this = obj.clone();
    resource_quota::set_status(obj, |group, resource, visit| {
        let key = format!("{group}/{resource}");
        for o in st.list(&key, Some(req.ns)) {
            visit(&o.value);
        }
        // A new quota counts itself among the namespace's quotas.
        if creating && key == QUOTAS {
            visit(&this);
        }
        true
    });
}
