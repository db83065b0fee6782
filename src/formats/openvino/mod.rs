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
//! (the rest of its text stays as read). A `.bin` of 64 MB or more of which at most 1/256 is no
//! longer referenced keeps its layout instead: written whole, new constants after it, no offset
//! rewritten; its copy can then start before the model is loaded ([`BinCopy`]).
//!
//! A changed model is written as the source text with splices: a rebuilt layer is parsed on
//! its own into an [`xml::Element`] tree (so the serialization rules of [`xml`] apply to it),
//! everything else is copied as byte ranges of the source. An unchanged `.bin` range is copied
//! from the file when the `.bin` came from a file (see the private module `formats::copy`), else from
//! the map.

mod bin_copy;
mod read;
pub mod subgraph;
mod write;
pub mod xml;

pub use bin_copy::BinCopy;
use write::{stage_copying, stage_copying_releasing, write_parts, write_parts_releasing, Out};

use std::collections::HashMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use petgraph::stable_graph::{EdgeIndex, NodeIndex};
use petgraph::visit::{EdgeRef, IntoEdgeReferences};
use petgraph::Direction;

use crate::error::{Error, Result};
use crate::formats::fs::{map_file, map_file_sparse};
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
    /// Layer ids to positions in `layers` (and the node each layer was loaded as).
    layer_ids: read::LayerIds,
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
    /// Bodies a pass changed: the top-level layer (index in document order), the body element
    /// (`body`, `then_body`, `else_body`) and the body as changed, written in place of the one
    /// read.
    pub(crate) body_overrides: Vec<(usize, String, OvModel)>,
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
        if lo > i64::MAX as u64 || hi.is_some_and(|h| h > i64::MAX as u64) {
            return None;
        }
        // OpenVINO's unbounded upper end is INT64_MAX (`Dimension(0, INT64_MAX)` is `?`).
        let hi = hi.filter(|&h| h != i64::MAX as u64);
        if let Some(h) = hi {
            if h < lo {
                return None;
            }
        }
        return Some(DeclaredDim::Interval(lo, hi));
    }
    // A dim above i64::MAX (OpenVINO's own limit; u64::MAX has been seen in broken files) is
    // refused.
    t.parse::<u64>()
        .ok()
        .filter(|&v| v <= i64::MAX as u64)
        .map(DeclaredDim::Known)
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
    /// Gives back this process's pages of the `.bin` map when it is the one `load` made
    /// (see [`crate::formats::Model::release_input_pages`]).
    pub(crate) fn release_bin_pages(&self) {
        if let (Some(_), Some(bin)) = (&self.bin_file, &self.bin) {
            // SAFETY: `bin_file` is set only by `load`, with `bin` the whole read-only shared
            // map of the `.bin`.
            unsafe { crate::formats::fs::release_resident_range(bin) };
        }
    }
}

impl OvModel {
    /// Loads `path` (the `.xml`; the `.bin` beside it, memory-mapped).
    pub fn load(path: &Path) -> Result<OvModel> {
        let source = map_file(path)?;
        let bin_path = bin_path_for(path);
        let source_file = FileId::of(path);
        // A `.bin` that exists in any form must be a regular file inside the model's directory
        // after resolving links (a FIFO would block, a link could read any file).
        let (bin, bin_file) = if std::fs::symlink_metadata(&bin_path).is_ok() {
            let dir = path.parent().unwrap_or(Path::new("."));
            let alt = crate::formats::fs::resolved_model_dir(path);
            let real = crate::formats::fs::resolve_inside(&bin_path, dir, alt.as_deref()).map_err(
                |message| Error::Refused {
                    path: path.to_path_buf(),
                    message,
                },
            )?;
            (Some(map_file_sparse(&real)?), FileId::of(&real))
        } else {
            (None, None)
        };
        let built = Self::from_bytes(path, source.clone(), bin.clone());
        // A file that shrank while it was read: that, not what was read of it, is the error.
        crate::formats::mapped::check(&source)?;
        if let Some(b) = &bin {
            crate::formats::mapped::check(b)?;
        }
        let mut m = built?;
        m.bin_file = bin_file;
        m.source_file = source_file;
        Ok(m)
    }

    /// Builds a model from `.xml` text and `.bin` bytes already in memory (`path` names the
    /// `.xml` in messages; the `.bin` is `<stem>.bin` beside it).
    pub fn from_parts(path: &Path, source: String, bin: Option<Bytes>) -> Result<OvModel> {
        Self::from_bytes(path, Bytes::from(source), bin)
    }

