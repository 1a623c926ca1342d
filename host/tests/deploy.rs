//! `deploy/kubernetes` as an operator uses it: rendered by the real
//! `kubectl kustomize`, taken by an API server (the embedded one) in a
//! server-side dry run, and holding what a cluster expects of a controller:
//! leader election, probes on the admin port, a locked-down pod, the
//! plugins and the cache on volumes, flags the binary really has.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use windlass_tests::{Cluster, Server};

fn deploy(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/kubernetes")
        .join(dir)
}

/// `kubectl kustomize DIR`: the YAML and its documents.
fn render(dir: &Path) -> (String, Vec<Value>) {
    let out = Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl is installed");
    assert!(
        out.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let yaml = String::from_utf8(out.stdout).unwrap();
    let docs = serde_yaml_ng::Deserializer::from_str(&yaml)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    (yaml, docs)
}

fn find<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in the rendered manifests"))
}

#[test]
fn the_kustomize_base_renders_and_passes_a_server_side_dry_run() {
    let (yaml, docs) = render(&deploy("base"));
    for d in docs.iter().filter(|d| {
        d["kind"] != "Namespace" && d["kind"] != "ClusterRole" && d["kind"] != "ClusterRoleBinding"
    }) {
        assert_eq!(d["metadata"]["namespace"], "windlass", "{}", d["metadata"]);
    }
    find(&docs, "Namespace", "windlass");
    find(&docs, "ServiceAccount", "windlass");
    find(&docs, "ConfigMap", "windlass-plugins");

    let deployment = find(&docs, "Deployment", "windlass");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "windlass");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "localhost/windlass:0.1.0");
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert!(container["resources"]["requests"]["memory"].is_string());
    assert!(container["resources"]["limits"]["memory"].is_string());
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["livenessProbe"]["httpGet"]["port"], "admin");
    assert_eq!(container["ports"][0]["containerPort"], 9464);

    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(args.contains(&"--leader-elect"), "{args:?}");
    assert!(args.contains(&"--admin=0.0.0.0:9464"), "{args:?}");
    // The plugins from the ConfigMap, the cache under the emptyDir.
    let mount = |name: &str| -> String {
        container["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap()["mountPath"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let volume = |name: &str| {
        pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(volume("plugins")["configMap"]["name"], "windlass-plugins");
    assert!(volume("cache")["emptyDir"].is_object());
    assert!(
        args.contains(&format!("--plugins={}", mount("plugins")).as_str()),
        "{args:?}"
    );
    let cache = args
        .iter()
        .find_map(|a| a.strip_prefix("--cache-dir="))
        .expect("--cache-dir");
    assert!(
        cache.starts_with(&format!("{}/", mount("cache"))),
        "the cache is a directory the host creates under the volume, not the volume's (world-writable) root: {cache}"
    );

    // Every flag is one the binary has (clap refuses unknown ones before --help).
    let out = Command::new(env!("CARGO_BIN_EXE_windlass"))
        .args(&args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "windlass {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );

    // The host's own RBAC: discovery, and its Lease in its namespace only.
    let discovery = find(&docs, "ClusterRole", "windlass-discovery");
    assert!(
        discovery["rules"][0]["nonResourceURLs"]
            .as_array()
            .unwrap()
            .contains(&"/apis/*".into())
    );
    let election = find(&docs, "Role", "windlass-leader-election");
    assert!(election["rules"].to_string().contains("leases"));
    for binding in ["windlass-discovery", "windlass-leader-election"] {
        let b = docs
            .iter()
            .find(|d| {
                d["kind"].as_str().unwrap().ends_with("Binding") && d["metadata"]["name"] == binding
            })
            .unwrap();
        assert_eq!(b["subjects"][0]["name"], "windlass");
        assert_eq!(b["subjects"][0]["namespace"], "windlass");
    }

    // A server takes every object, and a dry run stores none of them.
    let c = Cluster::start(env!("CARGO_BIN_EXE_windlass"), &[], Server::Embedded);
    // The namespace first: a dry run creates nothing for the rest to go in.
    c.ok(&["create", "namespace", "windlass"], None);
    let applied = c.ok(&["apply", "--dry-run=server", "-f", "-"], Some(&yaml));
    let lines: Vec<&str> = applied.lines().collect();
    assert_eq!(lines.len(), docs.len(), "{applied}");
    assert!(
        lines.iter().all(|l| l.ends_with("(server dry run)")),
        "{applied}"
    );
    assert!(
        c.items(&["deployments", "-n", "windlass"]).is_empty(),
        "a dry run stored a Deployment"
    );
    c.stop();
}

#[test]
fn the_image_volume_overlay_mounts_plugins_from_an_image() {
    let (yaml, docs) = render(&deploy("overlays/image-volume"));
    let deployment = find(&docs, "Deployment", "windlass");
    let volumes = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap();
    let plugins = volumes.iter().find(|v| v["name"] == "plugins").unwrap();
    assert_eq!(
        plugins["image"]["reference"], "localhost/windlass-plugins:0.1.0",
        "{plugins}"
    );
    assert!(plugins["configMap"].is_null(), "{plugins}");
    assert!(
        !docs.iter().any(|d| d["kind"] == "ConfigMap"),
        "the unused ConfigMap is dropped"
    );
    let c = Cluster::start(env!("CARGO_BIN_EXE_windlass"), &[], Server::Embedded);
    c.ok(&["create", "namespace", "windlass"], None);
    let applied = c.ok(&["apply", "--dry-run=server", "-f", "-"], Some(&yaml));
    assert!(
        applied.contains("deployment.apps/windlass created (server dry run)"),
        "{applied}"
    );
    c.stop();
}
