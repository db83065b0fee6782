//! Layer: formats (ONNX load and save).
//!
//! Lossless ONNX round-trip, external data, subgraphs, corrupt input, zero-copy loading (issue 3).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::node;
use prost::Message;
use slice_opt::formats::onnx::proto::{self, ModelProto};
use slice_opt::formats::onnx::OnnxModel;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every ONNX model the repository ships for tests: the onnx package's backend Slice cases
/// (`tools/gen_onnx_backend_slice.py`) and the converter fixtures under `models/`.
fn onnx_fixtures() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in [
        repo().join("tests/data/onnx_backend"),
        repo().join("models"),
    ] {
        for e in std::fs::read_dir(&dir).expect("fixture dir") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "onnx") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn decode(path: &Path) -> ModelProto {
    ModelProto::decode(std::fs::read(path).expect("read").as_slice()).expect("decode")
}

fn slice_opt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_slice-opt"))
}

#[test]
fn round_trip_is_byte_identical_for_every_fixture() {
    let fixtures = onnx_fixtures();
    assert!(
        fixtures.len() >= 8 + 16,
        "expected the backend and model fixtures, got {}",
        fixtures.len()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    for f in &fixtures {
        let out = dir.path().join(f.file_name().expect("name"));
        let st = slice_opt()
            .arg(f)
            .arg("-o")
            .arg(&out)
            .args(["--passes", "none", "-q"])
            .status()
            .expect("run");
        assert!(st.success(), "{}: exit {st}", f.display());
        assert_eq!(
            decode(f),
            decode(&out),
            "{}: decoded models differ",
            f.display()
        );
        // All fixtures were written by the onnx Python package (directly or through tf2onnx).
        assert_eq!(
            std::fs::read(f).expect("read"),
            std::fs::read(&out).expect("read"),
            "{}: bytes differ",
            f.display()
        );
    }
}

/// Nodes in topological order (Kahn, ties by original index), as the writer must emit them.
fn expected_node_order(g: &proto::GraphProto) -> Vec<proto::NodeProto> {
    let mut produced: std::collections::HashSet<String> =
        g.input.iter().map(|v| v.name().to_string()).collect();
    produced.extend(g.initializer.iter().map(|t| t.name().to_string()));
    let mut left: Vec<&proto::NodeProto> = g.node.iter().collect();
    let mut out = Vec::new();
    while !left.is_empty() {
        let pos = left
            .iter()
            .position(|n| n.input.iter().all(|i| i.is_empty() || produced.contains(i)))
            .expect("acyclic");
        let n = left.remove(pos);
        produced.extend(n.output.iter().cloned());
        out.push(n.clone());
    }
    out
}

#[test]
fn rebuilding_the_graph_from_the_ir_loses_nothing() {
    for f in onnx_fixtures() {
        let m = OnnxModel::load(&f).expect("load");
        let rebuilt = m.rebuild_proto().expect("rebuild");
        let mut want = decode(&f);
        let g = want.graph.as_mut().expect("graph");
        g.node = expected_node_order(g);
        assert_eq!(want, rebuilt, "{}: rebuilt model differs", f.display());
    }
}

#[test]
fn subgraph_models_keep_their_bodies_and_captures() {
    // The If branches read the outer `x`; the Loop body gets everything through its inputs.
    for (name, captures) in [
        ("loop_body_slice.onnx", false),
        ("if_outer_slice.onnx", true),
    ] {
        let f = repo().join("models").join(name);
        let m = OnnxModel::load(&f).expect("load");
        let captured = m
            .graph
            .g
            .edge_weights()
            .filter(|w| w.dst_port == slice_opt::ir::Wire::CAPTURED)
            .count();
        assert_eq!(
            captured > 0,
            captures,
            "{name}: the subgraph's outer-scope reads must be edges"
        );
        let bodies = decode(&f)
            .graph
            .expect("graph")
            .node
            .iter()
            .flat_map(|n| n.attribute.iter())
            .filter(|a| a.g.is_some())
            .count();
        assert!(bodies > 0, "{name} has a subgraph");
    }
}

#[test]
fn external_data_is_kept_beside_the_output() {
    let f = repo().join("models/external_data.onnx");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("copy.onnx");
    let st = slice_opt()
        .arg(&f)
        .arg("-o")
        .arg(&out)
        .args(["--passes", "none", "-q"])
        .status()
        .expect("run");
    assert!(st.success());
    // Copied under the output's name (issue 45: `copy.onnx.data`, not the input's name).
    let data = dir.path().join("copy.onnx.data");
    assert!(!dir.path().join("external_data.onnx.data").exists());
    assert_eq!(
        std::fs::read(&data).expect("external file copied"),
        std::fs::read(repo().join("models/external_data.onnx.data")).expect("read")
    );
    let a = OnnxModel::load(&f).expect("load original");
    let b = OnnxModel::load(&out).expect("load copy");
    let tensors = |m: &OnnxModel| -> Vec<slice_opt::ir::Tensor> {
        m.graph
            .g
            .node_weights()
            .filter_map(|n| n.constant().cloned())
            .collect()
    };
    assert_eq!(tensors(&a), tensors(&b));
    assert!(tensors(&a)
        .iter()
        .any(|t| t.raw().is_some_and(|r| r.len() == 1 << 20)));
}

/// A constant folded out of external data goes to a new external data file beside the output
/// (not inline), the weights it was cut from are neither copied nor kept, and the folded bytes
/// are the ONNX Slice of the original: `wc = w[:, 0:128]` of the 512 x 512 f32 `w`.
#[test]
fn folded_external_constants_go_to_a_new_external_file() {
    let f = repo().join("models/external_data.onnx");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("folded.onnx");
    let st = slice_opt()
        .arg(&f)
        .arg("-o")
        .arg(&out)
        .arg("-q")
        .status()
        .expect("run");
    assert!(st.success());
    let m = decode(&out);
    let g = m.graph.as_ref().expect("graph");
    assert!(
        g.node.iter().all(|n| n.op_type() != "Slice"),
        "slice folded"
    );
    let wc = g
        .initializer
        .iter()
        .find(|t| t.name() == "wc")
        .expect("folded initializer wc");
    assert_eq!(wc.dims, vec![512, 128]);
    assert_eq!(wc.data_location, Some(1), "external, not inline");
    assert!(wc.raw_data.is_none());
    let kv = |k: &str| {
        wc.external_data
            .iter()
            .find(|e| e.key() == k)
            .map(|e| e.value().to_string())
            .expect(k)
    };
    assert_eq!(kv("location"), "folded.onnx.data");
    let offset: usize = kv("offset").parse().expect("offset");
    let length: usize = kv("length").parse().expect("length");
    assert_eq!(length, 512 * 128 * 4);
    let data = std::fs::read(dir.path().join("folded.onnx.data")).expect("data file");
    let w = std::fs::read(repo().join("models/external_data.onnx.data")).expect("weights");
    let want: Vec<u8> = (0..512)
        .flat_map(|r| w[r * 512 * 4..(r * 512 + 128) * 4].iter().copied())
        .collect();
    assert!(
        data[offset..offset + length] == want[..],
        "wc = w[:, 0:128]"
    );
    assert!(
        std::fs::metadata(&out).expect("out").len() < 4096,
        "the .onnx holds no tensor data"
    );
    assert!(
        !dir.path().join("external_data.onnx.data").exists(),
        "w is unused after folding: its file is not copied"
    );
    // It reads back through our loader with the same values.
    let back = OnnxModel::load(&out).expect("reload");
    let t = back
        .graph
        .g
        .node_weights()
        .find(|n| n.outputs.first().is_some_and(|v| v.name == "wc"))
        .and_then(|n| n.constant())
        .expect("wc constant");
    assert_eq!(t.raw().expect("raw"), &want[..]);
}

/// Saving in place next to the input's own data file never overwrites a file the input uses.
#[test]
fn new_external_file_never_reuses_an_input_location() {
    let dir = tempfile::tempdir().expect("tempdir");
    let model = dir.path().join("external_data.onnx");
    std::fs::copy(repo().join("models/external_data.onnx"), &model).expect("copy");
    let data = dir.path().join("external_data.onnx.data");
    std::fs::copy(repo().join("models/external_data.onnx.data"), &data).expect("copy");
    let before = std::fs::read(&data).expect("read");
    let st = slice_opt()
        .arg(&model)
        .arg("-o")
        .arg(&model)
        .arg("-q")
        .status()
        .expect("run");
    assert!(st.success());
    assert_eq!(
        std::fs::read(&data).expect("read"),
        before,
        "input data untouched"
    );
    let m = decode(&model);
    let loc = m
        .graph
        .as_ref()
        .and_then(|g| g.initializer.iter().find(|t| t.name() == "wc"))
        .and_then(|t| t.external_data.iter().find(|e| e.key() == "location"))
        .map(|e| e.value().to_string());
    assert_eq!(loc.as_deref(), Some("external_data.onnx.1.data"));
}

fn write_model(path: &Path, m: &ModelProto) {
    std::fs::write(path, m.encode_to_vec()).expect("write");
}

fn model_with(nodes: Vec<proto::NodeProto>) -> ModelProto {
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        graph: Some(proto::GraphProto {
            name: Some("g".into()),
            node: nodes,
            input: vec![proto::ValueInfoProto {
                name: Some("x".into()),
                ..Default::default()
            }],
            output: vec![proto::ValueInfoProto {
                name: Some("y".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Runs the CLI on a corrupt input: exit 1 or 2, one line on stderr naming the file (and the
/// node when given), no output file.
fn assert_clean_failure(input: &Path, must_name: &[&str]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.onnx");
    let o = slice_opt()
        .arg(input)
        .arg("-o")
        .arg(&out)
        .args(["--passes", "none"])
        .output()
        .expect("run");
    let code = o.status.code().expect("exit code (no signal)");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        code == 1 || code == 2,
        "{}: exit {code}, stderr {err}",
        input.display()
    );
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "one line expected: {err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains(&input.display().to_string()),
        "must name the file: {err}"
    );
    for s in must_name {
        assert!(err.contains(s), "must name '{s}': {err}");
    }
    assert!(!out.exists(), "no output may be written on failure");
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("dir").count(),
        0,
        "no temp file left"
    );
}

#[test]
fn corrupt_inputs_fail_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Truncated file.
    let full = std::fs::read(repo().join("models/gpt2_causal_mask.onnx")).expect("read");
    let truncated = dir.path().join("truncated.onnx");
    std::fs::write(&truncated, &full[..full.len() / 2]).expect("write");
    assert_clean_failure(&truncated, &[]);
    // Random bytes.
    let random = dir.path().join("random.onnx");
    let mut x: u64 = 0x9E3779B97F4A7C15;
    let bytes: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&random, bytes).expect("write");
    assert_clean_failure(&random, &[]);
    // A node whose input names no value.
    let dangling = dir.path().join("dangling.onnx");
    write_model(
        &dangling,
        &model_with(vec![node("Relu", "the_relu", &["nowhere"], &["y"])]),
    );
    assert_clean_failure(&dangling, &["the_relu", "nowhere"]);
    // A cycle.
    let cycle = dir.path().join("cycle.onnx");
    write_model(
        &cycle,
        &model_with(vec![
            node("Add", "add_a", &["x", "b"], &["a"]),
            node("Relu", "relu_b", &["a"], &["b"]),
            node("Identity", "out", &["a"], &["y"]),
        ]),
    );
    assert_clean_failure(&cycle, &["cycle"]);
    // A missing file.
    assert_clean_failure(&dir.path().join("missing.onnx"), &[]);
}

#[test]
fn output_equal_to_input_is_safe() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("m.onnx");
    std::fs::copy(repo().join("models/qkv_split.onnx"), &f).expect("copy");
    let before = std::fs::read(&f).expect("read");
    let st = slice_opt()
        .arg(&f)
        .arg("-o")
        .arg(&f)
        .args(["--passes", "none", "-q"])
        .status()
        .expect("run");
    assert!(st.success());
    assert_eq!(before, std::fs::read(&f).expect("read"));
}

/// The address range of the mapping of `path` in this process (Linux `/proc/self/maps`).
#[cfg(target_os = "linux")]
fn mapping_of(path: &Path) -> Option<(usize, usize)> {
    let canon = std::fs::canonicalize(path).ok()?;
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines().find_map(|l| {
        if !l.ends_with(canon.to_str()?) {
            return None;
        }
        let range = l.split_whitespace().next()?;
        let (a, b) = range.split_once('-')?;
        Some((
            usize::from_str_radix(a, 16).ok()?,
            usize::from_str_radix(b, 16).ok()?,
        ))
    })
}

#[cfg(target_os = "linux")]
#[test]
fn loading_a_256_mb_model_does_not_copy_initializers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("big.onnx");
    let size = 256usize << 20;
    let m = ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        graph: Some(proto::GraphProto {
            initializer: vec![proto::TensorProto {
                name: Some("w".into()),
                dims: vec![(size / 4) as i64],
                data_type: Some(1),
                raw_data: Some(bytes::Bytes::from(vec![7u8; size])),
                ..Default::default()
            }],
            output: vec![proto::ValueInfoProto {
                name: Some("w".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    write_model(&f, &m);
    drop(m);
    let loaded = OnnxModel::load(&f).expect("load");
    let (lo, hi) = mapping_of(&f).expect("the model file is memory-mapped");
    let t = loaded
        .graph
        .g
        .node_weights()
        .find_map(|n| n.constant())
        .expect("initializer");
    let raw = t.raw().expect("raw data");
    assert_eq!(raw.len(), size);
    let p = raw.as_ptr() as usize;
    assert!(
        p >= lo && p + size <= hi,
        "initializer bytes must point into the map {lo:#x}-{hi:#x}, got {p:#x}"
    );
}

/// An int64 initializer.
fn i64_init(name: &str, dims: &[i64], values: &[i64]) -> proto::TensorProto {
    proto::TensorProto {
        name: Some(name.into()),
        dims: dims.to_vec(),
        data_type: Some(7),
        int64_data: values.to_vec(),
        ..Default::default()
    }
}

/// `model` encoded with `extra` appended to the records of its graph's node `node` and
/// initializer `init` (fields this reader does not know; protobuf readers keep unknown fields
/// and write them back). Returns the file and the two records as written.
fn encode_with_suffix(
    model: &ModelProto,
    node: usize,
    init: usize,
    extra: &[u8],
) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    use prost::encoding::{encode_key, encode_varint, WireType};
    let mut g = model.graph.clone().expect("graph");
    let nodes = std::mem::take(&mut g.node);
    let inits = std::mem::take(&mut g.initializer);
    let mut graph_bytes = Vec::new();
    let mut records = (Vec::new(), Vec::new());
    let mut field = |tag: u32, mut r: Vec<u8>, suffixed: bool, out: &mut Vec<u8>| {
        if suffixed {
            r.extend_from_slice(extra);
            if tag == 1 {
                records.0 = r.clone();
            } else {
                records.1 = r.clone();
            }
        }
        encode_key(tag, WireType::LengthDelimited, out);
        encode_varint(r.len() as u64, out);
        out.extend_from_slice(&r);
    };
    for (i, n) in nodes.iter().enumerate() {
        field(1, n.encode_to_vec(), i == node, &mut graph_bytes);
    }
    for (i, t) in inits.iter().enumerate() {
        field(5, t.encode_to_vec(), i == init, &mut graph_bytes);
    }
    graph_bytes.extend(g.encode_to_vec());
    let mut bytes = ModelProto {
        graph: None,
        ..model.clone()
    }
    .encode_to_vec();
    encode_key(7, WireType::LengthDelimited, &mut bytes);
    encode_varint(graph_bytes.len() as u64, &mut bytes);
    bytes.extend_from_slice(&graph_bytes);
    (bytes, records.0, records.1)
}

/// Issue 19 (records kept as read): a node or initializer no pass changed is written with the
/// bytes it was read from, so a field this tool does not know (a newer ONNX field, a vendor
/// extension) survives a save that folds another node; prost alone would drop it.
#[test]
fn unknown_fields_of_untouched_nodes_survive_a_transforming_save() {
    let float4 = |name: &str| proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            denotation: None,
            value: Some(proto::type_proto::Value::TensorType(
                proto::type_proto::Tensor {
                    elem_type: Some(7),
                    shape: Some(proto::TensorShapeProto {
                        dim: vec![proto::tensor_shape_proto::Dimension {
                            denotation: None,
                            value: Some(proto::tensor_shape_proto::dimension::Value::DimValue(4)),
                        }],
                    }),
                },
            )),
        }),
        ..Default::default()
    };
    let mut m = model_with(vec![
        node("Identity", "keep", &["x"], &["a"]),
        node("Slice", "fold_me", &["c", "s", "e"], &["b"]),
        node("Add", "sum", &["a", "b"], &["ab"]),
        node("Add", "bias", &["ab", "w"], &["y"]),
    ]);
    let g = m.graph.as_mut().expect("graph");
    g.input = vec![float4("x")];
    g.output = vec![float4("y")];
    g.initializer = vec![
        i64_init("c", &[6], &[10, 11, 12, 13, 14, 15]),
        i64_init("s", &[1], &[1]),
        i64_init("e", &[1], &[5]),
        i64_init("w", &[4], &[1, 2, 3, 4]),
    ];
    // Field 1000, varint 7 (key 1000 << 3 = 0x1f40 as a varint: c0 3e), then field 1001, a
    // 3-byte string.
    let extra = [0xc0, 0x3e, 0x07, 0xca, 0x3e, 0x03, b'a', b'b', b'c'];
    let (bytes, record, init_record) = encode_with_suffix(&m, 0, 3, &extra);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("in.onnx");
    let out = dir.path().join("out.onnx");
    std::fs::write(&input, &bytes).expect("write");
    let st = slice_opt()
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .arg("-q")
        .status()
        .expect("run");
    assert!(st.success(), "exit {st}");
    let written = std::fs::read(&out).expect("read");
    let decoded = ModelProto::decode(written.as_slice()).expect("decode");
    let g = decoded.graph.expect("graph");
    // The slice of constants was folded: its node is gone, its value is an initializer
    // (ONNX Slice: c[1:5]).
    assert!(g.node.iter().all(|n| n.name() != "fold_me"), "{:?}", g.node);
    let b = g
        .initializer
        .iter()
        .find(|t| t.name() == "b")
        .expect("folded b");
    let raw = b.raw_data.as_deref().unwrap_or_default();
    let vals: Vec<i64> = if raw.is_empty() {
        b.int64_data.clone()
    } else {
        raw.chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    };
    assert_eq!(vals, [11, 12, 13, 14]);
    // The untouched node's record, unknown fields included, is in the output as it was read.
    assert!(
        written
            .windows(record.len())
            .any(|w| w == record.as_slice()),
        "the record of node 'keep' was not written as read"
    );
    assert!(
        written
            .windows(init_record.len())
            .any(|w| w == init_record.as_slice()),
        "the record of initializer 'w' was not written as read"
    );
}

/// A file whose fields do not walk one by one (here a protobuf group, which the field walk does
/// not take) is decoded whole by prost instead: it still loads, and its nodes are all there.
#[test]
fn a_model_with_a_group_field_still_loads() {
    let m = model_with(vec![node("Identity", "id", &["x"], &["y"])]);
    let mut bytes = m.encode_to_vec();
    // Field 100 as a group: start (wire type 3), one varint field inside, end (wire type 4).
    bytes.extend_from_slice(&[0xa3, 0x06, 0x08, 0x01, 0xa4, 0x06]);
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("group.onnx");
    std::fs::write(&input, &bytes).expect("write");
    let model = OnnxModel::load(&input).expect("load");
    let p = model.to_proto().expect("proto");
    assert_eq!(p.graph.expect("graph").node, m.graph.expect("graph").node);
}
