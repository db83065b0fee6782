//! Values of the element-wise ops exporters put in shape and mask plumbing besides `arith.rs`'s:
//! comparisons (`Equal`, `Less`…), logic (`And`, `Or`, `Not`…), `Where`/`Select`, `Min`/`Max`,
//! `Neg`/`Abs`, `Mod`/`FloorMod`, the broadcasts `Expand`/`Broadcast`, `Trilu`, and their rows of
//! the fold table (`OPS`, near the end). Their shape rules are in `shape/elementwise.rs`.
//!
//! Logic and `Mod` are folded on integer (and boolean) tensors only, with the runtimes' integer
//! semantics; comparisons, `Min`/`Max`, `Neg`/`Abs` also on `f32`/`f64` (`float.rs`); `Where`, `Expand` and `Trilu` move
//! elements without computing on them, so they fold for every whole-byte element type.

use bytes::Bytes;

use crate::ir::Format::{Onnx, OpenVino};
use crate::ir::{DType, Tensor, TensorData};
use crate::ops::attrs;
use crate::ops::registry::{row, Inputs, NoEval, OpEntry};

use super::arith::{broadcast_offsets, broadcast_shape};
use super::float::{self, FBin, FCmp, FUn};
use super::{cast, check_size, count, EvalError};

/// An integer element-wise operation of two or more inputs (see [`combine`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op2 {
    Equal,
    NotEqual,
    Less,
    LessEq,
    Greater,
    GreaterEq,
    And,
    Or,
    Xor,
    Min,
    Max,
    /// The remainder with the divisor's sign (ONNX `Mod` with `fmod` 0, OpenVINO `FloorMod`).
    ModFloor,
    /// The remainder with the dividend's sign (ONNX `Mod` with `fmod` 1, OpenVINO `Mod`).
    ModTrunc,
}

impl Op2 {
    fn boolean(self) -> bool {
        !matches!(self, Op2::Min | Op2::Max | Op2::ModFloor | Op2::ModTrunc)
    }

    fn apply(self, p: i64, q: i64) -> Option<i64> {
        Some(match self {
            Op2::Equal => (p == q) as i64,
            Op2::NotEqual => (p != q) as i64,
            Op2::Less => (p < q) as i64,
            Op2::LessEq => (p <= q) as i64,
            Op2::Greater => (p > q) as i64,
            Op2::GreaterEq => (p >= q) as i64,
            Op2::And => (p != 0 && q != 0) as i64,
            Op2::Or => (p != 0 || q != 0) as i64,
            Op2::Xor => ((p != 0) != (q != 0)) as i64,
            Op2::Min => p.min(q),
            Op2::Max => p.max(q),
            Op2::ModTrunc => p.checked_rem(q)?,
            Op2::ModFloor => {
                let r = p.checked_rem(q)?;
                if r != 0 && ((r < 0) != (q < 0)) {
                    r + q
                } else {
                    r
                }
            }
        })
    }
}

fn ints(t: &Tensor) -> Result<Vec<i64>, EvalError> {
    t.to_i64_vec()
        .ok_or_else(|| EvalError::Invalid("integer data shorter than its shape".into()))
}

fn integer_or_bool(d: DType) -> bool {
    d.is_index_type() || d == DType::Bool
}

