//! Unit tests of the RBAC rules derived from plugin manifests.

use super::*;
use crate::contract::{Grant, Watch};

fn manifest(name: &str, reconciles: Watch) -> Manifest {
    Manifest {
        name: name.into(),
        version: "0.1.0".into(),
        reconciles,
        owns: vec![],
        reads: vec![],
        writes: vec![],
        resync_seconds: None,
        finalizer: None,
        max_concurrency: 1,
    }
}

fn watch(api_version: &str, kind: &str) -> Watch {
    Watch::of(KindRef::new(api_version, kind))
}

fn in_ns(mut w: Watch, ns: &str) -> Watch {
    w.namespace = Some(ns.into());
    w
}

fn grant(api_version: &str, kind: &str, ns: Option<&str>, sub: Option<&str>) -> Grant {
    Grant {
        kind: KindRef::new(api_version, kind),
        namespace: ns.map(Into::into),
        subresource: sub.map(Into::into),
    }
}

/// `scope group resource verbs` per rule, for compact assertions.
fn summary(rules: &[Rule]) -> Vec<String> {
    rules
        .iter()
        .map(|r| {
            let scope = match &r.scope {
                Scope::Cluster => "*".to_owned(),
                Scope::Namespace(ns) => ns.clone(),
            };
            format!(
                "{scope} {:?} {} {}",
                r.api_group,
                r.resource,
                r.verbs.join(",")
            )
        })
        .collect()
}

fn derive(manifests: &[Manifest]) -> Vec<Rule> {
    rules(manifests, &builtin, OFFLINE_HINT).unwrap()
}

#[test]
fn a_replicaset_controller_reads_and_writes_its_kinds_and_nothing_else() {
    let mut m = manifest("replicaset", watch("apps/v1", "ReplicaSet"));
    m.owns.push(watch("v1", "Pod"));
    assert_eq!(
        summary(&derive(&[m])),
        [
            r#"* "" events create,patch"#,
            r#"* "" pods create,update,patch,delete"#,
            r#"* "" pods get,list,watch"#,
            r#"* "" pods/status update,patch"#,
            r#"* "apps" replicasets create,update,patch,delete"#,
            r#"* "apps" replicasets get,list,watch"#,
            r#"* "apps" replicasets/finalizers update"#,
            r#"* "apps" replicasets/status update,patch"#,
        ]
    );
}

