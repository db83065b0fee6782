//! Whole-graph shape propagation: a fact (element type, shape, and for small integer tensors a
//! symbolic value) for every output of every node.
//!
//! Facts flow forward once, in topological order. Each op family has one small file of pure
//! functions from the input facts (+ attributes) to the output facts; an op without a rule gets
//! what the file declares for it, or nothing ("unknown": never a guess). Dims are
//! [`crate::semantics::Dim`]s, so a symbol of a graph input (`q_len`) stays a symbol through the graph
//! and arithmetic on shapes gives expressions (`k_len - q_len`).
//!
//! Symbolic *values* follow ONNX data propagation and tract's `TDim` tensors: an integer tensor
//! of at most [`MAX_VALUE_ELEMENTS`] elements computed from shapes (`Shape` → `Gather` → `Sub` →
//! `Unsqueeze`) carries one `Dim` per element, so slice parameters and `Reshape` targets derived
//! from `Shape`/`ShapeOf` are exact.
//!
//! The facts are knowledge for inference and `check`; nothing here changes what is written.
//!
//! ```
//! let model = slice_opt::Model::load("models/gpt2_causal_mask.onnx".as_ref())?;
//! let facts = slice_opt::shape::propagate(&model)?;
//! let start = facts.by_name(model.graph(), "start").unwrap();
//! assert_eq!(start.value.as_ref().unwrap()[0].to_string(), "k_len - q_len");
//! # Ok::<(), slice_opt::Error>(())
//! ```

mod conv;
mod elementwise;
mod factor;
mod gather;
mod manip;
mod matmul;
mod reduce;
mod reshape;

pub(crate) use reshape::constant_target as constant_reshape_target;
pub(crate) use reshape::is_reshape;
mod rnn;
pub mod slice;
pub mod slice_node;

use petgraph::stable_graph::NodeIndex;
use petgraph::visit::NodeIndexable;

use crate::error::{Error, Result};
use crate::formats::{Format, Model};
use crate::ir::{DType, Graph, Node, NodeKind, OutletId};
use crate::semantics::Dim;

/// The largest integer tensor (element count) that carries a symbolic value.
pub const MAX_VALUE_ELEMENTS: usize = 64;

/// The largest rank a rule creates from a value's length (a `Reshape` target of unknown
/// elements); beyond it the rank stays unknown rather than allocating.
pub const MAX_RANK: usize = 1 << 16;

/// What is known about one value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fact {
    /// Element type.
    pub dtype: Option<DType>,
    /// Shape; `None` = rank unknown.
    pub shape: Option<Vec<Dim>>,
    /// For an integer (or boolean: 0/1) tensor of at most [`MAX_VALUE_ELEMENTS`] elements whose
    /// shape is known: its elements in row-major order (each a known value, an expression or
    /// unknown).
    pub value: Option<Vec<Dim>>,
}

impl Fact {
    /// A fact with only a shape.
    pub fn shaped(shape: Vec<Dim>) -> Fact {
        Fact {
            shape: Some(shape),
            ..Fact::default()
        }
    }

    /// The rank, when known.
    pub fn rank(&self) -> Option<usize> {
        self.shape.as_ref().map(Vec::len)
    }

    /// The value as integers, when every element is known.
    pub fn known_value(&self) -> Option<Vec<i64>> {
        self.value.as_ref()?.iter().map(Dim::as_known).collect()
    }

    /// The shape as integers, when every dim is known.
    pub fn known_shape(&self) -> Option<Vec<i64>> {
        self.shape.as_ref()?.iter().map(Dim::as_known).collect()
    }

    /// Sets `value` (dropped when it is too long or does not match the shape's element count).
    fn with_value(mut self, value: Option<Vec<Dim>>) -> Fact {
        if value.is_none() {
            // (Most facts: no element count to compute.)
            self.value = None;
            return self;
        }
        let count = self
            .shape
            .as_ref()
            .and_then(|s| s.iter().try_fold(1i64, |a, d| a.checked_mul(d.as_known()?)));
        self.value =
            value.filter(|v| v.len() <= MAX_VALUE_ELEMENTS && count == Some(v.len() as i64));
        self
    }
}

