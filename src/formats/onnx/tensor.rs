//! ONNX `TensorProto` <-> IR [`Tensor`], including external data.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use bytes::Bytes;

use super::proto::{self, GraphProto, TensorProto};
use crate::ir::{DType, Tensor, TensorData};

/// External data files of one model, memory-mapped on first use.
#[derive(Debug)]
pub struct ExternalFiles {
    dir: PathBuf,
    /// A second directory external data may lie in: the model's after resolving its links.
    alt_dir: Option<PathBuf>,
    maps: HashMap<String, Bytes>,
    /// The resolved paths of the files mapped.
    paths: Vec<PathBuf>,
    sources: Vec<super::write::Source>,
}

impl ExternalFiles {
    /// External files are looked up relative to `dir` (the model's directory).
    pub fn new(dir: &Path) -> ExternalFiles {
        ExternalFiles {
            dir: dir.to_path_buf(),
            alt_dir: None,
            maps: HashMap::new(),
            paths: Vec::new(),
            sources: Vec::new(),
        }
    }

    /// Also accepts files inside `dir` (the model's directory after resolving its links, for
    /// a model in a cache of linked blobs).
    pub fn also_inside(&mut self, dir: Option<PathBuf>) {
        self.alt_dir = dir;
    }

    /// The resolved paths of the external data files read so far.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.paths.clone()
    }

    /// The mapped files with their open handles (for copying tensor bytes file to file).
    pub fn into_sources(self) -> Vec<super::write::Source> {
        self.sources
    }

    fn get(&mut self, location: &str) -> Result<Bytes, String> {
        if let Some(b) = self.maps.get(location) {
            return Ok(b.clone());
        }
        let path = resolve_location(&self.dir, location)?;
        // Like the onnx package: after resolving links the file must be inside the model's
        // directory, and a regular file (a FIFO would block the read forever).
        let path = crate::formats::fs::resolve_inside(&path, &self.dir, self.alt_dir.as_deref())
            .map_err(|m| format!("external data '{location}': {m}"))?;
        // One file named two ways (`w.bin`, `./w.bin`) is mapped once.
        if let Some(i) = self.paths.iter().position(|p| *p == path) {
            let b = self.sources[i].map.clone();
            self.maps.insert(location.to_string(), b.clone());
            return Ok(b);
        }
        let (b, file) =
            crate::formats::fs::map_file_with_handle(&path).map_err(|e| e.to_string())?;
        self.paths.push(path);
        self.maps.insert(location.to_string(), b.clone());
        self.sources.push(super::write::Source {
            map: b.clone(),
            file: file.map(std::sync::Arc::new),
        });
        Ok(b)
    }
}

/// Joins an external-data `location` to `dir`, refusing absolute paths and `..`. The location
/// is normalized (`./w.bin`, `sub//w.bin` and `sub/./w.bin` name `w.bin` and `sub/w.bin`), so
/// that two spellings of one file give one path.
pub fn resolve_location(dir: &Path, location: &str) -> Result<PathBuf, String> {
    let p = Path::new(location);
    let refused = || {
        format!("external data location '{location}' must be a relative path inside the model's directory")
    };
    if location.is_empty()
        || p.components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(refused());
    }
    let normal: PathBuf = p
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    if normal.as_os_str().is_empty() {
        // `.` alone: the directory itself, not a file in it.
        return Err(refused());
    }
    Ok(dir.join(normal))
}

/// The external-data `location` of a tensor stored outside the model file. When the tensor
/// has several `location` entries the last one counts, as everywhere its entries are read
/// (the onnx package sets one attribute per entry in order: `ExternalDataInfo`).
pub fn tensor_location(t: &TensorProto) -> Option<&str> {
    if t.data_location != Some(1) {
        return None;
    }
    t.external_data
        .iter()
        .rfind(|e| e.key() == "location")
        .map(|e| e.value())
}

/// Every `location` entry of a tensor stored outside the model file (one, normally; when there
/// are several the last is the file read, see [`tensor_location`], and the onnx checker wants
/// each to name a regular file).
pub fn tensor_locations(t: &TensorProto) -> impl Iterator<Item = &str> {
    (t.data_location == Some(1))
        .then_some(&t.external_data)
        .into_iter()
        .flatten()
        .filter(|e| e.key() == "location")
        .map(|e| e.value())
}

