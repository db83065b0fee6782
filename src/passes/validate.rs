//! Translation validation and exact parameters, what `lower` and `raise` check before they
//! rewrite: the dims a slice's input is declared with, each plan entry resolved against a known
//! dim, exact Slice parameters for a resolved range, the indices a plan selects (compared
//! between the old node and its replacement), and the warnings where runtimes disagree.

use petgraph::stable_graph::NodeIndex;

use crate::ir::{DeclaredDim, Graph, OutletId};
use crate::semantics::{
    self, AxisPlan, Bound, Clamp, ResolvedAxis, SliceError, SlicePlan, DEFAULT_MAX_ELEMENTS,
};
use crate::shape::slice_node;

/// Per input axis: the dim when known (a known value or an interval `n..n`).
pub fn known_dims(graph: &Graph, outlet: OutletId) -> Option<Vec<Option<u64>>> {
    Some(
        slice_node::declared_shape(graph, outlet)?
            .iter()
            .map(|d| match d {
                DeclaredDim::Known(v) => Some(*v),
                DeclaredDim::Interval(lo, Some(hi)) if lo == hi => Some(*lo),
                _ => None,
            })
            .collect(),
    )
}

/// The smallest value a declared dim can take.
pub fn lower_bound(graph: &Graph, outlet: OutletId, axis: usize) -> u64 {
    match slice_node::declared_shape(graph, outlet)
        .as_ref()
        .and_then(|s| s.get(axis))
    {
        Some(DeclaredDim::Known(v)) | Some(DeclaredDim::Interval(v, _)) => *v,
        _ => 0,
    }
}

/// Resolves one plan entry against a known dim `d` (the entry's axis is ignored).
pub fn resolve_entry(entry: AxisPlan, d: u64, clamp: Clamp) -> Result<ResolvedAxis, SliceError> {
    let entry = match entry {
        AxisPlan::Range {
            begin,
            end,
            step,
            check,
            ..
        } => AxisPlan::Range {
            axis: 0,
            begin,
            end,
            step,
            check,
        },
        AxisPlan::Shrink { index, check, .. } => AxisPlan::Shrink {
            axis: 0,
            index,
            check,
        },
        AxisPlan::NewAxis => AxisPlan::NewAxis,
    };
    let plan = SlicePlan {
        input_rank: 1,
        axes: vec![entry],
    };
    Ok(semantics::resolve_concrete(&plan, &[d], clamp)?[0])
}

/// Exact `(start, stop, step)` selecting `len` elements from `start` by `step` on an axis of
/// size `d`, valid under every clamping rule; `None` when it selects the whole axis in order.
/// A reverse range ending below index 0 gets the stop `INT64_MIN` (a stop of `-1` would mean the
/// last element).
pub fn exact_range(start: i64, step: i64, len: u64, d: u64) -> Option<(i64, i64, i64)> {
    if len == d && (step == 1 || d <= 1) {
        return None;
    }
    // Canonical forms: an empty range is `d:d` (tract 0.23 mis-optimizes a `0:0` slice of a
    // size-1 axis next to another sliced axis), a single element `i:i+1` (whatever the step).
    if len == 0 {
        let d = i64::try_from(d).unwrap_or(i64::MAX);
        return Some((d, d, 1));
    }
    if len == 1 {
        return Some((start, start + 1, 1));
    }
    let last = start as i128 + step as i128 * (len as i128 - 1);
    let stop = if step > 0 {
        last + 1
    } else if last >= 1 {
        last - 1
    } else {
        i64::MIN as i128
    };
    Some((start, stop as i64, step))
}

/// Value of a bound as a Slice / StridedSlice parameter: `Edge` becomes the extreme in the
/// step's direction.
pub fn bound_value(b: Bound, is_begin: bool, step: i64) -> Option<i64> {
    match b {
        Bound::Index(v) => Some(v),
        Bound::Dynamic => None,
        Bound::Edge => Some(match (is_begin, step > 0) {
            (true, true) => 0,
            (true, false) => i64::MAX,
            (false, true) => i64::MAX,
            (false, false) => i64::MIN,
        }),
    }
}

/// Why a TensorFlow-clamped reverse range cannot be expressed with OpenVINO/ONNX clamping on an
/// axis whose size is not known: TensorFlow selects nothing when `begin < -dim`, the others the
/// first element.
pub fn clamp_ambiguity(begin: Bound, step: i64, lower: u64) -> Option<String> {
    match begin {
        Bound::Index(v) if step < 0 && v < 0 && (lower as i128) < -(v as i128) => Some(format!(
            "reverse range from {v} on an axis of unknown size: TensorFlow selects nothing when \
             the size is below {}, Slice/OpenVINO one element",
            -(v as i128)
        )),
        _ => None,
    }
}

/// Indices and shape a plan selects on `dims`.
pub type Selection = (Vec<u64>, Vec<u64>);

/// What `plan` selects on `dims` (indices in output order, output shape).
pub fn select(plan: &SlicePlan, dims: &[u64], clamp: Clamp) -> Result<Selection, SliceError> {
    let idx = semantics::gather(plan, dims, clamp, DEFAULT_MAX_ELEMENTS)?;
    let shape = semantics::output_shape(plan, dims, clamp)?;
    Ok((idx, shape))
}

/// Compares the old node's selection with the new subgraph's; `Err` describes the difference.
pub fn compare(old: &Selection, new: &Selection) -> Result<(), String> {
    if old.1 != new.1 {
        return Err(format!(
            "translation validation failed: shape {:?} would become {:?}",
            old.1, new.1
        ));
    }
    if old.0 != new.0 {
        let at = old
            .0
            .iter()
            .zip(&new.0)
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        return Err(format!(
            "translation validation failed: selected indices differ (first at output element {at})"
        ));
    }
    Ok(())
}

/// The shrink + begin_mask warning for an OpenVINO StridedSlice-1 node, when it has such an
/// entry (see [`semantics::decode::ov_shrink_begin_mask_entries`]): OpenVINO's CPU plugin and
/// its constant folding compute different results there, and slice-opt follows its constant
/// folding (`begin[i]`) in every pass.
pub fn ov_shrink_begin_mask_warning(
    graph: &Graph,
    node: NodeIndex,
    op: slice_node::SliceOp,
) -> Option<crate::report::Change> {
    if op != slice_node::SliceOp::OvStridedSlice {
        return None;
    }
    let (spec, _) = slice_node::strided_slice_spec(graph, node, op).ok()?;
    let entries = semantics::decode::ov_shrink_begin_mask_entries(&spec);
    if entries.is_empty() {
        return None;
    }
    let n = graph.node(node);
    Some(crate::report::Change::note(
        n.name.clone(),
        n.op_type.clone(),
        semantics::decode::ov_shrink_begin_mask_warning(&entries),
    ))
}
