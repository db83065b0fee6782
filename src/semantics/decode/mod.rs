//! Decoders: every slice op's parameters → one [`SlicePlan`].
//!
//! Values (`begin`, `starts`, ...) are `Option<i64>` per element: `None` means "not a constant"
//! so a plan (and the output rank) exists even when only the masks are constant.
//!
//! Each decoder also says, once, which element of the begin and end lists each plan entry reads
//! (its [`Provenance`]): the `*_with_provenance` functions. The plain ones return the plan only.

mod onnx_slice;
mod ov_slice8;
mod strided_slice;

pub use onnx_slice::{onnx_slice, onnx_slice_with_provenance};
pub use ov_slice8::{ov_slice8, ov_slice8_with_provenance};
pub use strided_slice::{
    ov_shrink_begin_mask_entries, ov_shrink_begin_mask_warning, strided_slice,
    strided_slice_with_provenance, Flavour, OvMasks, StridedSliceSpec, TfMasks,
};

use super::plan::{AxisPlan, Bound, Provenance, SlicePlan};
use super::SliceError;

/// Lift constant values into the `Option<i64>` form the decoders take.
pub fn constant(values: &[i64]) -> Vec<Option<i64>> {
    values.iter().map(|&v| Some(v)).collect()
}

/// Shared by ONNX Slice and OpenVINO Slice-8: per-axis `starts/ends/steps` on listed `axes`.
/// Element `i` of `starts`/`ends` gives the begin/end of the plan entry of axis `axes[i]`.
pub(crate) fn axes_slice(
    starts: &[Option<i64>],
    ends: &[Option<i64>],
    axes: Option<&[i64]>,
    steps: Option<&[Option<i64>]>,
    input_rank: usize,
) -> Result<SlicePlan, SliceError> {
    let n = starts.len();
    if ends.len() != n {
        return Err(SliceError::LengthMismatch {
            what: "starts/ends",
            a: n,
            b: ends.len(),
        });
    }
    if let Some(a) = axes {
        if a.len() != n {
            return Err(SliceError::LengthMismatch {
                what: "starts/axes",
                a: n,
                b: a.len(),
            });
        }
    }
    if let Some(s) = steps {
        if s.len() != n {
            return Err(SliceError::LengthMismatch {
                what: "starts/steps",
                a: n,
                b: s.len(),
            });
        }
    }
    let rank_i = i64::try_from(input_rank).map_err(|_| SliceError::TooManyAxes {
        used: n,
        rank: input_rank,
    })?;
    let mut axes_plan: Vec<AxisPlan> = (0..input_rank)
        .map(|axis| AxisPlan::Range {
            axis,
            begin: Bound::Edge,
            end: Bound::Edge,
            step: Some(1),
            check: None,
        })
        .collect();
    // Axes already given: a bit each (no allocation) up to rank 128.
    let mut seen_small = 0u128;
    let mut seen_big = if input_rank > 128 {
        vec![false; input_rank]
    } else {
        Vec::new()
    };
    for i in 0..n {
        let raw = match axes {
            Some(a) => a[i],
            None => i64::try_from(i).unwrap_or(i64::MAX),
        };
        let norm = if raw < 0 {
            raw.checked_add(rank_i)
        } else {
            Some(raw)
        };
        let axis = match norm.and_then(|v| usize::try_from(v).ok()) {
            Some(v) if v < input_rank => v,
            _ => {
                return Err(SliceError::AxisOutOfRange {
                    axis: raw,
                    rank: input_rank,
                })
            }
        };
        let repeated = match seen_big.get_mut(axis) {
            Some(seen) => std::mem::replace(seen, true),
            None => {
                let bit = 1u128 << axis;
                let seen = seen_small & bit != 0;
                seen_small |= bit;
                seen
            }
        };
        if repeated {
            return Err(SliceError::RepeatedAxis { axis });
        }
        let step = match steps {
            Some(s) => s[i],
            None => Some(1),
        };
        if step == Some(0) {
            return Err(SliceError::ZeroStep { index: i });
        }
        let b = |v: Option<i64>| v.map_or(Bound::Dynamic, Bound::Index);
        axes_plan[axis] = AxisPlan::Range {
            axis,
            begin: b(starts[i]),
            end: b(ends[i]),
            step,
            check: None,
        };
    }
    Ok(SlicePlan {
        input_rank,
        axes: axes_plan,
    })
}

/// The [`Provenance`] of a plan [`axes_slice`] decoded from `len` starts/ends on `axes` (`None`:
/// `0..len`) at `input_rank`: every input axis is entry `axis` of the plan; the listed ones read
/// element `i`. Computed apart from the plan, and only when asked: most slices have constant
/// parameters, whose plan holds every bound and needs no provenance (decoded by the hundred
/// thousand, two vectors each were 2 % of a run). Call it on axes `axes_slice` accepted: an
/// axis out of range is left out.
pub(crate) fn axes_provenance(axes: Option<&[i64]>, len: usize, input_rank: usize) -> Provenance {
    let mut from: Vec<Option<usize>> = vec![None; input_rank];
    let rank_i = i64::try_from(input_rank).unwrap_or(i64::MAX);
    for i in 0..len {
        let raw = match axes {
            Some(a) => a.get(i).copied(),
            None => i64::try_from(i).ok(),
        };
        let norm = raw.and_then(|r| {
            if r < 0 {
                r.checked_add(rank_i)
            } else {
                Some(r)
            }
        });
        if let Some(slot) = norm
            .and_then(|v| usize::try_from(v).ok())
            .and_then(|a| from.get_mut(a))
        {
            *slot = Some(i);
        }
    }
    Provenance {
        begin: from.clone(),
        end: from,
        len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slice-8's axes "are required to be unique" (OpenVINO spec), counted after negative
    /// axes are normalized; at every rank, those past 128 included.
    #[test]
    fn a_repeated_axis_is_refused_at_any_rank() {
        let plan = |axes: &[i64], rank: usize| {
            let n = axes.len();
            ov_slice8(&vec![Some(0); n], &vec![Some(1); n], None, Some(axes), rank)
        };
        for (axes, rank, repeated) in [
            (&[1, -3][..], 4, Some(1)),
            (&[0, 1, 2, 3], 4, None),
            (&[3, 2, 1, 0, -1], 4, Some(3)),
            (&[127, -1], 128, Some(127)),
            (&[0, 127], 128, None),
            (&[129, -1], 130, Some(129)),
            (&[0, 128, 129], 130, None),
            (&[128, -2], 130, Some(128)),
        ] {
            match plan(axes, rank) {
                Err(SliceError::RepeatedAxis { axis }) => {
                    assert_eq!(Some(axis), repeated, "{axes:?} rank {rank}")
                }
                Ok(p) => {
                    assert_eq!(repeated, None, "{axes:?} rank {rank}");
                    assert_eq!(p.axes.len(), rank);
                }
                Err(e) => panic!("{axes:?} rank {rank}: {e}"),
            }
        }
    }
}
