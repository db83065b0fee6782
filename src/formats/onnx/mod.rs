//! ONNX models: decoding from a memory map without copying tensor data, the graph IR built from
//! it, and lossless saving.
//!
//! The [`OnnxModel`] keeps the decoded [`proto::ModelProto`] as the record of everything the IR
//! does not model (metadata, functions, doc strings...), except the main graph's nodes: each is
//! kept as the bytes it was read from (a slice of the memory map), decoded when the IR is built
//! and again only where a pass changed it or something needs its attributes (subgraph bodies,
//! tensor attributes). Saving an unchanged graph writes the record back as it was; saving a
//! changed graph rebuilds only `graph.node`, `graph.initializer` and `graph.value_info`, copying
//! the bytes of every node no pass touched.

pub mod subgraph;
mod tensor;
pub mod write;

use crate::ir::{FastMap as HashMap, FastSet as HashSet};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use petgraph::stable_graph::NodeIndex;
use prost::Message;

use crate::error::{Error, Result};
use crate::ir::{
    Attr, DType, DeclaredDim, FastMap, Graph, Node, NodeKind, Origin, OutletId, Tensor, ValueType,
    Wire,
};

/// Moved to [`crate::formats::fs`]; re-exported at their former path.
pub use crate::formats::fs::{map_file, map_file_sparse, map_file_with_handle};
pub use tensor::{tensor_from_proto, tensor_to_proto, ExternalFiles};

/// The protobuf types generated from `proto/onnx.proto`.
#[allow(clippy::all, missing_docs)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/onnx.rs"));
}

use proto::{attribute_proto::AttributeType, GraphProto, ModelProto, NodeProto, ValueInfoProto};
use write::{GraphOut, NodeOut, Rec};

/// A loaded ONNX model.
#[derive(Debug, Clone)]
pub struct OnnxModel {
    /// Where it was loaded from.
    pub path: PathBuf,
    /// The decoded file: the record everything not in the IR is written back from. Its main
    /// graph has no `node` and `initializer` entries: they are in `records`
    /// ([`OnnxModel::to_proto`] gives the whole model).
    pub(crate) proto: ModelProto,
    /// The main graph's nodes and initializers as read, encoded.
    records: Records,
    /// True when an initializer keeps its data in an external file.
    uses_external: bool,
    /// Indices in `records.inits` of the initializers a graph input of the same name shadows
    /// (kept in the record only, not in the IR), as the load found them; `None` where the
    /// graph was not built from `records` by the loader (a subgraph body), and the save finds
    /// them by name.
    shadowed_inits: Option<Vec<u32>>,
    /// Indices in `nodes` of the nodes that hold subgraphs (graph-valued attributes).
    holders: Vec<usize>,
    /// The main graph as IR.
    pub graph: Graph,
    /// Node count right after loading (to detect an untouched graph).
    loaded_nodes: usize,
    /// The mapped files (model and external data) tensor bytes point into: saving copies
    /// tensor data from them file to file.
    sources: Vec<write::Source>,
    /// `sources[0].map` is the whole read-only map of the model file ([`OnnxModel::load`]),
    /// whose pages a save may give back as it moves past them.
    releasable_map: bool,
    /// The files read: the model and its external data files (resolved).
    inputs: Vec<PathBuf>,
    /// Subgraph bodies a pass changed, by the index of their node in `proto`'s graph: the
    /// attribute (`then_branch`, `body`, `name[i]` for the `i`-th graph of a list) and the
    /// body to write instead of the one read.
    pub(crate) body_overrides: BodyOverrides,
}

/// The node and initializer records of a graph as read, encoded: `graph.node[i]` is `nodes[i]`,
/// `graph.initializer[i]` is `inits[i]`. Each is a slice of the mapped file (nothing copied).
#[derive(Debug, Clone, Default)]
pub(crate) struct Records {
    nodes: Vec<Bytes>,
    inits: Vec<Bytes>,
}

impl Records {
    /// The node and initializer lists of a decoded graph `g` (taken out of it), encoded.
    fn take_from(g: &mut GraphProto) -> Records {
        Records {
            nodes: encode_all(std::mem::take(&mut g.node)),
            inits: encode_all(std::mem::take(&mut g.initializer)),
        }
    }
}

/// Rewritten subgraph bodies: node index in the graph record, then (attribute, body).
pub(crate) type BodyOverrides = std::collections::BTreeMap<usize, Vec<(String, GraphProto)>>;

