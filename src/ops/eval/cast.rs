//! Values of `Cast` (ONNX) and `Convert` (OpenVINO) on numeric tensors, and their rows of the
//! fold table (`OPS`, near the end).

use bytes::Bytes;

use crate::ir::Format::{Onnx, OpenVino};
use crate::ir::{DType, Tensor, TensorData};
use crate::ops::attrs::CastTo;
use crate::ops::registry::{row, Inputs, NoEval, OpEntry};

use super::{check_size, count, EvalError};

/// Converts numeric values between element types (shape arithmetic and small constants):
/// integers, bool, f16, bf16, f32, f64. Float to integer truncates toward zero, as ONNX `Cast`
/// and OpenVINO `Convert` do for in-range values; a NaN, an infinity or a value whose truncation
/// is outside the target type is not converted (the spec leaves it undefined and the runtimes'
/// answers depend on the instruction set). An integer becomes the nearest float of the target
/// type, rounded once (an `i64` to `f32` directly, not through `f64`).
pub fn cast(t: &Tensor, to: DType, limit: u64) -> Result<Tensor, EvalError> {
    use DType::*;
    let n = count(&t.shape)?;
    check_size(to, n, limit)?;
    if t.dtype == to {
        return Ok(t.clone());
    }
    let raw = t
        .raw()
        .ok_or_else(|| EvalError::Unsupported("cast of strings".into()))?;
    let supported = |d: DType| {
        matches!(
            d,
            I64 | I32 | I16 | I8 | U64 | U32 | U16 | U8 | Bool | F16 | BF16 | F32 | F64
        )
    };
    if !supported(t.dtype) || !supported(to) {
        return Err(EvalError::Unsupported(format!(
            "cast from {:?} to {to:?}",
            t.dtype
        )));
    }
    let w = t.dtype.bits() / 8;
    let mut out = Vec::with_capacity((n as usize).saturating_mul(to.bits() / 8));
    for i in 0..n as usize {
        let b = raw
            .get(i * w..(i + 1) * w)
            .ok_or_else(|| EvalError::Invalid("constant data too short".into()))?;
        // Integers go through i128, floats through f64.
        enum V {
            I(i128),
            F(f64),
        }
        let arr = |b: &[u8]| -> [u8; 8] {
            let mut a = [0u8; 8];
            a[..b.len()].copy_from_slice(b);
            a
        };
        let v = match t.dtype {
            I64 => V::I(i64::from_le_bytes(arr(b)) as i128),
            I32 => V::I(i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i128),
            I16 => V::I(i16::from_le_bytes([b[0], b[1]]) as i128),
            I8 => V::I(b[0] as i8 as i128),
            U64 => V::I(u64::from_le_bytes(arr(b)) as i128),
            U32 => V::I(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i128),
            U16 => V::I(u16::from_le_bytes([b[0], b[1]]) as i128),
            U8 => V::I(b[0] as i128),
            Bool => V::I((b[0] != 0) as i128),
            F16 => V::F(half::f16::from_le_bytes([b[0], b[1]]).to_f64()),
            BF16 => V::F(half::bf16::from_le_bytes([b[0], b[1]]).to_f64()),
            F32 => V::F(f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64),
            _ => V::F(f64::from_le_bytes(arr(b))),
        };
        let (lo, hi): (i128, i128) = match to {
            I64 => (i64::MIN.into(), i64::MAX.into()),
            I32 => (i32::MIN.into(), i32::MAX.into()),
            I16 => (i16::MIN.into(), i16::MAX.into()),
            I8 => (i8::MIN.into(), i8::MAX.into()),
            U64 => (0, u64::MAX.into()),
            U32 => (0, u32::MAX.into()),
            U16 => (0, u16::MAX.into()),
            U8 => (0, u8::MAX.into()),
            _ => (i128::MIN, i128::MAX),
        };
        let as_int = |v: &V| -> Result<i128, EvalError> {
            match v {
                V::I(i) => Ok(*i),
                // |f| < 2^127 here, so the truncation is exact in i128.
                V::F(f) if f.is_finite() && (lo as f64..hi as f64 + 1.0).contains(&f.trunc()) => {
                    Ok(f.trunc() as i128)
                }
                V::F(f) => Err(EvalError::Unsupported(format!(
                    "cast of {f} to {to:?} (outside the type: undefined)"
                ))),
            }
        };
        let as_f = |v: &V| -> f64 {
            match v {
                V::I(i) => *i as f64,
                V::F(f) => *f,
            }
        };
        match to {
            I64 => out.extend_from_slice(&(as_int(&v)? as i64).to_le_bytes()),
            I32 => out.extend_from_slice(&(as_int(&v)? as i32).to_le_bytes()),
            I16 => out.extend_from_slice(&(as_int(&v)? as i16).to_le_bytes()),
            I8 => out.push(as_int(&v)? as i8 as u8),
            U64 => out.extend_from_slice(&(as_int(&v)? as u64).to_le_bytes()),
            U32 => out.extend_from_slice(&(as_int(&v)? as u32).to_le_bytes()),
            U16 => out.extend_from_slice(&(as_int(&v)? as u16).to_le_bytes()),
            U8 => out.push(as_int(&v)? as u8),
            Bool => out.push(match v {
                V::I(i) => (i != 0) as u8,
                V::F(f) => (f != 0.0) as u8,
            }),
            F16 => out.extend_from_slice(&half::f16::from_f64(as_f(&v)).to_le_bytes()),
            BF16 => out.extend_from_slice(&half::bf16::from_f64(as_f(&v)).to_le_bytes()),
            F32 => {
                let f = match v {
                    V::I(i) => i as f32,
                    V::F(f) => f as f32,
                };
                out.extend_from_slice(&f.to_le_bytes())
            }
            _ => out.extend_from_slice(&as_f(&v).to_le_bytes()),
        }
    }
    Ok(Tensor {
        dtype: to,
        shape: t.shape.clone(),
        data: TensorData::Raw(Bytes::from(out)),
    })
}

