//! Algebra of slices for pass `simplify`, pure: a slice of a slice as one plan ([`compose`]),
//! whether a plan selects its whole input ([`is_identity`]), whether slices of one source
//! along one axis are disjoint contiguous pieces of it ([`split_pieces`], a `Split` /
//! `VariadicSplit`), and a slice of a concatenation that stays within one input
//! ([`within_concat`]).
//!
//! Every answer is exact or refused with a [`Refusal`]. Slices act on each input axis on its
//! own, so each decision is made axis by axis on a 1-D selection: `(start, step, len)` of the
//! axis as a function of its size `d`.
//!
//! - On an axis of known size the answer is computed from the resolved ranges (the values
//!   written are the exact positions, the same under every clamping rule).
//! - On an axis of symbolic size (a symbol or an unknown with bounds `[lo, hi]`) a candidate is
//!   built from the selection at a large size and then *proved*: both sides are evaluated at
//!   every size of `[lo, min(hi, T + 3P + 3)]` where every breakpoint of either side (a clamp,
//!   the sign switch of a length) lies below `T` and `P` is the period of their floor
//!   divisions (the product of the steps). Beyond `T` each side's start and length are, on each
//!   residue class modulo `P`, affine in `d`; three agreeing points per class make them agree
//!   everywhere (a length that is 0 at two points of a class is 0 on all of it, so the starts
//!   are compared at two points at least). Constants beyond `hi + 1` are first saturated to
//!   `±(hi + 1)`, which changes nothing for sizes up to `hi`. When the sizes to check exceed
//!   [`PROOF_BUDGET`], the answer is a refusal.

use super::plan::{AxisPlan, Bound, SlicePlan};
use super::resolve::Clamp;
use super::Dim;

/// Most sizes evaluated to prove one symbolic axis (per candidate).
pub const PROOF_BUDGET: u64 = 1 << 16;

/// Why a composition, identity, split or forward was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A begin, end, step or shrink index is not constant.
    #[error("a begin, end, step or shrink index is not constant")]
    NotConstant,
    /// The plans or dims do not fit each other.
    #[error("plans and dims do not fit: {0}")]
    Mismatch(String),
    /// An OpenVINO validity check (`check`) on an axis whose size is not known.
    #[error("axis {axis}: an OpenVINO index check on a symbolic axis")]
    SymbolicCheck { axis: usize },
    /// The slices fail on these dims (out-of-range shrink, a failed check).
    #[error("the slice fails on these dims: {0}")]
    Invalid(String),
    /// An outer range that empties a new axis of the inner slice (a plan cannot say it).
    #[error("an empty range on a new axis")]
    EmptyNewAxis,
    /// No composed plan is exact for every size of a symbolic axis.
    #[error("axis {axis}: no single slice is exact for every size in {lo}..{hi}")]
    NotExact { axis: usize, lo: i64, hi: i64 },
    /// Proving the axis would take more than [`PROOF_BUDGET`] sizes.
    #[error("axis {axis}: constants too large to prove the rewrite for every size")]
    ProofTooLarge { axis: usize },
    /// Not the shape of rewrite asked for.
    #[error("{0}")]
    NotApplicable(String),
}

/// One axis entry with constant parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ax {
    Range {
        b: Bound,
        e: Bound,
        s: i64,
        check: Option<i64>,
    },
    Shrink {
        i: i64,
        check: Option<i64>,
    },
}

/// A 1-D selection: `(start, step, len)`, normalised (`len == 0`: `(0, 1, 0)`; `len == 1`:
/// step 1). `None`: the slice fails at this size.
type Sel = Option<(i128, i128, i128)>;

fn norm_sel(start: i128, step: i128, len: i128) -> (i128, i128, i128) {
    match len {
        0 => (0, 1, 0),
        1 => (start, 1, 1),
        _ => (start, step, len),
    }
}

/// `(start, len)` of a range on an axis of size `d` (the rule of `resolve`, on one axis;
/// cross-checked against `resolve_concrete` in the tests).
fn range1(d: i128, b: Bound, e: Bound, s: i64, clamp: Clamp) -> Option<(i128, i128)> {
    let idx = |v: Bound| match v {
        Bound::Index(v) => Some(Some(v as i128)),
        Bound::Edge => Some(None),
        Bound::Dynamic => None,
    };
    let (b, e, s) = (idx(b)?, idx(e)?, s as i128);
    let norm = |v: i128| if v < 0 { v + d } else { v };
    if s > 0 {
        let start = b.map_or(0, |v| norm(v).clamp(0, d));
        let stop = e.map_or(d, |v| norm(v).clamp(0, d));
        let len = if stop > start {
            (stop - start + s - 1) / s
        } else {
            0
        };
        Some((start, len))
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
        Some((start, len))
    }
}

fn in_range(i: i64, d: i128) -> bool {
    let v = if i < 0 { i as i128 + d } else { i as i128 };
    (0..d).contains(&v)
}

