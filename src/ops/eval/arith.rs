//! Values of the integer arithmetic that feeds shapes: element-wise `Add`/`Sub`/`Mul`/`Div`
//! with numpy broadcasting, `Range`, `ConstantOfShape`, and their rows of the fold table (`OPS`,
//! near the end). Their shape rules are in `shape/elementwise.rs` and `shape/gather.rs`.

use bytes::Bytes;

use crate::ir::Format::{Onnx, OpenVino};
use crate::ir::{Attr, DType, Tensor, TensorData};
use crate::ops::attrs;
use crate::ops::registry::{row, Inputs, NoEval, OpEntry};

use super::float::{self, FBin};
use super::{cast, check_size, count, EvalError};

/// An integer element-wise binary operation (see [`arith`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arith {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b` rounded toward zero (ONNX `Div` on integers, as ONNX Runtime computes it).
    DivTrunc,
    /// `a / b` rounded toward minus infinity (OpenVINO `Divide` with `m_pythondiv`, its default).
    DivFloor,
}

/// The numpy broadcast of two shapes.
pub fn broadcast_shape(a: &[u64], b: &[u64]) -> Result<Vec<u64>, EvalError> {
    let n = a.len().max(b.len());
    let at = |s: &[u64], i: usize| (i + s.len()).checked_sub(n).map_or(1, |k| s[k]);
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Ok(x),
            (1, y) => Ok(y),
            (x, 1) => Ok(x),
            (x, y) => Err(EvalError::Invalid(format!(
                "shapes {a:?} and {b:?} do not broadcast (dims {x} and {y})"
            ))),
        })
        .collect()
}

/// The flat index into a tensor of shape `s` (broadcast to `out`) of output position `pos`.
pub(crate) fn broadcast_offsets(s: &[u64], out: &[u64]) -> Vec<u64> {
    let n = out.len();
    let total: u64 = out.iter().product();
    let mut offsets = Vec::with_capacity(total as usize);
    // Stride of each output axis in `s` (0 where `s` broadcasts).
    let mut strides = vec![0u64; n];
    let mut acc = 1u64;
    for i in (0..n).rev() {
        let k = (i + s.len()).checked_sub(n);
        let d = k.map_or(1, |k| s[k]);
        strides[i] = if d == 1 { 0 } else { acc };
        acc *= d;
    }
    let mut idx = vec![0u64; n];
    for _ in 0..total {
        offsets.push(idx.iter().zip(&strides).map(|(i, s)| i * s).sum());
        for ax in (0..n).rev() {
            idx[ax] += 1;
            if idx[ax] < out[ax] {
                break;
            }
            idx[ax] = 0;
        }
    }
    offsets
}

/// `a op b` on integer tensors of one type, numpy broadcasting. The result has that type;
/// overflow of `i64`, a division by zero or `i64::MIN / -1` are not folded
/// ([`EvalError::Unsupported`]); a result outside a narrower type wraps, as the runtimes do.
pub fn arith(a: &Tensor, b: &Tensor, op: Arith, limit: u64) -> Result<Tensor, EvalError> {
    if a.dtype != b.dtype || !a.dtype.is_index_type() {
        return Err(EvalError::Unsupported(format!(
            "arithmetic on {:?} and {:?} (integer tensors of one type only)",
            a.dtype, b.dtype
        )));
    }
    let shape = broadcast_shape(&a.shape, &b.shape)?;
    let n = count(&shape)?;
    check_size(a.dtype, n, limit)?;
    check_size(DType::I64, n, limit)?;
    let (x, y) = match (a.to_i64_vec(), b.to_i64_vec()) {
        (Some(x), Some(y)) => (x, y),
        _ => {
            return Err(EvalError::Invalid(
                "integer data shorter than its shape".into(),
            ))
        }
    };
    let (ox, oy) = (
        broadcast_offsets(&a.shape, &shape),
        broadcast_offsets(&b.shape, &shape),
    );
    let mut out = Vec::with_capacity(n as usize);
    for (i, j) in ox.iter().zip(&oy) {
        let (p, q) = (x[*i as usize], y[*j as usize]);
        let v = match op {
            Arith::Add => p.checked_add(q),
            Arith::Sub => p.checked_sub(q),
            Arith::Mul => p.checked_mul(q),
            Arith::DivTrunc => p.checked_div(q),
            Arith::DivFloor => p.checked_div(q).map(|d| {
                if (p % q != 0) && ((p < 0) != (q < 0)) {
                    d - 1
                } else {
                    d
                }
            }),
        };
        out.push(v.ok_or_else(|| {
            EvalError::Unsupported(format!("{op:?} of {p} and {q} overflows or divides by 0"))
        })?);
    }
    cast(&Tensor::from_i64(shape, &out), a.dtype, limit)
}

