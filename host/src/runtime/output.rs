//! What the exports of each contract version return, as lifted by the host:
//! records and variants mirroring the WIT, with every string and list
//! capped (see `lift.rs`), converted into one version-independent raw form
//! that `outcome.rs` checks against the manifest.
//!
//! The load-time type check of the exports (`bindings::Exports`) holds these
//! types to the component's own, field by field, so a mismatch refuses the
//! plugin rather than misreading its memory.

use wasmtime::component::{ComponentType, Lift};

use super::lift::{List, Text, cap};
use crate::contract::{DeleteOptions, Grant, IndexEntry, Manifest, Propagation, Watch};
use crate::model::{KindRef, ObjectRef};

type Json = Text<{ cap::OBJECT }>;
type Short = Text<{ cap::TEXT }>;
type Message = Text<{ cap::MESSAGE }>;

/// A write in either version's terms, unchecked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RawWrite {
    Apply(String),
    Replace(String),
    UpdateStatus(String),
    MergePatch {
        target: ObjectRef,
        subresource: Option<String>,
        patch: String,
    },
    Delete {
        target: ObjectRef,
        options: DeleteOptions,
    },
    CreateSubresource {
        target: ObjectRef,
        subresource: String,
        body: String,
    },
}

/// An event, unchecked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawEvent {
    pub warning: bool,
    pub reason: String,
    pub message: String,
    pub regarding: Option<ObjectRef>,
}

/// An outcome, unchecked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RawOutcome {
    pub writes: Vec<RawWrite>,
    pub prune_owned: bool,
    pub requeue_after_ms: Option<u64>,
    pub events: Vec<RawEvent>,
}

/// A reconcile's answer: an outcome, or the plugin's error and whether to retry.
pub(crate) type RawResult = Result<RawOutcome, (String, bool)>;

// ---- shared shapes (identical in 0.1 and 0.2) -------------------------------

#[derive(ComponentType, Lift, Debug)]
#[component(record)]
pub(crate) struct KindOut {
    #[component(name = "api-version")]
    api_version: Short,
    kind: Short,
}

impl From<KindOut> for KindRef {
    fn from(k: KindOut) -> Self {
        KindRef::new(k.api_version.0, k.kind.0)
    }
}

#[derive(ComponentType, Lift, Debug)]
#[component(record)]
pub(crate) struct RefOut {
    #[component(name = "api-version")]
    api_version: Short,
    kind: Short,
    namespace: Option<Short>,
    name: Short,
}

impl From<RefOut> for ObjectRef {
    fn from(r: RefOut) -> Self {
        ObjectRef {
            api_version: r.api_version.0,
            kind: r.kind.0,
            namespace: r.namespace.map(|n| n.0).filter(|ns| !ns.is_empty()),
            name: r.name.0,
        }
    }
}

// Its values are made by lifting, which the compiler does not see.
#[allow(dead_code)]
#[derive(ComponentType, Lift, Debug, Clone, Copy)]
#[component(enum)]
#[repr(u8)]
pub(crate) enum EventTypeOut {
    #[component(name = "normal")]
    Normal,
    #[component(name = "warning")]
    Warning,
}

#[derive(ComponentType, Lift, Debug)]
#[component(record)]
pub(crate) struct EventOut {
    #[component(name = "type")]
    type_: EventTypeOut,
    reason: Short,
    message: Message,
    regarding: Option<RefOut>,
}

impl From<EventOut> for RawEvent {
    fn from(e: EventOut) -> Self {
        RawEvent {
            warning: matches!(e.type_, EventTypeOut::Warning),
            reason: e.reason.0,
            message: e.message.0,
            regarding: e.regarding.map(Into::into),
        }
    }
}

#[derive(ComponentType, Lift, Debug)]
#[component(record)]
pub(crate) struct ErrorOut {
    message: Message,
    retry: bool,
}

/// `map`'s answer in either version.
pub(crate) type MapOut = List<RefOut, { cap::MAP_KEYS }>;

fn non_empty(s: Option<Short>) -> Option<String> {
    s.map(|s| s.0).filter(|s| !s.trim().is_empty())
}

// ---- 0.1 ---------------------------------------------------------------------

pub(crate) mod v1 {
    use super::*;

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct WatchOut {
        kind: KindOut,
        namespace: Option<Short>,
        #[component(name = "label-selector")]
        label_selector: Option<Short>,
        #[component(name = "field-selector")]
        field_selector: Option<Short>,
    }

