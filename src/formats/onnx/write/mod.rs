//! Streaming protobuf writer for ONNX models.
//!
//! Encodes a [`ModelProto`] to a file field by field, in tag order exactly as prost's
//! `encode_to_vec` would (so the bytes are the same), without building the encoded model in
//! memory: small fields go through a bounded buffer, and large byte fields (`raw_data`,
//! `string_data`) are written from their `Bytes` directly, or, when they lie in a memory-mapped
//! input file, copied from that file so their pages are never faulted into this process
//! (file to file, or through small buffers when they land shifted: see the private module
//! `formats::copy`). The writes run on a writer thread while the rest is encoded.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

use bytes::Bytes;
use prost::encoding::{self, encode_key, encode_varint, WireType};
use prost::Message;

use super::proto::{GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto};
use crate::formats::copy::{with_sink, Sink};
use crate::ir::Lazy;

pub use super::external::{externalize, in_sources, EXTERNAL_ALIGN, EXTERNAL_MIN, PROTO_LIMIT};
pub use rec::Rec;

mod rec;

/// Byte fields at least this long are written outside the buffer (and copied file to file when
/// they lie in a mapped file).
const BIG: usize = 64 * 1024;
/// The buffer is written out when it grows past this.
const FLUSH_AT: usize = 1 << 20;
/// The buffer's capacity (room for the record that takes it past [`FLUSH_AT`]).
const BUF_CAP: usize = FLUSH_AT + 64 * 1024;

/// A memory-mapped file tensor bytes may point into, with an open handle to copy from.
#[derive(Debug, Clone)]
pub struct Source {
    /// The whole mapping.
    pub map: Bytes,
    /// The mapped file (the same inode the map was made from).
    pub file: Option<Arc<File>>,
}

/// A record to write that may still be encoded: as read (its bytes are written as they are), or
/// decoded.
#[derive(Debug, Clone)]
pub enum Out<'a, M> {
    /// Unchanged: the bytes of the record read.
    Encoded(&'a Bytes),
    /// Rebuilt or new, kept encoded (a few dozen bytes, where the decoded record is a few
    /// hundred in several allocations).
    Built(Bytes),
    /// Rebuilt, new, or read decoded.
    Record(Rec<'a, M>),
}

/// A node to write.
pub type NodeOut<'a> = Out<'a, NodeProto>;
/// An initializer to write.
pub type InitOut<'a> = Out<'a, TensorProto>;

impl<M: Message + Default + Clone> Out<'_, M> {
    /// A rebuilt or new record, kept encoded.
    pub fn built(m: &M) -> Self {
        Out::Built(Bytes::from(m.encode_to_vec()))
    }

    /// The record's bytes when it is kept encoded.
    pub fn encoded(&self) -> Option<&Bytes> {
        match self {
            Out::Encoded(b) => Some(b),
            Out::Built(b) => Some(b),
            Out::Record(_) => None,
        }
    }

    /// The decoded record (an encoded one is decoded).
    pub fn into_owned(self) -> Result<M, prost::DecodeError> {
        match self {
            Out::Encoded(b) => M::decode(b.clone()),
            Out::Built(b) => M::decode(b),
            Out::Record(r) => Ok(r.into_owned()),
        }
    }

    /// The decoded record for changing when `pred` holds for it (an encoded record is decoded
    /// to ask, and stays encoded when `pred` does not hold).
    pub fn to_mut_if(
        &mut self,
        pred: impl FnOnce(&M) -> bool,
    ) -> Result<Option<&mut M>, prost::DecodeError> {
        match self {
            Out::Encoded(_) | Out::Built(_) => {
                let m = match self {
                    Out::Encoded(b) => M::decode((*b).clone())?,
                    Out::Built(b) => M::decode(b.clone())?,
                    Out::Record(_) => return Ok(None),
                };
                if !pred(&m) {
                    return Ok(None);
                }
                *self = Out::Record(Rec::owned(m));
            }
            Out::Record(r) => {
                if !pred(r) {
                    return Ok(None);
                }
            }
        }
        Ok(match self {
            Out::Record(r) => Some(r.to_mut()),
            Out::Encoded(_) | Out::Built(_) => None,
        })
    }

    /// True for a rebuilt or new record.
    pub fn is_owned(&self) -> bool {
        match self {
            Out::Encoded(_) => false,
            Out::Built(_) => true,
            Out::Record(r) => r.is_owned(),
        }
    }

    /// The length of the record's field `tag` (key and length included).
    fn field_len(&self, tag: u32) -> usize {
        match (self.encoded(), self) {
            (Some(b), _) => {
                encoding::key_len(tag) + encoding::encoded_len_varint(b.len() as u64) + b.len()
            }
            (None, Out::Record(r)) => encoding::message::encoded_len(tag, r.as_ref()),
            (None, _) => 0,
        }
    }
}

