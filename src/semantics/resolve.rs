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
use super::plan::{AxisPlan, Bound, Provenance, SlicePlan};
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

/// A begin or end of a range whose value may be a dim expression (a symbolic slice parameter
/// such as `k_len - q_len` computed from `Shape`): the symbolic counterpart of [`Bound`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SymBound {
    /// An index: a known value or an expression (negative values count from the end).
    Index(Dim),
    /// From the edge (mask, omitted input).
    Edge,
    /// Nothing known.
    Dynamic,
}

impl From<Bound> for SymBound {
    fn from(b: Bound) -> SymBound {
        match b {
            Bound::Index(v) => SymBound::Index(Dim::known(v)),
            Bound::Edge => SymBound::Edge,
            Bound::Dynamic => SymBound::Dynamic,
        }
    }
}

/// `max(min(v, hi), lo)`.
fn clamp_dim(v: &Dim, lo: &Dim, hi: &Dim) -> Dim {
    v.min(hi).max(lo)
}

/// `v` (negative: counted from the end, `v + d`) clamped to `[lo, hi]`, exact for every value of
/// the symbols. When the sign of `v` is not known, both cases are combined with a selector that
/// is exact for `|v| <= m` where `m - 1` bounds the clamped values: `max(min(a, S1), min(b, S0))`
/// with `S1 = max(m*v + m, 0) - 1` (huge when `v >= 0`, `-1` otherwise) and `S0 = max(-m*v, 0) - 1`.
fn norm_clamp(v: &Dim, d: &Dim, lo: &Dim, hi: &Dim) -> Dim {
    match v.bounds() {
        (Some(l), _) if l >= 0 => clamp_dim(v, lo, hi),
        (_, Some(h)) if h < 0 => clamp_dim(&v.add(d), lo, hi),
        _ => {
            let a = clamp_dim(v, lo, hi);
            let b = clamp_dim(&v.add(d), lo, hi);
            // Both readings agree whatever the sign (`v = -d`: 0 either way): no selector.
            if a.provably_equal(&b) {
                return a;
            }
            // Both lie in [lo, hi] ⊂ [-1, d]: m = d.hi + 2 > every value, and m*|v| >= m for v != 0.
            let m = match d.bounds().1.and_then(|h| h.checked_add(2)) {
                Some(m) => m,
                None => return Dim::unknown_bounded(-1, d.bounds().1),
            };
            let s1 = v
                .mul_const(m)
                .add_const(m)
                .max(&Dim::known(0))
                .add_const(-1);
            let s0 = v.neg().mul_const(m).max(&Dim::known(0)).add_const(-1);
            a.min(&s1).max(&b.min(&s0))
        }
    }
}

/// A begin that is the first element for a positive step: the edge, or index 0.
fn is_start(b: &SymBound) -> bool {
    match b {
        SymBound::Edge => true,
        SymBound::Index(v) => v.as_known() == Some(0),
        SymBound::Dynamic => false,
    }
}

/// An end that is past the last element of any dim for a positive step: the edge, or
/// `i64::MAX`.
fn is_stop(e: &SymBound) -> bool {
    match e {
        SymBound::Edge => true,
        SymBound::Index(v) => v.as_known() == Some(i64::MAX),
        SymBound::Dynamic => false,
    }
}

/// An unknown output dim within `[lo, hi]`: at least 0, and an upper bound of `i64::MAX` says
/// nothing (every dim is at most that).
fn output_bounds(lo: Option<i64>, hi: Option<i64>) -> Dim {
    Dim::unknown_bounded(lo.unwrap_or(0).max(0), hi.filter(|&h| h < i64::MAX))
}

