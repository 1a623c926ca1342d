//! The in-memory current state, the revision counter and the event ring that
//! list, watch and every write go through.
//!
//! One `State` behind a mutex: a write takes the lock, computes the new
//! object, assigns the next revision, updates the index, appends the event to
//! the ring, broadcasts it (serialized once, shared by all watchers) and queues
//! it for storage, in that order. The caller then waits for the storage
//! acknowledgement outside the lock.

use std::any::Any;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{broadcast, oneshot};
use windlass_selector::partial::{self, Fields};

use crate::attrs::{Attrs, OwnerRef};
use crate::resources::Registry;
use crate::storage::{Ack, Record, Storage};

/// The storage acknowledgement of a write, for the caller to await after
/// releasing the lock: `Err` with the reason when storage failed.
pub(crate) type AckRx = oneshot::Receiver<Result<(), String>>;

/// A stored object: its revision, serialized bytes and the attributes
/// lists, watches and garbage collection read ([`Attrs`]). The parsed tree
/// is not kept (it costs several times the bytes): [`Obj::value`] parses.
#[derive(Debug)]
pub(crate) struct Obj {
    pub(crate) rv: u64,
    pub(crate) bytes: Bytes,
    pub(crate) attrs: Attrs,
    /// A typed reading of the object, made once on first use (see [`Obj::derived`]).
    derived: OnceLock<Box<dyn Any + Send + Sync>>,
}

impl Obj {
    /// Object `value` of resource `res` (`group/plural`) at revision `rv`.
    pub(crate) fn new(res: &str, rv: u64, value: &Value) -> Self {
        let bytes = Bytes::from(serde_json::to_vec(value).expect("JSON values serialize"));
        Self::with_bytes(res, rv, value, bytes)
    }

    /// [`Obj::new`] when `bytes` are already `value` serialized.
    fn with_bytes(res: &str, rv: u64, value: &Value, bytes: Bytes) -> Self {
        let (group, plural) = res.split_once('/').unwrap_or(("", res));
        Self {
            rv,
            bytes,
            attrs: Attrs::of(group, plural, value),
            derived: OnceLock::new(),
        }
    }

    /// The object, parsed from its bytes (a fresh tree on every call).
    pub(crate) fn value(&self) -> Value {
        serde_json::from_slice(&self.bytes).expect("stored bytes are the JSON of a value")
    }

    /// The fields of the object that `fields` names, parsed from its bytes
    /// without building the rest (see `windlass_selector::partial`).
    pub(crate) fn fields(&self, fields: &Fields) -> Value {
        partial::parse(&self.bytes, fields).expect("stored bytes are the JSON of a value")
    }

    /// Sets what [`Obj::derived`] returns for `T`, when the writer already
    /// knows it (a quota admission just charged); no-op if already set.
    pub(crate) fn prime<T: Any + Send + Sync>(&self, derived: T) {
        let _ = self.derived.set(Box::new(derived));
    }

    /// `read(&self.value())`, computed on the first call and kept with this
    /// version of the object: admission reads every quota and limit range
    /// of a namespace on each write, and they change far less often. One
    /// type per kind of object: a call with another type recomputes.
    pub(crate) fn derived<T: Any + Send + Sync + Clone>(
        &self,
        read: impl FnOnce(&Value) -> T,
    ) -> Cow<'_, T> {
        let mut read = Some(read);
        let cached = self
            .derived
            .get_or_init(|| Box::new((read.take().expect("called once"))(&self.value())));
        match (cached.downcast_ref::<T>(), read) {
            (Some(t), _) => Cow::Borrowed(t),
            (None, Some(read)) => Cow::Owned(read(&self.value())),
            (None, None) => unreachable!("the cache was just filled with a T"),
        }
    }
}

/// A stored object with its parsed value, for a write that reads the whole
/// of the object it replaces (parsed once, outside the store's lock where
/// the write allows: see `update.rs`). No `Deref` to the [`Obj`]: its
/// `value()` would parse again what `value` holds.
#[derive(Debug)]
pub(crate) struct Current {
    pub(crate) obj: Arc<Obj>,
    pub(crate) value: Value,
}

