//! Rewrite: an identity slice (every axis taken whole, in order, for every size the dims may
//! take) is removed; its consumers read its input. Kept when its output is a graph output
//! (the writer would put an Identity in its place).

use petgraph::stable_graph::NodeIndex;

use super::{answer, changed, Decoded, PassCx};
use crate::formats::Format;
use crate::ir::{Graph, NodeKind, OutletId};
use crate::passes::patch::Patch;
use crate::semantics::compose;

/// The removal of slice `ix` (decoded: `d`) when it is an identity; `None` when it is not.
pub fn rewrite(cx: &PassCx, graph: &Graph, ix: NodeIndex, d: &Decoded) -> Option<Patch> {
    if !compose::is_identity(&d.plan, &d.dims, d.op.clamp()) {
        return None;
    }
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
        let what = format!("identity slice {} removed", d.plan);
        Ok(changed(graph, p, ix, what, &[(ix, d.op)]))
    };
    answer(graph, ix, r)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{onnx_slice, ops, simplified, skipped};
    use crate::ir::builder::GraphBuilder;
    use crate::ir::DType;

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
