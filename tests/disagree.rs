//! Layer: semantics (`disagree`), passes and `check`, end to end.
//!
//! Where the runtimes of ONNX Slice disagree on a node's result, no pass writes one of the answers
//! (issue 42, pattern G).
//!
//! - The classifier (`semantics::disagree`) flags exactly the conformance cases whose raw
//!   runtime answers differ, and each reading it gives is the raw answer of the runtimes it
//!   names (ONNX Runtime, the ONNX reference evaluator, OpenVINO / the spec).
//! - Acceptance 3, per class (ONNX Runtime's `INT32_MAX`/`INT64_MAX` reverse end; the ONNX
//!   reference evaluator's reverse start below `-dim`; both at once; a shape value sliced so):
//!   the default passes leave the Slice, `fold` reports why, the dim written holds for both
//!   readings (bounds containing ONNX Runtime's and the other reading's sizes, taken from the
//!   runtimes' outputs in `tests/data/disagree/*.io.npz`, made by `tools/gen_disagree.py`), and
//!   `check` gives one warning on the node naming both readings. ONNX Runtime's outputs after
//!   the default passes are compared by `tools/gen_disagree.py --check` (CI); here, through
//!   tract where tract computes what ONNX Runtime does on the original model.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use common::*;
use ndarray_npy::NpzReader;
use slice_opt::passes::infer;
use slice_opt::semantics::disagree::{self, SplitClass};
use slice_opt::semantics::{gather, output_shape, Clamp, Dim};
use slice_opt::{Model, Pipeline};

fn raw(c: &serde_json::Value, key: &str) -> Option<(Vec<u64>, Vec<u64>)> {
    expected(&c[key])
}

#[test]
fn classifier_flags_exactly_the_cases_where_the_runtimes_differ() {
    let mut counts: HashMap<Vec<SplitClass>, usize> = HashMap::new();
    let (mut differ, mut flagged) = (0, 0);
    for c in &load_cases("slice.jsonl.gz") {
        let id = c["id"].as_str().expect("id");
        let dims = uints(&c["input_shape"]);
        let plan = onnx_case_plan(c);
        let differs = onnx_runtimes_differ(c);
        differ += usize::from(differs);
        let Ok(plan) = plan else {
            assert!(
                !differs,
                "{id}: an invalid plan where the runtimes give results"
            );
            continue;
        };
        let known: Vec<Dim> = dims.iter().map(|&d| Dim::known(d as i64)).collect();
        let split = disagree::onnx_slice(&plan, &known);
        assert_eq!(split.is_some(), differs, "{id}: {plan} on {dims:?}");
        let Some(split) = split else { continue };
        flagged += 1;
        let mut classes: Vec<SplitClass> = split.entries.iter().map(|e| e.class).collect();
        classes.sort();
        classes.dedup();
        *counts.entry(classes).or_default() += 1;
        // Each reading is the raw answer of the runtimes it names.
        for (i, r) in split.readings.iter().enumerate() {
            let idx = gather(&r.plan, &dims, r.clamp, 1 << 24).expect("a valid reading");
            let shape = output_shape(&r.plan, &dims, r.clamp).expect("a valid reading");
            let got = Some((shape, idx));
            if i == 0 {
                assert_eq!(
                    got,
                    raw(c, "ov_cpu"),
                    "{id}: the spec's reading vs OpenVINO"
                );
                assert_eq!(got, raw(c, "expected_onnx"), "{id}: the spec's reading");
            }
            if r.runtimes.contains("ONNX Runtime") {
                assert_eq!(got, raw(c, "ort"), "{id}: reading {}", r.runtimes);
            }
            if r.runtimes.contains("reference") {
                assert_eq!(got, raw(c, "onnx_ref"), "{id}: reading {}", r.runtimes);
            }
            if i > 0 {
                assert_eq!(r.clamp == Clamp::Tf, r.runtimes.contains("reference"));
            }
        }
    }
    println!(
        "ONNX Slice: raw runtime answers differ in {differ} cases, flagged {flagged}: {counts:?}"
    );
    assert_eq!(differ, flagged);
    // Counted by tools/runtime_splits.py from the raw answers.
    assert_eq!(counts[&vec![SplitClass::OrtReverseMaxEnd]], 33);
    assert_eq!(counts[&vec![SplitClass::RefReverseStartBelowDim]], 131);
    assert_eq!(
        counts[&vec![
            SplitClass::OrtReverseMaxEnd,
            SplitClass::RefReverseStartBelowDim
        ]],
        3
    );
}

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/disagree")
}

