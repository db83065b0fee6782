//! Opening subgraph bodies for a run of the passes, and writing them back: ONNX
//! `If`/`Loop`/`Scan` (graph-valued attributes) and OpenVINO `If`/`Loop`/`TensorIterator`
//! (`<then_body>`, `<else_body>`, `<body>`), nested too.
//!
//! Each body becomes a model of its own (the body's record and IR, see
//! [`crate::formats::onnx::subgraph`] and [`crate::formats::openvino::subgraph`]) on which the
//! pipeline runs, after the passes ran on the enclosing graph. The pipeline drives the walk
//! ([`crate::pipeline::Pipeline::run`]): `open` the bodies of a graph, run the passes on each
//! `Body` that `Bodies::next` hands out and give back what they did (`Bodies::close`), then
//! `write_back`. Nothing here calls the pipeline. What is known from outside flows
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

use std::collections::VecDeque;

use petgraph::stable_graph::NodeIndex;

use crate::error::Result;
use crate::formats::onnx::proto::{GraphProto, NodeProto, OperatorSetIdProto};
use crate::formats::onnx::{subgraph as onnx_subgraph, OnnxModel};
use crate::formats::openvino::OvModel;
use crate::formats::Model;
use crate::ir::{FastMap, NodeKind, Origin, OutletId, TensorData};
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

/// The bodies of `model`'s nodes lie deeper than the passes enter: a warning per node that
/// holds them (in the first pass's report), naming the depth, instead of a silent no-op.
pub(crate) fn too_deep(model: &Model, report: &mut Report, depth: usize) {
    let graph = model.graph();
    let holders: Vec<NodeIndex> = match model {
        Model::Onnx(m) => graph
            .g
            .node_indices()
            .filter(|&ix| match graph.node(ix).origin {
                Origin::OnnxNode(i) => m.body_holders().binary_search(&(i as usize)).is_ok(),
                _ => false,
            })
            .collect(),
        Model::OpenVino(_) => graph
            .g
            .node_indices()
            .filter(|&ix| {
                let n = graph.node(ix);
                n.kind == NodeKind::Op
                    && matches!(n.op_type.as_str(), "If" | "Loop" | "TensorIterator")
            })
            .collect(),
    };
    let Some(pr) = report.passes.first_mut() else {
        return;
    };
    for ix in holders {
        pr.warnings.push(Change::note(
            scope::label(graph, ix),
            graph.node(ix).op_type.to_string(),
            format!(
                "its bodies are nested {} levels deep and were left as they are: the passes enter bodies at most {} levels deep",
                depth + 1,
                scope::MAX_DEPTH
            ),
        ));
    }
}

/// One body, opened as a model of its own for a run of the passes.
pub(crate) struct Body {
    /// The body as a model.
    pub model: Model,
    /// What is known about its inputs from outside it.
    pub seeds: shape::Seeds,
    /// Its path (`Loop_0/body/`): its report entries and errors are named by it.
    pub prefix: String,
    back: Back,
}

/// What writing a body back into its enclosing model needs.
enum Back {
    Onnx {
        /// The holder's node record.
        node: usize,
        attr: String,
        formal_inputs: usize,
        /// Unnamed nodes named by their path label for the run, to unname before writing.
        labelled: Vec<(NodeIndex, String)>,
        /// Captured names that are constants in the enclosing graph (made constants inside).
        outer_consts: Vec<String>,
    },
    OpenVino {
        /// The holder's layer.
        layer: usize,
        name: String,
    },
}

/// The bodies of one graph, opened one holder at a time, and what the runs on them changed.
pub(crate) struct Bodies<'m> {
    kind: Kind<'m>,
}

