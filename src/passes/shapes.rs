//! Light forward shape propagation through the ops that sit between graph inputs and slices in
//! exported models (elementwise ops, `Shape`, `Gather`, `Concat`, `Squeeze`/`Unsqueeze`,
//! `Transpose`), so a slice whose input has no declared shape still gets a known rank and known
//! parameter lengths. Results are kept in memory only (`ty_changed` stays false): they are
//! knowledge for inference, not a change to the file.

use petgraph::stable_graph::NodeIndex;

use crate::formats::Format;
use crate::ir::{DType, DeclaredDim, Graph, NodeKind};
use crate::passes::slice_node::declared_shape;

const UNARY: &[&str] = &[
    "Identity",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Exp",
    "Log",
    "Neg",
    "Abs",
    "Sqrt",
    "Cast",
    "Softmax",
    "LogSoftmax",
    "Erf",
    "Not",
    "Floor",
    "Ceil",
    "Round",
    "Reciprocal",
    "Gelu",
    "LeakyRelu",
    "Elu",
    "Selu",
    "HardSigmoid",
    "Clip",
    "Sign",
    "Sin",
    "Cos",
    "IsNaN",
    "Dropout",
    "Convert",
    "Swish",
    "HSwish",
    "Mish",
    "SoftPlus",
];
const BINARY: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
    "Max",
    "Min",
    "Mod",
    "Where",
    "Select",
    "Multiply",
    "Subtract",
    "Divide",
    "Maximum",
    "Minimum",
    "Power",
    "LogicalAnd",
    "LogicalOr",
    "NotEqual",
];

fn broadcast(shapes: &[Vec<DeclaredDim>]) -> Vec<DeclaredDim> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..rank)
        .map(|i| {
            let dims: Vec<&DeclaredDim> = shapes
                .iter()
                .filter_map(|s| (i + s.len()).checked_sub(rank).and_then(|j| s.get(j)))
                .collect();
            let non_one: Vec<&&DeclaredDim> = dims
                .iter()
                .filter(|d| ***d != DeclaredDim::Known(1))
                .collect();
            match non_one.as_slice() {
                [] => DeclaredDim::Known(1),
                [d, rest @ ..] if rest.iter().all(|r| r == d) => (**d).clone(),
                _ => non_one
                    .iter()
                    .find(|d| matches!(***d, DeclaredDim::Known(_)))
                    .map(|d| (***d).clone())
                    .unwrap_or(DeclaredDim::Unknown),
            }
        })
        .collect()
}

fn const_ints(graph: &Graph, node: NodeIndex, port: usize) -> Option<Vec<i64>> {
    graph.constant_at(graph.input(node, port)?)?.to_i64_vec()
}

fn norm_axis(a: i64, rank: usize) -> Option<usize> {
    let r = rank as i64;
    let a = if a < 0 { a + r } else { a };
    (0..r).contains(&a).then_some(a as usize)
}

