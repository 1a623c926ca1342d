//! Harness tests.
