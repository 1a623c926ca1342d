//! Updates computed outside the store's lock, as kube-apiserver's
//! `GuaranteedUpdate` does: read the stored object, compute its successor
//! without holding the lock (patching, merging, managed fields: the work
//! whose cost a client controls), then take the lock only to check that the
//! object is still the one the successor was computed from and commit. If
//! another write got in between, compute again from the new object.

use serde_json::Value;

use crate::context::Ctx;
use crate::state::Current;
use crate::status::{ApiError, ApiResult};
use crate::write::{self, Written};

/// What a computation decided.
#[derive(Debug)]
pub(crate) enum Next {
    /// Store this as the successor of the object it was computed from.
    Update(Value),
    /// There was no object: create this one (server-side apply).
    Create(Value),
}

/// How often to recompute before giving up with `409 Conflict`: each retry
/// means another write to the same object committed meanwhile.
const MAX_ATTEMPTS: usize = 100;

/// Computes the successor of object `name` with `compute` (called with the
/// stored object, parsed, or `None`, outside the lock) and commits it if the object
/// has not changed meanwhile; recomputes otherwise. Returns the write and
/// the status code (201 for a create).
pub(crate) fn guaranteed<F>(ctx: &Ctx, name: &str, mut compute: F) -> ApiResult<(Written, u16)>
where
    F: FnMut(Option<&Current>) -> ApiResult<Next>,
{
    let key = ctx.res.storage_key();
    let req = ctx.req();
    for _ in 0..MAX_ATTEMPTS {
        // Parsed here, outside the lock.
        let base = ctx.shared.lock().get(&key, &ctx.ns, name).map(Current::of);
        let next = compute(base.as_ref())?;
        let mut st = ctx.shared.lock();
        let now = st.get(&key, &ctx.ns, name);
        if now.as_ref().map(|o| o.rv) != base.as_ref().map(|o| o.obj.rv) {
            continue;
        }
        return match (next, base) {
            (Next::Update(v), Some(old)) => {
                Ok((write::commit_update(&mut st, &req, &old, v)?, 200))
            }
            (Next::Create(v), None) => Ok((write::create(&mut st, &req, v, None)?, 201)),
            (Next::Update(_), None) => Err(ApiError::not_found(ctx.target(name))),
            (Next::Create(_), Some(_)) => Err(ApiError::internal(
                "an update was computed as a create of an object that exists",
            )),
        };
    }
    Err(ApiError::conflict(
        ctx.target(name),
        &format!(
            "the object kept changing: {MAX_ATTEMPTS} attempts to update it were overtaken by other writes; please try again"
        ),
    ))
}
