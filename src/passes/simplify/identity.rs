//! Rewrite: an identity slice (every axis taken whole, in order, for every size the dims may
//! take) is removed; its consumers read its input. Kept when its output is a graph output
//! (the writer would put an Identity in its place).
//!
//! A slice whose begin or end is computed (`x[:, :Shape(x)[1]]`, an end gathered from a
//! `Shape`) is read with the facts propagation gives ([`computed`]): a positive-step end whose
//! value is the axis's own symbolic dim, for every value of the symbols, stops at the edge
//! (what `infer` reads it as, [`crate::shape::slice::ends_at_dim`]); the plan so made
//! constant is then proved an identity by the semantics core, as a constant one is.

use petgraph::stable_graph::NodeIndex;

use super::{answer, changed, Decoded, PassCx};
use crate::formats::Format;
use crate::ir::{Graph, NodeKind, OutletId};
use crate::passes::patch::Patch;
use crate::semantics::{compose, SymParams};
use crate::shape::slice::{ends_at_dim, list_value};
use crate::shape::slice_node::{self, SliceOp};
use crate::shape::Facts;

/// The removal of slice `ix` (decoded: `d`) when it is an identity; `None` when it is not.
pub fn rewrite(cx: &PassCx, graph: &Graph, ix: NodeIndex, d: &Decoded) -> Option<Patch> {
    if !compose::is_identity(&d.plan, &d.dims, d.op.clamp()) {
        return None;
    }
    remove(
        cx,
        graph,
        ix,
        d,
        format!("identity slice {} removed", d.plan),
    )
}

/// The removal of slice `ix` (of kind `op`) whose parameters are not all constant, when
/// `facts` (propagated on the graph, whose values hold for every value of the symbols) show
/// it is an identity; `None` when they do not.
pub fn computed(
    cx: &PassCx,
    graph: &Graph,
    ix: NodeIndex,
    op: SliceOp,
    facts: &Facts,
) -> Option<Patch> {
    let sn = slice_node::decode_with(graph, ix, op, Some(facts)).ok()?;
    let dims = facts.get(sn.data).shape.as_deref()?;
    let plan = if sn.plan.is_constant() {
        // Every element the file computes is a value the facts know.
        sn.plan
    } else {
        let values = |port: Option<usize>| list_value(graph, facts, ix, port);
        let mut params = SymParams::from_provenance(
            &sn.provenance,
            values(sn.ports().begin),
            values(sn.ports().end),
        );
        ends_at_dim(&sn.plan, dims, &mut params)?
    };
    if !plan.is_constant() {
        return None;
    }
    let d = Decoded {
        op: sn.op,
        data: sn.data,
        plan,
        dims: dims.to_vec(),
    };
    if !compose::is_identity(&d.plan, &d.dims, d.op.clamp()) {
        return None;
    }
    let what = format!(
        "identity slice {} removed (computed parameters read as their values)",
        d.plan
    );
    remove(cx, graph, ix, &d, what)
}

