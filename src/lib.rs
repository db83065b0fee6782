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
//! - `ir`: the graph (a `petgraph` `StableDiGraph`) that both formats load into; [`error`].
//! - `ops`: what is known of each op apart from its shape rule: typed attributes, the
//!   evaluator of constant tensors and the table of ops `fold` evaluates.
//! - [`formats`]: ONNX (protobuf) and OpenVINO IR (`.xml` + `.bin`) load and save.
//! - `shape`: whole-graph shape propagation, and `shape::slice_node`, the one place that
//!   recognises slice nodes.
//! - [`summary`], [`report`]: what a run did.
//! - `passes`: infer, fold, cleanup, lower, raise.
//! - `subgraph`: If/Loop/Scan/TensorIterator bodies: listing, seeds, opening for a run.
//! - [`pipeline`]: the passes in order, then in every body: what the command line and the
//!   library drive.
//! - [`check`] (declared versus inferred shapes, `info`) and `verify` (feature `verify`).
//! - [`run`]: optimize one model file (load, passes, save, summary), the use case the command
//!   line and the Python package share.
//!
//! The API is [`Model`], [`Pipeline`] and [`report`], [`run`], [`check`], [`semantics`] and
//! [`Error`] (with [`summary`], part of a report, and [`formats`] for [`Model`]). The modules
//! in plain text above are internal: `ops` is private to the crate; `ir`, `shape`, `passes`,
//! `subgraph` and `verify` are public only for the integration tests, the binary and the
//! Python package, hidden from the documentation and free to change.

pub mod check;
pub mod error;
pub mod formats;
#[doc(hidden)]
pub mod ir;
pub(crate) mod ops;
#[doc(hidden)]
pub mod passes;
pub mod pipeline;
pub mod report;
pub mod run;
pub mod semantics;
#[doc(hidden)]
pub mod shape;
#[doc(hidden)]
pub mod subgraph;
pub mod summary;
#[cfg(feature = "verify")]
#[doc(hidden)]
pub mod verify;

pub use error::{Error, Result};
pub use formats::Model;
pub use pipeline::Pipeline;
