//! Logging into the host's logs, tagged with the plugin's name and the key
//! being reconciled: `log::info!("scaled {} to {}", name, n)`.
//!
//! Natively the lines go to stderr and into the running
//! [`crate::testing::Harness`]'s log, so tests can assert on them.

pub use crate::{
    __windlass_debug as debug, __windlass_error as error, __windlass_info as info,
    __windlass_trace as trace, __windlass_warn as warn,
};

/// How important a log line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Very detailed.
    Trace,
    /// For debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Something unexpected, handled.
    Warn,
    /// Something failed.
    Error,
}

/// Writes one log line.
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    crate::wasm::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    crate::testing::context::log(level, message);
}

#[doc(hidden)]
#[macro_export]
macro_rules! __windlass_trace {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Trace, &::std::format!($($arg)+)) };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __windlass_debug {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Debug, &::std::format!($($arg)+)) };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __windlass_info {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Info, &::std::format!($($arg)+)) };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __windlass_warn {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Warn, &::std::format!($($arg)+)) };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __windlass_error {
    ($($arg:tt)+) => { $crate::log::log($crate::log::Level::Error, &::std::format!($($arg)+)) };
}
