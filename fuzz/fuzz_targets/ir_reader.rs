//! OpenVINO IR: the input is `[u32 LE xml length][xml][bin]` → `OvModel::from_parts` → passes →
//! `to_parts`. Inputs shorter than 4 bytes are all XML with no `.bin`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use slice_opt::formats::openvino::OvModel;
use slice_opt::Model;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let (xml, bin) = if data.len() >= 4 {
        let n = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
        let rest = &data[4..];
        let n = n.min(rest.len());
        (&rest[..n], Some(&rest[n..]))
    } else {
        (data, None)
    };
    let Ok(text) = std::str::from_utf8(xml) else {
        return;
    };
    let bin = bin.map(bytes::Bytes::copy_from_slice);
    let path = std::path::Path::new("/nonexistent-slice-opt-fuzz/fuzz.xml");
    if let Ok(m) = OvModel::from_parts(path, text.to_string(), bin) {
        common::exercise(Model::OpenVino(m));
    }
});