/// The facts of every output of every node of a graph.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Every node's output facts, node after node in the order they were set (one vector,
    /// not one per node: a graph of 600,000 nodes made 600,000 small allocations).
    flat: Vec<Fact>,
    /// Where each node's facts lie in `flat`: (start, count), by node index.
    /// 32-bit: 8 bytes a node, not 16 (facts past 2^32 - 1 are dropped: read as unknown).
    span: Vec<(u32, u32)>,
    /// What [`slice::slice_dims`] gave for each slice node during propagation, for pass
    /// `infer` to take instead of resolving every slice a second time: `slice_at[node index]`
    /// is 1 + the memo's position in `slices`, 0 for none, [`OUTPUT_SHAPE`] for `Ok(None)`
    /// (the commonest memo, kept without an entry: 48 bytes a slice). By node index, not a
    /// hash map: on a graph of 100,000 slices, inserting and taking through a map were 17 %
    /// of `infer`.
    slice_at: Vec<u32>,
    slices: Vec<Option<SliceMemo>>,
}

/// [`Facts::slice_at`] of a slice whose memo is `Ok(None)`.
const OUTPUT_SHAPE: u32 = u32::MAX;

/// The result of [`slice::slice_dims`] without the decoded node.
#[cfg(test)]
pub(crate) type SliceDims = std::result::Result<Vec<Dim>, slice_node::DecodeError>;

/// What [`slice::slice_dims`] resolves, as propagation keeps it: `Ok(None)` when the dims are the shape of the slice's
/// output fact (no dim unknown, so merging with what the file declares kept them), to keep
/// one copy of them, not two.
pub(crate) type SliceMemo = std::result::Result<Option<Vec<Dim>>, slice_node::DecodeError>;

static UNKNOWN: Fact = Fact {
    dtype: None,
    shape: None,
    value: None,
};

impl Facts {
    /// The fact of `outlet` (an empty fact when nothing is known).
    pub fn get(&self, outlet: OutletId) -> &Fact {
        self.outputs(outlet.node)
            .get(outlet.port)
            .unwrap_or(&UNKNOWN)
    }

    /// Takes what propagation resolved for the slice node `node` (once: a second call gets
    /// `None`).
    #[cfg(test)]
    pub(crate) fn take_slice_dims(&mut self, node: NodeIndex) -> Option<SliceDims> {
        match self.take_slice_memo(node)? {
            Ok(None) => self.outputs(node).first()?.shape.clone().map(Ok),
            Ok(Some(dims)) => Some(Ok(dims)),
            Err(e) => Some(Err(e)),
        }
    }

    /// What propagation resolved for the slice node `node` (once: a second call gets `None`),
    /// without copying dims the facts already hold: `Ok(None)` when
    /// the slice's dims are its output fact's shape (read them with [`Facts::outputs`]).
    pub(crate) fn take_slice_memo(&mut self, node: NodeIndex) -> Option<SliceMemo> {
        let at = std::mem::take(self.slice_at.get_mut(node.index())?);
        let memo = if at == OUTPUT_SHAPE {
            Ok(None)
        } else {
            self.slices.get_mut((at as usize).checked_sub(1)?)?.take()?
        };
        match memo {
            Ok(None) => {
                self.outputs(node).first()?.shape.as_ref()?;
                Some(Ok(None))
            }
            other => Some(other),
        }
    }

    /// Drops what propagation kept for [`Facts::take_slice_memo`] (once `infer` has taken
    /// it: 4 bytes a node, held through `fold` otherwise).
    pub(crate) fn forget_slice_memos(&mut self) {
        self.slice_at = Vec::new();
        self.slices = Vec::new();
    }

