//! Running the passes inside subgraph bodies: ONNX `If`/`Loop`/`Scan` (graph-valued
//! attributes) and OpenVINO `If`/`Loop`/`TensorIterator` (`<then_body>`, `<else_body>`,
//! `<body>`), nested too.
//!
//! Each body becomes a model of its own (the body's record and IR, see
//! [`crate::formats::onnx::subgraph`] and [`crate::formats::openvino::subgraph`]) on which the
//! pipeline runs, after the passes ran on the enclosing graph. What is known from outside flows
//! in as seeds of the body's inputs ([`crate::shape::Seeds`]):
//! - ONNX: every name the body reads from an enclosing scope gets that value's facts; a name
//!   that is a constant there (an initializer or a `Constant`) is a constant in the body, so a
//!   slice of it folds into a constant of the body; `Loop`/`Scan` formal inputs get what
//!   [`crate::subgraph::seeds`] derives (iteration number, condition, carried values whose dims
//!   the body keeps, scan elements);
//! - OpenVINO: each `Parameter` the port map feeds whole from an outer input (not sliced per
//!   iteration, not carried through a back edge) gets that input's facts.
//!
//! A body a pass changed is written back in place of the one read (ONNX: the node's graph
//! attribute, re-encoded; OpenVINO: the body's `<layers>` and `<edges>`, original layers keeping
//! their ids, new constants appended to the `.bin`); untouched bodies stay as read, byte for
//! byte. Report entries of a body name their node with its path (`Loop_0/body/Slice_3`).

use petgraph::stable_graph::NodeIndex;

use crate::error::Result;
use crate::formats::onnx::{proto::NodeProto, subgraph as onnx_subgraph, OnnxModel};
use crate::formats::openvino::OvModel;
use crate::formats::Model;
use crate::ir::{FastMap, NodeKind, Origin, OutletId, TensorData};
use crate::pipeline::Pipeline;
use crate::report::{Change, PassKind, Report};
use crate::shape::slice_node;
use crate::shape::{self, Fact};
use crate::subgraph::{scope, seeds};

/// The largest constant of an enclosing graph (in bytes) that a body sees as a constant. A
/// larger one stays a value read from outside: folding in a body copies what it computes into
/// the body, and a large outer weight that something else still reads would be stored twice
/// (silero-vad's If branches slice its LSTM weights: with no limit the model grew from 2.2 to
/// 3.2 MiB).
pub const OUTER_CONST_LIMIT: usize = 1 << 10;

/// Runs `pipeline` in every body of `model` (recursively up to [`scope::MAX_DEPTH`] levels
/// below `depth`), adding what it did to `report` (one entry per pass, as the enclosing
/// graph's run made).
pub(crate) fn run(
    pipeline: &Pipeline,
    model: &mut Model,
    report: &mut Report,
    depth: usize,
    seeds: &shape::Seeds,
) -> Result<()> {
    if depth >= scope::MAX_DEPTH {
        return Ok(());
    }
    match model {
        Model::Onnx(m) => onnx(pipeline, m, report, depth, seeds)?,
        Model::OpenVino(m) => openvino(pipeline, m, report, depth, seeds)?,
    }
    // A value only a rewritten body read (an outer constant whose slice folded) is dropped
    // by `cleanup` now.
    let pruned = match model {
        Model::Onnx(m) => m.prune_captures(),
        Model::OpenVino(_) => 0,
    };
    if pruned > 0 {
        if let Some(pr) = report
            .passes
            .iter_mut()
            .rev()
            .find(|p| p.pass == PassKind::Cleanup)
        {
            crate::passes::cleanup::run(model, pr)?;
        }
    }
    Ok(())
}

/// The facts of `graph` (itself seeded by `seeds` when it is a body).
fn outer_facts(
    graph: &crate::ir::Graph,
    format: crate::formats::Format,
    opset: i64,
    seeds: &shape::Seeds,
) -> shape::Facts {
    shape::propagate_seeded(graph, format, opset, &|ix| seeds.get(&ix).cloned()).unwrap_or_default()
}

/// Adds the body's report to the enclosing one, naming body nodes by their path.
fn merge(report: &mut Report, body: Report, prefix: &str) {
    let named = |mut c: Change| {
        c.node = format!("{prefix}{}", c.node);
        c
    };
    for (pr, br) in report.passes.iter_mut().zip(body.passes) {
        pr.changed += br.changed;
        pr.skipped_count += br.skipped_count;
        if pr.details {
            pr.changes.extend(br.changes.into_iter().map(named));
            pr.skipped.extend(br.skipped.into_iter().map(named));
        }
        pr.warnings.extend(br.warnings.into_iter().map(named));
        pr.seconds += br.seconds;
    }
}

