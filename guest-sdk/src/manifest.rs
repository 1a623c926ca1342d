//! `Manifest` and `Watch`: what a plugin is and which objects it touches.

use std::time::Duration;

use crate::KindRef;

/// A set of objects a plugin is interested in.
///
/// ```
/// use windlass_sdk::Watch;
/// let w = Watch::kind("apps/v1", "ReplicaSet").namespace("prod").labels("app=web");
/// assert_eq!(w.label_selector.as_deref(), Some("app=web"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watch {
    /// The kind watched.
    pub kind: KindRef,
    /// Only this namespace; none means every namespace.
    pub namespace: Option<String>,
    /// A label selector, e.g. `app=web,tier in (front,back)`.
    pub label_selector: Option<String>,
    /// A field selector, e.g. `spec.nodeName=node-1`.
    pub field_selector: Option<String>,
    /// Whether the host files this watch's objects with
    /// [`Controller::index`](crate::Controller::index), for
    /// [`cache::lookup`](crate::cache::lookup) and friends. For an indexed
    /// `reads` watch, `map` runs only when an object's index entry changes;
    /// the children of an indexed `owns` watch are not put in
    /// [`Request::owned`](crate::Request::owned) (read them through the
    /// index), though their events still requeue their owner.
    pub indexed: bool,
}

impl Watch {
    /// Every object of a kind.
    pub fn kind(api_version: &str, kind: &str) -> Self {
        Self {
            kind: KindRef::new(api_version, kind),
            namespace: None,
            label_selector: None,
            field_selector: None,
            indexed: false,
        }
    }

    /// Only objects in `namespace`.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// Only objects matching a label selector.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_owned());
        self
    }

    /// Only objects matching a field selector.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_owned());
        self
    }

    /// Files every object with [`Controller::index`](crate::Controller::index)
    /// (see [`Watch::indexed`]).
    pub fn indexed(mut self) -> Self {
        self.indexed = true;
        self
    }

    /// Whether this watch covers `namespace` (`None`: a cluster-scoped object).
    pub fn covers(&self, namespace: Option<&str>) -> bool {
        match (&self.namespace, namespace) {
            (None, _) => true,
            (Some(mine), Some(ns)) => mine == ns,
            (Some(_), None) => false,
        }
    }
}

/// Permission to write a kind the plugin does not reconcile or own, e.g.
/// Leases, or the `binding` subresource of Pods.
///
/// ```
/// use windlass_sdk::Grant;
/// let bind = Grant::kind("v1", "Pod").subresource("binding");
/// let leases = Grant::kind("coordination.k8s.io/v1", "Lease").namespace("kube-node-lease");
/// assert_eq!(bind.subresource.as_deref(), Some("binding"));
/// assert_eq!(leases.namespace.as_deref(), Some("kube-node-lease"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The kind written.
    pub kind: KindRef,
    /// Only in this namespace; none means every namespace.
    pub namespace: Option<String>,
    /// A subresource written instead of the object itself (`binding`,
    /// `eviction`); `status` needs no grant of its own.
    pub subresource: Option<String>,
}

impl Grant {
    /// Writing objects of a kind, in every namespace.
    pub fn kind(api_version: &str, kind: &str) -> Self {
        Self {
            kind: KindRef::new(api_version, kind),
            namespace: None,
            subresource: None,
        }
    }

    /// Only in `namespace`.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// A subresource of the kind instead of the objects themselves.
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.subresource = Some(subresource.to_owned());
        self
    }
}

/// What a plugin is and what it touches; the host enforces it.
///
/// A plugin may read only kinds in `reconciles`, `owns` or `reads`, and write
/// only kinds in `reconciles`, `owns` or `writes`, each only in the namespace
/// that entry names (every namespace if it names none).
///
/// ```
/// use std::time::Duration;
/// use windlass_sdk::{Manifest, Watch};
/// let m = Manifest::new("replicaset", Watch::kind("apps/v1", "ReplicaSet"))
///     .version(env!("CARGO_PKG_VERSION"))
///     .owns(Watch::kind("v1", "Pod"))
///     .resync(Duration::from_secs(600))
///     .max_concurrency(4);
/// assert!(m.may_write("v1", "Pod"));
/// assert!(!m.may_read("v1", "Secret"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// A short DNS-label style name, unique among loaded plugins.
    pub name: String,
    /// The plugin's own version (default `0.0.0`).
    pub version: String,
    /// The primary kind: one reconcile request per object key.
    pub reconciles: Watch,
    /// Children this plugin creates; they arrive in `Request::owned`.
    pub owns: Vec<Watch>,
    /// Other kinds readable through [`crate::cache`].
    pub reads: Vec<Watch>,
    /// Kinds and subresources written without being watched.
    pub writes: Vec<Grant>,
    /// Re-reconcile every primary object this often, even without events.
    pub resync_seconds: Option<u32>,
    /// A finalizer the host adds to primary objects; see `Controller::finalize`.
    pub finalizer: Option<String>,
    /// How many keys may be reconciled at once (at least 1; default 1).
    pub max_concurrency: u32,
}

