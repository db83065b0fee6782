//! Passes over the IR, one file each.

pub mod cleanup;
pub mod fold;
pub mod infer;
pub mod lower;
pub mod raise;
pub mod rewrite;
/// Moved to [`crate::ops::eval`]; re-exported here for one release.
pub use crate::ops::eval;
/// Moved to [`crate::shape::slice_node`]; re-exported here for one release.
pub use crate::shape::slice_node;