    /// The declared shape of input `port` of `node` (its `<input><port>` dims as read), for
    /// layers loaded from the file.
    pub fn input_port_shape(&self, node: NodeIndex, port: usize) -> Option<Vec<DeclaredDim>> {
        let Origin::OvLayer(i) = self.graph.g.node_weight(node)?.origin else {
            return None;
        };
        let i = i as usize;
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
            && self.body_overrides.is_empty()
            && self.graph.g.node_weights().all(|n| {
                !n.dirty
                    && matches!(n.origin, Origin::OvLayer(_))
                    && n.outputs.iter().all(|v| !v.ty_changed)
            })
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
                // A lazy constant's stand-in is given its bytes.
                BinPart::New(b) => crate::ir::Lazy::behind(&b).map_or(b, |l| l.bytes().clone()),
            })
            .collect();
        Ok((xml, parts))
    }

    /// Saves to `path` (the `.xml`) and `<stem>.bin` beside it. Both are checked against the
    /// files read first (see [`crate::formats::output`]), written to temporary names, and
    /// renamed into place only when both are complete, the `.bin` first: a failure never
    /// leaves a new `.xml` pointing into an old `.bin`, nor any new file.
    /// Large unchanged ranges of either file are copied from the file read, when it is still
    /// the mapped one, without passing through this process's memory.
    pub fn save(&self, path: &Path) -> Result<()> {
        self.save_with(path, None)
    }

    /// [`OvModel::save`], taking the `.bin` from `copy` when it can ([`BinCopy`]: a copy of
    /// the `.bin` started before the model was loaded). The files written are the same.
    pub fn save_with(&self, path: &Path, copy: Option<BinCopy>) -> Result<()> {
        self.save_also(path, copy, &[])
    }

    /// [`OvModel::save_with`], with `also` (files the caller writes after the save, such as
    /// the `--report` file) checked in the same output plan: refused, before anything is
    /// written, when one of them is a file this save reads or writes.
    pub fn save_also(&self, path: &Path, copy: Option<BinCopy>, also: &[&Path]) -> Result<()> {
        let bin_target = bin_path_for(path);
        let mut plan = crate::formats::output::OutputPlan::new();
        plan.input(&self.path);
        if let Some(b) = &self.bin_file {
            plan.input(&b.path);
        }
        plan.model(path, Some(&self.path));
        plan.data(
            &bin_target,
            self.bin_file.as_ref().map(|b| b.path.as_path()),
        );
        if std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
            // The `.bin` of the model being replaced.
            plan.replaceable(&bin_target);
        }
        for a in also {
            plan.other(a);
        }
        plan.check()?;
        let (pieces, parts) = self.plan()?;
        let bin = self.bin.clone().unwrap_or_default();
        let bin_out = parts.iter().map(|p| match p {
            BinPart::Original(r) => Out::Original(r.clone()),
            BinPart::New(b) => Out::New(b.as_ref()),
        });
        // The original `.bin` whole, then new bytes: what a copy started early holds already.
        let kept_whole = match parts.split_first() {
            Some((BinPart::Original(r), rest)) => {
                r.start == 0
                    && r.end == bin.len()
                    && rest.iter().all(|p| matches!(p, BinPart::New(_)))
            }
            _ => false,
        };
        let early = copy.filter(|_| kept_whole).and_then(|c| {
            let source = self.bin_file.as_ref().and_then(|f| f.node);
            c.take(&bin_target, source, bin.len() as u64)
        });
        // The pages of the `.bin` map that lazy constants are produced from are given back
        // behind the writes when the map is the one `load` made (`bin_file` is set only
        // there, with it).
        let releasable = self.bin_file.is_some();
        let bin_tmp = match early {
            Some(tmp) if releasable => {
                // SAFETY: `bin` is the whole read-only map of the `.bin` `load` made.
                unsafe { write_parts_releasing(&tmp, bin_out.skip(1), &bin, None)? };
                tmp
            }
            Some(tmp) => {
                write_parts(&tmp, bin_out.skip(1), &bin, None)?;
                tmp
            }
            // SAFETY: as above.
            None if releasable => unsafe {
                stage_copying_releasing(&bin_target, bin_out, &bin, self.bin_file.as_ref())?
            },
            None => stage_copying(&bin_target, bin_out, &bin, self.bin_file.as_ref())?,
        };
        let xml_out = pieces.iter().map(|p| match p {
            Piece::Source(r) => Out::Original(r.clone()),
            Piece::Text(t) => Out::New(t.as_bytes()),
        });
        let xml_tmp = stage_copying(path, xml_out, &self.source, self.source_file.as_ref())?;
        // Nothing is renamed into place from a file that shrank while it was read.
        self.check_mapped()?;
        crate::formats::output::commit(vec![bin_tmp, xml_tmp])
    }

    /// Fails, naming the file, when the `.xml` or the `.bin` shrank since it was mapped
    /// ([`crate::formats::mapped`]).
    pub fn check_mapped(&self) -> Result<()> {
        crate::formats::mapped::check(&self.source)?;
        if let Some(b) = &self.bin {
            crate::formats::mapped::check(b)?;
        }
        Ok(())
    }
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
    let f = crate::formats::fs::open_regular(&id.path).ok()?;
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
