//! Instances of one plugin: a `<stem>.instances.yaml` beside `<stem>.wasm`
//! loads the component several times under different names, each with its
//! own namespace, label selector, concurrency and settings (as Kubewarden
//! runs one policy module as many policies). Pure: parsing, checking, and
//! reshaping a manifest; the host does the loading.
//!
//! ```yaml
//! instances:
//! - name: rs-team-a          # the instance's plugin name, unique in the host
//!   namespace: team-a        # confines what it reconciles and owns
//!   labelSelector: team=a    # added to the selector of what it reconciles
//!   maxConcurrency: 8        # instead of the manifest's
//!   writeQPS: 20             # its requests a second (0: unlimited) ...
//!   writeBurst: 40           # ... and burst, instead of the host's flags
//!   settings: {replicas: 3}  # read by the plugin through `instance.settings`
//! ```

use std::path::{Path, PathBuf};

use serde::Deserialize;
use windlass_selector::names;

use crate::contract::{MAX_CONCURRENCY, Manifest};
use crate::writer::WriteLimit;

/// The suffix that names a plugin's instances file.
pub const SUFFIX: &str = ".instances.yaml";
/// The largest instances file read, in bytes.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// The most instances one file may declare.
pub const MAX_INSTANCES: usize = 256;

/// What an instances file says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstancesFile {
    pub instances: Vec<Instance>,
}

/// One instance of a plugin.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Instance {
    /// The plugin name this instance runs under (a DNS label).
    pub name: String,
    /// Watch what the plugin reconciles and owns only in this namespace.
    #[serde(default)]
    pub namespace: Option<String>,
    /// A label selector added (ANDed) to the selector of what it reconciles.
    #[serde(default)]
    pub label_selector: Option<String>,
    /// How many keys it reconciles at once, instead of the manifest's.
    #[serde(default)]
    pub max_concurrency: Option<u32>,
    /// Requests a second its writes and events may make (0: unlimited),
    /// instead of `--plugin-write-qps`.
    #[serde(default, rename = "writeQPS")]
    pub write_qps: Option<f64>,
    /// How many requests may go out at once after a quiet spell, instead
    /// of `--plugin-write-burst`.
    #[serde(default)]
    pub write_burst: Option<u32>,
    /// A JSON object the plugin reads through `instance.settings`.
    #[serde(default)]
    pub settings: Option<serde_json::Value>,
}

impl Instance {
    /// The instance's write limit, what it does not set taken from the
    /// host's `default`; `None` when it sets neither.
    pub fn write_limit(&self, default: WriteLimit) -> Result<Option<WriteLimit>, String> {
        if self.write_qps.is_none() && self.write_burst.is_none() {
            return Ok(None);
        }
        WriteLimit::new(
            self.write_qps.unwrap_or(default.qps),
            self.write_burst.unwrap_or(default.burst),
        )
        .map(Some)
    }

    /// The settings as the JSON text the plugin reads.
    pub fn settings_text(&self) -> Option<String> {
        self.settings.as_ref().map(|s| s.to_string())
    }
}

/// The instances file beside a plugin file: `web.wasm` → `web.instances.yaml`.
pub fn file_for(plugin: &Path) -> PathBuf {
    let stem = plugin
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    plugin.with_file_name(format!("{stem}{SUFFIX}"))
}

