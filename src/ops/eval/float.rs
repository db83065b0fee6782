//! Values of floating-point element-wise arithmetic on constants (`f32`, `f64`), as the
//! runtimes compute them, and the rows of the ops only this family folds (`OPS`, near the end).
//!
//! Exporters compute integer shape values through floats (tf2onnx: `Cast` to float, `Mul`,
//! `Max`, `Floor`, `Cast` back; optimum: `Sqrt` of a `Cast` head size), and fixed input sizes
//! make those chains constant. Each operation is IEEE 754 arithmetic in the tensor's own type
//! (`f32` in `f32`, never through `f64`), which is what ONNX Runtime's and OpenVINO's CPU kernels
//! compute for these ops (`+ - * /`, `sqrt`, `floor`, `ceil`, `1 / x`, rounding half to even are
//! exactly rounded on every target). Transcendental functions are not computed here: ONNX
//! Runtime computes them with vector approximations whose result depends on the element's
//! position in the tensor; `transcendental.rs` reproduces those of ONNX `Sin`, `Cos` and `Log`
//! bit for bit, and the others (`Exp`, OpenVINO's) are not folded.
//!
//! The rows of `Add`, `Sub`, `Mul`, `Div`, `Min`, `Max`, `Neg`, `Abs` and the comparisons
//! (integer in `arith.rs` and `elementwise.rs`) call [`binary`], [`unary`] and [`compare`] for
//! float inputs; `Range` of floats calls [`range`].

use bytes::Bytes;

use crate::ir::Format::{Onnx, OpenVino};
use crate::ir::{Attr, DType, Tensor, TensorData};
use crate::ops::registry::{row, Inputs, NoEval, OpEntry};

use super::arith::{broadcast_offsets, broadcast_shape};
use super::{check_size, count, EvalError};

/// Whether this family computes on elements of `d` (`f32`, `f64`).
pub fn is_float(d: DType) -> bool {
    matches!(d, DType::F32 | DType::F64)
}

/// An element type this family computes in.
trait Elem:
    'static
    + Copy
    + PartialOrd
    + std::fmt::Debug
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
{
    const W: usize;
    fn read(b: &[u8]) -> Self;
    /// Writes the element into `out`, exactly [`Elem::W`] bytes.
    fn write_to(self, out: &mut [u8]);
    fn bin(op: FBin, a: Self, b: Self) -> Option<Self>;
    fn un(op: FUn, a: Self) -> Self;
    fn from_f32(v: f32) -> Self;
    fn to_f64(self) -> f64;
    fn is_nan(self) -> bool;
}

/// A binary operation (see [`binary`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FBin {
    Add,
    Sub,
    Mul,
    Div,
    /// The larger; NaN, or two zeros of different signs, are not folded (the runtimes' vector
    /// `max` instructions pick an operand by position there).
    Max,
    /// The smaller, with [`FBin::Max`]'s refusals.
    Min,
}

/// A unary operation (see [`unary`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FUn {
    Neg,
    Abs,
    Floor,
    Ceil,
    Sqrt,
    /// `1 / x`.
    Reciprocal,
    /// To the nearest integer, halves to even (ONNX `Round`, OpenVINO `Round` `half_to_even`).
    RoundEven,
}