    impl From<WatchOut> for Watch {
        fn from(w: WatchOut) -> Self {
            Watch {
                kind: w.kind.into(),
                namespace: non_empty(w.namespace),
                label_selector: non_empty(w.label_selector),
                field_selector: non_empty(w.field_selector),
                indexed: false,
            }
        }
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct ManifestOut {
        name: Short,
        version: Short,
        reconciles: WatchOut,
        owns: List<WatchOut, { cap::WATCHES }>,
        reads: List<WatchOut, { cap::WATCHES }>,
        #[component(name = "resync-seconds")]
        resync_seconds: Option<u32>,
        finalizer: Option<Short>,
        #[component(name = "max-concurrency")]
        max_concurrency: u32,
    }

    impl From<ManifestOut> for Manifest {
        fn from(m: ManifestOut) -> Self {
            Manifest {
                name: m.name.0,
                version: m.version.0,
                reconciles: m.reconciles.into(),
                owns: m.owns.0.into_iter().map(Into::into).collect(),
                reads: m.reads.0.into_iter().map(Into::into).collect(),
                writes: Vec::new(),
                resync_seconds: m.resync_seconds,
                finalizer: non_empty(m.finalizer),
                max_concurrency: m.max_concurrency,
            }
        }
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct PatchOut {
        target: RefOut,
        patch: Json,
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(variant)]
    pub(crate) enum WriteOut {
        #[component(name = "apply")]
        Apply(Json),
        #[component(name = "replace")]
        Replace(Json),
        #[component(name = "update-status")]
        UpdateStatus(Json),
        #[component(name = "merge-patch")]
        MergePatch(PatchOut),
        #[component(name = "delete")]
        Delete(RefOut),
    }

    impl From<WriteOut> for RawWrite {
        fn from(w: WriteOut) -> Self {
            match w {
                WriteOut::Apply(t) => RawWrite::Apply(t.0),
                WriteOut::Replace(t) => RawWrite::Replace(t.0),
                WriteOut::UpdateStatus(t) => RawWrite::UpdateStatus(t.0),
                WriteOut::MergePatch(p) => RawWrite::MergePatch {
                    target: p.target.into(),
                    subresource: None,
                    patch: p.patch.0,
                },
                WriteOut::Delete(r) => RawWrite::Delete {
                    target: r.into(),
                    options: DeleteOptions::default(),
                },
            }
        }
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct OutcomeOut {
        writes: List<WriteOut, { cap::WRITES }>,
        #[component(name = "prune-owned")]
        prune_owned: bool,
        #[component(name = "requeue-after-ms")]
        requeue_after_ms: Option<u64>,
        events: List<EventOut, { cap::EVENTS }>,
    }

    /// `reconcile` / `finalize`'s answer.
    pub(crate) type ReconcileOut = Result<OutcomeOut, ErrorOut>;

    pub(crate) fn raw(r: ReconcileOut) -> RawResult {
        match r {
            Ok(o) => Ok(RawOutcome {
                writes: o.writes.0.into_iter().map(Into::into).collect(),
                prune_owned: o.prune_owned,
                requeue_after_ms: o.requeue_after_ms,
                events: o.events.0.into_iter().map(Into::into).collect(),
            }),
            Err(e) => Err((e.message.0, e.retry)),
        }
    }
}

// ---- 0.2 ---------------------------------------------------------------------

pub(crate) mod v2 {
    use super::*;

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct WatchOut {
        kind: KindOut,
        namespace: Option<Short>,
        #[component(name = "label-selector")]
        label_selector: Option<Short>,
        #[component(name = "field-selector")]
        field_selector: Option<Short>,
        indexed: bool,
    }