enum Kind<'m> {
    /// No body to enter.
    None,
    Onnx(OnnxBodies<'m>),
    OpenVino(OvBodies<'m>),
}

/// What [`Bodies::finish`] hands to [`write_back`]: the changed bodies.
pub(crate) enum Written {
    None,
    Onnx {
        overrides: Vec<(usize, String, GraphProto)>,
        /// Domains a pass brought into a body (raise: `org.tensorflow`).
        imports: Vec<OperatorSetIdProto>,
    },
    OpenVino {
        overrides: Vec<(usize, String, OvModel)>,
    },
}

/// Opens the bodies of `model`'s graph (whose inputs `seeds` says what is known of from
/// outside). Nothing is read until [`Bodies::next`].
pub(crate) fn open<'m>(model: &'m Model, seeds: &shape::Seeds) -> Bodies<'m> {
    let kind = match model {
        Model::Onnx(m) => OnnxBodies::open(m, seeds).map_or(Kind::None, Kind::Onnx),
        Model::OpenVino(m) => OvBodies::open(m, seeds).map_or(Kind::None, Kind::OpenVino),
    };
    Bodies { kind }
}

impl Bodies<'_> {
    /// Whether a run on these bodies must record every change and skipped node whatever the
    /// enclosing run does (ONNX: some changes are dropped by [`Bodies::close`] before the counts
    /// are merged).
    pub(crate) fn record_details(&self) -> bool {
        matches!(self.kind, Kind::Onnx(_))
    }

    /// The next body, in topological order of the nodes that hold them. A body that cannot be
    /// read is left as it is, and `report`'s first pass says why.
    pub(crate) fn next(&mut self, report: &mut Report) -> Option<Body> {
        match &mut self.kind {
            Kind::None => None,
            Kind::Onnx(b) => b.next(report),
            Kind::OpenVino(b) => b.next(report),
        }
    }

    /// Adds what the run on `body` did (`sub`) to `report`, and keeps the body to write back
    /// if a pass changed it.
    pub(crate) fn close(&mut self, body: Body, sub: Report, report: &mut Report) -> Result<()> {
        match &mut self.kind {
            Kind::None => Ok(()),
            Kind::Onnx(b) => b.close(body, sub, report),
            Kind::OpenVino(b) => {
                b.close(body, sub, report);
                Ok(())
            }
        }
    }

    /// The changed bodies, for [`write_back`].
    pub(crate) fn finish(self) -> Written {
        match self.kind {
            Kind::None => Written::None,
            Kind::Onnx(b) => Written::Onnx {
                overrides: b.overrides,
                imports: b.imports,
            },
            Kind::OpenVino(b) => Written::OpenVino {
                overrides: b.overrides,
            },
        }
    }
}

