//! Pass `fold`: a Slice or StridedSlice whose data and parameters are constant becomes one
//! constant (decoded through `shape::slice_node`, evaluated by `ops::eval::slice`); so does the
//! shape arithmetic real exporters put in front of slices, every op of the table
//! `ops::registry::OPS` (`Shape`, `Gather`, `Concat`, `Reshape`, `Cast`, integer `Add`… in
//! ONNX; `ShapeOf`, `Convert`, `Subtract`… in OpenVINO IR), whose rows and functions the family
//! files of `ops/eval/` declare. Unknown ops are never folded.
//!
//! A folded node is replaced by a constant node that keeps its name and its output's name, so
//! consumers, graph outputs and subgraph captures see the same value. A constant larger than the
//! limit is not produced; the report says what was skipped and why.

use petgraph::stable_graph::NodeIndex;

use crate::error::{Error, Result};
use crate::formats::{Format, Model};
use crate::ir::{DeclaredDim, Graph, NodeKind, Tensor, Value};
use crate::ops::eval::{self, EvalError};
use crate::ops::registry::{self, Inputs, Needs, NoEval};
use crate::passes::rewrite;
use crate::report::{Change, PassReport};
use crate::shape::slice_node::{self, DecodeError};

/// Default cap on the size of one produced constant: 16 MiB.
pub const DEFAULT_FOLD_LIMIT: u64 = 16 << 20;

/// Why a node was not folded.
enum NoFold {
    /// Not a foldable op, or its inputs are not constant: nothing to report.
    Silent,
    /// Worth reporting (too large, unsupported type...).
    Skip(String),
    /// The node is invalid: an error.
    Fail(Error),
}

impl From<EvalError> for NoFold {
    fn from(e: EvalError) -> Self {
        NoFold::Skip(e.to_string())
    }
}

fn consts(graph: &Graph, ix: NodeIndex) -> Option<Vec<Option<&Tensor>>> {
    let inputs = graph.inputs(ix);
    let mut out = Vec::with_capacity(inputs.len());
    for i in inputs {
        match i {
            None => out.push(None),
            Some(o) => out.push(Some(graph.constant_at(o)?)),
        }
    }
    Some(out)
}

/// Whether every connected input of `ix` is a constant: [`consts`] is `Some`, without
/// building the list (a slice is checked once per run of `fold`).
fn all_inputs_constant(graph: &Graph, ix: NodeIndex) -> bool {
    use petgraph::visit::EdgeRef;
    let ports = graph.node(ix).num_inputs as usize;
    graph
        .g
        .edges_directed(ix, petgraph::Direction::Incoming)
        .filter(|e| (e.weight().dst_port as usize) < ports)
        .all(|e| {
            graph
                .g
                .node_weight(e.source())
                .is_some_and(|n| n.constant().is_some())
        })
}

fn known_shape(graph: &Graph, ix: NodeIndex) -> Option<Vec<u64>> {
    let src = graph.input(ix, 0)?;
    slice_node::declared_shape(graph, src)?
        .iter()
        .map(|d| match d {
            DeclaredDim::Known(v) => Some(*v),
            _ => None,
        })
        .collect()
}

