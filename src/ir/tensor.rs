//! Element types and constant tensors shared by both formats.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;

/// Element type of a tensor, covering ONNX's and OpenVINO's element types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F64,
    F32,
    F16,
    BF16,
    F8E4M3FN,
    F8E4M3FNUZ,
    F8E5M2,
    F8E5M2FNUZ,
    F8E8M0,
    F4E2M1,
    I64,
    I32,
    I16,
    I8,
    I4,
    U64,
    U32,
    U16,
    U8,
    U4,
    U1,
    Bool,
    Complex64,
    Complex128,
    String,
}

impl DType {
    /// Size of one element in bits (strings: 0, they have no fixed size).
    pub fn bits(self) -> usize {
        use DType::*;
        match self {
            F64 | I64 | U64 | Complex64 => 64,
            Complex128 => 128,
            F32 | I32 | U32 => 32,
            F16 | BF16 | I16 | U16 => 16,
            F8E4M3FN | F8E4M3FNUZ | F8E5M2 | F8E5M2FNUZ | F8E8M0 | I8 | U8 | Bool => 8,
            F4E2M1 | I4 | U4 => 4,
            U1 => 1,
            String => 0,
        }
    }

    /// True for the integer types an index input may have.
    pub fn is_index_type(self) -> bool {
        matches!(
            self,
            DType::I64
                | DType::I32
                | DType::I16
                | DType::I8
                | DType::U64
                | DType::U32
                | DType::U16
                | DType::U8
        )
    }

    /// The ONNX `TensorProto.DataType` code.
    pub fn onnx_code(self) -> i32 {
        use DType::*;
        match self {
            F32 => 1,
            U8 => 2,
            I8 => 3,
            U16 => 4,
            I16 => 5,
            I32 => 6,
            I64 => 7,
            String => 8,
            Bool => 9,
            F16 => 10,
            F64 => 11,
            U32 => 12,
            U64 => 13,
            Complex64 => 14,
            Complex128 => 15,
            BF16 => 16,
            F8E4M3FN => 17,
            F8E4M3FNUZ => 18,
            F8E5M2 => 19,
            F8E5M2FNUZ => 20,
            U4 => 21,
            I4 => 22,
            F4E2M1 => 23,
            F8E8M0 => 24,
            U1 => 0,
        }
    }

    /// From an ONNX `TensorProto.DataType` code.
    pub fn from_onnx_code(code: i32) -> Option<DType> {
        use DType::*;
        Some(match code {
            1 => F32,
            2 => U8,
            3 => I8,
            4 => U16,
            5 => I16,
            6 => I32,
            7 => I64,
            8 => String,
            9 => Bool,
            10 => F16,
            11 => F64,
            12 => U32,
            13 => U64,
            14 => Complex64,
            15 => Complex128,
            16 => BF16,
            17 => F8E4M3FN,
            18 => F8E4M3FNUZ,
            19 => F8E5M2,
            20 => F8E5M2FNUZ,
            21 => U4,
            22 => I4,
            23 => F4E2M1,
            24 => F8E8M0,
            _ => return None,
        })
    }

    /// The OpenVINO IR `element_type` / `precision` name.
    pub fn ov_name(self) -> &'static str {
        use DType::*;
        match self {
            F64 => "f64",
            F32 => "f32",
            F16 => "f16",
            BF16 => "bf16",
            F8E4M3FN => "f8e4m3",
            F8E5M2 => "f8e5m2",
            F8E8M0 => "f8e8m0",
            F4E2M1 => "f4e2m1",
            I64 => "i64",
            I32 => "i32",
            I16 => "i16",
            I8 => "i8",
            I4 => "i4",
            U64 => "u64",
            U32 => "u32",
            U16 => "u16",
            U8 => "u8",
            U4 => "u4",
            U1 => "u1",
            Bool => "boolean",
            String => "string",
            F8E4M3FNUZ => "f8e4m3fnuz",
            F8E5M2FNUZ => "f8e5m2fnuz",
            Complex64 => "complex64",
            Complex128 => "complex128",
        }
    }

    /// From an OpenVINO IR `element_type` / `precision` name (case-insensitive).
    pub fn from_ov_name(name: &str) -> Option<DType> {
        use DType::*;
        Some(match name.to_ascii_lowercase().as_str() {
            "f64" | "fp64" => F64,
            "f32" | "fp32" => F32,
            "f16" | "fp16" => F16,
            "bf16" => BF16,
            "f8e4m3" => F8E4M3FN,
            "f8e5m2" => F8E5M2,
            "f8e8m0" => F8E8M0,
            "f4e2m1" => F4E2M1,
            "i64" => I64,
            "i32" => I32,
            "i16" => I16,
            "i8" => I8,
            "i4" => I4,
            "u64" => U64,
            "u32" => U32,
            "u16" => U16,
            "u8" => U8,
            "u4" => U4,
            "u1" => U1,
            "boolean" | "bool" => Bool,
            "string" => String,
            _ => return None,
        })
    }
}

