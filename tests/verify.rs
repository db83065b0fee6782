//! Layer: verify (`--verify`), through the binary.
//!
//! `--verify` binds dims, runs both outcomes of an `If` on an input, says what was and was not
//! verified, prints the summary table (issue 20), and never aborts or panics: a declared input of
//! 100000x100000, a Slice step of INT64_MIN, `Range(0, 10^12)` (issue 18, attack 8). Every model is
//! built here.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{i64_tensor, model, node};
use prost::Message;
use slice_opt::formats::onnx::{proto, OnnxModel};
use slice_opt::verify::{verify_onnx_with, Verification, VerifyOptions};

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

fn value(name: &str, elem: i32, dims: Option<&[Result<i64, &str>]>) -> proto::ValueInfoProto {
    use proto::tensor_shape_proto::dimension::Value as DV;
    use proto::type_proto::{Tensor as TT, Value as TV};
    proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(TV::TensorType(TT {
                elem_type: Some(elem),
                shape: dims.map(|dims| proto::TensorShapeProto {
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

fn scalar_i64(name: &str, v: i64) -> proto::TensorProto {
    let mut t = i64_tensor(name, &[v]);
    t.dims.clear();
    t
}

fn f32_tensor(name: &str, dims: &[i64], values: &[f32]) -> proto::TensorProto {
    proto::TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(1),
        raw_data: Some(bytes::Bytes::from(
            values
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        )),
        ..Default::default()
    }
}

fn write(dir: &Path, name: &str, m: &proto::ModelProto) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, m.encode_to_vec()).expect("write model");
    p
}

/// `y = x[0:2]` on an f32 input of the given dims.
fn slice_model(dims: &[Result<i64, &str>], steps: i64) -> proto::ModelProto {
    model(proto::GraphProto {
        name: Some("g".into()),
        node: vec![node(
            "Slice",
            "slice",
            &["x", "starts", "ends", "axes", "steps"],
            &["y"],
        )],
        initializer: vec![
            i64_tensor("starts", &[0]),
            i64_tensor("ends", &[2]),
            i64_tensor("axes", &[0]),
            i64_tensor("steps", &[steps]),
        ],
        input: vec![value("x", 1, Some(dims))],
        output: vec![value("y", 1, None)],
        ..Default::default()
    })
}

/// The run's exit is an exit (not a signal: an abort is SIGABRT) and nothing panicked.
fn assert_no_abort(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        o.status.code().is_some(),
        "killed by a signal: {:?}\n{err}",
        o.status
    );
    assert!(!err.contains("panicked at"), "{err}");
    assert!(!err.contains("memory allocation"), "{err}");
    err
}

fn load(p: &Path) -> OnnxModel {
    OnnxModel::load(p).expect("load")
}

#[test]
fn attack8_huge_declared_input_is_not_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write(
        dir.path(),
        "huge.onnx",
        &slice_model(&[Ok(100_000), Ok(100_000)], 1),
    );
    let out = dir.path().join("out.onnx");
    let o = slice_opt(&[
        p.to_str().expect("utf8"),
        "-o",
        out.to_str().expect("utf8"),
        "--verify",
    ]);
    let err = assert_no_abort(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("NOT verified: inputs too large to run"),
        "{err}"
    );
    // The library says the same, without allocating the 40 GB.
    let m = load(&p);
    match verify_onnx_with(&m, &m, &VerifyOptions::default()) {
        Verification::NotVerified(why) => assert!(why.contains("inputs too large"), "{why}"),
        other => panic!("{other:?}"),
    }
    // A binding that makes a symbolic input too large is refused the same way.
    let p = write(
        dir.path(),
        "sym.onnx",
        &slice_model(&[Err("n"), Err("m")], 1),
    );
    let o = slice_opt(&[
        p.to_str().expect("utf8"),
        "-o",
        out.to_str().expect("utf8"),
        "--verify",
        "--bind",
        "n=100000,m=100000",
    ]);
    let err = assert_no_abort(&o);
    assert!(err.contains("inputs too large to run"), "{err}");
}

#[test]
fn attack8_slice_step_int64_min_does_not_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = write(
        dir.path(),
        "step.onnx",
        &slice_model(&[Ok(4), Ok(3)], i64::MIN),
    );
    let m = load(&p);
    // Straight into tract (the passes may refuse the node first).
    let v = verify_onnx_with(&m, &m, &VerifyOptions::default());
    assert!(
        !matches!(v, Verification::Passed { .. }),
        "a step of INT64_MIN cannot be verified as passing: {v:?}"
    );
    let out = dir.path().join("out.onnx");
    let o = slice_opt(&[
        p.to_str().expect("utf8"),
        "-o",
        out.to_str().expect("utf8"),
        "--verify",
    ]);
    assert_no_abort(&o);
}

