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
//! Then facts flow through the body as through any graph (the seeds: [`super::seeds`]). Nothing
//! here changes the model.

use std::borrow::Cow;
use std::path::Path;

use petgraph::stable_graph::NodeIndex;

use super::seeds::{body_facts, formal_seeds};
use crate::formats::onnx::proto::NodeProto;
use crate::formats::onnx::subgraph as onnx_subgraph;
use crate::formats::openvino::OvModel;
use crate::formats::{Format, Model};
use crate::ir::{FastMap, Graph, Origin, OutletId};
use crate::shape::{propagate_graph, Fact, Facts};

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
    let loops = super::loops::Loops::of(model);
    let facts = crate::shape::propagate_seeded_with(
        graph,
        model.format(),
        model.onnx_opset(),
        &|_| None,
        &|g, f, ix| loops.rule(g, f, ix),
    )
    .unwrap_or_default();
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
        for body in onnx_subgraph::node_bodies(path, &np) {
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
