//! Namespace governance against the real server: LimitRange defaults and
//! bounds and ResourceQuota admission, driven by the real `kubectl` (and by
//! raw concurrent HTTP for the race on a quota's last unit), with the
//! examples in `examples/` applied as written.

mod common;

use common::kubectl::Kube;
use serde_json::{Value, json};

const COMPUTE_RESOURCES: &str = include_str!("../../examples/compute-resources.yaml");
const OBJECT_COUNTS: &str = include_str!("../../examples/object-counts.yaml");
const LIMIT_RANGE_AS_WRITTEN: &str = include_str!("../../examples/mem-cpu-res-limit.yaml");
const LIMIT_RANGE: &str = include_str!("../../examples/mem-cpu-res-limit-fixed.yaml");

/// What these tests do often with kubectl.
trait Governance {
    fn apply(&self, ns: &str, yaml: &str) -> String;
    fn apply_fails(&self, ns: &str, yaml: &str) -> String;
    fn namespace(&self, ns: &str);
}

impl Governance for Kube {
    fn apply(&self, ns: &str, yaml: &str) -> String {
        self.ok_in(&["apply", "-n", ns, "-f", "-"], Some(yaml))
    }

    fn apply_fails(&self, ns: &str, yaml: &str) -> String {
        self.fail(&["apply", "-n", ns, "-f", "-"], Some(yaml))
    }

    fn namespace(&self, ns: &str) {
        self.ok(&["create", "namespace", ns]);
    }
}

/// A pod manifest; `resources` is its one container's `resources` block.
fn pod(name: &str, resources: Value) -> String {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "resources": resources}]},
    })
    .to_string()
}

