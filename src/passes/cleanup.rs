//! Pass `cleanup`: drops constants and nodes whose values nothing uses any more.
//!
//! A node is kept when a graph output (ONNX output, OpenVINO `Result` or any layer without
//! outputs, such as `Assign`) depends on it, directly, through a subgraph capture, or through
//! any chain of nodes. Graph inputs (ONNX inputs, OpenVINO `Parameter`) are always kept.

use petgraph::visit::{EdgeRef, IntoNodeReferences, NodeIndexable};
use petgraph::Direction;

use crate::error::Result;
use crate::formats::Model;
use crate::ir::NodeKind;
use crate::report::{Change, PassReport};

/// Removes every node no output depends on.
pub fn run(model: &mut Model, report: &mut PassReport) -> Result<()> {
    let graph = model.graph_mut();
    let is_root = |n: &crate::ir::Node| match n.kind {
        NodeKind::Output | NodeKind::Input => true,
        NodeKind::Op => {
            n.outputs.is_empty() || matches!(n.op_type.as_str(), "Result" | "Parameter")
        }
        NodeKind::Const(_) => false,
    };
    // Marks by node index (dense): hash sets of every node were most of this pass's time on
    // a graph of a million nodes. The nodes are swept once from the last index to the first,
    // so that their records are read in memory order (a depth-first walk from the outputs
    // read them in a random order, which on a graph larger than the cache cost a miss per
    // node): a live node marks its inputs live; an input at a lower index is reached by the
    // sweep later, one at a higher index (the sweep has passed it: a node a pass added after
    // its consumers, or a file that lists nodes out of order) is walked at once, with what it
    // reads. Every live node's inputs are read once, so the pass is linear in any order; in a
    // graph loaded from a sorted file nothing is walked out of order.
    let mut live = vec![false; graph.g.node_bound()];
    let mut stack = Vec::new();
    for (ix, node) in graph.g.node_references().rev() {
        let at = ix.index();
        if !live[at] {
            if !is_root(node) {
                continue;
            }
            live[at] = true;
        }
        stack.push(ix);
        while let Some(n) = stack.pop() {
            for e in graph.g.edges_directed(n, Direction::Incoming) {
                let src = e.source().index();
                if !std::mem::replace(&mut live[src], true) && src > at {
                    stack.push(e.source());
                }
            }
        }
    }
    let dead: Vec<_> = graph
        .g
        .node_indices()
        .filter(|ix| !live[ix.index()])
        .collect();
    if report.details {
        report.changes.reserve(dead.len());
    }
    graph.remove_nodes_with(dead, |_, n| {
        let crate::ir::Node {
            name,
            kind,
            op_type,
            ..
        } = n;
        report.change(|| Change {
            node: name.into(),
            op: match kind {
                NodeKind::Const(_) => "constant".into(),
                _ => op_type.into(),
            },
            what: "removed (unused)".into(),
            before: None,
            after: None,
        });
    });
    Ok(())
}
