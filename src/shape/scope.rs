//! Facts inside subgraph bodies: the top-level graph and every body of an ONNX `If`, `Loop` or
//! `Scan` or an OpenVINO `If`, `Loop` or `TensorIterator` (nested too), each with its
//! propagated facts and its path.
//!
//! A body's inputs get what is known from outside it:
//! - a value the body reads from an enclosing scope by name: that value's fact;
//! - `Loop`: the iteration number (`int64` scalar) and condition (`bool` scalar); each
//!   loop-carried value its initial fact where the body keeps it (a dim the body changes becomes
//!   unknown, the rank stays when the body keeps it; no symbolic value);
//! - `Scan` (opset 9+): the state variables as `Loop`'s carried values; each scan input the
//!   input's shape without its scan axis;
//! - otherwise, and for `If` branches (no inputs): what the body declares.
//!
//! OpenVINO bodies get what their `Parameter` port dims declare (the port maps are not read
//! yet).
//!
//! Then facts flow through the body as through any graph. Nothing here changes the model.

use std::borrow::Cow;
use std::path::Path;

use petgraph::stable_graph::NodeIndex;

use super::{propagate_graph, propagate_seeded, Fact, Facts};
use crate::formats::onnx::proto::NodeProto;
use crate::formats::onnx::subgraph;
use crate::formats::openvino::OvModel;
use crate::formats::{Format, Model};
use crate::ir::{DType, FastMap, Graph, NodeKind, Origin, OutletId};
use crate::semantics::Dim;

/// Bodies nested deeper than this are not entered.
pub const MAX_DEPTH: usize = 64;

/// One graph: the top level or a subgraph body.
#[derive(Debug)]
pub struct Scope<'a> {
    /// What goes before a node's label in its path: `""` at the top level,
    /// `If_3/then_branch/` in a body.
    pub prefix: String,
    /// The graph (the model's own at the top level).
    pub graph: Cow<'a, Graph>,
    /// Its facts.
    pub facts: Facts,
    /// Why a body could not be read, for each body that could not (path and message).
    pub errors: Vec<String>,
}

/// The label of a node in a path: its name, else `op_type_index` (its position in its graph's
/// node list), else its first output's name.
pub fn label(graph: &Graph, ix: NodeIndex) -> String {
    let n = graph.node(ix);
    if !n.name.is_empty() {
        return n.name.to_string();
    }
    if let Origin::OnnxNode(i) = n.origin {
        let i = i as usize;
        return format!("{}_{i}", n.op_type);
    }
    n.outputs
        .first()
        .map(|v| format!("({})", v.name))
        .unwrap_or_else(|| "(unnamed)".into())
}

/// The top-level graph of `model` followed by every subgraph body (depth first, in topological
/// order of the nodes that hold them).
pub fn scopes(model: &Model) -> Vec<Scope<'_>> {
    let graph = model.graph();
    let facts = propagate_graph(graph, model.format(), model.onnx_opset()).unwrap_or_default();
    let mut out = Vec::new();
    let mut bodies = Vec::new();
    match model {
        Model::Onnx(m) => {
            let record = |i: usize| {
                m.body_holders()
                    .binary_search(&i)
                    .ok()
                    .and_then(|_| m.node_record(i))
                    .map(Cow::Owned)
            };
            onnx_bodies(
                &m.path,
                m.opset(),
                graph,
                &record,
                &facts,
                "",
                0,
                &mut bodies,
            );
        }
        Model::OpenVino(m) => ov_bodies(m, "", 0, &mut bodies),
    }
    out.push(Scope {
        prefix: String::new(),
        graph: Cow::Borrowed(graph),
        facts,
        errors: Vec::new(),
    });
    out.extend(bodies);
    out
}

/// The record of node `i` of a graph when it holds subgraphs.
type HolderRecord<'r> = dyn Fn(usize) -> Option<Cow<'r, NodeProto>> + 'r;

