//! The bodies of OpenVINO `If`, `Loop` and `TensorIterator` layers (`<then_body>`, `<else_body>`,
//! `<body>`) as models of their own, for reading only (`check`, `info`).
//!
//! A body's `<layers>` and `<edges>` are copied out of the layer's text into a `<net>` of the
//! same IR version and read like any model, sharing the `.bin` map (no tensor bytes are
//! copied). The model's record is not changed: a saved model writes every body as it was read.

use bytes::Bytes;
use petgraph::stable_graph::NodeIndex;

use super::{fmt_err, materialize, OvModel};
use crate::error::Result;
use crate::ir::{NodeKind, Origin};

/// The element names that hold bodies, in the order they are listed.
pub const BODY_ELEMENTS: [&str; 3] = ["body", "then_body", "else_body"];

impl OvModel {
    /// The bodies of the layer of `node` (element name and the body as a model), in the order
    /// of [`BODY_ELEMENTS`]; empty for a layer without bodies or a node not read from the file.
    pub fn bodies(&self, node: NodeIndex) -> Vec<(String, Result<OvModel>)> {
        let Some(n) = self.graph.g.node_weight(node) else {
            return Vec::new();
        };
        let Origin::OvLayer(i) = n.origin else {
            return Vec::new();
        };
        if n.kind != NodeKind::Op || !matches!(n.op_type.as_str(), "If" | "Loop" | "TensorIterator")
        {
            return Vec::new();
        }
        let Some(src) = self.layer_srcs.get(i) else {
            return Vec::new();
        };
        let (text, layer) = match materialize(&self.path, &self.source, src.span.clone()) {
            Ok(x) => x,
            Err(e) => return vec![(n.op_type.clone(), Err(e))],
        };
        let mut out = Vec::new();
        for name in BODY_ELEMENTS {
            let Some(body) = layer.child(name) else {
                continue;
            };
            let part = |child: &str| {
                body.child(child)
                    .and_then(|c| c.span.clone())
                    .and_then(|r| text.get(r))
            };
            let model = match (part("layers"), part("edges")) {
                (Some(layers), edges) => {
                    let net = format!(
                        "<?xml version=\"1.0\"?>\n<net name=\"{name}\" version=\"{}\">\n{layers}\n{}\n</net>\n",
                        self.version,
                        edges.unwrap_or("<edges/>")
                    );
                    OvModel::from_bytes(&self.path, Bytes::from(net), self.bin.clone())
                }
                (None, _) => Err(fmt_err(&self.path, format!("<{name}> has no <layers>"))),
            };
            out.push((name.to_string(), model));
        }
        out
    }
}
