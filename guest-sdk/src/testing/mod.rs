//! Run a controller natively under `cargo test`, against a fake cache loaded
//! from YAML or JSON: no wasm, no host, no cluster.
//!
//! [`Harness`] builds each [`Request`] the way the host does (the object as
//! cached, plus the cached objects of `owns` kinds whose controller owner
//! reference has the object's uid) and enforces the manifest the way the host
//! does: reading or writing a kind the manifest does not declare fails the
//! call with an error naming the kind.
//!
//! [`Harness::apply_outcome`] and [`Harness::converge`] go one step further
//! and play the host's writer against the fake cache, so a test can check
//! that repeated reconciles settle (level-triggered behaviour).

mod boundary;
pub(crate) mod context;
mod load;
mod writer;

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::rc::Rc;

use windlass_selector::LabelSelector;

pub use load::parse_objects;

use crate::log::Level;
use crate::{
    Controller, Error, IndexEntry, KindRef, Manifest, Object, ObjectRef, Outcome, Request, Time,
    Write, WriteFailure,
};

/// The fake host state shared by a harness and the calls it runs.
pub(crate) struct State {
    manifest: Manifest,
    store: RefCell<BTreeMap<ObjectRef, Object>>,
    violations: RefCell<Vec<String>>,
    logs: RefCell<Vec<(Level, String)>>,
    counter: Cell<u64>,
    /// The controller's `index`.
    indexer: fn(&Object) -> Option<IndexEntry>,
    settings: Option<String>,
}

impl State {
    fn check_read(&self, api_version: &str, kind: &str) -> Result<(), Error> {
        if self.manifest.may_read(api_version, kind) {
            return Ok(());
        }
        let message = format!(
            "plugin {:?} read {api_version} {kind}, a kind its manifest does not declare \
             in reconciles, owns or reads",
            self.manifest.name
        );
        self.violations.borrow_mut().push(message.clone());
        Err(Error::permanent(message))
    }

    fn list(
        &self,
        kind: &KindRef,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<Object>, Error> {
        let selector = match label_selector {
            Some(s) => Some(LabelSelector::parse(s).map_err(|e| Error::permanent(e.to_string()))?),
            None => None,
        };
        Ok(self
            .store
            .borrow()
            .values()
            .filter(|o| o.is(&kind.api_version, &kind.kind))
            .filter(|o| namespace.is_none() || o.namespace() == namespace)
            .filter(|o| selector.as_ref().is_none_or(|s| s.matches(|k| o.label(k))))
            .map(as_sent)
            .collect())
    }

    /// Checks that `kind` is declared in an indexed watch, for the indexed reads.
    fn check_indexed(&self, kind: &KindRef) -> Result<(), Error> {
        self.check_read(&kind.api_version, &kind.kind)?;
        let m = &self.manifest;
        let indexed = std::iter::once(&m.reconciles)
            .chain(&m.owns)
            .chain(&m.reads)
            .any(|w| w.indexed && w.kind == *kind);
        if indexed {
            return Ok(());
        }
        let message = format!(
            "plugin {:?} read the index of {kind}, but no watch of that kind is indexed \
             (`Watch::indexed`)",
            m.name
        );
        self.violations.borrow_mut().push(message.clone());
        Err(Error::permanent(message))
    }

    /// The index entries of every cached object of `kind`, ordered by
    /// namespace then name, as the host files them.
    fn entries(&self, kind: &KindRef) -> Vec<(Object, IndexEntry)> {
        self.store
            .borrow()
            .values()
            .filter(|o| o.is(&kind.api_version, &kind.kind))
            .filter_map(|o| {
                let sent = as_sent(o);
                (self.indexer)(&sent).map(|e| (sent, e))
            })
            .collect()
    }

    fn next(&self) -> u64 {
        let n = self.counter.get() + 1;
        self.counter.set(n);
        n
    }
}

/// Runs a [`Controller`] natively against a fake cache.
///
/// ```
/// # use windlass_sdk::{Controller, Error, Manifest, Outcome, Request, Watch};
/// # struct Noop;
/// # impl Controller for Noop {
/// #     fn manifest() -> Manifest { Manifest::new("noop", Watch::kind("v1", "ConfigMap")) }
/// #     fn reconcile(_: Request) -> Result<Outcome, Error> { Ok(Outcome::new()) }
/// # }
/// use windlass_sdk::testing::Harness;
/// let mut h = Harness::<Noop>::new().with_objects(
///     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n",
/// )?;
/// let cm = h.objects()[0].clone();
/// assert!(h.reconcile(&cm)?.is_empty());
/// # Ok::<(), Error>(())
/// ```
pub struct Harness<C> {
    state: Rc<State>,
    attempt: u32,
    now: Time,
    last_failure: Option<WriteFailure>,
    controller: PhantomData<fn() -> C>,
}

impl<C: Controller> Default for Harness<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C: Controller> Harness<C> {
    /// A harness with an empty cache and no settings. Calls the
    /// controller's `manifest()`.
    pub fn new() -> Self {
        Self::build(None).unwrap_or_else(|e| panic!("manifest() failed: {e}"))
    }