/// Output dim of a range on `d` (a value, an expression or an unknown with bounds) with begin and
/// end that may be expressions: the tightest the inputs allow, exact for every value of the
/// symbols. An unknown `d` is treated as a fresh symbol with its bounds, and the result is the
/// exact range of the expression over those bounds (for constant begin/end/step: every slice is
/// a piecewise linear function of `d`, whose extremes lie at its breakpoints).
pub fn range_dim_sym(
    d: &Dim,
    begin: &SymBound,
    end: &SymBound,
    step: Option<i64>,
    clamp: Clamp,
) -> Dim {
    if d.is_unknown() {
        let (lo, hi) = d.bounds();
        let fresh = Dim::symbol_bounded("\u{0}d", lo.unwrap_or(0), hi);
        let r = range_dim_sym(&fresh, begin, end, step, clamp);
        let (rlo, rhi) = r.bounds();
        return output_bounds(rlo, rhi);
    }
    if let Some(r) = range_of_unknown_params(d, begin, end, step, clamp) {
        return r;
    }
    // The whole axis with step 1 (every axis a Slice does not name, `x[:]`, `x[0:INT64_MAX]`):
    // `d` itself, with no expression algebra (which would rebuild `max(d - 0, 0)` and simplify
    // it back). Every dim is at most i64::MAX, so an end of i64::MAX is the edge.
    if step == Some(1) && is_start(begin) && is_stop(end) {
        return d.clone();
    }
    // Everything known: the concrete rule (no expression algebra; most slices of real models).
    if let (Some(n), Some(s)) = (d.as_known(), step.filter(|&s| s != 0)) {
        let concrete = |b: &SymBound| match b {
            SymBound::Index(v) => v.as_known().map(Bound::Index),
            SymBound::Edge => Some(Bound::Edge),
            SymBound::Dynamic => None,
        };
        if let (Some(b), Some(e), true) = (concrete(begin), concrete(end), n >= 0) {
            if let Some(len) = range_concrete(n as i128, b, e, s, clamp)
                .ok()
                .and_then(|(_, len)| i64::try_from(len).ok())
            {
                return Dim::known(len);
            }
        }
    }
    let unknown = || Dim::unknown_bounded(0, d.bounds().1);
    let (Some(s), false) = (
        step,
        *begin == SymBound::Dynamic || *end == SymBound::Dynamic,
    ) else {
        return unknown();
    };
    // Any index at or beyond ±i64::MAX behaves like ±infinity for dims <= i64::MAX; saturate
    // so that `d + v` cannot overflow.
    // Also, for a dim bounded by `h`, any index beyond `±(h + 1)` acts as `±(h + 1)`: clamping
    // there keeps the constants of the expression small (so that it can be written).
    let lim = d
        .bounds()
        .1
        .and_then(|h| h.checked_add(1))
        .unwrap_or(i64::MAX);
    let sat = |v: &Dim| match v.as_known() {
        Some(k) => Dim::known(k.clamp(-lim, lim)),
        None => v.clone(),
    };
    // ceil(x / m) for 0 <= x <= d: `min(x, 1)` when m >= d's upper bound (no huge constants).
    let d_hi = d.bounds().1.unwrap_or(i64::MAX);
    let ceil_div = |x: Dim, m: i64| {
        if m >= d_hi {
            x.min(&Dim::known(1))
        } else {
            x.add_const(m - 1).div_floor(m)
        }
    };
    let zero = Dim::known(0);
    let neg1 = Dim::known(-1);
    let last = d.add_const(-1);
    let r = if s > 0 {
        let pos = |b: &SymBound, edge: Dim| match b {
            SymBound::Index(v) => norm_clamp(&sat(v), d, &zero, d),
            _ => edge,
        };
        let start = pos(begin, zero.clone());
        let stop = pos(end, d.clone());
        ceil_div(stop.sub(&start).max(&zero), s)
    } else {
        let m = s.checked_neg().unwrap_or(i64::MAX); // |i64::MIN| > any dim: same result
        let start = match begin {
            SymBound::Index(v) => match clamp {
                Clamp::Tf => norm_clamp(&sat(v), d, &neg1, &last),
                Clamp::Ov => norm_clamp(&sat(v), d, &zero, &last).min(&last),
            },
            _ => last.clone(),
        };
        let stop = match end {
            SymBound::Index(v) => norm_clamp(&sat(v), d, &neg1, &last),
            _ => neg1,
        };
        ceil_div(start.sub(&stop).max(&zero), m)
    };
    if r.is_unknown() {
        // Lost in the algebra (overflow, size): the bounds are still right.
        let (lo, hi) = r.bounds();
        // A range never selects more than the dim has.
        let hi = match (hi, d.bounds().1) {
            (Some(h), Some(dh)) => Some(h.min(dh)),
            (h, dh) => h.or(dh),
        };
        return output_bounds(lo, hi);
    }
    r
}

