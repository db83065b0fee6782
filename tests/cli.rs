//! Layer: the binary (`main.rs`, `cli/`).
//!
//! `check` (every verdict, edited declarations), `info`, `--verify` (passes on the real models,
//! catches a deliberately broken rewrite), directory mode, and the README's commands (issue 8).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use prost::Message;
use slice_opt::check::{check, Verdict};
use slice_opt::formats::onnx::{proto, OnnxModel};
use slice_opt::ir::{NodeKind, Tensor, TensorData};
use slice_opt::verify::{verify_onnx, Verification};
use slice_opt::{Model, Pipeline};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn slice_opt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_slice-opt"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run slice-opt")
}

fn models(ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo().join("models"))
        .expect("models")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .collect();
    v.sort();
    v
}

#[test]
fn check_passes_on_every_fixture() {
    let all: Vec<PathBuf> = models(".onnx").into_iter().chain(models(".xml")).collect();
    assert!(all.len() >= 40);
    for m in &all {
        let o = slice_opt(&["check", m.to_str().expect("utf8")]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}: {}",
            m.display(),
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

#[test]
fn check_fails_on_an_edited_ir_declaration_and_names_the_node() {
    let dir = tempfile::tempdir().expect("tempdir");
    let xml = std::fs::read_to_string(repo().join("models/last_token.tf.xml")).expect("read");
    // The StridedSlice's output port declares [-1, 16]; make it [-1, 17].
    let at = xml
        .find("names=\"strided_slice:0\"")
        .expect("the slice's output port");
    let dim = at + xml[at..].find("<dim>16</dim>").expect("dim 16");
    let edited = format!(
        "{}<dim>17</dim>{}",
        &xml[..dim],
        &xml[dim + "<dim>16</dim>".len()..]
    );
    std::fs::write(dir.path().join("m.xml"), edited).expect("write");
    std::fs::copy(
        repo().join("models/last_token.tf.bin"),
        dir.path().join("m.bin"),
    )
    .expect("copy");
    let o = slice_opt(&["check", dir.path().join("m.xml").to_str().expect("utf8")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("strided_slice ") && l.contains("mismatch")),
        "{out}"
    );
}

#[test]
fn check_fails_on_an_edited_onnx_declaration_and_names_the_node() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut m = proto::ModelProto::decode(
        std::fs::read(repo().join("models/new_axis_crop.onnx"))
            .expect("read")
            .as_slice(),
    )
    .expect("decode");
    // The slice's output is the graph output, declared [3, 1, 4, 8]: declare the last dim 9.
    let g = m.graph.as_mut().expect("graph");
    let out = g.output.first_mut().expect("output");
    let Some(proto::type_proto::Value::TensorType(t)) =
        out.r#type.as_mut().and_then(|t| t.value.as_mut())
    else {
        panic!("tensor output")
    };
    let last = t
        .shape
        .as_mut()
        .and_then(|s| s.dim.last_mut())
        .expect("dims");
    assert_eq!(
        last.value,
        Some(proto::tensor_shape_proto::dimension::Value::DimValue(8))
    );
    last.value = Some(proto::tensor_shape_proto::dimension::Value::DimValue(9));
    let path = dir.path().join("m.onnx");
    std::fs::write(&path, m.encode_to_vec()).expect("write");
    let o = slice_opt(&["check", path.to_str().expect("utf8"), "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let row = &report["rows"][0];
    assert_eq!(row["node"], "strided_slice");
    assert_eq!(row["verdict"], "mismatch");
}

fn model_from(m: &proto::ModelProto) -> Model {
    Model::Onnx(
        OnnxModel::from_bytes("t.onnx".as_ref(), bytes::Bytes::from(m.encode_to_vec()))
            .expect("load"),
    )
}

#[test]
fn check_gives_every_verdict() {
    // ok: an IR fixture whose slices are declared.
    let ok = check(&Model::load(&repo().join("models/qkv_split.tf.xml")).expect("load"));
    assert!(ok.rows.iter().all(|r| r.verdict == Verdict::Ok) && !ok.rows.is_empty());
    // undeclared: tf2onnx declares no value_info for the slice output.
    let und = check(&Model::load(&repo().join("models/kv_cache_tail.onnx")).expect("load"));
    assert_eq!(und.rows[0].verdict, Verdict::Undeclared);
    assert!(und.passed());
    // invalid: a zero step (ONNX Slice forbids it).
    let case = serde_json::json!({"id": "zero-step", "input_shape": [4], "onnx_opset": 13, "starts": [0], "ends": [4], "axes": [0], "steps": [0]});
    let inv = check(&model_from(&onnx_slice_model(&case)));
    assert_eq!(inv.rows[0].verdict, Verdict::Invalid);
    assert!(!inv.passed());
    // unknown: the starts come from a graph input of unknown length.
    let mut m = onnx_slice_model(
        &serde_json::json!({"id": "dyn", "input_shape": [4], "onnx_opset": 13, "starts": [0], "ends": [4], "axes": null, "steps": null}),
    );
    let g = m.graph.as_mut().expect("graph");
    g.initializer.retain(|t| t.name() != "starts");
    g.input.push(proto::ValueInfoProto {
        name: Some("starts".into()),
        ..Default::default()
    });
    let unk = check(&model_from(&m));
    assert_eq!(unk.rows[0].verdict, Verdict::Unknown);
    assert!(unk.passed());
}

#[test]
fn info_prints_slices_in_python_notation() {
    let o = slice_opt(&["info", "models/ellipsis_shrink.tf.xml"]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    // TensorFlow source: x[1, ..., 0] and x[-1, ..., -1] on a rank-4 input.
    assert!(out.contains("x[1, ..., 0]"), "{out}");
    assert!(out.contains("x[-1, ..., -1]"), "{out}");
}

#[test]
fn verify_passes_on_every_real_onnx_model() {
    for m in models(".onnx") {
        let name = m.file_name().expect("name").to_string_lossy().to_string();
        let original = OnnxModel::load(&m).expect("load");
        let mut model = Model::Onnx(original.clone());
        Pipeline::new().run(&mut model).expect("pipeline");
        let Model::Onnx(transformed) = model else {
            unreachable!("ONNX in, ONNX out")
        };
        match verify_onnx(&original, &transformed, 7, 2) {
            Verification::Passed { .. } => {}
            Verification::NotVerified(why) if name == "loop_body_slice.onnx" => {
                assert!(why.contains("Loop"), "{why}")
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

#[test]
fn verify_catches_a_broken_rewrite() {
    let original = OnnxModel::load(&repo().join("models/const_weight_slice.onnx")).expect("load");
    let mut model = Model::Onnx(original.clone());
    Pipeline::new().run(&mut model).expect("pipeline");
    let Model::Onnx(mut broken) = model else {
        unreachable!("ONNX in, ONNX out")
    };
    // Inject a wrong fold: reverse the folded constant's elements.
    let ix = broken
        .graph
        .g
        .node_indices()
        .find(|&ix| {
            broken.graph.node(ix).origin == slice_opt::ir::Origin::New
                && broken.graph.node(ix).constant().is_some()
        })
        .expect("the folded constant");
    let n = broken.graph.node_mut(ix);
    let NodeKind::Const(t) = &n.kind else {
        unreachable!("constant")
    };
    let raw = t.raw().expect("raw").to_vec();
    let w = t.dtype.bits() / 8;
    let reversed: Vec<u8> = raw.chunks(w).rev().flatten().copied().collect();
    n.kind = NodeKind::Const(Box::new(Tensor {
        dtype: t.dtype,
        shape: t.shape.clone(),
        data: TensorData::Raw(bytes::Bytes::from(reversed)),
    }));
    n.dirty = true;
    match verify_onnx(&original, &broken, 7, 2) {
        Verification::Failed(why) => assert!(why.contains("output"), "{why}"),
        other => panic!("a broken rewrite must fail verification, got {other:?}"),
    }
}

#[test]
fn directory_mode_processes_every_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in");
    std::fs::create_dir(&input).expect("mkdir");
    for f in ["last_token.onnx", "qkv_split.tf.xml", "qkv_split.tf.bin"] {
        std::fs::copy(repo().join("models").join(f), input.join(f)).expect("copy");
    }
    let out = dir.path().join("out");
    let o = slice_opt(&[
        input.to_str().expect("utf8"),
        "-o",
        out.to_str().expect("utf8"),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("2 model(s): 2 ok, 0 failed"), "{err}");
    assert!(
        out.join("last_token.onnx").exists()
            && out.join("qkv_split.tf.xml").exists()
            && out.join("qkv_split.tf.bin").exists()
    );
    // A broken model makes the run fail, the others still succeed.
    std::fs::write(input.join("broken.onnx"), b"not a model").expect("write");
    let o = slice_opt(&[
        input.to_str().expect("utf8"),
        "-o",
        out.to_str().expect("utf8"),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("FAIL"));
}

/// The README's shell commands, run as written (with `cargo run --release --` standing for the
/// built binary).
#[test]
fn readme_commands_work() {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README");
    let mut ran = 0;
    let mut in_sh = false;
    let tmp = tempfile::tempdir().expect("tempdir");
    for line in readme.lines() {
        if line.starts_with("```") {
            in_sh = line.trim() == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        let cmd = line.trim();
        let args: Vec<String> = if let Some(rest) = cmd.strip_prefix("cargo run --release -- ") {
            rest.split_whitespace().map(str::to_string).collect()
        } else if let Some(rest) = cmd.strip_prefix("slice-opt ") {
            rest.split_whitespace().map(str::to_string).collect()
        } else {
            continue;
        };
        // Outputs go to a temporary directory instead of /tmp.
        let args: Vec<String> = args
            .into_iter()
            .map(|a| match a.strip_prefix("/tmp/") {
                Some(f) => tmp.path().join(f).to_string_lossy().into_owned(),
                None => a,
            })
            .collect();
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = slice_opt(&refs);
        assert_eq!(
            o.status.code(),
            Some(0),
            "README command `{cmd}` failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        ran += 1;
    }
    assert!(
        ran >= 3,
        "README shows at least the transform, info and check commands; ran {ran}"
    );
    let _ = Path::new(".");
}

#[test]
fn fold_limit_skips_and_reports_and_report_json_lists_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("r.json");
    let out = dir.path().join("o.onnx");
    // const_weight_slice folds a [4, 4] float slice (64 bytes): a 16-byte limit refuses it.
    let o = slice_opt(&[
        "models/const_weight_slice.onnx",
        "-o",
        out.to_str().expect("utf8"),
        "--fold-limit",
        "16",
        "--report",
        report.to_str().expect("utf8"),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
    let fold = &r["passes"][1];
    assert_eq!(fold["pass"], "fold");
    assert_eq!(fold["changes"].as_array().expect("changes").len(), 0);
    assert!(
        fold["skipped"][0]["what"]
            .as_str()
            .expect("why")
            .contains("limit"),
        "{fold}"
    );
    // With the default limit it folds, and the report says so.
    let o = slice_opt(&[
        "models/const_weight_slice.onnx",
        "-o",
        out.to_str().expect("utf8"),
        "--report",
        report.to_str().expect("utf8"),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
    assert_eq!(r["passes"][1]["changes"][0]["what"], "folded to a constant");
}

/// Outputs are written to a temporary file and renamed: they must still get the mode of a file
/// written in place (a new file: read-write for all less the umask, not the temporary file's
/// owner-only mode), and an output that exists keeps its mode.
#[cfg(unix)]
#[test]
fn outputs_get_the_mode_of_a_file_written_in_place() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let mode = |p: &Path| {
        std::fs::metadata(p)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .permissions()
            .mode()
            & 0o7777
    };
    // What this process's umask makes of a new file.
    let probe = dir.path().join("probe");
    std::fs::File::create(&probe).expect("create");
    let fresh = mode(&probe);
    for (model, out) in [
        ("models/last_token.onnx", "new.onnx"),
        ("models/last_token.tf.xml", "new.xml"),
    ] {
        let out = dir.path().join(out);
        let o = slice_opt(&[model, "-o", out.to_str().expect("utf-8 path"), "-q"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(mode(&out), fresh, "{}", out.display());
        if out.extension().is_some_and(|e| e == "xml") {
            let bin = out.with_extension("bin");
            assert_eq!(mode(&bin), fresh, "{}", bin.display());
        }
        // An existing output keeps its mode.
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let o = slice_opt(&[model, "-o", out.to_str().expect("utf-8 path"), "-q"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(mode(&out), 0o640, "{}", out.display());
    }
}
