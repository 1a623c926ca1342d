//! Admission as a cluster's API server does it for namespace governance:
//! LimitRange (defaults and bounds for pods and claims) and ResourceQuota
//! (refuse what would exceed a quota, charge what is admitted).
//!
//! A write passes through here in the order the real server uses:
//! 1. [`normalize`], with the other defaults: quantities in canonical form,
//!    pod requests defaulted to limits, limit range items defaulted;
//! 2. [`mutate`], before validation: unparsable quantities are a `400`,
//!    new pods get their LimitRange defaults, new claims the default
//!    StorageClass, new claims and volumes their protection finalizer
//!    (`storage_protection`) (then, in `write.rs`, new pods their priority
//!    and default tolerations: [`priority`]); it returns the [`Review`] of
//!    the write, which holds a pod's quantities parsed once for every
//!    later step;
//! 3. [`validation_errors`], inside validation: the `422`s;
//! 4. [`validate`], after validation: LimitRange bounds and quota checks,
//!    a `403` for a violation, else what to charge;
//! 5. [`Admitted::store`], under the same lock: the object is stored, and
//!    the quotas it charged are written with it, or (for a create, see
//!    [`Charges`]) charged in memory and written once for all the creates
//!    that arrive together; a quota being written gets its status.
//!
//! The rules themselves are pure functions over JSON in the submodules and
//! in `windlass_selector::quota` (shared with the `resourcequota` plugin).

mod limit_range;
pub(crate) mod priority;
mod requirements;
mod resource_quota;
mod storage_class;
mod storage_protection;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;
use windlass_selector::partial::Fields;
use windlass_selector::quota::{Evaluator, PodUsage};
use windlass_selector::resources::list_to_json;
use windlass_selector::{PodResources, QosClass};

use limit_range::Range;
use resource_quota::{Charge, Quota};

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

/// What admission read of the object being written, kept for the steps
/// after [`mutate`]: a pod's quantities are parsed once per write (its
/// LimitRange defaults are added to them already parsed), and validation,
/// LimitRange bounds, quota usage and the pod's QoS class all read them
/// from here.
#[derive(Debug, Default)]
pub(crate) struct Review {
    pod: Option<PodResources>,
    qos: OnceCell<QosClass>,
    /// A new pod's LimitRange verdict and quota usage, when [`early`]
    /// worked them out before the state lock.
    bounds: Option<Option<String>>,
    /// (Only a usage that had to be added up is kept: one that borrows
    /// the pod's one container is read again from `pod` for nothing.)
    usage: Option<PodUsage<'static>>,
}

impl Review {
    /// The parsed resources of the pod being written (none for other kinds).
    pub(crate) fn pod(&self) -> Option<&PodResources> {
        self.pod.as_ref()
    }

    /// The QoS class of the pod `obj` being written, computed once.
    pub(crate) fn qos_class(&self, obj: &Value) -> QosClass {
        *self.qos.get_or_init(|| match &self.pod {
            Some(p) => p.qos_class(),
            None => windlass_selector::qos_class(obj),
        })
    }
}

/// The `400` for an object whose quantities do not parse.
fn undecodable(req: &Req<'_>, why: String) -> ApiError {
    let kind = &req.res.kind;
    ApiError::bad_request(format!(
        "{kind} in version \"{}\" cannot be handled as a {kind}: {why}",
        req.version
    ))
}

/// A pod create's admission, as far as it can go before the state lock:
/// in a namespace with a LimitRange or a quota, the pod is normalized
/// (step 1, which the write repeats to no effect), its quantities parsed,
/// its LimitRange defaults filled in and its bounds checked, and its quota
/// usage and QoS class worked out, so that under the lock only the quota
/// check and charge remain ([`mutate`] then hands this back, errors
/// included, at the point it would have found them); for a pod create
/// that [`governing`] found governed.
///
/// The LimitRanges are read here, a moment before the pod is stored, as
/// upstream's LimitRanger reads them from its informer's cache: a range
/// written meanwhile applies from the next pod. Never a range older than
/// a write already answered, since they are read from the state itself.
/// Quota is not read here: its check and charge stay under the lock.
pub(crate) fn early(req: &Req<'_>, governing: Governing, obj: &mut Value) -> ApiResult<Review> {
    normalize("", "pods", obj);
    new_pod(req, &governing.ranges, governing.quotas, obj)
}

