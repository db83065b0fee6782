//! Layer: shape (whole-graph propagation) against ONNX Runtime.
//!
//! Whole-graph shape propagation against ONNX Runtime: every propagated dim and symbolic value,
//! evaluated at the input sizes of each run, equals the shape (value) ONNX Runtime produced.
//! Expected data: `tests/data/propagation/*.json`, written by `tools/propagation_oracle.py`.

use std::collections::HashMap;
use std::path::Path;

use slice_opt::ir::OutletId;
use slice_opt::semantics::Dim;
use slice_opt::shape::{self, Fact};
use slice_opt::Model;

#[derive(Default, Debug)]
struct Counts {
    /// (run, value) pairs compared.
    values: usize,
    /// Values whose rank was known.
    rank_known: usize,
    /// Dims exact (an expression or number equal to the runtime's).
    exact: usize,
    /// Dims left unknown (the runtime's value within the bounds).
    unknown: usize,
    /// Symbolic value elements compared.
    value_elements: usize,
    /// Values with an unknown dim or element.
    unknown_names: std::collections::BTreeSet<String>,
}

fn facts_by_name(model: &Model) -> HashMap<String, Fact> {
    let facts = shape::propagate(model).expect("propagates");
    let g = model.graph();
    let mut out = HashMap::new();
    for ix in g.g.node_indices() {
        for (port, v) in g.node(ix).outputs.iter().enumerate() {
            out.insert(
                v.name.to_string(),
                facts.get(OutletId { node: ix, port }).clone(),
            );
        }
    }
    out
}

fn check_dim(d: &Dim, want: i64, b: &HashMap<String, i64>, what: &str, c: &mut Counts) {
    match d.eval(b) {
        Some(v) => {
            assert_eq!(v, want, "{what}: propagated {d} at {b:?}");
            c.exact += 1;
        }
        None => {
            assert!(d.is_unknown(), "{what}: {d} does not evaluate at {b:?}");
            let (lo, hi) = d.bounds();
            assert!(
                lo.is_none_or(|l| l <= want) && hi.is_none_or(|h| want <= h),
                "{what}: bounds of {d} exclude {want} at {b:?}"
            );
            c.unknown += 1;
            c.unknown_names
                .insert(what.split(' ').next().unwrap_or("").to_string());
        }
    }
}

/// Compares the facts of `model` with the oracle file; `only` restricts to some values.
fn compare(model: &str, oracle: &str, only: Option<&[&str]>) -> Counts {
    let model = Model::load(Path::new(model)).expect("loads");
    let facts = facts_by_name(&model);
    let text = std::fs::read_to_string(oracle).expect("oracle data");
    let json: serde_json::Value = serde_json::from_str(&text).expect("json");
    let mut c = Counts::default();
    for run in json["runs"].as_array().expect("runs") {
        let Some(shapes) = run["shapes"].as_object() else {
            continue;
        };
        let b: HashMap<String, i64> = run["bindings"]
            .as_object()
            .expect("bindings")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_i64().expect("int")))
            .collect();
        for (name, want) in shapes {
            if only.is_some_and(|o| !o.contains(&name.as_str())) {
                continue;
            }
            let fact = facts.get(name).unwrap_or_else(|| panic!("no value {name}"));
            let want: Vec<i64> = want
                .as_array()
                .expect("shape")
                .iter()
                .map(|d| d.as_i64().expect("dim"))
                .collect();
            c.values += 1;
            let Some(shape) = &fact.shape else {
                continue;
            };
            c.rank_known += 1;
            assert_eq!(shape.len(), want.len(), "{name}: rank at {b:?}");
            for (i, (d, &w)) in shape.iter().zip(&want).enumerate() {
                check_dim(d, w, &b, &format!("{name} dim {i}"), &mut c);
            }
            if let (Some(v), Some(want)) = (&fact.value, run["values"][name].as_array()) {
                assert_eq!(v.len(), want.len(), "{name}: value length at {b:?}");
                for (i, (d, w)) in v.iter().zip(want).enumerate() {
                    let w = w.as_i64().expect("int");
                    check_dim(d, w, &b, &format!("{name} value {i}"), &mut c);
                    c.value_elements += 1;
                }
            }
        }
    }
    c
}

