//! An ONNX `If` whose condition is a constant is replaced by the nodes of the branch it takes
//! (issue 43: "`If` on a constant condition (inline the branch)"). `fold` calls it once its own
//! walk made the conditions it could constant, and folds again what the inlined nodes make
//! constant.
//!
//! The branch is read from the `If` node's record as an IR graph (`formats::onnx::subgraph`:
//! the names it reads from the enclosing scope are its extra inputs). Its nodes and constants
//! are added to the graph under fresh names (`<If name>__<branch>__<name>`, made unique in the
//! graph and against every name used in the model's bodies), so they can clash neither with the
//! graph's values nor with the other branch's; the names it reads from outside are wired to the
//! producers the `If` node captured; each consumer of an `If` output reads the branch output
//! instead, and the value keeps the `If` output's name where the branch computes it, so graph
//! outputs and value infos keep their names.
//!
//! Not inlined (the `If` stays, nothing is reported): a branch with a node whose attribute the
//! IR keeps only in its record (a nested subgraph, a tensor attribute), since an inlined node is
//! written from the IR; a branch whose outputs do not match the node's; an unnamed `If` in a
//! body (body runs name unnamed nodes for their report and unname them on writing). OpenVINO
//! `If` is not inlined.

use std::collections::HashMap;

use petgraph::stable_graph::NodeIndex;
use petgraph::visit::{EdgeRef, IntoEdgeReferences};

use crate::error::Result;
use crate::formats::onnx::subgraph::node_bodies;
use crate::formats::Model;
use crate::ir::{Attr, Graph, NodeKind, Origin, OutletId, Wire};
use crate::report::{Change, PassReport};

/// The condition of `If` node `ix` when it is a one-element constant.
fn constant_condition(graph: &Graph, ix: NodeIndex) -> Option<bool> {
    let t = graph.constant_at(graph.input(ix, 0)?)?;
    if t.element_count()? != 1 {
        return None;
    }
    let v = t.to_i64_vec()?;
    Some(*v.first()? != 0)
}

/// Inlines the taken branch of every `If` of `model`'s graph whose condition is a constant;
/// returns how many were inlined.
pub(crate) fn run(model: &mut Model, report: &mut PassReport) -> Result<usize> {
    let Model::Onnx(m) = model else {
        return Ok(0);
    };
    let graph = &m.graph;
    // Most graphs have no `If`: one plain pass over the node weights says so.
    if !graph
        .g
        .node_weights()
        .any(|n| matches!(n.kind, NodeKind::Op) && n.op_type == "If")
    {
        return Ok(0);
    }
    let candidates: Vec<(NodeIndex, u32, bool)> = graph
        .g
        .node_indices()
        .filter_map(|ix| {
            let n = graph.node(ix);
            if n.kind != NodeKind::Op
                || n.op_type != "If"
                || !(n.domain.is_empty() || n.domain == "ai.onnx")
                || n.name.is_empty()
            {
                return None;
            }
            let Origin::OnnxNode(i) = n.origin else {
                return None;
            };
            Some((ix, i, constant_condition(graph, ix)?))
        })
        .collect();
    if candidates.is_empty() {
        return Ok(0);
    }
    let path = m.path.clone();
    let mut inlined = 0;
    for (ix, i, cond) in candidates {
        let Some(record) = m.node_record(i as usize) else {
            continue;
        };
        let branch = if cond { "then_branch" } else { "else_branch" };
        // Names the bodies use: an inlined value must not take one (a body reading an outer
        // name would then read it).
        for a in &record.attribute {
            for g in a.g.as_deref().into_iter().chain(a.graphs.iter()) {
                reserve_body_names(&mut m.graph, g);
            }
        }
        let Some(Ok(body)) = node_bodies(&path, &record)
            .into_iter()
            .find(|b| b.as_ref().is_ok_and(|b| b.attr == branch))
        else {
            continue;
        };
        if inline(&mut m.graph, ix, branch, &body.graph, body.formal_inputs) {
            inlined += 1;
            let name = m.graph.node(ix).name.to_string();
            report.change(|| {
                Change::note(
                    name,
                    "If",
                    format!("replaced by its {branch} (the condition is the constant {cond})"),
                )
            });
            m.graph.remove_node_list(vec![ix]);
        }
    }
    m.graph.flush_detached();
    Ok(inlined)
}

fn reserve_body_names(graph: &mut Graph, g: &crate::formats::onnx::proto::GraphProto) {
    for v in g.input.iter().chain(&g.output).chain(&g.value_info) {
        graph.reserve_name(v.name());
    }
    for t in &g.initializer {
        graph.reserve_name(t.name());
    }
    for n in &g.node {
        graph.reserve_name(n.name());
        for o in &n.output {
            graph.reserve_name(o);
        }
        for a in &n.attribute {
            for sub in a.g.as_deref().into_iter().chain(a.graphs.iter()) {
                reserve_body_names(graph, sub);
            }
        }
    }
}

