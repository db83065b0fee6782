//! Rewrite: a slice of a `Concat` that selects within one of its inputs becomes the same
//! slice of that input ([`compose::within_concat`]).

use petgraph::stable_graph::NodeIndex;

use super::write::{replacement, Emit};
use super::{answer, changed, known_dims, ranges_only, select, Decoded, PassCx};
use crate::ir::{Attr, Graph, NodeKind, OutletId};
use crate::passes::patch::Patch;
use crate::semantics::compose;
use crate::semantics::Dim;
use crate::shape::slice_node;

/// The slice `ix` (decoded: `d`) moved to the one input of the Concat it reads that it
/// selects within; `None` when it does not read a Concat's output.
pub fn rewrite(cx: &PassCx, graph: &Graph, ix: NodeIndex, d: &Decoded) -> Option<Patch> {
    let p = graph.node(d.data.node);
    if d.data.port != 0 || p.kind != NodeKind::Op || p.op_type.as_str() != "Concat" {
        return None;
    }
    let r = concat(cx, graph, ix, d).map(|(p, what)| changed(graph, p, ix, what, &[(ix, d.op)]));
    answer(graph, ix, r)
}

/// The axis attribute of a Concat node, normalised for `rank`.
fn concat_axis(graph: &Graph, node: NodeIndex, rank: usize) -> Option<usize> {
    let n = graph.node(node);
    let a = match n.attr("axis")? {
        Attr::Int(v) => *v,
        Attr::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    let a = if a < 0 { a + rank as i64 } else { a };
    usize::try_from(a).ok().filter(|&a| a < rank)
}

/// The slice `ix` of a Concat selecting within one of its inputs: the same slice of that
/// input, and what the report says.
fn concat(
    cx: &PassCx,
    graph: &Graph,
    ix: NodeIndex,
    d: &Decoded,
) -> std::result::Result<(Patch, String), String> {
    let cat = d.data.node;
    let rank = d.dims.len();
    let axis = concat_axis(graph, cat, rank).ok_or("left as is: Concat axis unreadable")?;
    let inputs: Vec<OutletId> = graph
        .inputs(cat)
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or("left as is: a Concat input is missing")?;
    let mut sizes = Vec::with_capacity(inputs.len());
    for o in &inputs {
        let s = slice_node::declared_shape(graph, *o)
            .ok_or("left as is: Concat input shape unknown")?;
        if s.len() != rank {
            return Err("left as is: Concat input rank differs".into());
        }
        sizes.push(slice_node::to_dim(&s[axis]));
    }
    let (k, plan) = compose::within_concat(&d.plan, axis, &sizes, &d.dims, d.op.clamp())
        .map_err(|r| format!("slice of Concat left as is: {r}"))?;
    let src = inputs[k];
    let src_dims: Vec<Dim> = slice_node::declared_shape(graph, src)
        .ok_or("left as is: input shape unknown")?
        .iter()
        .map(slice_node::to_dim)
        .collect();
    let emit = Emit::choose(cx.dialect, &[d.op], ranges_only(&plan), cx.onnx_opset)?;
    // The slice of the Concat on an index tensor: the positions shifted into input `k`.
    let want = match (known_dims(&d.dims), known_dims(&src_dims)) {
        (Some(all), Some(part)) => {
            let (idx, shape) =
                select(&d.plan, &all, d.op.clamp()).ok_or("left as is: the slice fails")?;
            // Map a flat index of the concatenation to one of input `k`, or refuse.
            let off: u64 = sizes[..k]
                .iter()
                .map(|s| s.as_known().unwrap_or(0) as u64)
                .sum();
            let inner: u64 = all[axis + 1..].iter().product();
            let mut mapped = Vec::with_capacity(idx.len());
            for &f in &idx {
                let (outer, rest) = (f / (all[axis] * inner), f % (all[axis] * inner));
                let (a, r) = (rest / inner, rest % inner);
                if a < off || a - off >= part[axis] {
                    return Err("left as is: translation validation: outside the input".into());
                }
                mapped.push((outer * part[axis] + (a - off)) * inner + r);
            }
            Some((mapped, shape))
        }
        _ => None,
    };
    let before = d.plan.to_string();
    let p = replacement(
        graph,
        cx.dialect,
        ix,
        src,
        &plan,
        &src_dims,
        emit,
        want.as_ref(),
    )?;
    Ok((
        p,
        format!("slice {before} of Concat reads its input {k} only: now {plan} of that input"),
    ))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{onnx_slice, ops, selects, simplified, skipped};
    use crate::ir::builder::GraphBuilder;
    use crate::ir::DType;

    /// `Concat([a(4), b(6)])[5:9]` is `b[1:5]` (numpy: `concatenate([arange(4), arange(6)])
    /// [5:9] == [1, 2, 3, 4]`, elements of b); the Concat is left unused.
    #[test]
    fn forwarded_to_one_input() {
        let mut bd = GraphBuilder::onnx();
        let a = bd.input("a", DType::F32, [4]);
        let b = bd.input("b", DType::F32, [6]);
        let cat = bd
            .op("Concat", &[a, b])
            .name("cat")
            .attr("axis", 0)
            .typed(DType::F32, [10])
            .out();
        let s = onnx_slice(&mut bd, "s", cat, (&[5], &[9], &[0], &[1]), [4]);
        bd.output("y", s);
        let (g, rep) = simplified(bd, 13);
        assert_eq!(ops(&g), vec!["Slice"]);
        assert_eq!(g.input(s.node, 0), Some(b));
        assert_eq!(selects(&g, s.node, &[6]), vec![1, 2, 3, 4]);
        assert_eq!(rep.changed, 1);
    }

    /// `[3:6]` of the same Concat takes a[3] and b[0..2]: it spans both inputs and stays.
    #[test]
    fn spanning_both_stays() {
        let mut bd = GraphBuilder::onnx();
        let a = bd.input("a", DType::F32, [4]);
        let b = bd.input("b", DType::F32, [6]);
        let cat = bd
            .op("Concat", &[a, b])
            .name("cat")
            .attr("axis", 0)
            .typed(DType::F32, [10])
            .out();
        let s = onnx_slice(&mut bd, "s", cat, (&[3], &[6], &[0], &[1]), [3]);
        bd.output("y", s);
        let (g, rep) = simplified(bd, 13);
        assert_eq!(ops(&g), vec!["Concat", "Slice"]);
        assert!(skipped(&rep).starts_with("slice of Concat left as is"));
    }

    /// On axis 1 of `Concat([a(2, 3), b(2, 5)], axis=1)`, columns 4..7 are b's columns 1..4:
    /// on an index tensor of b (2 x 5) the flat indices 1, 2, 3, 6, 7, 8.
    #[test]
    fn forwarded_on_axis_1() {
        let mut bd = GraphBuilder::onnx();
        let a = bd.input("a", DType::F32, [2, 3]);
        let b = bd.input("b", DType::F32, [2, 5]);
        let cat = bd
            .op("Concat", &[a, b])
            .name("cat")
            .attr("axis", -1)
            .typed(DType::F32, [2, 8])
            .out();
        let s = onnx_slice(&mut bd, "s", cat, (&[4], &[7], &[1], &[1]), [2, 3]);
        bd.output("y", s);
        let (g, _) = simplified(bd, 13);
        assert_eq!(g.input(s.node, 0), Some(b));
        assert_eq!(selects(&g, s.node, &[2, 5]), vec![1, 2, 3, 6, 7, 8]);
    }
}
