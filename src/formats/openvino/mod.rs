//! OpenVINO IR (`.xml` + `.bin`), versions 10 and 11.
//!
//! The `.xml` (memory-mapped, or the text given) is read once by a streaming scanner
//! ([`xml::scan`]) that builds the graph IR from `<layers>` and `<edges>` (one node per
//! top-level `<layer>`; the bodies of `Loop`, `TensorIterator` and `If` stay inside their
//! layer's text untouched) and keeps no tree: only the byte ranges of each top-level layer and
//! edge, and of the `<data>` tags whose `offset` may need rewriting. Constants are views into
//! the memory-mapped `.bin`.
//!
//! Saving an untouched model writes the original `.xml` text and `.bin` bytes. Saving a changed
//! model keeps every untouched layer element (and id) as read, rebuilds the layers a pass
//! changed or added, drops removed layers and their edges, and regenerates only the edges that
//! changed. Its `.bin` is compacted: it holds only the byte ranges the written Const layers
//! refer to (top-level ones and those inside bodies), in their original order, with shared and
//! overlapping ranges still shared, followed by the new constants (identical new constants
//! share one range). Every written Const whose range moved gets its `offset` rewritten in place
//! (the rest of its text stays as read).
//!
//! A changed model is written as the source text with splices: a rebuilt layer is parsed on
//! its own into an [`xml::Element`] tree (so the serialization rules of [`xml`] apply to it),
//! everything else is copied as byte ranges of the source. An unchanged `.bin` range is copied
//! file to file when the `.bin` came from a file (`copy_file_range` on Linux), else from the
//! map.

pub mod xml;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use petgraph::stable_graph::{EdgeIndex, NodeIndex};
use petgraph::visit::{EdgeRef, IntoEdgeReferences};
use petgraph::Direction;

use crate::error::{Error, Result};
use crate::formats::onnx::{map_file, map_file_sparse};
use crate::ir::{
    Attr, DType, DeclaredDim, Graph, Node, NodeKind, Origin, Tensor, TensorData, Value, ValueType,
    Wire,
};

use xml::{Document, El, Element, Outline, XmlNode};

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
/// A loaded OpenVINO IR model.
#[derive(Debug, Clone)]
pub struct OvModel {
    /// The `.xml` it was loaded from.
    pub path: PathBuf,
    /// The graph.
    pub graph: Graph,
    /// The IR version (`10` or `11`).
    pub version: u32,
    /// The original `.xml` text (UTF-8, checked when loading; memory-mapped when loaded from a
    /// file).
    source: Bytes,
    /// Where the parts of the `.xml` are (the record untouched parts are written back from).
    outline: Outline,
    /// The `.bin` (memory-mapped), if it exists.
    bin: Option<Bytes>,
    /// The file the `.bin` was mapped from, to copy unchanged ranges file to file.
    bin_file: Option<FileId>,
    /// The file the `.xml` was mapped from (the same for the `.xml`).
    source_file: Option<FileId>,
    /// One record per top-level layer, in document order.
    layers: Vec<LayerRecord>,
    /// Where each top-level layer is in the `.xml` (same order).
    layer_srcs: Vec<LayerSrc>,
    /// `<data>` tags whose `offset` follows the `.bin` compaction (ranges in `layer_srcs`).
    offset_tags: Vec<OffsetTag>,
    /// `.bin` ranges of the Const layers inside bodies (ranges in `layer_srcs`).
    body_consts: Vec<(u64, u64)>,
    /// The `<edge>` elements of `<edges>`, in document order.
    edge_srcs: Vec<EdgeSrc>,
    /// Node and edge counts right after loading (to detect an untouched graph).
    loaded_nodes: usize,
    loaded_edges: usize,
}

/// Where a top-level `<layer>` is in the source.
#[derive(Debug, Clone)]
struct LayerSrc {
    /// The element.
    span: Range<usize>,
    /// Start of the text node directly before it (`span.start` when there is none).
    gap: usize,
    /// Its entries in `OvModel::offset_tags`.
    offset_tags: Range<usize>,
    /// Its entries in `OvModel::body_consts`.
    body_consts: Range<usize>,
}

