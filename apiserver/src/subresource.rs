//! The scale and binding subresources, and the answer to those a real API
//! server passes to a kubelet (logs, exec, attach, port-forward, proxy).

use hyper::{Method, Response};
use serde_json::{Value, json};
use windlass_selector::selector_text;

use crate::context::Ctx;
use crate::patch::{self, PatchKind};
use crate::request::{self as rq, RespBody};
use crate::resources::Resource;
use crate::state::Current;
use crate::status::{ApiError, ApiResult, Target};
use crate::write;

fn scale_of(res: &Resource, version: &str, v: &Value) -> Value {
    let paths = res.scale.as_ref().expect("scale subresource");
    let at = |p: &str| p.split('.').fold(v, |cur, k| &cur[k]);
    let selector = match paths.label_selector.as_deref().map(at) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(sel)) => selector_string(sel),
        _ => String::new(),
    };
    let m = &v["metadata"];
    let _ = version;
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": m["name"], "namespace": m["namespace"], "uid": m["uid"],
            "resourceVersion": m["resourceVersion"], "creationTimestamp": m["creationTimestamp"]},
        "spec": {"replicas": at(&paths.spec_replicas).as_i64().unwrap_or(0)},
        "status": {"replicas": at(&paths.status_replicas).as_i64().unwrap_or(0), "selector": selector},
    })
}

/// A selector as the Scale's `status.selector` gives it, in
/// `labels.Selector.String()`'s form (`app=web,tier in (a,b)`). `sel` is a
/// LabelSelector (`matchLabels`, `matchExpressions`) or, for a
/// ReplicationController, a plain map of labels.
fn selector_string(sel: &serde_json::Map<String, Value>) -> String {
    let structured = sel.contains_key("matchLabels") || sel.contains_key("matchExpressions");
    let text = if structured {
        selector_text(sel)
    } else {
        let labels = json!({"matchLabels": sel});
        labels.as_object().and_then(selector_text)
    };
    text.unwrap_or_default()
}

fn set_path(v: &mut Value, path: &str, x: Value) {
    let mut cur = v;
    for k in path.split('.') {
        if !cur[k].is_object()
            && !cur[k].is_null()
            && k != path.rsplit('.').next().unwrap_or_default()
        {
            cur[k] = json!({});
        }
        cur = &mut cur[k];
    }
    *cur = x;
}

pub(crate) async fn scale(
    ctx: &Ctx,
    m: &Method,
    name: &str,
    ct: &str,
    body: &[u8],
) -> ApiResult<Response<RespBody>> {
    // The body is decoded before taking the store's lock.
    let input = match *m {
        Method::GET => None,
        Method::PUT => Some((None, rq::decode_body(ct, body)?)),
        Method::PATCH => {
            let kind =
                PatchKind::from_content_type(ct).ok_or_else(|| ApiError::unsupported_media(ct))?;
            let p: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            Some((Some(kind), p))
        }
        _ => return Err(ApiError::method_not_supported(ctx.target(name), m.as_str())),
    };
    let w = {
        let mut st = ctx.shared.lock();
        let old = st
            .get(&ctx.res.storage_key(), &ctx.ns, name)
            .map(Current::of)
            .ok_or_else(|| ApiError::not_found(ctx.target(name)))?;
        let current = scale_of(&ctx.res, &ctx.version, &old.value);
        // A Scale is a few fields: patching it under the lock is cheap.
        let desired = match input {
            None => return Ok(rq::json(200, &current)),
            Some((None, body)) => body,
            Some((Some(kind), p)) => {
                let mut s = current.clone();
                match kind {
                    PatchKind::Json => patch::json_patched(&mut s, p)?,
                    PatchKind::Strategic => {
                        patch::strategic(&mut s, &p).map_err(ApiError::bad_request)?
                    }
                    _ => patch::merge(&mut s, &p),
                }
                s
            }
        };
        if let Some(rv) = desired["metadata"]["resourceVersion"]
            .as_str()
            .filter(|s| !s.is_empty())
            && rv != old.obj.rv.to_string()
        {
            return Err(ApiError::stale(ctx.target(name)));
        }
        let replicas = desired["spec"]["replicas"]
            .as_i64()
            .filter(|r| *r >= 0)
            .ok_or_else(|| {
                ApiError::invalid(
                    "Scale",
                    Target {
                        group: "autoscaling",
                        resource: "scale",
                        name,
                    },
                    &[(
                        "spec.replicas".into(),
                        format!(
                            "Invalid value: {}: must be greater than or equal to 0",
                            desired["spec"]["replicas"]
                        ),
                    )],
                )
            })?;
        let mut new = old.value.clone();
        set_path(
            &mut new,
            &ctx.res.scale.as_ref().expect("scale").spec_replicas,
            json!(replicas),
        );
        write::commit_update(&mut st, &ctx.req(), &old, new)?
    };
    let out = scale_of(&ctx.res, &ctx.version, &w.obj.value());
    let resp = ctx.finish(w, 200).await?;
    drop(resp);
    Ok(rq::json(200, &out))
}

/// What a binding does to its pod, as kube's `setPodHostAndAnnotations`:
/// the node, the binding's annotations, and `PodScheduled=True` (its
/// `lastTransitionTime` moving only when the status changes).
fn bind(pod: &mut Value, node: &str, annotations: &Value) {
    pod["spec"]["nodeName"] = json!(node);
    if let Some(add) = annotations.as_object().filter(|a| !a.is_empty()) {
        let meta = &mut pod["metadata"];
        if !meta["annotations"].is_object() {
            meta["annotations"] = json!({});
        }
        for (k, v) in add {
            meta["annotations"][k] = v.clone();
        }
    }
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    let conditions = &mut pod["status"]["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let list = conditions.as_array_mut().expect("made an array above");
    let now = crate::time::now_rfc3339();
    match list.iter_mut().find(|c| c["type"] == "PodScheduled") {
        Some(c) if c["status"] == "True" => {}
        Some(c) => {
            *c = json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
        }
        None => list.push(
            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}),
        ),
    }
}