#[test]
fn gpt2_causal_mask_is_exact_in_q_len_and_k_len() {
    // Issue 17, acceptance 2: `mask` (and every other value) exact for every (b, q_len, k_len)
    // of the grid at which ONNX Runtime computes it, including the sizes the final Mul refuses.
    let c = compare(
        "models/gpt2_causal_mask.onnx",
        "tests/data/propagation/gpt2_causal_mask.json",
        None,
    );
    eprintln!("gpt2_causal_mask: {c:?}");
    assert_eq!(c.rank_known, c.values, "every rank known");
    assert_eq!(c.unknown, 0, "every dim exact");
    let only = compare(
        "models/gpt2_causal_mask.onnx",
        "tests/data/propagation/gpt2_causal_mask.json",
        Some(&["mask"]),
    );
    assert_eq!(only.values, 288);
    assert_eq!(only.exact, 288 * 4);
}

#[test]
fn ops_mix_matches_onnx_runtime() {
    let c = compare(
        "tests/data/propagation/ops_mix.onnx",
        "tests/data/propagation/ops_mix.json",
        None,
    );
    eprintln!("ops_mix: {c:?}");
    assert_eq!(c.rank_known, c.values, "every rank known");
    assert!(c.value_elements > 0);
    // Every dim exact, the products of two symbols (`N * T`: `nt`, `tgt`, `ysize`, and the
    // Reshapes `y2d` to `[N*T, 16]` and `yflat` to `[-1]`) included; each checked above against
    // ONNX Runtime at every size.
    assert_eq!(c.unknown, 0, "unknown: {:?}", c.unknown_names);
}

#[test]
fn symbolic_values_through_shape_arithmetic() {
    let model = Model::load(Path::new("models/gpt2_causal_mask.onnx")).expect("loads");
    let facts = facts_by_name(&model);
    let v = |n: &str| {
        facts[n]
            .value
            .as_ref()
            .map(|v| v.iter().map(|d| d.to_string()).collect::<Vec<_>>())
    };
    // ONNX data propagation semantics: Shape -> Gather -> Sub -> Unsqueeze.
    assert_eq!(
        v("qs"),
        Some(vec!["b".into(), "2".into(), "q_len".into(), "8".into()])
    );
    assert_eq!(v("start1"), Some(vec!["k_len - q_len".into()]));
    assert_eq!(v("kl1"), Some(vec!["k_len".into()]));
}

#[test]
fn concat_of_100k_inputs_is_linear() {
    // A 100,000-input Concat (each input x[1, 2]) propagates in linear time: [100000, 2].
    use slice_opt::formats::Format;
    use slice_opt::ir::{DeclaredDim, Graph, Node, NodeKind, Value, ValueType};
    let mut g = Graph::new();
    let mut x = Node::op("x", "", "");
    x.kind = NodeKind::Input;
    x.outputs.push(Value {
        name: "x".into(),
        ty: ValueType {
            dtype: Some(slice_opt::ir::DType::F32),
            shape: Some(vec![DeclaredDim::Param("n".into()), DeclaredDim::Known(2)]),
        },
        ty_changed: false,
    });
    let x = g.add_node(x);
    let n: u32 = 100_000;
    let mut cat = Node::op("cat", "Concat", "");
    cat.num_inputs = n;
    cat.attrs.push(("axis".into(), slice_opt::ir::Attr::Int(0)));
    cat.outputs.push(Value {
        name: "y".into(),
        ..Value::default()
    });
    let cat = g.add_node(cat);
    for p in 0..n {
        g.connect(OutletId { node: x, port: 0 }, cat, p as usize);
    }
    let t = std::time::Instant::now();
    let facts = shape::propagate_graph(&g, Format::Onnx, 17).expect("acyclic");
    let secs = t.elapsed().as_secs_f64();
    let f = facts.get(OutletId { node: cat, port: 0 });
    let shape: Vec<String> = f
        .shape
        .as_ref()
        .expect("shape")
        .iter()
        .map(|d| d.to_string())
        .collect();
    assert_eq!(shape, ["100000*n", "2"]);
    // Quadratic work (10^10 steps) would take minutes; linear takes milliseconds.
    assert!(secs < 5.0, "propagation took {secs} s");
}