impl Current {
    pub(crate) fn of(obj: Arc<Obj>) -> Self {
        let value = obj.value();
        Self { obj, value }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change, as watchers see it.
#[derive(Debug)]
pub(crate) struct Event {
    pub(crate) rv: u64,
    pub(crate) typ: EventType,
    /// Resource key, `group/plural`.
    pub(crate) res: String,
    pub(crate) ns: String,
    pub(crate) name: String,
    /// The new object (for a deletion: the last state, at the deletion revision).
    pub(crate) obj: Arc<Obj>,
    pub(crate) prev: Option<Arc<Obj>>,
    /// `{"type":..,"object":..}\n`, shared by every watcher.
    pub(crate) line: Bytes,
}

pub(crate) fn event_line(typ: &str, object: &[u8]) -> Bytes {
    let mut v = Vec::with_capacity(object.len() + 32);
    v.extend_from_slice(b"{\"type\":\"");
    v.extend_from_slice(typ.as_bytes());
    v.extend_from_slice(b"\",\"object\":");
    v.extend_from_slice(object);
    v.extend_from_slice(b"}\n");
    Bytes::from(v)
}

/// Why a requested revision cannot be served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RvError {
    /// Older than the history window.
    Expired,
    /// Newer than anything written.
    TooLarge,
}

type Table = BTreeMap<(String, String), Arc<Obj>>;

/// Replaces each object of `table` (resource `res`) that `coerce` changes
/// with its coerced form at the same revision: what every read returns from
/// then on, as kube's storage decoder gives it, with nothing written to
/// storage and no watch event (the stored object is unchanged).
fn recoerce(table: &mut Table, res: &str, coerce: impl Fn(&Value) -> Option<Value>) {
    for obj in table.values_mut() {
        if let Some(v) = coerce(&obj.value()) {
            *obj = Arc::new(Obj::new(res, obj.rv, &v));
        }
    }
}

/// `(namespace, name)`.
pub(crate) type Key = (String, String);

/// Past events plus the live feed, from [`State::subscribe`].
pub(crate) type Subscription = (Vec<Arc<Event>>, broadcast::Receiver<Arc<Event>>);

/// The whole in-memory state.
pub(crate) struct State {
    pub(crate) rv: u64,
    pub(crate) registry: Registry,
    tables: HashMap<String, Table>,
    ring: VecDeque<Arc<Event>>,
    ring_cap: usize,
    /// The bytes of the events in the ring (see [`Event::weight`]), and their bound.
    ring_bytes: usize,
    ring_max_bytes: usize,
    /// Writes waiting to be committed past which new writes are refused.
    commit_backlog: usize,
    /// Watches and snapshots can start from any revision `>= floor`.
    floor: u64,
    bus: broadcast::Sender<Arc<Event>>,
    storage: Storage,
    /// Inside [`State::write_together`]: the records to queue as one group.
    group: Option<Vec<(Record, Option<Ack>)>>,
    /// A write since the last garbage-collection pass may have given it
    /// work (see [`State::gc_may_need_pass`]); the first pass always runs.
    pub(crate) gc_pending: bool,
    /// Quota charges of creates not yet written to the quotas: admission's
    /// `Charges`, held here without this ground floor knowing their type
    /// (reached through `admission::Charges::of` and `of_mut`).
    pub(crate) charges: Option<Box<dyn Any + Send>>,
    /// Whether the write in progress may leave its quota charges in memory
    /// (a create whose caller flushes afterwards).
    pub(crate) charges_deferrable: bool,
    /// Carries out what a stored write sets off beyond itself (see
    /// [`FollowUp`]); set at start to `system::follow_up`, which writes in
    /// turn. The write path calls it without depending on it.
    pub(crate) follow_up: Option<fn(&mut State, FollowUp<'_>)>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("rv", &self.rv)
            .field("floor", &self.floor)
            .finish()
    }
}

/// What a stored write sets off, as a cluster's controllers would do it:
/// a new namespace gets its `default` ServiceAccount; a change in the
/// groups and versions served (a CRD registered or removed) brings the
/// APIServices up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FollowUp<'a> {
    NamespaceCreated(&'a str),
    ServedApisChanged,
}

/// Storage key of one object.
pub(crate) fn storage_key(res: &str, ns: &str, name: &str) -> String {
    [res, ns, name].join("/")
}

fn split_storage_key(key: &str) -> Option<(String, String, String)> {
    let mut parts = key.rsplitn(3, '/');
    let name = parts.next()?.to_owned();
    let ns = parts.next()?.to_owned();
    let res = parts.next()?.to_owned();
    Some((res, ns, name))
}

/// How much history the store keeps, and how much it lets pile up.
#[derive(Debug, Clone, Copy)]
pub(crate) struct History {
    /// Events watches can resume from.
    pub(crate) events: usize,
    /// Bytes of those events (serialized, with the object they replaced).
    pub(crate) bytes: usize,
    /// How far a watcher may fall behind the newest event.
    pub(crate) buffer: usize,
    /// Writes waiting to be committed past which writes are refused.
    pub(crate) commit_backlog: usize,
}

impl Event {
    /// The memory an event keeps alive in the history: its line, and the
    /// object it replaced (the new object is counted by its own line; the
    /// previous one is kept only for this event once it is superseded).
    fn weight(&self) -> usize {
        self.line.len() + self.prev.as_ref().map_or(0, |p| p.bytes.len())
    }
}

impl State {
    pub(crate) fn new(
        storage: Storage,
        start_rv: u64,
        objects: Vec<(String, Bytes)>,
        history: History,
    ) -> Self {
        let (bus, _) = broadcast::channel(history.buffer.max(16));
        let mut tables: HashMap<String, Table> = HashMap::new();
        for (key, bytes) in objects {
            let Some((res, ns, name)) = split_storage_key(&key) else {
                continue;
            };
            let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
                tracing::warn!(key, "skipping undecodable stored object");
                continue;
            };
            let rv = value["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let obj = Arc::new(Obj::with_bytes(&res, rv, &value, bytes));
            tables.entry(res).or_default().insert((ns, name), obj);
        }
        let mut registry = Registry::with_builtins();
        if let Some(crds) = tables.get("apiextensions.k8s.io/customresourcedefinitions") {
            for o in crds.values() {
                if let Ok(r) = crate::resources::from_crd(&o.value()) {
                    registry.insert(r);
                }
            }
        }
        for res in registry.all().filter(|r| !r.builtin) {
            if let Some(table) = tables.get_mut(&res.key()) {
                recoerce(table, &res.key(), |v| crate::intake::coerce_stored(res, v));
            }
        }
        Self {
            rv: start_rv,
            registry,
            tables,
            ring: VecDeque::new(),
            ring_cap: history.events.max(1),
            ring_bytes: 0,
            ring_max_bytes: history.bytes,
            commit_backlog: history.commit_backlog,
            floor: start_rv,
            bus,
            storage,
            group: None,
            gc_pending: true,
            charges: None,
            charges_deferrable: false,
            follow_up: None,
        }
    }

