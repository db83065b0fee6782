//! Layer: passes (`fold`), end to end through both formats; issue 43's fold rows.
//!
//! Every model of `tests/data/fold_ops/` is one op over constants (ONNX: comparisons, logic,
//! `Where`, `Min`/`Max`, `Neg`/`Abs`, `Mod` with and without `fmod`, `Expand`, `Trilu`,
//! `ReduceProd`/`ReduceSum`, `Size`, float `Add`/`Sub`/`Mul`/`Div`/`Min`/`Max`/comparisons,
//! `Floor`/`Ceil`/`Sqrt`/`Reciprocal`/`Round`, `Clip`, float `Range`, `Cast` between integers
//! and floats, exact `Pow`, `Transpose`; IR: `FloorMod`, `Mod`, comparisons, logic, `Select`,
//! `Broadcast` numpy and bidirectional, `ReduceProd`/`ReduceSum`, `Convert`, float arithmetic,
//! `Floor`/`Ceiling`/`Sqrt`/`Power`/`Transpose`). `fold` + `cleanup` must
//! leave one constant, equal in type, shape and every element to what ONNX Runtime / OpenVINO
//! CPU computed for the same op (`expected.json`, written by `tools/gen_fold_ops.py`).

use std::path::Path;

use slice_opt::ir::{DType, NodeKind, Tensor};
use slice_opt::pipeline::{PassKind, Pipeline};
use slice_opt::Model;

mod common;
use common::fixture_dtype as dtype;

/// The elements of a float tensor as f64 bit patterns of their value (f32 widened exactly),
/// so that `-0.0` and `0.0` differ.
fn floats(t: &Tensor) -> Vec<u64> {
    let raw = t.raw().expect("raw data");
    match t.dtype {
        DType::F32 => raw
            .chunks_exact(4)
            .map(|b| (f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64).to_bits())
            .collect(),
        _ => raw
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")).to_bits())
            .collect(),
    }
}

/// The constant feeding the model's one output after `fold` and `cleanup`, and how many op
/// nodes are left.
fn folded(path: &Path) -> (Tensor, usize) {
    let mut model = Model::load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Pipeline::with_passes(vec![PassKind::Fold, PassKind::Cleanup])
        .run(&mut model)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let g = model.graph();
    let out =
        g.g.node_indices()
            .find(|&ix| g.node(ix).kind == NodeKind::Output || g.node(ix).op_type == "Result")
            .expect("an output (ONNX) or a Result (IR)");
    let src = g.input(out, 0).expect("the output is fed");
    let t = g
        .constant_at(src)
        .unwrap_or_else(|| panic!("{}: the output is not a constant", path.display()))
        .clone();
    let ops =
        g.g.node_weights()
            .filter(|n| n.kind == NodeKind::Op && n.op_type != "Result")
            .count();
    (t, ops)
}

#[test]
fn every_case_folds_to_the_runtime_value() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fold_ops");
    let text = std::fs::read_to_string(dir.join("expected.json")).expect("expected.json");
    let expected: serde_json::Value = serde_json::from_str(&text).expect("json");
    let cases = expected.as_object().expect("an object");
    assert!(cases.len() >= 85, "{} cases", cases.len());
    let mut failures = Vec::new();
    for (file, want) in cases {
        let (t, ops) = folded(&dir.join(file));
        let want_type = dtype(want["dtype"].as_str().expect("dtype"));
        let want_shape: Vec<u64> = want["shape"]
            .as_array()
            .expect("shape")
            .iter()
            .map(|d| d.as_u64().expect("dim"))
            .collect();
        let values = want["values"].as_array().expect("values");
        let float = matches!(want_type, DType::F32 | DType::F64);
        let same_values = if float {
            // The text is Python's repr of the value as an f64 (exact for an f32 value).
            let want: Vec<u64> = values
                .iter()
                .map(|v| {
                    let x: f64 = v.as_str().expect("float text").parse().expect("float");
                    x.to_bits()
                })
                .collect();
            t.dtype == want_type && floats(&t) == want
        } else {
            let want: Vec<i64> = values.iter().map(|v| v.as_i64().expect("int")).collect();
            t.to_i64_vec() == Some(want)
        };
        if ops != 0 || t.dtype != want_type || t.shape != want_shape || !same_values {
            failures.push(format!(
                "{file}: {ops} ops left; got {:?} {:?} {:?}, want {want}",
                t.dtype,
                t.shape,
                if matches!(t.dtype, DType::F32 | DType::F64) {
                    format!(
                        "{:?}",
                        floats(&t)
                            .into_iter()
                            .map(f64::from_bits)
                            .collect::<Vec<_>>()
                    )
                } else {
                    format!("{:?}", t.to_i64_vec())
                }
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