/// Computes the constant value of node `ix`, if it folds. `opset`: the model's
/// [`Model::onnx_opset`], read once by the caller (it searches the opset imports, and this
/// runs on every node: 6 % of a fold of wide_sym_100k). `plans`: the plans of the slices with
/// constant parameters decoded so far in this run (valid as long as the pass only turns ops
/// into constants: see [`slice_node::PlanMemo`]).
fn evaluate(
    model: &Model,
    ix: NodeIndex,
    limit: u64,
    opset: i64,
    plans: &mut slice_node::PlanMemo,
) -> std::result::Result<Tensor, NoFold> {
    let graph = model.graph();
    let n = graph.node(ix);
    if n.kind != NodeKind::Op || n.outputs.len() != 1 {
        return Err(NoFold::Silent);
    }
    let format = model.format();
    if let Some(op) = slice_node::classify(graph, ix, format, opset) {
        let data = graph
            .input(ix, 0)
            .and_then(|o| graph.constant_at(o))
            .ok_or(NoFold::Silent)?;
        if !all_inputs_constant(graph, ix) {
            return Err(NoFold::Silent);
        }
        let sn = match slice_node::decode_memo(graph, ix, op, None, Some(plans)) {
            Ok(sn) => sn,
            Err(DecodeError::Unknown(_)) => return Err(NoFold::Silent),
            Err(DecodeError::Invalid(source)) => {
                return Err(NoFold::Fail(Error::Slice {
                    node: n.name.to_string(),
                    op: n.op_type.to_string(),
                    source,
                }))
            }
            Err(DecodeError::Malformed(message)) => {
                return Err(NoFold::Fail(Error::Node {
                    path: model.path().to_path_buf(),
                    node: n.name.to_string(),
                    op: n.op_type.to_string(),
                    message,
                }))
            }
        };
        // Where the runtimes disagree on the result (issue 42, pattern G), no answer is written.
        // (The dims are built only for a plan that may split: a negative step.)
        let dims: Option<Vec<crate::semantics::Dim>> = slice_node::may_split(op, &sn.plan)
            .then(|| {
                data.shape
                    .iter()
                    .map(|&d| i64::try_from(d).ok().map(crate::semantics::Dim::known))
                    .collect()
            })
            .flatten();
        if let Some(split) = dims.and_then(|d| slice_node::runtime_split(op, &sn.plan, &d)) {
            return Err(NoFold::Skip(split.describe(&sn.plan, Some(&data.shape))));
        }
        return match eval::slice(data, &sn.plan, op.clamp(), limit) {
            Ok(t) => Ok(t),
            Err(EvalError::Slice(source)) => Err(NoFold::Fail(Error::Slice {
                node: n.name.to_string(),
                op: n.op_type.to_string(),
                source,
            })),
            Err(e) => Err(e.into()),
        };
    }
    let entry = registry::lookup(n, format).ok_or(NoFold::Silent)?;
    if let Some(precheck) = entry.precheck {
        precheck(n).map_err(|e| NoFold::Skip(e.to_string()))?;
    }
    let (consts, dims) = match entry.needs {
        // Checked without building the list first: most nodes have an input that is not
        // constant, and this runs on every node of the graph.
        Needs::Constants if !all_inputs_constant(graph, ix) => return Err(NoFold::Silent),
        Needs::Constants => (consts(graph, ix).ok_or(NoFold::Silent)?, Vec::new()),
        Needs::InputDims => (Vec::new(), known_shape(graph, ix).ok_or(NoFold::Silent)?),
    };
    call_entry(model, ix, entry, &consts, &dims, limit).map_err(|e| match e {
        NoEval::Silent => NoFold::Silent,
        NoEval::Skip(why) => NoFold::Skip(why),
    })
}

/// `entry`'s evaluation of node `ix` on the given input constants (or input dims).
fn call_entry(
    model: &Model,
    ix: NodeIndex,
    entry: &registry::OpEntry,
    consts: &[Option<&Tensor>],
    dims: &[u64],
    limit: u64,
) -> std::result::Result<Tensor, NoEval> {
    let tensor_attr = |name: &str| onnx_tensor_attr(model, ix, name);
    (entry.eval)(&Inputs {
        node: model.graph().node(ix),
        dialect: model.format(),
        consts,
        dims,
        tensor_attr: &tensor_attr,
        limit,
    })
}

/// Values the runtimes compute differently (issue 42, pattern G), one per reading (see
/// [`crate::ops::eval::cast::cast_readings`]: ONNX Runtime's, OpenVINO's). Such a node is never
/// folded; a node computed from such values folds where every reading gives the same tensor (T5's
/// `Where` that discards the buckets `Log(0)` gave), and stays split otherwise.
type Split = std::collections::HashMap<NodeIndex, Vec<Tensor>>;

/// What every reading of a node with a [`Split`] input gives.
enum Readings {
    /// The same tensor in every reading: it folds.
    Same(Tensor),
    /// Different tensors: the node stays, split.
    Differ(Vec<Tensor>),
    /// Not evaluated (an input neither constant nor split, an op `fold` does not evaluate, an
    /// error in a reading).
    No,
}

/// The readings of `ix`, a registry op with at least one [`Split`] input.
fn evaluate_readings(model: &Model, ix: NodeIndex, limit: u64, split: &Split) -> Readings {
    let graph = model.graph();
    let n = graph.node(ix);
    let format = model.format();
    if n.kind != NodeKind::Op || n.outputs.len() != 1 {
        return Readings::No;
    }
    let Some(entry) = registry::lookup(n, format) else {
        return Readings::No;
    };
    if !matches!(entry.needs, Needs::Constants)
        || slice_node::classify(graph, ix, format, 0).is_some()
        || entry.precheck.is_some_and(|p| p(n).is_err())
    {
        return Readings::No;
    }
    let inputs = graph.inputs(ix);
    let count = inputs
        .iter()
        .flatten()
        .filter_map(|o| split.get(&o.node).map(Vec::len))
        .max()
        .unwrap_or(0);
    let mut out: Vec<Tensor> = Vec::with_capacity(count);
    for r in 0..count {
        let mut consts = Vec::with_capacity(inputs.len());
        for i in &inputs {
            match i {
                None => consts.push(None),
                Some(o) => match split.get(&o.node) {
                    Some(v) if o.port == 0 => match v.get(r) {
                        Some(t) => consts.push(Some(t)),
                        None => return Readings::No,
                    },
                    Some(_) => return Readings::No,
                    None => match graph.constant_at(*o) {
                        Some(t) => consts.push(Some(t)),
                        None => return Readings::No,
                    },
                },
            }
        }
        match call_entry(model, ix, entry, &consts, &[], limit) {
            Ok(t) => out.push(t),
            Err(_) => return Readings::No,
        }
    }
    match out.first() {
        None => Readings::No,
        Some(first) if out.iter().all(|t| t == first) => Readings::Same(out.swap_remove(0)),
        Some(_) => Readings::Differ(out),
    }
}

