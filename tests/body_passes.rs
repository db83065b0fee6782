//! Layer: subgraph + pipeline (the passes inside bodies), end to end through both formats.
//!
//! The passes inside subgraph bodies. Body slices are inferred, folded where constant (body-local
//! constants and outer-scope ones, nested bodies too), lowered and raised; changed bodies are
//! written back consistently (ONNX graph attributes; IR body layers with their port maps and back
//! edges); untouched bodies stay byte for byte; outputs stay the expected ones (tract runs ONNX
//! `If`; `tools/body_check.py` runs every case in ONNX Runtime and OpenVINO, `Loop` included)
//! (issue 17, acceptance 3).
//!
//! The expected values come from the operators' definitions: ONNX `Slice` (`x[starts:ends]` per
//! axis), OpenVINO StridedSlice-1 with `shrink_axis_mask` (`x[i, 1:]` of a `[3, 5]` tensor has
//! shape `[4]`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use ndarray_npy::NpzReader;
use slice_opt::formats::onnx::proto::tensor_shape_proto::dimension::Value as Dimension;
use slice_opt::formats::onnx::proto::{GraphProto, TensorProto};
use slice_opt::formats::openvino::parse_dim;
use slice_opt::formats::openvino::xml::{Document, Element};
use slice_opt::ir::DeclaredDim;
use slice_opt::pipeline::{PassKind, Report};
use slice_opt::{Model, Pipeline};
use tract_onnx::prelude::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(path: &Path, passes: &[PassKind], out: &Path) -> Report {
    let mut model = Model::load(path).expect("load");
    let report = Pipeline::with_passes(passes.to_vec())
        .run(&mut model)
        .expect("passes");
    model.save(out).expect("save");
    report
}

fn changed(report: &Report, pass: PassKind) -> Vec<String> {
    let mut v: Vec<String> = report
        .passes
        .iter()
        .filter(|p| p.pass == pass)
        .flat_map(|p| p.changes.iter().map(|c| c.node.clone()))
        .collect();
    v.sort();
    v
}

fn onnx_graph(path: &Path) -> GraphProto {
    match Model::load(path).expect("load") {
        Model::Onnx(m) => m.to_proto().expect("record").graph.expect("graph"),
        Model::OpenVino(_) => panic!("not ONNX"),
    }
}

/// The graph attribute `attr` of the node that has it.
fn branch<'a>(g: &'a GraphProto, attr: &str) -> &'a GraphProto {
    g.node
        .iter()
        .flat_map(|n| n.attribute.iter())
        .find(|a| a.name() == attr)
        .and_then(|a| a.g.as_deref())
        .unwrap_or_else(|| panic!("no graph attribute {attr}"))
}

fn f32s(t: &TensorProto) -> Vec<f32> {
    if let Some(raw) = t.raw_data.as_ref() {
        raw.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    } else {
        t.float_data.clone()
    }
}

fn initializer<'a>(g: &'a GraphProto, name: &str) -> &'a TensorProto {
    g.initializer
        .iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no initializer {name}"))
}

fn ops(g: &GraphProto) -> Vec<&str> {
    g.node.iter().map(|n| n.op_type()).collect()
}

/// `x[rows, cols]` of a row-major matrix with `width` columns.
fn sub(
    x: &[f32],
    width: usize,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
) -> Vec<f32> {
    rows.flat_map(|r| cols.clone().map(move |c| x[r * width + c]))
        .collect()
}

/// The cases of `body_fold.io.npz`: inputs (c, d, x) and the expected output.
fn body_fold_cases() -> Vec<(Vec<Tensor>, ndarray::ArrayD<f32>)> {
    let f = std::fs::File::open(repo().join("tests/data/subgraph/body_fold.io.npz")).expect("npz");
    let mut npz = NpzReader::new(f).expect("npz reader");
    (0..4)
        .map(|k| {
            let c: ndarray::ArrayD<bool> = npz.by_name(&format!("case{k}_x0")).expect("c");
            let d: ndarray::ArrayD<bool> = npz.by_name(&format!("case{k}_x1")).expect("d");
            let x: ndarray::ArrayD<f32> = npz.by_name(&format!("case{k}_x2")).expect("x");
            let y: ndarray::ArrayD<f32> = npz.by_name(&format!("case{k}_y0")).expect("y");
            (vec![Tensor::from(c), Tensor::from(d), Tensor::from(x)], y)
        })
        .collect()
}