/// `[lo, hi]` of a begin or end that is an unknown value (with bounds: a value computed from an
/// interval dim, OpenVINO's `evaluate_lower/upper`), split at its sign (negative values count
/// from the end, so the length jumps there): one or two intervals. `None` for anything else.
fn unknown_parts(b: &SymBound) -> Option<Vec<(i64, i64)>> {
    let SymBound::Index(v) = b else {
        return None;
    };
    if !v.is_unknown() {
        return None;
    }
    let (lo, hi) = v.bounds();
    let (lo, hi) = (lo.unwrap_or(i64::MIN), hi.unwrap_or(i64::MAX));
    let mut parts = Vec::with_capacity(2);
    if lo < 0 {
        parts.push((lo, hi.min(-1)));
    }
    if hi >= 0 {
        parts.push((lo.max(0), hi));
    }
    Some(parts)
}

/// The output dim of a range whose begin and/or end is an unknown value with bounds: the exact
/// interval over every begin, end (and `d`) in their bounds. Within one sign of the begin and
/// one of the end, the clamped start is non-decreasing in the begin and the clamped stop in the
/// end (whatever `d`), so for a positive step the length is largest at (lowest begin, highest
/// end) and smallest at (highest begin, lowest end), and the other way round for a negative
/// step: each extreme is a range with constant parameters, whose range over `d` is exact.
fn range_of_unknown_params(
    d: &Dim,
    begin: &SymBound,
    end: &SymBound,
    step: Option<i64>,
    clamp: Clamp,
) -> Option<Dim> {
    let (bp, ep) = (unknown_parts(begin), unknown_parts(end));
    if bp.is_none() && ep.is_none() {
        return None;
    }
    let s = step.filter(|&s| s != 0)?;
    // (low, high) ends of each part; a parameter that is not an unknown is its own ends.
    let ends = |parts: Option<Vec<(i64, i64)>>, b: &SymBound| -> Vec<(SymBound, SymBound)> {
        match parts {
            Some(p) => p
                .into_iter()
                .map(|(lo, hi)| {
                    (
                        SymBound::Index(Dim::known(lo)),
                        SymBound::Index(Dim::known(hi)),
                    )
                })
                .collect(),
            None => vec![(b.clone(), b.clone())],
        }
    };
    let (bs, es) = (ends(bp, begin), ends(ep, end));
    let (mut lo, mut hi): (Option<i64>, Option<i64>) = (None, Some(0));
    for (b_lo, b_hi) in &bs {
        for (e_lo, e_hi) in &es {
            let (small, large) = if s > 0 {
                (
                    range_dim_sym(d, b_hi, e_lo, step, clamp),
                    range_dim_sym(d, b_lo, e_hi, step, clamp),
                )
            } else {
                (
                    range_dim_sym(d, b_lo, e_hi, step, clamp),
                    range_dim_sym(d, b_hi, e_lo, step, clamp),
                )
            };
            let l = small.bounds().0.unwrap_or(0).max(0);
            lo = Some(lo.map_or(l, |x: i64| x.min(l)));
            hi = match (hi, large.bounds().1) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
        }
    }
    // A range never selects more than the dim has.
    let hi = match (hi, d.bounds().1) {
        (Some(h), Some(dh)) => Some(h.min(dh)),
        (h, dh) => h.or(dh),
    };
    Some(output_bounds(lo, hi))
}

/// Symbolic begin/end values for the `Dynamic` bounds of a plan, one pair per plan entry (in
/// plan order; `None`: keep the plan's bound). Build it with [`SymParams::from_provenance`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SymParams {
    /// Per plan entry: the begin (or shrink index) value.
    pub begin: Vec<Option<Dim>>,
    /// Per plan entry: the end value.
    pub end: Vec<Option<Dim>>,
}

impl SymParams {
    /// The values of the begin and end lists (`begin`, `end`: their elements as dims, known
    /// values, expressions or unknowns; empty when nothing is known) placed at the plan entries
    /// that read them, as the decoder recorded in `provenance`. Kept: expressions and unknowns
    /// (with their bounds: a value computed from an interval dim, or a plain unknown, `>= 0`);
    /// a known element is already in the plan.
    pub fn from_provenance(provenance: &Provenance, begin: &[Dim], end: &[Dim]) -> SymParams {
        let place = |from: &[Option<usize>], values: &[Dim]| -> Vec<Option<Dim>> {
            from.iter()
                .map(|j| {
                    let v = values.get((*j)?)?;
                    says_more(v).then(|| v.clone())
                })
                .collect()
        };
        SymParams {
            begin: place(&provenance.begin, begin),
            end: place(&provenance.end, end),
        }
    }
}

