//! The ground floor every other part of the host stands on: who an object
//! is ([`KindRef`], [`ObjectRef`], [`ObjectKey`], [`KeyRef`]), an object as
//! the caches hold it ([`CachedObject`]) and as a plugin writes it
//! ([`ObjectText`]), the text they share ([`Text`]), and the read side of the caches as a plugin sees them
//! ([`CacheReader`], [`IndexReader`]).
//!
//! Nothing here imports from the rest of the host: the cache, the informer,
//! the runtime, the writer and the controller all read and write these
//! types, and none of them needs another room to do so.

mod cached;
mod heap;
mod identity;
mod reader;
mod text;
mod written;

pub use cached::{CachedObject, Controller, Labels, MalformedObject};
pub(crate) use heap::allocation;
pub use identity::{KeyRef, KindRef, ObjectKey, ObjectRef};
pub use reader::{CacheReader, EmptyCache, IndexRead, IndexReader};
pub use text::Text;
pub use written::{ObjectHeader, ObjectText};