macro_rules! elem {
    ($t:ty, $w:expr) => {
        impl Elem for $t {
            const W: usize = $w;
            fn read(b: &[u8]) -> Self {
                let mut a = [0u8; $w];
                a.copy_from_slice(&b[..$w]);
                <$t>::from_le_bytes(a)
            }
            fn write_to(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_le_bytes());
            }
            #[inline(always)]
            fn bin(op: FBin, a: Self, b: Self) -> Option<Self> {
                Some(match op {
                    FBin::Add => a + b,
                    FBin::Sub => a - b,
                    FBin::Mul => a * b,
                    FBin::Div => a / b,
                    FBin::Max | FBin::Min => {
                        if a.is_nan()
                            || b.is_nan()
                            || (a == 0.0 && b == 0.0 && a.to_bits() != b.to_bits())
                        {
                            return None;
                        }
                        if (op == FBin::Max) == (a >= b) {
                            a
                        } else {
                            b
                        }
                    }
                })
            }
            fn un(op: FUn, a: Self) -> Self {
                match op {
                    FUn::Neg => -a,
                    FUn::Abs => a.abs(),
                    FUn::Floor => a.floor(),
                    FUn::Ceil => a.ceil(),
                    FUn::Sqrt => a.sqrt(),
                    FUn::Reciprocal => 1.0 / a,
                    FUn::RoundEven => a.round_ties_even(),
                }
            }
            fn from_f32(v: f32) -> Self {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}
elem!(f32, 4);
elem!(f64, 8);

/// The elements of `t` (of type `E`), checked against its shape.
fn values<E: Elem>(t: &Tensor) -> Result<Vec<E>, EvalError> {
    Ok(elements::<E>(t)?.collect())
}

/// The elements of `t` (of type `E`), checked against its shape, read in place.
fn elements<E: Elem>(t: &Tensor) -> Result<impl ExactSizeIterator<Item = E> + '_, EvalError> {
    let raw = t
        .raw()
        .ok_or_else(|| EvalError::Unsupported("string tensors".into()))?;
    let n = count(&t.shape)? as usize;
    let bytes = raw
        .get(..n.saturating_mul(E::W))
        .filter(|_| n.checked_mul(E::W).is_some())
        .ok_or_else(|| EvalError::Invalid("constant data shorter than its shape".into()))?;
    Ok(bytes.chunks_exact(E::W).map(E::read))
}

fn tensor<E: Elem>(dtype: DType, shape: Vec<u64>, v: &[E]) -> Tensor {
    let mut buf = vec![0u8; v.len() * E::W];
    for (x, out) in v.iter().zip(buf.chunks_exact_mut(E::W)) {
        x.write_to(out);
    }
    Tensor {
        dtype,
        shape,
        data: TensorData::Raw(Bytes::from(buf)),
    }
}

fn binary_in<E: Elem>(inputs: &[&Tensor], op: FBin, limit: u64) -> Result<Tensor, EvalError> {
    let first = inputs[0];
    let mut shape = first.shape.clone();
    for t in &inputs[1..] {
        shape = broadcast_shape(&shape, &t.shape)?;
    }
    let n = count(&shape)?;
    check_size(first.dtype, n, limit)?;
    // An input of the output's shape is read in order, a one-element input as that element;
    // only a real broadcast needs the offset table (the same elements either way).
    let mut acc: Vec<E> = {
        let v = values::<E>(first)?;
        if first.shape == shape {
            v
        } else {
            broadcast_offsets(&first.shape, &shape)
                .iter()
                .map(|&o| v[o as usize])
                .collect()
        }
    };
    let fail = |a: E, b: E| {
        EvalError::Unsupported(format!("{op:?} of {a:?} and {b:?} (NaN or signed zeros)"))
    };
    for t in &inputs[1..] {
        if t.shape == shape {
            // Read in place (no list of the elements: 100,000 folds of small tensors).
            zip_bin(&mut acc, elements::<E>(t)?, op, &fail)?;
            continue;
        }
        let v = values::<E>(t)?;
        if let [b] = v[..] {
            for a in acc.iter_mut() {
                *a = E::bin(op, *a, b).ok_or_else(|| fail(*a, b))?;
            }
        } else {
            for (a, o) in acc.iter_mut().zip(broadcast_offsets(&t.shape, &shape)) {
                let b = v[o as usize];
                *a = E::bin(op, *a, b).ok_or_else(|| fail(*a, b))?;
            }
        }
    }
    Ok(tensor(first.dtype, shape, &acc))
}

/// `acc[i] = op(acc[i], b_i)` for the elements `b_i` of `other`, the operation chosen once for
/// the loop (not matched per element); `fail` says why an element pair is refused.
fn zip_bin<E: Elem>(
    acc: &mut [E],
    other: impl Iterator<Item = E>,
    op: FBin,
    fail: &impl Fn(E, E) -> EvalError,
) -> Result<(), EvalError> {
    #[inline(always)]
    fn each<E: Elem>(
        acc: &mut [E],
        other: impl Iterator<Item = E>,
        f: impl Fn(E, E) -> Option<E>,
        fail: &impl Fn(E, E) -> EvalError,
    ) -> Result<(), EvalError> {
        for (a, b) in acc.iter_mut().zip(other) {
            *a = f(*a, b).ok_or_else(|| fail(*a, b))?;
        }
        Ok(())
    }
    match op {
        FBin::Add => each(acc, other, |a, b| E::bin(FBin::Add, a, b), fail),
        FBin::Sub => each(acc, other, |a, b| E::bin(FBin::Sub, a, b), fail),
        FBin::Mul => each(acc, other, |a, b| E::bin(FBin::Mul, a, b), fail),
        FBin::Div => each(acc, other, |a, b| E::bin(FBin::Div, a, b), fail),
        FBin::Max => each(acc, other, |a, b| E::bin(FBin::Max, a, b), fail),
        FBin::Min => each(acc, other, |a, b| E::bin(FBin::Min, a, b), fail),
    }
}

/// `op` over `inputs` (one float type), numpy broadcasting, left to right (`Min`/`Max` take any
/// number of inputs), in the inputs' type.
pub fn binary(inputs: &[&Tensor], op: FBin, limit: u64) -> Result<Tensor, EvalError> {
    let first = inputs
        .first()
        .ok_or_else(|| EvalError::Invalid("no inputs".into()))?;
    if inputs.iter().any(|t| t.dtype != first.dtype) {
        return Err(EvalError::Unsupported(format!(
            "{op:?} of mixed types {:?}",
            inputs.iter().map(|t| t.dtype).collect::<Vec<_>>()
        )));
    }
    match first.dtype {
        DType::F32 => binary_in::<f32>(inputs, op, limit),
        DType::F64 => binary_in::<f64>(inputs, op, limit),
        d => Err(EvalError::Unsupported(format!("{op:?} of {d:?}"))),
    }
}

fn unary_in<E: Elem>(t: &Tensor, op: FUn, limit: u64) -> Result<Tensor, EvalError> {
    check_size(t.dtype, count(&t.shape)?, limit)?;
    let v: Vec<E> = values::<E>(t)?.into_iter().map(|x| E::un(op, x)).collect();
    Ok(tensor(t.dtype, t.shape.clone(), &v))
}

/// `op` of every element of `t` (a float tensor), in its type.
pub fn unary(t: &Tensor, op: FUn, limit: u64) -> Result<Tensor, EvalError> {
    match t.dtype {
        DType::F32 => unary_in::<f32>(t, op, limit),
        DType::F64 => unary_in::<f64>(t, op, limit),
        d => Err(EvalError::Unsupported(format!("{op:?} of {d:?}"))),
    }
}

fn range_in<E: Elem>(dtype: DType, s: E, e: E, d: E, limit: u64) -> Result<Tensor, EvalError> {
    if d.to_f64() == 0.0 || [s, e, d].iter().any(|x| x.is_nan()) {
        return Err(EvalError::Invalid("Range with delta 0 or NaN".into()));
    }
    // ONNX Runtime: n = ceil((double)(limit - start) / delta), the difference in the type.
    let n = ((e - s).to_f64() / d.to_f64()).ceil();
    if !n.is_finite() || n > u64::MAX as f64 {
        return Err(EvalError::Invalid(format!("Range of {n} elements")));
    }
    let n = if n > 0.0 { n as u64 } else { 0 };
    check_size(dtype, n, limit)?;
    // Each element is the previous one plus delta, in the type (ONNX Runtime's loop; the
    // spec's `start + i * delta` rounds differently).
    let mut v = Vec::with_capacity(n as usize);
    let mut x = s;
    for _ in 0..n {
        v.push(x);
        x = x + d;
    }
    Ok(tensor(dtype, vec![n], &v))
}

/// ONNX `Range` of float scalars, as ONNX Runtime computes it: the length
/// `ceil((limit - start) / delta)` (the difference in the type, the division in `f64`), and
/// each element the previous one plus `delta` in the type.
pub fn range(
    start: &Tensor,
    end: &Tensor,
    delta: &Tensor,
    limit: u64,
) -> Result<Tensor, EvalError> {
    let dtype = start.dtype;
    if end.dtype != dtype || delta.dtype != dtype {
        return Err(EvalError::Unsupported("Range of mixed types".into()));
    }
    fn scalar<E: Elem>(t: &Tensor) -> Result<E, EvalError> {
        match values::<E>(t)?.as_slice() {
            [v] => Ok(*v),
            _ => Err(EvalError::Invalid("Range takes scalars".into())),
        }
    }
    match dtype {
        DType::F32 => range_in::<f32>(dtype, scalar(start)?, scalar(end)?, scalar(delta)?, limit),
        DType::F64 => range_in::<f64>(dtype, scalar(start)?, scalar(end)?, scalar(delta)?, limit),
        d => Err(EvalError::Unsupported(format!("Range of {d:?}"))),
    }
}

/// `x` to the power `y` when the exact result is a value of the type, else `None`: `y` a
/// whole number from 0 to 64 (the product computed exactly), or `y = 0.5` of a perfect square.
/// Those are the cases where every implementation the runtimes use (ONNX Runtime: `x * x` for
/// 2, `x * x * x` for 3, `std::pow` otherwise, each within one unit in the last place) gives
/// the same value, the exact one; other powers are not folded.
fn exact_pow(x: f64, y: f64, fits: impl Fn(f64) -> bool) -> Option<f64> {
    if !x.is_finite() || !y.is_finite() {
        return None;
    }
    if y == 0.5 {
        let r = x.sqrt();
        return (r.is_finite() && r.mul_add(r, -x) == 0.0 && fits(r)).then_some(r);
    }
    if y.fract() != 0.0 || !(0.0..=64.0).contains(&y) {
        return None;
    }
    let mut r = 1.0f64;
    for _ in 0..y as u32 {
        let p = r * x;
        if !p.is_finite() || r.mul_add(x, -p) != 0.0 {
            return None;
        }
        r = p;
    }
    fits(r).then_some(r)
}

/// ONNX `Pow` / OpenVINO `Power` of floats of one type, numpy broadcasting, where every result
/// is exact (see `exact_pow`); otherwise not folded.
pub fn pow(a: &Tensor, b: &Tensor, limit: u64) -> Result<Tensor, EvalError> {
    if a.dtype != b.dtype {
        return Err(EvalError::Unsupported("Pow of mixed types".into()));
    }
    fn go<E: Elem>(
        a: &Tensor,
        b: &Tensor,
        limit: u64,
        back: fn(f64) -> Option<E>,
    ) -> Result<Tensor, EvalError> {
        let shape = broadcast_shape(&a.shape, &b.shape)?;
        check_size(a.dtype, count(&shape)?, limit)?;
        let (x, y) = (values::<E>(a)?, values::<E>(b)?);
        let out = broadcast_offsets(&a.shape, &shape)
            .iter()
            .zip(broadcast_offsets(&b.shape, &shape))
            .map(|(&i, j)| {
                let (p, q) = (x[i as usize].to_f64(), y[j as usize].to_f64());
                exact_pow(p, q, |r| back(r).is_some())
                    .and_then(back)
                    .ok_or_else(|| {
                        EvalError::Unsupported(format!(
                            "Pow({p}, {q}) is not exact in {:?}",
                            a.dtype
                        ))
                    })
            })
            .collect::<Result<Vec<E>, _>>()?;
        Ok(tensor(a.dtype, shape, &out))
    }
    match a.dtype {
        DType::F32 => go::<f32>(a, b, limit, |r| {
            ((r as f32) as f64 == r).then_some(r as f32)
        }),
        DType::F64 => go::<f64>(a, b, limit, Some),
        d => Err(EvalError::Unsupported(format!("Pow of {d:?}"))),
    }
}

/// A comparison (see [`compare`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FCmp {
    Equal,
    NotEqual,
    Less,
    LessEq,
    Greater,
    GreaterEq,
}

