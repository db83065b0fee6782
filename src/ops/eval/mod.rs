//! Evaluation of slices and of shape arithmetic on constant tensors: strided copies over bytes
//! that work for every element type (byte-aligned, packed sub-byte, strings).

use bytes::Bytes;

use crate::ir::{DType, Tensor, TensorData};
use crate::semantics::{self, Clamp, ResolvedAxis, SlicePlan};

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

fn count(shape: &[u64]) -> Result<u64, EvalError> {
    shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| EvalError::Invalid("element count overflows".into()))
}

fn check_size(dtype: DType, elements: u64, limit: u64) -> Result<(), EvalError> {
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
fn run_bytes(raw: &[u8], first: u64, len: u64, w: usize) -> Option<&[u8]> {
    let first = usize::try_from(first).ok()?;
    let end = first.checked_add(usize::try_from(len).ok()?)?;
    raw.get(first.checked_mul(w)?..end.checked_mul(w)?)
}

/// Picks elements `offsets` (flat indices into `t`) into a new tensor of `shape`.
pub fn take(t: &Tensor, offsets: &[u64], shape: Vec<u64>) -> Result<Tensor, EvalError> {
    let data = match &t.data {
        TensorData::Strings(s) => TensorData::Strings(
            offsets
                .iter()
                .map(|&o| {
                    s.get(o as usize)
                        .cloned()
                        .ok_or_else(|| EvalError::Invalid("index out of range".into()))
                })
                .collect::<Result<_, _>>()?,
        ),
        TensorData::Raw(raw) => {
            let bits = t.dtype.bits();
            if bits % 8 == 0 {
                let w = bits / 8;
                let mut out = Vec::with_capacity(offsets.len() * w);
                // Runs of consecutive offsets (a slice's innermost axis at step 1) are copied
                // whole: one copy a run, not one an element.
                let mut rest = offsets;
                while let Some((&first, _)) = rest.split_first() {
                    let run = 1 + rest
                        .windows(2)
                        .take_while(|p| p[0].checked_add(1) == Some(p[1]))
                        .count();
                    let bytes = run_bytes(raw, first, run as u64, w)
                        .ok_or_else(|| EvalError::Invalid("index out of range".into()))?;
                    out.extend_from_slice(bytes);
                    rest = &rest[run..];
                }
                TensorData::Raw(Bytes::from(out))
            } else {
                let order = bit_order(t.dtype);
                let per = 8 / bits;
                let mask = ((1u16 << bits) - 1) as u8;
                let mut out = vec![0u8; offsets.len().div_ceil(per)];
                for (i, &o) in offsets.iter().enumerate() {
                    let o = o as usize;
                    let byte = *raw
                        .get(o / per)
                        .ok_or_else(|| EvalError::Invalid("index out of range".into()))?;
                    let shift_in = match order {
                        BitOrder::LsbFirst => (o % per) * bits,
                        BitOrder::MsbFirst => 8 - bits - (o % per) * bits,
                    };
                    let v = (byte >> shift_in) & mask;
                    let shift_out = match order {
                        BitOrder::LsbFirst => (i % per) * bits,
                        BitOrder::MsbFirst => 8 - bits - (i % per) * bits,
                    };
                    out[i / per] |= v << shift_out;
                }
                TensorData::Raw(Bytes::from(out))
            }
        }
    };
    Ok(Tensor {
        dtype: t.dtype,
        shape,
        data,
    })
}

/// Evaluates a slice plan on a constant tensor; refuses results over `limit` bytes.
pub fn slice(t: &Tensor, plan: &SlicePlan, clamp: Clamp, limit: u64) -> Result<Tensor, EvalError> {
    let resolved = semantics::resolve_concrete(plan, &t.shape, clamp)?;
    let shape: Vec<u64> = resolved
        .iter()
        .filter_map(ResolvedAxis::output_dim)
        .collect();
    let n = count(&shape)?;
    check_size(t.dtype, n, limit)?;
    let max_elements = if t.dtype == DType::String {
        limit / 8 + 1
    } else {
        (limit as u128 * 8 / t.dtype.bits().max(1) as u128 + 1).min(u64::MAX as u128) as u64
    };
    match &t.data {
        TensorData::Raw(raw) if t.dtype.bits() % 8 == 0 => {
            // Whole bytes: copied a run of consecutive elements at a time, straight from the
            // selection's runs (no offset an element).
            let w = t.dtype.bits() / 8;
            let runs = semantics::Runs::new(&resolved, &t.shape, max_elements)?;
            let mut out: Vec<u8> = Vec::with_capacity((runs.total() as usize).saturating_mul(w));
            let mut in_range = true;
            runs.for_each(|first, len| match run_bytes(raw, first, len, w) {
                Some(b) if in_range => out.extend_from_slice(b),
                _ => in_range = false,
            });
            if !in_range {
                return Err(EvalError::Invalid("index out of range".into()));
            }
            Ok(Tensor {
                dtype: t.dtype,
                shape,
                data: TensorData::Raw(Bytes::from(out)),
            })
        }
        _ => {
            let offsets = semantics::gather_resolved(&resolved, &t.shape, max_elements)?;
            take(t, &offsets, shape)
        }
    }
}

/// `Gather` along `axis` with (possibly negative) `indices` of shape `ishape`.
pub fn gather(
    t: &Tensor,
    indices: &[i64],
    ishape: &[u64],
    axis: i64,
    limit: u64,
) -> Result<Tensor, EvalError> {
    let rank = t.shape.len() as i64;
    let axis = if axis < 0 { axis + rank } else { axis };
    if axis < 0 || axis >= rank {
        return Err(EvalError::Invalid(format!(
            "axis {axis} out of range for rank {rank}"
        )));
    }
    let axis = axis as usize;
    let dim = t.shape[axis];
    let mut shape = t.shape[..axis].to_vec();
    shape.extend_from_slice(ishape);
    shape.extend_from_slice(&t.shape[axis + 1..]);
    let n = count(&shape)?;
    check_size(t.dtype, n, limit)?;
    let outer = count(&t.shape[..axis])?;
    let inner = count(&t.shape[axis + 1..])?;
    let mut idx = Vec::with_capacity(indices.len());
    for &i in indices {
        let j = if i < 0 {
            i.checked_add(dim as i64)
        } else {
            Some(i)
        };
        match j {
            Some(j) if j >= 0 && (j as u64) < dim => idx.push(j as u64),
            _ => {
                return Err(EvalError::Invalid(format!(
                    "gather index {i} out of range for dim {dim}"
                )))
            }
        }
    }
    let mut offsets = Vec::with_capacity(n as usize);
    for o in 0..outer {
        for &j in &idx {
            for k in 0..inner {
                offsets.push((o * dim + j) * inner + k);
            }
        }
    }
    take(t, &offsets, shape)
}

/// `Concat` along `axis`.
pub fn concat(parts: &[&Tensor], axis: i64, limit: u64) -> Result<Tensor, EvalError> {
    let first = parts
        .first()
        .ok_or_else(|| EvalError::Invalid("concat of nothing".into()))?;
    let rank = first.shape.len() as i64;
    let axis = if axis < 0 { axis + rank } else { axis };
    if axis < 0 || axis >= rank {
        return Err(EvalError::Invalid(format!(
            "axis {axis} out of range for rank {rank}"
        )));
    }
    let axis = axis as usize;
    let mut total = 0u64;
    for p in parts {
        if p.dtype != first.dtype || p.shape.len() != first.shape.len() {
            return Err(EvalError::Invalid(
                "concat inputs differ in type or rank".into(),
            ));
        }
        for (i, (&a, &b)) in p.shape.iter().zip(&first.shape).enumerate() {
            if i != axis && a != b {
                return Err(EvalError::Invalid("concat inputs differ in shape".into()));
            }
        }
        total = total
            .checked_add(p.shape[axis])
            .ok_or_else(|| EvalError::Invalid("overflow".into()))?;
    }
    let mut shape = first.shape.clone();
    shape[axis] = total;
    let n = count(&shape)?;
    check_size(first.dtype, n, limit)?;
    if first.dtype == DType::String {
        let outer = count(&first.shape[..axis])?;
        let mut strings = Vec::with_capacity(n as usize);
        for o in 0..outer {
            for p in parts {
                let TensorData::Strings(s) = &p.data else {
                    return Err(EvalError::Invalid("string tensor without strings".into()));
                };
                let chunk = count(&p.shape[axis..])? as usize;
                let piece = s
                    .get(o as usize * chunk..(o as usize + 1) * chunk)
                    .ok_or_else(|| EvalError::Invalid("constant data too short".into()))?;
                strings.extend(piece.iter().cloned());
            }
        }
        return Ok(Tensor {
            dtype: first.dtype,
            shape,
            data: TensorData::Strings(strings),
        });
    }
    if first.dtype.bits() % 8 != 0 {
        return Err(EvalError::Unsupported(format!(
            "concat of packed {:?} constants",
            first.dtype
        )));
    }
    let w = first.dtype.bits() / 8;
    let outer = count(&first.shape[..axis])?;
    let mut out = Vec::with_capacity((n as usize).saturating_mul(w));
    for o in 0..outer {
        for p in parts {
            let raw = p
                .raw()
                .ok_or_else(|| EvalError::Invalid("no data".into()))?;
            let chunk = (count(&p.shape[axis..])? as usize) * w;
            let start = (o as usize) * chunk;
            let piece = raw
                .get(start..start + chunk)
                .ok_or_else(|| EvalError::Invalid("constant data too short".into()))?;
            out.extend_from_slice(piece);
        }
    }
    Ok(Tensor {
        dtype: first.dtype,
        shape,
        data: TensorData::Raw(Bytes::from(out)),
    })
}

/// The same data with another shape (element count must match).
pub fn reshape(t: &Tensor, shape: Vec<u64>) -> Result<Tensor, EvalError> {
    if count(&shape)? != count(&t.shape)? {
        return Err(EvalError::Invalid(format!(
            "cannot reshape {:?} to {shape:?}",
            t.shape
        )));
    }
    Ok(Tensor {
        dtype: t.dtype,
        shape,
        data: t.data.clone(),
    })
}

/// Resolves a `Reshape` target (`0` copies the input dim unless `allowzero`, one `-1` is
/// inferred).
pub fn reshape_target(
    input: &[u64],
    target: &[i64],
    zero_copies: bool,
) -> Result<Vec<u64>, EvalError> {
    let total = count(input)?;
    let mut out = Vec::with_capacity(target.len());
    let mut infer_at = None;
    for (i, &d) in target.iter().enumerate() {
        match d {
            0 if zero_copies => out.push(*input.get(i).ok_or_else(|| {
                EvalError::Invalid("0 in reshape target past the input rank".into())
            })?),
            -1 if infer_at.is_none() => {
                infer_at = Some(i);
                out.push(1);
            }
            d if d >= 0 => out.push(d as u64),
            _ => return Err(EvalError::Invalid(format!("bad reshape target {target:?}"))),
        }
    }
    if let Some(i) = infer_at {
        let rest = count(&out)?;
        if rest == 0 || total % rest != 0 {
            return Err(EvalError::Invalid(format!(
                "cannot infer -1 in {target:?} for {input:?}"
            )));
        }
        out[i] = total / rest;
    }
    Ok(out)
}

/// Converts numeric values between element types (shape arithmetic and small constants):
/// integers, bool, f16, bf16, f32, f64. Float to integer truncates toward zero, as ONNX `Cast`
/// and OpenVINO `Convert` do for in-range values.
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
        let as_int = |v: &V| -> i128 {
            match v {
                V::I(i) => *i,
                V::F(f) if f.is_nan() => 0,
                V::F(f) => f.trunc().clamp(i128::MIN as f64, i128::MAX as f64) as i128,
            }
        };
        let as_f = |v: &V| -> f64 {
            match v {
                V::I(i) => *i as f64,
                V::F(f) => *f,
            }
        };
        match to {
            I64 => out.extend_from_slice(&(as_int(&v) as i64).to_le_bytes()),
            I32 => out.extend_from_slice(&(as_int(&v) as i32).to_le_bytes()),
            I16 => out.extend_from_slice(&(as_int(&v) as i16).to_le_bytes()),
            I8 => out.push(as_int(&v) as i8 as u8),
            U64 => out.extend_from_slice(&(as_int(&v) as u64).to_le_bytes()),
            U32 => out.extend_from_slice(&(as_int(&v) as u32).to_le_bytes()),
            U16 => out.extend_from_slice(&(as_int(&v) as u16).to_le_bytes()),
            U8 => out.push(as_int(&v) as u8),
            Bool => out.push(match v {
                V::I(i) => (i != 0) as u8,
                V::F(f) => (f != 0.0) as u8,
            }),
            F16 => out.extend_from_slice(&half::f16::from_f64(as_f(&v)).to_le_bytes()),
            BF16 => out.extend_from_slice(&half::bf16::from_f64(as_f(&v)).to_le_bytes()),
            F32 => out.extend_from_slice(&(as_f(&v) as f32).to_le_bytes()),
            _ => out.extend_from_slice(&as_f(&v).to_le_bytes()),
        }
    }
    Ok(Tensor {
        dtype: to,
        shape: t.shape.clone(),
        data: TensorData::Raw(Bytes::from(out)),
    })
}

