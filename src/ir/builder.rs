//! A small [`Graph`] built in a few lines, without writing a model file: the fixture of a
//! pass's in-file tests (`#[cfg(test)] mod tests` at the bottom of `passes/<pass>.rs`).
//!
//! The graph has the shape a loader gives it in each dialect: in ONNX, graph inputs are
//! [`NodeKind::Input`] nodes, constants are initializers ([`NodeKind::Const`] with an empty op
//! type) and graph outputs are [`NodeKind::Output`] sinks; in OpenVINO IR, inputs are
//! `Parameter` layers, constants `Const` layers and outputs `Result` layers. Nodes are named
//! and ordered in creation order; an output value is named after its node (`name:port`).
//!
//! ```
//! use slice_opt::ir::builder::GraphBuilder;
//! use slice_opt::ir::{DType, NodeKind};
//!
//! // y = Slice(x, starts=[1], ends=[5], axes=[1]) on x: f32[N, 6]; `unused` feeds nothing.
//! let mut b = GraphBuilder::onnx();
//! let x = b.input("x", DType::F32, "N, 6");
//! let starts = b.const_i64("starts", &[1]);
//! let ends = b.const_i64("ends", &[5]);
//! let axes = b.const_i64("axes", &[1]);
//! let y = b.op("Slice", &[x, starts, ends, axes]).name("s").out();
//! b.output("y", y);
//! b.const_i64("unused", &[0]);
//! // Attributes, several outputs, an omitted optional input, a declared output type:
//! let parts = b
//!     .op_gaps("Split", &[Some(x), None])
//!     .attr("axis", 1)
//!     .outputs(2)
//!     .typed(DType::F32, "N, 3")
//!     .add();
//! b.output("first", b.at(parts, 0));
//! let g = b.finish();
//! assert_eq!(g.g.node_count(), 9);
//! let s = g.node(y.node);
//! assert_eq!((s.op_type.as_str(), s.num_inputs), ("Slice", 4));
//! assert!(matches!(g.node(starts.node).kind, NodeKind::Const(_)));
//! assert_eq!(g.input(y.node, 1), Some(starts));
//! assert_eq!(g.input(parts, 1), None);
//! ```

use petgraph::stable_graph::NodeIndex;

use super::{
    Attr, DType, DeclaredDim, Format, Graph, Node, NodeKind, OutletId, Tensor, Text, Value,
    ValueType,
};

/// Builds a [`Graph`] of one dialect (see the [module](self) example).
#[derive(Debug)]
pub struct GraphBuilder {
    g: Graph,
    dialect: Format,
    /// Nodes made so far, for default names.
    made: usize,
}

impl GraphBuilder {
    /// An empty graph of `dialect`.
    pub fn new(dialect: Format) -> GraphBuilder {
        GraphBuilder {
            g: Graph::new(),
            dialect,
            made: 0,
        }
    }

    /// An empty ONNX graph.
    pub fn onnx() -> GraphBuilder {
        GraphBuilder::new(Format::Onnx)
    }

    /// An empty OpenVINO IR graph.
    pub fn openvino() -> GraphBuilder {
        GraphBuilder::new(Format::OpenVino)
    }

    /// The dialect the graph is built in (what a pass's context needs).
    pub fn dialect(&self) -> Format {
        self.dialect
    }

    /// The graph so far.
    pub fn graph(&self) -> &Graph {
        &self.g
    }

    /// The graph.
    pub fn finish(self) -> Graph {
        self.g
    }

    /// Output `port` of `node`.
    pub fn at(&self, node: NodeIndex, port: usize) -> OutletId {
        OutletId { node, port }
    }

    /// A graph input `name` of element type `dtype` and dims `dims` (`[2, 6]`, or text:
    /// `"N, 6, ?, 1..8"`, see [`IntoDims`]): ONNX a graph input, OpenVINO a `Parameter`.
    pub fn input(&mut self, name: &str, dtype: DType, dims: impl IntoDims) -> OutletId {
        let ty = ValueType {
            dtype: Some(dtype),
            shape: Some(dims.into_dims()),
        };
        let mut node = match self.dialect {
            Format::Onnx => {
                let mut n = Node::op(name, "", "");
                n.kind = NodeKind::Input;
                n
            }
            Format::OpenVino => Node::op(name, "Parameter", "opset1"),
        };
        node.outputs = vec![value(name, 0, 1, ty)];
        self.add(node, &[])
    }

