//! End-to-end tests driving the real `kubectl` against an in-process server.

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::kubectl::Kube;
use serde_json::json;

const DEPLOYMENT: &str = "
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1
        env: [{name: A, value: '1'}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn create_get_list_with_selectors() {
    let k = Kube::new().await;
    let ns = k.ok(&["get", "namespaces"]);
    for n in ["default", "kube-system", "kube-public"] {
        assert!(ns.contains(n), "{ns}");
    }
    assert!(
        ns.starts_with("NAME") && ns.contains("STATUS") && ns.contains("Active"),
        "{ns}"
    );
    for (name, tier) in [("a", "front"), ("b", "back"), ("c", "front")] {
        let cm = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, labels: {{tier: {tier}}}}}\ndata: {{k: v, k2: v2}}\n"
        );
        assert!(
            k.ok_in(&["create", "-f", "-"], Some(&cm))
                .contains(&format!("configmap/{name} created"))
        );
    }
    let err = k.fail(
        &["create", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"),
    );
    assert!(
        err.contains("AlreadyExists") || err.contains("already exists"),
        "{err}"
    );
    let a = k.json(&["get", "cm", "a"]);
    assert_eq!(a["data"]["k"], "v");
    assert_eq!(a["metadata"]["namespace"], "default");
    assert!(a["metadata"]["uid"].as_str().unwrap().len() == 36);
    let yaml = k.ok(&["get", "cm", "b", "-o", "yaml"]);
    assert!(yaml.contains("tier: back"), "{yaml}");
    let table = k.ok(&["get", "cm"]);
    assert!(
        table.contains("DATA")
            && table
                .lines()
                .any(|l| l.starts_with("a ") && l.contains(" 2 ")),
        "{table}"
    );
    let front = k.json(&["get", "cm", "-l", "tier=front"]);
    let names: Vec<&str> = front["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["a", "c"]);
    let by_field = k.json(&["get", "cm", "--field-selector", "metadata.name=b"]);
    assert_eq!(by_field["items"].as_array().unwrap().len(), 1);
    let err = k.fail(&["get", "cm", "--field-selector", "spec.nope=1"], None);
    assert!(
        err.contains("not a known field selector") || err.contains("BadRequest"),
        "{err}"
    );
    let err = k.fail(&["get", "cm", "zzz"], None);
    assert!(
        err.contains("NotFound") && err.contains("\"zzz\" not found"),
        "{err}"
    );
    let err = k.fail(
        &["create", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: missing}\n"),
    );
    assert!(err.contains("namespaces \"missing\" not found"), "{err}");
    let err = k.fail(
        &["create", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n"),
    );
    assert!(
        err.contains("is invalid") && err.contains("RFC 1123"),
        "{err}"
    );
    // Paging through kubectl's chunked list.
    let all = k.json(&["get", "cm", "--chunk-size=1"]);
    assert_eq!(all["items"].as_array().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn apply_client_and_server_side() {
    let k = Kube::new().await;
    assert!(
        k.ok_in(&["apply", "-f", "-"], Some(DEPLOYMENT))
            .contains("deployment.apps/web created")
    );
    let rv1 = k.json(&["get", "deploy", "web"])["metadata"]["resourceVersion"].clone();
    assert!(
        k.ok_in(&["apply", "-f", "-"], Some(DEPLOYMENT))
            .contains("unchanged")
    );
    let d = k.json(&["get", "deploy", "web"]);
    assert_eq!(
        d["metadata"]["resourceVersion"], rv1,
        "a no-op apply must not write"
    );
    assert_eq!(d["metadata"]["generation"], 1);
    let changed = DEPLOYMENT.replace("nginx:1", "nginx:2");
    assert!(
        k.ok_in(&["apply", "-f", "-"], Some(&changed))
            .contains("configured")
    );
    let d = k.json(&["get", "deploy", "web"]);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:2"
    );
    assert_eq!(d["metadata"]["generation"], 2);
    let table = k.ok(&["get", "deploy"]);
    assert!(
        table.contains("READY") && table.contains("UP-TO-DATE") && table.contains("0/2"),
        "{table}"
    );

    // Server-side apply: a new object, then a conflict with another manager, then force.
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {a: '1'}\n";
    assert!(
        k.ok_in(&["apply", "--server-side", "-f", "-"], Some(cm))
            .contains("serverside-applied")
    );
    let other = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa}\ndata: {a: '2'}\n";
    let err = k.fail(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        Some(other),
    );
    assert!(
        err.contains("conflict") && err.contains(".data.a") && err.contains("kubectl"),
        "{err}"
    );
    k.ok_in(
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            "-",
        ],
        Some(other),
    );
    let got = k.json(&["get", "cm", "ssa", "--show-managed-fields"]);
    assert_eq!(got["data"]["a"], "2");
    let managers: Vec<&str> = got["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["manager"].as_str().unwrap())
        .collect();
    assert!(managers.contains(&"other"), "{managers:?}");
    // Re-applying the same configuration writes nothing.
    let rv = k.json(&["get", "cm", "ssa"])["metadata"]["resourceVersion"].clone();
    k.ok_in(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        Some(other),
    );
    assert_eq!(
        k.json(&["get", "cm", "ssa"])["metadata"]["resourceVersion"],
        rv
    );
    // Fields an applier stops sending are removed.
    let cm2 = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa2}\ndata: {a: '1', b: '2'}\n";
    k.ok_in(&["apply", "--server-side", "-f", "-"], Some(cm2));
    k.ok_in(
        &["apply", "--server-side", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa2}\ndata: {a: '1'}\n"),
    );
    let got = k.json(&["get", "cm", "ssa2"]);
    assert!(got["data"].get("b").is_none(), "{got}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn patch_scale_replace() {
    let k = Kube::new().await;
    k.ok_in(&["apply", "-f", "-"], Some(DEPLOYMENT));
    k.ok(&[
        "patch",
        "deploy",
        "web",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"x":"y"}}}"#,
    ]);
    k.ok(&[
        "patch",
        "deploy",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:3"}]"#,
    ]);
    k.ok(&["patch", "deploy", "web", "--type=strategic", "-p", r#"{"spec":{"template":{"spec":{"containers":[{"name":"web","env":[{"name":"B","value":"2"}]}]}}}}"#]);
    let d = k.json(&["get", "deploy", "web"]);
    assert_eq!(d["metadata"]["labels"]["x"], "y");
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "nginx:3");
    assert_eq!(
        c["env"].as_array().unwrap().len(),
        2,
        "strategic merge keeps A and adds B: {c}"
    );
    let err = k.fail(
        &[
            "patch",
            "deploy",
            "web",
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/spec/replicas","value":99}]"#,
        ],
        None,
    );
    assert!(!err.is_empty());

    assert!(
        k.ok(&["scale", "deploy", "web", "--replicas=5"])
            .contains("scaled")
    );
    assert_eq!(k.json(&["get", "deploy", "web"])["spec"]["replicas"], 5);

    // Replace with a stale resourceVersion is a conflict.
    let mut stale = d.clone();
    stale["spec"]["replicas"] = 1.into();
    let err = k.fail(&["replace", "-f", "-"], Some(&stale.to_string()));
    assert!(err.contains("the object has been modified"), "{err}");
    // The status subresource ignores everything else on the main endpoint.
    let mut with_status = k.json(&["get", "deploy", "web"]);
    with_status["status"] = serde_json::json!({"replicas": 42});
    k.ok_in(&["replace", "-f", "-"], Some(&with_status.to_string()));
    assert!(
        k.json(&["get", "deploy", "web"])["status"]
            .get("replicas")
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_watch_sees_live_events() {
    let k = Kube::new().await;
    let mut child = k
        .cmd(&["get", "configmaps", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(700));
    k.ok_in(
        &["create", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: w1}\ndata: {v: one}\n"),
    );
    k.ok(&[
        "patch",
        "cm",
        "w1",
        "--type=merge",
        "-p",
        r#"{"data":{"w":"two"}}"#,
    ]);
    k.ok(&["delete", "cm", "w1"]);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.len() < 3 && Instant::now() < deadline {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(200))
            && l.contains("w1")
        {
            seen.push(l);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(seen.len(), 3, "{seen:?}");
    // Table rows: EVENT NAME DATA AGE.
    assert!(
        seen[0].starts_with("ADDED") && seen[0].contains(" 1 "),
        "{seen:?}"
    );
    assert!(
        seen[1].starts_with("MODIFIED") && seen[1].contains(" 2 "),
        "{seen:?}"
    );
    assert!(seen[2].contains("DELETED"), "{seen:?}");
}

const CRD: &str = "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    subresources:
      status: {}
      scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.size}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crd_then_custom_resource() {
    let k = Kube::new().await;
    k.apply_crd(CRD);
    let w = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 2}\n";
    k.ok_in(&["apply", "-f", "-"], Some(w));
    k.ok_in(&["apply", "-f", "-"], Some(w));
    let got = k.json(&["get", "wd", "w"]);
    assert_eq!(got["spec"]["size"], 2);
    let table = k.ok(&["get", "widgets"]);
    assert!(table.contains("SIZE") && table.contains('2'), "{table}");
    k.ok(&["scale", "widget", "w", "--replicas=4"]);
    assert_eq!(k.json(&["get", "widget", "w"])["spec"]["size"], 4);
    k.ok(&[
        "patch",
        "widget",
        "w",
        "--type=merge",
        "-p",
        r#"{"spec":{"color":"red"}}"#,
    ]);
    let err = k.fail(
        &[
            "patch",
            "widget",
            "w",
            "--type=strategic",
            "-p",
            r#"{"spec":{"color":"blue"}}"#,
        ],
        None,
    );
    assert!(
        err.contains("415")
            || err.contains("UnsupportedMediaType")
            || err.contains("unknown format")
            || err.contains("strategic"),
        "{err}"
    );
    k.ok(&["delete", "crd", "widgets.example.com"]);
    let err = k.fail(&["get", "widgets"], None);
    assert!(
        err.contains("the server doesn't have a resource type")
            || err.contains("NotFound")
            || err.contains("not find"),
        "{err}"
    );
}

const ROUTE_CRD: &str = "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: routes.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: routes, singular: route, kind: Route}
  versions:
  - name: v1
    served: true
    storage: true
    selectableFields: [{jsonPath: .spec.host}, {jsonPath: .spec.port}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              host: {type: string}
              port: {type: integer}
              weight: {type: number}
";

/// A CRD's `selectableFields` (GA in Kubernetes 1.32) through the real
/// kubectl: lists and watches select on them, other fields are refused in
/// kube's words, and a CRD naming a field it cannot select is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn custom_resources_are_selected_by_their_selectable_fields() {
    let k = Kube::new().await;
    k.apply_crd(ROUTE_CRD);
    let route = |name: &str, spec: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: Route\nmetadata: {{name: {name}}}\nspec: {spec}\n"
        )
    };
    let http = common::Http::new(k.server.addr());
    let mut watch = http
        .watch("/apis/example.com/v1/namespaces/default/routes?watch=1&fieldSelector=spec.host%3Da.com")
        .await
        .expect("a watch on a selectable field");
    k.ok_in(
        &["create", "-f", "-"],
        Some(&route("r1", "{host: a.com, port: 443}")),
    );
    k.ok_in(
        &["create", "-f", "-"],
        Some(&route("r2", "{host: b.com, port: 80}")),
    );
    k.ok_in(&["create", "-f", "-"], Some(&route("r3", "{port: 443}")));
    let names = |selector: &str| {
        k.ok(&["get", "routes", "--field-selector", selector, "-o", "name"])
            .trim()
            .to_owned()
    };
    assert_eq!(names("spec.host=a.com"), "route.example.com/r1");
    assert_eq!(
        names("spec.port=443"),
        "route.example.com/r1\nroute.example.com/r3"
    );
    // A missing field selects as "".
    assert_eq!(names("spec.host="), "route.example.com/r3");
    assert_eq!(
        names("spec.host!=a.com,metadata.name!=r3"),
        "route.example.com/r2"
    );
    let err = k.fail(
        &["get", "routes", "--field-selector", "spec.weight=1"],
        None,
    );
    assert!(
        err.contains("\"spec.weight\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""),
        "{err}"
    );
    // The watch saw r1 only; moving r1 off the host is its DELETED.
    let ev = watch.next(Duration::from_secs(5)).await.expect("r1 added");
    assert_eq!(
        (
            ev["type"].as_str(),
            ev["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("r1"))
    );
    k.ok(&[
        "patch",
        "route",
        "r1",
        "--type=merge",
        "-p",
        r#"{"spec":{"host":"c.com"}}"#,
    ]);
    let ev = watch.next(Duration::from_secs(5)).await.expect("r1 left");
    assert_eq!(
        (
            ev["type"].as_str(),
            ev["object"]["metadata"]["name"].as_str()
        ),
        (Some("DELETED"), Some("r1"))
    );
    // A CRD whose selectable field is not a string, boolean or integer.
    let bad = ROUTE_CRD
        .replace("routes.example.com", "paths.example.com")
        .replace(
            "{plural: routes, singular: route, kind: Route}",
            "{plural: paths, singular: path, kind: Path}",
        )
        .replace("{jsonPath: .spec.port}", "{jsonPath: .spec.weight}");
    let err = k.fail(&["apply", "-f", "-"], Some(&bad));
    assert!(
        err.contains("spec.selectableFields[1].jsonPath: Invalid value: \".spec.weight\": must point to a field of type string, boolean or integer."),
        "{err}"
    );
}

/// Server-side apply of a custom resource merges its lists as the CRD's
/// schema says: a `map` list by its keys (each manager owning its items),
/// a `set` as a union, any other list whole; conflicts name the item as
/// kube does.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn server_side_apply_merges_custom_lists_by_their_list_type() {
    let k = Kube::new().await;
    k.apply_crd(
        "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gateways.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gateways, singular: gateway, kind: Gateway}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              listeners:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [port, protocol]
                items:
                  type: object
                  required: [port, protocol]
                  properties:
                    port: {type: integer}
                    protocol: {type: string}
                    name: {type: string}
              hosts:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              notes:
                type: array
                items: {type: string}
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
",
    );
    let apply =
        |manager: &str, spec: &str| {
            k.run(
            &["apply", "--server-side", "--field-manager", manager, "-f", "-"],
            Some(&format!(
                "apiVersion: example.com/v1\nkind: Gateway\nmetadata: {{name: gw}}\nspec: {spec}\n"
            )),
        )
        };
    let spec = || k.json(&["get", "gateway", "gw"])["spec"].clone();
    assert!(
        apply(
            "a",
            "{listeners: [{port: 80, protocol: TCP, name: web}], hosts: [a.com], notes: [one], selector: {app: a}}"
        )
        .status
        .success()
    );
    assert!(
        apply(
            "b",
            "{listeners: [{port: 443, protocol: TCP, name: tls}], hosts: [b.com]}"
        )
        .status
        .success()
    );
    assert_eq!(
        spec(),
        json!({
            "listeners": [
                {"port": 80, "protocol": "TCP", "name": "web"},
                {"port": 443, "protocol": "TCP", "name": "tls"},
            ],
            "hosts": ["a.com", "b.com"],
            "notes": ["one"],
            "selector": {"app": "a"},
        })
    );
    // An atomic map is one field: another key in it is a conflict.
    let out = apply("b", "{selector: {tier: web}}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"conflict with "a" using example.com/v1: .spec.selector"#),
        "{err}"
    );
    let managed =
        k.json(&["get", "gateway", "gw", "--show-managed-fields"])["metadata"]["managedFields"]
            .clone();
    let b = managed
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["manager"] == "b")
        .unwrap();
    assert_eq!(
        b["fieldsV1"],
        json!({"f:spec": {
            "f:hosts": {r#"v:"b.com""#: {}},
            "f:listeners": {r#"k:{"port":443,"protocol":"TCP"}"#: {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}},
        }})
    );
    // Another manager's value for an item a owns is a conflict, named by its keys.
    let out = apply("b", "{listeners: [{port: 80, protocol: TCP, name: other}]}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"conflict with "a" using example.com/v1: .spec.listeners[port=80,protocol="TCP"].name"#),
        "{err}"
    );
    // A manager that stops applying its item removes it; an atomic list
    // applied by another manager is taken whole (with force).
    assert!(
        apply("a", "{hosts: [a.com], selector: {app: a}}")
            .status
            .success()
    );
    let out = k.run(
        &["apply", "--server-side", "--force-conflicts", "--field-manager", "b", "-f", "-"],
        Some("apiVersion: example.com/v1\nkind: Gateway\nmetadata: {name: gw}\nspec: {listeners: [{port: 443, protocol: TCP, name: tls}], hosts: [b.com], notes: [two]}\n"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        spec(),
        json!({
            "listeners": [{"port": 443, "protocol": "TCP", "name": "tls"}],
            "hosts": ["a.com", "b.com"],
            "notes": ["two"],
            "selector": {"app": "a"},
        })
    );
}

/// A CRD's printer columns as kubectl shows them from a cluster: a column
/// of priority 1 only with `-o wide`, a JSONPath filter picking one
/// condition's status, a number in an `integer` column.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn custom_printer_columns_as_a_cluster_prints_them() {
    let k = Kube::new().await;
    k.apply_crd(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: certs.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: certs, singular: cert, kind: Cert}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    additionalPrinterColumns:
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Secret, type: string, jsonPath: .spec.secretName, priority: 1}
"#,
    );
    k.ok_in(
        &["create", "-f", "-"],
        Some(
            "apiVersion: example.com/v1\nkind: Cert\nmetadata: {name: c}\nspec: {replicas: 2, secretName: tls}\nstatus: {conditions: [{type: Issuing, status: 'False'}, {type: Ready, status: 'True'}]}\n",
        ),
    );
    let rows = |args: &[&str]| -> Vec<Vec<String>> {
        k.ok(args)
            .lines()
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .collect()
    };
    assert_eq!(
        rows(&["get", "certs"]),
        [["NAME", "READY", "REPLICAS"], ["c", "True", "2"]]
    );
    assert_eq!(
        rows(&["get", "certs", "-o", "wide"]),
        [
            ["NAME", "READY", "REPLICAS", "SECRET"],
            ["c", "True", "2", "tls"]
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn finalizers_hold_deletion() {
    let k = Kube::new().await;
    k.ok_in(&["create", "-f", "-"], Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: f, finalizers: [example.com/hold]}\n"));
    k.ok(&["delete", "cm", "f", "--wait=false"]);
    let got = k.json(&["get", "cm", "f"]);
    assert!(got["metadata"]["deletionTimestamp"].is_string(), "{got}");
    k.ok(&[
        "patch",
        "cm",
        "f",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    k.eventually("the configmap to go", || !k.exists(&["get", "cm", "f"]));
}

fn owned_replicaset(owner_uid: &str, name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: {name}\n  ownerReferences:\n  - {{apiVersion: apps/v1, kind: Deployment, name: web, uid: {owner_uid}, controller: true, blockOwnerDeletion: true}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    spec: {{containers: [{{name: web, image: nginx}}]}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cascading_deletes() {
    let k = Kube::new().await;
    for (cascade, rs_survives) in [
        ("background", false),
        ("foreground", false),
        ("orphan", true),
    ] {
        k.ok_in(&["apply", "-f", "-"], Some(DEPLOYMENT));
        let uid = k.json(&["get", "deploy", "web"])["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned();
        let rs = format!("rs-{cascade}");
        k.ok_in(&["create", "-f", "-"], Some(&owned_replicaset(&uid, &rs)));
        k.ok(&[
            "delete",
            "deploy",
            "web",
            &format!("--cascade={cascade}"),
            "--timeout=20s",
        ]);
        assert!(
            !k.exists(&["get", "deploy", "web"]),
            "{cascade}: owner gone"
        );
        if rs_survives {
            let got = k.json(&["get", "rs", &rs]);
            assert!(
                got["metadata"].get("ownerReferences").is_none(),
                "{cascade}: {got}"
            );
        } else {
            k.eventually(&format!("{cascade}: dependent deleted"), || {
                !k.exists(&["get", "rs", &rs])
            });
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn namespace_deletion_removes_contents() {
    let k = Kube::new().await;
    k.ok_in(
        &["create", "-f", "-"],
        Some("apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n"),
    );
    k.ok_in(
        &["create", "-n", "team", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"),
    );
    k.ok_in(&["create", "-n", "team", "-f", "-"], Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: held, finalizers: [example.com/x]}\n"));
    k.ok(&["delete", "ns", "team", "--wait=false"]);
    k.eventually("plain contents deleted", || {
        !k.exists(&["get", "cm", "c", "-n", "team"])
    });
    assert_eq!(
        k.json(&["get", "ns", "team"])["status"]["phase"],
        "Terminating"
    );
    let err = k.fail(
        &["create", "-n", "team", "-f", "-"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: late}\n"),
    );
    assert!(err.contains("being terminated"), "{err}");
    k.ok(&[
        "patch",
        "cm",
        "held",
        "-n",
        "team",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    k.eventually("namespace gone", || !k.exists(&["get", "ns", "team"]));
    let err = k.fail(&["delete", "ns", "default"], None);
    assert!(err.contains("may not be deleted"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn imperative_generators_that_send_protobuf() {
    let k = Kube::new().await;
    assert!(
        k.ok(&["create", "namespace", "proto"])
            .contains("namespace/proto created")
    );
    k.ok(&[
        "create",
        "configmap",
        "c",
        "-n",
        "proto",
        "--from-literal=a=b",
    ]);
    assert_eq!(k.json(&["get", "cm", "c", "-n", "proto"])["data"]["a"], "b");
    k.ok(&["create", "secret", "generic", "s", "--from-literal=p=q"]);
    assert_eq!(k.json(&["get", "secret", "s"])["data"]["p"], "cQ==");
    k.ok(&["create", "serviceaccount", "robot"]);

    // The generators of every other served kind.
    let create = |args: &[&str]| k.ok(&[&["create", "-n", "proto"], args].concat());
    create(&[
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=0",
        "--port=80",
    ]);
    let d = k.json(&["get", "deploy", "web", "-n", "proto"]);
    assert_eq!(
        d["spec"]["strategy"]["type"], "RollingUpdate",
        "defaulted: {d:#}"
    );
    // An explicit zero survives; so do the nested template and its ports.
    assert_eq!(d["spec"]["replicas"], 0, "{d:#}");
    assert_eq!(d["spec"]["selector"]["matchLabels"]["app"], "web");
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        (&c["image"], &c["ports"][0]["containerPort"]),
        (&"nginx".into(), &80.into())
    );
    assert!(
        c.get("workingDir").is_none(),
        "empty strings are left out: {c}"
    );
    create(&["service", "nodeport", "svc", "--tcp=80:http"]);
    let svc = k.json(&["get", "svc", "svc", "-n", "proto"]);
    assert_eq!(svc["spec"]["type"], "NodePort");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], "http", "{svc:#}");
    create(&["job", "once", "--image=busybox", "--", "echo", "hi"]);
    let job = k.json(&["get", "job", "once", "-n", "proto"]);
    let args = &job["spec"]["template"]["spec"]["containers"][0]["command"];
    assert_eq!(args, &serde_json::json!(["echo", "hi"]), "{job:#}");
    create(&[
        "cronjob",
        "tick",
        "--image=busybox",
        "--schedule=*/5 * * * *",
    ]);
    create(&["role", "reader", "--verb=get,list", "--resource=pods"]);
    create(&["rolebinding", "readers", "--role=reader", "--user=bob"]);
    let rb = k.json(&["get", "rolebinding", "readers", "-n", "proto"]);
    assert_eq!(rb["roleRef"]["name"], "reader");
    assert_eq!(rb["subjects"][0]["name"], "bob");
    create(&[
        "poddisruptionbudget",
        "pdb",
        "--selector=app=web",
        "--min-available=50%",
    ]);
    let pdb = k.json(&["get", "pdb", "pdb", "-n", "proto"]);
    assert_eq!(pdb["spec"]["minAvailable"], "50%");
    create(&["ingress", "ing", "--rule=example.com/api*=svc:8080"]);
    let ing = k.json(&["get", "ingress", "ing", "-n", "proto"]);
    let path = &ing["spec"]["rules"][0]["http"]["paths"][0];
    assert_eq!(
        path["backend"]["service"]["port"]["number"], 8080,
        "{ing:#}"
    );
    create(&["quota", "q", "--hard=pods=3,requests.cpu=500m"]);
    let q = k.json(&["get", "quota", "q", "-n", "proto"]);
    assert_eq!(q["spec"]["hard"]["requests.cpu"], "500m");
    k.ok(&[
        "create",
        "clusterrole",
        "viewer",
        "--verb=get",
        "--resource=pods",
    ]);
    k.ok(&["create", "priorityclass", "low", "--value=-5"]);
    assert_eq!(k.json(&["get", "priorityclass", "low"])["value"], -5);
}

/// What a controller's install manifest holds: RBAC, a StatefulSet, a Job.
const WORKLOADS: &str = "
apiVersion: v1
kind: ServiceAccount
metadata: {name: ctl}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: ctl}
rules:
- {apiGroups: [''], resources: [pods], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: ctl}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ctl}
subjects:
- {kind: ServiceAccount, name: ctl, namespace: default}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: postgres}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: m, image: busybox}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn install_manifests_of_common_kinds_apply() {
    let k = Kube::new().await;
    let out = k.ok_in(&["apply", "-f", "-"], Some(WORKLOADS));
    for created in [
        "serviceaccount/ctl created",
        "clusterrole.rbac.authorization.k8s.io/ctl created",
        "clusterrolebinding.rbac.authorization.k8s.io/ctl created",
        "statefulset.apps/db created",
        "job.batch/migrate created",
    ] {
        assert!(out.contains(created), "{created}: {out}");
    }
    let again = k.ok_in(&["apply", "--server-side", "-f", "-"], Some(WORKLOADS));
    assert!(
        again.contains("statefulset.apps/db serverside-applied"),
        "{again}"
    );
    // The scale subresource of a StatefulSet, and `all` includes it.
    k.ok(&["scale", "statefulset", "db", "--replicas=3"]);
    assert_eq!(k.json(&["get", "sts", "db"])["spec"]["replicas"], 3);
    let all = k.ok(&["get", "all"]);
    assert!(
        all.contains("statefulset.apps/db") && all.contains("job.batch/migrate"),
        "{all}"
    );
    // The defaults a cluster fills in, there for controllers to read.
    let sts = k.json(&["get", "sts", "db"]);
    assert_eq!(
        sts["spec"]["podManagementPolicy"], "OrderedReady",
        "{sts:#}"
    );
    assert_eq!(sts["spec"]["updateStrategy"]["type"], "RollingUpdate");
    let c = &sts["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(
        k.json(&["get", "job", "migrate"])["spec"]["backoffLimit"],
        6
    );
    let described = k.ok(&["describe", "sts", "db"]);
    assert!(
        described.contains("Update Strategy:    RollingUpdate"),
        "{described}"
    );
    // RBAC objects keep no generation, as on a cluster.
    let role = k.json(&["get", "clusterrole", "ctl"]);
    assert!(role["metadata"].get("generation").is_none(), "{role:#}");
    assert_eq!(role["rules"][0]["resources"][0], "pods");
}

/// `kubectl get --sort-by` asks for tables whose rows carry the whole
/// object (`includeObject=Object`) and sorts by a field of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_sorts_by_a_field_of_the_objects() {
    let k = Kube::new().await;
    for (name, rank) in [("b", 1), ("a", 2), ("c", 0)] {
        let rank = rank.to_string();
        k.ok(&[
            "create",
            "configmap",
            name,
            &format!("--from-literal=rank={rank}"),
        ]);
        k.ok(&["label", "configmap", name, "sorted=yes"]);
    }
    let out = k.ok(&[
        "get",
        "configmaps",
        "-l",
        "sorted=yes",
        "--sort-by=.data.rank",
        "--no-headers",
    ]);
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["c", "b", "a"], "{out}");
}

/// An event recorded through `events.k8s.io/v1` (as kube-rs operators and
/// kube-scheduler record them) is the same object as a core one: `kubectl
/// describe` lists it with the object's other events, and `kubectl get
/// events -o wide` names its reporter as kube prints it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn events_of_both_apis_show_in_describe() {
    let k = Kube::new().await;
    k.ok(&["create", "configmap", "settings", "--from-literal=a=b"]);
    let uid = k.json(&["get", "cm", "settings"])["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    let event = format!(
        "apiVersion: events.k8s.io/v1
kind: Event
metadata: {{name: settings.synced}}
regarding: {{apiVersion: v1, kind: ConfigMap, name: settings, namespace: default, uid: {uid}}}
eventTime: '2026-01-01T00:00:00.000000Z'
type: Normal
reason: Synced
action: Reconcile
note: settings are in place
reportingController: example.com/operator
reportingInstance: operator-0
"
    );
    k.ok_in(&["create", "-f", "-"], Some(&event));
    let core = format!(
        "apiVersion: v1
kind: Event
metadata: {{name: settings.edited}}
involvedObject: {{apiVersion: v1, kind: ConfigMap, name: settings, namespace: default, uid: {uid}}}
type: Warning
reason: Edited
message: changed by hand
source: {{component: kubelet, host: node-1}}
count: 2
"
    );
    k.ok_in(&["create", "-f", "-"], Some(&core));

    let described = k.ok(&["describe", "configmap", "settings"]);
    let events = described.split("Events:").nth(1).unwrap_or_default();
    for want in [
        "Synced",
        "example.com/operator",
        "settings are in place",
        "Edited",
        "kubelet",
        "changed by hand",
    ] {
        assert!(events.contains(want), "{want}: {described}");
    }
    let wide = k.ok(&["get", "events", "-o", "wide"]);
    for want in ["example.com/operator, operator-0", "kubelet, node-1"] {
        assert!(wide.contains(want), "{want}: {wide}");
    }
    // And the same two through events.k8s.io.
    let listed = k.json(&["get", "events.v1.events.k8s.io"]);
    let notes: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["note"].as_str())
        .collect();
    assert_eq!(notes.len(), 2, "{listed}");
    assert!(notes.contains(&"changed by hand"), "{notes:?}");
}

/// `kubectl debug` adds an ephemeral container through
/// `pods/ephemeralcontainers`, which changes nothing else of the pod; one
/// with a port, or one named like another container, is refused in kube's
/// words; an update may not remove it; no pod is created with one; and a
/// pod's node is not moved by an update.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_debug_adds_an_ephemeral_container_and_pods_keep_their_spec() {
    let k = Kube::new().await;
    k.ok(&["run", "web", "--image=nginx", "--labels=app=web"]);
    let out = k.ok(&[
        "debug",
        "web",
        "--image=busybox",
        "--profile=general",
        "--container=dbg",
        "--target=web",
    ]);
    assert!(out.contains("Targeting container \"web\""), "{out}");
    let ephemeral = k.ok(&[
        "get",
        "pod",
        "web",
        "-o",
        "jsonpath={.spec.ephemeralContainers[*].name}={.spec.ephemeralContainers[*].image}={.spec.ephemeralContainers[*].targetContainerName}",
    ]);
    assert_eq!(ephemeral, "dbg=busybox=web");
    let patch = |body: &str| {
        k.fail(
            &[
                "patch",
                "pod",
                "web",
                "--subresource=ephemeralcontainers",
                "--type=strategic",
                "-p",
                body,
            ],
            None,
        )
    };
    let err = patch(
        r#"{"spec":{"ephemeralContainers":[{"name":"p","image":"busybox","ports":[{"containerPort":80}]}]}}"#,
    );
    assert!(
        err.contains(
            "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container"
        ),
        "{err}"
    );
    let err = patch(r#"{"spec":{"ephemeralContainers":[{"name":"web","image":"busybox"}]}}"#);
    assert!(
        err.contains("spec.ephemeralContainers[1].name: Duplicate value: \"web\""),
        "{err}"
    );
    let err = k.fail(
        &[
            "patch",
            "pod",
            "web",
            "--subresource=ephemeralcontainers",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/spec/ephemeralContainers/0"}]"#,
        ],
        None,
    );
    assert!(
        err.contains("existing ephemeral containers \"dbg\" may not be removed"),
        "{err}"
    );
    let err = k.fail(
        &[
            "patch",
            "pod",
            "web",
            "-p",
            r#"{"spec":{"nodeName":"elsewhere"}}"#,
        ],
        None,
    );
    assert!(
        err.contains("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`")
            && err.contains("spec.nodeName: null → \"elsewhere\""),
        "{err}"
    );
    let err = k.fail(
        &["create", "-f", "-"],
        Some("apiVersion: v1\nkind: Pod\nmetadata: {name: born-debugged}\nspec:\n  containers: [{name: c, image: nginx}]\n  ephemeralContainers: [{name: d, image: busybox}]\n"),
    );
    assert!(
        err.contains("spec.ephemeralContainers: Forbidden: cannot be set on create"),
        "{err}"
    );
}

/// What Kueue does to a pod it holds at a scheduling gate: narrows its
/// required node affinity (a requirement added to a term), then lifts the
/// gate. A term added or a requirement changed is refused in kube's words,
/// and so is any narrowing once the pod is no longer gated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gated_pods_node_affinity_narrows_before_its_gate_is_lifted() {
    let k = Kube::new().await;
    k.ok_in(
        &["create", "-f", "-"],
        Some(
            "apiVersion: v1\nkind: Pod\nmetadata: {name: held}\nspec:\n  schedulingGates: [{name: kueue.x-k8s.io/admission}]\n  containers: [{name: c, image: nginx}]\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/os, operator: In, values: [linux]}]}]\n",
        ),
    );
    let terms = "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms";
    let patch = |ops: String| k.run(&["patch", "pod", "held", "--type=json", "-p", &ops], None);
    let out = patch(format!(
        r#"[{{"op":"add","path":"{terms}/0/matchExpressions/-","value":{{"key":"zone","operator":"In","values":["a"]}}}}]"#
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = patch(format!(
        r#"[{{"op":"add","path":"{terms}/-","value":{{"matchExpressions":[{{"key":"zone","operator":"In","values":["b"]}}]}}}}]"#
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Invalid value")
            && err.contains("no additions/deletions to non-empty NodeSelectorTerms list are allowed"),
        "{err}"
    );
    let out = patch(format!(
        r#"[{{"op":"replace","path":"{terms}/0/matchExpressions/1/values","value":["b"]}}]"#
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nodeSelectorTerms[0]: Invalid value")
            && err.contains("only additions are allowed (no mutations or deletions)"),
        "{err}"
    );
    k.ok(&[
        "patch",
        "pod",
        "held",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/schedulingGates"}]"#,
    ]);
    let zones = k.ok(&[
        "get",
        "pod",
        "held",
        "-o",
        "jsonpath={.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[*].key}",
    ]);
    assert_eq!(zones, "kubernetes.io/os zone");
    let out = patch(format!(
        r#"[{{"op":"add","path":"{terms}/0/matchExpressions/-","value":{{"key":"disk","operator":"Exists"}}}}]"#
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec: Forbidden: pod updates may not change fields other than"),
        "{err}"
    );
}
