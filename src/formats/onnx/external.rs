//! External data files: which tensors a save moves to one ([`externalize`]), which files a save
//! copies beside the model, and which the file it replaces still uses.

use super::proto::TensorProto;
use super::write::{encoded_node_locations, encoded_tensor_location, Out, Source};
use super::*;

/// The external data files a model references that a save to `to` copies beside it (when
/// `to` is in another directory than `from`), as `(source, destination)`. `skip` is a location
/// written by this save, not copied. Sources are checked like when loading: regular files inside
/// the model's directory after resolving links.
/// `renames` (location read → location written, [`output_names`]) gives the name of a copy.
pub(super) fn external_copies(
    from: &Path,
    to: &Path,
    g: Option<&GraphOut<'_>>,
    skip: Option<&str>,
    renames: &[(String, String)],
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
    // Every `location` entry first: the locations read are some of them, so a graph without
    // any (most) is walked once, not twice.
    let mut named: Vec<String> = Vec::new();
    g.external_locations(&mut named, true);
    if named.is_empty() {
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
        let written = renames
            .iter()
            .find(|(read, _)| read == loc)
            .map_or(loc, |(_, w)| w.as_str());
        let dst = tensor::resolve_location(&dst_dir, written).map_err(|m| fmt_err(to, m))?;
        Ok((src, dst))
    };
    let mut pairs = files
        .iter()
        .map(|loc| pair(loc))
        .collect::<Result<Vec<_>>>()?;
    // A tensor's other `location` entries (the last is the one read) are not read, but the
    // onnx checker wants each to name a regular file: those that do, inside the model's
    // directory, are copied too; the others are left out.
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

/// The names the external data files of a model saved to `to` take beside it when they are
/// copied there (`to` in another directory than `from`): named after the output, as exporters
/// name them after the model (`out.onnx.data`; a second file `out.onnx.1.data`, ...), so the
/// outputs of several models written to one directory do not claim one name (two exports
/// `a/model.onnx` and `b/model.onnx`, each with its `model.onnx.data`, saved as `out/a.onnx` and
/// `out/b.onnx`). `(location read, location written)` for each location that changes; none
/// when the files stay where they are, or when a location is named by a node's tensor or a
/// subgraph, or by a tensor's other `location` entries (those keep their names).
pub(super) fn output_names(
    from: &Path,
    to: &Path,
    g: Option<&GraphOut<'_>>,
) -> Vec<(String, String)> {
    let Some(g) = g else { return Vec::new() };
    let dir_of = |p: &Path| match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let same = match (
        std::fs::canonicalize(dir_of(from)),
        std::fs::canonicalize(dir_of(to)),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let Some(name) = to.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    if same {
        return Vec::new();
    }
    let mut read: Vec<String> = Vec::new();
    let mut all: Vec<String> = Vec::new();
    // A tensor's location read is one of its `location` entries: it is looked for only in a
    // tensor that has some, and without any the answer is none (no node record is walked).
    for t in &g.initializer {
        let before = all.len();
        match (t.encoded(), t) {
            (Some(b), _) => {
                encoded_tensor_location(b, &mut all, true);
                if all.len() > before {
                    encoded_tensor_location(b, &mut read, false);
                }
            }
            (None, Out::Record(r)) => {
                tensor::push_locations(r, &mut all, true);
                if all.len() > before {
                    tensor::push_locations(r, &mut read, false);
                }
            }
            (None, _) => {}
        }
    }
    if read.is_empty() {
        return Vec::new();
    }
    let mut in_nodes: Vec<String> = Vec::new();
    for n in &g.node {
        match (n.encoded(), n) {
            (Some(b), _) => encoded_node_locations(b, &mut in_nodes, true),
            (None, Out::Record(r)) => tensor::node_external_locations(r, &mut in_nodes, true),
            (None, _) => {}
        }
    }
    read.sort();
    read.dedup();
    all.sort();
    all.dedup();
    if read.is_empty() || !in_nodes.is_empty() || all != read {
        return Vec::new();
    }
    // Locations that name one file in two ways (`w.bin`, `./w.bin`) keep their names.
    let mut files: Vec<PathBuf> = read
        .iter()
        .filter_map(|l| tensor::resolve_location(Path::new(""), l).ok())
        .collect();
    files.sort();
    files.dedup();
    if files.len() != read.len() {
        return Vec::new();
    }
    read.iter()
        .enumerate()
        .map(|(k, l)| {
            let w = if k == 0 {
                format!("{name}.data")
            } else {
                format!("{name}.{k}.data")
            };
            (l.clone(), w)
        })
        .filter(|(l, w)| l != w)
        .collect()
}

/// Rewrites the `location` entries of `g`'s initializers by `renames` ([`output_names`]).
pub(super) fn rename_locations(g: &mut GraphOut<'_>, renames: &[(String, String)]) {
    if renames.is_empty() {
        return;
    }
    for t in g.initializer.iter_mut() {
        if let Some(b) = t.encoded() {
            let mut locs = Vec::new();
            encoded_tensor_location(b, &mut locs, true);
            if !locs.iter().any(|l| renames.iter().any(|(r, _)| r == l)) {
                continue;
            }
        }
        let Ok(Some(t)) = t.to_mut_if(|t| t.data_location == Some(1)) else {
            continue;
        };
        for e in &mut t.external_data {
            if e.key.as_deref() != Some("location") {
                continue;
            }
            if let Some((_, w)) = renames
                .iter()
                .find(|(r, _)| Some(r.as_str()) == e.value.as_deref())
            {
                e.value = Some(w.clone());
            }
        }
    }
}

/// The external data files of the ONNX model now at `path` (the one a save replaces), which
/// the save may overwrite; none when there is no such model or it cannot be read.
pub(super) fn existing_data_files(path: &Path) -> Vec<PathBuf> {
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
pub(super) fn file_contains(path: &Path, needle: &[u8]) -> std::io::Result<bool> {
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
pub(super) mod locations_only {
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

/// Tensors at least this many bytes go to the external data file when a model is saved with
/// external data (the threshold `onnx.save_model` uses by default).
pub const EXTERNAL_MIN: usize = 1024;

/// Offsets of tensors in an external data file are multiples of this (so a reader can map
/// each tensor page-aligned).
pub const EXTERNAL_ALIGN: u64 = 4096;

/// The largest protobuf a reader accepts (2 GiB - 1): a bigger model must put tensors in an
/// external data file.
pub const PROTO_LIMIT: u64 = (1 << 31) - 1;

/// True when `b` lies in one of `sources` (it was read from a file rather than computed).
pub fn in_sources(b: &Bytes, sources: &[Source]) -> bool {
    let p = b.as_ptr() as usize;
    sources.iter().any(|s| {
        let base = s.map.as_ptr() as usize;
        p >= base
            && p.checked_add(b.len())
                .is_some_and(|end| end <= base.saturating_add(s.map.len()))
    })
}

/// Moves the inline `raw_data` of `g`'s initializers chosen by `pick` (and at least
/// [`EXTERNAL_MIN`] bytes) to the external data file `location`: each such tensor gets
/// `data_location = EXTERNAL` with location/offset/length entries, and its bytes are returned
/// in file order with their offsets.
pub fn externalize(
    g: &mut GraphOut<'_>,
    location: &str,
    mut pick: impl FnMut(&TensorProto, &Bytes) -> bool,
) -> Vec<(u64, Bytes)> {
    use super::proto::StringStringEntryProto;
    let mut out = Vec::new();
    let mut offset = 0u64;
    for t in g.initializer.iter_mut() {
        if t.encoded().is_some_and(|b| b.len() < EXTERNAL_MIN) {
            continue;
        }
        // An encoded record is decoded to look (a record that does not decode was refused when
        // the model was read; it is written as it is).
        let Ok(Some(t)) = t.to_mut_if(|t| {
            t.raw_data.as_ref().is_some_and(|raw| {
                raw.len() >= EXTERNAL_MIN && t.data_location != Some(1) && pick(t, raw)
            })
        }) else {
            continue;
        };
        let Some(raw) = t.raw_data.take() else {
            continue;
        };
        offset = offset.div_ceil(EXTERNAL_ALIGN) * EXTERNAL_ALIGN;
        let len = raw.len() as u64;
        let kv = |k: &str, v: String| StringStringEntryProto {
            key: Some(k.into()),
            value: Some(v),
        };
        t.external_data = vec![
            kv("location", location.to_string()),
            kv("offset", offset.to_string()),
            kv("length", len.to_string()),
        ];
        t.data_location = Some(1);
        out.push((offset, raw));
        offset += len;
    }
    out
}