#[test]
fn attack8_range_of_10_to_the_12_does_not_abort() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = model(proto::GraphProto {
        name: Some("g".into()),
        node: vec![
            node("Range", "range", &["start", "limit", "delta"], &["r"]),
            node("Cast", "cast", &["r"], &["rf"]),
            node("Add", "add", &["x", "rf"], &["y"]),
        ],
        initializer: vec![
            scalar_i64("start", 0),
            scalar_i64("limit", 1_000_000_000_000),
            scalar_i64("delta", 1),
        ],
        input: vec![value("x", 1, Some(&[Ok(1)]))],
        output: vec![value("y", 1, None)],
        ..Default::default()
    });
    let mut m = m;
    if let Some(g) = m.graph.as_mut() {
        g.node[1].attribute.push(common::int_attr("to", 1));
    }
    let p = write(dir.path(), "range.onnx", &m);
    let model = load(&p);
    let v = verify_onnx_with(&model, &model, &VerifyOptions::default());
    match &v {
        Verification::NotVerified(why) => assert!(!why.is_empty()),
        other => panic!("Range(0, 10^12) cannot be run under the limit: {other:?}"),
    }
    let out = dir.path().join("out.onnx");
    let o = slice_opt(&[
        p.to_str().expect("utf8"),
        "-o",
        out.to_str().expect("utf8"),
        "--verify",
    ]);
    assert_no_abort(&o);
}

/// `y = If(Equal(sr, 16000), then, else)` on inputs `x` (dims `x_dims`) and the scalar `sr`,
/// like silero-vad's sample-rate switch.
fn if_on_sr(
    then: proto::GraphProto,
    els: proto::GraphProto,
    x_dims: &[Result<i64, &str>],
    y_dims: Option<&[Result<i64, &str>]>,
) -> proto::ModelProto {
    let graph_attr = |name: &str, g: proto::GraphProto| proto::AttributeProto {
        name: Some(name.into()),
        g: Some(Box::new(g)),
        r#type: Some(proto::attribute_proto::AttributeType::Graph as i32),
        ..Default::default()
    };
    let mut iff = node("If", "if", &["cond"], &["y"]);
    iff.attribute.push(graph_attr("then_branch", then));
    iff.attribute.push(graph_attr("else_branch", els));
    model(proto::GraphProto {
        name: Some("g".into()),
        node: vec![node("Equal", "eq", &["sr", "sr16k"], &["cond"]), iff],
        initializer: vec![scalar_i64("sr16k", 16000)],
        input: vec![value("x", 1, Some(x_dims)), value("sr", 7, Some(&[]))],
        output: vec![value("y", 1, y_dims)],
        ..Default::default()
    })
}

/// A branch `{name}_y = op(x, {name}_c)` with the initializer `{name}_c`.
fn branch_with(name: &str, op: &str, c: proto::TensorProto) -> proto::GraphProto {
    proto::GraphProto {
        name: Some(name.into()),
        node: vec![node(
            op,
            &format!("{name}_op"),
            &["x", &format!("{name}_c")],
            &[&format!("{name}_y")],
        )],
        initializer: vec![c],
        output: vec![value(&format!("{name}_y"), 1, None)],
        ..Default::default()
    }
}

/// `y = If(sr == 16000, x + 1, x * else_factor)` on `x: [batch, 4]`.
fn if_model(else_factor: f32) -> proto::ModelProto {
    let then = branch_with("then", "Add", f32_tensor("then_c", &[], &[1.0]));
    let els = branch_with("else", "Mul", f32_tensor("else_c", &[], &[else_factor]));
    let dims = [Err("batch"), Ok(4)];
    if_on_sr(then, els, &dims, Some(&dims))
}

