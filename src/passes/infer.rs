//! Pass `infer`: shape inference of every Slice / StridedSlice output.
//!
//! Nodes are visited in topological order, so a slice of a slice sees the shape inferred for its
//! input. The inferred shape replaces the declared one (ONNX `value_info` / graph output,
//! OpenVINO output port `<dim>`s); symbolic results become ONNX `dim_param` expressions such as
//! `N - 1`, and OpenVINO interval dims where only bounds are known.

use crate::error::{Error, Result};
use crate::formats::{Format, Model};
use crate::ir::ValueType;
use crate::report::{Change, PassReport};
use crate::semantics;
use crate::shape;
use crate::shape::slice_node::{self, DecodeError};

/// The inferred output type of one slice node (as the file will declare it, and as exact
/// [`semantics::Dim`]s), or why there is none.
pub type Inferred = std::result::Result<(ValueType, Vec<semantics::Dim>), DecodeError>;

/// The inferred output type of the slice node `ix` as the file will declare it.
pub fn infer_type(
    model: &Model,
    ix: petgraph::stable_graph::NodeIndex,
) -> Option<std::result::Result<ValueType, DecodeError>> {
    infer_node(model, ix).map(|r| r.map(|(t, _)| t))
}

/// Infers the output type of the slice node `ix` (`None` if it is not a slice node).
///
/// Propagates facts through the whole graph first (linear in its size): to infer many nodes,
/// call [`shape::propagate`] once and use [`infer_node_with`].
pub fn infer_node(model: &Model, ix: petgraph::stable_graph::NodeIndex) -> Option<Inferred> {
    let facts = shape::propagate(model).unwrap_or_default();
    infer_node_with(model, &facts, ix)
}

/// Infers the output type of the slice node `ix` from the propagated `facts` of its inputs
/// (`None` if it is not a slice node).
pub fn infer_node_with(
    model: &Model,
    facts: &shape::Facts,
    ix: petgraph::stable_graph::NodeIndex,
) -> Option<Inferred> {
    let graph = model.graph();
    let opset = model.onnx_opset();
    let op = slice_node::classify(graph, ix, model.format(), opset)?;
    Some(typed(
        model,
        facts,
        shape::slice::slice_dims(graph, facts, ix, op).map(|(sn, out)| (sn.data, out)),
        &mut Declare::new(model.format()),
    ))
}

/// Dims as the file will declare them ([`slice_node::from_dim`]), remembered per dim: the
/// symbolic ones are printed and parsed back to check the text, and a model repeats a few
/// expressions (`batch`, `seq - 1`) over thousands of nodes.
struct Declare {
    symbolic: bool,
    memo: crate::ir::FastMap<semantics::Dim, crate::ir::DeclaredDim>,
    /// The last dim declared: consecutive slices mostly carry the same symbolic dim (`n` on
    /// every chain of a graph on `x: [n, 8]`), shared, so comparing it is a pointer compare
    /// where hashing it walks the expression (26M instructions on wide_sym_100k).
    last: Option<(semantics::Dim, crate::ir::DeclaredDim)>,
}

impl Declare {
    fn new(format: Format) -> Declare {
        Declare {
            symbolic: format == Format::Onnx,
            memo: Default::default(),
            last: None,
        }
    }

    fn dim(&mut self, d: &semantics::Dim) -> crate::ir::DeclaredDim {
        if let Some(v) = d.as_known().and_then(|v| u64::try_from(v).ok()) {
            return crate::ir::DeclaredDim::Known(v);
        }
        if let Some((_, declared)) = self.last.as_ref().filter(|(l, _)| l == d) {
            return declared.clone();
        }
        let declared = match self.memo.get(d) {
            Some(known) => known.clone(),
            None => {
                let declared = slice_node::from_dim(d, self.symbolic);
                self.memo.insert(d.clone(), declared.clone());
                declared
            }
        };
        self.last = Some((d.clone(), declared.clone()));
        declared
    }

