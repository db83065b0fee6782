//! Translation validation and exact parameters, what `lower` and `raise` check before they
//! rewrite: the dims a slice's input is declared with, each plan entry resolved against a known
//! dim, exact Slice parameters for a resolved range, the indices a plan selects (compared
//! between the old node and its replacement), and the warnings where runtimes disagree.

use petgraph::stable_graph::NodeIndex;

use crate::ir::{DeclaredDim, Graph, OutletId};
use crate::semantics::{self, Clamp, SliceError, SlicePlan, DEFAULT_MAX_ELEMENTS};
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

pub use crate::semantics::lowering::{bound_value, clamp_ambiguity, exact_range, resolve_entry};

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