/// ONNX `Range` on integer scalars: `start, start + delta, ...` while before `limit`.
pub fn range(
    start: &Tensor,
    end: &Tensor,
    delta: &Tensor,
    limit: u64,
) -> Result<Tensor, EvalError> {
    let dtype = start.dtype;
    if !dtype.is_index_type() || end.dtype != dtype || delta.dtype != dtype {
        return Err(EvalError::Unsupported(
            "Range of non-integer or mixed types".into(),
        ));
    }
    let scalar = |t: &Tensor| match t.to_i64_vec().as_deref() {
        Some([v]) => Ok(*v),
        _ => Err(EvalError::Invalid("Range takes scalars".into())),
    };
    let (s, e, d) = (scalar(start)?, scalar(end)?, scalar(delta)?);
    if d == 0 {
        return Err(EvalError::Invalid("Range with delta 0".into()));
    }
    let (s128, e128, d128) = (s as i128, e as i128, d as i128);
    // max(ceil((limit - start) / delta), 0)
    let num = e128 - s128;
    let len = if (num > 0) == (d128 > 0) && num != 0 {
        (num + d128 - d128.signum()) / d128
    } else {
        0
    };
    let len = u64::try_from(len).map_err(|_| EvalError::Invalid("Range length".into()))?;
    check_size(dtype, len, limit)?;
    check_size(DType::I64, len, limit)?;
    let values: Vec<i64> = (0..len as i128).map(|k| (s128 + k * d128) as i64).collect();
    cast(&Tensor::from_i64(vec![len], &values), dtype, limit)
}

/// ONNX `ConstantOfShape`: a tensor of `shape` filled with the single element of `value`.
pub fn fill(shape: &[i64], value: &Tensor, limit: u64) -> Result<Tensor, EvalError> {
    let shape: Vec<u64> = shape
        .iter()
        .map(|&d| u64::try_from(d).map_err(|_| EvalError::Invalid(format!("negative dim {d}"))))
        .collect::<Result<_, _>>()?;
    let n = count(&shape)?;
    check_size(value.dtype, n, limit)?;
    let raw = value
        .raw()
        .ok_or_else(|| EvalError::Unsupported("ConstantOfShape of strings".into()))?;
    let w = value.dtype.bits() / 8;
    if value.dtype.bits() % 8 != 0 || value.element_count() != Some(1) || raw.len() < w {
        return Err(EvalError::Unsupported(
            "ConstantOfShape value: one element of a whole-byte type".into(),
        ));
    }
    let one = &raw[..w];
    let mut buf = Vec::with_capacity((n as usize).saturating_mul(w));
    for _ in 0..n {
        buf.extend_from_slice(one);
    }
    Ok(Tensor {
        dtype: value.dtype,
        shape,
        data: TensorData::Raw(Bytes::from(buf)),
    })
}

// The ops of this family that `fold` evaluates on constants: their rows of
// `ops::registry::OPS`, and the functions reading a node's inputs and attributes.

/// Rows of [`crate::ops::registry::OPS`].
pub(crate) const OPS: &[OpEntry] = &[
    row("Add", Onnx, |i| binary_node(i, Arith::Add)),
    row("Sub", Onnx, |i| binary_node(i, Arith::Sub)),
    row("Mul", Onnx, |i| binary_node(i, Arith::Mul)),
    row("Div", Onnx, |i| binary_node(i, Arith::DivTrunc)),
    OpEntry {
        precheck: Some(attrs::ov_numpy_broadcast),
        ..row("Add", OpenVino, |i| binary_node(i, Arith::Add))
    },
    OpEntry {
        precheck: Some(attrs::ov_numpy_broadcast),
        ..row("Subtract", OpenVino, |i| binary_node(i, Arith::Sub))
    },
    OpEntry {
        precheck: Some(attrs::ov_numpy_broadcast),
        ..row("Multiply", OpenVino, |i| binary_node(i, Arith::Mul))
    },
    OpEntry {
        precheck: Some(attrs::ov_numpy_broadcast),
        ..row("Divide", OpenVino, ov_divide_node)
    },
    row("Range", Onnx, range_node),
    row("ConstantOfShape", Onnx, constant_of_shape_node),
];