    fn shape(&mut self, dims: &[semantics::Dim]) -> Vec<crate::ir::DeclaredDim> {
        dims.iter().map(|d| self.dim(d)).collect()
    }
}

/// The inferred type of a slice node from its data input and resolved output dims.
fn typed(
    model: &Model,
    facts: &shape::Facts,
    resolved: std::result::Result<(crate::ir::OutletId, Vec<semantics::Dim>), DecodeError>,
    declare: &mut Declare,
) -> Inferred {
    let (data, out) = resolved?;
    Ok((type_of(model, facts, data, &out, declare), out))
}

/// The type a slice node whose data input is `data` declares for output dims `out`.
fn type_of(
    model: &Model,
    facts: &shape::Facts,
    data: crate::ir::OutletId,
    out: &[semantics::Dim],
    declare: &mut Declare,
) -> ValueType {
    let graph = model.graph();
    let dtype = graph
        .constant_at(data)
        .map(|t| t.dtype)
        .or_else(|| graph.value(data).and_then(|v| v.ty.dtype))
        .or(facts.get(data).dtype);
    ValueType {
        dtype,
        shape: Some(declare.shape(out)),
    }
}

/// [`Inferred`] with the dims borrowed from the facts where they are a fact's shape.
type InferredRef<'f> =
    std::result::Result<(ValueType, std::borrow::Cow<'f, [semantics::Dim]>), DecodeError>;

/// [`infer_node_with`], taking what propagation already resolved for `ix` when it did
/// (`cached`, from [`shape::Facts::take_slice_memo`]).
fn infer_node_cached<'f>(
    model: &Model,
    facts: &'f shape::Facts,
    ix: petgraph::stable_graph::NodeIndex,
    declare: &mut Declare,
    op: Option<slice_node::SliceOp>,
    cached: Option<shape::SliceMemo>,
) -> Option<InferredRef<'f>> {
    use std::borrow::Cow;
    let graph = model.graph();
    op?;
    match (cached, graph.input(ix, 0)) {
        (Some(Ok(dims)), Some(data)) => {
            // `None`: the dims are the output fact's shape (borrowed, not copied).
            let out = match dims {
                Some(d) => Cow::Owned(d),
                None => Cow::Borrowed(
                    facts
                        .outputs(ix)
                        .first()
                        .and_then(|f| f.shape.as_deref())
                        .unwrap_or_default(),
                ),
            };
            Some(Ok((type_of(model, facts, data, &out, declare), out)))
        }
        (Some(Err(e)), _) => Some(Err(e)),
        _ => infer_node_with(model, facts, ix).map(|r| r.map(|(t, d)| (t, Cow::Owned(d)))),
    }
}

/// Records the propagated facts of the non-slice node `ix` where the file declares nothing, in
/// memory only (`ty_changed` stays false): later passes read them, the file does not change.
fn note_facts(
    model: &mut Model,
    facts: &shape::Facts,
    ix: petgraph::stable_graph::NodeIndex,
    declare: &mut Declare,
) {
    let node = model.graph_mut().node_mut(ix);
    if node.kind != crate::ir::NodeKind::Op {
        return;
    }
    for (v, f) in node.outputs.iter_mut().zip(facts.outputs(ix)) {
        if v.ty.dtype.is_none() {
            v.ty.dtype = f.dtype;
        }
        if v.ty.shape.is_none() {
            v.ty.shape = f.shape.as_deref().map(|s| declare.shape(s));
        }
    }
}

/// Runs shape inference on every slice node of `model`. Invalid parameters are an error naming
/// the node; a node whose input shape or parameters are unknown is reported as skipped.
pub fn run(model: &mut Model, report: &mut PassReport) -> Result<()> {
    run_open(model, &shape::Seeds::default(), &shape::no_holders, report).map(|_| ())
}

