#![doc = include_str!("../README.md")]
//!
//! # slice-opt
//!
//! Shape inference, constant folding, lowering and raising of `StridedSlice` and `Slice` nodes in
//! ONNX and OpenVINO IR models.
//!
//! The crate is layered bottom to top (the map, its rules and a newcomer's path are in
//! `ARCHITECTURE.md`; `tests/architecture.rs` checks the rules):
//! - [`semantics`]: pure slice math (no I/O, no graph): every slice op decodes into one
//!   [`semantics::plan::SlicePlan`].
//! - [`ir`]: the graph (a `petgraph` `StableDiGraph`) that both formats load into; [`error`].
//! - [`ops`]: what is known of each op apart from its shape rule: the evaluator of constant
//!   tensors.
//! - [`formats`]: ONNX (protobuf) and OpenVINO IR (`.xml` + `.bin`) load and save.
//! - [`shape`]: whole-graph shape propagation, and [`shape::slice_node`], the one place that
//!   recognises slice nodes.
//! - [`summary`], [`report`]: what a run did.
//! - [`passes`]: infer, fold, cleanup, lower, raise.
//! - [`subgraph`]: If/Loop/Scan/TensorIterator bodies: listing, seeds, opening for a run.
//! - [`pipeline`]: the passes in order, then in every body: what the command line and the
//!   library drive.
//! - [`check`] (declared versus inferred shapes, `info`) and `verify` (feature `verify`).
//! - [`run`]: optimize one model file (load, passes, save, summary), the use case the command
//!   line and the Python package share.

pub mod check;
pub mod error;
pub mod formats;
pub mod ir;
pub mod ops;
pub mod passes;
pub mod pipeline;
pub mod report;
pub mod run;
pub mod semantics;
pub mod shape;
pub mod subgraph;
pub mod summary;
#[cfg(feature = "verify")]
pub mod verify;

pub use error::{Error, Result};
pub use formats::Model;
pub use pipeline::Pipeline;