    /// These facts with at least the nodes `keep` accepts (given each node and its facts):
    /// when a quarter of the facts or fewer are kept, they are moved to a table of their own,
    /// every other node reads as a node without facts, and the rest is freed on rayon's pool;
    /// otherwise every fact is kept. The slice memos are dropped.
    pub(crate) fn retain_nodes(self, mut keep: impl FnMut(NodeIndex, &[Fact]) -> bool) -> Facts {
        let Facts {
            mut flat, mut span, ..
        } = self;
        let chosen: Vec<bool> = span
            .iter()
            .enumerate()
            .map(|(i, &(start, n))| {
                n > 0
                    && flat
                        .get(start as usize..start as usize + n as usize)
                        .is_some_and(|f| keep(NodeIndex::new(i), f))
            })
            .collect();
        let kept: usize = span
            .iter()
            .zip(&chosen)
            .filter(|(_, &c)| c)
            .map(|(&(_, n), _)| n as usize)
            .sum();
        if kept.saturating_mul(4) > flat.len() {
            // Most are kept: the table as it is (clearing the others in place frees less
            // than it costs, and moving the kept ones adds a second table to the peak).
            return Facts {
                flat,
                span,
                slice_at: Vec::new(),
                slices: Vec::new(),
            };
        }
        let mut out = Vec::with_capacity(kept);
        for (s, &c) in span.iter_mut().zip(&chosen) {
            let (start, n) = *s;
            *s = (0, 0);
            if c {
                let at = out.len() as u32;
                if let Some(f) = flat.get_mut(start as usize..start as usize + n as usize) {
                    out.extend(f.iter_mut().map(std::mem::take));
                    *s = (at, n);
                }
            }
        }
        // The facts not kept are freed on rayon's pool (300,000 on wide_sym_100k: 10 ms of
        // the main thread), while the caller goes on.
        rayon::spawn(move || drop(flat));
        Facts {
            flat: out,
            span,
            slice_at: Vec::new(),
            slices: Vec::new(),
        }
    }

    /// The facts of every output of `node`.
    pub fn outputs(&self, node: NodeIndex) -> &[Fact] {
        self.span
            .get(node.index())
            .and_then(|&(start, n)| self.flat.get(start as usize..start as usize + n as usize))
            .unwrap_or(&[])
    }

    /// The fact of the value named `name` (a linear search: for tests and tools).
    pub fn by_name<'a>(&'a self, graph: &Graph, name: &str) -> Option<&'a Fact> {
        graph.g.node_indices().find_map(|ix| {
            let port = graph
                .node(ix)
                .outputs
                .iter()
                .position(|v| v.name == name || v.name.split(',').any(|n| n == name))?;
            Some(self.get(OutletId { node: ix, port }))
        })
    }

    /// Sets the facts of `node`'s outputs (a second call replaces the first).
    /// Keeps what propagation resolved for the slice node `node`, for [`Facts::take_slice_memo`]
    /// (dropped past 2^32 - 1 memos: `infer` then resolves the slice again).
    fn keep_slice_dims(&mut self, node: NodeIndex, memo: SliceMemo) {
        let at = match &memo {
            Ok(None) => OUTPUT_SHAPE,
            _ => match u32::try_from(self.slices.len() + 1) {
                Ok(at) if at != OUTPUT_SHAPE => at,
                _ => return,
            },
        };
        let i = node.index();
        if self.slice_at.len() <= i {
            // Zeroed in one allocation, by node index like `span`.
            self.slice_at.resize(self.span.len().max(i + 1), 0);
        }
        self.slice_at[i] = at;
        if at != OUTPUT_SHAPE {
            self.slices.push(Some(memo));
        }
    }

    fn set(&mut self, node: NodeIndex, facts: impl IntoIterator<Item = Fact>) {
        let i = node.index();
        if self.span.len() <= i {
            self.span.resize(i + 1, (0, 0));
        }
        let start = self.flat.len();
        self.flat.extend(facts);
        self.span[i] = match (u32::try_from(start), u32::try_from(self.flat.len() - start)) {
            (Ok(s), Ok(n)) => (s, n),
            _ => (0, 0),
        };
    }
}

/// What a shape function sees: the node, the format, and the facts of its inputs by port.
pub(crate) struct Ctx<'a> {
    pub graph: &'a Graph,
    pub ix: NodeIndex,
    pub node: &'a Node,
    pub format: Format,
    pub onnx_opset: i64,
    pub facts: &'a Facts,
    /// The facts of the inputs by port (`None`: the port is not connected).
    pub inputs: Vec<Option<&'a Fact>>,
    /// Set by the slice rule: what [`slice::slice_dims`] gave (see [`Facts::take_slice_memo`]).
    pub slice_dims: std::cell::RefCell<Option<SliceMemo>>,
    /// The plans of the slices with constant parameters decoded so far in this propagation.
    pub plans: &'a std::cell::RefCell<slice_node::PlanMemo>,
}

