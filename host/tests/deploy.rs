//! `deploy/kubernetes` as an operator uses it: rendered by the real
//! `kubectl kustomize`, taken by an API server (the embedded one) in a
//! server-side dry run, and holding what a cluster expects of a controller:
//! leader election, probes on the admin port, a locked-down pod, the
//! plugins and the cache on volumes, flags the binary really has; RBAC that
//! allows what the host itself does (its Lease) and what the shipped plugins
//! need (`overlays/example-plugins`), checked as a cluster's RBAC authorizer
//! would decide.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use windlass_tests::{Cluster, Server, free_port, http_get};

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

/// The plugins this repository ships, as `overlays/example-plugins` runs them.
const EXAMPLES: [&str; 15] = windlass_tests::EXAMPLE_PLUGINS;

/// `windlass plugin rbac` of built plugins.
fn plugin_rbac(plugins: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_windlass"))
        .args(["plugin", "rbac"])
        .args(plugins.iter().map(|p| windlass_tests::plugin(p)))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "plugin rbac {plugins:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Copies `from` into `to`, recursively.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `deploy/kubernetes` in a temporary directory with the built example
/// plugins copied into `overlays/example-plugins`, as its comment says.
fn example_overlay() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&deploy(""), &dir.path().join("kubernetes"));
    let overlay = dir.path().join("kubernetes/overlays/example-plugins");
    for p in EXAMPLES {
        std::fs::copy(windlass_tests::plugin(p), overlay.join(format!("{p}.wasm"))).unwrap();
    }
    (dir, overlay)
}

