//! Native tests of the PersistentVolume binder, through
//! `windlass_sdk::testing`.

use std::cmp::Ordering;

use serde_json::{Value, json};
use windlass_sdk::testing::Harness;
use windlass_sdk::{Event, Object, ObjectRef, Outcome, Time, Write};

use super::{PROVISIONER, PersistentVolumeController};
use crate::matching::best_match;
use windlass_selector::Quantity;

type H = Harness<PersistentVolumeController>;

fn now() -> Time {
    Time::parse("2026-03-01T10:00:00Z").unwrap()
}

fn obj(value: Value) -> Object {
    Object::from_value(value).unwrap()
}

/// `base` with the fields of `extra` set at their dotted paths.
fn with(mut o: Object, extra: Value) -> Object {
    for (path, v) in extra.as_object().unwrap() {
        o.set(path, v.clone());
    }
    o
}

/// A pending claim `shop/<name>` (uid `uid-<name>`) for 5Gi, RWO.
fn claim(name: &str, extra: Value) -> Object {
    let c = obj(json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
                     "resourceVersion": "1"},
        "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                 "resources": {"requests": {"storage": "5Gi"}}},
        "status": {"phase": "Pending"}
    }));
    with(c, extra)
}

/// An `Available` volume of `size`, RWO, with no class.
fn volume(name: &str, size: &str, extra: Value) -> Object {
    let v = obj(json!({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "1"},
        "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/tmp"}},
        "status": {"phase": "Available"}
    }));
    with(v, extra)
}

fn class(name: &str, provisioner: &str, extra: Value) -> Object {
    let c = obj(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": name}, "provisioner": provisioner
    }));
    with(c, extra)
}

fn key(name: &str) -> ObjectRef {
    ObjectRef::new("v1", "PersistentVolumeClaim", "shop", name)
}

fn pv_ref(name: &str) -> ObjectRef {
    ObjectRef::cluster("v1", "PersistentVolume", name)
}

fn harness(objects: Vec<Object>) -> H {
    let mut h = H::new().with_now(now());
    for o in objects {
        h.insert(o);
    }
    h
}

/// Reconciles `key` once and applies what it asked for.
fn step(h: &mut H, key: &ObjectRef) -> Outcome {
    let out = h.reconcile_key(key).unwrap();
    h.apply_outcome(key, &out).unwrap();
    out
}

/// Steps until a reconcile writes nothing (at most 5 times).
fn converge(h: &mut H, key: &ObjectRef) -> Vec<Event> {
    let mut events = Vec::new();
    for _ in 0..5 {
        let out = step(h, key);
        events.extend(out.events.clone());
        if out.writes.is_empty() {
            return events;
        }
    }
    panic!("{key} did not settle");
}

/// Each write as `<verb> <name>`: the order of an outcome at a glance.
fn writes(out: &Outcome) -> Vec<String> {
    out.writes
        .iter()
        .map(|w| {
            let verb = match w {
                Write::Apply(_) => "create",
                Write::MergePatch {
                    subresource: Some(_),
                    ..
                } => "status",
                Write::MergePatch { .. } => "patch",
                Write::Delete { .. } => "delete",
                _ => "other",
            };
            let t = w.target();
            let kind = if t.kind == "PersistentVolume" {
                "pv"
            } else {
                "pvc"
            };
            format!("{verb} {kind}/{}", t.name)
        })
        .collect()
}

fn reasons(events: &[Event]) -> Vec<&str> {
    events.iter().map(|e| e.reason.as_str()).collect()
}

fn live_claim(h: &H, name: &str) -> Object {
    h.get(&key(name)).unwrap()
}

fn live_volume(h: &H, name: &str) -> Option<Object> {
    h.get(&pv_ref(name))
}

#[test]
fn quantities_compare_exactly() {
    use Ordering::{Equal, Greater, Less};
    let cases = [
        ("1Gi", "1073741824", Equal),
        ("1.5Gi", "1536Mi", Equal),
        ("0.5Gi", "500Mi", Greater),
        ("1G", "1Gi", Less),
        ("1e3", "1k", Equal),
        ("1E3", "1000", Equal),
        ("1E", "1e18", Equal),
        ("1Ei", "1E", Greater),
        ("100m", "0.1", Equal),
        ("999m", "1", Less),
        ("+5", "5", Equal),
        ("-1", "0", Less),
        ("-2Gi", "-1Gi", Less),
        ("2Ti", "2000G", Greater),
        (".5", "500m", Equal),
        ("1.", "1", Equal),
        ("1e20", "8Ei", Greater),
        ("0", "0Gi", Equal),
    ];
    for (a, b, want) in cases {
        let (qa, qb) = (Quantity::parse(a).unwrap(), Quantity::parse(b).unwrap());
        assert_eq!(qa.cmp(&qb), want, "{a} vs {b}");
        assert_eq!(qb.cmp(&qa), want.reverse(), "{b} vs {a}");
    }
    for bad in ["", "1.2.3", "1Ki3", "1 Gi", "1x", "1e", "1e+", "--1", "1gi"] {
        assert!(Quantity::parse(bad).is_err(), "{bad:?} parsed");
    }
    // No digits read as 0, as Go's parser (and the API server) reads them.
    for zero in ["Gi", ".", "e3"] {
        assert!(Quantity::parse(zero).is_ok_and(|q| q.is_zero()), "{zero:?}");
    }
}