    /// Reads every stored object of resource `res` (`group/plural`) again
    /// through `coerce` (see [`recoerce`]).
    pub(crate) fn recoerce(&mut self, res: &str, coerce: impl Fn(&Value) -> Option<Value>) {
        if let Some(table) = self.tables.get_mut(res) {
            recoerce(table, res, coerce);
        }
    }

    pub(crate) fn get(&self, res: &str, ns: &str, name: &str) -> Option<Arc<Obj>> {
        self.tables
            .get(res)?
            .get(&(ns.to_owned(), name.to_owned()))
            .cloned()
    }

    /// Whether namespace `ns` holds any object of a resource (without
    /// collecting them, as [`State::list`] does).
    pub(crate) fn any_in(&self, res: &str, ns: &str) -> bool {
        self.tables.get(res).is_some_and(|t| {
            t.range((ns.to_owned(), String::new())..)
                .next()
                .is_some_and(|((n, _), _)| n == ns)
        })
    }

    /// Current objects of a resource, optionally in one namespace, in key order.
    pub(crate) fn list(&self, res: &str, ns: Option<&str>) -> Vec<Arc<Obj>> {
        let Some(t) = self.tables.get(res) else {
            return vec![];
        };
        match ns {
            None => t.values().cloned().collect(),
            Some(ns) => t
                .range((ns.to_owned(), String::new())..)
                .take_while(|((n, _), _)| n == ns)
                .map(|(_, o)| o.clone())
                .collect(),
        }
    }