/// The readings of a node whose own value the runtimes compute differently (an ONNX `Cast` of
/// `-inf` to an integer), when its inputs are constants.
fn own_readings(model: &Model, ix: NodeIndex, limit: u64) -> Option<Vec<Tensor>> {
    let graph = model.graph();
    let n = graph.node(ix);
    if n.kind != NodeKind::Op || n.outputs.len() != 1 || model.format() != crate::ir::Format::Onnx {
        return None;
    }
    let consts = consts(graph, ix)?;
    let tensor_attr = |name: &str| onnx_tensor_attr(model, ix, name);
    crate::ops::eval::cast::cast_node_readings(&Inputs {
        node: n,
        dialect: model.format(),
        consts: &consts,
        dims: &[],
        tensor_attr: &tensor_attr,
        limit,
    })
    .ok()
    .flatten()
}

/// Where [`known_value`] takes its facts from.
enum FactsSource<'a> {
    /// The facts of the `infer` run just before (the pipeline's): on any graph, symbolic too.
    Given(&'a crate::shape::Facts),
    /// Propagated by `fold` itself on first need, only on a graph whose inputs are pinned
    /// (`None` before the decision, `Some(None)` when not computed).
    Own(Option<Option<crate::shape::Facts>>),
}

impl FactsSource<'_> {
    fn get(&mut self, model: &Model) -> Option<&crate::shape::Facts> {
        match self {
            FactsSource::Given(f) => Some(f),
            FactsSource::Own(own) => {
                if own.is_none() {
                    // The facts know whole values where the sizes are pinned (`--dim`,
                    // `--input-shape`, static inputs). With a graph input whose dims are not
                    // all known, a value the fold table cannot evaluate is in practice
                    // symbolic (a `Shape` of that input), and the propagation would cost a
                    // whole `infer` for nothing: it is not run.
                    let pinned = model.graph().g.node_weights().all(|w| {
                        w.kind != NodeKind::Input
                            || w.outputs.iter().all(|v| {
                                v.ty.shape.as_ref().is_some_and(|s| {
                                    s.iter()
                                        .all(|d| matches!(d, crate::ir::DeclaredDim::Known(_)))
                                })
                            })
                    });
                    *own = Some(if pinned {
                        crate::shape::propagate(model).ok()
                    } else {
                        None
                    });
                }
                own.as_ref()?.as_ref()
            }
        }
    }
}

/// Whether every element of a fact's value is one the runtime computes the same way in the
/// value's element type: a known element within the type's range, an expression or unknown
/// element whose finite bounds are within it, and never a constant beyond `i64` (the facts
/// compute in `i128`, where the runtime wraps). A value that fails may differ from what the
/// runtime computes, and so may anything computed from it ([`Wraps`]).
fn value_fits(fact: &crate::shape::Fact) -> bool {
    let Some(value) = &fact.value else {
        return true;
    };
    let (lo, hi) = int_range(fact.dtype.unwrap_or(crate::ir::DType::I64));
    value.iter().all(|e| {
        if let Some(k) = e.as_known() {
            return (lo..=hi).contains(&(k as i128));
        }
        if !e.is_unknown() && e.symbols().is_empty() {
            // A constant expression that is not `Known`: beyond i64.
            return false;
        }
        let (l, h) = e.bounds();
        let within = |v: Option<i64>| v.is_none_or(|v| (lo..=hi).contains(&(v as i128)));
        if !within(l) || !within(h) {
            return false;
        }
        // An unbounded expression in a type narrower than 64 bits (`Cast` of a shape to
        // int32): it must stay in range with every symbol at a large size, not only at its
        // bounds (`d + INT32_MAX` has a lower bound in range and wraps at `d = 1`).
        // (An unknown element, a dim without a name, passes on its bounds: it has no symbol to
        // probe.)
        if h.is_none() && hi < i64::MAX as i128 && !e.is_unknown() {
            let probe: std::collections::HashMap<String, i64> = e
                .symbols()
                .iter()
                .map(|s| (s.name().to_string(), s.bounds().0.max(NARROW_PROBE)))
                .collect();
            return e
                .eval(&probe)
                .is_some_and(|v| (lo..=hi).contains(&(v as i128)));
        }
        true
    })
}

/// The size every symbol takes when an unbounded value of a narrow integer type is checked for
/// range ([`value_fits`]): 2^20, larger than any dim of the export corpus.
const NARROW_PROBE: i64 = 1 << 20;