impl<'a> Ctx<'a> {
    /// The fact of input `p` (empty when absent).
    pub fn input(&self, p: usize) -> &'a Fact {
        self.inputs.get(p).copied().flatten().unwrap_or(&UNKNOWN)
    }
    /// The shape of input `p`.
    pub fn shape(&self, p: usize) -> Option<&'a [Dim]> {
        self.input(p).shape.as_deref()
    }
    /// The value of input `p` as integers, when all known.
    pub fn ints(&self, p: usize) -> Option<Vec<i64>> {
        self.input(p).known_value()
    }
    /// The symbolic value of input `p`.
    pub fn value(&self, p: usize) -> Option<&'a [Dim]> {
        self.input(p).value.as_deref()
    }
    /// Whether input `p` is connected.
    pub fn has(&self, p: usize) -> bool {
        self.inputs.get(p).is_some_and(Option::is_some)
    }
    /// True for ONNX.
    pub fn onnx(&self) -> bool {
        self.format == Format::Onnx
    }
    /// An integer attribute.
    pub fn attr_int(&self, name: &str) -> Option<i64> {
        self.node.attr_int(name)
    }
    /// An integer-list attribute (`None` when absent or unreadable).
    pub fn attr_ints(&self, name: &str) -> Option<Vec<i64>> {
        self.node.attr_ints(name).and_then(|r| r.ok())
    }
    /// A string attribute.
    pub fn attr_str(&self, name: &str) -> Option<&'a str> {
        self.node.attr_str(name)
    }
    /// The element type of input `p`.
    pub fn dtype(&self, p: usize) -> Option<DType> {
        self.input(p).dtype
    }
}

/// An axis in `[-rank, rank)` normalized to `[0, rank)`.
pub(crate) fn norm_axis(a: i64, rank: usize) -> Option<usize> {
    let r = i64::try_from(rank).ok()?;
    let a = if a < 0 { a.checked_add(r)? } else { a };
    (0..r).contains(&a).then_some(a as usize)
}

/// `d * k` for a constant `k` (by doubling: exact for expressions, bounds otherwise).
pub(crate) fn mul_const(d: &Dim, k: i64) -> Dim {
    if let Some(v) = d.as_known() {
        return v
            .checked_mul(k)
            .map(Dim::known)
            .unwrap_or_else(Dim::unknown);
    }
    if k < 0 {
        return Dim::known(0).sub(&mul_const(d, k.checked_neg().unwrap_or(i64::MAX)));
    }
    let (mut acc, mut pow, mut k) = (Dim::known(0), d.clone(), k as u64);
    while k > 0 {
        if k & 1 == 1 {
            acc = acc.add(&pow);
        }
        k >>= 1;
        if k > 0 {
            pow = pow.add(&pow);
        }
    }
    acc
}

/// `a * b`: exact when either is a known value; otherwise an unknown dim with the product of the
/// bounds (dims are `>= 0`).
pub(crate) fn mul(a: &Dim, b: &Dim) -> Dim {
    if let Some(k) = b.as_known() {
        return mul_const(a, k);
    }
    if let Some(k) = a.as_known() {
        return mul_const(b, k);
    }
    let (alo, ahi) = a.bounds();
    let (blo, bhi) = b.bounds();
    match (alo, blo) {
        (Some(al), Some(bl)) if al >= 0 && bl >= 0 => {
            let lo = al.checked_mul(bl).unwrap_or(i64::MAX);
            let hi = ahi.zip(bhi).and_then(|(x, y)| x.checked_mul(y));
            Dim::unknown_bounded(lo, hi)
        }
        _ => Dim::unknown_bounded(i64::MIN, None),
    }
}