/// The external-data locations in the tensor attributes and subgraphs of the encoded node
/// record `b` (the one read of each tensor, or with `all` every entry). A small record without the bytes `location` has none and is not decoded; a big
/// one is decoded without being read through (its tensor bytes are not touched).
///
/// A small record without the byte of an attribute's key (field 5, length-delimited: `0x2a`)
/// has no attribute, so no tensor nor subgraph: one `memchr`, where the search for
/// `location` in every record of a graph of 300,000 nodes was a third of its save.
pub fn encoded_node_locations(b: &Bytes, out: &mut Vec<String>, all: bool) {
    const ATTRIBUTE_KEY: u8 = (5 << 3) | 2;
    if b.len() < BIG
        && (memchr::memchr(ATTRIBUTE_KEY, b).is_none()
            || memchr::memmem::find(b, b"location").is_none())
    {
        return;
    }
    if let Ok(n) = NodeProto::decode(b.clone()) {
        super::tensor::node_external_locations(&n, out, all);
    }
}

/// The external-data `location` of the encoded tensor record `b`, if it has one. Only a record
/// with an `external_data` or `data_location` field is decoded; the walk to find them skips
/// over the tensor bytes (a weight's pages are not read).
pub fn encoded_tensor_location(b: &Bytes, out: &mut Vec<String>, all: bool) {
    let external = super::fields(b).any(|f| f.is_none_or(|(n, _, _, _)| n == 13 || n == 14));
    if !external {
        return;
    }
    if let Ok(t) = TensorProto::decode(b.clone()) {
        super::tensor::push_locations(&t, out, all);
    }
}

/// A graph to write: the original record for the fields no pass rebuilds, and the rebuilt
/// lists, each entry borrowed from the original record unless a pass changed it.
#[derive(Debug, Clone)]
pub struct GraphOut<'a> {
    /// The original graph record (name, doc string, inputs, sparse initializers,
    /// quantization annotations and metadata are written from it).
    pub base: &'a GraphProto,
    /// Nodes in the order to write.
    pub node: Vec<NodeOut<'a>>,
    /// Initializers in the order to write.
    pub initializer: Vec<InitOut<'a>>,
    /// `value_info` entries.
    pub value_info: Vec<Out<'a, ValueInfoProto>>,
    /// Graph outputs (a pass may refine their types).
    pub output: Vec<Rec<'a, ValueInfoProto>>,
}

/// Every record of `v`, borrowed.
fn borrowed<M>(v: &[M]) -> Vec<Out<'_, M>> {
    v.iter().map(|m| Out::Record(Rec::Borrowed(m))).collect()
}