fn fmt_err(path: &Path, message: impl Into<String>) -> Error {
    Error::Format {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

fn node_err(path: &Path, node: &NodeProto, index: usize, message: impl Into<String>) -> Error {
    Error::Node {
        path: path.to_path_buf(),
        node: onnx_node_display_name(node, index),
        op: node.op_type().to_string(),
        message: message.into(),
    }
}

/// The name we use for a node in messages: its name, else its first output, else its index.
pub fn onnx_node_display_name(node: &NodeProto, index: usize) -> String {
    if !node.name().is_empty() {
        node.name().to_string()
    } else if let Some(o) = node.output.first().filter(|o| !o.is_empty()) {
        format!("#{index} (output '{o}')")
    } else {
        format!("#{index}")
    }
}

/// The opset version the model imports for `domain` (`""` and `"ai.onnx"` are the same).
pub fn opset_version(proto: &ModelProto, domain: &str) -> Option<i64> {
    let norm = |d: &str| {
        if d == "ai.onnx" {
            String::new()
        } else {
            d.to_string()
        }
    };
    let want = norm(domain);
    proto
        .opset_import
        .iter()
        .find(|o| norm(o.domain()) == want)
        .map(|o| o.version())
}

impl OnnxModel {
    /// Loads `path`, memory-mapping it so tensor bytes stay in the map.
    pub fn load(path: &Path) -> Result<OnnxModel> {
        let (bytes, file) = map_file_with_handle(path)?;
        let decoded = Self::decode(path, bytes.clone(), file);
        // A file that shrank while it was read: that, not what was read of it, is the error.
        crate::formats::mapped::check(&bytes)?;
        let mut model = decoded?;
        model.check_mapped()?;
        // Loading read every record of the file; from here on only unchanged records are
        // read again, when they are written. Their pages stay in the page cache, out of
        // this process's resident set (wide_100k.onnx: peak RSS 275 -> 253 MB).
        if !bytes.is_empty() {
            // SAFETY: `bytes` is the whole read-only shared map `map_file_with_handle` made.
            unsafe { crate::formats::fs::release_resident_range(&bytes) };
            model.releasable_map = true;
        }
        Ok(model)
    }

    /// Decodes a model already in memory; `path` is used for messages and external data.
    pub fn from_bytes(path: &Path, bytes: Bytes) -> Result<OnnxModel> {
        Self::decode(path, bytes, None)
    }

    fn decode(path: &Path, bytes: Bytes, file: Option<std::fs::File>) -> Result<OnnxModel> {
        let mut sources = vec![write::Source {
            map: bytes.clone(),
            file: file.map(std::sync::Arc::new),
        }];
        let (proto, records) = decode_model(bytes)
            .map_err(|e| fmt_err(path, format!("not a valid ONNX model: {e}")))?;
        let Some(g) = proto.graph.as_ref() else {
            return Err(fmt_err(path, "ONNX model has no graph"));
        };
        let mut ext = ExternalFiles::new(path.parent().unwrap_or(Path::new(".")));
        ext.also_inside(crate::formats::fs::resolved_model_dir(path));
        let built = build_graph(path, g, &records, &mut ext)?;
        let graph = built.graph;
        let loaded_nodes = graph.g.node_count();
        let mut inputs = vec![path.to_path_buf()];
        inputs.extend(ext.paths());
        sources.extend(ext.into_sources());
        Ok(OnnxModel {
            path: path.to_path_buf(),
            proto,
            records,
            uses_external: built.uses_external,
            shadowed_inits: Some(built.shadowed),
            holders: built.holders,
            graph,
            loaded_nodes,
            sources,
            releasable_map: false,
            inputs,
            body_overrides: BodyOverrides::new(),
        })
    }

    /// Fails, naming the file, when the model file or an external data file shrank since it
    /// was mapped ([`crate::formats::mapped`]).
    pub fn check_mapped(&self) -> Result<()> {
        for s in &self.sources {
            crate::formats::mapped::check(&s.map)?;
        }
        Ok(())
    }

    /// The record of the main graph's node `i` (`graph.node[i]` of the file), decoded.
    pub fn node_record(&self, i: usize) -> Option<NodeProto> {
        NodeProto::decode(self.records.nodes.get(i)?.clone()).ok()
    }

    /// The indices of the main graph's nodes that hold subgraphs (`If`, `Loop`, `Scan`...),
    /// ascending.
    pub fn body_holders(&self) -> &[usize] {
        &self.holders
    }

    /// A subgraph body of this model as a model of its own (for running passes in it): the
    /// body's record (with the names it reads from enclosing scopes as extra inputs after its
    /// `formal_inputs`) and its IR, with this model's opsets and files.
    pub(crate) fn body_model(&self, mut proto: GraphProto, graph: Graph) -> OnnxModel {
        let loaded_nodes = graph.g.node_count();
        let holders = proto
            .node
            .iter()
            .enumerate()
            .filter(|(_, n)| holds_bodies(n))
            .map(|(i, _)| i)
            .collect();
        let uses_external = proto.initializer.iter().any(|t| t.data_location == Some(1));
        OnnxModel {
            records: Records::take_from(&mut proto),
            uses_external,
            shadowed_inits: None,
            holders,
            path: self.path.clone(),
            proto: ModelProto {
                ir_version: self.proto.ir_version,
                opset_import: self.proto.opset_import.clone(),
                graph: Some(proto),
                ..ModelProto::default()
            },
            graph,
            loaded_nodes,
            sources: self.sources.clone(),
            releasable_map: false,
            inputs: self.inputs.clone(),
            body_overrides: BodyOverrides::new(),
        }
    }

    /// Drops the capture edges into nodes whose bodies a pass rewrote (see `body_overrides`)
    /// for the names the rewritten bodies no longer read (a folded slice of an outer constant);
    /// returns how many were dropped. `cleanup` can then remove what only they kept.
    pub(crate) fn prune_captures(&mut self) -> usize {
        use petgraph::visit::EdgeRef;
        let mut dropped = Vec::new();
        for ix in self.graph.g.node_indices() {
            let Origin::OnnxNode(i) = self.graph.node(ix).origin else {
                continue;
            };
            let i = i as usize;
            let Some(b) = self.body_overrides.get(&i) else {
                continue;
            };
            let Some(np) = self.node_record(i) else {
                continue;
            };
            let np = with_bodies(np, b);
            let mut free = HashSet::default();
            for a in &np.attribute {
                for sg in a.g.as_deref().into_iter().chain(a.graphs.iter()) {
                    free_names(sg, &mut free);
                }
            }
            for e in self
                .graph
                .g
                .edges_directed(ix, petgraph::Direction::Incoming)
            {
                if e.weight().dst_port != Wire::CAPTURED {
                    continue;
                }
                let name = self
                    .graph
                    .node(e.source())
                    .outputs
                    .get(e.weight().src_port as usize)
                    .map(|v| v.name.as_str());
                if !name.is_some_and(|n| free.contains(n)) {
                    dropped.push(e.id());
                }
            }
        }
        let n = dropped.len();
        self.graph.remove_edges(dropped);
        n
    }

    /// The graph record of a body made by [`OnnxModel::body_model`], as it is to be written
    /// back into its node: rebuilt from the IR, with only the first `formal_inputs` inputs
    /// (the captured names are read from enclosing scopes again).
    pub(crate) fn body_record(&self, formal_inputs: usize) -> Result<GraphProto> {
        let mut g = self.rebuilt_graph()?;
        g.input.truncate(formal_inputs);
        Ok(g)
    }

    /// The default-domain opset version.
    pub fn opset(&self) -> i64 {
        opset_version(&self.proto, "").unwrap_or(1)
    }

    /// Adds `domain` (version `version`) to the model's opset imports if it is not there yet
    /// (passes that create nodes of a custom domain). Returns true when it was added.
    pub fn ensure_opset_import(&mut self, domain: &str, version: i64) -> bool {
        if opset_version(&self.proto, domain).is_some() {
            return false;
        }
        self.proto.opset_import.push(proto::OperatorSetIdProto {
            domain: Some(domain.to_string()),
            version: Some(version),
        });
        true
    }

    /// True when no pass changed the graph.
    pub fn is_untouched(&self) -> bool {
        self.graph.g.node_count() == self.loaded_nodes
            && self.body_overrides.is_empty()
            && self.graph.g.node_weights().all(|n| {
                !n.dirty && n.origin != Origin::New && n.outputs.iter().all(|v| !v.ty_changed)
            })
    }

    /// The model as it would be written: the original record with the graph rebuilt from the IR.
    pub fn to_proto(&self) -> Result<ModelProto> {
        if self.is_untouched() {
            let mut out = self.proto.clone();
            if let Some(g) = out.graph.as_mut() {
                let bad = |e| fmt_err(&self.path, format!("graph record: {e}"));
                g.node = decode_all(&self.records.nodes).map_err(bad)?;
                g.initializer = decode_all(&self.records.inits).map_err(bad)?;
            }
            return Ok(out);
        }
        self.rebuild_proto()
    }

    /// The model with `graph.node`, `graph.initializer` and `graph.value_info` rebuilt from the
    /// IR even when nothing changed (nodes in stable topological order).
    pub fn rebuild_proto(&self) -> Result<ModelProto> {
        let mut out = self.proto.clone();
        out.graph = Some(self.rebuilt_graph()?);
        Ok(out)
    }

    /// The main graph rebuilt from the IR: the original record's fields the IR does not model,
    /// with `node`, `initializer` and `value_info` rebuilt (tensor bytes are shared, not copied).
    fn rebuilt_graph(&self) -> Result<GraphProto> {
        self.rebuilt_parts()?
            .into_proto()
            .map_err(|e| fmt_err(&self.path, format!("node record: {e}")))
    }

    /// The rebuilt graph as parts borrowing every record no pass changed (nothing is cloned
    /// for an untouched node, initializer or value_info entry).
    fn rebuilt_parts(&self) -> Result<GraphOut<'_>> {
        let orig = self
            .proto
            .graph
            .as_ref()
            .ok_or_else(|| fmt_err(&self.path, "no graph"))?;
        rebuild_graph(
            &self.path,
            &self.graph,
            orig,
            &self.records,
            self.shadowed_inits.as_deref(),
            &self.body_overrides,
        )
    }

    /// Saves to `path` atomically; external data files the model references are kept beside it
    /// (copied when `path` is in another directory).
    ///
    /// The protobuf is streamed to the file (the same bytes as `to_proto()?.encode_to_vec()`);
    /// tensor bytes that lie in the input file or an external data file are copied file to file.
    pub fn save(&self, path: &Path) -> Result<()> {
        self.save_also(path, &[])
    }

    /// [`OnnxModel::save`], with `also` (files the caller writes after the save, such as the
    /// `--report` file) checked in the same output plan: refused, before anything is
    /// written, when one of them is a file this save reads or writes.
    pub fn save_also(&self, path: &Path, also: &[&Path]) -> Result<()> {
        let mut graph = match self.proto.graph.as_ref() {
            None => None,
            Some(g) if self.is_untouched() => Some(GraphOut::untouched_encoded(
                g,
                &self.records.nodes,
                &self.records.inits,
            )),
            Some(_) => Some(self.rebuilt_parts()?),
        };
        let mut data = None;
        if let (Some(g), false) = (graph.as_mut(), self.is_untouched()) {
            data = self.externalize(g, path);
        }
        let graph = graph.as_ref();
        let new_location = data
            .as_ref()
            .and_then(|(p, _)| p.file_name())
            .map(|n| n.to_string_lossy().into_owned());
        let copies = external_copies(&self.path, path, graph, new_location.as_deref())?;
        // One output plan: every file this save writes, checked before anything is written.
        let mut plan = crate::formats::output::OutputPlan::new();
        for i in &self.inputs {
            plan.input(i);
        }
        plan.model(path, Some(&self.path));
        if let Some((data_path, _)) = &data {
            plan.data(data_path, None);
        }
        for (_, dst) in &copies {
            plan.data(dst, None);
        }
        for a in also {
            plan.other(a);
        }
        for p in existing_data_files(path) {
            plan.replaceable(&p);
        }
        plan.check()?;
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |source| Error::Io { path: p, source }
        };
        // Every file is written to a temporary name first and renamed into place only when
        // all are complete, the model last: a failure or a signal leaves every existing file
        // as it was and no new one.
        let mut staged = Vec::with_capacity(copies.len() + 2);
        for (src, dst) in &copies {
            let mut from = crate::formats::fs::open_regular(src).map_err(io(src))?;
            let t = crate::formats::output::Staged::new(dst)?;
            // File to file: the data never passes through this process's memory.
            std::io::copy(&mut from, &mut t.as_file()).map_err(io(dst))?;
            staged.push(t);
        }
        if let Some((data_path, chunks)) = &data {
            let t = crate::formats::output::Staged::new(data_path)?;
            write::write_data_file(t.as_file(), chunks, &self.sources).map_err(io(data_path))?;
            staged.push(t);
        }
        let t = crate::formats::output::Staged::new(path)?;
        if self.releasable_map {
            // SAFETY: set only by `load`, for `sources[0]` the read-only map of the model file.
            unsafe { write::write_model_releasing(t.as_file(), &self.proto, graph, &self.sources) }
        } else {
            write::write_model(t.as_file(), &self.proto, graph, &self.sources)
        }
        .map_err(io(path))?;
        staged.push(t);
        // Nothing is renamed into place from a file that shrank while it was read.
        self.check_mapped()?;
        crate::formats::output::commit(staged)
    }

    /// Moves tensor bytes of the rebuilt graph `g` to a new external data file beside `path`
    /// when the model needs one: computed initializers (folded constants) of at least
    /// [`write::EXTERNAL_MIN`] bytes when the input model keeps its weights in external data,
    /// and every initializer of that size when the model would pass the 2 GiB protobuf limit.
    /// Returns the data file's path and its chunks, or `None` when everything stays inline.
    fn externalize(
        &self,
        g: &mut GraphOut<'_>,
        path: &Path,
    ) -> Option<(PathBuf, Vec<(u64, Bytes)>)> {
        let orig = self.proto.graph.as_ref()?;
        let uses_external = self.uses_external;
        // The exact size needs a walk of the whole model; skip it when the input file plus
        // every computed tensor cannot reach the limit (the rebuilt graph is otherwise made
        // of the input's own records).
        let input_len = self
            .sources
            .first()
            .map_or(u64::MAX, |s| s.map.len() as u64);
        let computed: u64 = g
            .initializer
            .iter()
            .map(|t| match t {
                write::Out::Record(r) if r.is_owned() => {
                    r.raw_data.as_ref().map_or(0, |r| r.len() as u64)
                }
                write::Out::Built(b) => b.len() as u64,
                _ => 0,
            })
            .sum();
        let too_big = input_len.saturating_add(computed) > write::PROTO_LIMIT / 2 && {
            let rest = self.proto.encoded_len().saturating_sub(orig.encoded_len());
            (g.encoded_len() + rest) as u64 > write::PROTO_LIMIT
        };
        if !uses_external && !too_big {
            return None;
        }
        let mut taken: Vec<String> = Vec::new();
        tensor::external_locations(orig, &mut taken, true);
        for n in &self.records.nodes {
            write::encoded_node_locations(n, &mut taken, true);
        }
        for t in &self.records.inits {
            write::encoded_tensor_location(t, &mut taken, true);
        }
        let file_name = path.file_name()?.to_string_lossy().into_owned();
        let location = std::iter::once(format!("{file_name}.data"))
            .chain((1..).map(|k| format!("{file_name}.{k}.data")))
            .find(|c| !taken.contains(c))?;
        let sources = &self.sources;
        let chunks = write::externalize(g, &location, |_, raw| {
            too_big || !write::in_sources(raw, sources)
        });
        if chunks.is_empty() {
            return None;
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Some((dir.join(&location), chunks))
    }
}

/// Decodes a model, keeping the main graph's node and initializer records encoded: `(model
/// without graph.node and graph.initializer, their records)`. Each record is a slice of `bytes`
/// (nothing is copied); every other field is decoded by prost, one field at a time, with the graph's repeated fields sized
/// before decoding (prost grows them by doubling, which for a graph of 300,000 nodes left a
/// quarter of the decoded model as spare capacity). A file too malformed to walk field by field
/// is left to prost whole, which decodes it or reports why not.
fn decode_model(bytes: Bytes) -> std::result::Result<(ModelProto, Records), prost::DecodeError> {
    if let Some(split) = split_model(&bytes) {
        return split;
    }
    let mut proto = ModelProto::decode(bytes)?;
    let records = proto
        .graph
        .as_mut()
        .map(Records::take_from)
        .unwrap_or_default();
    Ok((proto, records))
}

/// [`decode_model`] field by field; `None` when a key, a length, or a node or initializer
/// record does not walk.
#[allow(clippy::type_complexity)]
fn split_model(
    bytes: &Bytes,
) -> Option<std::result::Result<(ModelProto, Records), prost::DecodeError>> {
    let counts = graph_record_counts(bytes)?;
    // Walk everything first: nothing is decoded unless the whole file walks.
    for f in fields(bytes) {
        let (field, wire, payload, _) = f?;
        if field == 7 && wire == 2 {
            for gf in fields(payload) {
                let (gfield, gwire, record, _) = gf?;
                if (gfield == 1 || gfield == 5) && gwire == 2 && !walks(record) {
                    return None;
                }
            }
        }
    }
    let mut proto = ModelProto::default();
    let mut records = Records {
        nodes: Vec::with_capacity(counts[0]),
        inits: Vec::with_capacity(counts[1]),
    };
    let result = (|| -> std::result::Result<(), prost::DecodeError> {
        for (field, wire, payload, whole) in fields(bytes).flatten() {
            if field != 7 || wire != 2 {
                proto.merge(bytes.slice_ref(whole))?;
                continue;
            }
            let g = proto.graph.get_or_insert_with(|| {
                let mut g = GraphProto::default();
                g.input.reserve_exact(counts[2]);
                g.output.reserve_exact(counts[3]);
                g.value_info.reserve_exact(counts[4]);
                g
            });
            for (gfield, gwire, record, gwhole) in fields(payload).flatten() {
                if gfield == 1 && gwire == 2 {
                    records.nodes.push(bytes.slice_ref(record));
                } else if gfield == 5 && gwire == 2 {
                    records.inits.push(bytes.slice_ref(record));
                } else {
                    g.merge(bytes.slice_ref(gwhole))?;
                }
            }
        }
        Ok(())
    })();
    Some(result.map(|()| (proto, records)))
}

/// True when every field of the message `buf` has a key and length that parse.
fn walks(buf: &[u8]) -> bool {
    fields(buf).all(|f| f.is_some())
}

/// Records encoded one by one (for a graph decoded whole).
fn encode_all<M: Message>(records: Vec<M>) -> Vec<Bytes> {
    records
        .into_iter()
        .map(|n| Bytes::from(n.encode_to_vec()))
        .collect()
}

/// Encoded records decoded.
fn decode_all<M: Message + Default>(
    records: &[Bytes],
) -> std::result::Result<Vec<M>, prost::DecodeError> {
    records.iter().map(|b| M::decode(b.clone())).collect()
}

/// True when `n` has a graph-valued attribute.
pub(crate) fn holds_bodies(n: &NodeProto) -> bool {
    n.attribute
        .iter()
        .any(|a| a.g.is_some() || !a.graphs.is_empty())
}

/// Fields of a protobuf message as (field number, wire type, payload, whole field with its
/// key); `None` on a key or length that does not parse, or a key prost refuses (above
/// `u32::MAX`), and nothing after it.
fn fields(mut buf: &[u8]) -> impl Iterator<Item = Option<(u32, u8, &[u8], &[u8])>> {
    std::iter::from_fn(move || {
        if buf.is_empty() {
            return None;
        }
        let item = (|| {
            let start = buf;
            let key = u32::try_from(prost::encoding::decode_varint(&mut buf).ok()?).ok()?;
            let (field, wire) = (key >> 3, (key & 7) as u8);
            let len = match wire {
                0 => {
                    prost::encoding::decode_varint(&mut buf).ok()?;
                    0
                }
                1 => 8,
                2 => usize::try_from(prost::encoding::decode_varint(&mut buf).ok()?).ok()?,
                5 => 4,
                _ => return None,
            };
            if buf.len() < len || field == 0 {
                return None;
            }
            let (payload, rest) = buf.split_at(len);
            buf = rest;
            let whole = &start[..start.len() - rest.len()];
            Some((field, wire, payload, whole))
        })();
        if item.is_none() {
            buf = &[];
        }
        Some(item)
    })
}

/// Record counts of the main graph: node, initializer, input, output, value_info. Several
/// `graph` fields are merged by protobuf, so their counts add up.
fn graph_record_counts(bytes: &[u8]) -> Option<[usize; 5]> {
    let mut counts = [0usize; 5];
    let mut any = false;
    for f in fields(bytes) {
        let (field, wire, payload, _) = f?;
        if field != 7 || wire != 2 {
            continue;
        }
        any = true;
        for g in fields(payload) {
            let (gf, gw, _, _) = g?;
            let slot = match (gf, gw) {
                (1, 2) => 0,
                (5, 2) => 1,
                (11, 2) => 2,
                (12, 2) => 3,
                (13, 2) => 4,
                _ => continue,
            };
            counts[slot] += 1;
        }
    }
    any.then_some(counts)
}

fn value_type_of(vi: &ValueInfoProto) -> ValueType {
    use proto::type_proto::Value as TV;
    let mut ty = ValueType::default();
    if let Some(TV::TensorType(t)) = vi.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        ty.dtype = t.elem_type.and_then(crate::ir::DType::from_onnx_code);
        ty.shape = t.shape.as_ref().map(|s| {
            s.dim
                .iter()
                .map(|d| match &d.value {
                    Some(proto::tensor_shape_proto::dimension::Value::DimValue(v)) if *v >= 0 => {
                        DeclaredDim::Known(*v as u64)
                    }
                    Some(proto::tensor_shape_proto::dimension::Value::DimParam(p))
                        if !p.is_empty() =>
                    {
                        DeclaredDim::Param(p.clone())
                    }
                    _ => DeclaredDim::Unknown,
                })
                .collect()
        });
    }
    ty
}