/// The rows of a `kubectl describe` table: the whitespace-separated words
/// of each line after the `----` underline.
fn table_rows(describe: &str) -> Vec<Vec<String>> {
    describe
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("----"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

fn row(rows: &[Vec<String>], words: &[&str]) -> bool {
    rows.iter().any(|r| r == words)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn limit_range_defaults_bounds_and_self_contradiction() {
    let k = Kube::new().await;
    k.namespace("team-a");

    // The notes' range, as written, is refused, and the message says why.
    let err = k.apply_fails("team-a", LIMIT_RANGE_AS_WRITTEN);
    assert!(
        err.contains(
            r#"The LimitRange "mem-cpu-res-limit" is invalid: spec.limits[0].default[memory]: Invalid value: "1Gi": default value 5G is greater than max value 1Gi"#
        ),
        "{err}"
    );
    k.apply("team-a", LIMIT_RANGE);

    // A bare pod gets the range's defaults.
    k.apply("team-a", &pod("bare", json!({})));
    let bare = k.json(&["get", "pod", "bare", "-n", "team-a"]);
    assert_eq!(
        bare["spec"]["containers"][0]["resources"],
        json!({"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "512Mi"}})
    );
    assert_eq!(
        bare["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"
    );
    assert_eq!(bare["status"]["qosClass"], "Burstable");

    // What a container sets is kept; a limit alone becomes the request too.
    k.apply(
        "team-a",
        &pod(
            "sized",
            json!({"limits": {"cpu": "1500m", "memory": "1Gi"}}),
        ),
    );
    let sized = k.json(&["get", "pod", "sized", "-n", "team-a"]);
    assert_eq!(
        sized["spec"]["containers"][0]["resources"],
        json!({"requests": {"cpu": "1500m", "memory": "1Gi"}, "limits": {"cpu": "1500m", "memory": "1Gi"}})
    );
    assert_eq!(sized["status"]["qosClass"], "Guaranteed");

    // Over the max: refused with the LimitRanger's message, nothing stored.
    let err = k.apply_fails("team-a", &pod("big", json!({"limits": {"memory": "2Gi"}})));
    assert!(
        err.contains(r#"pods "big" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi"#),
        "{err}"
    );
    let err = k.apply_fails("team-a", &pod("tiny", json!({"requests": {"cpu": "50m"}})));
    assert!(
        err.contains("minimum cpu usage per Container is 100m, but request is 50m"),
        "{err}"
    );
    assert!(
        !k.run(&["get", "pod", "big", "-n", "team-a"], None)
            .status
            .success()
    );

    // A request above the default limit is invalid, as on a cluster.
    let err = k.apply_fails("team-a", &pod("odd", json!({"requests": {"cpu": "1500m"}})));
    assert!(
        err.contains(r#"spec.containers[0].resources.requests: Invalid value: "1500m": must be less than or equal to cpu limit of 1"#),
        "{err}"
    );

    let describe = k.ok_in(
        &[
            "describe",
            "limitrange",
            "mem-cpu-res-limit",
            "-n",
            "team-a",
        ],
        None,
    );
    let rows = table_rows(&describe);
    assert!(
        row(&rows, &["Container", "cpu", "100m", "2", "500m", "1", "-"]),
        "{describe}"
    );
    assert!(
        row(
            &rows,
            &["Container", "memory", "100Mi", "1Gi", "256Mi", "512Mi", "-"]
        ),
        "{describe}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn compute_quota_refuses_and_describes() {
    let k = Kube::new().await;
    k.namespace("team-a");
    k.apply("team-a", COMPUTE_RESOURCES);

    // A pod that does not state what the quota limits.
    let err = k.apply_fails("team-a", &pod("bare", json!({})));
    assert!(
        err.contains(r#"pods "bare" is forbidden: failed quota: compute-resources: must specify limits.cpu for: app; limits.memory for: app; requests.cpu for: app; requests.memory for: app"#),
        "{err}"
    );

    let sized = |cpu: &str| json!({"requests": {"cpu": cpu, "memory": "100Mi"}, "limits": {"cpu": "500m", "memory": "200Mi"}});
    for name in ["a", "b", "c"] {
        k.apply("team-a", &pod(name, sized("300m")));
    }
    // 900m of 1 cpu is used: 300m more is refused with upstream's message.
    let err = k.apply_fails("team-a", &pod("d", sized("300m")));
    assert!(
        err.contains(r#"pods "d" is forbidden: exceeded quota: compute-resources, requested: requests.cpu=300m, used: requests.cpu=900m, limited: requests.cpu=1"#),
        "{err}"
    );
    k.apply("team-a", &pod("d", sized("100m")));
    // Four pods: the fifth is past `pods` (and past the cpu it would add).
    let err = k.apply_fails("team-a", &pod("e", sized("1m")));
    assert!(
        err.contains("exceeded quota: compute-resources, requested: limits.cpu=500m,pods=1,requests.cpu=1m, used: limits.cpu=2,pods=4,requests.cpu=1, limited: limits.cpu=2,pods=4,requests.cpu=1"),
        "{err}"
    );

    let quota = k.json(&["get", "quota", "compute-resources", "-n", "team-a"]);
    assert_eq!(
        quota["status"]["used"],
        json!({"limits.cpu": "2", "limits.memory": "800Mi", "pods": "4", "requests.cpu": "1", "requests.memory": "400Mi"})
    );
    let describe = k.ok_in(
        &["describe", "quota", "compute-resources", "-n", "team-a"],
        None,
    );
    let rows = table_rows(&describe);
    for expected in [
        ["limits.cpu", "2", "2"],
        ["limits.memory", "800Mi", "2Gi"],
        ["pods", "4", "4"],
        ["requests.cpu", "1", "1"],
        ["requests.memory", "400Mi", "1Gi"],
    ] {
        assert!(row(&rows, &expected), "{expected:?} in\n{describe}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn object_counts_and_a_quota_counting_what_exists() {
    let k = Kube::new().await;
    k.namespace("team-b");
    for i in 0..3 {
        k.ok_in(
            &["create", "configmap", &format!("early-{i}"), "-n", "team-b"],
            None,
        );
    }
    // A new quota's status counts what the namespace already holds.
    k.apply("team-b", OBJECT_COUNTS);
    let quota = k.json(&["get", "quota", "object-counts", "-n", "team-b"]);
    assert_eq!(quota["status"]["used"]["configmaps"], "3");
    assert_eq!(quota["status"]["hard"]["services.loadbalancers"], "2");
    for i in 3..10 {
        k.ok_in(
            &["create", "configmap", &format!("cm-{i}"), "-n", "team-b"],
            None,
        );
    }
    // The eleventh is refused.
    let err = k.fail(&["create", "configmap", "cm-10", "-n", "team-b"], None);
    assert!(
        err.contains(r#"configmaps "cm-10" is forbidden: exceeded quota: object-counts, requested: configmaps=1, used: configmaps=10, limited: configmaps=10"#),
        "{err}"
    );
    let describe = k.ok_in(
        &["describe", "quota", "object-counts", "-n", "team-b"],
        None,
    );
    let rows = table_rows(&describe);
    assert!(row(&rows, &["configmaps", "10", "10"]), "{describe}");
    assert!(row(&rows, &["services", "0", "10"]), "{describe}");

    // Raising the limit takes effect at once: the edit recomputes status.
    k.ok_in(
        &[
            "patch",
            "quota",
            "object-counts",
            "-n",
            "team-b",
            "--type=merge",
            "-p",
            r#"{"spec":{"hard":{"configmaps":"11"}}}"#,
        ],
        None,
    );
    k.ok_in(&["create", "configmap", "cm-10", "-n", "team-b"], None);
    let quota = k.json(&["get", "quota", "object-counts", "-n", "team-b"]);
    assert_eq!(quota["status"]["used"]["configmaps"], "11");
    assert_eq!(quota["status"]["hard"]["configmaps"], "11");

    // Two load balancers, then a third is refused; a ClusterIP service is not.
    let svc = |name: &str, typ: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"type": typ, "ports": [{"port": 80}]}})
        .to_string()
    };
    k.apply("team-b", &svc("lb-1", "LoadBalancer"));
    k.apply("team-b", &svc("lb-2", "LoadBalancer"));
    let err = k.apply_fails("team-b", &svc("lb-3", "LoadBalancer"));
    assert!(err.contains("requested: services.loadbalancers=1, used: services.loadbalancers=2, limited: services.loadbalancers=2"), "{err}");
    k.apply("team-b", &svc("plain", "ClusterIP"));

    // An update that grows usage is checked too: the patch is computed
    // outside the store's lock and admitted at its commit.
    let err = k.fail(
        &[
            "patch",
            "svc",
            "plain",
            "-n",
            "team-b",
            "--type=merge",
            "-p",
            r#"{"spec":{"type":"LoadBalancer"}}"#,
        ],
        None,
    );
    assert!(
        err.contains(r#"services "plain" is forbidden: exceeded quota: object-counts, requested: services.loadbalancers=1, used: services.loadbalancers=2, limited: services.loadbalancers=2"#),
        "{err}"
    );
    let plain = k.json(&["get", "svc", "plain", "-n", "team-b"]);
    assert_eq!(plain["spec"]["type"], "ClusterIP");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quota_validation_and_count_of_any_kind() {
    let k = Kube::new().await;
    k.namespace("team-c");
    let err = k.apply_fails(
        "team-c",
        r#"{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "bad"}, "spec": {"hard": {"pods": "-1"}}}"#,
    );
    assert!(
        err.contains(r#"spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0"#),
        "{err}"
    );
    let err = k.apply_fails(
        "team-c",
        r#"{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "bad"}, "spec": {"hard": {"pods": "lots"}}}"#,
    );
    assert!(
        err.contains("quantities must match the regular expression"),
        "{err}"
    );

    // count/<resource>.<group> for a custom resource.
    k.apply(
        "team-c",
        r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
              "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
              "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}"#,
    );
    k.apply(
        "team-c",
        r#"{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "widgets"},
            "spec": {"hard": {"count/widgets.example.com": "1"}}}"#,
    );
    let widget = |name: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}})
            .to_string()
    };
    k.apply("team-c", &widget("one"));
    let err = k.apply_fails("team-c", &widget("two"));
    assert!(
        err.contains(r#"widgets.example.com "two" is forbidden: exceeded quota: widgets, requested: count/widgets.example.com=1, used: count/widgets.example.com=1, limited: count/widgets.example.com=1"#),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_creates_against_ten_admit_exactly_ten() {
    let k = Kube::new().await;
    let http = common::Http::new(k.server.addr());
    let (code, _) = http
        .post(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "race"}}),
        )
        .await;
    assert_eq!(code, 201);
    let (code, _) = http
        .post(
            "/api/v1/namespaces/race/resourcequotas",
            &json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "ten"},
                "spec": {"hard": {"pods": "10"}}}),
        )
        .await;
    assert_eq!(code, 201);
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let http = http.clone();
            tokio::spawn(async move {
                let body: Value = serde_json::from_str(&pod(&format!("p{i}"), json!({}))).unwrap();
                http.post("/api/v1/namespaces/race/pods", &body).await
            })
        })
        .collect();
    let mut created = 0;
    for t in tasks {
        let (code, body) = t.await.unwrap();
        match code {
            201 => created += 1,
            403 => assert!(
                body["message"].as_str().unwrap().contains(
                    "exceeded quota: ten, requested: pods=1, used: pods=10, limited: pods=10"
                ),
                "{body}"
            ),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(created, 10);
    let (_, pods) = http.get("/api/v1/namespaces/race/pods").await;
    assert_eq!(pods["items"].as_array().unwrap().len(), 10);
    let (_, quota) = http.get("/api/v1/namespaces/race/resourcequotas/ten").await;
    assert_eq!(quota["status"]["used"]["pods"], "10");

    // As on a cluster, the server only charges: giving usage back is the
    // quota controller's job (the resourcequota plugin), so without it a
    // delete leaves the count, and the next pod is still refused.
    let name = pods["items"][0]["metadata"]["name"].as_str().unwrap();
    let (code, _) = http
        .delete(&format!("/api/v1/namespaces/race/pods/{name}"))
        .await;
    assert_eq!(code, 200);
    let (_, quota) = http.get("/api/v1/namespaces/race/resourcequotas/ten").await;
    assert_eq!(quota["status"]["used"]["pods"], "10");
    let body: Value = serde_json::from_str(&pod("late", json!({}))).unwrap();
    let (code, _) = http.post("/api/v1/namespaces/race/pods", &body).await;
    assert_eq!(code, 403);
}

/// Admission reads a namespace's LimitRanges and quotas as parsed once per
/// stored version, and a create may leave its quota charge in memory: a
/// range or quota edited or deleted still governs the very next create,
/// with a charge still pending when the quota is edited.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_edited_or_deleted_range_or_quota_governs_the_next_create() {
    let k = Kube::new().await;
    let http = common::Http::new(k.server.addr());
    let (code, _) = http
        .post(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "edits"}}),
        )
        .await;
    assert_eq!(code, 201);
    let pods = "/api/v1/namespaces/edits/pods";
    let create = |name: &str| {
        let (http, body) = (http.clone(), pod(name, json!({})));
        async move {
            let body: Value = serde_json::from_str(&body).unwrap();
            http.post(pods, &body).await
        }
    };
    let resources = |p: &Value| p["spec"]["containers"][0]["resources"].clone();
    let range = "/api/v1/namespaces/edits/limitranges/defaults";
    let (code, _) = http
        .post(
            "/api/v1/namespaces/edits/limitranges",
            &json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "defaults"},
                "spec": {"limits": [{"type": "Container",
                    "default": {"cpu": "200m"}, "defaultRequest": {"cpu": "100m"}}]}}),
        )
        .await;
    assert_eq!(code, 201);
    let (code, a) = create("a").await;
    assert_eq!(code, 201, "{a}");
    assert_eq!(
        resources(&a),
        json!({"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}})
    );
    let (code, _) = http
        .merge_patch(
            range,
            &json!({"spec": {"limits": [{"type": "Container",
                "default": {"cpu": "300m", "memory": "64Mi"}, "defaultRequest": {"cpu": "150m"}}]}}),
        )
        .await;
    assert_eq!(code, 200);
    let (code, b) = create("b").await;
    assert_eq!(code, 201, "{b}");
    assert_eq!(
        resources(&b),
        json!({"requests": {"cpu": "150m", "memory": "64Mi"}, "limits": {"cpu": "300m", "memory": "64Mi"}})
    );
    assert_eq!(
        b["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"
    );

    // A quota made now counts a and b; c's charge may still be in memory
    // when the quota is edited.
    let quota = "/api/v1/namespaces/edits/resourcequotas/pods";
    let (code, _) = http
        .post(
            "/api/v1/namespaces/edits/resourcequotas",
            &json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "pods"},
                "spec": {"hard": {"pods": "3", "requests.cpu": "10"}}}),
        )
        .await;
    assert_eq!(code, 201);
    let (code, c) = create("c").await;
    assert_eq!(code, 201, "{c}");
    let (code, refused) = create("refused").await;
    assert_eq!(code, 403, "{refused}");
    let (code, _) = http
        .merge_patch(quota, &json!({"spec": {"hard": {"pods": "4"}}}))
        .await;
    assert_eq!(code, 200);
    let (code, d) = create("d").await;
    assert_eq!(code, 201, "the raised quota admits the next pod: {d}");
    let (code, e) = create("e").await;
    assert_eq!(code, 403);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("exceeded quota: pods, requested: pods=1, used: pods=4, limited: pods=4"),
        "{e}"
    );
    let (_, q) = http.get(quota).await;
    assert_eq!(q["status"]["used"]["pods"], "4");
    assert_eq!(q["status"]["used"]["requests.cpu"], "550m");
    let (code, _) = http.delete(quota).await;
    assert_eq!(code, 200);
    let (code, e) = create("e").await;
    assert_eq!(code, 201, "no quota, no limit: {e}");

    let (code, _) = http.delete(range).await;
    assert_eq!(code, 200);
    let (code, f) = create("f").await;
    assert_eq!(code, 201, "{f}");
    assert_eq!(resources(&f), json!({}));
    assert!(
        f["metadata"]["annotations"]
            .get("kubernetes.io/limit-ranger")
            .is_none(),
        "{f}"
    );
}

