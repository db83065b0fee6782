//! Values of the shape-manipulating ops: `Concat`, `Reshape` (and its target with `0` and
//! `-1`), `Squeeze`, `Unsqueeze`, `Identity`; their rows of the fold table (`OPS`, near the
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
];

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