/// `op` over `inputs` (one element type, integer or boolean), numpy broadcasting, folded left
/// to right (`Min`/`Max` take any number of inputs). Comparisons and logic give booleans;
/// `Min`/`Max`/`Mod` the inputs' type. A remainder by 0 is not folded.
pub fn combine(inputs: &[&Tensor], op: Op2, limit: u64) -> Result<Tensor, EvalError> {
    let first = inputs
        .first()
        .ok_or_else(|| EvalError::Invalid("no inputs".into()))?;
    let dtype = first.dtype;
    if !integer_or_bool(dtype) || inputs.iter().any(|t| t.dtype != dtype) {
        return Err(EvalError::Unsupported(format!(
            "{op:?} on {:?} (integer or boolean tensors of one type only)",
            inputs.iter().map(|t| t.dtype).collect::<Vec<_>>()
        )));
    }
    let mut shape = first.shape.clone();
    for t in &inputs[1..] {
        shape = broadcast_shape(&shape, &t.shape)?;
    }
    let n = count(&shape)?;
    check_size(DType::I64, n, limit)?;
    let mut acc: Vec<i64> = {
        let v = ints(first)?;
        broadcast_offsets(&first.shape, &shape)
            .iter()
            .map(|&o| v[o as usize])
            .collect()
    };
    for t in &inputs[1..] {
        let v = ints(t)?;
        for (a, o) in acc.iter_mut().zip(broadcast_offsets(&t.shape, &shape)) {
            *a = op.apply(*a, v[o as usize]).ok_or_else(|| {
                EvalError::Unsupported(format!(
                    "{op:?} of {a} and {}: division by 0",
                    v[o as usize]
                ))
            })?;
        }
    }
    let out_type = if op.boolean() { DType::Bool } else { dtype };
    cast(&Tensor::from_i64(shape, &acc), out_type, limit)
}

/// `Not` / `Neg` / `Abs` of an integer or boolean tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op1 {
    Not,
    Neg,
    Abs,
}

/// `op` of `t`, element by element. `Not` takes booleans; `Neg`/`Abs` signed integers, a result
/// outside the type wrapping as two's complement does in the runtimes (`-(-128)` is `-128` in
/// i8); `i64::MIN` is not folded.
pub fn unary(t: &Tensor, op: Op1, limit: u64) -> Result<Tensor, EvalError> {
    let ok = match op {
        Op1::Not => t.dtype == DType::Bool,
        Op1::Neg | Op1::Abs => matches!(t.dtype, DType::I64 | DType::I32 | DType::I16 | DType::I8),
    };
    if !ok {
        return Err(EvalError::Unsupported(format!("{op:?} of {:?}", t.dtype)));
    }
    let v = ints(t)?;
    let out = v
        .iter()
        .map(|&x| match op {
            Op1::Not => Some((x == 0) as i64),
            Op1::Neg => x.checked_neg(),
            Op1::Abs => x.checked_abs(),
        })
        .collect::<Option<Vec<i64>>>()
        .ok_or_else(|| EvalError::Unsupported(format!("{op:?} of i64::MIN")))?;
    cast(&Tensor::from_i64(t.shape.clone(), &out), t.dtype, limit)
}

/// The width in bytes of one element of `t`, and its bytes, for the ops that move elements.
fn bytes_of(t: &Tensor) -> Result<(usize, &Bytes), EvalError> {
    let raw = t
        .raw()
        .ok_or_else(|| EvalError::Unsupported("string tensors".into()))?;
    if t.dtype.bits() % 8 != 0 || t.dtype.bits() == 0 {
        return Err(EvalError::Unsupported(format!(
            "elements of {:?} (not whole bytes)",
            t.dtype
        )));
    }
    let w = t.dtype.bits() / 8;
    let n = count(&t.shape)? as usize;
    if raw.len() < n * w {
        return Err(EvalError::Invalid(
            "constant data shorter than its shape".into(),
        ));
    }
    Ok((w, raw))
}