/// The fact a file declares for `outlet` (constants: their type, shape and small value).
pub fn declared_fact(graph: &Graph, outlet: OutletId) -> Fact {
    if let Some(t) = graph.constant_at(outlet) {
        let shape: Vec<Dim> = t
            .shape
            .iter()
            .map(|&d| {
                i64::try_from(d)
                    .map(Dim::known)
                    .unwrap_or_else(|_| Dim::unknown())
            })
            .collect();
        let small = t
            .element_count()
            .is_some_and(|n| n <= MAX_VALUE_ELEMENTS as u64);
        // Booleans as 0/1 (tf2onnx's begin/end masks meet shape values in And/Where).
        let boolean = t.dtype == DType::Bool;
        let value = (small && (t.dtype.is_index_type() || boolean))
            .then(|| t.i64_values())
            .flatten()
            .map(|v| {
                v.map(|x| Dim::known(if boolean { i64::from(x != 0) } else { x }))
                    .collect()
            });
        return Fact {
            dtype: Some(t.dtype),
            shape: Some(shape),
            value: None,
        }
        .with_value(value);
    }
    let Some(v) = graph.value(outlet) else {
        return Fact::default();
    };
    Fact {
        dtype: v.ty.dtype,
        shape: v
            .ty
            .shape
            .as_ref()
            .map(|s| s.iter().map(slice_node::to_dim).collect()),
        value: None,
    }
}

/// The names of the symbols the graph's inputs carry (ONNX graph inputs, OpenVINO `Parameter`s:
/// what they declare, and what is known about them from outside for a body). Only these may
/// appear in an inferred dim: a declared dim over any other name (optimum's no-past T5 decoder
/// declares an output dim over `past_decoder_sequence_length`, which no input carries) holds for
/// some value of a name nothing binds, so it says nothing about the actual size.
fn input_symbols(
    graph: &Graph,
    seed: &dyn Fn(NodeIndex) -> Option<Fact>,
) -> std::collections::HashSet<String> {
    let mut out = std::collections::HashSet::new();
    let mut add = |f: &Fact| {
        for d in f.shape.iter().flatten().chain(f.value.iter().flatten()) {
            out.extend(d.symbols().iter().map(|s| s.name().to_string()));
        }
    };
    for ix in graph.g.node_indices() {
        let node = graph.node(ix);
        let is_input = node.kind == NodeKind::Input
            || (node.kind == NodeKind::Op && node.op_type == "Parameter");
        if !is_input {
            continue;
        }
        for port in 0..node.outputs.len().max(1) {
            add(&declared_fact(graph, OutletId { node: ix, port }));
        }
        if let Some(f) = seed(ix) {
            add(&f);
        }
    }
    out
}

/// `declared` with every dim over a symbol that is not in `known` made unknown (see
/// [`input_symbols`]).
fn over_symbols(mut declared: Fact, known: &std::collections::HashSet<String>) -> Fact {
    for d in declared.shape.iter_mut().flatten() {
        if d.symbols().iter().any(|s| !known.contains(s.name())) {
            *d = Dim::unknown();
        }
    }
    declared
}

/// [`merge`] with the declaration read only when it can add something: when the computed fact
/// lacks the element type, the rank or a dim (most do not, and reading a declaration builds
/// its dims).
fn merge_with(computed: Fact, declared: impl FnOnce() -> Fact) -> Fact {
    let complete = computed.dtype.is_some()
        && computed
            .shape
            .as_ref()
            .is_some_and(|s| !s.iter().any(Dim::is_unknown));
    if complete {
        let Fact {
            dtype,
            shape,
            value,
        } = computed;
        return Fact {
            dtype,
            shape,
            value: None,
        }
        .with_value(value);
    }
    merge(computed, declared())
}

/// Combines what a rule computed with what the file declares: the computed dim unless it is
/// unknown and the declaration says more. A rank disagreement keeps the computed shape.
fn merge(computed: Fact, declared: Fact) -> Fact {
    let shape = match (computed.shape, declared.shape) {
        (Some(c), Some(d)) if c.len() == d.len() => Some(
            c.into_iter()
                .zip(d)
                .map(|(c, d)| {
                    if c.is_unknown() && !d.is_unknown() {
                        d
                    } else {
                        c
                    }
                })
                .collect(),
        ),
        (Some(c), _) => Some(c),
        (None, d) => d,
    };
    Fact {
        dtype: computed.dtype.or(declared.dtype),
        shape,
        value: None,
    }
    .with_value(computed.value)
}

