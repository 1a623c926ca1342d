//! Helpers for a plugin's own serde views of objects: structs that borrow
//! the few fields a plugin reads from an object's JSON text and skip the
//! rest unread (`Object::deserialize`).
//!
//! ```
//! use serde::Deserialize;
//! use windlass_sdk::view::{Str, nullable};
//! #[derive(Deserialize, Default)]
//! struct Spec<'a> {
//!     #[serde(borrow, default, rename = "nodeName")]
//!     node_name: Option<Str<'a>>,
//!     #[serde(default, deserialize_with = "nullable")]
//!     tolerations: Vec<serde_json::Value>,
//! }
//! let spec: Spec = serde_json::from_str(r#"{"nodeName":"n1","tolerations":null}"#).unwrap();
//! assert_eq!(spec.node_name.as_deref(), Some("n1"));
//! assert!(spec.tolerations.is_empty());
//! ```

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};

/// Text borrowed from the object when it has no escapes, owned when it has.
pub type Str<'a> = Cow<'a, str>;

/// Reads `null` as the type's default, as Go's JSON decoding does for
/// slices, maps and structs (the API server omits empty fields, but YAML
/// written by hand may say `key: null` or `key:`). Use it with
/// `#[serde(default, deserialize_with = "nullable")]`.
pub fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