/// The range of an integer (or boolean) element type, in `i128`.
fn int_range(d: crate::ir::DType) -> (i128, i128) {
    use crate::ir::DType::*;
    match d {
        Bool => (0, 1),
        I8 => (i8::MIN as i128, i8::MAX as i128),
        I16 => (i16::MIN as i128, i16::MAX as i128),
        I32 => (i32::MIN as i128, i32::MAX as i128),
        U8 => (0, u8::MAX as i128),
        U16 => (0, u16::MAX as i128),
        U32 => (0, u32::MAX as i128),
        U64 => (0, u64::MAX as i128),
        _ => (i64::MIN as i128, i64::MAX as i128),
    }
}

/// The nodes whose facts may differ from what the runtime computes because a value on their
/// path left its element type's range (see [`value_fits`]): decided in topological order, a
/// node is marked when its own value does not fit or when one of its inputs is marked.
#[derive(Default)]
struct Wraps(crate::ir::FastSet<NodeIndex>);

impl Wraps {
    /// Decides node `ix` (every producer of its inputs decided before).
    fn visit(&mut self, graph: &Graph, facts: &crate::shape::Facts, ix: NodeIndex) {
        use petgraph::visit::EdgeRef;
        // (The edges are read only once some node is marked: most graphs have none.)
        let tainted = facts.outputs(ix).iter().any(|f| !value_fits(f))
            || !self.0.is_empty()
                && graph
                    .g
                    .edges_directed(ix, petgraph::Direction::Incoming)
                    .any(|e| self.0.contains(&e.source()));
        if tainted {
            self.0.insert(ix);
        }
    }
}

/// The value shape propagation knows for the one output of node `ix`, when every element is a
/// known integer: a node of the fold table whose inputs are not all constants or whose input
/// dims the file does not declare (a `Shape` or `Size` of a value whose dims inference knows,
/// `Gather` of the one static dim of a symbolic shape). The facts hold for the graph as `fold`
/// found it: folding keeps every value, so they stay true while the pass folds. A value on
/// whose path an element left its type's range (`wraps`) is not taken.
fn known_value(
    model: &Model,
    ix: NodeIndex,
    limit: u64,
    facts: &mut FactsSource,
    wraps: &Wraps,
    opset: i64,
) -> Option<Tensor> {
    let graph = model.graph();
    let n = graph.node(ix);
    if n.kind != NodeKind::Op || n.outputs.len() != 1 || n.num_inputs == 0 {
        return None;
    }
    // Only integer values are taken from the facts: a node whose output, or whose first
    // input, is declared of another type is passed over before the facts are computed (the
    // propagation costs a whole `infer`, which a graph of float slices must not pay).
    let integer = |t: Option<crate::ir::DType>| {
        t.is_none_or(|d| d.is_index_type() || d == crate::ir::DType::Bool)
    };
    let first_input = graph
        .input(ix, 0)
        .and_then(|o| graph.node(o.node).outputs.get(o.port))
        .and_then(|v| v.ty.dtype);
    if !integer(n.outputs[0].ty.dtype) || !integer(first_input) {
        return None;
    }
    let format = model.format();
    // An op of the fold table, or a slice (a `Slice` of a `Shape` whose dims are static where it
    // reads them).
    if registry::lookup(n, format).is_none()
        && slice_node::classify(graph, ix, format, opset).is_none()
    {
        return None;
    }
    let facts = facts.get(model)?;
    let fact = facts.get(crate::ir::OutletId { node: ix, port: 0 });
    let dtype = fact.dtype?;
    if !(dtype.is_index_type() || dtype == crate::ir::DType::Bool) {
        return None;
    }
    if wraps.0.contains(&ix) {
        return None;
    }
    let shape: Vec<u64> = fact
        .known_shape()?
        .into_iter()
        .map(u64::try_from)
        .collect::<std::result::Result<_, _>>()
        .ok()?;
    let values = fact.known_value()?;
    if values.len() as u64 != shape.iter().product::<u64>() {
        return None;
    }
    eval::cast(&Tensor::from_i64(shape, &values), dtype, limit).ok()
}

/// The constant target a `Reshape` with a computed target can read instead
/// ([`crate::shape::constant_reshape_target`]), unless a value on the target's path may have
/// wrapped.
fn reshape_target(
    graph: &Graph,
    facts: &crate::shape::Facts,
    wraps: &Wraps,
    ix: NodeIndex,
) -> Option<Vec<i64>> {
    if wraps.0.contains(&ix) {
        return None;
    }
    crate::shape::constant_reshape_target(graph, facts, ix)
}

/// A tensor attribute of an ONNX node as loaded (the IR keeps tensor attributes only in the
/// node's original record).
fn onnx_tensor_attr(model: &Model, ix: NodeIndex, name: &str) -> Option<Tensor> {
    let Model::Onnx(onnx) = model else {
        return None;
    };
    let crate::ir::Origin::OnnxNode(i) = model.graph().node(ix).origin else {
        return None;
    };
    let record = onnx.node_record(i as usize)?;
    let a = record.attribute.iter().find(|a| a.name() == name)?;
    let dir = model.path().parent().unwrap_or(std::path::Path::new("."));
    let mut ext = crate::formats::onnx::ExternalFiles::new(dir);
    crate::formats::onnx::tensor_from_proto(a.t.as_deref()?, &mut ext).ok()
}

