//! Resolution on concrete (`u64`) dims: per-axis `start/step/len` ([`resolve_concrete`]) and
//! output shapes ([`output_shape`]), with the index checks they share with the symbolic rules.

use super::super::plan::{AxisPlan, Bound, SlicePlan};
use super::super::SliceError;
use super::{Clamp, ResolvedAxis};

/// `(start, len)` of a range on a concrete axis of size `d` (also `compose`'s rule for one axis).
pub(in crate::semantics) fn range_concrete(
    d: i128,
    begin: Bound,
    end: Bound,
    step: i64,
    clamp: Clamp,
) -> Result<(i128, i128), SliceError> {
    let idx = |b: Bound| match b {
        Bound::Index(v) => Ok(Some(v as i128)),
        Bound::Edge => Ok(None),
        Bound::Dynamic => Err(SliceError::NotConstant),
    };
    let (b, e, s) = (idx(begin)?, idx(end)?, step as i128);
    let norm = |v: i128| if v < 0 { v + d } else { v };
    if s > 0 {
        let start = b.map_or(0, |v| norm(v).clamp(0, d));
        let stop = e.map_or(d, |v| norm(v).clamp(0, d));
        let len = if stop > start {
            (stop - start + s - 1) / s
        } else {
            0
        };
        Ok((start, len))
    } else {
        let m = -s;
        let start = match b {
            None => d - 1,
            Some(v) => match clamp {
                Clamp::Tf => norm(v).clamp(-1, d - 1),
                Clamp::Ov => norm(v).max(0).min(d - 1),
            },
        };
        let stop = e.map_or(-1, |v| norm(v).clamp(-1, d - 1).max(-1));
        let len = if start > stop {
            (start - stop + m - 1) / m
        } else {
            0
        };
        Ok((start, len))
    }
}

pub(super) fn check_rank(plan: &SlicePlan, n: usize) -> Result<(), SliceError> {
    if plan.input_rank != n {
        return Err(SliceError::RankMismatch {
            plan: plan.input_rank,
            dims: n,
        });
    }
    let mut next = 0usize;
    for a in &plan.axes {
        if let AxisPlan::Range { axis, .. } | AxisPlan::Shrink { axis, .. } = a {
            if *axis != next {
                return Err(SliceError::TooManyAxes {
                    used: axis.saturating_add(1),
                    rank: n,
                });
            }
            next += 1;
        }
    }
    if next != n {
        return Err(SliceError::RankMismatch {
            plan: next,
            dims: n,
        });
    }
    Ok(())
}

fn shrink_index(axis: usize, index: Option<i64>, d: u64) -> Result<u64, SliceError> {
    let index = index.ok_or(SliceError::NotConstant)?;
    let v = if index < 0 {
        index as i128 + d as i128
    } else {
        index as i128
    };
    if v < 0 || v >= d as i128 {
        return Err(SliceError::ShrinkOutOfRange {
            axis,
            index,
            dim: d,
        });
    }
    Ok(v as u64)
}

/// The element a shrink keeps. TensorFlow: `index` must lie in `[-d, d)`. OpenVINO
/// StridedSlice-1 (`Clamp::Ov`): its shape inference does not check shrink indices (only the
/// plan's `check` does, see `AxisPlan::Shrink`) and, as its spec says of `begin`, out-of-bounds
/// values are silently clamped: the CPU plugin keeps element `clamp(index, 0, d - 1)`
/// (conformance cases ss-1-00884, ss-1-02152). A dim of 0 has no element: an error.
pub(super) fn shrink_kept(
    axis: usize,
    index: Option<i64>,
    d: u64,
    clamp: Clamp,
) -> Result<u64, SliceError> {
    match shrink_index(axis, index, d) {
        Err(SliceError::ShrinkOutOfRange { index, .. }) if clamp == Clamp::Ov && d > 0 => {
            Ok(if index < 0 { 0 } else { d - 1 })
        }
        r => r,
    }
}

/// A plan's validity condition (`check` of a range or shrink entry): `index`, when given, must
/// lie in `[-d, d)`.
pub(super) fn check_index(axis: usize, index: Option<i64>, d: u64) -> Result<(), SliceError> {
    match index {
        Some(_) => shrink_index(axis, index, d).map(|_| ()),
        None => Ok(()),
    }
}

/// Resolve a constant plan against concrete dims: one [`ResolvedAxis`] per plan entry.
///
/// Errors: rank mismatch, a dim above `i64::MAX`, a non-constant plan, a shrink index out of
/// range.
pub fn resolve_concrete(
    plan: &SlicePlan,
    dims: &[u64],
    clamp: Clamp,
) -> Result<Vec<ResolvedAxis>, SliceError> {
    check_rank(plan, dims.len())?;
    if let Some(&d) = dims.iter().find(|&&d| d > i64::MAX as u64) {
        return Err(SliceError::DimTooLarge(d));
    }
    plan.axes
        .iter()
        .map(|a| match *a {
            AxisPlan::NewAxis => Ok(ResolvedAxis::NewAxis),
            AxisPlan::Shrink { axis, index, check } => {
                check_index(axis, check, dims[axis])?;
                Ok(ResolvedAxis::Shrink {
                    axis,
                    index: shrink_kept(axis, index, dims[axis], clamp)?,
                })
            }
            AxisPlan::Range {
                axis,
                begin,
                end,
                step,
                check,
            } => {
                check_index(axis, check, dims[axis])?;
                let step = step.ok_or(SliceError::NotConstant)?;
                let (start, len) = range_concrete(dims[axis] as i128, begin, end, step, clamp)?;
                // Both fit: 0 <= start < d <= i64::MAX when len > 0, and len <= d.
                let start = if len > 0 { start as i64 } else { 0 };
                Ok(ResolvedAxis::Range {
                    axis,
                    start,
                    step,
                    len: len as u64,
                })
            }
        })
        .collect()
}

/// The output shape of a constant plan on concrete dims.
pub fn output_shape(plan: &SlicePlan, dims: &[u64], clamp: Clamp) -> Result<Vec<u64>, SliceError> {
    Ok(resolve_concrete(plan, dims, clamp)?
        .iter()
        .filter_map(ResolvedAxis::output_dim)
        .collect())
}
