//! Rewrite: a slice of a slice becomes one slice of the first one's input, when the first has
//! no other consumer (one node fewer, never one more). Known sizes get the exact positions;
//! symbolic sizes only a plan proved exact for every size ([`compose::compose`]), else refused
//! with the reason.

use petgraph::stable_graph::NodeIndex;

use super::write::{replacement, Emit};
use super::{answer, changed, decoded, known_dims, ranges_only, select, Decoded, PassCx};
use crate::ir::{Graph, OutletId};
use crate::passes::patch::Patch;
use crate::semantics::compose;
use crate::semantics::SlicePlan;
use crate::shape::slice_node::{self, SliceOp};

/// The merge of slice `ix` (decoded: `d`) with the slice it reads; `None` when it does not
/// read a slice's output 0.
pub fn rewrite(cx: &PassCx, graph: &Graph, ix: NodeIndex, d: &Decoded) -> Option<Patch> {
    if d.data.port != 0 {
        return None;
    }
    let inner = d.data.node;
    let inner_op = slice_node::classify(graph, inner, cx.dialect, cx.onnx_opset)?;
    let r = merge(cx, graph, ix, d, inner, inner_op)
        .map(|(p, what)| changed(graph, p, ix, what, &[(ix, d.op), (inner, inner_op)]));
    answer(graph, ix, r)
}