/// The removal of the identity slice `ix` (decoded: `d`), reported as `what`; kept, with the
/// reason, when its output is a graph output.
fn remove(cx: &PassCx, graph: &Graph, ix: NodeIndex, d: &Decoded, what: String) -> Option<Patch> {
    let out = OutletId { node: ix, port: 0 };
    let is_output = graph.consumers(out).iter().any(|&(c, _)| {
        let n = graph.node(c);
        n.kind == NodeKind::Output || (cx.dialect == Format::OpenVino && n.op_type == "Result")
    });
    let r = if is_output {
        Err("identity slice kept: its output is a graph output".into())
    } else {
        let p = Patch {
            shunts: vec![(out, d.data.into())],
            remove: vec![ix],
            ..Patch::default()
        };
        Ok(changed(graph, p, ix, what, &[(ix, d.op)]))
    };
    answer(graph, ix, r)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{onnx_slice, ops, simplified, skipped};
    use crate::ir::builder::GraphBuilder;
    use crate::ir::{DType, OutletId};

    /// ONNX Slice-13 `x[0:INT64_MAX]` on a dynamic axis: the end clamps to the dim, whatever
    /// it is, so every element is taken in order (spec: "ends ... clamped to [0, dims[axes[i]]]");
    /// removed, and the Relu reads `x`.
    #[test]
    fn removed_on_a_symbolic_axis() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, "N, 3");
        let s = onnx_slice(&mut b, "s", x, (&[0], &[i64::MAX], &[0], &[1]), "N, 3");
        let r = b.op("Relu", &[s]).name("r").out();
        b.output("y", r);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Relu"]);
        assert_eq!(g.input(r.node, 0), Some(x));
        assert_eq!(rep.changed, 1);
        assert!(rep.changes[0].what.starts_with("identity slice"));
    }

    /// `x[1:]` leaves element 0 out: not an identity, and nothing else applies (the input is
    /// a graph input).
    #[test]
    fn a_proper_slice_stays() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, "N, 3");
        let s = onnx_slice(&mut b, "s", x, (&[1], &[i64::MAX], &[1], &[1]), "N, 2");
        b.output("y", s);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice"]);
        assert_eq!((rep.changed, rep.skipped_count), (0, 0));
    }

    /// `x[:, 0:e]` with `e = Shape(x)[axis]` gathered (ONNX Gather-13 of a Shape-15 with
    /// indices `[axis]`: the 1-D list `[dims[axis]]`) and `x: [N, S]`. Spec (Slice-13): ends
    /// are "clamped to [0, dims[axes[i]]]", step 1: an end of the axis's own size takes it
    /// all, so `axis = 1` (end `S`, for every `S`) is an identity, removed, the Relu reads
    /// `x`; `axis = 0` (end `N`, smaller than `S` for some sizes) stays.
    fn computed_end(
        axis: i64,
    ) -> (
        crate::ir::Graph,
        crate::report::PassReport,
        OutletId,
        OutletId,
    ) {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, "N, S");
        let shape = b
            .op("Shape", &[x])
            .name("shape")
            .typed(DType::I64, [2])
            .out();
        let at = b.const_i64("at", &[axis]);
        let e = b
            .op("Gather", &[shape, at])
            .name("e")
            .attr("axis", "0")
            .typed(DType::I64, [1])
            .out();
        let st = b.const_i64("st", &[0]);
        let ax = b.const_i64("ax", &[1]);
        let sp = b.const_i64("sp", &[1]);
        let s = b.op("Slice", &[x, st, e, ax, sp]).name("s").out();
        let r = b.op("Relu", &[s]).name("r").out();
        b.output("y", r);
        let (g, rep) = simplified(b, 15);
        (g, rep, x, r)
    }

    #[test]
    fn removed_with_an_end_computed_as_the_dim() {
        let (g, rep, x, r) = computed_end(1);
        assert_eq!(g.input(r.node, 0), Some(x));
        assert!(!ops(&g).contains(&"Slice".to_string()));
        assert_eq!(rep.changed, 1);
        assert!(rep.changes[0].what.starts_with("identity slice"));
    }

    #[test]
    fn kept_with_an_end_computed_that_may_be_smaller() {
        let (g, rep, x, r) = computed_end(0);
        assert_ne!(g.input(r.node, 0), Some(x));
        assert!(ops(&g).contains(&"Slice".to_string()));
        assert_eq!(rep.changed, 0);
        assert_eq!(skipped(&rep), "left as is: parameters not constant");
    }

    /// An identity slice whose output is a graph output stays (an Identity would replace it).
    #[test]
    fn kept_when_a_graph_output() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, [4]);
        let s = onnx_slice(&mut b, "s", x, (&[0], &[4], &[0], &[1]), [4]);
        b.output("y", s);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice"]);
        assert_eq!(
            skipped(&rep),
            "identity slice kept: its output is a graph output"
        );
    }

    /// OpenVINO StridedSlice-1 with every begin and end masked (spec: a masked begin is the
    /// start of the axis, a masked end its end; stride 1): the whole input, removed; the
    /// Relu reads the Parameter.
    #[test]
    fn openvino_masked_strided_slice() {
        let mut b = GraphBuilder::openvino();
        let x = b.input("x", DType::F32, "N, 5");
        let begin = b.const_i64("begin", &[3, 3]);
        let end = b.const_i64("end", &[1, 1]);
        let strides = b.const_i64("strides", &[1, 1]);
        let s = b
            .op("StridedSlice", &[x, begin, end, strides])
            .name("s")
            .attr("begin_mask", "1,1")
            .attr("end_mask", "1,1")
            .attr("new_axis_mask", "")
            .attr("shrink_axis_mask", "")
            .attr("ellipsis_mask", "")
            .typed(DType::F32, "N, 5")
            .out();
        let r = b.op("Relu", &[s]).name("r").out();
        b.output("y", r);
        let (g, rep) = simplified(b, 0);
        assert_eq!(g.input(r.node, 0), Some(x));
        assert_eq!(ops(&g), vec!["Parameter", "Relu", "Result"]);
        assert_eq!(rep.changed, 1);
    }
}
