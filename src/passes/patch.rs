//! What a pass written as "read the graph, say what to change" returns: a [`Patch`], applied
//! to the graph by one function, [`apply`], which also reports each change. The pass itself
//! takes a [`PassCx`](super::PassCx) and a `&Graph`, so it can be tested on a graph built with
//! [`crate::ir::builder::GraphBuilder`], without a model file (see `cleanup.rs`).
//!
//! `cleanup` is written this way; `fold`, `lower` and `raise` still edit the graph as they walk
//! it (a fold reads the constants folded before it in the same walk).
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

use crate::ir::{Graph, NodeKind, OutletId};
use crate::report::{Change, PassReport};

/// Edits to make to a graph, in this order: every shunt, then every removal.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Patch {
    /// `(from, to)`: every consumer of `from` reads `to` instead ([`Graph::redirect`]).
    pub shunts: Vec<(OutletId, OutletId)>,
    /// Nodes removed with all their edges; duplicates allowed.
    pub remove: Vec<NodeIndex>,
    /// What the report says of each removed node (`"removed (unused)"`).
    pub removed: &'static str,
}

impl Patch {
    /// Whether applying it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.shunts.is_empty() && self.remove.is_empty()
    }
}

/// Makes the edits of `patch` to `graph` and reports every removed node in `report` (its name,
/// its op type or `constant`, and `patch.removed`), in index order.
pub fn apply(graph: &mut Graph, patch: Patch, report: &mut PassReport) {
    let Patch {
        shunts,
        remove,
        removed,
    } = patch;
    if !shunts.is_empty() {
        for (from, to) in shunts {
            graph.redirect(from, to);
        }
        graph.flush_detached();
    }
    if report.details {
        report.changes.reserve(remove.len());
    }
    // The removed nodes are freed on the pool while the next are taken out.
    // Only their heap blocks travel ([`crate::ir::NodeHeap`]): a third of a record.
    crate::ir::with_drop_later(remove.len(), crate::ir::NodeHeap::prefetch, |gone| {
        graph.remove_nodes_with(remove, |_, n| {
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
            gone.push(crate::ir::NodeHeap::of(n));
        })
    });
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
            shunts: vec![(id, x)],
            remove: vec![id.node],
            removed: "removed (identity)",
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
}
