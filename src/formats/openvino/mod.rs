//! OpenVINO IR (`.xml` + `.bin`), versions 10 and 11.
//!
//! The `.xml` is parsed into an ordered element tree ([`xml::Document`]) that keeps everything
//! it read; the graph IR is derived from `<layers>` and `<edges>` (one node per top-level
//! `<layer>`; the bodies of `Loop`, `TensorIterator` and `If` stay inside their layer's element
//! untouched). Constants are views into the memory-mapped `.bin`.
//!
//! Saving an untouched model writes the original `.xml` text and `.bin` bytes. Saving a changed
//! model keeps every untouched layer element (and id) as read, rebuilds the layers a pass
//! changed or added, drops removed layers and their edges, and regenerates only the edges that
//! changed. Its `.bin` is compacted: it holds only the byte ranges the written Const layers
//! refer to (top-level ones and those inside bodies), in their original order, with shared and
//! overlapping ranges still shared, followed by the new constants (identical new constants
//! share one range). Every written Const whose range moved gets its `offset` rewritten in place
//! (the rest of its text stays as read).

pub mod xml;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use petgraph::stable_graph::{EdgeIndex, NodeIndex};
use petgraph::visit::{EdgeRef, IntoEdgeReferences};
use petgraph::Direction;

use crate::error::{Error, Result};
use crate::formats::onnx::map_file;
use crate::ir::{
    Attr, DType, DeclaredDim, Graph, Node, NodeKind, Origin, Tensor, TensorData, Value, ValueType,
    Wire,
};

use xml::{Document, Element, XmlNode};

/// What the reader recorded about one top-level `<layer>` (index = document order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerRecord {
    /// The layer's `id`.
    pub id: i64,
    /// XML port ids of the input ports, by input index.
    pub input_ports: Vec<i64>,
    /// XML port ids of the output ports, by output index.
    pub output_ports: Vec<i64>,
    /// `(offset, size)` in the `.bin` of a `Const` layer.
    pub const_range: Option<(u64, u64)>,
}

/// A loaded OpenVINO IR model.
#[derive(Debug, Clone)]
pub struct OvModel {
    /// The `.xml` it was loaded from.
    pub path: PathBuf,
    /// The graph.
    pub graph: Graph,
    /// The IR version (`10` or `11`).
    pub version: u32,
    /// The original `.xml` text.
    source: String,
    /// The parsed `.xml`: the record untouched parts are written back from.
    doc: Document,
    /// The `.bin` (memory-mapped), if it exists.
    bin: Option<Bytes>,
    /// One record per top-level layer, in document order.
    layers: Vec<LayerRecord>,
    /// Node and edge counts right after loading (to detect an untouched graph).
    loaded_nodes: usize,
    loaded_edges: usize,
}