    /// A harness for an instance with these settings (a JSON object), as
    /// the host would load it: `try_manifest` runs with them, and its error
    /// is returned.
    pub fn with_settings(settings: serde_json::Value) -> Result<Self, Error> {
        Self::build(Some(settings.to_string()))
    }

    fn build(settings: Option<String>) -> Result<Self, Error> {
        // `try_manifest` may read the settings: run it inside a call.
        let probe = Rc::new(State {
            manifest: Manifest::new("", crate::Watch::kind("", "")),
            store: RefCell::new(BTreeMap::new()),
            violations: RefCell::new(Vec::new()),
            logs: RefCell::new(Vec::new()),
            counter: Cell::new(0),
            indexer: C::index,
            settings: settings.clone(),
        });
        let manifest = {
            let _enter = context::Enter::new(&probe);
            C::try_manifest()?
        };
        Ok(Self {
            state: Rc::new(State {
                manifest,
                store: RefCell::new(BTreeMap::new()),
                violations: RefCell::new(Vec::new()),
                logs: RefCell::new(Vec::new()),
                counter: Cell::new(0),
                indexer: C::index,
                settings,
            }),
            attempt: 0,
            now: Time::UNIX_EPOCH,
            last_failure: None,
            controller: PhantomData,
        })
    }

    /// Adds the objects in `text` to the cache (see [`parse_objects`] for the
    /// accepted YAML and JSON forms). Later objects replace earlier ones
    /// with the same kind, namespace and name.
    pub fn with_objects(mut self, text: &str) -> Result<Self, Error> {
        for obj in parse_objects(text)? {
            self.insert(obj);
        }
        Ok(self)
    }

    /// Adds one object to the cache.
    pub fn with_object(mut self, object: Object) -> Self {
        self.insert(object);
        self
    }

    /// Sets `Request::attempt` for the following calls.
    pub fn with_attempt(mut self, attempt: u32) -> Self {
        self.attempt = attempt;
        self
    }

    /// Sets `Request::now` for the following calls (default: the Unix epoch).
    pub fn with_now(mut self, now: Time) -> Self {
        self.now = now;
        self
    }

    /// Sets `Request::now` for the following calls.
    pub fn set_now(&mut self, now: Time) {
        self.now = now;
    }

    /// Sets `Request::last_failure` for the following calls.
    pub fn set_last_failure(&mut self, failure: Option<WriteFailure>) {
        self.last_failure = failure;
    }

    /// What the controller's `index` files `object` under.
    pub fn index(&self, object: &Object) -> Option<IndexEntry> {
        let _enter = context::Enter::new(&self.state);
        C::index(&as_sent(object))
    }

    /// The controller's manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.state.manifest
    }

    /// Adds or replaces one object in the cache.
    pub fn insert(&mut self, object: Object) {
        self.state
            .store
            .borrow_mut()
            .insert(object.object_ref(), object);
    }

