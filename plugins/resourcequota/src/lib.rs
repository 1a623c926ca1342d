//! The ResourceQuota controller as a windlass plugin: keeps every quota's
//! `status.hard` equal to its `spec.hard` and its `status.used` equal to
//! what its namespace holds, after creates, deletes, pods ending and quota
//! edits, with a periodic resync (upstream's `resourcequota` controller).
//!
//! The API server charges quota when it admits an object; only this
//! controller gives usage back (a deleted object, a pod that ended). What
//! an object costs is computed by `windlass_selector::quota`, the same
//! evaluators the server's admission uses, so the two never disagree.
//!
//! Which kinds it can count: a plugin declares what it reads up front, so
//! it watches the kinds quotas commonly name ([`COUNTED`]: pods, services,
//! claims, config maps, secrets, replication controllers, quotas, and the
//! `apps` and `batch` workloads). A `count/<resource>.<group>` of any other
//! kind (a custom resource, say) keeps the value it had: the API server
//! computes it exactly when the quota is created or its spec is edited, and
//! charges every create in between, but deletes of such objects are only
//! given back at the quota's next spec edit (`kubectl annotate` is not
//! enough; change `spec`).

use std::time::Duration;

use serde_json::{Value, json};
use windlass_sdk::{
    Controller, Error, KindRef, Manifest, Object, ObjectRef, Outcome, Request, Watch, cache, log,
};
use windlass_selector::quota::{calculate_usage, scope_requirements};
use windlass_selector::resources::{self, ResourceList, list_to_json, parse_list};

/// The ResourceQuota controller.
pub struct ResourceQuotaController;

/// The kinds this controller reads and counts:
/// `(apiVersion, kind, group, resource)`.
pub const COUNTED: [(&str, &str, &str, &str); 13] = [
    ("v1", "Pod", "", "pods"),
    ("v1", "Service", "", "services"),
    ("v1", "PersistentVolumeClaim", "", "persistentvolumeclaims"),
    ("v1", "ConfigMap", "", "configmaps"),
    ("v1", "Secret", "", "secrets"),
    ("v1", "ReplicationController", "", "replicationcontrollers"),
    ("v1", "ResourceQuota", "", "resourcequotas"),
    ("apps/v1", "Deployment", "apps", "deployments"),
    ("apps/v1", "ReplicaSet", "apps", "replicasets"),
    ("apps/v1", "StatefulSet", "apps", "statefulsets"),
    ("apps/v1", "DaemonSet", "apps", "daemonsets"),
    ("batch/v1", "Job", "batch", "jobs"),
    ("batch/v1", "CronJob", "batch", "cronjobs"),
];

/// Upstream's default `--resource-quota-sync-period`.
const RESYNC: Duration = Duration::from_secs(300);

impl Controller for ResourceQuotaController {
    fn manifest() -> Manifest {
        let mut m = Manifest::new("resourcequota", Watch::kind("v1", "ResourceQuota"))
            .version(env!("CARGO_PKG_VERSION"))
            .resync(RESYNC)
            .max_concurrency(4);
        for (api_version, kind, ..) in COUNTED.iter().filter(|k| k.1 != "ResourceQuota") {
            m = m.reads(Watch::kind(api_version, kind));
        }
        m
    }

    fn reconcile(req: Request) -> Result<Outcome, Error> {
        reconcile(&req)
    }

    /// Anything counted changed: every quota of its namespace may be affected.
    fn map(changed: &Object) -> Vec<ObjectRef> {
        let Some(ns) = changed.namespace() else {
            return Vec::new();
        };
        match cache::list(&KindRef::new("v1", "ResourceQuota"), Some(ns), None) {
            Ok(quotas) => quotas.iter().map(Object::object_ref).collect(),
            Err(e) => {
                log::warn!("cannot list the quotas of namespace {ns}: {e}");
                Vec::new()
            }
        }
    }
}

windlass_sdk::export!(ResourceQuotaController);

fn reconcile(req: &Request) -> Result<Outcome, Error> {
    let Some(quota) = req.live_object() else {
        return Ok(Outcome::new());
    };
    let ns = quota.namespace().unwrap_or("default");
    let v = quota.value();
    let hard = parse_list(&v["spec"]["hard"])
        .map_err(|e| Error::permanent(format!("quota {ns}/{}: spec.hard: {e}", quota.name())))?;
    let status_hard = parse_list(&v["status"]["hard"]).unwrap_or_default();
    let previous = parse_list(&v["status"]["used"]).unwrap_or_default();

    let mut failed = None;
    let usage = calculate_usage(&hard, &scope_requirements(v), |group, resource, visit| {
        let Some(&(api_version, kind, ..)) =
            COUNTED.iter().find(|k| k.2 == group && k.3 == resource)
        else {
            return false;
        };
        match cache::list(&KindRef::new(api_version, kind), Some(ns), None) {
            Ok(objects) => {
                objects.iter().for_each(|o| visit(o.value()));
                true
            }
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    })
    .map_err(|e| Error::permanent(format!("quota {ns}/{}: {e}", quota.name())))?;
    if let Some(e) = failed {
        return Err(e);
    }
    if !usage.unknown.is_empty() {
        log::debug!(
            "not watched, kept as the API server last computed them: {}",
            usage.unknown.join(", ")
        );
    }
    let used = usage.status_used(&previous, &hard);
    let has_status = v["status"]["hard"].is_object() && v["status"]["used"].is_object();
    if has_status && resources::equal(&hard, &status_hard) && resources::equal(&used, &previous) {
        return Ok(Outcome::new());
    }
    Ok(Outcome::new().update_status(status_write(quota, &hard, &used)))
}

/// The quota's identity and resourceVersion (so a write from a stale view
/// conflicts and is recomputed) with the new status.
fn status_write(quota: &Object, hard: &ResourceList, used: &ResourceList) -> Object {
    let mut meta = json!({"name": quota.name()});
    if let Some(ns) = quota.namespace() {
        meta["namespace"] = Value::from(ns);
    }
    if let Some(rv) = quota.resource_version() {
        meta["resourceVersion"] = Value::from(rv);
    }
    Object::from_value(json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": meta,
        "status": {"hard": list_to_json(hard), "used": list_to_json(used)},
    }))
    .expect("a JSON object is an Object")
}

#[cfg(test)]
mod tests;