fn fmt_err(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn layer_err(path: &Path, el: &Element, message: impl Into<String>) -> Error {
    Error::Node {
        path: path.to_path_buf(),
        node: layer_label(el),
        op: el.attr("type").unwrap_or_default().to_string(),
        message: message.into(),
    }
}

/// How a layer is named in messages: its name, or its id.
fn layer_label(el: &Element) -> String {
    match (el.attr("name"), el.attr("id")) {
        (Some(n), _) if !n.is_empty() => n.to_string(),
        (_, Some(id)) => format!("id {id}"),
        _ => "?".to_string(),
    }
}

/// The `.bin` path that goes with an `.xml` path: `<stem>.bin` beside it.
pub fn bin_path_for(xml_path: &Path) -> PathBuf {
    xml_path.with_extension("bin")
}

/// Parses one `<dim>` text: `N`, `-1`, `?`, `lo..hi`, `lo..`, `..hi`.
pub fn parse_dim(text: &str) -> Option<DeclaredDim> {
    let t = text.trim();
    if t == "?" || t == "-1" {
        return Some(DeclaredDim::Unknown);
    }
    if let Some((lo, hi)) = t.split_once("..") {
        let lo = lo.trim();
        let hi = hi.trim();
        let lo: u64 = if lo.is_empty() { 0 } else { lo.parse().ok()? };
        let hi: Option<u64> = if hi.is_empty() || hi == "-1" {
            None
        } else {
            Some(hi.parse().ok()?)
        };
        if let Some(h) = hi {
            if h < lo {
                return None;
            }
        }
        return Some(DeclaredDim::Interval(lo, hi));
    }
    t.parse::<u64>().ok().map(DeclaredDim::Known)
}

/// Formats a dim for a port `<dim>`: OpenVINO reads `N`, `-1`, `lo..hi` and `lo..` there (but
/// not `?` or `..hi`); a named dim has no IR spelling and becomes `-1`.
pub fn format_dim(d: &DeclaredDim) -> String {
    match d {
        DeclaredDim::Known(v) => v.to_string(),
        DeclaredDim::Interval(lo, Some(hi)) => format!("{lo}..{hi}"),
        DeclaredDim::Interval(0, None) => "-1".to_string(),
        DeclaredDim::Interval(lo, None) => format!("{lo}.."),
        DeclaredDim::Param(_) | DeclaredDim::Unknown => "-1".to_string(),
    }
}

/// The IR `precision` name of a port of element type `d`.
fn precision_name(d: DType) -> String {
    match d {
        DType::Bool => "BOOL".to_string(),
        DType::F32 => "FP32".to_string(),
        DType::F16 => "FP16".to_string(),
        DType::F64 => "FP64".to_string(),
        other => other.ov_name().to_ascii_uppercase(),
    }
}

fn parse_int(el: &Element, attr: &str) -> Option<i64> {
    el.attr(attr)?.trim().parse().ok()
}

/// Parses a `Const` `shape` attribute (`""` = scalar, `"2,3"`).
fn parse_shape(s: &str) -> Option<Vec<u64>> {
    let s = s.trim();
    if s.is_empty() {
        return Some(Vec::new());
    }
    s.split(',').map(|p| p.trim().parse::<u64>().ok()).collect()
}

/// Byte size of `count` elements of `dtype`, packed (sub-byte types round up).
fn packed_size(dtype: DType, count: u64) -> Option<u64> {
    let bits = count.checked_mul(dtype.bits() as u64)?;
    Some(bits.div_ceil(8))
}

/// What a Const layer's `<data>` says about its bytes.
struct ConstSpec {
    offset: u64,
    size: u64,
    /// Element type and shape, when we can represent the tensor (not strings or unknown types).
    typed: Option<(DType, Vec<u64>)>,
}

fn const_spec(path: &Path, layer: &Element) -> Result<ConstSpec> {
    let data = layer
        .child("data")
        .ok_or_else(|| layer_err(path, layer, "Const layer has no <data>"))?;
    let num = |name: &str| -> Result<u64> {
        let v = data
            .attr(name)
            .ok_or_else(|| layer_err(path, layer, format!("Const <data> has no '{name}'")))?;
        v.trim().parse::<u64>().map_err(|_| {
            layer_err(
                path,
                layer,
                format!("Const '{name}' is not a non-negative integer: '{v}'"),
            )
        })
    };
    let offset = num("offset")?;
    let size = num("size")?;
    let et = data.attr("element_type").unwrap_or_default();
    let shape_text = data.attr("shape").unwrap_or_default();
    let shape = parse_shape(shape_text).ok_or_else(|| {
        layer_err(
            path,
            layer,
            format!("Const shape '{shape_text}' is not valid"),
        )
    })?;
    let typed = match DType::from_ov_name(et) {
        Some(DType::String) | None => None,
        Some(d) => {
            let count = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
            let expected = count.and_then(|c| packed_size(d, c)).ok_or_else(|| {
                layer_err(
                    path,
                    layer,
                    format!("Const shape '{shape_text}' is too large"),
                )
            })?;
            // OpenVINO itself writes empty constants with `size="1"`: accept any size there.
            if expected != size && expected != 0 {
                return Err(layer_err(
                    path,
                    layer,
                    format!(
                        "Const size {size} does not match element_type {et} x shape [{shape_text}] \
                         ({expected} bytes)"
                    ),
                ));
            }
            Some((d, shape))
        }
    };
    Ok(ConstSpec {
        offset,
        size,
        typed,
    })
}

/// Checks a Const range against the `.bin`.
fn check_range(
    path: &Path,
    bin_path: &Path,
    layer: &Element,
    bin: Option<&Bytes>,
    offset: u64,
    size: u64,
) -> Result<Option<Bytes>> {
    if size == 0 {
        return Ok(Some(Bytes::new()));
    }
    let Some(bin) = bin else {
        return Err(layer_err(
            path,
            layer,
            format!(
                "Const needs {size} bytes of weights but {} does not exist",
                bin_path.display()
            ),
        ));
    };
    let end = offset
        .checked_add(size)
        .filter(|&e| e <= bin.len() as u64)
        .ok_or_else(|| {
            layer_err(
                path,
                layer,
                format!(
                    "Const offset {offset} + size {size} passes the end of {} ({} bytes)",
                    bin_path.display(),
                    bin.len()
                ),
            )
        })?;
    // Both fit in the file length, which is a usize.
    let (o, e) = (offset as usize, end as usize);
    Ok(Some(bin.slice(o..e)))
}

/// Visits every `<layer>` nested inside `el` (bodies of Loop / TensorIterator / If).
fn nested_layers<'a>(el: &'a Element, out: &mut Vec<&'a Element>) {
    for c in el.elements() {
        if c.name == "layer" {
            out.push(c);
        }
        nested_layers(c, out);
    }
}

fn output_value(path: &Path, layer: &Element, port: &Element) -> Result<Value> {
    let dtype = port.attr("precision").and_then(DType::from_ov_name);
    let mut shape = Vec::new();
    for d in port.elements().filter(|e| e.name == "dim") {
        let t = d.text();
        shape.push(parse_dim(&t).ok_or_else(|| {
            layer_err(
                path,
                layer,
                format!(
                    "port {}: dim '{}' is not valid",
                    port.attr("id").unwrap_or("?"),
                    t.trim()
                ),
            )
        })?);
    }
    Ok(Value {
        name: port.attr("names").unwrap_or_default().to_string(),
        ty: ValueType {
            dtype,
            shape: Some(shape),
        },
        ty_changed: false,
    })
}

fn port_ids(path: &Path, layer: &Element, group: &str) -> Result<Vec<i64>> {
    let mut ids = Vec::new();
    if let Some(g) = layer.child(group) {
        for p in g.elements().filter(|e| e.name == "port") {
            let id = parse_int(p, "id").ok_or_else(|| {
                layer_err(path, layer, format!("an <{group}> port has no valid id"))
            })?;
            ids.push(id);
        }
    }
    Ok(ids)
}

impl OvModel {
    /// Loads `path` (the `.xml`; the `.bin` beside it, memory-mapped).
    pub fn load(path: &Path) -> Result<OvModel> {
        let raw = map_file(path)?;
        let source = std::str::from_utf8(&raw)
            .map_err(|e| fmt_err(path, format!("not UTF-8 text ({e}): not OpenVINO IR")))?
            .to_string();
        drop(raw);
        let bin_path = bin_path_for(path);
        let bin = if bin_path.is_file() {
            Some(map_file(&bin_path)?)
        } else {
            None
        };
        Self::from_parts(path, source, bin)
    }

    /// Builds a model from `.xml` text and `.bin` bytes already in memory (`path` names the
    /// `.xml` in messages; the `.bin` is `<stem>.bin` beside it).
    pub fn from_parts(path: &Path, source: String, bin: Option<Bytes>) -> Result<OvModel> {
        let doc = Document::parse(&source).map_err(|m| fmt_err(path, m))?;
        let bin_path = bin_path_for(path);
        let net = &doc.root;
        if net.name != "net" {
            return Err(fmt_err(
                path,
                format!("root element is <{}>, not <net>: not OpenVINO IR", net.name),
            ));
        }
        let version: u32 = net
            .attr("version")
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| fmt_err(path, "<net> has no valid 'version'"))?;
        if version != 10 && version != 11 {
            return Err(fmt_err(
                path,
                format!("IR version {version} is not supported (10 and 11 are)"),
            ));
        }
        let layers_el = net
            .child("layers")
            .ok_or_else(|| fmt_err(path, "<net> has no <layers>: not OpenVINO IR"))?;

