//! Rollout arithmetic, as tables: surge and unavailability rounding, the
//! new ReplicaSet's next size, and proportional scaling.

use serde_json::json;
use windlass_sdk::Object;

use crate::model::{DESIRED_REPLICAS, Deployment, MAX_REPLICAS, ReplicaSet};
use crate::plan::Plan;
use crate::surge::{
    IntOrPercent, max_surge, max_unavailable, new_rs_new_replicas, resolve_fenceposts,
};

use super::t0;

fn iop(v: serde_json::Value) -> IntOrPercent {
    IntOrPercent::from_json(&v).unwrap()
}

/// A Deployment with these replicas and rolling-update parameters (or
/// Recreate when `strategy` is `None`).
fn dep(replicas: i64, strategy: Option<(serde_json::Value, serde_json::Value)>) -> Deployment {
    let strategy = match strategy {
        Some((surge, unavailable)) => json!({"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}),
        None => json!({"type": "Recreate"}),
    };
    let o = Object::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "dep-uid", "generation": 1},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}, "strategy": strategy,
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
    }))
    .unwrap();
    Deployment::read(&o).unwrap()
}

#[test]
fn int_or_percent_reads_ints_and_percentages() {
    assert_eq!(iop(json!(3)), IntOrPercent::Int(3));
    assert_eq!(iop(json!("25%")), IntOrPercent::Percent(25));
    assert!(IntOrPercent::from_json(&json!("3")).is_err());
    assert!(IntOrPercent::from_json(&json!("x%")).is_err());
    assert!(IntOrPercent::from_json(&json!(true)).is_err());
}

/// `ResolveFenceposts`: surge rounds up, unavailable rounds down, and when
/// both come to zero one pod may be unavailable (upstream's own table).
#[test]
fn fenceposts_round_as_upstream() {
    let table = [
        (json!("25%"), json!("25%"), 10, (3, 2)),
        (json!("25%"), json!("25%"), 4, (1, 1)),
        (json!("25%"), json!("25%"), 1, (1, 0)),
        (json!("25%"), json!("25%"), 3, (1, 0)),
        (json!("0%"), json!("1%"), 2, (0, 1)),
        (json!("0%"), json!("1%"), 1, (0, 1)),
        (json!("1%"), json!("25%"), 2, (1, 0)),
        (json!("1%"), json!("0%"), 1, (1, 0)),
        (json!(0), json!(0), 5, (0, 1)),
        (json!(3), json!(2), 10, (3, 2)),
        (json!("50%"), json!("50%"), 5, (3, 2)),
        (json!("100%"), json!(0), 3, (3, 0)),
        (json!("33%"), json!("33%"), 10, (4, 3)),
        (json!("10%"), json!("10%"), 0, (0, 1)),
    ];
    for (surge, unavailable, desired, want) in table {
        let got = resolve_fenceposts(iop(surge.clone()), iop(unavailable.clone()), desired);
        assert_eq!(
            got, want,
            "surge {surge}, unavailable {unavailable}, desired {desired}"
        );
    }
}

/// `MaxSurge` and `MaxUnavailable` of a Deployment: unavailability never
/// exceeds the replicas and is zero at zero replicas; Recreate has neither.
#[test]
fn max_surge_and_unavailable_of_a_deployment() {
    let table = [
        (3, Some((json!(1), json!(1))), 1, 1),
        (3, Some((json!(0), json!(10))), 0, 3),
        (0, Some((json!(1), json!(1))), 1, 0),
        (10, Some((json!("25%"), json!("25%"))), 3, 2),
        (4, None, 0, 0),
    ];
    for (replicas, strategy, surge, unavailable) in table {
        let d = dep(replicas, strategy.clone());
        assert_eq!(
            (max_surge(&d), max_unavailable(&d)),
            (surge, unavailable),
            "{replicas} {strategy:?}"
        );
    }
}

/// `NewRSNewReplicas`: the new ReplicaSet grows by what the surge leaves,
/// never past the replicas; Recreate takes all at once.
#[test]
fn new_replica_set_growth() {
    // (replicas, surge, pods in all ReplicaSets, new ReplicaSet's, want)
    let table = [
        (10, json!(3), 10, 0, 3),
        (10, json!(3), 13, 3, 3),
        (10, json!(3), 11, 3, 5),
        (10, json!(3), 5, 4, 10),
        (10, json!("25%"), 10, 0, 3),
        (3, json!(0), 3, 0, 0),
        (3, json!(0), 2, 0, 1),
        (3, json!(1), 4, 3, 3),
    ];
    for (replicas, surge, all, new, want) in table {
        let d = dep(replicas, Some((surge.clone(), json!(1))));
        assert_eq!(
            new_rs_new_replicas(&d, all, new),
            want,
            "{replicas} {surge} {all} {new}"
        );
    }
    let d = dep(4, None);
    assert_eq!(new_rs_new_replicas(&d, 9, 0), 4);
}