fn convert_attr(a: &proto::AttributeProto) -> Attr {
    match a.r#type() {
        AttributeType::Int => Attr::Int(a.i()),
        AttributeType::Ints => Attr::Ints(a.ints.clone()),
        AttributeType::Float => Attr::Float(a.f()),
        AttributeType::Floats => Attr::Floats(a.floats.clone()),
        AttributeType::String => Attr::String(String::from_utf8_lossy(a.s()).into_owned()),
        AttributeType::Strings => Attr::Strings(
            a.strings
                .iter()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect(),
        ),
        AttributeType::Tensor => match a.t.as_deref().and_then(small_tensor) {
            Some(t) => Attr::Tensor(Box::new(t)),
            None => Attr::Opaque,
        },
        _ => Attr::Opaque,
    }
}

/// The most elements of a tensor attribute that [`small_tensor`] decodes: as many as shape
/// propagation carries in a value (`shape::MAX_VALUE_ELEMENTS`; the loader does not import
/// `shape`, a layer above it).
const SMALL_TENSOR_ELEMENTS: u64 = 64;

/// A tensor attribute of at most [`SMALL_TENSOR_ELEMENTS`] elements held in the
/// record (`ConstantOfShape`'s fill value), decoded so that shape propagation and folding read
/// it; larger or external ones stay opaque. Saving compares it with the record's own decode, so
/// an unchanged attribute is written from its record.
fn small_tensor(t: &proto::TensorProto) -> Option<Tensor> {
    if t.data_location == Some(1) {
        return None;
    }
    let n = t
        .dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?))?;
    if n > SMALL_TENSOR_ELEMENTS {
        return None;
    }
    tensor_from_proto(t, &mut ExternalFiles::new(Path::new("."))).ok()
}

/// Names a subgraph reads from enclosing scopes (recursively through nested subgraphs).
fn free_names(g: &GraphProto, out: &mut HashSet<String>) {
    let mut defined: HashSet<&str> = HashSet::default();
    for i in &g.input {
        defined.insert(i.name());
    }
    for t in &g.initializer {
        defined.insert(t.name());
    }
    for t in &g.sparse_initializer {
        if let Some(v) = &t.values {
            defined.insert(v.name());
        }
    }
    for n in &g.node {
        for o in &n.output {
            defined.insert(o);
        }
    }
    let mut used: HashSet<String> = HashSet::default();
    for n in &g.node {
        for i in &n.input {
            if !i.is_empty() {
                used.insert(i.clone());
            }
        }
        for a in &n.attribute {
            let mut inner = HashSet::default();
            for sg in a.g.as_deref().into_iter().chain(a.graphs.iter()) {
                free_names(sg, &mut inner);
            }
            used.extend(inner);
        }
    }
    for o in &g.output {
        used.insert(o.name().to_string());
    }
    for u in used {
        if !defined.contains(u.as_str()) {
            out.insert(u);
        }
    }
}

/// A graph's IR as [`build_graph`] makes it, and what it learnt on the way.
/// The IR node of node record `i`, outputs not yet set.
fn onnx_node(
    i: usize,
    name: &str,
    op_type: &str,
    domain: &str,
    inputs: usize,
    attributes: &[proto::AttributeProto],
) -> Node {
    let mut node = Node::op(name, op_type, domain);
    node.origin = Origin::OnnxNode(crate::ir::to_u32(i));
    node.order = (2, crate::ir::to_u32(i));
    node.dirty = false;
    node.num_inputs = crate::ir::to_u32(inputs);
    node.attrs = attributes
        .iter()
        .map(|a| (a.name().to_string(), convert_attr(a)))
        .collect();
    node
}

/// Node record `i` decoded by prost, for the records [`light_node`] leaves: its IR node and
/// output names (holders of subgraphs are listed in `holders`, with what they capture).
#[allow(clippy::too_many_arguments)]
fn full_node<'g>(
    path: &Path,
    i: usize,
    rec: &'g Bytes,
    types: &FastMap<&str, ValueType>,
    ext: &mut ExternalFiles,
    holders: &mut Vec<usize>,
    captures: &mut Vec<(usize, Vec<String>)>,
    wires: &mut usize,
) -> Result<(Node, Vec<&'g str>)> {
    let n = NodeProto::decode(rec.clone())
        .map_err(|e| fmt_err(path, format!("not a valid ONNX model: node #{i}: {e}")))?;
    if holds_bodies(&n) {
        holders.push(i);
        let mut captured = HashSet::default();
        for a in &n.attribute {
            for sg in a.g.as_deref().into_iter().chain(a.graphs.iter()) {
                free_names(sg, &mut captured);
            }
        }
        let mut captured: Vec<String> = captured.into_iter().collect();
        captured.sort();
        captures.push((i, captured));
    }
    *wires += n.input.len();
    let mut node = onnx_node(
        i,
        n.name(),
        n.op_type(),
        n.domain(),
        n.input.len(),
        &n.attribute,
    );
    if n.op_type() == "Constant" && n.domain().is_empty() {
        if let Some(t) = constant_node_value(&n, ext).map_err(|m| node_err(path, &n, i, m))? {
            node.kind = NodeKind::Const(Box::new(t));
        }
    }
    let outputs = names(rec, 2)
        .ok_or_else(|| node_err(path, &n, i, "an output name does not read"))?
        .collect();
    node.outputs = n
        .output
        .into_iter()
        .map(|o| crate::ir::Value {
            ty: types.get(o.as_str()).cloned().unwrap_or_default(),
            name: o.into(),
            ty_changed: false,
        })
        .collect();
    Ok((node, outputs))
}

/// Records read per window by [`pipelined`]: a few milliseconds of work, so a graph of a few
/// thousand nodes is read in one window, as before.
const WINDOW: usize = 4096;

