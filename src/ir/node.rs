//! The records of the graph: nodes, their values and attributes, wires and outlets.

use petgraph::stable_graph::NodeIndex;

use super::{DType, Tensor};

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
    /// first: not placed yet, see [`Graph::add_node`](super::Graph::add_node)).
    pub order: (u32, u32),
    /// Set when a pass changed the node, so its record must be rebuilt on save.
    pub dirty: bool,
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
    /// Destination port of an edge unlinked lazily ([`Graph::detach_edge`](super::Graph::detach_edge)): still in the
    /// petgraph lists until [`Graph::flush_detached`](super::Graph::flush_detached), invisible to
    /// every [`Graph`](super::Graph) accessor.
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
