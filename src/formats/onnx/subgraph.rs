//! The bodies of ONNX control-flow nodes (`If`, `Loop`, `Scan`: graph-valued attributes such as
//! `then_branch`, `else_branch`, `body`) as IR graphs: listed by `check` and `info`
//! (`subgraph::scope`) and run through the passes (`subgraph::run`).
//!
//! The body keeps its own record: this module builds a separate [`Graph`] from a copy of the
//! body's `GraphProto` (tensor bytes are shared, not copied) in which every name the body reads
//! from an enclosing scope is declared as an extra graph input after the body's own inputs.
//! Reading a body does not change the model's record; a body a pass changed is written back on
//! save through `OnnxModel::body_overrides`, every other body as it was read.

use std::path::Path;

use super::proto::{GraphProto, NodeProto, ValueInfoProto};
use super::{build_graph, free_names, ExternalFiles};
use crate::error::Result;
use crate::ir::{FastSet, Graph};

/// One subgraph body of a node.
#[derive(Debug, Clone)]
pub struct Body {
    /// The attribute holding it (`then_branch`, `else_branch`, `body`); `name[i]` for the `i`-th
    /// graph of a list-of-graphs attribute.
    pub attr: String,
    /// The body's record, with the names it reads from enclosing scopes appended to `input`.
    pub proto: GraphProto,
    /// How many inputs the body itself declares (the captured names follow them).
    pub formal_inputs: usize,
    /// The body as IR: graph input `i` has origin `OnnxInput(i)`; for `i >= formal_inputs` it is
    /// the captured value of the same name.
    pub graph: Graph,
}

/// The bodies held by the attributes of `node`, in attribute order. `path` is the model file
/// (messages and external data). A body that cannot be built gives its error.
pub fn node_bodies(path: &Path, node: &NodeProto) -> Vec<Result<Body>> {
    let mut out = Vec::new();
    for a in &node.attribute {
        if let Some(g) = a.g.as_deref() {
            out.push(body(path, a.name().to_string(), g));
        }
        for (i, g) in a.graphs.iter().enumerate() {
            out.push(body(path, format!("{}[{i}]", a.name()), g));
        }
    }
    out
}

fn body(path: &Path, attr: String, g: &GraphProto) -> Result<Body> {
    let mut captured = FastSet::default();
    free_names(g, &mut captured);
    let mut captured: Vec<String> = captured.into_iter().collect();
    captured.sort();
    let mut proto = g.clone();
    let formal_inputs = proto.input.len();
    proto
        .input
        .extend(captured.into_iter().map(|name| ValueInfoProto {
            name: Some(name),
            ..ValueInfoProto::default()
        }));
    let mut ext = ExternalFiles::new(path.parent().unwrap_or(Path::new(".")));
    let records = super::Records::take_from(&mut proto.clone());
    let graph = build_graph(path, &proto, &records, &mut ext)?.graph;
    Ok(Body {
        attr,
        proto,
        formal_inputs,
        graph,
    })
}