    impl From<WatchOut> for Watch {
        fn from(w: WatchOut) -> Self {
            Watch {
                kind: w.kind.into(),
                namespace: non_empty(w.namespace),
                label_selector: non_empty(w.label_selector),
                field_selector: non_empty(w.field_selector),
                indexed: w.indexed,
            }
        }
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct GrantOut {
        kind: KindOut,
        namespace: Option<Short>,
        subresource: Option<Short>,
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct ManifestOut {
        name: Short,
        version: Short,
        reconciles: WatchOut,
        owns: List<WatchOut, { cap::WATCHES }>,
        reads: List<WatchOut, { cap::WATCHES }>,
        writes: List<GrantOut, { cap::WATCHES }>,
        #[component(name = "resync-seconds")]
        resync_seconds: Option<u32>,
        finalizer: Option<Short>,
        #[component(name = "max-concurrency")]
        max_concurrency: u32,
    }

    impl From<ManifestOut> for Manifest {
        fn from(m: ManifestOut) -> Self {
            Manifest {
                name: m.name.0,
                version: m.version.0,
                reconciles: m.reconciles.into(),
                owns: m.owns.0.into_iter().map(Into::into).collect(),
                reads: m.reads.0.into_iter().map(Into::into).collect(),
                writes: m
                    .writes
                    .0
                    .into_iter()
                    .map(|g| Grant {
                        kind: g.kind.into(),
                        namespace: non_empty(g.namespace),
                        subresource: non_empty(g.subresource),
                    })
                    .collect(),
                resync_seconds: m.resync_seconds,
                finalizer: non_empty(m.finalizer),
                max_concurrency: m.max_concurrency,
            }
        }
    }

    /// `manifest`'s answer: a manifest, or why the plugin refuses to load.
    pub(crate) type ManifestResult = Result<ManifestOut, Message>;

    // Its values are made by lifting, which the compiler does not see.
    #[allow(dead_code)]
    #[derive(ComponentType, Lift, Debug, Clone, Copy)]
    #[component(enum)]
    #[repr(u8)]
    pub(crate) enum PropagationOut {
        #[component(name = "background")]
        Background,
        #[component(name = "foreground")]
        Foreground,
        #[component(name = "orphan")]
        Orphan,
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct DeleteOptionsOut {
        #[component(name = "grace-period-seconds")]
        grace_period_seconds: Option<i64>,
        uid: Option<Short>,
        #[component(name = "resource-version")]
        resource_version: Option<Short>,
        propagation: Option<PropagationOut>,
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct DeleteOut {
        target: RefOut,
        options: DeleteOptionsOut,
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct PatchOut {
        target: RefOut,
        subresource: Option<Short>,
        patch: Json,
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct SubresourceOut {
        target: RefOut,
        subresource: Short,
        body: Json,
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(variant)]
    pub(crate) enum WriteOut {
        #[component(name = "apply")]
        Apply(Json),
        #[component(name = "replace")]
        Replace(Json),
        #[component(name = "update-status")]
        UpdateStatus(Json),
        #[component(name = "merge-patch")]
        MergePatch(PatchOut),
        #[component(name = "delete")]
        Delete(DeleteOut),
        #[component(name = "create-subresource")]
        CreateSubresource(SubresourceOut),
    }

    impl From<WriteOut> for RawWrite {
        fn from(w: WriteOut) -> Self {
            match w {
                WriteOut::Apply(t) => RawWrite::Apply(t.0),
                WriteOut::Replace(t) => RawWrite::Replace(t.0),
                WriteOut::UpdateStatus(t) => RawWrite::UpdateStatus(t.0),
                WriteOut::MergePatch(p) => RawWrite::MergePatch {
                    target: p.target.into(),
                    subresource: p.subresource.map(|s| s.0),
                    patch: p.patch.0,
                },
                WriteOut::Delete(d) => RawWrite::Delete {
                    target: d.target.into(),
                    options: DeleteOptions {
                        grace_period_seconds: d.options.grace_period_seconds,
                        uid: d.options.uid.map(|s| s.0),
                        resource_version: d.options.resource_version.map(|s| s.0),
                        propagation: d.options.propagation.map(|p| match p {
                            PropagationOut::Background => Propagation::Background,
                            PropagationOut::Foreground => Propagation::Foreground,
                            PropagationOut::Orphan => Propagation::Orphan,
                        }),
                    },
                },
                WriteOut::CreateSubresource(c) => RawWrite::CreateSubresource {
                    target: c.target.into(),
                    subresource: c.subresource.0,
                    body: c.body.0,
                },
            }
        }
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct OutcomeOut {
        writes: List<WriteOut, { cap::WRITES }>,
        #[component(name = "prune-owned")]
        prune_owned: bool,
        #[component(name = "requeue-after-ms")]
        requeue_after_ms: Option<u64>,
        events: List<EventOut, { cap::EVENTS }>,
    }

    /// `reconcile` / `finalize`'s answer.
    pub(crate) type ReconcileOut = Result<OutcomeOut, ErrorOut>;

    pub(crate) fn raw(r: ReconcileOut) -> RawResult {
        match r {
            Ok(o) => Ok(RawOutcome {
                writes: o.writes.0.into_iter().map(Into::into).collect(),
                prune_owned: o.prune_owned,
                requeue_after_ms: o.requeue_after_ms,
                events: o.events.0.into_iter().map(Into::into).collect(),
            }),
            Err(e) => Err((e.message.0, e.retry)),
        }
    }

    #[derive(ComponentType, Lift, Debug)]
    #[component(record)]
    pub(crate) struct IndexEntryOut {
        keys: List<Short, { cap::INDEX_KEYS }>,
        amounts: List<i64, { cap::INDEX_KEYS }>,
        summary: List<u8, { cap::SUMMARY }>,
    }

    /// `index`'s answer.
    pub(crate) type IndexOut = Option<IndexEntryOut>;

    impl From<IndexEntryOut> for IndexEntry {
        fn from(e: IndexEntryOut) -> Self {
            IndexEntry {
                keys: e.keys.0.into_iter().map(|k| k.0).collect(),
                amounts: e.amounts.0,
                summary: e.summary.0.into(),
            }
        }
    }
}
