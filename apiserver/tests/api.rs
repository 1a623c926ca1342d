//! HTTP-level API semantics: Status errors, validation, subresources,
//! discovery, tables, authentication.

mod common;

use bytes::Bytes;
use common::{Http, configmap, rv_of};
use serde_json::{Value, json};
use windlass_apiserver::{Config, start};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const PODS: &str = "/api/v1/namespaces/default/pods";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

fn assert_status(v: &Value, code: u16, reason: &str) {
    assert_eq!(v["kind"], "Status", "{v}");
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(v["status"], "Failure");
    assert_eq!(v["code"], code, "{v}");
    assert_eq!(v["reason"], reason, "{v}");
    assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_status_errors_and_changes_nothing() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let rv0 = server.current_revision();
    let (c, s) = http
        .send_raw(
            "POST",
            CMS,
            "application/json",
            Bytes::from_static(b"{not json"),
        )
        .await;
    assert_eq!(c, 400);
    assert_status(&s, 400, "BadRequest");
    let (c, s) = http
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
        )
        .await;
    assert_eq!(c, 400);
    assert_status(&s, 400, "BadRequest");
    let mut wrong_ns = configmap("x", 0);
    wrong_ns["metadata"]["namespace"] = json!("kube-system");
    let (c, s) = http.post(CMS, &wrong_ns).await;
    assert_status(&s, c, "BadRequest");
    let (c, s) = http.post(CMS, &configmap("Not_Valid", 0)).await;
    assert_eq!(c, 422);
    assert_status(&s, 422, "Invalid");
    assert_eq!(s["details"]["causes"][0]["field"], "metadata.name");
    let (c, s) = http
        .post(
            PODS,
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}),
        )
        .await;
    assert_eq!(c, 422);
    assert_eq!(s["details"]["causes"][0]["field"], "spec.containers");
    let big = Bytes::from(vec![b' '; 3 * 1024 * 1024 + 10]);
    let (c, s) = http.send_raw("POST", CMS, "application/json", big).await;
    assert_status(&s, c, "RequestEntityTooLarge");
    assert_eq!(c, 413);
    let (c, s) = http
        .send_raw("POST", CMS, "application/xml", Bytes::from_static(b"<x/>"))
        .await;
    assert_status(&s, c, "UnsupportedMediaType");
    let (c, s) = http.get("/api/v1/nopes").await;
    assert_status(&s, c, "NotFound");
    let (c, s) = http.get(&format!("{CMS}/missing")).await;
    assert_status(&s, c, "NotFound");
    assert_eq!(s["details"]["name"], "missing");
    let (c, s) = http
        .post("/api/v1/namespaces/nope/configmaps", &configmap("x", 0))
        .await;
    assert_status(&s, c, "NotFound");
    assert!(
        s["message"]
            .as_str()
            .unwrap()
            .contains("namespaces \"nope\" not found")
    );
    let (c, s) = http
        .send("PUT", CMS, "application/json", Some(&configmap("x", 0)))
        .await;
    assert_status(&s, c, "MethodNotAllowed");
    assert_eq!(
        server.current_revision(),
        rv0,
        "no failed request may write"
    );
    // YAML bodies are accepted.
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: b\n";
    let (c, o) = http
        .send_raw(
            "POST",
            CMS,
            "application/yaml",
            Bytes::from_static(yaml.as_bytes()),
        )
        .await;
    assert_eq!(c, 201, "{o}");
    assert_eq!(o["data"]["a"], "b");
    let (c, s) = http.post(CMS, &configmap("from-yaml", 0)).await;
    assert_eq!(c, 409);
    assert_status(&s, 409, "AlreadyExists");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_semantics() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    // generateName.
    let (c, o) = http
        .post(
            CMS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}),
        )
        .await;
    assert_eq!(c, 201);
    let name = o["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
    // dryRun writes nothing.
    let before = server.current_revision();
    let (c, _) = http
        .post(&format!("{CMS}?dryRun=All"), &configmap("dry", 0))
        .await;
    assert_eq!(c, 201);
    assert_eq!(server.current_revision(), before);
    assert_eq!(http.get(&format!("{CMS}/dry")).await.0, 404);
    // Generation: bumped by spec changes only; status ignored on the main endpoint.
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    let (c, o) = http.post(DEPLOYS, &d).await;
    assert_eq!(c, 201, "{o}");
    assert_eq!(o["metadata"]["generation"], 1);
    assert_eq!(o["spec"]["replicas"], 1);
    let (_, o) = http
        .merge_patch(
            &format!("{DEPLOYS}/d"),
            &json!({"metadata": {"labels": {"x": "y"}}, "status": {"replicas": 9}}),
        )
        .await;
    assert_eq!(o["metadata"]["generation"], 1);
    assert!(o["status"].get("replicas").is_none());
    let (_, o) = http
        .merge_patch(&format!("{DEPLOYS}/d"), &json!({"spec": {"paused": true}}))
        .await;
    assert_eq!(o["metadata"]["generation"], 2);
    // /status changes only status.
    let (c, o) = http
        .send(
            "PATCH",
            &format!("{DEPLOYS}/d/status"),
            "application/merge-patch+json",
            Some(&json!({"spec": {"paused": false}, "status": {"replicas": 3}})),
        )
        .await;
    assert_eq!(c, 200);
    assert_eq!(o["status"]["replicas"], 3);
    assert_eq!(o["spec"]["paused"], true);
    assert_eq!(o["metadata"]["generation"], 2);
    // Scale subresource.
    let (c, s) = http.get(&format!("{DEPLOYS}/d/scale")).await;
    assert_eq!(c, 200);
    assert_eq!(
        (s["kind"].as_str(), s["apiVersion"].as_str()),
        (Some("Scale"), Some("autoscaling/v1"))
    );
    assert_eq!(
        (
            s["spec"]["replicas"].as_i64(),
            s["status"]["replicas"].as_i64()
        ),
        (Some(1), Some(3))
    );
    assert_eq!(s["status"]["selector"], "a=b");
    let mut s2 = s.clone();
    s2["spec"]["replicas"] = json!(4);
    let (c, s3) = http
        .send(
            "PUT",
            &format!("{DEPLOYS}/d/scale"),
            "application/json",
            Some(&s2),
        )
        .await;
    assert_eq!((c, s3["spec"]["replicas"].as_i64()), (200, Some(4)));
    let (c, e) = http
        .send(
            "PUT",
            &format!("{DEPLOYS}/d/scale"),
            "application/json",
            Some(&s2),
        )
        .await;
    assert_eq!(c, 409, "stale scale: {e}");
    // Optimistic concurrency on update.
    let (_, cm) = http.post(CMS, &configmap("occ", 1)).await;
    let mut stale = cm.clone();
    http.merge_patch(&format!("{CMS}/occ"), &json!({"data": {"v": "2"}}))
        .await;
    stale["data"]["v"] = json!("3");
    let (c, e) = http
        .send(
            "PUT",
            &format!("{CMS}/occ"),
            "application/json",
            Some(&stale),
        )
        .await;
    assert_eq!(c, 409);
    assert_status(&e, 409, "Conflict");
    // Binding.
    http.post(PODS, &pod("p")).await;
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}});
    let (c, _) = http.post(&format!("{PODS}/p/binding"), &binding).await;
    assert_eq!(c, 201);
    let (_, p) = http.get(&format!("{PODS}/p")).await;
    assert_eq!(p["spec"]["nodeName"], "n1");
    assert_eq!(p["status"]["phase"], "Pending");
    let (c, _) = http.post(&format!("{PODS}/p/binding"), &binding).await;
    assert_eq!(c, 409);
    let (_, l) = http
        .get(&format!("{PODS}?fieldSelector=spec.nodeName%3Dn1"))
        .await;
    assert_eq!(l["items"].as_array().unwrap().len(), 1);
    // A pod a node runs is deleted gracefully: it stays, terminating, until
    // the kubelet's final delete (grace 0); its grace period only shrinks.
    let (c, d) = http.delete(&format!("{PODS}/p")).await;
    assert_eq!(c, 200, "{d}");
    assert_eq!(d["metadata"]["deletionGracePeriodSeconds"], 30, "{d}");
    let (c, p) = http.get(&format!("{PODS}/p")).await;
    assert_eq!(c, 200);
    assert!(p["metadata"]["deletionTimestamp"].is_string(), "{p}");
    let longer = json!({"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 60});
    let (_, p) = http
        .send(
            "DELETE",
            &format!("{PODS}/p"),
            "application/json",
            Some(&longer),
        )
        .await;
    assert_eq!(
        p["metadata"]["deletionGracePeriodSeconds"], 30,
        "never lengthened: {p}"
    );
    let (_, p) = http.delete(&format!("{PODS}/p?gracePeriodSeconds=5")).await;
    assert_eq!(p["metadata"]["deletionGracePeriodSeconds"], 5, "{p}");
    let (c, _) = http.delete(&format!("{PODS}/p?gracePeriodSeconds=x")).await;
    assert_eq!(c, 400);
    let (c, _) = http.delete(&format!("{PODS}/p?gracePeriodSeconds=0")).await;
    assert_eq!(c, 200);
    let (c, _) = http.get(&format!("{PODS}/p")).await;
    assert_eq!(c, 404, "gone after the final delete");
    // deletecollection with a selector.
    http.post(PODS, &pod("q")).await;
    let mut other = pod("r");
    other["metadata"]["labels"]["app"] = json!("keep");
    http.post(PODS, &other).await;
    let (c, _) = http.delete(&format!("{PODS}?labelSelector=app%3Dx")).await;
    assert_eq!(c, 200);
    let (_, l) = http.get(PODS).await;
    let left: Vec<&str> = l["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(left, vec!["r"]);
    // JSON patch and strategic patch over HTTP; CRDs would refuse strategic.
    // A strategic patch merges containers by name (a pod's image may change,
    // its containers may not be added to).
    let (c, o) = http
        .send(
            "PATCH",
            &format!("{PODS}/r"),
            "application/strategic-merge-patch+json",
            Some(&json!({"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}})),
        )
        .await;
    assert_eq!(c, 200, "{o}");
    assert_eq!(o["spec"]["containers"].as_array().unwrap().len(), 1);
    assert_eq!(o["spec"]["containers"][0]["image"], "busybox:2");
    let (c, o) = http
        .send(
            "PATCH",
            &format!("{PODS}/r"),
            "application/strategic-merge-patch+json",
            Some(&json!({"spec": {"containers": [{"name": "d", "image": "x"}]}})),
        )
        .await;
    assert_eq!(c, 422, "{o}");
    assert_eq!(
        o["message"],
        "Pod \"r\" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers"
    );
    let (c, o) = http
        .send(
            "PATCH",
            &format!("{PODS}/r"),
            "application/json-patch+json",
            Some(&json!([{"op": "replace", "path": "/spec/containers/0/image", "value": "busybox:3"}])),
        )
        .await;
    assert_eq!(
        (c, o["spec"]["containers"][0]["image"].as_str()),
        (200, Some("busybox:3"))
    );
    assert!(rv_of(&o) > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_tables_and_health() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let (_, v) = http.get("/version").await;
    assert_eq!(v["major"], "1");
    let (_, api) = http.get("/api").await;
    assert_eq!(api["versions"][0], "v1");
    let (_, apis) = http.get("/apis").await;
    let groups: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    for g in [
        "apps",
        "coordination.k8s.io",
        "apiextensions.k8s.io",
        "events.k8s.io",
    ] {
        assert!(groups.contains(&g), "{groups:?}");
    }
    let (_, core) = http.get("/api/v1").await;
    let pods = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods")
        .unwrap();
    assert_eq!(pods["shortNames"], json!(["po"]));
    assert_eq!(pods["categories"], json!(["all"]));
    assert_eq!(pods["namespaced"], true);
    let (c, _) = http.get("/apis/example.com/v1").await;
    assert_eq!(c, 404);
    // A CRD adds its group and kind at once.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster", "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let (c, o) = http
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        )
        .await;
    assert_eq!(c, 201, "{o}");
    let (c, l) = http.get("/apis/example.com/v1").await;
    assert_eq!(c, 200);
    assert_eq!(l["resources"][0]["namespaced"], false);
    let (c, o) = http
        .post(
            "/apis/example.com/v1/things",
            &json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}}),
        )
        .await;
    assert_eq!(c, 201, "{o}");
    for p in [
        "/healthz",
        "/readyz",
        "/livez",
        "/readyz?verbose",
        "/readyz/ping",
        "/livez/log",
    ] {
        let (c, _) = http.get(p).await;
        assert_eq!(c, 200, "{p}");
    }
    for p in ["/readyz/nope", "/livez/storage"] {
        assert_eq!(http.get(p).await.0, 404, "{p}");
    }
    // Tables.
    http.post(PODS, &pod("p")).await;
    let (c, t) = http.send("GET", PODS, "application/json", None).await;
    assert_eq!(c, 200);
    assert_eq!(t["kind"], "PodList");
    let req = hyper::Request::builder()
        .uri(format!("http://{}{PODS}", server.addr()))
        .header(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(http_body_util::Full::new(Bytes::new()))
        .unwrap();
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http();
    let resp = client.request(req).await.unwrap();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .unwrap()
        .to_bytes();
    let t: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(t["kind"], "Table");
    let cols: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(&cols[..5], &["Name", "Ready", "Status", "Restarts", "Age"]);
    assert_eq!(t["rows"][0]["cells"][1], "0/1");
    assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "p");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_required_when_set() {
    let server = start(Config::new().token(Some("s3cret".into())))
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let (c, s) = http.get(CMS).await;
    assert_eq!(c, 401);
    assert_status(&s, 401, "Unauthorized");
    assert!(server.kubeconfig().contains("token: s3cret"));
    let (c, s) = Http::new(server.addr()).with_token("wrong").get(CMS).await;
    assert_eq!((c, s["reason"].as_str()), (401, Some("Unauthorized")));
    let (c, _) = Http::new(server.addr()).with_token("s3cret").get(CMS).await;
    assert_eq!(c, 200);
    // Listening beyond loopback without a token generates one.
    let open = start(Config::new().listen("0.0.0.0:0".parse().unwrap()))
        .await
        .unwrap();
    assert!(open.bearer_token().is_some_and(|t| t.len() >= 32));
    // ... and serves HTTPS (tests/tls.rs); a token on loopback stays plain HTTP.
    assert!(open.url().starts_with("https://127.0.0.1:"));
    assert!(open.ca_certificate().is_some());
    assert!(server.url().starts_with("http://127.0.0.1:"));
    assert!(server.ca_certificate().is_none());
    assert!(!server.kubeconfig().contains("certificate-authority"));
}

/// Garbage collection runs only when a write can give it work, so each
/// case that can must still be collected: a dependent naming an absent
/// owner (or the wrong uid of a present one), a dependent whose owner is
/// deleted, and one whose owner is replaced later by an edit of its
/// references; updates of a well-owned dependent leave it alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_collection_follows_each_write_that_can_need_it() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let (c, owner) = http.post(CMS, &configmap("owner", 0)).await;
    assert_eq!(c, 201, "{owner}");
    let uid = owner["metadata"]["uid"].as_str().unwrap().to_owned();
    let owned = |name: &str, uid: &str| {
        let mut cm = configmap(name, 0);
        cm["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]);
        cm
    };
    for (name, owner_uid) in [("kept", uid.as_str()), ("dangling", "no-such-uid")] {
        let (c, v) = http.post(CMS, &owned(name, owner_uid)).await;
        assert_eq!(c, 201, "{v}");
    }
    let gone = |name: &'static str| {
        let http = &http;
        async move {
            for _ in 0..100 {
                if http.get(&format!("{CMS}/{name}")).await.0 == 404 {
                    return true;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            false
        }
    };
    assert!(
        gone("dangling").await,
        "a dependent of an absent owner is collected"
    );
    // Edits that leave the references alone do not disturb the dependent.
    for i in 0..3 {
        let (c, v) = http
            .merge_patch(
                &format!("{CMS}/kept"),
                &json!({"data": {"i": i.to_string()}}),
            )
            .await;
        assert_eq!(c, 200, "{v}");
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(http.get(&format!("{CMS}/kept")).await.0, 200);
    // Re-pointed at an owner that is not there: collected.
    let (c, v) = http.post(CMS, &owned("repointed", uid.as_str())).await;
    assert_eq!(c, 201, "{v}");
    let (c, v) = http
        .merge_patch(
            &format!("{CMS}/repointed"),
            &json!({"metadata": {"ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "stale-uid"}]}}),
        )
        .await;
    assert_eq!(c, 200, "{v}");
    assert!(
        gone("repointed").await,
        "re-pointed at a stale uid: collected"
    );
    // The owner goes: its dependent follows.
    let (c, v) = http.delete(&format!("{CMS}/owner")).await;
    assert_eq!(c, 200, "{v}");
    assert!(gone("kept").await, "the owner's deletion cascades");
}

/// What a pod is stored as has only the lists it was given and the
/// server's defaults: no `null` stands in for a list it never had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_pod_holds_no_nulls_for_lists_it_lacks() {
    let server = start(Config::new().in_memory()).await.unwrap();
    let http = Http::new(server.addr());
    let (c, created) = http.post(PODS, &pod("bare")).await;
    assert_eq!(c, 201, "{created}");
    let (c, read) = http.get(&format!("{PODS}/bare")).await;
    assert_eq!(c, 200);
    for pod in [&created, &read] {
        let spec = pod["spec"].as_object().expect("a spec");
        assert!(!spec.contains_key("initContainers"), "{pod}");
        assert!(spec.values().all(|v| !v.is_null()), "{pod}");
    }
}

/// Events live an hour after their last write by default, as with
/// kube-apiserver's `--event-ttl`; here a second, and a patch renews it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_expire_after_their_time_to_live() {
    let ttl = std::time::Duration::from_secs(2);
    let server = start(Config::new().event_ttl(ttl)).await.unwrap();
    let http = Http::new(server.addr());
    const EVENTS: &str = "/api/v1/namespaces/default/events";
    let event = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "ConfigMap", "name": "c", "namespace": "default"},
            "reason": "Synced", "message": "ok", "type": "Normal", "count": 1})
    };
    let started = std::time::Instant::now();
    for name in ["once", "kept"] {
        let (code, v) = http.post(EVENTS, &event(name)).await;
        assert_eq!(code, 201, "{v}");
    }
    let (code, _) = http.post(CMS, &configmap("c", 1)).await;
    assert_eq!(code, 201);
    // Renew `kept` (a count bump, as a recorder's) until `once` is gone.
    let mut count = 1;
    loop {
        let (code, _) = http.get(&format!("{EVENTS}/once")).await;
        if code == 404 {
            break;
        }
        assert!(started.elapsed() < 6 * ttl, "the event did not expire");
        count += 1;
        let patch = json!({"count": count});
        let (code, v) = http
            .send(
                "PATCH",
                &format!("{EVENTS}/kept"),
                "application/merge-patch+json",
                Some(&patch),
            )
            .await;
        assert_eq!(code, 200, "{v}");
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    // Timestamps have whole seconds: an event written late in a second
    // counts from its start.
    let second = std::time::Duration::from_secs(1);
    assert!(started.elapsed() + second >= ttl, "expired early");
    let (code, _) = http.get(&format!("{EVENTS}/kept")).await;
    assert_eq!(code, 200, "a renewed event stays");
    let (code, _) = http.get(&format!("{CMS}/c")).await;
    assert_eq!(code, 200, "only events expire");
}