        // Sized up front (with headroom for nodes passes add): growing the arrays of a
        // 600,000-layer model by doubling cost more than filling them.
        let n_layers = layers_el.elements().filter(|e| e.name == "layer").count();
        let n_edges = net.child("edges").map_or(0, |e| e.elements().count());
        let mut graph =
            Graph::with_capacity(n_layers + n_layers / 4 + 16, n_edges + n_edges / 4 + 16);
        let mut records: Vec<LayerRecord> = Vec::with_capacity(n_layers);
        let mut by_id: crate::ir::FastMap<i64, (usize, NodeIndex)> = crate::ir::FastMap::default();
        by_id.reserve(n_layers);
        let mut elements: Vec<&Element> = Vec::with_capacity(n_layers);
        for (i, el) in layers_el
            .elements()
            .filter(|e| e.name == "layer")
            .enumerate()
        {
            let id = parse_int(el, "id")
                .ok_or_else(|| layer_err(path, el, "layer has no valid 'id'"))?;
            let op_type = el.attr("type").unwrap_or_default();
            let input_ports = port_ids(path, el, "input")?;
            let output_ports = port_ids(path, el, "output")?;
            {
                let mut ids: Vec<i64> = input_ports.iter().chain(&output_ports).copied().collect();
                ids.sort_unstable();
                if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
                    return Err(layer_err(
                        path,
                        el,
                        format!("port id {} is used twice", w[0]),
                    ));
                }
            }
            let mut node = Node::op(
                el.attr("name").unwrap_or_default(),
                op_type,
                el.attr("version").unwrap_or_default(),
            );
            node.origin = Origin::OvLayer(i);
            node.order = (0, i as u64);
            node.dirty = false;
            node.num_inputs = input_ports.len();
            if let Some(data) = el.child("data") {
                node.attrs = data
                    .attrs
                    .iter()
                    .map(|(k, v)| (k.clone(), Attr::String(v.clone())))
                    .collect();
            }
            if let Some(out) = el.child("output") {
                for p in out.elements().filter(|e| e.name == "port") {
                    node.outputs.push(output_value(path, el, p)?);
                }
            }
            let mut const_range = None;
            if op_type == "Const" {
                let spec = const_spec(path, el)?;
                let bytes = check_range(path, &bin_path, el, bin.as_ref(), spec.offset, spec.size)?;
                const_range = Some((spec.offset, spec.size));
                if let (Some((dtype, shape)), Some(bytes)) = (spec.typed, bytes) {
                    let empty = shape.contains(&0);
                    node.kind = NodeKind::Const(Tensor {
                        dtype,
                        shape,
                        data: TensorData::Raw(if empty { Bytes::new() } else { bytes }),
                    });
                }
            }
            // Constants inside bodies must fit the .bin too (they are written back as they are).
            let mut inner = Vec::new();
            nested_layers(el, &mut inner);
            for l in inner
                .into_iter()
                .filter(|l| l.attr("type") == Some("Const"))
            {
                let spec = const_spec(path, l)?;
                check_range(path, &bin_path, l, bin.as_ref(), spec.offset, spec.size)?;
            }
            graph.reserve_name(&node.name);
            for v in &node.outputs {
                graph.reserve_name(&v.name);
            }
            let ix = graph.add_node(node);
            if by_id.insert(id, (i, ix)).is_some() {
                return Err(layer_err(path, el, format!("layer id {id} is used twice")));
            }
            records.push(LayerRecord {
                id,
                input_ports,
                output_ports,
                const_range,
            });
            elements.push(el);
        }

        if let Some(edges) = net.child("edges") {
            for e in edges.elements().filter(|e| e.name == "edge") {
                let (from, to) = resolve_edge(path, e, &by_id, &records, &elements)?;
                if graph.input(to.0, to.1).is_some() {
                    let n = graph.node(to.0);
                    return Err(Error::Node {
                        path: path.to_path_buf(),
                        node: n.name.clone(),
                        op: n.op_type.clone(),
                        message: format!("input port {} is fed by more than one edge", to.2),
                    });
                }
                graph.g.add_edge(
                    from.0,
                    to.0,
                    Wire {
                        src_port: from.1,
                        dst_port: to.1,
                    },
                );
            }
        }
        graph.topo_order().map_err(|c| Error::Node {
            path: path.to_path_buf(),
            node: c.0,
            op: String::new(),
            message: "the graph has a cycle through this layer".into(),
        })?;
        let loaded_nodes = graph.g.node_count();
        let loaded_edges = graph.g.edge_count();
        Ok(OvModel {
            path: path.to_path_buf(),
            graph,
            version,
            source,
            doc,
            bin,
            layers: records,
            loaded_nodes,
            loaded_edges,
        })
    }

    /// The declared shape of input `port` of `node` (its `<input><port>` dims as read), for
    /// layers loaded from the file.
    pub fn input_port_shape(&self, node: NodeIndex, port: usize) -> Option<Vec<DeclaredDim>> {
        let Origin::OvLayer(i) = self.graph.g.node_weight(node)?.origin else {
            return None;
        };
        let port_id = *self.layers.get(i)?.input_ports.get(port)?;
        let layer = self
            .doc
            .root
            .child("layers")?
            .elements()
            .filter(|e| e.name == "layer")
            .nth(i)?;
        let p = layer.child("input")?.elements().find(|e| {
            e.name == "port"
                && e.attr("id").and_then(|v| v.trim().parse::<i64>().ok()) == Some(port_id)
        })?;
        p.elements()
            .filter(|e| e.name == "dim")
            .map(|d| parse_dim(&d.text()))
            .collect()
    }

    /// The IR `version` attribute of `<net>`.
    pub fn ir_version(&self) -> Option<i64> {
        Some(self.version as i64)
    }

    /// The per-layer records (XML ids and port ids), in document order.
    pub fn layer_records(&self) -> &[LayerRecord] {
        &self.layers
    }

    /// True when no pass changed the graph.
    pub fn is_untouched(&self) -> bool {
        self.graph.g.node_count() == self.loaded_nodes
            && self.graph.g.edge_count() == self.loaded_edges
            && self.graph.g.node_weights().all(|n| {
                !n.dirty
                    && matches!(n.origin, Origin::OvLayer(_))
                    && n.outputs.iter().all(|v| !v.ty_changed)
            })
    }

    /// The `.xml` text and `.bin` parts as they would be written.
    pub fn to_parts(&self) -> Result<(String, Vec<Bytes>)> {
        let bin = self.bin.clone().unwrap_or_default();
        if self.is_untouched() {
            return Ok((self.source.clone(), vec![bin]));
        }
        let mut w = Writer::new(self, bin);
        let doc = w.rebuild()?;
        Ok((doc.write(&self.source), w.bin_parts()))
    }

    /// Saves to `path` (the `.xml`) and `<stem>.bin` beside it, each atomically; the `.bin` is
    /// written first, so a failure never leaves a new `.xml` pointing into an old `.bin`.
    pub fn save(&self, path: &Path) -> Result<()> {
        let (text, bin) = self.to_parts()?;
        let parts: Vec<&[u8]> = bin.iter().map(|b| b.as_ref()).collect();
        crate::formats::write_atomic(&bin_path_for(path), &parts)?;
        crate::formats::write_atomic(path, &[text.as_bytes()])
    }
}