#[test]
fn grants_name_their_subresources_and_nothing_more() {
    let mut m = manifest("scheduler", watch("v1", "Pod"));
    m.reads.push(watch("v1", "Node"));
    m.writes.push(grant("v1", "Pod", None, Some("binding")));
    m.writes
        .push(grant("apps/v1", "Deployment", None, Some("scale")));
    m.writes.push(grant("v1", "Node", None, Some("status")));
    let rules = summary(&derive(&[m]));
    assert!(
        rules.contains(&r#"* "" pods/binding create"#.to_owned()),
        "{rules:#?}"
    );
    assert!(
        rules.contains(&r#"* "apps" deployments/scale patch"#.to_owned()),
        "{rules:#?}"
    );
    assert!(
        rules.contains(&r#"* "" nodes/status update,patch"#.to_owned()),
        "{rules:#?}"
    );
    // The Node grant is of its status only; the Deployment one of its scale only.
    assert!(
        !rules.iter().any(|r| r.contains(" nodes create")),
        "{rules:#?}"
    );
    assert!(
        !rules.iter().any(|r| r.contains("deployments ")),
        "{rules:#?}"
    );
    // No owned kinds: no blockOwnerDeletion, no finalizers rule.
    assert!(
        !rules.iter().any(|r| r.contains("finalizers")),
        "{rules:#?}"
    );
}

#[test]
fn a_plugin_confined_to_a_namespace_gets_a_role_there() {
    let mut m = manifest("greeter", in_ns(watch("v1", "ConfigMap"), "team-a"));
    m.owns.push(in_ns(watch("v1", "Secret"), "team-a"));
    m.writes.push(grant(
        "coordination.k8s.io/v1",
        "Lease",
        Some("team-b"),
        None,
    ));
    let rules = derive(&[m]);
    assert!(
        rules.iter().all(|r| r.scope != Scope::Cluster),
        "{:#?}",
        summary(&rules)
    );
    assert_eq!(
        summary(&rules),
        [
            r#"team-a "" configmaps create,update,patch,delete"#,
            r#"team-a "" configmaps get,list,watch"#,
            r#"team-a "" configmaps/finalizers update"#,
            r#"team-a "" events create,patch"#,
            r#"team-a "" secrets create,update,patch,delete"#,
            r#"team-a "" secrets get,list,watch"#,
            r#"team-b "coordination.k8s.io" leases create,update,patch,delete"#,
        ]
    );
}

#[test]
fn cluster_scoped_kinds_are_cluster_wide_and_their_events_go_to_default() {
    let mut m = manifest("kubelet", in_ns(watch("v1", "Node"), "ignored"));
    m.reads.push(in_ns(watch("v1", "Pod"), "team-a"));
    let rules = summary(&derive(&[m]));
    assert!(
        rules.contains(&r#"* "" nodes get,list,watch"#.to_owned()),
        "{rules:#?}"
    );
    assert!(
        rules.contains(&r#"default "" events create,patch"#.to_owned()),
        "{rules:#?}"
    );
    assert!(
        rules.contains(&r#"team-a "" events create,patch"#.to_owned()),
        "{rules:#?}"
    );
    assert!(
        !rules.contains(&r#"* "" events create,patch"#.to_owned()),
        "{rules:#?}"
    );
}

#[test]
fn rules_several_plugins_share_are_merged_with_every_reason() {
    let mut deployment = manifest("deployment", watch("apps/v1", "Deployment"));
    deployment.owns.push(watch("apps/v1", "ReplicaSet"));
    let mut replicaset = manifest("replicaset", watch("apps/v1", "ReplicaSet"));
    replicaset.owns.push(watch("v1", "Pod"));
    let rules = derive(&[deployment, replicaset]);
    let read = rules
        .iter()
        .find(|r| r.resource == "replicasets" && r.verbs == READ)
        .unwrap();
    assert_eq!(
        read.reasons,
        [
            "deployment: owns apps/v1 ReplicaSet",
            "replicaset: reconciles apps/v1 ReplicaSet"
        ]
    );
    let events: Vec<&Rule> = rules.iter().filter(|r| r.resource == "events").collect();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].reasons.len(), 2);
}

#[test]
fn a_finalizer_is_written_through_the_reconciled_object() {
    let mut m = manifest("cleaner", watch("v1", "ConfigMap"));
    m.finalizer = Some("example.com/cleanup".into());
    let rules = derive(&[m]);
    let write = rules
        .iter()
        .find(|r| r.resource == "configmaps" && r.verbs == WRITE)
        .unwrap();
    assert!(
        write
            .reasons
            .contains(&"cleaner: adds and removes its finalizer example.com/cleanup".to_owned()),
        "{:?}",
        write.reasons
    );
    // ConfigMaps have no status subresource: nothing more than the object.
    let rules = summary(&rules);
    assert!(
        !rules.iter().any(|r| r.contains("configmaps/status")),
        "{rules:#?}"
    );
    // A grant of the status of a kind with no status subresource is a
    // patch of the object.
    let mut m = manifest("labeller", watch("v1", "Secret"));
    m.writes
        .push(grant("v1", "ConfigMap", None, Some("status")));
    let rules = summary(&derive(&[m]));
    assert!(
        rules.contains(&r#"* "" configmaps patch"#.to_owned()),
        "{rules:#?}"
    );
    assert!(
        !rules.iter().any(|r| r.contains("configmaps create")),
        "{rules:#?}"
    );
}

#[test]
fn unknown_kinds_are_named_with_their_plugins_and_nothing_is_derived() {
    let mut m = manifest("greeter", watch("example.com/v1", "Greeting"));
    m.owns.push(watch("v1", "ConfigMap"));
    m.reads.push(watch("example.com/v1", "Greeting"));
    let e = rules(&[m], &builtin, OFFLINE_HINT).unwrap_err();
    let text = e.to_string();
    assert!(
        text.starts_with("cannot tell which resource serves example.com/v1 Greeting (declared by greeter); the built-in table knows only"),
        "{text}"
    );
    assert!(text.contains("--kubeconfig"), "{text}");
    // A lookup that knows the kind (as a server would) resolves it.
    let lookup = |k: &KindRef| {
        builtin(k).or_else(|| {
            (k.kind == "Greeting")
                .then(|| resource("example.com/v1", "Greeting", "greetings", true, true))
        })
    };
    let mut m = manifest("greeter", watch("example.com/v1", "Greeting"));
    m.owns.push(watch("v1", "ConfigMap"));
    let rules = summary(&rules(&[m], &lookup, OFFLINE_HINT).unwrap());
    assert!(
        rules.contains(&r#"* "example.com" greetings/status update,patch"#.to_owned()),
        "{rules:#?}"
    );
    assert!(matches!(
        super::rules(&[], &builtin, OFFLINE_HINT),
        Err(RbacError::NoPlugins)
    ));
}

#[test]
fn the_builtin_table_reads_every_line() {
    let lines = BUILTIN.lines().filter(|l| !l.is_empty()).count();
    let parsed = BUILTIN
        .lines()
        .filter(|l| !l.is_empty())
        .filter(|l| {
            let mut parts = l.split(' ');
            let (av, kind) = (parts.next().unwrap(), parts.next().unwrap());
            builtin(&KindRef::new(av, kind)).is_some()
        })
        .count();
    assert_eq!(parsed, lines);
    let pod = builtin(&KindRef::new("v1", "Pod")).unwrap();
    assert!(pod.namespaced && pod.has_status && pod.plural == "pods");
    let node = builtin(&KindRef::new("v1", "Node")).unwrap();
    assert!(!node.namespaced);
    assert!(builtin(&KindRef::new("v2", "Pod")).is_none());
}

#[test]
fn renders_roles_and_bindings_with_a_comment_per_rule() {
    let mut m = manifest("kubelet", watch("v1", "Node"));
    m.writes.push(grant(
        "coordination.k8s.io/v1",
        "Lease",
        Some("kube-node-lease"),
        None,
    ));
    let rules = derive(std::slice::from_ref(&m));
    let binding = Binding::for_plugins(std::slice::from_ref(&m));
    let yaml = render(&[m], &rules, &binding);
    assert!(
        yaml.contains("kind: ClusterRole\nmetadata:\n  name: windlass-plugin-kubelet\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains(
            "kind: Role\nmetadata:\n  name: windlass-plugin-kubelet\n  namespace: kube-node-lease\n"
        ),
        "{yaml}"
    );
    assert!(
        yaml.contains("# kubelet: writes coordination.k8s.io/v1 Lease\n- apiGroups: [coordination.k8s.io]\n  resources: [leases]\n  verbs: [create, update, patch, delete]\n"),
        "{yaml}"
    );
    assert!(
        yaml.contains("- apiGroups: [\"\"]\n  resources: [nodes]\n"),
        "{yaml}"
    );
    assert_eq!(
        yaml.matches("kind: ClusterRoleBinding").count(),
        1,
        "{yaml}"
    );
    // A Role where its Leases are, and one in `default` for its events
    // about Nodes (cluster-scoped: client-go records those there).
    assert!(
        yaml.contains(
            "kind: Role\nmetadata:\n  name: windlass-plugin-kubelet\n  namespace: default\n"
        ),
        "{yaml}"
    );
    assert_eq!(yaml.matches("kind: RoleBinding").count(), 2, "{yaml}");
    assert!(
        yaml.contains(
            "subjects:\n- kind: ServiceAccount\n  name: windlass\n  namespace: windlass\n"
        ),
        "{yaml}"
    );
    // Every document parses as YAML, and each role has rules.
    let docs: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&yaml)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    assert_eq!(docs.len(), 6);
    for doc in docs
        .iter()
        .filter(|d| d["kind"].as_str().unwrap().ends_with("Role"))
    {
        assert!(!doc["rules"].as_array().unwrap().is_empty(), "{doc}");
    }
}
