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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::builder::GraphBuilder;
    use crate::ir::DType;
    use crate::passes::PassCx;

    /// Declared dims as `lower` and `raise` read them: a known value, or an interval of one
    /// value, is known; a symbol, a wider interval or `?` is not, and bounds a dim from below
    /// by its interval's low end (else 0). A constant's dims are its tensor's.
    #[test]
    fn declared_dims() {
        let mut b = GraphBuilder::openvino();
        let x = b.input("x", DType::F32, "N, 4, 3..3, 2..8, ?, 5..");
        let c = b.const_i64("c", &[1, 2, 3]);
        let g = b.finish();
        assert_eq!(
            known_dims(&g, x),
            Some(vec![None, Some(4), Some(3), None, None, None])
        );
        let lows: Vec<u64> = (0..6).map(|a| lower_bound(&g, x, a)).collect();
        assert_eq!(lows, [0, 4, 3, 2, 0, 5]);
        assert_eq!(lower_bound(&g, x, 9), 0);
        assert_eq!(known_dims(&g, c), Some(vec![Some(3)]));
    }

    /// OpenVINO StridedSlice-1 entry 0 has shrink_axis_mask and begin_mask with begin 1: its CPU
    /// plugin keeps element 0 there and its constant folding element 1, so the passes warn (the
    /// README's "shrink + begin_mask choice"). Without begin_mask, or with begin 0, the two
    /// agree and there is no warning.
    #[test]
    fn shrink_begin_mask_warning() {
        let warning = |begin: i64, begin_mask: &str| {
            let mut b = GraphBuilder::openvino();
            let x = b.input("x", DType::F32, [3, 4]);
            let s = b.const_i64("begin", &[begin, 0]);
            let e = b.const_i64("end", &[begin + 1, 0]);
            let st = b.const_i64("stride", &[1, 1]);
            let node = b
                .op("StridedSlice", &[x, s, e, st])
                .name("ss")
                .attr("begin_mask", begin_mask)
                .attr("end_mask", "0,1")
                .attr("new_axis_mask", "")
                .attr("shrink_axis_mask", "1,0")
                .attr("ellipsis_mask", "")
                .add();
            let cx = PassCx::new(b.dialect());
            let g = b.finish();
            let op = slice_node::classify(&g, node, cx.dialect, cx.onnx_opset)
                .expect("an OpenVINO StridedSlice-1");
            ov_shrink_begin_mask_warning(&g, node, op)
        };
        let w = warning(1, "1,0").expect("a warning");
        assert_eq!((w.node.as_str(), w.op.as_str()), ("ss", "StridedSlice"));
        assert!(w
            .what
            .contains("entry 0 has shrink_axis_mask and begin_mask"));
        assert!(warning(1, "0,0").is_none());
        assert!(warning(0, "1,0").is_none());
    }
}