/// An element-wise operation of two constant inputs: integers here, floats in `float.rs`
/// (both divisions are the true division there).
fn binary_node(i: &Inputs, op: Arith) -> Result<Tensor, NoEval> {
    match i.consts {
        [Some(a), Some(b)] if a.dtype.is_index_type() => Ok(arith(a, b, op, i.limit)?),
        [Some(a), Some(_)] if float::is_float(a.dtype) => {
            let op = match op {
                Arith::Add => FBin::Add,
                Arith::Sub => FBin::Sub,
                Arith::Mul => FBin::Mul,
                Arith::DivTrunc | Arith::DivFloor => FBin::Div,
            };
            float::binary_node(i, op)
        }
        _ => Err(NoEval::Silent),
    }
}

fn ov_divide_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let op = if attrs::ov_python_div(i.node) {
        Arith::DivFloor
    } else {
        Arith::DivTrunc
    };
    binary_node(i, op)
}

fn range_node(i: &Inputs) -> Result<Tensor, NoEval> {
    match i.consts {
        [Some(s), Some(e), Some(d)] if float::is_float(s.dtype) => {
            Ok(float::range(s, e, d, i.limit)?)
        }
        [Some(s), Some(e), Some(d)] => Ok(range(s, e, d, i.limit)?),
        _ => Err(NoEval::Silent),
    }
}

/// ONNX `ConstantOfShape`: `value` defaults to one f32 zero.
fn constant_of_shape_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let shape = attrs::input_ints(i.input(0))?;
    let value = match i.node.attr("value") {
        Some(Attr::Tensor(t)) => t.as_ref().clone(),
        None => Tensor {
            dtype: DType::F32,
            shape: vec![1],
            data: TensorData::Raw(Bytes::from(vec![0u8; 4])),
        },
        Some(_) => (i.tensor_attr)("value")
            .ok_or_else(|| NoEval::Skip("ConstantOfShape value is not a readable tensor".into()))?,
    };
    Ok(fill(&shape, &value, i.limit)?)
}

#[cfg(test)]
mod arith_tests {
    use super::*;

    fn t(shape: &[u64], v: &[i64]) -> Tensor {
        Tensor::from_i64(shape.to_vec(), v)
    }

    /// numpy: `[[1], [2]] - [10, 20, 30]` broadcasts to 2x3; `-7 // 2 == -4` (OpenVINO's
    /// python division), C++ `-7 / 2 == -3` (ONNX Runtime's integer Div).
    #[test]
    fn broadcasting_and_division_rounding() {
        let r = arith(
            &t(&[2, 1], &[1, 2]),
            &t(&[3], &[10, 20, 30]),
            Arith::Sub,
            1 << 20,
        )
        .expect("broadcasts");
        assert_eq!(r.shape, [2, 3]);
        assert_eq!(r.to_i64_vec().expect("ints"), [-9, -19, -29, -8, -18, -28]);
        let (a, b) = (t(&[2], &[-7, 7]), t(&[], &[2]));
        let floor = arith(&a, &b, Arith::DivFloor, 1 << 20).expect("div");
        let trunc = arith(&a, &b, Arith::DivTrunc, 1 << 20).expect("div");
        assert_eq!(floor.to_i64_vec().expect("ints"), [-4, 3]);
        assert_eq!(trunc.to_i64_vec().expect("ints"), [-3, 3]);
        assert!(arith(&a, &t(&[], &[0]), Arith::DivTrunc, 1 << 20).is_err());
        assert!(arith(&t(&[2], &[1, 2]), &t(&[3], &[1, 2, 3]), Arith::Add, 1 << 20).is_err());
    }

    /// ONNX Range examples: range(3, 9, 3) = [3, 6]; range(10, 4, -3) = [10, 7]; empty when the
    /// limit is behind; ConstantOfShape fills.
    #[test]
    fn range_and_fill() {
        let s = |v| t(&[], &[v]);
        let r = range(&s(3), &s(9), &s(3), 1 << 20).expect("range");
        assert_eq!(r.to_i64_vec().expect("ints"), [3, 6]);
        let r = range(&s(10), &s(4), &s(-3), 1 << 20).expect("range");
        assert_eq!(r.to_i64_vec().expect("ints"), [10, 7]);
        let r = range(&s(5), &s(1), &s(2), 1 << 20).expect("range");
        assert_eq!(r.shape, [0]);
        let f = fill(&[2, 3], &t(&[1], &[7]), 1 << 20).expect("fill");
        assert_eq!(f.shape, [2, 3]);
        assert_eq!(f.to_i64_vec().expect("ints"), [7; 6]);
    }
}
