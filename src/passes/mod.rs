//! Passes over the IR, one file each.

pub mod infer;