/// The selection of `ax` on an axis of size `d`.
fn eval1(ax: Ax, d: i128, clamp: Clamp) -> Sel {
    match ax {
        Ax::Range { b, e, s, check } => {
            if check.is_some_and(|c| !in_range(c, d)) {
                return None;
            }
            let (start, len) = range1(d, b, e, s, clamp)?;
            Some(norm_sel(start, s as i128, len))
        }
        Ax::Shrink { i, check } => {
            if check.is_some_and(|c| !in_range(c, d)) {
                return None;
            }
            if in_range(i, d) {
                let v = if i < 0 { i as i128 + d } else { i as i128 };
                Some((v, 1, 1))
            } else if clamp == Clamp::Ov && d > 0 {
                Some((if i < 0 { 0 } else { d - 1 }, 1, 1))
            } else {
                None
            }
        }
    }
}

/// The selection of `outer` applied to the selection of `inner` on an axis of size `d`.
fn eval_pair(inner: Ax, c1: Clamp, outer: Ax, c2: Clamp, d: i128) -> Sel {
    let (st1, s1, len1) = eval1(inner, d, c1)?;
    let (st2, s2, len2) = eval1(outer, len1, c2)?;
    Some(norm_sel(st1 + st2 * s1, s1 * s2, len2))
}

fn ax_of(a: &AxisPlan) -> Result<Option<Ax>, Refusal> {
    match *a {
        AxisPlan::NewAxis => Ok(None),
        AxisPlan::Range {
            begin,
            end,
            step,
            check,
            ..
        } => {
            let s = step.ok_or(Refusal::NotConstant)?;
            if begin == Bound::Dynamic || end == Bound::Dynamic {
                return Err(Refusal::NotConstant);
            }
            Ok(Some(Ax::Range {
                b: begin,
                e: end,
                s,
                check,
            }))
        }
        AxisPlan::Shrink { index, check, .. } => Ok(Some(Ax::Shrink {
            i: index.ok_or(Refusal::NotConstant)?,
            check,
        })),
    }
}

fn to_entry(ax: Ax, axis: usize) -> AxisPlan {
    match ax {
        Ax::Range { b, e, s, check } => AxisPlan::Range {
            axis,
            begin: b,
            end: e,
            step: Some(s),
            check,
        },
        Ax::Shrink { i, check } => AxisPlan::Shrink {
            axis,
            index: Some(i),
            check,
        },
    }
}

/// The size of an axis: known, or the bounds `[lo, hi]` of a symbolic or unknown size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Size {
    Known(i128),
    Sym { lo: i64, hi: i64 },
}

fn size_of(d: &Dim) -> Size {
    match d.as_known() {
        Some(v) => Size::Known(v.max(0) as i128),
        None => {
            let (lo, hi) = d.bounds();
            let lo = lo.unwrap_or(0).max(0);
            let hi = hi.unwrap_or(i64::MAX).max(lo);
            if lo == hi {
                Size::Known(lo as i128)
            } else {
                Size::Sym { lo, hi }
            }
        }
    }
}

/// `ax` with its constants made small where that changes nothing for sizes up to `hi`:
/// constants saturated to `±(hi + 1)`, and a bound past every size the axis may take written
/// as the edge it acts as (or the whole range as an empty one when it selects nothing at any
/// size). Only what is left needs proving.
fn saturate(ax: Ax, hi: i64) -> Ax {
    let lim = hi.saturating_add(1);
    let sat = |v: i64| v.clamp(-lim, lim);
    let sb = |b: Bound| match b {
        Bound::Index(v) => Bound::Index(sat(v)),
        o => o,
    };
    let empty = Ax::Range {
        b: Bound::Index(0),
        e: Bound::Index(0),
        s: 1,
        check: None,
    };
    let at_least = |b: Bound, m: i64| matches!(b, Bound::Index(v) if v >= m);
    let at_most = |b: Bound, m: i64| matches!(b, Bound::Index(v) if v <= m);
    match ax {
        Ax::Range { b, e, s, check } => {
            let (mut b, mut e) = (sb(b), sb(e));
            let check = check.map(sat);
            if s > 0 {
                if at_least(b, hi) && check.is_none() {
                    return empty;
                }
                if at_most(b, -hi) {
                    b = Bound::Edge;
                }
                if at_least(e, hi) {
                    e = Bound::Edge;
                }
                if at_most(e, -hi) {
                    e = Bound::Index(0);
                }
            } else {
                if at_least(b, hi.saturating_sub(1)) {
                    b = Bound::Edge;
                }
                if at_least(e, hi.saturating_sub(1)) && check.is_none() {
                    return empty;
                }
                if at_most(e, -lim) {
                    e = Bound::Edge;
                }
            }
            Ax::Range { b, e, s, check }
        }
        Ax::Shrink { i, check } => Ax::Shrink {
            i: sat(i),
            check: check.map(sat),
        },
    }
}

/// The largest constant of `ax` in absolute value.
fn constant_of(ax: Ax) -> i128 {
    let b = |v: Bound| match v {
        Bound::Index(v) => (v as i128).abs(),
        _ => 0,
    };
    match ax {
        Ax::Range { b: x, e, check, .. } => {
            b(x).max(b(e)).max(check.map_or(0, |c| (c as i128).abs()))
        }
        Ax::Shrink { i, check } => (i as i128)
            .abs()
            .max(check.map_or(0, |c| (c as i128).abs())),
    }
}

