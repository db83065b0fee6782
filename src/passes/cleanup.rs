//! Pass `cleanup`: drops constants and nodes whose values nothing uses any more.
//!
//! A node is kept when a graph output (ONNX output, OpenVINO `Result` or any layer without
//! outputs, such as `Assign`) depends on it, directly, through a subgraph capture, or through
//! any chain of nodes. Graph inputs (ONNX inputs, OpenVINO `Parameter`) are always kept.

use petgraph::visit::EdgeRef;
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
    let mut live = crate::ir::FastSet::default();
    let mut stack: Vec<_> = graph
        .g
        .node_indices()
        .filter(|&ix| is_root(&graph.g[ix]))
        .collect();
    while let Some(ix) = stack.pop() {
        if !live.insert(ix) {
            continue;
        }
        for e in graph.g.edges_directed(ix, Direction::Incoming) {
            if !live.contains(&e.source()) {
                stack.push(e.source());
            }
        }
    }
    let dead: crate::ir::FastSet<_> = graph
        .g
        .node_indices()
        .filter(|ix| !live.contains(ix))
        .collect();
    for (_, n) in graph.remove_nodes(&dead) {
        report.changes.push(Change {
            node: n.name.clone(),
            op: match n.kind {
                NodeKind::Const(_) => "constant".into(),
                _ => n.op_type.clone(),
            },
            what: "removed (unused)".into(),
            before: None,
            after: None,
        });
    }
    Ok(())
}