fn run_tract(path: &Path, inputs: &[Tensor]) -> Vec<ndarray::ArrayD<f32>> {
    let mut model = tract_onnx::onnx().model_for_path(path).expect("tract load");
    for (i, t) in inputs.iter().enumerate() {
        model
            .set_input_fact(i, InferenceFact::from(t.clone()).without_value())
            .expect("fact");
    }
    let runnable = model
        .into_optimized()
        .expect("optimize")
        .into_runnable()
        .expect("plan");
    let out = runnable
        .run(inputs.iter().cloned().map(TValue::from).collect())
        .expect("run");
    out.iter()
        .map(|t| {
            t.clone()
                .into_tensor()
                .cast_to::<f32>()
                .expect("f32")
                .to_plain_array_view::<f32>()
                .expect("view")
                .to_owned()
        })
        .collect()
}

fn close(a: &ndarray::ArrayD<f32>, b: &ndarray::ArrayD<f32>) -> bool {
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| (x - y).abs() <= 1e-5 + 1e-5 * y.abs())
}

/// `tests/data/subgraph/body_fold.onnx` (tools/gen_body_passes.py): every body slice with
/// constant data and parameters (an outer initializer, a body-local `Constant`, a constant of
/// the enclosing body read by a nested `If`) becomes a constant of its body holding the slice
/// the ONNX `Slice` definition gives; the slice of the input `x` stays; outputs stay.
#[test]
fn fold_makes_constant_body_slices_constants_of_their_body() {
    let src = repo().join("tests/data/subgraph/body_fold.onnx");
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("o.onnx");
    let report = run(
        &src,
        &[PassKind::Infer, PassKind::Fold, PassKind::Cleanup],
        &out,
    );
    let folded: Vec<String> = report
        .passes
        .iter()
        .filter(|p| p.pass == PassKind::Fold)
        .flat_map(|p| p.changes.iter())
        .filter(|c| c.what.contains("folded"))
        .map(|c| c.node.clone())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        folded,
        [
            "If_0/else_branch/inner_if/then_branch/inner_slice",
            "If_0/else_branch/k_slice",
            "If_0/then_branch/w_slice",
        ]
    );

    let w: Vec<f32> = (0..24).map(|v| v as f32).collect(); // W = arange(24), [4, 6]
    let k: Vec<f32> = (0..16).map(|v| v as f32 / 2.0).collect(); // K = arange(16) / 2, [2, 8]
    let g = onnx_graph(&out);
    let then_g = branch(&g, "then_branch");
    assert!(!ops(then_g).contains(&"Slice"), "{:?}", ops(then_g));
    let t = initializer(then_g, "w_sl");
    assert_eq!(t.dims, [2, 6]);
    assert_eq!(f32s(t), sub(&w, 6, 1..3, 0..6));
    let else_g = branch(&g, "else_branch");
    assert!(!ops(else_g).contains(&"Slice"), "{:?}", ops(else_g));
    let t = initializer(else_g, "k_sl");
    assert_eq!(t.dims, [2, 6]);
    assert_eq!(f32s(t), sub(&k, 8, 0..2, 0..6));
    let inner_then = branch(else_g, "then_branch");
    assert!(!ops(inner_then).contains(&"Slice"));
    let t = initializer(inner_then, "i_out");
    assert_eq!(f32s(t), sub(&k, 8, 0..2, 2..8));
    // The nested else reads x: not constant, written back as it was.
    let orig = onnx_graph(&src);
    assert_eq!(
        branch(else_g, "else_branch"),
        branch(branch(&orig, "else_branch"), "else_branch")
    );
    // W was read only by the folded slice, K (else branch) only by the nested folded slice:
    // `cleanup` drops both once the bodies no longer read them.
    assert!(g.initializer.iter().all(|t| t.name() != "W"));
    assert!(else_g
        .node
        .iter()
        .all(|n| !n.output.iter().any(|o| o == "K")));
    // Outer names stay read from the outer scope: no body declares them as inputs.
    assert!(then_g.input.is_empty() && else_g.input.is_empty() && inner_then.input.is_empty());

    for (inputs, want) in body_fold_cases() {
        for path in [&src, &out] {
            let got = run_tract(path, &inputs);
            assert!(
                close(&got[0], &want),
                "{}: {:?} vs {:?}",
                path.display(),
                got[0],
                want
            );
        }
    }
}