#[test]
fn static_binding_picks_the_smallest_volume_that_fits() {
    let fast = json!({"metadata.labels": {"tier": "fast", "zone": "a"}});
    // (what, claim fields, volumes, the one chosen)
    let cases: Vec<(&str, Value, Vec<Object>, Option<&str>)> = vec![
        (
            "smallest of those big enough",
            json!({}),
            vec![
                volume("a-1g", "1Gi", json!({})),
                volume("b-10g", "10Gi", json!({})),
                volume("c-8g", "8Gi", json!({})),
                volume("d-5g", "5120Mi", json!({})),
            ],
            Some("d-5g"),
        ),
        (
            "the class must be the claim's",
            json!({"spec.storageClassName": "gold"}),
            vec![
                volume("a-none", "6Gi", json!({})),
                volume(
                    "b-silver",
                    "6Gi",
                    json!({"spec.storageClassName": "silver"}),
                ),
                volume("c-gold", "9Gi", json!({"spec.storageClassName": "gold"})),
            ],
            Some("c-gold"),
        ),
        (
            "every access mode the claim asks for",
            json!({"spec.accessModes": ["ReadWriteMany"]}),
            vec![
                volume("a-rwo", "6Gi", json!({})),
                volume(
                    "b-both",
                    "9Gi",
                    json!({"spec.accessModes": ["ReadWriteOnce", "ReadWriteMany"]}),
                ),
            ],
            Some("b-both"),
        ),
        (
            "fewer access modes first, as upstream's index",
            json!({}),
            vec![
                volume(
                    "a-two",
                    "5Gi",
                    json!({"spec.accessModes": ["ReadWriteOnce", "ReadOnlyMany"]}),
                ),
                volume("b-one", "8Gi", json!({})),
            ],
            Some("b-one"),
        ),
        (
            "the same volume mode",
            json!({"spec.volumeMode": "Block"}),
            vec![
                volume("a-fs", "6Gi", json!({})),
                volume("b-block", "7Gi", json!({"spec.volumeMode": "Block"})),
            ],
            Some("b-block"),
        ),
        (
            "picked by the selector",
            json!({"spec.selector": {"matchLabels": {"tier": "fast"},
                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}),
            vec![
                volume(
                    "a-slow",
                    "6Gi",
                    json!({"metadata.labels": {"tier": "slow", "zone": "a"}}),
                ),
                volume(
                    "b-zone-b",
                    "6Gi",
                    json!({"metadata.labels": {"tier": "fast", "zone": "b"}}),
                ),
                volume("c-fast", "9Gi", fast.clone()),
            ],
            Some("c-fast"),
        ),
        (
            "only Available volumes with no claimRef, not being deleted",
            json!({}),
            vec![
                volume("a-pending", "6Gi", json!({"status.phase": "Pending"})),
                volume("b-released", "6Gi", json!({"status.phase": "Released"})),
                volume(
                    "c-taken",
                    "6Gi",
                    json!({"spec.claimRef": {"namespace": "shop", "name": "other"}}),
                ),
                volume(
                    "d-going",
                    "6Gi",
                    json!({"metadata.deletionTimestamp": "2026-03-01T09:00:00Z"}),
                ),
            ],
            None,
        ),
        (
            "a volume pre-bound to the claim wins",
            json!({}),
            vec![
                volume("a-free", "6Gi", json!({})),
                volume(
                    "b-mine",
                    "50Gi",
                    json!({"status.phase": "Pending", "spec.storageClassName": "x",
                    "spec.claimRef": {"namespace": "shop", "name": "data", "uid": "uid-data"}}),
                ),
            ],
            Some("b-mine"),
        ),
        (
            "pre-bound by name only wins too",
            json!({}),
            vec![
                volume("a-free", "6Gi", json!({})),
                volume(
                    "b-mine",
                    "50Gi",
                    json!({"spec.claimRef": {"namespace": "shop", "name": "data"}}),
                ),
            ],
            Some("b-mine"),
        ),
        (
            "not when it names an earlier claim of that name",
            json!({}),
            vec![volume(
                "a-old",
                "6Gi",
                json!({"spec.claimRef":
                {"namespace": "shop", "name": "data", "uid": "uid-before"}}),
            )],
            None,
        ),
    ];
    for (what, fields, volumes, want) in cases {
        let c = claim("data", fields);
        let got = best_match(&c, &volumes, false).unwrap().map(Object::name);
        assert_eq!(got, want, "{what}");
    }
}

#[test]
fn wait_for_first_consumer_binds_statically_only_on_the_selected_node() {
    let pinned = |node: &str| {
        json!({"spec.storageClassName": "local", "spec.nodeAffinity": {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}})
    };
    let volumes = vec![
        volume("a-on-n1", "6Gi", pinned("n1")),
        volume("b-on-n2", "9Gi", pinned("n2")),
    ];
    let waiting = claim("data", json!({"spec.storageClassName": "local"}));
    assert_eq!(best_match(&waiting, &volumes, true).unwrap(), None);
    // Immediate binding does not look at nodes.
    let got = best_match(&waiting, &volumes, false)
        .unwrap()
        .map(Object::name);
    assert_eq!(got, Some("a-on-n1"));
    let on = |node: &str| {
        let c = with(
            waiting.clone(),
            json!({"metadata.annotations": {"volume.kubernetes.io/selected-node": node}}),
        );
        best_match(&c, &volumes, true)
            .unwrap()
            .map(|v| v.name().to_owned())
    };
    assert_eq!(on("n2").as_deref(), Some("b-on-n2"));
    assert_eq!(on("n3"), None);
}

#[test]
fn wait_for_first_consumer_waits_then_provisions_on_the_selected_node() {
    let wffc = class(
        "local",
        PROVISIONER,
        json!({"volumeBindingMode": "WaitForFirstConsumer"}),
    );
    let mut h = harness(vec![
        wffc,
        claim("data", json!({"spec.storageClassName": "local"})),
    ]);
    let out = step(&mut h, &key("data"));
    assert_eq!(reasons(&out.events), ["WaitForFirstConsumer"]);
    assert_eq!(
        out.events[0].message,
        "waiting for first consumer to be created before binding"
    );
    assert!(h.list("v1", "PersistentVolume").is_empty());
    // The same state again: said again (the host counts the repeats),
    // nothing written.
    let again = h.reconcile_key(&key("data")).unwrap();
    assert!(again.writes.is_empty(), "{again:?}");
    assert_eq!(reasons(&again.events), ["WaitForFirstConsumer"]);

    // The scheduler picks a node for the claim's pod.
    let mut c = live_claim(&h, "data");
    c.value_mut()["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] =
        json!("node-1");
    h.insert(c);
    let out = step(&mut h, &key("data"));
    assert_eq!(writes(&out), ["patch pvc/data", "create pv/pvc-uid-data"]);
    assert_eq!(
        reasons(&out.events),
        ["Provisioning", "ProvisioningSucceeded"]
    );
    let pv = live_volume(&h, "pvc-uid-data").unwrap();
    assert_eq!(
        pv.get("spec.nodeAffinity").unwrap(),
        &json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}]}})
    );
    converge(&mut h, &key("data"));
    assert_eq!(
        live_claim(&h, "data").get_str("status.phase"),
        Some("Bound")
    );
}