/// ONNX `Where` / OpenVINO `Select` (numpy broadcasting): `x` where `cond`, else `y`.
pub fn select(cond: &Tensor, x: &Tensor, y: &Tensor, limit: u64) -> Result<Tensor, EvalError> {
    if cond.dtype != DType::Bool || x.dtype != y.dtype {
        return Err(EvalError::Unsupported(format!(
            "Where of {:?}, {:?}, {:?}",
            cond.dtype, x.dtype, y.dtype
        )));
    }
    let shape = broadcast_shape(&broadcast_shape(&cond.shape, &x.shape)?, &y.shape)?;
    let n = count(&shape)?;
    check_size(x.dtype, n, limit)?;
    let c = ints(cond)?;
    let ((w, xr), (_, yr)) = (bytes_of(x)?, bytes_of(y)?);
    let (oc, ox, oy) = (
        broadcast_offsets(&cond.shape, &shape),
        broadcast_offsets(&x.shape, &shape),
        broadcast_offsets(&y.shape, &shape),
    );
    let mut buf = Vec::with_capacity(n as usize * w);
    for k in 0..n as usize {
        let (src, o) = if c[oc[k] as usize] != 0 {
            (xr, ox[k] as usize)
        } else {
            (yr, oy[k] as usize)
        };
        buf.extend_from_slice(&src[o * w..(o + 1) * w]);
    }
    Ok(Tensor {
        dtype: x.dtype,
        shape,
        data: TensorData::Raw(Bytes::from(buf)),
    })
}

/// `t` broadcast to `shape` (numpy rules), element bytes copied.
pub fn broadcast_to(t: &Tensor, shape: Vec<u64>, limit: u64) -> Result<Tensor, EvalError> {
    let n = count(&shape)?;
    check_size(t.dtype, n, limit)?;
    let (w, raw) = bytes_of(t)?;
    let mut buf = Vec::with_capacity(n as usize * w);
    for o in broadcast_offsets(&t.shape, &shape) {
        let o = o as usize;
        buf.extend_from_slice(&raw[o * w..(o + 1) * w]);
    }
    Ok(Tensor {
        dtype: t.dtype,
        shape,
        data: TensorData::Raw(Bytes::from(buf)),
    })
}

fn target_shape(dims: &[i64]) -> Result<Vec<u64>, EvalError> {
    dims.iter()
        .map(|&d| u64::try_from(d).map_err(|_| EvalError::Invalid(format!("negative dim {d}"))))
        .collect()
}

/// ONNX `Expand` (and OpenVINO `Broadcast` in `bidirectional` mode): `t` broadcast with
/// `shape`, each dim the larger where one is 1.
pub fn expand(t: &Tensor, shape: &[i64], limit: u64) -> Result<Tensor, EvalError> {
    let out = broadcast_shape(&t.shape, &target_shape(shape)?)?;
    broadcast_to(t, out, limit)
}

/// ONNX `Trilu`: the upper (`upper`) or lower triangle of the last two axes of `t`, from
/// diagonal `k` (element `[i, j]` kept when `j - i >= k`, upper; `j - i <= k`, lower), zeros
/// elsewhere.
pub fn trilu(t: &Tensor, k: i64, upper: bool, limit: u64) -> Result<Tensor, EvalError> {
    let r = t.shape.len();
    if r < 2 {
        return Err(EvalError::Invalid("Trilu needs rank 2 or more".into()));
    }
    let n = count(&t.shape)?;
    check_size(t.dtype, n, limit)?;
    let (w, raw) = bytes_of(t)?;
    let (rows, cols) = (t.shape[r - 2], t.shape[r - 1]);
    let mut buf = raw[..n as usize * w].to_vec();
    for e in 0..n {
        let (i, j) = ((e / cols.max(1)) % rows.max(1), e % cols.max(1));
        let d = j as i128 - i as i128;
        let keep = if upper {
            d >= k as i128
        } else {
            d <= k as i128
        };
        if !keep {
            let e = e as usize;
            buf[e * w..(e + 1) * w].fill(0);
        }
    }
    Ok(Tensor {
        dtype: t.dtype,
        shape: t.shape.clone(),
        data: TensorData::Raw(Bytes::from(buf)),
    })
}

// The ops of this family that `fold` evaluates on constants: their rows of
// `ops::registry::OPS`, and the functions reading a node's inputs and attributes.