/// The shape of array `name` in `<model>.io.npz` (`None` when absent).
fn npz_shape(model: &str, name: &str) -> Option<Vec<usize>> {
    let f = std::fs::File::open(data_dir().join(format!("{model}.io.npz"))).expect("npz");
    let mut npz = NpzReader::new(f).expect("npz reader");
    let names = npz.names().expect("names");
    if !names
        .iter()
        .any(|n| n == name || *n == format!("{name}.npy"))
    {
        return None;
    }
    if let Ok(a) = npz.by_name::<ndarray::OwnedRepr<i32>, ndarray::IxDyn>(name) {
        return Some(a.shape().to_vec());
    }
    let a: ndarray::ArrayD<f32> = npz.by_name(name).expect("int32 or float32");
    Some(a.shape().to_vec())
}

/// What one model of `tests/data/disagree` must show.
struct Case {
    name: &'static str,
    /// Output axis of the Slice the runtimes disagree on, and the two sizes there: ONNX
    /// Runtime's, and the other reading's (the spec's, or the ONNX reference evaluator's).
    axis: usize,
    sizes: (usize, usize),
    /// Substrings the warning must hold (the runtimes named, the shapes given).
    warning: &'static [&'static str],
}

fn load(name: &str) -> Model {
    Model::load(&data_dir().join(format!("{name}.onnx"))).expect("load")
}

fn slice_node(model: &Model) -> petgraph::stable_graph::NodeIndex {
    let g = model.graph();
    g.g.node_indices()
        .find(|&ix| g.node(ix).op_type == "Slice")
        .expect("a Slice")
}

/// The sizes ONNX Runtime and the other runtimes give, from the runtimes' own outputs.
fn cases() -> Vec<Case> {
    // ONNX Runtime's size on the axis: its output's; the other reading's: the ONNX reference
    // evaluator's output where it differs from ONNX Runtime, else the spec's (computed by hand
    // in each comment).
    let out = |m: &str, axis: usize| npz_shape(m, "out_y").expect("ORT output")[axis];
    let reference = |m: &str, axis: usize| npz_shape(m, "ref_y").expect("reference output")[axis];
    vec![
        // x[2:INT64_MAX:-1] on 4: ORT 3, spec and reference 0.
        Case {
            name: "ort_max_end_const",
            axis: 0,
            sizes: (
                out("ort_max_end_const", 0),
                reference("ort_max_end_const", 0),
            ),
            warning: &[
                "ONNX Runtime gives shape [3, 10]",
                "the ONNX spec, the ONNX reference evaluator and OpenVINO give shape [0, 10]",
                "INT64_MAX",
            ],
        },
        // x[2:INT32_MAX:-1] on n (= 3 in the stored run).
        Case {
            name: "ort_max_end_input",
            axis: 0,
            sizes: (
                out("ort_max_end_input", 0),
                reference("ort_max_end_input", 0),
            ),
            warning: &[
                "the ONNX spec, the ONNX reference evaluator and OpenVINO follow the spec's",
                "ONNX Runtime reads such an end as running through element 0",
                "INT32_MAX",
            ],
        },
        // x[-4:-4:-1] on 3: ORT and spec 1, reference 0.
        Case {
            name: "ref_below_dim_const",
            axis: 0,
            sizes: (
                out("ref_below_dim_const", 0),
                reference("ref_below_dim_const", 0),
            ),
            warning: &[
                "the ONNX spec, ONNX Runtime and OpenVINO give shape [1, 5]",
                "the ONNX reference evaluator gives shape [0, 5]",
            ],
        },
        Case {
            name: "ref_below_dim_input",
            axis: 0,
            sizes: (
                out("ref_below_dim_input", 0),
                reference("ref_below_dim_input", 0),
            ),
            warning: &[
                "the ONNX spec, ONNX Runtime and OpenVINO follow the spec's clamping",
                "the ONNX reference evaluator slices as numpy does",
                "below -dim",
            ],
        },
        // sl-1-00118: three readings; axis 0: ORT 1, spec 0, reference 0.
        Case {
            name: "both_const",
            axis: 0,
            sizes: (out("both_const", 0), reference("both_const", 0)),
            warning: &[
                "the ONNX spec and OpenVINO give shape [0, 1, 4, 1]",
                "ONNX Runtime gives shape [1, 1, 4, 1]",
                "the ONNX reference evaluator gives shape [0, 0, 4, 1]",
            ],
        },
        // Shape(x)[-1:INT64_MAX:-1] of a rank-3 x: ORT reverses the 3 dims (its Reshape output
        // has rank 3), the spec selects nothing (end clamps to 2, the start is 2: 0 elements).
        Case {
            name: "shape_chain",
            axis: 0,
            sizes: (
                npz_shape("shape_chain", "out_y").expect("ORT output").len(),
                0,
            ),
            warning: &["ONNX Runtime gives shape [3]", "OpenVINO give shape [0]"],
        },
    ]
}

