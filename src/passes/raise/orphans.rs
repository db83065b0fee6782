//! Removing what a rewrite leaves unread: the constants and helper ops that fed the nodes
//! `lower` and `raise` replace.

use petgraph::stable_graph::NodeIndex;

use crate::ir::{Graph, NodeKind, OutletId};

/// Side-effect-free ops `lower` builds (and constants): [`remove_orphans`] removes them once
/// nothing reads them.
const PURE_OPS: &[&str] = &[
    "Add",
    "Concat",
    "Convert",
    "Cast",
    "Equal",
    "Gather",
    "Less",
    "Maximum",
    "Minimum",
    "Neg",
    "Select",
    "Where",
    "Subtract",
    "Sub",
    "ShapeOf",
    "Shape",
    "Squeeze",
    "Unsqueeze",
    "Reshape",
];

/// Removes (lazily) the producers of `roots` that nothing reads any more, and theirs in turn:
/// constants and side-effect-free ops only, never a graph input.
pub(crate) fn remove_orphans(graph: &mut Graph, roots: Vec<OutletId>) {
    let mut todo = roots;
    while let Some(o) = todo.pop() {
        let n = o.node;
        if !graph.is_live(n) {
            continue;
        }
        let node = graph.node(n);
        let removable = match node.kind {
            NodeKind::Const(_) => true,
            NodeKind::Op => PURE_OPS.contains(&node.op_type.as_str()),
            _ => false,
        };
        // Read by anything (any port; a detached edge is no reader)? Stops at the first
        // reader: a constant shared by every slice of a wide graph has thousands, and listing
        // them for each root made the pass quadratic (wide_10k: 1.6 s, wide_100k past 300 s).
        if !removable
            || graph
                .g
                .edges_directed(n, petgraph::Direction::Outgoing)
                .any(|e| e.weight().dst_port != crate::ir::Wire::DETACHED)
        {
            continue;
        }
        todo.extend(graph.inputs(n).into_iter().flatten());
        graph.remove_node_lazily(n);
    }
}

/// The inputs of `nodes` from port `from` on.
pub(super) fn inputs_from(
    graph: &Graph,
    nodes: &[Option<NodeIndex>],
    from: usize,
) -> Vec<OutletId> {
    (nodes.iter().flatten())
        .flat_map(|&n| graph.inputs(n).into_iter().skip(from).flatten())
        .collect()
}
