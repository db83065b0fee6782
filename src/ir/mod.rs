//! The graph IR both formats load into.
//!
//! A [`Graph`] is a `petgraph` [`StableDiGraph`] of [`Node`]s; an edge ([`Wire`]) goes from an
//! output port of its source to an input port of its target. Every node remembers where it came
//! from ([`Origin`]) so that a node no pass touched re-serializes exactly as it was read.

pub mod dialect;
mod tensor;

use std::collections::BTreeMap;
use std::hash::BuildHasher;

use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableDiGraph};
use petgraph::visit::{
    EdgeIndexable, EdgeRef, IntoEdgeReferences, IntoNodeReferences, NodeIndexable,
};
use petgraph::Direction;

pub use dialect::Format;
pub use tensor::{DType, Tensor, TensorData};

/// A name or an op type in the IR: a string kept inline up to 24 bytes (node and value names,
/// op types and domains of real models almost all are), on the heap beyond. A graph of
/// 350,000 nodes made three heap allocations fewer per node with it than with `String`.
pub type Text = compact_str::CompactString;

/// A dim as a model file declares it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DeclaredDim {
    /// A known size.
    Known(u64),
    /// A named symbolic size (ONNX `dim_param`).
    Param(String),
    /// An OpenVINO interval `lo..hi` (`hi` `None` = unbounded).
    Interval(u64, Option<u64>),
    /// Nothing known (ONNX dim with neither field, OpenVINO `-1`).
    Unknown,
}

impl std::fmt::Display for DeclaredDim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeclaredDim::Known(v) => write!(f, "{v}"),
            DeclaredDim::Param(p) => write!(f, "{p}"),
            DeclaredDim::Interval(lo, Some(hi)) => write!(f, "{lo}..{hi}"),
            DeclaredDim::Interval(lo, None) => write!(f, "{lo}.."),
            DeclaredDim::Unknown => write!(f, "?"),
        }
    }
}

/// Type of a value: element type and shape, each possibly unknown.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ValueType {
    pub dtype: Option<DType>,
    /// `None` = rank unknown.
    pub shape: Option<Vec<DeclaredDim>>,
}

/// A shape for messages and reports: `[1, N, 0..32]`, or `?` when the rank is unknown.
pub fn show_shape<D: std::fmt::Display>(shape: Option<&[D]>) -> String {
    use std::fmt::Write;
    let Some(s) = shape else {
        return "?".into();
    };
    // One buffer, written in place (reports format a shape per changed node).
    let mut out = String::with_capacity(2 + 4 * s.len());
    out.push('[');
    for (i, d) in s.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        // Writing into a String cannot fail.
        let _ = write!(out, "{d}");
    }
    out.push(']');
    out
}

/// One output port of a node.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Value {
    /// The value's name (ONNX value name; OpenVINO tensor names of the port, comma separated).
    pub name: Text,
    /// What the file declares (or a pass inferred).
    pub ty: ValueType,
    /// Set by a pass that changed `ty`, so the writer updates the declaration.
    pub ty_changed: bool,
}

/// An attribute value, format-neutral.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Int(i64),
    Ints(Vec<i64>),
    Float(f32),
    Floats(Vec<f32>),
    /// A string; OpenVINO keeps all its attributes as strings.
    String(String),
    Strings(Vec<String>),
    /// Boxed, as in [`NodeKind::Const`]: inline, it made every attribute of every node 32
    /// bytes larger (OpenVINO layers have a few string attributes each).
    Tensor(Box<Tensor>),
    /// Something passes never read (graphs, type protos...): kept only in the origin record.
    Opaque,
}

/// What kind of node this is.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// A graph input (ONNX); OpenVINO `Parameter` layers are [`NodeKind::Op`].
    Input,
    /// A graph output sink (ONNX); OpenVINO `Result` layers are [`NodeKind::Op`].
    Output,
    /// A constant (ONNX initializer or `Constant` node; OpenVINO `Const`). Boxed: most nodes
    /// are not constants, and an inline tensor made every node of a graph 56 bytes larger.
    Const(Box<Tensor>),
    /// Any other operation.
    Op,
}

/// Where a node came from in its file, so an untouched node is written back as it was.
///
/// Positions are 32-bit (8 bytes a node, not 16): a model file cannot list 2^32 records
/// (a protobuf message is under 2 GB; loaders refuse more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Created by a pass.
    New,
    /// ONNX `graph.node[i]`.
    OnnxNode(u32),
    /// ONNX `graph.initializer[i]`.
    OnnxInitializer(u32),
    /// ONNX `graph.sparse_initializer[i]`.
    OnnxSparseInitializer(u32),
    /// ONNX `graph.input[i]`.
    OnnxInput(u32),
    /// ONNX `graph.output[i]`.
    OnnxOutput(u32),
    /// OpenVINO `<layer>` number `i` in document order.
    OvLayer(u32),
}

/// `i` as a 32-bit record position or count ([`Origin`], [`Node::order`], [`Node::num_inputs`]).
/// Saturates: loaders refuse a model with 2^32 - 1 records or more before building nodes
/// ([`MAX_RECORDS`]), so only a pass could reach it, and a saturated order key only ties.
pub fn to_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// The most records (nodes, initializers, inputs, outputs; OpenVINO layers) a loaded graph may
/// have: positions are 32-bit and `u32::MAX` marks a node not yet placed.
pub const MAX_RECORDS: usize = u32::MAX as usize - 1;

/// A node of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: Text,
    pub kind: NodeKind,
    /// Operation type (`Slice`, `StridedSlice`...); empty for inputs, outputs and initializers.
    pub op_type: Text,
    /// ONNX domain, or OpenVINO opset (`opset1`).
    pub domain: Text,
    /// Number of input ports (ONNX omitted optional inputs are ports without an edge).
    /// 32-bit, like [`Origin`]'s positions: a node record is read by every pass, and its size
    /// decides how many fit in the cache.
    pub num_inputs: u32,
    pub outputs: Vec<Value>,
    pub attrs: Vec<(String, Attr)>,
    pub origin: Origin,
    /// Sort key for output: original position, then creation order within it (`u32::MAX`
    /// first: not placed yet, see [`Graph::add_node`]).
    pub order: (u32, u32),
    /// Set when a pass changed the node, so its record must be rebuilt on save.
    pub dirty: bool,
}

/// The heap blocks a removed node owns directly (its constant, outputs and attributes), out
/// of its record: what a pass hands to [`with_drop_later`] for another thread to free. 56
/// bytes on 64-bit targets, against 160 for the whole record: the batches it is moved into
/// are a third of the memory to write (and of fresh pages to clear). The names stay behind
/// ([`NodeHeap::of`] drops them): most are inline, and a long one is a single block.
#[derive(Debug)]
pub struct NodeHeap {
    tensor: Option<Box<Tensor>>,
    outputs: Vec<Value>,
    attrs: Vec<(String, Attr)>,
}

impl NodeHeap {
    /// Takes `node` apart: its heap blocks are kept, the rest of the record is dropped here.
    pub fn of(node: Node) -> NodeHeap {
        NodeHeap {
            tensor: match node.kind {
                NodeKind::Const(t) => Some(t),
                _ => None,
            },
            outputs: node.outputs,
            attrs: node.attrs,
        }
    }

    /// Asks the CPU for the first line of each block: freeing a block reads and writes there.
    pub fn prefetch(&self) {
        let blocks: [*const u8; 3] = [
            self.tensor
                .as_deref()
                .map_or(std::ptr::null(), |t| (t as *const Tensor).cast()),
            self.outputs.as_ptr().cast(),
            self.attrs.as_ptr().cast(),
        ];
        for at in blocks {
            prefetch_line(at);
        }
    }
}

