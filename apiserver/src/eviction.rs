//! The `pods/eviction` subresource (`kubectl drain`): a delete of a pod that
//! honours its PodDisruptionBudget, as kube's eviction REST does.
//!
//! A pod no budget covers, or one that is not running (pending, finished,
//! already being deleted), is deleted with the eviction's `deleteOptions`.
//! A running pod covered by one budget is deleted only when the budget's
//! status (written by a disruption controller) allows a disruption; the
//! budget then records it (`disruptionsAllowed` one less, the pod in
//! `disruptedPods`) in the same step as the delete. Otherwise: 429 "Cannot
//! evict pod as it would violate the pod's disruption budget.", which
//! `kubectl drain` retries every 5 s. More than one budget: 500, as kube.

use hyper::Response;
use serde_json::{Value, json};
use windlass_selector::{LabelSelector, selector_text};

use crate::context::Ctx;
use crate::request::{self as rq, RespBody};
use crate::scope::Req;
use crate::state::{Current, State};
use crate::status::{ApiError, ApiResult};
use crate::write::{self, Written};

const PDBS: &str = "policy/poddisruptionbudgets";

/// `POST .../pods/{name}/eviction`.
pub(crate) async fn evict(
    ctx: &Ctx,
    name: &str,
    ct: &str,
    body: &[u8],
) -> ApiResult<Response<RespBody>> {
    let eviction = rq::decode_body_typed(ct, body, Some(("policy/v1", "Eviction")))?;
    if let Some(named) = eviction["metadata"]["name"].as_str()
        && !named.is_empty()
        && named != name
    {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let options = &eviction["deleteOptions"];
    let opts = write::DeleteOptions::of(&ctx.q, options)?;
    let dry_run = ctx.req().dry_run
        || options["dryRun"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x == "All"));
    let req = Req {
        dry_run,
        ..ctx.req()
    };
    let (budget, deleted) = {
        let mut st = ctx.shared.lock();
        let pod = st
            .get(&ctx.res.storage_key(), &ctx.ns, name)
            .ok_or_else(|| ApiError::not_found(ctx.target(name)))?;
        let pod = pod.value();
        let budget = if can_ignore_budget(&pod) {
            None
        } else {
            take_disruption(&mut st, &req, &pod)?
        };
        (budget, write::delete(&mut st, &req, name, &opts)?)
    };
    if let Some(w) = budget {
        ctx.finish(w, 200).await?;
    }
    ctx.finish(deleted, 200).await?;
    let mut status = crate::status::success(None);
    status["code"] = json!(201);
    Ok(rq::json(201, &status))
}

/// kube's `canIgnorePDB`: a pod that is not running (pending or finished)
/// or is already being deleted disrupts nothing.
fn can_ignore_budget(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed" | "Pending")
    ) || !pod["metadata"]["deletionTimestamp"].is_null()
}

