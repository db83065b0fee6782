//! Building new nodes next to the one `lower` or `raise` replaces: the [`Builder`], the types
//! of the small tensors they add, OpenVINO list attributes, and taking over a node's place.

use petgraph::stable_graph::NodeIndex;

use crate::formats::Format;
use crate::ir::{
    Attr, DType, DeclaredDim, Graph, Node, NodeKind, OutletId, Tensor, Value, ValueType,
};

/// Adds new nodes beside an existing one (same position in the output order).
pub struct Builder<'a> {
    pub graph: &'a mut Graph,
    pub format: Format,
    /// Base for names of new nodes and values.
    pub base: String,
    order: (u32, u32),
    k: u32,
}

impl<'a> Builder<'a> {
    /// A builder placing new nodes where `beside` is.
    pub fn new(graph: &'a mut Graph, format: Format, beside: NodeIndex) -> Builder<'a> {
        let n = graph.node(beside);
        let (base, order) = (n.name.clone(), n.order);
        Builder {
            graph,
            format,
            base: base.into(),
            order,
            k: 0,
        }
    }

    fn add(&mut self, mut node: Node) -> NodeIndex {
        self.k = self.k.saturating_add(1);
        node.order = (self.order.0, self.order.1.saturating_add(self.k));
        let ix = self.graph.add_node(node);
        self.graph.node_mut(ix).order = (self.order.0, self.order.1.saturating_add(self.k));
        ix
    }

    /// A new 1-D i64 constant.
    pub fn const_i64(&mut self, what: &str, values: &[i64]) -> OutletId {
        let name = self.graph.unique_name(&format!("{}/{what}", self.base));
        let t = Tensor::from_i64(vec![values.len() as u64], values);
        let mut node = match self.format {
            Format::Onnx => Node::op(name.clone(), "", ""),
            Format::OpenVino => Node::op(name.clone(), "Const", "opset1"),
        };
        node.outputs = vec![Value {
            name: name.into(),
            ty: ValueType {
                dtype: Some(DType::I64),
                shape: Some(vec![DeclaredDim::Known(values.len() as u64)]),
            },
            ty_changed: true,
        }];
        node.kind = NodeKind::Const(Box::new(t));
        let ix = self.add(node);
        OutletId { node: ix, port: 0 }
    }

    /// A new operation node with one output. `name`/`out` `None`: fresh names from the base.
    #[allow(clippy::too_many_arguments)]
    pub fn op(
        &mut self,
        name: Option<String>,
        op_type: &str,
        domain: &str,
        inputs: &[Option<OutletId>],
        attrs: Vec<(String, Attr)>,
        out: Option<Value>,
        ty: ValueType,
    ) -> NodeIndex {
        let name = name.unwrap_or_else(|| {
            self.graph
                .unique_name(&format!("{}/{}", self.base, op_type.to_lowercase()))
        });
        let mut node = Node::op(name.clone(), op_type, domain);
        node.num_inputs = crate::ir::to_u32(inputs.len());
        node.attrs = attrs;
        node.outputs = vec![out.unwrap_or_else(|| Value {
            name: self.graph.unique_name(&format!("{name}:0")).into(),
            ty,
            ty_changed: true,
        })];
        let ix = self.add(node);
        for (port, i) in inputs.iter().enumerate() {
            if let Some(o) = i {
                self.graph.connect(*o, ix, port);
            }
        }
        ix
    }

    /// A new operation node of the format's standard domain (OpenVINO: `opset1`) with fresh
    /// names; its output 0.
    pub fn std_op(
        &mut self,
        op_type: &str,
        inputs: &[OutletId],
        attrs: Vec<(String, Attr)>,
        ty: ValueType,
    ) -> OutletId {
        let dom = if self.format == Format::OpenVino {
            "opset1"
        } else {
            ""
        };
        let inputs: Vec<Option<OutletId>> = inputs.iter().map(|&o| Some(o)).collect();
        let node = self.op(None, op_type, dom, &inputs, attrs, None, ty);
        OutletId { node, port: 0 }
    }

    /// `o` (a 1-D integer tensor of length `n`) as i64: itself when it is i64, else a
    /// `Convert`/`Cast` of it.
    pub fn as_i64(&mut self, o: OutletId, n: Option<u64>) -> OutletId {
        let dtype = self
            .graph
            .constant_at(o)
            .map(|t| t.dtype)
            .or_else(|| self.graph.value(o).and_then(|v| v.ty.dtype));
        if dtype == Some(DType::I64) {
            return o;
        }
        let (op, attr) = if self.format == Format::OpenVino {
            ("Convert", ("destination_type", Attr::String("i64".into())))
        } else {
            ("Cast", ("to", Attr::Int(7)))
        };
        self.std_op(op, &[o], vec![(attr.0.to_string(), attr.1)], i64_vec(n))
    }

    /// `Concat` of 1-D i64 tensors (of total length `n`) on axis 0.
    pub fn concat0(&mut self, parts: &[OutletId], n: Option<u64>) -> OutletId {
        let axis = if self.format == Format::OpenVino {
            Attr::String("0".into())
        } else {
            Attr::Int(0)
        };
        self.std_op(
            "Concat",
            parts,
            vec![("axis".to_string(), axis)],
            i64_vec(n),
        )
    }

    /// The elements `idx` of the 1-D i64 tensor `data` (a `Gather` on axis 0).
    pub fn gather0(&mut self, data: OutletId, what: &str, idx: &[i64]) -> OutletId {
        let i = self.const_i64(what, idx);
        let ty = i64_vec(Some(idx.len() as u64));
        let node = if self.format == Format::OpenVino {
            let axis = self.const_i64("gather_axis", &[0]);
            self.op(
                None,
                "Gather",
                "opset8",
                &[Some(data), Some(i), Some(axis)],
                vec![("batch_dims".to_string(), Attr::String("0".into()))],
                None,
                ty,
            )
        } else {
            self.op(
                None,
                "Gather",
                "",
                &[Some(data), Some(i)],
                vec![("axis".to_string(), Attr::Int(0))],
                None,
                ty,
            )
        };
        OutletId { node, port: 0 }
    }

    /// The dims `axes` of `data` at run time, as a 1-D i64 tensor: constants where the dims
    /// are known (`dims`), else `ShapeOf`/`Shape` of `data` and a `Gather`.
    pub fn dims_at_run_time(
        &mut self,
        data: OutletId,
        dims: &[Option<u64>],
        axes: &[usize],
    ) -> OutletId {
        let known: Option<Vec<i64>> = axes
            .iter()
            .map(|&a| {
                dims.get(a)
                    .copied()
                    .flatten()
                    .and_then(|d| i64::try_from(d).ok())
            })
            .collect();
        if let Some(k) = known {
            return self.const_i64("dims", &k);
        }
        let rank = dims.len() as u64;
        let shape = if self.format == Format::OpenVino {
            let node = self.op(
                None,
                "ShapeOf",
                "opset3",
                &[Some(data)],
                vec![("output_type".to_string(), Attr::String("i64".into()))],
                None,
                i64_vec(Some(rank)),
            );
            OutletId { node, port: 0 }
        } else {
            self.std_op("Shape", &[data], Vec::new(), i64_vec(Some(rank)))
        };
        let idx: Vec<i64> = axes.iter().map(|&a| a as i64).collect();
        self.gather0(shape, "dim_index", &idx)
    }
}

/// The type of a 1-D i64 tensor of length `n`.
pub fn i64_vec(n: Option<u64>) -> ValueType {
    ValueType {
        dtype: Some(DType::I64),
        shape: Some(vec![n.map_or(DeclaredDim::Unknown, DeclaredDim::Known)]),
    }
}

/// The type of a 1-D boolean tensor of length `n`.
pub fn bool_vec(n: Option<u64>) -> ValueType {
    ValueType {
        dtype: Some(DType::Bool),
        shape: Some(vec![n.map_or(DeclaredDim::Unknown, DeclaredDim::Known)]),
    }
}

/// The marker `lower` puts in the name of a lone Reshape/Squeeze/Unsqueeze it makes of an
/// axis-only StridedSlice, so that `raise` turns it back into one StridedSlice in a later,
/// separate run too (a node name survives saving in both formats; a reshaping node without the
/// marker is never raised on its own).
pub const LOWERED_MARK: &str = "/slice_opt_lowered";

/// Moves the consumers of `old`'s output 0 to `new`'s output 0 and removes `old`; returns the
/// index the new node ends up at (`old`'s, see [`Graph::replace_node`]: `new` is gone).
pub fn take_over(graph: &mut Graph, old: NodeIndex, new: NodeIndex) -> NodeIndex {
    graph.replace_node(old, new)
}

/// Declared type of a value: dtype of `like`, shape `shape`.
pub fn ty_like(graph: &Graph, like: OutletId, shape: Option<Vec<DeclaredDim>>) -> ValueType {
    let dtype = graph
        .constant_at(like)
        .map(|t| t.dtype)
        .or_else(|| graph.value(like).and_then(|v| v.ty.dtype));
    ValueType { dtype, shape }
}

/// An OpenVINO list attribute (`1,0,1`).
pub fn ov_list(v: &[i64]) -> Attr {
    Attr::String(
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(","),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::builder::GraphBuilder;

    /// New nodes sit where the node they stand beside is in the output order, right after it
    /// and in creation order, and take fresh names from its name.
    #[test]
    fn placed_and_named_beside() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::I64, [3]);
        b.const_i64("s/k", &[0]);
        let s = b.op("Neg", &[x]).name("s").add();
        let mut g = b.finish();
        g.node_mut(s).order = (2, 7);
        let mut nb = Builder::new(&mut g, Format::Onnx, s);
        let k = nb.const_i64("k", &[1, 2]);
        let k2 = nb.const_i64("k", &[3]);
        let n = nb.std_op("Neg", &[k], Vec::new(), i64_vec(Some(2)));
        let names: Vec<&str> = [k, k2, n]
            .iter()
            .map(|o| g.node(o.node).name.as_str())
            .collect();
        assert_eq!(names, ["s/k_1", "s/k_2", "s/neg"]);
        let orders: Vec<(u32, u32)> = [k, k2, n].iter().map(|o| g.node(o.node).order).collect();
        assert_eq!(orders, [(2, 8), (2, 9), (2, 10)]);
        assert_eq!(g.input(n.node, 0), Some(k));
    }

    /// An i64 input is used as it is; any other integer type is converted: ONNX `Cast` with
    /// `to` = 7 (TensorProto INT64), OpenVINO `Convert` with `destination_type` `i64`.
    #[test]
    fn as_i64_converts_only_other_types() {
        for (dialect, op, attr, to) in [
            (Format::Onnx, "Cast", "to", Attr::Int(7)),
            (
                Format::OpenVino,
                "Convert",
                "destination_type",
                Attr::String("i64".into()),
            ),
        ] {
            let mut b = GraphBuilder::new(dialect);
            let wide = b.input("wide", DType::I64, [2]);
            let narrow = b.input("narrow", DType::I32, [2]);
            let s = b.op("Abs", &[wide]).name("s").add();
            let mut g = b.finish();
            let mut nb = Builder::new(&mut g, dialect, s);
            assert_eq!(nb.as_i64(wide, Some(2)), wide);
            let c = nb.as_i64(narrow, Some(2));
            let n = g.node(c.node);
            assert_eq!((n.op_type.as_str(), n.attr(attr)), (op, Some(&to)));
            assert_eq!(n.outputs[0].ty, i64_vec(Some(2)));
            assert_eq!(g.input(c.node, 0), Some(narrow));
        }
    }
}