#[test]
fn ir_port_dims_written_by_openvino_agree() {
    // OpenVINO's converters write every port's shape as OpenVINO inferred it. Strip those of
    // every op but Parameter, propagate from the inputs alone, and compare: a propagated dim
    // is the declared one, or unknown with bounds containing it; a known rank is the declared.
    use slice_opt::ir::{DeclaredDim, NodeKind};
    // `PROPAGATION_IR_DIR` adds a directory (e.g. the corpus of tools/corpus.py, not in git).
    let mut dirs = vec![std::path::PathBuf::from("models")];
    dirs.extend(std::env::var_os("PROPAGATION_IR_DIR").map(Into::into));
    let mut files: Vec<_> = dirs
        .iter()
        .flat_map(|d| std::fs::read_dir(d).expect("directory"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    files.sort();
    assert!(files.len() >= 10);
    let (mut exact, mut unknown, mut ranks) = (0usize, 0usize, 0usize);
    for f in &files {
        let model = Model::load(f).expect("loads");
        let declared = model.graph().clone();
        let mut stripped = declared.clone();
        for ix in declared.g.node_indices() {
            let n = stripped.node_mut(ix);
            if n.kind == NodeKind::Op && n.op_type != "Parameter" {
                for v in &mut n.outputs {
                    v.ty.shape = None;
                }
            }
        }
        let facts = shape::propagate_graph(&stripped, model.format(), 0).expect("acyclic");
        for ix in declared.g.node_indices() {
            let n = declared.node(ix);
            if n.kind != NodeKind::Op || n.op_type == "Parameter" {
                continue;
            }
            for (port, v) in n.outputs.iter().enumerate() {
                let (Some(want), Some(got)) =
                    (&v.ty.shape, &facts.get(OutletId { node: ix, port }).shape)
                else {
                    continue;
                };
                let what = format!("{}: {} output {port}", f.display(), n.describe());
                assert_eq!(got.len(), want.len(), "{what}: rank");
                ranks += 1;
                for (g, w) in got.iter().zip(want) {
                    if let DeclaredDim::Known(w) = w {
                        let w = *w as i64;
                        match g.as_known() {
                            Some(k) => {
                                assert_eq!(k, w, "{what}: {got:?} vs {want:?}");
                                exact += 1;
                            }
                            None => {
                                let (lo, hi) = g.bounds();
                                assert!(
                                    lo.is_none_or(|l| l <= w) && hi.is_none_or(|h| w <= h),
                                    "{what}: {g} excludes {w}"
                                );
                                unknown += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "{} IR files: {ranks} ranks equal, {exact} static dims exact, {unknown} left unknown",
        files.len()
    );
    assert!(exact > 10 * unknown, "most static dims propagate exactly");
}

/// A Concat of a hundred slices `x[s:]` (`s` = 0, 1, 2, 0, ...) of `x: [n, 4]`
/// (`concat_of_100_slices.onnx`, written by onnx's helper): its length is the sum of the
/// slices' lengths, `max(n - s, 0)` by the ONNX Slice clamping rules. Distributing that sum's
/// min/max at every input made the expression double every few inputs: propagation ran for
/// minutes. It must finish at once and stay exact for every `n`.
#[test]
fn concat_of_many_clamped_slices_propagates_exactly() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/propagation/concat_of_100_slices.onnx");
    let start = std::time::Instant::now();
    let model = Model::load(&path).expect("loads");
    let facts = facts_by_name(&model);
    let z = facts["z"].shape.clone().expect("Concat output rank");
    assert_eq!(z.len(), 2);
    assert_eq!(z[1].as_known(), Some(4));
    let names: Vec<String> = z[0]
        .symbols()
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    assert_eq!(names.len(), 1, "{}", z[0]);
    for n in [0i64, 1, 2, 3, 5, 64, 100_000] {
        let want: i64 = (0..100i64).map(|i| (n - i % 3).max(0)).sum();
        let got = z[0].eval(&HashMap::from([(names[0].clone(), n)]));
        assert_eq!(got, Some(want), "n = {n}: {}", z[0]);
    }
    assert!(start.elapsed().as_secs() < 30, "took {:?}", start.elapsed());
}

/// `propagate_ordered` along the graph's topological order gives the facts `propagate` gives,
/// on every ONNX and OpenVINO model shipped in `models/`, output by output.
#[test]
fn ordered_propagation_equals_propagation_on_every_shipped_model() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("models/")
        .map(|e| e.expect("entry").path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("onnx" | "xml")))
        .collect();
    paths.sort();
    let mut compared = 0usize;
    for path in &paths {
        let model = Model::load(path).expect("loads");
        let order = model.graph().topo_order().expect("acyclic");
        let eager = shape::propagate(&model).expect("propagates");
        let ordered = shape::propagate_ordered(&model, &order, &|_| None);
        let g = model.graph();
        for ix in g.g.node_indices() {
            assert_eq!(
                eager.outputs(ix),
                ordered.outputs(ix),
                "{}: node {}",
                path.display(),
                g.node(ix).name
            );
            compared += eager.outputs(ix).len();
        }
    }
    assert!(paths.len() >= 40, "{} models", paths.len());
    assert!(compared > 300, "{compared} outputs compared");
}

mod common;

/// Facts of an ONNX model given as a protobuf, by output name.
fn facts_of(m: &slice_opt::formats::onnx::proto::ModelProto) -> HashMap<String, Fact> {
    use prost::Message;
    let bytes = bytes::Bytes::from(m.encode_to_vec());
    let onnx =
        slice_opt::formats::onnx::OnnxModel::from_bytes(Path::new("m.onnx"), bytes).expect("loads");
    facts_by_name(&Model::Onnx(onnx))
}

/// Issue 42, pattern B: begins and ends computed from `Shape` as exporters write them, on
/// `x: [b, 4, seq, 16]` (opset 17). By the ONNX Slice spec (negative starts/ends get the dim
/// added, then a positive step clamps both to `[0, dim]`, a negative one starts to
/// `[0, dim - 1]` and ends to `[-1, dim - 1]`):
/// - `x[:, :, -seq:, :]` (Slice, starts `-Shape(x)[2]`, ends INT64_MAX, axes [2]): start
///   `-seq + seq = 0` (and 0 when seq = 0), end `seq`: exactly `seq` rows;
/// - `x[:, :, ::-1, :]` written `x[:, :, -1 : -(seq + 1) : -1]` with the end from `Shape`:
///   start `seq - 1`, end `-(seq + 1) + seq = -1`: exactly `seq` rows (0 when seq = 0, where
///   the start's range `[0, -1]` is empty);
/// - the first as TensorFlow's StridedSlice (begin `[0, 0, -seq]`, begin and end mask bits 0,
///   1 and end mask bit 2): `seq` too (the TensorFlow rule agrees for a positive stride).
#[test]
fn slice_bounds_from_a_shape_are_exact() {
    use common::{i64_tensor, int_attr, model, node, tensor_value};
    use slice_opt::formats::onnx::proto;
    let scalar = |name: &str, v: i64| proto::TensorProto {
        dims: vec![],
        ..i64_tensor(name, &[v])
    };
    let mut nodes = vec![
        node("Shape", "shape", &["x"], &["s"]),
        node("Gather", "n", &["s", "two"], &["n"]),
        node("Neg", "neg_n", &["n"], &["neg_n"]),
        node("Unsqueeze", "starts", &["neg_n", "ax0"], &["starts"]),
        node("Slice", "tail", &["x", "starts", "max", "ax2"], &["tail"]),
        node("Add", "n1", &["n", "one"], &["n1"]),
        node("Neg", "neg_n1", &["n1"], &["neg_n1"]),
        node("Unsqueeze", "ends", &["neg_n1", "ax0"], &["ends"]),
        node(
            "Slice",
            "rev",
            &["x", "minus1", "ends", "ax2", "minus1"],
            &["rev"],
        ),
        node("Concat", "begin", &["zeros", "starts"], &["begin"]),
        {
            let mut n = node(
                "StridedSlice",
                "tf_tail",
                &["x", "begin", "zeros3", "ones3"],
                &["tf_tail"],
            );
            n.domain = Some("org.tensorflow".into());
            n.attribute.push(int_attr("begin_mask", 0b011));
            n.attribute.push(int_attr("end_mask", 0b111));
            n
        },
    ];
    nodes[9].attribute.push(int_attr("axis", 0));
    let graph = proto::GraphProto {
        name: Some("pattern_b".into()),
        node: nodes,
        initializer: vec![
            scalar("two", 2),
            scalar("one", 1),
            i64_tensor("ax0", &[0]),
            i64_tensor("ax2", &[2]),
            i64_tensor("max", &[i64::MAX]),
            i64_tensor("minus1", &[-1]),
            i64_tensor("zeros", &[0, 0]),
            i64_tensor("zeros3", &[0, 0, 0]),
            i64_tensor("ones3", &[1, 1, 1]),
        ],
        input: vec![{
            let mut x = tensor_value("x", 1, &[None, Some(4), None, Some(16)]);
            rename_dims(&mut x, &["b", "", "seq", ""]);
            x
        }],
        output: ["tail", "rev", "tf_tail"]
            .iter()
            .map(|n| proto::ValueInfoProto {
                name: Some(n.to_string()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut m = model(graph);
    m.opset_import.push(proto::OperatorSetIdProto {
        domain: Some("org.tensorflow".into()),
        version: Some(1),
    });
    let facts = facts_of(&m);
    assert_eq!(
        facts["neg_n"].value.as_ref().map(|v| v[0].to_string()),
        Some("-seq".to_string())
    );
    for out in ["tail", "rev", "tf_tail"] {
        let shape = facts[out].shape.as_ref().expect("rank known");
        let shown: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        assert_eq!(shown, ["b", "4", "seq", "16"], "{out}");
    }
}

/// Renames the `dim_param`s of a value (`""`: keep the dim as it is).
fn rename_dims(v: &mut slice_opt::formats::onnx::proto::ValueInfoProto, names: &[&str]) {
    use slice_opt::formats::onnx::proto::{tensor_shape_proto::dimension::Value as D, type_proto};
    let Some(type_proto::Value::TensorType(t)) = v.r#type.as_mut().and_then(|t| t.value.as_mut())
    else {
        return;
    };
    let Some(shape) = t.shape.as_mut() else {
        return;
    };
    for (d, name) in shape.dim.iter_mut().zip(names) {
        if !name.is_empty() {
            d.value = Some(D::DimParam(name.to_string()));
        }
    }
}

/// Issue 42, pattern A: Reshape targets built from `Shape` (`tests/data/propagation/
/// reshape_targets.onnx`, `tools/gen_reshape_fixtures.py`, whose header derives each expected
/// dim from the ONNX specs; also the broadcast of a sliced position table, LSTM and GRU). Every
/// dim and value element is checked against ONNX Runtime
/// at 32 (b, s) pairs including 0 (each output only where ONNX Runtime accepts it); every dim is
/// exact but three: `r7 = r6[b*s, 64].view(b, s, -1)` keeps dims 1 and 2 unknown, because at
/// s = 0 the `s` copies 64 (ONNX Runtime gives `[b, 64, 0]`), and the same with `allowzero=1`
/// (`r8`) keeps its -1 unknown: at b = 0, s = 2 ONNX Runtime gives `[0, 2, 32]`, not 64.
#[test]
fn reshape_targets_built_from_shape_are_exact() {
    let c = compare(
        "tests/data/propagation/reshape_targets.onnx",
        "tests/data/propagation/reshape_targets.json",
        None,
    );
    eprintln!("reshape_targets: {c:?}");
    assert_eq!(c.rank_known, c.values, "every rank known");
    assert_eq!(
        c.unknown_names.iter().collect::<Vec<_>>(),
        ["r7", "r8"],
        "only r7 and r8 have unknown dims"
    );
    let r7 = compare(
        "tests/data/propagation/reshape_targets.onnx",
        "tests/data/propagation/reshape_targets.json",
        Some(&["r7"]),
    );
    assert_eq!(r7.unknown, 2 * r7.values, "r7: dims 1 and 2");
    assert!(r7.values >= 20, "r7 ran at {} sizes", r7.values);
    // The printed forms of the spec's answers.
    let model =
        Model::load(Path::new("tests/data/propagation/reshape_targets.onnx")).expect("loads");
    let facts = facts_by_name(&model);
    let dims = |n: &str| -> Vec<String> {
        facts[n]
            .shape
            .as_ref()
            .expect("rank")
            .iter()
            .map(|d| d.to_string())
            .collect()
    };
    assert_eq!(dims("r1"), ["b", "s", "4", "16"]);
    assert_eq!(dims("r2"), ["b", "s", "4", "16"]);
    assert_eq!(dims("r3"), ["b", "s", "64"]);
    assert_eq!(dims("r4"), ["b", "s"]);
    assert_eq!(dims("r5"), ["b", "s", "4", "16"]);
    assert_eq!(dims("r6"), ["b*s", "64"]);
    assert_eq!(dims("r6b"), ["b*s", "64"]);
    assert_eq!(dims("r7")[0], "b");
    assert_eq!(dims("r8")[..2], ["b", "s"]);
    assert!(facts["r8"].shape.as_ref().expect("rank")[2].is_unknown());
    assert_eq!(dims("r10"), ["b", "s", "64"]);
    assert_eq!(dims("r11"), ["64*b*s"]);
    assert_eq!(dims("r12"), ["b", "s"]);
    // ConstantOfShape's int64 `value` attribute read: the Where picks 1 where t is -1.
    assert_eq!(dims("r13"), ["b", "1", "s"]);
    // Broadcasting s with min(s, 16): s (they are equal or 1 wherever the Add is valid).
    assert_eq!(dims("r14"), ["b", "s", "64"]);
    // LSTM / bidirectional GRU (ONNX layout 0).
    assert_eq!(dims("r15"), ["s", "1", "b", "3"]);
    assert_eq!(dims("r15c"), ["1", "b", "3"]);
    assert_eq!(dims("r16"), ["s", "2", "b", "3"]);
    assert_eq!(dims("r16h"), ["2", "b", "3"]);
    assert_eq!(dims("r17"), ["s", "b", "64"]);
    assert_eq!(dims("r18"), ["b", "s", "64"]);
    // A boolean constant (tf2onnx's end mask) in And/Where on a shape value.
    assert_eq!(dims("r19"), ["0", "s"]);
}

/// Issue 42, pattern E: integer values computed from an interval dim carry its bounds.
/// `tests/data/propagation/ov_value_bounds.xml` (`tools/gen_ov_value_bounds.py`): `ShapeOf` of a
/// Parameter `[1..10, 4]` through Gather, Convert, Add, Multiply, FloorMod, Squeeze/Unsqueeze and
/// Concat, into Reshape (both `special_zero`), Broadcast and Range. With every port shape but the
/// Parameter's stripped, each propagated dim must contain the size OpenVINO's CPU plugin gives at
/// n = 1, 2, 3, 5, 7, 10, and be at least as tight as OpenVINO's own inferred interval.
#[test]
fn ov_value_bounds_from_an_interval_dim() {
    use slice_opt::ir::NodeKind;
    let path = Path::new("tests/data/propagation/ov_value_bounds.xml");
    let model = Model::load(path).expect("loads");
    let mut g = model.graph().clone();
    for ix in model.graph().g.node_indices() {
        let n = g.node_mut(ix);
        if n.kind == NodeKind::Op && n.op_type != "Parameter" {
            for v in &mut n.outputs {
                v.ty.shape = None;
            }
        }
    }
    let facts = shape::propagate_graph(&g, model.format(), 0).expect("acyclic");
    let text =
        std::fs::read_to_string("tests/data/propagation/ov_value_bounds.json").expect("data");
    let json: serde_json::Value = serde_json::from_str(&text).expect("json");
    let fact = |name: &str| -> Fact {
        let ix =
            g.g.node_indices()
                .find(|&ix| g.node(ix).name.as_str() == name)
                .unwrap_or_else(|| panic!("no layer {name}"));
        facts.get(OutletId { node: ix, port: 0 }).clone()
    };
    let (mut tighter, mut equal) = (0, 0);
    for (name, ov_dims) in json["openvino"].as_object().expect("openvino") {
        let f = fact(name);
        let shape = f.shape.as_ref().unwrap_or_else(|| panic!("{name}: rank"));
        let ov_dims = ov_dims.as_array().expect("dims");
        assert_eq!(shape.len(), ov_dims.len(), "{name}: rank");
        for (i, (d, ov)) in shape.iter().zip(ov_dims).enumerate() {
            let (olo, ohi) = (ov[0].as_i64().expect("lo"), ov[1].as_i64().expect("hi"));
            let ohi = (ohi >= 0).then_some(ohi);
            let (lo, hi) = d.bounds();
            let lo = lo.unwrap_or(0);
            assert!(
                lo >= olo,
                "{name} dim {i}: {d} looser than OpenVINO's {olo}.."
            );
            assert!(
                ohi.is_none_or(|oh| hi.is_some_and(|h| h <= oh)),
                "{name} dim {i}: {d} looser than OpenVINO's ..{ohi:?}"
            );
            if (Some(lo), hi) == (Some(olo), ohi) {
                equal += 1;
            } else {
                tighter += 1;
            }
        }
    }
    for run in json["runs"].as_array().expect("runs") {
        for (name, want) in run["shapes"].as_object().expect("shapes") {
            let f = fact(name);
            let shape = f.shape.as_ref().expect("rank");
            for (i, (d, w)) in shape.iter().zip(want.as_array().expect("dims")).enumerate() {
                let w = w.as_i64().expect("dim");
                let (lo, hi) = d.bounds();
                assert!(
                    lo.is_none_or(|l| l <= w) && hi.is_none_or(|h| w <= h),
                    "{name} dim {i}: {d} excludes {w} at {}",
                    run["bindings"]
                );
            }
            if let (Some(v), Some(want)) = (&f.value, run["values"][name].as_array()) {
                for (d, w) in v.iter().zip(want) {
                    let w = w.as_i64().expect("int");
                    let (lo, hi) = d.bounds();
                    assert!(
                        lo.is_none_or(|l| l <= w) && hi.is_none_or(|h| w <= h),
                        "{name} value {d} excludes {w} at {}",
                        run["bindings"]
                    );
                }
            }
        }
    }
    eprintln!("ov_value_bounds: {equal} dims as tight as OpenVINO's, {tighter} tighter");
    assert!(
        tighter >= 1 && equal >= 15,
        "{equal} equal, {tighter} tighter"
    );
    // Range(0, n + n mod 4): n in 1..10 and n mod 4 in 0..3, so at most 13 elements (OpenVINO:
    // unbounded).
    let rg = fact("rg").shape.expect("rank");
    assert_eq!(rg[0].bounds().1, Some(13), "{}", rg[0]);
}
