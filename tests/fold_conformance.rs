//! Layer: passes (`fold`), end to end through both formats.
//!
//! Every conformance case built as a one-node ONNX model with constant data folds to one constant
//! whose values are the oracle's selected indices (ONNX Slice against `expected_onnx`;
//! TensorFlow-style custom-domain StridedSlice against `expected_tf`), and the folded Slice models
//! give the same result in tract-onnx as the unfolded ones. IR Slice-8 and StridedSlice-1 one-op
//! models fold to `expected_ov` (or `expected_ov_alt` where the case has one). No pins (issue 5,
//! acceptance 1).

mod common;

use common::*;
use prost::Message;
use slice_opt::formats::onnx::{proto, OnnxModel};
use slice_opt::ir::NodeKind;
use slice_opt::pipeline::{PassKind, Pipeline};
use slice_opt::Model;

/// Folds a one-node model; returns the constant feeding output `y` as (shape, values), or
/// `Err` with the error text when the pipeline refused the node.
fn fold(m: &proto::ModelProto) -> Result<(Model, Vec<u64>, Vec<i64>), String> {
    let bytes = bytes::Bytes::from(m.encode_to_vec());
    let onnx = OnnxModel::from_bytes("case.onnx".as_ref(), bytes).map_err(|e| e.to_string())?;
    let mut model = Model::Onnx(onnx);
    Pipeline::with_passes(vec![PassKind::Fold, PassKind::Cleanup])
        .run(&mut model)
        .map_err(|e| e.to_string())?;
    let g = model.graph();
    let out =
        g.g.node_indices()
            .find(|&ix| g.node(ix).kind == NodeKind::Output)
            .expect("output node");
    let src = g.input(out, 0).expect("output is fed");
    let t = g
        .constant_at(src)
        .ok_or("output is not a constant after fold")?
        .clone();
    let ops =
        g.g.node_weights()
            .filter(|n| n.kind == NodeKind::Op)
            .count();
    assert_eq!(ops, 0, "fold+cleanup must leave no op node");
    let values = t.to_i64_vec().expect("int32 values");
    Ok((model, t.shape, values))
}

fn as_u64(v: &[i64]) -> Vec<u64> {
    v.iter().map(|&x| x as u64).collect()
}

/// Tallies fold results against the answers a case accepts (`expected_*`, or
/// `expected_ov_alt` where present). Anything else is a fold bug; there are no pins.
#[derive(Default)]
struct Tally {
    oracle: usize,
    alt: usize,
    fail: Vec<String>,
}

impl Tally {
    fn add(
        &mut self,
        id: &str,
        accepted: &[Option<(Vec<u64>, Vec<u64>)>],
        got: Result<(Vec<u64>, Vec<i64>), String>,
    ) {
        let got = got.ok().map(|(s, v)| (s, as_u64(&v)));
        match accepted.iter().position(|a| *a == got) {
            Some(0) => self.oracle += 1,
            Some(_) => self.alt += 1,
            None => self
                .fail
                .push(format!("{id}: want {accepted:?}, got {got:?}")),
        }
    }

