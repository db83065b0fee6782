//! Bytes → `OnnxModel::from_bytes` → passes (default, lower, raise) → serialized in memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slice_opt::formats::onnx::OnnxModel;
use slice_opt::Model;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    // A directory that does not exist: external-data references fail instead of reading files.
    let path = std::path::Path::new("/nonexistent-slice-opt-fuzz/fuzz.onnx");
    if let Ok(m) = OnnxModel::from_bytes(path, bytes::Bytes::copy_from_slice(data)) {
        common::exercise(Model::Onnx(m));
    }
});