/// The external-data locations in a node's tensor attributes and subgraphs: the one read of
/// each tensor ([`tensor_location`]), or with `all` every `location` entry.
pub fn node_external_locations(n: &proto::NodeProto, out: &mut Vec<String>, all: bool) {
    for a in &n.attribute {
        for t in a.t.as_deref().into_iter().chain(a.tensors.iter()) {
            push_locations(t, out, all);
        }
        for sg in a.g.as_deref().into_iter().chain(a.graphs.iter()) {
            external_locations(sg, out, all);
        }
    }
}

/// The external-data locations in a graph and its subgraphs (see
/// [`node_external_locations`]).
pub fn external_locations(g: &GraphProto, out: &mut Vec<String>, all: bool) {
    for t in &g.initializer {
        push_locations(t, out, all);
    }
    for n in &g.node {
        node_external_locations(n, out, all);
    }
}

/// Appends the location `t` is read from, or with `all` every `location` entry of `t`.
pub fn push_locations(t: &TensorProto, out: &mut Vec<String>, all: bool) {
    if all {
        out.extend(tensor_locations(t).map(str::to_string));
    } else {
        out.extend(tensor_location(t).map(str::to_string));
    }
}

fn le_bytes<T: Copy, const N: usize>(values: &[T], f: impl Fn(T) -> [u8; N]) -> Bytes {
    let mut buf = Vec::with_capacity(values.len() * N);
    for &v in values {
        buf.extend_from_slice(&f(v));
    }
    Bytes::from(buf)
}

/// An f32 tensor.
pub fn f32_tensor(shape: Vec<u64>, values: &[f32]) -> Tensor {
    Tensor {
        dtype: DType::F32,
        shape,
        data: TensorData::Raw(le_bytes(values, f32::to_le_bytes)),
    }
}

/// Decodes a `TensorProto` (raw, typed fields or external data) into an IR tensor. Raw and
/// external data are not copied.
pub fn tensor_from_proto(t: &TensorProto, ext: &mut ExternalFiles) -> Result<Tensor, String> {
    let code = t.data_type();
    let dtype =
        DType::from_onnx_code(code).ok_or_else(|| format!("unsupported data type {code}"))?;
    let mut shape = Vec::with_capacity(t.dims.len());
    for &d in &t.dims {
        shape.push(u64::try_from(d).map_err(|_| format!("negative dim {d}"))?);
    }
    let count = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or("element count overflows")?;
    if t.segment.is_some() {
        return Err("segmented tensors are not supported".into());
    }
    if dtype == DType::String {
        if t.string_data.len() as u64 != count {
            return Err(format!(
                "has {} strings for {count} elements",
                t.string_data.len()
            ));
        }
        return Ok(Tensor {
            dtype,
            shape,
            data: TensorData::Strings(t.string_data.clone()),
        });
    }
    let want_bytes = count
        .checked_mul(dtype.bits() as u64)
        .map(|b| b.div_ceil(8))
        .ok_or("byte size overflows")?;
    let raw = if t.data_location == Some(1) {
        let kv: HashMap<&str, &str> = t
            .external_data
            .iter()
            .map(|e| (e.key(), e.value()))
            .collect();
        let loc = kv
            .get("location")
            .ok_or("external data without a location")?;
        let data = ext.get(loc)?;
        let offset: u64 = match kv.get("offset") {
            Some(s) => s
                .parse()
                .map_err(|_| format!("bad external offset '{s}'"))?,
            None => 0,
        };
        let length: u64 = match kv.get("length") {
            Some(s) => s
                .parse()
                .map_err(|_| format!("bad external length '{s}'"))?,
            None => (data.len() as u64).saturating_sub(offset),
        };
        let end = offset
            .checked_add(length)
            .ok_or("external offset + length overflows")?;
        if end > data.len() as u64 {
            return Err(format!("external data {loc}: offset {offset} + length {length} passes the end of the file ({} bytes)", data.len()));
        }
        data.slice(offset as usize..end as usize)
    } else if let Some(r) = &t.raw_data {
        r.clone()
    } else {
        typed_to_raw(t, dtype, count)?
    };
    if raw.len() as u64 != want_bytes {
        return Err(format!(
            "has {} bytes of data, its type and shape need {want_bytes}",
            raw.len()
        ));
    }
    Ok(Tensor {
        dtype,
        shape,
        data: TensorData::Raw(raw),
    })
}