/// Whether the index checks of `ax` are only a shrink's own index (OpenVINO's compile-time
/// check of a shrink: out of range is an error), which the proof handles.
fn plain_checks(ax: Ax) -> bool {
    match ax {
        Ax::Range { check, .. } => check.is_none(),
        Ax::Shrink { i, check } => check.is_none() || check == Some(i),
    }
}

/// Whether a shrink fails out of range (rather than clamping).
fn strict(ax: Ax, clamp: Clamp) -> bool {
    match ax {
        Ax::Shrink { i, check } => clamp == Clamp::Tf || check == Some(i),
        Ax::Range { .. } => false,
    }
}

fn step_of(ax: Ax) -> i128 {
    match ax {
        Ax::Range { s, .. } => (s as i128).abs().max(1),
        Ax::Shrink { .. } => 1,
    }
}

/// Sizes to check for a symbolic axis: `[lo, min(hi, max(lo, T) + 3P + 3)]` with `T` from the
/// largest constant `c` and the inner step `s1` (see the module doc), `P` the period; `None`
/// when more than [`PROOF_BUDGET`].
fn proof_range(lo: i64, hi: i64, c: i128, s1: i128, p: i128) -> Option<(i128, i128)> {
    let c = c + 2;
    let t = (s1 + 1).checked_mul(4 * c + 4)?.checked_add(2 * c)?;
    let top = (lo as i128)
        .max(t)
        .checked_add(p.checked_mul(3)?.checked_add(3)?)?;
    let top = top.min(hi as i128);
    (top - (lo as i128) < PROOF_BUDGET as i128).then_some((lo as i128, top))
}

/// Whether `f` and `g` agree at every size of `range`.
fn agree(range: (i128, i128), f: impl Fn(i128) -> Sel, g: impl Fn(i128) -> Sel) -> bool {
    (range.0..=range.1).all(|d| f(d) == g(d))
}

/// A position at size `d` as a bound: absolute when it does not move with `d`, else from the
/// end. Candidates for a bound of the composed range.
fn position_bounds(pos: i128, at: i128, out: &mut Vec<Bound>) {
    if let Ok(v) = i64::try_from(pos) {
        if v >= 0 {
            out.push(Bound::Index(v));
        }
    }
    if let Ok(r) = i64::try_from(pos - at) {
        if r < 0 {
            out.push(Bound::Index(r));
        }
    }
}

/// Candidate composed entries for a pair whose selection at size `at` is `sel` (kind of the
/// outer entry: `shrink`).
fn candidates(
    sel: (i128, i128, i128),
    at: i128,
    shrink: bool,
    inner: Ax,
    step: i128,
    target: Clamp,
) -> Vec<Ax> {
    let (start, _, len) = sel;
    let mut out = Vec::new();
    if shrink {
        let mut b = Vec::new();
        position_bounds(start, at, &mut b);
        for v in b {
            if let Bound::Index(i) = v {
                // OpenVINO: a StridedSlice shrink decodes with its own index as check (strict);
                // TensorFlow: strict without one.
                if target == Clamp::Ov {
                    out.push(Ax::Shrink { i, check: Some(i) });
                } else {
                    out.push(Ax::Shrink { i, check: None });
                }
            }
        }
        return out;
    }
    let Ok(s) = i64::try_from(step) else {
        return out;
    };
    if len == 0 {
        out.push(Ax::Range {
            b: Bound::Index(0),
            e: Bound::Index(0),
            s: 1,
            check: None,
        });
    }
    let mut begins = vec![Bound::Edge];
    position_bounds(start, at, &mut begins);
    let mut ends = vec![Bound::Edge];
    if len > 0 {
        let last = start + (len - 1) * step;
        let after = if step > 0 { last + 1 } else { last - 1 };
        position_bounds(after, at, &mut ends);
        position_bounds(start + len * step, at, &mut ends);
    }
    if let Ax::Range { b, e, .. } = inner {
        begins.push(b);
        ends.push(e);
    }
    begins.dedup();
    ends.dedup();
    for &b in &begins {
        for &e in &ends {
            let ax = Ax::Range {
                b,
                e,
                s,
                check: None,
            };
            if !out.contains(&ax) {
                out.push(ax);
            }
        }
    }
    // A one-element or empty selection may also be written with step 1.
    if len <= 1 && s != 1 {
        let more: Vec<Ax> = out
            .iter()
            .filter_map(|a| match *a {
                Ax::Range { b, e, check, .. } if step > 0 => Some(Ax::Range { b, e, s: 1, check }),
                _ => None,
            })
            .collect();
        out.extend(more);
    }
    out
}

/// The exact entry for `sel` on an axis of known size (`shrink`: a shrink entry).
fn exact_entry(sel: (i128, i128, i128), shrink: bool) -> Result<Ax, Refusal> {
    let (start, step, len) = sel;
    let big = || Refusal::Invalid("a position does not fit i64".into());
    if shrink {
        return Ok(Ax::Shrink {
            i: i64::try_from(start).map_err(|_| big())?,
            check: None,
        });
    }
    if len == 0 {
        return Ok(Ax::Range {
            b: Bound::Index(0),
            e: Bound::Index(0),
            s: 1,
            check: None,
        });
    }
    let last = start + (len - 1) * step;
    let e = if step > 0 {
        Bound::Index(i64::try_from(last + 1).map_err(|_| big())?)
    } else if last == 0 {
        Bound::Edge
    } else {
        Bound::Index(i64::try_from(last - 1).map_err(|_| big())?)
    };
    Ok(Ax::Range {
        b: Bound::Index(i64::try_from(start).map_err(|_| big())?),
        e,
        s: i64::try_from(step).map_err(|_| big())?,
        check: None,
    })
}