fn compare_in<E: Elem>(a: &Tensor, b: &Tensor, op: FCmp, limit: u64) -> Result<Tensor, EvalError> {
    let shape = broadcast_shape(&a.shape, &b.shape)?;
    let n = count(&shape)?;
    check_size(DType::Bool, n, limit)?;
    let (x, y) = (values::<E>(a)?, values::<E>(b)?);
    let out: Vec<u8> = broadcast_offsets(&a.shape, &shape)
        .iter()
        .zip(broadcast_offsets(&b.shape, &shape))
        .map(|(&i, j)| {
            let (p, q) = (x[i as usize], y[j as usize]);
            u8::from(match op {
                FCmp::Equal => p == q,
                FCmp::NotEqual => p != q,
                FCmp::Less => p < q,
                FCmp::LessEq => p <= q,
                FCmp::Greater => p > q,
                FCmp::GreaterEq => p >= q,
            })
        })
        .collect();
    Ok(Tensor {
        dtype: DType::Bool,
        shape,
        data: TensorData::Raw(Bytes::from(out)),
    })
}

/// `a op b` of two float tensors of one type, numpy broadcasting, as booleans (IEEE: every
/// comparison with NaN is false but `NotEqual`; `-0 == +0`).
pub fn compare(a: &Tensor, b: &Tensor, op: FCmp, limit: u64) -> Result<Tensor, EvalError> {
    if a.dtype != b.dtype {
        return Err(EvalError::Unsupported(format!(
            "{op:?} of {:?} and {:?}",
            a.dtype, b.dtype
        )));
    }
    match a.dtype {
        DType::F32 => compare_in::<f32>(a, b, op, limit),
        DType::F64 => compare_in::<f64>(a, b, op, limit),
        d => Err(EvalError::Unsupported(format!("{op:?} of {d:?}"))),
    }
}

