//! Layer: shape propagation and subgraph (`Loop` outputs from the body).
//!
//! The facts of ONNX `Loop` outputs, from the body (issue 42, pattern I).
//!
//! Expected values come from the ONNX `Loop` spec (onnx/docs/Operators.md#Loop): iteration `i`
//! runs while `i < M` and the condition is true (the `cond` input for `i = 0`, the body's
//! `cond_out` of iteration `i - 1` after that); the outputs are the final loop-carried values
//! and, for each scan output, the body's value of every iteration stacked on a new axis 0, so a
//! scan output's shape is `[iterations] + ` the body value's shape.
//!
//! `tools/loop_check.py` runs the same models in ONNX Runtime (output: `tools/loop_check.out`):
//! `rows` is `[d0, 4]` for the first three at every size tried, `[4, 4]` for the early exit
//! and `[10, 4]` for `M = 10` passed through.
//!
//! Every model here: `x: float[d0, 4]`, `M = Shape(x)[0]` (the scalar `d0`), a carried `acc:
//! float[4]` summing the rows `x[i]` (captured `x`), and a scan output `row = x[i]` (`[4]` in
//! every iteration). Only the condition differs.

mod common;

use common::*;
use prost::Message;
use slice_opt::formats::onnx::proto;
use slice_opt::pipeline::PassKind;
use slice_opt::semantics::Dim;
use slice_opt::{Model, Pipeline};

fn scalar_i64(name: &str, v: i64) -> proto::TensorProto {
    let mut t = i64_tensor(name, &[v]);
    t.dims.clear();
    t
}

fn bool_true(name: &str) -> proto::TensorProto {
    proto::TensorProto {
        name: Some(name.into()),
        dims: vec![],
        data_type: Some(9),
        raw_data: Some(bytes::Bytes::from(vec![1u8])),
        ..Default::default()
    }
}

fn f32_zeros(name: &str, n: usize) -> proto::TensorProto {
    proto::TensorProto {
        name: Some(name.into()),
        dims: vec![n as i64],
        data_type: Some(1),
        raw_data: Some(bytes::Bytes::from(vec![0u8; 4 * n])),
        ..Default::default()
    }
}

/// How the body computes `cond_out` (from `i`, `cond_in`, the carried counter `k` and the
/// captured `m`), as nodes and the name of the value.
struct Cond {
    nodes: Vec<proto::NodeProto>,
    inits: Vec<proto::TensorProto>,
    out: &'static str,
}

/// The loop model; `trip`: the trip count (`None`: `m`), `cond`: the body's condition.
fn loop_model(trip: Option<i64>, cond: Cond) -> Model {
    load(loop_graph(trip, cond))
}

/// Writes `g` as a model and loads it (the file is mapped: removing it keeps the map valid).
fn load(g: proto::GraphProto) -> Model {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("loop.onnx");
    std::fs::write(&path, model(g).encode_to_vec()).expect("write");
    Model::load(&path).expect("load")
}

fn loop_graph(trip: Option<i64>, cond: Cond) -> proto::GraphProto {
    let mut body_nodes = vec![
        node("Gather", "row", &["x", "i"], &["row"]),
        node("Add", "acc_next", &["acc", "row"], &["acc_out"]),
        node("Add", "k_next", &["k", "one"], &["k_out"]),
        node("Identity", "scan", &["row"], &["scan_out"]),
    ];
    body_nodes.extend(cond.nodes);
    let mut body_inits = vec![scalar_i64("one", 1)];
    body_inits.extend(cond.inits);
    let body = proto::GraphProto {
        name: Some("body".into()),
        node: body_nodes,
        initializer: body_inits,
        input: vec![
            tensor_value("i", 7, &[]),
            tensor_value("cond_in", 9, &[]),
            tensor_value("acc", 1, &[Some(4)]),
            tensor_value("k", 7, &[]),
        ],
        output: vec![
            tensor_value(cond.out, 9, &[]),
            tensor_value("acc_out", 1, &[Some(4)]),
            tensor_value("k_out", 7, &[]),
            tensor_value("scan_out", 1, &[Some(4)]),
        ],
        ..Default::default()
    };
    let mut lp = node(
        "Loop",
        "loop",
        &["trip", "true", "zeros", "zero"],
        &["acc_final", "k_final", "rows"],
    );
    lp.attribute = vec![proto::AttributeProto {
        name: Some("body".into()),
        g: Some(Box::new(body)),
        r#type: Some(proto::attribute_proto::AttributeType::Graph as i32),
        ..Default::default()
    }];
    let mut nodes = vec![
        node("Shape", "shape", &["x"], &["shape"]),
        node("Gather", "m", &["shape", "idx0"], &["m"]),
    ];
    let mut inits = vec![
        scalar_i64("idx0", 0),
        bool_true("true"),
        f32_zeros("zeros", 4),
        scalar_i64("zero", 0),
    ];
    match trip {
        None => nodes.push(node("Identity", "trip", &["m"], &["trip"])),
        Some(v) => inits.push(scalar_i64("trip", v)),
    }
    nodes.push(lp);
    let g = proto::GraphProto {
        name: Some("g".into()),
        node: nodes,
        initializer: inits,
        input: vec![tensor_value("x", 1, &[None, Some(4)])],
        output: vec![
            tensor_value("acc_final", 1, &[]),
            tensor_value("k_final", 7, &[]),
            tensor_value("rows", 1, &[]),
        ],
        ..Default::default()
    };
    // Outputs declared without dims (rank 0 here means "declared scalar"): declare no shape.
    let mut g = g;
    for o in &mut g.output {
        if let Some(proto::type_proto::Value::TensorType(t)) =
            o.r#type.as_mut().and_then(|t| t.value.as_mut())
        {
            t.shape = None;
        }
    }
    g
}

