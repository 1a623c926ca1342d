//! Rollouts followed round by round, with the real ReplicaSet controller
//! and a kubelet: a first rollout, rolling updates that never go below
//! `replicas - maxUnavailable` available pods, Recreate, rollback, history
//! cleanup, and scaling in quick succession.

use std::time::Duration;

use serde_json::json;
use windlass_sdk::Write;

use super::{ROLLING, World, deployment, event_messages, is_ready, key};
use crate::model::{DESIRED_REPLICAS, MAX_REPLICAS, REVISION, REVISION_HISTORY, TEMPLATE_HASH};
use crate::surge::IntOrPercent;

fn set_image(w: &mut World, image: &str) {
    w.edit(|d| d.set("spec.template.spec.containers.0.image", image));
}

#[test]
fn manifest_reconciles_deployments_and_owns_replica_sets() {
    let h = super::H::new();
    let m = h.manifest();
    assert_eq!(m.name, "deployment");
    assert!(m.reconciles.kind.is("apps/v1", "Deployment"));
    assert!(m.may_write("apps/v1", "ReplicaSet"));
    assert!(!m.may_read("v1", "Pod"));
}

/// A new Deployment gets one ReplicaSet named and labelled by its template's
/// hash, with the revision annotations, and settles complete.
#[test]
fn first_rollout_creates_one_replica_set() {
    let mut w = World::new(&deployment(3, ROLLING));
    let out = w.reconcile_deployment();
    assert!(matches!(out.writes.first(), Some(Write::Apply(_))));
    let created = w.replica_sets();
    assert_eq!(created.len(), 1);
    let rs = &created[0];
    let hash = rs.label(TEMPLATE_HASH).unwrap().to_owned();
    assert_eq!(rs.name(), format!("web-{hash}"));
    assert_eq!(
        rs.get_str("spec.selector.matchLabels.pod-template-hash"),
        Some(hash.as_str())
    );
    assert_eq!(rs.get_str("spec.selector.matchLabels.app"), Some("web"));
    assert_eq!(
        rs.get_str("spec.template.metadata.labels.pod-template-hash"),
        Some(hash.as_str())
    );
    assert_eq!(rs.get_i64("spec.replicas"), Some(3));
    assert_eq!(rs.annotation(REVISION), Some("1"));
    assert_eq!(rs.annotation(DESIRED_REPLICAS), Some("3"));
    assert_eq!(rs.annotation(MAX_REPLICAS), Some("4"));
    assert_eq!(rs.annotation("kubernetes.io/change-cause"), Some("first"));
    assert!(rs.is_controlled_by(&w.deployment()));
    assert_eq!(out.events[0].reason, "ScalingReplicaSet");
    assert_eq!(
        out.events[0].message,
        format!("Scaled up replica set web-{hash} to 3 from 0")
    );
    assert_eq!(w.deployment().annotation(REVISION), Some("1"));

    w.run(3, 10, |_| {});
    let d = w.deployment();
    assert_eq!(w.pods().len(), 3);
    for (field, want) in [
        ("replicas", 3),
        ("updatedReplicas", 3),
        ("readyReplicas", 3),
        ("availableReplicas", 3),
        ("observedGeneration", 1),
    ] {
        assert_eq!(d.get_i64(&format!("status.{field}")), Some(want), "{field}");
    }
    assert_eq!(d.get("status.unavailableReplicas"), None);
    // Settled: nothing to write, nothing to say.
    let out = w.dep.reconcile_key(&key()).unwrap();
    assert!(out.writes.is_empty() && out.events.is_empty(), "{out:?}");
    // The same template hashes the same on every reconcile.
    let again = w.reconcile_deployment();
    assert!(again.writes.is_empty());
    assert_eq!(w.replica_sets().len(), 1);
}