/// Takes one disruption from the budget covering `pod`, if one does, and
/// returns that write; refuses the eviction when the budget allows none.
fn take_disruption(st: &mut State, req: &Req<'_>, pod: &Value) -> ApiResult<Option<Written>> {
    let ns = req.ns;
    let labels = &pod["metadata"]["labels"];
    let mut budgets: Vec<Value> = st
        .list(PDBS, Some(ns))
        .iter()
        .map(|o| o.value())
        .filter(|b| selects(&b["spec"]["selector"], labels))
        .collect();
    let budget = match budgets.len() {
        0 => return Ok(None),
        1 => budgets.remove(0),
        _ => {
            return Err(ApiError::internal(
                "Internal error occurred: This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ));
        }
    };
    let status = &budget["status"];
    let int = |k: &str| status[k].as_i64().unwrap_or(0);
    let pdb_name = budget["metadata"]["name"].as_str().unwrap_or_default();
    // An unready pod is not counted as healthy, so evicting it costs
    // nothing when the budget is met (or its policy says so).
    if !is_ready(pod) {
        let always = budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow";
        let desired = int("desiredHealthy");
        if always || (desired > 0 && int("currentHealthy") >= desired) {
            return Ok(None);
        }
    }
    if int("observedGeneration") < budget["metadata"]["generation"].as_i64().unwrap_or(0) {
        return Err(too_many(format!(
            "The disruption budget {pdb_name} is still being processed by the server."
        )));
    }
    let allowed = int("disruptionsAllowed");
    if allowed < 0 {
        return Err(ApiError::new(
            403,
            "Forbidden",
            "pdb disruptions allowed is negative",
        ));
    }
    if status["disruptedPods"]
        .as_object()
        .is_some_and(|d| d.len() > 2000)
    {
        return Err(ApiError::new(
            403,
            "Forbidden",
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(too_many(format!(
            "The disruption budget {pdb_name} needs {} healthy pods and has {} currently",
            int("desiredHealthy"),
            int("currentHealthy")
        )));
    }
    let Some(res) = st.registry.get_key(PDBS).cloned() else {
        return Ok(None);
    };
    let mut new = budget.clone();
    new["status"]["disruptionsAllowed"] = json!(allowed - 1);
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    if !new["status"]["disruptedPods"].is_object() {
        new["status"]["disruptedPods"] = json!({});
    }
    new["status"]["disruptedPods"][pod_name] = json!(crate::time::now_rfc3339());
    let old = st
        .get(PDBS, ns, pdb_name)
        .map(Current::of)
        .ok_or_else(|| ApiError::internal("the disruption budget went away"))?;
    let budget_req = Req {
        res: &res,
        version: "v1",
        ..*req
    };
    write::commit_update(st, &budget_req, &old, new).map(Some)
}

/// 429, with the budget's reason as its cause (what `kubectl drain` prints
/// before retrying).
fn too_many(cause: String) -> ApiError {
    ApiError::new(
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    )
    .with_details(json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]}))
}

/// Whether a policy/v1 budget's `selector` selects pods labelled `labels`:
/// a missing selector selects none, an empty one every pod.
fn selects(selector: &Value, labels: &Value) -> bool {
    selector
        .as_object()
        .and_then(selector_text)
        .and_then(|text| LabelSelector::parse(&text).ok())
        .is_some_and(|s| s.matches(|k| labels.get(k).and_then(Value::as_str)))
}

/// The pod's `Ready` condition is `True`.
fn is_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_select_as_policy_v1_says() {
        let labels = json!({"app": "web", "tier": "front"});
        assert!(!selects(&Value::Null, &labels), "no selector: no pods");
        assert!(selects(&json!({}), &labels), "empty selector: every pod");
        assert!(selects(&json!({"matchLabels": {"app": "web"}}), &labels));
        assert!(!selects(&json!({"matchLabels": {"app": "db"}}), &labels));
        let expr = |op: &str, values: Value| json!({"matchExpressions": [{"key": "tier", "operator": op, "values": values}]});
        assert!(selects(&expr("In", json!(["front", "back"])), &labels));
        assert!(!selects(&expr("NotIn", json!(["front"])), &labels));
        assert!(selects(&expr("Exists", json!([])), &labels));
        assert!(!selects(&expr("DoesNotExist", json!([])), &labels));
        assert!(!selects(&expr("Sometimes", json!([])), &labels));
    }

    #[test]
    fn pods_not_running_disrupt_nothing() {
        for phase in ["Pending", "Succeeded", "Failed"] {
            assert!(can_ignore_budget(&json!({"status": {"phase": phase}})));
        }
        assert!(!can_ignore_budget(&json!({"status": {"phase": "Running"}})));
        assert!(can_ignore_budget(&json!({
            "metadata": {"deletionTimestamp": "2026-11-25T00:00:00Z"},
            "status": {"phase": "Running"},
        })));
    }
}