/// Appends the bodies of the nodes of `graph` (whose holders' records `record` gives) to `out`,
/// recursively.
#[allow(clippy::too_many_arguments)]
fn onnx_bodies(
    path: &Path,
    opset: i64,
    graph: &Graph,
    record: &HolderRecord<'_>,
    facts: &Facts,
    prefix: &str,
    depth: usize,
    out: &mut Vec<Scope<'static>>,
) {
    if depth >= MAX_DEPTH {
        return;
    }
    let mut by_name: Option<FastMap<&str, OutletId>> = None;
    for ix in graph.topo_order().unwrap_or_default() {
        let node = graph.node(ix);
        let Origin::OnnxNode(i) = node.origin else {
            continue;
        };
        let i = i as usize;
        let Some(np) = record(i) else {
            continue;
        };
        let names = by_name.get_or_insert_with(|| {
            let mut m = FastMap::default();
            for o in graph.g.node_indices() {
                for (port, v) in graph.node(o).outputs.iter().enumerate() {
                    if !v.name.is_empty() {
                        m.insert(v.name.as_str(), OutletId { node: o, port });
                    }
                }
            }
            m
        });
        let node_prefix = format!("{prefix}{}/", label(graph, ix));
        let inputs: Vec<Fact> = graph
            .inputs(ix)
            .iter()
            .map(|o| o.map(|o| facts.get(o).clone()).unwrap_or_default())
            .collect();
        for body in subgraph::node_bodies(path, &np) {
            let body = match body {
                Ok(b) => b,
                Err(e) => {
                    out.push(Scope {
                        prefix: node_prefix.clone(),
                        graph: Cow::Owned(Graph::default()),
                        facts: Facts::default(),
                        errors: vec![e.to_string()],
                    });
                    continue;
                }
            };
            let body_prefix = format!("{node_prefix}{}/", body.attr);
            let (formal, carried) = formal_seeds(node, opset, &inputs);
            let body_facts = body_facts(&body, opset, formal, &carried, |name| {
                names.get(name).map(|&o| facts.get(o).clone())
            });
            let mut nested = Vec::new();
            let holder = |k: usize| {
                body.proto
                    .node
                    .get(k)
                    .filter(|n| crate::formats::onnx::holds_bodies(n))
                    .map(Cow::Borrowed)
            };
            onnx_bodies(
                path,
                opset,
                &body.graph,
                &holder,
                &body_facts,
                &body_prefix,
                depth + 1,
                &mut nested,
            );
            out.push(Scope {
                prefix: body_prefix,
                graph: Cow::Owned(body.graph),
                facts: body_facts,
                errors: Vec::new(),
            });
            out.extend(nested);
        }
    }
}

/// Appends the bodies of the `If`/`Loop`/`TensorIterator` layers of `model` to `out`,
/// recursively. A body's `Parameter`s have the shapes their port dims declare; nothing flows in
/// from the enclosing graph yet.
fn ov_bodies(model: &OvModel, prefix: &str, depth: usize, out: &mut Vec<Scope<'static>>) {
    if depth >= MAX_DEPTH {
        return;
    }
    let graph = &model.graph;
    for ix in graph.topo_order().unwrap_or_default() {
        let node_prefix = format!("{prefix}{}/", label(graph, ix));
        for (name, body) in model.bodies(ix) {
            let body_prefix = format!("{node_prefix}{name}/");
            let body = match body {
                Ok(b) => b,
                Err(e) => {
                    out.push(Scope {
                        prefix: body_prefix,
                        graph: Cow::Owned(Graph::default()),
                        facts: Facts::default(),
                        errors: vec![e.to_string()],
                    });
                    continue;
                }
            };
            let facts = propagate_graph(&body.graph, Format::OpenVino, 0).unwrap_or_default();
            let mut nested = Vec::new();
            ov_bodies(&body, &body_prefix, depth + 1, &mut nested);
            out.push(Scope {
                prefix: body_prefix,
                graph: Cow::Owned(body.graph),
                facts,
                errors: Vec::new(),
            });
            out.extend(nested);
        }
    }
}

/// What the node's own inputs say about the body's formal inputs, by position (`None`: only
/// what the body declares), and the carried values as (formal input, body output) pairs, which
/// [`body_facts`] refines.
pub(crate) type Seeds = (Vec<Option<Fact>>, Vec<(usize, usize)>);

pub(crate) fn formal_seeds(node: &crate::ir::Node, opset: i64, inputs: &[Fact]) -> Seeds {
    if !(node.domain.is_empty() || node.domain == "ai.onnx") {
        return Seeds::default();
    }
    let carried = |f: &Fact| Fact {
        dtype: f.dtype,
        shape: f.shape.clone(),
        value: None,
    };
    match node.op_type.as_str() {
        "Loop" => {
            // Body inputs: iteration, condition, carried...; outputs: condition, carried...
            let mut v = vec![
                Some(Fact {
                    dtype: Some(DType::I64),
                    shape: Some(Vec::new()),
                    value: None,
                }),
                Some(Fact {
                    dtype: Some(DType::Bool),
                    shape: Some(Vec::new()),
                    value: None,
                }),
            ];
            v.extend(inputs.iter().skip(2).map(|f| Some(carried(f))));
            let pairs = (2..v.len()).map(|i| (i, i - 1)).collect();
            (v, pairs)
        }
        "Scan" if opset >= 9 => {
            // Body inputs: states..., scan elements...; outputs: states..., scan outputs.
            let Some(m) = node.attr_int("num_scan_inputs") else {
                return Seeds::default();
            };
            let Some(n) = usize::try_from(m)
                .ok()
                .and_then(|m| inputs.len().checked_sub(m))
            else {
                return Seeds::default();
            };
            let axes = node
                .attr_ints("scan_input_axes")
                .and_then(|r| r.ok())
                .unwrap_or_default();
            let mut v: Vec<Option<Fact>> = inputs[..n].iter().map(|f| Some(carried(f))).collect();
            for (j, f) in inputs[n..].iter().enumerate() {
                let axis = axes.get(j).copied().unwrap_or(0);
                let shape = f.shape.as_ref().and_then(|s| {
                    let a = super::norm_axis(axis, s.len())?;
                    let mut s = s.clone();
                    s.remove(a);
                    Some(s)
                });
                v.push(Some(Fact {
                    dtype: f.dtype,
                    shape,
                    value: None,
                }));
            }
            (v, (0..n).map(|i| (i, i)).collect())
        }
        _ => Seeds::default(),
    }
}