/// True when a parameter element says more than the plan's `Dynamic` (whose value may be any
/// integer) without being in the plan already: an expression, or an unknown value, whose bounds
/// say something (a plain unknown is `>= 0`: a value computed from a dim).
fn says_more(v: &Dim) -> bool {
    !v.is_known()
}

/// Output dims of a plan whose `Dynamic` begins/ends may be given as expressions (`params`, see
/// [`SymParams::from_provenance`]): exact for every value of the symbols. A shrink with a symbolic index
/// is not checked against the dim.
pub fn resolve_dims_sym(
    plan: &SlicePlan,
    dims: &[Dim],
    clamp: Clamp,
    params: &SymParams,
) -> Result<Vec<Dim>, SliceError> {
    check_rank(plan, dims.len())?;
    let mut out = Vec::with_capacity(plan.axes.len());
    for (k, a) in plan.axes.iter().enumerate() {
        let pick = |v: &Vec<Option<Dim>>, b: Bound| match v.get(k) {
            Some(Some(d)) if b == Bound::Dynamic => SymBound::Index(d.clone()),
            _ => SymBound::from(b),
        };
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
                let (b, e) = (pick(&params.begin, begin), pick(&params.end, end));
                out.push(range_dim_sym(&dims[axis], &b, &e, step, clamp));
            }
        }
    }
    Ok(out)
}

