//! Table tests of `InterPodAffinity`, on small clusters filed by `index`.

use super::*;
use crate::testutil::{TestCluster, node_json, pod_json_in, with_pod};

type Labels<'a> = &'a [(&'a str, &'a str)];
/// A bound pod: node, labels, spec (without `nodeName`), namespace.
type Bound<'a> = (&'a str, Labels<'a>, &'a str, &'a str);

/// n1, n2 in zone a; n3, n4 in zone b; n5 without a zone; then `pods` as
/// (node, labels, spec without nodeName, namespace).
fn cluster(pods: &[Bound<'_>]) -> TestCluster {
    let mut c = TestCluster::new();
    for (name, zone) in [
        ("n1", Some("a")),
        ("n2", Some("a")),
        ("n3", Some("b")),
        ("n4", Some("b")),
        ("n5", None),
    ] {
        let mut labels = vec![("kubernetes.io/hostname", name)];
        if let Some(z) = zone {
            labels.push(("zone", z));
        }
        c.add(&node_json(name, "4", "8Gi", "110", &labels, &[]));
    }
    for (i, (node, labels, spec, ns)) in pods.iter().enumerate() {
        let mut v: serde_json::Value = serde_json::from_str(spec).unwrap();
        v["nodeName"] = (*node).into();
        c.add(&pod_json_in(ns, &format!("p{i}"), labels, &v.to_string()));
    }
    c
}

fn term(kind: &str, key: &str, app: &str, extra: &str) -> String {
    format!(
        r#"{{"affinity":{{"{kind}":{{"requiredDuringSchedulingIgnoredDuringExecution":[
            {{"labelSelector":{{"matchLabels":{{"app":"{app}"}}}},"topologyKey":"{key}"{extra}}}]}}}}}}"#
    )
}

fn filter_all(c: &TestCluster, labels: &[(&str, &str)], spec: &str) -> Vec<Option<Reason>> {
    with_pod("new", labels, spec, |pod| {
        c.with_snapshot(pod, |snap| {
            let state = FilterState::new(pod, snap);
            snap.nodes.iter().map(|n| state.filter(pod, n)).collect()
        })
    })
}

const WEB: &[(&str, &str)] = &[("app", "web")];
const DB: &[(&str, &str)] = &[("app", "db")];
const OK: Option<Reason> = None;
const AFF: Option<Reason> = Some(Reason::Affinity);
const ANTI: Option<Reason> = Some(Reason::AntiAffinity);
const EXISTING: Option<Reason> = Some(Reason::ExistingAntiAffinity);
const HOST: &str = "kubernetes.io/hostname";

#[test]
fn required_terms_filter_by_topology() {
    // (bound pods, incoming labels, incoming spec, verdicts for n1..n5)
    type Row<'a> = (
        Vec<(&'a str, Labels<'a>, String, &'a str)>,
        Labels<'a>,
        String,
        [Option<Reason>; 5],
    );
    let plain = || "{}".to_owned();
    let table: Vec<Row<'_>> = vec![
        // Anti-affinity by hostname: only the node with a web pod.
        (vec![("n1", WEB, plain(), "default")], WEB, term("podAntiAffinity", HOST, "web", ""), [ANTI, OK, OK, OK, OK]),
        // By zone: the whole zone; a node without the key is fine.
        (vec![("n1", WEB, plain(), "default")], WEB, term("podAntiAffinity", "zone", "web", ""), [ANTI, ANTI, OK, OK, OK]),
        // Pods of another namespace are not selected…
        (vec![("n1", WEB, plain(), "other")], WEB, term("podAntiAffinity", HOST, "web", ""), [OK, OK, OK, OK, OK]),
        // …unless the term names it, or every namespace.
        (
            vec![("n1", WEB, plain(), "other")],
            WEB,
            term("podAntiAffinity", HOST, "web", r#","namespaces":["other"]"#),
            [ANTI, OK, OK, OK, OK],
        ),
        (
            vec![("n1", WEB, plain(), "other")],
            WEB,
            term("podAntiAffinity", HOST, "web", r#","namespaceSelector":{}"#),
            [ANTI, OK, OK, OK, OK],
        ),
        (
            vec![("n1", WEB, plain(), "other")],
            WEB,
            term(
                "podAntiAffinity",
                HOST,
                "web",
                r#","namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"other"}}"#,
            ),
            [ANTI, OK, OK, OK, OK],
        ),
        // Affinity to db pods by zone: only zone b has one; n5 lacks the key.
        (vec![("n3", DB, plain(), "default")], WEB, term("podAffinity", "zone", "db", ""), [AFF, AFF, OK, OK, AFF]),
        // No db pod anywhere and the pod is no db: nowhere.
        (vec![], WEB, term("podAffinity", "zone", "db", ""), [AFF, AFF, AFF, AFF, AFF]),
        // No db pod anywhere but the pod is one: the first of its group goes
        // anywhere with the key.
        (vec![], DB, term("podAffinity", "zone", "db", ""), [OK, OK, OK, OK, AFF]),
        // Existing pods' anti-affinity keeps the pod away from them.
        (
            vec![("n1", DB, term("podAntiAffinity", HOST, "web", ""), "default")],
            WEB,
            plain(),
            [EXISTING, OK, OK, OK, OK],
        ),
        (
            vec![("n1", DB, term("podAntiAffinity", "zone", "web", ""), "default")],
            WEB,
            plain(),
            [EXISTING, EXISTING, OK, OK, OK],
        ),
        // …only if it selects the pod, in its namespace.
        (
            vec![("n1", DB, term("podAntiAffinity", HOST, "web", ""), "default")],
            DB,
            plain(),
            [OK, OK, OK, OK, OK],
        ),
        (
            vec![("n1", DB, term("podAntiAffinity", HOST, "web", ""), "other")],
            WEB,
            plain(),
            [OK, OK, OK, OK, OK],
        ),
        // Affinity is checked before anti-affinity.
        (
            vec![("n1", WEB, plain(), "default"), ("n3", DB, plain(), "default")],
            WEB,
            r#"{"affinity":{
                "podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
                    {"labelSelector":{"matchLabels":{"app":"db"}},"topologyKey":"zone"}]},
                "podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
                    {"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}]}}}"#
                .to_owned(),
            [AFF, AFF, OK, OK, AFF],
        ),
    ];
    for (pods, labels, spec, want) in &table {
        let pods: Vec<Bound<'_>> = pods
            .iter()
            .map(|(n, l, s, ns)| (*n, *l, s.as_str(), *ns))
            .collect();
        let c = cluster(&pods);
        assert_eq!(
            filter_all(&c, labels, spec),
            want.to_vec(),
            "{pods:?} {spec}"
        );
    }
}

