//! The bodies of OpenVINO `If`, `Loop` and `TensorIterator` layers (`<then_body>`, `<else_body>`,
//! `<body>`) as models of their own: listed by `check` and `info` (`subgraph::scope`) and run
//! through the passes (`subgraph::run`).
//!
//! A body's `<layers>` and `<edges>` are copied out of the layer's text into a `<net>` of the
//! same IR version and read like any model, sharing the `.bin` map (no tensor bytes are
//! copied). Reading a body does not change the model's record; a body a pass changed is written
//! back on save through `OvModel::body_overrides`, every other body as it was read.

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
        self.bodies_and_inputs(node)
            .into_iter()
            .map(|(name, body, _)| (name, body))
            .collect()
    }

    /// [`OvModel::bodies`], each with its [`OvModel::body_inputs`], from one parse of the
    /// layer's text (which holds every body nested in it: parsing it once per body made a
    /// chain of nested `If`s cost three parses of the whole chain per level).
    pub fn bodies_and_inputs(&self, node: NodeIndex) -> Vec<BodyAndInputs> {
        let Some(n) = self.graph.g.node_weight(node) else {
            return Vec::new();
        };
        let Origin::OvLayer(i) = n.origin else {
            return Vec::new();
        };
        let i = i as usize;
        if n.kind != NodeKind::Op || !matches!(n.op_type.as_str(), "If" | "Loop" | "TensorIterator")
        {
            return Vec::new();
        }
        let Some(src) = self.layer_srcs.get(i) else {
            return Vec::new();
        };
        let (text, layer) = match materialize(&self.path, &self.source, src.span.clone()) {
            Ok(x) => x,
            Err(e) => return vec![(n.op_type.to_string(), Err(e), Vec::new())],
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
            let inputs = self.inputs_of(i, &layer, name);
            out.push((name.to_string(), model, inputs));
        }
        out
    }
}

/// A body of a layer: its element name, the body as a model, and the inputs it reads whole
/// (see [`OvModel::body_inputs`]).
pub type BodyAndInputs = (String, Result<OvModel>, Vec<(usize, i64)>);

impl OvModel {
    /// The inputs of the layer of `node` that a body `elem` (`body`, `then_body`,
    /// `else_body`) reads whole and unchanged in every iteration: `(input index, body
    /// Parameter layer id)` for each `<input>` of its port map (`<port_map>`,
    /// `<then_port_map>`, `<else_port_map>`) without an `axis` (not sliced per iteration) whose
    /// Parameter no back edge feeds (not carried).
    pub fn body_inputs(&self, node: NodeIndex, elem: &str) -> Vec<(usize, i64)> {
        let Some(Origin::OvLayer(i)) = self.graph.g.node_weight(node).map(|n| n.origin) else {
            return Vec::new();
        };
        let i = i as usize;
        let Some(src) = self.layer_srcs.get(i) else {
            return Vec::new();
        };
        let Ok((_, layer)) = materialize(&self.path, &self.source, src.span.clone()) else {
            return Vec::new();
        };
        self.inputs_of(i, &layer, elem)
    }

    /// [`OvModel::body_inputs`] of body `elem` of layer record `i`, parsed as `layer`.
    fn inputs_of(&self, i: usize, layer: &super::xml::Element, elem: &str) -> Vec<(usize, i64)> {
        let Some(rec) = self.layers.get(i) else {
            return Vec::new();
        };
        let map_name = match elem {
            "then_body" => "then_port_map",
            "else_body" => "else_port_map",
            _ => "port_map",
        };
        let Some(map) = layer.child(map_name) else {
            return Vec::new();
        };
        let int =
            |e: &super::xml::Element, a: &str| e.attr(a).and_then(|v| v.trim().parse::<i64>().ok());
        let carried: Vec<i64> = layer
            .child("back_edges")
            .map(|b| {
                b.elements()
                    .filter(|e| e.name == "edge")
                    .filter_map(|e| int(e, "to-layer"))
                    .collect()
            })
            .unwrap_or_default();
        map.elements()
            .filter(|e| e.name == "input" && e.attr("axis").is_none())
            .filter_map(|e| {
                let port = int(e, "external_port_id")?;
                let id = int(e, "internal_layer_id")?;
                let index = rec.input_ports.iter().position(|&p| p == port)?;
                (!carried.contains(&id)).then_some((index, id))
            })
            .collect()
    }

    /// The node of the top-level layer with XML id `id`.
    pub fn node_of_layer_id(&self, id: i64) -> Option<NodeIndex> {
        let k = self.layers.iter().position(|r| r.id == id)?;
        self.graph
            .g
            .node_indices()
            .find(|&ix| self.graph.node(ix).origin == Origin::OvLayer(crate::ir::to_u32(k)))
    }
}