/// Asks the CPU to bring the cache line at `at` in (a hint: nothing is read, and no address
/// faults, null or dangling included).
fn prefetch_line(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch does not access memory architecturally and cannot fault, whatever
    // the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

impl Node {
    /// A new operation node.
    pub fn op(name: impl Into<Text>, op_type: impl Into<Text>, domain: impl Into<Text>) -> Node {
        Node {
            name: name.into(),
            kind: NodeKind::Op,
            op_type: op_type.into(),
            domain: domain.into(),
            num_inputs: 0,
            outputs: Vec::new(),
            attrs: Vec::new(),
            origin: Origin::New,
            order: (u32::MAX, 0),
            dirty: true,
        }
    }

    /// The attribute named `name`.
    pub fn attr(&self, name: &str) -> Option<&Attr> {
        self.attrs.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }

    /// An integer attribute (also parses OpenVINO's string attributes).
    pub fn attr_int(&self, name: &str) -> Option<i64> {
        match self.attr(name)? {
            Attr::Int(v) => Some(*v),
            Attr::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// An integer-list attribute (also parses OpenVINO's comma-separated strings; an empty
    /// string is an empty list). `Err` carries the text that did not parse.
    pub fn attr_ints(&self, name: &str) -> Option<Result<Vec<i64>, String>> {
        match self.attr(name)? {
            Attr::Ints(v) => Some(Ok(v.clone())),
            Attr::Int(v) => Some(Ok(vec![*v])),
            Attr::String(s) => {
                let s = s.trim();
                if s.is_empty() {
                    return Some(Ok(Vec::new()));
                }
                Some(
                    s.split(',')
                        .map(|p| p.trim().parse::<i64>().map_err(|_| s.to_string()))
                        .collect(),
                )
            }
            _ => Some(Err(format!("{:?}", self.attr(name)))),
        }
    }

    /// A string attribute.
    pub fn attr_str(&self, name: &str) -> Option<&str> {
        match self.attr(name)? {
            Attr::String(s) => Some(s),
            _ => None,
        }
    }

    /// Sets (or replaces) an attribute and marks the node dirty.
    pub fn set_attr(&mut self, name: &str, value: Attr) {
        self.dirty = true;
        if let Some(slot) = self.attrs.iter_mut().find(|(n, _)| n == name) {
            slot.1 = value;
        } else {
            self.attrs.push((name.to_string(), value));
        }
    }

    /// The constant tensor this node holds, if it is a constant.
    pub fn constant(&self) -> Option<&Tensor> {
        match &self.kind {
            NodeKind::Const(t) => Some(t),
            _ => None,
        }
    }

    /// Short description for messages: `name (op)`.
    pub fn describe(&self) -> String {
        let op = match &self.kind {
            NodeKind::Input => "input",
            NodeKind::Output => "output",
            NodeKind::Const(_) => "constant",
            NodeKind::Op => self.op_type.as_str(),
        };
        format!("'{}' ({op})", self.name)
    }
}

/// An edge: `src_port` of the source feeds `dst_port` of the target. `dst_port` is
/// [`Wire::CAPTURED`] for a value a subgraph of the target reads from the outer scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
///
/// Ports are 32-bit: an edge is 28 bytes in petgraph's edge list instead of 40 (a graph of a
/// million edges touched 12 MB less). A port is a position in a node's list of inputs or
/// outputs, far below [`Wire::DETACHED`].
pub struct Wire {
    pub src_port: u32,
    pub dst_port: u32,
}

impl Wire {
    /// Destination port of an outer-scope capture by a subgraph.
    pub const CAPTURED: u32 = u32::MAX;
    /// Destination port of an edge unlinked lazily ([`Graph::detach_edge`]): still in the
    /// petgraph lists until [`Graph::flush_detached`], invisible to every [`Graph`] accessor.
    pub const DETACHED: u32 = u32::MAX - 1;

    /// A wire from output `src_port` to input `dst_port` (positions in the nodes' lists).
    pub fn new(src_port: usize, dst_port: usize) -> Wire {
        Wire {
            src_port: Wire::port(src_port),
            dst_port: Wire::port(dst_port),
        }
    }

    /// A port position as stored. A node would need billions of ports (gigabytes of port
    /// lists) to reach the markers.
    pub(crate) fn port(p: usize) -> u32 {
        debug_assert!(p < Wire::DETACHED as usize, "port {p}");
        p as u32
    }
}

/// A producer of a value: node and output port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OutletId {
    pub node: NodeIndex,
    pub port: usize,
}

/// A `HashMap` with a fast, randomly seeded hasher (`foldhash`): names from model files are
/// hashed by the million, and SipHash was a fifth of the load time of a 100k-node model.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// A `HashSet` with the hasher of [`FastMap`].
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// The graph.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub g: StableDiGraph<Node, Wire>,
    next_order: u32,
    /// Every name in use (values and nodes), as 64-bit hashes of `name_hasher`: a name is
    /// never stored twice (the graph holds it already). Two names of one hash only make
    /// [`Graph::unique_name`] pass over a free name, never reuse a taken one. Filled with the
    /// graph's node and value names by the first [`Graph::unique_name`] (`names_built`), not
    /// while loading: most runs never name a new node, and hashing every name of a large model
    /// was a tenth of its load time.
    names: FastSet<u64>,
    names_built: bool,
    name_hasher: foldhash::quality::RandomState,
    /// Reshaping nodes (`Reshape`, `Squeeze`, `Unsqueeze`) that pass `lower` made out of a
    /// StridedSlice that sliced nothing: `raise` turns these back into a StridedSlice in the
    /// same run. Not written to the file.
    pub lowered_shaping: std::collections::HashSet<NodeIndex>,
    /// Edges unlinked lazily, removed all at once by [`Graph::flush_detached`].
    detached: Vec<EdgeIndex>,
    /// Nodes removed lazily (edges detached), removed by [`Graph::flush_detached`].
    doomed: FastSet<NodeIndex>,
}

/// Runs `f` with a [`DropLater`]: what `f` gives it is dropped on rayon's pool, in batches,
/// while `f` goes on; everything is dropped when this returns. What a pass removes from a
/// large graph (nodes, their tensors, names and shapes) lies scattered over memory, and
/// freeing it cost the pass's thread a cache miss or more per allocation. `prefetch` asks for
/// what dropping an item will touch, a few items ahead. When `expected` (the number of items
/// `f` will give) is at most [`DropLater::BATCH`], everything is dropped on this thread and
/// the pool is not involved (nor started).
///
/// The batches are jobs of a [`rayon::in_place_scope`]: a thread of the pool that waits for
/// them (a model transformed in directory mode) runs them itself, so nothing waits on a busy
/// pool.
pub fn with_drop_later<T: Send + 'static, R>(
    expected: usize,
    prefetch: fn(&T),
    f: impl FnOnce(&mut DropLater<'_, '_, T>) -> R,
) -> R {
    if expected <= DropLater::<T>::BATCH {
        return f(&mut DropLater::new(None, prefetch));
    }
    rayon::in_place_scope(|scope| f(&mut DropLater::new(Some(scope), prefetch)))
}

/// Takes items to drop, for [`with_drop_later`]. The first [`DropLater::BATCH`] are dropped at
/// once, here: a small graph never wakes the pool nor allocates a batch. A batch's buffer,
/// emptied on the pool, comes back for a later batch: a new buffer per batch was fresh memory,
/// which the kernel clears page by page, and that cost as much as the frees it saved.
pub struct DropLater<'a, 's, T: Send + 'static> {
    scope: Option<&'a rayon::Scope<'s>>,
    prefetch: fn(&T),
    seen: usize,
    batch: Vec<T>,
    empty_tx: std::sync::mpsc::Sender<Vec<T>>,
    empty_rx: std::sync::mpsc::Receiver<Vec<T>>,
}