    /// A constant `name` holding `t`: ONNX an initializer, OpenVINO a `Const` layer.
    pub fn constant(&mut self, name: &str, t: Tensor) -> OutletId {
        let (op, domain) = match self.dialect {
            Format::Onnx => ("", ""),
            Format::OpenVino => ("Const", "opset1"),
        };
        let mut node = Node::op(name, op, domain);
        let ty = ValueType {
            dtype: Some(t.dtype),
            shape: Some(t.shape.iter().map(|&d| DeclaredDim::Known(d)).collect()),
        };
        node.outputs = vec![value(name, 0, 1, ty)];
        node.kind = NodeKind::Const(Box::new(t));
        self.add(node, &[])
    }

    /// A one-dimensional i64 constant (slice parameters, shapes, axes).
    pub fn const_i64(&mut self, name: &str, values: &[i64]) -> OutletId {
        self.constant(name, Tensor::from_i64(vec![values.len() as u64], values))
    }

    /// An op node `op` reading `inputs` (port `k` reads `inputs[k]`); finish it with
    /// [`OpBuilder::out`] or [`OpBuilder::add`].
    pub fn op(&mut self, op: &str, inputs: &[OutletId]) -> OpBuilder<'_> {
        let inputs: Vec<_> = inputs.iter().copied().map(Some).collect();
        self.op_gaps(op, &inputs)
    }

    /// [`GraphBuilder::op`] with omitted optional inputs (`None`: a port with no edge, as an
    /// ONNX empty input name).
    pub fn op_gaps(&mut self, op: &str, inputs: &[Option<OutletId>]) -> OpBuilder<'_> {
        let domain = match self.dialect {
            Format::Onnx => "",
            Format::OpenVino => "opset1",
        };
        let name = format!("{op}_{}", self.made);
        OpBuilder {
            node: Node::op(name, op, domain),
            inputs: inputs.to_vec(),
            outputs: 1,
            ty: ValueType::default(),
            b: self,
        }
    }

    /// Wires `from` to input `port` of `to` after both exist: a node read by one made before
    /// it (a graph whose records are out of order), or a port left open by
    /// [`GraphBuilder::op_gaps`].
    pub fn connect(&mut self, from: OutletId, to: NodeIndex, port: usize) {
        self.g.connect(from, to, port);
    }

    /// A graph output `name` reading `from`: ONNX an output, OpenVINO a `Result` layer.
    pub fn output(&mut self, name: &str, from: OutletId) -> NodeIndex {
        let node = match self.dialect {
            Format::Onnx => {
                let mut n = Node::op(name, "", "");
                n.kind = NodeKind::Output;
                n
            }
            Format::OpenVino => Node::op(name, "Result", "opset1"),
        };
        self.add(node, &[Some(from)]).node
    }

    fn add(&mut self, mut node: Node, inputs: &[Option<OutletId>]) -> OutletId {
        node.num_inputs = super::to_u32(inputs.len());
        // As loaded: a pass marks what it changes.
        node.dirty = false;
        self.made += 1;
        let ix = self.g.add_node(node);
        for (port, from) in inputs.iter().enumerate() {
            if let Some(from) = from {
                self.g.connect(*from, ix, port);
            }
        }
        OutletId { node: ix, port: 0 }
    }
}

fn value(node: &str, port: usize, count: usize, ty: ValueType) -> Value {
    let name = if count == 1 {
        Text::from(node)
    } else {
        Text::from(format!("{node}:{port}"))
    };
    Value {
        name,
        ty,
        ty_changed: false,
    }
}

/// An op node being built ([`GraphBuilder::op`]).
#[must_use = "finish the node with .out() or .add()"]
pub struct OpBuilder<'b> {
    b: &'b mut GraphBuilder,
    node: Node,
    inputs: Vec<Option<OutletId>>,
    outputs: usize,
    ty: ValueType,
}