/// Replaces node `ix` by a constant holding `t`; the constant keeps the node's name, output
/// name and position.
pub fn replace_with_constant(
    graph: &mut Graph,
    ix: NodeIndex,
    t: Tensor,
    format: Format,
) -> NodeIndex {
    let mut inputs = Vec::new();
    become_constant(graph, ix, Box::new(t), format, &mut inputs);
    for e in inputs {
        graph.g.remove_edge(e);
    }
    ix
}

/// Turns node `ix` into a constant holding `t`, in place: same index, name, output name and
/// position, so its consumers read the constant without being touched. Its input edges are
/// pushed onto `dead_inputs` for the caller to remove ([`Graph::remove_edges`], all at once:
/// one by one is quadratic when many folded nodes share a constant parameter). Until then
/// they are inert: a constant has no input ports.
fn become_constant(
    graph: &mut Graph,
    ix: NodeIndex,
    t: Box<Tensor>,
    format: Format,
    dead_inputs: &mut Vec<petgraph::stable_graph::EdgeIndex>,
) {
    use petgraph::visit::EdgeRef;
    dead_inputs.extend(
        graph
            .g
            .edges_directed(ix, petgraph::Direction::Incoming)
            .map(|e| e.id()),
    );
    let n = graph.node_mut(ix);
    let (op_type, domain) = match format {
        Format::OpenVino => ("Const", "opset1"),
        Format::Onnx => ("", ""),
    };
    n.op_type = op_type.into();
    n.domain = domain.into();
    n.num_inputs = 0;
    n.attrs = Vec::new();
    // A record of its own: the writers must not rebuild it from the folded node's record.
    n.origin = crate::ir::Origin::New;
    n.dirty = true;
    // The output is rewritten in place (its name kept; the list and the shape reuse their
    // blocks): a new list and shape per folded node were two allocations and two frees each,
    // on 150,000 folded nodes of wide_sym_100k.
    n.outputs.truncate(1);
    if n.outputs.is_empty() {
        n.outputs.push(Value::default());
    }
    let v = &mut n.outputs[0];
    v.ty.dtype = Some(t.dtype);
    let dims = t.shape.iter().map(|&d| DeclaredDim::Known(d));
    match &mut v.ty.shape {
        Some(shape) => {
            shape.clear();
            shape.extend(dims);
        }
        None => v.ty.shape = Some(dims.collect()),
    }
    v.ty_changed = true;
    n.kind = NodeKind::Const(t);
}

/// The slices whose inputs are all constants of the graph as `fold` finds it (`order`, a
/// topological order of it), evaluated at once on rayon's pool: `(position in order, what
/// [`evaluate`] gives)`, by position. Nothing such a slice reads changes while the pass folds
/// (its inputs are not ops, so none becomes a constant; only its own node is rewritten, after
/// its turn), so the outcome is the one [`evaluate`] gives in its turn; the pass takes them in
/// order. Fewer than `min` ([`EARLY_MIN`] in a run) such slices: none (the pool is not
/// started for them).
///
/// On wide_sym_100k.onnx a third of the folded nodes (50,000 slices of constants, a third of
/// the fold's instructions) are such slices.
fn evaluate_early(
    model: &Model,
    order: &[NodeIndex],
    limit: u64,
    opset: i64,
    min: usize,
) -> Vec<(u32, Early)> {
    use rayon::prelude::*;
    let graph = model.graph();
    let format = model.format();
    let ready: Vec<usize> = order
        .iter()
        .enumerate()
        .filter(|&(_, &ix)| {
            graph.g.node_weight(ix).is_some_and(|n| {
                n.kind == NodeKind::Op
                    && n.num_inputs > 0
                    && all_inputs_constant(graph, ix)
                    && slice_node::classify(graph, ix, format, opset).is_some()
            })
        })
        .map(|(at, _)| at)
        .collect();
    if ready.is_empty() || ready.len() < min {
        return Vec::new();
    }
    let out = ready
        .into_par_iter()
        .map_init(slice_node::PlanMemo::default, |plans, at| {
            let outcome = evaluate(model, order[at], limit, opset, plans)
                .map(Box::new)
                .map_err(Box::new);
            (crate::ir::to_u32(at), outcome)
        })
        .collect();
    // What they read of the input file is not kept resident (see `RELEASE_EVERY`).
    model.release_input_pages();
    out
}

