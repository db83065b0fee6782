//! Evaluation of slices and of shape arithmetic on constant tensors: strided copies over bytes
//! that work for every element type (byte-aligned, packed sub-byte, strings).
//!
//! One file per op family, the same families as `shape/`: `slice.rs` (take, slice, gather),
//! `manip.rs` (concat, reshape, squeeze, unsqueeze), `cast.rs`, `arith.rs` (broadcasting
//! integer arithmetic, range, fill), `float.rs` (float arithmetic, `Sqrt`, `Floor`…, `Clip`),
//! `transcendental.rs` (ONNX `Sin`, `Cos`, `Log` as ONNX Runtime computes them), `resize.rs`
//! (ONNX `Resize`, cubic, as ONNX Runtime computes it), `scatter.rs` (ONNX `ScatterND`),
//! `shape_of.rs` (`Shape`, `ShapeOf`). The computations are
//! re-exported here, so `eval::reshape` and `eval::manip::reshape` are the same function.
//!
//! Each family file also declares the ops of its family that `fold` evaluates: a table `OPS` of
//! rows (op name, dialect, what must be known, the function) and, beside it, the function of
//! each row, which reads the node's constant inputs and typed attributes (`ops::attrs`) and
//! calls the computation. `ops::registry` joins the tables. So a new op's fold is written in
//! one file: its row, its function and, if it is a new kind of computation, that computation
//! with its test.

use crate::ir::DType;
use crate::semantics;

pub mod arith;
pub mod cast;
pub mod elementwise;
pub mod float;
pub mod manip;
pub mod reduce;
pub mod resize;
pub mod scatter;
pub mod shape_of;
pub mod slice;
pub mod transcendental;

pub use arith::{arith, broadcast_shape, fill, range, Arith};
pub use cast::cast;
pub use manip::{concat, reshape, reshape_target, squeeze_shape, unsqueeze_shape};
pub use slice::{gather, slice, take};

/// Why a constant could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    #[error("{0}")]
    Slice(#[from] semantics::SliceError),
    #[error("the result would have {bytes} bytes, over the limit of {limit}")]
    TooLarge { bytes: u128, limit: u64 },
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    Invalid(String),
}

/// How sub-byte elements are packed in a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitOrder {
    /// First element in the least significant bits (ONNX int4/uint4, OpenVINO i4/u4).
    LsbFirst,
    /// First element in the most significant bit (OpenVINO u1).
    MsbFirst,
}

/// The packing OpenVINO / ONNX use for `dtype`.
pub fn bit_order(dtype: DType) -> BitOrder {
    if dtype == DType::U1 {
        BitOrder::MsbFirst
    } else {
        BitOrder::LsbFirst
    }
}

pub(crate) fn count(shape: &[u64]) -> Result<u64, EvalError> {
    shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| EvalError::Invalid("element count overflows".into()))
}

pub(crate) fn check_size(dtype: DType, elements: u64, limit: u64) -> Result<(), EvalError> {
    let bytes = if dtype == DType::String {
        elements as u128 * 8
    } else {
        (elements as u128 * dtype.bits() as u128).div_ceil(8)
    };
    if bytes > limit as u128 {
        return Err(EvalError::TooLarge { bytes, limit });
    }
    Ok(())
}

/// The bytes of the `len` elements of `w` bytes each from element `first` of `raw`; `None`
/// when they are not all inside it.
pub(crate) fn run_bytes(raw: &[u8], first: u64, len: u64, w: usize) -> Option<&[u8]> {
    let first = usize::try_from(first).ok()?;
    let end = first.checked_add(usize::try_from(len).ok()?)?;
    raw.get(first.checked_mul(w)?..end.checked_mul(w)?)
}

/// `np.arange(n).reshape(shape)` as an i64 tensor: the input of the evaluators' tests.
#[cfg(test)]
pub(crate) fn arange(shape: Vec<u64>) -> crate::ir::Tensor {
    let n: u64 = shape.iter().product();
    crate::ir::Tensor::from_i64(shape, &(0..n as i64).collect::<Vec<_>>())
}