type PortRef = (NodeIndex, usize, i64);

fn resolve_edge(
    path: &Path,
    e: &Element,
    by_id: &crate::ir::FastMap<i64, (usize, NodeIndex)>,
    records: &[LayerRecord],
    elements: &[&Element],
) -> Result<(PortRef, PortRef)> {
    let attr = |name: &str| -> Result<i64> {
        parse_int(e, name).ok_or_else(|| {
            fmt_err(
                path,
                format!(
                    "<edge> has no valid '{name}' ({})",
                    e.attrs
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            )
        })
    };
    let (fl, fp, tl, tp) = (
        attr("from-layer")?,
        attr("from-port")?,
        attr("to-layer")?,
        attr("to-port")?,
    );
    let find = |layer: i64, other: i64| -> Result<(usize, NodeIndex)> {
        by_id.get(&layer).copied().ok_or_else(|| {
            let msg = format!(
                "edge from-layer {fl} port {fp} to-layer {tl} port {tp}: no layer has id {layer}"
            );
            match by_id.get(&other) {
                Some(&(i, _)) => layer_err(path, elements[i], msg),
                None => fmt_err(path, msg),
            }
        })
    };
    let (fi, fix) = find(fl, tl)?;
    let (ti, tix) = find(tl, fl)?;
    let src = records[fi]
        .output_ports
        .iter()
        .position(|&p| p == fp)
        .ok_or_else(|| {
            layer_err(
                path,
                elements[fi],
                format!("edge to layer {tl}: layer {fl} has no output port {fp}"),
            )
        })?;
    let dst = records[ti]
        .input_ports
        .iter()
        .position(|&p| p == tp)
        .ok_or_else(|| {
            layer_err(
                path,
                elements[ti],
                format!("edge from layer {fl}: layer {tl} has no input port {tp}"),
            )
        })?;
    Ok(((fix, src, fp), (tix, dst, tp)))
}

/// The XML identity a node gets in the written file.
#[derive(Debug, Clone)]
struct Placed {
    id: i64,
    inputs: Vec<i64>,
    outputs: Vec<i64>,
}

/// The kept ranges of the original `.bin` and where they go in the written one.
#[derive(Debug, Default)]
struct Compaction {
    /// Disjoint, sorted `(old start, old end, new start)`.
    kept: Vec<(u64, u64, u64)>,
    /// Total size of the kept ranges.
    len: u64,
}

impl Compaction {
    /// Merges the referenced `(offset, size)` ranges (overlapping or touching ranges become one,
    /// so shared bytes stay shared); empty ranges keep nothing.
    fn new(mut refs: Vec<(u64, u64)>) -> Compaction {
        refs.retain(|&(_, size)| size > 0);
        refs.sort_unstable();
        let mut kept: Vec<(u64, u64, u64)> = Vec::new();
        let mut len = 0u64;
        for (off, size) in refs {
            let end = off.saturating_add(size);
            match kept.last_mut() {
                Some(last) if off <= last.1 => {
                    if end > last.1 {
                        len += end - last.1;
                        last.1 = end;
                    }
                }
                _ => {
                    kept.push((off, end, len));
                    len += end - off;
                }
            }
        }
        Compaction { kept, len }
    }

    /// Where original offset `off` is in the compacted `.bin` (an offset in a dropped gap maps
    /// to where the gap was, which only empty ranges use).
    fn map(&self, off: u64) -> u64 {
        let i = self.kept.partition_point(|&(start, _, _)| start <= off);
        match i.checked_sub(1).map(|i| self.kept[i]) {
            Some((start, end, new)) => new + (off.min(end) - start),
            None => 0,
        }
    }

    /// True when nothing moves: the kept bytes are the whole `.bin` of `len` bytes.
    fn is_whole(&self, len: u64) -> bool {
        self.len == len
    }
}

/// Builds the changed document and `.bin`.
struct Writer<'a> {
    m: &'a OvModel,
    /// The original `.bin`.
    bin: Bytes,
    /// Which of its ranges are kept (set by `rebuild` before any layer is built).
    compaction: Compaction,
    /// New constants, appended after the kept ranges.
    new_parts: Vec<Bytes>,
    /// Length of the written `.bin` so far.
    bin_len: u64,
    /// Offsets of the new constants by content, to share identical ones.
    appended: HashMap<Bytes, u64>,
    /// Constants whose data is their original range's bytes: that (original) range.
    reused: HashMap<NodeIndex, (u64, u64)>,
    unit: String,
}