impl<T: Send + 'static> DropLater<'_, '_, T> {
    /// Items per batch handed to the pool (and items dropped here before the first batch).
    pub const BATCH: usize = 1024;

    fn new<'a, 's>(scope: Option<&'a rayon::Scope<'s>>, prefetch: fn(&T)) -> DropLater<'a, 's, T> {
        let (empty_tx, empty_rx) = std::sync::mpsc::channel();
        DropLater {
            scope,
            prefetch,
            seen: 0,
            batch: Vec::new(),
            empty_tx,
            empty_rx,
        }
    }

    /// Takes `item`: dropped now while fewer than [`DropLater::BATCH`] came before it, then
    /// with its batch, on the pool. The last batch, partly full, is dropped here when `self`
    /// is.
    pub fn push(&mut self, item: T) {
        self.seen += 1;
        let Some(scope) = self.scope.filter(|_| self.seen > Self::BATCH) else {
            drop(item);
            return;
        };
        if self.batch.capacity() == 0 {
            self.batch = self
                .empty_rx
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(Self::BATCH));
        }
        self.batch.push(item);
        if self.batch.len() >= Self::BATCH {
            let mut full = std::mem::take(&mut self.batch);
            let back = self.empty_tx.clone();
            let prefetch = self.prefetch;
            scope.spawn(move |_| {
                // Dropped from the last, what the item 4 places before owns asked for first.
                while let Some(item) = full.pop() {
                    if let Some(ahead) = full.len().checked_sub(4).and_then(|k| full.get(k)) {
                        prefetch(ahead);
                    }
                    drop(item);
                }
                // The receiver is gone once `with_drop_later` returns: the buffer is freed.
                let _ = back.send(full);
            });
        }
    }
}

/// Where a graph's node records lie, to ask the CPU for one ahead of its use: a pass that
/// visits many nodes in index order but far apart (the nodes it removes) otherwise waits for
/// memory at each. The address is computed from a record's and the size of petgraph's node
/// entry; a prefetch reads nothing and cannot fault, so a wrong address would only be a
/// useless hint.
struct NodeRecords {
    base: *const u8,
    base_index: usize,
    stride: usize,
}

impl NodeRecords {
    fn of(g: &StableDiGraph<Node, Wire>, ix: NodeIndex) -> NodeRecords {
        NodeRecords {
            base: g
                .node_weight(ix)
                .map_or(std::ptr::null(), |n| (n as *const Node).cast()),
            base_index: ix.index(),
            stride: std::mem::size_of::<petgraph::graph::Node<Option<Node>, u32>>(),
        }
    }

    fn prefetch(&self, ix: NodeIndex) {
        if self.base.is_null() {
            return;
        }
        let offset = (ix.index().wrapping_sub(self.base_index)).wrapping_mul(self.stride);
        let at = self.base.wrapping_add(offset);
        // Three lines from where the record starts: all of it, or all but its last bytes.
        for line in [0, 64, 128] {
            prefetch_line(at.wrapping_add(line));
        }
    }
}

/// A set of ranks `0..n` that gives back its smallest member: a bitset, and above it a
/// summary level per 64 words (a bit per non-empty word) up to a single word. Inserting or
/// taking the smallest costs a few word operations per level (four levels for 16 million
/// ranks), where a binary heap costs a logarithm of its size in comparisons and scattered
/// moves.
struct RankSet {
    /// `levels[0]` holds the ranks; bit `w` of `levels[k + 1]` is set when word `w` of
    /// `levels[k]` is not zero. The last level is one word.
    levels: Vec<Vec<u64>>,
}

impl RankSet {
    fn new(n: usize) -> RankSet {
        let mut levels = Vec::new();
        let mut len = n.max(1);
        loop {
            let words = len.div_ceil(64);
            levels.push(vec![0u64; words]);
            if words == 1 {
                return RankSet { levels };
            }
            len = words;
        }
    }

    /// Adds rank `r` (below the `n` it was made for).
    fn insert(&mut self, r: usize) {
        let mut i = r;
        for level in &mut self.levels {
            let Some(word) = level.get_mut(i / 64) else {
                return;
            };
            let was = *word;
            *word |= 1 << (i % 64);
            if was != 0 {
                return;
            }
            i /= 64;
        }
    }

    /// Removes and returns the smallest rank, if any.
    fn pop_min(&mut self) -> Option<usize> {
        let mut i = 0usize;
        for level in self.levels.iter().rev() {
            let word = *level.get(i)?;
            if word == 0 {
                return None;
            }
            i = i * 64 + word.trailing_zeros() as usize;
        }
        let r = i;
        for level in &mut self.levels {
            let Some(word) = level.get_mut(i / 64) else {
                break;
            };
            *word &= !(1 << (i % 64));
            if *word != 0 {
                break;
            }
            i /= 64;
        }
        Some(r)
    }
}

/// A cycle in the graph: the name of one node on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle(pub String);

impl Graph {
    /// An empty graph.
    pub fn new() -> Graph {
        Graph::default()
    }

    /// An empty graph with room for `nodes` nodes, `edges` edges and `nodes` names (loaders
    /// that know the sizes: growing a graph of a million nodes by doubling costs more than
    /// building it).
    pub fn with_capacity(nodes: usize, edges: usize) -> Graph {
        Graph {
            g: StableDiGraph::with_capacity(nodes, edges),
            ..Graph::default()
        }
    }

    /// Records `name` as used, so [`Graph::unique_name`] avoids it. Names of the graph's
    /// nodes and values need not be recorded: they are taken in any case.
    pub fn reserve_name(&mut self, name: &str) {
        self.names.insert(self.name_hasher.hash_one(name));
    }

    /// A name starting with `base` that no node or value of the graph uses, and that no earlier
    /// call returned (the name is reserved).
    pub fn unique_name(&mut self, base: &str) -> String {
        if !self.names_built {
            self.names_built = true;
            let hasher = &self.name_hasher;
            let names = &mut self.names;
            names.reserve(self.g.node_count());
            for node in self.g.node_weights() {
                for name in std::iter::once(&node.name).chain(node.outputs.iter().map(|v| &v.name))
                {
                    if !name.is_empty() {
                        names.insert(hasher.hash_one(name.as_str()));
                    }
                }
            }
        }
        let mut candidate = base.to_string();
        let mut k = 1u64;
        while !self
            .names
            .insert(self.name_hasher.hash_one(candidate.as_str()))
        {
            candidate = format!("{base}_{k}");
            k += 1;
        }
        candidate
    }

    /// Adds a node; nodes added without an explicit order key sort after everything loaded,
    /// in creation order.
    pub fn add_node(&mut self, mut node: Node) -> NodeIndex {
        if node.order.0 == u32::MAX {
            self.next_order = self.next_order.saturating_add(1);
            node.order.1 = self.next_order;
        }
        self.g.add_node(node)
    }

    /// Connects `from` to input `port` of `to`.
    pub fn connect(&mut self, from: OutletId, to: NodeIndex, port: usize) -> EdgeIndex {
        self.g.add_edge(from.node, to, Wire::new(from.port, port))
    }

    /// The node at `ix` (panics on a stale index, which is a programming error).
    pub fn node(&self, ix: NodeIndex) -> &Node {
        &self.g[ix]
    }

    /// Mutable node.
    pub fn node_mut(&mut self, ix: NodeIndex) -> &mut Node {
        &mut self.g[ix]
    }

    /// What feeds input `port` of `node`, if anything.
    pub fn input(&self, node: NodeIndex, port: usize) -> Option<OutletId> {
        self.g
            .edges_directed(node, Direction::Incoming)
            .find(|e| e.weight().dst_port as usize == port)
            .map(|e| OutletId {
                node: e.source(),
                port: e.weight().src_port as usize,
            })
    }