/// The part of `infer`'s facts `fold` reads, the rest dropped before the walk when it is
/// most of them ([`crate::shape::Facts::retain_nodes`]; on wide_sym_100k, 30 MB of the run's
/// peak, which is at the end of the walk): the facts of
/// every node with a value (a known value folds, [`known_value`]; a value that may have
/// wrapped taints what reads it, [`Wraps`]), and those of each `Reshape` and of the producer
/// of its target ([`crate::shape::constant_reshape_target`]). Any other node's facts have no
/// value and are read only by those two, which take a node without facts as one without a
/// value: the walk does the same with or without them.
fn facts_fold_reads(graph: &Graph, facts: crate::shape::Facts) -> crate::shape::Facts {
    let mut reshape_side = std::collections::HashSet::new();
    for ix in graph.g.node_indices() {
        if crate::shape::is_reshape(graph.node(ix)) {
            reshape_side.insert(ix);
            if let Some(target) = graph.input(ix, 1) {
                reshape_side.insert(target.node);
            }
        }
    }
    facts.retain_nodes(|ix, f| f.iter().any(|f| f.value.is_some()) || reshape_side.contains(&ix))
}

/// An outcome of [`evaluate`] as [`evaluate_early`] keeps it until its turn: 16 bytes (a
/// tensor and an error inline made each entry of the list ten times larger, at the peak of
/// the run).
type Early = std::result::Result<Box<Tensor>, Box<NoFold>>;

/// The fewest slices [`evaluate_early`] evaluates on the pool.
const EARLY_MIN: usize = 4096;

/// Folds between two releases of the input file's pages ([`Model::release_input_pages`]).
const RELEASE_EVERY: usize = 8192;

/// Folds every foldable node of `model`, in topological order (so chains fold in one run).
pub fn run(model: &mut Model, limit: u64, report: &mut PassReport) -> Result<()> {
    run_listing(model, limit, None, None, report).map(|_| ())
}

/// [`run`], also listing the nodes it folded (each became a constant in place, at the same
/// index). `facts`: those of an `infer` run on the graph as it is (the pipeline's), from which
/// a value the inference knows folds on a symbolic graph too; without them, `fold` propagates
/// its own only on a graph whose inputs are pinned. `order`: a topological order of the graph
/// as it is (that `infer` run's), else sorted here. The facts are dropped on rayon's pool once
/// the walk is done (dropping them took 32M instructions on wide_sym_100k's main thread).
pub(crate) fn run_listing(
    model: &mut Model,
    limit: u64,
    facts: Option<crate::shape::Facts>,
    order: Option<Vec<NodeIndex>>,
    report: &mut PassReport,
) -> Result<Vec<NodeIndex>> {
    run_listing_early(model, limit, facts, order, report, EARLY_MIN)
}

