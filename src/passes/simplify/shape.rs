//! Rewrite: ONNX `Shape` then `Slice` becomes the constant of the dims it selects when they
//! are all known (`Shape(x)[-1:]` of `[N, S, 32]`: `[32]`), else (step 1, opset >= 15) one
//! `Shape(start, end)`.

use petgraph::stable_graph::NodeIndex;

use super::{answer, changed, Decoded, PassCx};
use crate::formats::Format;
use crate::ir::{Attr, DType, DeclaredDim, Graph, NodeKind, OutletId, ValueType};
use crate::passes::patch::{NewNodes, NewValue, Patch};
use crate::semantics::{self, DEFAULT_MAX_ELEMENTS};

/// The slice `ix` (decoded: `d`) of an ONNX `Shape` as a constant or one `Shape`; `None` when
/// it does not read a default-domain `Shape` of an ONNX graph.
pub fn rewrite(cx: &PassCx, graph: &Graph, ix: NodeIndex, d: &Decoded) -> Option<Patch> {
    if !reads_shape(cx, graph, d) {
        return None;
    }
    let r = constant(graph, ix, d)
        .map(Ok)
        .unwrap_or_else(|| shape_slice(cx, graph, ix, d))
        .map(|(p, what)| changed(graph, p, ix, what, &[(ix, d.op)]));
    answer(graph, ix, r)
}

/// What [`rewrite`] makes of the slice `ix`, for [`super::element`]: the constant of known
/// dims, or `Shape(start, end)`; `None` when it leaves it (or it does not read a `Shape`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Constant,
    ShapeStartEnd,
}

/// See [`Kind`].
pub fn rewrites(cx: &PassCx, graph: &Graph, ix: NodeIndex, d: &Decoded) -> Option<Kind> {
    if !reads_shape(cx, graph, d) {
        return None;
    }
    if constant(graph, ix, d).is_some() {
        return Some(Kind::Constant);
    }
    shape_slice(cx, graph, ix, d)
        .is_ok()
        .then_some(Kind::ShapeStartEnd)
}

/// Whether the slice (decoded: `d`) reads output 0 of a default-domain `Shape` of an ONNX
/// graph.
fn reads_shape(cx: &PassCx, graph: &Graph, d: &Decoded) -> bool {
    let p = graph.node(d.data.node);
    cx.dialect == Format::Onnx
        && d.data.port == 0
        && p.kind == NodeKind::Op
        && p.op_type.as_str() == "Shape"
        && (p.domain.is_empty() || p.domain.as_str() == "ai.onnx")
}

/// ONNX `Shape` then `Slice` (step 1) as one `Shape(start, end)`, opset >= 15.
fn shape_slice(
    cx: &PassCx,
    graph: &Graph,
    ix: NodeIndex,
    d: &Decoded,
) -> std::result::Result<(Patch, String), String> {
    let shape_node = d.data.node;
    if cx.onnx_opset < 15 {
        return Err("Shape then Slice left as is: Shape has start/end from opset 15".into());
    }
    let n = graph.node(shape_node);
    if n.attr("start").is_some() || n.attr("end").is_some() {
        return Err("Shape then Slice left as is: the Shape has start/end already".into());
    }
    let src = graph
        .input(shape_node, 0)
        .ok_or("left as is: Shape input missing")?;
    let src_shape = crate::shape::slice_node::declared_shape(graph, src)
        .ok_or("left as is: Shape input rank unknown")?;
    if src_shape.iter().all(|s| matches!(s, DeclaredDim::Known(_))) {
        return Err("Shape then Slice left as is: the shape is static (fold folds it)".into());
    }
    let r = src_shape.len() as u64;
    let resolved = semantics::resolve_concrete(&d.plan, &[r], d.op.clamp())
        .map_err(|e| format!("left as is: {e}"))?;
    let [semantics::ResolvedAxis::Range {
        start, step, len, ..
    }] = resolved[..]
    else {
        return Err("left as is: not a range".into());
    };
    if step != 1 && len > 1 {
        return Err("Shape then Slice left as is: a step other than 1".into());
    }
    let (start, end) = (start, start + len as i64);
    // Check: Shape(start, end) on rank r selects dims start..end (ONNX clamping of start/end
    // to [0, r]); the Slice selected the same on the shape vector.
    let want: Vec<u64> = semantics::gather(&d.plan, &[r], d.op.clamp(), DEFAULT_MAX_ELEMENTS)
        .map_err(|e| format!("left as is: {e}"))?;
    let got: Vec<u64> = (start.clamp(0, r as i64) as u64..end.clamp(0, r as i64) as u64).collect();
    if want != got {
        return Err("left as is: translation validation failed".into());
    }
    let node = graph.node(ix);
    let mut add = NewNodes::beside(Format::Onnx, ix);
    add.op(
        Some(node.name.to_string()),
        "Shape",
        "",
        &[Some(src.into())],
        vec![
            ("start".to_string(), Attr::Int(start)),
            ("end".to_string(), Attr::Int(end)),
        ],
        Some(node.outputs[0].clone()),
        Default::default(),
    );
    let what = format!(
        "Shape then Slice {} -> Shape(start={start}, end={end})",
        d.plan
    );
    Ok((Patch::replacing(ix, add), what))
}

