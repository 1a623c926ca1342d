//! `Request`: the snapshot one reconcile looks at.

use crate::{Object, ObjectRef};

/// One reconcile: the current state of `key` and its owned children.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The primary object this request is about.
    pub key: ObjectRef,
    /// The object as currently cached, or none if it no longer exists.
    pub object: Option<Object>,
    /// The current objects of `owns` kinds whose controller owner reference
    /// points at `object`.
    pub owned: Vec<Object>,
    /// 0 on a first try; n after n failed attempts in a row.
    pub attempt: u32,
}

impl Request {
    /// A first-attempt request for `key` with no owned objects.
    pub fn new(key: ObjectRef, object: Option<Object>) -> Self {
        Self {
            key,
            object,
            owned: Vec::new(),
            attempt: 0,
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