/// The data of a constant tensor.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    /// Little-endian packed elements (sub-byte types packed as the format packs them); usually a
    /// view into the memory-mapped file.
    Raw(Bytes),
    /// One byte string per element (string tensors).
    Strings(Vec<Bytes>),
    /// Little-endian packed elements as [`TensorData::Raw`], not yet computed: produced run by
    /// run from their source when written (a folded slice of a big weight), and computed
    /// whole only when something reads them ([`Tensor::raw`]).
    Lazy(Lazy),
}

/// Bytes computed from a source on demand: the producer of a [`TensorData::Lazy`].
pub trait Produce: Send + Sync + std::fmt::Debug {
    /// The number of bytes produced.
    fn len(&self) -> usize;

    /// True when nothing is produced.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` with the bytes in order, a run at a time (runs are at most as long as the
    /// source's largest contiguous stretch; their lengths add up to [`Produce::len`]).
    fn runs(&self, f: &mut dyn FnMut(&[u8]));
}

/// Lazily produced tensor bytes (see [`TensorData::Lazy`]): a producer, and the bytes once
/// something asked for them whole.
#[derive(Clone)]
pub struct Lazy {
    producer: Arc<dyn Produce>,
    bytes: Arc<OnceLock<Bytes>>,
}

impl Lazy {
    /// Bytes that `producer` makes when asked.
    pub fn new(producer: Arc<dyn Produce>) -> Lazy {
        Lazy {
            producer,
            bytes: Arc::new(OnceLock::new()),
        }
    }

    /// The number of bytes.
    pub fn len(&self) -> usize {
        self.producer.len()
    }

    /// True when there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The producer.
    pub fn producer(&self) -> &Arc<dyn Produce> {
        &self.producer
    }

    /// The bytes, computed (once) in memory.
    pub fn bytes(&self) -> &Bytes {
        self.bytes.get_or_init(|| {
            let mut out = Vec::with_capacity(self.producer.len());
            self.producer.runs(&mut |b| out.extend_from_slice(b));
            Bytes::from(out)
        })
    }

    /// The first `n` bytes (fewer when there are fewer), produced (nothing is kept).
    pub fn prefix(&self, n: usize) -> Vec<u8> {
        if let Some(b) = self.computed() {
            return b[..n.min(b.len())].to_vec();
        }
        let mut out = Vec::with_capacity(n.min(self.len()));
        self.producer.runs(&mut |b| {
            let room = n - out.len();
            out.extend_from_slice(&b[..room.min(b.len())]);
        });
        out
    }

    /// True when the bytes are `other`'s, compared as they are produced (nothing is kept).
    pub fn same_as(&self, other: &[u8]) -> bool {
        if self.len() != other.len() {
            return false;
        }
        if let Some(b) = self.computed() {
            return b.as_ref() == other;
        }
        if self.prefix(4096) != other[..4096.min(other.len())] {
            return false;
        }
        let mut at = 0usize;
        let mut same = true;
        self.producer.runs(&mut |b| {
            if same {
                same = other.get(at..at + b.len()) == Some(b);
                at += b.len();
            }
        });
        same && at == other.len()
    }

    /// True when the bytes are `other`'s (computed only when the first ones are the same).
    pub fn same_as_lazy(&self, other: &Lazy) -> bool {
        Arc::ptr_eq(&self.producer, &other.producer)
            || (self.len() == other.len()
                && self.prefix(4096) == other.prefix(4096)
                && self.same_as(other.bytes()))
    }