/// An error of a pass in a body, its node named by its path.
fn with_path(e: crate::error::Error, prefix: &str) -> crate::error::Error {
    use crate::error::Error;
    match e {
        Error::Node {
            path,
            node,
            op,
            message,
        } => Error::Node {
            path,
            node: format!("{prefix}{node}"),
            op,
            message,
        },
        Error::Slice { node, op, source } => Error::Slice {
            node: format!("{prefix}{node}"),
            op,
            source,
        },
        Error::Pass {
            pass,
            node,
            message,
        } => Error::Pass {
            pass,
            node: format!("{prefix}{node}"),
            message,
        },
        other => other,
    }
}

/// A body that could not be read is left as it is; the first pass's report says why.
fn unreadable(report: &mut Report, prefix: &str, op: &str, why: String) {
    if let Some(pr) = report.passes.first_mut() {
        pr.skip(|| {
            Change::note(
                prefix.trim_end_matches('/'),
                op,
                format!("body not entered: {why}"),
            )
        });
    }
}

fn onnx(
    pipeline: &Pipeline,
    m: &mut OnnxModel,
    report: &mut Report,
    depth: usize,
    seeds: &shape::Seeds,
) -> Result<()> {
    // Bodies record their changes whatever the enclosing run does: some are dropped below
    // before the counts are merged.
    let pipeline = &pipeline.clone().details(true);
    if m.body_holders().is_empty() {
        return Ok(());
    }
    let holders: Vec<(NodeIndex, usize, NodeProto)> = m
        .graph
        .topo_order()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|ix| match m.graph.node(ix).origin {
            Origin::OnnxNode(i) => Some((ix, i as usize)),
            _ => None,
        })
        .filter(|&(_, i)| m.body_holders().binary_search(&i).is_ok())
        .filter_map(|(ix, i)| Some((ix, i, m.node_record(i)?)))
        .collect();
    if holders.is_empty() {
        return Ok(());
    }
    let opset = m.opset();
    let graph = &m.graph;
    let facts = outer_facts(graph, crate::formats::Format::Onnx, opset, seeds);
    let mut by_name: FastMap<&str, OutletId> = FastMap::default();
    for o in graph.g.node_indices() {
        for (port, v) in graph.node(o).outputs.iter().enumerate() {
            if !v.name.is_empty() {
                by_name.insert(v.name.as_str(), OutletId { node: o, port });
            }
        }
    }
    let mut overrides: Vec<(usize, String, crate::formats::onnx::proto::GraphProto)> = Vec::new();
    let mut imports = Vec::new();
    for (ix, i, np) in holders {
        let node = graph.node(ix);
        let prefix = format!("{}/", scope::label(graph, ix));
        let inputs: Vec<Fact> = graph
            .inputs(ix)
            .iter()
            .map(|o| o.map(|o| facts.get(o).clone()).unwrap_or_default())
            .collect();
        for body in onnx_subgraph::node_bodies(&m.path, &np) {
            let mut body = match body {
                Ok(b) => b,
                Err(e) => {
                    unreadable(report, &prefix, &node.op_type, e.to_string());
                    continue;
                }
            };
            let body_prefix = format!("{prefix}{}/", body.attr);
            let (formal, carried) = seeds::formal_seeds(node, opset, &inputs);
            let (_, body_seeds) = seeds::body_seeds(&body, opset, formal, &carried, |name| {
                by_name.get(name).map(|&o| facts.get(o).clone())
            });
            let mut g = std::mem::take(&mut body.graph);
            // What flows in is also what the body's inputs declare, in memory only (a body's
            // inputs are written from its record): passes that read declared shapes see it.
            for (&bix, f) in &body_seeds {
                let Some(v) = g.g.node_weight_mut(bix).and_then(|n| n.outputs.first_mut()) else {
                    continue;
                };
                if v.ty.dtype.is_none() {
                    v.ty.dtype = f.dtype;
                }
                if v.ty.shape.is_none() {
                    v.ty.shape = f
                        .shape
                        .as_ref()
                        .map(|s| s.iter().map(|d| slice_node::from_dim(d, true)).collect());
                }
            }
            // Unnamed nodes are named by their path label while the passes run (the report
            // names them), and unnamed again before the body is written.
            let mut labelled = Vec::new();
            for bix in g.g.node_indices().collect::<Vec<_>>() {
                let n = g.node(bix);
                if matches!(n.origin, Origin::OnnxNode(_)) && n.name.is_empty() {
                    let l = scope::label(&g, bix);
                    g.node_mut(bix).name = l.clone().into();
                    labelled.push((bix, l));
                }
            }
            // Captured names that are constants outside are constants inside.
            let mut outer_consts: Vec<String> = Vec::new();
            for bix in g.g.node_indices().collect::<Vec<_>>() {
                let n = g.node(bix);
                let (NodeKind::Input, Origin::OnnxInput(k)) = (&n.kind, n.origin) else {
                    continue;
                };
                if (k as usize) < body.formal_inputs {
                    continue;
                }
                let Some(t) = n
                    .outputs
                    .first()
                    .and_then(|v| by_name.get(v.name.as_str()))
                    .and_then(|&o| graph.constant_at(o))
                    .filter(|t| match &t.data {
                        TensorData::Raw(b) => b.len() <= OUTER_CONST_LIMIT,
                        TensorData::Strings(_) => false,
                    })
                else {
                    continue;
                };
                let t = t.clone();
                let n = g.node_mut(bix);
                if let Some(v) = n.outputs.first_mut() {
                    v.ty.dtype = Some(t.dtype);
                    v.ty.shape = Some(
                        t.shape
                            .iter()
                            .map(|&d| crate::ir::DeclaredDim::Known(d))
                            .collect(),
                    );
                }
                n.kind = NodeKind::Const(Box::new(t));
                outer_consts.push(n.name.to_string());
            }
            let formal_inputs = body.formal_inputs;
            let mut bm = Model::Onnx(m.body_model(body.proto, g));
            let mut sub = pipeline
                .run_at(&mut bm, depth + 1, &body_seeds)
                .map_err(|e| with_path(e, &body_prefix))?;
            // An outer constant no longer read in the body stays where it is: not a change.
            for pr in &mut sub.passes {
                pr.changes.retain(|c| {
                    !(pr.pass == PassKind::Cleanup
                        && c.op == "constant"
                        && outer_consts.contains(&c.node))
                });
                pr.changed = pr.changes.len();
            }
            merge(report, sub, &body_prefix);
            if let Model::Onnx(b) = &mut bm {
                for (bix, l) in labelled {
                    if let Some(n) = b.graph.g.node_weight_mut(bix) {
                        if n.name == l {
                            n.name.clear();
                        }
                    }
                }
                if !b.is_untouched() {
                    overrides.push((i, body.attr, b.body_record(formal_inputs)?));
                    // Domains a pass brought into the body (raise: `org.tensorflow`).
                    imports.extend(b.proto.opset_import.iter().cloned());
                }
            }
        }
    }
    for (i, attr, g) in overrides {
        m.body_overrides.entry(i).or_default().push((attr, g));
    }
    for op in imports {
        m.ensure_opset_import(op.domain(), op.version());
    }
    Ok(())
}