impl<'a> GraphOut<'a> {
    /// The graph `g` as it is.
    pub fn untouched(g: &'a GraphProto) -> GraphOut<'a> {
        GraphOut {
            base: g,
            node: borrowed(&g.node),
            initializer: borrowed(&g.initializer),
            value_info: borrowed(&g.value_info),
            output: g.output.iter().map(Rec::Borrowed).collect(),
        }
    }

    /// The graph `g` as it is, its nodes and initializers being the encoded records `nodes`
    /// and `inits` (`g.node` and `g.initializer` are not read).
    pub fn untouched_encoded(
        g: &'a GraphProto,
        nodes: &'a [Bytes],
        inits: &'a [Bytes],
    ) -> GraphOut<'a> {
        GraphOut {
            base: g,
            node: nodes.iter().map(Out::Encoded).collect(),
            initializer: inits.iter().map(Out::Encoded).collect(),
            value_info: borrowed(&g.value_info),
            output: g.output.iter().map(Rec::Borrowed).collect(),
        }
    }

    /// As an owned record (encoded records are decoded).
    pub fn into_proto(self) -> Result<GraphProto, prost::DecodeError> {
        fn own<M: Clone>(v: Vec<Rec<'_, M>>) -> Vec<M> {
            v.into_iter().map(Rec::into_owned).collect()
        }
        fn decode<M: Message + Default + Clone>(
            v: Vec<Out<'_, M>>,
        ) -> Result<Vec<M>, prost::DecodeError> {
            v.into_iter().map(Out::into_owned).collect()
        }
        let mut initializer = decode(self.initializer)?;
        // Lazy bytes' stand-ins are for the streaming writer: a record is given its bytes.
        for t in &mut initializer {
            if let Some(l) = t.raw_data.as_deref().and_then(Lazy::behind) {
                t.raw_data = Some(l.bytes().clone());
            }
        }
        Ok(GraphProto {
            node: decode(self.node)?,
            name: self.base.name.clone(),
            initializer,
            sparse_initializer: self.base.sparse_initializer.clone(),
            doc_string: self.base.doc_string.clone(),
            input: self.base.input.clone(),
            output: own(self.output),
            value_info: decode(self.value_info)?,
            quantization_annotation: self.base.quantization_annotation.clone(),
            metadata_props: self.base.metadata_props.clone(),
        })
    }

    /// The length of the encoded graph message (without its own tag and length).
    pub fn encoded_len(&self) -> usize {
        use encoding::{message, string};
        fn msgs<M: Message + Clone>(tag: u32, v: &[Rec<'_, M>]) -> usize {
            v.iter()
                .map(|m| message::encoded_len(tag, m.as_ref()))
                .sum()
        }
        let b = self.base;
        self.node.iter().map(|n| n.field_len(1)).sum::<usize>()
            + b.name.as_ref().map_or(0, |v| string::encoded_len(2, v))
            + self
                .initializer
                .iter()
                .map(|t| t.field_len(5))
                .sum::<usize>()
            + b.doc_string
                .as_ref()
                .map_or(0, |v| string::encoded_len(10, v))
            + message::encoded_len_repeated(11, &b.input)
            + msgs(12, &self.output)
            + self
                .value_info
                .iter()
                .map(|v| v.field_len(13))
                .sum::<usize>()
            + message::encoded_len_repeated(14, &b.quantization_annotation)
            + message::encoded_len_repeated(15, &b.sparse_initializer)
            + message::encoded_len_repeated(16, &b.metadata_props)
    }

    /// The external-data locations the graph refers to (subgraphs included): the one read of
    /// each tensor, or with `all` every `location` entry.
    pub fn external_locations(&self, out: &mut Vec<String>, all: bool) {
        for t in &self.initializer {
            match (t.encoded(), t) {
                (Some(b), _) => encoded_tensor_location(b, out, all),
                (None, Out::Record(r)) => super::tensor::push_locations(r, out, all),
                (None, _) => {}
            }
        }
        for n in &self.node {
            match (n.encoded(), n) {
                (Some(b), _) => encoded_node_locations(b, out, all),
                (None, Out::Record(r)) => super::tensor::node_external_locations(r, out, all),
                (None, _) => {}
            }
        }
    }
}

struct StreamWriter<'a, 'w> {
    /// The output's writer thread (see [`crate::formats::copy`]).
    sink: &'w mut Sink<'a>,
    buf: Vec<u8>,
    sources: &'a [Source],
    /// A range of a source file whose bytes are the next bytes of the output, not yet copied:
    /// a big byte field, extended by every following byte that is the same as the source's
    /// next byte, so an unchanged stretch of the input (tensor headers and data alike) is
    /// one copy, not one per tensor.
    pending: Option<Pending>,
    /// By source: `Some(offset)` for a map whose pages may be given back (see
    /// [`write_model_releasing`]), the offset up to which they were; `None` for the others.
    released: Vec<Option<u64>>,
}

/// Pages of a source the output has moved past are given back this many bytes at a time.
const RELEASE_EVERY: u64 = 4 << 20;

/// Bytes `start..end` of `sources[src]`'s file, still to be copied to the output.
#[derive(Debug, Clone, Copy)]
struct Pending {
    src: usize,
    start: u64,
    end: u64,
}

impl<'a, 'w> StreamWriter<'a, 'w> {
    fn new(sink: &'w mut Sink<'a>, sources: &'a [Source]) -> StreamWriter<'a, 'w> {
        let buf = sink.data_buf(BUF_CAP);
        StreamWriter {
            sink,
            buf,
            sources,
            pending: None,
            released: vec![None; sources.len()],
        }
    }

