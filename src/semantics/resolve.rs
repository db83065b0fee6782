//! Resolution of a [`SlicePlan`] against input dims: output dims ([`resolve_dims`] on [`Dim`],
//! [`output_shape`] on `u64`) and per-axis `start/step/len` ([`resolve_concrete`]).
//!
//! Clamping, for an axis of size `d`, a begin `b` and an end `e` (negative values first get `d`
//! added; `Edge` is the first element / one past the last in the step's direction):
//! - positive step: begin and end clamp to `[0, d]`;
//! - negative step: end clamps to `[-1, d - 1]`; begin clamps to `[0, d - 1]` ([`Clamp::Ov`],
//!   OpenVINO and ONNX) or to `[-1, d - 1]` ([`Clamp::Tf`], TensorFlow: a begin below `-d` selects
//!   nothing, where OpenVINO selects element 0).
//!
//! All arithmetic is on `i128`: `INT64_MIN`/`INT64_MAX` bounds cannot overflow.

use super::dim::Dim;
use super::plan::{AxisPlan, Bound, SlicePlan};
use super::SliceError;

/// The clamping rule for reverse ranges (the one place the flavours differ after decoding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Clamp {
    /// TensorFlow StridedSlice.
    Tf,
    /// OpenVINO StridedSlice-1 and Slice-8, and ONNX Slice.
    Ov,
}

/// One plan entry resolved against concrete dims.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResolvedAxis {
    /// Elements `start, start + step, ...` (`len` of them) of input axis `axis`. `start` is a
    /// valid index when `len > 0` (and 0 otherwise).
    Range {
        /// Input axis.
        axis: usize,
        /// First index taken.
        start: i64,
        /// Step (non-zero).
        step: i64,
        /// Number of elements (the output dim).
        len: u64,
    },
    /// A new axis of size 1.
    NewAxis,
    /// Input axis `axis` reduced to element `index` (in `[0, dim)`), no output axis.
    Shrink {
        /// Input axis.
        axis: usize,
        /// Index kept.
        index: u64,
    },
}

impl ResolvedAxis {
    /// The output dim of this entry (`None` for a shrink).
    pub fn output_dim(&self) -> Option<u64> {
        match self {
            ResolvedAxis::Range { len, .. } => Some(*len),
            ResolvedAxis::NewAxis => Some(1),
            ResolvedAxis::Shrink { .. } => None,
        }
    }
}

/// `(start, len)` of a range on a concrete axis of size `d`.
fn range_concrete(
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

fn check_rank(plan: &SlicePlan, n: usize) -> Result<(), SliceError> {
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
fn shrink_kept(axis: usize, index: Option<i64>, d: u64, clamp: Clamp) -> Result<u64, SliceError> {
    match shrink_index(axis, index, d) {
        Err(SliceError::ShrinkOutOfRange { index, .. }) if clamp == Clamp::Ov && d > 0 => {
            Ok(if index < 0 { 0 } else { d - 1 })
        }
        r => r,
    }
}

/// A plan's validity condition (`check` of a range or shrink entry): `index`, when given, must
/// lie in `[-d, d)`.
fn check_index(axis: usize, index: Option<i64>, d: u64) -> Result<(), SliceError> {
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

/// Output dim of a range on `d` (symbolic or known): the tightest the inputs allow.
fn range_dim(d: &Dim, begin: Bound, end: Bound, step: Option<i64>, clamp: Clamp) -> Dim {
    let unknown = || Dim::unknown_bounded(0, d.bounds().1);
    let (Some(s), true) = (step, begin != Bound::Dynamic && end != Bound::Dynamic) else {
        return unknown();
    };
    // Any index at or beyond ±i64::MAX behaves like ±infinity for dims <= i64::MAX; saturate
    // so that `d + v` cannot overflow.
    let sat = |v: i64| v.max(-i64::MAX);
    let zero = Dim::known(0);
    let neg1 = Dim::known(-1);
    if s > 0 {
        let pos = |b: Bound, edge: Dim| match b {
            Bound::Index(v) if v >= 0 => Dim::known(v).min(d),
            Bound::Index(v) => d.add_const(sat(v)).max(&zero),
            _ => edge,
        };
        let start = pos(begin, zero.clone());
        let stop = pos(end, d.clone());
        stop.sub(&start).max(&zero).add_const(s - 1).div_floor(s)
    } else {
        let m = s.checked_neg().unwrap_or(i64::MAX); // |i64::MIN| > any dim: same result
        let last = d.add_const(-1);
        let start = match begin {
            Bound::Index(v) if v >= 0 => Dim::known(v).min(&last),
            Bound::Index(v) => match clamp {
                Clamp::Tf => d.add_const(sat(v)).max(&neg1),
                Clamp::Ov => d.add_const(sat(v)).max(&zero).min(&last),
            },
            _ => last.clone(),
        };
        let stop = match end {
            Bound::Index(v) if v >= 0 => Dim::known(v).min(&last),
            Bound::Index(v) => d.add_const(sat(v)).max(&neg1),
            _ => neg1,
        };
        start.sub(&stop).max(&zero).add_const(m - 1).div_floor(m)
    }
}

/// Output dims of a plan on (possibly symbolic or unknown) input dims.
///
/// Errors: rank mismatch, or a shrink index known to be out of range for a known dim.
pub fn resolve_dims(plan: &SlicePlan, dims: &[Dim], clamp: Clamp) -> Result<Vec<Dim>, SliceError> {
    check_rank(plan, dims.len())?;
    let mut out = Vec::with_capacity(plan.axes.len());
    for a in &plan.axes {
        match *a {
            AxisPlan::NewAxis => out.push(Dim::known(1)),
            AxisPlan::Shrink { axis, index, check } => {
                if let Some(d) = dims[axis].as_known() {
                    let d = u64::try_from(d).map_err(|_| SliceError::DimTooLarge(0))?;
                    if index.is_some() {
                        shrink_kept(axis, index, d, clamp)?;
                    }
                    check_index(axis, check, d)?;
                }
            }
            AxisPlan::Range {
                axis,
                begin,
                end,
                step,
                check,
            } => {
                if let Some(d) = dims[axis].as_known() {
                    let d = u64::try_from(d).map_err(|_| SliceError::DimTooLarge(0))?;
                    check_index(axis, check, d)?;
                }
                out.push(range_dim(&dims[axis], begin, end, step, clamp));
            }
        }
    }
    Ok(out)
}