    /// Removes one object from the cache.
    pub fn remove(&mut self, object: &ObjectRef) -> Option<Object> {
        self.state.store.borrow_mut().remove(object)
    }

    /// One cached object.
    pub fn get(&self, object: &ObjectRef) -> Option<Object> {
        self.state.store.borrow().get(object).cloned()
    }

    /// Every cached object, ordered by kind, namespace and name.
    pub fn objects(&self) -> Vec<Object> {
        self.state.store.borrow().values().cloned().collect()
    }

    /// The cached objects of one kind, ordered by namespace then name.
    pub fn list(&self, api_version: &str, kind: &str) -> Vec<Object> {
        self.state
            .store
            .borrow()
            .values()
            .filter(|o| o.is(api_version, kind))
            .cloned()
            .collect()
    }

    /// The log lines of every call so far.
    pub fn logs(&self) -> Vec<(Level, String)> {
        self.state.logs.borrow().clone()
    }

    /// The request the host would send for `key` now. Like the host's, its
    /// objects are JSON text, parsed on first access; children of an
    /// indexed `owns` watch are left to `cache::lookup`, as the host leaves
    /// them.
    pub fn request(&self, key: &ObjectRef) -> Request {
        let store = self.state.store.borrow();
        let object = store.get(key).map(as_sent);
        let owned = match object.as_ref().and_then(Object::uid) {
            Some(uid) => store
                .values()
                .filter(|o| {
                    (self.state.manifest.owns.iter())
                        .any(|w| !w.indexed && w.kind.is(o.api_version(), o.kind()))
                })
                .filter(|o| o.controller_ref().is_some_and(|r| r.uid == uid))
                .map(as_sent)
                .collect(),
            None => Vec::new(),
        };
        Request {
            key: key.clone(),
            object,
            owned,
            attempt: self.attempt,
            now: self.now,
            last_failure: self.last_failure.clone(),
        }
    }

    /// Stores `object` as the current state of the primary object, then
    /// reconciles its key.
    pub fn reconcile(&mut self, object: &Object) -> Result<Outcome, Error> {
        self.insert(object.clone());
        self.reconcile_key(&object.object_ref())
    }

    /// Reconciles `key` from the cache as it is (the object may be absent).
    pub fn reconcile_key(&self, key: &ObjectRef) -> Result<Outcome, Error> {
        self.run_reconcile(self.request(key))
    }

    /// Calls `reconcile` with a hand-made request, enforcing the manifest.
    pub fn run_reconcile(&self, req: Request) -> Result<Outcome, Error> {
        let ns = req.key.namespace.clone();
        self.call(ns.as_deref(), || C::reconcile(req))
    }

    /// Calls `finalize` for `key` as the host would, enforcing the manifest.
    pub fn finalize_key(&self, key: &ObjectRef) -> Result<Outcome, Error> {
        let req = self.request(key);
        self.call(key.namespace.as_deref(), || C::finalize(req))
    }

    /// Calls `map` for a changed `reads` object; as the host does, refuses
    /// keys that are not of the reconciled kind or not valid names.
    pub fn map(&self, changed: &Object) -> Result<Vec<ObjectRef>, Error> {
        let _enter = context::Enter::new(&self.state);
        self.state.violations.borrow_mut().clear();
        let keys = C::map(&as_sent(changed));
        self.check_violations()?;
        let primary = &self.state.manifest.reconciles;
        for k in &keys {
            boundary::check_ref(k).map_err(Error::permanent)?;
            if !k.is_kind(&primary.kind) || !primary.covers(k.namespace.as_deref()) {
                return Err(Error::permanent(format!(
                    "map returned {k}, which the plugin does not reconcile"
                )));
            }
        }
        Ok(keys)
    }