#[test]
fn if_on_an_input_runs_both_branches() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = load(&write(dir.path(), "a.onnx", &if_model(2.0)));
    let opts = VerifyOptions {
        bind: [("batch".to_string(), 5)].into_iter().collect(),
        ..VerifyOptions::default()
    };
    match verify_onnx_with(&a, &a, &opts) {
        Verification::Passed { detail, runs, .. } => {
            assert!(detail.contains("batch=5"), "{detail}");
            assert!(detail.contains("sr=16000"), "{detail}");
            assert!(detail.contains("sr=8000"), "{detail}");
            assert_eq!(runs, 2 * opts.runs, "{detail}");
        }
        other => panic!("{other:?}"),
    }
    // A change only in the else branch (sr != 16000) is caught.
    let b = load(&write(dir.path(), "b.onnx", &if_model(3.0)));
    match verify_onnx_with(&a, &b, &opts) {
        Verification::Failed(why) => assert!(why.contains("sr=8000"), "{why}"),
        other => panic!("an else-branch difference must fail: {other:?}"),
    }
}

/// `y = If(Equal(sr, 16000), Reshape(x, [2, 256]), Reshape(x, [1, 256]))` on `x: [1, ?]`:
/// like silero-vad, each value of `sr` runs only with its own number of samples (512, 256).
fn if_sized_model() -> proto::ModelProto {
    let then = branch_with("then", "Reshape", i64_tensor("then_c", &[2, 256]));
    let els = branch_with("else", "Reshape", i64_tensor("else_c", &[1, 256]));
    if_on_sr(then, els, &[Ok(1), Err("")], None)
}