/// Writes the changed bodies back into `model` (written when it is saved), then drops with
/// `cleanup` a value only a rewritten body read (an outer constant whose slice folded).
pub(crate) fn write_back(model: &mut Model, written: Written, report: &mut Report) -> Result<()> {
    match (&mut *model, written) {
        (Model::Onnx(m), Written::Onnx { overrides, imports }) => {
            for (i, attr, g) in overrides {
                m.body_overrides.entry(i).or_default().push((attr, g));
            }
            for op in imports {
                m.ensure_opset_import(op.domain(), op.version());
            }
        }
        (Model::OpenVino(m), Written::OpenVino { overrides }) => {
            m.body_overrides.extend(overrides);
        }
        _ => {}
    }
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

/// The facts of `graph` (itself seeded by `seeds` when it is a body; `loops`: its `Loop`
/// nodes, whose outputs get what their bodies give).
fn outer_facts(
    graph: &crate::ir::Graph,
    format: crate::formats::Format,
    opset: i64,
    seeds: &shape::Seeds,
    loops: &super::loops::Loops,
) -> shape::Facts {
    shape::propagate_seeded_with(
        graph,
        format,
        opset,
        &|ix| seeds.get(&ix).cloned(),
        &|g, f, ix| loops.rule(g, f, ix),
    )
    .unwrap_or_default()
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

/// An error of a pass in a body, its node named by its path (`prefix`, the body's
/// [`Body::prefix`]).
pub(crate) fn with_path(e: crate::error::Error, prefix: &str) -> crate::error::Error {
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

/// The bodies of an ONNX graph.
struct OnnxBodies<'m> {
    outer: Outer<'m>,
    /// The nodes holding bodies, in topological order: (node, record, its record).
    holders: std::vec::IntoIter<(NodeIndex, usize, NodeProto)>,
    /// The holder whose bodies are being handed out.
    current: Option<OnnxHolder>,
    overrides: Vec<(usize, String, GraphProto)>,
    imports: Vec<OperatorSetIdProto>,
}

/// The enclosing ONNX graph, as its bodies see it.
struct Outer<'m> {
    m: &'m OnnxModel,
    opset: i64,
    facts: shape::Facts,
    /// Every named value of the graph.
    by_name: FastMap<&'m str, OutletId>,
}

struct OnnxHolder {
    ix: NodeIndex,
    /// The holder's node record.
    i: usize,
    /// The holder's path (`Loop_0/`).
    prefix: String,
    /// The facts of the holder's inputs.
    inputs: Vec<Fact>,
    bodies: VecDeque<Result<onnx_subgraph::Body>>,
}

impl<'m> OnnxBodies<'m> {
    fn open(m: &'m OnnxModel, seeds: &shape::Seeds) -> Option<OnnxBodies<'m>> {
        if m.body_holders().is_empty() {
            return None;
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
            return None;
        }
        let opset = m.opset();
        let graph = &m.graph;
        let loops = super::loops::Loops::of_onnx(m);
        let facts = outer_facts(graph, crate::formats::Format::Onnx, opset, seeds, &loops);
        let mut by_name: FastMap<&str, OutletId> = FastMap::default();
        for o in graph.g.node_indices() {
            for (port, v) in graph.node(o).outputs.iter().enumerate() {
                if !v.name.is_empty() {
                    by_name.insert(v.name.as_str(), OutletId { node: o, port });
                }
            }
        }
        Some(OnnxBodies {
            outer: Outer {
                m,
                opset,
                facts,
                by_name,
            },
            holders: holders.into_iter(),
            current: None,
            overrides: Vec::new(),
            imports: Vec::new(),
        })
    }

    fn next(&mut self, report: &mut Report) -> Option<Body> {
        let outer = &self.outer;
        let graph = &outer.m.graph;
        loop {
            let Some(h) = self.current.as_mut() else {
                let (ix, i, np) = self.holders.next()?;
                let inputs: Vec<Fact> = graph
                    .inputs(ix)
                    .iter()
                    .map(|o| o.map(|o| outer.facts.get(o).clone()).unwrap_or_default())
                    .collect();
                self.current = Some(OnnxHolder {
                    ix,
                    i,
                    prefix: format!("{}/", scope::label(graph, ix)),
                    inputs,
                    bodies: onnx_subgraph::node_bodies(&outer.m.path, &np).into(),
                });
                continue;
            };
            let Some(body) = h.bodies.pop_front() else {
                self.current = None;
                continue;
            };
            let node = graph.node(h.ix);
            let body = match body {
                Ok(b) => b,
                Err(e) => {
                    unreadable(report, &h.prefix, &node.op_type, e.to_string());
                    continue;
                }
            };
            return Some(outer.open_body(h.i, &h.prefix, node, &h.inputs, body));
        }
    }

    fn close(&mut self, body: Body, mut sub: Report, report: &mut Report) -> Result<()> {
        let Back::Onnx {
            node,
            attr,
            formal_inputs,
            labelled,
            outer_consts,
        } = body.back
        else {
            return Ok(());
        };
        // An outer constant no longer read in the body stays where it is: not a change.
        for pr in &mut sub.passes {
            pr.changes.retain(|c| {
                !(pr.pass == PassKind::Cleanup
                    && c.op == "constant"
                    && outer_consts.contains(&c.node))
            });
            pr.changed = pr.changes.len();
        }
        merge(report, sub, &body.prefix);
        if let Model::Onnx(mut b) = body.model {
            for (bix, l) in labelled {
                if let Some(n) = b.graph.g.node_weight_mut(bix) {
                    if n.name == l {
                        n.name.clear();
                    }
                }
            }
            if !b.is_untouched() {
                self.overrides
                    .push((node, attr, b.body_record(formal_inputs)?));
                self.imports.extend(b.proto.opset_import.iter().cloned());
            }
        }
        Ok(())
    }
}

impl Outer<'_> {
    /// `body` of the node `node` (record `i`, path `prefix`, input facts `inputs`) as a model.
    fn open_body(
        &self,
        i: usize,
        prefix: &str,
        node: &crate::ir::Node,
        inputs: &[Fact],
        mut body: onnx_subgraph::Body,
    ) -> Body {
        let (graph, facts, by_name) = (&self.m.graph, &self.facts, &self.by_name);
        let body_prefix = format!("{prefix}{}/", body.attr);
        let (formal, carried) = seeds::formal_seeds(node, self.opset, inputs);
        let (_, body_seeds) = seeds::body_seeds(&body, self.opset, formal, &carried, |name| {
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
                    TensorData::Lazy(l) => l.len() <= OUTER_CONST_LIMIT,
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
        Body {
            model: Model::Onnx(self.m.body_model(body.proto, g)),
            seeds: body_seeds,
            prefix: body_prefix,
            back: Back::Onnx {
                node: i,
                attr: body.attr,
                formal_inputs: body.formal_inputs,
                labelled,
                outer_consts,
            },
        }
    }
}

/// The bodies of an OpenVINO graph.
struct OvBodies<'m> {
    m: &'m OvModel,
    facts: shape::Facts,
    /// The `If`/`Loop`/`TensorIterator` layers, in topological order: (node, layer).
    holders: std::vec::IntoIter<(NodeIndex, usize)>,
    current: Option<OvHolder>,
    overrides: Vec<(usize, String, OvModel)>,
}

struct OvHolder {
    ix: NodeIndex,
    layer: usize,
    prefix: String,
    bodies: VecDeque<crate::formats::openvino::subgraph::BodyAndInputs>,
}

impl<'m> OvBodies<'m> {
    fn open(m: &'m OvModel, seeds: &shape::Seeds) -> Option<OvBodies<'m>> {
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
            return None;
        }
        let loops = super::loops::Loops::default();
        let facts = outer_facts(&m.graph, crate::formats::Format::OpenVino, 0, seeds, &loops);
        Some(OvBodies {
            m,
            facts,
            holders: holders.into_iter(),
            current: None,
            overrides: Vec::new(),
        })
    }

    fn next(&mut self, report: &mut Report) -> Option<Body> {
        let m = self.m;
        loop {
            let Some(h) = self.current.as_mut() else {
                let (ix, layer) = self.holders.next()?;
                self.current = Some(OvHolder {
                    ix,
                    layer,
                    prefix: format!("{}/", scope::label(&m.graph, ix)),
                    bodies: m.bodies_and_inputs(ix).into(),
                });
                continue;
            };
            let Some((name, body, inputs)) = h.bodies.pop_front() else {
                self.current = None;
                continue;
            };
            let body_prefix = format!("{}{name}/", h.prefix);
            let body = match body {
                Ok(b) => b,
                Err(e) => {
                    let op = &m.graph.node(h.ix).op_type;
                    unreadable(report, &body_prefix, op, e.to_string());
                    continue;
                }
            };
            let mut body_seeds = shape::Seeds::default();
            for (input, id) in inputs {
                let (Some(o), Some(p)) = (m.graph.input(h.ix, input), body.node_of_layer_id(id))
                else {
                    continue;
                };
                body_seeds.insert(p, self.facts.get(o).clone());
            }
            return Some(Body {
                model: Model::OpenVino(body),
                seeds: body_seeds,
                prefix: body_prefix,
                back: Back::OpenVino {
                    layer: h.layer,
                    name,
                },
            });
        }
    }

    fn close(&mut self, body: Body, sub: Report, report: &mut Report) {
        merge(report, sub, &body.prefix);
        if let (Model::OpenVino(b), Back::OpenVino { layer, name }) = (body.model, body.back) {
            if !b.is_untouched() {
                self.overrides.push((layer, name, b));
            }
        }
    }
}
