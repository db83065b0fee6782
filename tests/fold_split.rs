//! Layer: passes (`fold`), ONNX; issue 43 acceptance 1 and issue 42 pattern G: a float-to-integer
//! `Cast` of `-inf` (`Log(0)`, as T5's relative-position buckets take it) is computed differently
//! by the runtimes, so `fold` leaves it; the `Where` after it discards those elements, so what the
//! `Where` gives is the same in every runtime, and that folds.
//!
//! `tests/data/fold_split/expected.json` (written by `tools/gen_fold_split.py`) holds each
//! model's output `v` in ONNX Runtime and OpenVINO (its CPU kernels too, fed at run time).

use std::path::{Path, PathBuf};

use slice_opt::ir::{DType, NodeKind, Tensor};
use slice_opt::pipeline::Pipeline;
use slice_opt::Model;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fold_split")
}

fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(dir().join("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("json")
}

fn ints(v: &serde_json::Value) -> Vec<i64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|x| x.as_i64().expect("an integer"))
        .collect()
}

/// What feeds the output `v` after the default passes, as a constant (`None`: not folded), and
/// the op types left in the graph.
fn folded(name: &str) -> (Option<Tensor>, Vec<String>) {
    let path = dir().join(name);
    let mut model = Model::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Pipeline::default()
        .run(&mut model)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let g = model.graph();
    let out =
        g.g.node_indices()
            .find(|&ix| g.node(ix).kind == NodeKind::Output)
            .expect("an output");
    let src = g.input(out, 0).expect("the output is fed");
    let ops =
        g.g.node_indices()
            .filter(|&ix| g.node(ix).kind == NodeKind::Op)
            .map(|ix| g.node(ix).op_type.to_string())
            .collect();
    (g.constant_at(src).cloned(), ops)
}

#[test]
fn the_runtimes_differ_on_the_cast_of_minus_infinity() {
    // The fixture still says what the tests below rely on.
    let e = expected();
    let c = &e["cast_only"];
    assert_ne!(ints(&c["fed_onnxruntime"]), ints(&c["fed_openvino"]));
    let b = &e["bucket"];
    for k in ["onnxruntime", "openvino", "fed_onnxruntime", "fed_openvino"] {
        assert_eq!(ints(&b[k]), ints(&b["onnxruntime"]), "{k}");
    }
}

#[test]
fn a_cast_the_runtimes_compute_differently_is_not_folded() {
    let (v, ops) = folded("cast_only.onnx");
    assert!(
        v.is_none(),
        "v folded to {v:?}: one runtime's answer written"
    );
    assert!(ops.iter().any(|o| o == "Cast"), "{ops:?}");
}

#[test]
fn a_where_that_discards_the_split_elements_folds_to_the_runtimes_value() {
    let (v, ops) = folded("bucket.onnx");
    let v = v.unwrap_or_else(|| panic!("v not folded; left: {ops:?}"));
    assert_eq!(v.dtype, DType::I64);
    assert_eq!(v.shape, vec![6]);
    let got: Vec<i64> = v
        .raw()
        .expect("raw")
        .chunks_exact(8)
        .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    assert_eq!(got, ints(&expected()["bucket"]["onnxruntime"]));
    assert!(ops.is_empty(), "left: {ops:?}");
}
