//! Pass `cleanup`: drops constants and nodes whose values nothing uses any more.
//!
//! A node is kept when a graph output (ONNX output, OpenVINO `Result` or any layer without
//! outputs, such as `Assign`) depends on it, directly, through a subgraph capture, or through
//! any chain of nodes. Graph inputs (ONNX inputs, OpenVINO `Parameter`) are always kept.

use petgraph::stable_graph::NodeIndex;
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
    // By index: no node there, a node not (yet) known to be live, a live node. The dead are
    // listed from this array, not from the node records (a second read of every record).
    const VACANT: u8 = 0;
    const SEEN: u8 = 1;
    const LIVE: u8 = 2;
    let mut state = vec![VACANT; graph.g.node_bound()];
    let mut stack = Vec::new();
    for (ix, node) in graph.g.node_references().rev() {
        let at = ix.index();
        if state[at] != LIVE {
            if !is_root(node) {
                state[at] = SEEN;
                continue;
            }
            state[at] = LIVE;
        }
        stack.push(ix);
        while let Some(n) = stack.pop() {
            for e in graph.g.edges_directed(n, Direction::Incoming) {
                let src = e.source().index();
                if std::mem::replace(&mut state[src], LIVE) != LIVE && src > at {
                    stack.push(e.source());
                }
            }
        }
    }
    let dead: Vec<_> = (0..state.len())
        .filter(|&i| state[i] == SEEN)
        .map(NodeIndex::new)
        .collect();
    if report.details {
        report.changes.reserve(dead.len());
    }
    // The removed nodes are freed on the pool while the next are taken out.
    // Only their heap blocks travel ([`crate::ir::NodeHeap`]): a third of a record.
    crate::ir::with_drop_later(dead.len(), crate::ir::NodeHeap::prefetch, |gone| {
        graph.remove_nodes_with(dead, |_, n| {
            report.change(|| Change {
                node: n.name.as_str().into(),
                op: match n.kind {
                    NodeKind::Const(_) => "constant".into(),
                    _ => n.op_type.as_str().into(),
                },
                what: "removed (unused)".into(),
                before: None,
                after: None,
            });
            gone.push(crate::ir::NodeHeap::of(n));
        })
    });
    Ok(())
}