/// What governs a pod create in its namespace, for [`early`]: the
/// LimitRanges, and whether there are quotas, read under a brief lock of
/// the `state` (taken only for a pod create in a namespace). `None`: not
/// such a create, or a namespace with neither.
pub(crate) fn governing<G: std::ops::Deref<Target = State>>(
    state: impl FnOnce() -> G,
    req: &Req<'_>,
    obj: &Value,
) -> Option<Governing> {
    let res = req.res;
    if !(res.group.is_empty() && res.plural == "pods" && res.namespaced)
        || req.ns.is_empty()
        || !obj.is_object()
    {
        return None;
    }
    let st = state();
    let ranges = st.list(LIMIT_RANGES, Some(req.ns));
    let quotas = st.any_in(QUOTAS, req.ns);
    (!ranges.is_empty() || quotas).then_some(Governing { ranges, quotas })
}

/// See [`governing`].
pub(crate) struct Governing {
    ranges: Vec<Arc<Obj>>,
    quotas: bool,
}

/// Step 2 for a pod being created, and what step 4 reads of it: its
/// LimitRange verdict, and its usage if the namespace had `quotas`.
fn new_pod(req: &Req<'_>, stored: &[Arc<Obj>], quotas: bool, obj: &mut Value) -> ApiResult<Review> {
    let mut pod = PodResources::of(obj).map_err(|e| undecodable(req, e.error.to_string()))?;
    // One range (the usual namespace) is read in place: no list of them.
    let (one, many): (Option<[_; 1]>, Vec<_>) = match stored {
        [o] => (Some([o.derived(Range::of)]), vec![]),
        _ => (None, stored.iter().map(|o| o.derived(Range::of)).collect()),
    };
    let ranges = one.as_ref().map_or(&many[..], |one| &one[..]);
    limit_range::default_pod(ranges, obj, &mut pod);
    let review = Review {
        bounds: Some(limit_range::pod_violation(ranges, &pod)),
        usage: (quotas && !pod.is_one_container()).then(|| PodUsage::of(obj, &pod).into_owned()),
        qos: OnceCell::from(pod.qos_class()),
        pod: Some(pod),
    };
    Ok(review)
}

/// Step 2: the decode check, and LimitRange defaults for a new pod.
/// `early`: what [`early`] did of it before the lock.
pub(crate) fn mutate(
    st: &State,
    req: &Req<'_>,
    old: Option<&Value>,
    obj: &mut Value,
    early: Option<ApiResult<Review>>,
) -> ApiResult<Review> {
    if let Some(review) = early {
        return review;
    }
    let (group, plural) = (req.res.group.as_str(), req.res.plural.as_str());
    let mut review = Review::default();
    if !group.is_empty() {
        return Ok(review);
    }
    let undecodable = |why: String| undecodable(req, why);
    if plural == "persistentvolumeclaims" && old.is_none() {
        storage_class::default_claim(st, obj);
    }
    if old.is_none() {
        storage_protection::protect(plural, obj);
    }
    if plural != "pods" {
        return match requirements::undecodable(plural, obj) {
            Some(why) => Err(undecodable(why)),
            None => Ok(review),
        };
    }
    let mut pod = PodResources::of(obj).map_err(|e| undecodable(e.error.to_string()))?;
    // Pod resources cannot change after creation, so, as upstream, ranges
    // only default pods being created.
    if old.is_none() {
        let stored = st.list(LIMIT_RANGES, Some(req.ns));
        if !stored.is_empty() {
            let ranges: Vec<_> = stored.iter().map(|o| o.derived(Range::of)).collect();
            limit_range::default_pod(&ranges, obj, &mut pod);
        }
    }
    review.pod = Some(pod);
    Ok(review)
}

