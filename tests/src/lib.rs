//! Helpers for windlass's end-to-end tests.