/// Runs `read` over consecutive windows of `0..n`, each window on rayon's pool while `add`
/// takes the one before it on this thread, in order: `read(start..end, buffer)` appends to
/// an empty buffer what `add(start, ..)` then drains. The first error of `add` stops the loop
/// (no later window is added). A range of one window is read and added on this thread alone.
///
/// Measured on `wide_100k.onnx` (350,000 records): load 0.27 -> 0.21 s (min of 5), peak RSS
/// +2 MB. Two buffers are filled and drained in turn: a buffer per window, freed by the
/// other thread, added 8 MB to the peak.
fn pipelined<T: Send, R, A>(n: usize, read: R, mut add: A) -> Result<()>
where
    R: Fn(std::ops::Range<usize>, &mut Vec<T>) + Sync,
    A: FnMut(usize, std::vec::Drain<'_, T>) -> Result<()>,
{
    let (mut start, mut end) = (0, n.min(WINDOW));
    let (mut window, mut ahead) = (Vec::new(), Vec::new());
    read(start..end, &mut window);
    while start < n {
        let next_end = end.saturating_add(WINDOW).min(n);
        if end < next_end {
            rayon::in_place_scope(|s| {
                s.spawn(|_| read(end..next_end, &mut ahead));
                add(start, window.drain(..))
            })?;
        } else {
            add(start, window.drain(..))?;
        }
        std::mem::swap(&mut window, &mut ahead);
        (start, end) = (end, next_end);
    }
    Ok(())
}

struct Built {
    graph: Graph,
    /// Indices of the nodes that hold subgraphs.
    holders: Vec<usize>,
    /// True when an initializer keeps its data in an external file.
    uses_external: bool,
    /// Indices of the initializers a graph input of the same name shadows, ascending.
    shadowed: Vec<u32>,
}

/// The IR of the graph `g` whose node and initializer records are `records` (`g.node` and
/// `g.initializer` are not read).
fn build_graph<'g>(
    path: &Path,
    g: &'g GraphProto,
    records: &'g Records,
    ext: &mut ExternalFiles,
) -> Result<Built> {
    let nodes = &records.nodes[..];
    let inits = &records.inits[..];
    // Every node defines at least one name (sized for one each; a map grows by doubling).
    let defined = g.input.len() + inits.len() + g.sparse_initializer.len() + nodes.len();
    let count =
        g.input.len() + inits.len() + g.sparse_initializer.len() + nodes.len() + g.output.len();
    if count > crate::ir::MAX_RECORDS {
        return Err(fmt_err(
            path,
            format!(
                "the graph has {count} records (inputs, initializers, nodes, outputs); at most {} are supported",
                crate::ir::MAX_RECORDS
            ),
        ));
    }
    // Headroom for what passes add (folded constants, lowered nodes): the first node added
    // past the capacity would copy the whole node array. Edges are reserved once the nodes'
    // input counts are known.
    let mut graph = Graph::with_capacity(count + count / 4 + 16, 0);
    let mut producers: FastMap<&str, OutletId> = FastMap::default();
    producers.reserve(defined);
    let mut types: FastMap<&str, ValueType> = FastMap::default();
    types.reserve(g.value_info.len() + g.input.len() + g.output.len());
    for vi in g
        .value_info
        .iter()
        .chain(g.input.iter())
        .chain(g.output.iter())
    {
        types.insert(vi.name(), value_type_of(vi));
    }
    let define = |producers: &mut FastMap<&'g str, OutletId>, name: &'g str, outlet: OutletId| {
        if !name.is_empty() {
            producers.insert(name, outlet);
        }
    };
    // Initializers that are also graph inputs may be overridden at run time: they are inputs.
    for (i, vi) in g.input.iter().enumerate() {
        let mut node = Node::op(vi.name(), "", "");
        node.kind = NodeKind::Input;
        node.origin = Origin::OnnxInput(crate::ir::to_u32(i));
        node.order = (0, crate::ir::to_u32(i));
        node.dirty = false;
        node.outputs = vec![crate::ir::Value {
            name: crate::ir::Text::from(vi.name()),
            ty: value_type_of(vi),
            ty_changed: false,
        }];
        if producers.contains_key(vi.name()) {
            return Err(fmt_err(
                path,
                format!("graph input '{}' is declared twice", vi.name()),
            ));
        }
        let ix = graph.add_node(node);
        define(&mut producers, vi.name(), OutletId { node: ix, port: 0 });
    }
    // Like the onnx checker: a name is defined once. ONNX Runtime takes the last of two
    // initializers of one name, a fold would take the first: refuse rather than guess.
    let twice = |name: &str| {
        fmt_err(
            path,
            format!(
                "initializer '{name}' is defined twice (the onnx checker refuses such a model)"
            ),
        )
    };
    // Duplicates are found in `producers`, one hash per initializer (a set of their own names
    // and a separate check for graph inputs were two more each, and most of a model's names
    // are initializers'). An initializer a graph input shadows is not in `producers`: those
    // are remembered here, to refuse a second initializer of the same name all the same.
    let mut shadowed: HashSet<&str> = HashSet::default();
    let is_input = |graph: &Graph, o: &OutletId| graph.node(o.node).kind == NodeKind::Input;
    let mut uses_external = false;
    let mut shadowed_at: Vec<u32> = Vec::new();
    // The records are read into nodes on rayon's pool, a window ahead of the nodes added here
    // (in file order, so names, errors and node indices are those of a loop in one thread).
    let init_node = |i: usize, name: &str, tensor: Tensor| {
        let mut node = Node::op(name, "", "");
        node.origin = Origin::OnnxInitializer(crate::ir::to_u32(i));
        node.order = (1, crate::ir::to_u32(i));
        node.dirty = false;
        node.outputs = vec![crate::ir::Value {
            name: crate::ir::Text::from(name),
            ty: ValueType {
                dtype: Some(tensor.dtype),
                shape: Some(
                    tensor
                        .shape
                        .iter()
                        .map(|&d| DeclaredDim::Known(d))
                        .collect(),
                ),
            },
            ty_changed: false,
        }];
        node.kind = NodeKind::Const(Box::new(tensor));
        node
    };
    // Most records (raw data in the file): read in place, name and tensor in one walk (the
    // name alone for the others; `None`: it does not read).
    type InitRead<'a> = (Option<&'a str>, Option<Node>);
    let read_inits = |range: std::ops::Range<usize>, out: &mut Vec<InitRead<'g>>| {
        out.extend(range.map(|i| match light_tensor_named(&inits[i]) {
            Some((t, name)) => (Some(name), Some(init_node(i, name, t))),
            None => (last_string(&inits[i], 8), None),
        }));
    };
    let add_inits = |start: usize, window: std::vec::Drain<'_, InitRead<'g>>| -> Result<()> {
        for (i, (name, light)) in (start..).zip(window) {
            let Some(name) = name else {
                return Err(fmt_err(
                    path,
                    format!("initializer #{i}: its name does not read"),
                ));
            };
            let rec = &inits[i];
            // An empty name defines nothing (no input can name it), but the constant is kept.
            let slot = if name.is_empty() {
                None
            } else {
                match producers.entry(name) {
                    std::collections::hash_map::Entry::Occupied(o) => {
                        if !is_input(&graph, o.get()) || !shadowed.insert(name) {
                            return Err(twice(name));
                        }
                        // Shadowed by a graph input of the same name: kept in the record only.
                        shadowed_at.push(crate::ir::to_u32(i));
                        continue;
                    }
                    std::collections::hash_map::Entry::Vacant(v) => Some(v),
                }
            };
            let node = match light {
                Some(node) => node,
                None => {
                    let t = proto::TensorProto::decode(rec.clone()).map_err(|e| {
                        fmt_err(
                            path,
                            format!("not a valid ONNX model: initializer '{name}': {e}"),
                        )
                    })?;
                    uses_external |= t.data_location == Some(1);
                    let tensor = tensor_from_proto(&t, ext)
                        .map_err(|m| fmt_err(path, format!("initializer '{}': {m}", t.name())))?;
                    init_node(i, name, tensor)
                }
            };
            let ix = graph.add_node(node);
            if let Some(slot) = slot {
                slot.insert(OutletId { node: ix, port: 0 });
            }
        }
        Ok(())
    };
    pipelined(inits.len(), read_inits, add_inits)?;
    for (i, t) in g.sparse_initializer.iter().enumerate() {
        let name = t.values.as_ref().map(|v| v.name()).unwrap_or_default();
        if !name.is_empty() {
            match producers.get(name) {
                // A sparse initializer takes a graph input's name over (as before).
                Some(o) if !is_input(&graph, o) || shadowed.contains(name) => {
                    return Err(twice(name))
                }
                _ => {}
            }
        }
        let mut node = Node::op(name, "SparseInitializer", "");
        node.origin = Origin::OnnxSparseInitializer(crate::ir::to_u32(i));
        node.order = (1, crate::ir::to_u32(inits.len() + i));
        node.dirty = false;
        node.outputs = vec![crate::ir::Value {
            name: crate::ir::Text::from(name),
            ty: ValueType::default(),
            ty_changed: false,
        }];
        let ix = graph.add_node(node);
        define(&mut producers, name, OutletId { node: ix, port: 0 });
    }
    // Nodes: create all first (they need not be in topological order), then wire. Each record
    // is decoded once, into the IR node; output and input names are read in place from the
    // record's bytes (`names`), so nothing decoded outlives its node's turn.
    let mut node_ix = Vec::with_capacity(nodes.len());
    let mut holders = Vec::new();
    let mut captures: Vec<(usize, Vec<String>)> = Vec::new();
    let mut wires = 0usize;
    // Most records: read in place, on rayon's pool, a window ahead (as the initializers).
    type Read<'a> = Option<(Node, Vec<&'a str>, usize)>;
    let read_nodes = |range: std::ops::Range<usize>, out: &mut Vec<Read<'g>>| {
        out.extend(range.map(|i| {
            let l = light_node(&nodes[i])?;
            let mut node = onnx_node(i, l.name, l.op_type, l.domain, l.inputs, &l.attributes);
            node.outputs = l
                .outputs
                .iter()
                .map(|&o| crate::ir::Value {
                    ty: types.get(o).cloned().unwrap_or_default(),
                    name: crate::ir::Text::from(o),
                    ty_changed: false,
                })
                .collect();
            Some((node, l.outputs, l.inputs))
        }));
    };
    let add_nodes = |start: usize, window: std::vec::Drain<'_, Read<'g>>| -> Result<()> {
        for (i, light) in (start..).zip(window) {
            let rec = &nodes[i];
            let (node, outputs) = match light {
                Some((node, outputs, inputs)) => {
                    wires += inputs;
                    (node, outputs)
                }
                None => full_node(
                    path,
                    i,
                    rec,
                    &types,
                    ext,
                    &mut holders,
                    &mut captures,
                    &mut wires,
                )?,
            };
            let ix = graph.add_node(node);
            for (p, o) in outputs.into_iter().enumerate() {
                if o.is_empty() {
                    continue;
                }
                // One hash for the check and the insertion.
                match producers.entry(o) {
                    std::collections::hash_map::Entry::Occupied(_) => {
                        let n = NodeProto::decode(rec.clone()).unwrap_or_default();
                        return Err(node_err(
                            path,
                            &n,
                            i,
                            format!("output '{o}' is already produced by another node"),
                        ));
                    }
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(OutletId { node: ix, port: p });
                    }
                }
            }
            node_ix.push(ix);
        }
        Ok(())
    };
    pipelined(nodes.len(), read_nodes, add_nodes)?;
    let edges = wires + g.output.len();
    graph.g.reserve_exact_edges(edges + edges / 4 + 16);
    let decoded = |i: usize| {
        nodes
            .get(i)
            .and_then(|r| NodeProto::decode(r.clone()).ok())
            .unwrap_or_default()
    };
    // Input names are looked up on rayon's pool, a window ahead of the edges added here.
    enum Wiring<'a> {
        Edge(usize, OutletId, usize),
        Unreadable(usize),
        Missing(usize, usize, &'a str),
    }
    let read_inputs = |range: std::ops::Range<usize>, out: &mut Vec<Wiring<'g>>| {
        for i in range {
            let Some(inputs) = names(&nodes[i], 1) else {
                out.push(Wiring::Unreadable(i));
                continue;
            };
            for (p, name) in inputs.enumerate().filter(|(_, name)| !name.is_empty()) {
                out.push(match producers.get(name) {
                    Some(&src) => Wiring::Edge(i, src, p),
                    None => Wiring::Missing(i, p, name),
                });
            }
        }
    };
    let wire = |_: usize, window: std::vec::Drain<'_, Wiring<'g>>| -> Result<()> {
        for w in window {
            match w {
                Wiring::Edge(i, src, p) => {
                    graph.connect(src, node_ix[i], p);
                }
                Wiring::Unreadable(i) => {
                    return Err(node_err(
                        path,
                        &decoded(i),
                        i,
                        "an input name does not read",
                    ));
                }
                Wiring::Missing(i, p, name) => {
                    return Err(node_err(
                        path,
                        &decoded(i),
                        i,
                        format!(
                            "input {p} names '{name}', which no node, input or initializer \
                             produces"
                        ),
                    ));
                }
            }
        }
        Ok(())
    };
    pipelined(nodes.len(), read_inputs, wire)?;
    for (i, captured) in captures {
        let ix = node_ix[i];
        for name in captured {
            let Some(&src) = producers.get(name.as_str()) else {
                return Err(node_err(
                    path,
                    &decoded(i),
                    i,
                    format!(
                        "a subgraph reads '{name}', which the enclosing graph does not produce"
                    ),
                ));
            };
            graph.g.add_edge(
                src.node,
                ix,
                Wire {
                    src_port: Wire::port(src.port),
                    dst_port: Wire::CAPTURED,
                },
            );
        }
    }
    for (i, vi) in g.output.iter().enumerate() {
        let Some(&src) = producers.get(vi.name()) else {
            return Err(fmt_err(
                path,
                format!("graph output '{}' is produced by no node", vi.name()),
            ));
        };
        let mut node = Node::op(vi.name(), "", "");
        node.kind = NodeKind::Output;
        node.origin = Origin::OnnxOutput(crate::ir::to_u32(i));
        node.order = (3, crate::ir::to_u32(i));
        node.dirty = false;
        node.num_inputs = 1;
        let ix = graph.add_node(node);
        graph.connect(src, ix, 0);
    }
    graph.topo_order().map_err(|c| Error::cycle(path, c))?;
    Ok(Built {
        graph,
        holders,
        uses_external,
        shadowed: shadowed_at,
    })
}

/// What [`build_graph`] takes from an ordinary node record, read in place.
struct LightNode<'a> {
    name: &'a str,
    op_type: &'a str,
    domain: &'a str,
    /// Number of inputs (empty names included: omitted optional inputs).
    inputs: usize,
    outputs: Vec<&'a str>,
    attributes: Vec<proto::AttributeProto>,
}