/// Parses and checks an instances file; the error says what to fix.
pub fn parse(text: &str) -> Result<Vec<Instance>, String> {
    let file: InstancesFile = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    if file.instances.is_empty() {
        return Err(
            "`instances` is empty; delete the file to run the plugin once under its own name"
                .into(),
        );
    }
    if file.instances.len() > MAX_INSTANCES {
        return Err(format!(
            "{} instances; at most {MAX_INSTANCES} may be declared",
            file.instances.len()
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, instance) in file.instances.iter().enumerate() {
        let at = |e: String| format!("instances[{i}]: {e}");
        names::dns_label(&instance.name).map_err(|e| at(format!("name {e}")))?;
        if !seen.insert(instance.name.as_str()) {
            return Err(at(format!("name {:?} is used twice", instance.name)));
        }
        if let Some(ns) = &instance.namespace {
            names::dns_label(ns).map_err(|e| at(format!("namespace {e}")))?;
        }
        if let Some(sel) = &instance.label_selector {
            windlass_selector::LabelSelector::parse(sel)
                .map_err(|e| at(format!("labelSelector {sel:?}: {e}")))?;
        }
        if let Some(n) = instance.max_concurrency
            && !(1..=MAX_CONCURRENCY).contains(&n)
        {
            return Err(at(format!(
                "maxConcurrency {n} is out of range (1 to {MAX_CONCURRENCY})"
            )));
        }
        if instance.write_qps.is_some() || instance.write_burst.is_some() {
            // Checked against the defaults a host would take the rest from;
            // the host checks again with its own.
            instance
                .write_limit(WriteLimit::default())
                .map_err(|e| at(format!("writeQPS/writeBurst: {e}")))?;
        }
        if let Some(settings) = &instance.settings
            && !settings.is_object()
        {
            return Err(at("settings must be a mapping (a JSON object)".into()));
        }
    }
    Ok(file.instances)
}

/// The plugin's own manifest reshaped for `instance`: its name; what it
/// reconciles and owns confined to the instance's namespace (a plugin that
/// already names another namespace cannot be moved, and says so); the
/// instance's selector added to the primary watch's; its concurrency.
/// Kinds it reads or only writes stay as the plugin declared them.
pub fn reshape(manifest: &Manifest, instance: &Instance) -> Result<Manifest, String> {
    let mut m = manifest.clone();
    m.name = instance.name.clone();
    if let Some(ns) = &instance.namespace {
        for watch in std::iter::once(&mut m.reconciles).chain(m.owns.iter_mut()) {
            match &watch.namespace {
                None => watch.namespace = Some(ns.clone()),
                Some(own) if own == ns => {}
                Some(own) => {
                    return Err(format!(
                        "instance {:?} asks for namespace {ns:?}, but the plugin watches {} {} only in namespace {own:?}",
                        instance.name, watch.kind.api_version, watch.kind.kind
                    ));
                }
            }
        }
    }
    if let Some(sel) = &instance.label_selector {
        m.reconciles.label_selector = Some(match &m.reconciles.label_selector {
            Some(own) if !own.trim().is_empty() => format!("{own},{sel}"),
            _ => sel.clone(),
        });
    }
    if let Some(n) = instance.max_concurrency {
        m.max_concurrency = n;
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{KindRef, Watch};

    fn manifest() -> Manifest {
        let mut m = Manifest {
            name: "replicaset".into(),
            version: "1".into(),
            reconciles: Watch::of(KindRef::new("apps/v1", "ReplicaSet")),
            owns: vec![Watch::of(KindRef::new("v1", "Pod"))],
            reads: vec![Watch::of(KindRef::new("v1", "Node"))],
            writes: Vec::new(),
            resync_seconds: None,
            finalizer: None,
            max_concurrency: 4,
        };
        m.reconciles.label_selector = Some("tier=web".into());
        m
    }

    const TWO: &str = r#"
instances:
- name: team-a
  namespace: team-a
  labelSelector: team=a
  maxConcurrency: 8
  settings: {replicas: 3}
- name: team-b
"#;

    #[test]
    fn a_file_of_two_instances_parses() {
        let got = parse(TWO).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].namespace.as_deref(), Some("team-a"));
        assert_eq!(got[0].max_concurrency, Some(8));
        assert_eq!(got[0].settings_text().as_deref(), Some(r#"{"replicas":3}"#));
        assert_eq!(got[1].settings_text(), None);
    }

    #[test]
    fn bad_files_say_what_to_fix() {
        for (text, want) in [
            ("instances: []", "is empty"),
            ("instances:\n- name: A", "instances[0]: name"),
            ("instances:\n- name: a\n- name: a", "used twice"),
            ("instances:\n- name: a\n  namespace: x/y", "namespace"),
            (
                "instances:\n- name: a\n  labelSelector: 'a in ('",
                "labelSelector",
            ),
            ("instances:\n- name: a\n  maxConcurrency: 0", "out of range"),
            (
                "instances:\n- name: a\n  writeQPS: -1",
                "writeQPS/writeBurst",
            ),
            (
                "instances:\n- name: a\n  writeQPS: 5\n  writeBurst: 0",
                "burst must be at least 1",
            ),
            (
                "instances:\n- name: a\n  writeQps: 5",
                "unknown field `writeQps`",
            ),
            (
                "instances:\n- name: a\n  settings: [1]",
                "must be a mapping",
            ),
            ("instances:\n- name: a\n  bogus: 1", "unknown field `bogus`"),
            ("nope: 1", "unknown field `nope`"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        let many: String = (0..=MAX_INSTANCES)
            .map(|i| format!("- name: i{i}\n"))
            .collect();
        assert!(
            parse(&format!("instances:\n{many}"))
                .unwrap_err()
                .contains("at most")
        );
    }

    #[test]
    fn an_instance_reshapes_name_namespace_selector_and_concurrency() {
        let instances = parse(TWO).unwrap();
        let a = reshape(&manifest(), &instances[0]).unwrap();
        assert_eq!(a.name, "team-a");
        assert_eq!(a.reconciles.namespace.as_deref(), Some("team-a"));
        assert_eq!(a.owns[0].namespace.as_deref(), Some("team-a"));
        // Reads (a cluster-scoped Node here) stay as declared.
        assert_eq!(a.reads[0].namespace, None);
        assert_eq!(
            a.reconciles.label_selector.as_deref(),
            Some("tier=web,team=a")
        );
        assert_eq!(a.max_concurrency, 8);
        a.validate().unwrap();
        let b = reshape(&manifest(), &instances[1]).unwrap();
        assert_eq!(b.name, "team-b");
        assert_eq!(b.reconciles, manifest().reconciles);
        assert_eq!(b.max_concurrency, 4);
    }

    #[test]
    fn a_plugin_fixed_to_another_namespace_cannot_be_moved() {
        let mut m = manifest();
        m.reconciles.namespace = Some("ops".into());
        let instances = parse(TWO).unwrap();
        let err = reshape(&m, &instances[0]).unwrap_err();
        assert!(err.contains("only in namespace \"ops\""), "{err}");
        let mut same = instances[0].clone();
        same.namespace = Some("ops".into());
        assert_eq!(
            reshape(&m, &same).unwrap().reconciles.namespace.as_deref(),
            Some("ops")
        );
    }

    #[test]
    fn an_instance_write_limit_takes_what_it_leaves_out_from_the_host() {
        let host = WriteLimit::new(50.0, 100).unwrap();
        let got = parse(
            "instances:\n- name: a\n  writeQPS: 20\n  writeBurst: 5\n\
             - name: b\n  writeQPS: 2.5\n- name: c\n  writeBurst: 7\n- name: d\n",
        )
        .unwrap();
        let limits: Vec<_> = got.iter().map(|i| i.write_limit(host).unwrap()).collect();
        assert_eq!(
            limits,
            [
                Some(WriteLimit::new(20.0, 5).unwrap()),
                Some(WriteLimit::new(2.5, 100).unwrap()),
                Some(WriteLimit::new(50.0, 7).unwrap()),
                None,
            ]
        );
        // A host whose burst is 0 (unlimited by flag) cannot complete a QPS.
        let unlimited = WriteLimit::new(0.0, 0).unwrap();
        assert!(got[1].write_limit(unlimited).is_err());
    }

    #[test]
    fn the_instances_file_sits_beside_the_plugin() {
        assert_eq!(
            file_for(Path::new("/p/replicaset.wasm")),
            Path::new("/p/replicaset.instances.yaml")
        );
    }
}