impl<'a> Writer<'a> {
    fn new(m: &'a OvModel, bin: Bytes) -> Writer<'a> {
        let unit = indent_unit(&m.doc.root);
        Writer {
            m,
            bin,
            compaction: Compaction::default(),
            new_parts: Vec::new(),
            bin_len: 0,
            appended: HashMap::new(),
            reused: HashMap::new(),
            unit,
        }
    }

    /// The written `.bin`: the kept ranges of the original (the original itself when all of it
    /// is kept), then the new constants.
    fn bin_parts(self) -> Vec<Bytes> {
        let mut parts = Vec::with_capacity(self.compaction.kept.len() + self.new_parts.len());
        if self.compaction.is_whole(self.bin.len() as u64) {
            parts.push(self.bin);
        } else {
            for &(start, end, _) in &self.compaction.kept {
                // Kept ranges were checked against the `.bin` when loading.
                parts.push(self.bin.slice(start as usize..end as usize));
            }
        }
        parts.extend(self.new_parts);
        parts
    }

    /// True when `raw` is the original `.bin`'s bytes at `(off, size)`.
    fn same_as_original(&self, (off, size): (u64, u64), raw: &Bytes) -> bool {
        let Some(b) = usize::try_from(off)
            .ok()
            .zip(usize::try_from(size).ok())
            .and_then(|(o, s)| self.bin.get(o..o.checked_add(s)?))
        else {
            return false;
        };
        b.len() == raw.len() && (b.as_ptr() == raw.as_ptr() || b == raw.as_ref())
    }

    /// Rewrites the `offset` of every `Const` layer inside `el` (and of `el` itself when
    /// `include_self`) whose range moved; returns whether anything changed. Changed elements
    /// keep their tags and unchanged children as read.
    fn remap_consts(&self, el: &mut Element, include_self: bool) -> bool {
        let src = self.m.source.as_str();
        let mut changed = false;
        if include_self && el.name == "layer" && el.attr("type") == Some("Const") {
            if let Some(XmlNode::Element(d)) = el.child_index("data").map(|i| &mut el.children[i]) {
                if let Some(off) = d.attr("offset").and_then(|v| v.trim().parse::<u64>().ok()) {
                    let new = self.compaction.map(off);
                    if new != off {
                        d.set_attr_in_source("offset", &new.to_string(), src);
                        changed = true;
                    }
                }
            }
        }
        for c in el.children.iter_mut() {
            if let XmlNode::Element(e) = c {
                if e.name != "data" && self.remap_consts(e, true) {
                    changed = true;
                }
            }
        }
        if changed {
            el.span = None;
        }
        changed
    }

    fn err(&self, node: &Node, message: impl Into<String>) -> Error {
        Error::Node {
            path: self.m.path.clone(),
            node: node.name.clone(),
            op: node.op_type.clone(),
            message: message.into(),
        }
    }

    fn rebuild(&mut self) -> Result<Document> {
        let m = self.m;
        let g = &m.graph;
        let order = g.topo_order().map_err(|c| Error::Node {
            path: m.path.clone(),
            node: c.0,
            op: String::new(),
            message: "the graph has a cycle through this node".into(),
        })?;
        let topo_pos: HashMap<NodeIndex, usize> =
            order.iter().enumerate().map(|(i, &ix)| (ix, i)).collect();

        // Which node each original layer became (a second node claiming the same origin is new).
        let mut by_layer: HashMap<usize, NodeIndex> = HashMap::new();
        for &ix in &order {
            let n = g.node(ix);
            match n.kind {
                NodeKind::Input | NodeKind::Output => {
                    return Err(self.err(
                        n,
                        "graph inputs/outputs of ONNX kind cannot be written to OpenVINO IR \
                         (use Parameter/Result layers)",
                    ))
                }
                _ => {}
            }
            if let Origin::OvLayer(i) = n.origin {
                if i < m.layers.len() {
                    by_layer.entry(i).or_insert(ix);
                }
            }
        }
        let original_of: HashMap<NodeIndex, usize> =
            by_layer.iter().map(|(&i, &ix)| (ix, i)).collect();

        // Ids: originals keep theirs; new layers and new ports get fresh ones.
        let mut next_id = m.layers.iter().map(|r| r.id).max().unwrap_or(-1);
        let mut placed: HashMap<NodeIndex, Placed> = HashMap::new();
        for &ix in &order {
            let n = g.node(ix);
            let p = match original_of.get(&ix) {
                Some(&i) => {
                    let r = &m.layers[i];
                    let mut next_port = r
                        .input_ports
                        .iter()
                        .chain(r.output_ports.iter())
                        .copied()
                        .max()
                        .unwrap_or(-1);
                    let mut fresh = || {
                        next_port = next_port.saturating_add(1);
                        next_port
                    };
                    let inputs: Vec<i64> = (0..n.num_inputs)
                        .map(|k| r.input_ports.get(k).copied().unwrap_or_else(&mut fresh))
                        .collect();
                    let outputs: Vec<i64> = (0..n.outputs.len())
                        .map(|k| r.output_ports.get(k).copied().unwrap_or_else(&mut fresh))
                        .collect();
                    Placed {
                        id: r.id,
                        inputs,
                        outputs,
                    }
                }
                None => {
                    next_id = next_id.saturating_add(1);
                    let ni = n.num_inputs as i64;
                    Placed {
                        id: next_id,
                        inputs: (0..ni).collect(),
                        outputs: (ni..ni + n.outputs.len() as i64).collect(),
                    }
                }
            };
            placed.insert(ix, p);
        }

        // Layers needing a rebuilt element.
        let changed_value =
            |ix: NodeIndex, port: usize| g.node(ix).outputs.get(port).is_some_and(|v| v.ty_changed);
        let needs_rebuild = |ix: NodeIndex| -> bool {
            let n = g.node(ix);
            let Some(&i) = original_of.get(&ix) else {
                return true;
            };
            let r = &m.layers[i];
            n.dirty
                || n.num_inputs != r.input_ports.len()
                || n.outputs.len() != r.output_ports.len()
                || n.outputs.iter().any(|v| v.ty_changed)
                || g.g
                    .edges_directed(ix, Direction::Incoming)
                    .any(|e| changed_value(e.source(), e.weight().src_port))
        };

        // The original `.bin` ranges the written Const layers refer to.
        let layer_els: Vec<&Element> = m
            .doc
            .root
            .child("layers")
            .map(|l| l.elements().filter(|e| e.name == "layer").collect())
            .unwrap_or_default();
        let mut refs: Vec<(u64, u64)> = Vec::new();
        for &ix in &order {
            let n = g.node(ix);
            let Origin::OvLayer(i) = n.origin else {
                continue;
            };
            let original = original_of.get(&ix) == Some(&i);
            if let Some(range) = m.layers.get(i).and_then(|r| r.const_range) {
                match &n.kind {
                    _ if original && !needs_rebuild(ix) => refs.push(range),
                    NodeKind::Const(Tensor {
                        data: TensorData::Raw(raw),
                        ..
                    }) if self.same_as_original(range, raw) => {
                        self.reused.insert(ix, range);
                        refs.push(range);
                    }
                    NodeKind::Const(_) => {}
                    _ if n.op_type == "Const" => refs.push(range),
                    _ => {}
                }
            }
            // Bodies are written as read (only their offsets are remapped).
            if original {
                if let Some(el) = layer_els.get(i) {
                    let mut inner = Vec::new();
                    nested_layers(el, &mut inner);
                    for l in inner
                        .into_iter()
                        .filter(|l| l.attr("type") == Some("Const"))
                    {
                        if let Ok(spec) = const_spec(&m.path, l) {
                            refs.push((spec.offset, spec.size));
                        }
                    }
                }
            }
        }
        self.compaction = Compaction::new(refs);
        self.bin_len = self.compaction.len;

        let mut doc = m.doc.clone();
        let net = &mut doc.root;
        net.span = None;
        let li = net
            .child_index("layers")
            .ok_or_else(|| fmt_err(&m.path, "<net> has no <layers>"))?;

        // <layers>
        let old_layers = match net.children.get(li) {
            Some(XmlNode::Element(e)) => (**e).clone(),
            _ => return Err(fmt_err(&m.path, "<net> has no <layers>")),
        };
        let mut layers = Element {
            children: Vec::with_capacity(old_layers.children.len()),
            span: None,
            ..old_layers.clone()
        };
        let mut k = 0usize;
        for c in old_layers.children {
            match c {
                XmlNode::Element(el) if el.name == "layer" => {
                    let i = k;
                    k += 1;
                    match by_layer.get(&i) {
                        Some(&ix) if needs_rebuild(ix) => {
                            let mut rebuilt = self.layer_element(ix, Some(&el), &placed, 2)?;
                            // Its own `<data>` is set already; its body's constants are not.
                            for c in rebuilt.children.iter_mut() {
                                if let XmlNode::Element(e) = c {
                                    if e.name != "data" && self.remap_consts(e, true) {
                                        rebuilt.span = None;
                                    }
                                }
                            }
                            layers.children.push(XmlNode::element(rebuilt));
                        }
                        Some(_) => {
                            let mut el = el;
                            self.remap_consts(&mut el, true);
                            layers.children.push(XmlNode::Element(el));
                        }
                        None => drop_preceding_whitespace(&mut layers.children),
                    }
                }
                other => layers.children.push(other),
            }
        }
        let mut new_nodes: Vec<NodeIndex> = order
            .iter()
            .copied()
            .filter(|ix| !original_of.contains_key(ix))
            .collect();
        new_nodes.sort_by_key(|ix| topo_pos.get(ix).copied().unwrap_or(usize::MAX));
        for ix in new_nodes {
            let el = self.layer_element(ix, None, &placed, 2)?;
            append_child(&mut layers, el, 2, &self.unit);
        }
        net.children[li] = XmlNode::element(layers);

        // <edges>: keep the original edge elements whose graph edge still exists.
        let mut covered: HashSet<EdgeIndex> = HashSet::new();
        let id_to_layer: HashMap<i64, usize> = m
            .layers
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id, i))
            .collect();
        let find_edge = |e: &Element, covered: &HashSet<EdgeIndex>| -> Option<EdgeIndex> {
            let fl = id_to_layer.get(&parse_int(e, "from-layer")?)?;
            let tl = id_to_layer.get(&parse_int(e, "to-layer")?)?;
            let fp = parse_int(e, "from-port")?;
            let tp = parse_int(e, "to-port")?;
            let src = *by_layer.get(fl)?;
            let dst = *by_layer.get(tl)?;
            let sp = placed.get(&src)?.outputs.iter().position(|&p| p == fp)?;
            let dp = placed.get(&dst)?.inputs.iter().position(|&p| p == tp)?;
            g.g.edges_connecting(src, dst)
                .find(|x| {
                    x.weight().src_port == sp
                        && x.weight().dst_port == dp
                        && !covered.contains(&x.id())
                })
                .map(|x| x.id())
        };
        let ei = match net.child_index("edges") {
            Some(ei) => ei,
            None => {
                // A graph without edges may omit <edges>: add one after <layers>.
                let el = Element::new("edges");
                net.children.insert(li + 1, XmlNode::element(el));
                net.children
                    .insert(li + 1, XmlNode::Text(format!("\n{}", self.unit)));
                li + 2
            }
        };
        let old_edges = match net.children.get(ei) {
            Some(XmlNode::Element(e)) => (**e).clone(),
            _ => Element::new("edges"),
        };
        let mut edges = Element {
            children: Vec::with_capacity(old_edges.children.len()),
            span: None,
            ..old_edges.clone()
        };
        for c in old_edges.children {
            match c {
                XmlNode::Element(el) if el.name == "edge" => match find_edge(&el, &covered) {
                    Some(id) => {
                        covered.insert(id);
                        edges.children.push(XmlNode::Element(el));
                    }
                    None => drop_preceding_whitespace(&mut edges.children),
                },
                other => edges.children.push(other),
            }
        }
        let mut new_edges: Vec<(usize, usize, EdgeIndex)> = (&g.g)
            .edge_references()
            .filter(|e| !covered.contains(&e.id()) && e.weight().dst_port != Wire::CAPTURED)
            .map(|e| {
                (
                    topo_pos.get(&e.target()).copied().unwrap_or(usize::MAX),
                    e.weight().dst_port,
                    e.id(),
                )
            })
            .collect();
        new_edges.sort();
        for (_, _, id) in new_edges {
            let Some((s, t)) = g.g.edge_endpoints(id) else {
                continue;
            };
            let w = g.g[id];
            let (Some(ps), Some(pt)) = (placed.get(&s), placed.get(&t)) else {
                continue;
            };
            let (Some(fp), Some(tp)) = (ps.outputs.get(w.src_port), pt.inputs.get(w.dst_port))
            else {
                let n = g.node(t);
                return Err(self.err(
                    n,
                    format!(
                        "an edge uses output {} of '{}' or input {} of this node, which do not exist",
                        w.src_port,
                        g.node(s).name,
                        w.dst_port
                    ),
                ));
            };
            let mut el = Element::new("edge");
            el.attrs = vec![
                ("from-layer".into(), ps.id.to_string()),
                ("from-port".into(), fp.to_string()),
                ("to-layer".into(), pt.id.to_string()),
                ("to-port".into(), tp.to_string()),
            ];
            append_child(&mut edges, el, 2, &self.unit);
        }
        net.children[ei] = XmlNode::element(edges);
        Ok(doc)
    }

    /// Appends `data` to the `.bin` (or finds the same bytes appended before); returns its
    /// offset.
    fn append_bin(&mut self, data: Bytes) -> Option<u64> {
        if let Some(&offset) = self.appended.get(&data) {
            return Some(offset);
        }
        let offset = self.bin_len;
        self.bin_len = self.bin_len.checked_add(data.len() as u64)?;
        self.appended.insert(data.clone(), offset);
        self.new_parts.push(data);
        Some(offset)
    }

    /// The `<layer>` element for node `ix`, rebuilt from `base` (its original element) or new.
    fn layer_element(
        &mut self,
        ix: NodeIndex,
        base: Option<&Element>,
        placed: &HashMap<NodeIndex, Placed>,
        depth: usize,
    ) -> Result<Element> {
        let m = self.m;
        let g = &m.graph;
        let n = g.node(ix);
        let Some(p) = placed.get(&ix) else {
            return Err(self.err(n, "node has no place in the written graph"));
        };
        let mut el = base.cloned().unwrap_or_else(|| Element::new("layer"));
        el.span = None;
        el.set_attr("id", &p.id.to_string());
        el.set_attr("name", &n.name);
        el.set_attr("type", &n.op_type);
        if n.domain.is_empty() {
            el.remove_attr("version");
        } else {
            el.set_attr("version", &n.domain);
        }

        // <data>
        let mut data_attrs: Vec<(String, String)> = Vec::with_capacity(n.attrs.len());
        for (k, a) in &n.attrs {
            if let Some(v) = attr_text(a) {
                data_attrs.push((k.clone(), v));
            }
        }
        let original_range = match n.origin {
            Origin::OvLayer(i) => m.layers.get(i).and_then(|r| r.const_range),
            _ => None,
        };
        if let NodeKind::Const(t) = &n.kind {
            let (offset, size) = self.const_bytes(ix, n, t)?;
            let shape = t
                .shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(",");
            for (k, v) in [
                ("element_type", t.dtype.ov_name().to_string()),
                ("shape", shape),
                ("offset", offset.to_string()),
                ("size", size.to_string()),
            ] {
                match data_attrs.iter_mut().find(|(n, _)| n == k) {
                    Some(slot) => slot.1 = v,
                    None => data_attrs.push((k.to_string(), v)),
                }
            }
        } else if let (true, Some((offset, _))) = (n.op_type == "Const", original_range) {
            // A Const we do not represent (strings, unknown types): its range, moved.
            let v = self.compaction.map(offset).to_string();
            match data_attrs.iter_mut().find(|(n, _)| n == "offset") {
                Some(slot) => slot.1 = v,
                None => data_attrs.push(("offset".to_string(), v)),
            }
        }
        let data_pos = el.child_index("data");
        match data_pos {
            Some(i) => {
                if let Some(XmlNode::Element(d)) = el.children.get_mut(i) {
                    d.set_attrs(data_attrs);
                }
            }
            None if !data_attrs.is_empty() => {
                let mut d = Element::new("data");
                d.attrs = data_attrs;
                el.children.insert(0, XmlNode::element(d));
            }
            None => {}
        }

        // <input> / <output>
        let mut in_ports = Vec::with_capacity(n.num_inputs);
        for k in 0..n.num_inputs {
            let ty = g.input(ix, k).and_then(|o| g.value(o)).map(|v| &v.ty);
            in_ports.push((p.inputs[k], ty, None));
        }
        let mut out_ports = Vec::with_capacity(n.outputs.len());
        for (k, v) in n.outputs.iter().enumerate() {
            out_ports.push((p.outputs[k], Some(&v.ty), Some(v.name.as_str())));
        }
        set_ports(&mut el, "input", &in_ports, "data");
        set_ports(&mut el, "output", &out_ports, "input");
        el.reindent(depth, &self.unit);
        Ok(el)
    }

    /// Where a constant's bytes are in the written `.bin`: its original range (moved by the
    /// compaction) when the data is unchanged, else appended.
    fn const_bytes(&mut self, ix: NodeIndex, n: &Node, t: &Tensor) -> Result<(u64, u64)> {
        let TensorData::Raw(raw) = &t.data else {
            return Err(self.err(n, "string constants cannot be written to OpenVINO IR yet"));
        };
        let count = t
            .element_count()
            .and_then(|c| packed_size(t.dtype, c))
            .ok_or_else(|| self.err(n, "constant shape is too large"))?;
        if count != raw.len() as u64 {
            return Err(self.err(
                n,
                format!(
                    "constant has {} bytes, but {} x {:?} needs {count}",
                    raw.len(),
                    t.dtype.ov_name(),
                    t.shape
                ),
            ));
        }
        if let Some(&(off, size)) = self.reused.get(&ix) {
            return Ok((self.compaction.map(off), size));
        }
        let off = self
            .append_bin(raw.clone())
            .ok_or_else(|| self.err(n, "the .bin would exceed 2^64 bytes"))?;
        Ok((off, raw.len() as u64))
    }
}

