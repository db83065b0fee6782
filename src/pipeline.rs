//! The pass pipeline.

/// A sequence of passes.
pub struct Pipeline;