    fn finish(self, what: &str) {
        println!(
            "{what}: {} equal to expected, {} equal to expected_ov_alt, {} fold bugs",
            self.oracle,
            self.alt,
            self.fail.len()
        );
        assert!(
            self.fail.is_empty(),
            "{} cases differ:\n{}",
            self.fail.len(),
            self.fail
                .iter()
                .take(20)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Where the runtimes disagree (issue 42, pattern G), `fold` leaves the node and says why in its
/// report; elsewhere the fold gives the oracle's answer.
#[test]
fn onnx_slice_cases_fold_to_the_oracle() {
    let mut t = Tally::default();
    let mut left = 0;
    for c in &load_cases("slice.jsonl.gz") {
        if onnx_runtimes_differ(c) {
            let m = onnx_slice_model(c);
            let bytes = bytes::Bytes::from(m.encode_to_vec());
            let onnx = OnnxModel::from_bytes("case.onnx".as_ref(), bytes).expect("load");
            let mut model = Model::Onnx(onnx);
            let report = Pipeline::with_passes(vec![PassKind::Fold, PassKind::Cleanup])
                .run(&mut model)
                .expect("the pipeline runs");
            let id = c["id"].as_str().expect("id");
            let slices = model
                .graph()
                .g
                .node_weights()
                .filter(|n| n.op_type == "Slice")
                .count();
            let skipped = report.passes[0]
                .skipped
                .iter()
                .any(|s| s.what.starts_with("runtimes disagree"));
            if slices == 1 && skipped {
                left += 1;
            } else {
                t.fail.push(format!(
                    "{id}: runtimes disagree, yet folded or not reported"
                ));
            }
            continue;
        }
        let got = fold(&onnx_slice_model(c)).map(|(_, s, v)| (s, v));
        t.add(
            c["id"].as_str().expect("id"),
            &accepted(c, "expected_onnx"),
            got,
        );
    }
    println!("fold ONNX Slice: {left} cases where the runtimes disagree left unfolded");
    assert_eq!(left, 167, "the runtimes' raw answers differ in 167 cases");
    t.finish("fold ONNX Slice vs expected_onnx");
}

#[test]
fn tf_strided_slice_cases_fold_to_the_oracle() {
    let mut t = Tally::default();
    for c in load_cases("strided_slice.jsonl.gz")
        .iter()
        .filter(|c| c["ov_masks"].is_null())
    {
        let got = fold(&tf_strided_slice_model(c)).map(|(_, s, v)| (s, v));
        t.add(
            c["id"].as_str().expect("id"),
            &accepted(c, "expected_tf"),
            got,
        );
    }
    assert!(t.oracle > 3000);
    t.finish("fold TF StridedSlice (ONNX custom domain) vs expected_tf");
}

/// Runs a model with no inputs in tract-onnx; its single output as i32 values and shape.
fn tract_run(bytes: &[u8]) -> Result<(Vec<u64>, Vec<i64>), String> {
    use tract_onnx::prelude::*;
    let model = tract_onnx::onnx()
        .model_for_read(&mut &bytes[..])
        .and_then(|m| m.into_optimized())
        .and_then(|m| m.into_runnable())
        .map_err(|e| format!("{e:#}"))?;
    let out = model.run(tvec![]).map_err(|e| format!("{e:#}"))?;
    let t = out[0].clone().into_tensor();
    let shape = t.shape().iter().map(|&d| d as u64).collect();
    let t = t.cast_to::<i64>().map_err(|e| format!("{e:#}"))?;
    let values = t
        .to_plain_array_view::<i64>()
        .map_err(|e| format!("{e:#}"))?
        .iter()
        .copied()
        .collect();
    Ok((shape, values))
}

#[test]
fn folded_slice_models_run_in_tract_like_the_unfolded_ones() {
    let cases = load_cases("slice.jsonl.gz");
    let (mut same, mut tract_off_spec, mut ran) = (0, Vec::new(), 0);
    for c in &cases {
        // Where the runtimes disagree, the node is not folded (see above).
        if expected(&c["expected_onnx"]).is_none() || onnx_runtimes_differ(c) {
            continue;
        }
        let m = onnx_slice_model(c);
        let (folded, shape, values) = fold(&m).expect("valid case folds");
        let Model::Onnx(folded) = folded else {
            unreachable!("ONNX in, ONNX out")
        };
        let folded_bytes = folded.to_proto().expect("encode").encode_to_vec();
        let f = tract_run(&folded_bytes).expect("tract runs every folded model");
        // The folded model is one constant (checked against the oracle above): tract must read
        // it back exactly.
        assert_eq!(f, (shape, values), "{}: folded model in tract", c["id"]);
        ran += 1;
        match tract_run(&m.encode_to_vec()) {
            Ok(u) if u == f => same += 1,
            other => tract_off_spec.push(format!(
                "{}: tract on the unfolded model gives {other:?}",
                c["id"]
            )),
        }
    }
    println!(
        "tract: {ran} folded models read back exactly as folded; the unfolded models agree on {same} and differ on {} (tract's own Slice, not ours)",
        tract_off_spec.len()
    );
    for line in tract_off_spec.iter().take(10) {
        println!("  {line}");
    }
    assert!(ran > 2000);
}

/// Folds a one-op IR model: the constant feeding the Result, or `Err` when refused.
fn fold_ir((xml, bin): (String, Vec<u8>)) -> Result<(Vec<u64>, Vec<i64>), String> {
    use slice_opt::formats::openvino::OvModel;
    let ov = OvModel::from_parts("case.xml".as_ref(), xml, Some(bytes::Bytes::from(bin)))
        .map_err(|e| e.to_string())?;
    let mut model = Model::OpenVino(ov);
    Pipeline::with_passes(vec![PassKind::Fold, PassKind::Cleanup])
        .run(&mut model)
        .map_err(|e| e.to_string())?;
    // The model must still serialize.
    let Model::OpenVino(ov) = &model else {
        unreachable!("IR in, IR out")
    };
    ov.to_parts().map_err(|e| format!("save: {e}"))?;
    let g = model.graph();
    let result =
        g.g.node_indices()
            .find(|&ix| g.node(ix).op_type == "Result")
            .expect("Result");
    let src = g.input(result, 0).expect("Result is fed");
    let t = g.constant_at(src).ok_or("not a constant after fold")?;
    Ok((t.shape.clone(), t.to_i64_vec().expect("i32 values")))
}

fn compare_ir(
    file: &str,
    expected_key: &str,
    build: fn(&serde_json::Value) -> (String, Vec<u8>),
    what: &str,
) {
    let mut t = Tally::default();
    for c in &load_cases(file) {
        t.add(
            c["id"].as_str().expect("id"),
            &accepted(c, expected_key),
            fold_ir(build(c)),
        );
    }
    t.finish(what);
}

#[test]
fn ir_slice8_cases_fold_to_the_oracle() {
    compare_ir(
        "slice.jsonl.gz",
        "expected_ov",
        ov_slice8_ir,
        "fold IR Slice-8 vs expected_ov",
    );
}

#[test]
fn ir_strided_slice_cases_fold_to_the_oracle() {
    compare_ir(
        "strided_slice.jsonl.gz",
        "expected_ov",
        ov_strided_slice_ir,
        "fold IR StridedSlice-1 vs expected_ov",
    );
}

/// The shrink + begin_mask choice is applied, and warned about, in `fold`, `lower` and `check`:
/// ss-1-00510 (an entry with shrink_axis_mask and begin_mask, `begin = -1`) folds to OpenVINO's
/// constant-folding answer (`expected_ov_alt`, element `begin[i]`), and each of the three
/// reports the node with the warning text of issue 15. A case without the pattern has none.
#[test]
fn shrink_with_begin_mask_is_warned_in_fold_lower_and_check() {
    use slice_opt::formats::openvino::OvModel;
    let load = |c: &serde_json::Value| {
        let (xml, bin) = ov_strided_slice_ir(c);
        Model::OpenVino(
            OvModel::from_parts("case.xml".as_ref(), xml, Some(bytes::Bytes::from(bin)))
                .expect("valid IR"),
        )
    };
    let cases = load_cases("strided_slice.jsonl.gz");
    let find = |id: &str| cases.iter().find(|c| c["id"] == id).expect("case");
    let warned = find("ss-1-00510");
    let plain = find("ss-1-01722");
    const TEXT: &str = "OpenVINO's CPU plugin and its constant folding disagree here; folded as";
    for (c, want) in [(warned, 1usize), (plain, 0)] {
        for pass in [PassKind::Fold, PassKind::Lower] {
            let mut m = load(c);
            let report = Pipeline::with_passes(vec![pass])
                .run(&mut m)
                .expect("pass runs");
            let w = &report.passes[0].warnings;
            assert_eq!(w.len(), want, "{} {pass:?}: {w:?}", c["id"]);
            assert!(w.iter().all(|w| w.what.starts_with(TEXT)), "{w:?}");
        }
        let rows = slice_opt::check::check(&load(c)).rows;
        assert_eq!(rows.len(), 1);
        assert_eq!(
            rows[0].warning.starts_with(TEXT),
            want == 1,
            "{:?}",
            rows[0]
        );
    }
    let got = fold_ir(ov_strided_slice_ir(warned)).map(|(s, v)| (s, as_u64(&v)));
    assert_eq!(
        Some(got.expect("folds")),
        expected(&warned["expected_ov_alt"])
    );
    assert_ne!(
        expected(&warned["expected_ov_alt"]),
        expected(&warned["expected_ov"])
    );
}

// ---------------------------------------------------------------------------------------------
// Issue 15, acceptance 3: exporter-style shape chains on a static input fold completely.
// ---------------------------------------------------------------------------------------------

/// An int64 constant of any shape (`dims` empty = a scalar).
fn i64_const(name: &str, dims: &[i64], values: &[i64]) -> proto::TensorProto {
    proto::TensorProto {
        dims: dims.to_vec(),
        ..i64_tensor(name, values)
    }
}

/// Every symbolic dim of every graph input set to `value`.
fn make_static(m: &mut proto::ModelProto, value: i64) {
    use proto::tensor_shape_proto::dimension::Value as D;
    let g = m.graph.as_mut().expect("graph");
    for i in &mut g.input {
        if let Some(proto::type_proto::Value::TensorType(t)) =
            i.r#type.as_mut().and_then(|t| t.value.as_mut())
        {
            for d in t.shape.iter_mut().flat_map(|s| s.dim.iter_mut()) {
                if !matches!(d.value, Some(D::DimValue(_))) {
                    d.value = Some(D::DimValue(value));
                }
            }
        }
    }
    // Declared intermediate/output shapes would carry the old symbols: drop them.
    g.value_info.clear();
    for o in &mut g.output {
        if let Some(proto::type_proto::Value::TensorType(t)) =
            o.r#type.as_mut().and_then(|t| t.value.as_mut())
        {
            t.shape = None;
        }
    }
}

/// The static dims of every graph input of `m`.
fn input_shapes(m: &proto::ModelProto) -> Vec<Vec<usize>> {
    use proto::tensor_shape_proto::dimension::Value as D;
    m.graph
        .as_ref()
        .expect("graph")
        .input
        .iter()
        .map(|i| match i.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(proto::type_proto::Value::TensorType(t)) => t
                .shape
                .iter()
                .flat_map(|s| s.dim.iter())
                .map(|d| match d.value {
                    Some(D::DimValue(v)) => v as usize,
                    _ => panic!("a static input"),
                })
                .collect(),
            _ => panic!("a tensor input"),
        })
        .collect()
}

/// Runs `bytes` in tract with every (float) input, of the given shapes, filled with `sin(k)`
/// values; the outputs.
fn tract_outputs(bytes: &[u8], shapes: &[Vec<usize>]) -> Vec<(Vec<usize>, Vec<f32>)> {
    use tract_onnx::prelude::*;
    let model = tract_onnx::onnx()
        .model_for_read(&mut &bytes[..])
        .expect("tract reads the model");
    let inputs: TVec<TValue> = shapes
        .iter()
        .map(|shape| {
            let n: usize = shape.iter().product();
            let data: Vec<f32> = (0..n).map(|k| (k as f32 * 0.37).sin()).collect();
            Tensor::from(tract_ndarray::ArrayD::from_shape_vec(shape.clone(), data).expect("shape"))
                .into()
        })
        .collect();
    let out = model
        .into_optimized()
        .and_then(|m| m.into_runnable())
        .and_then(|m| m.run(inputs))
        .expect("tract runs the model");
    out.iter()
        .map(|t| {
            let t = t
                .clone()
                .into_tensor()
                .cast_to::<f32>()
                .expect("f32")
                .into_owned();
            let values = t
                .to_plain_array_view::<f32>()
                .expect("f32 view")
                .iter()
                .copied()
                .collect();
            (t.shape().to_vec(), values)
        })
        .collect()
}

/// Folds (`fold,cleanup`) an ONNX model; the folded model and its op types.
fn fold_onnx(m: &proto::ModelProto) -> (Vec<u8>, Vec<String>) {
    let onnx = OnnxModel::from_bytes("chain.onnx".as_ref(), bytes::Bytes::from(m.encode_to_vec()))
        .expect("valid model");
    let mut model = Model::Onnx(onnx);
    let report = Pipeline::with_passes(vec![PassKind::Infer, PassKind::Fold, PassKind::Cleanup])
        .run(&mut model)
        .expect("passes run");
    for p in &report.passes {
        for s in &p.skipped {
            println!("  {:?} skipped {} ({}): {}", p.pass, s.node, s.op, s.what);
        }
    }
    let ops = model
        .graph()
        .g
        .node_weights()
        .filter(|n| n.kind == NodeKind::Op)
        .map(|n| n.op_type.to_string())
        .collect();
    let Model::Onnx(onnx) = model else {
        unreachable!("ONNX in, ONNX out")
    };
    (onnx.to_proto().expect("encode").encode_to_vec(), ops)
}

/// An exporter-style chain through every op `fold` must evaluate: Shape, Gather (scalar and
/// 1-D indices), Div, Unsqueeze, Sub, Cast, Squeeze, Range, ConstantOfShape, Mul, Add, Concat,
/// feeding a Slice of a graph input `x` [2, 6, 8] (opset 17). Expected: x[:, 2:6, 1:6].
pub fn synthetic_chain() -> proto::ModelProto {
    let mut cos = node("ConstantOfShape", "cos", &["hu"], &["cos"]);
    cos.attribute.push(proto::AttributeProto {
        name: Some("value".into()),
        t: Some(Box::new(i64_const("v", &[1], &[2]))),
        r#type: Some(proto::attribute_proto::AttributeType::Tensor as i32),
        ..Default::default()
    });
    let mut c32 = node("Cast", "c32", &["d2v"], &["c32"]);
    c32.attribute.push(int_attr("to", 6));
    let mut c64 = node("Cast", "c64", &["c32"], &["c64"]);
    c64.attribute.push(int_attr("to", 7));
    let nodes = vec![
        node("Shape", "shape", &["x"], &["s"]),
        node("Gather", "d1", &["s", "i1"], &["d1"]),
        node("Gather", "d2v", &["s", "i2"], &["d2v"]),
        node("Div", "half", &["d1", "two"], &["half"]),
        node("Unsqueeze", "hu", &["half", "ax0"], &["hu"]),
        node("Sub", "st1", &["hu", "one1"], &["st1"]),
        c32,
        c64,
        node("Squeeze", "sq", &["c64", "ax0"], &["sq"]),
        node("Range", "rng", &["zero", "d1", "three"], &["rng"]),
        node("Gather", "rsum", &["rng", "i1"], &["rsum"]),
        cos,
        node("Gather", "cg", &["cos", "i1"], &["cg"]),
        node("Mul", "cg1", &["cg", "one"], &["cg1"]),
        node("Sub", "b2", &["rsum", "cg1"], &["b2"]),
        node("Unsqueeze", "b2u", &["b2", "ax0"], &["b2u"]),
        node("Concat", "starts", &["st1", "b2u"], &["starts"]),
        node("Add", "e1", &["hu", "hu"], &["e1"]),
        node("Sub", "e2", &["sq", "cg"], &["e2"]),
        node("Unsqueeze", "e2u", &["e2", "ax0"], &["e2u"]),
        node("Concat", "ends", &["e1", "e2u"], &["ends"]),
        node("Slice", "slice", &["x", "starts", "ends", "axes"], &["y"]),
    ];
    let mut nodes = nodes;
    for n in &mut nodes {
        if n.op_type.as_deref() == Some("Concat") {
            n.attribute.push(int_attr("axis", 0));
        }
    }
    let mut x = i32_input("x", &[Some(2), Some(6), Some(8)]);
    if let Some(proto::type_proto::Value::TensorType(t)) =
        x.r#type.as_mut().and_then(|t| t.value.as_mut())
    {
        t.elem_type = Some(1);
    }
    let mut m = one_node_model(
        node("Identity", "unused", &[], &[]),
        vec![
            i64_const("i1", &[], &[1]),
            i64_const("i2", &[1], &[2]),
            i64_const("two", &[], &[2]),
            i64_const("ax0", &[1], &[0]),
            i64_const("one1", &[1], &[1]),
            i64_const("one", &[], &[1]),
            i64_const("zero", &[], &[0]),
            i64_const("three", &[], &[3]),
            i64_const("axes", &[2], &[1, 2]),
        ],
        &[("", 17)],
    );
    let g = m.graph.as_mut().expect("graph");
    g.node = nodes;
    g.input = vec![x];
    if let Some(proto::type_proto::Value::TensorType(t)) =
        g.output[0].r#type.as_mut().and_then(|t| t.value.as_mut())
    {
        t.elem_type = Some(1);
    }
    m
}

#[test]
fn exporter_shape_chains_fold_completely() {
    let mut models = Vec::new();
    for (file, dim) in [
        ("pos_embedding.onnx", 5),
        ("gpt2_causal_mask.onnx", 3),
        ("causal_mask_dynamic.onnx", 4),
    ] {
        let path = format!("{}/models/{file}", env!("CARGO_MANIFEST_DIR"));
        let mut m = proto::ModelProto::decode(&*std::fs::read(&path).expect("fixture"))
            .expect("valid ONNX");
        make_static(&mut m, dim);
        models.push((file.to_string(), m));
    }
    models.push(("synthetic_chain".into(), synthetic_chain()));
    let chain_ops = [
        "Shape",
        "Gather",
        "Unsqueeze",
        "Squeeze",
        "Concat",
        "Cast",
        "Range",
        "ConstantOfShape",
        "Add",
        "Sub",
        "Mul",
        "Div",
    ];
    // Float Add/Mul (pos_embedding's `x + table`, gpt2's score scaling) are the model's own
    // computation: only integer shape arithmetic must go, and fold folds only integer tensors.
    for (name, m) in &models {
        let before: Vec<String> = m
            .graph
            .as_ref()
            .expect("graph")
            .node
            .iter()
            .map(|n| n.op_type().to_string())
            .collect();
        let (folded, ops) = fold_onnx(m);
        let left: Vec<&String> = ops
            .iter()
            .filter(|o| {
                chain_ops.contains(&o.as_str()) && o.as_str() != "Add" && o.as_str() != "Mul"
            })
            .collect();
        println!("{name}: {before:?} -> {ops:?}");
        assert!(left.is_empty(), "{name}: {left:?} left in {ops:?}");
        // For tools/fold_chain_check.py (the same comparison in ONNX Runtime).
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fold_chains");
        std::fs::create_dir_all(&dir).expect("tmp dir");
        let stem = name.trim_end_matches(".onnx");
        std::fs::write(dir.join(format!("{stem}.orig.onnx")), m.encode_to_vec()).expect("write");
        std::fs::write(dir.join(format!("{stem}.folded.onnx")), &folded).expect("write");
        let shapes = input_shapes(m);
        let original = tract_outputs(&m.encode_to_vec(), &shapes);
        let after = tract_outputs(&folded, &shapes);
        assert_eq!(original, after, "{name}: outputs changed");
        if name.ends_with(".onnx") {
            // The fixtures slice constant tables: the slices fold too.
            assert!(!ops.iter().any(|o| o == "Slice"), "{name}: {ops:?}");
        }
        if name == "synthetic_chain" {
            // Only the Slice of the graph input stays; its parameters are constants: x[:, 2:6, 1:6].
            assert_eq!(ops, ["Slice"]);
            assert_eq!(after[0].0, [2, 4, 5]);
        }
    }
}