fn typed_to_raw(t: &TensorProto, dtype: DType, count: u64) -> Result<Bytes, String> {
    use DType::*;
    let n = usize::try_from(count).map_err(|_| "too many elements")?;
    let check = |len: usize| {
        if len == n {
            Ok(())
        } else {
            Err(format!("has {len} values for {n} elements"))
        }
    };
    Ok(match dtype {
        F32 => {
            check(t.float_data.len())?;
            le_bytes(&t.float_data, f32::to_le_bytes)
        }
        F64 => {
            check(t.double_data.len())?;
            le_bytes(&t.double_data, f64::to_le_bytes)
        }
        I64 => {
            check(t.int64_data.len())?;
            le_bytes(&t.int64_data, i64::to_le_bytes)
        }
        U64 => {
            check(t.uint64_data.len())?;
            le_bytes(&t.uint64_data, u64::to_le_bytes)
        }
        U32 => {
            check(t.uint64_data.len())?;
            le_bytes(&t.uint64_data, |v| (v as u32).to_le_bytes())
        }
        I32 => {
            check(t.int32_data.len())?;
            le_bytes(&t.int32_data, i32::to_le_bytes)
        }
        I16 | U16 | F16 | BF16 => {
            check(t.int32_data.len())?;
            le_bytes(&t.int32_data, |v| (v as u16).to_le_bytes())
        }
        I8 | U8 | Bool | F8E4M3FN | F8E4M3FNUZ | F8E5M2 | F8E5M2FNUZ | F8E8M0 => {
            check(t.int32_data.len())?;
            le_bytes(&t.int32_data, |v| [v as u8])
        }
        I4 | U4 | F4E2M1 => {
            // Two elements per int32 entry's low byte, as ONNX packs them.
            let want = n.div_ceil(2);
            if t.int32_data.len() != want {
                return Err(format!(
                    "has {} packed values for {n} 4-bit elements",
                    t.int32_data.len()
                ));
            }
            le_bytes(&t.int32_data, |v| [v as u8])
        }
        Complex64 => {
            check(t.float_data.len() / 2)?;
            le_bytes(&t.float_data, f32::to_le_bytes)
        }
        Complex128 => {
            check(t.double_data.len() / 2)?;
            le_bytes(&t.double_data, f64::to_le_bytes)
        }
        U1 | String => return Err(format!("{dtype:?} data in typed fields is not supported")),
    })
}

/// Encodes an IR tensor as a `TensorProto` named `name` (raw data; strings in `string_data`).
pub fn tensor_to_proto(t: &Tensor, name: &str) -> TensorProto {
    to_proto(t, name, false)
}

/// [`tensor_to_proto`] for a record only the streaming writer (`write::write_model`, which
/// produces lazy bytes run by run) or [`crate::formats::onnx::write::GraphOut::into_proto`]
/// reads: lazy data that was not computed yet is a [`crate::ir::Lazy::placeholder`].
pub(crate) fn tensor_to_streamed_proto(t: &Tensor, name: &str) -> TensorProto {
    to_proto(t, name, true)
}

fn to_proto(t: &Tensor, name: &str, streamed: bool) -> TensorProto {
    let mut p = TensorProto {
        dims: t.shape.iter().map(|&d| d as i64).collect(),
        data_type: Some(t.dtype.onnx_code()),
        name: Some(name.to_string()),
        ..Default::default()
    };
    match &t.data {
        TensorData::Raw(b) => p.raw_data = Some(b.clone()),
        TensorData::Lazy(l) if streamed => p.raw_data = Some(l.placeholder()),
        TensorData::Lazy(l) => p.raw_data = Some(l.bytes().clone()),
        TensorData::Strings(s) => p.string_data = s.clone(),
    }
    let _ = proto::tensor_proto::DataLocation::Default;
    p
}