    /// The inputs of `node` by port (`None` for an omitted optional input).
    pub fn inputs(&self, node: NodeIndex) -> Vec<Option<OutletId>> {
        let n = self.g[node].num_inputs as usize;
        let mut out = vec![None; n];
        for e in self.g.edges_directed(node, Direction::Incoming) {
            let p = e.weight().dst_port as usize;
            if p < n {
                out[p] = Some(OutletId {
                    node: e.source(),
                    port: e.weight().src_port as usize,
                });
            }
        }
        out
    }

    /// The value produced at `outlet`.
    pub fn value(&self, outlet: OutletId) -> Option<&Value> {
        self.g.node_weight(outlet.node)?.outputs.get(outlet.port)
    }

    /// The constant at `outlet`, if its producer is a constant.
    pub fn constant_at(&self, outlet: OutletId) -> Option<&Tensor> {
        self.g.node_weight(outlet.node)?.constant()
    }

    /// Consumers of `outlet`: (node, input port).
    pub fn consumers(&self, outlet: OutletId) -> Vec<(NodeIndex, usize)> {
        self.g
            .edges_directed(outlet.node, Direction::Outgoing)
            .filter(|e| {
                e.weight().src_port as usize == outlet.port && e.weight().dst_port != Wire::DETACHED
            })
            .map(|e| (e.target(), e.weight().dst_port as usize))
            .collect()
    }

    /// Removes every node of `dead` with all its edges, in time linear in the graph's size
    /// however many nodes go and however they are connected (see [`Graph::remove_edges`]:
    /// their edges go first, then each node, edgeless, in constant time). Indices of the
    /// other nodes stay valid. Returns the removed nodes in index order.
    pub fn remove_nodes(&mut self, dead: &FastSet<NodeIndex>) -> Vec<(NodeIndex, Node)> {
        self.remove_node_list(dead.iter().copied().collect())
    }

    /// [`Graph::remove_nodes`] for a list of nodes (duplicates allowed).
    pub fn remove_node_list(&mut self, dead: Vec<NodeIndex>) -> Vec<(NodeIndex, Node)> {
        let mut out = Vec::new();
        self.remove_nodes_with(dead, |ix, n| out.push((ix, n)));
        out
    }

    /// [`Graph::remove_node_list`] handing each removed node to `f`, in index order, instead
    /// of collecting them.
    pub fn remove_nodes_with(
        &mut self,
        mut dead: Vec<NodeIndex>,
        mut f: impl FnMut(NodeIndex, Node),
    ) {
        if dead.is_empty() {
            return;
        }
        dead.sort_unstable();
        dead.dedup();
        let mut edges: Vec<EdgeIndex> = Vec::new();
        for &ix in &dead {
            for d in [Direction::Incoming, Direction::Outgoing] {
                edges.extend(self.g.edges_directed(ix, d).map(|e| e.id()));
            }
        }
        // An edge between two dead nodes is listed twice.
        edges.sort_unstable();
        edges.dedup();
        self.remove_edges(edges);
        let records = NodeRecords::of(&self.g, dead[0]);
        for (i, &ix) in dead.iter().enumerate() {
            if let Some(&ahead) = dead.get(i + 8) {
                records.prefetch(ahead);
            }
            if let Some(n) = self.g.remove_node(ix) {
                f(ix, n);
            }
        }
    }