#[test]
fn each_class_is_left_unfolded_with_a_dim_for_both_readings_and_a_warning() {
    for case in cases() {
        let name = case.name;
        let (ort, other) = case.sizes;
        assert_ne!(ort, other, "{name}: the runtimes' outputs differ");
        // The dim inferred holds for both readings: its bounds contain both sizes, and it is
        // not one of them.
        let model = load(name);
        let ix = slice_node(&model);
        let (_, dims) = infer::infer_node(&model, ix)
            .expect("a slice")
            .expect("inferred");
        let d = &dims[case.axis];
        let (lo, hi) = d.bounds();
        assert!(d.as_known().is_none(), "{name}: {d} is one reading");
        let (lo, hi) = (lo.unwrap_or(0), hi.unwrap_or(i64::MAX));
        for v in [ort, other] {
            assert!(
                lo <= v as i64 && v as i64 <= hi,
                "{name}: {d} does not hold for {v}"
            );
        }
        // check: one warning, on the Slice, naming both readings.
        let report = slice_opt::check::check(&model);
        let warned: Vec<_> = report
            .rows
            .iter()
            .filter(|r| !r.warning.is_empty())
            .collect();
        assert_eq!(warned.len(), 1, "{name}: {:?}", report.rows);
        assert_eq!(warned[0].node, "the_slice");
        for w in case.warning {
            assert!(
                warned[0].warning.contains(w),
                "{name}: {w:?} not in {}",
                warned[0].warning
            );
        }
        println!(
            "{name}: ONNX Runtime {ort}, other {other}; inferred {d}; check: {}",
            warned[0].warning
        );
        // The default passes: the Slice stays, with its parameters; fold says why.
        let mut model = load(name);
        let before = slice_params(&model);
        let report = Pipeline::new().run(&mut model).expect("default passes");
        assert_eq!(slice_params(&model), before, "{name}: the Slice changed");
        let said = |kind: &str| {
            report.passes.iter().any(|p| {
                let list = if kind == "skipped" {
                    &p.skipped
                } else {
                    &p.warnings
                };
                list.iter()
                    .any(|c| c.node == "the_slice" && c.what.starts_with("runtimes disagree"))
            })
        };
        if name.ends_with("_const") {
            assert!(said("skipped"), "{name}: fold does not say why: {report:?}");
        }
        assert!(said("warnings"), "{name}: infer does not warn: {report:?}");
    }
}

/// The Slice of the model, with the constant values of its inputs.
fn slice_params(model: &Model) -> Vec<Option<Vec<i64>>> {
    let g = model.graph();
    let ix = slice_node(model);
    g.inputs(ix)
        .iter()
        .skip(1)
        .map(|o| {
            o.and_then(|o| g.constant_at(o))
                .and_then(|t| t.to_i64_vec())
        })
        .collect()
}

/// ONNX Runtime's outputs unchanged: tract runs the model before and after the default passes
/// where it computes, on the original, what ONNX Runtime does (else `tools/gen_disagree.py
/// --check` is the judge, in CI).
/// One output: shape and values.
#[cfg(feature = "verify")]
type Output = (Vec<usize>, Vec<f64>);