/// The slices left open (see [`run_open`]), the facts the run computed and the topological
/// order it visited, which hold for the graph as long as no pass rewrites it (`fold` reads
/// values from the facts and walks the same order).
pub(crate) type OpenAndFacts = (
    Vec<petgraph::stable_graph::NodeIndex>,
    shape::Facts,
    Vec<petgraph::stable_graph::NodeIndex>,
);

/// [`run`], also listing the slices left open: skipped, or with an output dim known only by
/// its bounds. Only such a slice can gain from running again after `fold` (an exact dim,
/// number or expression, is the same whatever folding did upstream). `seeds`: what is known
/// about the graph's inputs from outside it (a subgraph body's); `holders`: the outputs of
/// nodes that hold bodies (`Loop`), which the layer above passes gives.
pub(crate) fn run_open(
    model: &mut Model,
    seeds: &shape::Seeds,
    holders: &shape::HolderRule,
    report: &mut PassReport,
) -> Result<OpenAndFacts> {
    let mut open = Vec::new();
    let order = model
        .graph()
        .topo_order()
        .map_err(|c| Error::cycle(model.path(), c))?;
    let mut facts =
        shape::propagate_ordered_with(model, &order, &|ix| seeds.get(&ix).cloned(), holders);
    let mut declare = Declare::new(model.format());
    let opset = model.onnx_opset();
    for &ix in &order {
        // Classified once per node (the model's opset is read from its imports each time).
        let op = slice_node::classify(model.graph(), ix, model.format(), opset);
        // Only slice nodes have something to take (no lookup for the others).
        let cached = op.and_then(|_| facts.take_slice_memo(ix));
        let Some(result) = infer_node_cached(model, &facts, ix, &mut declare, op, cached) else {
            note_facts(model, &facts, ix, &mut declare);
            continue;
        };
        let node = model.graph().node(ix);
        // Names are copied only for a report entry or an error (not once per slice).
        let names = || (node.name.clone(), node.op_type.clone());
        // Runtimes that disagree on the node's result (issue 42, pattern G): the dims written
        // hold for every reading; the report says so.
        if let Some(w) =
            op.and_then(|op| slice_node::runtime_split_warning(model.graph(), Some(&facts), ix, op))
        {
            report.warnings.push(Change::note(
                node.name.to_string(),
                node.op_type.to_string(),
                w,
            ));
        }
        match result {
            Ok((mut ty, dims)) => {
                if dims.iter().any(semantics::Dim::is_unknown) {
                    open.push(ix);
                }
                let undeclared = ValueType::default();
                let before = node.outputs.first().map_or(&undeclared, |v| &v.ty);
                if ty.dtype.is_none() {
                    ty.dtype = before.dtype;
                }
                if ty != *before {
                    report.change(|| Change {
                        node: node.name.to_string(),
                        op: node.op_type.to_string(),
                        what: "shape inferred".into(),
                        before: Some(crate::ir::show_shape(before.shape.as_deref())),
                        after: Some(crate::ir::show_shape(Some(&dims))),
                    });
                    let n = model.graph_mut().node_mut(ix);
                    if let Some(v) = n.outputs.first_mut() {
                        v.ty = ty;
                        v.ty_changed = true;
                    }
                }
            }
            Err(DecodeError::Invalid(source)) => {
                let (name, op) = names();
                return Err(Error::Slice {
                    node: name.into(),
                    op: op.into(),
                    source,
                });
            }
            Err(DecodeError::Malformed(message)) => {
                let (name, op) = names();
                return Err(Error::Node {
                    path: model.path().to_path_buf(),
                    node: name.into(),
                    op: op.into(),
                    message,
                });
            }
            Err(DecodeError::Unknown(why)) => {
                open.push(ix);
                report.skip(|| {
                    let (name, op) = names();
                    Change {
                        node: name.into(),
                        op: op.into(),
                        what: why,
                        before: None,
                        after: None,
                    }
                })
            }
        }
    }
    // Every slice's memo was taken above; the index of them is not needed after.
    facts.forget_slice_memos();
    Ok((open, facts, order))
}