/// Step 3: the validation causes of the governed kinds. `pod`: the pod's
/// resources as [`mutate`] parsed them (else they are read from `obj`).
pub(crate) fn validation_errors(
    group: &str,
    plural: &str,
    obj: &Value,
    pod: Option<&PodResources>,
) -> Causes {
    let mut errs = Causes::new();
    if group.is_empty() {
        match plural {
            "pods" => match pod {
                Some(pod) => requirements::pod_errors(pod, &mut errs),
                None => requirements::pod_errors(&PodResources::lenient(obj), &mut errs),
            },
            "persistentvolumeclaims" => requirements::claim_errors(obj, &mut errs),
            "limitranges" => limit_range::errors(obj, &mut errs),
            "resourcequotas" => resource_quota::errors(obj, &mut errs),
            _ => {}
        }
    }
    errs
}

/// Quota charges held in memory, not yet written to the quotas.
///
/// Writing a charged quota costs a new version of it (a copy, its
/// serialization, a watch event) per charge; with three quotas that is most
/// of a pod create. So a create may leave its charge here instead: the next
/// admission reads it (two creates can never both take the last unit), and
/// [`Charges::flush`] writes each charged quota once for every charge since
/// the last flush. Whoever else uses the state flushes first (see
/// `Shared::lock`): only creates ever see a quota without its charges, and
/// they read them here; a client reading a quota after its create was
/// answered finds it counted. Otherwise charges are flushed a few
/// milliseconds after they are made (`Shared::schedule_charge_flush`), so a
/// watcher of quotas sees them follow.
///
/// The object and its charge are therefore not one storage transaction: a
/// crash can keep an object whose charge was still in memory. Every start
/// recounts every quota from what is stored ([`recount_quotas`]), so after a
/// restart `status.used` is exactly what the stored objects use.
#[derive(Debug, Default)]
pub(crate) struct Charges {
    /// The charged quotas as admission reads them, by namespace and name
    /// (nested, so that a look-up borrows its keys).
    quotas: BTreeMap<String, BTreeMap<Arc<str>, Quota>>,
}

impl Charges {
    /// The state's pending charges, if any were ever left.
    fn of(st: &State) -> Option<&Charges> {
        st.charges.as_ref()?.downcast_ref()
    }

    /// The state's pending charges, to add to.
    fn of_mut(st: &mut State) -> &mut Charges {
        st.charges
            .get_or_insert_with(|| Box::new(Charges::default()))
            .downcast_mut()
            .expect("only admission keeps charges in the state")
    }

    /// Whether charges wait to be written.
    pub(crate) fn pending(st: &State) -> bool {
        Self::of(st).is_some_and(|c| !c.quotas.is_empty())
    }

    /// The pending charges of namespace `ns`, by quota name.
    fn in_namespace(&self, ns: &str) -> Option<&BTreeMap<Arc<str>, Quota>> {
        self.quotas.get(ns)
    }

    /// Sets quota `index`'s part of `charge` into its pending reading,
    /// made from `stored` if it had no charge pending.
    fn charge(&mut self, ns: &str, stored: &Obj, charge: &Charge, index: usize) {
        let in_ns = match self.quotas.get_mut(ns) {
            Some(m) => m,
            None => self.quotas.entry(ns.to_owned()).or_default(),
        };
        let base = stored.derived(Quota::of);
        let pending = match in_ns.get_mut(&base.name) {
            Some(q) => q,
            None => in_ns.entry(base.name.clone()).or_insert(base.into_owned()),
        };
        charge.apply(index, pending);
    }

