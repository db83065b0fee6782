//! Pure slice semantics: decoding of every slice op into one canonical plan, resolution of a plan
//! against (possibly symbolic) dims, and evaluation of a plan as a list of selected flat indices.
//!
//! - [`decode`]: TensorFlow / OpenVINO `StridedSlice`, ONNX `Slice` (1, 10, 11, 13), OpenVINO
//!   `Slice-8` → [`SlicePlan`]. The op flavour only matters here (and in [`Clamp`]).
//! - [`resolve`]: plan + input dims ([`Dim`] or `u64`) → output dims, or per-axis
//!   `start/step/len` ([`ResolvedAxis`]) for folding.
//! - [`mod@gather`]: plan + concrete dims → the flat input indices selected, in output order.
//! - [`mod@lowering`]: a StridedSlice plan → one Slice and at most one reshaping, as data (what pass
//!   `lower` builds).
//! - [`raising`]: a Slice and the reshaping after it → one StridedSlice spec (pass `raise`).
//!
//! The behaviour follows the runtimes (TensorFlow 2.21, OpenVINO 2026.4 shape inference, ONNX
//! Runtime / ONNX reference majority) as recorded in `tests/data/*.jsonl.gz`; see
//! `tests/conformance.rs` for the cases where runtimes disagree and which one we follow.

pub mod compose;
pub mod decode;
pub mod dim;
pub mod disagree;
pub mod gather;
pub mod lowering;
pub mod plan;
pub mod raising;
pub mod resolve;

pub use decode::{onnx_slice, ov_slice8, strided_slice, Flavour, StridedSliceSpec};
pub use dim::{Dim, Symbol};
pub use gather::{gather, gather_resolved, Runs, DEFAULT_MAX_ELEMENTS};
pub use lowering::{lowering, Lowering, LoweringInput};
pub use plan::{AxisPlan, Bound, Provenance, SlicePlan};
pub use resolve::{
    output_shape, range_dim_sym, resolve_concrete, resolve_dims, resolve_dims_sym, Clamp,
    ResolvedAxis, SymBound, SymParams,
};

/// Invalid slice parameters (or a plan that does not fit the dims it is applied to).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SliceError {
    /// A step/stride of 0 on a sliced axis.
    #[error("step {index} is zero")]
    ZeroStep { index: usize },
    /// More than one ellipsis bit.
    #[error("more than one ellipsis in the mask")]
    SeveralEllipses,
    /// Two parameter lists that must have equal lengths do not.
    #[error("{what}: lengths {a} and {b} differ")]
    LengthMismatch {
        what: &'static str,
        a: usize,
        b: usize,
    },
    /// OpenVINO StridedSlice: non-empty masks of unequal lengths (the runtime refuses them).
    #[error("OpenVINO StridedSlice masks have unequal lengths {0:?}")]
    UnequalMaskLengths(Vec<usize>),
    /// The spec addresses more input axes than the input has.
    #[error("slice addresses {used} input axes but the input has rank {rank}")]
    TooManyAxes { used: usize, rank: usize },
    /// An axis outside `[-rank, rank)`.
    #[error("axis {axis} out of range for rank {rank}")]
    AxisOutOfRange { axis: i64, rank: usize },
    /// The same axis listed twice.
    #[error("axis {axis} repeated")]
    RepeatedAxis { axis: usize },
    /// TensorFlow: a shrink axis with a negative stride.
    #[error("shrink axis {index} with non-positive stride {stride}")]
    ShrinkStride { index: usize, stride: i64 },
    /// A shrink index outside `[-dim, dim)` (found when resolving against dims).
    #[error("shrink index {index} out of range for dim {dim} of axis {axis}")]
    ShrinkOutOfRange { axis: usize, index: i64, dim: u64 },
    /// Slice-1 (attribute form) has no steps.
    #[error("steps are not supported by Slice opset {opset}")]
    StepsUnsupported { opset: u32 },
    /// The dims given do not have the plan's input rank.
    #[error("plan is for rank {plan} but dims have rank {dims}")]
    RankMismatch { plan: usize, dims: usize },
    /// A dim that does not fit in `i64`.
    #[error("dim {0} too large")]
    DimTooLarge(u64),
    /// The plan has a non-constant value where a concrete result was asked for.
    #[error("plan has non-constant values")]
    NotConstant,
    /// The result would have more elements than allowed.
    #[error("result of {elements} elements exceeds the limit of {limit}")]
    TooLarge { elements: u128, limit: u64 },
}
