//! Passes over the IR, one file each (`infer`, `fold`, `cleanup`, `lower`, `raise`), and what
//! lower and raise share: [`build`] (new nodes) and [`validate`] (exact parameters and
//! translation validation).

pub mod build;
pub mod cleanup;
pub mod fold;
pub mod infer;
pub mod lower;
pub mod raise;
pub mod simplify;
pub mod validate;
/// Split into [`build`] and [`validate`]; re-exported here for one release.
pub mod rewrite {
    pub use super::build::*;
    pub use super::validate::*;
}
/// Moved to [`crate::ops::eval`]; re-exported here for one release.
pub use crate::ops::eval;
/// Moved to [`crate::shape::slice_node`]; re-exported here for one release.
pub use crate::shape::slice_node;
