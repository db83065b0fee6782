//! A constant plan as the inputs of a `Slice` or a StridedSlice spec, and a plan without
//! the index checks that cannot fail.

use super::*;

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
pub fn strided_spec(plan: &SlicePlan) -> Option<crate::semantics::StridedSliceSpec> {
    let mut spec = crate::semantics::StridedSliceSpec::default();
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