    fn call(
        &self,
        key_namespace: Option<&str>,
        f: impl FnOnce() -> Result<Outcome, Error>,
    ) -> Result<Outcome, Error> {
        let _enter = context::Enter::new(&self.state);
        self.state.violations.borrow_mut().clear();
        let result = f();
        // As in the host: an undeclared read fails the call even if the
        // plugin swallowed the error.
        self.check_violations()?;
        let outcome = result?;
        for w in &outcome.writes {
            boundary::check_write(&self.state.manifest, w, key_namespace).map_err(|e| {
                Error::permanent(format!(
                    "plugin {:?} wrote {}: {e}",
                    self.state.manifest.name,
                    describe(w),
                ))
            })?;
        }
        for e in &outcome.events {
            boundary::check_event(&self.state.manifest, e).map_err(|e| {
                Error::permanent(format!("plugin {:?}: {e}", self.state.manifest.name))
            })?;
        }
        Ok(outcome)
    }

    fn check_violations(&self) -> Result<(), Error> {
        match self.state.violations.borrow().first() {
            Some(v) => Err(Error::permanent(v.clone())),
            None => Ok(()),
        }
    }

    /// Applies `outcome` (of a reconcile of `key`) to the fake cache the way
    /// the host's writer would: `apply` creates (with `generateName`, a uid,
    /// a creation timestamp and, for `owns` kinds, a controller owner
    /// reference to `key`) or merges; `replace`, `update-status`,
    /// `merge-patch` and `delete` do what they say (deletes are immediate);
    /// `prune-owned` deletes owned children the outcome did not list.
    pub fn apply_outcome(&mut self, key: &ObjectRef, outcome: &Outcome) -> Result<(), Error> {
        writer::apply(&self.state, key, outcome)
    }

    /// Reconciles `key` and applies the outcome, repeatedly, until a round
    /// changes nothing in the cache; returns how many rounds wrote something.
    /// Fails if that takes more than `max_rounds`.
    pub fn converge(&mut self, key: &ObjectRef, max_rounds: usize) -> Result<usize, Error> {
        for round in 0..=max_rounds {
            let before = self.state.store.borrow().clone();
            let outcome = self.reconcile_key(key)?;
            self.apply_outcome(key, &outcome)?;
            if *self.state.store.borrow() == before {
                return Ok(round);
            }
        }
        Err(Error::permanent(format!(
            "{key} did not converge in {max_rounds} rounds"
        )))
    }
}

/// An object as the host sends it: JSON text, parsed lazily.
fn as_sent(o: &Object) -> Object {
    Object::from_json_lazy(o.to_json()).unwrap_or_else(|_| o.clone())
}

fn describe(w: &Write) -> String {
    let t = w.target();
    if t.name.is_empty()
        && let Write::Apply(o) = w
        && let Some(prefix) = o.generate_name()
    {
        return format!("{} {} (generateName {prefix:?})", t.api_version, t.kind);
    }
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Event, Watch, cache, log};

    /// Reads the ConfigMap named in `data.read` and writes whatever
    /// `data.write` names, to exercise the harness' enforcement.
    struct Probe;

    impl Controller for Probe {
        fn manifest() -> Manifest {
            Manifest::new("probe", Watch::kind("example.com/v1", "Thing"))
                .owns(Watch::kind("v1", "ConfigMap"))
                .reads(Watch::kind("v1", "Node"))
        }

        fn reconcile(req: Request) -> Result<Outcome, Error> {
            let Some(obj) = req.object else {
                return Ok(Outcome::new());
            };
            log::info!("owned {}", req.owned.len());
            let mut out = Outcome::new();
            if let Some(kind) = obj.get_str("spec.list") {
                let (av, k) = kind.split_once(' ').unwrap();
                let sel = obj.get_str("spec.selector");
                let n = cache::list(&KindRef::new(av, k), None, sel)
                    .unwrap_or_default()
                    .len();
                out = out.event(Event::normal("Listed", n.to_string()));
            }
            if let Some(kind) = obj.get_str("spec.write") {
                let (av, k) = kind.split_once(' ').unwrap();
                out = out.apply(Object::new(av, k).with_name("w").with_namespace("default"));
            }
            Ok(out.prune_owned())
        }
    }

    const OBJECTS: &str = r#"