/// Removes size-1 `axes` (all size-1 axes when empty).
pub fn squeeze_shape(shape: &[u64], axes: &[i64]) -> Result<Vec<u64>, EvalError> {
    let rank = shape.len() as i64;
    let mut drop = vec![false; shape.len()];
    if axes.is_empty() {
        for (i, &d) in shape.iter().enumerate() {
            drop[i] = d == 1;
        }
    }
    for &a in axes {
        let a = if a < 0 { a + rank } else { a };
        if a < 0 || a >= rank || shape[a as usize] != 1 {
            return Err(EvalError::Invalid(format!(
                "cannot squeeze axis {a} of {shape:?}"
            )));
        }
        drop[a as usize] = true;
    }
    Ok(shape
        .iter()
        .zip(drop)
        .filter(|(_, d)| !d)
        .map(|(&s, _)| s)
        .collect())
}

/// Inserts size-1 `axes` (positions in the output).
pub fn unsqueeze_shape(shape: &[u64], axes: &[i64]) -> Result<Vec<u64>, EvalError> {
    let out_rank = shape.len() + axes.len();
    let mut new = vec![false; out_rank];
    for &a in axes {
        let a = if a < 0 { a + out_rank as i64 } else { a };
        if a < 0 || a as usize >= out_rank || new[a as usize] {
            return Err(EvalError::Invalid(format!(
                "bad unsqueeze axes {axes:?} for {shape:?}"
            )));
        }
        new[a as usize] = true;
    }
    let mut it = shape.iter();
    Ok(new
        .into_iter()
        .map(|n| {
            if n {
                1
            } else {
                it.next().copied().unwrap_or(1)
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arange(shape: Vec<u64>) -> Tensor {
        let n: u64 = shape.iter().product();
        Tensor::from_i64(shape, &(0..n as i64).collect::<Vec<_>>())
    }

    #[test]
    fn gather_along_middle_axis() {
        // numpy: np.take(np.arange(24).reshape(2,3,4), [2,0], axis=1)
        let t = gather(&arange(vec![2, 3, 4]), &[2, 0], &[2], 1, 1 << 20).expect("gather");
        assert_eq!(t.shape, vec![2, 2, 4]);
        assert_eq!(
            t.to_i64_vec().expect("ints"),
            vec![8, 9, 10, 11, 0, 1, 2, 3, 20, 21, 22, 23, 12, 13, 14, 15]
        );
    }

    #[test]
    fn concat_on_last_axis() {
        // numpy: np.concatenate([np.arange(4).reshape(2,2), np.arange(2).reshape(2,1)], axis=1)
        let t = concat(&[&arange(vec![2, 2]), &arange(vec![2, 1])], -1, 1 << 20).expect("concat");
        assert_eq!(t.shape, vec![2, 3]);
        assert_eq!(t.to_i64_vec().expect("ints"), vec![0, 1, 0, 2, 3, 1]);
    }

    #[test]
    fn packed_u1_is_msb_first() {
        // OpenVINO u1: bits 1,0,1,1,0,0,0,0 | 1 -> taking elements [0, 2, 3, 8] gives 1,1,1,1.
        let t = Tensor {
            dtype: DType::U1,
            shape: vec![9],
            data: TensorData::Raw(Bytes::from(vec![0b1011_0000, 0b1000_0000])),
        };
        let r = take(&t, &[0, 2, 3, 8, 1], vec![5]).expect("take");
        assert_eq!(r.raw().expect("raw").as_ref(), &[0b1111_0000]);
    }

    #[test]
    fn take_copies_runs_of_offsets_as_their_elements() {
        // Element i of the result is element offsets[i] of the input (ONNX Gather on a flat
        // tensor): runs, repeats, descending and lone offsets, for 1-, 2-, 4- and 8-byte types.
        for dtype in [DType::U8, DType::I16, DType::F32, DType::I64] {
            let w = dtype.bits() / 8;
            let raw: Vec<u8> = (0..40 * w).map(|i| (i * 7 + 3) as u8).collect();
            let t = Tensor {
                dtype,
                shape: vec![40],
                data: TensorData::Raw(Bytes::from(raw.clone())),
            };
            let offsets = [3u64, 4, 5, 6, 9, 9, 10, 2, 1, 0, 39, 20, 21, 0, 1, 2, 3];
            let r = take(&t, &offsets, vec![offsets.len() as u64]).expect("take");
            let want: Vec<u8> = offsets
                .iter()
                .flat_map(|&o| raw[o as usize * w..(o as usize + 1) * w].to_vec())
                .collect();
            assert_eq!(r.raw().expect("raw").as_ref(), &want[..], "{dtype:?}");
            // An offset past the end, alone or ending a run, is refused.
            for bad in [&[40u64][..], &[37, 38, 39, 40], &[u64::MAX - 1, u64::MAX]] {
                assert!(take(&t, bad, vec![bad.len() as u64]).is_err(), "{bad:?}");
            }
        }
    }

    #[test]
    fn reshape_target_rules() {
        assert_eq!(
            reshape_target(&[2, 3, 4], &[0, -1], true).expect("ok"),
            vec![2, 12]
        );
        assert_eq!(
            reshape_target(&[2, 3, 4], &[4, 0, 2], false).expect("ok"),
            vec![4, 0, 2]
        );
        assert!(reshape_target(&[2, 3, 4], &[5, -1], true).is_err());
    }

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

#[cfg(test)]
mod element_type_tests {
    use super::*;
    use crate::semantics::{decode, onnx_slice};

    fn plan_1d(starts: i64, ends: i64, step: i64) -> SlicePlan {
        onnx_slice(
            &decode::constant(&[starts]),
            &decode::constant(&[ends]),
            None,
            Some(&decode::constant(&[step])),
            1,
            13,
        )
        .expect("valid")
    }

    #[test]
    fn int4_slices_keep_the_low_nibble_first_packing() {
        // ONNX int4 [1, 2, 3, 4, 5] packs as 0x21, 0x43, 0x05; x[::-2] = [5, 3, 1] -> 0x35, 0x01.
        let t = Tensor {
            dtype: DType::I4,
            shape: vec![5],
            data: TensorData::Raw(Bytes::from(vec![0x21, 0x43, 0x05])),
        };
        let r = slice(&t, &plan_1d(i64::MAX, i64::MIN, -2), Clamp::Ov, 1 << 20).expect("slice");
        assert_eq!(r.shape, vec![3]);
        assert_eq!(r.raw().expect("raw").as_ref(), &[0x35, 0x01]);
    }

    #[test]
    fn string_and_f16_slices() {
        let s = Tensor {
            dtype: DType::String,
            shape: vec![3],
            data: TensorData::Strings(vec![
                Bytes::from("a"),
                Bytes::from("bb"),
                Bytes::from("ccc"),
            ]),
        };
        let r = slice(&s, &plan_1d(1, 3, 1), Clamp::Ov, 1 << 20).expect("slice");
        assert_eq!(
            r.data,
            TensorData::Strings(vec![Bytes::from("bb"), Bytes::from("ccc")])
        );
        let h: Vec<u8> = [1.0f32, 2.0, 3.0]
            .iter()
            .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
            .collect();
        let t = Tensor {
            dtype: DType::F16,
            shape: vec![3],
            data: TensorData::Raw(Bytes::from(h)),
        };
        let r = slice(&t, &plan_1d(-1, i64::MIN, -1), Clamp::Ov, 1 << 20).expect("slice");
        let want: Vec<u8> = [3.0f32, 2.0, 1.0]
            .iter()
            .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
            .collect();
        assert_eq!(r.raw().expect("raw").as_ref(), want.as_slice());
    }

    #[test]
    fn the_size_limit_refuses_large_results() {
        let t = Tensor::from_i64(vec![100], &[7; 100]);
        assert!(matches!(
            slice(&t, &plan_1d(0, 100, 1), Clamp::Ov, 799),
            Err(EvalError::TooLarge { .. })
        ));
        assert!(slice(&t, &plan_1d(0, 100, 1), Clamp::Ov, 800).is_ok());
    }
}

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
fn broadcast_offsets(s: &[u64], out: &[u64]) -> Vec<u64> {
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
