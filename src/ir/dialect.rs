//! The dialect a graph speaks: which format's op set its nodes come from. Below every format
//! so that shape inference and the passes can branch on it without importing `formats`.

/// The on-disk format of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Onnx,
    OpenVino,
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Format::Onnx => "ONNX",
            Format::OpenVino => "OpenVINO IR",
        })
    }
}
