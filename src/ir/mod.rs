//! The graph IR.
