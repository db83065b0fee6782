//! A slice of a concatenation that stays within one of its inputs.

use super::*;

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