/// ONNX `Clip` of a float tensor: `min(max(x, lo), hi)` (so `hi` where `lo > hi`, as the spec
/// says); NaN elements stay NaN.
fn clip_in<E: Elem>(
    t: &Tensor,
    lo: Option<E>,
    hi: Option<E>,
    limit: u64,
) -> Result<Tensor, EvalError> {
    check_size(t.dtype, count(&t.shape)?, limit)?;
    if lo.is_some_and(|x| x.is_nan()) || hi.is_some_and(|x| x.is_nan()) {
        return Err(EvalError::Unsupported("Clip with a NaN bound".into()));
    }
    let v: Vec<E> = values::<E>(t)?
        .into_iter()
        .map(|mut x| {
            if let Some(lo) = lo {
                if x < lo {
                    x = lo;
                }
            }
            if let Some(hi) = hi {
                if x > hi {
                    x = hi;
                }
            }
            x
        })
        .collect();
    Ok(tensor(t.dtype, t.shape.clone(), &v))
}

/// ONNX `Clip` (integer or float): `min(max(x, lo), hi)`, a missing bound no bound.
pub fn clip(
    t: &Tensor,
    lo: Option<&Tensor>,
    hi: Option<&Tensor>,
    limit: u64,
) -> Result<Tensor, EvalError> {
    if [lo, hi]
        .iter()
        .flatten()
        .any(|b| b.dtype != t.dtype || b.element_count() != Some(1))
    {
        return Err(EvalError::Unsupported(
            "Clip bounds: one element of the input's type".into(),
        ));
    }
    if t.dtype.is_index_type() {
        let ints = |b: Option<&Tensor>| -> Result<Option<i64>, EvalError> {
            b.map(|b| {
                b.to_i64_vec()
                    .and_then(|v| v.first().copied())
                    .ok_or_else(|| EvalError::Invalid("Clip bound unreadable".into()))
            })
            .transpose()
        };
        let (lo, hi) = (ints(lo)?, ints(hi)?);
        let v = t
            .to_i64_vec()
            .ok_or_else(|| EvalError::Invalid("integer data shorter than its shape".into()))?;
        let v: Vec<i64> = v
            .into_iter()
            .map(|x| {
                let x = lo.map_or(x, |lo| x.max(lo));
                hi.map_or(x, |hi| x.min(hi))
            })
            .collect();
        return super::cast(&Tensor::from_i64(t.shape.clone(), &v), t.dtype, limit);
    }
    fn bound<E: Elem>(b: Option<&Tensor>) -> Result<Option<E>, EvalError> {
        b.map(|b| values::<E>(b).map(|v| v[0])).transpose()
    }
    match t.dtype {
        DType::F32 => clip_in::<f32>(t, bound(lo)?, bound(hi)?, limit),
        DType::F64 => clip_in::<f64>(t, bound(lo)?, bound(hi)?, limit),
        d => Err(EvalError::Unsupported(format!("Clip of {d:?}"))),
    }
}

