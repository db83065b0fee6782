//! Layer: robustness: formats, passes and writers on fuzzed input.
//!
//! The fuzz targets under `fuzz/` (see `fuzz/README.md`) replayed in the normal suite, on their
//! committed seed corpora (`fuzz/corpus/<target>/`) and on any input a run found
//! (`tests/data/fuzz/<target>/`, kept as regression tests): each must load and go through the
//! passes and the writers returning `Ok` or a typed error, never panicking.
//!
//! - `onnx_decoder`: ONNX bytes.
//! - `ir_reader`: `[u32 LE xml length][xml][bin]`.

use std::path::{Path, PathBuf};

use slice_opt::formats::onnx::OnnxModel;
use slice_opt::formats::openvino::OvModel;
use slice_opt::pipeline::PassKind;
use slice_opt::{Model, Pipeline};

/// What the fuzz targets do with a model that loads (`fuzz/fuzz_targets/common.rs`).
fn exercise(model: Model, out: &Path) {
    // In memory, then through the file writers (streamed protobuf; IR source splices).
    let serialize = |m: &Model| match m {
        Model::Onnx(o) => {
            let _ = o.to_proto().map(|p| prost::Message::encode_to_vec(&p));
            let _ = o.save(&out.join("out.onnx"));
        }
        Model::OpenVino(o) => {
            let _ = o.to_parts();
            let _ = o.save(&out.join("out.xml"));
        }
    };
    let _ = slice_opt::check::check(&model);
    let _ = slice_opt::check::info(&model);
    let mut m = model.clone();
    if Pipeline::new().fold_limit(1 << 20).run(&mut m).is_ok() {
        serialize(&m);
        for pass in [PassKind::Lower, PassKind::Raise] {
            let mut p = m.clone();
            if Pipeline::with_passes(vec![pass, PassKind::Cleanup])
                .run(&mut p)
                .is_ok()
            {
                serialize(&p);
            }
        }
    }
    let mut m = model;
    if Pipeline::with_passes(vec![PassKind::Lower, PassKind::Raise, PassKind::Infer])
        .fold_limit(1 << 20)
        .run(&mut m)
        .is_ok()
    {
        serialize(&m);
    }
}

fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [root.join("fuzz/corpus"), root.join("tests/data/fuzz")] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(dir.join(target))
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        found.retain(|p| p.is_file());
        found.sort();
        files.extend(found);
    }
    assert!(!files.is_empty(), "no inputs for {target}");
    files
}

fn run_onnx(bytes: &[u8], out: &Path) {
    let path = Path::new("/nonexistent-slice-opt-fuzz/fuzz.onnx");
    if let Ok(m) = OnnxModel::from_bytes(path, bytes::Bytes::copy_from_slice(bytes)) {
        exercise(Model::Onnx(m), out);
    }
}

fn run_ir(data: &[u8], out: &Path) {
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
    let path = Path::new("/nonexistent-slice-opt-fuzz/fuzz.xml");
    let bin = bin.map(bytes::Bytes::copy_from_slice);
    if let Ok(m) = OvModel::from_parts(path, text.to_string(), bin) {
        exercise(Model::OpenVino(m), out);
    }
}

#[test]
fn onnx_decoder_inputs_do_not_panic() {
    let out = tempfile::tempdir().expect("tempdir");
    for f in inputs("onnx_decoder") {
        eprintln!("{}", f.display());
        run_onnx(&std::fs::read(&f).expect("read"), out.path());
    }
}

#[test]
fn ir_reader_inputs_do_not_panic() {
    let out = tempfile::tempdir().expect("tempdir");
    for f in inputs("ir_reader") {
        eprintln!("{}", f.display());
        run_ir(&std::fs::read(&f).expect("read"), out.path());
    }
}

/// A fuzzed 4.7 KB model (a causal-mask slice whose start is `k_len - 8` on a data dim of 32)
/// made the bounds search of nested min/max expressions run for minutes (over 120 s in
/// release for `info` alone). Bounded now: the whole fuzz exercise finishes in seconds.
#[test]
fn nested_clamp_expressions_finish() {
    let out = tempfile::tempdir().expect("tempdir");
    let f = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fuzz/onnx_decoder/slice_clamp_expression_blowup.onnx");
    let t = std::time::Instant::now();
    run_onnx(&std::fs::read(&f).expect("read"), out.path());
    let secs = t.elapsed().as_secs_f64();
    assert!(secs < 60.0, "took {secs:.1} s");
}
