//! ONNX `ScatterND` (no reduction) of constants: a copy of `data` with the slices that
//! `indices` name replaced by `updates`. Pure data movement, so the result is the runtime's
//! whatever the element type; only the order of writes to one slice could matter, and indices
//! naming one slice twice are not folded (the spec leaves that order undefined and ONNX
//! Runtime may write in parallel). T5's decoder exports (optimum) build their causal mask with
//! it: once the sizes are fixed it is constant.

use bytes::Bytes;

use crate::ir::Format::Onnx;
use crate::ir::{Attr, DType, Tensor, TensorData};
use crate::ops::registry::{row, Inputs, NoEval, OpEntry};

use super::{check_size, count, EvalError};

/// `data` with `data[indices[i]] = updates[i]` for every index tuple `i` (the last axis of
/// `indices` addresses the first axes of `data`; negative indices count from the end).
pub fn scatter_nd(
    data: &Tensor,
    indices: &Tensor,
    updates: &Tensor,
    limit: u64,
) -> Result<Tensor, EvalError> {
    if updates.dtype != data.dtype {
        return Err(EvalError::Invalid(
            "ScatterND updates of another type".into(),
        ));
    }
    if data.dtype == DType::String || data.dtype.bits() % 8 != 0 {
        return Err(EvalError::Unsupported(format!(
            "ScatterND of {:?}",
            data.dtype
        )));
    }
    let w = data.dtype.bits() / 8;
    let n = count(&data.shape)?;
    check_size(data.dtype, n, limit)?;
    let (q, r) = (indices.shape.len(), data.shape.len());
    let k = *indices
        .shape
        .last()
        .ok_or_else(|| EvalError::Invalid("ScatterND indices of rank 0".into()))?
        as usize;
    if k > r {
        return Err(EvalError::Invalid(format!(
            "ScatterND index tuples of {k} for data of rank {r}"
        )));
    }
    let mut want = indices.shape[..q - 1].to_vec();
    want.extend_from_slice(&data.shape[k..]);
    if updates.shape != want {
        return Err(EvalError::Invalid(format!(
            "ScatterND updates of shape {:?}, expected {want:?}",
            updates.shape
        )));
    }
    let idx = indices
        .to_i64_vec()
        .ok_or_else(|| EvalError::Invalid("ScatterND indices unreadable".into()))?;
    let tuples = count(&indices.shape[..q - 1])? as usize;
    if idx.len() != tuples * k {
        return Err(EvalError::Invalid(
            "ScatterND indices shorter than their shape".into(),
        ));
    }
    let slice = count(&data.shape[k..])? as usize;
    let bytes = |t: &Tensor, elements: usize| -> Result<Bytes, EvalError> {
        let raw = t
            .raw()
            .ok_or_else(|| EvalError::Invalid("constant without raw data".into()))?;
        elements
            .checked_mul(w)
            .filter(|&b| b <= raw.len())
            .map(|b| raw.slice(..b))
            .ok_or_else(|| EvalError::Invalid("constant data shorter than its shape".into()))
    };
    let mut out = bytes(data, n as usize)?.to_vec();
    let upd = bytes(updates, tuples * slice)?;
    let mut written = vec![false; (n as usize).checked_div(slice).unwrap_or(0)];
    for t in 0..tuples {
        // The flat offset of the slice, in slices.
        let mut at = 0u64;
        for (a, &i) in idx[t * k..(t + 1) * k].iter().enumerate() {
            let dim = data.shape[a];
            let j = if i < 0 { i + dim as i64 } else { i };
            if j < 0 || j as u64 >= dim {
                return Err(EvalError::Invalid(format!(
                    "ScatterND index {i} out of range for a dim of {dim}"
                )));
            }
            at = at * dim + j as u64;
        }
        if slice == 0 {
            continue;
        }
        let at = at as usize;
        if std::mem::replace(&mut written[at], true) {
            return Err(EvalError::Unsupported(
                "ScatterND writing one slice twice (the order is undefined)".into(),
            ));
        }
        let (dst, src) = (at * slice * w, t * slice * w);
        out[dst..dst + slice * w].copy_from_slice(&upd[src..src + slice * w]);
    }
    Ok(Tensor {
        dtype: data.dtype,
        shape: data.shape.clone(),
        data: TensorData::Raw(Bytes::from(out)),
    })
}

/// Rows of [`crate::ops::registry::OPS`].
pub(crate) const OPS: &[OpEntry] = &[row("ScatterND", Onnx, scatter_nd_node)];

fn scatter_nd_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let (Some(data), Some(indices), Some(updates)) = (i.input(0), i.input(1), i.input(2)) else {
        return Err(NoEval::Silent);
    };
    match i.node.attr("reduction") {
        None => {}
        Some(Attr::String(s)) if s == "none" => {}
        Some(_) => return Err(NoEval::Skip("ScatterND with a reduction".into())),
    }
    Ok(scatter_nd(data, indices, updates, i.limit)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ONNX operator's example 1: data [1..8], indices [[4], [3], [1], [7]], updates [9,
    /// 10, 11, 12] -> [1, 11, 3, 10, 9, 6, 7, 12].
    #[test]
    fn spec_example_1() {
        let data = Tensor::from_i64(vec![8], &[1, 2, 3, 4, 5, 6, 7, 8]);
        let idx = Tensor::from_i64(vec![4, 1], &[4, 3, 1, 7]);
        let upd = Tensor::from_i64(vec![4], &[9, 10, 11, 12]);
        let r = scatter_nd(&data, &idx, &upd, 1 << 20).expect("scatter");
        assert_eq!(r.to_i64_vec().expect("ints"), [1, 11, 3, 10, 9, 6, 7, 12]);
    }

    /// One slice written twice is refused; an index out of range is an error.
    #[test]
    fn duplicates_and_out_of_range() {
        let data = Tensor::from_i64(vec![4], &[0; 4]);
        let upd = Tensor::from_i64(vec![2], &[1, 2]);
        let twice = Tensor::from_i64(vec![2, 1], &[1, 1]);
        assert!(scatter_nd(&data, &twice, &upd, 1 << 20).is_err());
        let far = Tensor::from_i64(vec![2, 1], &[0, 4]);
        assert!(scatter_nd(&data, &far, &upd, 1 << 20).is_err());
        let neg = Tensor::from_i64(vec![2, 1], &[-1, 0]);
        let r = scatter_nd(&data, &neg, &upd, 1 << 20).expect("negative");
        assert_eq!(r.to_i64_vec().expect("ints"), [2, 0, 0, 1]);
    }
}