/// A rolling update, with pods becoming ready a few at a time, never has
/// fewer than `replicas - maxUnavailable` available pods nor more than
/// `replicas + maxSurge` pods planned, and ends with the new ReplicaSet
/// holding every replica and the old one at zero.
#[test]
fn rolling_update_keeps_availability() {
    // (replicas, maxSurge, maxUnavailable, pods ready per round)
    let table = [
        (3, json!(1), json!(1), 1),
        (3, json!(1), json!(0), 1),
        (3, json!(0), json!(1), 1),
        (10, json!("25%"), json!("25%"), 2),
        (10, json!("25%"), json!("25%"), 1),
        (5, json!(2), json!(0), 3),
        (4, json!("50%"), json!("0%"), 1),
        (1, json!(0), json!("100%"), 1),
        (7, json!("0%"), json!("10%"), 1),
    ];
    for (replicas, surge, unavailable, per_round) in table {
        let case = format!("{replicas} replicas, maxSurge {surge}, maxUnavailable {unavailable}");
        let strategy = format!(
            "{{type: RollingUpdate, rollingUpdate: {{maxSurge: {surge}, maxUnavailable: {unavailable}}}}}"
        );
        let mut w = World::new(&deployment(replicas, &strategy));
        w.run(replicas as usize, 20, |_| {});
        assert_eq!(w.available_pods(), replicas as usize, "{case}");

        let (max_surge, max_unavailable) = crate::surge::resolve_fenceposts(
            IntOrPercent::from_json(&surge).unwrap(),
            IntOrPercent::from_json(&unavailable).unwrap(),
            replicas,
        );
        let max_unavailable = max_unavailable.min(replicas);
        set_image(&mut w, "nginx:2");
        let mut lowest = usize::MAX;
        let mut highest_planned = 0;
        w.run(per_round, 200, |w| {
            lowest = lowest.min(w.available_pods());
            let planned: i64 = w.sizes().iter().map(|(_, n)| n).sum();
            highest_planned = highest_planned.max(planned);
        });
        assert!(
            lowest >= (replicas - max_unavailable) as usize,
            "{case}: {lowest} available at the lowest"
        );
        assert!(
            highest_planned <= replicas + max_surge,
            "{case}: {highest_planned} planned"
        );
        let new = w.replica_set_with("nginx:2").unwrap();
        let old = w.replica_set_with("nginx:1").unwrap();
        assert_eq!(new.get_i64("spec.replicas"), Some(replicas), "{case}");
        assert_eq!(old.get_i64("spec.replicas"), Some(0), "{case}");
        assert_eq!(new.annotation(REVISION), Some("2"), "{case}");
        assert_eq!(old.annotation(REVISION), Some("1"), "{case}");
        assert_eq!(w.deployment().annotation(REVISION), Some("2"), "{case}");
        let pods = w.pods();
        assert_eq!(pods.len(), replicas as usize, "{case}");
        assert!(
            pods.iter()
                .all(|p| p.get_str("spec.containers.0.image") == Some("nginx:2"))
        );
        let d = w.deployment();
        assert_eq!(
            d.get_i64("status.updatedReplicas"),
            Some(replicas),
            "{case}"
        );
        assert_eq!(
            d.get_i64("status.availableReplicas"),
            Some(replicas),
            "{case}"
        );
        assert_eq!(d.get_i64("status.observedGeneration"), Some(2), "{case}");
    }
}

/// With `minReadySeconds`, new pods count only once they have been ready
/// that long (the ReplicaSet's `availableReplicas`), and old pods are not
/// taken away before.
#[test]
fn min_ready_seconds_hold_back_the_rollout() {
    let text = deployment(
        3,
        "{type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}",
    )
    .replace("  replicas: 3\n", "  replicas: 3\n  minReadySeconds: 10\n");
    let mut w = World::new(&text);
    let min_ready = Duration::from_secs(10);
    w.run(3, 40, |_| {});
    assert_eq!(w.available_pods_after(min_ready), 3);
    assert_eq!(
        w.replica_sets()[0].get_i64("spec.minReadySeconds"),
        Some(10)
    );

    set_image(&mut w, "nginx:2");
    let mut lowest = usize::MAX;
    let rounds = w.run(3, 200, |w| {
        lowest = lowest.min(w.available_pods_after(min_ready))
    });
    assert!(lowest >= 3, "{lowest} available at the lowest");
    // Each new pod waits out its 10 seconds (one second a round).
    assert!(rounds > 30, "{rounds} rounds");
    assert_eq!(
        w.replica_set_with("nginx:2")
            .unwrap()
            .get_i64("spec.replicas"),
        Some(3)
    );
    assert_eq!(
        w.replica_set_with("nginx:1")
            .unwrap()
            .get_i64("spec.replicas"),
        Some(0)
    );
}