    /// The bytes when they were computed already.
    pub fn computed(&self) -> Option<&Bytes> {
        self.bytes.get()
    }

    /// A stand-in of the right length for the bytes, for a record a writer streams (the ONNX
    /// `raw_data` of a folded initializer): untouched anonymous pages, so it costs no memory,
    /// registered so that [`Lazy::behind`] finds this producer from it. Anything but such a
    /// writer must not read it (it reads zeros); the computed bytes are used when they exist.
    pub fn placeholder(&self) -> Bytes {
        if let Some(b) = self.computed() {
            return b.clone();
        }
        let len = self.len();
        let Ok(map) = memmap2::MmapOptions::new()
            .len(len.max(1))
            .map_anon()
            .and_then(|m| m.make_read_only())
        else {
            return self.bytes().clone();
        };
        let key = map.as_ptr() as usize;
        placeholders()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, (len, self.clone()));
        Bytes::from_owner(Placeholder { map, key, len })
    }

    /// The lazy bytes `b` stands in for, when `b` is (the whole of) a [`Lazy::placeholder`].
    pub fn behind(b: &[u8]) -> Option<Lazy> {
        let map = placeholders().lock().unwrap_or_else(|e| e.into_inner());
        if map.is_empty() {
            return None;
        }
        match map.get(&(b.as_ptr() as usize)) {
            Some((len, l)) if *len == b.len() => Some(l.clone()),
            _ => None,
        }
    }
}

/// The live placeholders by address: (length, lazy bytes).
fn placeholders() -> &'static Mutex<HashMap<usize, (usize, Lazy)>> {
    static MAP: OnceLock<Mutex<HashMap<usize, (usize, Lazy)>>> = OnceLock::new();
    MAP.get_or_init(Default::default)
}

/// The owner of a placeholder's pages; unregisters it when the last view is gone.
struct Placeholder {
    map: memmap2::Mmap,
    key: usize,
    len: usize,
}

impl AsRef<[u8]> for Placeholder {
    fn as_ref(&self) -> &[u8] {
        &self.map[..self.len]
    }
}

impl Drop for Placeholder {
    fn drop(&mut self) {
        placeholders()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
    }
}

impl std::fmt::Debug for Lazy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lazy")
            .field("len", &self.len())
            .field("producer", &self.producer)
            .finish()
    }
}

impl PartialEq for Lazy {
    fn eq(&self, other: &Lazy) -> bool {
        self.same_as_lazy(other)
    }
}

impl TensorData {
    /// The bytes of raw (or lazy, then computed) data; `None` for strings.
    pub fn raw(&self) -> Option<&Bytes> {
        match self {
            TensorData::Raw(b) => Some(b),
            TensorData::Lazy(l) => Some(l.bytes()),
            TensorData::Strings(_) => None,
        }
    }

    /// The data with lazy bytes computed (other data as it is).
    pub fn eager(&self) -> std::borrow::Cow<'_, TensorData> {
        match self {
            TensorData::Lazy(l) => std::borrow::Cow::Owned(TensorData::Raw(l.bytes().clone())),
            d => std::borrow::Cow::Borrowed(d),
        }
    }

    /// The length in bytes of raw or lazy data (without computing it).
    pub fn raw_len(&self) -> Option<usize> {
        match self {
            TensorData::Raw(b) => Some(b.len()),
            TensorData::Lazy(l) => Some(l.len()),
            TensorData::Strings(_) => None,
        }
    }
}

/// A constant tensor: element type, shape and data.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    pub dtype: DType,
    pub shape: Vec<u64>,
    pub data: TensorData,
}

impl Tensor {
    /// Number of elements, or `None` on overflow.
    pub fn element_count(&self) -> Option<u64> {
        self.shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }

    /// Raw bytes (None for string tensors); lazy bytes are computed.
    pub fn raw(&self) -> Option<&Bytes> {
        self.data.raw()
    }

    /// The elements as i64, for integer tensors (index inputs); `None` if the type is not an
    /// integer type or the data is too short for the shape.
    pub fn to_i64_vec(&self) -> Option<Vec<i64>> {
        Some(self.i64_values()?.collect())
    }