/// An attribute as OpenVINO writes it in `<data>`; `None` for what IR cannot hold.
fn attr_text(a: &Attr) -> Option<String> {
    let join = |v: Vec<String>| v.join(",");
    Some(match a {
        Attr::String(s) => s.clone(),
        Attr::Int(v) => v.to_string(),
        Attr::Ints(v) => join(v.iter().map(|x| x.to_string()).collect()),
        Attr::Float(v) => v.to_string(),
        Attr::Floats(v) => join(v.iter().map(|x| x.to_string()).collect()),
        Attr::Strings(v) => v.join(","),
        Attr::Tensor(_) | Attr::Opaque => return None,
    })
}

/// Replaces the ports of `<group>` (input/output) of a layer: each port keeps its original
/// element (attributes, `rt_info`) where one exists, with `precision`, `names` and `<dim>`s set
/// from the graph. `after` names the element the group follows when it must be created.
fn set_ports(
    el: &mut Element,
    group: &str,
    ports: &[(i64, Option<&ValueType>, Option<&str>)],
    after: &str,
) {
    let gi = el.child_index(group);
    if ports.is_empty() {
        if let Some(i) = gi {
            el.children.remove(i);
        }
        return;
    }
    let mut old: HashMap<String, Element> = HashMap::new();
    if let Some(XmlNode::Element(ge)) = gi.and_then(|i| el.children.get(i)) {
        for pe in ge.elements().filter(|e| e.name == "port") {
            if let Some(id) = pe.attr("id") {
                old.entry(id.trim().to_string())
                    .or_insert_with(|| pe.clone());
            }
        }
    }
    let mut ge = match gi.and_then(|i| el.children.get(i)) {
        Some(XmlNode::Element(e)) => Element {
            children: Vec::new(),
            span: None,
            ..(**e).clone()
        },
        _ => Element::new(group),
    };
    for (id, ty, names) in ports {
        let mut pe = old
            .remove(&id.to_string())
            .unwrap_or_else(|| Element::new("port"));
        let before = pe.clone();
        pe.set_attr("id", &id.to_string());
        if let Some(ty) = ty {
            match ty.dtype {
                Some(d) => pe.set_attr("precision", &precision_name(d)),
                None => pe.remove_attr("precision"),
            }
        }
        if let Some(names) = names {
            if names.is_empty() {
                pe.remove_attr("names");
            } else {
                pe.set_attr("names", names);
            }
        }
        if let Some(shape) = ty.and_then(|t| t.shape.as_ref()) {
            let dims: Vec<XmlNode> = shape
                .iter()
                .map(|d| {
                    let mut de = Element::new("dim");
                    de.children.push(XmlNode::Text(format_dim(d)));
                    XmlNode::element(de)
                })
                .collect();
            let same = {
                let old_dims: Vec<String> = pe
                    .elements()
                    .filter(|e| e.name == "dim")
                    .map(|e| e.text().trim().to_string())
                    .collect();
                old_dims == shape.iter().map(format_dim).collect::<Vec<_>>()
            };
            if !same {
                let rest: Vec<XmlNode> = pe
                    .children
                    .drain(..)
                    .filter(|c| !matches!(c, XmlNode::Element(e) if e.name == "dim"))
                    .collect();
                pe.children = dims;
                pe.children.extend(rest);
                pe.span = None;
            }
        }
        if pe.attrs == before.attrs && pe.children == before.children {
            pe.span = before.span;
        }
        ge.children.push(XmlNode::element(pe));
    }
    match gi {
        Some(i) => el.children[i] = XmlNode::element(ge),
        None => {
            let at = el
                .child_index(after)
                .or_else(|| el.child_index("data"))
                .map(|i| i + 1)
                .unwrap_or(0);
            el.children.insert(at, XmlNode::element(ge));
        }
    }
}