    /// Notes that the bytes `b` were read to be written: when they lie in a source whose
    /// pages may be given back, the pages before them are given back (see
    /// [`StreamWriter::release_behind`]).
    fn read_from_source(&mut self, b: &[u8]) {
        if self.released.iter().all(Option::is_none) {
            return;
        }
        let p = b.as_ptr() as usize;
        for (src, s) in self.sources.iter().enumerate() {
            let base = s.map.as_ptr() as usize;
            if p >= base && p < base + s.map.len() {
                self.release_behind(src, (p - base) as u64);
                return;
            }
        }
    }

    /// Gives back the pages of `sources[src]` before `offset`, the point the output has
    /// read up to, when that source's pages may be given back: records are written in about
    /// the order they were read, each unchanged one read (and compared) once, so a save no
    /// longer holds the whole input file in its resident set. A page read again later (a
    /// record written out of order) is mapped again.
    fn release_behind(&mut self, src: usize, offset: u64) {
        let Some(Some(from)) = self.released.get(src).copied() else {
            return;
        };
        const PAGE: u64 = 4096;
        let upto = offset / PAGE * PAGE;
        if upto < from + RELEASE_EVERY {
            return;
        }
        let map = &self.sources[src].map;
        if let (Ok(a), Ok(b)) = (usize::try_from(from), usize::try_from(upto)) {
            if let Some(range) = map.get(a..b) {
                // SAFETY: `write_model_releasing`'s caller vouched that this source's map is
                // a whole read-only shared file map; `a` is a multiple of the page size and
                // the map starts on a page.
                unsafe { crate::formats::fs::release_resident_range(range) };
            }
        }
        self.released[src] = Some(upto);
    }

    /// Expects the output to start as the file of `sources[src]` does (an unchanged model
    /// is then copied whole).
    fn expect_source_prefix(&mut self, src: usize) {
        if self.sources.get(src).is_some_and(|s| s.file.is_some()) {
            self.pending = Some(Pending {
                src,
                start: 0,
                end: 0,
            });
        }
    }

    /// True when the buffered bytes are the bytes of the source that follow `p`.
    fn buf_continues(&self, p: &Pending) -> bool {
        let map = &self.sources[p.src].map;
        let Ok(end) = usize::try_from(p.end) else {
            return false;
        };
        end.checked_add(self.buf.len())
            .and_then(|e| map.get(end..e))
            .is_some_and(|s| s == &self.buf[..])
    }