    /// Keys and objects of a resource as of revision `at`, with keys after
    /// `after` only. Rebuilt from the current state by undoing newer events.
    pub(crate) fn snapshot(
        &self,
        res: &str,
        ns: Option<&str>,
        at: u64,
        after: Option<&(String, String)>,
    ) -> Result<Vec<(Key, Arc<Obj>)>, RvError> {
        if at > self.rv {
            return Err(RvError::TooLarge);
        }
        if at < self.floor {
            return Err(RvError::Expired);
        }
        let in_range =
            |k: &(String, String)| ns.is_none_or(|n| k.0 == n) && after.is_none_or(|a| k > a);
        let mut map: BTreeMap<(String, String), Arc<Obj>> = match self.tables.get(res) {
            Some(t) => t
                .iter()
                .filter(|(k, _)| in_range(k))
                .map(|(k, o)| (k.clone(), o.clone()))
                .collect(),
            None => BTreeMap::new(),
        };
        if at < self.rv {
            let start = self.ring.partition_point(|e| e.rv <= at);
            for e in self.ring.range(start..).rev() {
                if e.res != res {
                    continue;
                }
                let k = (e.ns.clone(), e.name.clone());
                if !in_range(&k) {
                    continue;
                }
                match &e.prev {
                    Some(p) => {
                        map.insert(k, p.clone());
                    }
                    None => {
                        map.remove(&k);
                    }
                }
            }
        }
        Ok(map.into_iter().collect())
    }

    /// Events after `from` plus a live receiver, atomically.
    pub(crate) fn subscribe(&self, from: u64) -> Result<Subscription, RvError> {
        if from < self.floor {
            return Err(RvError::Expired);
        }
        let start = self.ring.partition_point(|e| e.rv <= from);
        let past = self.ring.range(start..).cloned().collect();
        Ok((past, self.bus.subscribe()))
    }

    /// Drops the event history: watches from any earlier revision get 410.
    pub(crate) fn compact(&mut self) {
        self.ring.clear();
        self.ring_bytes = 0;
        self.floor = self.rv;
    }

    /// Refuses writes while storage is failing and more than the allowed
    /// backlog of writes waits to be committed: they are in memory only,
    /// and would be lost (and keep growing) if the disk never recovers.
    pub(crate) fn check_writable(&self) -> Result<(), crate::storage::Backlog> {
        match self.storage.backlog() {
            Some(b) if b.failing.is_some() && b.writes >= self.commit_backlog => Err(b),
            _ => Ok(()),
        }
    }

    /// Whether the last commit failed, and why.
    pub(crate) fn storage_failure(&self) -> Option<String> {
        self.storage.backlog().and_then(|b| b.failing)
    }

    /// Runs `f`, whose writes are committed to storage in one transaction:
    /// a crash keeps all of them or none (see [`Storage::append_group`]).
    pub(crate) fn write_together<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        if self.group.is_some() {
            return f(self);
        }
        self.group = Some(Vec::new());
        let out = f(self);
        if let Some(group) = self.group.take()
            && !group.is_empty()
        {
            self.storage.append_group(group);
        }
        out
    }

    /// Stores `value` (or deletes, with `None`) and returns the stored object
    /// and the storage acknowledgement. `value` must already carry its final
    /// metadata except `resourceVersion`, which is assigned here.
    pub(crate) fn write(
        &mut self,
        res: &str,
        ns: &str,
        name: &str,
        value: Option<Value>,
    ) -> (Arc<Obj>, oneshot::Receiver<Result<(), String>>) {
        let (obj, ack, _) = self.write_record(res, ns, name, value, false);
        (obj, ack)
    }

    /// [`State::write`] of a revision whose row a newer revision of the
    /// same object may replace, when both are committed in the same
    /// transaction (a quota's `status.used` charged by concurrent creates):
    /// watchers and readers still see every revision. Gives back the value
    /// stored, with its `resourceVersion` (for the next charge to start from).
    pub(crate) fn write_supersedable(
        &mut self,
        res: &str,
        ns: &str,
        name: &str,
        value: Value,
    ) -> (Arc<Obj>, oneshot::Receiver<Result<(), String>>, Value) {
        let (obj, ack, value) = self.write_record(res, ns, name, Some(value), true);
        (obj, ack, value.expect("a value was stored"))
    }

