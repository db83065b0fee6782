//! Pass `cleanup`: drops constants and nodes whose values nothing uses any more.
//!
//! A node is kept when a graph output (ONNX output, OpenVINO `Result` or any layer without
//! outputs, such as `Assign`) depends on it, directly, through a subgraph capture, or through
//! any chain of nodes. Graph inputs (ONNX inputs, OpenVINO `Parameter`) are always kept.

use petgraph::visit::{EdgeRef, NodeIndexable};
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
    // a graph of a million nodes.
    let mut live = vec![false; graph.g.node_bound()];
    let mut stack: Vec<_> = graph
        .g
        .node_indices()
        .filter(|&ix| is_root(&graph.g[ix]))
        .collect();
    while let Some(ix) = stack.pop() {
        if std::mem::replace(&mut live[ix.index()], true) {
            continue;
        }
        for e in graph.g.edges_directed(ix, Direction::Incoming) {
            if !live[e.source().index()] {
                stack.push(e.source());
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