    /// Copies the pending source range to the output.
    fn flush_pending(&mut self) -> io::Result<()> {
        let Some(p) = self.pending.take() else {
            return Ok(());
        };
        let want = p.end - p.start;
        if want == 0 {
            return Ok(());
        }
        let sources: &'a [Source] = self.sources;
        let Some(file) = sources[p.src].file.as_deref() else {
            return Err(io::Error::other("a source range to copy has no file"));
        };
        self.sink.copy(file, p.start, want)
    }

    /// Moves the buffered bytes on: into the pending range when they continue it, else
    /// (after the pending range) to the output.
    fn flush(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        if let Some(p) = self.pending {
            if self.buf_continues(&p) {
                let p = Pending {
                    end: p.end + self.buf.len() as u64,
                    ..p
                };
                self.pending = Some(p);
                self.buf.clear();
                self.release_behind(p.src, p.end);
                return Ok(());
            }
            self.flush_pending()?;
        }
        self.sink.flush_buf(&mut self.buf, BUF_CAP)
    }

    /// Writes out everything: the last call.
    fn finish(&mut self) -> io::Result<()> {
        self.flush()?;
        self.flush_pending()
    }

    fn maybe_flush(&mut self) -> io::Result<()> {
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    /// Where `b` lies in a mapped source file: (index in `sources`, offset).
    fn locate(&self, b: &Bytes) -> Option<(usize, u64)> {
        let p = b.as_ptr() as usize;
        self.sources.iter().enumerate().find_map(|(k, s)| {
            let base = s.map.as_ptr() as usize;
            s.file.as_ref()?;
            let end = p.checked_add(b.len())?;
            if p >= base && end <= base + s.map.len() {
                Some((k, (p - base) as u64))
            } else {
                None
            }
        })
    }

    /// Writes the contents of a byte field.
    fn bytes(&mut self, b: &Bytes) -> io::Result<()> {
        if b.len() < BIG {
            self.buf.extend_from_slice(b);
            if self.buf.len() >= FLUSH_AT {
                // Once per flush: the last record read tells how far the input was read.
                self.read_from_source(b);
            }
            return self.maybe_flush();
        }
        self.flush()?;
        if let Some(l) = Lazy::behind(b) {
            return self.lazy_bytes(&l);
        }
        if let Some((src, offset)) = self.locate(b) {
            let len = b.len() as u64;
            if let Some(p) = &mut self.pending {
                if self.buf.is_empty() && p.src == src && p.end == offset {
                    p.end += len;
                    return Ok(());
                }
            }
            self.flush_pending()?;
            self.pending = Some(Pending {
                src,
                start: offset,
                end: offset + len,
            });
            return Ok(());
        }
        self.flush_pending()?;
        self.sink.bytes(b)
    }

    /// Writes lazy bytes (a folded slice), produced run by run into the buffer, which is
    /// written out whenever it fills: only a buffer's worth is ever in memory. The source
    /// pages the runs were read from are given back behind them (see
    /// [`StreamWriter::read_from_source`]).
    fn lazy_bytes(&mut self, l: &Lazy) -> io::Result<()> {
        self.flush_pending()?;
        if let Some(b) = l.computed() {
            return self.sink.bytes(b);
        }
        let mut result = Ok(());
        l.producer().runs(&mut |mut run: &[u8]| {
            while !run.is_empty() && result.is_ok() {
                let room = FLUSH_AT.saturating_sub(self.buf.len()).max(1);
                let (now, rest) = run.split_at(room.min(run.len()));
                self.buf.extend_from_slice(now);
                run = rest;
                if self.buf.len() >= FLUSH_AT {
                    self.read_from_source(now);
                    result = self.sink.flush_buf(&mut self.buf, BUF_CAP);
                }
            }
        });
        result
    }

    /// A length-delimited byte field whose contents may be big.
    fn bytes_field(&mut self, tag: u32, b: &Bytes) -> io::Result<()> {
        encode_key(tag, WireType::LengthDelimited, &mut self.buf);
        encode_varint(b.len() as u64, &mut self.buf);
        self.bytes(b)
    }

    fn message_header(&mut self, tag: u32, len: usize) {
        encode_key(tag, WireType::LengthDelimited, &mut self.buf);
        encode_varint(len as u64, &mut self.buf);
    }

    fn messages<M: Message>(&mut self, tag: u32, ms: &[M]) -> io::Result<()> {
        for m in ms {
            encoding::message::encode(tag, m, &mut self.buf);
            self.maybe_flush()?;
        }
        Ok(())
    }

    fn tensor(&mut self, t: &TensorProto) -> io::Result<()> {
        use encoding::{double, float, int32, int64, message, string, uint64};
        let b = &mut self.buf;
        int64::encode_repeated(1, &t.dims, b);
        if let Some(v) = &t.data_type {
            int32::encode(2, v, b);
        }
        if let Some(v) = &t.segment {
            message::encode(3, v, b);
        }
        float::encode_packed(4, &t.float_data, b);
        int32::encode_packed(5, &t.int32_data, b);
        for s in &t.string_data {
            self.bytes_field(6, s)?;
        }
        let b = &mut self.buf;
        int64::encode_packed(7, &t.int64_data, b);
        if let Some(v) = &t.name {
            string::encode(8, v, b);
        }
        if let Some(v) = &t.raw_data {
            self.bytes_field(9, v)?;
        }
        let b = &mut self.buf;
        double::encode_packed(10, &t.double_data, b);
        uint64::encode_packed(11, &t.uint64_data, b);
        if let Some(v) = &t.doc_string {
            string::encode(12, v, b);
        }
        message::encode_repeated(13, &t.external_data, b);
        if let Some(v) = &t.data_location {
            int32::encode(14, v, b);
        }
        message::encode_repeated(16, &t.metadata_props, b);
        self.maybe_flush()
    }

    fn cow_messages<M: Message + Clone>(&mut self, tag: u32, ms: &[Rec<'_, M>]) -> io::Result<()> {
        for m in ms {
            encoding::message::encode(tag, m.as_ref(), &mut self.buf);
            self.maybe_flush()?;
        }
        Ok(())
    }

    /// Writes records as field `tag`: encoded ones as they are, decoded ones by `record`.
    fn outs<M: Message + Default + Clone>(
        &mut self,
        tag: u32,
        outs: &[Out<'_, M>],
        mut record: impl FnMut(&mut Self, &M) -> io::Result<()>,
    ) -> io::Result<()> {
        for o in outs {
            match (o.encoded(), o) {
                (Some(rec), _) => {
                    self.message_header(tag, rec.len());
                    self.bytes(rec)?;
                }
                (None, Out::Record(r)) => record(self, r)?,
                (None, _) => {}
            }
        }
        Ok(())
    }

    fn graph(&mut self, g: &GraphOut<'_>) -> io::Result<()> {
        use encoding::string;
        let b = g.base;
        self.outs(1, &g.node, |w, r| {
            encoding::message::encode(1, r, &mut w.buf);
            w.maybe_flush()
        })?;
        if let Some(v) = &b.name {
            string::encode(2, v, &mut self.buf);
        }
        self.outs(5, &g.initializer, |w, t| {
            w.message_header(5, t.encoded_len());
            w.tensor(t)
        })?;
        if let Some(v) = &b.doc_string {
            string::encode(10, v, &mut self.buf);
        }
        self.messages(11, &b.input)?;
        self.cow_messages(12, &g.output)?;
        self.outs(13, &g.value_info, |w, v| {
            encoding::message::encode(13, v, &mut w.buf);
            w.maybe_flush()
        })?;
        self.messages(14, &b.quantization_annotation)?;
        self.messages(15, &b.sparse_initializer)?;
        self.messages(16, &b.metadata_props)
    }

    fn model(&mut self, m: &ModelProto, graph: Option<&GraphOut<'_>>) -> io::Result<()> {
        use encoding::{int64, string};
        let b = &mut self.buf;
        if let Some(v) = &m.ir_version {
            int64::encode(1, v, b);
        }
        if let Some(v) = &m.producer_name {
            string::encode(2, v, b);
        }
        if let Some(v) = &m.producer_version {
            string::encode(3, v, b);
        }
        if let Some(v) = &m.domain {
            string::encode(4, v, b);
        }
        if let Some(v) = &m.model_version {
            int64::encode(5, v, b);
        }
        if let Some(v) = &m.doc_string {
            string::encode(6, v, b);
        }
        if let Some(g) = graph {
            self.message_header(7, g.encoded_len());
            self.graph(g)?;
        }
        self.messages(8, &m.opset_import)?;
        self.messages(14, &m.metadata_props)?;
        self.messages(20, &m.training_info)?;
        self.messages(25, &m.functions)?;
        self.messages(26, &m.configuration)?;
        self.finish()
    }
}

/// Writes `m` to `out`, with `graph` in place of `m.graph`, as the bytes
/// `ModelProto { graph: graph.cloned(), ..m.clone() }.encode_to_vec()` would be. Byte fields
/// that lie in one of `sources` are copied from its file.
pub fn write_model(
    out: &File,
    m: &ModelProto,
    graph: Option<&GraphOut<'_>>,
    sources: &[Source],
) -> io::Result<()> {
    stream_model(out, m, graph, sources, false)
}

/// [`write_model`], giving back the pages of `sources[0]` the output has moved past.
///
/// # Safety
/// `sources[0].map` must be a whole read-only shared map of a file (as the loader makes
/// it), whose contents nothing changes while it is written: giving back a page of anything
/// else (a heap buffer) would lose its contents.
pub(crate) unsafe fn write_model_releasing(
    out: &File,
    m: &ModelProto,
    graph: Option<&GraphOut<'_>>,
    sources: &[Source],
) -> io::Result<()> {
    stream_model(out, m, graph, sources, true)
}

/// [`write_model`]; `release` only under [`write_model_releasing`]'s contract.
fn stream_model(
    out: &File,
    m: &ModelProto,
    graph: Option<&GraphOut<'_>>,
    sources: &[Source],
    release: bool,
) -> io::Result<()> {
    with_sink(out, |sink| {
        let mut w = StreamWriter::new(sink, sources);
        if release {
            if let Some(r) = w.released.first_mut() {
                *r = Some(0);
            }
        }
        // `sources[0]` is the model file read: an unchanged start of the model is copied
        // from it.
        w.expect_source_prefix(0);
        w.model(m, graph)
    })
}

/// Writes the external data file made by [`externalize`]: each chunk at its offset (zeros
/// between), copied file to file when it lies in one of `sources`.
pub fn write_data_file(out: &File, chunks: &[(u64, Bytes)], sources: &[Source]) -> io::Result<()> {
    with_sink(out, |sink| {
        let mut w = StreamWriter::new(sink, sources);
        let mut at = 0u64;
        for (offset, b) in chunks {
            let pad = offset.checked_sub(at).ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "external chunks out of order")
            })?;
            w.buf.resize(w.buf.len() + pad as usize, 0);
            w.bytes(b)?;
            at = offset + b.len() as u64;
        }
        w.finish()
    })
}

/// The byte-level writer as a `Vec` (tests): what [`write_model`] writes.
pub fn encode_streamed(m: &ModelProto, sources: &[Source]) -> io::Result<Vec<u8>> {
    let mut f = tempfile::tempfile()?;
    let g = m.graph.as_ref().map(GraphOut::untouched);
    write_model(&f, m, g.as_ref(), sources)?;
    let mut v = Vec::new();
    f.seek(SeekFrom::Start(0))?;
    f.read_to_end(&mut v)?;
    Ok(v)
}

#[cfg(test)]
mod tests;