impl OpBuilder<'_> {
    /// Names the node (default: `<op>_<k>`, `k` counting the nodes made before it).
    pub fn name(mut self, name: &str) -> Self {
        self.node.name = name.into();
        self
    }

    /// The ONNX domain or OpenVINO opset (default: `""`, `opset1`).
    pub fn domain(mut self, domain: &str) -> Self {
        self.node.domain = domain.into();
        self
    }

    /// Adds attribute `name` (`1`, `vec![0, 2]`, `"true"`, or any [`Attr`]). OpenVINO keeps
    /// every attribute as a string: give it one (`"0,2"`) to match a loaded layer.
    pub fn attr(mut self, name: &str, value: impl Into<Attr>) -> Self {
        self.node.attrs.push((name.to_string(), value.into()));
        self
    }

    /// The number of outputs (default 1).
    pub fn outputs(mut self, n: usize) -> Self {
        self.outputs = n;
        self
    }

    /// Declares the type of every output (default: nothing known).
    pub fn typed(mut self, dtype: DType, dims: impl IntoDims) -> Self {
        self.ty = ValueType {
            dtype: Some(dtype),
            shape: Some(dims.into_dims()),
        };
        self
    }

    /// Adds the node; returns its index.
    pub fn add(self) -> NodeIndex {
        let OpBuilder {
            b,
            mut node,
            inputs,
            outputs,
            ty,
        } = self;
        node.outputs = (0..outputs)
            .map(|p| value(&node.name, p, outputs, ty.clone()))
            .collect();
        b.add(node, &inputs).node
    }

    /// Adds the node; returns its output 0.
    pub fn out(self) -> OutletId {
        let node = self.add();
        OutletId { node, port: 0 }
    }
}

/// Dims as a test writes them: `[2, 6]` (known), a `Vec<DeclaredDim>`, or text `"N, 6, ?,
/// 1..8, 2.."` (a number is known, `?` unknown, `lo..hi` / `lo..` an interval, anything else a
/// symbol); `""` is a scalar.
pub trait IntoDims {
    fn into_dims(self) -> Vec<DeclaredDim>;
}

impl<const N: usize> IntoDims for [u64; N] {
    fn into_dims(self) -> Vec<DeclaredDim> {
        self.iter().map(|&d| DeclaredDim::Known(d)).collect()
    }
}

impl IntoDims for &[u64] {
    fn into_dims(self) -> Vec<DeclaredDim> {
        self.iter().map(|&d| DeclaredDim::Known(d)).collect()
    }
}

impl IntoDims for Vec<DeclaredDim> {
    fn into_dims(self) -> Vec<DeclaredDim> {
        self
    }
}

impl IntoDims for &str {
    fn into_dims(self) -> Vec<DeclaredDim> {
        self.split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| {
                if d == "?" {
                    return DeclaredDim::Unknown;
                }
                if let Ok(v) = d.parse() {
                    return DeclaredDim::Known(v);
                }
                if let Some((lo, hi)) = d.split_once("..") {
                    if let Ok(lo) = lo.trim().parse() {
                        match hi.trim() {
                            "" => return DeclaredDim::Interval(lo, None),
                            hi => {
                                if let Ok(hi) = hi.parse() {
                                    return DeclaredDim::Interval(lo, Some(hi));
                                }
                            }
                        }
                    }
                }
                DeclaredDim::Param(d.to_string())
            })
            .collect()
    }
}

impl From<i64> for Attr {
    fn from(v: i64) -> Attr {
        Attr::Int(v)
    }
}

impl From<Vec<i64>> for Attr {
    fn from(v: Vec<i64>) -> Attr {
        Attr::Ints(v)
    }
}

impl From<f32> for Attr {
    fn from(v: f32) -> Attr {
        Attr::Float(v)
    }
}

impl From<&str> for Attr {
    fn from(v: &str) -> Attr {
        Attr::String(v.to_string())
    }
}

impl From<Tensor> for Attr {
    fn from(t: Tensor) -> Attr {
        Attr::Tensor(Box::new(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_from_text() {
        use DeclaredDim::*;
        assert_eq!(
            "N, 6, ?, 1..8, 2..".into_dims(),
            vec![
                Param("N".into()),
                Known(6),
                Unknown,
                Interval(1, Some(8)),
                Interval(2, None)
            ]
        );
        assert!("".into_dims().is_empty());
    }

    /// OpenVINO: a `Parameter`, a `Const` and a `Result` layer, as the IR reader makes them.
    #[test]
    fn openvino_shape() {
        let mut b = GraphBuilder::openvino();
        let x = b.input("x", DType::I64, [3]);
        let c = b.const_i64("c", &[1, 2, 3]);
        let y = b.op("Add", &[x, c]).attr("auto_broadcast", "numpy").out();
        let r = b.output("r", y);
        let g = b.finish();
        assert_eq!(g.node(x.node).op_type, "Parameter");
        assert_eq!(g.node(c.node).op_type, "Const");
        assert!(g.node(c.node).constant().is_some());
        assert_eq!(g.node(r).op_type, "Result");
        assert_eq!(g.node(r).num_inputs, 1);
        assert!(g.node(r).outputs.is_empty());
        assert_eq!(g.node(y.node).attr_str("auto_broadcast"), Some("numpy"));
        assert_eq!(g.consumers(y), vec![(r, 0)]);
    }
}