/// Removes the whitespace text that preceded a dropped element.
fn drop_preceding_whitespace(children: &mut Vec<XmlNode>) {
    if matches!(children.last(), Some(XmlNode::Text(t)) if t.trim().is_empty()) {
        children.pop();
    }
}

/// Appends `el` as the last element child of `parent` (at nesting `depth`), before the
/// closing whitespace.
fn append_child(parent: &mut Element, mut el: Element, depth: usize, unit: &str) {
    el.reindent(depth, unit);
    let at = match parent.children.last() {
        Some(XmlNode::Text(t)) if t.trim().is_empty() => parent.children.len() - 1,
        _ => parent.children.len(),
    };
    if at == parent.children.len() {
        parent.children.push(XmlNode::Text(format!(
            "\n{}",
            unit.repeat(depth.saturating_sub(1))
        )));
    }
    parent
        .children
        .insert(at, XmlNode::Text(format!("\n{}", unit.repeat(depth))));
    parent.children.insert(at + 1, XmlNode::element(el));
}

/// One level of indentation as the file uses it (tab by default).
fn indent_unit(net: &Element) -> String {
    for c in &net.children {
        if let XmlNode::Text(t) = c {
            if let Some(last) = t.rsplit('\n').next() {
                if t.contains('\n') && !last.is_empty() && last.trim().is_empty() {
                    return last.to_string();
                }
            }
        }
    }
    "\t".to_string()
}