/// [`run_listing`], evaluating the slices [`evaluate_early`] lists on the pool when there are
/// `early_min` of them or more.
fn run_listing_early(
    model: &mut Model,
    limit: u64,
    facts: Option<crate::shape::Facts>,
    order: Option<Vec<NodeIndex>>,
    report: &mut PassReport,
    early_min: usize,
) -> Result<Vec<NodeIndex>> {
    let facts = facts.map(|f| facts_fold_reads(model.graph(), f));
    let mut folded = Vec::new();
    let order = match order {
        Some(order) => order,
        None => model
            .graph()
            .topo_order()
            .map_err(|c| Error::cycle(model.path(), c))?,
    };
    let format = model.format();
    // A folded node becomes a constant in place; the edges into it are removed at the end,
    // all at once (one by one is quadratic when folded nodes share constant parameters).
    // Room for every edge: only the part used is touched (grown by doubling, each copy was
    // fresh memory).
    let mut dead_inputs = Vec::with_capacity(model.graph().g.edge_count());
    let opset = model.onnx_opset();
    // Shape facts (issue 43: a value the inference knows as constant folds even when its
    // inputs are not constants): the pipeline's, else computed the first time a node of the
    // table does not evaluate, on a pinned graph only (see `FactsSource`).
    let mut source = match &facts {
        Some(f) => FactsSource::Given(f),
        None => FactsSource::Own(None),
    };
    // With given facts, the nodes whose value may have wrapped are tracked on every node, in
    // order; the facts `fold` propagates itself are only for pinned graphs, where they are
    // taken as before.
    let mut wraps = Wraps::default();
    let mut since_release = 0usize;
    let mut split = Split::new();
    let mut plans = slice_node::PlanMemo::default();
    let mut early = evaluate_early(model, &order, limit, opset, early_min)
        .into_iter()
        .peekable();
    for (at, ix) in order.into_iter().enumerate() {
        if model.graph().g.node_weight(ix).is_none() {
            continue;
        }
        // (A constant's value is its tensor: never wrapped, never a Reshape.)
        let is_op = matches!(model.graph().node(ix).kind, crate::ir::NodeKind::Op);
        if let (FactsSource::Given(f), true) = (&source, is_op) {
            wraps.visit(model.graph(), f, ix);
            if let Some(values) = reshape_target(model.graph(), f, &wraps, ix) {
                retarget_reshape(model.graph_mut(), format, ix, &values, report);
                // (A node added to the graph may take the index of one removed before: the
                // plans are decoded afresh.)
                plans = slice_node::PlanMemo::default();
            }
        }
        let early_here = early.next_if(|(p, _)| *p as usize == at);
        let split_input = is_op
            && !split.is_empty()
            && model
                .graph()
                .inputs(ix)
                .iter()
                .flatten()
                .any(|o| split.contains_key(&o.node));
        let mut outcome = if split_input {
            match evaluate_readings(model, ix, limit, &split) {
                Readings::Same(t) => Ok(Box::new(t)),
                Readings::Differ(v) => {
                    split.insert(ix, v);
                    Err(NoFold::Silent)
                }
                Readings::No => Err(NoFold::Silent),
            }
        } else {
            match early_here {
                Some((_, o)) => o.map_err(|e| *e),
                None => evaluate(model, ix, limit, opset, &mut plans).map(Box::new),
            }
        };
        if let (false, Err(NoFold::Skip(why))) = (split_input, &outcome) {
            if let Some(v) = own_readings(model, ix, limit) {
                outcome = match v.first() {
                    Some(first) if v.iter().all(|t| t == first) => Ok(Box::new(first.clone())),
                    _ => {
                        let why = format!(
                            "{why}: the runtimes differ (ONNX Runtime: the type's minimum, OpenVINO: -2^31); not folded, the values computed from it fold where they agree"
                        );
                        split.insert(ix, v);
                        Err(NoFold::Skip(why))
                    }
                };
            }
        }
        if matches!(outcome, Err(NoFold::Silent)) {
            if let Some(t) = known_value(model, ix, limit, &mut source, &wraps, opset) {
                outcome = Ok(Box::new(t));
            }
        }
        match outcome {
            Ok(t) => {
                let graph = model.graph();
                if let Some(w) = slice_node::classify(graph, ix, format, opset)
                    .and_then(|op| rewrite::ov_shrink_begin_mask_warning(graph, ix, op))
                {
                    report.warnings.push(w);
                }
                let n = model.graph().node(ix);
                report.change(|| Change {
                    node: n.name.to_string(),
                    op: n.op_type.to_string(),
                    what: "folded to a constant".into(),
                    before: n
                        .outputs
                        .first()
                        .map(|v| crate::ir::show_shape(v.ty.shape.as_deref())),
                    after: Some(crate::ir::show_shape(Some(&t.shape))),
                });
                become_constant(model.graph_mut(), ix, t, format, &mut dead_inputs);
                folded.push(ix);
                // The constants folded read the input file's map: its pages are given back
                // every so many folds, not kept resident to the end (wide_sym_100k.onnx reads
                // 13 MB of it folding 150,000 nodes, at the peak of the run).
                since_release += 1;
                if since_release == RELEASE_EVERY {
                    model.release_input_pages();
                    since_release = 0;
                }
            }
            Err(NoFold::Silent) => {}
            Err(NoFold::Skip(why)) => {
                let n = model.graph().node(ix);
                report.skip(|| Change {
                    node: n.name.to_string(),
                    op: n.op_type.to_string(),
                    what: why,
                    before: None,
                    after: None,
                });
            }
            Err(NoFold::Fail(e)) => {
                model.graph_mut().remove_edges(dead_inputs);
                return Err(e);
            }
        }
    }
    drop(source);
    // (Before the edges are removed, the peak of the run: the facts are not needed there.)
    if let Some(facts) = facts {
        rayon::spawn(move || drop(facts));
    }
    model.graph_mut().flush_detached();
    model.graph_mut().remove_edges(dead_inputs);
    // An `If` whose condition is now a constant gives way to the branch it takes, which may
    // fold in turn (`inline_if`; each round removes an `If`, so this ends). The facts of
    // the `infer` before describe the graph before the inlining: the next round runs without
    // them (its own only on a pinned graph).
    if crate::passes::inline_if::run(model, report)? > 0 {
        folded.extend(run_listing(model, limit, None, None, report)?);
    }
    Ok(folded)
}

