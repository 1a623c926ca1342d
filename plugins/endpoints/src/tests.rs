//! Native tests of the endpoints logic, through `windlass_sdk::testing`.

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{Object, ObjectRef, Outcome};

use super::EndpointsController;

type H = Harness<EndpointsController>;

const SERVICE: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop, uid: svc-uid, labels: {team: a}}
spec:
  selector: {app: web}
  clusterIP: 10.96.10.10
  ports:
  - {name: http, port: 80, targetPort: http, protocol: TCP}
  - {name: metrics, port: 9090, targetPort: 9090, protocol: TCP}
"#;

/// A pod of `app` in `shop` on node-1; `ready`, an IP, a phase, and more
/// YAML under `metadata`; its container serves `http` on `port`.
fn pod(
    name: &str,
    app: &str,
    ip: &str,
    ready: bool,
    phase: &str,
    port: i64,
    extra: &str,
) -> String {
    let ready = if ready { "True" } else { "False" };
    format!(
        r#"
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: shop, uid: uid-{name}, labels: {{app: {app}}}{extra}}}
spec:
  nodeName: node-1
  containers: [{{name: c, ports: [{{name: http, containerPort: {port}}}]}}]
status:
  phase: {phase}
  podIP: "{ip}"
  conditions: [{{type: Ready, status: "{ready}"}}]
"#
    )
}

fn svc_ref() -> ObjectRef {
    ObjectRef::new("v1", "Service", "shop", "web")
}

fn harness(objects: &[String]) -> H {
    let mut h = H::new().with_objects(SERVICE).unwrap();
    for o in objects {
        h = h.with_objects(o).unwrap();
    }
    h
}

fn of_kind<'o>(out: &'o Outcome, kind: &str) -> Vec<&'o Object> {
    out.applies().filter(|o| o.kind() == kind).collect()
}

fn value(o: &Object) -> Value {
    serde_json::from_str(&o.to_json()).unwrap()
}

fn ips(list: &Value) -> Vec<&str> {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|a| a["ip"].as_str().unwrap())
        .collect()
}

#[test]
fn ready_and_unready_pods_with_their_ports() {
    let h = harness(&[
        pod("b", "web", "10.244.1.3", true, "Running", 8080, ""),
        pod("a", "web", "10.244.1.20", true, "Running", 8080, ""),
        pod("c", "web", "10.244.1.4", false, "Running", 8080, ""),
        // Not selected, no IP yet, ended, and terminating.
        pod("other", "db", "10.244.1.5", true, "Running", 8080, ""),
        pod("new", "web", "", false, "Pending", 8080, ""),
        pod("done", "web", "10.244.1.6", false, "Succeeded", 8080, ""),
        pod(
            "going",
            "web",
            "10.244.1.7",
            true,
            "Running",
            8080,
            ", deletionTimestamp: \"2026-01-01T00:00:00Z\"",
        ),
    ]);
    let out = h.reconcile_key(&svc_ref()).unwrap();
    assert!(out.prune_owned);
    let [ep] = of_kind(&out, "Endpoints")[..] else {
        panic!("{out:?}")
    };
    let ep = value(ep);
    assert_eq!(ep["metadata"]["name"], "web");
    assert_eq!(ep["metadata"]["labels"], json!({"team": "a"}));
    let subsets = ep["subsets"].as_array().unwrap();
    assert_eq!(subsets.len(), 1, "{ep}");
    // Ordered by address; the terminating pod is not in the Endpoints.
    assert_eq!(ips(&subsets[0]["addresses"]), ["10.244.1.3", "10.244.1.20"]);
    assert_eq!(ips(&subsets[0]["notReadyAddresses"]), ["10.244.1.4"]);
    assert_eq!(
        subsets[0]["ports"],
        json!([{"name": "http", "port": 8080, "protocol": "TCP"},
               {"name": "metrics", "port": 9090, "protocol": "TCP"}])
    );
    assert_eq!(subsets[0]["addresses"][0]["targetRef"]["name"], "b");
    assert_eq!(subsets[0]["addresses"][0]["nodeName"], "node-1");

    let [slice] = of_kind(&out, "EndpointSlice")[..] else {
        panic!("{out:?}")
    };
    let slice = value(slice);
    let labels = &slice["metadata"]["labels"];
    assert_eq!(labels["kubernetes.io/service-name"], "web");
    assert_eq!(
        labels["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(slice["addressType"], "IPv4");
    let conditions: Vec<(&str, Value)> = slice["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["targetRef"]["name"].as_str().unwrap(),
                e["conditions"].clone(),
            )
        })
        .collect();
    assert_eq!(
        conditions,
        [
            (
                "a",
                json!({"ready": true, "serving": true, "terminating": false})
            ),
            (
                "b",
                json!({"ready": true, "serving": true, "terminating": false})
            ),
            (
                "c",
                json!({"ready": false, "serving": false, "terminating": false})
            ),
            (
                "going",
                json!({"ready": false, "serving": true, "terminating": true})
            ),
        ]
    );
}

