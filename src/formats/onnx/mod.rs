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

mod build;
mod external;
mod light;
mod read;
mod rebuild;
pub mod subgraph;
mod tensor;
pub mod write;

use build::*;
use external::*;
use light::*;
pub(crate) use read::holds_bodies;
use read::*;
use rebuild::*;

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
        let invalid = |e: prost::DecodeError| fmt_err(path, format!("not a valid ONNX model: {e}"));
        let (mut proto, mut records, walked) = decode_model(bytes.clone()).map_err(invalid)?;
        let new_ext = || {
            let mut ext = ExternalFiles::new(path.parent().unwrap_or(Path::new(".")));
            ext.also_inside(crate::formats::fs::resolved_model_dir(path));
            ext
        };
        let mut ext = new_ext();
        let Some(g) = proto.graph.as_ref() else {
            return Err(fmt_err(path, "ONNX model has no graph"));
        };
        // Records split from the file are taken only if every one walks ([`walks`]). The
        // build reads each in full (one that does not walk fails it): a build that succeeds
        // walked them all, and one that fails is redone from prost's decode of the whole
        // file when a record does not walk (a walk of every record before the build was a
        // twentieth of the load of wide_sym_100k.onnx, on the pool while this thread waited).
        let built = match build_graph(path, g, &records, &mut ext) {
            Ok(built) => built,
            Err(e) if walked || records_walk_all(&records) => return Err(e),
            Err(_) => {
                (proto, records) = decode_whole(bytes).map_err(invalid)?;
                ext = new_ext();
                let Some(g) = proto.graph.as_ref() else {
                    return Err(fmt_err(path, "ONNX model has no graph"));
                };
                build_graph(path, g, &records, &mut ext)?
            }
        };
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

    /// Gives back this process's pages of the model file's map, when it is the read-only map
    /// `load` made (see there): a pass that reads many constants from it (`fold`) calls this
    /// now and then, so those pages do not add up in the resident set. A page read again is
    /// mapped again from the page cache.
    pub(crate) fn release_map_pages(&self) {
        if let (true, Some(s)) = (self.releasable_map, self.sources.first()) {
            // SAFETY: `releasable_map` is set only by `load`, for `sources[0]`, the whole
            // read-only shared map of the model file.
            unsafe { crate::formats::fs::release_resident_range(&s.map) };
        }
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
        // External data copied to another directory is named after the output; the files
        // are listed under the names read, then the tensors take the new names.
        let renames = output_names(&self.path, path, graph.as_ref());
        let copies = external_copies(&self.path, path, graph.as_ref(), None, &renames)?;
        let mut data = None;
        if let Some(g) = graph.as_mut() {
            rename_locations(g, &renames);
            if !self.is_untouched() {
                let written: Vec<String> = renames.iter().map(|(_, w)| w.clone()).collect();
                data = self.externalize(g, path, &written);
            }
        }
        let graph = graph.as_ref();
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
        written: &[String],
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
        // The locations read, and those the copies of their files take (`written`).
        let mut taken: Vec<String> = written.to_vec();
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

#[cfg(test)]
mod tests;
