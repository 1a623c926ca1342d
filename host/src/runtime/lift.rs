//! Lifting what a plugin returns, with its caps checked before the host
//! allocates anything for it.
//!
//! wasmtime lifts a call's results into host values as the call returns,
//! and a `list<write>` of a million empty writes, or one 60 MiB string,
//! would be allocated on the host before any check of ours could run. So
//! the output types of the exports (`output.rs`) are built from two
//! wrappers whose `Lift` reads a string's or list's length first and
//! charges it against the call's budget: a string over its cap, a list
//! with more items than allowed, or output past the total fails the lift
//! with [`OutputLimit`], and nothing of it is copied. The budget lives in a
//! thread-local for the duration of one call ([`within`]), since lifting
//! happens inside wasmtime on the calling thread.
//!
//! The same budget bounds what the `log` import keeps ([`LogText`]).

use std::cell::RefCell;

use wasmtime::ValRaw;
use wasmtime::component::__internal::{CanonicalAbiInfo, InstanceType, InterfaceType, LiftContext};
use wasmtime::component::{ComponentType, Lift};

/// Per-call output limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLimits {
    /// Bytes of one written object (JSON text), or of one patch or body.
    pub max_object_bytes: usize,
    /// Bytes of everything one call returns, all strings together.
    pub max_output_bytes: usize,
    /// Writes in one outcome.
    pub max_writes: usize,
    /// Events in one outcome.
    pub max_events: usize,
    /// Keys one `map` call returns.
    pub max_map_keys: usize,
    /// Keys and amounts of one index entry.
    pub max_index_keys: usize,
    /// Bytes of one index entry's summary.
    pub max_summary_bytes: usize,
    /// Bytes the `log` import and the guest's stdout/stderr keep per call.
    pub max_log_bytes: usize,
}

impl Default for OutputLimits {
    fn default() -> Self {
        Self {
            // The API server's request body limit.
            max_object_bytes: 3 << 20,
            max_output_bytes: 16 << 20,
            max_writes: 10_000,
            max_events: 1_000,
            max_map_keys: 100_000,
            max_index_keys: 256,
            max_summary_bytes: 64 << 10,
            max_log_bytes: 64 << 10,
        }
    }
}

/// Output over one of the caps: the call fails with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OutputLimit(pub String);

/// What one string or list is, for its cap and the message.
pub(crate) mod cap {
    /// A written object, patch or body.
    pub const OBJECT: u8 = 0;
    /// A name, kind, reason, key or other short text (4 KiB).
    pub const TEXT: u8 = 1;
    /// An event or error message (16 KiB).
    pub const MESSAGE: u8 = 2;
    /// The writes of an outcome.
    pub const WRITES: u8 = 3;
    /// The events of an outcome.
    pub const EVENTS: u8 = 4;
    /// The keys `map` returns.
    pub const MAP_KEYS: u8 = 5;
    /// The keys or amounts of an index entry.
    pub const INDEX_KEYS: u8 = 6;
    /// An index entry's summary bytes.
    pub const SUMMARY: u8 = 7;
    /// The watches or grants of a manifest.
    pub const WATCHES: u8 = 8;
}

const MAX_TEXT: usize = 4 << 10;
const MAX_MESSAGE: usize = 16 << 10;

struct Budget {
    limits: OutputLimits,
    /// Bytes charged so far (strings, and list items at their host size).
    bytes: usize,
    /// Log bytes kept so far, and dropped.
    log_kept: usize,
    log_dropped: usize,
}

thread_local! {
    static BUDGET: RefCell<Option<Budget>> = const { RefCell::new(None) };
}

/// Runs `f` (one plugin call, from instantiation to its checked result)
/// with a fresh budget under `limits`.
pub(crate) fn within<R>(limits: &OutputLimits, f: impl FnOnce() -> R) -> R {
    let fresh = Budget {
        limits: limits.clone(),
        bytes: 0,
        log_kept: 0,
        log_dropped: 0,
    };
    /// Puts the previous budget back, also when `f` unwinds.
    struct Restore(Option<Budget>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            BUDGET.with(|b| *b.borrow_mut() = previous);
        }
    }
    let _restore = Restore(BUDGET.with(|b| b.replace(Some(fresh))));
    f()
}