pub(crate) async fn binding(
    ctx: &Ctx,
    name: &str,
    ct: &str,
    body: &[u8],
) -> ApiResult<Response<RespBody>> {
    let b = rq::decode_body(ct, body)?;
    let node = b["target"]["name"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            ApiError::invalid(
                "Binding",
                Target {
                    group: "",
                    resource: "bindings",
                    name,
                },
                &[("target.name".into(), "Required value".into())],
            )
        })?;
    let w = {
        let mut st = ctx.shared.lock();
        let old = st
            .get(&ctx.res.storage_key(), &ctx.ns, name)
            .map(Current::of)
            .ok_or_else(|| ApiError::not_found(ctx.target(name)))?;
        if let Some(cur) = old.value["spec"]["nodeName"]
            .as_str()
            .filter(|s| !s.is_empty())
        {
            return Err(ApiError::conflict(
                ctx.target(name),
                &format!("pod {name} is already assigned to node {cur:?}"),
            ));
        }
        if old.obj.attrs.deleting {
            return Err(ApiError::conflict(
                ctx.target(name),
                &format!("pod {name} is being deleted, cannot be assigned to a host"),
            ));
        }
        let mut new = old.value.clone();
        bind(&mut new, node, &b["metadata"]["annotations"]);
        write::commit_update(&mut st, &ctx.req(), &old, new)?
    };
    ctx.finish(w, 201).await?;
    Ok(rq::json(201, &crate::status::success(None)))
}

/// The pod subresources a real API server hands to the kubelet of the
/// pod's node, with the kinds and verbs its discovery lists for them.
pub(crate) const NODE_PROXIED: [(&str, &str, &[&str]); 5] = [
    ("attach", "PodAttachOptions", &["create", "get"]),
    ("exec", "PodExecOptions", &["create", "get"]),
    ("log", "Pod", &["get"]),
    ("portforward", "PodPortForwardOptions", &["create", "get"]),
    (
        "proxy",
        "PodProxyOptions",
        &["create", "delete", "get", "patch", "update"],
    ),
];

/// Whether `sub` is one of [`NODE_PROXIED`].
pub(crate) fn is_node_proxied(sub: &str) -> bool {
    NODE_PROXIED.iter().any(|(name, ..)| *name == sub)
}

/// The answer to one of [`NODE_PROXIED`] on pod `name`: this server
/// connects to no kubelet (windlass's simulated nodes run no containers),
/// so a pod that exists gets a 400 that says so and names its node, as
/// kube-apiserver names the kubelet it could not reach; one that does not
/// gets the pod's 404, not the 404 of a path this server does not know.
pub(crate) fn node_proxied(ctx: &Ctx, name: &str, sub: &str) -> ApiError {
    let Some(pod) = ctx
        .shared
        .lock()
        .get(&ctx.res.storage_key(), &ctx.ns, name)
        .map(Current::of)
    else {
        return ApiError::not_found(ctx.target(name));
    };
    let place = match pod.value["spec"]["nodeName"]
        .as_str()
        .filter(|n| !n.is_empty())
    {
        Some(node) => format!("runs on node {node:?}"),
        None => "is not scheduled to a node yet".to_owned(),
    };
    ApiError::bad_request(format!(
        "pod {name:?} {place}, and this API server (windlass) connects to no kubelet: \
         pods/{sub} is not served (a simulated node runs no containers, so there are no \
         logs, processes or ports to reach)"
    ))
}

#[cfg(test)]
mod bind_tests {
    use serde_json::json;

    #[test]
    fn a_binding_schedules_the_pod_as_kube_does() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {},
            "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}});
        super::bind(&mut pod, "n1", &json!({"a": "b"}));
        assert_eq!(pod["spec"]["nodeName"], "n1");
        assert_eq!(pod["metadata"]["annotations"]["a"], "b");
        let c = &pod["status"]["conditions"][0];
        assert_eq!(
            (c["type"].as_str(), c["status"].as_str()),
            (Some("PodScheduled"), Some("True"))
        );
        assert!(c.get("reason").is_none() && c["lastTransitionTime"].is_string());
        let mut bare = json!({"metadata": {"name": "p"}, "spec": {}});
        super::bind(&mut bare, "n2", &serde_json::Value::Null);
        assert_eq!(bare["status"]["conditions"][0]["status"], "True");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::selector_string;

    #[test]
    fn selectors_read_as_kube_prints_them() {
        let table = [
            (
                json!({"matchLabels": {"tier": "db", "app": "web"}}),
                "app=web,tier=db",
            ),
            (
                json!({"matchLabels": {"app": "web"}, "matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["b", "a"]},
                    {"key": "canary", "operator": "DoesNotExist"},
                    {"key": "env", "operator": "NotIn", "values": ["dev"]},
                    {"key": "gpu", "operator": "Exists"}]}),
                "app=web,!canary,env notin (dev),gpu,zone in (a,b)",
            ),
            // A ReplicationController's selector is a plain map.
            (json!({"app": "web", "tier": "db"}), "app=web,tier=db"),
        ];
        for (sel, want) in table {
            assert_eq!(selector_string(sel.as_object().unwrap()), want, "{sel}");
        }
    }
}