#[test]
fn immediate_provisions_at_once_then_binds() {
    let gold = class(
        "gold",
        PROVISIONER,
        json!({"reclaimPolicy": "Retain", "mountOptions": ["noatime"]}),
    );
    let mut h = harness(vec![
        gold,
        claim("data", json!({"spec.storageClassName": "gold"})),
    ]);
    let out = step(&mut h, &key("data"));
    assert_eq!(writes(&out), ["patch pvc/data", "create pv/pvc-uid-data"]);
    let messages: Vec<&str> = out.events.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "External provisioner is provisioning volume for claim \"shop/data\"",
            "Successfully provisioned volume pvc-uid-data",
        ]
    );
    let c = live_claim(&h, "data");
    for a in [
        "volume.kubernetes.io/storage-provisioner",
        "volume.beta.kubernetes.io/storage-provisioner",
    ] {
        assert_eq!(c.annotation(a), Some(PROVISIONER), "{a}");
    }
    let pv = live_volume(&h, "pvc-uid-data").unwrap();
    assert_eq!(
        pv.annotation("pv.kubernetes.io/provisioned-by"),
        Some(PROVISIONER)
    );
    assert_eq!(pv.get("metadata.labels"), None);
    assert_eq!(
        pv.get("spec").unwrap(),
        &json!({
            "capacity": {"storage": "5Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "gold",
            "volumeMode": "Filesystem",
            "mountOptions": ["noatime"],
            "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "namespace": "shop",
                         "name": "data", "uid": "uid-data", "resourceVersion": "1"},
            "hostPath": {"path": "/var/lib/windlass/volumes/pvc-uid-data_shop_data",
                         "type": "DirectoryOrCreate"},
        })
    );

    // The new volume wakes the claim, which binds to it.
    assert_eq!(h.map(&pv).unwrap(), [key("data")]);
    let out = step(&mut h, &key("data"));
    assert_eq!(
        writes(&out),
        [
            "status pv/pvc-uid-data",
            "patch pvc/data",
            "status pvc/data"
        ]
    );
    let c = live_claim(&h, "data");
    assert_eq!(c.get_str("spec.volumeName"), Some("pvc-uid-data"));
    assert_eq!(
        c.get("status").unwrap(),
        &json!({"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "5Gi"}})
    );
    let pv = live_volume(&h, "pvc-uid-data").unwrap();
    assert_eq!(pv.get_str("status.phase"), Some("Bound"));
    assert_eq!(pv.annotation("pv.kubernetes.io/bound-by-controller"), None);
    assert!(h.reconcile_key(&key("data")).unwrap().is_empty());
}

#[test]
fn binding_writes_the_volume_then_the_claim() {
    let mut h = harness(vec![
        claim("data", json!({})),
        volume("pv-1", "10Gi", json!({})),
    ]);
    let out = step(&mut h, &key("data"));
    assert_eq!(
        writes(&out),
        [
            "patch pv/pv-1",
            "status pv/pv-1",
            "patch pvc/data",
            "status pvc/data"
        ]
    );
    assert!(out.events.is_empty());
    let pv = live_volume(&h, "pv-1").unwrap();
    assert_eq!(pv.get_str("spec.claimRef.uid"), Some("uid-data"));
    assert_eq!(
        pv.annotation("pv.kubernetes.io/bound-by-controller"),
        Some("yes")
    );
    assert_eq!(pv.get_str("status.phase"), Some("Bound"));
    assert_eq!(
        pv.get_str("status.lastPhaseTransitionTime"),
        Some("2026-03-01T10:00:00Z")
    );
    let c = live_claim(&h, "data");
    assert_eq!(c.get_str("spec.volumeName"), Some("pv-1"));
    assert_eq!(
        c.annotation("pv.kubernetes.io/bound-by-controller"),
        Some("yes")
    );
    assert_eq!(c.annotation("pv.kubernetes.io/bind-completed"), Some("yes"));
    assert_eq!(c.get("status.capacity"), Some(&json!({"storage": "10Gi"})));
    assert!(h.reconcile_key(&key("data")).unwrap().is_empty());
}

#[test]
fn a_volume_the_user_pre_bound_is_not_marked_as_the_controllers() {
    let mine = json!({"spec.claimRef": {"namespace": "shop", "name": "data"}});
    let mut h = harness(vec![claim("data", json!({})), volume("pv-1", "10Gi", mine)]);
    converge(&mut h, &key("data"));
    let pv = live_volume(&h, "pv-1").unwrap();
    assert_eq!(pv.get_str("spec.claimRef.uid"), Some("uid-data"));
    assert_eq!(pv.annotation("pv.kubernetes.io/bound-by-controller"), None);
    // The claim did not name the volume: the controller did.
    let c = live_claim(&h, "data");
    assert_eq!(
        c.annotation("pv.kubernetes.io/bound-by-controller"),
        Some("yes")
    );

    // A claim that names its volume is bound to it, not by the controller.
    let mut h = harness(vec![
        claim("data", json!({"spec.volumeName": "pv-1"})),
        volume("pv-1", "10Gi", json!({})),
    ]);
    converge(&mut h, &key("data"));
    let c = live_claim(&h, "data");
    assert_eq!(c.get_str("status.phase"), Some("Bound"));
    assert_eq!(c.annotation("pv.kubernetes.io/bound-by-controller"), None);
    assert_eq!(
        live_volume(&h, "pv-1")
            .unwrap()
            .annotation("pv.kubernetes.io/bound-by-controller"),
        Some("yes")
    );
}

#[test]
fn a_gone_claim_releases_its_volume_and_deletes_only_ours_with_delete() {
    let mut h = harness(vec![
        class("fast", PROVISIONER, json!({})),
        class("kept", PROVISIONER, json!({"reclaimPolicy": "Retain"})),
        claim("scratch", json!({"spec.storageClassName": "fast"})),
        claim("data", json!({"spec.storageClassName": "kept"})),
        claim("manual", json!({})),
        volume(
            "pv-manual",
            "5Gi",
            json!({"spec.persistentVolumeReclaimPolicy": "Delete"}),
        ),
    ]);
    for name in ["scratch", "data", "manual"] {
        converge(&mut h, &key(name));
        assert_eq!(live_claim(&h, name).get_str("status.phase"), Some("Bound"));
        h.remove(&key(name));
    }

    let out = step(&mut h, &key("scratch"));
    assert_eq!(
        writes(&out),
        ["status pv/pvc-uid-scratch", "delete pv/pvc-uid-scratch"]
    );
    assert!(live_volume(&h, "pvc-uid-scratch").is_none());

    for (name, pv) in [("data", "pvc-uid-data"), ("manual", "pv-manual")] {
        let out = step(&mut h, &key(name));
        assert_eq!(writes(&out), [format!("status pv/{pv}")], "{name}");
        let v = live_volume(&h, pv).unwrap();
        assert_eq!(v.get_str("status.phase"), Some("Released"), "{name}");
        assert!(h.reconcile_key(&key(name)).unwrap().is_empty(), "{name}");
    }
}

#[test]
fn a_claim_made_again_under_the_same_name_does_not_get_the_old_volume() {
    let mut h = harness(vec![
        class("fast", PROVISIONER, json!({})),
        claim("data", json!({"spec.storageClassName": "fast"})),
    ]);
    converge(&mut h, &key("data"));
    // Deleted and created again before the plugin saw the deletion.
    h.insert(claim(
        "data",
        json!({"spec.storageClassName": "fast", "metadata.uid": "uid-again"}),
    ));
    let out = step(&mut h, &key("data"));
    assert_eq!(
        writes(&out),
        [
            "patch pvc/data",
            "create pv/pvc-uid-again",
            "status pv/pvc-uid-data",
            "delete pv/pvc-uid-data"
        ]
    );
    converge(&mut h, &key("data"));
    let c = live_claim(&h, "data");
    assert_eq!(c.get_str("spec.volumeName"), Some("pvc-uid-again"));
}

#[test]
fn a_bound_claim_whose_volume_is_gone_is_lost_once() {
    let mut h = harness(vec![
        claim("data", json!({})),
        volume("pv-1", "5Gi", json!({})),
    ]);
    converge(&mut h, &key("data"));
    h.remove(&pv_ref("pv-1"));
    let out = step(&mut h, &key("data"));
    assert_eq!(reasons(&out.events), ["ClaimLost"]);
    assert_eq!(
        out.events[0].message,
        "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
    );
    assert_eq!(live_claim(&h, "data").get_str("status.phase"), Some("Lost"));
    assert!(h.reconcile_key(&key("data")).unwrap().is_empty());
}

#[test]
fn pending_claims_say_why() {
    let external = "ebs.csi.aws.com";
    // (claim's class, classes there, the event)
    let cases = [
        (
            None,
            vec![],
            "Normal FailedBinding: no persistent volumes available for this claim and no storage class is set".to_owned(),
        ),
        (
            Some("gold"),
            vec![],
            "Warning ProvisioningFailed: storageclass.storage.k8s.io \"gold\" not found".to_owned(),
        ),
        (
            Some("local"),
            vec![class("local", "kubernetes.io/no-provisioner", json!({}))],
            "Warning ProvisioningFailed: no volume plugin matched name: kubernetes.io/no-provisioner".to_owned(),
        ),
        (
            Some("ebs"),
            vec![class("ebs", external, json!({}))],
            format!(
                "Normal ExternalProvisioning: Waiting for a volume to be created either by the \
                 external provisioner '{external}' or manually by the system administrator. If \
                 volume creation is delayed, please verify that the provisioner is running and \
                 correctly registered."
            ),
        ),
    ];
    for (class_name, classes, want) in cases {
        let fields = class_name.map_or(json!({}), |c| json!({"spec.storageClassName": c}));
        let mut objects = classes;
        objects.push(claim("data", fields));
        let mut h = harness(objects);
        let out = step(&mut h, &key("data"));
        let said: Vec<String> = out
            .events
            .iter()
            .map(|e| format!("{:?} {}: {}", e.type_, e.reason, e.message))
            .collect();
        assert_eq!(said, std::slice::from_ref(&want));
        // Said again while it waits (the host counts the repeats), with
        // nothing written.
        let again = h.reconcile_key(&key("data")).unwrap();
        assert!(again.writes.is_empty(), "{want}: {again:?}");
        assert_eq!(again.events.len(), 1, "{want}");
        assert!(h.list("v1", "PersistentVolume").is_empty(), "{want}");
        assert_eq!(
            live_claim(&h, "data").get_str("status.phase"),
            Some("Pending")
        );
    }
}

#[test]
fn a_foreign_provisioners_claim_is_announced_to_it_and_gets_no_volume() {
    let mut h = harness(vec![
        class("ebs", "ebs.csi.aws.com", json!({})),
        claim("data", json!({"spec.storageClassName": "ebs"})),
    ]);
    let out = step(&mut h, &key("data"));
    assert_eq!(reasons(&out.events), ["ExternalProvisioning"]);
    let c = live_claim(&h, "data");
    assert_eq!(
        c.annotation("volume.kubernetes.io/storage-provisioner"),
        Some("ebs.csi.aws.com")
    );
    assert!(h.list("v1", "PersistentVolume").is_empty());

    // Its provisioner makes the volume, pre-bound: the binder binds it.
    let made = volume(
        "pvc-uid-data",
        "5Gi",
        json!({"spec.storageClassName": "ebs", "status.phase": "Pending",
            "spec.claimRef": {"namespace": "shop", "name": "data", "uid": "uid-data"},
            "metadata.annotations": {"pv.kubernetes.io/provisioned-by": "ebs.csi.aws.com"}}),
    );
    h.insert(made);
    assert!(converge(&mut h, &key("data")).is_empty());
    let c = live_claim(&h, "data");
    assert_eq!(c.get_str("status.phase"), Some("Bound"));
    // Gone, its volume is released and left to that provisioner.
    h.remove(&key("data"));
    let out = step(&mut h, &key("data"));
    assert_eq!(writes(&out), ["status pv/pvc-uid-data"]);
}

#[test]
fn changes_of_volumes_and_classes_wake_the_claims_they_concern() {
    let h = harness(vec![
        claim("a", json!({"spec.storageClassName": "gold"})),
        claim("b", json!({})),
        claim(
            "c",
            json!({"spec.storageClassName": "gold", "spec.volumeName": "x"}),
        ),
    ]);
    let named = volume(
        "pv-1",
        "1Gi",
        json!({"spec.claimRef": {"namespace": "shop", "name": "b"}}),
    );
    assert_eq!(h.map(&named).unwrap(), [key("b")]);
    let gold = volume("pv-2", "1Gi", json!({"spec.storageClassName": "gold"}));
    assert_eq!(h.map(&gold).unwrap(), [key("a")]);
    let fresh = volume("pv-3", "1Gi", json!({"status.phase": "Pending"}));
    assert_eq!(
        h.map(&fresh).unwrap(),
        [ObjectRef::new(
            "v1",
            "PersistentVolumeClaim",
            "default",
            "pv-3"
        )]
    );
    assert_eq!(
        h.map(&class("gold", PROVISIONER, json!({}))).unwrap(),
        [key("a")]
    );
}

#[test]
fn an_unclaimed_volume_becomes_available() {
    let mut h = harness(vec![volume(
        "pv-1",
        "1Gi",
        json!({"status.phase": "Pending"}),
    )]);
    let k = ObjectRef::new("v1", "PersistentVolumeClaim", "default", "pv-1");
    let out = step(&mut h, &k);
    assert_eq!(writes(&out), ["status pv/pv-1"]);
    let pv = live_volume(&h, "pv-1").unwrap();
    assert_eq!(pv.get_str("status.phase"), Some("Available"));
    assert!(h.reconcile_key(&k).unwrap().is_empty());
    // Nothing done under other keys.
    assert!(h.reconcile_key(&key("pv-1")).unwrap().is_empty());
}

/// A pod with a generic ephemeral volume in `shop`.
fn pod_with_ephemeral(name: &str) -> Object {
    obj(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}")},
        "spec": {"containers": [{"name": "c", "image": "busybox"}],
                 "volumes": [
                    {"name": "cache", "emptyDir": {}},
                    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                        "metadata": {"labels": {"type": "scratch"}},
                        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                                 "resources": {"requests": {"storage": "1Gi"}}}}}}]}
    }))
}