/// The node record `rec` read in place, without decoding its names into `String`s: `None` when
/// the record needs the full decode, because it is not an ordinary node (a `Constant`, an
/// attribute holding a tensor, graph, sparse tensor or type, metadata or device
/// configurations) or because prost could refuse it (a wire type, UTF-8 string or attribute
/// that does not read). So a record read here is one prost decodes, to the same values.
fn light_node(rec: &[u8]) -> Option<LightNode<'_>> {
    let text = |wire: u8, payload| {
        if wire == 2 {
            std::str::from_utf8(payload).ok()
        } else {
            None
        }
    };
    let mut node = LightNode {
        name: "",
        op_type: "",
        domain: "",
        inputs: 0,
        outputs: Vec::with_capacity(1),
        attributes: Vec::new(),
    };
    for f in fields(rec) {
        let (field, wire, payload, _) = f?;
        match field {
            1 => {
                text(wire, payload)?;
                node.inputs += 1;
            }
            2 => node.outputs.push(text(wire, payload)?),
            3 => node.name = text(wire, payload)?,
            4 => node.op_type = text(wire, payload)?,
            7 => node.domain = text(wire, payload)?,
            6 | 8 => {
                text(wire, payload)?;
            }
            5 if wire == 2 => {
                let a = proto::AttributeProto::decode(payload).ok()?;
                let plain = a.t.is_none()
                    && a.g.is_none()
                    && a.sparse_tensor.is_none()
                    && a.tp.is_none()
                    && a.tensors.is_empty()
                    && a.graphs.is_empty()
                    && a.sparse_tensors.is_empty()
                    && a.type_protos.is_empty();
                if !plain {
                    return None;
                }
                node.attributes.push(a);
            }
            5 | 9 | 10 => return None,
            _ => {}
        }
    }
    if node.op_type == "Constant" && node.domain.is_empty() {
        return None;
    }
    Some(node)
}

/// [`light_tensor_named`] without the name.
#[cfg(test)]
fn light_tensor(rec: &Bytes) -> Option<Tensor> {
    light_tensor_named(rec).map(|(t, _)| t)
}

/// The initializer record `rec` as an IR tensor, read in place, with the record's name (the
/// last `name` field, as prost reads it; `""` when it has none), from one walk of the record:
/// `None` when it needs the full decode, because its data is not `raw_data` in the record
/// (typed fields, external data, segments, strings), it has metadata, or prost or
/// `tensor_from_proto` could refuse it (a wire type, UTF-8 string or varint that does not
/// read, a negative dim, data of the wrong size). So a tensor read here is the one the full
/// decode gives.
fn light_tensor_named(rec: &Bytes) -> Option<(Tensor, &str)> {
    let mut name = "";
    let mut dims: Vec<i64> = Vec::with_capacity(4);
    let mut code = 0i32;
    let mut raw: Option<&[u8]> = None;
    for f in fields(rec) {
        let (field, wire, payload, whole) = f?;
        match (field, wire) {
            // `fields` gives no payload for a varint: it is read from the whole field.
            (1, 0) => dims.push(varint_value(whole)? as i64),
            (1, 2) => {
                let mut b = payload;
                while !b.is_empty() {
                    dims.push(prost::encoding::decode_varint(&mut b).ok()? as i64);
                }
            }
            (2, 0) => code = varint_value(whole)? as i32,
            (8, 2) => name = std::str::from_utf8(payload).ok()?,
            (12, 2) => {
                std::str::from_utf8(payload).ok()?;
            }
            (9, 2) => raw = Some(payload),
            (14, 0) if varint_value(whole)? == 0 => {}
            (1..=14 | 16, _) => return None,
            _ => {}
        }
    }
    let dtype = DType::from_onnx_code(code).filter(|&d| d != DType::String)?;
    let shape: Vec<u64> = dims
        .iter()
        .map(|&d| u64::try_from(d).ok())
        .collect::<Option<_>>()?;
    let bits = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))?
        .checked_mul(dtype.bits() as u64)?;
    let raw = raw?;
    (raw.len() as u64 == bits.div_ceil(8)).then(|| {
        let t = Tensor {
            dtype,
            shape,
            data: crate::ir::TensorData::Raw(rec.slice_ref(raw)),
        };
        (t, name)
    })
}

/// The value of the varint field `whole` (its key, then the value).
fn varint_value(mut whole: &[u8]) -> Option<u64> {
    prost::encoding::decode_varint(&mut whole).ok()?;
    prost::encoding::decode_varint(&mut whole).ok()
}

/// The last value of the string field `field` of the message `rec` (protobuf: the last one
/// counts), read in place; `""` when absent, `None` when the message does not walk or the
/// value is not UTF-8.
fn last_string(rec: &[u8], field: u32) -> Option<&str> {
    let mut out = "";
    for f in fields(rec) {
        let (number, wire, payload, _) = f?;
        if number == field {
            if wire != 2 {
                return None;
            }
            out = std::str::from_utf8(payload).ok()?;
        }
    }
    Some(out)
}

/// The strings of field `field` of the node record `rec` (1: inputs, 2: outputs), in order,
/// read in place; `None` when the record does not walk or a name is not UTF-8.
fn names(rec: &[u8], field: u32) -> Option<impl Iterator<Item = &str>> {
    let mut out = Vec::new();
    for f in fields(rec) {
        let (number, wire, payload, _) = f?;
        if number == field {
            if wire != 2 {
                return None;
            }
            out.push(std::str::from_utf8(payload).ok()?);
        }
    }
    Some(out.into_iter())
}

fn constant_node_value(
    n: &NodeProto,
    ext: &mut ExternalFiles,
) -> std::result::Result<Option<Tensor>, String> {
    let Some(a) = n.attribute.first() else {
        return Ok(None);
    };
    if n.attribute.len() != 1 {
        return Ok(None);
    }
    Ok(match a.name() {
        "value" => match &a.t {
            Some(t) => Some(tensor_from_proto(t, ext)?),
            None => None,
        },
        "value_int" => Some(Tensor::from_i64(vec![], &[a.i()])),
        "value_ints" => Some(Tensor::from_i64(vec![a.ints.len() as u64], &a.ints)),
        "value_float" => Some(tensor::f32_tensor(vec![], &[a.f()])),
        "value_floats" => Some(tensor::f32_tensor(vec![a.floats.len() as u64], &a.floats)),
        _ => None,
    })
}

fn dims_to_proto(shape: &[DeclaredDim]) -> proto::TensorShapeProto {
    use proto::tensor_shape_proto::{dimension::Value as DV, Dimension};
    proto::TensorShapeProto {
        dim: shape
            .iter()
            .map(|d| Dimension {
                denotation: None,
                value: match d {
                    DeclaredDim::Known(v) => Some(DV::DimValue(*v as i64)),
                    DeclaredDim::Param(p) => Some(DV::DimParam(p.clone())),
                    _ => None,
                },
            })
            .collect(),
    }
}

/// The record of `value_info_proto(name, ty, None)`, encoded straight into its bytes (the
/// same bytes as prost's encoding of it; no message built, one allocation): a pass that
/// infers the outputs of 100,000 slices writes 100,000 of them.
fn new_value_info(name: &str, ty: &ValueType) -> Bytes {
    use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};
    // A length-delimited field: key, length, body.
    let field_len = |body: usize| 1 + encoded_len_varint(body as u64) + body;
    let dim_len = |d: &DeclaredDim| match d {
        DeclaredDim::Known(v) => 1 + encoded_len_varint(*v as i64 as u64),
        DeclaredDim::Param(p) => field_len(p.len()),
        _ => 0,
    };
    let shape_len: Option<usize> = ty
        .shape
        .as_ref()
        .map(|s| s.iter().map(|d| field_len(dim_len(d))).sum());
    let elem = ty.dtype.map(|d| d.onnx_code() as i64 as u64);
    let tensor_len = elem.map_or(0, |e| 1 + encoded_len_varint(e)) + shape_len.map_or(0, field_len);
    let type_len = field_len(tensor_len);
    let mut out = Vec::with_capacity(field_len(name.len()) + field_len(type_len));
    let buf = &mut out;
    // ValueInfoProto: name = 1, type = 2.
    encode_key(1, WireType::LengthDelimited, buf);
    encode_varint(name.len() as u64, buf);
    buf.extend_from_slice(name.as_bytes());
    encode_key(2, WireType::LengthDelimited, buf);
    encode_varint(type_len as u64, buf);
    // TypeProto: tensor_type = 1.
    encode_key(1, WireType::LengthDelimited, buf);
    encode_varint(tensor_len as u64, buf);
    // TypeProto.Tensor: elem_type = 1, shape = 2.
    if let Some(e) = elem {
        encode_key(1, WireType::Varint, buf);
        encode_varint(e, buf);
    }
    if let (Some(dims), Some(len)) = (&ty.shape, shape_len) {
        encode_key(2, WireType::LengthDelimited, buf);
        encode_varint(len as u64, buf);
        // TensorShapeProto: dim = 1; Dimension: dim_value = 1, dim_param = 2.
        for d in dims {
            encode_key(1, WireType::LengthDelimited, buf);
            encode_varint(dim_len(d) as u64, buf);
            match d {
                DeclaredDim::Known(v) => {
                    encode_key(1, WireType::Varint, buf);
                    encode_varint(*v as i64 as u64, buf);
                }
                DeclaredDim::Param(p) => {
                    encode_key(2, WireType::LengthDelimited, buf);
                    encode_varint(p.len() as u64, buf);
                    buf.extend_from_slice(p.as_bytes());
                }
                _ => {}
            }
        }
    }
    Bytes::from(out)
}

fn value_info_proto(name: &str, ty: &ValueType, base: Option<&ValueInfoProto>) -> ValueInfoProto {
    use proto::type_proto::{Tensor as TT, Value as TV};
    let mut vi = base.cloned().unwrap_or_default();
    vi.name = Some(name.to_string());
    let elem_type = ty.dtype.map(|d| d.onnx_code());
    vi.r#type = Some(proto::TypeProto {
        denotation: base
            .and_then(|b| b.r#type.as_ref())
            .and_then(|t| t.denotation.clone()),
        value: Some(TV::TensorType(TT {
            elem_type,
            shape: ty.shape.as_ref().map(|s| dims_to_proto(s)),
        })),
    });
    vi
}

fn rebuild_node<'a>(
    path: &Path,
    graph: &Graph,
    ix: NodeIndex,
    records: &'a [Bytes],
    bodies: &BodyOverrides,
) -> Result<NodeOut<'a>> {
    let n = graph.node(ix);
    let record = |i: usize| -> Result<NodeProto> {
        match records.get(i) {
            Some(r) => NodeProto::decode(r.clone())
                .map_err(|e| fmt_err(path, format!("node #{i}: its record does not decode: {e}"))),
            None => Ok(NodeProto::default()),
        }
    };
    if let Origin::OnnxNode(i) = n.origin {
        let i = i as usize;
        if let (false, Some(rec)) = (n.dirty, records.get(i)) {
            return Ok(match bodies.get(&i) {
                Some(b) => NodeOut::Record(Rec::owned(with_bodies(record(i)?, b))),
                None => NodeOut::Encoded(rec),
            });
        }
    }
    let mut np = match n.origin {
        Origin::OnnxNode(i) => record(i as usize)?,
        _ => NodeProto::default(),
    };
    np.name = if n.name.is_empty() {
        None
    } else {
        Some(n.name.to_string())
    };
    np.op_type = Some(n.op_type.to_string());
    np.domain = if n.domain.is_empty() {
        None
    } else {
        Some(n.domain.to_string())
    };
    np.input = graph
        .inputs(ix)
        .into_iter()
        .map(|o| {
            o.and_then(|o| graph.value(o))
                .map(|v| v.name.to_string())
                .unwrap_or_default()
        })
        .collect();
    while np.input.last().is_some_and(|s| s.is_empty()) {
        np.input.pop();
    }
    np.output = n.outputs.iter().map(|v| v.name.to_string()).collect();
    // Attributes: keep the original record of each attribute the IR did not change.
    let old: HashMap<String, proto::AttributeProto> = np
        .attribute
        .drain(..)
        .map(|a| (a.name().to_string(), a))
        .collect();
    for (name, value) in &n.attrs {
        let prev = old.get(name);
        if let Some(p) = prev {
            if convert_attr(p) == *value {
                np.attribute.push(p.clone());
                continue;
            }
        }
        let mut a = proto::AttributeProto {
            name: Some(name.clone()),
            ..Default::default()
        };
        match value {
            Attr::Int(v) => {
                a.i = Some(*v);
                a.set_type(AttributeType::Int);
            }
            Attr::Ints(v) => {
                a.ints = v.clone();
                a.set_type(AttributeType::Ints);
            }
            Attr::Float(v) => {
                a.f = Some(*v);
                a.set_type(AttributeType::Float);
            }
            Attr::Floats(v) => {
                a.floats = v.clone();
                a.set_type(AttributeType::Floats);
            }
            Attr::String(s) => {
                a.s = Some(Bytes::from(s.clone().into_bytes()));
                a.set_type(AttributeType::String);
            }
            Attr::Strings(v) => {
                a.strings = v
                    .iter()
                    .map(|s| Bytes::from(s.clone().into_bytes()))
                    .collect();
                a.set_type(AttributeType::Strings);
            }
            Attr::Tensor(t) => {
                a.t = Some(Box::new(tensor_to_proto(t, name)));
                a.set_type(AttributeType::Tensor);
            }
            Attr::Opaque => match prev {
                Some(p) => a = p.clone(),
                None => {
                    return Err(Error::Pass {
                        pass: "save",
                        node: n.name.to_string(),
                        message: format!("attribute '{name}' has no value to write"),
                    })
                }
            },
        }
        np.attribute.push(a);
    }
    if let Some(b) = match n.origin {
        Origin::OnnxNode(i) => bodies.get(&(i as usize)),
        _ => None,
    } {
        np = with_bodies(np, b);
    }
    Ok(NodeOut::built(&np))
}

