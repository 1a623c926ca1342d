//! What client libraries other than kubectl rely on, over raw HTTP: bodies
//! decoded with defaults from the URL, unknown fields in each
//! `fieldValidation` mode, the finalizer rule, field selectors, metadata-only
//! responses, aggregated discovery, the `kubernetes` Service, APIServices,
//! CertificateSigningRequests, service account tokens, HPA `autoscaling/v1`
//! and the OpenAPI documents.

mod common;

use bytes::Bytes;
use common::{Http, Reply};
use serde_json::{Value, json};
use windlass_apiserver::{Config, start};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const DEPLOYS: &str = "/apis/apps/v1/namespaces/default/deployments";
const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";

fn deployment(name: &str) -> Value {
    json!({"metadata": {"name": name},
        "spec": {"selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

fn assert_status(r: &Reply, code: u16, reason: &str) {
    assert_eq!(r.code, code, "{}", r.body);
    assert_eq!(r.body["kind"], "Status", "{}", r.body);
    assert_eq!(r.body["reason"], reason, "{}", r.body);
}

/// The Python client, Kopf and others send bodies built from models that
/// leave out `kind` and `apiVersion`: a cluster takes them from the URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_without_kind_or_api_version_get_them_from_the_url() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let r = http
        .json(
            "POST",
            CMS,
            JSON,
            &json!({"metadata": {"name": "bare"}, "data": {"a": "1"}}),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        (r.body["kind"].as_str(), r.body["apiVersion"].as_str()),
        (Some("ConfigMap"), Some("v1"))
    );
    let r = http
        .request(
            "POST",
            CMS,
            "application/yaml",
            "",
            Bytes::from_static(b"metadata: {name: bare-yaml}\n"),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["kind"], "ConfigMap");
    let r = http.json("POST", DEPLOYS, JSON, &deployment("web")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["apiVersion"], "apps/v1");
    // Only one of the two missing.
    let r = http
        .json(
            "POST",
            CMS,
            JSON,
            &json!({"kind": "ConfigMap", "metadata": {"name": "half"}}),
        )
        .await;
    assert_eq!((r.code, r.body["apiVersion"].as_str()), (201, Some("v1")));
    // Updates, of the object and of its status.
    let mut d = r.body.clone();
    d.as_object_mut().unwrap().remove("kind");
    d.as_object_mut().unwrap().remove("apiVersion");
    d["data"] = json!({"b": "2"});
    let r = http.json("PUT", &format!("{CMS}/half"), JSON, &d).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["data"]["b"], "2");
    let mut dep = http.get(&format!("{DEPLOYS}/web")).await.1;
    dep.as_object_mut().unwrap().remove("kind");
    dep["status"] = json!({"replicas": 3});
    let r = http
        .json("PUT", &format!("{DEPLOYS}/web/status"), JSON, &dep)
        .await;
    assert_eq!(
        (r.code, &r.body["status"]["replicas"]),
        (200, &json!(3)),
        "{}",
        r.body
    );
    // Another kind is still refused.
    let r = http
        .json(
            "POST",
            CMS,
            JSON,
            &json!({"kind": "Secret", "metadata": {"name": "s"}}),
        )
        .await;
    assert_status(&r, 400, "BadRequest");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_in_each_validation_mode() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let cm = |name: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "bogus": true},
            "data": {"a": "1"}, "extra": {"x": 1}})
    };
    // Ignore: dropped silently.
    let r = http
        .json(
            "POST",
            &format!("{CMS}?fieldValidation=Ignore"),
            JSON,
            &cm("ignore"),
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert!(r.warnings().is_empty());
    assert!(r.body.get("extra").is_none() && r.body["metadata"].get("bogus").is_none());
    // Warn (the default): dropped, and said so, one header a field.
    for path in [format!("{CMS}?fieldValidation=Warn"), CMS.to_owned()] {
        let name = if path.contains('?') {
            "warn"
        } else {
            "default"
        };
        let r = http.json("POST", &path, JSON, &cm(name)).await;
        assert_eq!(r.code, 201, "{}", r.body);
        assert_eq!(
            r.warnings(),
            [
                "unknown field \"extra\"",
                "unknown field \"metadata.bogus\""
            ]
        );
        let (_, stored) = http.get(&format!("{CMS}/{name}")).await;
        assert!(stored.get("extra").is_none(), "{stored}");
    }
    // Strict: refused as kube refuses it, and nothing is stored.
    let r = http
        .json(
            "POST",
            &format!("{CMS}?fieldValidation=Strict"),
            JSON,
            &cm("strict"),
        )
        .await;
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"extra\", unknown field \"metadata.bogus\""
    );
    assert_eq!(http.get(&format!("{CMS}/strict")).await.0, 404);
    // Deep inside a built-in kind, in a PUT.
    let mut d = deployment("deep");
    let r = http.json("POST", DEPLOYS, JSON, &d).await;
    assert_eq!(r.code, 201);
    d["metadata"]["resourceVersion"] = r.body["metadata"]["resourceVersion"].clone();
    d["spec"]["template"]["spec"]["containers"][0]["colour"] = json!("blue");
    let r = http
        .json(
            "PUT",
            &format!("{DEPLOYS}/deep?fieldValidation=Strict"),
            JSON,
            &d,
        )
        .await;
    assert_status(&r, 400, "BadRequest");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .ends_with("unknown field \"spec.template.spec.containers[0].colour\"")
    );
    let r = http.json("PUT", &format!("{DEPLOYS}/deep"), JSON, &d).await;
    assert_eq!(
        r.warnings(),
        ["unknown field \"spec.template.spec.containers[0].colour\""]
    );
    // Patches: a warning, or kube's 422 on the field `patch`.
    let patch = json!({"spec": {"paused": true, "nope": 1}});
    let r = http
        .json(
            "PATCH",
            &format!("{DEPLOYS}/deep?fieldValidation=Strict"),
            MERGE,
            &patch,
        )
        .await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(r.body["details"]["causes"][0]["field"], "patch");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .ends_with("strict decoding error: unknown field \"spec.nope\"")
    );
    let r = http
        .json("PATCH", &format!("{DEPLOYS}/deep"), MERGE, &patch)
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.warnings(), ["unknown field \"spec.nope\""]);
    assert_eq!(r.body["spec"]["paused"], true);
    assert!(r.body["spec"].get("nope").is_none());
    // Server-side apply refuses fields the schema does not declare.
    let applied =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "wat": 1});
    let r = http
        .json(
            "PATCH",
            &format!("{CMS}/applied?fieldManager=t"),
            "application/apply-patch+yaml",
            &applied,
        )
        .await;
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.body["message"],
        "failed to create typed patch object (default/applied; /v1, Kind=ConfigMap): .wat: field not declared in schema"
    );
    // A directive kube does not know.
    let r = http
        .json(
            "POST",
            &format!("{CMS}?fieldValidation=Loud"),
            JSON,
            &cm("loud"),
        )
        .await;
    assert_status(&r, 422, "Invalid");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_are_pruned_by_their_structural_schema() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}]}});
    let r = http
        .json(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            JSON,
            &crd,
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"size": 3, "colour": "red", "free": {"any": {"thing": true}}}, "top": 1});
    let r = http
        .json(
            "POST",
            &format!("{widgets}?fieldValidation=Strict"),
            JSON,
            &w,
        )
        .await;
    assert_status(&r, 400, "BadRequest");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("unknown field \"spec.colour\", unknown field \"top\"")
    );
    let r = http.json("POST", widgets, JSON, &w).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.warnings(),
        ["unknown field \"spec.colour\"", "unknown field \"top\""]
    );
    assert_eq!(
        r.body["spec"],
        json!({"size": 3, "free": {"any": {"thing": true}}})
    );
    server.shutdown().await;
}

