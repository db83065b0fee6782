//! Issue 45: directory mode over exports that are folders of `model.onnx` + `model.onnx.data`
//! (torch's and optimum's layout), and the external data of each output named after it. Every
//! model is built here: `y = x[:, 0:256] + w[0:256]` and `z = x + w`, `w` (300 floats) in the
//! external data file, so `fold` computes a constant of 1,024 bytes that goes to a new external
//! data file, and `w` stays in the one copied.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{i64_tensor, model, node};
use prost::Message;
use slice_opt::formats::onnx::proto;

fn slice_opt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_slice-opt"))
        .args(args)
        .output()
        .expect("run slice-opt")
}

fn value(name: &str, dims: &[Result<i64, &str>]) -> proto::ValueInfoProto {
    use proto::tensor_shape_proto::dimension::Value as DV;
    use proto::type_proto::{Tensor as TT, Value as TV};
    proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(TV::TensorType(TT {
                elem_type: Some(1),
                shape: Some(proto::TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|d| proto::tensor_shape_proto::Dimension {
                            value: Some(match d {
                                Ok(v) => DV::DimValue(*v),
                                Err(p) => DV::DimParam(p.to_string()),
                            }),
                            ..Default::default()
                        })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Writes `dir/name` and its external data file `dir/name.data` (as torch's exporter names
/// it); `seed` makes each model's weights its own.
fn export(dir: &Path, name: &str, seed: f32) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let data_name = format!("{name}.data");
    let weights: Vec<u8> = (0..300)
        .flat_map(|i| (seed + i as f32 * 0.5).to_le_bytes())
        .collect();
    std::fs::write(dir.join(&data_name), &weights).expect("write data");
    let kv = |k: &str, v: String| proto::StringStringEntryProto {
        key: Some(k.into()),
        value: Some(v),
    };
    let w = proto::TensorProto {
        name: Some("w".into()),
        dims: vec![300],
        data_type: Some(1),
        data_location: Some(1),
        external_data: vec![
            kv("location", data_name),
            kv("offset", "0".into()),
            kv("length", weights.len().to_string()),
        ],
        ..Default::default()
    };
    let m = model(proto::GraphProto {
        name: Some("g".into()),
        node: vec![
            node("Slice", "x_head", &["x", "zero", "n", "one"], &["xs"]),
            node("Slice", "w_head", &["w", "zero", "n", "zero"], &["ws"]),
            node("Add", "add", &["xs", "ws"], &["y"]),
            node("Add", "add_all", &["x", "w"], &["z"]),
        ],
        initializer: vec![
            w,
            i64_tensor("zero", &[0]),
            i64_tensor("one", &[1]),
            i64_tensor("n", &[256]),
        ],
        input: vec![value("x", &[Err("batch"), Ok(300)])],
        output: vec![
            value("y", &[Err("batch"), Ok(256)]),
            value("z", &[Err("batch"), Ok(300)]),
        ],
        ..Default::default()
    });
    let p = dir.join(name);
    std::fs::write(&p, m.encode_to_vec()).expect("write model");
    p
}

/// The external data locations an ONNX file names (read with prost, not through our loader).
fn locations(p: &Path) -> Vec<String> {
    let m = proto::ModelProto::decode(std::fs::read(p).expect("read").as_slice()).expect("decode");
    let mut v: Vec<String> = m
        .graph
        .iter()
        .flat_map(|g| &g.initializer)
        .flat_map(|t| &t.external_data)
        .filter(|e| e.key.as_deref() == Some("location"))
        .filter_map(|e| e.value.clone())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Acceptance 4: three `model.onnx` + `model.onnx.data` exports in subfolders and two at the
/// top level go through directory mode, verified, each output beside its own data files.
#[test]
fn folders_of_model_onnx_exports_go_through_directory_mode() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let input = tmp.path().join("exports");
    for (k, sub) in ["gpt2", "llama", "bert"].iter().enumerate() {
        export(&input.join(sub), "model.onnx", k as f32);
    }
    export(&input, "encoder.onnx", 10.0);
    export(&input, "decoder.onnx", 20.0);
    let out = tmp.path().join("out");
    for round in 0..2 {
        // The second round writes over the outputs of the first.
        let o = slice_opt(&[
            input.to_str().expect("utf8"),
            "-o",
            out.to_str().expect("utf8"),
            "--verify",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "round {round}: {err}");
        assert!(err.contains("5 model(s): 5 ok, 0 failed"), "{err}");
        let verified = err
            .lines()
            .filter(|l| l.starts_with("ok ") && l.contains("verified in tract-onnx"))
            .filter(|l| !l.contains("NOT verified"))
            .count();
        assert_eq!(verified, 5, "{err}");
    }
    for rel in [
        "gpt2/model.onnx",
        "llama/model.onnx",
        "bert/model.onnx",
        "encoder.onnx",
        "decoder.onnx",
    ] {
        let p = out.join(rel);
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let locs = locations(&p);
        // The weights' file copied under the output's name, the folded constant in a second
        // file named after the output too.
        assert_eq!(
            locs,
            [format!("{name}.1.data"), format!("{name}.data")],
            "{rel}"
        );
        for l in &locs {
            assert!(p.with_file_name(l).is_file(), "{rel}: {l}");
        }
    }
}

/// Two exports `a/model.onnx` and `b/model.onnx`, each with its `model.onnx.data`, saved into
/// one directory as `out/a.onnx` and `out/b.onnx`: each output's data file is named after it
/// (both were `model.onnx.data`, and the second save was refused).
#[test]
fn each_output_names_its_external_data_after_itself() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let a = export(&tmp.path().join("a"), "model.onnx", 1.0);
    let b = export(&tmp.path().join("b"), "model.onnx", 2.0);
    let out = tmp.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    for (src, dst, passes) in [(&a, "a.onnx", "none"), (&b, "b.onnx", "infer,fold,cleanup")] {
        let target = out.join(dst);
        let o = slice_opt(&[
            src.to_str().expect("utf8"),
            "-o",
            target.to_str().expect("utf8"),
            "--passes",
            passes,
            "--verify",
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{dst}: {err}");
        assert!(err.contains("verified in tract-onnx"), "{dst}: {err}");
    }
    assert_eq!(locations(&out.join("a.onnx")), ["a.onnx.data"]);
    assert_eq!(
        locations(&out.join("b.onnx")),
        ["b.onnx.1.data", "b.onnx.data"]
    );
    assert!(!out.join("model.onnx.data").exists());
    // The weights copied are the exports' own.
    assert_eq!(
        std::fs::read(out.join("a.onnx.data")).expect("a data"),
        std::fs::read(tmp.path().join("a/model.onnx.data")).expect("a source")
    );
    assert_eq!(
        std::fs::read(out.join("b.onnx.data")).expect("b data"),
        std::fs::read(tmp.path().join("b/model.onnx.data")).expect("b source")
    );
}