    /// Removes the edges `dead`, in time linear in the graph's size however they are spread.
    ///
    /// petgraph unlinks an edge by walking its source's out-list and its target's in-list up
    /// to it. Taken source by source in out-list order, an edge costs the kept edges before it
    /// in its source's list plus at most its target's in-degree; that sum is computed first
    /// (one walk of each source's list). Within a budget of a few times the graph's size the
    /// edges are removed in place; above it (a constant shared by many kept and many removed
    /// consumers, a node with a huge fan-in) the graph is rebuilt without them in one pass,
    /// which costs a new copy of the node and edge arrays. Node indices stay valid either way.
    pub fn remove_edges(&mut self, dead: Vec<EdgeIndex>) {
        if dead.is_empty() {
            return;
        }
        // Marks by edge index: dense, unlike a hash set of a million edges.
        let mut dead_set = vec![false; self.g.edge_bound()];
        let mut marked = 0usize;
        for &e in &dead {
            if let Some(m) = dead_set.get_mut(e.index()) {
                marked += usize::from(!*m);
                *m = true;
            }
        }
        let is_dead = |e: EdgeIndex| dead_set.get(e.index()).copied().unwrap_or(false);
        // The endpoints, each once, in index order: marked by node index (a byte a node, where
        // a list of every edge's endpoints, sorted and deduplicated, was eight bytes a removed
        // edge of fresh memory and a sort).
        const SOURCE: u8 = 1;
        const TARGET: u8 = 2;
        let mut ends = vec![0u8; self.g.node_bound()];
        for &e in &dead {
            if let Some((s, t)) = self.g.edge_endpoints(e) {
                ends[s.index()] |= SOURCE;
                ends[t.index()] |= TARGET;
            }
        }
        let marked_with = |bit: u8| {
            ends.iter()
                .enumerate()
                .filter(move |&(_, &m)| m & bit != 0)
                .map(|(i, _)| NodeIndex::new(i))
        };
        let targets = marked_with(TARGET);
        let sources = marked_with(SOURCE);
        let budget = 4 * (self.g.node_count() + self.g.edge_count()) + 1024;
        let mut cost = 0usize;
        for t in targets {
            let d = self.g.edges_directed(t, Direction::Incoming).count();
            cost = cost.saturating_add(d.saturating_mul(d));
        }
        let mut order = Vec::with_capacity(marked);
        if cost <= budget {
            'walk: for s in sources {
                let mut kept_before = 0usize;
                for e in self.g.edges_directed(s, Direction::Outgoing) {
                    if is_dead(e.id()) {
                        cost = cost.saturating_add(kept_before);
                        order.push(e.id());
                    } else {
                        kept_before += 1;
                    }
                    if cost > budget {
                        break 'walk;
                    }
                }
            }
        }
        if cost <= budget {
            for e in order {
                self.g.remove_edge(e);
            }
            return;
        }
        let g = std::mem::take(&mut self.g);
        self.g = g.filter_map_owned(|_, n| Some(n), |e, w| (!is_dead(e)).then_some(w));
    }

    /// Unlinks edge `e` lazily: it stays in petgraph's lists, marked [`Wire::DETACHED`] and
    /// invisible to every accessor of this type ([`Graph::input`], [`Graph::inputs`],
    /// [`Graph::consumers`], [`Graph::redirect`], [`Graph::replace_node`]), until [`Graph::flush_detached`]
    /// removes all such edges at once. petgraph unlinks an edge by walking its source's
    /// out-list up to it, so removing, one by one, the edges of a value read by `K` rewritten
    /// nodes costs `K²`; batched it costs the size of the graph.
    pub fn detach_edge(&mut self, e: EdgeIndex) {
        if let Some(w) = self.g.edge_weight_mut(e) {
            if w.dst_port != Wire::DETACHED {
                w.dst_port = Wire::DETACHED;
                self.detached.push(e);
            }
        }
    }

    /// Removes node `ix` lazily: its edges are detached ([`Graph::detach_edge`]) and the node,
    /// isolated, is removed by [`Graph::flush_detached`]; until then [`Graph::is_live`] is
    /// false for it.
    pub fn remove_node_lazily(&mut self, ix: NodeIndex) {
        if self.g.node_weight(ix).is_none() {
            return;
        }
        let edges: Vec<EdgeIndex> = [Direction::Incoming, Direction::Outgoing]
            .into_iter()
            .flat_map(|d| self.g.edges_directed(ix, d).map(|e| e.id()))
            .collect();
        for e in edges {
            self.detach_edge(e);
        }
        self.doomed.insert(ix);
    }

    /// Whether `ix` is a node of the graph (not removed, not removed lazily).
    pub fn is_live(&self, ix: NodeIndex) -> bool {
        self.g.node_weight(ix).is_some() && !self.doomed.contains(&ix)
    }

    /// Removes every edge detached and every node removed lazily since the last flush, in
    /// time linear in the graph's size ([`Graph::remove_edges`]). The passes that rewrite
    /// nodes one by one ([`Graph::redirect`], [`Graph::replace_node`]) call it before they
    /// return; code that reads `g` directly after such calls must call it first.
    pub fn flush_detached(&mut self) {
        let mut dead = std::mem::take(&mut self.detached);
        // An index whose edge went another way (a node removed with its edges) may have been
        // reused by a live edge since.
        dead.retain(|&e| {
            self.g
                .edge_weight(e)
                .is_some_and(|w| w.dst_port == Wire::DETACHED)
        });
        dead.sort_unstable();
        dead.dedup();
        self.remove_edges(dead);
        let mut doomed: Vec<NodeIndex> = std::mem::take(&mut self.doomed).into_iter().collect();
        doomed.sort_unstable();
        for ix in doomed {
            self.g.remove_node(ix);
        }
    }

    /// Moves every consumer of `from` to read `to` instead. The old edges are detached
    /// ([`Graph::detach_edge`]): call [`Graph::flush_detached`] before reading `g` directly.
    pub fn redirect(&mut self, from: OutletId, to: OutletId) {
        let edges: Vec<(EdgeIndex, NodeIndex, Wire)> = self
            .g
            .edges_directed(from.node, Direction::Outgoing)
            .filter(|e| {
                e.weight().src_port as usize == from.port && e.weight().dst_port != Wire::DETACHED
            })
            .map(|e| (e.id(), e.target(), *e.weight()))
            .collect();
        for (id, target, w) in edges {
            self.detach_edge(id);
            self.g.add_edge(
                to.node,
                target,
                Wire {
                    src_port: Wire::port(to.port),
                    dst_port: w.dst_port,
                },
            );
            self.g[target].dirty = true;
        }
    }

    /// Puts `new` in the place of `old`: `old`'s index takes `new`'s node and inputs and keeps
    /// the consumers of its output 0 (marked dirty, as [`Graph::redirect`] marks them); `new`'s
    /// index goes away. The graph is the same as after redirecting output 0 of `old` to output 0
    /// of `new` and removing `old`, but an input edge both share (the data input) is kept
    /// instead of removed and re-added. The edges that go are detached
    /// ([`Graph::detach_edge`]): call [`Graph::flush_detached`] before reading `g` directly.
    /// Returns the index the new node now has (`old`).
    pub fn replace_node(&mut self, old: NodeIndex, new: NodeIndex) -> NodeIndex {
        let incoming =
            |g: &StableDiGraph<Node, Wire>, n: NodeIndex| -> Vec<(EdgeIndex, NodeIndex, Wire)> {
                g.edges_directed(n, Direction::Incoming)
                    .filter(|e| e.weight().dst_port != Wire::DETACHED)
                    .map(|e| (e.id(), e.source(), *e.weight()))
                    .collect()
            };
        let mut new_in: Vec<Option<(NodeIndex, Wire)>> = incoming(&self.g, new)
            .into_iter()
            .map(|(_, s, w)| Some((s, w)))
            .collect();
        for (id, src, w) in incoming(&self.g, old) {
            match new_in.iter_mut().find(|e| **e == Some((src, w))) {
                Some(slot) => *slot = None,
                None => self.detach_edge(id),
            }
        }
        // Only output 0 of `old` is taken over: consumers of other ports are dropped, as they
        // were when `old` was removed.
        let mut consumers = Vec::new();
        let mut dropped = Vec::new();
        for e in self.g.edges_directed(old, Direction::Outgoing) {
            let w = e.weight();
            if w.dst_port == Wire::DETACHED {
                continue;
            }
            if w.src_port != 0 {
                dropped.push(e.id());
            } else {
                consumers.push(e.target());
            }
        }
        for id in dropped {
            self.detach_edge(id);
        }
        for t in consumers {
            self.g[t].dirty = true;
        }
        for (src, w) in new_in.into_iter().flatten() {
            self.g.add_edge(src, old, w);
        }
        // Anything already reading `new` reads `old` now.
        let out: Vec<(NodeIndex, Wire)> = self
            .g
            .edges_directed(new, Direction::Outgoing)
            .filter(|e| e.weight().dst_port != Wire::DETACHED)
            .map(|e| (e.target(), *e.weight()))
            .collect();
        for (t, w) in out {
            self.g.add_edge(old, if t == new { old } else { t }, w);
        }
        // `new` goes with its edges, unlinked at once: its inputs were added just now, each
        // near the head of its source's out-list.
        let node = self.g.remove_node(new).expect("replace_node: stale index");
        self.g[old] = node;
        old
    }

    /// Nodes in a stable topological order: ties broken by the original order key. A cycle is
    /// an error naming one node on it.
    pub fn topo_order(&self) -> Result<Vec<NodeIndex>, Cycle> {
        // Fast path: when the nodes sorted by their order key already are a topological order
        // (a loaded model lists its nodes in order; passes mostly append), that sorted list is
        // exactly what the heap below would produce: the smallest remaining key is always
        // ready. One sort and one pass over the edges instead of a heap of every node.
        // Fastest: node indices already in key order (a graph as loaded), so the edges alone
        // tell whether that order is topological. The keys end with the index, so in that
        // case comparing two nodes' keys is comparing their indices: the edges are checked
        // without reading a node (two reads of the node array per edge, at random, were most
        // of this function's time on a graph of 600,000 nodes). The indices are listed in the
        // same walk over the records that checks their keys (a second walk, on a graph larger
        // than the cache, took as long as the first).
        let mut listed = Vec::with_capacity(self.g.node_count());
        let mut last: Option<(u32, u32)> = None;
        let mut in_key_order = true;
        for (ix, n) in self.g.node_references() {
            if last.is_some_and(|k| k > n.order) {
                in_key_order = false;
                break;
            }
            last = Some(n.order);
            listed.push(ix);
        }
        if in_key_order
            && self
                .g
                .edge_references()
                .all(|e| e.source().index() < e.target().index())
        {
            return Ok(listed);
        }
        drop(listed);
        // One read of each record (not a walk of the indices, then a lookup of each).
        let mut sorted: Vec<((u32, u32), NodeIndex)> = self
            .g
            .node_references()
            .map(|(ix, n)| (n.order, ix))
            .collect();
        sorted.sort_unstable_by_key(|&(order, ix)| (order, ix.index()));
        // Ranks and in-degrees in 32 bits (a stable graph's indices are): half the fresh
        // memory of `usize`.
        let mut position = vec![u32::MAX; self.g.node_bound()];
        for (p, &(_, ix)) in sorted.iter().enumerate() {
            position[ix.index()] = to_u32(p);
        }
        if self
            .g
            .edge_references()
            .all(|e| position[e.source().index()] < position[e.target().index()])
        {
            return Ok(sorted.into_iter().map(|(_, ix)| ix).collect());
        }
        // Kahn's algorithm, the smallest ready key first. A node's rank in `sorted` orders it
        // as its key does, so the ready nodes are a set of ranks ([`RankSet`]: a few word
        // operations each), not a binary heap (a logarithm per node, and most of this
        // function's time on a large graph a pass had reordered).
        // Indexed by node index (a stable graph's indices are dense up to `node_bound`).
        let mut indegree = vec![0u32; self.g.node_bound()];
        for e in self.g.edge_references() {
            indegree[e.target().index()] += 1;
        }
        let mut ready = RankSet::new(sorted.len());
        for (r, &(_, ix)) in sorted.iter().enumerate() {
            if indegree[ix.index()] == 0 {
                ready.insert(r);
            }
        }
        let mut out = Vec::with_capacity(self.g.node_count());
        while let Some(r) = ready.pop_min() {
            let ix = sorted[r].1;
            out.push(ix);
            for e in self.g.edges_directed(ix, Direction::Outgoing) {
                let t = e.target();
                let d = &mut indegree[t.index()];
                *d -= 1;
                if *d == 0 {
                    ready.insert(position[t.index()] as usize);
                }
            }
        }
        drop((sorted, position));
        if out.len() != self.g.node_count() {
            // Some node is on (or behind) a cycle: name the first one, in original order, that
            // lies on a cycle.
            let remaining: BTreeMap<(u32, u32), NodeIndex> = self
                .g
                .node_indices()
                .filter(|ix| indegree[ix.index()] > 0)
                .map(|ix| (self.g[ix].order, ix))
                .collect();
            let on_cycle = petgraph::algo::kosaraju_scc(&self.g)
                .into_iter()
                .filter(|c| c.len() > 1 || self.g.contains_edge(c[0], c[0]))
                .flatten()
                .min_by_key(|ix| self.g[*ix].order);
            let ix = on_cycle
                .or_else(|| remaining.values().next().copied())
                .unwrap_or_else(|| NodeIndex::new(0));
            return Err(Cycle(
                self.g
                    .node_weight(ix)
                    .map(|n| n.name.to_string())
                    .unwrap_or_default(),
            ));
        }
        Ok(out)
    }

    /// Count of operation nodes by `op_type`.
    pub fn op_counts(&self) -> BTreeMap<String, usize> {
        // Counted by the op type borrowed: one `String` per op type, not per node.
        let mut m: BTreeMap<&str, usize> = BTreeMap::new();
        for n in self.g.node_weights() {
            if n.kind == NodeKind::Op {
                *m.entry(n.op_type.as_str()).or_insert(0) += 1;
            }
        }
        m.into_iter().map(|(op, n)| (op.to_string(), n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `with_drop_later` has dropped every item when it returns: the first batch at once,
    /// the rest on the pool, the remainder with the `DropLater`.
    #[test]
    fn drop_later_drops_everything() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        struct Counted(Arc<AtomicUsize>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(AtomicUsize::new(0));
        let batch = DropLater::<Counted>::BATCH;
        let total = 5 * batch + 17;
        with_drop_later(
            total,
            |_| {},
            |later| {
                for i in 0..total {
                    later.push(Counted(dropped.clone()));
                    if i + 1 == batch {
                        assert_eq!(
                            dropped.load(Ordering::SeqCst),
                            batch,
                            "the first batch, at once"
                        );
                    }
                }
            },
        );
        assert_eq!(dropped.load(Ordering::SeqCst), total);
        // Fewer expected than a batch: all on this thread, even if more come.
        let dropped = Arc::new(AtomicUsize::new(0));
        with_drop_later(
            10,
            |_| {},
            |later| {
                for i in 0..total {
                    later.push(Counted(dropped.clone()));
                    assert_eq!(dropped.load(Ordering::SeqCst), i + 1);
                }
            },
        );
        // From a thread of the pool, with every other thread of the pool busy waiting too.
        let dropped = Arc::new(AtomicUsize::new(0));
        let threads = rayon::current_num_threads();
        rayon::scope(|s| {
            for _ in 0..threads {
                let dropped = dropped.clone();
                s.spawn(move |_| {
                    with_drop_later(
                        total,
                        |_| {},
                        |later| {
                            for _ in 0..total {
                                later.push(Counted(dropped.clone()));
                            }
                        },
                    )
                });
            }
        });
        assert_eq!(dropped.load(Ordering::SeqCst), threads * total);
    }

    /// `NodeHeap::of` moves a node's heap blocks (the same allocations, not copies) and is
    /// a third of a record.
    #[test]
    fn node_heap_keeps_the_blocks_of_the_node() {
        let mut n = Node::op("c", "", "");
        let t = Tensor::from_i64(vec![3], &[1, 2, 3]);
        n.kind = NodeKind::Const(Box::new(t.clone()));
        n.outputs = vec![Value {
            name: "c:0".into(),
            ..Value::default()
        }];
        n.attrs = vec![("axis".into(), Attr::Int(1))];
        let blocks = |n: &Node| {
            (
                match &n.kind {
                    NodeKind::Const(t) => (&**t as *const Tensor) as usize,
                    _ => 0,
                },
                n.outputs.as_ptr() as usize,
                n.attrs.as_ptr() as usize,
            )
        };
        let before = blocks(&n);
        let heap = NodeHeap::of(n);
        let after = (
            heap.tensor
                .as_deref()
                .map_or(0, |t| t as *const Tensor as usize),
            heap.outputs.as_ptr() as usize,
            heap.attrs.as_ptr() as usize,
        );
        assert_eq!(before, after);
        assert_eq!(heap.tensor.as_deref(), Some(&t));
        assert_eq!(heap.outputs[0].name, "c:0");
        assert_eq!(heap.attrs, vec![("axis".to_string(), Attr::Int(1))]);
        #[cfg(target_pointer_width = "64")]
        assert_eq!(std::mem::size_of::<NodeHeap>(), 56);
    }

    /// The prefetch of `remove_nodes_with` computes a record's address from another's and
    /// the size of petgraph's node entry: that is where the records are.
    #[test]
    fn node_records_are_where_the_prefetch_looks() {
        let mut g = Graph::new();
        let ix: Vec<NodeIndex> = (0..5)
            .map(|i| g.add_node(Node::op(format!("n{i}"), "Relu", "")))
            .collect();
        let records = NodeRecords::of(&g.g, ix[1]);
        for &k in &ix {
            let at = records.base.wrapping_add(
                (k.index().wrapping_sub(records.base_index)).wrapping_mul(records.stride),
            );
            assert_eq!(
                at,
                (&g.g[k] as *const Node).cast::<u8>(),
                "node {}",
                k.index()
            );
        }
    }

    /// An edge stores its ports in 32 bits (8 bytes, 28 in petgraph's edge list instead of
    /// 40), and ports past 16 bits read back as written through every accessor.
    #[test]
    fn wires_are_compact_and_wide_ports_read_back() {
        assert_eq!(std::mem::size_of::<Wire>(), 8);
        assert_eq!(std::mem::size_of::<Option<Wire>>(), 12);
        let mut g = Graph::new();
        let mut a = Node::op("a", "Split", "");
        a.outputs = vec![Value::default(); 70_001];
        let a = g.add_node(a);
        let mut b = Node::op("b", "Concat", "");
        b.num_inputs = 65_538;
        let b = g.add_node(b);
        let from = OutletId {
            node: a,
            port: 70_000,
        };
        g.connect(from, b, 65_537);
        assert_eq!(g.input(b, 65_537), Some(from));
        assert_eq!(g.input(b, 1), None);
        assert_eq!(g.inputs(b)[65_537], Some(from));
        assert_eq!(g.consumers(from), vec![(b, 65_537)]);
        assert_eq!(
            g.consumers(OutletId {
                node: a,
                port: 4464
            }),
            vec![]
        );
        let w = *g.g.edge_weights().next().unwrap();
        assert_eq!((w.src_port, w.dst_port), (70_000, 65_537));
    }

    /// A seeded generator for the graph tests: `rand(n)` is below `n` (0 for `n` = 0).
    fn lcg(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n.max(1)
        }
    }

    /// `topo_order` is the topological order that takes, at each step, the ready node of
    /// smallest (order key, index), and refuses a cycle (self-loops included). Checked against
    /// that definition, computed the slow way, on 3,000 small graphs: keys in index order
    /// (a graph as loaded), keys shuffled, nodes removed, edges backwards.
    #[test]
    fn topo_order_is_the_smallest_key_first_order_and_refuses_cycles() {
        let mut rand = lcg(0x9e37_79b9_7f4a_7c15);
        let (mut acyclic, mut cyclic) = (0, 0);
        for case in 0..3000 {
            let n = 1 + rand(9) as usize;
            let shuffled = case % 3 == 1;
            let mut g = Graph::new();
            let ix: Vec<NodeIndex> = (0..n)
                .map(|i| {
                    let mut node = Node::op(format!("n{i}"), "Op", "");
                    node.order = if shuffled {
                        (rand(3) as u32, rand(4) as u32)
                    } else {
                        (1, i as u32)
                    };
                    g.add_node(node)
                })
                .collect();
            for _ in 0..rand(2 * n as u64 + 1) {
                let (a, b) = (rand(n as u64) as usize, rand(n as u64) as usize);
                // Mostly forward edges; a backward edge or a self-loop now and then.
                let (a, b) = if a < b || rand(8) == 0 {
                    (a, b)
                } else {
                    (b, a)
                };
                if a != b || rand(4) == 0 {
                    g.connect(
                        OutletId {
                            node: ix[a],
                            port: 0,
                        },
                        ix[b],
                        0,
                    );
                }
            }
            if case % 3 == 2 && n > 1 {
                g.g.remove_node(ix[rand(n as u64) as usize]);
            }
            // The definition, slowly.
            let mut done: Vec<NodeIndex> = Vec::new();
            let mut want = Some(loop {
                let ready =
                    g.g.node_indices()
                        .filter(|v| !done.contains(v))
                        .filter(|&v| {
                            g.g.edges_directed(v, Direction::Incoming)
                                .all(|e| done.contains(&e.source()))
                        })
                        .min_by_key(|&v| (g.g[v].order, v.index()));
                match ready {
                    Some(v) => done.push(v),
                    None => break done.clone(),
                }
            });
            if want.as_ref().map(Vec::len) != Some(g.g.node_count()) {
                want = None;
            }
            match (g.topo_order(), want) {
                (Ok(got), Some(want)) => {
                    assert_eq!(got, want, "case {case}");
                    acyclic += 1;
                }
                (Err(_), None) => cyclic += 1,
                (got, want) => panic!("case {case}: {got:?} against {want:?}"),
            }
        }
        assert!(
            acyclic > 1000 && cyclic > 300,
            "{acyclic} acyclic, {cyclic} cyclic"
        );
    }

    /// `RankSet` against `BTreeSet` under random inserts and removals of the smallest, on sizes
    /// around each level's boundary (one word, one summary word, three levels).
    #[test]
    fn rank_set_gives_the_smallest_rank() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n.max(1)
        };
        for n in [1usize, 2, 63, 64, 65, 4095, 4096, 4097, 262_145, 300_000] {
            let mut set = RankSet::new(n);
            let mut want = std::collections::BTreeSet::new();
            for _ in 0..20_000 {
                if rand(3) == 0 {
                    assert_eq!(set.pop_min(), want.pop_first(), "n {n}");
                } else {
                    // Near the end of the range as often as anywhere else.
                    let r = if rand(2) == 0 {
                        rand(n as u64) as usize
                    } else {
                        n - 1 - (rand(n.min(100) as u64) as usize)
                    };
                    set.insert(r);
                    want.insert(r);
                }
            }
            while let Some(w) = want.pop_first() {
                assert_eq!(set.pop_min(), Some(w), "n {n}");
            }
            assert_eq!(set.pop_min(), None, "n {n}");
        }
    }

    /// On graphs large enough for every level of `RankSet` (up to 20,000 nodes, keys shuffled
    /// so the fast paths do not apply), `topo_order` is the smallest-key-first order a binary
    /// heap gives.
    #[test]
    fn topo_order_of_large_shuffled_graphs_is_the_heap_order() {
        let mut rand = lcg(0x9e37_79b9_7f4a_7c15);
        for n in [100usize, 5_000, 20_000] {
            let mut g = Graph::new();
            let ix: Vec<NodeIndex> = (0..n)
                .map(|i| {
                    let mut node = Node::op(format!("n{i}"), "Op", "");
                    node.order = (rand(4) as u32, rand(n as u64) as u32);
                    g.add_node(node)
                })
                .collect();
            for _ in 0..2 * n {
                let (a, b) = (rand(n as u64) as usize, rand(n as u64) as usize);
                if a != b {
                    let (a, b) = (a.min(b), a.max(b));
                    g.connect(
                        OutletId {
                            node: ix[a],
                            port: 0,
                        },
                        ix[b],
                        0,
                    );
                }
            }
            // The reference: Kahn's algorithm with a binary heap of (key, index).
            let mut indegree = vec![0usize; g.g.node_bound()];
            for e in g.g.edge_references() {
                indegree[e.target().index()] += 1;
            }
            let mut heap: std::collections::BinaryHeap<_> =
                g.g.node_indices()
                    .filter(|v| indegree[v.index()] == 0)
                    .map(|v| std::cmp::Reverse((g.g[v].order, v.index())))
                    .collect();
            let mut want = Vec::new();
            while let Some(std::cmp::Reverse((_, i))) = heap.pop() {
                want.push(NodeIndex::new(i));
                for e in g.g.edges_directed(NodeIndex::new(i), Direction::Outgoing) {
                    let t = e.target();
                    indegree[t.index()] -= 1;
                    if indegree[t.index()] == 0 {
                        heap.push(std::cmp::Reverse((g.g[t].order, t.index())));
                    }
                }
            }
            assert_eq!(want.len(), n);
            assert_eq!(g.topo_order().expect("acyclic"), want, "n {n}");
        }
    }

    /// A node record holds its positions and input count in 32 bits: every pass reads every
    /// record, and a 600,000-node graph's records are larger than the cache (issue 19). On
    /// 64-bit targets: five 24-byte names and vectors, the 16-byte kind, then 8 bytes each for
    /// the order key and the origin, and the input count and flag in the last 8.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn a_node_record_is_compact() {
        assert_eq!(std::mem::size_of::<Origin>(), 8);
        assert_eq!(std::mem::size_of::<(u32, u32)>(), 8);
        assert!(
            std::mem::size_of::<Node>() <= 5 * 24 + 16 + 8 + 8 + 8,
            "Node is {} bytes",
            std::mem::size_of::<Node>()
        );
    }

    /// An attribute is no larger than its largest unboxed payload (a `Vec` or `String`) and a
    /// tag: a 600,000-layer IR model holds over two million of them (issue 19).
    #[test]
    fn an_attribute_is_a_vec_and_a_tag() {
        let word = std::mem::size_of::<usize>();
        assert!(
            std::mem::size_of::<Attr>() <= std::mem::size_of::<Vec<i64>>() + word,
            "Attr is {} bytes",
            std::mem::size_of::<Attr>()
        );
    }

    /// `unique_name` never returns a name a node or value of the graph has, nor one it returned
    /// before, however the graph was built (the loaders reserve nothing).
    #[test]
    fn unique_names_avoid_the_graph_and_each_other() {
        let mut g = Graph::new();
        let mut n = Node::op("node_a", "Neg", "");
        n.outputs = vec![Value {
            name: "value_b".into(),
            ..Value::default()
        }];
        g.add_node(n);
        let a = g.unique_name("node_a");
        let b = g.unique_name("value_b");
        assert!(a != "node_a" && a.starts_with("node_a"), "{a}");
        assert!(b != "value_b" && b.starts_with("value_b"), "{b}");
        assert_eq!(g.unique_name("c"), "c");
        let c2 = g.unique_name("c");
        assert!(c2 != "c" && c2.starts_with('c'), "{c2}");
        // A node added after the first call: its name is reserved by whoever named it.
        g.reserve_name("late");
        assert_ne!(g.unique_name("late"), "late");
    }

    /// `remove_nodes` drops the nodes and every edge touching them, and leaves the other nodes
    /// at their indices with their edges.
    #[test]
    fn remove_nodes_keeps_the_rest() {
        let mut g = Graph::new();
        let c = g.add_node(Node::op("c", "Const", ""));
        let users: Vec<_> = (0..5)
            .map(|i| {
                let mut n = Node::op(format!("u{i}"), "Neg", "");
                n.num_inputs = 1;
                let u = g.add_node(n);
                g.connect(OutletId { node: c, port: 0 }, u, 0);
                u
            })
            .collect();
        let mut n = Node::op("sink", "Sum", "");
        n.num_inputs = 5;
        let sink = g.add_node(n);
        for (k, &u) in users.iter().enumerate() {
            g.connect(OutletId { node: u, port: 0 }, sink, k);
        }
        let dead: FastSet<_> = [users[1], users[3]].into_iter().collect();
        let removed = g.remove_nodes(&dead);
        let names: Vec<_> = removed.iter().map(|(_, n)| n.name.as_str()).collect();
        assert_eq!(names, ["u1", "u3"]);
        assert_eq!(g.g.node_count(), 5);
        assert_eq!(g.g.edge_count(), 6);
        for &u in &[users[0], users[2], users[4]] {
            assert_eq!(
                g.node(u).name,
                format!("u{}", users.iter().position(|&x| x == u).unwrap())
            );
            assert_eq!(g.input(u, 0), Some(OutletId { node: c, port: 0 }));
        }
        assert_eq!(g.consumers(OutletId { node: c, port: 0 }).len(), 3);
        let ports: Vec<_> = g.inputs(sink).iter().map(|o| o.map(|o| o.node)).collect();
        assert_eq!(
            ports,
            vec![Some(users[0]), None, Some(users[2]), None, Some(users[4])]
        );
        assert!(g.g.node_weight(users[1]).is_none());
    }

    /// An incoming edge as `(source index, src_port, dst_port)`.
    type InEdge = (usize, usize, usize);

    /// A hub with `kept` consumers it keeps and `dead` it loses, every other one, and the edge
    /// list of each consumer afterwards (sorted: `(source, src_port, dst_port)`).
    fn hub_after_removal(kept: usize, dead: usize) -> (Graph, Vec<Vec<InEdge>>) {
        let mut g = Graph::new();
        let hub = g.add_node(Node::op("hub", "Const", ""));
        let mut gone = Vec::new();
        let mut users = Vec::new();
        for i in 0..kept + dead {
            let mut n = Node::op(format!("u{i}"), "Neg", "");
            n.num_inputs = 2;
            let u = g.add_node(n);
            users.push(u);
            g.connect(OutletId { node: hub, port: 0 }, u, 1);
            let e = g.connect(OutletId { node: hub, port: 0 }, u, 0);
            if i % 2 == 1 && gone.len() < dead {
                gone.push(e);
            }
        }
        g.remove_edges(gone);
        let lists = users
            .iter()
            .map(|&u| {
                let mut l: Vec<_> =
                    g.g.edges_directed(u, Direction::Incoming)
                        .map(|e| {
                            (
                                e.source().index(),
                                e.weight().src_port as usize,
                                e.weight().dst_port as usize,
                            )
                        })
                        .collect();
                l.sort_unstable();
                l
            })
            .collect();
        (g, lists)
    }

    /// `remove_edges` removes exactly the listed edges, whether it unlinks them in place (few
    /// kept consumers) or rebuilds the graph (a hub with thousands of kept and removed
    /// consumers: in place would be quadratic); node indices do not move.
    #[test]
    fn remove_edges_removes_exactly_those_edges_in_place_or_rebuilt() {
        for (kept, dead) in [(3, 3), (4000, 4000)] {
            let (g, lists) = hub_after_removal(kept, dead);
            assert_eq!(g.g.node_count(), 1 + kept + dead);
            assert_eq!(g.g.edge_count(), 2 * (kept + dead) - dead);
            for (i, l) in lists.iter().enumerate() {
                let want: &[InEdge] = if i % 2 == 1 && i / 2 < dead {
                    &[(0, 0, 1)]
                } else {
                    &[(0, 0, 0), (0, 0, 1)]
                };
                assert_eq!(l, want, "consumer u{i} ({kept} kept, {dead} removed)");
                assert_eq!(g.node(NodeIndex::new(i + 1)).name, format!("u{i}"));
            }
        }
    }

    /// `replace_node` on every consumer of a shared hub (what `raise` and `lower` do to slices
    /// that share a constant parameter): before the flush the graph's accessors see only the
    /// new inputs, after it the petgraph lists hold exactly them; the node takes the old
    /// one's index and consumers, and a node removed lazily is gone after the flush.
    #[test]
    fn replace_node_defers_unlinking_until_the_flush() {
        let mut g = Graph::new();
        let x = g.add_node(Node::op("x", "Input", ""));
        let hub = g.add_node(Node::op("hub", "Const", ""));
        let at = |node| OutletId { node, port: 0 };
        let mut olds = Vec::new();
        let mut sinks = Vec::new();
        for i in 0..50 {
            let mut n = Node::op(format!("s{i}"), "Slice", "");
            n.num_inputs = 2;
            let s = g.add_node(n);
            g.connect(at(x), s, 0);
            g.connect(at(hub), s, 1);
            let mut t = Node::op(format!("t{i}"), "Neg", "");
            t.num_inputs = 1;
            let t = g.add_node(t);
            g.connect(at(s), t, 0);
            olds.push(s);
            sinks.push(t);
        }
        let mut fresh = Vec::new();
        for (i, &s) in olds.iter().enumerate() {
            let c = g.add_node(Node::op(format!("c{i}"), "Const", ""));
            let mut n = Node::op(format!("r{i}"), "StridedSlice", "");
            n.num_inputs = 2;
            let r = g.add_node(n);
            g.connect(at(x), r, 0);
            g.connect(at(c), r, 1);
            assert_eq!(g.replace_node(s, r), s);
            fresh.push(c);
        }
        // The last sink is removed lazily: its edge goes, its index stays until the flush.
        g.remove_node_lazily(sinks[49]);
        assert!(!g.is_live(sinks[49]));
        let check = |g: &Graph| {
            assert!(g.consumers(at(hub)).is_empty());
            assert_eq!(g.consumers(at(x)).len(), 50);
            for (i, &s) in olds.iter().enumerate() {
                assert_eq!(g.node(s).name, format!("r{i}"));
                assert_eq!(g.inputs(s), vec![Some(at(x)), Some(at(fresh[i]))]);
                let want: Vec<(NodeIndex, usize)> =
                    if i < 49 { vec![(sinks[i], 0)] } else { vec![] };
                assert_eq!(g.consumers(at(s)), want);
            }
        };
        check(&g);
        g.flush_detached();
        check(&g);
        assert!(g.g.node_weight(sinks[49]).is_none());
        // x: 50 slices; each slice: its constant; 49 sinks.
        assert_eq!(g.g.edge_count(), 50 + 50 + 49);
        assert!(g.g.edge_weights().all(|w| w.dst_port != Wire::DETACHED));
        assert_eq!(g.g.node_count(), 2 + 50 + 49 + 50);
    }
}
