//! Passes over the IR, one file each (`infer`, `fold`, `cleanup`, `lower`, `raise`), and what
//! lower and raise share: [`build`] (new nodes) and [`validate`] (exact parameters and
//! translation validation).
//!
//! A pass written as "read, then say what to change" ([`cleanup`]) takes a [`PassCx`] and a
//! `&Graph` and returns a [`patch::Patch`], which [`patch::apply`] makes; its tests build the
//! graph with [`crate::ir::builder::GraphBuilder`] in the pass's own file.

use std::path::Path;

use crate::formats::{Format, Model};

pub mod build;
pub mod cleanup;
pub mod fold;
pub mod infer;
pub(crate) mod inline_if;
pub mod lower;
pub mod patch;
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

/// What a pass knows of the graph it runs on besides the graph: its dialect, the ONNX opset
/// (slice ops differ by opset) and the file it came from (for errors).
#[derive(Debug, Clone, Copy)]
pub struct PassCx<'a> {
    pub dialect: Format,
    /// The default-domain opset of an ONNX graph (0 for OpenVINO IR).
    pub onnx_opset: i64,
    /// The model file, named in errors (empty for a graph built in a test).
    pub source: &'a Path,
}

impl PassCx<'_> {
    /// The context of `model`'s graph.
    pub fn of(model: &Model) -> PassCx<'_> {
        PassCx {
            dialect: model.format(),
            onnx_opset: model.onnx_opset(),
            source: model.path(),
        }
    }

    /// The context of a graph built in a test ([`crate::ir::builder::GraphBuilder`]): `dialect`,
    /// ONNX opset 18 (0 for OpenVINO IR), no file.
    pub fn new(dialect: Format) -> PassCx<'static> {
        PassCx {
            dialect,
            onnx_opset: match dialect {
                Format::Onnx => 18,
                Format::OpenVino => 0,
            },
            source: Path::new(""),
        }
    }
}