/// `np` with the graph-valued attributes named in `bodies` replaced.
fn with_bodies(mut np: NodeProto, bodies: &[(String, GraphProto)]) -> NodeProto {
    for (attr, body) in bodies {
        let (name, index) = match attr.strip_suffix(']').and_then(|a| a.split_once('[')) {
            Some((n, i)) => (n, i.parse::<usize>().ok()),
            None => (attr.as_str(), None),
        };
        let Some(a) = np.attribute.iter_mut().find(|a| a.name() == name) else {
            continue;
        };
        match index {
            None => a.g = Some(Box::new(body.clone())),
            Some(i) => {
                if let Some(slot) = a.graphs.get_mut(i) {
                    *slot = body.clone();
                }
            }
        }
    }
    np
}

fn rebuild_graph<'a>(
    path: &Path,
    graph: &Graph,
    orig: &'a GraphProto,
    records: &'a Records,
    shadowed: Option<&[u32]>,
    bodies: &BodyOverrides,
) -> Result<GraphOut<'a>> {
    let order = graph.topo_order().map_err(|c| Error::cycle(path, c))?;
    let mut out = GraphOut {
        base: orig,
        node: Vec::with_capacity(records.nodes.len()),
        initializer: Vec::new(),
        value_info: Vec::new(),
        output: orig.output.iter().map(Rec::Borrowed).collect(),
    };
    let mut inits: Vec<(u64, write::InitOut<'a>)> = Vec::with_capacity(records.inits.len());
    let mut extra_identity: Vec<NodeOut<'a>> = Vec::new();
    for &ix in &order {
        let n = graph.node(ix);
        match (&n.kind, n.origin) {
            // A body's input that is an outer scope's constant (read as a constant by the
            // passes in the body) stays a name read from the outer scope.
            (NodeKind::Input, _)
            | (NodeKind::Const(_), Origin::OnnxInput(_))
            | (NodeKind::Op, Origin::OnnxSparseInitializer(_)) => {}
            (NodeKind::Output, _) => {
                // A graph output must be produced under its own name.
                if let Some(src) = graph.input(ix, 0) {
                    let produced = graph
                        .value(src)
                        .map(|v| v.name.as_str())
                        .unwrap_or_default();
                    if produced != n.name {
                        extra_identity.push(NodeOut::Record(Rec::owned(NodeProto {
                            input: vec![produced.to_string()],
                            output: vec![n.name.to_string()],
                            name: Some(format!("{}_identity", n.name)),
                            op_type: Some("Identity".into()),
                            ..Default::default()
                        })));
                    }
                }
            }
            (NodeKind::Const(t), Origin::OnnxInitializer(i)) => {
                let rec = match (n.dirty, records.inits.get(i as usize)) {
                    (false, Some(t)) => write::Out::Encoded(t),
                    _ => new_tensor(t, &n.outputs[0].name),
                };
                inits.push((i as u64, rec));
            }
            (NodeKind::Const(t), Origin::New) => {
                let name = n
                    .outputs
                    .first()
                    .map(|v| v.name.as_str())
                    .unwrap_or(&n.name);
                inits.push((u64::MAX, new_tensor(t, name)));
            }
            _ => out
                .node
                .push(rebuild_node(path, graph, ix, &records.nodes, bodies)?),
        }
    }
    out.node.extend(extra_identity);
    // Initializers: originals in their original order (shadowed ones included), then new ones.
    let shadowed: Vec<(u64, write::InitOut<'a>)> = if let Some(known) = shadowed {
        // As the load found them (no record read again: a graph of 383,000 initializers
        // walked every record and hashed every name here).
        known
            .iter()
            .filter_map(|&i| {
                Some((
                    u64::from(i),
                    write::Out::Encoded(records.inits.get(i as usize)?),
                ))
            })
            .collect()
    } else if orig.input.is_empty() {
        Vec::new()
    } else {
        let inputs: HashSet<&str> = orig.input.iter().map(|i| i.name()).collect();
        records
            .inits
            .iter()
            .enumerate()
            .filter(|(_, t)| last_string(t, 8).is_some_and(|n| inputs.contains(n)))
            .map(|(i, t)| (i as u64, write::Out::Encoded(t)))
            .collect()
    };
    inits.extend(shadowed);
    inits.sort_by_key(|(k, _)| *k);
    out.initializer = inits.into_iter().map(|(_, t)| t).collect();
    // value_info: originals of values that still exist, updated where a pass changed the type;
    // then new entries for values whose type a pass set.
    // Only the values the original record declares are looked up by name.
    let declared: HashSet<&str> = orig
        .value_info
        .iter()
        .chain(orig.output.iter())
        .map(|v| v.name())
        .collect();
    let mut live: HashMap<&str, (&crate::ir::Value, NodeIndex)> = HashMap::default();
    live.reserve(declared.len());
    for ix in graph.g.node_indices() {
        let n = graph.node(ix);
        if matches!(n.kind, NodeKind::Op | NodeKind::Const(_)) {
            for v in &n.outputs {
                if declared.contains(v.name.as_str()) {
                    live.insert(v.name.as_str(), (v, ix));
                }
            }
        }
    }
    let io_names: HashSet<&str> = orig
        .input
        .iter()
        .chain(orig.output.iter())
        .map(|v| v.name())
        .collect();
    let mut seen: HashSet<&str> = HashSet::default();
    for vi in &orig.value_info {
        if let Some((v, _)) = live.get(vi.name()) {
            seen.insert(vi.name());
            if v.ty_changed {
                out.value_info.push(write::Out::built(&value_info_proto(
                    vi.name(),
                    &v.ty,
                    Some(vi),
                )));
            } else {
                out.value_info.push(write::Out::Record(Rec::Borrowed(vi)));
            }
        }
    }
    for &ix in &order {
        let n = graph.node(ix);
        if n.kind != NodeKind::Op {
            continue;
        }
        for v in &n.outputs {
            // An entry needs an element type: without one, readers reject the model.
            if v.ty_changed
                && v.ty.dtype.is_some()
                && !v.name.is_empty()
                && !seen.contains(v.name.as_str())
                && !io_names.contains(v.name.as_str())
            {
                seen.insert(v.name.as_str());
                out.value_info
                    .push(write::Out::Built(new_value_info(&v.name, &v.ty)));
            }
        }
    }
    // Graph outputs whose producer's type a pass refined.
    for o in out.output.iter_mut() {
        if let Some((v, _)) = live.get(o.name()) {
            if v.ty_changed {
                let updated = value_info_proto(o.name(), &v.ty, Some(o));
                *o = Rec::owned(updated);
            }
        }
    }
    Ok(out)
}

/// A computed initializer to write: kept encoded when small; a big one stays a record whose
/// bytes are the tensor's own (written, or moved to external data, without a copy here).
fn new_tensor<'a>(t: &Tensor, name: &str) -> write::InitOut<'a> {
    let t = tensor_to_proto(t, name);
    if t.raw_data
        .as_ref()
        .is_some_and(|r| r.len() >= write::EXTERNAL_MIN)
    {
        write::Out::Record(Rec::owned(t))
    } else {
        write::Out::built(&t)
    }
}

/// The external data files a model references that a save to `to` copies beside it (when
/// `to` is in another directory than `from`), as `(source, destination)`. `skip` is a location
/// written by this save, not copied. Sources are checked like when loading: regular files inside
/// the model's directory after resolving links.
fn external_copies(
    from: &Path,
    to: &Path,
    g: Option<&GraphOut<'_>>,
    skip: Option<&str>,
) -> Result<Vec<(PathBuf, PathBuf)>> {
    let Some(g) = g else { return Ok(Vec::new()) };
    let dir_of = |p: &Path| match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let src_dir = dir_of(from);
    let dst_dir = dir_of(to);
    let same = match (
        std::fs::canonicalize(&src_dir),
        std::fs::canonicalize(&dst_dir),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Ok(Vec::new());
    }
    let mut files: Vec<String> = Vec::new();
    g.external_locations(&mut files, false);
    files.sort();
    files.dedup();
    files.retain(|f| Some(f.as_str()) != skip);
    let alt = crate::formats::fs::resolved_model_dir(from);
    let pair = |loc: &str| -> Result<(PathBuf, PathBuf)> {
        let src = tensor::resolve_location(&src_dir, loc).map_err(|m| fmt_err(from, m))?;
        let src =
            crate::formats::fs::resolve_inside(&src, &src_dir, alt.as_deref()).map_err(|m| {
                Error::Refused {
                    path: from.to_path_buf(),
                    message: format!("external data '{loc}': {m}"),
                }
            })?;
        let dst = tensor::resolve_location(&dst_dir, loc).map_err(|m| fmt_err(to, m))?;
        Ok((src, dst))
    };
    let mut pairs = files
        .iter()
        .map(|loc| pair(loc))
        .collect::<Result<Vec<_>>>()?;
    // A tensor's other `location` entries (the last is the one read) are not read, but the
    // onnx checker wants each to name a regular file: those that do, inside the model's
    // directory, are copied too; the others are left out.
    let mut named: Vec<String> = Vec::new();
    g.external_locations(&mut named, true);
    named.sort();
    named.dedup();
    named.retain(|f| Some(f.as_str()) != skip && files.binary_search(f).is_err());
    pairs.extend(named.iter().filter_map(|loc| pair(loc).ok()));
    // Locations that name one file in two ways (`w.bin`, `./w.bin`) resolve to one path:
    // the file is copied once.
    pairs.sort_by(|a, b| a.1.cmp(&b.1));
    pairs.dedup_by(|a, b| a.1 == b.1);
    Ok(pairs)
}

/// The external data files of the ONNX model now at `path` (the one a save replaces), which
/// the save may overwrite; none when there is no such model or it cannot be read.
fn existing_data_files(path: &Path) -> Vec<PathBuf> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Vec::new();
    };
    if !meta.is_file() {
        return Vec::new();
    }
    // A location is the value of an entry whose key is the string `location`: without those
    // eight bytes anywhere in the file there is none, and the file need not be decoded (one
    // scan instead of a decode of every record: 7 % of a 100,000-slice round trip). The scan
    // reads through a small buffer: mapping the file put all of it in this process's resident
    // set while a save was at its peak.
    if !file_contains(path, b"location").unwrap_or(true) {
        return Vec::new();
    }
    let Ok(bytes) = map_file(path) else {
        return Vec::new();
    };
    let Ok(m) = locations_only::Model::decode(bytes) else {
        return Vec::new();
    };
    let mut locs = Vec::new();
    if let Some(g) = &m.graph {
        g.locations(&mut locs);
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    locs.sort();
    locs.dedup();
    locs.iter()
        .filter_map(|l| tensor::resolve_location(dir, l).ok())
        .collect()
}