/// An owned ReplicaSet with `replicas`, its `max-replicas` annotation,
/// available pods and creation second.
fn rs(name: &str, replicas: i64, max: Option<i64>, available: i64, created: u32) -> ReplicaSet {
    let mut annotations = serde_json::Map::new();
    if let Some(m) = max {
        annotations.insert(MAX_REPLICAS.into(), m.to_string().into());
    }
    let o = Object::from_value(json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "creationTimestamp": format!("2026-01-01T00:00:{created:02}Z"), "annotations": annotations},
        "spec": {"replicas": replicas, "template": {"metadata": {"labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "c", "image": name}]}}},
        "status": {"replicas": replicas, "availableReplicas": available}
    }))
    .unwrap();
    ReplicaSet::read(&o).unwrap().unwrap()
}

/// Runs upstream's `scale` over `rss` (the last one the new ReplicaSet
/// when `with_new`) and returns their sizes and the events.
fn scale(d: &Deployment, rss: Vec<ReplicaSet>, with_new: bool) -> (Vec<i64>, Vec<String>) {
    let lookup = |_: &str| Ok(None);
    let n = rss.len();
    let mut plan = Plan::new(d, rss, t0(), None, &lookup);
    plan.scale(with_new.then(|| n - 1));
    let sizes = plan.rss.iter().map(|r| r.replicas).collect();
    let events = plan.events.iter().map(|e| e.message.clone()).collect();
    (sizes, events)
}

/// Scaling during a rollout spreads the change by each ReplicaSet's share
/// of the size it was sized for; leftovers of the rounding go to the
/// largest (upstream's `TestScale` cases, and the example of the
/// Deployment documentation: 10 → 15 with old at 8 and new at 5).
#[test]
fn proportional_scaling() {
    struct Case {
        name: &'static str,
        replicas: i64,
        surge: i64,
        unavailable: i64,
        rss: Vec<ReplicaSet>,
        with_new: bool,
        want: Vec<i64>,
    }
    let table = [
        Case {
            name: "documented example: 10 -> 15",
            replicas: 15,
            surge: 3,
            unavailable: 2,
            rss: vec![rs("old", 8, Some(13), 8, 0), rs("new", 5, Some(13), 0, 1)],
            with_new: true,
            want: vec![11, 7],
        },
        Case {
            name: "10 -> 5 during a rollout",
            replicas: 5,
            surge: 3,
            unavailable: 2,
            rss: vec![rs("old", 8, Some(13), 8, 0), rs("new", 5, Some(13), 0, 1)],
            with_new: true,
            want: vec![5, 3],
        },
        Case {
            name: "to zero",
            replicas: 0,
            surge: 3,
            unavailable: 2,
            rss: vec![rs("old", 8, Some(13), 8, 0), rs("new", 5, Some(13), 0, 1)],
            with_new: true,
            want: vec![0, 0],
        },
        Case {
            name: "one active ReplicaSet takes it all",
            replicas: 8,
            surge: 1,
            unavailable: 1,
            rss: vec![rs("old", 0, Some(6), 0, 0), rs("new", 5, Some(6), 5, 1)],
            with_new: true,
            want: vec![0, 8],
        },
        Case {
            name: "none active: the newest takes it all",
            replicas: 4,
            surge: 1,
            unavailable: 1,
            rss: vec![rs("a", 0, None, 0, 0), rs("b", 0, None, 0, 1)],
            with_new: false,
            want: vec![0, 4],
        },
        Case {
            name: "leftovers go to the largest, newest first when scaling up",
            replicas: 4,
            surge: 0,
            unavailable: 1,
            rss: vec![
                rs("a", 1, Some(3), 1, 0),
                rs("b", 1, Some(3), 1, 1),
                rs("c", 1, Some(3), 0, 2),
            ],
            with_new: true,
            want: vec![1, 1, 2],
        },
        Case {
            name: "oldest first when scaling down",
            replicas: 2,
            surge: 0,
            unavailable: 1,
            rss: vec![
                rs("a", 1, Some(3), 1, 0),
                rs("b", 1, Some(3), 1, 1),
                rs("c", 1, Some(3), 0, 2),
            ],
            with_new: true,
            want: vec![0, 1, 1],
        },
        Case {
            name: "no annotation: the Deployment's current replicas",
            replicas: 20,
            surge: 0,
            unavailable: 1,
            rss: vec![rs("old", 6, None, 6, 0), rs("new", 4, None, 0, 1)],
            with_new: true,
            want: vec![12, 8],
        },
    ];
    for case in table {
        let mut d = dep(
            case.replicas,
            Some((json!(case.surge), json!(case.unavailable))),
        );
        d.status.replicas = case.rss.iter().map(|r| r.replicas).sum();
        let (sizes, events) = scale(&d, case.rss, case.with_new);
        assert_eq!(sizes, case.want, "{}: {events:?}", case.name);
    }
}