/// The top-level facts of `name` as `check` and `info` see them.
fn shape_of(model: &Model, name: &str) -> Option<Vec<Dim>> {
    let scopes = slice_opt::subgraph::scope::scopes(model);
    scopes[0]
        .facts
        .by_name(model.graph(), name)
        .and_then(|f| f.shape.clone())
}

fn d0() -> Dim {
    slice_opt::semantics::dim::model_symbol("d0")
}

/// `cond_out = cond_in`: the condition never changes, and it starts true, so the loop runs `M`
/// times: `rows` is `[d0, 4]`. `acc` keeps `[4]`, the counter `k` keeps `[]`.
#[test]
fn a_passed_through_true_condition_runs_m_iterations() {
    let m = loop_model(
        None,
        Cond {
            nodes: vec![],
            inits: vec![],
            out: "cond_in",
        },
    );
    assert_eq!(shape_of(&m, "rows"), Some(vec![d0(), Dim::known(4)]));
    assert_eq!(shape_of(&m, "acc_final"), Some(vec![Dim::known(4)]));
    assert_eq!(shape_of(&m, "k_final"), Some(vec![]));
}

/// tf2onnx's while loop: `cond_out = And(Less(i, m), Less(k + 1, m))` with the counter `k`
/// starting at 0 and stepping by 1 (`k = i` in iteration `i`). `cond_out` of iteration `i`
/// decides iteration `i + 1`, which runs only if `i + 1 < M` anyway: for `i <= M - 2`, `i < M`
/// and `k + 1 = i + 1 <= M - 1 < M`, so no iteration ends the loop early: `[d0, 4]`.
#[test]
fn a_tf2onnx_counter_condition_runs_m_iterations() {
    let m = loop_model(
        None,
        Cond {
            nodes: vec![
                node("Less", "l1", &["i", "m"], &["l1"]),
                node("Less", "l2", &["k_out", "m"], &["l2"]),
                node("And", "c", &["l1", "l2"], &["c"]),
            ],
            inits: vec![],
            out: "c",
        },
    );
    assert_eq!(shape_of(&m, "rows"), Some(vec![d0(), Dim::known(4)]));
}

/// The same comparison in `float32` (what tf2onnx writes: `Less(Cast<float>(k + 1),
/// Cast<float>(m))`): for `M = 2^24 + 1`, `float32(M - 1) = float32(M) = 2^24`, so `cond_out`
/// of iteration `M - 2` is false and the loop runs `M - 1` times. The first dim must not be
/// `d0`.
#[test]
fn a_float32_comparison_is_not_exact() {
    let m = loop_model(
        None,
        Cond {
            nodes: vec![
                {
                    let mut n = node("Cast", "ck", &["k_out"], &["kf"]);
                    n.attribute = vec![int_attr("to", 1)];
                    n
                },
                {
                    let mut n = node("Cast", "cm", &["m"], &["mf"]);
                    n.attribute = vec![int_attr("to", 1)];
                    n
                },
                node("Less", "l", &["kf", "mf"], &["c"]),
            ],
            inits: vec![],
            out: "c",
        },
    );
    let s = shape_of(&m, "rows").expect("rank known");
    assert_eq!(s.len(), 2);
    assert_ne!(s[0], d0());
    assert!(s[0].is_unknown(), "{}", s[0]);
    assert_eq!(s[1], Dim::known(4));
}

/// `cond_out = Less(i, 3)` with `M = 10`: iterations 0..=3 run (`cond_out` of iteration 3 is
/// `3 < 3`, false), so `rows` is `[4, 4]`, not `[10, 4]`. Ours must not say 10: an interval
/// holding 4 (at most `M`), or unknown.
#[test]
fn a_condition_that_ends_early_does_not_get_m() {
    let m = loop_model(
        Some(10),
        Cond {
            nodes: vec![node("Less", "l", &["i", "three"], &["c"])],
            inits: vec![scalar_i64("three", 3)],
            out: "c",
        },
    );
    let s = shape_of(&m, "rows").expect("rank known");
    assert_ne!(s[0], Dim::known(10));
    assert!(s[0].is_unknown());
    let (lo, hi) = s[0].bounds();
    assert!(
        lo.unwrap_or(0) <= 4 && hi.is_none_or(|h| h >= 4),
        "{}",
        s[0]
    );
    // With M = 10 and a true condition passed through, it is exactly 10.
    let m = loop_model(
        Some(10),
        Cond {
            nodes: vec![],
            inits: vec![],
            out: "cond_in",
        },
    );
    assert_eq!(
        shape_of(&m, "rows"),
        Some(vec![Dim::known(10), Dim::known(4)])
    );
}