/// The slice `ix` (decoded: `d`) of the slice `inner` as one slice, and what the report says.
fn merge(
    cx: &PassCx,
    graph: &Graph,
    ix: NodeIndex,
    d: &Decoded,
    inner: NodeIndex,
    inner_op: SliceOp,
) -> std::result::Result<(Patch, String), String> {
    let (format, opset) = (cx.dialect, cx.onnx_opset);
    let consumers = graph.consumers(OutletId {
        node: inner,
        port: 0,
    });
    if consumers.len() != 1 {
        return Err(format!(
            "not merged with the slice before it: that one has {} consumers (merging would \
             not remove a node)",
            consumers.len()
        ));
    }
    let i = decoded(graph, inner, inner_op).map_err(|e| format!("not merged: inner {e}"))?;
    let composed = |e: Emit| -> std::result::Result<SlicePlan, String> {
        compose::compose(
            &i.plan,
            inner_op.clamp(),
            &d.plan,
            d.op.clamp(),
            &i.dims,
            e.clamp(),
        )
        .map_err(|r| format!("not merged: {r}"))
    };
    // Try the plan's op first with the target clamping; a plan with new or shrunk axes needs
    // a StridedSlice.
    let mut emit = Emit::choose(format, &[inner_op, d.op], true, opset);
    let mut plan = emit.clone().and_then(&composed);
    if let Ok(p) = &plan {
        if !ranges_only(p) {
            emit = Emit::choose(format, &[inner_op, d.op], false, opset);
            plan = emit.clone().and_then(&composed);
        }
    }
    let (emit, plan) = (emit?, plan?);
    if !ranges_only(&plan) && matches!(emit, Emit::OnnxSlice | Emit::OvSlice8) {
        return Err("internal: a Slice chosen for a plan with new or shrunk axes".into());
    }
    // Translation validation on static inputs: the pair on an index tensor.
    let want = known_dims(&i.dims).and_then(|dims| {
        let (idx1, shape1) = select(&i.plan, &dims, inner_op.clamp())?;
        let (idx2, shape2) = select(&d.plan, &shape1, d.op.clamp())?;
        Some((
            idx2.iter().map(|&j| idx1[j as usize]).collect::<Vec<u64>>(),
            shape2,
        ))
    });
    let before = format!("{} then {}", i.plan, d.plan);
    let mut p = replacement(
        graph,
        format,
        ix,
        i.data,
        &plan,
        &i.dims,
        emit,
        want.as_ref(),
    )?;
    p.remove.push(inner);
    let (op_type, _) = emit.op();
    Ok((
        p,
        format!("merged with the slice before it: {before} -> {op_type} {plan}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{onnx_slice, ops, selects, simplified, skipped};
    use crate::ir::builder::GraphBuilder;
    use crate::ir::DType;

    /// `x[2:30][1:10]` on x of 40 is one Slice of x selecting 3..12 (numpy:
    /// `arange(40)[2:30][1:10] == [3, 4, ..., 11]`).
    #[test]
    fn static_pair() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, [40]);
        let s1 = onnx_slice(&mut b, "s1", x, (&[2], &[30], &[0], &[1]), [28]);
        let s2 = onnx_slice(&mut b, "s2", s1, (&[1], &[10], &[0], &[1]), [9]);
        b.output("y", s2);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice"]);
        assert_eq!(g.input(s2.node, 0), Some(x));
        assert_eq!(g.node(s2.node).name.as_str(), "s2");
        assert_eq!(selects(&g, s2.node, &[40]), (3..12).collect::<Vec<u64>>());
        assert!(rep.changes[0]
            .what
            .starts_with("merged with the slice before it"));
    }

    /// `x[:, ::-1][:, 1::2]` of an `[N, 5]` input: columns 4, 3, 2, 1, 0, then every other
    /// from the second: columns 3 and 1, for every N (at N = 2: flat 3, 1, 8, 6).
    #[test]
    fn symbolic_reverse_pair() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, "N, 5");
        let (min, max) = (i64::MIN, i64::MAX);
        let s1 = onnx_slice(&mut b, "s1", x, (&[-1], &[min], &[1], &[-1]), "N, 5");
        let s2 = onnx_slice(&mut b, "s2", s1, (&[1], &[max], &[1], &[2]), "N, 2");
        b.output("y", s2);
        let (g, _) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice"]);
        assert_eq!(g.input(s2.node, 0), Some(x));
        assert_eq!(selects(&g, s2.node, &[2, 5]), vec![3, 1, 8, 6]);
    }

    /// `x[-5:][1:]` on a dynamic axis is `x[-4:]` only for sizes >= 5 (size 3: `x[-5:][1:]`
    /// is `[1, 2]`, `x[-4:]` is `[0, 1, 2]`): both stay, and the report says why.
    #[test]
    fn refused_when_not_exact_for_every_size() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, "N");
        let max = i64::MAX;
        let s1 = onnx_slice(&mut b, "s1", x, (&[-5], &[max], &[0], &[1]), "?");
        let s2 = onnx_slice(&mut b, "s2", s1, (&[1], &[max], &[0], &[1]), "?");
        b.output("y", s2);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice", "Slice"]);
        assert!(
            skipped(&rep).starts_with("not merged: "),
            "{}",
            skipped(&rep)
        );
    }

    /// A first slice read by two nodes is not merged into the second.
    #[test]
    fn refused_when_the_first_is_shared() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, [40]);
        let s1 = onnx_slice(&mut b, "s1", x, (&[2], &[30], &[0], &[1]), [28]);
        let s2 = onnx_slice(&mut b, "s2", s1, (&[1], &[10], &[0], &[1]), [9]);
        b.output("y", s2);
        b.output("z", s1);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice", "Slice"]);
        assert_eq!(
            skipped(&rep),
            "not merged with the slice before it: that one has 2 consumers (merging would not \
             remove a node)"
        );
    }

    /// OpenVINO StridedSlice-1 `x[2:9]` then `[1:5:2]` on x of 10: elements 3 and 5
    /// (`arange(10)[2:9][1:5:2]`), one StridedSlice-1 of x.
    #[test]
    fn openvino_strided_pair() {
        let mut b = GraphBuilder::openvino();
        let x = b.input("x", DType::F32, [10]);
        let strided = |b: &mut GraphBuilder, name: &str, x, p: [i64; 3], n: u64| {
            let c: Vec<_> = p
                .iter()
                .enumerate()
                .map(|(k, &v)| b.const_i64(&format!("{name}_{k}"), &[v]))
                .collect();
            b.op("StridedSlice", &[x, c[0], c[1], c[2]])
                .name(name)
                .attr("begin_mask", "0")
                .attr("end_mask", "0")
                .typed(DType::F32, [n])
                .out()
        };
        let s1 = strided(&mut b, "s1", x, [2, 9, 1], 7);
        let s2 = strided(&mut b, "s2", s1, [1, 5, 2], 2);
        b.output("y", s2);
        let (g, rep) = simplified(b, 0);
        assert_eq!(ops(&g), vec!["Parameter", "Result", "StridedSlice"]);
        assert_eq!(g.input(s2.node, 0), Some(x));
        assert_eq!(selects(&g, s2.node, &[10]), vec![3, 5]);
        assert_eq!(rep.changed, 1);
    }
}
