//! Passes over the IR, one file each, plus the one place that decodes slice nodes.

pub mod infer;
pub mod slice_node;