    fn write_record(
        &mut self,
        res: &str,
        ns: &str,
        name: &str,
        value: Option<Value>,
        supersedable: bool,
    ) -> (
        Arc<Obj>,
        oneshot::Receiver<Result<(), String>>,
        Option<Value>,
    ) {
        let key = (ns.to_owned(), name.to_owned());
        let prev = self.tables.get(res).and_then(|t| t.get(&key)).cloned();
        self.rv += 1;
        let rv = self.rv;
        let (typ, obj, stored) = match value {
            Some(mut v) => {
                v["metadata"]["resourceVersion"] = Value::String(rv.to_string());
                let obj = Arc::new(Obj::new(res, rv, &v));
                self.tables
                    .entry(res.to_owned())
                    .or_default()
                    .insert(key, obj.clone());
                let typ = if prev.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                (typ, obj, Some(v))
            }
            None => {
                let mut v = prev.as_ref().map_or(Value::Null, |p| p.value());
                if let Some(t) = self.tables.get_mut(res) {
                    t.remove(&key);
                }
                if v.is_object() {
                    v["metadata"]["resourceVersion"] = Value::String(rv.to_string());
                }
                (EventType::Deleted, Arc::new(Obj::new(res, rv, &v)), None)
            }
        };
        if !self.gc_pending {
            let new = (typ != EventType::Deleted).then_some(&obj.attrs);
            self.gc_pending = self.gc_may_need_pass(ns, prev.as_ref().map(|p| &p.attrs), new);
        }
        let line = event_line(typ.as_str(), &obj.bytes);
        let event = Arc::new(Event {
            rv,
            typ,
            res: res.to_owned(),
            ns: ns.to_owned(),
            name: name.to_owned(),
            obj: obj.clone(),
            prev,
            line,
        });
        self.ring_bytes += event.weight();
        self.ring.push_back(event.clone());
        // The newest event always stays: a watch must be able to start from it.
        while (self.ring.len() > self.ring_cap || self.ring_bytes > self.ring_max_bytes)
            && self.ring.len() > 1
            && let Some(old) = self.ring.pop_front()
        {
            self.ring_bytes -= old.weight();
            self.floor = old.rv;
        }
        let _ = self.bus.send(event);
        let (tx, rx): (Ack, _) = oneshot::channel();
        let record = Record {
            rv,
            key: storage_key(res, ns, name),
            value: (typ != EventType::Deleted).then(|| obj.bytes.clone()),
            supersedable,
        };
        match &mut self.group {
            Some(group) => group.push((record, Some(tx))),
            None => self.storage.append_group(vec![(record, Some(tx))]),
        }
        (obj, rx, stored)
    }

    /// Carries out what a stored write set off (nothing when no follow-up
    /// is wired, as in unit tests of the write path alone).
    pub(crate) fn follow_up(&mut self, what: FollowUp<'_>) {
        if let Some(f) = self.follow_up {
            f(self, what);
        }
    }

    /// Moves events an older server stored apart, as `events.k8s.io`
    /// objects, into the core Events they are now stored as (see
    /// [`Resource::is_events_api`](crate::resources::Resource::is_events_api)):
    /// each is written again, converted, and its old row deleted. Returns
    /// how many moved.
    pub(crate) fn adopt_events_api_rows(&mut self) -> usize {
        const OLD: &str = "events.k8s.io/events";
        let Some(res) = self.registry.get_key(OLD).cloned() else {
            return 0;
        };
        let core = res.storage_key();
        let old: Vec<Arc<Obj>> = self.list(OLD, None);
        for o in &old {
            let (ns, name) = (o.attrs.namespace.to_string(), o.attrs.name.to_string());
            if self.get(&core, &ns, &name).is_some() {
                tracing::warn!(namespace = %ns, name = %name, "an events.k8s.io event has the name of a core one; keeping the core one");
            } else {
                let v = crate::convert::from_version(&res, "v1", o.value());
                self.write(&core, &ns, &name, Some(v));
            }
            self.write(OLD, &ns, &name, None);
        }
        old.len()
    }

    /// Every stored object with its resource key.
    pub(crate) fn all_objects(&self) -> Vec<(String, Arc<Obj>)> {
        let mut out = Vec::new();
        for (res, t) in &self.tables {
            out.extend(t.values().map(|o| (res.clone(), o.clone())));
        }
        out
    }