/// Pass `infer` sees the same facts: a `Slice` of `rows` (`rows[1:]`, `max(d0 - 1, 0)` rows)
/// is inferred over `d0`.
#[test]
fn infer_reads_loop_outputs() {
    let mut g = loop_graph(
        None,
        Cond {
            nodes: vec![],
            inits: vec![],
            out: "cond_in",
        },
    );
    g.node
        .push(node("Slice", "tail", &["rows", "s", "e", "a"], &["tail"]));
    g.initializer.push(i64_tensor("s", &[1]));
    g.initializer.push(i64_tensor("e", &[i64::MAX]));
    g.initializer.push(i64_tensor("a", &[0]));
    g.output.push(proto::ValueInfoProto {
        name: Some("tail".into()),
        ..Default::default()
    });
    let mut m = load(g);
    let report = Pipeline::with_passes(vec![PassKind::Infer])
        .details(true)
        .run(&mut m)
        .expect("infer");
    let change = report.passes[0]
        .changes
        .iter()
        .find(|c| c.node == "tail")
        .expect("tail inferred");
    let after = change.after.clone().unwrap_or_default();
    assert!(after.contains("d0") && after.ends_with(", 4]"), "{after}");
}

/// After zero iterations no iteration gives a scan output's per-iteration shape. The ONNX spec
/// does not say what it is then; ONNX Runtime and OpenVINO (measured by
/// `tools/gen_loop_zero_trip.py`, stored in `tests/data/subgraph/loop_zero_trip.expected.json`)
/// both give `[0] + ` the body's shape with every dim that is not a number replaced by 0:
/// `scan_c` (`[B, 3]` per iteration) is `[0, 0, 3]` at `S = 0`, `B = 2`. Every dim we write for
/// the scan outputs and the final carried value must evaluate to both runtimes' size at every
/// measured `(B, S)`, zero iterations included. In `loop_zero_trip.onnx` (`M = S`, condition
/// `true` passed through) none may be unknown. In `loop_zero_trip_tf.onnx` (tf2onnx's float32
/// conditions, as the Keras GRU's `Loop`) the iteration count may be unknown (a float32
/// comparison is not exact up to 2^31 - 1: `a_float32_comparison_is_not_exact`), but the first
/// condition `0.0 < float(M)` is true exactly when `M >= 1` (float rounding is monotone and
/// keeps 1), so whether an iteration runs is known and the other dims must be exact.
#[test]
fn scan_outputs_after_zero_iterations_match_both_runtimes() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/subgraph");
    let text = std::fs::read_to_string(dir.join("loop_zero_trip.expected.json")).expect("json");
    let expected: serde_json::Value = serde_json::from_str(&text).expect("json");
    for file in ["loop_zero_trip", "loop_zero_trip_tf"] {
        let m = Model::load(&dir.join(format!("{file}.onnx"))).expect("load");
        let sizes = expected["models"][file].as_array().expect("sizes");
        assert!(sizes.iter().any(|s| s["S"] == 0), "a zero-iteration size");
        for name in ["s_final", "scan_c", "scan_x", "scan_k"] {
            let ours = shape_of(&m, name).expect("rank known");
            let printed: Vec<String> = ours.iter().map(ToString::to_string).collect();
            for size in sizes {
                let binding: std::collections::HashMap<String, i64> = ["B", "S"]
                    .iter()
                    .map(|k| (k.to_string(), size[*k].as_i64().expect("size")))
                    .collect();
                for runtime in ["onnxruntime", "openvino"] {
                    let want = size[runtime][name].as_array().expect("shape");
                    assert_eq!(ours.len(), want.len(), "{file} {name}: rank");
                    for (k, (d, w)) in ours.iter().zip(want).enumerate() {
                        let w = w.as_i64().expect("dim");
                        let may_be_unknown = file.ends_with("_tf") && name != "s_final" && k == 0;
                        match d.eval(&binding) {
                            Some(v) => assert_eq!(
                                v, w,
                                "{file} {name} dim {k} at {binding:?}: ours {printed:?}, {runtime} {w}"
                            ),
                            None => {
                                assert!(
                                    may_be_unknown,
                                    "{file} {name} dim {k} unknown: ours {printed:?}"
                                );
                                let (lo, hi) = d.bounds();
                                assert!(
                                    lo.unwrap_or(0) <= w && hi.is_none_or(|h| h >= w),
                                    "{file} {name} dim {k} at {binding:?}: ours {printed:?}, {runtime} {w}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
