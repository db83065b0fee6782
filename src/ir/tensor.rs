//! Element types and constant tensors shared by both formats.

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

    /// Raw bytes (None for string tensors).
    pub fn raw(&self) -> Option<&Bytes> {
        match &self.data {
            TensorData::Raw(b) => Some(b),
            TensorData::Strings(_) => None,
        }
    }

    /// The elements as i64, for integer tensors (index inputs); `None` if the type is not an
    /// integer type or the data is too short for the shape.
    pub fn to_i64_vec(&self) -> Option<Vec<i64>> {
        let raw = self.raw()?;
        let n = usize::try_from(self.element_count()?).ok()?;
        let width = match self.dtype {
            DType::I64 | DType::U64 => 8,
            DType::I32 | DType::U32 => 4,
            DType::I16 | DType::U16 => 2,
            DType::I8 | DType::U8 | DType::Bool => 1,
            _ => return None,
        };
        if raw.len() < n.checked_mul(width)? {
            return None;
        }
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let b = &raw[i * width..(i + 1) * width];
            let v = match self.dtype {
                DType::I64 => i64::from_le_bytes(b.try_into().ok()?),
                DType::U64 => {
                    i64::try_from(u64::from_le_bytes(b.try_into().ok()?)).unwrap_or(i64::MAX)
                }
                DType::I32 => i32::from_le_bytes(b.try_into().ok()?) as i64,
                DType::U32 => u32::from_le_bytes(b.try_into().ok()?) as i64,
                DType::I16 => i16::from_le_bytes(b.try_into().ok()?) as i64,
                DType::U16 => u16::from_le_bytes(b.try_into().ok()?) as i64,
                DType::I8 => b[0] as i8 as i64,
                _ => b[0] as i64,
            };
            out.push(v);
        }
        Some(out)
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
