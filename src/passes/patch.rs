//! What a pass written as "read the graph, say what to change" returns: a [`Patch`], applied
//! to the graph by one function, [`apply`], which also reports each change. The pass itself
//! takes a [`PassCx`](super::PassCx) and a `&Graph`, so it can be tested on a graph built with
//! [`crate::ir::builder::GraphBuilder`], without a model file (see `cleanup.rs`).
//!
//! A patch can remove nodes, move the consumers of an output to another one ("shunts"), and
//! add nodes ([`NewNodes`]: constants and operations placed beside an existing node, reading
//! the graph's outputs or each other's), one of which may take an old node's place. `cleanup`
//! and the slice rewrites of `simplify` (one file each in `passes/simplify/`) are written this
//! way; `fold`, `lower` and `raise` still edit the graph as they walk it (a fold reads the
//! constants folded before it in the same walk).
//!
//! A pass's test, in its own file (`#[cfg(test)] mod tests`), in the same few lines:
//!
//! ```
//! use slice_opt::ir::builder::GraphBuilder;
//! use slice_opt::ir::DType;
//! use slice_opt::passes::{cleanup, patch, PassCx};
//! use slice_opt::report::{PassKind, PassReport};
//!
//! let mut b = GraphBuilder::onnx();
//! let x = b.input("x", DType::I64, [3]);
//! let c = b.const_i64("c", &[1, 2, 3]);
//! let add = b.op("Add", &[x, c]).name("add").out();
//! b.output("y", x);
//! let cx = PassCx::new(b.dialect());
//! let mut g = b.finish();
//! let mut report = PassReport::new(PassKind::Cleanup, true);
//! let unused = cleanup::patch(&cx, &g);
//! patch::apply(&mut g, unused, &mut report);
//! assert!(g.g.node_weight(add.node).is_none());
//! assert_eq!(report.changes.len(), 2); // `add`, then `c`, which only `add` read
//! ```

use petgraph::stable_graph::NodeIndex;

use super::build::Builder;
use crate::formats::Format;
use crate::ir::{Attr, DeclaredDim, Graph, NodeKind, OutletId, Tensor, Value, ValueType};
use crate::report::{Change, PassReport};

/// An output a patch names: one of the graph's, or output `port` of the `node`-th node the
/// patch adds ([`NewNodes`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outlet {
    Graph(OutletId),
    New { node: usize, port: usize },
}

impl From<OutletId> for Outlet {
    fn from(o: OutletId) -> Outlet {
        Outlet::Graph(o)
    }
}

/// An output of a node a patch adds.
#[derive(Debug, Clone, PartialEq)]
pub enum NewValue {
    /// An existing value (name and type): the new node's output is the one its consumers
    /// read under that name.
    Is(Value),
    /// A fresh value named `{beside}/{what}` (made unique), of type `ty`.
    Fresh { what: String, ty: ValueType },
}

/// What a node a patch adds is.
#[derive(Debug, Clone, PartialEq)]
pub enum NewKind {
    /// A constant named `{beside}/{what}` (made unique).
    Const { what: String, tensor: Tensor },
    /// An operation named `name`, or `{beside}/{op_type in lower case}` (made unique) when
    /// `None`.
    Op {
        name: Option<String>,
        op_type: String,
        domain: String,
        inputs: Vec<Option<Outlet>>,
        attrs: Vec<(String, Attr)>,
        /// The type of a fresh output 0 (named `{name}:0`).
        ty: ValueType,
    },
}

/// A node a patch adds.
#[derive(Debug, Clone, PartialEq)]
pub struct NewNode {
    pub kind: NewKind,
    /// Its outputs, when not the one a [`NewKind`] makes (`{name}:0` of type `ty`; a constant:
    /// its name, of the tensor's type). A value [`NewValue::Fresh`] is named after the others.
    pub outputs: Option<Vec<NewValue>>,
}

/// Nodes a patch adds, in order, beside an existing node: they take its place in the output
/// order (right after it, in the order added) and their fresh names from its name
/// ([`super::build::Builder`]). Built read-only; the graph changes in [`apply`].
#[derive(Debug, Clone, PartialEq)]
pub struct NewNodes {
    pub format: Format,
    pub beside: NodeIndex,
    pub nodes: Vec<NewNode>,
}

impl NewNodes {
    /// No nodes yet, to be placed beside `beside` in a graph of `format`.
    pub fn beside(format: Format, beside: NodeIndex) -> NewNodes {
        NewNodes {
            format,
            beside,
            nodes: Vec::new(),
        }
    }

    /// Adds `node`; its output 0.
    pub fn add(&mut self, node: NewNode) -> Outlet {
        self.nodes.push(node);
        Outlet::New {
            node: self.nodes.len() - 1,
            port: 0,
        }
    }

