#![doc = include_str!("../README.md")]
//!
//! # slice-opt
//!
//! Shape inference, constant folding, lowering and raising of `StridedSlice` and `Slice` nodes in
//! ONNX and OpenVINO IR models.
//!
//! The crate is layered bottom to top:
//! - [`semantics`]: pure slice math (no I/O, no graph): every slice op decodes into one
//!   [`semantics::plan::SlicePlan`].
//! - [`ir`]: the graph (a `petgraph` `StableDiGraph`) that both formats load into.
//! - [`formats`]: ONNX (protobuf) and OpenVINO IR (`.xml` + `.bin`) load and save.
//! - [`passes`] and [`pipeline`]: what the command line and the library drive.

pub mod check;
pub mod error;
pub mod formats;
pub mod ir;
pub mod passes;
pub mod pipeline;
pub mod report;
pub mod semantics;
pub mod shape;
pub mod subgraph;
pub mod summary;
#[cfg(feature = "verify")]
pub mod verify;

pub use error::{Error, Result};
pub use formats::Model;
pub use pipeline::Pipeline;