/// `models/if_outer_slice.onnx`: both branches slice the outer `x` (`[2, 4]`): `x[:, 0:2]` and
/// `x[:, 1:3]`, `[2, 2]` by the Slice definition. `infer` writes that shape on each branch's
/// output (declared without a shape), names the unnamed body nodes by their path, and leaves
/// them unnamed in the file.
#[test]
fn infer_writes_body_slice_shapes() {
    let src = repo().join("models/if_outer_slice.onnx");
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("o.onnx");
    let report = run(&src, &[PassKind::Infer], &out);
    assert_eq!(
        changed(&report, PassKind::Infer),
        ["If_2/else_branch/Slice_0", "If_2/then_branch/Slice_0"]
    );
    let g = onnx_graph(&out);
    for attr in ["then_branch", "else_branch"] {
        let b = branch(&g, attr);
        let dims: Vec<i64> = b.output[0]
            .r#type
            .as_ref()
            .and_then(|t| t.value.as_ref())
            .map(|v| match v {
                slice_opt::formats::onnx::proto::type_proto::Value::TensorType(t) => t
                    .shape
                    .as_ref()
                    .map(|s| {
                        s.dim
                            .iter()
                            .map(|d| match d.value {
                                Some(Dimension::DimValue(v)) => v,
                                _ => -1,
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
                _ => Vec::new(),
            })
            .unwrap_or_default();
        assert_eq!(dims, [2, 2], "{attr}");
        assert!(b.node.iter().all(|n| n.name().is_empty()), "{attr}");
    }
    let (inputs, want) = {
        let f = std::fs::File::open(repo().join("models/if_outer_slice.io.npz")).expect("npz");
        let mut npz = NpzReader::new(f).expect("npz");
        let x: ndarray::ArrayD<f32> = npz.by_name("x0").expect("x0");
        let y: ndarray::ArrayD<f32> = npz.by_name("y0").expect("y0");
        (vec![Tensor::from(x)], y)
    };
    let got = run_tract(&out, &inputs);
    assert!(close(&got[0], &want));
}

/// The `<layer>`s of a body element, by id.
fn body_layers(body: &Element) -> HashMap<i64, &Element> {
    body.child("layers")
        .expect("layers")
        .elements()
        .filter(|e| e.name == "layer")
        .map(|e| (e.attr("id").expect("id").parse().expect("int"), e))
        .collect()
}

fn int(e: &Element, a: &str) -> i64 {
    e.attr(a)
        .unwrap_or_else(|| panic!("no {a}"))
        .trim()
        .parse()
        .expect("int")
}

/// Checks that a body's port map, back edges and edges name layers of the body of the right
/// kind, and that every body constant lies inside the `.bin`.
fn check_body(layer: &Element, body: &str, map: &str, bin_len: u64) {
    let b = layer.child(body).expect("body");
    let layers = body_layers(b);
    let pm = layer.child(map).expect("port map");
    for e in pm.elements() {
        let id = int(e, "internal_layer_id");
        let ty = layers
            .get(&id)
            .unwrap_or_else(|| panic!("{map} names layer {id}, not in <{body}>"))
            .attr("type");
        let want = if e.name == "input" {
            "Parameter"
        } else {
            "Result"
        };
        assert_eq!(ty, Some(want), "{map} {id}");
    }
    if let Some(be) = layer.child("back_edges") {
        for e in be.elements() {
            assert_eq!(layers[&int(e, "from-layer")].attr("type"), Some("Result"));
            assert_eq!(layers[&int(e, "to-layer")].attr("type"), Some("Parameter"));
        }
    }
    for e in b.child("edges").expect("edges").elements() {
        for end in ["from-layer", "to-layer"] {
            assert!(layers.contains_key(&int(e, end)), "edge to a missing layer");
        }
    }
    for l in layers.values().filter(|l| l.attr("type") == Some("Const")) {
        let d = l.child("data").expect("data");
        assert!(int(d, "offset") as u64 + int(d, "size") as u64 <= bin_len);
    }
}

fn types(body: &Element) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = body_layers(body)
        .values()
        .map(|l| {
            (
                l.attr("type").unwrap_or_default().to_string(),
                l.attr("version").unwrap_or_default().to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

fn ov_layer(xml: &str, ty: &str) -> Element {
    let doc = Document::parse(xml).expect("xml");
    let layer = doc
        .root
        .child("layers")
        .expect("layers")
        .elements()
        .find(|l| l.attr("type") == Some(ty))
        .expect("layer")
        .clone();
    layer
}

/// `models/loop_body_slice.tf.xml`: the Loop body's StridedSlice-1 (`x[i, 1:]`, shrink axis
/// 0) is inferred (its output port was `-1`; the slice is `[4]`), then lowered to Slice-8 plus
/// the reshaping of the removed axis; the port map and back edges still name the body's
/// Parameters and Results; the new constants are in the `.bin`.
#[test]
fn openvino_loop_body_slice_is_inferred_and_lowered() {
    let src = repo().join("models/loop_body_slice.tf.xml");
    let dir = tempfile::tempdir().expect("tmp");

    let out = dir.path().join("infer.xml");
    let report = run(&src, &[PassKind::Infer], &out);
    assert_eq!(
        changed(&report, PassKind::Infer),
        ["while/body/while/strided_slice"]
    );
    let xml = std::fs::read_to_string(&out).expect("xml");
    let lp = ov_layer(&xml, "Loop");
    let body = lp.child("body").expect("body");
    let ss = body_layers(body)
        .into_values()
        .find(|l| l.attr("type") == Some("StridedSlice"))
        .expect("StridedSlice");
    let dims: Vec<String> = ss
        .child("output")
        .and_then(|o| o.child("port"))
        .expect("port")
        .elements()
        .map(|d| d.text())
        .collect();
    assert_eq!(dims.len(), 1);
    match parse_dim(&dims[0]) {
        Some(DeclaredDim::Known(4)) => {}
        Some(DeclaredDim::Interval(lo, hi)) => {
            assert!(lo <= 4 && hi.is_some_and(|h| h >= 4), "{}", dims[0])
        }
        d => panic!("output dim {d:?}: not inferred"),
    }

    for passes in [
        vec![PassKind::Lower],
        vec![PassKind::Lower, PassKind::Raise],
    ] {
        let out = dir.path().join("lower.xml");
        let report = run(&src, &passes, &out);
        assert_eq!(
            changed(&report, PassKind::Lower),
            ["while/body/while/strided_slice"]
        );
        let xml = std::fs::read_to_string(&out).expect("xml");
        let bin_len = std::fs::metadata(out.with_extension("bin"))
            .expect("bin")
            .len();
        let lp = ov_layer(&xml, "Loop");
        let t = types(lp.child("body").expect("body"));
        let count = |op: &str| t.iter().filter(|(ty, _)| ty == op).count();
        if passes.contains(&PassKind::Raise) {
            // Raised back in the same run: one StridedSlice again (begin/end assembled from the
            // run-time values, issue 15), no Slice-8 left.
            assert_eq!((count("StridedSlice"), count("Slice")), (1, 0), "{t:?}");
        } else {
            assert_eq!(count("StridedSlice"), 0, "{t:?}");
            assert!(t.contains(&("Slice".into(), "opset8".into())), "{t:?}");
        }
        check_body(&lp, "body", "port_map", bin_len);
        // The model reads back and its body slice is listed.
        let m = Model::load(&out).expect("reload");
        let rows = slice_opt::check::check(&m).rows;
        assert!(
            rows.iter().any(|r| r.path.starts_with("while/body/")),
            "{rows:?}"
        );
    }
}

/// `models/if_outer_slice.onnx.xml`: OpenVINO's If with a Slice-8 in each body: `raise` makes
/// each a StridedSlice-1; both port maps still name each body's Parameter and Result.
#[test]
fn openvino_if_body_slices_are_raised() {
    let src = repo().join("models/if_outer_slice.onnx.xml");
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("raise.xml");
    let report = run(&src, &[PassKind::Raise], &out);
    assert_eq!(
        changed(&report, PassKind::Raise),
        ["y/else_body/e_out", "y/then_body/t_out"]
    );
    let xml = std::fs::read_to_string(&out).expect("xml");
    let bin_len = std::fs::metadata(out.with_extension("bin"))
        .expect("bin")
        .len();
    let lp = ov_layer(&xml, "If");
    for (body, map) in [
        ("then_body", "then_port_map"),
        ("else_body", "else_port_map"),
    ] {
        let t = types(lp.child(body).expect("body"));
        assert!(
            t.contains(&("StridedSlice".into(), "opset1".into())),
            "{t:?}"
        );
        assert!(!t.iter().any(|(ty, _)| ty == "Slice"), "{t:?}");
        check_body(&lp, body, map, bin_len);
    }
}

/// A pass that changes nothing in a body writes the model byte for byte (the ONNX fast path
/// and the IR source copy both hold with bodies present).
#[test]
fn untouched_bodies_stay_byte_identical() {
    let dir = tempfile::tempdir().expect("tmp");
    for (file, passes) in [
        ("tests/data/subgraph/slices.onnx", vec![PassKind::Lower]),
        ("models/loop_body_slice.onnx", vec![PassKind::Lower]),
        ("models/loop_body_slice.tf.xml", vec![PassKind::Raise]),
        ("models/if_outer_slice.onnx.xml", vec![PassKind::Lower]),
    ] {
        let src = repo().join(file);
        let ext = src.extension().and_then(|e| e.to_str()).expect("ext");
        let out = dir.path().join(format!("o.{ext}"));
        let report = run(&src, &passes, &out);
        assert!(
            report.passes.iter().all(|p| p.changes.is_empty()),
            "{file}: {:?}",
            report.passes
        );
        assert_eq!(
            std::fs::read(&src).expect("read"),
            std::fs::read(&out).expect("read"),
            "{file}"
        );
        if ext == "xml" {
            assert_eq!(
                std::fs::read(src.with_extension("bin")).expect("read"),
                std::fs::read(out.with_extension("bin")).expect("read"),
                "{file}"
            );
        }
    }
}

/// The f32 values of the `Const` layer `name` of a body, read from the written `.bin`.
fn body_const(body: &Element, name: &str, bin: &[u8]) -> (String, Vec<f32>) {
    let l = body_layers(body)
        .into_values()
        .find(|l| l.attr("name") == Some(name))
        .unwrap_or_else(|| panic!("no layer {name}"));
    assert_eq!(l.attr("type"), Some("Const"), "{name}");
    let d = l.child("data").expect("data");
    let (off, size) = (int(d, "offset") as usize, int(d, "size") as usize);
    let values = bin[off..off + size]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (d.attr("shape").unwrap_or_default().to_string(), values)
}

/// `tests/data/subgraph/body_if.xml` and `body_ti.xml` (tools/gen_body_passes.py): a
/// StridedSlice-1 of a body constant `K` (`arange(16) / 2`, `[2, 8]`) in an IR `If` branch and
/// in a `TensorIterator` body folds to a `Const` of the body holding `K[:, 0:6]` /
/// `K[:, 2:8]` (begin_mask/end_mask set on axis 0: the whole axis), its data appended to the
/// `.bin`; the port maps still name the bodies' Parameters and Results. `lower` makes the
/// TensorIterator's slice of its iteration part a Slice-8.
#[test]
fn openvino_body_constants_fold_and_ti_bodies_lower() {
    let data = repo().join("tests/data/subgraph");
    let dir = tempfile::tempdir().expect("tmp");
    let k: Vec<f32> = (0..16).map(|v| v as f32 / 2.0).collect();

    let out = dir.path().join("if.xml");
    let report = run(
        &data.join("body_if.xml"),
        &[PassKind::Infer, PassKind::Fold, PassKind::Cleanup],
        &out,
    );
    // OpenVINO's Python API named the If layer `If_19`.
    assert_eq!(changed(&report, PassKind::Fold), ["If_19/then_body/k_ss"]);
    let xml = std::fs::read_to_string(&out).expect("xml");
    let bin = std::fs::read(out.with_extension("bin")).expect("bin");
    let lp = ov_layer(&xml, "If");
    let then_b = lp.child("then_body").expect("then");
    assert!(!types(then_b).iter().any(|(t, _)| t == "StridedSlice"));
    let (shape, values) = body_const(then_b, "k_ss", &bin);
    assert_eq!(shape.replace(' ', ""), "2,6");
    assert_eq!(values, sub(&k, 8, 0..2, 0..6));
    check_body(&lp, "then_body", "then_port_map", bin.len() as u64);
    check_body(&lp, "else_body", "else_port_map", bin.len() as u64);

    for (passes, folded) in [
        (
            vec![PassKind::Infer, PassKind::Fold, PassKind::Cleanup],
            true,
        ),
        (vec![PassKind::Lower], false),
    ] {
        let out = dir.path().join("ti.xml");
        run(&data.join("body_ti.xml"), &passes, &out);
        let xml = std::fs::read_to_string(&out).expect("xml");
        let bin = std::fs::read(out.with_extension("bin")).expect("bin");
        let lp = ov_layer(&xml, "TensorIterator");
        let body = lp.child("body").expect("body");
        let t = types(body);
        check_body(&lp, "body", "port_map", bin.len() as u64);
        if folded {
            let (shape, values) = body_const(body, "ti_k_ss", &bin);
            assert_eq!(shape.replace(' ', ""), "2,6");
            assert_eq!(values, sub(&k, 8, 0..2, 2..8));
            // The slice of the iteration's part is not constant: it stays.
            assert_eq!(t.iter().filter(|(t, _)| t == "StridedSlice").count(), 1);
        } else {
            assert!(!t.iter().any(|(t, _)| t == "StridedSlice"), "{t:?}");
            assert_eq!(
                t.iter()
                    .filter(|(t, v)| t == "Slice" && v == "opset8")
                    .count(),
                2,
                "{t:?}"
            );
        }
    }
}