    /// A constant `tensor` named `{beside}/{what}`.
    pub fn constant(&mut self, what: &str, tensor: Tensor) -> Outlet {
        self.add(NewNode {
            kind: NewKind::Const {
                what: what.into(),
                tensor,
            },
            outputs: None,
        })
    }

    /// A 1-D i64 constant named `{beside}/{what}`.
    pub fn const_i64(&mut self, what: &str, values: &[i64]) -> Outlet {
        self.constant(what, Tensor::from_i64(vec![values.len() as u64], values))
    }

    /// An operation of the patch's format with one output, `out` when given (an existing
    /// value), else a fresh `{name}:0` of type `ty`; `name` `None`: a fresh name.
    #[allow(clippy::too_many_arguments)]
    pub fn op(
        &mut self,
        name: Option<String>,
        op_type: &str,
        domain: &str,
        inputs: &[Option<Outlet>],
        attrs: Vec<(String, Attr)>,
        out: Option<Value>,
        ty: ValueType,
    ) -> Outlet {
        self.add(NewNode {
            kind: NewKind::Op {
                name,
                op_type: op_type.into(),
                domain: domain.into(),
                inputs: inputs.to_vec(),
                attrs,
                ty,
            },
            outputs: out.map(|v| vec![NewValue::Is(v)]),
        })
    }
}

/// Edits to make to a graph, in this order: add the new nodes, put each replacing node in the
/// place of the node it replaces, every shunt, then every removal; then the report lines.
#[derive(Debug, Clone, Default)]
pub struct Patch {
    /// Nodes to add.
    pub add: Option<NewNodes>,
    /// `(old, k)`: the `k`-th new node takes the place of `old` ([`Graph::replace_node`]): it
    /// gets `old`'s index and the consumers of its output 0, and `old` is gone.
    pub replace: Vec<(NodeIndex, usize)>,
    /// `(from, to)`: every consumer of `from` reads `to` instead ([`Graph::redirect`]).
    pub shunts: Vec<(OutletId, Outlet)>,
    /// Nodes removed with all their edges; duplicates allowed.
    pub remove: Vec<NodeIndex>,
    /// What the report says of each removed node (`"removed (unused)"`); empty: nothing (the
    /// patch's `changes` say it).
    pub removed: &'static str,
    /// Report lines: what was changed, what was left alone and why, warnings.
    pub changes: Vec<Change>,
    pub skips: Vec<Change>,
    pub warnings: Vec<Change>,
}

impl Patch {
    /// Whether applying it changes nothing in the graph.
    pub fn is_empty(&self) -> bool {
        self.shunts.is_empty()
            && self.remove.is_empty()
            && self.replace.is_empty()
            && self.add.as_ref().is_none_or(|a| a.nodes.is_empty())
    }

    /// The patch that adds `add`, the last of which takes the place of `old` (see
    /// [`Patch::replace`]).
    pub fn replacing(old: NodeIndex, add: NewNodes) -> Patch {
        let last = add.nodes.len().checked_sub(1);
        Patch {
            replace: last.map(|k| (old, k)).into_iter().collect(),
            add: Some(add),
            ..Patch::default()
        }
    }

    /// A patch that changes nothing and reports `node` as left alone because of `why`.
    pub fn skip(graph: &Graph, node: NodeIndex, why: impl Into<String>) -> Patch {
        let n = graph.node(node);
        Patch {
            skips: vec![Change::note(n.name.as_str(), n.op_type.as_str(), why)],
            ..Patch::default()
        }
    }

    /// Adds the report line `what` of a change at `node` (its name and op type as they are
    /// before the patch).
    pub fn note(mut self, graph: &Graph, node: NodeIndex, what: impl Into<String>) -> Patch {
        let n = graph.node(node);
        self.changes
            .push(Change::note(n.name.as_str(), n.op_type.as_str(), what));
        self
    }
}

/// Makes the edits of `patch` to `graph` and reports them in `report`: the warnings, changes
/// and skips, then every removed node (its name, its op type or `constant`, and
/// `patch.removed`), in index order. The graph is left with no detached edge.
pub fn apply(graph: &mut Graph, patch: Patch, report: &mut PassReport) {
    let (remove, removed) = edit(graph, patch, report);
    if report.details && !removed.is_empty() {
        report.changes.reserve(remove.len());
    }
    // The removed nodes are freed on the pool while the next are taken out.
    // Only their heap blocks travel ([`crate::ir::NodeHeap`]): a third of a record.
    crate::ir::with_drop_later(remove.len(), crate::ir::NodeHeap::prefetch, |gone| {
        graph.remove_nodes_with(remove, |_, n| {
            if !removed.is_empty() {
                report.change(|| Change {
                    node: n.name.as_str().into(),
                    op: match n.kind {
                        NodeKind::Const(_) => "constant".into(),
                        _ => n.op_type.as_str().into(),
                    },
                    what: removed.into(),
                    before: None,
                    after: None,
                });
            }
            gone.push(crate::ir::NodeHeap::of(n));
        })
    });
}