#[test]
fn a_pods_ephemeral_volume_gets_a_claim_the_pod_owns() {
    let mut h = harness(vec![pod_with_ephemeral("web")]);
    let pod = h.get(&ObjectRef::new("v1", "Pod", "shop", "web")).unwrap();
    assert_eq!(h.map(&pod).unwrap(), [key("web-scratch")]);

    let out = h.reconcile_key(&key("web-scratch")).unwrap();
    let [Write::Apply(made)] = &out.writes[..] else {
        panic!("one claim made: {out:?}");
    };
    assert_eq!(made.name(), "web-scratch");
    assert_eq!(made.namespace(), Some("shop"));
    assert_eq!(made.label("type"), Some("scratch"));
    assert_eq!(made.get_str("spec.storageClassName"), Some("fast"));
    let owner = made.controller_ref().expect("owned by the pod");
    assert_eq!(
        (owner.kind, owner.name, owner.uid),
        ("Pod", "web", "uid-web")
    );
    h.apply_outcome(&key("web-scratch"), &out).unwrap();
    assert!(h.get(&key("web-scratch")).is_some());

    // A key no pod needs makes nothing; a pod being deleted needs nothing.
    assert!(h.reconcile_key(&key("other-scratch")).unwrap().is_empty());
    let gone = with(
        pod,
        json!({"metadata.deletionTimestamp": "2026-03-01T10:00:00Z"}),
    );
    assert!(h.map(&gone).unwrap().is_empty());
}