    /// The elements of [`Tensor::to_i64_vec`], read one by one from the raw bytes instead of
    /// collected (shape propagation reads the values of 400,000 small constants of a large
    /// graph once each).
    pub fn i64_values(&self) -> Option<impl ExactSizeIterator<Item = i64> + '_> {
        let width = match self.dtype {
            DType::I64 | DType::U64 => 8,
            DType::I32 | DType::U32 => 4,
            DType::I16 | DType::U16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
            _ => return None,
        };
        let raw = self.raw()?;
        let n = usize::try_from(self.element_count()?).ok()?;
        let bytes = raw.get(..n.checked_mul(width)?)?;
        let dtype = self.dtype;
        Some(bytes.chunks_exact(width).map(move |b| {
            let mut w = [0u8; 8];
            w[..b.len()].copy_from_slice(b);
            let [w0, w1, w2, w3, ..] = w;
            match dtype {
                DType::I64 => i64::from_le_bytes(w),
                DType::U64 => i64::try_from(u64::from_le_bytes(w)).unwrap_or(i64::MAX),
                DType::I32 => i32::from_le_bytes([w0, w1, w2, w3]) as i64,
                DType::U32 => u32::from_le_bytes([w0, w1, w2, w3]) as i64,
                DType::I16 => i16::from_le_bytes([w0, w1]) as i64,
                DType::U16 => u16::from_le_bytes([w0, w1]) as i64,
                DType::I8 => w0 as i8 as i64,
                _ => w0 as i64,
            }
        }))
    }

    /// A 1-D (or given-shape) i64 tensor.
    pub fn from_i64(shape: Vec<u64>, values: &[i64]) -> Tensor {
        let mut buf = Vec::with_capacity(values.len() * 8);
        for v in values {
            buf.extend_from_slice(&v.to_le_bytes());
        }
        Tensor {
            dtype: DType::I64,
            shape,
            data: TensorData::Raw(Bytes::from(buf)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(dtype: DType, shape: Vec<u64>, bytes: Vec<u8>) -> Tensor {
        Tensor {
            dtype,
            shape,
            data: TensorData::Raw(Bytes::from(bytes)),
        }
    }

    /// Each integer type is read little-endian with its own width and sign (ONNX `raw_data`,
    /// OpenVINO `.bin`); `u64` above `i64::MAX` saturates; too few bytes for the shape is `None`.
    #[test]
    fn integer_elements_read_with_their_width_and_sign() {
        let cases: Vec<(DType, Vec<u8>, Vec<i64>)> = vec![
            (DType::I8, vec![0xff, 0x05], vec![-1, 5]),
            (DType::U8, vec![0xff, 0x05], vec![255, 5]),
            (DType::Bool, vec![0x01, 0x00], vec![1, 0]),
            (DType::I16, vec![0xfe, 0xff, 0x00, 0x01], vec![-2, 256]),
            (DType::U16, vec![0xff, 0xff, 0x00, 0x01], vec![65535, 256]),
            (
                DType::I32,
                [(-3i32).to_le_bytes(), 7i32.to_le_bytes()].concat(),
                vec![-3, 7],
            ),
            (
                DType::U32,
                [u32::MAX.to_le_bytes(), 7u32.to_le_bytes()].concat(),
                vec![4_294_967_295, 7],
            ),
            (
                DType::I64,
                [i64::MIN.to_le_bytes(), (-4i64).to_le_bytes()].concat(),
                vec![i64::MIN, -4],
            ),
            (
                DType::U64,
                [u64::MAX.to_le_bytes(), 9u64.to_le_bytes()].concat(),
                vec![i64::MAX, 9],
            ),
        ];
        for (dtype, bytes, want) in cases {
            let t = raw(dtype, vec![2], bytes.clone());
            assert_eq!(t.to_i64_vec(), Some(want.clone()), "{dtype:?}");
            assert_eq!(t.i64_values().map(|v| v.len()), Some(2), "{dtype:?}");
            let short = raw(dtype, vec![3], bytes);
            assert_eq!(short.to_i64_vec(), None, "{dtype:?} with too few bytes");
        }
        assert_eq!(raw(DType::F32, vec![1], vec![0; 4]).to_i64_vec(), None);
    }
}