/// The output facts of one op node from its context (empty or shorter: unknown).
fn rule(cx: &Ctx) -> Vec<Fact> {
    let op = cx.node.op_type.as_str();
    if let Some(out) = slice::rule(cx) {
        return out;
    }
    elementwise::rule(op, cx)
        .or_else(|| matmul::rule(op, cx))
        .or_else(|| conv::rule(op, cx))
        .or_else(|| manip::rule(op, cx))
        .or_else(|| reduce::rule(op, cx))
        .or_else(|| gather::rule(op, cx))
        .or_else(|| rnn::rule(op, cx))
        .unwrap_or_default()
}

/// Propagates facts through `model`'s graph.
pub fn propagate(model: &Model) -> Result<Facts> {
    let order = model
        .graph()
        .topo_order()
        .map_err(|c| Error::cycle(model.path(), c))?;
    Ok(propagate_ordered(model, &order, &|_| None))
}

/// What is known about graph inputs from outside the graph (a subgraph body's inputs:
/// outer-scope values, loop-carried values, OpenVINO port-mapped inputs), by input node (ONNX
/// graph input, OpenVINO `Parameter`). Propagation combines them with what the graph declares.
/// The pipeline hands them to the run on a body ([`crate::pipeline::Pipeline::run`]).
pub type Seeds = crate::ir::FastMap<NodeIndex, Fact>;

/// [`propagate`] along `order`, a topological order of `model`'s graph
/// ([`Graph::topo_order`]) the caller already has, with what `seed` knows about graph inputs
/// from outside the graph (`&|_| None`: nothing; see [`Seeds`]).
pub fn propagate_ordered(
    model: &Model,
    order: &[NodeIndex],
    seed: &dyn Fn(NodeIndex) -> Option<Fact>,
) -> Facts {
    propagate_ordered_with(model, order, seed, &no_holders)
}

/// The output facts of a node that holds subgraph bodies (ONNX `Loop`), which only the layer
/// that reads bodies can give (`crate::subgraph::loops`): called with the graph, the facts of
/// every node before it in the order, and the node; `None` for a node it has no rule for.
/// Propagation itself never opens a body.
pub type HolderRule<'a> = dyn Fn(&Graph, &Facts, NodeIndex) -> Option<Vec<Fact>> + 'a;

/// A [`HolderRule`] that knows nothing.
pub fn no_holders(_: &Graph, _: &Facts, _: NodeIndex) -> Option<Vec<Fact>> {
    None
}

/// [`propagate_ordered`], the outputs of nodes that hold bodies given by `holders`.
pub fn propagate_ordered_with(
    model: &Model,
    order: &[NodeIndex],
    seed: &dyn Fn(NodeIndex) -> Option<Fact>,
    holders: &HolderRule,
) -> Facts {
    propagate_in(
        model.graph(),
        model.format(),
        model.onnx_opset(),
        seed,
        holders,
        order,
    )
}

/// Propagates facts through `graph` (see the module documentation).
pub fn propagate_graph(
    graph: &Graph,
    format: Format,
    onnx_opset: i64,
) -> std::result::Result<Facts, crate::ir::Cycle> {
    propagate_seeded(graph, format, onnx_opset, &|_| None)
}

/// As [`propagate_graph`], with what is known about some graph inputs from outside the graph
/// (`seed`: a subgraph body's inputs), combined with what the graph declares for them.
pub(crate) fn propagate_seeded(
    graph: &Graph,
    format: Format,
    onnx_opset: i64,
    seed: &dyn Fn(NodeIndex) -> Option<Fact>,
) -> std::result::Result<Facts, crate::ir::Cycle> {
    propagate_seeded_with(graph, format, onnx_opset, seed, &no_holders)
}

/// [`propagate_seeded`], the outputs of nodes that hold bodies given by `holders`.
pub(crate) fn propagate_seeded_with(
    graph: &Graph,
    format: Format,
    onnx_opset: i64,
    seed: &dyn Fn(NodeIndex) -> Option<Fact>,
    holders: &HolderRule,
) -> std::result::Result<Facts, crate::ir::Cycle> {
    let order = graph.topo_order()?;
    Ok(propagate_in(
        graph, format, onnx_opset, seed, holders, &order,
    ))
}