/// ONNX `Shape` (no start/end) then `Slice` selecting only dims that are known: the constant
/// they make (`Shape(x)[-1:]` of an `[N, S, 32]` input is `[32]`). `None`: a dim selected is
/// not known, or the slice's output is a graph output.
fn constant(graph: &Graph, ix: NodeIndex, d: &Decoded) -> Option<(Patch, String)> {
    let shape_node = d.data.node;
    let n = graph.node(shape_node);
    if n.attr("start").is_some() || n.attr("end").is_some() {
        return None;
    }
    let src = graph.input(shape_node, 0)?;
    let src_shape = crate::shape::slice_node::declared_shape(graph, src)?;
    let r = src_shape.len() as u64;
    let idx = semantics::gather(&d.plan, &[r], d.op.clamp(), DEFAULT_MAX_ELEMENTS).ok()?;
    let values: Vec<i64> = idx
        .iter()
        .map(|&i| match src_shape.get(i as usize) {
            Some(DeclaredDim::Known(v)) => i64::try_from(*v).ok(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let out = OutletId { node: ix, port: 0 };
    if graph
        .consumers(out)
        .iter()
        .any(|&(c, _)| graph.node(c).kind == NodeKind::Output)
    {
        return None;
    }
    let mut value = graph.node(ix).outputs[0].clone();
    value.ty = ValueType {
        dtype: Some(DType::I64),
        shape: Some(vec![DeclaredDim::Known(values.len() as u64)]),
    };
    value.ty_changed = true;
    let mut add = NewNodes::beside(Format::Onnx, ix);
    add.const_i64("dims", &values);
    add.nodes[0].outputs = Some(vec![NewValue::Is(value)]);
    let what = format!(
        "Shape then Slice {} selects known dims only: the constant {values:?}",
        d.plan
    );
    Some((Patch::replacing(ix, add), what))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{onnx_slice, ops, simplified, skipped};
    use crate::ir::builder::GraphBuilder;
    use crate::ir::{DType, NodeKind};

    /// `Shape(x)` of `x: [N, S, 32]`, then `Slice [-1:]` (ONNX Shape: the dims as a 1-D i64
    /// tensor; the last is 32), read by a Reshape: the constant `[32]`, under the slice's
    /// name and output.
    #[test]
    fn known_dims_become_a_constant() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, "N, S, 32");
        let shape = b
            .op("Shape", &[x])
            .name("shape")
            .typed(DType::I64, [3])
            .out();
        let s = onnx_slice(&mut b, "s", shape, (&[-1], &[i64::MAX], &[0], &[1]), [1]);
        let r = b.op("Reshape", &[x, s]).name("r").out();
        b.output("y", r);
        let (g, rep) = simplified(b, 17);
        assert_eq!(ops(&g), vec!["Reshape"]);
        let c = g.input(r.node, 1).expect("the constant");
        assert!(matches!(g.node(c.node).kind, NodeKind::Const(_)));
        assert_eq!(
            g.constant_at(c).and_then(|t| t.to_i64_vec()),
            Some(vec![32])
        );
        assert_eq!(g.node(c.node).outputs[0].name.as_str(), "s");
        assert_eq!(rep.changed, 1);
    }

    /// `Shape(x)[1:3]` of `x: [N, S, 32]` (S unknown): opset 15's `Shape(start=1, end=3)`;
    /// before opset 15 it stays, and the report says why.
    #[test]
    fn unknown_dims_become_shape_start_end() {
        let build = || {
            let mut b = GraphBuilder::onnx();
            let x = b.input("x", DType::F32, "N, S, 32");
            let shape = b
                .op("Shape", &[x])
                .name("shape")
                .typed(DType::I64, [3])
                .out();
            let s = onnx_slice(&mut b, "s", shape, (&[1], &[3], &[0], &[1]), [2]);
            let r = b.op("Reshape", &[x, s]).name("r").out();
            b.output("y", r);
            (b, x, r)
        };
        let (b, x, r) = build();
        let (g, _) = simplified(b, 15);
        assert_eq!(ops(&g), vec!["Reshape", "Shape"]);
        let sh = g.input(r.node, 1).expect("the Shape");
        let n = g.node(sh.node);
        assert_eq!(g.input(sh.node, 0), Some(x));
        assert_eq!((n.attr_int("start"), n.attr_int("end")), (Some(1), Some(3)));
        let (b, _, _) = build();
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Reshape", "Shape", "Slice"]);
        assert_eq!(
            skipped(&rep),
            "Shape then Slice left as is: Shape has start/end from opset 15"
        );
    }
}