/// The RBAC the overlay binds to the host's ServiceAccount is exactly what
/// `windlass plugin rbac` derives for the shipped plugins (so it covers
/// every rule each plugin needs, which `plugin_rbac.rs` checks against
/// what each plugin really does).
#[test]
fn the_example_plugins_overlay_carries_exactly_their_generated_rbac() {
    let committed = std::fs::read_to_string(deploy("overlays/example-plugins/rbac.yaml")).unwrap();
    let generated = plugin_rbac(&EXAMPLES);
    assert!(
        committed == generated,
        "deploy/kubernetes/overlays/example-plugins/rbac.yaml is not what the plugins' manifests \
         ask for: regenerate it with\n  windlass plugin rbac target/plugins/{{deployment,replicaset,scheduler,kubelet,resourcequota,endpoints,job,daemonset,statefulset,cronjob,disruption,persistentvolume,horizontalpodautoscaler,nodelifecycle,podgc}}.wasm \
         > deploy/kubernetes/overlays/example-plugins/rbac.yaml\ngenerated:\n{generated}"
    );

    // And, rendered with the base, every rule each plugin needs on its own
    // is allowed to the ServiceAccount the Deployment runs as.
    let (_dir, overlay) = example_overlay();
    let (_, docs) = render(&overlay);
    let bound = |role: &Value| {
        let kind = role["kind"].as_str().unwrap();
        docs.iter().any(|b| {
            b["kind"] == format!("{kind}Binding").as_str()
                && b["roleRef"]["name"] == role["metadata"]["name"]
                && b["metadata"]["namespace"] == role["metadata"]["namespace"]
                && b["subjects"].as_array().unwrap().iter().any(|s| {
                    s["kind"] == "ServiceAccount"
                        && s["name"] == "windlass"
                        && s["namespace"] == "windlass"
                })
        })
    };
    let granted: Vec<Value> = docs
        .iter()
        .filter(|d| matches!(d["kind"].as_str(), Some("Role" | "ClusterRole")) && bound(d))
        .cloned()
        .collect();
    let roles = windlass_tests::authz::Role::from_documents(&granted);
    let deployment = find(&docs, "Deployment", "windlass");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["serviceAccountName"],
        "windlass"
    );
    for plugin in EXAMPLES {
        let yaml = plugin_rbac(&[plugin]);
        let needed: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&yaml)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        let mut checked = 0;
        for role in windlass_tests::authz::Role::from_documents(&needed) {
            // A ClusterRole's rule is checked in a namespace no Role names.
            let namespace = role.namespace.clone().unwrap_or_else(|| "shop".into());
            for rule in &role.rules {
                for resource in &rule.resources {
                    let (resource, subresource) = match resource.split_once('/') {
                        Some((r, s)) => (r.to_owned(), Some(s.to_owned())),
                        None => (resource.clone(), None),
                    };
                    for verb in &rule.verbs {
                        let request = windlass_tests::authz::Attributes::Resource {
                            verb: verb.clone(),
                            api_group: rule.api_groups[0].clone(),
                            namespace: Some(namespace.clone()),
                            resource: resource.clone(),
                            subresource: subresource.clone(),
                            name: Some("x".into()),
                        };
                        assert!(
                            windlass_tests::authz::allows(&roles, &request),
                            "{plugin} needs {request}, which the overlay does not grant windlass/windlass"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 10, "{plugin}: only {checked} permissions checked");
    }
}

/// The overlay as a cluster runs it: each plugin in a ConfigMap of its own
/// (together they are over the 1 MiB one holds), all mounted by one
/// projected volume; the API server takes it all in a server-side apply;
/// and the binary, started with the rendered container's arguments on the
/// files the kubelet would mount, loads every plugin, takes the Lease and
/// is ready.
#[test]
fn the_example_plugins_overlay_renders_applies_and_runs() {
    use base64::Engine;
    let (dir, overlay) = example_overlay();
    let (yaml, docs) = render(&overlay);
    let deployment = find(&docs, "Deployment", "windlass");
    let pod = &deployment["spec"]["template"]["spec"];
    let sources = pod["volumes"][0]["projected"]["sources"]
        .as_array()
        .unwrap();
    assert_eq!(pod["volumes"][0]["name"], "plugins", "{pod}");

    // What the kubelet would mount: every source ConfigMap's keys as files
    // in a timestamped directory behind `..data`, linked from the top.
    let plugins = dir.path().join("plugins");
    let data = plugins.join("..2026_01_01_00_00_00.000000001");
    std::fs::create_dir_all(&data).unwrap();
    let mut files = Vec::new();
    for source in sources {
        let name = source["configMap"]["name"].as_str().unwrap();
        let cm = find(&docs, "ConfigMap", name);
        assert_eq!(cm["metadata"]["namespace"], "windlass", "{name}");
        let binary = cm["binaryData"].as_object().cloned().unwrap_or_default();
        let mut size = 0;
        for (key, value) in binary {
            // kustomize wraps the text in lines; Go's decoder, like the
            // API server's, skips the line breaks.
            let text: String = value
                .as_str()
                .unwrap()
                .chars()
                .filter(|c| !matches!(c, '\n' | '\r'))
                .collect();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .unwrap();
            size += bytes.len();
            let plugin = key.strip_suffix(".wasm").expect("keys are NAME.wasm");
            assert_eq!(
                bytes,
                std::fs::read(windlass_tests::plugin(plugin)).unwrap(),
                "{name}/{key}"
            );
            std::fs::write(data.join(&key), bytes).unwrap();
            std::os::unix::fs::symlink(format!("..data/{key}"), plugins.join(&key)).unwrap();
            files.push(key);
        }
        // What the API server enforces for a ConfigMap (the embedded one does not).
        assert!(size <= 1 << 20, "{name} holds {size} bytes, over 1 MiB");
    }
    std::os::unix::fs::symlink(data.file_name().unwrap(), plugins.join("..data")).unwrap();
    files.sort();
    let mut want: Vec<String> = EXAMPLES.iter().map(|p| format!("{p}.wasm")).collect();
    want.sort();
    assert_eq!(files, want);

    // A server takes it all (server-side, as the overlay says to apply it).
    let c = Cluster::start(env!("CARGO_BIN_EXE_windlass"), &[], Server::Embedded);
    c.ok(&["create", "namespace", "windlass"], None);
    let applied = c.ok(
        &["apply", "--server-side", "--dry-run=server", "-f", "-"],
        Some(&yaml),
    );
    assert_eq!(applied.lines().count(), docs.len(), "{applied}");

    // The container's arguments, with its volumes' paths moved here and the
    // admin endpoint on a free loopback port.
    let container = &pod["containers"][0];
    let mounts = container["volumeMounts"].as_array().unwrap();
    let mount = |name: &str| {
        mounts.iter().find(|m| m["name"] == name).unwrap()["mountPath"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let cache = dir.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    let admin = free_port();
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let a = a.as_str().unwrap();
            if a.starts_with("--admin") {
                return format!("--admin=127.0.0.1:{admin}");
            }
            a.replace(&mount("plugins"), plugins.to_str().unwrap())
                .replace(&mount("cache"), cache.to_str().unwrap())
        })
        .collect();
    let log = dir.path().join("windlass.log");
    let mut host = Command::new(env!("CARGO_BIN_EXE_windlass"))
        .args(&args)
        .arg("--kubeconfig")
        .arg(c.kubeconfig())
        .env("RUST_LOG", "info")
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let loaded = loop {
        let rows: Option<Vec<Value>> = http_get(admin, "/plugins")
            .and_then(|(_, body)| serde_json::from_str(&body).ok())
            .filter(|rows: &Vec<Value>| {
                rows.len() == EXAMPLES.len() && rows.iter().all(|r| r["synced"] == true)
            });
        if let Some(rows) = rows {
            break rows;
        }
        let exited = host.try_wait().unwrap();
        if exited.is_some() || std::time::Instant::now() > deadline {
            let _ = host.kill();
            panic!(
                "the plugins did not load and sync ({exited:?}): {:?}\nlog:\n{}",
                http_get(admin, "/plugins"),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let mut names: Vec<&str> = loaded.iter().map(|r| r["name"].as_str().unwrap()).collect();
    names.sort();
    let mut want = EXAMPLES.to_vec();
    want.sort();
    assert_eq!(names, want);
    assert_eq!(http_get(admin, "/readyz").map(|r| r.0), Some(200));
    assert_eq!(http_get(admin, "/healthz").map(|r| r.0), Some(200));
    // Out of a cluster, the Lease goes to the default namespace.
    let lease = c.json(&["lease", "windlass", "-n", "default"]);
    assert!(lease["spec"]["holderIdentity"].is_string(), "{lease}");
    let _ = host.kill();
    let _ = host.wait();
    c.stop();
}

/// The base's RBAC for the host's own needs is what the host uses: every
/// request a leader-elected host with no plugins makes (acquiring,
/// renewing and, at SIGTERM, releasing its Lease) is allowed to
/// windlass/windlass by the rendered roles, as a cluster's RBAC
/// authorizer would decide — in the Lease's namespace only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_base_rbac_allows_what_the_host_itself_does() {
    use windlass_tests::authz::{self, Role};
    let server = windlass_apiserver::start(windlass_apiserver::Config::new().in_memory())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let direct = dir.path().join("direct.kubeconfig");
    std::fs::write(&direct, server.kubeconfig()).unwrap();
    let kubectl = |args: &[&str]| windlass_tests::kubectl_ok(&direct, args, None);
    kubectl(&["create", "namespace", "windlass"]);
    let recorder = windlass_tests::Recorder::start(server.addr()).await;
    let proxied = dir.path().join("proxied.kubeconfig");
    std::fs::write(
        &proxied,
        recorder.kubeconfig(&server.kubeconfig(), server.addr()),
    )
    .unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let mut host = Command::new(env!("CARGO_BIN_EXE_windlass"))
        .arg("run")
        .arg("--kubeconfig")
        .arg(&proxied)
        .arg("--plugins")
        .arg(&plugins)
        // What the pod reads from its service account's namespace file.
        .args(["--leader-elect", "--leader-elect-namespace", "windlass"])
        .args(["--leader-elect-retry-period", "200ms"])
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Leading, and renewed at least once.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let renewals = recorder
            .requests()
            .iter()
            .filter(|r| r.method == "PUT" && r.path.contains("/leases/windlass"))
            .count();
        if renewals >= 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline && host.try_wait().unwrap().is_none(),
            "no renewals: {:?}",
            recorder.requests()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // SIGTERM: the Lease is released (an update).
    let before_release = recorder.requests().len();
    assert!(
        Command::new("kill")
            .args(["-TERM", &host.id().to_string()])
            .status()
            .unwrap()
            .success()
    );
    let status = tokio::task::spawn_blocking(move || host.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(
        recorder.requests().len() > before_release,
        "nothing at release"
    );
    let holder = kubectl(&[
        "get",
        "lease",
        "windlass",
        "-n",
        "windlass",
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ]);
    assert_eq!(holder, "", "released");

    let (_, docs) = render(&deploy("base"));
    let granted: Vec<Value> = docs
        .iter()
        .filter(|d| matches!(d["kind"].as_str(), Some("Role" | "ClusterRole")))
        .filter(|role| {
            let binding = format!("{}Binding", role["kind"].as_str().unwrap());
            docs.iter().any(|b| {
                b["kind"] == binding.as_str()
                    && b["roleRef"]["name"] == role["metadata"]["name"]
                    && b["subjects"][0]["name"] == "windlass"
                    && b["subjects"][0]["namespace"] == "windlass"
            })
        })
        .cloned()
        .collect();
    let roles = Role::from_documents(&granted);
    let requests = recorder.requests();
    let mut verbs = std::collections::BTreeSet::new();
    for r in &requests {
        let attributes = authz::attributes(&r.method, &r.path);
        assert!(
            authz::allows(&roles, &attributes),
            "{} {} ({attributes}) is not allowed by the base's roles",
            r.method,
            r.path
        );
        if let authz::Attributes::Resource { verb, .. } = &attributes {
            verbs.insert(verb.clone());
        }
    }
    // What a Lease's life takes, and the same Lease elsewhere is refused.
    for verb in ["create", "get", "update"] {
        assert!(verbs.contains(verb), "{verb} not seen in {requests:?}");
    }
    let elsewhere = authz::attributes(
        "PUT",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases/windlass",
    );
    assert!(!authz::allows(&roles, &elsewhere));
    server.shutdown().await;
}