/// The `<data>` start tag of a Const layer, whose `offset` is rewritten when its range moves
/// (the layer itself, or one in its body not inside another `<data>`).
#[derive(Debug, Clone)]
struct OffsetTag {
    tag: Range<usize>,
    offset: u64,
}

/// Where an `<edge>` is in the source, and what it connects.
#[derive(Debug, Clone)]
struct EdgeSrc {
    span: Range<usize>,
    gap: usize,
    /// `from-layer`, `from-port`, `to-layer`, `to-port`.
    ends: [i64; 4],
}

fn fmt_err(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn layer_err(path: &Path, el: El<'_, '_>, message: impl Into<String>) -> Error {
    node_err(
        path,
        el.attr("name"),
        el.attr("id"),
        el.attr("type"),
        message,
    )
}

fn owned_layer_err(path: &Path, el: &Element, message: impl Into<String>) -> Error {
    node_err(
        path,
        el.attr("name"),
        el.attr("id"),
        el.attr("type"),
        message,
    )
}

/// A layer error; the layer is named by its name, or its id.
fn node_err(
    path: &Path,
    name: Option<&str>,
    id: Option<&str>,
    op: Option<&str>,
    message: impl Into<String>,
) -> Error {
    let node = match (name, id) {
        (Some(n), _) if !n.is_empty() => n.to_string(),
        (_, Some(id)) => format!("id {id}"),
        _ => "?".to_string(),
    };
    Error::Node {
        path: path.to_path_buf(),
        node,
        op: op.unwrap_or_default().to_string(),
        message: message.into(),
    }
}

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

fn parse_int(el: El<'_, '_>, attr: &str) -> Option<i64> {
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

fn const_spec(path: &Path, layer: El<'_, '_>) -> Result<ConstSpec> {
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
    layer: El<'_, '_>,
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

fn output_value(path: &Path, layer: El<'_, '_>, port: El<'_, '_>) -> Result<Value> {
    let dtype = port.attr("precision").and_then(DType::from_ov_name);
    let mut shape = Vec::new();
    for d in port.elements().filter(|e| e.name() == "dim") {
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

fn port_ids(path: &Path, layer: El<'_, '_>, group: &str) -> Result<Vec<i64>> {
    let mut ids = Vec::new();
    if let Some(g) = layer.child(group) {
        for p in g.elements().filter(|e| e.name() == "port") {
            let id = parse_int(p, "id").ok_or_else(|| {
                layer_err(path, layer, format!("an <{group}> port has no valid id"))
            })?;
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Builds the graph from what [`xml::scan`] hands over.
struct Loader<'a> {
    path: &'a Path,
    bin_path: PathBuf,
    bin: Option<&'a Bytes>,
    version: u32,
    graph: Graph,
    records: Vec<LayerRecord>,
    by_id: HashMap<i64, (usize, NodeIndex)>,
    layer_srcs: Vec<LayerSrc>,
    offset_tags: Vec<OffsetTag>,
    body_consts: Vec<(u64, u64)>,
    /// Edges as read.
    edges: Vec<EdgeSrc>,
    /// The first `<edge>` whose attributes are not all integers: how many edges came before
    /// it, and where it is.
    bad_edge: Option<(usize, Range<usize>)>,
}

impl<'s> xml::Sink<'s> for Loader<'_> {
    type Error = Error;

    fn root(&mut self, net: El<'_, 's>) -> Result<()> {
        let path = self.path;
        if net.name() != "net" {
            return Err(fmt_err(
                path,
                format!(
                    "root element is <{}>, not <net>: not OpenVINO IR",
                    net.name()
                ),
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
        self.version = version;
        Ok(())
    }

    fn layer(&mut self, el: El<'_, 's>, gap: usize) -> Result<()> {
        if el.name() != "layer" {
            return Ok(());
        }
        let path = self.path;
        let bin = self.bin;
        let i = self.records.len();
        let id =
            parse_int(el, "id").ok_or_else(|| layer_err(path, el, "layer has no valid 'id'"))?;
        let op_type = el.attr("type").unwrap_or_default();
        let input_ports = port_ids(path, el, "input")?;
        let output_ports = port_ids(path, el, "output")?;
        {
            let mut seen = HashSet::new();
            for p in input_ports.iter().chain(output_ports.iter()) {
                if !seen.insert(*p) {
                    return Err(layer_err(path, el, format!("port id {p} is used twice")));
                }
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
                .attrs()
                .map(|(k, v)| (k.to_string(), Attr::String(v.to_string())))
                .collect();
        }
        if let Some(out) = el.child("output") {
            for p in out.elements().filter(|e| e.name() == "port") {
                node.outputs.push(output_value(path, el, p)?);
            }
        }
        let mut const_range = None;
        if op_type == "Const" {
            let spec = const_spec(path, el)?;
            let bytes = check_range(path, &self.bin_path, el, bin, spec.offset, spec.size)?;
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
        let b0 = self.body_consts.len();
        for l in el
            .descendants()
            .filter(|l| l.name() == "layer" && l.attr("type") == Some("Const"))
        {
            let spec = const_spec(path, l)?;
            check_range(path, &self.bin_path, l, bin, spec.offset, spec.size)?;
            self.body_consts.push((spec.offset, spec.size));
        }
        // The `<data>` tags whose offset follows the compaction: this layer's own, and those of
        // body layers not inside a `<data>`.
        let t0 = self.offset_tags.len();
        let mut todo = vec![el];
        while let Some(e) = todo.pop() {
            if e.name() == "layer" && e.attr("type") == Some("Const") {
                if let Some(d) = e.child("data") {
                    if let Some(offset) = d.attr("offset").and_then(|v| v.trim().parse().ok()) {
                        self.offset_tags.push(OffsetTag {
                            tag: d.tag(),
                            offset,
                        });
                    }
                }
            }
            todo.extend(e.elements().filter(|c| c.name() != "data"));
        }
        self.graph.reserve_name(&node.name);
        for v in &node.outputs {
            self.graph.reserve_name(&v.name);
        }
        let ix = self.graph.add_node(node);
        if self.by_id.insert(id, (i, ix)).is_some() {
            return Err(layer_err(path, el, format!("layer id {id} is used twice")));
        }
        self.records.push(LayerRecord {
            id,
            input_ports,
            output_ports,
            const_range,
        });
        self.layer_srcs.push(LayerSrc {
            span: el.span(),
            gap,
            offset_tags: t0..self.offset_tags.len(),
            body_consts: b0..self.body_consts.len(),
        });
        Ok(())
    }

    fn edge(&mut self, e: El<'_, 's>, gap: usize) -> Result<()> {
        if e.name() != "edge" {
            return Ok(());
        }
        let ends = ["from-layer", "from-port", "to-layer", "to-port"].map(|k| parse_int(e, k));
        match ends {
            [Some(a), Some(b), Some(c), Some(d)] => self.edges.push(EdgeSrc {
                span: e.span(),
                gap,
                ends: [a, b, c, d],
            }),
            _ => {
                if self.bad_edge.is_none() {
                    self.bad_edge = Some((self.edges.len(), e.span()));
                }
            }
        }
        Ok(())
    }
}

/// `source` as text (it was checked to be UTF-8 when loading).
fn text_of<'s>(path: &Path, source: &'s [u8]) -> Result<&'s str> {
    std::str::from_utf8(source)
        .map_err(|e| fmt_err(path, format!("not UTF-8 text ({e}): not OpenVINO IR")))
}

/// Parses the element at `span` of `source` on its own: the text of the element and its tree
/// (spans relative to that text).
fn materialize<'s>(
    path: &Path,
    source: &'s [u8],
    span: Range<usize>,
) -> Result<(&'s str, Element)> {
    let text = source
        .get(span)
        .ok_or_else(|| fmt_err(path, "element range outside the file"))?;
    let text = text_of(path, text)?;
    let doc = Document::parse(text).map_err(|m| fmt_err(path, m))?;
    Ok((text, doc.root))
}

impl OvModel {
    /// Loads `path` (the `.xml`; the `.bin` beside it, memory-mapped).
    pub fn load(path: &Path) -> Result<OvModel> {
        let source = map_file(path)?;
        let bin_path = bin_path_for(path);
        let source_file = FileId::of(path);
        let (bin, bin_file) = if bin_path.is_file() {
            (Some(map_file_sparse(&bin_path)?), FileId::of(&bin_path))
        } else {
            (None, None)
        };
        let mut m = Self::from_bytes(path, source, bin)?;
        m.bin_file = bin_file;
        m.source_file = source_file;
        Ok(m)
    }

    /// Builds a model from `.xml` text and `.bin` bytes already in memory (`path` names the
    /// `.xml` in messages; the `.bin` is `<stem>.bin` beside it).
    pub fn from_parts(path: &Path, source: String, bin: Option<Bytes>) -> Result<OvModel> {
        Self::from_bytes(path, Bytes::from(source), bin)
    }

    fn from_bytes(path: &Path, source: Bytes, bin: Option<Bytes>) -> Result<OvModel> {
        let text = text_of(path, &source)?;
        let mut loader = Loader {
            path,
            bin_path: bin_path_for(path),
            bin: bin.as_ref(),
            version: 0,
            graph: Graph::new(),
            records: Vec::new(),
            by_id: HashMap::new(),
            layer_srcs: Vec::new(),
            offset_tags: Vec::new(),
            body_consts: Vec::new(),
            edges: Vec::new(),
            bad_edge: None,
        };
        let outline = xml::scan(text, &mut loader).map_err(|e| match e {
            xml::ScanError::Xml(m) => fmt_err(path, m),
            xml::ScanError::Sink(e) => e,
        })?;
        if outline.layers.is_none() {
            return Err(fmt_err(path, "<net> has no <layers>: not OpenVINO IR"));
        }
        let Loader {
            version,
            mut graph,
            records,
            by_id,
            layer_srcs,
            offset_tags,
            body_consts,
            edges: edge_srcs,
            bad_edge: bad,
            ..
        } = loader;
        for (k, e) in edge_srcs.iter().enumerate() {
            if let Some((at, span)) = &bad {
                if *at == k {
                    return Err(bad_edge(path, &source, span.clone()));
                }
            }
            let (from, to) = resolve_edge(path, &source, e, &by_id, &records, &layer_srcs)?;
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
        if let Some((_, span)) = bad {
            return Err(bad_edge(path, &source, span));
        }
        drop(by_id);
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
            outline,
            bin,
            bin_file: None,
            source_file: None,
            layers: records,
            layer_srcs,
            offset_tags,
            body_consts,
            edge_srcs,
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
        let span = self.layer_srcs.get(i)?.span.clone();
        let (_, layer) = materialize(&self.path, &self.source, span).ok()?;
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

    /// What would be written: the `.xml` as pieces and the `.bin` as parts.
    fn plan(&self) -> Result<(Vec<Piece>, Vec<BinPart>)> {
        let bin = self.bin.clone().unwrap_or_default();
        if self.is_untouched() {
            let whole = vec![BinPart::Original(0..bin.len())];
            return Ok((vec![Piece::Source(0..self.source.len())], whole));
        }
        let mut w = Writer::new(self, bin);
        let pieces = w.rebuild()?;
        Ok((pieces, w.bin_parts()))
    }

    /// The `.xml` text and `.bin` parts as they would be written.
    pub fn to_parts(&self) -> Result<(String, Vec<Bytes>)> {
        let (pieces, parts) = self.plan()?;
        let mut xml = Vec::new();
        for p in &pieces {
            xml.extend_from_slice(p.bytes(&self.source));
        }
        let xml = String::from_utf8(xml)
            .map_err(|e| fmt_err(&self.path, format!("written text is not UTF-8 ({e})")))?;
        let bin = self.bin.clone().unwrap_or_default();
        let parts = parts
            .into_iter()
            .map(|p| match p {
                BinPart::Original(r) => bin.slice(r),
                BinPart::New(b) => b,
            })
            .collect();
        Ok((xml, parts))
    }

    /// Saves to `path` (the `.xml`) and `<stem>.bin` beside it, each atomically; the `.bin` is
    /// written first, so a failure never leaves a new `.xml` pointing into an old `.bin`.
    /// Large unchanged ranges of either file are copied from the file read, when it is still
    /// the mapped one, without passing through this process's memory.
    pub fn save(&self, path: &Path) -> Result<()> {
        let (pieces, parts) = self.plan()?;
        let bin = self.bin.clone().unwrap_or_default();
        let bin_out = parts.iter().map(|p| match p {
            BinPart::Original(r) => Out::Original(r.clone()),
            BinPart::New(b) => Out::New(b.as_ref()),
        });
        write_copying(&bin_path_for(path), bin_out, &bin, self.bin_file.as_ref())?;
        let xml_out = pieces.iter().map(|p| match p {
            Piece::Source(r) => Out::Original(r.clone()),
            Piece::Text(t) => Out::New(t.as_bytes()),
        });
        write_copying(path, xml_out, &self.source, self.source_file.as_ref())
    }
}

/// A part of a written file.
enum Out<'a> {
    /// A byte range of the file read.
    Original(Range<usize>),
    /// New bytes.
    New(&'a [u8]),
}

/// Ranges at least this long are copied file to file.
const COPY_MIN: usize = 1 << 16;

/// Writes `parts` atomically to `target` (a temporary file beside it, then a rename). Original
/// ranges come from `orig` (the map of the file read), or, for long ones, straight from
/// `orig_file` while it is still that file (`copy_file_range` on Linux).
fn write_copying<'a>(
    target: &Path,
    parts: impl Iterator<Item = Out<'a>>,
    orig: &Bytes,
    orig_file: Option<&FileId>,
) -> Result<()> {
    let io = |source| Error::Io {
        path: target.to_path_buf(),
        source,
    };
    let mut tmp = crate::formats::temp_beside(target)?;
    let mut from = orig_file.and_then(|p| same_file(p, orig));
    {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, tmp.as_file_mut());
        for p in parts {
            match p {
                Out::Original(r) => {
                    if r.len() >= COPY_MIN {
                        if let Some(f) = from.as_mut() {
                            w.flush().map_err(io)?;
                            if copy_range(f, w.get_mut(), r.clone()).is_ok() {
                                continue;
                            }
                            // Use the map from here on.
                            from = None;
                        }
                    }
                    w.write_all(orig.get(r).unwrap_or_default()).map_err(io)?;
                }
                Out::New(b) => w.write_all(b).map_err(io)?,
            }
        }
        w.flush().map_err(io)?;
    }
    tmp.persist(target).map_err(|e| io(e.error))?;
    Ok(())
}

/// Copies bytes `r` of `from` to the end of `out` (`copy_file_range` on Linux).
fn copy_range(
    from: &mut std::fs::File,
    out: &mut std::fs::File,
    r: Range<usize>,
) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let at = out.stream_position()?;
    let len = (r.end - r.start) as u64;
    let res = (|| {
        from.seek(SeekFrom::Start(r.start as u64))?;
        let n = std::io::copy(&mut (&*from).take(len), out)?;
        if n == len {
            Ok(())
        } else {
            Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the .bin is shorter than when it was read",
            ))
        }
    })();
    if res.is_err() {
        // Undo a partial copy.
        out.set_len(at)?;
        out.seek(SeekFrom::Start(at))?;
    }
    res
}

/// Which file a map was made of.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileId {
    path: PathBuf,
    /// Device and inode (Unix).
    node: Option<(u64, u64)>,
}

impl FileId {
    fn of(path: &Path) -> Option<FileId> {
        let meta = std::fs::metadata(path).ok()?;
        Some(FileId {
            path: path.to_path_buf(),
            node: node_of(&meta),
        })
    }
}

#[cfg(unix)]
fn node_of(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn node_of(_: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

/// The file `id` opened, when it is still the file `map` maps: same file (device and inode)
/// and length. Elsewhere than on Unix, never (the map is written instead).
fn same_file(id: &FileId, map: &Bytes) -> Option<std::fs::File> {
    let f = std::fs::File::open(&id.path).ok()?;
    let meta = f.metadata().ok()?;
    if meta.len() != map.len() as u64 || !meta.is_file() {
        return None;
    }
    match (id.node, node_of(&meta)) {
        (Some(a), Some(b)) if a == b => Some(f),
        _ => None,
    }
}

/// A part of the written `.xml`.
#[derive(Debug, Clone)]
enum Piece {
    /// A byte range of the source.
    Source(Range<usize>),
    /// New text.
    Text(String),
}

impl Piece {
    fn bytes<'a>(&'a self, source: &'a [u8]) -> &'a [u8] {
        match self {
            Piece::Source(r) => source.get(r.clone()).unwrap_or_default(),
            Piece::Text(t) => t.as_bytes(),
        }
    }
}

/// A part of the written `.bin`.
#[derive(Debug, Clone)]
enum BinPart {
    /// A byte range of the original `.bin`.
    Original(Range<usize>),
    /// New bytes.
    New(Bytes),
}

type PortRef = (NodeIndex, usize, i64);

/// The error for an `<edge>` whose attributes are not all integers.
fn bad_edge(path: &Path, source: &[u8], span: Range<usize>) -> Error {
    let e = match materialize(path, source, span) {
        Ok((_, e)) => e,
        Err(e) => return e,
    };
    let name = ["from-layer", "from-port", "to-layer", "to-port"]
        .into_iter()
        .find(|k| {
            e.attr(k)
                .and_then(|v| v.trim().parse::<i64>().ok())
                .is_none()
        })
        .unwrap_or("from-layer");
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
}

/// The error for layer `i` (parsed again from the source to name it).
fn layer_i_err(path: &Path, source: &[u8], srcs: &[LayerSrc], i: usize, msg: String) -> Error {
    let Some(s) = srcs.get(i) else {
        return fmt_err(path, msg);
    };
    match materialize(path, source, s.span.clone()) {
        Ok((_, el)) => owned_layer_err(path, &el, msg),
        Err(e) => e,
    }
}

fn resolve_edge(
    path: &Path,
    source: &[u8],
    e: &EdgeSrc,
    by_id: &HashMap<i64, (usize, NodeIndex)>,
    records: &[LayerRecord],
    srcs: &[LayerSrc],
) -> Result<(PortRef, PortRef)> {
    let [fl, fp, tl, tp] = e.ends;
    let find = |layer: i64, other: i64| -> Result<(usize, NodeIndex)> {
        by_id.get(&layer).copied().ok_or_else(|| {
            let msg = format!(
                "edge from-layer {fl} port {fp} to-layer {tl} port {tp}: no layer has id {layer}"
            );
            match by_id.get(&other) {
                Some(&(i, _)) => layer_i_err(path, source, srcs, i, msg),
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
            layer_i_err(
                path,
                source,
                srcs,
                fi,
                format!("edge to layer {tl}: layer {fl} has no output port {fp}"),
            )
        })?;
    let dst = records[ti]
        .input_ports
        .iter()
        .position(|&p| p == tp)
        .ok_or_else(|| {
            layer_i_err(
                path,
                source,
                srcs,
                ti,
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
        let unit = m.outline.unit.clone().unwrap_or_else(|| "\t".to_string());
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
    fn bin_parts(self) -> Vec<BinPart> {
        let mut parts = Vec::with_capacity(self.compaction.kept.len() + self.new_parts.len());
        if self.compaction.is_whole(self.bin.len() as u64) {
            parts.push(BinPart::Original(0..self.bin.len()));
        } else {
            for &(start, end, _) in &self.compaction.kept {
                // Kept ranges were checked against the `.bin` when loading.
                parts.push(BinPart::Original(start as usize..end as usize));
            }
        }
        parts.extend(self.new_parts.into_iter().map(BinPart::New));
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
    /// keep their tags and unchanged children as read (`src` = the text `el` was parsed from).
    fn remap_consts(&self, el: &mut Element, include_self: bool, src: &str) -> bool {
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
                if e.name != "data" && self.remap_consts(e, true, src) {
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

    fn rebuild(&mut self) -> Result<Vec<Piece>> {
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
                if let Some(s) = m.layer_srcs.get(i) {
                    refs.extend_from_slice(
                        m.body_consts.get(s.body_consts.clone()).unwrap_or_default(),
                    );
                }
            }
        }
        self.compaction = Compaction::new(refs);
        self.bin_len = self.compaction.len;

        let source: &[u8] = &m.source;
        let Some(layers_c) = m.outline.layers.clone() else {
            return Err(fmt_err(&m.path, "<net> has no <layers>"));
        };
        let mut splices: Vec<(Range<usize>, String)> = Vec::new();

        // <layers>
        for (i, ls) in m.layer_srcs.iter().enumerate() {
            match by_layer.get(&i) {
                Some(&ix) if needs_rebuild(ix) => {
                    let (sub, base) = materialize(&m.path, source, ls.span.clone())?;
                    let mut rebuilt = self.layer_element(ix, Some(&base), &placed, 2)?;
                    // Its own `<data>` is set already; its body's constants are not.
                    for c in rebuilt.children.iter_mut() {
                        if let XmlNode::Element(e) = c {
                            if e.name != "data" && self.remap_consts(e, true, sub) {
                                rebuilt.span = None;
                            }
                        }
                    }
                    let mut text = String::new();
                    rebuilt.write(sub, &mut text);
                    splices.push((ls.span.clone(), text));
                }
                Some(_) => {
                    let tags = m
                        .offset_tags
                        .get(ls.offset_tags.clone())
                        .unwrap_or_default();
                    let mut patched = Vec::new();
                    let mut whole = false;
                    for t in tags {
                        let new = self.compaction.map(t.offset);
                        if new == t.offset {
                            continue;
                        }
                        let text = source
                            .get(t.tag.clone())
                            .and_then(|b| std::str::from_utf8(b).ok());
                        match text.and_then(|tag| xml::patch_attr(tag, "offset", &new.to_string()))
                        {
                            Some(p) => patched.push((t.tag.clone(), p)),
                            None => whole = true,
                        }
                    }
                    if whole {
                        // A tag the patcher cannot handle: rebuild the layer's tree instead.
                        let (sub, mut el) = materialize(&m.path, source, ls.span.clone())?;
                        self.remap_consts(&mut el, true, sub);
                        let mut text = String::new();
                        el.write(sub, &mut text);
                        splices.push((ls.span.clone(), text));
                    } else {
                        splices.extend(patched);
                    }
                }
                None => splices.push((drop_range(source, ls.gap, &ls.span), String::new())),
            }
        }
        let mut new_nodes: Vec<NodeIndex> = order
            .iter()
            .copied()
            .filter(|ix| !original_of.contains_key(ix))
            .collect();
        new_nodes.sort_by_key(|ix| topo_pos.get(ix).copied().unwrap_or(usize::MAX));
        let mut new_layers = Vec::with_capacity(new_nodes.len());
        for ix in new_nodes {
            new_layers.push(self.layer_element(ix, None, &placed, 2)?);
        }
        if let Some(s) = append_splice(&m.path, source, &layers_c, new_layers, 2, &self.unit)? {
            splices.push(s);
        }

        // <edges>: keep the original edge elements whose graph edge still exists.
        let mut covered: HashSet<EdgeIndex> = HashSet::new();
        let id_to_layer: HashMap<i64, usize> = m
            .layers
            .iter()
            .enumerate()
            .map(|(i, r)| (r.id, i))
            .collect();
        let find_edge =
            |[fl, fp, tl, tp]: [i64; 4], covered: &HashSet<EdgeIndex>| -> Option<EdgeIndex> {
                let fl = id_to_layer.get(&fl)?;
                let tl = id_to_layer.get(&tl)?;
                let src = *by_layer.get(fl)?;
                let dst = *by_layer.get(tl)?;
                let sp = placed.get(&src)?.outputs.iter().position(|&p| p == fp)?;
                let dp = placed.get(&dst)?.inputs.iter().position(|&p| p == tp)?;
                // Through the inputs of `dst` (a few), not the outputs of `src` (maybe many).
                g.g.edges_directed(dst, Direction::Incoming)
                    .find(|x| {
                        x.source() == src
                            && x.weight().src_port == sp
                            && x.weight().dst_port == dp
                            && !covered.contains(&x.id())
                    })
                    .map(|x| x.id())
            };
        for e in &m.edge_srcs {
            match find_edge(e.ends, &covered) {
                Some(id) => {
                    covered.insert(id);
                }
                None => splices.push((drop_range(source, e.gap, &e.span), String::new())),
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
        let mut edge_els = Vec::with_capacity(new_edges.len());
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
            edge_els.push(el);
        }
        match &m.outline.edges {
            Some(c) => {
                if let Some(s) = append_splice(&m.path, source, c, edge_els, 2, &self.unit)? {
                    splices.push(s);
                }
            }
            None => {
                // A graph without edges may omit <edges>: add one after <layers>.
                let mut edges = Element::new("edges");
                for el in edge_els {
                    append_child(&mut edges, el, 2, &self.unit);
                }
                let mut text = format!("\n{}", self.unit);
                edges.write("", &mut text);
                let at = layers_c.span.end;
                splices.push((at..at, text));
            }
        }

        // The source with the splices applied.
        splices.sort_by_key(|(r, _)| r.start);
        let mut pieces = Vec::with_capacity(splices.len() * 2 + 1);
        let mut at = 0usize;
        for (r, text) in splices {
            if r.start < at {
                return Err(fmt_err(&m.path, "overlapping edits of the .xml (a bug)"));
            }
            if r.start > at {
                pieces.push(Piece::Source(at..r.start));
            }
            if !text.is_empty() {
                pieces.push(Piece::Text(text));
            }
            at = r.end;
        }
        if at < source.len() {
            pieces.push(Piece::Source(at..source.len()));
        }
        Ok(pieces)
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
                el.children.insert(0, XmlNode::Element(d));
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
            ..e.clone()
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
                    XmlNode::Element(de)
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
        ge.children.push(XmlNode::Element(pe));
    }
    match gi {
        Some(i) => el.children[i] = XmlNode::Element(ge),
        None => {
            let at = el
                .child_index(after)
                .or_else(|| el.child_index("data"))
                .map(|i| i + 1)
                .unwrap_or(0);
            el.children.insert(at, XmlNode::Element(ge));
        }
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
    parent.children.insert(at + 1, XmlNode::Element(el));
}

/// The source range to delete for a dropped element at `span`: the element, and the text node
/// before it (starting at `gap`) when that is whitespace only.
fn drop_range(source: &[u8], gap: usize, span: &Range<usize>) -> Range<usize> {
    let ws = source
        .get(gap..span.start)
        .and_then(|b| std::str::from_utf8(b).ok())
        .is_some_and(|t| !t.is_empty() && t.trim().is_empty());
    if ws {
        gap..span.end
    } else {
        span.clone()
    }
}

/// The edit appending `els` as the last element children of container `c` (at nesting
/// `depth`), each on its own line before the closing whitespace (added when missing).
fn append_splice(
    path: &Path,
    source: &[u8],
    c: &xml::Container,
    els: Vec<Element>,
    depth: usize,
    unit: &str,
) -> Result<Option<(Range<usize>, String)>> {
    if els.is_empty() {
        return Ok(None);
    }
    if c.empty {
        // `<name ... />`: rebuilt with its attributes and the new children.
        let (sub, mut parent) = materialize(path, source, c.span.clone())?;
        parent.span = None;
        for el in els {
            append_child(&mut parent, el, depth, unit);
        }
        let mut text = String::new();
        parent.write(sub, &mut text);
        return Ok(Some((c.span.clone(), text)));
    }
    let ws = source
        .get(c.trailing..c.end_tag)
        .and_then(|b| std::str::from_utf8(b).ok())
        .is_some_and(|t| !t.is_empty() && t.trim().is_empty());
    let inner = format!("\n{}", unit.repeat(depth));
    let mut text = String::new();
    for mut el in els {
        el.reindent(depth, unit);
        text.push_str(&inner);
        el.write("", &mut text);
    }
    let at = if ws {
        c.trailing
    } else {
        text.push('\n');
        text.push_str(&unit.repeat(depth.saturating_sub(1)));
        c.end_tag
    };
    Ok(Some((at..at, text)))
}