/// The values an ONNX `Cast` of floats to `i64` or `i32` takes in each runtime where some element
/// is below the target type (`-inf`, as `Log(0)` gives in T5's relative-position buckets): the
/// specification leaves it undefined, and the runtimes differ. Reading 0 is ONNX Runtime's (x86-64:
/// the type's minimum, the "integer indefinite" of `cvttss2si`; tract's and numpy's too), reading 1
/// OpenVINO's CPU plugin's (it computes `i64` in `i32`: `-2^31`). Measured with onnxruntime 1.32.0
/// and openvino 2026.4.1 on f32 and f64 inputs (`tools/gen_fold_split.py`,
/// `tests/data/fold_split/`). Every other element converts as [`cast`] converts it; a NaN, an
/// infinity or a value above the type (where the readings are not the same two) gives an error,
/// as from [`cast`]. `Ok(None)`: no element is below the type ([`cast`] decides alone).
pub fn cast_readings(t: &Tensor, to: DType, limit: u64) -> Result<Option<Vec<Tensor>>, EvalError> {
    use DType::*;
    if !matches!(t.dtype, F16 | BF16 | F32 | F64) || !matches!(to, I64 | I32) {
        return Ok(None);
    }
    let (lo, ov_low) = match to {
        I64 => (i64::MIN as f64, i32::MIN as i64),
        _ => (i32::MIN as f64, i32::MIN as i64),
    };
    let raw = t
        .raw()
        .ok_or_else(|| EvalError::Unsupported("cast of strings".into()))?;
    let w = t.dtype.bits() / 8;
    let n = count(&t.shape)? as usize;
    if raw.len() < n.saturating_mul(w) {
        return Err(EvalError::Invalid("constant data too short".into()));
    }
    let values: Vec<f64> = raw
        .chunks_exact(w)
        .take(n)
        .map(|b| match t.dtype {
            F16 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
            BF16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f64(),
            F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
            _ => f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
        })
        .collect();
    if !values
        .iter()
        .any(|v| *v == f64::NEG_INFINITY || v.trunc() < lo)
    {
        return Ok(None);
    }
    let below = |v: f64| v == f64::NEG_INFINITY || (v.is_finite() && v.trunc() < lo);
    // The other elements: `cast` of the tensor with the ones below the type replaced by 0.
    let mut clean = t.clone();
    let zeroed: Vec<f64> = values
        .iter()
        .map(|&v| if below(v) { 0.0 } else { v })
        .collect();
    clean.data = TensorData::Raw(Bytes::from(encode_floats(t.dtype, &zeroed)));
    let base = cast(&clean, to, limit)?
        .to_i64_vec()
        .ok_or_else(|| EvalError::Invalid("cast result not integer".into()))?;
    let reading = |low: i64| -> Tensor {
        let v: Vec<i64> = base
            .iter()
            .zip(&values)
            .map(|(&b, &v)| if below(v) { low } else { b })
            .collect();
        let bytes: Vec<u8> = match to {
            I64 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            _ => v.iter().flat_map(|&x| (x as i32).to_le_bytes()).collect(),
        };
        Tensor {
            dtype: to,
            shape: t.shape.clone(),
            data: TensorData::Raw(Bytes::from(bytes)),
        }
    };
    let ort_low = if to == I64 { i64::MIN } else { i32::MIN as i64 };
    Ok(Some(vec![reading(ort_low), reading(ov_low)]))
}

fn encode_floats(dtype: DType, v: &[f64]) -> Vec<u8> {
    match dtype {
        DType::F16 => v
            .iter()
            .flat_map(|&x| half::f16::from_f64(x).to_le_bytes())
            .collect(),
        DType::BF16 => v
            .iter()
            .flat_map(|&x| half::bf16::from_f64(x).to_le_bytes())
            .collect(),
        DType::F32 => v.iter().flat_map(|&x| (x as f32).to_le_bytes()).collect(),
        _ => v.iter().flat_map(|&x| x.to_le_bytes()).collect(),
    }
}

/// [`cast_readings`] of an ONNX `Cast` node's constant input.
pub(crate) fn cast_node_readings(i: &Inputs) -> Result<Option<Vec<Tensor>>, NoEval> {
    if i.dialect != Onnx || i.node.op_type != "Cast" {
        return Ok(None);
    }
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let to = CastTo::of(i.node, i.dialect)?;
    Ok(cast_readings(data, to, i.limit)?)
}

// The ops of this family that `fold` evaluates on constants: their rows of
// `ops::registry::OPS`, and the functions reading a node's inputs and attributes.

/// Rows of [`crate::ops::registry::OPS`].
pub(crate) const OPS: &[OpEntry] = &[
    row("Cast", Onnx, cast_node),
    row("Convert", OpenVino, cast_node),
];

fn cast_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let to = CastTo::of(i.node, i.dialect)?;
    Ok(cast(data, to, i.limit)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cast_float_to_int_truncates() {
        let f = Tensor {
            dtype: DType::F32,
            shape: vec![3],
            data: TensorData::Raw(Bytes::from(
                [1.7f32, -1.7, 3.0]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect::<Vec<u8>>(),
            )),
        };
        assert_eq!(
            cast(&f, DType::I64, 1 << 20)
                .expect("cast")
                .to_i64_vec()
                .expect("ints"),
            vec![1, -1, 3]
        );
    }
}
