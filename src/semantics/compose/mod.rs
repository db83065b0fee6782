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

mod concat;
mod proof;
mod spec;
mod split;
#[cfg(test)]
mod tests;

pub use concat::within_concat;
use proof::{
    agree, compose_axis, constant_of, exact_entry, plain_checks, proof_range, saturate, step_of,
    strict,
};
pub use spec::{slice_params, strided_spec, without_passing_checks, SliceParams};
pub use split::{split_pieces, split_runs, PieceSize, Split};

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

/// `(start, len)` of a range on an axis of size `d`: `resolve`'s own rule for one axis
/// (`None` for a run-time bound).
fn range1(d: i128, b: Bound, e: Bound, s: i64, clamp: Clamp) -> Option<(i128, i128)> {
    super::resolve::range_concrete(d, b, e, s, clamp).ok()
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

/// One output axis of the inner plan: a new axis, or a range over input axis `axis`.
#[derive(Clone, Copy)]
enum InnerOut {
    New,
    Range(usize, Ax),
}

/// The output axes of an inner plan, and its shrinks (input axis, entry).
type InnerAxes = (Vec<InnerOut>, Vec<(usize, Ax)>);

/// The output axes of the inner plan `inner` (read with `c1`, of an input of `dims`), and its
/// shrinks (input axis, entry), each shrink checked: in range on a known size, or an index
/// the proof handles on a symbolic one.
fn inner_outs(inner: &SlicePlan, c1: Clamp, dims: &[Dim]) -> Result<InnerAxes, Refusal> {
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
    Ok((outs, shrinks))
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
    let (outs, shrinks) = inner_outs(inner, c1, dims)?;
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
