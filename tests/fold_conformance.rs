//! Issue 5, acceptance 1: every conformance case built as a one-node ONNX model with constant
//! data folds to one constant whose values are the oracle's selected indices (ONNX Slice against
//! `expected_onnx`; TensorFlow-style custom-domain StridedSlice against `expected_tf`), and the
//! folded Slice models give the same result in tract-onnx as the unfolded ones. IR Slice-8 and
//! StridedSlice-1 one-op models fold to `expected_ov` (or `expected_ov_alt` where the case has
//! one). No pins.

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

#[test]
fn onnx_slice_cases_fold_to_the_oracle() {
    let mut t = Tally::default();
    for c in &load_cases("slice.jsonl.gz") {
        let got = fold(&onnx_slice_model(c)).map(|(_, s, v)| (s, v));
        t.add(
            c["id"].as_str().expect("id"),
            &accepted(c, "expected_onnx"),
            got,
        );
    }
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
        if expected(&c["expected_onnx"]).is_none() {
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