/// Whether `needle` occurs in the file at `path`, read front to back through a 1 MB buffer
/// (a match across two reads is found: each read keeps the last `needle.len() - 1` bytes of
/// the one before).
fn file_contains(path: &Path, needle: &[u8]) -> std::io::Result<bool> {
    use std::io::Read;
    let finder = memchr::memmem::Finder::new(needle);
    let keep = needle.len().saturating_sub(1);
    let mut file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; (1 << 20) + keep];
    let mut filled = 0;
    loop {
        let n = file.read(&mut buf[filled..])?;
        if n == 0 {
            return Ok(false);
        }
        filled += n;
        if finder.find(&buf[..filled]).is_some() {
            return Ok(true);
        }
        let tail = filled.saturating_sub(keep);
        buf.copy_within(tail..filled, 0);
        filled -= tail;
    }
}

/// The few fields of a model that say which external data files it uses (tags as in
/// `proto/onnx.proto`): the file a save is about to replace is decoded with these, so every
/// name, attribute value and tensor payload in it is skipped instead of copied.
mod locations_only {
    /// `ModelProto`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Model {
        #[prost(message, optional, tag = "7")]
        pub graph: Option<Graph>,
    }

    /// `GraphProto`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Graph {
        #[prost(message, repeated, tag = "1")]
        pub node: Vec<Node>,
        #[prost(message, repeated, tag = "5")]
        pub initializer: Vec<Tensor>,
    }

    /// `NodeProto`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Node {
        #[prost(message, repeated, tag = "5")]
        pub attribute: Vec<Attribute>,
    }

    /// `AttributeProto`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Attribute {
        #[prost(message, optional, tag = "5")]
        pub t: Option<Tensor>,
        #[prost(message, optional, boxed, tag = "6")]
        pub g: Option<Box<Graph>>,
        #[prost(message, repeated, tag = "10")]
        pub tensors: Vec<Tensor>,
        #[prost(message, repeated, tag = "11")]
        pub graphs: Vec<Graph>,
    }

    /// `TensorProto`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Tensor {
        #[prost(message, repeated, tag = "13")]
        pub external_data: Vec<Entry>,
        #[prost(int32, optional, tag = "14")]
        pub data_location: Option<i32>,
    }

    /// `StringStringEntryProto`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Entry {
        #[prost(string, optional, tag = "1")]
        pub key: Option<String>,
        #[prost(string, optional, tag = "2")]
        pub value: Option<String>,
    }

    impl Tensor {
        /// Every `location` entry (as `tensor::tensor_locations`).
        fn locations(&self) -> impl Iterator<Item = &str> {
            (self.data_location == Some(1))
                .then_some(&self.external_data)
                .into_iter()
                .flatten()
                .filter(|e| e.key.as_deref() == Some("location"))
                .filter_map(|e| e.value.as_deref())
        }
    }

    impl Graph {
        /// Every external-data location of this graph and its subgraphs (the same walk as
        /// `tensor::external_locations`).
        pub fn locations(&self, out: &mut Vec<String>) {
            out.extend(
                self.initializer
                    .iter()
                    .flat_map(Tensor::locations)
                    .map(str::to_string),
            );
            for a in self.node.iter().flat_map(|n| &n.attribute) {
                for t in a.t.iter().chain(&a.tensors) {
                    out.extend(t.locations().map(str::to_string));
                }
                for g in a.g.as_deref().into_iter().chain(&a.graphs) {
                    g.locations(out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn declared_dim() -> impl Strategy<Value = DeclaredDim> {
        prop_oneof![
            prop_oneof![
                Just(0u64),
                Just(127),
                Just(128),
                Just(1 << 40),
                Just(u64::MAX),
                any::<u64>()
            ]
            .prop_map(DeclaredDim::Known),
            "[a-z_ +*/()0-9\\-]{0,40}|é{60,70}".prop_map(DeclaredDim::Param),
            (any::<u64>(), proptest::option::of(any::<u64>()))
                .prop_map(|(lo, hi)| DeclaredDim::Interval(lo, hi)),
            Just(DeclaredDim::Unknown),
        ]
    }

    proptest! {
        /// A new `value_info` record written straight to bytes is prost's encoding of the
        /// message `value_info_proto` builds, for any name, element type and shape (varints of
        /// one to ten bytes, symbolic dims past 127 bytes, dims with neither field).
        #[test]
        fn new_value_info_is_prosts_encoding(
            name in "[a-z0-9_/.:]{0,20}|x{120,140}|ü{0,3}",
            dtype in proptest::option::of(prop_oneof![
                Just(DType::F32), Just(DType::I64), Just(DType::U8), Just(DType::Bool),
                Just(DType::BF16), Just(DType::String),
            ]),
            shape in proptest::option::of(proptest::collection::vec(declared_dim(), 0..70)),
        ) {
            let ty = ValueType { dtype, shape };
            let want = value_info_proto(&name, &ty, None).encode_to_vec();
            let got = new_value_info(&name, &ty);
            prop_assert_eq!(got.as_ref(), &want[..]);
        }
    }

    fn attr(name: &str, kind: AttributeType) -> proto::AttributeProto {
        let mut a = proto::AttributeProto {
            name: Some(name.into()),
            ..Default::default()
        };
        a.set_type(kind);
        match kind {
            AttributeType::Int => a.i = Some(-7),
            AttributeType::Ints => a.ints = vec![1, -2, 3],
            AttributeType::Float => a.f = Some(0.5),
            AttributeType::Floats => a.floats = vec![1.5, -2.0],
            AttributeType::String => a.s = Some(b"abc".to_vec().into()),
            _ => a.strings = vec![b"x".to_vec().into(), b"".to_vec().into()],
        }
        a
    }

    /// An ordinary node: names (one non-ASCII), an omitted optional input, two outputs, every
    /// plain attribute kind, a doc string and an overload.
    fn ordinary() -> NodeProto {
        NodeProto {
            input: vec!["x".into(), "".into(), "ß_ends".into()],
            output: vec!["y".into(), "y2".into()],
            name: Some("slice_1".into()),
            op_type: Some("Slice".into()),
            domain: Some("".into()),
            overload: Some("o".into()),
            doc_string: Some("doc".into()),
            attribute: [
                AttributeType::Int,
                AttributeType::Ints,
                AttributeType::Float,
                AttributeType::Floats,
                AttributeType::String,
                AttributeType::Strings,
            ]
            .iter()
            .enumerate()
            .map(|(i, &k)| attr(&format!("a{i}"), k))
            .collect(),
            ..Default::default()
        }
    }

    /// `light_node` gives what prost decodes, field for field.
    fn agrees(rec: &[u8], l: &LightNode) {
        let n = NodeProto::decode(rec).expect("a record light_node reads is one prost decodes");
        assert_eq!(l.name, n.name());
        assert_eq!(l.op_type, n.op_type());
        assert_eq!(l.domain, n.domain());
        assert_eq!(l.inputs, n.input.len());
        assert_eq!(
            l.outputs,
            n.output.iter().map(String::as_str).collect::<Vec<_>>()
        );
        assert_eq!(l.attributes, n.attribute);
    }

    #[test]
    fn an_ordinary_node_record_reads_in_place_as_prost_decodes_it() {
        let rec = ordinary().encode_to_vec();
        let l = light_node(&rec).expect("an ordinary node reads in place");
        assert_eq!(l.inputs, 3);
        assert_eq!(l.outputs, ["y", "y2"]);
        assert_eq!(l.attributes.len(), 6);
        agrees(&rec, &l);
        // Repeated optional fields: the last counts, as in prost.
        let mut twice = rec.clone();
        twice.extend(
            NodeProto {
                name: Some("second".into()),
                ..Default::default()
            }
            .encode_to_vec(),
        );
        let l = light_node(&twice).expect("reads");
        assert_eq!(l.name, "second");
        agrees(&twice, &l);
    }

    #[test]
    fn nodes_that_need_the_full_decode_are_left_to_it() {
        let mut constant = ordinary();
        constant.op_type = Some("Constant".into());
        constant.attribute.clear();
        let mut tensor = ordinary();
        tensor.attribute[0].t = Some(Box::default());
        let mut graph = ordinary();
        graph.attribute[0].g = Some(Box::default());
        let mut meta = ordinary();
        meta.metadata_props = vec![proto::StringStringEntryProto::default()];
        for n in [constant, tensor, graph, meta] {
            assert!(light_node(&n.encode_to_vec()).is_none(), "{n:?}");
        }
        // What prost refuses is never read in place: a string that is not UTF-8 (input,
        // output, name, op_type, doc_string, domain, overload), a string field with a varint
        // wire type, a key above u32::MAX (one that would read as unknown field 99 if cut to
        // 32 bits).
        let mut refused = Vec::new();
        for field in [1u8, 2, 3, 4, 6, 7, 8] {
            let mut rec = ordinary().encode_to_vec();
            rec.extend([field << 3 | 2, 0x02, 0xc3, 0x28]);
            refused.push(rec);
        }
        let mut bad_wire = ordinary().encode_to_vec();
        bad_wire.extend([0x18, 0x01]);
        refused.push(bad_wire);
        let mut big_key = ordinary().encode_to_vec();
        prost::encoding::encode_varint((1u64 << 32) + (99 << 3), &mut big_key);
        big_key.push(0x01);
        refused.push(big_key);
        for rec in refused {
            assert!(NodeProto::decode(&rec[..]).is_err(), "{rec:?}");
            assert!(light_node(&rec).is_none(), "{rec:?}");
        }
    }

    /// A raw-data initializer: [2, 3] int32 named "w".
    fn raw_tensor() -> proto::TensorProto {
        proto::TensorProto {
            dims: vec![2, 3],
            data_type: Some(6),
            name: Some("w".into()),
            doc_string: Some("doc".into()),
            raw_data: Some((0u8..24).collect::<Vec<u8>>().into()),
            ..Default::default()
        }
    }

    /// The tensor the full decode gives for `rec`, if any.
    fn full_tensor(rec: &[u8]) -> Option<Tensor> {
        let t = proto::TensorProto::decode(rec).ok()?;
        let dir = std::env::temp_dir();
        tensor_from_proto(&t, &mut ExternalFiles::new(&dir)).ok()
    }

    #[test]
    fn a_raw_initializer_reads_in_place_as_the_full_decode_gives_it() {
        let rec = Bytes::from(raw_tensor().encode_to_vec());
        let t = light_tensor(&rec).expect("raw data reads in place");
        assert_eq!((t.dtype, t.shape.clone()), (DType::I32, vec![2, 3]));
        assert_eq!(Some(t), full_tensor(&rec));
        // Dims one varint each instead of packed: the same tensor.
        let mut unpacked = raw_tensor();
        unpacked.dims.clear();
        let mut rec = unpacked.encode_to_vec();
        for d in [2u64, 3] {
            rec.push(0x08);
            prost::encoding::encode_varint(d, &mut rec);
        }
        let rec = Bytes::from(rec);
        let t = light_tensor(&rec).expect("unpacked dims read in place");
        assert_eq!(t.shape, [2, 3]);
        assert_eq!(Some(t), full_tensor(&rec));
    }

    #[test]
    fn initializers_that_need_the_full_decode_are_left_to_it() {
        let mut typed = raw_tensor();
        typed.raw_data = None;
        typed.int32_data = (0..6).collect();
        let mut external = raw_tensor();
        external.data_location = Some(1);
        let mut segment = raw_tensor();
        segment.segment = Some(Default::default());
        let mut strings = raw_tensor();
        strings.data_type = Some(8);
        let mut negative = raw_tensor();
        negative.dims = vec![-2, -3];
        let mut short = raw_tensor();
        short.raw_data = Some(vec![0u8; 23].into());
        let mut unknown_type = raw_tensor();
        unknown_type.data_type = Some(1000);
        let mut meta = raw_tensor();
        meta.metadata_props = vec![Default::default()];
        for t in [
            typed,
            external,
            segment,
            strings,
            negative,
            short,
            unknown_type,
            meta,
        ] {
            assert!(
                light_tensor(&Bytes::from(t.encode_to_vec())).is_none(),
                "{t:?}"
            );
        }
        // What prost refuses: a name or doc string that is not UTF-8, a data type with a
        // length-delimited wire type, packed dims cut inside a varint.
        let mut refused = Vec::new();
        for field in [8u8, 12] {
            let mut rec = raw_tensor().encode_to_vec();
            rec.extend([field << 3 | 2, 0x02, 0xc3, 0x28]);
            refused.push(rec);
        }
        let mut bad_wire = raw_tensor().encode_to_vec();
        bad_wire.extend([0x12, 0x01, 0x06]);
        refused.push(bad_wire);
        let mut cut = raw_tensor().encode_to_vec();
        cut.extend([0x0a, 0x01, 0x80]);
        refused.push(cut);
        for rec in refused {
            assert!(proto::TensorProto::decode(&rec[..]).is_err(), "{rec:?}");
            assert!(light_tensor(&Bytes::from(rec.clone())).is_none(), "{rec:?}");
        }
    }

    /// `rec` with each edit applied in turn (0: replace the byte at the index, 1: insert a
    /// byte there, 2: cut the record there), then `tail` appended.
    fn edited(
        mut rec: Vec<u8>,
        edits: Vec<(prop::sample::Index, u8, u8)>,
        tail: Vec<u8>,
    ) -> Vec<u8> {
        for (at, byte, how) in edits {
            if rec.is_empty() {
                break;
            }
            let i = at.index(rec.len());
            match how {
                0 => rec[i] = byte,
                1 => rec.insert(i, byte),
                _ => rec.truncate(i),
            }
        }
        rec.extend(tail);
        rec
    }

    /// A needle is found wherever it lies: first bytes, across the boundary of two reads,
    /// last bytes; and not found in a file that lacks it or is shorter than it.
    /// A chain of `n` `Add` nodes over `n` scalar initializers: node `i` is `n{i}`, computes
    /// `v{i} = v{i-1} + c{i}` (`x` for `i = 0`). Every 1000th initializer keeps its value in
    /// `int64_data` and every 997th node is a `Constant` (records the full decode reads, in the
    /// middle of windows).
    fn chain(n: usize) -> ModelProto {
        let vi = |name: &str| ValueInfoProto {
            name: Some(name.into()),
            ..Default::default()
        };
        let initializer = (0..n)
            .map(|i| {
                let mut t = proto::TensorProto {
                    data_type: Some(7),
                    name: Some(format!("c{i}")),
                    ..Default::default()
                };
                if i % 1000 == 0 {
                    t.int64_data = vec![i as i64];
                } else {
                    t.raw_data = Some((i as i64).to_le_bytes().to_vec().into());
                }
                t
            })
            .collect();
        let node = (0..n)
            .map(|i| {
                let prev = if i == 0 {
                    "x".into()
                } else {
                    format!("v{}", i - 1)
                };
                let mut node = NodeProto {
                    input: vec![prev, format!("c{i}")],
                    output: vec![format!("v{i}")],
                    name: Some(format!("n{i}")),
                    op_type: Some("Add".into()),
                    ..Default::default()
                };
                if i % 997 == 0 {
                    node.input.clear();
                    node.op_type = Some("Constant".into());
                    let mut a = attr("value_int", AttributeType::Int);
                    a.i = Some(i as i64);
                    node.attribute = vec![a];
                }
                node
            })
            .collect();
        ModelProto {
            ir_version: Some(8),
            opset_import: vec![proto::OperatorSetIdProto {
                domain: Some(String::new()),
                version: Some(17),
            }],
            graph: Some(GraphProto {
                node,
                initializer,
                input: vec![vi("x")],
                output: vec![vi(&format!("v{}", n - 1))],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn decoded(m: &ModelProto) -> Result<OnnxModel> {
        OnnxModel::decode(
            Path::new("chain.onnx"),
            Bytes::from(m.encode_to_vec()),
            None,
        )
    }

    /// Records are read on a thread pool a window ahead of the graph being built: the graph
    /// of a file of several windows is still the file's, node for node, in order, and of two
    /// faults in different windows the first in the file is reported.
    #[test]
    fn a_file_of_many_windows_reads_in_file_order() {
        let n = 3 * WINDOW + 17;
        let model = decoded(&chain(n)).expect("chain loads");
        let graph = &model.graph;
        assert_eq!(graph.g.node_count(), 1 + n + n + 1);
        let (mut nodes, mut inits) = (vec![None; n], vec![None; n]);
        for ix in graph.g.node_indices() {
            match graph.node(ix).origin {
                Origin::OnnxNode(i) => nodes[i as usize] = Some(ix),
                Origin::OnnxInitializer(i) => inits[i as usize] = Some(ix),
                _ => {}
            }
        }
        for i in 0..n {
            let (Some(node), Some(init)) = (nodes[i], inits[i]) else {
                panic!("record {i} has no node");
            };
            let c = graph.node(init);
            assert_eq!(c.name, format!("c{i}"));
            let NodeKind::Const(t) = &c.kind else {
                panic!("c{i} is not a constant");
            };
            assert_eq!(t.to_i64_vec(), Some(vec![i as i64]), "c{i}");
            let v = graph.node(node);
            assert_eq!(
                (v.name.as_str(), v.outputs[0].name.as_str()),
                (&*format!("n{i}"), &*format!("v{i}"))
            );
            if i % 997 == 0 {
                assert_eq!(v.op_type, "Constant");
                assert_eq!(v.num_inputs, 0);
                continue;
            }
            assert_eq!(v.op_type, "Add");
            let prev = graph.input(node, 0).expect("input 0 wired");
            let want = if i == 0 {
                "x".to_string()
            } else {
                format!("n{}", i - 1)
            };
            assert_eq!(
                (graph.node(prev.node).name.as_str(), prev.port),
                (want.as_str(), 0),
                "n{i}"
            );
            let c = graph.input(node, 1).expect("input 1 wired");
            assert_eq!(c.node, init, "n{i} input 1");
        }
        let fault = |m: &ModelProto| match decoded(m) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a faulty model loads"),
        };
        // Two nodes producing a name produced before: the first in the file is named.
        let mut m = chain(n);
        let g = m.graph.as_mut().expect("graph");
        g.node[2 * WINDOW + 5].output[0] = "v5".into();
        g.node[3 * WINDOW + 1].output[0] = "v6".into();
        let e = fault(&m);
        assert!(
            e.contains(&format!("n{}", 2 * WINDOW + 5)) && e.contains("'v5'"),
            "{e}"
        );
        // Two inputs no one produces.
        let mut m = chain(n);
        let g = m.graph.as_mut().expect("graph");
        g.node[WINDOW + 3].input[1] = "nowhere".into();
        g.node[2 * WINDOW + 9].input[1] = "elsewhere".into();
        let e = fault(&m);
        assert!(
            e.contains(&format!("n{}", WINDOW + 3)) && e.contains("'nowhere'"),
            "{e}"
        );
        // Two initializers reusing a name.
        let mut m = chain(n);
        let g = m.graph.as_mut().expect("graph");
        g.initializer[2 * WINDOW + 1].name = Some("c7".into());
        g.initializer[3 * WINDOW + 2].name = Some("c8".into());
        let e = fault(&m);
        assert!(e.contains("'c7' is defined twice"), "{e}");
    }

    #[test]
    fn file_contains_finds_a_needle_across_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mb = 1 << 20;
        for at in [0, mb - 4, mb - 1, mb, 2 * mb - 3, 3 * mb - 8] {
            let mut bytes = vec![b'l'; 3 * mb];
            bytes[at..at + 8].copy_from_slice(b"location");
            std::fs::write(&path, &bytes).unwrap();
            assert!(file_contains(&path, b"location").unwrap(), "at {at}");
            // One byte of it changed: no match anywhere.
            bytes[at + 7] = b'x';
            std::fs::write(&path, &bytes).unwrap();
            assert!(
                !file_contains(&path, b"location").unwrap(),
                "at {at}, broken"
            );
        }
        std::fs::write(&path, b"locat").unwrap();
        assert!(!file_contains(&path, b"location").unwrap());
        std::fs::write(&path, b"").unwrap();
        assert!(!file_contains(&path, b"location").unwrap());
    }

    /// Resident size in KB of the mapping that starts at `addr`, from `/proc/self/smaps`.
    #[cfg(target_os = "linux")]
    fn resident_kb(addr: *const u8) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let start = format!("{:x}-", addr as usize);
        let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start));
        assert!(lines.next().is_some(), "no mapping starts at {start}");
        let rss = lines.find(|l| l.starts_with("Rss:")).expect("an Rss line");
        rss.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// Loading gives back the pages of the model file it read, and a save gives back those it
    /// has moved past; what the save writes is still prost's encoding of the model, byte for
    /// byte (records written from the file after their pages were given back read the same).
    #[cfg(target_os = "linux")]
    #[test]
    fn pages_of_the_file_read_are_given_back_and_the_bytes_written_are_the_same() {
        let n = 16_000;
        let doc = "d".repeat(1000);
        let node = |i: usize| NodeProto {
            input: vec![format!("v{i}")],
            output: vec![format!("v{}", i + 1)],
            name: Some(format!("n{i}")),
            op_type: Some("Identity".into()),
            doc_string: Some(doc.clone()),
            ..Default::default()
        };
        let vi = |name: &str| ValueInfoProto {
            name: Some(name.into()),
            ..Default::default()
        };
        let m = ModelProto {
            ir_version: Some(8),
            opset_import: vec![proto::OperatorSetIdProto {
                domain: Some(String::new()),
                version: Some(17),
            }],
            graph: Some(GraphProto {
                node: (0..n).map(node).collect(),
                input: vec![vi("v0")],
                output: vec![vi(&format!("v{n}"))],
                ..Default::default()
            }),
            ..Default::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chain.onnx");
        let bytes = m.encode_to_vec();
        std::fs::write(&path, &bytes).unwrap();
        let file_kb = bytes.len() as u64 / 1024;
        assert!(file_kb > 15_000, "{file_kb} KB");

        let mut model = OnnxModel::load(&path).unwrap();
        let map = model.sources[0].map.as_ptr();
        let after_load = resident_kb(map);
        assert!(
            after_load < 1024,
            "{after_load} KB of {file_kb} KB resident after load"
        );

        // A changed node: the graph is rebuilt, every other record is written from the file.
        let ix = model
            .graph
            .g
            .node_indices()
            .find(|&ix| model.graph.node(ix).name == "n7")
            .unwrap();
        model.graph.node_mut(ix).name = "renamed".into();
        model.graph.node_mut(ix).dirty = true;
        let want = model.to_proto().unwrap().encode_to_vec();
        let out = dir.path().join("out.onnx");
        model.save(&out).unwrap();
        let after_save = resident_kb(map);
        assert!(
            after_save < file_kb / 2,
            "{after_save} KB of {file_kb} KB resident after save"
        );
        assert!(
            std::fs::read(&out).unwrap() == want,
            "the bytes written are prost's"
        );
    }

    proptest! {
        /// Whatever the bytes, a tensor `light_tensor` reads is the one the full decode gives.
        #[test]
        fn light_tensor_never_reads_what_the_full_decode_would_not(
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
            tail in prop::collection::vec(any::<u8>(), 0..12),
        ) {
            let rec = Bytes::from(edited(raw_tensor().encode_to_vec(), edits, tail));
            if let Some(t) = light_tensor(&rec) {
                prop_assert_eq!(Some(t), full_tensor(&rec));
            }
        }
    }

    proptest! {
        /// Whatever the bytes, a record `light_node` reads is one prost decodes to the same
        /// values: bytes of a real record changed, cut or extended at random.
        #[test]
        fn light_node_never_reads_what_prost_would_not(
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
            tail in prop::collection::vec(any::<u8>(), 0..12),
        ) {
            let rec = edited(ordinary().encode_to_vec(), edits, tail);
            if let Some(l) = light_node(&rec) {
                agrees(&rec, &l);
            }
        }
    }
}
