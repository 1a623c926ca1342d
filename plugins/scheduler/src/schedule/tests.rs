//! Tests of whole decisions.