apiVersion: example.com/v1
kind: Thing
metadata: {name: t, namespace: default, uid: t-1}
spec: {}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: mine
  namespace: default
  ownerReferences: [{apiVersion: example.com/v1, kind: Thing, name: t, uid: t-1, controller: true}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: theirs
  namespace: default
  ownerReferences: [{apiVersion: example.com/v1, kind: Thing, name: t, uid: t-1}]
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: Node, metadata: {name: n1, labels: {zone: a}}}
- {apiVersion: v1, kind: Node, metadata: {name: n2, labels: {zone: b}}}
"#;

    fn thing(h: &Harness<Probe>, spec: serde_json::Value) -> Object {
        let mut t = h
            .get(&ObjectRef::new("example.com/v1", "Thing", "default", "t"))
            .unwrap();
        t.set("spec", spec);
        t
    }

    #[test]
    fn request_has_controlled_children_only() {
        let h = Harness::<Probe>::new().with_objects(OBJECTS).unwrap();
        let req = h.request(&ObjectRef::new("example.com/v1", "Thing", "default", "t"));
        assert!(req.object.is_some());
        let names: Vec<&str> = req.owned.iter().map(Object::name).collect();
        assert_eq!(names, ["mine"]);
        let gone = h.request(&ObjectRef::new(
            "example.com/v1",
            "Thing",
            "default",
            "nope",
        ));
        assert!(gone.object.is_none() && gone.owned.is_empty());
    }

    #[test]
    fn declared_reads_work_with_selectors() {
        let mut h = Harness::<Probe>::new().with_objects(OBJECTS).unwrap();
        let t = thing(
            &h,
            serde_json::json!({"list": "v1 Node", "selector": "zone=b"}),
        );
        let out = h.reconcile(&t).unwrap();
        assert_eq!(out.events[0].message, "1");
        assert_eq!(h.logs(), [(log::Level::Info, "owned 1".to_owned())]);
        let t = thing(
            &h,
            serde_json::json!({"list": "v1 Node", "selector": "zone in ("}),
        );
        assert!(h.reconcile(&t).unwrap().events[0].message == "0");
    }

    #[test]
    fn undeclared_read_fails_even_if_ignored() {
        let mut h = Harness::<Probe>::new().with_objects(OBJECTS).unwrap();
        let t = thing(&h, serde_json::json!({"list": "v1 Secret"}));
        let err = h.reconcile(&t).unwrap_err();
        assert!(err.message.contains("read v1 Secret"), "{err}");
        assert!(err.message.contains("\"probe\""), "{err}");
    }

    #[test]
    fn undeclared_write_fails() {
        let mut h = Harness::<Probe>::new().with_objects(OBJECTS).unwrap();
        let t = thing(&h, serde_json::json!({"write": "v1 Node"}));
        let err = h.reconcile(&t).unwrap_err();
        assert!(err.message.contains("wrote v1 Node default/w"), "{err}");
        let t = thing(&h, serde_json::json!({"write": "v1 ConfigMap"}));
        assert!(h.reconcile(&t).is_ok());
    }

    #[test]
    fn apply_outcome_creates_owns_and_prunes() {
        let mut h = Harness::<Probe>::new().with_objects(OBJECTS).unwrap();
        let t = thing(&h, serde_json::json!({"write": "v1 ConfigMap"}));
        h.insert(t.clone());
        let key = t.object_ref();
        let rounds = h.converge(&key, 3).unwrap();
        assert_eq!(rounds, 1);
        let cms: Vec<String> = h
            .list("v1", "ConfigMap")
            .iter()
            .map(|o| o.name().to_owned())
            .collect();
        // `mine` was pruned; `theirs` is not controlled by the Thing; `w` is new.
        assert_eq!(cms, ["theirs", "w"]);
        let w = h
            .get(&ObjectRef::new("v1", "ConfigMap", "default", "w"))
            .unwrap();
        assert!(w.is_controlled_by(&t));
        assert!(w.uid().is_some() && w.creation_timestamp().is_some());
    }

    #[test]
    fn writer_generates_names_and_merges() {
        let mut h = Harness::<Probe>::new().with_objects(OBJECTS).unwrap();
        let key = ObjectRef::new("example.com/v1", "Thing", "default", "t");
        let out = Outcome::new()
            .apply(
                Object::new("v1", "ConfigMap")
                    .with_generate_name("g-")
                    .with("data.a", "1"),
            )
            .merge_patch(
                ObjectRef::new("v1", "ConfigMap", "default", "theirs"),
                serde_json::json!({"data": {"b": "2"}}),
            )
            .update_status(
                Object::new("example.com/v1", "Thing")
                    .with_name("t")
                    .with_namespace("default")
                    .with("status.ok", true),
            )
            .delete(ObjectRef::new("v1", "ConfigMap", "default", "mine"));
        h.apply_outcome(&key, &out).unwrap();
        let generated: Vec<Object> = h
            .list("v1", "ConfigMap")
            .into_iter()
            .filter(|o| o.name().starts_with("g-"))
            .collect();
        assert_eq!(generated.len(), 1);
        assert_eq!(generated[0].name().len(), "g-".len() + 5);
        assert_eq!(generated[0].get_str("data.a"), Some("1"));
        let theirs = h
            .get(&ObjectRef::new("v1", "ConfigMap", "default", "theirs"))
            .unwrap();
        assert_eq!(theirs.get_str("data.b"), Some("2"));
        assert!(
            h.get(&ObjectRef::new("v1", "ConfigMap", "default", "mine"))
                .is_none()
        );
        assert_eq!(h.get(&key).unwrap().get_bool("status.ok"), Some(true));
    }

    /// The host sends nothing for an apply the live object already
    /// satisfies (server defaults inside list items included), and its
    /// patch keeps the live owner references: so does the harness.
    #[test]
    fn apply_converges_as_the_host_writer_does() {
        let mut h = Harness::<Probe>::new().with_objects(OBJECTS).unwrap();
        let key = ObjectRef::new("example.com/v1", "Thing", "default", "t");
        let theirs = ObjectRef::new("v1", "ConfigMap", "default", "theirs");
        let mut live = h.get(&theirs).unwrap();
        live.set(
            "data",
            serde_json::json!({"items": [{"name": "a", "defaulted": "by the server"}]}),
        );
        h.insert(live);
        let before = h.get(&theirs).unwrap();
        let same = Object::new("v1", "ConfigMap")
            .with_name("theirs")
            .with_namespace("default")
            .with("data", serde_json::json!({"items": [{"name": "a"}]}));
        h.apply_outcome(&key, &Outcome::new().apply(same)).unwrap();
        assert_eq!(h.get(&theirs).unwrap(), before, "nothing was sent");

        let drifted = Object::new("v1", "ConfigMap")
            .with_name("theirs")
            .with_namespace("default")
            .with("data.x", "1")
            .with(
                "metadata.ownerReferences",
                serde_json::json!([{"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "o-1"}]),
            );
        h.apply_outcome(&key, &Outcome::new().apply(drifted))
            .unwrap();
        let after = h.get(&theirs).unwrap();
        assert_eq!(after.get_str("data.x"), Some("1"));
        assert_ne!(after.resource_version(), before.resource_version());
        let owners: Vec<&str> = after
            .get("metadata.ownerReferences")
            .and_then(|r| r.as_array())
            .unwrap()
            .iter()
            .filter_map(|r| r["uid"].as_str())
            .collect();
        assert_eq!(owners, ["t-1", "o-1"], "the live reference is kept");
    }

    #[test]
    fn cache_outside_a_harness_is_an_error() {
        let err = cache::get(&ObjectRef::new("v1", "Node", "", "n")).unwrap_err();
        assert!(err.message.contains("Harness"), "{err}");
    }
}