/// The output shape of `node` from its inputs' shapes, for the ops this module knows.
fn output_shape(graph: &Graph, node: NodeIndex, format: Format) -> Option<Vec<DeclaredDim>> {
    let n = graph.node(node);
    // All inputs at once: `graph.input` scans the node's incoming edges, so asking it port
    // by port is quadratic in the input count (a `Concat` of 100,000 inputs took 11 s).
    let inputs = graph.inputs(node);
    let input = |p: usize| {
        inputs
            .get(p)
            .copied()
            .flatten()
            .and_then(|o| declared_shape(graph, o))
    };
    let op = n.op_type.as_str();
    if UNARY.contains(&op) {
        return input(0);
    }
    if BINARY.contains(&op) {
        let shapes: Option<Vec<_>> = (0..n.num_inputs).map(input).collect();
        return Some(broadcast(&shapes?));
    }
    match op {
        "Shape" | "ShapeOf" => {
            let r = input(0)?.len() as i64;
            let clampi = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r);
            let (s, e) = if format == Format::Onnx {
                (
                    clampi(n.attr_int("start").unwrap_or(0)),
                    clampi(n.attr_int("end").unwrap_or(r)),
                )
            } else {
                (0, r)
            };
            Some(vec![DeclaredDim::Known((e - s).max(0) as u64)])
        }
        "Unsqueeze" | "Squeeze" => {
            let data = input(0)?;
            let axes =
                const_ints(graph, node, 1).or_else(|| n.attr_ints("axes").and_then(|r| r.ok()))?;
            if op == "Unsqueeze" {
                let out_rank = data.len() + axes.len();
                let mut new = vec![false; out_rank];
                for a in axes {
                    new[norm_axis(a, out_rank)?] = true;
                }
                let mut it = data.into_iter();
                Some(
                    new.into_iter()
                        .map(|b| {
                            if b {
                                DeclaredDim::Known(1)
                            } else {
                                it.next().unwrap_or(DeclaredDim::Unknown)
                            }
                        })
                        .collect(),
                )
            } else {
                let drop: Vec<usize> = axes
                    .iter()
                    .map(|&a| norm_axis(a, data.len()))
                    .collect::<Option<_>>()?;
                Some(
                    data.into_iter()
                        .enumerate()
                        .filter(|(i, _)| !drop.contains(i))
                        .map(|(_, d)| d)
                        .collect(),
                )
            }
        }
        "Gather" => {
            let data = input(0)?;
            let idx = input(1)?;
            let axis = if format == Format::Onnx {
                n.attr_int("axis").unwrap_or(0)
            } else {
                *const_ints(graph, node, 2)?.first()?
            };
            let axis = norm_axis(axis, data.len())?;
            let mut out = data[..axis].to_vec();
            out.extend(idx);
            out.extend_from_slice(&data[axis + 1..]);
            Some(out)
        }
        "Concat" => {
            let shapes: Vec<Vec<DeclaredDim>> =
                (0..n.num_inputs).map(input).collect::<Option<_>>()?;
            let first = shapes.first()?.clone();
            let axis = norm_axis(n.attr_int("axis").unwrap_or(0), first.len())?;
            let mut total = Some(0u64);
            for s in &shapes {
                total = match (total, s.get(axis)) {
                    (Some(t), Some(DeclaredDim::Known(v))) => t.checked_add(*v),
                    _ => None,
                };
            }
            let mut out = first;
            out[axis] = total
                .map(DeclaredDim::Known)
                .unwrap_or(DeclaredDim::Unknown);
            Some(out)
        }
        "Transpose" => {
            let data = input(0)?;
            let perm = match n.attr_ints("order").or_else(|| n.attr_ints("perm")) {
                Some(Ok(p)) => p,
                _ if format == Format::OpenVino => const_ints(graph, node, 1)?,
                _ => (0..data.len() as i64).rev().collect(),
            };
            perm.iter()
                .map(|&p| data.get(usize::try_from(p).ok()?).cloned())
                .collect()
        }
        _ => None,
    }
}

/// The output element type of `node`, for the ops this module knows.
fn output_dtype(graph: &Graph, node: NodeIndex, format: Format) -> Option<DType> {
    let n = graph.node(node);
    let input = |p: usize| {
        let o = graph.input(node, p)?;
        graph
            .constant_at(o)
            .map(|t| t.dtype)
            .or_else(|| graph.value(o)?.ty.dtype)
    };
    match n.op_type.as_str() {
        "Shape" => Some(DType::I64),
        "ShapeOf" => Some(if n.attr_str("output_type") == Some("i32") {
            DType::I32
        } else {
            DType::I64
        }),
        "Cast" if format == Format::Onnx => n
            .attr_int("to")
            .and_then(|c| DType::from_onnx_code(c as i32)),
        "Convert" => n.attr_str("destination_type").and_then(DType::from_ov_name),
        "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" | "And" | "Or" | "Xor"
        | "Not" | "IsNaN" | "NotEqual" | "LogicalAnd" | "LogicalOr" => Some(DType::Bool),
        "Where" | "Select" => input(1),
        op if UNARY.contains(&op) || BINARY.contains(&op) => input(0),
        "Unsqueeze" | "Squeeze" | "Gather" | "Concat" | "Transpose" => input(0),
        _ => None,
    }
}

/// Fills in the output shape and element type of `ix` when they are not declared and can be
/// derived from its inputs (call in topological order).
pub fn refine_node(graph: &mut Graph, ix: NodeIndex, format: Format) {
    let n = graph.node(ix);
    if n.kind != NodeKind::Op || n.outputs.is_empty() {
        return;
    }
    if n.outputs[0].ty.dtype.is_none() {
        if let Some(d) = output_dtype(graph, ix, format) {
            graph.node_mut(ix).outputs[0].ty.dtype = Some(d);
        }
    }
    if graph.node(ix).outputs[0].ty.shape.is_none() {
        if let Some(shape) = output_shape(graph, ix, format) {
            graph.node_mut(ix).outputs[0].ty.shape = Some(shape);
        }
    }
}