/// Rows of [`crate::ops::registry::OPS`].
pub(crate) const OPS: &[OpEntry] = &[
    row("Equal", Onnx, |i| combine_node(i, Op2::Equal)),
    row("Less", Onnx, |i| combine_node(i, Op2::Less)),
    row("LessOrEqual", Onnx, |i| combine_node(i, Op2::LessEq)),
    row("Greater", Onnx, |i| combine_node(i, Op2::Greater)),
    row("GreaterOrEqual", Onnx, |i| combine_node(i, Op2::GreaterEq)),
    row("And", Onnx, |i| combine_node(i, Op2::And)),
    row("Or", Onnx, |i| combine_node(i, Op2::Or)),
    row("Xor", Onnx, |i| combine_node(i, Op2::Xor)),
    row("Min", Onnx, |i| combine_node(i, Op2::Min)),
    row("Max", Onnx, |i| combine_node(i, Op2::Max)),
    row("Mod", Onnx, onnx_mod_node),
    row("Not", Onnx, |i| unary_node(i, Op1::Not)),
    row("Neg", Onnx, |i| unary_node(i, Op1::Neg)),
    row("Abs", Onnx, |i| unary_node(i, Op1::Abs)),
    row("Where", Onnx, select_node),
    row("Expand", Onnx, expand_node),
    row("Trilu", Onnx, trilu_node),
    ov_binary("Equal"),
    ov_binary("NotEqual"),
    ov_binary("Less"),
    ov_binary("LessEqual"),
    ov_binary("Greater"),
    ov_binary("GreaterEqual"),
    ov_binary("LogicalAnd"),
    ov_binary("LogicalOr"),
    ov_binary("LogicalXor"),
    ov_binary("Minimum"),
    ov_binary("Maximum"),
    ov_binary("FloorMod"),
    ov_binary("Mod"),
    row("LogicalNot", OpenVino, |i| unary_node(i, Op1::Not)),
    row("Negative", OpenVino, |i| unary_node(i, Op1::Neg)),
    row("Abs", OpenVino, |i| unary_node(i, Op1::Abs)),
    OpEntry {
        precheck: Some(attrs::ov_numpy_broadcast),
        ..row("Select", OpenVino, select_node)
    },
    row("Broadcast", OpenVino, ov_broadcast_node),
];

/// An OpenVINO binary row: numpy broadcasting only; [`ov_binary_node`] maps the op's name to
/// its operation.
const fn ov_binary(op: &'static str) -> OpEntry {
    OpEntry {
        precheck: Some(attrs::ov_numpy_broadcast),
        ..row(op, OpenVino, ov_binary_node)
    }
}

fn ov_binary_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let op = match i.node.op_type.as_str() {
        "Equal" => Op2::Equal,
        "NotEqual" => Op2::NotEqual,
        "Less" => Op2::Less,
        "LessEqual" => Op2::LessEq,
        "Greater" => Op2::Greater,
        "GreaterEqual" => Op2::GreaterEq,
        "LogicalAnd" => Op2::And,
        "LogicalOr" => Op2::Or,
        "LogicalXor" => Op2::Xor,
        "Minimum" => Op2::Min,
        "Maximum" => Op2::Max,
        "FloorMod" => Op2::ModFloor,
        "Mod" => Op2::ModTrunc,
        _ => return Err(NoEval::Silent),
    };
    combine_node(i, op)
}