/// [`propagate_seeded`] along `order`, a topological order of `graph`.
/// The facts of the inputs of `ix` by port ([`Graph::inputs`] read through `facts`), in one
/// vector: the list of outlets is not built first (one allocation less per node).
fn input_facts<'f>(
    graph: &Graph,
    facts: &'f Facts,
    ix: NodeIndex,
    spare: Vec<Option<&Fact>>,
) -> Vec<Option<&'f Fact>> {
    use petgraph::visit::EdgeRef;
    let n = graph.node(ix).num_inputs as usize;
    let mut out = recycle(spare);
    out.resize(n, None);
    for e in graph.g.edges_directed(ix, petgraph::Direction::Incoming) {
        let p = e.weight().dst_port as usize;
        if let Some(slot) = out.get_mut(p) {
            *slot = Some(facts.get(OutletId {
                node: e.source(),
                port: e.weight().src_port as usize,
            }));
        }
    }
    out
}

/// `v` emptied, its allocation kept for references of another lifetime (a vector of input
/// facts per node was an allocation per node).
fn recycle<'b>(mut v: Vec<Option<&Fact>>) -> Vec<Option<&'b Fact>> {
    v.clear();
    // (Collected in place: same element layout, no element left.)
    v.into_iter().map(|_| None).collect()
}