fn openvino(
    pipeline: &Pipeline,
    m: &mut OvModel,
    report: &mut Report,
    depth: usize,
    seeds: &shape::Seeds,
) -> Result<()> {
    let holders: Vec<(NodeIndex, usize)> = m
        .graph
        .topo_order()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|ix| {
            let n = m.graph.node(ix);
            match n.origin {
                Origin::OvLayer(i)
                    if n.kind == NodeKind::Op
                        && matches!(n.op_type.as_str(), "If" | "Loop" | "TensorIterator") =>
                {
                    Some((ix, i as usize))
                }
                _ => None,
            }
        })
        .collect();
    if holders.is_empty() {
        return Ok(());
    }
    let facts = outer_facts(&m.graph, crate::formats::Format::OpenVino, 0, seeds);
    let mut overrides = Vec::new();
    for (ix, i) in holders {
        let prefix = format!("{}/", scope::label(&m.graph, ix));
        let op = m.graph.node(ix).op_type.clone();
        for (name, body) in m.bodies(ix) {
            let body_prefix = format!("{prefix}{name}/");
            let body = match body {
                Ok(b) => b,
                Err(e) => {
                    unreadable(report, &body_prefix, &op, e.to_string());
                    continue;
                }
            };
            let mut body_seeds = shape::Seeds::default();
            for (input, id) in m.body_inputs(ix, &name) {
                let (Some(o), Some(p)) = (m.graph.input(ix, input), body.node_of_layer_id(id))
                else {
                    continue;
                };
                body_seeds.insert(p, facts.get(o).clone());
            }
            let mut bm = Model::OpenVino(body);
            let sub = pipeline
                .run_at(&mut bm, depth + 1, &body_seeds)
                .map_err(|e| with_path(e, &body_prefix))?;
            merge(report, sub, &body_prefix);
            if let Model::OpenVino(b) = bm {
                if !b.is_untouched() {
                    overrides.push((i, name, b));
                }
            }
        }
    }
    m.body_overrides.extend(overrides);
    Ok(())
}