/// kube's `ValidateNoNewFinalizers`: a 422 with a `Forbidden` cause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_finalizer_may_be_added_to_an_object_being_deleted() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let cm = json!({"metadata": {"name": "held", "finalizers": ["example.com/a"]}});
    assert_eq!(http.json("POST", CMS, JSON, &cm).await.code, 201);
    assert_eq!(http.delete(&format!("{CMS}/held")).await.0, 200);
    let patch = json!({"metadata": {"finalizers": ["example.com/a", "example.com/b"]}});
    let r = http
        .json("PATCH", &format!("{CMS}/held"), MERGE, &patch)
        .await;
    assert_status(&r, 422, "Invalid");
    let cause = &r.body["details"]["causes"][0];
    assert_eq!(cause["reason"], "FieldValueForbidden");
    assert_eq!(cause["field"], "metadata.finalizers");
    assert_eq!(
        r.body["message"],
        "ConfigMap \"held\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/b\"}"
    );
    // Removing one is what finishes the deletion.
    let r = http
        .json(
            "PATCH",
            &format!("{CMS}/held"),
            MERGE,
            &json!({"metadata": {"finalizers": null}}),
        )
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(http.get(&format!("{CMS}/held")).await.0, 404);
    server.shutdown().await;
}

/// kube's update validations: a 422 naming the field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_may_not_change_what_kube_keeps() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    assert_eq!(
        http.json("POST", DEPLOYS, JSON, &deployment("sel"))
            .await
            .code,
        201
    );
    let patch = json!({"spec": {"selector": {"matchLabels": {"app": "other"}},
        "template": {"metadata": {"labels": {"app": "other"}}}}});
    let r = http
        .json("PATCH", &format!("{DEPLOYS}/sel"), MERGE, &patch)
        .await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(r.body["details"]["causes"][0]["field"], "spec.selector");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .ends_with("field is immutable")
    );
    let cm = json!({"metadata": {"name": "frozen"}, "immutable": true, "data": {"a": "1"}});
    assert_eq!(http.json("POST", CMS, JSON, &cm).await.code, 201);
    let r = http
        .json(
            "PATCH",
            &format!("{CMS}/frozen"),
            MERGE,
            &json!({"data": {"a": "2"}}),
        )
        .await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        r.body["details"]["causes"][0]["reason"],
        "FieldValueForbidden"
    );
    let r = http
        .json(
            "PATCH",
            &format!("{CMS}/frozen"),
            MERGE,
            &json!({"metadata": {"labels": {"x": "y"}}}),
        )
        .await;
    assert_eq!(r.code, 200, "metadata may change: {}", r.body);
    // A StatefulSet's spec may change only in the fields kube lists.
    let sts = "/apis/apps/v1/namespaces/default/statefulsets";
    let mut db = deployment("db");
    db["spec"]["serviceName"] = json!("db");
    assert_eq!(http.json("POST", sts, JSON, &db).await.code, 201);
    let r = http
        .json(
            "PATCH",
            &format!("{sts}/db"),
            MERGE,
            &json!({"spec": {"serviceName": "other"}}),
        )
        .await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(r.body["details"]["causes"][0]["field"], "spec");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("updates to statefulset spec for fields other than 'replicas'"),
        "{}",
        r.body
    );
    let r = http
        .json(
            "PATCH",
            &format!("{sts}/db"),
            MERGE,
            &json!({"spec": {"replicas": 3}}),
        )
        .await;
    assert_eq!(r.code, 200, "replicas may change: {}", r.body);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_selectors_are_those_of_a_cluster() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    for (name, spec) in [
        ("open", json!({})),
        ("cordoned", json!({"unschedulable": true})),
    ] {
        let node = json!({"metadata": {"name": name}, "spec": spec});
        assert_eq!(
            http.json("POST", "/api/v1/nodes", JSON, &node).await.code,
            201
        );
    }
    let names = |v: &Value| -> Vec<String> {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, l) = http
        .get("/api/v1/nodes?fieldSelector=spec.unschedulable%3Dfalse")
        .await;
    assert_eq!(names(&l), ["open"]);
    let (_, l) = http
        .get("/api/v1/nodes?fieldSelector=spec.unschedulable%21%3Dfalse")
        .await;
    assert_eq!(names(&l), ["cordoned"]);
    let pod = |name: &str, spec: Value, status: Value| {
        let mut p = json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}]}});
        for (k, v) in spec.as_object().unwrap() {
            p["spec"][k] = v.clone();
        }
        (p, status)
    };
    let pods = "/api/v1/namespaces/default/pods";
    for (p, status) in [
        pod(
            "a",
            json!({"schedulerName": "custom", "serviceAccountName": "robot"}),
            json!({"podIPs": [{"ip": "10.0.0.7"}], "nominatedNodeName": "n1"}),
        ),
        pod("b", json!({}), json!({})),
    ] {
        let name = p["metadata"]["name"].as_str().unwrap().to_owned();
        let r = http.json("POST", pods, JSON, &p).await;
        assert_eq!(r.code, 201, "{}", r.body);
        let r = http
            .json(
                "PATCH",
                &format!("{pods}/{name}/status"),
                MERGE,
                &json!({"status": status}),
            )
            .await;
        assert_eq!(r.code, 200, "{}", r.body);
    }
    for selector in [
        "spec.schedulerName%3Dcustom",
        "spec.serviceAccountName%3Drobot",
        "status.podIP%3D10.0.0.7",
        "status.nominatedNodeName%3Dn1",
    ] {
        let (c, l) = http.get(&format!("{pods}?fieldSelector={selector}")).await;
        assert_eq!((c, names(&l)), (200, vec!["a".to_owned()]), "{selector}");
    }
    let (_, l) = http
        .get(&format!("{pods}?fieldSelector=spec.hostNetwork%3Dfalse"))
        .await;
    assert_eq!(names(&l), ["a", "b"]);
    // What kube does not support, with kube's words.
    let (c, s) = http
        .get(&format!("{pods}?fieldSelector=spec.priority%3D1"))
        .await;
    assert_eq!(
        (c, s["message"].as_str()),
        (400, Some("field label not supported: spec.priority"))
    );
    let (c, s) = http.get(&format!("{CMS}?fieldSelector=data.a%3D1")).await;
    assert_eq!(c, 400);
    assert_eq!(
        s["message"],
        "\"data.a\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_responses_for_get_list_watch_and_writes() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let meta = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let meta_list = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    let body = Bytes::from(serde_json::to_vec(&deployment("m")).unwrap());
    let r = http.request("POST", DEPLOYS, JSON, meta, body).await;
    assert_eq!(r.code, 201);
    assert_eq!(r.body["kind"], "PartialObjectMetadata");
    assert_eq!(r.body["apiVersion"], "meta.k8s.io/v1");
    assert!(r.body.get("spec").is_none());
    let r = http
        .request("GET", &format!("{DEPLOYS}/m"), JSON, meta, Bytes::new())
        .await;
    assert_eq!(
        (r.body["kind"].as_str(), r.body["metadata"]["name"].as_str()),
        (Some("PartialObjectMetadata"), Some("m"))
    );
    let r = http
        .request("GET", DEPLOYS, JSON, meta_list, Bytes::new())
        .await;
    assert_eq!(r.body["kind"], "PartialObjectMetadataList");
    assert_eq!(r.body["items"][0]["kind"], "PartialObjectMetadata");
    assert!(r.body["items"][0].get("spec").is_none());
    assert!(r.body["metadata"]["resourceVersion"].is_string());
    let mut w = http
        .watch_as(&format!("{DEPLOYS}?watch=true"), meta)
        .await
        .expect("the watch starts");
    let ev = w.next(std::time::Duration::from_secs(5)).await.unwrap();
    assert_eq!(ev["type"], "ADDED");
    assert_eq!(ev["object"]["kind"], "PartialObjectMetadata");
    assert!(ev["object"].get("spec").is_none());
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregated_discovery_and_the_groups_a_cluster_has() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
    let r = http
        .request("GET", "/apis", JSON, accept, Bytes::new())
        .await;
    assert_eq!(
        r.headers["content-type"],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(r.body["kind"], "APIGroupDiscoveryList");
    let groups: Vec<&str> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["metadata"]["name"].as_str().unwrap())
        .collect();
    for g in [
        "apps",
        "apiregistration.k8s.io",
        "certificates.k8s.io",
        "authorization.k8s.io",
        "authentication.k8s.io",
    ] {
        assert!(groups.contains(&g), "{g} in {groups:?}");
    }
    let r = http
        .request("GET", "/api", JSON, accept, Bytes::new())
        .await;
    let core = &r.body["items"][0]["versions"][0];
    assert_eq!(core["version"], "v1");
    let pods = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "pods")
        .unwrap();
    assert_eq!(pods["scope"], "Namespaced");
    // Without asking for it: the legacy documents.
    let (_, legacy) = http.get("/api").await;
    assert_eq!(legacy["kind"], "APIVersions");
    // APIServices for the built-in groups, as the aggregator registers them.
    let (c, s) = http
        .get("/apis/apiregistration.k8s.io/v1/apiservices/v1.apps")
        .await;
    assert_eq!(c, 200, "{s}");
    assert_eq!(
        (s["spec"]["group"].as_str(), s["spec"]["version"].as_str()),
        (Some("apps"), Some("v1"))
    );
    assert_eq!(s["status"]["conditions"][0]["type"], "Available");
    assert_eq!(
        http.get("/apis/apiregistration.k8s.io/v1/apiservices/v1.")
            .await
            .0,
        200
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubernetes_service_points_at_this_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new().data_dir(dir.path().into()))
        .await
        .unwrap();
    let port = server.addr().port();
    let http = Http::new(server.addr());
    let (c, svc) = http
        .get("/api/v1/namespaces/default/services/kubernetes")
        .await;
    assert_eq!(c, 200);
    assert_eq!(svc["spec"]["ports"][0]["port"], 443);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], port);
    let (_, ep) = http
        .get("/api/v1/namespaces/default/endpoints/kubernetes")
        .await;
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], port);
    assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "127.0.0.1");
    let (_, slice) = http
        .get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes")
        .await;
    assert_eq!(slice["ports"][0]["port"], port);
    let (_, sa) = http
        .get("/api/v1/namespaces/default/serviceaccounts/default")
        .await;
    assert_eq!(sa["metadata"]["name"], "default");
    server.shutdown().await;
    // On another port after a restart: brought up to date.
    let server = start(Config::new().data_dir(dir.path().into()))
        .await
        .unwrap();
    let http = Http::new(server.addr());
    let (_, ep) = http
        .get("/api/v1/namespaces/default/endpoints/kubernetes")
        .await;
    assert_eq!(ep["subsets"][0]["ports"][0]["port"], server.addr().port());
    // New namespaces get their default service account.
    let ns = json!({"metadata": {"name": "fresh"}});
    assert_eq!(
        http.json("POST", "/api/v1/namespaces", JSON, &ns)
            .await
            .code,
        201
    );
    assert_eq!(
        http.get("/api/v1/namespaces/fresh/serviceaccounts/default")
            .await
            .0,
        200
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_signing_requests_are_approved_through_approval() {
    use base64::Engine as _;
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let pem = "-----BEGIN CERTIFICATE REQUEST-----\nMIIBADCBqAIBADA=\n-----END CERTIFICATE REQUEST-----\n";
    let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "alice"},
        "spec": {"request": base64::engine::general_purpose::STANDARD.encode(pem),
            "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"],
            "username": "someone-else"}});
    let base = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    let r = http.json("POST", base, JSON, &csr).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.body["spec"]["username"], "windlass-admin",
        "the server records who asked"
    );
    let mut approval = r.body.clone();
    approval["status"]["conditions"] =
        json!([{"type": "Approved", "status": "True", "reason": "Test", "message": "ok"}]);
    approval["spec"]["signerName"] = json!("changed/by-approval");
    let r = http
        .json("PUT", &format!("{base}/alice/approval"), JSON, &approval)
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"]["conditions"][0]["type"], "Approved");
    assert_eq!(
        r.body["spec"]["signerName"],
        "kubernetes.io/kube-apiserver-client"
    );
    // Denied as well: refused.
    let mut both = r.body.clone();
    both["status"]["conditions"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "Denied", "status": "True"}));
    let r = http
        .json("PUT", &format!("{base}/alice/approval"), JSON, &both)
        .await;
    assert_status(&r, 422, "Invalid");
    // The status subresource cannot take the approval back.
    let r = http
        .json(
            "PATCH",
            &format!("{base}/alice/status"),
            MERGE,
            &json!({"status": {"conditions": []}}),
        )
        .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["status"]["conditions"][0]["type"], "Approved");
    let (_, l) = http
        .get(&format!(
            "{base}?fieldSelector=spec.signerName%3Dkubernetes.io%2Fkube-apiserver-client"
        ))
        .await;
    assert_eq!(l["items"].as_array().unwrap().len(), 1);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_tokens_are_signed_and_accepted() {
    let server = start(Config::new().token(Some("admin-token".into())))
        .await
        .unwrap();
    let admin = Http::new(server.addr()).with_token("admin-token");
    let path = "/api/v1/namespaces/default/serviceaccounts/default/token";
    let r = admin.json("POST", path, JSON, &json!({"spec": {}})).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["kind"], "TokenRequest");
    assert_eq!(r.body["spec"]["expirationSeconds"], 3600);
    let token = r.body["status"]["token"].as_str().unwrap().to_owned();
    assert!(r.body["status"]["expirationTimestamp"].is_string());
    // Accepted as a bearer token, speaking for the service account.
    let sa = Http::new(server.addr()).with_token(&token);
    assert_eq!(sa.get(CMS).await.0, 200);
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let r = sa
        .json(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            JSON,
            &review,
        )
        .await;
    assert_eq!(
        r.body["status"]["userInfo"]["username"],
        "system:serviceaccount:default:default"
    );
    let review = json!({"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1", "spec": {"token": token}});
    let r = admin
        .json(
            "POST",
            "/apis/authentication.k8s.io/v1/tokenreviews",
            JSON,
            &review,
        )
        .await;
    assert_eq!(r.body["status"]["authenticated"], true, "{}", r.body);
    // Tampered with, or meant for someone else: refused.
    let (signed, sig) = token.rsplit_once('.').unwrap();
    let first = if sig.starts_with('A') { 'B' } else { 'A' };
    let forged = format!("{signed}.{first}{}", &sig[1..]);
    assert_eq!(
        Http::new(server.addr())
            .with_token(&forged)
            .get(CMS)
            .await
            .0,
        401
    );
    let r = admin
        .json(
            "POST",
            path,
            JSON,
            &json!({"spec": {"audiences": ["vault"]}}),
        )
        .await;
    let vault = r.body["status"]["token"].as_str().unwrap();
    assert_eq!(
        Http::new(server.addr()).with_token(vault).get(CMS).await.0,
        401
    );
    // Too short a life, and a service account that does not exist.
    let r = admin
        .json(
            "POST",
            path,
            JSON,
            &json!({"spec": {"expirationSeconds": 60}}),
        )
        .await;
    assert_status(&r, 422, "Invalid");
    let r = admin
        .json(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts/nobody/token",
            JSON,
            &json!({}),
        )
        .await;
    assert_status(&r, 404, "NotFound");
    // Once the service account is gone, so is its token.
    assert_eq!(
        admin
            .delete("/api/v1/namespaces/default/serviceaccounts/default")
            .await
            .0,
        200
    );
    assert_eq!(sa.get(CMS).await.0, 401);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_reviews_allow_everything() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let ssar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "create", "resource": "pods", "namespace": "default"}}});
    let r = http
        .json(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            JSON,
            &ssar,
        )
        .await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["status"]["allowed"], true);
    let rules = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}});
    let r = http
        .json(
            "POST",
            "/apis/authorization.k8s.io/v1/namespaces/default/selfsubjectrulesreviews",
            JSON,
            &rules,
        )
        .await;
    assert_eq!(
        r.body["status"]["resourceRules"][0]["verbs"][0], "*",
        "{}",
        r.body
    );
    // Reviews are answered, not stored.
    let (c, _) = http
        .get("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
        .await;
    assert_eq!(c, 405);
    let empty = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": {}});
    let r = http
        .json(
            "POST",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            JSON,
            &empty,
        )
        .await;
    assert_status(&r, 422, "Invalid");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn horizontal_pod_autoscalers_are_served_as_v1_and_v2() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers";
    let v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
    let hpa = json!({"metadata": {"name": "web"}, "spec": {"minReplicas": 2, "maxReplicas": 5,
        "targetCPUUtilizationPercentage": 80,
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}});
    let r = http.json("POST", v1, JSON, &hpa).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["apiVersion"], "autoscaling/v1");
    assert_eq!(r.body["spec"]["targetCPUUtilizationPercentage"], 80);
    let (_, as_v2) = http.get(&format!("{v2}/web")).await;
    assert_eq!(as_v2["apiVersion"], "autoscaling/v2");
    assert_eq!(
        as_v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    // A metric v1 cannot show survives a v1 client's update.
    let mut more = as_v2.clone();
    more["spec"]["metrics"].as_array_mut().unwrap().push(json!({"type": "Pods",
        "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}));
    assert_eq!(
        http.json("PUT", &format!("{v2}/web"), JSON, &more)
            .await
            .code,
        200
    );
    let (_, mut old) = http.get(&format!("{v1}/web")).await;
    old["spec"]["maxReplicas"] = json!(7);
    let r = http.json("PUT", &format!("{v1}/web"), JSON, &old).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let (_, after) = http.get(&format!("{v2}/web")).await;
    assert_eq!(after["spec"]["maxReplicas"], 7);
    assert_eq!(
        after["spec"]["metrics"].as_array().unwrap().len(),
        2,
        "{after}"
    );
    // Patched in v1 terms.
    let r = http
        .json(
            "PATCH",
            &format!("{v1}/web"),
            MERGE,
            &json!({"spec": {"targetCPUUtilizationPercentage": 60}}),
        )
        .await;
    assert_eq!(
        r.body["spec"]["targetCPUUtilizationPercentage"], 60,
        "{}",
        r.body
    );
    let (_, after) = http.get(&format!("{v2}/web")).await;
    assert_eq!(
        after["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        60
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_documents_carry_the_schemas() {
    let server = start(Config::new()).await.unwrap();
    let http = Http::new(server.addr());
    let (c, v2) = http.get("/openapi/v2").await;
    assert_eq!(c, 200);
    let d = &v2["definitions"]["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        d["x-kubernetes-group-version-kind"][0]["kind"],
        "Deployment"
    );
    let proto = http
        .request(
            "GET",
            "/openapi/v2",
            JSON,
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
            Bytes::new(),
        )
        .await;
    assert_eq!(proto.code, 200);
    assert!(proto.raw.starts_with(&[0x0a, 0x03]), "field 1, \"2.0\"");
    let (_, index) = http.get("/openapi/v3").await;
    let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, doc) = http.get(&url).await;
    let strategy = &doc["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentStrategy"];
    assert!(
        strategy["properties"]["rollingUpdate"].is_object(),
        "{strategy}"
    );
    let spec = &doc["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"];
    assert_eq!(
        spec["properties"]["strategy"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"
    );
    // A CRD's schema, under kube's name for it, and a new hash.
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster",
            "names": {"plural": "gadgets", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "description": "What the gadget does.",
                        "properties": {"mode": {"type": "string"}}}}}}}]}});
    assert_eq!(
        http.json(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            JSON,
            &crd
        )
        .await
        .code,
        201
    );
    let (_, index) = http.get("/openapi/v3").await;
    let url = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, doc) = http.get(&url).await;
    let g = &doc["components"]["schemas"]["com.example.v1.Gadget"];
    assert_eq!(
        g["properties"]["spec"]["description"],
        "What the gadget does."
    );
    assert!(
        doc["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object()
    );
    let (_, v2) = http.get("/openapi/v2").await;
    assert!(v2["definitions"]["com.example.v1.Gadget"].is_object());
    // Its group has an APIService while the CRD exists, as on a cluster.
    let svc = "/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com";
    let (c, s) = http.get(svc).await;
    assert_eq!(
        (
            c,
            &s["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"]
        ),
        (200, &json!("true"))
    );
    assert_eq!(
        http.delete("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com")
            .await
            .0,
        200
    );
    assert_eq!(http.get(svc).await.0, 404);
    server.shutdown().await;
}

/// Dropping a server closes even the connections clients keep open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_server_stops_answering() {
    let server = start(Config::new()).await.unwrap();
    let client = server.client().await.unwrap();
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::default_namespaced(client);
    assert!(cms.list(&Default::default()).await.is_ok());
    drop(server);
    // The server's tasks are aborted, which takes effect at their next
    // poll: wait for it (bounded only so that a regression fails, not hangs).
    let mut tries = 0;
    while cms.list(&Default::default()).await.is_ok() {
        tries += 1;
        assert!(tries < 600, "the dropped server still answers");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