/// Integer and boolean inputs here; comparisons and `Min`/`Max` of floats in `float.rs`.
fn combine_node(i: &Inputs, op: Op2) -> Result<Tensor, NoEval> {
    match (op, i.input(0)) {
        (Op2::Min, Some(t)) if float::is_float(t.dtype) => return float::binary_node(i, FBin::Min),
        (Op2::Max, Some(t)) if float::is_float(t.dtype) => return float::binary_node(i, FBin::Max),
        (_, Some(t)) if float::is_float(t.dtype) => {
            let cmp = match op {
                Op2::Equal => FCmp::Equal,
                Op2::NotEqual => FCmp::NotEqual,
                Op2::Less => FCmp::Less,
                Op2::LessEq => FCmp::LessEq,
                Op2::Greater => FCmp::Greater,
                Op2::GreaterEq => FCmp::GreaterEq,
                _ => return Err(NoEval::Silent),
            };
            return float::compare_node(i, cmp);
        }
        _ => {}
    }
    let inputs: Vec<&Tensor> = i.consts.iter().flatten().copied().collect();
    if inputs.is_empty() || inputs.len() != i.consts.len() || !integer_or_bool(inputs[0].dtype) {
        return Err(NoEval::Silent);
    }
    if op.boolean() && !matches!(op, Op2::And | Op2::Or | Op2::Xor) && inputs.len() != 2 {
        return Err(NoEval::Silent);
    }
    Ok(combine(&inputs, op, i.limit)?)
}

/// ONNX `Mod`: `fmod` 0 (default) takes the divisor's sign, 1 the dividend's.
fn onnx_mod_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let op = if i.node.attr_int("fmod").unwrap_or(0) != 0 {
        Op2::ModTrunc
    } else {
        Op2::ModFloor
    };
    combine_node(i, op)
}

fn unary_node(i: &Inputs, op: Op1) -> Result<Tensor, NoEval> {
    match (op, i.consts) {
        (Op1::Neg, [Some(t)]) if float::is_float(t.dtype) => return float::unary_node(i, FUn::Neg),
        (Op1::Abs, [Some(t)]) if float::is_float(t.dtype) => return float::unary_node(i, FUn::Abs),
        _ => {}
    }
    match i.consts {
        [Some(t)] if integer_or_bool(t.dtype) => Ok(unary(t, op, i.limit)?),
        _ => Err(NoEval::Silent),
    }
}

fn select_node(i: &Inputs) -> Result<Tensor, NoEval> {
    match i.consts {
        [Some(c), Some(x), Some(y)] => Ok(select(c, x, y, i.limit)?),
        _ => Err(NoEval::Silent),
    }
}

fn expand_node(i: &Inputs) -> Result<Tensor, NoEval> {
    match i.consts {
        [Some(t), Some(s)] => Ok(expand(t, &attrs::input_ints(Some(s))?, i.limit)?),
        _ => Err(NoEval::Silent),
    }
}

/// OpenVINO `Broadcast`: `numpy` (the default) gives exactly the target shape, `bidirectional`
/// is ONNX `Expand`; `explicit` (axes mapping) is not folded.
fn ov_broadcast_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let (t, s) = match i.consts {
        [Some(t), Some(s)] | [Some(t), Some(s), None] => (*t, *s),
        _ => return Err(NoEval::Silent),
    };
    let target = attrs::input_ints(Some(s))?;
    match i
        .node
        .attr_str("mode")
        .map(|m| m.trim().to_ascii_lowercase())
        .as_deref()
    {
        None | Some("numpy") => {
            let shape = target_shape(&target)?;
            if broadcast_shape(&t.shape, &shape)? != shape {
                return Err(NoEval::Skip(format!(
                    "Broadcast of {:?} to {shape:?} (numpy mode)",
                    t.shape
                )));
            }
            Ok(broadcast_to(t, shape, i.limit)?)
        }
        Some("bidirectional") => Ok(expand(t, &target, i.limit)?),
        Some(m) => Err(NoEval::Skip(format!("Broadcast mode {m} is not folded"))),
    }
}

/// ONNX `Trilu`: `k` (input 1, default 0), `upper` (default 1).
fn trilu_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let t = i.input(0).ok_or(NoEval::Silent)?;
    let k = match i.input(1) {
        Some(k) => match attrs::input_ints(Some(k))?.as_slice() {
            [k] => *k,
            _ => return Err(NoEval::Skip("Trilu k is not a scalar".into())),
        },
        None => 0,
    };
    let upper = i.node.attr_int("upper").unwrap_or(1) != 0;
    Ok(trilu(t, k, upper, i.limit)?)
}