// The ops of this family that `fold` evaluates on constants: their rows of
// `ops::registry::OPS`, and the functions reading a node's inputs and attributes.

/// Rows of [`crate::ops::registry::OPS`].
pub(crate) const OPS: &[OpEntry] = &[
    row("Floor", Onnx, |i| unary_node(i, FUn::Floor)),
    row("Ceil", Onnx, |i| unary_node(i, FUn::Ceil)),
    row("Sqrt", Onnx, |i| unary_node(i, FUn::Sqrt)),
    row("Reciprocal", Onnx, |i| unary_node(i, FUn::Reciprocal)),
    row("Round", Onnx, |i| unary_node(i, FUn::RoundEven)),
    row("Clip", Onnx, clip_node),
    row("Pow", Onnx, pow_node),
    row("Power", OpenVino, pow_node),
    row("Floor", OpenVino, |i| unary_node(i, FUn::Floor)),
    row("Ceiling", OpenVino, |i| unary_node(i, FUn::Ceil)),
    row("Sqrt", OpenVino, |i| unary_node(i, FUn::Sqrt)),
];

/// A unary row: float inputs only.
pub(crate) fn unary_node(i: &Inputs, op: FUn) -> Result<Tensor, NoEval> {
    match i.consts {
        [Some(t)] if is_float(t.dtype) => Ok(unary(t, op, i.limit)?),
        _ => Err(NoEval::Silent),
    }
}

