//! Passes over the IR, one file each, plus the evaluator of constant tensors.

pub mod cleanup;
pub mod eval;
pub mod fold;
pub mod infer;
pub mod lower;
pub mod raise;
pub mod rewrite;
/// Moved to [`crate::shape::slice_node`]; re-exported here for one release.
pub use crate::shape::slice_node;