/// Log bytes the current call dropped for being over its log cap.
pub(crate) fn log_dropped() -> usize {
    BUDGET.with(|b| b.borrow().as_ref().map_or(0, |b| b.log_dropped))
}

fn charge(what: u8, len: usize, item_bytes: usize) -> wasmtime::Result<()> {
    BUDGET.with(|b| {
        let mut b = b.borrow_mut();
        // Outside `within` (a test lifting by hand) nothing is capped.
        let Some(b) = b.as_mut() else { return Ok(()) };
        let l = &b.limits;
        let (max, unit, noun) = match what {
            cap::OBJECT => (l.max_object_bytes, "bytes", "a written object"),
            cap::TEXT => (MAX_TEXT, "bytes", "a name or other text"),
            cap::MESSAGE => (MAX_MESSAGE, "bytes", "a message"),
            cap::WRITES => (l.max_writes, "writes", "the outcome"),
            cap::EVENTS => (l.max_events, "events", "the outcome"),
            cap::MAP_KEYS => (l.max_map_keys, "keys", "map's answer"),
            cap::INDEX_KEYS => (l.max_index_keys, "keys or amounts", "an index entry"),
            cap::SUMMARY => (l.max_summary_bytes, "bytes", "an index summary"),
            _ => (crate::contract::MAX_WATCHES, "watches", "the manifest"),
        };
        if len > max {
            return Err(OutputLimit(format!(
                "{noun} has {len} {unit}, more than the limit of {max}"
            ))
            .into());
        }
        let bytes = len.saturating_mul(item_bytes.max(1));
        b.bytes = b.bytes.saturating_add(bytes);
        if b.bytes > l.max_output_bytes {
            return Err(OutputLimit(format!(
                "the call returned more than the limit of {} bytes",
                l.max_output_bytes
            ))
            .into());
        }
        Ok(())
    })
}

/// The length of a string or list from its flat (pointer, length) pair.
fn flat_len(src: &[ValRaw; 2]) -> usize {
    src[1].get_u32() as usize
}

/// The length of a string or list stored in memory as (pointer, length).
fn memory_len(bytes: &[u8]) -> usize {
    let mut len = [0u8; 4];
    len.copy_from_slice(&bytes[4..8]);
    u32::from_le_bytes(len) as usize
}

/// A string, lifted only within its cap `C` (see [`cap`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Text<const C: u8>(pub String);

// SAFETY: the same ABI and type check as `String`, which does the lifting.
#[allow(unsafe_code)]
unsafe impl<const C: u8> ComponentType for Text<C> {
    type Lower = [ValRaw; 2];
    const ABI: CanonicalAbiInfo = CanonicalAbiInfo::POINTER_PAIR;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <String as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: delegates to `String`'s lift after reading the length.
#[allow(unsafe_code)]
unsafe impl<const C: u8> Lift for Text<C> {
    fn linear_lift_from_flat(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        charge(C, flat_len(src), 1)?;
        String::linear_lift_from_flat(cx, ty, src).map(Text)
    }

    fn linear_lift_from_memory(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        bytes: &[u8],
    ) -> wasmtime::Result<Self> {
        charge(C, memory_len(bytes), 1)?;
        String::linear_lift_from_memory(cx, ty, bytes).map(Text)
    }
}

/// A list, lifted only if it has at most as many items as its cap `C`
/// allows; each item is charged at its size on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct List<T, const C: u8>(pub Vec<T>);

// SAFETY: the same ABI and type check as `Vec<T>`, which does the lifting.
#[allow(unsafe_code)]
unsafe impl<T: ComponentType, const C: u8> ComponentType for List<T, C> {
    type Lower = [ValRaw; 2];
    const ABI: CanonicalAbiInfo = CanonicalAbiInfo::POINTER_PAIR;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <Vec<T> as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: delegates to `Vec<T>`'s lift after reading the length.
#[allow(unsafe_code)]
unsafe impl<T: Lift, const C: u8> Lift for List<T, C> {
    fn linear_lift_from_flat(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        charge(C, flat_len(src), size_of::<T>())?;
        Vec::<T>::linear_lift_from_flat(cx, ty, src).map(List)
    }

