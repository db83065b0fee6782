//! Values of the selecting ops: `take` (elements by flat index), `slice` (a `SlicePlan` on a
//! constant), `gather` (ONNX/OpenVINO `Gather`). Their shape rules are in `shape/slice.rs` and
//! `shape/gather.rs`. `Gather`'s rows of the fold table: `OPS`, near the end.

use std::sync::Arc;

use bytes::Bytes;

use crate::ir::Format::{Onnx, OpenVino};
use crate::ir::{DType, Lazy, Produce, Tensor, TensorData};
use crate::ops::attrs::{self, GatherAxis};
use crate::ops::registry::{row, Inputs, NoEval, OpEntry};
use crate::semantics::{self, Clamp, ResolvedAxis, SlicePlan};

use super::{bit_order, check_size, count, run_bytes, BitOrder, EvalError};

/// Picks elements `offsets` (flat indices into `t`) into a new tensor of `shape`.
pub fn take(t: &Tensor, offsets: &[u64], shape: Vec<u64>) -> Result<Tensor, EvalError> {
    let data = match &*t.data.eager() {
        TensorData::Lazy(_) => unreachable!("eager data is not lazy"),
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
    match &*t.data.eager() {
        TensorData::Raw(raw) if t.dtype.bits() % 8 == 0 => {
            // Whole bytes: copied a run of consecutive elements at a time, straight from the
            // selection's runs (no offset an element).
            let w = t.dtype.bits() / 8;
            let runs = semantics::Runs::new(&resolved, &t.shape, max_elements)?;
            let len = (runs.total() as usize).saturating_mul(w);
            if len >= LAZY_MIN {
                // Big: kept as (source, runs), produced run by run when written.
                let mut in_range = true;
                runs.for_each(|first, n| in_range &= run_bytes(raw, first, n, w).is_some());
                if !in_range {
                    return Err(EvalError::Invalid("index out of range".into()));
                }
                let producer = SliceRuns {
                    src: raw.clone(),
                    runs,
                    width: w,
                    len,
                };
                return Ok(Tensor {
                    dtype: t.dtype,
                    shape,
                    data: TensorData::Lazy(Lazy::new(Arc::new(producer))),
                });
            }
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

/// Slice results of at least this many bytes are lazy ([`TensorData::Lazy`]): their bytes are
/// produced from the source when written, not held in memory.
pub const LAZY_MIN: usize = 64 * 1024;

/// The bytes of a slice of whole-byte elements: the selection's runs of a source.
#[derive(Debug)]
struct SliceRuns {
    src: Bytes,
    runs: semantics::Runs,
    width: usize,
    len: usize,
}

impl Produce for SliceRuns {
    fn len(&self) -> usize {
        self.len
    }

    fn runs(&self, f: &mut dyn FnMut(&[u8])) {
        // Every run was checked to lie in the source when this was made.
        self.runs.for_each(|first, n| {
            if let Some(b) = run_bytes(&self.src, first, n, self.width) {
                f(b)
            }
        });
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

// The ops of this family that `fold` evaluates on constants: their rows of
// `ops::registry::OPS`, and the functions reading a node's inputs and attributes.

/// Rows of [`crate::ops::registry::OPS`]. (Slices are not rows: `fold` decodes them through
/// `shape::slice_node` and calls [`slice`].)
pub(crate) const OPS: &[OpEntry] = &[
    row("Gather", Onnx, gather_node),
    row("Gather", OpenVino, gather_node),
];

fn gather_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let idx = i.input(1).ok_or(NoEval::Silent)?;
    let axis = GatherAxis::of(i.node, i.dialect, i.input(2))?;
    let indices = attrs::input_ints(Some(idx))?;
    Ok(gather(data, &indices, &idx.shape, axis, i.limit)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::eval::arange;

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

#[cfg(test)]
mod lazy_tests {
    use super::*;
    use crate::semantics::{decode, onnx_slice};

    /// `x[s0:e0:st0, s1:e1:st1]` (ONNX Slice on both axes).
    fn plan_2d(starts: [i64; 2], ends: [i64; 2], steps: [i64; 2]) -> SlicePlan {
        onnx_slice(
            &decode::constant(&starts),
            &decode::constant(&ends),
            Some(&[0, 1]),
            Some(&decode::constant(&steps)),
            2,
            13,
        )
        .expect("valid")
    }

    /// numpy's `x[r, c]` for in-range python ranges, element by element.
    fn select(raw: &[u8], cols: usize, rows: &[usize], cs: &[usize], w: usize) -> Vec<u8> {
        let mut out = Vec::new();
        for &r in rows {
            for &c in cs {
                let at = (r * cols + c) * w;
                out.extend_from_slice(&raw[at..at + w]);
            }
        }
        out
    }

    /// A big slice is lazy: its bytes (computed, or produced run by run as a writer takes
    /// them) are the elements numpy's indexing selects, for a half-kept weight, a strided and
    /// a reversed slice; a small one is computed at once.
    #[test]
    fn big_slices_are_lazy_and_select_what_numpy_selects() {
        let (rows, cols) = (512usize, 256usize);
        let raw: Vec<u8> = (0..rows * cols * 4).map(|i| (i * 31 % 251) as u8).collect();
        let t = Tensor {
            dtype: DType::F32,
            shape: vec![rows as u64, cols as u64],
            data: TensorData::Raw(Bytes::from(raw.clone())),
        };
        let all: Vec<usize> = (0..rows).collect();
        let cases: Vec<(SlicePlan, Vec<usize>, Vec<usize>)> = vec![
            // w[:, 0:128]
            (
                plan_2d([0, 0], [i64::MAX, 128], [1, 1]),
                all.clone(),
                (0..128).collect(),
            ),
            // w[1::2, 3:250:3]
            (
                plan_2d([1, 3], [i64::MAX, 250], [2, 3]),
                (1..rows).step_by(2).collect(),
                (3..250).step_by(3).collect(),
            ),
            // w[::-1, 200:10:-1]
            (
                plan_2d([-1, 200], [i64::MIN, 10], [-1, -1]),
                all.iter().rev().copied().collect(),
                (11..=200).rev().collect(),
            ),
        ];
        for (plan, rs, cs) in cases {
            let want = select(&raw, cols, &rs, &cs, 4);
            let r = slice(&t, &plan, Clamp::Ov, 1 << 30).expect("slice");
            assert_eq!(r.shape, vec![rs.len() as u64, cs.len() as u64]);
            let TensorData::Lazy(l) = &r.data else {
                panic!("a {} byte slice is not lazy", want.len());
            };
            assert_eq!(l.len(), want.len());
            let mut streamed = Vec::new();
            l.producer().runs(&mut |b| streamed.extend_from_slice(b));
            assert_eq!(streamed, want);
            assert!(
                l.computed().is_none(),
                "producing runs does not keep the bytes"
            );
            assert_eq!(r.raw().expect("raw").as_ref(), &want[..]);
            // A slice of the lazy result reads its bytes: x[:, 0:128][2:4, 5:7].
            let again = slice(&r, &plan_2d([2, 5], [4, 7], [1, 1]), Clamp::Ov, 1 << 20)
                .expect("slice of a slice");
            let w2 = select(&want, cs.len(), &[2, 3], &[5, 6], 4);
            assert_eq!(again.raw().expect("raw").as_ref(), &w2[..]);
        }
        let small = slice(&t, &plan_2d([0, 0], [2, 2], [1, 1]), Clamp::Ov, 1 << 20).expect("s");
        assert!(matches!(small.data, TensorData::Raw(_)));
    }
}
