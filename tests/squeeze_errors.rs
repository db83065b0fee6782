//! Layer: pipeline (infer), on ONNX and OpenVINO IR.
//!
//! No bound is taken from a `Squeeze` (issue 42): the ONNX specification makes squeezing an
//! axis whose size is not 1 an error ("If an axis is selected with shape entry not equal to one,
//! an error is raised", Squeeze-1/11/13/21), so under it every successful run of the Keras GRU
//! exports' `y[:, -1]` (`Squeeze(x[:, -1:], axes=[1])`) has `seq >= 1`, and their dims
//! `batch*min(seq, 1)` and `0..1` would be `batch` and `1` (ONNX Runtime's). A bound is sound
//! only where every runtime reading the format raises that error, and OpenVINO does not (its
//! Squeeze-1 specification, which its ONNX front end maps ONNX `Squeeze` to: "Specified
//! dimension should be equal to 1, otherwise it will be ignored and copied as is", an error only
//! before release 2024.3; a dynamic dim that might be 1 is taken as squeezed):
//! `tools/gen_squeeze_errors.py` (stored in `tests/data/squeeze_errors/squeeze_errors.expected.json`,
//! onnxruntime 1.32.0, openvino 2026.4.1) ran `squeeze_tail{,11}.onnx` (`t = x[:, -1:]`,
//! `y = Squeeze(t, axes=[1])`, `x: float[B, S, 3]`) at `B = 2`: at `S = 0` ONNX Runtime raises,
//! OpenVINO runs the whole model, from the ONNX file and from its IR, `t` with 0 rows (`y`
//! `[0, 3]` compiled with the file's dynamic shapes; `[2, 0, 3]`, the axis left in place, after
//! `model.reshape` to the static shape, which also runs `Squeeze(x, axes=[1])` straight on the
//! input at `S = 0, 2, 3`).
//!
//! So the dims written for `t` must hold at `S = 0` too: every size a runtime ran the whole
//! model at is checked against what that runtime gave.

use std::collections::HashMap;
use std::path::PathBuf;

use slice_opt::ir::DeclaredDim;
use slice_opt::semantics::Dim;
use slice_opt::shape::slice_node::classify;
use slice_opt::{Model, Pipeline};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/squeeze_errors")
}

fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(dir().join("squeeze_errors.expected.json")).expect("json");
    serde_json::from_str(&text).expect("json")
}

/// The dims written for the one slice of `file` after the default passes (saved and read back).
fn written_slice_dims(file: &str) -> Vec<DeclaredDim> {
    let mut m = Model::load(&dir().join(file)).expect("load");
    Pipeline::new().run(&mut m).expect("runs");
    let out = tempfile::tempdir().expect("tmp");
    let path = out.path().join(file);
    m.save(&path).expect("saves");
    let m = Model::load(&path).expect("written model loads");
    let g = m.graph();
    let slices: Vec<_> =
        g.g.node_indices()
            .filter(|&ix| classify(g, ix, m.format(), m.onnx_opset()).is_some())
            .collect();
    assert_eq!(slices.len(), 1, "{file}: one slice");
    let node = g.node(slices[0]);
    node.outputs[0].ty.shape.clone().expect("a shape written")
}

/// Whether the written dim `d` holds at the sizes `at` where a runtime gave `want`: an
/// expression evaluates to it, an interval contains it.
fn holds(d: &DeclaredDim, at: &HashMap<String, i64>, want: i64) -> bool {
    match d {
        DeclaredDim::Known(v) => i64::try_from(*v) == Ok(want),
        DeclaredDim::Param(p) => {
            let dim = Dim::parse(p, &Dim::symbol).unwrap_or_else(|| panic!("{p} parses"));
            dim.eval(at) == Some(want)
        }
        DeclaredDim::Interval(lo, hi) => {
            u64::try_from(want).is_ok_and(|w| *lo <= w && hi.is_none_or(|h| w <= h))
        }
        DeclaredDim::Unknown => true,
    }
}

/// The premise, as measured: at `S = 0` ONNX Runtime raises at the `Squeeze` and OpenVINO runs
/// the whole model, `t` with 0 rows. (If a newer OpenVINO raised here too, a bound from this
/// `Squeeze` could become sound: regenerate and revisit.)
#[test]
fn at_zero_rows_onnx_runtime_raises_and_openvino_runs() {
    let e = expected();
    for file in ["squeeze_tail.onnx", "squeeze_tail11.onnx"] {
        let rows = e["models"][file].as_array().expect("rows");
        let zero = rows.iter().find(|r| r["S"] == 0).expect("S = 0 measured");
        assert!(
            zero["onnxruntime"]["error"].is_string(),
            "{file}: ONNX Runtime raises"
        );
        for ov in ["openvino", "openvino_static"] {
            let t = &zero[ov]["shapes"]["t"];
            assert_eq!(t[1], 0, "{file}: OpenVINO ({ov}) runs, `t` with 0 rows");
        }
    }
    let input = e["models"]["squeeze_input.onnx"].as_array().expect("rows");
    for r in input.iter().filter(|r| r["S"] != 1) {
        assert!(r["onnxruntime"]["error"].is_string() && r["openvino"]["error"].is_string());
        assert!(
            r["openvino_static"]["shapes"]["y"].is_array(),
            "static: axis left in place"
        );
    }
}

/// The dims written for `t = x[:, -1:]` hold at every size a runtime ran the whole model at,
/// `S = 0` included (OpenVINO's 0 rows): no `S >= 1` is taken from the `Squeeze` after it.
#[test]
fn slice_dims_before_a_squeeze_hold_where_openvino_runs_it() {
    let e = expected();
    let mut checked_zero = 0;
    for file in [
        "squeeze_tail.onnx",
        "squeeze_tail11.onnx",
        "squeeze_tail.xml",
    ] {
        let dims = written_slice_dims(file);
        let rows = e["models"][file].as_array().expect("rows");
        for r in rows {
            let at: HashMap<String, i64> = ["B", "S"]
                .iter()
                .map(|k| (k.to_string(), r[*k].as_i64().expect("size")))
                .collect();
            for runtime in ["onnxruntime", "openvino", "openvino_static"] {
                let Some(t) = r[runtime]["shapes"]["t"].as_array() else {
                    continue;
                };
                assert_eq!(t.len(), dims.len(), "{file}: rank");
                for (k, (d, w)) in dims.iter().zip(t).enumerate() {
                    let w = w.as_i64().expect("dim");
                    assert!(
                        holds(d, &at, w),
                        "{file} t dim {k} at {at:?}: ours {d}, {runtime} {w}"
                    );
                }
                if at["S"] == 0 {
                    checked_zero += 1;
                }
            }
        }
    }
    // OpenVINO, dynamic and static, on each of the three files.
    assert_eq!(checked_zero, 6);
}
