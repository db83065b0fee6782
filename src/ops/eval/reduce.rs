//! Values of `ReduceProd` / `ReduceSum` on integer tensors (the element count of a shape, the
//! length of a mask), and their rows of the fold table (`OPS`, near the end). Their shape rules
//! are in `shape/reduce.rs`.

use crate::ir::Format::{Onnx, OpenVino};
use crate::ir::{DType, Tensor};
use crate::ops::attrs;
use crate::ops::registry::{row, Inputs, NoEval, OpEntry};

use super::{cast, check_size, count, EvalError};

/// `ReduceProd` or `ReduceSum`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    Prod,
    Sum,
}

/// `op` of integer tensor `t` over `axes` (negative counted from the end; empty: every axis),
/// keeping reduced axes as 1 when `keep`. An i64 overflow is not folded; a narrower type wraps,
/// as the runtimes' accumulation in that type does.
pub fn reduce(
    t: &Tensor,
    axes: &[i64],
    keep: bool,
    op: Reduce,
    limit: u64,
) -> Result<Tensor, EvalError> {
    if !t.dtype.is_index_type() {
        return Err(EvalError::Unsupported(format!("{op:?} of {:?}", t.dtype)));
    }
    let r = t.shape.len() as i64;
    let mut reduced = vec![axes.is_empty(); t.shape.len()];
    for &a in axes {
        let k = if a < 0 { a + r } else { a };
        if !(0..r).contains(&k) {
            return Err(EvalError::Invalid(format!(
                "axis {a} out of range for rank {r}"
            )));
        }
        reduced[k as usize] = true;
    }
    let out_shape: Vec<u64> = t
        .shape
        .iter()
        .zip(&reduced)
        .filter_map(|(&d, &red)| match (red, keep) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    let n_out = count(&out_shape)?;
    check_size(DType::I64, n_out, limit)?;
    let v = t
        .to_i64_vec()
        .ok_or_else(|| EvalError::Invalid("integer data shorter than its shape".into()))?;
    let mut acc = vec![if op == Reduce::Prod { 1i64 } else { 0 }; n_out as usize];
    // Output strides over the kept axes (reduced ones contribute 0).
    let mut strides = vec![0u64; t.shape.len()];
    let mut s = 1u64;
    for k in (0..t.shape.len()).rev() {
        if !reduced[k] {
            strides[k] = s;
            s *= t.shape[k];
        }
    }
    let mut idx = vec![0u64; t.shape.len()];
    for &x in &v {
        let o: u64 = idx.iter().zip(&strides).map(|(i, s)| i * s).sum();
        let a = &mut acc[o as usize];
        *a = match op {
            Reduce::Prod => a.checked_mul(x),
            Reduce::Sum => a.checked_add(x),
        }
        .ok_or_else(|| EvalError::Unsupported(format!("{op:?} overflows i64")))?;
        for k in (0..idx.len()).rev() {
            idx[k] += 1;
            if idx[k] < t.shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    cast(&Tensor::from_i64(out_shape, &acc), t.dtype, limit)
}

// The ops of this family that `fold` evaluates on constants: their rows of
// `ops::registry::OPS`, and the functions reading a node's inputs and attributes.

/// Rows of [`crate::ops::registry::OPS`].
pub(crate) const OPS: &[OpEntry] = &[
    row("ReduceProd", Onnx, |i| onnx_reduce_node(i, Reduce::Prod)),
    row("ReduceSum", Onnx, |i| onnx_reduce_node(i, Reduce::Sum)),
    row("ReduceProd", OpenVino, |i| ov_reduce_node(i, Reduce::Prod)),
    row("ReduceSum", OpenVino, |i| ov_reduce_node(i, Reduce::Sum)),
];

/// ONNX: `axes` from input 1 (ReduceSum 13+, ReduceProd 18+) or the attribute; `keepdims`
/// default 1; no axes reduce every axis unless `noop_with_empty_axes` (then the input).
fn onnx_reduce_node(i: &Inputs, op: Reduce) -> Result<Tensor, NoEval> {
    let t = i.input(0).ok_or(NoEval::Silent)?;
    if !t.dtype.is_index_type() {
        return Err(NoEval::Silent);
    }
    let axes = match (i.input(1), i.node.attr_ints("axes")) {
        (Some(a), _) => attrs::input_ints(Some(a))?,
        (None, Some(Ok(a))) => a,
        (None, Some(Err(e))) => return Err(NoEval::Skip(e)),
        (None, None) => Vec::new(),
    };
    if axes.is_empty() && i.node.attr_int("noop_with_empty_axes").unwrap_or(0) != 0 {
        return Ok(t.clone());
    }
    let keep = i.node.attr_int("keepdims").unwrap_or(1) != 0;
    Ok(reduce(t, &axes, keep, op, i.limit)?)
}

/// OpenVINO: `axes` input 1 (empty: no axis reduced, the input unchanged); `keep_dims` default
/// false.
fn ov_reduce_node(i: &Inputs, op: Reduce) -> Result<Tensor, NoEval> {
    let (t, a) = match i.consts {
        [Some(t), Some(a)] if t.dtype.is_index_type() => (*t, *a),
        _ => return Err(NoEval::Silent),
    };
    let axes = attrs::input_ints(Some(a))?;
    if axes.is_empty() {
        return Ok(t.clone());
    }
    let keep = attrs::ov_bool(i.node, "keep_dims", false);
    Ok(reduce(t, &axes, keep, op, i.limit)?)
}