/// The documented example, with its events and annotations.
#[test]
fn proportional_scaling_events_and_annotations() {
    let d = dep(15, Some((json!(3), json!(2))));
    let lookup = |_: &str| Ok(None);
    let rss = vec![
        rs("web-old", 8, Some(13), 8, 0),
        rs("web-new", 5, Some(13), 0, 1),
    ];
    let mut plan = Plan::new(&d, rss, t0(), None, &lookup);
    plan.scale(Some(1));
    let events: Vec<&str> = plan.events.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        events,
        [
            "Scaled up replica set web-old to 11 from 8",
            "Scaled up replica set web-new to 7 from 5"
        ]
    );
    for rs in &plan.rss {
        assert_eq!(rs.annotations[DESIRED_REPLICAS], "15");
        assert_eq!(rs.annotations[MAX_REPLICAS], "18");
    }
}

/// A saturated new ReplicaSet sends the old ones to zero.
#[test]
fn saturated_new_replica_set_scales_old_ones_to_zero() {
    let d = dep(3, Some((json!(1), json!(1))));
    let mut new = rs("new", 3, Some(4), 3, 1);
    new.annotations.insert(DESIRED_REPLICAS.into(), "3".into());
    let (sizes, events) = scale(&d, vec![rs("old", 1, Some(4), 1, 0), new], true);
    assert_eq!(sizes, [0, 3]);
    assert_eq!(events, ["Scaled down replica set old to 0 from 1"]);
}

/// One step of a rolling update from a given state (upstream's
/// `reconcileNewReplicaSet` and `reconcileOldReplicaSets` cases).
#[test]
fn rolling_steps() {
    // The new ReplicaSet runs the Deployment's template (image "i").
    let new = |replicas, available| {
        let mut r = rs("i", replicas, Some(13), available, 9);
        r.name = "web-new".into();
        r
    };
    let old = |replicas, available| rs("old", replicas, Some(13), available, 0);
    // (what, old, new (None: not created yet), sizes after: old, new)
    let table = [
        (
            "first step: surge up, and down by what may be unavailable",
            old(10, 10),
            None,
            (8, 3),
        ),
        (
            "new pods unavailable: nothing more may go",
            old(8, 8),
            Some(new(5, 0)),
            (8, 5),
        ),
        (
            "an unhealthy old pod is kept while new ones are unavailable",
            old(8, 7),
            Some(new(5, 0)),
            (8, 5),
        ),
        (
            "new pods available: unhealthy old pods go first, then more",
            old(8, 7),
            Some(new(5, 5)),
            (3, 5),
        ),
        (
            "room under the surge: the new one grows first",
            old(8, 8),
            Some(new(3, 0)),
            (8, 5),
        ),
        (
            "done: the new one holds everything",
            old(0, 0),
            Some(new(10, 10)),
            (0, 10),
        ),
    ];
    for (what, old, new, want) in table {
        let d = dep(10, Some((json!(3), json!(2))));
        let lookup = |_: &str| Ok(None);
        let rss: Vec<ReplicaSet> = std::iter::once(old).chain(new).collect();
        let mut plan = Plan::new(&d, rss, t0(), None, &lookup);
        assert!(plan.rollout_rolling().is_ok(), "{what}");
        let sizes = (plan.rss[0].replicas, plan.rss[1].replicas);
        assert_eq!(sizes, want, "{what}");
    }
}