/// A binary (or, for `Min`/`Max`, variadic) row's float case: every input a constant of one
/// float type.
pub(crate) fn binary_node(i: &Inputs, op: FBin) -> Result<Tensor, NoEval> {
    let inputs: Vec<&Tensor> = i.consts.iter().flatten().copied().collect();
    if inputs.is_empty() || inputs.len() != i.consts.len() || !is_float(inputs[0].dtype) {
        return Err(NoEval::Silent);
    }
    Ok(binary(&inputs, op, i.limit)?)
}

fn pow_node(i: &Inputs) -> Result<Tensor, NoEval> {
    match i.consts {
        [Some(a), Some(b)] if is_float(a.dtype) => Ok(pow(a, b, i.limit)?),
        _ => Err(NoEval::Silent),
    }
}

/// A comparison row's float case: two constants of one float type.
pub(crate) fn compare_node(i: &Inputs, op: FCmp) -> Result<Tensor, NoEval> {
    match i.consts {
        [Some(a), Some(b)] if is_float(a.dtype) => Ok(compare(a, b, op, i.limit)?),
        _ => Err(NoEval::Silent),
    }
}

/// ONNX `Clip`: bounds from inputs 1 and 2 (opset 11+, each optional) or the `min`/`max`
/// float attributes (before 11, float inputs only).
fn clip_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let t = i.input(0).ok_or(NoEval::Silent)?;
    if !(is_float(t.dtype) || t.dtype.is_index_type()) {
        return Err(NoEval::Silent);
    }
    let attr = |name: &str| match i.node.attr(name) {
        Some(Attr::Float(v)) => Some(*v),
        _ => None,
    };
    let (a_lo, a_hi) = (attr("min"), attr("max"));
    if a_lo.is_some() || a_hi.is_some() {
        if i.consts.len() > 1 {
            return Err(NoEval::Skip(
                "Clip with both bound inputs and attributes".into(),
            ));
        }
        let one = |v: Option<f32>| -> Option<Tensor> {
            let v = v?;
            Some(match t.dtype {
                DType::F32 => tensor::<f32>(t.dtype, vec![], &[f32::from_f32(v)]),
                DType::F64 => tensor::<f64>(t.dtype, vec![], &[f64::from_f32(v)]),
                _ => return None,
            })
        };
        if !is_float(t.dtype) {
            return Err(NoEval::Silent);
        }
        let (lo, hi) = (one(a_lo), one(a_hi));
        return Ok(clip(t, lo.as_ref(), hi.as_ref(), i.limit)?);
    }
    Ok(clip(t, i.input(1), i.input(2), i.limit)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(shape: &[u64], v: &[f32]) -> Tensor {
        tensor(DType::F32, shape.to_vec(), v)
    }

    fn read32(t: &Tensor) -> Vec<f32> {
        values::<f32>(t).expect("f32 values")
    }

    /// IEEE f32 results: 4097 * 4097 = 16785409 is not an f32 and rounds to even, 16785408;
    /// 1 / 0 is +inf; `Max` with NaN and `Min` of +0 and -0 are refused.
    #[test]
    fn arithmetic_in_the_type() {
        let a = f32s(&[2], &[4097.0, 1.5]);
        let b = f32s(&[], &[4097.0]);
        let r = binary(&[&a, &b], FBin::Mul, 1 << 20).expect("mul");
        assert_eq!(read32(&r), [16785408.0, 6145.5]);
        let r = binary(
            &[&f32s(&[1], &[1.0]), &f32s(&[1], &[0.0])],
            FBin::Div,
            1 << 20,
        )
        .expect("div");
        assert_eq!(read32(&r), [f32::INFINITY]);
        assert!(binary(&[&f32s(&[1], &[f32::NAN]), &b], FBin::Max, 1 << 20).is_err());
        assert!(binary(
            &[&f32s(&[1], &[0.0]), &f32s(&[1], &[-0.0])],
            FBin::Min,
            1 << 20
        )
        .is_err());
    }

    /// Exact powers fold (16^0.5 = 4, 3^3 = 27, (-2)^3 = -8, 5^0 = 1); others do not (2^0.5 is
    /// irrational, negative exponents are not folded, 1.1^2 is not an f32).
    #[test]
    fn only_exact_powers() {
        let p = |x: f32, y: f32| {
            pow(&f32s(&[], &[x]), &f32s(&[], &[y]), 1 << 20)
                .ok()
                .map(|t| read32(&t)[0])
        };
        assert_eq!(p(16.0, 0.5), Some(4.0));
        assert_eq!(p(3.0, 3.0), Some(27.0));
        assert_eq!(p(-2.0, 3.0), Some(-8.0));
        assert_eq!(p(5.0, 0.0), Some(1.0));
        assert_eq!(p(2.0, 0.5), None);
        assert_eq!(p(10.0, -1.0), None);
        assert_eq!(p(1.1, 2.0), None);
    }

    /// ONNX Round example: [0.9, 2.5, 2.3, 1.5, -4.5] -> [1, 2, 2, 2, -4].
    #[test]
    fn round_halves_to_even() {
        let t = f32s(&[5], &[0.9, 2.5, 2.3, 1.5, -4.5]);
        let r = unary(&t, FUn::RoundEven, 1 << 20).expect("round");
        assert_eq!(read32(&r), [1.0, 2.0, 2.0, 2.0, -4.0]);
    }

    /// ONNX Range example 2 on floats: Range(10, 4, -2) = [10, 8, 6]; an empty range.
    #[test]
    fn float_range() {
        let s = |v| f32s(&[], &[v]);
        let r = range(&s(10.0), &s(4.0), &s(-2.0), 1 << 20).expect("range");
        assert_eq!(read32(&r), [10.0, 8.0, 6.0]);
        let r = range(&s(1.0), &s(1.0), &s(1.0), 1 << 20).expect("range");
        assert_eq!(r.shape, [0]);
    }
}