fn scores(c: &TestCluster, labels: &[(&str, &str)], spec: &str) -> Option<Vec<i64>> {
    with_pod("new", labels, spec, |pod| {
        c.with_snapshot(pod, |snap| {
            let state = ScoreState::new(pod, snap)?;
            let mut s: Vec<i64> = snap.nodes.iter().map(|n| state.score(n)).collect();
            ScoreState::normalize(&mut s);
            Some(s)
        })
    })
}

fn preferred(kind: &str, weight: i32, app: &str) -> String {
    format!(
        r#"{{"affinity":{{"{kind}":{{"preferredDuringSchedulingIgnoredDuringExecution":[
            {{"weight":{weight},"podAffinityTerm":{{"labelSelector":{{"matchLabels":{{"app":"{app}"}}}},
              "topologyKey":"zone"}}}}]}}}}}}"#
    )
}

#[test]
fn preferred_terms_score_domains() {
    let db_in_b = [("n3", DB, "{}", "default")];
    // (bound pods, incoming labels, spec, scores for n1..n5)
    type Row<'a> = (&'a [Bound<'a>], Labels<'a>, String, Option<Vec<i64>>);
    let table: Vec<Row<'_>> = vec![
        // Preferred affinity to db: zone b.
        (
            &db_in_b,
            WEB,
            preferred("podAffinity", 5, "db"),
            Some(vec![0, 0, 100, 100, 0]),
        ),
        // Preferred anti-affinity to db: anywhere but zone b.
        (
            &db_in_b,
            WEB,
            preferred("podAntiAffinity", 5, "db"),
            Some(vec![100, 100, 0, 0, 100]),
        ),
        // Nothing matches: skipped.
        (&db_in_b, WEB, preferred("podAffinity", 5, "cache"), None),
        (&db_in_b, WEB, "{}".to_owned(), None),
    ];
    for (pods, labels, spec, want) in &table {
        let c = cluster(pods);
        assert_eq!(scores(&c, labels, spec), *want, "{spec}");
    }
}

#[test]
fn existing_pods_terms_score_the_incoming_pod() {
    // A db pod on n3 that prefers web pods in its zone, and one on n1 that
    // requires them (weight 1).
    let prefers = preferred("podAffinity", 4, "web");
    let requires = term("podAffinity", "zone", "web", "");
    let c = cluster(&[
        ("n3", DB, &prefers, "default"),
        ("n1", DB, &requires, "default"),
    ]);
    // Zone b: 4, zone a: 1 → (s - 0) / 4.
    assert_eq!(scores(&c, WEB, "{}"), Some(vec![25, 25, 100, 100, 0]));
    // Their preferred anti-affinity pushes it away.
    let avoids = preferred("podAntiAffinity", 2, "web");
    let c = cluster(&[("n3", DB, &avoids, "default")]);
    assert_eq!(scores(&c, WEB, "{}"), Some(vec![100, 100, 0, 0, 100]));
    // Pods they do not select are not affected.
    assert_eq!(scores(&c, DB, "{}"), None);
}