/// `outer` applied to the selection of `inner` on input axis `axis` of size `d`, as one entry
/// read with `target` clamping.
#[allow(clippy::too_many_arguments)]
fn compose_axis(
    axis: usize,
    d: &Dim,
    inner: Ax,
    c1: Clamp,
    outer: Ax,
    c2: Clamp,
    target: Clamp,
) -> Result<Ax, Refusal> {
    let shrink = matches!(outer, Ax::Shrink { .. });
    match size_of(d) {
        Size::Known(n) => {
            let sel = eval_pair(inner, c1, outer, c2, n)
                .ok_or_else(|| Refusal::Invalid(format!("axis {axis} of size {n}")))?;
            // The whole axis in order is written as such (no positions to read).
            let ax = if !shrink && n > 0 && sel == norm_sel(0, 1, n) {
                Ax::Range {
                    b: Bound::Edge,
                    e: Bound::Edge,
                    s: 1,
                    check: None,
                }
            } else {
                exact_entry(sel, shrink)?
            };
            // The exact positions read the same under every clamping rule; checked anyway.
            if eval1(ax, n, target) != Some(sel) {
                return Err(Refusal::Invalid(format!(
                    "internal: axis {axis}: the exact entry does not select the same"
                )));
            }
            Ok(ax)
        }
        Size::Sym { lo, hi } => {
            if !plain_checks(inner) || !plain_checks(outer) {
                return Err(Refusal::SymbolicCheck { axis });
            }
            let (inner, outer) = (saturate(inner, hi), saturate(outer, hi));
            let s1 = step_of(inner);
            let p = s1 * step_of(outer);
            let pair = |n: i128| eval_pair(inner, c1, outer, c2, n);
            // A large size for the candidates: past every breakpoint when the range allows.
            let c0 = constant_of(inner).max(constant_of(outer));
            let t = (s1 + 1) * (4 * (c0 + 2) + 4) + 2 * (c0 + 2);
            let at = (lo as i128).max(t).min(hi as i128);
            let Some(sel) = pair(at) else {
                return Err(Refusal::Invalid(format!("axis {axis} at size {at}")));
            };
            let step = match (inner, outer) {
                (Ax::Range { s: a, .. }, Ax::Range { s: b, .. }) => a as i128 * b as i128,
                _ => 1,
            };
            for cand in candidates(sel, at, shrink, inner, step, target) {
                let c = c0.max(constant_of(cand));
                let range = proof_range(lo, hi, c, s1, p).ok_or(Refusal::ProofTooLarge { axis })?;
                if agree(range, pair, |n| eval1(cand, n, target)) {
                    return Ok(cand);
                }
            }
            Err(Refusal::NotExact { axis, lo, hi })
        }
    }
}

/// One output axis of the inner plan: a new axis, or a range over input axis `axis`.
#[derive(Clone, Copy)]
enum InnerOut {
    New,
    Range(usize, Ax),
}

