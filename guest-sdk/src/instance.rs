//! The settings an operator gives one instance of a plugin.
//!
//! The same component can run several times under different names, each
//! with its own settings: a JSON object written beside the plugin file.
//! Settings are readable in every call, `manifest` included, so a plugin can
//! shape its manifest from them and refuse ones that make no sense (see
//! [`Controller::try_manifest`](crate::Controller::try_manifest)).

use serde::de::DeserializeOwned;

use crate::Error;

/// The instance's settings as JSON text, or `None` when it has none.
pub fn settings_json() -> Option<String> {
    #[cfg(target_arch = "wasm32")]
    {
        crate::wasm::settings()
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        crate::testing::context::settings()
    }
}

/// The instance's settings as `T`, or `T::default()` when it has none.
///
/// ```
/// #[derive(serde::Deserialize, Default)]
/// struct Settings { greeting: Option<String> }
/// // Outside a host or harness there are no settings.
/// let s: Settings = windlass_sdk::instance::settings().unwrap();
/// assert!(s.greeting.is_none());
/// ```
pub fn settings<T: DeserializeOwned + Default>() -> Result<T, Error> {
    match settings_json() {
        None => Ok(T::default()),
        Some(text) => serde_json::from_str(&text)
            .map_err(|e| Error::permanent(format!("invalid settings: {e}"))),
    }
}
