//! Layer: passes (`fold` after `infer`), end to end through both formats; issue 43: values the
//! inference knows exactly on a graph whose input has a symbolic dim (a static dim inside a
//! symbolic shape, `d - d`, a dim against -1) fold to constants; a value that depends on the
//! symbolic dim, or that the runtime computes through an int32 wrap, does not.
//!
//! Every model of `tests/data/fold_known/` has one input `x: [batch, 3, 16]` and one integer
//! output `v`. `expected.json` (written by `tools/gen_fold_known.py`) holds what ONNX Runtime /
//! OpenVINO CPU computed for `v` at several batch sizes: where it is the same at every size,
//! the default pipeline (`infer,fold,cleanup`) must leave `v` a constant with that type, shape
//! and value; where it is not (or where the runtime gets it only by wrapping, `keep`), `v` must
//! not be a constant.

use std::path::Path;

use slice_opt::ir::{DType, NodeKind, Tensor};
use slice_opt::pipeline::{PassKind, Pipeline};
use slice_opt::Model;

mod common;
use common::fixture_dtype as dtype;

/// The elements of an integer or boolean tensor, as i64.
fn ints(t: &Tensor) -> Vec<i64> {
    let raw = t.raw().expect("raw data");
    match t.dtype {
        DType::I64 => raw
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect(),
        DType::I32 => raw
            .chunks_exact(4)
            .map(|b| i64::from(i32::from_le_bytes(b.try_into().expect("4 bytes"))))
            .collect(),
        DType::Bool => raw.iter().map(|&b| i64::from(b)).collect(),
        other => panic!("{other:?}"),
    }
}

/// What feeds the output `v` after `passes`: a constant, or `None`.
fn output_constant(path: &Path, passes: Pipeline) -> Option<Tensor> {
    let mut model = Model::load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    passes
        .run(&mut model)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let g = model.graph();
    let out =
        g.g.node_indices()
            .find(|&ix| g.node(ix).kind == NodeKind::Output || g.node(ix).op_type == "Result")
            .expect("an output (ONNX) or a Result (IR)");
    let src = g.input(out, 0).expect("the output is fed");
    g.constant_at(src).cloned()
}

fn cases() -> (
    std::path::PathBuf,
    serde_json::Map<String, serde_json::Value>,
) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fold_known");
    let text = std::fs::read_to_string(dir.join("expected.json")).expect("expected.json");
    let expected: serde_json::Value = serde_json::from_str(&text).expect("json");
    let cases = expected.as_object().expect("an object").clone();
    (dir, cases)
}

