//! Values of the shape-manipulating ops: `Concat`, `Reshape` (and its target with `0` and
//! `-1`), `Squeeze`, `Unsqueeze`, `Identity`, `Transpose`; their rows of the fold table (`OPS`, near the
//! end). Their shape rules are in `shape/manip.rs` and `shape/reshape.rs` (Identity's in
//! `shape/elementwise.rs`).

use bytes::Bytes;

use crate::ir::Format::{Onnx, OpenVino};
use crate::ir::{DType, Tensor, TensorData};
use crate::ops::attrs::{self, ReshapeAttrs, SqueezeAxes};
use crate::ops::registry::{row, Inputs, NoEval, OpEntry};

use super::{check_size, count, EvalError};

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

/// `t` with its axes permuted: output axis `k` is input axis `perm[k]` (ONNX and OpenVINO
/// `Transpose`); an empty `perm` reverses the axes. Element bytes are moved, not computed on.
pub fn transpose(t: &Tensor, perm: &[i64], limit: u64) -> Result<Tensor, EvalError> {
    let r = t.shape.len();
    let perm: Vec<usize> = if perm.is_empty() {
        (0..r).rev().collect()
    } else {
        perm.iter()
            .map(|&p| {
                let p = if p < 0 { p + r as i64 } else { p };
                usize::try_from(p).ok().filter(|&p| p < r)
            })
            .collect::<Option<_>>()
            .ok_or_else(|| EvalError::Invalid(format!("perm {perm:?} for rank {r}")))?
    };
    let mut seen = vec![false; r];
    if perm.len() != r || perm.iter().any(|&p| std::mem::replace(&mut seen[p], true)) {
        return Err(EvalError::Invalid(format!("perm {perm:?} for rank {r}")));
    }
    let n = count(&t.shape)?;
    check_size(t.dtype, n, limit)?;
    let raw = t
        .raw()
        .ok_or_else(|| EvalError::Unsupported("Transpose of strings".into()))?;
    if t.dtype.bits() % 8 != 0 || t.dtype.bits() == 0 {
        return Err(EvalError::Unsupported(format!(
            "Transpose of {:?}",
            t.dtype
        )));
    }
    let w = t.dtype.bits() / 8;
    if (raw.len() as u64) < n * w as u64 {
        return Err(EvalError::Invalid(
            "constant data shorter than its shape".into(),
        ));
    }
    let shape: Vec<u64> = perm.iter().map(|&p| t.shape[p]).collect();
    // Input strides, in elements, read in output axis order.
    let mut in_strides = vec![0u64; r];
    let mut acc = 1u64;
    for k in (0..r).rev() {
        in_strides[k] = acc;
        acc *= t.shape[k];
    }
    let strides: Vec<u64> = perm.iter().map(|&p| in_strides[p]).collect();
    let mut buf = Vec::with_capacity(n as usize * w);
    let mut idx = vec![0u64; r];
    for _ in 0..n {
        let o: u64 = idx.iter().zip(&strides).map(|(i, s)| i * s).sum();
        let o = o as usize * w;
        buf.extend_from_slice(&raw[o..o + w]);
        for ax in (0..r).rev() {
            idx[ax] += 1;
            if idx[ax] < shape[ax] {
                break;
            }
            idx[ax] = 0;
        }
    }
    Ok(Tensor {
        dtype: t.dtype,
        shape,
        data: TensorData::Raw(Bytes::from(buf)),
    })
}

// The ops of this family that `fold` evaluates on constants: their rows of
// `ops::registry::OPS`, and the functions reading a node's inputs and attributes.

/// Rows of [`crate::ops::registry::OPS`].
pub(crate) const OPS: &[OpEntry] = &[
    row("Identity", Onnx, identity_node),
    row("Concat", Onnx, concat_node),
    row("Concat", OpenVino, concat_node),
    row("Squeeze", Onnx, squeeze_node),
    row("Squeeze", OpenVino, squeeze_node),
    row("Unsqueeze", Onnx, unsqueeze_node),
    row("Unsqueeze", OpenVino, unsqueeze_node),
    row("Reshape", Onnx, reshape_node),
    row("Reshape", OpenVino, reshape_node),
    row("Transpose", Onnx, transpose_node),
    row("Transpose", OpenVino, transpose_node),
];

/// ONNX: `perm` attribute (default: reversed axes); OpenVINO: `order` input 1 (empty: reversed).
fn transpose_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let perm = match i.dialect {
        crate::ir::Format::Onnx => match i.node.attr_ints("perm") {
            Some(Ok(p)) => p,
            Some(Err(e)) => return Err(NoEval::Skip(e)),
            None => Vec::new(),
        },
        crate::ir::Format::OpenVino => attrs::input_ints(Some(i.input(1).ok_or(NoEval::Silent)?))?,
    };
    Ok(transpose(data, &perm, i.limit)?)
}

fn identity_node(i: &Inputs) -> Result<Tensor, NoEval> {
    i.input(0).cloned().ok_or(NoEval::Silent)
}

fn concat_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let parts: Vec<&Tensor> = i.consts.iter().flatten().copied().collect();
    Ok(concat(&parts, attrs::concat_axis(i.node), i.limit)?)
}

fn squeeze_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let axes = SqueezeAxes::of(i.node, i.input(1))?;
    Ok(reshape(data, squeeze_shape(&data.shape, &axes)?)?)
}

fn unsqueeze_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let axes = SqueezeAxes::of(i.node, i.input(1))?;
    Ok(reshape(data, unsqueeze_shape(&data.shape, &axes)?)?)
}

fn reshape_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let target = attrs::input_ints(i.input(1))?;
    let zero_copies = ReshapeAttrs::of(i.node, i.dialect).zero_copies;
    let shape = reshape_target(&data.shape, &target, zero_copies)?;
    Ok(reshape(data, shape)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval::arange;

    #[test]
    fn concat_on_last_axis() {
        // numpy: np.concatenate([np.arange(4).reshape(2,2), np.arange(2).reshape(2,1)], axis=1)
        let t = concat(&[&arange(vec![2, 2]), &arange(vec![2, 1])], -1, 1 << 20).expect("concat");
        assert_eq!(t.shape, vec![2, 3]);
        assert_eq!(t.to_i64_vec().expect("ints"), vec![0, 1, 0, 2, 3, 1]);
    }

    /// numpy: np.arange(6).reshape(1, 2, 3).transpose(2, 0, 1).ravel() = [0, 3, 1, 4, 2, 5];
    /// no perm reverses the axes (np.transpose).
    #[test]
    fn transpose_moves_elements() {
        let t = transpose(&arange(vec![1, 2, 3]), &[2, 0, 1], 1 << 20).expect("transpose");
        assert_eq!(t.shape, vec![3, 1, 2]);
        assert_eq!(t.to_i64_vec().expect("ints"), vec![0, 3, 1, 4, 2, 5]);
        let t = transpose(&arange(vec![2, 3]), &[], 1 << 20).expect("transpose");
        assert_eq!(t.to_i64_vec().expect("ints"), vec![0, 3, 1, 4, 2, 5]);
        assert!(transpose(&arange(vec![2, 3]), &[0, 0], 1 << 20).is_err());
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
}
