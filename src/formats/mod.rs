//! Model formats: ONNX and OpenVINO IR.

/// A loaded model of either format.
pub struct Model;