/// [`apply`] inside a walk that applies a patch per node: the removed nodes are removed
/// lazily ([`Graph::remove_node_lazily`]) and the detached edges stay until the walk calls
/// [`Graph::flush_detached`], so that the indices of nodes and edges are not reused in the
/// walk.
pub fn apply_in_walk(graph: &mut Graph, mut patch: Patch, report: &mut PassReport) {
    let removed = patch.removed;
    let remove = std::mem::take(&mut patch.remove);
    report_lines(&mut patch, report);
    add_and_shunt(graph, &mut patch);
    for ix in remove {
        graph.remove_node_lazily(ix);
        if !removed.is_empty() {
            let n = graph.node(ix);
            let what = Change::note(n.name.as_str(), n.op_type.as_str(), removed);
            report.change(|| what);
        }
    }
}

/// Everything [`apply`] does before removing: the nodes to remove, and what to say of them.
fn edit(
    graph: &mut Graph,
    mut patch: Patch,
    report: &mut PassReport,
) -> (Vec<NodeIndex>, &'static str) {
    report_lines(&mut patch, report);
    let moved = !patch.shunts.is_empty() || !patch.replace.is_empty();
    add_and_shunt(graph, &mut patch);
    if moved {
        graph.flush_detached();
    }
    (std::mem::take(&mut patch.remove), patch.removed)
}

fn report_lines(patch: &mut Patch, report: &mut PassReport) {
    report.warnings.append(&mut patch.warnings);
    for c in patch.changes.drain(..) {
        report.change(|| c);
    }
    for c in patch.skips.drain(..) {
        report.skip(|| c);
    }
}

/// The new nodes, the replacements and the shunts of `patch`.
fn add_and_shunt(graph: &mut Graph, patch: &mut Patch) {
    let mut at: Vec<NodeIndex> = Vec::new();
    if let Some(add) = patch.add.take() {
        let mut b = Builder::new(graph, add.format, add.beside);
        for node in add.nodes {
            let ix = build(&mut b, &at, node);
            at.push(ix);
        }
    }
    let resolve = |at: &[NodeIndex], o: Outlet| match o {
        Outlet::Graph(o) => o,
        Outlet::New { node, port } => OutletId {
            node: at[node],
            port,
        },
    };
    for (old, k) in std::mem::take(&mut patch.replace) {
        at[k] = super::build::take_over(graph, old, at[k]);
    }
    for (from, to) in std::mem::take(&mut patch.shunts) {
        graph.redirect(from, resolve(&at, to));
    }
}