/// Makes `Reshape` node `ix` read the constant target `values` ([`reshape_target`]) instead of
/// its computed one (detached: the caller flushes).
fn retarget_reshape(
    graph: &mut Graph,
    format: Format,
    ix: NodeIndex,
    values: &[i64],
    report: &mut PassReport,
) {
    use petgraph::visit::EdgeRef;
    let old: Vec<_> = graph
        .g
        .edges_directed(ix, petgraph::Direction::Incoming)
        .filter(|e| e.weight().dst_port == 1)
        .map(|e| e.id())
        .collect();
    for e in old {
        graph.detach_edge(e);
    }
    let c = crate::passes::build::Builder::new(graph, format, ix).const_i64("shape", values);
    graph.connect(c, ix, 1);
    graph.node_mut(ix).dirty = true;
    let n = graph.node(ix);
    report.change(|| Change {
        node: n.name.to_string(),
        op: n.op_type.to_string(),
        what: format!(
            "target read from a constant {values:?} (the output shape the inference knows)"
        ),
        before: None,
        after: None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::onnx::{proto, OnnxModel};
    use crate::report::PassKind;
    use prost::Message;

    fn i64_tensor(name: &str, values: &[i64]) -> proto::TensorProto {
        proto::TensorProto {
            name: Some(name.into()),
            dims: vec![values.len() as i64],
            data_type: Some(7),
            raw_data: Some(
                values
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect::<Vec<u8>>()
                    .into(),
            ),
            ..Default::default()
        }
    }

    fn node(op: &str, name: &str, inputs: &[&str]) -> proto::NodeProto {
        proto::NodeProto {
            op_type: Some(op.into()),
            name: Some(name.into()),
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![name.to_string()],
            ..Default::default()
        }
    }

    /// `chains` chains `Slice(Slice(c_i))` of constants `c_i = arange(64) + i` as `[8, 8]`
    /// float32 (`c_i[0:8, 0:6]`, then `[:, 1:5]`), each an output; the chain numbered `bad`
    /// has a step of 0 in its first slice (invalid: an error).
    fn chains_model(chains: usize, bad: Option<usize>) -> Model {
        let mut g = proto::GraphProto {
            name: Some("chains".into()),
            ..Default::default()
        };
        for (name, v) in [
            ("s0", &[0, 0][..]),
            ("e1", &[8, 6]),
            ("s1", &[0, 1]),
            ("e2", &[8, 5]),
            ("ax", &[0, 1]),
            ("st", &[1, 1]),
            ("st0", &[1, 0]),
        ] {
            g.initializer.push(i64_tensor(name, v));
        }
        for i in 0..chains {
            let values: Vec<f32> = (0..64).map(|k| (k + i) as f32).collect();
            g.initializer.push(proto::TensorProto {
                name: Some(format!("c{i}")),
                dims: vec![8, 8],
                data_type: Some(1),
                raw_data: Some(
                    values
                        .iter()
                        .flat_map(|v| v.to_le_bytes())
                        .collect::<Vec<u8>>()
                        .into(),
                ),
                ..Default::default()
            });
            let (c, a, b) = (format!("c{i}"), format!("a{i}"), format!("b{i}"));
            let step = if bad == Some(i) { "st0" } else { "st" };
            g.node
                .push(node("Slice", &a, &[&c, "s0", "e1", "ax", step]));
            g.node.push(node("Slice", &b, &[&a, "s1", "e2", "ax"]));
            g.output.push(proto::ValueInfoProto {
                name: Some(b),
                ..Default::default()
            });
        }
        let m = proto::ModelProto {
            ir_version: Some(8),
            opset_import: vec![proto::OperatorSetIdProto {
                domain: Some(String::new()),
                version: Some(17),
            }],
            graph: Some(g),
            ..Default::default()
        };
        let bytes = bytes::Bytes::from(m.encode_to_vec());
        Model::Onnx(OnnxModel::from_bytes("chains.onnx".as_ref(), bytes).expect("a valid model"))
    }

    /// Folds `model` with the first slices evaluated on the pool (`early_min` 1) or each in
    /// its turn (`usize::MAX`): what the pass gives (folded nodes or the error) and the report.
    fn fold_with(mut model: Model, early_min: usize) -> (String, Model, PassReport) {
        let mut report = PassReport::new(PassKind::Fold, true);
        let out = run_listing_early(
            &mut model,
            DEFAULT_FOLD_LIMIT,
            None,
            None,
            &mut report,
            early_min,
        );
        (format!("{out:?}"), model, report)
    }

    /// The slices of constants evaluated on the pool ahead of their turn give what the pass
    /// gives folding each in its turn: the same folded nodes, constants and report, and, with
    /// an invalid slice among them, the same error; the values are the slices' (ONNX Slice:
    /// `c[0:8, 0:6][:, 1:5]` = columns 1..5 of `c`).
    #[test]
    fn slices_evaluated_early_fold_as_in_their_turn() {
        for bad in [None, Some(0), Some(150)] {
            let (early_out, early, early_report) = fold_with(chains_model(300, bad), 1);
            let (turn_out, turn, turn_report) = fold_with(chains_model(300, bad), usize::MAX);
            assert_eq!(early_out, turn_out, "{bad:?}");
            assert_eq!(early.graph().g.node_count(), turn.graph().g.node_count());
            for (x, y) in early
                .graph()
                .g
                .node_weights()
                .zip(turn.graph().g.node_weights())
            {
                assert_eq!(x, y, "{bad:?}");
            }
            assert_eq!(early_report.changes.len(), turn_report.changes.len());
            if bad.is_some() {
                assert!(early_out.starts_with("Err("), "{early_out}");
                continue;
            }
            assert_eq!(early_report.changed, 600);
            let graph = early.graph();
            let b7 = graph
                .g
                .node_weights()
                .find(|n| n.name == "b7")
                .and_then(|n| n.constant())
                .expect("b7 folded");
            assert_eq!(b7.shape, [8, 4]);
            let want: Vec<f32> = (0..8)
                .flat_map(|r| (1..5).map(move |c| (r * 8 + c + 7) as f32))
                .collect();
            let got: Vec<f32> = b7
                .raw()
                .expect("bytes")
                .chunks(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            assert_eq!(got, want);
        }
    }
}