    /// Writes every pending charge: each charged quota once, with its new
    /// `status.used` (one watch event, one stored row).
    pub(crate) fn flush(st: &mut State) {
        if !Self::pending(st) {
            return;
        }
        for (ns, quotas) in std::mem::take(&mut Self::of_mut(st).quotas) {
            for (name, parsed) in quotas {
                // The quota cannot have changed meanwhile: whatever else
                // could change it flushed first.
                if st.get(QUOTAS, &ns, &name).is_some() {
                    charge_quota(st, &ns, parsed);
                }
            }
        }
    }
}

/// Writes the quota `charged` reads with its `status.used` (not awaited
/// on its own: it commits with whatever is written with it), and keeps
/// the reading with the stored version.
fn charge_quota(st: &mut State, ns: &str, mut charged: Quota) {
    let mut v = Value::clone(&charged.stored);
    v["status"]["used"] = list_to_json(&charged.used);
    let name = charged.name.clone();
    let (stored, _ack, v) = st.write_supersedable(QUOTAS, ns, &name, v);
    charged.stored = Arc::new(v);
    stored.prime(charged);
}

/// Recounts every quota's `status.used` from the objects stored, as the
/// quota controller's first sync would, and writes those that differ. Run
/// at start: a charge still in memory when the process died is lost, its
/// object may not be (see [`Charges`]).
pub(crate) fn recount_quotas(st: &mut State) {
    for quota in st.list(QUOTAS, None) {
        let ns = quota.attrs.namespace.to_string();
        let mut v = quota.value();
        let before = v["status"].clone();
        resource_quota::set_status(&mut v, |group, resource, visit| {
            visit_counted(st, &ns, group, resource, visit);
            true
        });
        if v["status"] != before {
            tracing::info!(namespace = %ns, quota = %crate::object::name(&v), "quota usage recounted at start");
            let name = crate::object::name(&v).to_owned();
            let _ = st.write(QUOTAS, &ns, &name, Some(v));
        }
    }
}

/// What an admitted write still has to do when it is stored.
#[derive(Debug, Default)]
#[must_use = "an admitted write must be stored, or its quota is not charged"]
pub(crate) struct Admitted {
    /// The namespace's quotas as stored; `charge` says which it charges.
    quotas: Vec<Arc<Obj>>,
    /// Their new `status.used`, set into how admission reads them when
    /// stored (so the next write need not parse them).
    charge: Charge,
    /// The object is a quota whose status must be (re)computed.
    quota_status: bool,
}