/// Adds the nodes of `body` (the `branch` of `If` node `ix`) to `graph` and moves the consumers
/// of the `If` outputs to the branch outputs. Returns false, with `graph` unchanged, when the
/// branch cannot be inlined (see the module doc).
fn inline(graph: &mut Graph, ix: NodeIndex, branch: &str, body: &Graph, formal: usize) -> bool {
    let if_node = graph.node(ix);
    let if_outputs: Vec<String> = if_node.outputs.iter().map(|v| v.name.to_string()).collect();
    let if_types: Vec<crate::ir::ValueType> =
        if_node.outputs.iter().map(|v| v.ty.clone()).collect();
    let base = format!("{}__{branch}__", if_node.name);
    // The body's outputs, in order, and its inputs (all captured: an If branch declares none).
    let mut outputs: Vec<(u32, NodeIndex)> = Vec::new();
    for bix in body.g.node_indices() {
        let n = body.node(bix);
        match (&n.kind, n.origin) {
            (NodeKind::Output, Origin::OnnxOutput(k)) => outputs.push((k, bix)),
            (NodeKind::Output, _) => return false,
            (NodeKind::Input, Origin::OnnxInput(k)) if (k as usize) < formal => return false,
            (NodeKind::Op, _) if n.attrs.iter().any(|(_, a)| matches!(a, Attr::Opaque)) => {
                return false
            }
            _ => {}
        }
    }
    outputs.sort_unstable();
    if outputs.len() != if_outputs.len()
        || (&body.g)
            .edge_references()
            .any(|e| e.weight().dst_port == Wire::CAPTURED)
    {
        return false;
    }
    let Some(inputs) = captured_inputs(graph, ix, body) else {
        return false;
    };
    // A branch output computed in the branch keeps the If output's name (each value once).
    let mut keep_name: HashMap<OutletId, String> = HashMap::new();
    for ((_, out), name) in outputs.iter().zip(&if_outputs) {
        if let Some(src) = body.input(*out, 0) {
            if body.node(src.node).kind != NodeKind::Input && !keep_name.contains_key(&src) {
                keep_name.insert(src, name.clone());
            }
        }
    }
    // The branch's nodes and constants, renamed.
    let mut added: HashMap<NodeIndex, NodeIndex> = HashMap::new();
    let mut order: Vec<NodeIndex> = body.g.node_indices().collect();
    order.sort_by_key(|&b| body.node(b).order);
    for bix in order {
        let n = body.node(bix);
        if !matches!(n.kind, NodeKind::Op | NodeKind::Const(_)) {
            continue;
        }
        let mut node = n.clone();
        let own = if n.name.is_empty() {
            &n.op_type
        } else {
            &n.name
        };
        node.name = graph.unique_name(&format!("{base}{own}")).into();
        for (p, v) in node.outputs.iter_mut().enumerate() {
            match keep_name.get(&OutletId { node: bix, port: p }) {
                Some(name) => {
                    v.name = name.clone().into();
                    // What the enclosing graph declares of the If output, if the branch
                    // declares nothing.
                    if v.ty.dtype.is_none() {
                        if let Some(k) = if_outputs.iter().position(|o| o == name) {
                            v.ty = if_types[k].clone();
                        }
                    }
                }
                None if v.name.is_empty() => {}
                None => v.name = graph.unique_name(&format!("{base}{}", v.name)).into(),
            }
            // A type is written only where one is known (an empty one is invalid).
            v.ty_changed = v.ty.dtype.is_some();
        }
        node.origin = Origin::New;
        node.order = (u32::MAX, 0);
        node.dirty = true;
        added.insert(bix, graph.add_node(node));
    }
    let resolve = |o: OutletId| -> Option<OutletId> {
        match added.get(&o.node) {
            Some(&n) => Some(OutletId {
                node: n,
                port: o.port,
            }),
            None => inputs.get(&o.node).copied(),
        }
    };
    for e in (&body.g).edge_references() {
        let w = *e.weight();
        if w.dst_port == Wire::DETACHED {
            continue;
        }
        let Some(&to) = added.get(&e.target()) else {
            continue;
        };
        let from = OutletId {
            node: e.source(),
            port: w.src_port as usize,
        };
        if let Some(from) = resolve(from) {
            graph.connect(from, to, w.dst_port as usize);
        }
    }
    for (k, (_, out)) in outputs.iter().enumerate() {
        if let Some(src) = body.input(*out, 0).and_then(resolve) {
            graph.redirect(OutletId { node: ix, port: k }, src);
        }
    }
    true
}

/// The outside value each input of `body` reads (what `If` node `ix` captures, by name);
/// `None` when the branch reads a name the `If` does not capture.
fn captured_inputs(
    graph: &Graph,
    ix: NodeIndex,
    body: &Graph,
) -> Option<HashMap<NodeIndex, OutletId>> {
    // What the If node reads from outside, by name.
    let captured: HashMap<String, OutletId> = graph
        .g
        .edges_directed(ix, petgraph::Direction::Incoming)
        .filter(|e| e.weight().dst_port == Wire::CAPTURED)
        .filter_map(|e| {
            let from = OutletId {
                node: e.source(),
                port: e.weight().src_port as usize,
            };
            Some((graph.value(from)?.name.to_string(), from))
        })
        .collect();
    let mut inputs: HashMap<NodeIndex, OutletId> = HashMap::new();
    for bix in body.g.node_indices() {
        let n = body.node(bix);
        if n.kind == NodeKind::Input {
            let v = n.outputs.first()?;
            match captured.get(v.name.as_str()) {
                Some(&o) => {
                    inputs.insert(bix, o);
                }
                // Declared but unread by the branch: nothing to wire.
                None if body
                    .g
                    .edges_directed(bix, petgraph::Direction::Outgoing)
                    .next()
                    .is_none() => {}
                None => return None,
            }
        }
    }
    Some(inputs)
}