/// Keys a plugin reconciles at once unless its manifest says otherwise
/// ([`Manifest::max_concurrency`]). Chosen by measurement
/// (`docs/performance.md`, *Worker concurrency*): one worker makes a burst
/// of watch events wait on each other (a no-op controller's p99 at 10,000
/// events a second: 0.3–1.5 ms at 1, 0.05–0.1 ms at 4), and it is safe to
/// run keys side by side because every call gets a fresh instance and the
/// host never reconciles one key twice at once.
pub const DEFAULT_CONCURRENCY: u32 = 4;

impl Manifest {
    /// A manifest for a plugin called `name` that reconciles `reconciles`,
    /// [`DEFAULT_CONCURRENCY`] keys at once.
    pub fn new(name: &str, reconciles: Watch) -> Self {
        Self {
            name: name.to_owned(),
            version: "0.0.0".to_owned(),
            reconciles,
            owns: Vec::new(),
            reads: Vec::new(),
            writes: Vec::new(),
            resync_seconds: None,
            finalizer: None,
            max_concurrency: DEFAULT_CONCURRENCY,
        }
    }

    /// Sets the plugin's version, typically `env!("CARGO_PKG_VERSION")`.
    pub fn version(mut self, version: &str) -> Self {
        self.version = version.to_owned();
        self
    }

    /// Adds a kind of children this plugin creates and owns.
    pub fn owns(mut self, watch: Watch) -> Self {
        self.owns.push(watch);
        self
    }

    /// Adds a kind this plugin reads from the cache.
    pub fn reads(mut self, watch: Watch) -> Self {
        self.reads.push(watch);
        self
    }

    /// Adds a kind (or subresource) this plugin writes without watching it.
    pub fn writes(mut self, grant: Grant) -> Self {
        self.writes.push(grant);
        self
    }

    /// Re-reconcile every object this often (whole seconds, at least 1).
    pub fn resync(mut self, every: Duration) -> Self {
        self.resync_seconds = Some(every.as_secs().clamp(1, u64::from(u32::MAX)) as u32);
        self
    }

    /// Asks the host to manage this finalizer and call `finalize` on deletion.
    pub fn finalizer(mut self, finalizer: &str) -> Self {
        self.finalizer = Some(finalizer.to_owned());
        self
    }

    /// How many keys may be reconciled at once (at least 1).
    pub fn max_concurrency(mut self, n: u32) -> Self {
        self.max_concurrency = n.max(1);
        self
    }

    /// Whether the manifest lets the plugin read this kind.
    pub fn may_read(&self, api_version: &str, kind: &str) -> bool {
        let is = |w: &Watch| w.kind.is(api_version, kind);
        is(&self.reconciles) || self.owns.iter().any(is) || self.reads.iter().any(is)
    }

    /// Whether the manifest lets the plugin write this kind (somewhere).
    pub fn may_write(&self, api_version: &str, kind: &str) -> bool {
        let is = |w: &Watch| w.kind.is(api_version, kind);
        is(&self.reconciles)
            || self.owns.iter().any(is)
            || self
                .writes
                .iter()
                .any(|g| g.kind.is(api_version, kind) && g.subresource.is_none())
    }

    /// Whether the manifest lets the plugin write this kind in `namespace`
    /// (`None`: a cluster-scoped object), or its `subresource`. The rule the
    /// host enforces: a `reconciles`, `owns` or `writes` entry of the kind
    /// must cover the namespace; `status` goes with the object; any other
    /// subresource needs a `writes` grant naming it.
    pub fn may_write_in(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        subresource: Option<&str>,
    ) -> bool {
        let object = |w: &Watch| w.kind.is(api_version, kind) && w.covers(namespace);
        let granted = |g: &Grant, sub: Option<&str>| {
            g.kind.is(api_version, kind)
                && g.subresource.as_deref() == sub
                && match (&g.namespace, namespace) {
                    (None, _) => true,
                    (Some(mine), Some(ns)) => mine == ns,
                    (Some(_), None) => false,
                }
        };
        match subresource {
            None | Some("status") => {
                object(&self.reconciles)
                    || self.owns.iter().any(object)
                    || self.writes.iter().any(|g| granted(g, None))
                    || self.writes.iter().any(|g| granted(g, subresource))
            }
            Some(sub) => self.writes.iter().any(|g| granted(g, Some(sub))),
        }
    }

    /// Whether this kind is one of the `owns` kinds.
    pub fn is_owned_kind(&self, api_version: &str, kind: &str) -> bool {
        self.owns.iter().any(|w| w.kind.is(api_version, kind))
    }
}