/// The slice `outer` of the output of the slice `inner` (of an input of `dims`) as one plan:
/// exact positions on axes of known size, and on symbolic axes a plan proved exact for every
/// size the axis may take (see the module doc). `c1`/`c2` are the clamping rules of the inner
/// and outer op, `target` that of the op the result will be written as.
pub fn compose(
    inner: &SlicePlan,
    c1: Clamp,
    outer: &SlicePlan,
    c2: Clamp,
    dims: &[Dim],
    target: Clamp,
) -> Result<SlicePlan, Refusal> {
    if inner.input_rank != dims.len() {
        return Err(Refusal::Mismatch(format!(
            "inner plan of rank {} on {} dims",
            inner.input_rank,
            dims.len()
        )));
    }
    if outer.input_rank != inner.output_rank() {
        return Err(Refusal::Mismatch(format!(
            "outer plan of rank {} on an inner output of rank {}",
            outer.input_rank,
            inner.output_rank()
        )));
    }
    // The inner output axes, and its shrinks (input axis, entry).
    let mut outs: Vec<InnerOut> = Vec::new();
    let mut shrinks: Vec<(usize, Ax)> = Vec::new();
    let mut next_axis = 0usize;
    for a in &inner.axes {
        match a {
            AxisPlan::NewAxis => outs.push(InnerOut::New),
            AxisPlan::Range { axis, .. } | AxisPlan::Shrink { axis, .. } => {
                if *axis != next_axis || *axis >= dims.len() {
                    return Err(Refusal::Mismatch("inner plan axes out of order".into()));
                }
                next_axis += 1;
                let ax = ax_of(a)?.ok_or(Refusal::NotConstant)?;
                if let AxisPlan::Shrink { .. } = a {
                    let check = |ax: Ax| match size_of(&dims[*axis]) {
                        Size::Known(n) => eval1(ax, n, c1)
                            .map(|_| ())
                            .ok_or_else(|| Refusal::Invalid(format!("shrink on axis {axis}"))),
                        Size::Sym { .. } if plain_checks(ax) => Ok(()),
                        Size::Sym { .. } => Err(Refusal::SymbolicCheck { axis: *axis }),
                    };
                    check(ax)?;
                    shrinks.push((*axis, ax));
                } else {
                    outs.push(InnerOut::Range(*axis, ax));
                }
            }
        }
    }
    if next_axis != dims.len() {
        return Err(Refusal::Mismatch(
            "inner plan does not cover its input".into(),
        ));
    }
    let mut axes: Vec<AxisPlan> = Vec::with_capacity(outer.axes.len() + shrinks.len());
    let mut pending = shrinks.into_iter().peekable();
    // Inner shrinks go before the first entry on a later input axis; a shrink of a symbolic
    // axis keeps its index (it is the same entry), one of a known axis is made exact.
    let shrink_entry = |axis: usize, ax: Ax| -> Result<AxisPlan, Refusal> {
        match (size_of(&dims[axis]), ax) {
            (Size::Known(n), _) => {
                let sel =
                    eval1(ax, n, c1).ok_or_else(|| Refusal::Invalid(format!("axis {axis}")))?;
                Ok(to_entry(exact_entry(sel, true)?, axis))
            }
            // The same entry: the same answer, also where the index is out of range, when the
            // clamping rule is the same; else only if it is in range at every size. A strict
            // shrink (an error out of range: TensorFlow's, or OpenVINO's with its own index as
            // check) is written strict for the target.
            (Size::Sym { lo, .. }, Ax::Shrink { i, check })
                if c1 == target || in_range(i, lo as i128) || strict(ax, c1) =>
            {
                let check = match (strict(ax, c1), target) {
                    (true, Clamp::Ov) => Some(i),
                    (true, Clamp::Tf) => None,
                    (false, _) => check,
                };
                Ok(to_entry(Ax::Shrink { i, check }, axis))
            }
            (Size::Sym { lo, hi }, _) => Err(Refusal::NotExact { axis, lo, hi }),
        }
    };
    let mut seen = 0usize;
    for a in &outer.axes {
        let ax2 = ax_of(a)?;
        let Some(ax2) = ax2 else {
            axes.push(AxisPlan::NewAxis);
            continue;
        };
        let j = match a {
            AxisPlan::Range { axis, .. } | AxisPlan::Shrink { axis, .. } => *axis,
            AxisPlan::NewAxis => unreachable!("handled above"),
        };
        if j != seen || j >= outs.len() {
            return Err(Refusal::Mismatch("outer plan axes out of order".into()));
        }
        seen += 1;
        match outs[j] {
            InnerOut::New => match eval1(ax2, 1, c2) {
                None => return Err(Refusal::Invalid("outer entry on a new axis".into())),
                Some((_, _, 0)) => return Err(Refusal::EmptyNewAxis),
                Some(_) => {
                    if matches!(ax2, Ax::Range { .. }) {
                        axes.push(AxisPlan::NewAxis);
                    }
                }
            },
            InnerOut::Range(axis, ax1) => {
                while let Some(&(sa, sx)) = pending.peek() {
                    if sa > axis {
                        break;
                    }
                    axes.push(shrink_entry(sa, sx)?);
                    pending.next();
                }
                let ax = compose_axis(axis, &dims[axis], ax1, c1, ax2, c2, target)?;
                axes.push(to_entry(ax, axis));
            }
        }
    }
    for (sa, sx) in pending {
        axes.push(shrink_entry(sa, sx)?);
    }
    Ok(SlicePlan {
        input_rank: inner.input_rank,
        axes,
    })
}

/// Whether `plan` (read with `clamp`) gives its input back unchanged for every size its dims
/// may take: no new or shrunk axis, and every range the whole axis in order.
pub fn is_identity(plan: &SlicePlan, dims: &[Dim], clamp: Clamp) -> bool {
    if plan.input_rank != dims.len() || plan.axes.len() != dims.len() {
        return false;
    }
    plan.axes.iter().enumerate().all(|(k, a)| match ax_of(a) {
        Ok(Some(ax @ Ax::Range { .. })) => {
            matches!(a, AxisPlan::Range { axis, .. } if *axis == k)
                && full_axis(k, ax, &dims[k], clamp)
        }
        _ => false,
    })
}

/// Whether the range `ax` selects all of an axis of size `d`, in order.
fn full_axis(axis: usize, ax: Ax, d: &Dim, clamp: Clamp) -> bool {
    let whole = |n: i128| Some(norm_sel(0, 1, n));
    match size_of(d) {
        Size::Known(n) => eval1(ax, n, clamp) == whole(n),
        Size::Sym { lo, hi } => {
            let ax = saturate(ax, hi);
            let _ = axis;
            match proof_range(lo, hi, constant_of(ax), 1, step_of(ax)) {
                Some(r) => agree(r, |n| eval1(ax, n, clamp), whole),
                None => false,
            }
        }
    }
}

/// The size of one piece of a split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PieceSize {
    /// A known size.
    Known(u64),
    /// What the other pieces leave of the axis (at most one piece; `-1` in `VariadicSplit`).
    Rest,
}

/// Slices of one source along one axis as the pieces of one split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The input axis split.
    pub axis: usize,
    /// The pieces in order along the axis, covering it; gaps between slices are pieces too.
    pub sizes: Vec<PieceSize>,
    /// Per slice (in the order given): the piece it is.
    pub piece_of: Vec<usize>,
}