/// Step 4: LimitRange bounds and quota. `shown` is the name errors use (for
/// a generated name, its prefix: upstream admits before naming).
pub(crate) fn validate(
    st: &State,
    req: &Req<'_>,
    review: &Review,
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
    if let (true, Some(violation)) = (limited, &review.bounds) {
        if let Some(why) = violation {
            return Err(forbidden(why.clone()));
        }
    } else if limited {
        let stored = st.list(LIMIT_RANGES, Some(req.ns));
        let ranges: Vec<_> = stored.iter().map(|o| o.derived(Range::of)).collect();
        let violation = match review.pod() {
            Some(pod) if plural == "pods" => limit_range::pod_violation(&ranges, pod),
            _ => limit_range::claim_violation(&ranges, obj),
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
    // A charge not yet written counts as written.
    let pending = Charges::of(st).and_then(|c| c.in_namespace(req.ns));
    let quotas: Vec<_> = stored
        .iter()
        .map(|o| {
            let stored = o.derived(Quota::of);
            match pending.and_then(|p| p.get(&stored.name)) {
                Some(q) => Cow::Borrowed(q),
                None => stored,
            }
        })
        .collect();
    let subject = resource_quota::Subject {
        obj,
        pod: review.pod(),
        usage: review.usage.as_ref(),
        qos: &|| review.qos_class(obj),
    };
    let charge = resource_quota::charges(&quotas, &ev, old, &subject).map_err(forbidden)?;
    drop(quotas);
    admitted.quotas = stored;
    admitted.charge = charge;
    Ok(admitted)
}

impl Admitted {
    /// Step 5: stores the object (`None`: deletes it) with the charged
    /// quotas, in one storage transaction, and gives a quota being written
    /// its status. Call under the same lock as [`validate`] (not for dry
    /// runs). A create may leave the charges in [`Charges`] instead.
    pub(crate) fn store(
        self,
        st: &mut State,
        req: &Req<'_>,
        name: &str,
        mut obj: Option<Value>,
    ) -> (Arc<Obj>, AckRx) {
        let (quotas, charge) = (self.quotas, self.charge);
        let deferred = st.charges_deferrable;
        if deferred {
            let pending = Charges::of_mut(st);
            for i in charge.quotas() {
                pending.charge(req.ns, &quotas[i], &charge, i);
            }
        }
        st.write_together(|st| {
            for i in charge.quotas().filter(|_| !deferred) {
                let base = &quotas[i];
                // Not awaited on its own: it commits with the object, so
                // the object's acknowledgement covers both.
                let mut parsed = base.derived(Quota::of).into_owned();
                charge.apply(i, &mut parsed);
                charge_quota(st, req.ns, parsed);
            }
            if self.quota_status
                && let Some(obj) = &mut obj
            {
                set_quota_status(st, req, obj);
            }
            st.write(&req.res.storage_key(), req.ns, name, obj)
        })
    }
}

/// A quota being written gets the status the quota controller would give it.
fn set_quota_status(st: &State, req: &Req<'_>, obj: &mut Value) {
    let creating = st.get(QUOTAS, req.ns, crate::object::name(obj)).is_none();
    let this = obj.clone();
    resource_quota::set_status(obj, |group, resource, visit| {
        visit_counted(st, req.ns, group, resource, visit);
        // A new quota counts itself among the namespace's quotas.
        if creating && (group, resource) == ("", "resourcequotas") {
            visit(&this);
        }
        true
    });
}

/// Hands `visit` every stored `group`/`resource` object of namespace `ns`
/// as a quota's recount reads it: parsed only as far as its evaluator
/// reads (`Evaluator::reads`; a stored pod is mostly other fields, and a
/// counted kind is not parsed at all). The recount runs under the state
/// lock, over every object the quota counts.
fn visit_counted(st: &State, ns: &str, group: &str, resource: &str, visit: &mut dyn FnMut(&Value)) {
    let reads = Evaluator::of(group, resource).map_or(&[][..], |ev| ev.reads());
    let fields = Fields::of(reads);
    for o in st.list(&format!("{group}/{resource}"), Some(ns)) {
        visit(&o.fields(&fields));
    }
}

/// An empty state in memory, for the tests of admission's rules.
#[cfg(test)]
fn empty_state() -> State {
    let history = crate::state::History {
        events: 100,
        bytes: usize::MAX,
        buffer: 16,
        commit_backlog: 10,
    };
    State::new(crate::storage::Storage::in_memory().0, 100, vec![], history)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn state() -> State {
        empty_state()
    }

    /// What `mutate` gives a pod without LimitRanges.
    fn review(pod: &Value) -> Review {
        Review {
            pod: Some(PodResources::of(pod).unwrap()),
            ..Review::default()
        }
    }

    fn pod(name: &str, cpu: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "a"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}})
    }

    /// What a crash can leave (objects stored, their charges not): a start
    /// recounts the quota from them, and leaves a right one alone.
    #[test]
    fn a_start_recounts_quotas_from_what_is_stored() {
        let mut st = state();
        let quota = |used: Value| {
            json!({"metadata": {"name": "q", "namespace": "a"},
                "spec": {"hard": {"pods": "10", "requests.cpu": "4"}},
                "status": {"hard": {"pods": "10", "requests.cpu": "4"}, "used": used}})
        };
        st.write(
            QUOTAS,
            "a",
            "q",
            Some(quota(json!({"pods": "1", "requests.cpu": "500m"}))),
        );
        st.write("/pods", "a", "p1", Some(pod("p1", "500m")));
        st.write("/pods", "a", "p2", Some(pod("p2", "1500m")));
        st.write("/pods", "b", "other", Some(pod("other", "1")));
        recount_quotas(&mut st);
        let q = st.get(QUOTAS, "a", "q").unwrap();
        assert_eq!(
            q.value()["status"]["used"],
            json!({"pods": "2", "requests.cpu": "2"})
        );
        let rv = st.rv;
        recount_quotas(&mut st);
        assert_eq!(st.rv, rv, "nothing to write");
    }

    /// A pod's quantities are parsed once, in `mutate`: one that does not
    /// parse, or a list that is not a map, is the decoder's `400`, and a
    /// good pod's parsed resources are what validation and quota read.
    #[test]
    fn a_pod_is_parsed_once_and_a_bad_list_is_a_400() {
        let st = state();
        let res = st.registry.lookup("", "v1", "pods").unwrap().clone();
        let req = Req {
            res: &res,
            ns: "a",
            version: "v1",
            dry_run: false,
            sub: "",
        };
        for bad in [json!({"cpu": "x"}), json!("1")] {
            let mut p = pod("p", "1");
            p["spec"]["containers"][0]["resources"]["requests"] = bad;
            let err = mutate(&st, &req, None, &mut p, None).unwrap_err();
            let shown = format!("{err:?}");
            assert!(
                shown.contains(
                    "Pod in version \\\"v1\\\" cannot be handled as a Pod: quantities must match"
                ),
                "{shown}"
            );
        }
        let mut p = pod("p", "250m");
        let review = mutate(&st, &req, None, &mut p, None).unwrap();
        let parsed = review.pod().expect("a pod is parsed");
        assert_eq!(parsed.containers[0].requests["cpu"].to_string(), "250m");
        // cpu alone, no memory: Burstable.
        assert_eq!(review.qos_class(&p), QosClass::Burstable);
    }

    /// Charges left in memory count for the next admission and are written
    /// once, with all of them, by a flush.
    #[test]
    fn pending_charges_count_and_are_written_once() {
        let mut st = state();
        st.write(
            QUOTAS,
            "a",
            "q",
            Some(json!({"metadata": {"name": "q", "namespace": "a"},
                "spec": {"hard": {"pods": "2"}},
                "status": {"hard": {"pods": "2"}, "used": {"pods": "0"}}})),
        );
        let res = st.registry.lookup("", "v1", "pods").unwrap().clone();
        let req = Req {
            res: &res,
            ns: "a",
            version: "v1",
            dry_run: false,
            sub: "",
        };
        st.charges_deferrable = true;
        for name in ["p1", "p2"] {
            let obj = pod(name, "1");
            let admitted = validate(&st, &req, &review(&obj), None, &obj, name).unwrap();
            let _ = admitted.store(&mut st, &req, name, Some(obj));
        }
        let rv = st.rv;
        assert!(Charges::pending(&st));
        let q = st.get(QUOTAS, "a", "q").unwrap();
        assert_eq!(q.value()["status"]["used"]["pods"], "0", "not written yet");
        let p3 = pod("p3", "1");
        let err = validate(&st, &req, &review(&p3), None, &p3, "p3").unwrap_err();
        assert!(format!("{err:?}").contains("used: pods=2"), "{err:?}");
        Charges::flush(&mut st);
        assert_eq!(st.rv, rv + 1, "one write for both charges");
        let q = st.get(QUOTAS, "a", "q").unwrap();
        assert_eq!(q.value()["status"]["used"]["pods"], "2");
        assert!(!Charges::pending(&st));
    }
}