fn propagate_in(
    graph: &Graph,
    format: Format,
    onnx_opset: i64,
    seed: &dyn Fn(NodeIndex) -> Option<Fact>,
    holders: &HolderRule,
    order: &[NodeIndex],
) -> Facts {
    let mut facts = Facts {
        // Most nodes have one output.
        flat: Vec::with_capacity(graph.g.node_count()),
        span: vec![(0, 0); graph.g.node_bound()],
        slice_at: Vec::new(),
        // Room for every node: only the part used is ever touched (grown by doubling, each
        // copy faulted fresh pages: 6 % of a 100,000-chain graph's page faults).
        slices: Vec::with_capacity(graph.g.node_count()),
    };
    let inputs_carry = input_symbols(graph, seed);
    let plans = std::cell::RefCell::new(slice_node::PlanMemo::default());
    let mut spare: Vec<Option<&Fact>> = Vec::new();
    for &ix in order {
        let node = graph.node(ix);
        match node.kind {
            NodeKind::Const(_) => {
                facts.set(ix, [declared_fact(graph, OutletId { node: ix, port: 0 })]);
            }
            NodeKind::Input => {
                let declared = declared_fact(graph, OutletId { node: ix, port: 0 });
                let fact = match seed(ix) {
                    Some(s) => merge(s, declared),
                    None => declared,
                };
                facts.set(ix, [fact]);
            }
            NodeKind::Output => {}
            NodeKind::Op => {
                let cx = Ctx {
                    graph,
                    ix,
                    node,
                    format,
                    onnx_opset,
                    facts: &facts,
                    inputs: input_facts(graph, &facts, ix, std::mem::take(&mut spare)),
                    slice_dims: Default::default(),
                    plans: &plans,
                };
                let mut computed = if node.op_type == "Parameter" {
                    seed(ix).into_iter().collect()
                } else if let Some(out) = holders(graph, &facts, ix) {
                    out
                } else {
                    rule(&cx)
                };
                spare = recycle(cx.inputs);
                if let Some(r) = cx.slice_dims.into_inner() {
                    facts.keep_slice_dims(ix, r);
                }
                computed.resize_with(node.outputs.len(), Fact::default);
                let out = computed.into_iter().enumerate().map(|(port, c)| {
                    merge_with(c, || {
                        over_symbols(
                            declared_fact(graph, OutletId { node: ix, port }),
                            &inputs_carry,
                        )
                    })
                });
                facts.set(ix, out);
            }
        }
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ONNX and IR model shipped in `models/`, sorted.
    fn shipped_models() -> Vec<std::path::PathBuf> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .expect("models/")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("onnx" | "xml")))
            .collect();
        paths.sort();
        paths
    }

    /// What propagation keeps for each slice is what resolving that slice again gives, is
    /// found under that slice's node and no other, and is given once. Every shipped model,
    /// slices taken in reverse order (so a memo found by position alone would be wrong).
    #[test]
    fn each_slice_takes_back_its_own_resolution_once() {
        let paths = shipped_models();
        let (mut slices, mut with_dims) = (0, 0);
        for path in paths {
            let model = Model::load(&path).expect("shipped model loads");
            let mut facts = propagate(&model).expect("propagates");
            let graph = model.graph();
            let mut nodes: Vec<_> = graph.g.node_indices().collect();
            nodes.reverse();
            for ix in nodes {
                let Some(op) = slice_node::classify(graph, ix, model.format(), model.onnx_opset())
                else {
                    assert!(facts.take_slice_dims(ix).is_none(), "{path:?}: not a slice");
                    continue;
                };
                let want = slice::slice_dims(graph, &facts, ix, op).map(|(_, d)| d);
                let got = facts.take_slice_dims(ix);
                // Propagation skips slices it cannot see (in a cycle-free graph: none).
                let got =
                    got.unwrap_or_else(|| panic!("{path:?} {}: no memo", graph.node(ix).name));
                assert_eq!(got, want, "{path:?} {}", graph.node(ix).name);
                assert!(facts.take_slice_dims(ix).is_none(), "{path:?}: taken twice");
                slices += 1;
                with_dims += usize::from(want.is_ok());
            }
        }
        assert!(
            slices >= 50 && with_dims >= 50,
            "{slices} slices, {with_dims} resolved"
        );
    }

    /// `retain_nodes` keeps exactly the facts of the nodes chosen (every output, unchanged)
    /// when a quarter or fewer are, and reads every other node as a node without facts; with
    /// more chosen, it keeps every fact. Every shipped model.
    #[test]
    fn retained_facts_are_those_chosen_and_no_other() {
        let paths = shipped_models();
        let (mut kept, mut dropped) = (0, 0);
        for path in paths {
            let model = Model::load(&path).expect("shipped model loads");
            let all = propagate(&model).expect("propagates");
            let nodes: Vec<_> = model.graph().g.node_indices().collect();
            // One node in ten: a table of their own; every other one: all kept.
            let few = all.clone().retain_nodes(|ix, _| ix.index() % 10 == 0);
            let most = all.clone().retain_nodes(|ix, _| ix.index() % 10 != 0);
            let chosen: usize = nodes
                .iter()
                .filter(|ix| ix.index() % 10 == 0)
                .map(|&ix| all.outputs(ix).len())
                .sum();
            let total: usize = nodes.iter().map(|&ix| all.outputs(ix).len()).sum();
            for &ix in &nodes {
                assert_eq!(most.outputs(ix), all.outputs(ix), "{path:?}");
                if ix.index() % 10 == 0 || chosen * 4 > total {
                    assert_eq!(few.outputs(ix), all.outputs(ix), "{path:?}");
                    kept += all.outputs(ix).len();
                } else {
                    assert!(few.outputs(ix).is_empty(), "{path:?}");
                    let outlet = crate::ir::OutletId { node: ix, port: 0 };
                    assert_eq!(few.get(outlet), &UNKNOWN, "{path:?}");
                    dropped += all.outputs(ix).len();
                }
            }
        }
        assert!(
            kept >= 10 && dropped >= 100,
            "{kept} facts kept, {dropped} dropped"
        );
    }

    #[test]
    fn a_declaration_is_read_only_when_it_can_add_something() {
        let n = Dim::symbol("n");
        let shapes = [
            None,
            Some(vec![Dim::known(2), n.clone()]),
            Some(vec![Dim::unknown(), Dim::known(3)]),
            Some(vec![Dim::unknown_bounded(1, Some(4))]),
            Some(vec![]),
        ];
        let dtypes = [None, Some(DType::I64), Some(DType::F32)];
        let values = [None, Some(vec![Dim::known(7), n.clone()])];
        let mut facts = Vec::new();
        for dtype in dtypes {
            for shape in &shapes {
                for value in &values {
                    facts.push(Fact {
                        dtype,
                        shape: shape.clone(),
                        value: value.clone(),
                    });
                }
            }
        }
        for computed in &facts {
            for declared in &facts {
                let read = std::cell::Cell::new(false);
                let lazy = merge_with(computed.clone(), || {
                    read.set(true);
                    declared.clone()
                });
                assert_eq!(lazy, merge(computed.clone(), declared.clone()));
                let complete = computed.dtype.is_some()
                    && computed
                        .shape
                        .as_ref()
                        .is_some_and(|s| s.iter().all(|d| !d.is_unknown()));
                assert_eq!(read.get(), !complete, "{computed:?}");
            }
        }
    }
}