/// The one axis a plan slices (every other entry the whole axis), and its entry.
fn sliced_axis(plan: &SlicePlan, dims: &[Dim], clamp: Clamp) -> Result<(usize, Ax), Refusal> {
    if plan.input_rank != dims.len() || plan.axes.len() != dims.len() {
        return Err(Refusal::NotApplicable(
            "a slice with new or shrunk axes".into(),
        ));
    }
    let mut found = None;
    for (k, a) in plan.axes.iter().enumerate() {
        let ax = ax_of(a)?.ok_or_else(|| Refusal::NotApplicable("a new axis".into()))?;
        if let Ax::Shrink { .. } = ax {
            return Err(Refusal::NotApplicable("a shrunk axis".into()));
        }
        if !full_axis(k, ax, &dims[k], clamp) {
            if found.is_some() {
                return Err(Refusal::NotApplicable(
                    "a slice of more than one axis".into(),
                ));
            }
            found = Some((k, ax));
        }
    }
    found.ok_or_else(|| Refusal::NotApplicable("a slice of no axis".into()))
}

/// The layout of pieces at size `n`: per slice its `(start, len)`; `None` when a slice is not
/// a step-1 run or fails.
fn runs_at(axs: &[Ax], n: i128, clamp: Clamp) -> Option<Vec<(i128, i128)>> {
    axs.iter()
        .map(|&ax| match eval1(ax, n, clamp)? {
            (st, 1, len) => Some((st, len)),
            _ => None,
        })
        .collect()
}

/// Pieces (sizes; per slice its piece) of step-1 runs on an axis of size `n`: sorted by
/// start, disjoint and non-empty; gaps become pieces. `None` when two overlap or one is empty.
fn layout(runs: &[(i128, i128)], n: i128) -> Option<(Vec<i128>, Vec<usize>)> {
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&k| runs[k].0);
    let mut sizes = Vec::new();
    let mut piece_of = vec![0usize; runs.len()];
    let mut at = 0i128;
    for k in order {
        let (st, len) = runs[k];
        if len == 0 || st < at {
            return None;
        }
        if st > at {
            sizes.push(st - at);
        }
        piece_of[k] = sizes.len();
        sizes.push(len);
        at = st + len;
    }
    if at < n {
        sizes.push(n - at);
    }
    Some((sizes, piece_of))
}

/// Whether the slices `plans` of one source of `dims` (each read with `clamp`) are disjoint
/// step-1 runs along one axis, and the split they make of it: on a known size, known piece
/// sizes; on a symbolic size, known sizes and at most one [`PieceSize::Rest`], proved for every
/// size of the axis. At least two slices.
pub fn split_pieces(plans: &[&SlicePlan], dims: &[Dim], clamp: Clamp) -> Result<Split, Refusal> {
    if plans.len() < 2 {
        return Err(Refusal::NotApplicable("fewer than two slices".into()));
    }
    let mut axis = None;
    let mut axs = Vec::with_capacity(plans.len());
    for p in plans {
        let (k, ax) = sliced_axis(p, dims, clamp)?;
        if axis.is_some_and(|a| a != k) {
            return Err(Refusal::NotApplicable("slices along different axes".into()));
        }
        axis = Some(k);
        axs.push(ax);
    }
    let axis = axis.ok_or_else(|| Refusal::NotApplicable("no slice".into()))?;
    let overlap = || Refusal::NotApplicable("slices overlap, are empty or not step-1 runs".into());
    match size_of(&dims[axis]) {
        Size::Known(n) => {
            let runs = runs_at(&axs, n, clamp).ok_or_else(overlap)?;
            let (sizes, piece_of) = layout(&runs, n).ok_or_else(overlap)?;
            Ok(Split {
                axis,
                sizes: sizes.iter().map(|&s| PieceSize::Known(s as u64)).collect(),
                piece_of,
            })
        }
        Size::Sym { lo, hi } => {
            let axs: Vec<Ax> = axs.iter().map(|&a| saturate(a, hi)).collect();
            let c = axs.iter().map(|&a| constant_of(a)).max().unwrap_or(0);
            let range = proof_range(lo, hi, c, 1, 1).ok_or(Refusal::ProofTooLarge { axis })?;
            // The layout at the two largest sizes checked: a piece that grows with the axis
            // is the rest.
            let (a, b) = (range.1, range.1 - 1);
            if b < range.0 {
                return Err(Refusal::NotExact { axis, lo, hi });
            }
            let la = runs_at(&axs, a, clamp)
                .and_then(|r| layout(&r, a))
                .ok_or_else(overlap)?;
            let lb = runs_at(&axs, b, clamp)
                .and_then(|r| layout(&r, b))
                .ok_or_else(overlap)?;
            if la.0.len() != lb.0.len() || la.1 != lb.1 {
                return Err(Refusal::NotExact { axis, lo, hi });
            }
            let mut sizes = Vec::with_capacity(la.0.len());
            for (&x, &y) in la.0.iter().zip(&lb.0) {
                sizes.push(match x - y {
                    0 => PieceSize::Known(x as u64),
                    1 => PieceSize::Rest,
                    _ => return Err(Refusal::NotExact { axis, lo, hi }),
                });
            }
            if sizes.iter().filter(|s| **s == PieceSize::Rest).count() > 1 {
                return Err(Refusal::NotExact { axis, lo, hi });
            }
            let split = Split {
                axis,
                sizes,
                piece_of: la.1,
            };
            let ok = (range.0..=range.1).all(|n| {
                let want = split_runs(&split, n);
                let got = runs_at(&axs, n, clamp);
                match (want, got) {
                    (Some(w), Some(g)) => split
                        .piece_of
                        .iter()
                        .zip(&g)
                        .all(|(&p, &(st, len))| norm_run(w[p]) == norm_run((st, len))),
                    _ => false,
                }
            });
            if ok {
                Ok(split)
            } else {
                Err(Refusal::NotExact { axis, lo, hi })
            }
        }
    }
}

