//! Passes over the IR.