/// Concurrent creates leave their charges in memory and write each quota
/// once for many of them: a watcher of quotas, with no read to flush them,
/// still sees `status.used` follow to the exact count, in revisions that
/// only go up; and a client reading the quota once its creates were
/// answered finds all of them counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_quota_watcher_sees_used_follow_concurrent_creates() {
    let dir = tempfile::tempdir().unwrap();
    let k = Kube::with(windlass_apiserver::Config::new().data_dir(dir.path().into())).await;
    let http = common::Http::new(k.server.addr());
    let (code, _) = http
        .post(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "watched"}}),
        )
        .await;
    assert_eq!(code, 201);
    let (code, q) = http
        .post(
            "/api/v1/namespaces/watched/resourcequotas",
            &json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "count"},
                "spec": {"hard": {"pods": "100", "requests.cpu": "100"}}}),
        )
        .await;
    assert_eq!(code, 201, "{q}");
    let rv = q["metadata"]["resourceVersion"].as_str().unwrap();
    let mut events = http
        .watch(&format!(
            "/api/v1/namespaces/watched/resourcequotas?watch=true&resourceVersion={rv}"
        ))
        .await
        .expect("watch opens");
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let http = http.clone();
            tokio::spawn(async move {
                let body: Value = serde_json::from_str(&pod(
                    &format!("p{i}"),
                    json!({"requests": {"cpu": "250m"}}),
                ))
                .unwrap();
                http.post("/api/v1/namespaces/watched/pods", &body).await.0
            })
        })
        .collect();
    for t in tasks {
        assert_eq!(t.await.unwrap(), 201);
    }
    let mut last_rv = 0;
    let mut used = Value::Null;
    while used != json!({"pods": "40", "requests.cpu": "10"}) {
        let e = events
            .next(std::time::Duration::from_secs(10))
            .await
            .unwrap_or_else(|| panic!("no event after used {used}"));
        assert_eq!(e["type"], "MODIFIED", "{e}");
        let rv = common::rv_of(&e["object"]);
        assert!(rv > last_rv, "revisions only go up: {rv} after {last_rv}");
        last_rv = rv;
        used = e["object"]["status"]["used"].clone();
    }
    let (_, q) = http
        .get("/api/v1/namespaces/watched/resourcequotas/count")
        .await;
    assert_eq!(q["status"]["used"], used);
}