fn norm_run((st, len): (i128, i128)) -> (i128, i128) {
    if len == 0 {
        (0, 0)
    } else {
        (st, len)
    }
}

/// The `(start, len)` of every piece of `split` on an axis of size `n` (`None`: the known
/// sizes exceed `n`, the split fails).
pub fn split_runs(split: &Split, n: i128) -> Option<Vec<(i128, i128)>> {
    let known: i128 = split
        .sizes
        .iter()
        .map(|s| match s {
            PieceSize::Known(v) => *v as i128,
            PieceSize::Rest => 0,
        })
        .sum();
    let has_rest = split.sizes.contains(&PieceSize::Rest);
    if known > n || (!has_rest && known != n) {
        return None;
    }
    let mut at = 0;
    Some(
        split
            .sizes
            .iter()
            .map(|s| {
                let len = match s {
                    PieceSize::Known(v) => *v as i128,
                    PieceSize::Rest => n - known,
                };
                let r = (at, len);
                at += len;
                r
            })
            .collect(),
    )
}

/// A slice `plan` of the concatenation along `axis` of inputs whose sizes on that axis are
/// `sizes` (the other dims as in `dims`, the concatenation's): when the slice selects within
/// one input, that input and the plan of the same slice of it. Known sizes: exact positions;
/// symbolic sizes: only a slice of the first input with non-negative constant bounds and a
/// positive step that ends within the least size the first input may have.
pub fn within_concat(
    plan: &SlicePlan,
    axis: usize,
    sizes: &[Dim],
    dims: &[Dim],
    clamp: Clamp,
) -> Result<(usize, SlicePlan), Refusal> {
    if plan.input_rank != dims.len() || axis >= dims.len() || sizes.is_empty() {
        return Err(Refusal::Mismatch("concat axis or rank".into()));
    }
    let k = plan
        .axes
        .iter()
        .position(|a| matches!(a, AxisPlan::Range { axis: x, .. } | AxisPlan::Shrink { axis: x, .. } if *x == axis))
        .ok_or_else(|| Refusal::Mismatch("plan misses the concat axis".into()))?;
    let ax = ax_of(&plan.axes[k])?.ok_or(Refusal::NotConstant)?;
    let known: Option<Vec<i128>> = sizes
        .iter()
        .map(|d| match size_of(d) {
            Size::Known(n) => Some(n),
            Size::Sym { .. } => None,
        })
        .collect();
    let mut out = plan.clone();
    if let Some(known) = known {
        let n: i128 = known.iter().sum();
        let sel = eval1(ax, n, clamp).ok_or_else(|| Refusal::Invalid("concat axis".into()))?;
        let (start, step, len) = sel;
        if len == 0 {
            return Err(Refusal::NotApplicable("an empty slice".into()));
        }
        let last = start + (len - 1) * step;
        let (lo_i, hi_i) = (start.min(last), start.max(last));
        let mut off = 0;
        for (i, &m) in known.iter().enumerate() {
            if lo_i >= off && hi_i < off + m {
                let shifted = (start - off, step, len);
                let ax = exact_entry(shifted, matches!(ax, Ax::Shrink { .. }))?;
                if eval1(ax, m, clamp) != Some(shifted) {
                    return Err(Refusal::Invalid("internal: shifted entry".into()));
                }
                out.axes[k] = to_entry(ax, axis);
                return Ok((i, out));
            }
            off += m;
        }
        return Err(Refusal::NotApplicable(
            "the slice spans more than one input".into(),
        ));
    }
    match ax {
        Ax::Range {
            b,
            e: Bound::Index(e),
            s,
            check: None,
        } if s > 0
            && e >= 0
            && matches!(b, Bound::Edge | Bound::Index(0..))
            && sizes[0].bounds().0.is_some_and(|lo| e <= lo) =>
        {
            Ok((0, out))
        }
        _ => Err(Refusal::NotApplicable(
            "symbolic concat sizes: only a slice within the first input".into(),
        )),
    }
}

/// The constant inputs of a `Slice` (ONNX 10+, OpenVINO Slice-8) for a plan of ranges only:
/// `(starts, ends, axes, steps)`, an axis listed only when it is not the whole axis read
/// forward (`:`; at least one is listed). The edges are `0` / `INT64_MAX` forward and
/// `INT64_MAX` / `INT64_MIN` in reverse. `None` for a plan with a new or shrunk axis or a
/// value that is not constant.
pub type SliceParams = (Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>);