#[cfg(feature = "verify")]
#[test]
fn outputs_after_the_default_passes_in_tract_where_tract_agrees_with_onnx_runtime() {
    use tract_onnx::prelude::*;
    let run = |bytes: &[u8], name: &str| -> std::result::Result<Vec<Output>, String> {
        let f = std::fs::File::open(data_dir().join(format!("{name}.io.npz"))).expect("npz");
        let mut npz = NpzReader::new(f).expect("npz");
        let mut model = tract_onnx::onnx()
            .model_for_read(&mut &bytes[..])
            .map_err(|e| format!("{e:#}"))?;
        let mut inputs: TVec<TValue> = tvec![];
        if let Ok(a) = npz.by_name::<ndarray::OwnedRepr<i32>, ndarray::IxDyn>("in_x") {
            let t: Tensor = a.into();
            model = model
                .with_input_fact(0, InferenceFact::dt_shape(i32::datum_type(), t.shape()))
                .map_err(|e| format!("{e:#}"))?;
            inputs.push(t.into());
        } else if let Ok(a) = npz.by_name::<ndarray::OwnedRepr<f32>, ndarray::IxDyn>("in_x") {
            let t: Tensor = a.into();
            model = model
                .with_input_fact(0, InferenceFact::dt_shape(f32::datum_type(), t.shape()))
                .map_err(|e| format!("{e:#}"))?;
            inputs.push(t.into());
        }
        let out = model
            .into_optimized()
            .and_then(|m| m.into_runnable())
            .and_then(|m| m.run(inputs))
            .map_err(|e| format!("{e:#}"))?;
        out.iter()
            .map(|t| {
                let t = t.clone().into_tensor();
                let shape = t.shape().to_vec();
                let t = t.cast_to::<f64>().map_err(|e| format!("{e:#}"))?;
                let v = t
                    .to_plain_array_view::<f64>()
                    .map_err(|e| format!("{e:#}"))?
                    .iter()
                    .copied()
                    .collect();
                Ok((shape, v))
            })
            .collect()
    };
    let ort = |name: &str| -> (Vec<usize>, Vec<f64>) {
        let f = std::fs::File::open(data_dir().join(format!("{name}.io.npz"))).expect("npz");
        let mut npz = NpzReader::new(f).expect("npz");
        if let Ok(a) = npz.by_name::<ndarray::OwnedRepr<i32>, ndarray::IxDyn>("out_y") {
            return (a.shape().to_vec(), a.iter().map(|&v| v as f64).collect());
        }
        let a: ndarray::ArrayD<f32> = npz.by_name("out_y").expect("out_y");
        (a.shape().to_vec(), a.iter().map(|&v| v as f64).collect())
    };
    let (mut compared, mut tract_differs) = (Vec::new(), Vec::new());
    for case in cases() {
        let name = case.name;
        let original = std::fs::read(data_dir().join(format!("{name}.onnx"))).expect("model");
        let want = ort(name);
        match run(&original, name) {
            Ok(o) if o.first() == Some(&want) => {
                let after = default_passes(&original);
                let got = run(&after, name).expect("tract runs the transformed model");
                assert_eq!(got.first(), Some(&want), "{name}: output changed");
                compared.push(name);
            }
            other => tract_differs.push(format!(
                "{name}: tract gives {:?}, ONNX Runtime {:?}",
                other.map(|o| o.first().map(|(s, _)| s.clone())),
                want.0
            )),
        }
    }
    println!(
        "tract agrees with ONNX Runtime on {compared:?} (outputs unchanged after the default \
         passes); differs on {} (judged by tools/gen_disagree.py --check):",
        tract_differs.len()
    );
    for line in &tract_differs {
        println!("  {line}");
    }
}

/// `lower` never writes an ONNX Slice that the runtimes read differently: a TensorFlow
/// StridedSlice reverse range ending at `INT32_MAX`/`INT64_MAX` (empty: the end clamps to
/// `dim - 1`) on an axis of unknown size becomes `0:0`, not a Slice with that end, which ONNX
/// Runtime would read as running through element 0. Every conformance case, on symbolic dims.
#[test]
fn lower_writes_no_slice_the_runtimes_read_differently() {
    use slice_opt::pipeline::PassKind;
    let (mut lowered, mut reverse_max) = (0, 0);
    for c in load_cases("strided_slice.jsonl.gz")
        .iter()
        .filter(|c| c["ov_masks"].is_null() && expected(&c["expected_tf"]).is_some())
    {
        let strides = ints(&c["strides"]);
        let ends = ints(&c["end"]);
        reverse_max += usize::from(
            strides
                .iter()
                .zip(&ends)
                .any(|(&s, &e)| s < 0 && (e == i64::MAX || e == i32::MAX as i64)),
        );
        let m = tf_strided_slice_model_with_input(c, true);
        let bytes = bytes::Bytes::from(prost::Message::encode_to_vec(&m));
        let onnx = slice_opt::formats::onnx::OnnxModel::from_bytes("case.onnx".as_ref(), bytes)
            .expect("load");
        let mut model = Model::Onnx(onnx);
        Pipeline::with_passes(vec![PassKind::Lower, PassKind::Cleanup])
            .run(&mut model)
            .expect("lower");
        let g = model.graph();
        for ix in
            g.g.node_indices()
                .filter(|&ix| g.node(ix).op_type == "Slice")
        {
            lowered += 1;
            let param = |port: usize| {
                g.input(ix, port)
                    .and_then(|o| g.constant_at(o))
                    .and_then(|t| t.to_i64_vec())
            };
            let (Some(ends), Some(steps)) = (param(2), param(4)) else {
                continue;
            };
            for (e, s) in ends.iter().zip(&steps) {
                assert!(
                    !(*s < 0 && (*e == i64::MAX || *e == i32::MAX as i64)),
                    "{}: lowered to a Slice with end {e} and step {s}",
                    c["id"]
                );
            }
        }
    }
    println!(
        "lower on symbolic dims: {lowered} Slices written, none with a reverse INT32_MAX/INT64_MAX \
         end ({reverse_max} cases have one in the StridedSlice)"
    );
    assert!(reverse_max > 0 && lowered > 1000);
}