    fn linear_lift_from_memory(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        bytes: &[u8],
    ) -> wasmtime::Result<Self> {
        charge(C, memory_len(bytes), size_of::<T>())?;
        Vec::<T>::linear_lift_from_memory(cx, ty, bytes).map(List)
    }
}

/// A log message: lifted only while the call's log budget lasts; past it
/// the message is counted as dropped and never copied (logging must not
/// fail a call).
#[derive(Debug)]
pub(crate) struct LogText(pub Option<String>);

impl LogText {
    /// Takes room for `len` bytes of log, if there is any left.
    fn room(len: usize) -> bool {
        BUDGET.with(|b| {
            let mut b = b.borrow_mut();
            let Some(b) = b.as_mut() else { return true };
            if b.log_kept.saturating_add(len) > b.limits.max_log_bytes {
                b.log_dropped = b.log_dropped.saturating_add(len);
                return false;
            }
            b.log_kept += len;
            true
        })
    }
}

// SAFETY: the same ABI and type check as `String`, which does the lifting.
#[allow(unsafe_code)]
unsafe impl ComponentType for LogText {
    type Lower = [ValRaw; 2];
    const ABI: CanonicalAbiInfo = CanonicalAbiInfo::POINTER_PAIR;

    fn typecheck(ty: &InterfaceType, types: &InstanceType<'_>) -> wasmtime::Result<()> {
        <String as ComponentType>::typecheck(ty, types)
    }
}

// SAFETY: delegates to `String`'s lift when there is room.
#[allow(unsafe_code)]
unsafe impl Lift for LogText {
    fn linear_lift_from_flat(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        src: &Self::Lower,
    ) -> wasmtime::Result<Self> {
        if !Self::room(flat_len(src)) {
            return Ok(LogText(None));
        }
        String::linear_lift_from_flat(cx, ty, src).map(|s| LogText(Some(s)))
    }

    fn linear_lift_from_memory(
        cx: &mut LiftContext<'_>,
        ty: InterfaceType,
        bytes: &[u8],
    ) -> wasmtime::Result<Self> {
        if !Self::room(memory_len(bytes)) {
            return Ok(LogText(None));
        }
        String::linear_lift_from_memory(cx, ty, bytes).map(|s| LogText(Some(s)))
    }
}

/// Charges guest stdout/stderr bytes against the same log budget; false
/// when they must be dropped.
pub(crate) fn log_room(len: usize) -> bool {
    LogText::room(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_are_charged_before_lifting() {
        let limits = OutputLimits {
            max_writes: 2,
            max_output_bytes: 100,
            ..OutputLimits::default()
        };
        let r = within(&limits, || {
            charge(cap::WRITES, 2, 1)?;
            charge(cap::WRITES, 3, 1)
        });
        let err = r.unwrap_err();
        assert_eq!(
            err.downcast_ref::<OutputLimit>().unwrap().0,
            "the outcome has 3 writes, more than the limit of 2"
        );
        let r = within(&limits, || {
            charge(cap::OBJECT, 60, 1)?;
            charge(cap::OBJECT, 60, 1)
        });
        assert!(
            r.unwrap_err()
                .to_string()
                .contains("more than the limit of 100 bytes")
        );
        // Outside a call nothing is charged, and the budget does not leak.
        assert!(charge(cap::WRITES, 1_000_000, 1).is_ok());
    }

    #[test]
    fn logs_past_the_budget_are_dropped_not_failed() {
        let limits = OutputLimits {
            max_log_bytes: 10,
            ..OutputLimits::default()
        };
        let (a, b, c, dropped) = within(&limits, || {
            (log_room(6), log_room(6), log_room(4), log_dropped())
        });
        assert!(a && !b && c);
        assert_eq!(dropped, 6);
    }
}
