//! Candidate composed entries for one axis, and their proof on a symbolic size (see the
//! parent module doc): saturation, the sizes to check, the exact entry on a known size.

use super::*;

/// `ax` with its constants made small where that changes nothing for sizes up to `hi`:
/// constants saturated to `±(hi + 1)`, and a bound past every size the axis may take written
/// as the edge it acts as (or the whole range as an empty one when it selects nothing at any
/// size). Only what is left needs proving.
pub(super) fn saturate(ax: Ax, hi: i64) -> Ax {
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
pub(super) fn constant_of(ax: Ax) -> i128 {
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
pub(super) fn plain_checks(ax: Ax) -> bool {
    match ax {
        Ax::Range { check, .. } => check.is_none(),
        Ax::Shrink { i, check } => check.is_none() || check == Some(i),
    }
}

/// Whether a shrink fails out of range (rather than clamping).
pub(super) fn strict(ax: Ax, clamp: Clamp) -> bool {
    match ax {
        Ax::Shrink { i, check } => clamp == Clamp::Tf || check == Some(i),
        Ax::Range { .. } => false,
    }
}

pub(super) fn step_of(ax: Ax) -> i128 {
    match ax {
        Ax::Range { s, .. } => (s as i128).abs().max(1),
        Ax::Shrink { .. } => 1,
    }
}

/// Sizes to check for a symbolic axis: `[lo, min(hi, max(lo, T) + 3P + 3)]` with `T` from the
/// largest constant `c` and the inner step `s1` (see the module doc), `P` the period; `None`
/// when more than [`PROOF_BUDGET`].
pub(super) fn proof_range(lo: i64, hi: i64, c: i128, s1: i128, p: i128) -> Option<(i128, i128)> {
    let c = c + 2;
    let t = (s1 + 1).checked_mul(4 * c + 4)?.checked_add(2 * c)?;
    let top = (lo as i128)
        .max(t)
        .checked_add(p.checked_mul(3)?.checked_add(3)?)?;
    let top = top.min(hi as i128);
    (top - (lo as i128) < PROOF_BUDGET as i128).then_some((lo as i128, top))
}

/// Whether `f` and `g` agree at every size of `range`.
pub(super) fn agree(range: (i128, i128), f: impl Fn(i128) -> Sel, g: impl Fn(i128) -> Sel) -> bool {
    (range.0..=range.1).all(|d| f(d) == g(d))
}

/// A position at size `d` as a bound: absolute when it does not move with `d`, else from the
/// end. Candidates for a bound of the composed range.
pub(super) fn position_bounds(pos: i128, at: i128, out: &mut Vec<Bound>) {
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
pub(super) fn candidates(
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
pub(super) fn exact_entry(sel: (i128, i128, i128), shrink: bool) -> Result<Ax, Refusal> {
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
pub(super) fn compose_axis(
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
