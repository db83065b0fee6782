//! Passes over the IR, one file each, plus the one place that decodes slice nodes and the
//! evaluator of constant tensors.

pub mod bodies;
pub mod cleanup;
pub mod eval;
pub mod fold;
pub mod infer;
pub mod lower;
pub mod raise;
pub mod rewrite;
pub mod slice_node;
