//! Layer: subgraph (`check` and `info` inside bodies), through the binary.
//!
//! `check` and `info` list the slices inside ONNX `If` branches and `Loop` bodies, with their
//! paths, inferred from what flows into the body. The model and the expected shapes come from
//! `tools/gen_subgraph_slices.py` (shapes computed by ONNX Runtime) (issue 17).

use std::path::PathBuf;
use std::process::Command;

use slice_opt::check::{check, info, Verdict};
use slice_opt::Model;

fn data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/subgraph")
}

fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(data().join("slices.expected.json")).expect("expected json");
    serde_json::from_str(&text).expect("json")
}

fn shape_string(v: &serde_json::Value) -> String {
    let dims: Vec<String> = v
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_i64().expect("dim").to_string())
        .collect();
    format!("[{}]", dims.join(", "))
}

#[test]
fn check_lists_if_and_loop_body_slices_with_paths_and_runtime_shapes() {
    let model = Model::load(&data().join("slices.onnx")).expect("load");
    let report = check(&model);
    let exp = expected();
    let mut paths: Vec<&str> = report.rows.iter().map(|r| r.path.as_str()).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "If_x/else_branch/else_slice",
            "If_x/then_branch/Slice_3",
            "Loop_1/body/grow_slice",
            "Loop_1/body/loop_slice",
            "Loop_1/body/outer_slice",
        ],
        "every body slice listed once, by path"
    );
    for path in [
        "If_x/then_branch/Slice_3",
        "If_x/else_branch/else_slice",
        "Loop_1/body/loop_slice",
        "Loop_1/body/outer_slice",
    ] {
        let row = report.rows.iter().find(|r| r.path == path).expect("row");
        assert_eq!(
            row.inferred,
            shape_string(&exp[path]),
            "{path}: inferred shape vs ONNX Runtime"
        );
        assert_eq!(row.verdict, Verdict::Undeclared, "{path}");
    }
    // The loop-carried `g` doubles along axis 0 at each iteration (ONNX Runtime: dim 0 differs
    // between 1 and 3 iterations): its dim 0 is unknown in the body, its dim 1 is kept.
    let grow = exp["grow_dim0"].as_array().expect("grow_dim0");
    assert_ne!(grow[0], grow[1], "the generator's premise");
    let row = report
        .rows
        .iter()
        .find(|r| r.path == "Loop_1/body/grow_slice")
        .expect("grow_slice");
    let dim1 = exp["grow_dim1"].as_i64().expect("grow_dim1");
    assert!(
        row.input.starts_with('[') && row.input.ends_with(&format!(", {dim1}]")),
        "grow_slice input {}",
        row.input
    );
    let dim0 = row.input[1..].split(',').next().expect("dim 0");
    assert!(
        dim0.trim().parse::<i64>().is_err(),
        "dim 0 of a carried value the body changes must not be a number: {}",
        row.input
    );
    assert!(report.passed());
}

#[test]
fn info_lists_body_slices_and_the_cli_prints_paths() {
    let path = data().join("slices.onnx");
    let model = Model::load(&path).expect("load");
    let i = info(&model);
    assert_eq!(i.slices.len(), 5);
    let then = i
        .slices
        .iter()
        .find(|s| s.path == "If_x/then_branch/Slice_3")
        .expect("then slice");
    // The branch reads the outer `x` [2, 6] by name.
    assert_eq!(then.input, "[2, 6]");
    let out = Command::new(env!("CARGO_BIN_EXE_slice-opt"))
        .args(["check", path.to_str().expect("utf8"), "--format", "json"])
        .output()
        .expect("run");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 5);
    assert!(rows
        .iter()
        .any(|r| r["path"] == "Loop_1/body/loop_slice" && r["input"] == "[3, 8]"));
}

#[test]
fn bodies_are_written_back_untouched() {
    let path = data().join("slices.onnx");
    let model = Model::load(&path).expect("load");
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("o.onnx");
    model.save(&out).expect("save");
    assert_eq!(
        std::fs::read(&path).expect("read"),
        std::fs::read(&out).expect("read")
    );
}

/// OpenVINO bodies: the slices the IR converters wrote into a `Loop` body and both `If` bodies
/// are listed with their paths, and agree with the port dims OpenVINO's converters declared.
#[test]
fn check_lists_openvino_body_slices() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for (file, paths) in [
        (
            "models/loop_body_slice.tf.xml",
            &["while/body/while/strided_slice"][..],
        ),
        (
            "models/if_outer_slice.onnx.xml",
            &["y/then_body/t_out", "y/else_body/e_out"][..],
        ),
    ] {
        let model = Model::load(&repo.join(file)).expect("load");
        let report = check(&model);
        let got: Vec<&str> = report.rows.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(got, paths, "{file}");
        for r in &report.rows {
            // `tighter`: we know more than the port declares (e.g. `0..5` where it says `?`).
            assert!(
                matches!(r.verdict, Verdict::Ok | Verdict::Tighter),
                "{file} {}: {:?} {}",
                r.path,
                r.verdict,
                r.detail
            );
            assert!(r.input.starts_with('['), "{file} {}", r.path);
        }
        assert_eq!(info(&model).slices.len(), paths.len());
    }
}