#[test]
fn known_values_fold_to_the_runtime_value_and_the_rest_stays() {
    let (dir, cases) = cases();
    assert!(cases.len() >= 11, "{} cases", cases.len());
    let mut failures = Vec::new();
    let (mut folds, mut kept) = (0, 0);
    for (file, want) in &cases {
        let got = output_constant(&dir.join(file), Pipeline::new());
        let keep = !want["folds"].as_bool().expect("folds") || want.get("keep").is_some();
        if keep {
            kept += 1;
            if let Some(t) = got {
                failures.push(format!("{file}: folded to {:?}, must stay", ints(&t)));
            }
            continue;
        }
        folds += 1;
        let Some(t) = got else {
            failures.push(format!("{file}: not folded"));
            continue;
        };
        let want_type = dtype(want["dtype"].as_str().expect("dtype"));
        let want_shape: Vec<u64> = want["shape"]
            .as_array()
            .expect("shape")
            .iter()
            .map(|d| d.as_u64().expect("dim"))
            .collect();
        let want_values: Vec<i64> = want["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(|v| v.as_i64().expect("int"))
            .collect();
        if t.dtype != want_type || t.shape != want_shape || ints(&t) != want_values {
            failures.push(format!(
                "{file}: {:?} {:?} {:?}, runtime {want_type:?} {want_shape:?} {want_values:?}",
                t.dtype,
                t.shape,
                ints(&t)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(folds >= 8 && kept >= 3, "{folds} folded, {kept} kept");
}

/// The int32 case: the value the facts compute without the wrap differs from the runtime's, so
/// folding it would be wrong (the fixture records both).
#[test]
fn the_wrapping_case_is_a_real_trap() {
    let (_, cases) = cases();
    let w = &cases["int32_wrap.onnx"];
    assert_ne!(w["values"], w["unwrapped_value"]);
}

/// Without `infer` before it (`--passes fold`), `fold` takes values from facts of its own only
/// on an ONNX graph whose inputs are pinned: the symbolic graphs here keep their shape
/// arithmetic. (An IR graph has no input nodes of that kind: there the gate never applied.)
#[test]
fn fold_alone_keeps_the_symbolic_onnx_graph() {
    let (dir, _) = cases();
    for file in ["gather_static_dim.onnx", "half_last_dim.onnx"] {
        let got = output_constant(
            &dir.join(file),
            Pipeline::with_passes(vec![PassKind::Fold, PassKind::Cleanup]),
        );
        assert!(got.is_none(), "{file}: folded without infer");
    }
}

/// The elements of an i64 tensor.
fn i64s(t: &Tensor) -> Vec<i64> {
    assert_eq!(t.dtype, DType::I64, "a Reshape target");
    ints(t)
}

/// A `Reshape` whose target is computed from its input's shape (`reshape(x,
/// concat([shape(x)[:1], [-1]]))`) reads a constant target after the default passes when the
/// inference knows every output dim but one, and the `Shape`/`Slice`/`Concat` in front of it
/// go; the shape that target gives (ONNX Reshape's rule: `-1` is the element count over the
/// rest) is ONNX Runtime's output shape at every size (`reshapes.json`). With two unknown dims
/// the target stays computed.
#[test]
fn a_computed_reshape_target_becomes_the_constant_the_output_shape_gives() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fold_known");
    let text = std::fs::read_to_string(dir.join("reshapes.json")).expect("reshapes.json");
    let cases: serde_json::Value = serde_json::from_str(&text).expect("json");
    let cases = cases.as_object().expect("an object");
    assert_eq!(cases.len(), 2);
    for (file, want) in cases {
        let path = dir.join(file);
        let mut model = Model::load(&path).expect("load");
        Pipeline::new().run(&mut model).expect("passes");
        let g = model.graph();
        let reshape =
            g.g.node_indices()
                .find(|&ix| g.node(ix).op_type == "Reshape")
                .expect("the Reshape stays");
        let target = g.input(reshape, 1).and_then(|o| g.constant_at(o));
        let slices = g.g.node_weights().filter(|n| n.op_type == "Slice").count();
        if !want["folds"].as_bool().expect("folds") {
            assert!(target.is_none(), "{file}: target made constant");
            assert_eq!(slices, 1, "{file}");
            continue;
        }
        let t = i64s(target.unwrap_or_else(|| panic!("{file}: target not constant")));
        assert_eq!(slices, 0, "{file}: the Slice of the Shape stays");
        for (size, s) in want["shapes"].as_object().expect("shapes") {
            let input: Vec<i64> = s["input"]
                .as_array()
                .expect("input")
                .iter()
                .map(|d| d.as_i64().expect("dim"))
                .collect();
            let output: Vec<i64> = s["output"]
                .as_array()
                .expect("output")
                .iter()
                .map(|d| d.as_i64().expect("dim"))
                .collect();
            let count: i64 = input.iter().product();
            let rest: i64 = t.iter().filter(|&&d| d != -1).product();
            let got: Vec<i64> = t
                .iter()
                .map(|&d| if d == -1 { count / rest } else { d })
                .collect();
            assert!(t.iter().all(|&d| d > 0 || d == -1), "{file}: {t:?}");
            assert_eq!(got, output, "{file} at size {size}: target {t:?}");
        }
    }
}