#[test]
fn pods_serving_a_named_port_differently_get_a_subset_and_a_slice_each() {
    let h = harness(&[
        pod("a", "web", "10.244.1.2", true, "Running", 8080, ""),
        pod("b", "web", "10.244.1.3", true, "Running", 8081, ""),
    ]);
    let out = h.reconcile_key(&svc_ref()).unwrap();
    let ep = value(of_kind(&out, "Endpoints")[0]);
    assert_eq!(ep["subsets"].as_array().unwrap().len(), 2, "{ep}");
    let slices = of_kind(&out, "EndpointSlice");
    assert_eq!(slices.len(), 2);
    let names: Vec<String> = slices.iter().map(|s| s.name().to_owned()).collect();
    assert_ne!(names[0], names[1]);
    assert!(
        names.iter().all(|n| n.starts_with("web-") && n.len() == 9),
        "{names:?}"
    );
    // The same pods give the same objects.
    assert_eq!(h.reconcile_key(&svc_ref()).unwrap(), out);
}

#[test]
fn publish_not_ready_addresses_makes_every_pod_ready() {
    let svc = SERVICE.replace("selector:", "publishNotReadyAddresses: true\n  selector:");
    let h = H::new()
        .with_objects(&svc)
        .unwrap()
        .with_objects(&pod("c", "web", "10.244.1.4", false, "Running", 8080, ""))
        .unwrap();
    let out = h.reconcile_key(&svc_ref()).unwrap();
    let ep = value(of_kind(&out, "Endpoints")[0]);
    assert_eq!(ips(&ep["subsets"][0]["addresses"]), ["10.244.1.4"]);
    assert!(ep["subsets"][0]["notReadyAddresses"].is_null());
}

#[test]
fn no_pods_leave_an_empty_endpoints_and_a_placeholder_slice() {
    let out = harness(&[]).reconcile_key(&svc_ref()).unwrap();
    let ep = value(of_kind(&out, "Endpoints")[0]);
    assert!(ep["subsets"].is_null(), "{ep}");
    let slice = value(of_kind(&out, "EndpointSlice")[0]);
    assert!(
        slice["endpoints"].is_null() && slice["ports"].is_null(),
        "{slice}"
    );
}

#[test]
fn services_without_a_selector_are_left_alone() {
    for svc in [
        SERVICE.replace("selector: {app: web}", "selector: {}"),
        SERVICE.replace("  selector: {app: web}\n", ""),
        SERVICE.replace(
            "selector: {app: web}",
            "type: ExternalName\n  externalName: example.com\n  selector: {app: web}",
        ),
    ] {
        let h = H::new()
            .with_objects(&svc)
            .unwrap()
            .with_objects(&pod("a", "web", "10.244.1.2", true, "Running", 8080, ""))
            .unwrap();
        let out = h.reconcile_key(&svc_ref()).unwrap();
        assert_eq!(out.applies().count(), 0, "{svc}");
        // Anything written for it before is pruned.
        assert!(out.prune_owned);
    }
}

#[test]
fn a_pod_wakes_the_services_that_select_it() {
    let h = harness(&[]);
    let parsed = |yaml: &str| {
        windlass_sdk::testing::parse_objects(yaml)
            .unwrap()
            .remove(0)
    };
    let web = parsed(&pod("a", "web", "10.244.1.2", true, "Running", 8080, ""));
    assert_eq!(h.map(&web).unwrap(), [svc_ref()]);
    let db = parsed(&pod("a", "db", "10.244.1.2", true, "Running", 8080, ""));
    assert!(h.map(&db).unwrap().is_empty());
}

#[test]
fn many_pods_are_split_into_slices_of_a_hundred() {
    let pods: Vec<String> = (0..250)
        .map(|i| {
            pod(
                &format!("p{i:03}"),
                "web",
                &format!("10.244.{}.{}", i / 200, i % 200 + 1),
                true,
                "Running",
                8080,
                "",
            )
        })
        .collect();
    let mut h = harness(&pods);
    let out = h.reconcile_key(&svc_ref()).unwrap();
    let sizes: Vec<usize> = of_kind(&out, "EndpointSlice")
        .iter()
        .map(|s| value(s)["endpoints"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [100, 100, 50]);
    // Applied, the next reconcile changes nothing.
    assert_eq!(h.converge(&svc_ref(), 3).unwrap(), 1);
}

#[test]
fn pods_that_go_leave_the_objects_with_none() {
    let mut h = harness(&[pod("a", "web", "10.244.1.2", true, "Running", 8080, "")]);
    h.converge(&svc_ref(), 3).unwrap();
    h.remove(&ObjectRef::new("v1", "Pod", "shop", "a"));
    h.converge(&svc_ref(), 3).unwrap();
    let ep = h
        .get(&ObjectRef::new("v1", "Endpoints", "shop", "web"))
        .unwrap();
    assert!(value(&ep)["subsets"].is_null(), "{}", ep.to_json());
    let slices = h.list("discovery.k8s.io/v1", "EndpointSlice");
    assert_eq!(slices.len(), 1);
    let slice = value(&slices[0]);
    assert!(
        slice["endpoints"].is_null() && slice["ports"].is_null(),
        "{slice}"
    );
}