// ---- storage object in use protection -------------------------------------

const CLAIM_FINALIZER: &str = "kubernetes.io/pvc-protection";
const VOLUME_FINALIZER: &str = "kubernetes.io/pv-protection";

/// `o` deleted (at `now`) and held by `finalizers`.
fn deleting(o: Object, finalizers: &[&str]) -> Object {
    with(
        o,
        json!({"metadata.deletionTimestamp": "2026-03-01T09:59:00Z",
               "metadata.finalizers": finalizers}),
    )
}

/// A pod `shop/<name>` on node-1, Running, mounting claim `claim`.
fn pod_using(name: &str, claim: &str, extra: Value) -> Object {
    let p = obj(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}")},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "db"}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]},
        "status": {"phase": "Running"}
    }));
    with(p, extra)
}

fn pod_ref(name: &str) -> ObjectRef {
    ObjectRef::new("v1", "Pod", "shop", name)
}

/// The finalizers each merge patch of `out` leaves, by object name.
fn finalizer_patches(out: &Outcome) -> Vec<(String, Value)> {
    out.writes
        .iter()
        .filter_map(|w| match w {
            Write::MergePatch {
                target,
                subresource: None,
                patch,
            } if patch["metadata"].get("finalizers").is_some() => {
                assert!(
                    patch["metadata"]["resourceVersion"].is_string(),
                    "a finalizer is taken off at the version read: {patch}"
                );
                Some((target.name.clone(), patch["metadata"]["finalizers"].clone()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_claim_being_deleted_keeps_its_finalizer_while_a_scheduled_pod_uses_it() {
    let held = deleting(
        claim("data", json!({})),
        &[CLAIM_FINALIZER, "example.com/keep"],
    );
    let mut h = harness(vec![held.clone(), pod_using("db", "data", json!({}))]);
    let out = h.reconcile_key(&key("data")).unwrap();
    assert!(out.is_empty(), "a Running pod holds it: {out:?}");

    // As upstream since it waits for the pod object to go (kubernetes
    // #65552): a pod that has finished may still have the volume mounted.
    for phase in ["Succeeded", "Failed"] {
        h.insert(pod_using("db", "data", json!({"status.phase": phase})));
        let out = h.reconcile_key(&key("data")).unwrap();
        assert!(out.is_empty(), "a {phase} pod still holds it: {out:?}");
    }
    // A pod being deleted (its grace period running) holds it too.
    h.insert(pod_using(
        "db",
        "data",
        json!({"metadata.deletionTimestamp": "2026-03-01T10:00:30Z",
               "metadata.deletionGracePeriodSeconds": 30}),
    ));
    assert!(h.reconcile_key(&key("data")).unwrap().is_empty());

    // Its pod deleted, the claim goes: only this finalizer is taken off.
    h.remove(&pod_ref("db"));
    let out = step(&mut h, &key("data"));
    assert_eq!(
        finalizer_patches(&out),
        [("data".to_owned(), json!(["example.com/keep"]))]
    );
    assert_eq!(writes(&out), ["patch pvc/data"]);
    let left: Vec<String> = live_claim(&h, "data")
        .finalizers()
        .map(str::to_owned)
        .collect();
    assert_eq!(left, ["example.com/keep"]);
    assert!(h.reconcile_key(&key("data")).unwrap().is_empty(), "done");
}

#[test]
fn pods_that_do_not_use_a_claim_do_not_hold_it() {
    let held = deleting(claim("data", json!({})), &[CLAIM_FINALIZER]);
    let other_ns = with(
        pod_using("elsewhere", "data", json!({})),
        json!({"metadata.namespace": "other"}),
    );
    let unscheduled = with(
        pod_using("waiting", "data", json!({"status.phase": "Pending"})),
        json!({"spec.nodeName": null}),
    );
    let h = harness(vec![
        held,
        other_ns,
        unscheduled,
        pod_using("web", "logs", json!({})),
    ]);
    let out = h.reconcile_key(&key("data")).unwrap();
    assert_eq!(finalizer_patches(&out), [("data".to_owned(), json!([]))]);
}

#[test]
fn a_claim_not_being_deleted_keeps_its_finalizer() {
    let mut h = harness(vec![
        with(
            claim("data", json!({})),
            json!({"metadata.finalizers": [CLAIM_FINALIZER]}),
        ),
        volume("pv-1", "5Gi", json!({})),
    ]);
    converge(&mut h, &key("data"));
    assert_eq!(
        live_claim(&h, "data").get_str("status.phase"),
        Some("Bound")
    );
    // No pod uses it, and nothing takes the finalizer off a live claim.
    let out = h.reconcile_key(&key("data")).unwrap();
    assert!(out.is_empty(), "{out:?}");
    assert!(live_claim(&h, "data").finalizers().eq([CLAIM_FINALIZER]));
    // Nor off a claim being deleted without it (someone took it off).
    h.insert(deleting(claim("gone", json!({})), &["example.com/keep"]));
    assert!(h.reconcile_key(&key("gone")).unwrap().is_empty());
}

#[test]
fn an_ephemeral_claim_is_held_by_its_own_pod_until_the_pod_shuts_down() {
    let scheduled = |extra: Value| {
        let running = json!({"spec.nodeName": "node-1", "status.phase": "Running"});
        with(with(pod_with_ephemeral("web"), running), extra)
    };
    let owned_by = |uid: &str| {
        deleting(
            claim(
                "web-scratch",
                json!({"metadata.ownerReferences": [{"apiVersion": "v1", "kind": "Pod",
                    "name": "web", "uid": uid, "controller": true}]}),
            ),
            &[CLAIM_FINALIZER],
        )
    };
    let mut h = harness(vec![owned_by("uid-web"), scheduled(json!({}))]);
    assert!(h.reconcile_key(&key("web-scratch")).unwrap().is_empty());

    // A claim of that name the pod does not control is not its volume.
    h.insert(owned_by("uid-someone-else"));
    let out = h.reconcile_key(&key("web-scratch")).unwrap();
    assert_eq!(finalizer_patches(&out).len(), 1, "{out:?}");

    // Its own claim, once the pod has shut down (deleted with grace 0).
    h.insert(owned_by("uid-web"));
    h.insert(scheduled(
        json!({"metadata.deletionTimestamp": "2026-03-01T10:00:00Z",
                             "metadata.deletionGracePeriodSeconds": 0}),
    ));
    let out = h.reconcile_key(&key("web-scratch")).unwrap();
    assert_eq!(
        finalizer_patches(&out),
        [("web-scratch".to_owned(), json!([]))]
    );
}

#[test]
fn a_pods_index_entry_and_map_follow_the_claims_it_uses() {
    let h = harness(vec![
        deleting(claim("data", json!({})), &[CLAIM_FINALIZER]),
        claim("logs", json!({})),
    ]);
    let pod = with(
        pod_using("db", "data", json!({})),
        json!({"spec.volumes": [
            {"name": "a", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "b", "persistentVolumeClaim": {"claimName": "logs"}},
            {"name": "c", "emptyDir": {}}]}),
    );
    let entry = h.index(&pod).expect("filed under its claims");
    assert_eq!(entry.keys, ["shop/data", "shop/logs"]);
    // The claim being deleted is requeued; the live one is not.
    assert_eq!(h.map(&pod).unwrap(), [key("data")]);
    // Its entry changes when it is scheduled (map runs only then).
    let pending = with(pod.clone(), json!({"spec.nodeName": null}));
    let pending_entry = h.index(&pending).unwrap();
    assert_eq!(pending_entry.keys, entry.keys);
    assert_ne!(pending_entry.summary, entry.summary);
    // A pod with no claims is filed nowhere.
    let plain = with(
        pod,
        json!({"spec.volumes": [{"name": "c", "emptyDir": {}}]}),
    );
    assert!(h.index(&plain).is_none());
}

#[test]
fn a_volume_being_deleted_keeps_its_finalizer_while_bound() {
    let mut h = harness(vec![
        class("kept", PROVISIONER, json!({"reclaimPolicy": "Retain"})),
        claim("data", json!({"spec.storageClassName": "kept"})),
    ]);
    converge(&mut h, &key("data"));
    let name = "pvc-uid-data";
    let pv = live_volume(&h, name).unwrap();
    assert_eq!(pv.get_str("status.phase"), Some("Bound"));
    // Not being deleted: nothing to take off.
    let pv = with(pv, json!({"metadata.finalizers": [VOLUME_FINALIZER]}));
    h.insert(pv.clone());
    assert!(h.reconcile_key(&key("data")).unwrap().is_empty());

    // Deleted while bound: it waits, and its change wakes its claim.
    let pv = deleting(pv, &[VOLUME_FINALIZER]);
    h.insert(pv.clone());
    assert_eq!(h.map(&pv).unwrap(), [key("data")]);
    assert!(h.reconcile_key(&key("data")).unwrap().is_empty());

    // Its claim goes: the volume is Released (not deleted again), then
    // the finalizer comes off.
    h.remove(&key("data"));
    let out = step(&mut h, &key("data"));
    assert_eq!(writes(&out), [format!("status pv/{name}")]);
    let out = step(&mut h, &key("data"));
    assert_eq!(finalizer_patches(&out), [(name.to_owned(), json!([]))]);
    assert!(live_volume(&h, name).unwrap().finalizers().next().is_none());
}

#[test]
fn a_deleted_claims_volume_is_deleted_then_let_go() {
    let mut h = harness(vec![
        class("fast", PROVISIONER, json!({})),
        claim("data", json!({"spec.storageClassName": "fast"})),
    ]);
    converge(&mut h, &key("data"));
    let name = "pvc-uid-data";
    let pv = with(
        live_volume(&h, name).unwrap(),
        json!({"metadata.finalizers": [VOLUME_FINALIZER]}),
    );
    h.insert(pv);
    h.remove(&key("data"));
    // Released and deleted (reclaim policy Delete) ...
    let out = h.reconcile_key(&key("data")).unwrap();
    assert_eq!(
        writes(&out),
        [format!("status pv/{name}"), format!("delete pv/{name}")]
    );
    // ... which the finalizer holds: once the plugin sees that, it lets go.
    let mut released = live_volume(&h, name).unwrap();
    released.set("status.phase", json!("Released"));
    h.insert(deleting(released, &[VOLUME_FINALIZER]));
    let out = h.reconcile_key(&key("data")).unwrap();
    assert_eq!(writes(&out), [format!("patch pv/{name}")]);
    assert_eq!(finalizer_patches(&out), [(name.to_owned(), json!([]))]);
}

#[test]
fn an_unclaimed_volume_being_deleted_is_let_go_under_its_own_key() {
    let pv = deleting(
        volume("pv-1", "1Gi", json!({"spec.storageClassName": "gold"})),
        &[VOLUME_FINALIZER],
    );
    let h = harness(vec![
        claim("a", json!({"spec.storageClassName": "gold"})),
        pv.clone(),
    ]);
    let own = ObjectRef::new("v1", "PersistentVolumeClaim", "default", "pv-1");
    // Not the unbound claims of its class: the key that lets it go.
    assert_eq!(h.map(&pv).unwrap(), std::slice::from_ref(&own));
    let out = h.reconcile_key(&own).unwrap();
    assert_eq!(finalizer_patches(&out), [("pv-1".to_owned(), json!([]))]);
    // A claim's key does not touch it.
    assert!(
        h.reconcile_key(&key("a"))
            .unwrap()
            .writes
            .iter()
            .all(|w| w.target().name != "pv-1")
    );
}

/// A claim made before its cluster had a default class is given the one
/// that appears (upstream's retroactive default class assignment), then
/// provisioned from it; a claim that asked for `""` is not, nor is one
/// when the only class is not the default. Of two defaults, the newest.
#[test]
fn a_default_class_made_later_is_given_to_claims_that_name_none() {
    let default = |name: &str, made: &str| {
        class(
            name,
            PROVISIONER,
            json!({"metadata.annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
                   "metadata.creationTimestamp": made}),
        )
    };
    let none = claim("none", json!({}));
    let empty = claim("empty", json!({"spec.storageClassName": ""}));
    let mut h = harness(vec![
        none.clone(),
        empty.clone(),
        class("slow", PROVISIONER, json!({})),
    ]);
    let events = converge(&mut h, &key("none"));
    assert_eq!(events[0].reason, "FailedBinding", "no default: {events:?}");
    let old = default("old", "2026-01-01T00:00:00Z");
    let new = default("new", "2026-02-01T00:00:00Z");
    h.insert(old.clone());
    h.insert(new.clone());
    // A default class wakes the claims with no class, and only those.
    assert_eq!(h.map(&new).unwrap(), [key("none")]);
    assert!(
        h.map(&class("slow", PROVISIONER, json!({})))
            .unwrap()
            .is_empty()
    );
    let out = step(&mut h, &key("none"));
    assert_eq!(writes(&out), ["patch pvc/none"]);
    assert_eq!(
        live_claim(&h, "none").get_str("spec.storageClassName"),
        Some("new")
    );
    converge(&mut h, &key("none"));
    assert_eq!(
        live_claim(&h, "none").get_str("status.phase"),
        Some("Bound")
    );
    converge(&mut h, &key("empty"));
    let empty = live_claim(&h, "empty");
    assert_eq!(empty.get_str("spec.storageClassName"), Some(""));
    assert_eq!(empty.get_str("status.phase"), Some("Pending"));
}
