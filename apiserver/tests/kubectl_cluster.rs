//! kubectl commands that need what a cluster has beyond storing objects:
//! schemas (`explain`, validation of a `kind: List`, unknown fields),
//! reviews (`auth can-i`, `auth whoami`), service account tokens (`create
//! token`, then used), HPA `autoscaling/v1` (`autoscale`), CSR approval,
//! field selectors, aggregated discovery (`api-resources`), `drain`
//! (evictions through a PodDisruptionBudget, and deletes with protobuf
//! `DeleteOptions`).

mod common;

use common::kubectl::Kube;
use serde_json::Value;
use windlass_apiserver::Config;

const DEPLOYMENT: &str = "
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn explain_prints_the_schema() {
    let k = Kube::new().await;
    let out = k.ok(&["explain", "deployment.spec.strategy"]);
    assert!(out.contains("KIND:       Deployment"), "{out}");
    assert!(
        out.contains("FIELD: strategy <DeploymentStrategy>"),
        "{out}"
    );
    assert!(
        out.contains("rollingUpdate\t<RollingUpdateDeployment>"),
        "{out}"
    );
    assert!(
        out.contains("The deployment strategy to use to replace existing pods with new ones."),
        "{out}"
    );
    let out = k.ok(&["explain", "pods.spec.containers.resources", "--recursive"]);
    assert!(out.contains("limits\t<map[string]Quantity>"), "{out}");
    // A custom resource, from its CRD's schema.
    k.ok_in(
        &["apply", "-f", "-"],
        Some(
            "
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
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
              size: {type: integer, description: How big the widget is.}
",
        ),
    );
    let out = k.ok(&["explain", "widgets.spec.size"]);
    assert!(out.contains("How big the widget is."), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn auth_can_i_and_whoami() {
    let k = Kube::new().await;
    assert_eq!(k.ok(&["auth", "can-i", "create", "pods"]).trim(), "yes");
    assert_eq!(
        k.ok(&["auth", "can-i", "delete", "nodes", "--all-namespaces"])
            .trim(),
        "yes"
    );
    let list = k.ok(&["auth", "can-i", "--list"]);
    assert!(list.contains("*.*"), "{list}");
    let me = k.ok(&["auth", "whoami", "-o", "json"]);
    let me: Value = serde_json::from_str(&me).unwrap();
    assert_eq!(me["status"]["userInfo"]["username"], "windlass-admin");
}

/// `kubectl create token`, and the token used by kubectl as its
/// credentials (over HTTPS: kubectl sends tokens only over TLS).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn create_token_gives_a_token_the_server_accepts() {
    let any: std::net::SocketAddr = "0.0.0.0:0".parse().unwrap();
    let k = Kube::with(Config::new().in_memory().listen(any)).await;
    let token = k.ok(&["create", "token", "default", "--duration", "20m"]);
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "a JSON Web Token: {token}");
    let admin = k.server.bearer_token().unwrap().to_owned();
    let text = std::fs::read_to_string(&k.kubeconfig).unwrap();
    std::fs::write(&k.kubeconfig, text.replace(&admin, token)).unwrap();
    let me = k.ok(&[
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(me, "system:serviceaccount:default:default");
    k.ok(&["get", "configmaps"]);
    // Another namespace's account needs the account to exist.
    let err = k.fail(&["create", "token", "nobody"], None);
    assert!(
        err.contains("serviceaccounts \"nobody\" not found"),
        "{err}"
    );
    // A token whose account is gone is refused.
    std::fs::write(&k.kubeconfig, &text).unwrap();
    k.ok(&["delete", "serviceaccount", "default"]);
    std::fs::write(&k.kubeconfig, text.replace(&admin, token)).unwrap();
    let err = k.fail(&["get", "configmaps"], None);
    assert!(err.contains("Unauthorized"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn autoscale_writes_autoscaling_v1() {
    let k = Kube::new().await;
    k.ok_in(&["apply", "-f", "-"], Some(DEPLOYMENT));
    let out = k.ok(&[
        "autoscale",
        "deployment",
        "web",
        "--min=2",
        "--max=5",
        "--cpu-percent=80",
    ]);
    assert!(
        out.contains("horizontalpodautoscaler.autoscaling/web autoscaled"),
        "{out}"
    );
    let hpa = k.json(&["get", "hpa", "web"]);
    assert_eq!(hpa["apiVersion"], "autoscaling/v2");
    assert_eq!(hpa["spec"]["minReplicas"], 2);
    assert_eq!(hpa["spec"]["maxReplicas"], 5);
    assert_eq!(hpa["spec"]["metrics"][0]["resource"]["name"], "cpu");
    assert_eq!(
        hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    let table = k.ok(&["get", "hpa"]);
    assert!(
        table.contains("REFERENCE") && table.contains("Deployment/web"),
        "{table}"
    );
}

/// kubectl validates a `kind: List` itself, against `/openapi/v2`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn apply_of_a_list_validates_against_the_schemas() {
    let k = Kube::new().await;
    let list = "
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {zone: a}}
  spec: {}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: settings}
  data: {level: high}
";
    let out = k.ok_in(&["apply", "-f", "-"], Some(list));
    assert!(
        out.contains("node/n1 created") && out.contains("configmap/settings created"),
        "{out}"
    );
    let out = k.ok_in(&["apply", "-f", "-"], Some(list));
    assert!(out.contains("node/n1 unchanged"), "{out}");
    // The repository's example nodes are such a List.
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/nodes.yaml");
    let out = k.ok(&["apply", "-f", example]);
    assert!(out.contains("node/node-gpu1 created"), "{out}");
    let gpu = k.json(&["get", "node", "node-gpu1"]);
    assert_eq!(gpu["spec"]["taints"][0]["key"], "dedicated");
    // The same validation refuses what the schema does not have.
    let bad = list.replace("data: {level: high}", "data: {level: high}\n  colour: red");
    let err = k.fail(&["apply", "-f", "-"], Some(&bad));
    assert!(err.contains("unknown field \"colour\""), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unknown_fields_under_each_validate_mode() {
    let k = Kube::new().await;
    let cm = |name: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{a: b}}\nbogus: 1\n"
        )
    };
    // kubectl's default is Strict, left to the server.
    let err = k.fail(&["apply", "-f", "-"], Some(&cm("strict")));
    assert!(
        err.contains("strict decoding error: unknown field \"bogus\""),
        "{err}"
    );
    assert!(!k.exists(&["get", "cm", "strict"]));
    let out = k.run(
        &["apply", "--validate=warn", "-f", "-"],
        Some(&cm("warned")),
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Warning: unknown field \"bogus\""), "{err}");
    k.ok_in(
        &["create", "--validate=false", "-f", "-"],
        Some(&cm("ignored")),
    );
    let stored = k.json(&["get", "cm", "ignored"]);
    assert!(stored.get("bogus").is_none(), "{stored}");
    // Server-side apply, which refuses fields the schema does not declare.
    let err = k.fail(&["apply", "--server-side", "-f", "-"], Some(&cm("ssa")));
    assert!(
        err.contains(".bogus: field not declared in schema"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn certificate_approve_and_node_field_selectors() {
    use base64::Engine as _;
    let k = Kube::new().await;
    let request = base64::engine::general_purpose::STANDARD
        .encode("-----BEGIN CERTIFICATE REQUEST-----\nMIIBADCBqAIBADA=\n-----END CERTIFICATE REQUEST-----\n");
    let csr = format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {{name: alice}}\nspec:\n  request: {request}\n  signerName: kubernetes.io/kube-apiserver-client\n  usages: [client auth]\n"
    );
    k.ok_in(&["apply", "-f", "-"], Some(&csr));
    let out = k.ok(&["certificate", "approve", "alice"]);
    assert!(out.contains("approved"), "{out}");
    let c = k.json(&["get", "csr", "alice"]);
    assert_eq!(c["status"]["conditions"][0]["type"], "Approved");
    k.ok_in(
        &["apply", "-f", "-"],
        Some("apiVersion: v1\nkind: Node\nmetadata: {name: open}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: closed}\nspec: {unschedulable: true}\n"),
    );
    let out = k.ok(&[
        "get",
        "nodes",
        "--field-selector",
        "spec.unschedulable=false",
        "-o",
        "name",
    ]);
    assert_eq!(out.trim(), "node/open");
    let err = k.fail(
        &["get", "nodes", "--field-selector", "spec.podCIDR=x"],
        None,
    );
    assert!(
        err.contains("field label not supported: spec.podCIDR"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_groups_and_objects_every_cluster_has() {
    let k = Kube::new().await;
    let out = k.ok(&["api-resources"]);
    for line in [
        "selfsubjectaccessreviews",
        "certificatesigningrequests",
        "apiservices",
        "tokenreviews",
    ] {
        assert!(out.contains(line), "{line} in {out}");
    }
    let out = k.ok(&["get", "service", "kubernetes"]);
    assert!(
        out.contains("10.96.0.1") && out.contains("443/TCP"),
        "{out}"
    );
    let out = k.ok(&["get", "apiservices"]);
    assert!(out.contains("v1.apps") && out.contains("Local"), "{out}");
    let out = k.ok(&["get", "serviceaccounts", "-A"]);
    assert!(
        out.contains("kube-system") && out.contains("default"),
        "{out}"
    );
}

/// A node `node` and a running, ready pod `name` labelled `app=web` on it.
fn running_pod_on(k: &Kube, node: &str, name: &str) {
    k.ok_in(
        &["apply", "-f", "-"],
        Some(&format!(
            "
apiVersion: v1
kind: Pod
metadata: {{name: {name}, labels: {{app: web}}}}
spec:
  nodeName: {node}
  containers: [{{name: web, image: nginx}}]
"
        )),
    );
    k.ok(&[
        "patch",
        "pod",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}"#,
    ]);
}

/// What a disruption controller would write: `allowed` disruptions left.
fn budget_allows(k: &Kube, allowed: i64) {
    let patch = format!(
        r#"{{"status": {{"observedGeneration": 1, "disruptionsAllowed": {allowed}, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2}}}}"#
    );
    k.ok(&[
        "patch",
        "pdb",
        "web",
        "--subresource=status",
        "--type=merge",
        "-p",
        &patch,
    ]);
}

/// `kubectl drain` evicts through `pods/eviction`, which honours the
/// pods' PodDisruptionBudget: one disruption allowed, one pod evicted, the
/// other refused (429, retried by kubectl until its timeout) until the
/// budget allows another. With `--disable-eviction` kubectl deletes
/// instead, sending `DeleteOptions` as protobuf.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn drain_evicts_within_the_disruption_budget() {
    let k = Kube::new().await;
    let resources = k.ok(&["api-resources", "--api-group=policy", "-o", "name"]);
    assert!(resources.contains("poddisruptionbudgets"), "{resources}");
    for node in ["n1", "n2"] {
        k.ok_in(
            &["apply", "-f", "-"],
            Some(&format!(
                "apiVersion: v1\nkind: Node\nmetadata: {{name: {node}}}\n"
            )),
        );
    }
    running_pod_on(&k, "n1", "a");
    running_pod_on(&k, "n1", "b");
    k.ok(&[
        "create",
        "pdb",
        "web",
        "--selector=app=web",
        "--min-available=1",
    ]);
    budget_allows(&k, 1);

    // `--force`: these pods have no controller to replace them.
    let err = k.fail(
        &["drain", "n1", "--grace-period=0", "--force", "--timeout=7s"],
        None,
    );
    assert!(
        err.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{err}"
    );
    let left = |k: &Kube| {
        let pods = k.json(&["get", "pods"]);
        pods["items"].as_array().unwrap().len()
    };
    assert_eq!(left(&k), 1, "exactly one pod evicted");
    let pdb = k.json(&["get", "pdb", "web"]);
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    let disrupted = pdb["status"]["disruptedPods"].as_object().unwrap();
    assert_eq!(disrupted.len(), 1, "{pdb}");
    assert!(!k.exists(&["get", "pod", disrupted.keys().next().unwrap()]));
    let node = k.json(&["get", "node", "n1"]);
    assert_eq!(node["spec"]["unschedulable"], true, "drain cordons first");

    budget_allows(&k, 1);
    let out = k.ok(&[
        "drain",
        "n1",
        "--grace-period=0",
        "--force",
        "--timeout=20s",
    ]);
    assert!(out.contains("node/n1 drained"), "{out}");
    assert_eq!(left(&k), 0);

    // Deletes instead of evictions: protobuf DeleteOptions.
    running_pod_on(&k, "n2", "c");
    let out = k.ok(&[
        "drain",
        "n2",
        "--disable-eviction",
        "--grace-period=0",
        "--force",
        "--timeout=20s",
    ]);
    assert!(out.contains("pod/c deleted"), "{out}");
    assert_eq!(left(&k), 0);
}

/// `kubectl logs`, `exec` and `port-forward` reach a kubelet through the
/// API server; this one connects to none, and says so in words naming the
/// pod's node rather than with a 404 for a path it does not know. A pod
/// that does not exist is still the pod's 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn logs_exec_and_port_forward_say_no_kubelet_is_reached() {
    let k = Kube::new().await;
    running_pod_on(&k, "node-1", "web-1");
    for args in [
        &["logs", "web-1"][..],
        &["exec", "web-1", "--", "ls"],
        &["port-forward", "pod/web-1", "18080:80"],
    ] {
        let err = k.fail(args, None);
        assert!(
            err.contains(r#"pod "web-1" runs on node "node-1""#)
                && err.contains("connects to no kubelet"),
            "kubectl {args:?}: {err}"
        );
    }
    let err = k.fail(&["logs", "missing"], None);
    assert!(err.contains(r#"pods "missing" not found"#), "{err}");
}

/// A Service as `kubectl apply -f -` reads it: `name`, of `kind`, with
/// `extra` lines under `spec`.
fn service(name: &str, kind: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec:\n  type: {kind}\n  selector: {{app: {name}}}\n  ports: [{{name: http, port: 80, targetPort: 8080}}]\n{extra}"
    )
}

fn octets(ip: &str) -> [u8; 4] {
    let ip: std::net::Ipv4Addr = ip.parse().expect(ip);
    ip.octets()
}

/// Services get a cluster IP from 10.96.0.0/12 and node ports from
/// 30000-32767, as kube-apiserver allocates them: asked-for ones only if
/// free and in range, kept across updates that leave them out, freed on
/// delete; a cluster IP may not change once set.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn services_get_cluster_ips_and_node_ports() {
    let k = Kube::new().await;
    k.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    let spec = k.json(&["get", "svc", "web"])["spec"].clone();
    let ip = spec["clusterIP"].as_str().unwrap().to_owned();
    let [a, b, ..] = octets(&ip);
    assert!(a == 10 && (96..112).contains(&b), "{spec}");
    assert_eq!(spec["clusterIPs"], serde_json::json!([ip]), "{spec}");
    assert_eq!(spec["ipFamilies"], serde_json::json!(["IPv4"]), "{spec}");
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack", "{spec}");
    let listed = k.ok(&["get", "svc", "web"]);
    assert!(listed.contains(&ip), "{listed}");

    // Another Service asking for that address, or one out of range.
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(&service(
            "copy",
            "ClusterIP",
            &format!("  clusterIP: {ip}\n"),
        )),
    );
    assert!(
        err.contains(&format!(
            "failed to allocate IP {ip}: provided IP is already allocated"
        )),
        "{err}"
    );
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(&service("far", "ClusterIP", "  clusterIP: 192.168.0.10\n")),
    );
    assert!(
        err.contains("the provided IP (192.168.0.10) is not in the valid range. The range of valid IPs is 10.96.0.0/12"),
        "{err}"
    );

    // Updates that leave the address out keep it; one that changes it is refused.
    k.ok(&["label", "svc", "web", "tier=front"]);
    k.ok_in(
        &["replace", "-f", "-"],
        Some(&service("web", "ClusterIP", "")),
    );
    assert_eq!(
        k.json(&["get", "svc", "web"])["spec"]["clusterIP"],
        ip.as_str()
    );
    let err = k.fail(
        &[
            "patch",
            "svc",
            "web",
            "-p",
            r#"{"spec":{"clusterIP":"10.96.5.5","clusterIPs":["10.96.5.5"]}}"#,
        ],
        None,
    );
    assert!(
        err.contains(
            r#"spec.clusterIPs[0]: Invalid value: ["10.96.5.5"]: may not change once set"#
        ),
        "{err}"
    );

    // Node ports: allocated, kept, refused when taken, dropped with the type.
    k.ok(&["create", "service", "nodeport", "np", "--tcp=80:8080"]);
    let port = k.json(&["get", "svc", "np"])["spec"]["ports"][0]["nodePort"]
        .as_i64()
        .unwrap();
    assert!((30000..=32767).contains(&port), "{port}");
    let err = k.fail(
        &["apply", "-f", "-"],
        Some(&service("np2", "NodePort", "").replace(
            "targetPort: 8080}",
            &format!("targetPort: 8080, nodePort: {port}}}"),
        )),
    );
    assert!(err.contains("provided port is already allocated"), "{err}");
    k.ok(&[
        "patch",
        "svc",
        "np",
        "-p",
        r#"{"spec":{"type":"ClusterIP"}}"#,
    ]);
    let spec = k.json(&["get", "svc", "np"])["spec"].clone();
    assert!(spec["ports"][0]["nodePort"].is_null(), "{spec}");
    assert!(
        spec["clusterIP"]
            .as_str()
            .is_some_and(|s| s.starts_with("10.")),
        "{spec}"
    );

    // Headless stays headless; a deleted Service's address is free again.
    k.ok_in(
        &["apply", "-f", "-"],
        Some(&service("db", "ClusterIP", "  clusterIP: None\n")),
    );
    assert_eq!(
        k.json(&["get", "svc", "db"])["spec"]["clusterIPs"],
        serde_json::json!(["None"])
    );
    k.ok(&["delete", "svc", "web"]);
    k.ok_in(
        &["apply", "-f", "-"],
        Some(&service(
            "copy",
            "ClusterIP",
            &format!("  clusterIP: {ip}\n"),
        )),
    );
    assert_eq!(
        k.json(&["get", "svc", "copy"])["spec"]["clusterIP"],
        ip.as_str()
    );
}
