//! `Request`: the snapshot one reconcile looks at.

use crate::{Object, ObjectRef, Time};

/// One reconcile: the current state of `key` and its owned children.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The primary object this request is about.
    pub key: ObjectRef,
    /// The object as currently cached, or none if it no longer exists.
    pub object: Option<Object>,
    /// The current objects of `owns` kinds whose controller owner reference
    /// points at `object`, except those of an indexed `owns` watch: those
    /// are read through the index ([`cache::lookup`](crate::cache::lookup),
    /// [`cache::totals`](crate::cache::totals)), so that a parent of
    /// thousands of children is not handed all of them on every reconcile.
    pub owned: Vec<Object>,
    /// 0 on a first try; n after n failed attempts in a row.
    pub attempt: u32,
    /// The host's clock when it built this request: the plugin's only clock.
    pub now: Time,
    /// When the previous attempt for this key failed on a write (a create
    /// refused by a quota, say), which write and why.
    pub last_failure: Option<WriteFailure>,
}

/// Why a write of the previous attempt failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteFailure {
    /// The position of the failed write in that attempt's outcome.
    pub write: u32,
    /// The HTTP status code the API server answered, e.g. 403.
    pub code: u16,
    /// The `reason` of the server's `Status`, e.g. `Forbidden`.
    pub reason: String,
    /// The server's message.
    pub message: String,
}

impl Request {
    /// A first-attempt request for `key` with no owned objects, at the Unix
    /// epoch.
    pub fn new(key: ObjectRef, object: Option<Object>) -> Self {
        Self {
            key,
            object,
            owned: Vec::new(),
            attempt: 0,
            now: Time::UNIX_EPOCH,
            last_failure: None,
        }
    }

    /// The owned objects of kind `api_version`/`kind`.
    pub fn owned_of<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
    ) -> impl Iterator<Item = &'a Object> + 'a {
        self.owned.iter().filter(move |o| o.is(api_version, kind))
    }

    /// The primary object, unless it is gone or being deleted: what most
    /// reconcilers look at first.
    pub fn live_object(&self) -> Option<&Object> {
        self.object.as_ref().filter(|o| !o.is_being_deleted())
    }
}
