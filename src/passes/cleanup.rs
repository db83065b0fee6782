//! Pass `cleanup`: drops constants and nodes whose values nothing uses any more.
//!
//! A node is kept when a graph output (ONNX output, OpenVINO `Result` or any layer without
//! outputs, such as `Assign`) depends on it, directly, through a subgraph capture, or through
//! any chain of nodes. Graph inputs (ONNX inputs, OpenVINO `Parameter`) are always kept.

use petgraph::stable_graph::NodeIndex;
use petgraph::visit::{EdgeRef, IntoNodeReferences, NodeIndexable};
use petgraph::Direction;

use super::patch::Patch;
use super::PassCx;
use crate::error::Result;
use crate::formats::Model;
use crate::ir::{Graph, NodeKind};
use crate::report::PassReport;

/// Removes every node no output depends on.
pub fn run(model: &mut Model, report: &mut PassReport) -> Result<()> {
    let unused = patch(&PassCx::of(model), model.graph());
    super::patch::apply(model.graph_mut(), unused, report);
    Ok(())
}

/// The removal of every node no output depends on.
pub fn patch(_cx: &PassCx, graph: &Graph) -> Patch {
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
    Patch {
        remove: dead,
        removed: "removed (unused)",
        ..Patch::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::builder::GraphBuilder;
    use crate::ir::DType;
    use crate::report::PassKind;

    /// Runs the pass on `b`'s graph: the graph after, and the names of the removed nodes with
    /// what the report says of them.
    fn clean(b: GraphBuilder) -> (Graph, Vec<(String, String)>) {
        let cx = PassCx::new(b.dialect());
        let mut g = b.finish();
        let mut report = PassReport::new(PassKind::Cleanup, true);
        let p = patch(&cx, &g);
        super::super::patch::apply(&mut g, p, &mut report);
        assert_eq!(report.changed, report.changes.len());
        let removed = report
            .changes
            .into_iter()
            .inspect(|c| assert_eq!(c.what, "removed (unused)"))
            .map(|c| (c.node, c.op))
            .collect();
        (g, removed)
    }

    fn names(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, o)| (n.to_string(), o.to_string()))
            .collect()
    }

    /// ONNX: what the output reads stays (through any chain); a dead chain, an unused constant
    /// and a node reading a kept one go; an unused graph input stays (the graph's signature).
    #[test]
    fn onnx_keeps_what_outputs_read() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::I64, [3]);
        let spare = b.input("spare", DType::I64, [3]);
        let c = b.const_i64("c", &[1, 2, 3]);
        let add = b.op("Add", &[x, c]).name("add").out();
        let neg = b.op("Neg", &[add]).name("neg").out();
        b.output("y", neg);
        let mul = b.op("Mul", &[add, c]).name("mul").out();
        b.op("Abs", &[mul]).name("abs").add();
        b.const_i64("unused", &[0]);
        let (g, removed) = clean(b);
        assert_eq!(
            removed,
            names(&[("mul", "Mul"), ("abs", "Abs"), ("unused", "constant")])
        );
        assert_eq!(g.g.node_count(), 6);
        for kept in [x, spare, c, add, neg] {
            assert!(g.g.node_weight(kept.node).is_some());
        }
        assert_eq!(g.consumers(add), vec![(neg.node, 0)]);
        assert_eq!(g.consumers(c), vec![(add.node, 1)]);
    }

    /// OpenVINO: `Parameter` and `Result` layers are roots, and so is a layer without outputs
    /// (`Assign`), with what it reads.
    #[test]
    fn openvino_roots() {
        let mut b = GraphBuilder::openvino();
        let x = b.input("x", DType::F32, "N, 4");
        let unused_param = b.input("p", DType::F32, [1]);
        let relu = b.op("Relu", &[x]).name("relu").out();
        b.output("r", relu);
        let state = b.op("Sigmoid", &[x]).name("state").out();
        let assign = b
            .op("Assign", &[state])
            .name("assign")
            .domain("opset6")
            .outputs(0)
            .add();
        b.op("Tanh", &[x]).name("dead").add();
        let (g, removed) = clean(b);
        assert_eq!(removed, names(&[("dead", "Tanh")]));
        for kept in [x.node, unused_param.node, relu.node, state.node, assign] {
            assert!(g.g.node_weight(kept).is_some());
        }
    }

    /// Records out of order: a node made after the node reading it (as a pass adds one, or a
    /// file lists it) is kept, with what it reads; one made late that nothing reads goes.
    #[test]
    fn producers_after_consumers() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::I64, [2]);
        let neg = b.op_gaps("Neg", &[None]).name("neg").out();
        b.output("y", neg);
        let late = b.const_i64("late", &[5, 6]);
        let add = b.op("Add", &[x, late]).name("add").out();
        b.connect(add, neg.node, 0);
        b.op("Abs", &[late]).name("abs").add();
        b.const_i64("last", &[7]);
        let (g, removed) = clean(b);
        assert_eq!(removed, names(&[("abs", "Abs"), ("last", "constant")]));
        assert_eq!(g.input(neg.node, 0), Some(add));
        assert_eq!(g.input(add.node, 1), Some(late));
    }
}