/// Recreate: the old ReplicaSet goes to zero first; the new one is only
/// created once no old pod is left, terminating ones included, and then at
/// full size.
#[test]
fn recreate_waits_for_old_pods_to_go() {
    let mut w = World::new(&deployment(3, "{type: Recreate}"));
    w.run(3, 10, |_| {});
    set_image(&mut w, "nginx:2");

    let out = w.reconcile_deployment();
    assert_eq!(
        w.replica_sets().len(),
        1,
        "no new ReplicaSet before the old pods go"
    );
    let old = w.replica_set_with("nginx:1").unwrap();
    assert_eq!(old.get_i64("spec.replicas"), Some(0));
    assert_eq!(
        out.events[0].message,
        format!("Scaled down replica set {} to 0 from 3", old.name())
    );
    // One old pod lingers, terminating (as during its grace period).
    let mut lingering = w.pods()[0].clone();
    w.reconcile_replica_sets();
    lingering.set("metadata.deletionTimestamp", "2026-03-01T12:00:05Z");
    w.rs.insert(lingering);
    w.reconcile_replica_sets();
    let old = w.replica_set_with("nginx:1").unwrap();
    assert_eq!(old.get_i64("status.replicas"), Some(0));
    assert_eq!(old.get_i64("status.terminatingReplicas"), Some(1));
    w.reconcile_deployment();
    assert_eq!(
        w.replica_sets().len(),
        1,
        "still waiting for the terminating pod"
    );

    // The pod goes; the new ReplicaSet is created at full size at once.
    w.kubelet(0);
    w.reconcile_replica_sets();
    let out = w.reconcile_deployment();
    let new = w.replica_set_with("nginx:2").unwrap();
    assert_eq!(new.get_i64("spec.replicas"), Some(3));
    assert_eq!(
        out.events[0].message,
        format!("Scaled up replica set {} to 3 from 0", new.name())
    );
    // Old and new pods never run together.
    w.run(1, 20, |w| {
        let images: std::collections::BTreeSet<_> = w
            .pods()
            .iter()
            .filter_map(|p| p.get_str("spec.containers.0.image").map(str::to_owned))
            .collect();
        assert!(images.len() <= 1, "{images:?}");
    });
    assert_eq!(w.available_pods(), 3);
    assert_eq!(w.deployment().get_i64("status.updatedReplicas"), Some(3));
}