/// Output dims of a plan on (possibly symbolic or unknown) input dims.
///
/// Errors: rank mismatch, or a shrink index known to be out of range for a known dim.
pub fn resolve_dims(plan: &SlicePlan, dims: &[Dim], clamp: Clamp) -> Result<Vec<Dim>, SliceError> {
    resolve_dims_sym(plan, dims, clamp, &SymParams::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantics::decode::TfMasks;
    use crate::semantics::decode::{onnx_slice_with_provenance, strided_slice_with_provenance};
    use crate::semantics::{onnx_slice, Flavour, StridedSliceSpec};
    use std::collections::HashMap;

    /// Decodes a slice from its begin and end values (`None`: not constant).
    type DecodeFn<'a> =
        dyn Fn(&[Option<i64>], &[Option<i64>]) -> Result<(SlicePlan, Provenance), SliceError> + 'a;

    /// The oracle for [`SymParams::from_provenance`]: finds which plan entry each symbolic
    /// parameter element feeds without knowing the op's decoding rules. Each expression element
    /// is probed alone (set to a constant while the others stay as they are); the entry whose
    /// bound turns from `Dynamic` into that index is the one it feeds.
    fn locate(
        decode: &DecodeFn<'_>,
        begin: &[Dim],
        end: &[Dim],
    ) -> Result<(SlicePlan, SymParams), SliceError> {
        let base_b: Vec<Option<i64>> = begin.iter().map(Dim::as_known).collect();
        let base_e: Vec<Option<i64>> = end.iter().map(Dim::as_known).collect();
        let (plan, _) = decode(&base_b, &base_e)?;
        let n = plan.axes.len();
        let mut out = SymParams {
            begin: vec![None; n],
            end: vec![None; n],
        };
        for (list, is_begin) in [(begin, true), (end, false)] {
            for (j, v) in list.iter().enumerate() {
                if !says_more(v) {
                    continue;
                }
                let (mut b, mut e) = (base_b.clone(), base_e.clone());
                if is_begin {
                    b[j] = Some(0);
                } else {
                    e[j] = Some(0);
                }
                let Ok((probe, _)) = decode(&b, &e) else {
                    continue;
                };
                if probe.axes.len() != n {
                    continue;
                }
                for (k, (p0, p1)) in plan.axes.iter().zip(&probe.axes).enumerate() {
                    match (p0, p1) {
                        (
                            AxisPlan::Range {
                                begin: b0, end: e0, ..
                            },
                            AxisPlan::Range {
                                begin: b1, end: e1, ..
                            },
                        ) => {
                            if *b0 == Bound::Dynamic && *b1 != Bound::Dynamic {
                                out.begin[k] = Some(v.clone());
                            }
                            if *e0 == Bound::Dynamic && *e1 != Bound::Dynamic {
                                out.end[k] = Some(v.clone());
                            }
                        }
                        (
                            AxisPlan::Shrink { index: None, .. },
                            AxisPlan::Shrink { index: Some(_), .. },
                        ) => out.begin[k] = Some(v.clone()),
                        _ => {}
                    }
                }
            }
        }
        Ok((plan, out))
    }

    /// The plan and the symbolic parameters of a slice, placed by the decoder's provenance, after
    /// checking them against the oracle.
    fn placed(
        decode: &DecodeFn<'_>,
        begin: &[Dim],
        end: &[Dim],
    ) -> Result<(SlicePlan, SymParams), SliceError> {
        let base_b: Vec<Option<i64>> = begin.iter().map(Dim::as_known).collect();
        let base_e: Vec<Option<i64>> = end.iter().map(Dim::as_known).collect();
        let (plan, prov) = decode(&base_b, &base_e)?;
        let params = SymParams::from_provenance(&prov, begin, end);
        let (oracle_plan, oracle) = locate(decode, begin, end)?;
        assert_eq!(plan, oracle_plan);
        assert_eq!(params, oracle, "{plan} from {prov:?}");
        Ok((plan, params))
    }

    #[test]
    fn symbolic_begin_of_unknown_sign_is_exact() {
        // gpt2's causal mask: bias[k_len - q_len : k_len] on an axis of 32, steps 1 and 2,
        // for every pair of sizes (including k_len < q_len, where the begin is negative).
        let (q, k) = (Dim::symbol("q"), Dim::symbol("k"));
        for step in [1i64, 2, -1] {
            let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
                onnx_slice_with_provenance(b, e, Some(&[0]), Some(&[Some(step)]), 1, 13)
            };
            let (plan, params) = placed(&decode, &[k.sub(&q)], std::slice::from_ref(&k)).unwrap();
            let sym = resolve_dims_sym(&plan, &[Dim::known(32)], Clamp::Ov, &params).unwrap();
            assert!(!sym[0].is_unknown(), "{}", sym[0]);
            for qv in 0..40i64 {
                for kv in 0..40i64 {
                    let p = onnx_slice(
                        &[Some(kv - qv)],
                        &[Some(kv)],
                        Some(&[0]),
                        Some(&[Some(step)]),
                        1,
                        13,
                    )
                    .unwrap();
                    let want = output_shape(&p, &[32], Clamp::Ov).unwrap()[0] as i64;
                    let b: HashMap<String, i64> = [("q".into(), qv), ("k".into(), kv)].into();
                    assert_eq!(
                        sym[0].eval(&b),
                        Some(want),
                        "q={qv} k={kv} step={step}: {}",
                        sym[0]
                    );
                }
            }
        }
    }

    #[test]
    fn whole_axis_ranges_of_a_symbol_are_exact() {
        // ONNX Slice on a symbolic axis, begins and ends at and next to the edges, steps 1, 2
        // and -1: the symbolic dim evaluates to the concrete rule's length for every size.
        let n = Dim::symbol("n");
        let (max, min) = (Some(i64::MAX), Some(i64::MIN));
        let cases = [
            (Some(0), max),
            (Some(0), Some(i64::MAX - 1)),
            (Some(1), max),
            (Some(0), Some(-1)),
            (Some(-1), min),
            (Some(0), Some(5)),
        ];
        for (b, e) in cases {
            for step in [1i64, 2, -1] {
                let plan = onnx_slice(&[b], &[e], Some(&[0]), Some(&[Some(step)]), 1, 13).unwrap();
                for clamp in [Clamp::Ov, Clamp::Tf] {
                    let sym = resolve_dims(&plan, std::slice::from_ref(&n), clamp).unwrap();
                    for nv in 0..12i64 {
                        let want = output_shape(&plan, &[nv as u64], clamp).unwrap()[0] as i64;
                        let bind: HashMap<String, i64> = [("n".into(), nv)].into();
                        assert_eq!(
                            sym[0].eval(&bind),
                            Some(want),
                            "n={nv} [{b:?}:{e:?}:{step}] {clamp:?}: {}",
                            sym[0]
                        );
                    }
                }
            }
        }
        // The edge on both sides with step 1 is the dim itself, symbol or unknown.
        for d in [n.clone(), Dim::unknown_bounded(2, Some(9))] {
            let edges = range_dim_sym(&d, &SymBound::Edge, &SymBound::Edge, Some(1), Clamp::Ov);
            assert_eq!(edges, d);
        }
    }

    #[test]
    fn symbolic_strided_slice_params_are_located() {
        // x[..., n:] with an ellipsis and a new axis in front: the probe finds the entry.
        let n = Dim::symbol("n");
        let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
            let m = TfMasks {
                ellipsis: 1,
                new_axis: 2,
                end: 4,
                ..Default::default()
            };
            let mut spec = StridedSliceSpec::from_tf_bits(&[0, 0, 0], &[0, 0, 0], None, m);
            spec.begin = b.to_vec();
            spec.end = e.to_vec();
            strided_slice_with_provenance(&spec, Flavour::Tf, 2)
        };
        let (plan, params) = placed(
            &decode,
            &[Dim::known(0), Dim::known(0), n.clone()],
            &[Dim::known(0), Dim::known(0), Dim::known(0)],
        )
        .unwrap();
        let out = resolve_dims_sym(
            &plan,
            &[Dim::known(3), Dim::symbol("T")],
            Clamp::Tf,
            &params,
        )
        .unwrap();
        let shown: Vec<String> = out.iter().map(|d| d.to_string()).collect();
        assert_eq!(shown[..2], ["3".to_string(), "1".to_string()]);
        let b: HashMap<String, i64> = [("n".into(), 2), ("T".into(), 7)].into();
        assert_eq!(out[2].eval(&b), Some(5), "{}", out[2]);
    }

    #[test]
    fn provenance_places_parameters_where_probing_finds_them() {
        // Every combination of the five TensorFlow masks over three entries (and OpenVINO mask
        // lists of the same bits), on ranks 1 to 4, begin/end elements a mix of expressions,
        // constants and unknowns: the decoder's provenance places each expression on the entry
        // the probing oracle finds. Combinations the decoder refuses are skipped.
        let x = |i: usize| Dim::symbol(&format!("x{i}"));
        let lists: [Vec<Dim>; 3] = [
            (0..3).map(x).collect(),
            vec![x(0), Dim::known(2), Dim::unknown()],
            vec![
                Dim::known(-1),
                Dim::unknown_bounded(-4, Some(9)),
                x(2).neg(),
            ],
        ];
        let mut checked = 0;
        for bits in 0u32..1 << 15 {
            let m = |k: u32| i64::from((bits >> (3 * k)) & 7);
            let masks = TfMasks {
                begin: m(0),
                end: m(1),
                ellipsis: m(2),
                new_axis: m(3),
                shrink: m(4),
            };
            // A sample of the combinations (all would take long in a debug build).
            if bits % 7 != 0 {
                continue;
            }
            for rank in 1..=4 {
                for flavour in [Flavour::Tf, Flavour::Ov] {
                    for (begin, end) in [(&lists[0], &lists[1]), (&lists[2], &lists[0])] {
                        let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
                            let mut spec =
                                StridedSliceSpec::from_tf_bits(&[0; 3], &[0; 3], None, masks);
                            spec.begin = b.to_vec();
                            spec.end = e.to_vec();
                            strided_slice_with_provenance(&spec, flavour, rank)
                        };
                        if placed(&decode, begin, end).is_ok() {
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 5000, "{checked}");
        // ONNX Slice: listed axes in any order, negative ones included.
        for axes in [&[0i64, 1, 2][..], &[2, 0, 1], &[-1, 0, -2], &[1, 2, 0]] {
            for rank in 3..=4 {
                let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
                    onnx_slice_with_provenance(b, e, Some(axes), None, rank, 13)
                };
                placed(&decode, &lists[0], &lists[2]).unwrap();
                placed(&decode, &lists[1], &lists[0]).unwrap();
            }
        }
    }

    #[test]
    fn negative_begins_and_ends_from_a_shape_are_exact() {
        // Issue 42, pattern B, by the ONNX Slice spec (positive step: starts and ends below 0
        // get the dim added, then clamp to [0, dim]; negative step: starts clamp to
        // [0, dim - 1], ends to [-1, dim - 1]).
        let seq = Dim::symbol("seq");
        let dims = [Dim::symbol("b"), Dim::known(4), seq.clone(), Dim::known(16)];
        // x[:, :, -seq:, :]: start -seq + seq = 0 for seq > 0, and 0 (clamped) for seq = 0;
        // end INT64_MAX clamps to seq: exactly seq.
        let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
            onnx_slice_with_provenance(b, e, Some(&[2]), None, 4, 13)
        };
        let (plan, params) = placed(&decode, &[seq.neg()], &[Dim::known(i64::MAX)]).unwrap();
        let out = resolve_dims_sym(&plan, &dims, Clamp::Ov, &params).unwrap();
        assert_eq!(out, dims, "{}", out[2]);
        // x[::-1] as exporters write it, x[-1 : -(N + 1) : -1] with N = Shape(x)[0]: start
        // -1 + N = N - 1, end -(N + 1) + N = -1 (clamped to [-1, N - 1]): N elements. For N = 0
        // both are -1 after clamping (start's [0, -1] is empty): 0 = N.
        let n = Dim::symbol("N");
        let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
            onnx_slice_with_provenance(b, e, Some(&[0]), Some(&[Some(-1)]), 1, 13)
        };
        let end = n.add_const(1).neg();
        let (plan, params) = placed(&decode, &[Dim::known(-1)], &[end]).unwrap();
        let out = resolve_dims_sym(&plan, std::slice::from_ref(&n), Clamp::Ov, &params).unwrap();
        assert_eq!(out, [n], "{}", out[0]);
    }

    #[test]
    fn end_of_unknown_sign_on_a_model_symbol_is_exact() {
        // OpenVINO Slice-8 x[2 : N - 5] on a dim N (a model's symbol, 0..2^31 - 1), by the
        // spec (a negative end gets N added, then begin and end clamp to [0, N]):
        // N <= 3: the begin is min(2, N), the end clamps to at most 1: 0 elements;
        // N = 4: end -1 + 4 = 3, begin 2: 1 element;
        // 5 <= N: the end N - 5 >= 0 as is: max(N - 5 - 2, 0) elements (0 for N = 5, 6).
        // (dims_props found N = 4 written 0: the bounds of a min of the two clamp readings
        // missed the point where one peaks, and the reading that holds at N = 4 was dropped.)
        let n = crate::semantics::dim::model_symbol("N");
        let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
            crate::semantics::decode::ov_slice8_with_provenance(b, e, None, None, 1)
        };
        let (plan, params) = placed(&decode, &[Dim::known(2)], &[n.add_const(-5)]).unwrap();
        let out = resolve_dims_sym(&plan, std::slice::from_ref(&n), Clamp::Ov, &params).unwrap();
        let want = |v: i64| if v == 4 { 1 } else { (v - 7).max(0) };
        let (lo, hi) = out[0].bounds();
        for v in (0..64).chain([1000, 65_537, i32::MAX as i64]) {
            let b: HashMap<String, i64> = [("N".to_string(), v)].into();
            assert_eq!(out[0].eval(&b), Some(want(v)), "N = {v}: {}", out[0]);
            assert!(lo.is_none_or(|l| l <= want(v)) && hi.is_none_or(|h| want(v) <= h));
        }
    }

    #[test]
    fn bounds_of_a_sum_with_a_floor_hold_between_breakpoints() {
        // N - 2*floor(N/2) is N mod 2: 0 at even N, 1 at odd N (0 at both ends of 0..100, so
        // evaluating at the ends only gave 0..0, and N - 2*floor(N/2) "was" 0).
        let n = Dim::symbol_bounded("N", 0, Some(100));
        let odd = n.sub(&n.div_floor(2).mul_const(2));
        let (lo, hi) = odd.bounds();
        assert!(
            lo.is_none_or(|l| l <= 0) && hi.is_none_or(|h| h >= 1),
            "{lo:?}..{hi:?}"
        );
        // min(2147483649*floor(N/2), N) at N = 1 is min(0, 1) = 0: not N.
        let m = n.div_floor(2).mul_const(2_147_483_649).min(&n);
        let b: HashMap<String, i64> = [("N".to_string(), 1)].into();
        assert_eq!(m.eval(&b), Some(0), "{m}");
    }

    #[test]
    fn unknown_begins_and_ends_keep_what_their_bounds_say() {
        // A value element computed from an unknown dim is unknown but `>= 0`. OpenVINO Slice-8
        // x[:, ?:1000000000] on `?`: at most 1e9 - 0 elements (tf2onnx's `x[:, T // 2:]`).
        let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
            crate::semantics::decode::ov_slice8_with_provenance(b, e, None, None, 2)
        };
        let (plan, params) = placed(
            &decode,
            &[Dim::known(0), Dim::unknown()],
            &[Dim::known(1_000_000_000), Dim::known(1_000_000_000)],
        )
        .unwrap();
        let dims = [Dim::unknown(), Dim::unknown()];
        let out = resolve_dims_sym(&plan, &dims, Clamp::Ov, &params).unwrap();
        assert_eq!(out[1].to_string(), "0..1000000000");
        // x[:, :?] on `?` (the end unknown and >= 0): nothing bounds it; no vacuous
        // `0..9223372036854775807` either.
        let (plan, params) = placed(
            &decode,
            &[Dim::known(0), Dim::known(0)],
            &[Dim::known(i64::MAX), Dim::unknown()],
        )
        .unwrap();
        let out = resolve_dims_sym(&plan, &dims, Clamp::Ov, &params).unwrap();
        assert_eq!(out[1], Dim::unknown(), "{}", out[1]);
    }

    #[test]
    fn unknown_begins_and_ends_with_bounds_give_the_exact_interval() {
        // Issue 42, pattern E: a begin and an end known only by their bounds (OpenVINO's
        // `evaluate_lower/upper` of `ShapeOf(x) - c`), on a known dim or an interval dim: the
        // output is exactly the interval of the lengths over every begin, end and dim in their
        // bounds (brute force through the concrete rule), for both clamping rules.
        let vals = [
            (-8, -3),
            (-5, 4),
            (-1, 0),
            (0, 0),
            (0, 6),
            (2, 9),
            (-9, 9),
            (3, 3),
        ];
        let dims = [(0, 0), (3, 3), (7, 7), (0, 5), (2, 8), (6, 9)];
        for &(bl, bh) in &vals {
            for &(el, eh) in &vals {
                for &(dl, dh) in &dims {
                    for step in [1i64, 2, 3, -1, -2, -3] {
                        for clamp in [Clamp::Ov, Clamp::Tf] {
                            let (mut lo, mut hi) = (u64::MAX, 0);
                            for d in dl..=dh {
                                for b in bl..=bh {
                                    for e in el..=eh {
                                        let (_, len) = range_concrete(
                                            d as i128,
                                            Bound::Index(b),
                                            Bound::Index(e),
                                            step,
                                            clamp,
                                        )
                                        .unwrap();
                                        lo = lo.min(len as u64);
                                        hi = hi.max(len as u64);
                                    }
                                }
                            }
                            let p =
                                |l: i64, h: i64| SymBound::Index(Dim::unknown_bounded(l, Some(h)));
                            let d = Dim::unknown_bounded(dl, Some(dh));
                            let got = range_dim_sym(&d, &p(bl, bh), &p(el, eh), Some(step), clamp);
                            assert_eq!(
                                got.bounds(),
                                (Some(lo as i64), Some(hi as i64)),
                                "d {dl}..{dh} b {bl}..{bh} e {el}..{eh} step {step} {clamp:?}: {got}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn unknown_dims_get_exact_intervals() {
        // OpenVINO type_prop: x[2:8] on `?` is 0..6; x[-7:] on `?` is 0..7.
        let p = onnx_slice(&[Some(2)], &[Some(8)], None, None, 1, 13).unwrap();
        let out = resolve_dims(&p, &[Dim::unknown()], Clamp::Ov).unwrap();
        assert_eq!(out[0].to_string(), "0..6");
        let p = onnx_slice(&[Some(-7)], &[Some(i64::MAX)], None, None, 1, 13).unwrap();
        let out = resolve_dims(&p, &[Dim::unknown()], Clamp::Ov).unwrap();
        assert_eq!(out[0].to_string(), "0..7");
        let out = resolve_dims(&p, &[Dim::unknown_bounded(20, None)], Clamp::Ov).unwrap();
        assert_eq!(out[0].to_string(), "7");
    }
}