/// See [`SliceParams`].
pub fn slice_params(plan: &SlicePlan) -> Option<SliceParams> {
    let mut p: SliceParams = Default::default();
    for a in &plan.axes {
        let AxisPlan::Range {
            axis,
            begin,
            end,
            step: Some(s),
            check: None,
        } = *a
        else {
            return None;
        };
        if begin == Bound::Edge && end == Bound::Edge && s == 1 {
            continue;
        }
        let v = |b: Bound, edge: i64| match b {
            Bound::Index(v) => Some(v),
            Bound::Edge => Some(edge),
            Bound::Dynamic => None,
        };
        let (eb, ee) = if s > 0 {
            (0, i64::MAX)
        } else {
            (i64::MAX, i64::MIN)
        };
        p.0.push(v(begin, eb)?);
        p.1.push(v(end, ee)?);
        p.2.push(i64::try_from(axis).ok()?);
        p.3.push(s);
    }
    if p.2.is_empty() {
        p = (vec![0], vec![i64::MAX], vec![0], vec![1]);
        if plan.input_rank == 0 {
            return None;
        }
    }
    Some(p)
}

/// A StridedSlice spec (one entry per plan entry, no ellipsis; masks as lists) for a constant
/// plan: an edge is a mask bit, a new axis a new-axis bit, a shrink a shrink bit with `end =
/// index + 1`. `None` for a non-constant plan or one with an index check.
pub fn strided_spec(plan: &SlicePlan) -> Option<super::StridedSliceSpec> {
    let mut spec = super::StridedSliceSpec::default();
    let mut strides = Vec::with_capacity(plan.axes.len());
    for a in &plan.axes {
        let (b, e, s, bm, em, na, sh) = match *a {
            AxisPlan::NewAxis => (0, 0, 1, false, false, true, false),
            AxisPlan::Shrink {
                index: Some(i),
                check,
                ..
            } if check.is_none() || check == Some(i) => {
                (i, i.saturating_add(1), 1, false, false, false, true)
            }
            AxisPlan::Range {
                begin,
                end,
                step: Some(s),
                check: None,
                ..
            } => {
                let v = |b: Bound| match b {
                    Bound::Index(v) => Some((v, false)),
                    Bound::Edge => Some((0, true)),
                    Bound::Dynamic => None,
                };
                let ((b, bm), (e, em)) = (v(begin)?, v(end)?);
                (b, e, s, bm, em, false, false)
            }
            _ => return None,
        };
        spec.begin.push(Some(b));
        spec.end.push(Some(e));
        strides.push(Some(s));
        spec.begin_mask.push(bm);
        spec.end_mask.push(em);
        spec.new_axis_mask.push(na);
        spec.shrink_axis_mask.push(sh);
        spec.ellipsis_mask.push(false);
    }
    spec.strides = Some(strides);
    Some(spec)
}

/// The plan without its index checks on axes whose size is known and where the index lies in
/// range (they cannot fail there): what a decoded rewrite is compared with.
pub fn without_passing_checks(plan: &SlicePlan, dims: &[Dim]) -> SlicePlan {
    let mut p = plan.clone();
    for a in &mut p.axes {
        match a {
            AxisPlan::Range { axis, check, .. } | AxisPlan::Shrink { axis, check, .. } => {
                if let (Some(c), Some(Size::Known(n))) = (*check, dims.get(*axis).map(size_of)) {
                    if in_range(c, n) {
                        *check = None;
                    }
                }
            }
            AxisPlan::NewAxis => {}
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantics::resolve::resolve_concrete;

    fn r(b: Bound, e: Bound, s: i64) -> Ax {
        Ax::Range {
            b,
            e,
            s,
            check: None,
        }
    }

    /// `range1` is `resolve_concrete` on one axis.
    #[test]
    fn range1_is_resolve() {
        let vals = [-7, -3, -1, 0, 1, 2, 5, 9];
        let bounds: Vec<Bound> = vals
            .iter()
            .map(|&v| Bound::Index(v))
            .chain([Bound::Edge])
            .collect();
        for d in 0..7u64 {
            for &b in &bounds {
                for &e in &bounds {
                    for s in [-3, -1, 1, 2] {
                        for clamp in [Clamp::Tf, Clamp::Ov] {
                            let plan = SlicePlan {
                                input_rank: 1,
                                axes: vec![to_entry(r(b, e, s), 0)],
                            };
                            let want = resolve_concrete(&plan, &[d], clamp).unwrap();
                            let crate::semantics::ResolvedAxis::Range { start, len, .. } = want[0]
                            else {
                                panic!()
                            };
                            let got = eval1(r(b, e, s), d as i128, clamp).unwrap();
                            assert_eq!(norm_sel(start as i128, s as i128, len as i128), got);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn x_2_30_then_1_10_on_a_symbol() {
        let d = Dim::symbol("n");
        let ax = compose_axis(
            0,
            &d,
            r(Bound::Index(2), Bound::Index(30), 1),
            Clamp::Ov,
            r(Bound::Index(1), Bound::Index(10), 1),
            Clamp::Ov,
            Clamp::Ov,
        )
        .unwrap();
        assert_eq!(r(Bound::Index(3), Bound::Index(12), 1), ax);
    }
}