/// Adds `node` with `b` (`at`: the indices of the nodes added before it).
fn build(b: &mut Builder, at: &[NodeIndex], node: NewNode) -> NodeIndex {
    let NewNode { kind, outputs } = node;
    let ix = match kind {
        NewKind::Const { what, tensor } => {
            let ix = b.const_i64(&what, &[]).node;
            let n = b.graph.node_mut(ix);
            n.outputs[0].ty = ValueType {
                dtype: Some(tensor.dtype),
                shape: Some(
                    tensor
                        .shape
                        .iter()
                        .map(|&d| DeclaredDim::Known(d))
                        .collect(),
                ),
            };
            n.kind = NodeKind::Const(Box::new(tensor));
            ix
        }
        NewKind::Op {
            name,
            op_type,
            domain,
            inputs,
            attrs,
            ty,
        } => {
            let inputs: Vec<Option<OutletId>> = inputs
                .into_iter()
                .map(|i| {
                    i.map(|o| match o {
                        Outlet::Graph(o) => o,
                        Outlet::New { node, port } => OutletId {
                            node: at[node],
                            port,
                        },
                    })
                })
                .collect();
            // One existing value: that is output 0 (no fresh name is made for it).
            if let Some([NewValue::Is(v)]) = outputs.as_deref() {
                return b.op(name, &op_type, &domain, &inputs, attrs, Some(v.clone()), ty);
            }
            b.op(name, &op_type, &domain, &inputs, attrs, None, ty)
        }
    };
    if let Some(outputs) = outputs {
        let base = b.base.clone();
        let values = outputs
            .into_iter()
            .map(|v| match v {
                NewValue::Is(v) => v,
                NewValue::Fresh { what, ty } => Value {
                    name: b.graph.unique_name(&format!("{base}/{what}")).into(),
                    ty,
                    ty_changed: true,
                },
            })
            .collect();
        b.graph.node_mut(ix).outputs = values;
    }
    ix
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::builder::GraphBuilder;
    use crate::ir::DType;
    use crate::report::PassKind;

    /// A shunt moves the consumers (an Identity bypassed), then the removal drops the node and
    /// reports it.
    #[test]
    fn shunt_then_remove() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, [2]);
        let id = b.op("Identity", &[x]).name("id").out();
        let y = b.output("y", id);
        let mut g = b.finish();
        let mut report = PassReport::new(PassKind::Cleanup, true);
        let patch = Patch {
            shunts: vec![(id, x.into())],
            remove: vec![id.node],
            removed: "removed (identity)",
            ..Patch::default()
        };
        apply(&mut g, patch, &mut report);
        assert_eq!(g.input(y, 0), Some(x));
        assert!(g.g.node_weight(id.node).is_none());
        assert_eq!(g.g.node_count(), 2);
        assert_eq!(report.changed, 1);
        let c = &report.changes[0];
        assert_eq!(
            (c.node.as_str(), c.op.as_str(), c.what.as_str()),
            ("id", "Identity", "removed (identity)")
        );
    }

    /// A new `Add` of the input and a new constant takes the place of `id`: same index, same
    /// output value, same consumer; the constant is named after `id` and both sit right after
    /// it in the output order, in the order added; the note names `id`'s old op type.
    #[test]
    fn new_nodes_replace_one() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::I64, [2]);
        let id = b.op("Identity", &[x]).name("id").out();
        let y = b.output("y", id);
        let mut g = b.finish();
        let out = g.node(id.node).outputs[0].clone();
        let mut add = NewNodes::beside(Format::Onnx, id.node);
        let c = add.const_i64("c", &[5, 6]);
        let sum = add.op(
            Some("id".into()),
            "Add",
            "",
            &[Some(x.into()), Some(c)],
            Vec::new(),
            Some(out.clone()),
            ValueType::default(),
        );
        let Outlet::New { node: k, .. } = sum else {
            panic!("a new node")
        };
        let patch = Patch {
            add: Some(add),
            replace: vec![(id.node, k)],
            ..Patch::default()
        }
        .note(&g, id.node, "now an Add");
        let mut report = PassReport::new(PassKind::Simplify, true);
        apply(&mut g, patch, &mut report);
        let n = g.node(id.node);
        assert_eq!((n.op_type.as_str(), &n.outputs[0]), ("Add", &out));
        assert_eq!(g.input(y, 0), Some(id));
        assert_eq!(g.input(id.node, 0), Some(x));
        let c = g.input(id.node, 1).expect("the constant");
        let cn = g.node(c.node);
        assert_eq!(cn.name.as_str(), "id/c");
        assert_eq!(
            g.constant_at(c).and_then(|t| t.to_i64_vec()),
            Some(vec![5, 6])
        );
        assert!(cn.order < g.node(id.node).order); // added first, both right after `id`
        assert_eq!(g.g.node_count(), 4);
        let r = &report.changes[0];
        assert_eq!((r.node.as_str(), r.op.as_str()), ("id", "Identity"));
    }

    /// A new node with two outputs, one an existing value and one fresh: shunts move the
    /// consumers of the old nodes to its outputs; in a walk, the old nodes go lazily.
    #[test]
    fn new_outputs_and_shunts_in_a_walk() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, [4]);
        let a = b.op("Neg", &[x]).name("a").out();
        let ya = b.output("ya", a);
        let mut g = b.finish();
        let va = g.node(a.node).outputs[0].clone();
        let mut add = NewNodes::beside(Format::Onnx, a.node);
        let two = add.add(NewNode {
            kind: NewKind::Op {
                name: None,
                op_type: "Split".into(),
                domain: String::new(),
                inputs: vec![Some(x.into())],
                attrs: Vec::new(),
                ty: ValueType::default(),
            },
            outputs: Some(vec![
                NewValue::Fresh {
                    what: "gap".into(),
                    ty: ValueType::default(),
                },
                NewValue::Is(va.clone()),
            ]),
        });
        let Outlet::New { node: k, .. } = two else {
            panic!("a new node")
        };
        let patch = Patch {
            add: Some(add),
            shunts: vec![(a, Outlet::New { node: k, port: 1 })],
            remove: vec![a.node],
            ..Patch::default()
        };
        let mut report = PassReport::new(PassKind::Simplify, true);
        apply_in_walk(&mut g, patch, &mut report);
        assert!(!g.is_live(a.node));
        g.flush_detached();
        let s = g.input(ya, 0).expect("the split");
        assert_eq!(s.port, 1);
        let n = g.node(s.node);
        assert_eq!(n.name.as_str(), "a/split");
        assert_eq!(n.outputs[0].name.as_str(), "a/gap");
        assert_eq!(n.outputs[1], va);
        assert!(g.g.node_weight(a.node).is_none());
        assert!(report.changes.is_empty());
    }
}