/// Propagates facts through `body`, seeding its inputs. A carried value whose dims the body
/// changes is seeded again with those dims unknown (its rank unknown if the body changes the
/// rank), until the body keeps every seed.
fn body_facts(
    body: &subgraph::Body,
    opset: i64,
    formal: Vec<Option<Fact>>,
    carried: &[(usize, usize)],
    outer: impl Fn(&str) -> Option<Fact>,
) -> Facts {
    body_seeds(body, opset, formal, carried, outer).0
}

/// What is known about the inputs of `body` from outside it (by input node: the formal inputs
/// from `formal`, refined for the carried values as [`body_facts`] says; the captured names
/// from `outer`), with the facts they give.
pub(crate) fn body_seeds(
    body: &subgraph::Body,
    opset: i64,
    mut formal: Vec<Option<Fact>>,
    carried: &[(usize, usize)],
    outer: impl Fn(&str) -> Option<Fact>,
) -> (Facts, FastMap<NodeIndex, Fact>) {
    let g = &body.graph;
    // Graph input node and graph output node by position.
    let mut ins: Vec<(usize, NodeIndex)> = Vec::new();
    let mut outs: FastMap<usize, NodeIndex> = FastMap::default();
    for ix in g.g.node_indices() {
        match (g.node(ix).kind.clone(), g.node(ix).origin) {
            (NodeKind::Input, Origin::OnnxInput(i)) => ins.push((i as usize, ix)),
            (NodeKind::Output, Origin::OnnxOutput(i)) => {
                outs.insert(i as usize, ix);
            }
            _ => {}
        }
    }
    let captured: FastMap<NodeIndex, Fact> = ins
        .iter()
        .filter(|(i, _)| *i >= body.formal_inputs)
        .filter_map(|&(_, ix)| {
            let name = g.node(ix).outputs.first()?.name.as_str();
            Some((ix, outer(name)?))
        })
        .collect();
    formal.truncate(body.formal_inputs);
    let seeds = |formal: &[Option<Fact>]| -> FastMap<NodeIndex, Fact> {
        let mut m: FastMap<NodeIndex, Fact> = ins
            .iter()
            .filter_map(|&(i, ix)| Some((ix, formal.get(i)?.clone()?)))
            .collect();
        for (ix, f) in &captured {
            m.entry(*ix).or_insert_with(|| f.clone());
        }
        m
    };
    const ROUNDS: usize = 8;
    let mut round = 0;
    loop {
        let by_ix = seeds(&formal);
        let facts = propagate_seeded(g, Format::Onnx, opset, &|ix| by_ix.get(&ix).cloned())
            .unwrap_or_default();
        let mut changed = false;
        for &(i, o) in carried {
            let Some(s) = formal.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            let Some(&out_ix) = outs.get(&o) else {
                continue;
            };
            let updated = g.input(out_ix, 0).map(|src| facts.get(src));
            let updated_shape = updated.and_then(|f| f.shape.as_ref());
            let Some(shape) = s.shape.as_mut() else {
                continue;
            };
            match updated_shape {
                Some(u) if u.len() == shape.len() => {
                    for (d, u) in shape.iter_mut().zip(u) {
                        if d != u && !d.is_unknown() {
                            *d = Dim::unknown();
                            changed = true;
                        }
                    }
                }
                _ => {
                    s.shape = None;
                    changed = true;
                }
            }
        }
        round += 1;
        if !changed {
            return (facts, by_ix);
        }
        if round >= ROUNDS {
            // Give up on what the carried values are: rank-only knowledge could still be
            // wrong after more rounds, so every carried seed goes.
            for &(i, _) in carried {
                if let Some(seed) = formal.get_mut(i) {
                    *seed = None;
                }
            }
            let by_ix = seeds(&formal);
            let facts = propagate_seeded(g, Format::Onnx, opset, &|ix| by_ix.get(&ix).cloned())
                .unwrap_or_default();
            return (facts, by_ix);
        }
    }
}