/// `kubectl rollout undo` patches the old template (and its annotations)
/// back; the old ReplicaSet is the new one again, with a new revision and
/// the old one in its history, and no ReplicaSet is created.
#[test]
fn rollback_reuses_the_old_replica_set_with_a_new_revision() {
    let mut w = World::new(&deployment(3, ROLLING));
    w.run(3, 10, |_| {});
    let first = w.replica_sets()[0].name().to_owned();
    set_image(&mut w, "nginx:2");
    w.edit(|d| {
        d.set(
            "metadata.annotations",
            json!({"kubernetes.io/change-cause": "second"}),
        )
    });
    w.run(3, 20, |_| {});
    assert_eq!(w.replica_sets().len(), 2);

    // What kubectl does: the revision-1 template without the hash label,
    // and that ReplicaSet's annotations but the deployment.kubernetes.io ones.
    let rs1 = w
        .dep
        .get(&windlass_sdk::ObjectRef::new(
            "apps/v1",
            "ReplicaSet",
            "default",
            &first,
        ))
        .unwrap();
    let mut template = rs1.get("spec.template").unwrap().clone();
    template["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove(TEMPLATE_HASH);
    w.edit(|d| {
        d.set("spec.template", template);
        d.set(
            "metadata.annotations",
            json!({"kubernetes.io/change-cause": "first", REVISION: "2"}),
        );
    });
    w.run(3, 20, |_| {});

    assert_eq!(w.replica_sets().len(), 2, "no new ReplicaSet");
    let back = w.replica_set_with("nginx:1").unwrap();
    assert_eq!(back.name(), first);
    assert_eq!(back.get_i64("spec.replicas"), Some(3));
    assert_eq!(back.annotation(REVISION), Some("3"));
    assert_eq!(back.annotation(REVISION_HISTORY), Some("1"));
    let second = w.replica_set_with("nginx:2").unwrap();
    assert_eq!(second.get_i64("spec.replicas"), Some(0));
    assert_eq!(second.annotation(REVISION), Some("2"));
    assert_eq!(
        second.annotation("kubernetes.io/change-cause"),
        Some("second")
    );
    assert_eq!(w.deployment().annotation(REVISION), Some("3"));
    assert!(
        w.pods()
            .iter()
            .all(|p| p.get_str("spec.containers.0.image") == Some("nginx:1"))
    );
}

/// Old ReplicaSets beyond `revisionHistoryLimit` go once they have no pods,
/// lowest revision first, each deleted only if it is still the same object.
#[test]
fn history_beyond_the_limit_is_deleted() {
    let text =
        deployment(2, ROLLING).replace("revisionHistoryLimit: 10", "revisionHistoryLimit: 1");
    let mut w = World::new(&text);
    w.run(2, 10, |_| {});
    for image in ["nginx:2", "nginx:3"] {
        set_image(&mut w, image);
        w.run(2, 20, |_| {});
    }
    let mut images: Vec<String> = w
        .replica_sets()
        .iter()
        .map(|r| {
            r.get_str("spec.template.spec.containers.0.image")
                .unwrap()
                .to_owned()
        })
        .collect();
    images.sort();
    assert_eq!(images, ["nginx:2", "nginx:3"]);
    let deletes: Vec<_> = w
        .outcomes
        .iter()
        .flat_map(|o| &o.writes)
        .filter_map(|wr| match wr {
            Write::Delete { target, options } => Some((target.clone(), options.uid.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(deletes.len(), 1);
    assert!(
        deletes[0]
            .1
            .as_deref()
            .is_some_and(|u| u.starts_with("uid-")),
        "{deletes:?}"
    );
}

/// Level-triggered: replicas set 1 → 5 → 2 with no reconcile in between
/// end at exactly 2; and so they do when the 5 was acted on first.
#[test]
fn scaling_in_quick_succession_ends_at_the_last_value() {
    let mut w = World::new(&deployment(1, ROLLING));
    w.run(1, 10, |_| {});
    for n in [5, 2] {
        w.edit(|d| d.set("spec.replicas", n));
    }
    w.run(5, 20, |_| {});
    assert_eq!(w.pods().len(), 2);
    assert_eq!(w.replica_sets()[0].get_i64("spec.replicas"), Some(2));

    w.edit(|d| d.set("spec.replicas", 5));
    w.reconcile_deployment();
    w.reconcile_replica_sets();
    assert_eq!(w.pods().len(), 5);
    w.edit(|d| d.set("spec.replicas", 2));
    w.run(5, 20, |_| {});
    assert_eq!(w.pods().len(), 2);
    assert_eq!(w.replica_sets().len(), 1);
    let d = w.deployment();
    assert_eq!(d.get_i64("status.replicas"), Some(2));
    assert_eq!(d.get_i64("status.availableReplicas"), Some(2));
    let messages = event_messages(&w.outcomes);
    let rs = w.replica_sets()[0].name().to_owned();
    assert!(
        messages.contains(&format!("Scaled down replica set {rs} to 2 from 5")),
        "{messages:?}"
    );
}

/// Scaling up in the middle of a rollout whose new pods never become ready
/// spreads the new replicas over both ReplicaSets (the documented example).
#[test]
fn scaling_mid_rollout_is_proportional() {
    let strategy = "{type: RollingUpdate, rollingUpdate: {maxSurge: 3, maxUnavailable: 2}}";
    let mut w = World::new(&deployment(10, strategy));
    w.run(10, 10, |_| {});
    set_image(&mut w, "nginx:broken");
    for _ in 0..4 {
        w.reconcile_deployment();
        w.reconcile_replica_sets();
        w.kubelet(0);
        w.reconcile_replica_sets();
        w.advance(Duration::from_secs(1));
    }
    let old = || {
        w.replica_set_with("nginx:1")
            .unwrap()
            .get_i64("spec.replicas")
    };
    let new = || {
        w.replica_set_with("nginx:broken")
            .unwrap()
            .get_i64("spec.replicas")
    };
    assert_eq!((old(), new()), (Some(8), Some(5)));
    assert_eq!(w.available_pods(), 8);

    w.edit(|d| d.set("spec.replicas", 15));
    w.reconcile_deployment();
    let old = w.replica_set_with("nginx:1").unwrap();
    let new = w.replica_set_with("nginx:broken").unwrap();
    assert_eq!(old.get_i64("spec.replicas"), Some(11));
    assert_eq!(new.get_i64("spec.replicas"), Some(7));
    assert_eq!(new.annotation(DESIRED_REPLICAS), Some("15"));
    assert_eq!(new.annotation(MAX_REPLICAS), Some("18"));
    let ready_new = w
        .pods()
        .iter()
        .filter(|p| p.get_str("spec.containers.0.image") == Some("nginx:broken") && is_ready(p))
        .count();
    assert_eq!(ready_new, 0);
}

/// Scaled to zero and back: the same ReplicaSet goes to zero and comes back.
#[test]
fn scaling_to_zero_and_back() {
    let mut w = World::new(&deployment(3, ROLLING));
    w.run(3, 10, |_| {});
    w.edit(|d| d.set("spec.replicas", 0));
    w.run(3, 10, |_| {});
    assert!(w.pods().is_empty());
    assert_eq!(w.sizes().iter().map(|(_, n)| *n).collect::<Vec<_>>(), [0]);
    let d = w.deployment();
    assert_eq!(d.get_i64("status.replicas"), None);
    let available = d
        .get("status.conditions")
        .and_then(|c| c.as_array())
        .and_then(|c| c.iter().find(|c| c["type"] == "Available").cloned())
        .unwrap();
    assert_eq!(available["reason"], crate::conditions::MINIMUM_AVAILABLE);
    w.edit(|d| d.set("spec.replicas", 2));
    w.run(2, 10, |_| {});
    assert_eq!(w.available_pods(), 2);
    assert_eq!(w.replica_sets().len(), 1);
}