    pub(crate) fn close_storage(&mut self) {
        self.storage.close();
    }
}

/// What tells garbage collection it may have work.
impl State {
    /// Whether a write (`old` → `new`, `None` for absent) in namespace `ns` can
    /// give garbage collection work. Called for every write, so it must stay
    /// cheap: no scan, at most one lookup per owner reference it adds.
    fn gc_may_need_pass(&self, ns: &str, old: Option<&Attrs>, new: Option<&Attrs>) -> bool {
        let Some(new) = new else {
            // Anything deleted may have been someone's owner.
            return old.is_some();
        };
        if new.deleting && old.is_none_or(|o| !o.deleting || o.finalizers != new.finalizers) {
            return true;
        }
        let before = old.map_or(&[][..], |o| &o.owners);
        let after = &new.owners[..];
        if after == before {
            return false;
        }
        // A reference removed may be what a foreground deletion waits on.
        let removed = before.iter().any(|b| !after.contains(b));
        removed
            || after
                .iter()
                .filter(|r| !before.contains(r))
                .any(|r| !self.owner_standing(ns, r))
    }

    /// The owner a reference names exists, with that uid, and is not being
    /// deleted.
    fn owner_standing(&self, ns: &str, reference: &OwnerRef) -> bool {
        let OwnerRef {
            api_version,
            kind,
            name,
            uid,
            ..
        } = reference;
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let Some(res) = self
            .registry
            .all()
            .find(|r| r.kind == **kind && r.group == group)
        else {
            return false;
        };
        let owner_ns = if res.namespaced { ns } else { "" };
        self.get(&res.storage_key(), owner_ns, name)
            .is_some_and(|o| o.attrs.uid == *uid && !o.attrs.deleting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn history(events: usize, bytes: usize) -> History {
        History {
            events,
            bytes,
            buffer: 64,
            commit_backlog: 10,
        }
    }

    fn state() -> State {
        let (s, _) = Storage::in_memory();
        State::new(s, 100, vec![], history(4, usize::MAX))
    }

    #[test]
    fn events_stored_apart_by_an_older_server_become_core_events() {
        let old = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "a", "resourceVersion": "7"},
            "regarding": {"kind": "Pod", "name": "p", "namespace": "a"}, "note": "hi",
            "reportingController": "x.io/c", "eventTime": "2026-01-01T00:00:00.000000Z"});
        let bytes = Bytes::from(serde_json::to_vec(&old).unwrap());
        let (s, _) = Storage::in_memory();
        let objects = vec![("events.k8s.io/events/a/e".to_owned(), bytes)];
        let mut st = State::new(s, 100, objects, history(16, usize::MAX));
        assert_eq!(st.adopt_events_api_rows(), 1);
        assert!(st.list("events.k8s.io/events", None).is_empty());
        let core = st.get("/events", "a", "e").expect("moved").value();
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["message"], "hi");
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["reportingComponent"], "x.io/c");
        assert!(core.get("note").is_none() && core.get("regarding").is_none());
        // Once moved, nothing is left to move.
        assert_eq!(st.adopt_events_api_rows(), 0);
    }

    #[test]
    fn snapshot_undoes_newer_events() {
        let mut st = state();
        st.write(
            "/configmaps",
            "a",
            "x",
            Some(json!({"metadata": {"name": "x"}, "data": {"v": "1"}})),
        );
        let at = st.rv;
        st.write(
            "/configmaps",
            "a",
            "x",
            Some(json!({"metadata": {"name": "x"}, "data": {"v": "2"}})),
        );
        st.write(
            "/configmaps",
            "a",
            "y",
            Some(json!({"metadata": {"name": "y"}})),
        );
        let snap = st.snapshot("/configmaps", Some("a"), at, None).unwrap();
        assert_eq!(snap.len(), 1);
        assert_eq!(snap[0].1.value()["data"]["v"], "1");
        assert_eq!(
            st.snapshot("/configmaps", None, st.rv, None).unwrap().len(),
            2
        );
        assert_eq!(
            st.snapshot("/configmaps", None, st.rv + 1, None)
                .unwrap_err(),
            RvError::TooLarge
        );
    }

    /// `any_in` sees only its namespace, including one whose name another
    /// namespace's begins with, and a deletion.
    #[test]
    fn any_in_is_about_one_namespace() {
        let mut st = state();
        assert!(!st.any_in("/resourcequotas", "a"));
        st.write(
            "/resourcequotas",
            "ab",
            "q",
            Some(json!({"metadata": {"name": "q"}})),
        );
        assert!(!st.any_in("/resourcequotas", "a"));
        assert!(st.any_in("/resourcequotas", "ab"));
        st.write(
            "/resourcequotas",
            "a",
            "q",
            Some(json!({"metadata": {"name": "q"}})),
        );
        assert!(st.any_in("/resourcequotas", "a"));
        st.write("/resourcequotas", "a", "q", None);
        assert!(!st.any_in("/resourcequotas", "a"));
        assert!(!st.any_in("/pods", "ab"));
    }

    #[test]
    fn ring_overflow_raises_the_floor() {
        let mut st = state();
        for i in 0..6 {
            st.write(
                "/configmaps",
                "a",
                &format!("c{i}"),
                Some(json!({"metadata": {}})),
            );
        }
        // 6 events, ring of 4: events 101 and 102 are gone.
        assert_eq!(st.subscribe(101).unwrap_err(), RvError::Expired);
        let (past, _) = st.subscribe(102).unwrap();
        assert_eq!(
            past.iter().map(|e| e.rv).collect::<Vec<_>>(),
            vec![103, 104, 105, 106]
        );
        st.compact();
        assert!(st.subscribe(105).is_err());
        assert!(st.subscribe(106).unwrap().0.is_empty());
    }

    #[test]
    fn a_derived_reading_is_made_once_per_version() {
        let obj = Obj::new("/configmaps", 1, &json!({"n": 2}));
        let calls = std::cell::Cell::new(0);
        let read = |v: &Value| {
            calls.set(calls.get() + 1);
            v["n"].as_i64().unwrap()
        };
        assert_eq!(*obj.derived(read), 2);
        assert_eq!(*obj.derived(read), 2);
        assert_eq!(calls.get(), 1);
        // Another type is computed, not cached over the first.
        assert_eq!(*obj.derived(|_| "other".to_owned()), "other");
        let primed = Obj::new("/configmaps", 2, &json!({"n": 3}));
        primed.prime(30i64);
        assert_eq!(*primed.derived(read), 30);
        assert_eq!(calls.get(), 1);
    }

    #[test]
    fn deletion_event_carries_new_revision() {
        let mut st = state();
        st.write(
            "/configmaps",
            "a",
            "x",
            Some(json!({"metadata": {"name": "x"}})),
        );
        let (obj, _) = st.write("/configmaps", "a", "x", None);
        assert_eq!(obj.value()["metadata"]["resourceVersion"], "102");
        assert!(st.get("/configmaps", "a", "x").is_none());
        let (past, _) = st.subscribe(101).unwrap();
        assert_eq!(past[0].typ, EventType::Deleted);
        assert!(past[0].line.starts_with(b"{\"type\":\"DELETED\""));
    }

    /// The limit: the history's bytes, not only its events. Ten 100 KB
    /// objects in a 350 KB budget: only the newest three stay.
    #[test]
    fn the_history_is_bounded_in_bytes() {
        let (s, _) = Storage::in_memory();
        let mut st = State::new(s, 100, vec![], history(1_000, 350_000));
        let big = "x".repeat(100_000);
        for i in 0..10 {
            st.write(
                "/configmaps",
                "a",
                &format!("c{i}"),
                Some(json!({"metadata": {}, "data": {"v": big}})),
            );
        }
        let (past, _) = st.subscribe(st.floor).unwrap();
        assert_eq!(past.len(), 3);
        assert!(st.ring_bytes <= 350_000);
        assert_eq!(st.subscribe(105).unwrap_err(), RvError::Expired);
        // One event larger than the whole budget still stays, alone.
        let (s, _) = Storage::in_memory();
        let mut st = State::new(s, 100, vec![], history(1_000, 10));
        st.write("/configmaps", "a", "x", Some(json!({"metadata": {}})));
        st.write("/configmaps", "a", "y", Some(json!({"metadata": {}})));
        assert_eq!(st.subscribe(101).unwrap().0.len(), 1);
    }
}