#[test]
fn each_control_value_gets_the_sizes_it_runs_with() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = load(&write(dir.path(), "a.onnx", &if_sized_model()));
    let opts = VerifyOptions::default();
    match verify_onnx_with(&a, &a, &opts) {
        Verification::Passed { detail, runs, .. } => {
            assert!(!detail.contains("NOT verified"), "{detail}");
            assert!(
                detail.contains("sr=16000 (dims bound: x=1x512)"),
                "{detail}"
            );
            assert!(detail.contains("sr=8000 (dims bound: x=1x256)"), "{detail}");
            assert_eq!(runs, 2 * opts.runs, "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn symbolic_dims_are_bound_everywhere_before_analysis() {
    // The output declares the input's symbol: tract must see one concrete size for both.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut m = slice_model(&[Err("batch"), Ok(3)], 1);
    if let Some(g) = m.graph.as_mut() {
        g.output = vec![value("y", 1, Some(&[Err("two"), Ok(3)]))];
        g.value_info = vec![value("x", 1, Some(&[Err("batch"), Ok(3)]))];
    }
    let p = write(dir.path(), "sym.onnx", &m);
    let out = dir.path().join("out.onnx");
    let o = slice_opt(&[
        p.to_str().expect("utf8"),
        "-o",
        out.to_str().expect("utf8"),
        "--verify",
        "--bind",
        "batch=7",
    ]);
    let err = assert_no_abort(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("verified in tract-onnx"), "{err}");
    assert!(err.contains("batch=7"), "{err}");
    // A bad --bind is a usage error, not a panic.
    let o = slice_opt(&[
        p.to_str().expect("utf8"),
        "-o",
        out.to_str().expect("utf8"),
        "--verify",
        "--bind",
        "batch",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

/// Op counts of the main graph of an ONNX file, read with prost (not through our IR).
fn onnx_counts(p: &Path) -> (std::collections::BTreeMap<String, usize>, usize) {
    let m = proto::ModelProto::decode(std::fs::read(p).expect("read").as_slice()).expect("decode");
    let g = m.graph.expect("graph");
    let mut c = std::collections::BTreeMap::new();
    for n in &g.node {
        *c.entry(n.op_type().to_string()).or_insert(0) += 1;
    }
    (c, g.node.len())
}

/// Op counts of an IR `.xml`, read from its `<layer ... type="...">` elements.
fn ir_counts(p: &Path) -> (std::collections::BTreeMap<String, usize>, usize) {
    let xml = std::fs::read_to_string(p).expect("read");
    let mut c = std::collections::BTreeMap::new();
    let mut total = 0;
    // Top-level layers only: bodies of If/Loop/TensorIterator are in <body>, <then_body> and
    // <else_body> elements.
    let mut depth = 0usize;
    for tag in xml.split('<').skip(1) {
        let name = tag
            .split(|c: char| c.is_whitespace() || c == '>' || c == '/')
            .find(|t| !t.is_empty())
            .unwrap_or("");
        if name.ends_with("body") && tag.starts_with('/') {
            depth = depth.saturating_sub(1);
        } else if name.ends_with("body") && !tag.trim_end().ends_with("/>") {
            depth += 1;
        } else if depth == 0 && tag.starts_with("layer ") {
            let ty = tag
                .split("type=\"")
                .nth(1)
                .and_then(|t| t.split('"').next())
                .unwrap_or("");
            if ty != "Parameter" && ty != "Result" {
                *c.entry(ty.to_string()).or_insert(0) += 1;
                total += 1;
            }
        }
    }
    (c, total)
}

#[test]
fn summary_table_on_every_fixture_matches_the_report_and_the_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(repo().join("models"))
        .expect("models")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let s = p.to_string_lossy();
            s.ends_with(".onnx") || s.ends_with(".xml")
        })
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 30, "{fixtures:?}");
    for (k, f) in fixtures.iter().enumerate() {
        let name = f.file_name().expect("name").to_string_lossy().to_string();
        let is_ir = name.ends_with(".xml");
        let out = dir.path().join(&name);
        let report = dir.path().join(format!("{name}.json"));
        let mut args = vec![
            f.to_str().expect("utf8"),
            "-o",
            out.to_str().expect("utf8"),
            "--report",
            report.to_str().expect("utf8"),
        ];
        // Every other model quiet: `--report` still gets the summary, and nothing is printed.
        let quiet = k % 2 == 1;
        if quiet {
            args.push("-q");
        }
        let o = slice_opt(&args);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(0), "{name}: {err}");
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
        let s = &r["summary"];
        let (before, nb) = if is_ir { ir_counts(f) } else { onnx_counts(f) };
        let (after, na) = if is_ir {
            ir_counts(&out)
        } else {
            onnx_counts(&out)
        };
        assert_eq!(s["nodes_before"].as_u64(), Some(nb as u64), "{name}");
        assert_eq!(s["nodes_after"].as_u64(), Some(na as u64), "{name}");
        let rows = s["ops"].as_array().expect("ops");
        let names: Vec<&str> = rows
            .iter()
            .map(|r| r["op"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            names,
            [
                "Slice",
                "StridedSlice",
                "Reshape",
                "Split",
                "Shape",
                "Gather",
                "Constant"
            ],
            "{name}"
        );
        for row in rows {
            let op = row["op"].as_str().unwrap_or("");
            let single = [op];
            let aliases: &[&str] = match op {
                "Shape" => &["Shape", "ShapeOf"],
                "Split" => &["Split", "VariadicSplit"],
                "Constant" => &["Constant", "Const"],
                _ => &single,
            };
            let count = |c: &std::collections::BTreeMap<String, usize>| -> u64 {
                aliases
                    .iter()
                    .map(|a| c.get(*a).copied().unwrap_or(0) as u64)
                    .sum()
            };
            assert_eq!(row["before"].as_u64(), Some(count(&before)), "{name} {op}");
            assert_eq!(row["after"].as_u64(), Some(count(&after)), "{name} {op}");
            // The table prints the same numbers.
            if quiet {
                continue;
            }
            let line = err
                .lines()
                .find(|l| l.starts_with(&format!("| {op} ")))
                .unwrap_or_else(|| panic!("{name}: no {op} row in\n{err}"));
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            assert_eq!(cells[2], count(&before).to_string(), "{name}: {line}");
            assert_eq!(cells[3], count(&after).to_string(), "{name}: {line}");
        }
        let size = |p: &Path| {
            let mut n = std::fs::metadata(p).expect("size").len();
            if is_ir {
                n += std::fs::metadata(p.with_extension("bin"))
                    .expect("bin")
                    .len();
            }
            n
        };
        assert_eq!(s["bytes_before"].as_u64(), Some(size(f)), "{name}");
        assert_eq!(s["bytes_after"].as_u64(), Some(size(&out)), "{name}");
        if quiet {
            assert!(err.is_empty(), "{name}: -q printed {err}");
            continue;
        }
        assert!(err.contains("| total nodes "), "{name}: {err}");
        assert!(err.contains("| model size "), "{name}: {err}");
        assert!(err.contains("time: "), "{name}: {err}");
    }
    // -q silences it.
    let f = repo().join("models/last_token.onnx");
    let out = dir.path().join("q.onnx");
    let o = slice_opt(&[
        f.to_str().expect("utf8"),
        "-o",
        out.to_str().expect("utf8"),
        "-q",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Node names an exporter repeated (silero-vad's OpenVINO export names 43 Constants
/// `F0::anon`): ONNX allows it, ONNX Runtime runs it, tract refuses it ("duplicate name for
/// node"). Verification renames tract's copy and verifies the model.
#[test]
fn repeated_node_names_are_verified() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = model(proto::GraphProto {
        name: Some("g".into()),
        node: vec![
            node("Neg", "dup", &["x"], &["a"]),
            node("Neg", "dup", &["a"], &["b"]),
            node("Slice", "dup", &["b", "starts", "ends", "axes"], &["y"]),
        ],
        initializer: vec![
            i64_tensor("starts", &[1]),
            i64_tensor("ends", &[3]),
            i64_tensor("axes", &[0]),
        ],
        input: vec![value("x", 1, Some(&[Ok(4), Ok(3)]))],
        output: vec![value("y", 1, None)],
        ..Default::default()
    });
    let p = write(dir.path(), "dup.onnx", &m);
    let m = load(&p);
    let v = verify_onnx_with(&m, &m, &VerifyOptions::default());
    assert!(matches!(v, Verification::Passed { .. }), "{v:?}");
}

/// Runs the default passes with `--verify --report` on `models/{model}` into `dir`; returns the
/// process output and the report's `verification` line.
fn verify_with_report(dir: &Path, model: &str) -> (Output, String) {
    let out = dir.join(model);
    let report = dir.join(format!("{model}.json"));
    let o = slice_opt(&[
        &format!("models/{model}"),
        "-o",
        out.to_str().expect("utf8"),
        "--verify",
        "-q",
        "--report",
        report.to_str().expect("utf8"),
    ]);
    assert!(
        o.status.success(),
        "{model}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report")).expect("json");
    let line = json["verification"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    (o, line)
}

/// `--report` carries the verification line (`-q` silences only stderr): verified on a model
/// tract runs, "NOT verified" naming the op on one with a `Loop` (tract-onnx has none).
#[test]
fn report_json_carries_the_verification() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (model, want) in [
        ("qkv_split.onnx", "verified in tract-onnx"),
        ("loop_body_slice.onnx", "NOT verified"),
    ] {
        let (o, line) = verify_with_report(dir.path(), model);
        assert!(
            o.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(line.starts_with(want), "{model}: {line}");
        if model.starts_with("loop") {
            assert!(line.contains("Loop"), "{line}");
        }
    }
}

/// Issue 20: `--verify` verifies every ONNX fixture after the default passes, except a model with
/// an op tract-onnx does not implement (`loop_body_slice.onnx`: `Loop`), which must say so.
#[test]
fn every_onnx_fixture_is_verified_or_names_the_op_tract_lacks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut verified = 0;
    let mut lacking = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(repo().join("models"))
        .expect("models/")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
        .filter(|n| n.ends_with(".onnx"))
        .collect();
    names.sort();
    for name in &names {
        let (_, line) = verify_with_report(dir.path(), name);
        if line.starts_with("verified") && !line.contains("NOT verified") {
            verified += 1;
        } else if line.contains("Unimplemented(") {
            lacking.push(name.clone());
        } else {
            panic!("{name}: {line}");
        }
    }
    assert_eq!(lacking, ["loop_body_slice.onnx"], "verified {verified}");
    assert_eq!(verified + 1, names.len());
}
