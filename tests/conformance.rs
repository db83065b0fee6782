//! Layer: semantics (decoders, `gather`, `Dim` inference).
//!
//! Every conformance case (tests/data/*.jsonl.gz, copied from the runtimes' answers) through our
//! decoders + `gather`, for the four oracles: TensorFlow StridedSlice (`expected_tf`), OpenVINO
//! StridedSlice-1 (`expected_ov`), ONNX Slice (`expected_onnx`), OpenVINO Slice-8 (`expected_ov`).
//! Shape and indices must match; an expected error must be our typed error. Shape inference through
//! `Dim` must agree with the concrete path on every valid case.
//!
//! Data policy v2 (`/work/shared/conformance/README.md`): a StridedSlice case may carry
//! `expected_ov_alt`, a second accepted OpenVINO answer (the CPU plugin vs its reference
//! evaluation on a shrink entry with begin_mask, or a compile that succeeds only sometimes). There
//! are no pins: every case must equal `expected_*` or, where present, `expected_ov_alt`.

mod common;
use common::{ints, load_cases, onnx_case_plan, opt_ints, uints};
use serde_json::Value;
use slice_opt::ir::{DType, Tensor};
use slice_opt::passes::eval;
use slice_opt::semantics::decode::{constant, OvMasks, TfMasks};
use slice_opt::semantics::{
    gather, ov_slice8, resolve_dims, strided_slice, Clamp, Dim, Flavour, SliceError,
    StridedSliceSpec,
};

const LIMIT: u64 = 1 << 24;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Error,
    Ok { shape: Vec<u64>, indices: Vec<u64> },
}

fn answer(v: &Value) -> Answer {
    if v.get("error").is_some() {
        Answer::Error
    } else {
        Answer::Ok {
            shape: uints(&v["shape"]),
            // `null` = the data knows the shape alone (see `equals`).
            indices: if v["indices"].is_null() {
                Vec::new()
            } else {
                uints(&v["indices"])
            },
        }
    }
}

/// Ours: plan → gather, and check `resolve_dims` (known dims) gives the same shape.
fn run(
    plan: Result<slice_opt::semantics::SlicePlan, SliceError>,
    dims: &[u64],
    clamp: Clamp,
) -> Answer {
    let Ok(plan) = plan else { return Answer::Error };
    match gather(&plan, dims, clamp, LIMIT) {
        Err(SliceError::TooLarge { .. }) => panic!("conformance case too large"),
        Err(_) => Answer::Error,
        Ok(indices) => {
            let sym: Vec<Dim> = dims.iter().map(|&d| Dim::known(d as i64)).collect();
            let shape: Vec<u64> = resolve_dims(&plan, &sym, clamp)
                .expect("resolve_dims accepts what gather accepts")
                .iter()
                .map(|d| d.as_known().expect("known dims give known dims") as u64)
                .collect();
            assert_eq!(
                shape.iter().product::<u64>(),
                indices.len() as u64,
                "{plan}"
            );
            folded_as_gathered(&plan, dims, clamp, &shape, &indices);
            Answer::Ok { shape, indices }
        }
    }
}

/// `fold`'s evaluation of the slice on a constant whose every element is its own flat index
/// ([`eval::slice`], which copies runs of consecutive elements): its values must be the
/// gathered indices (checked against the runtimes' answers by the caller) and its shape the
/// resolved one, for 8-, 4- and 2-byte elements.
fn folded_as_gathered(
    plan: &slice_opt::semantics::SlicePlan,
    dims: &[u64],
    clamp: Clamp,
    shape: &[u64],
    indices: &[u64],
) {
    let count: u64 = dims.iter().product();
    if count > 1 << 16 {
        return;
    }
    let arange: Vec<i64> = (0..count as i64).collect();
    let data = Tensor::from_i64(dims.to_vec(), &arange);
    for dtype in [DType::I64, DType::I32, DType::U16] {
        let t = eval::cast(&data, dtype, LIMIT * 8).expect("cast");
        let got = eval::slice(&t, plan, clamp, LIMIT * 8).expect("gather accepted it");
        assert_eq!(got.shape, shape, "{plan} {dtype:?}");
        let values: Vec<u64> = eval::cast(&got, DType::I64, LIMIT * 8)
            .expect("cast back")
            .to_i64_vec()
            .expect("integers")
            .into_iter()
            .map(|v| v as u64)
            .collect();
        assert_eq!(values, indices, "{plan} {dtype:?}");
    }
}

fn tf_masks(c: &Value) -> TfMasks {
    TfMasks {
        begin: c["begin_mask"].as_i64().expect("mask"),
        end: c["end_mask"].as_i64().expect("mask"),
        ellipsis: c["ellipsis_mask"].as_i64().expect("mask"),
        new_axis: c["new_axis_mask"].as_i64().expect("mask"),
        shrink: c["shrink_axis_mask"].as_i64().expect("mask"),
    }
}

fn strided_tf(c: &Value) -> Answer {
    let dims = uints(&c["input_shape"]);
    let spec = StridedSliceSpec::from_tf_bits(
        &ints(&c["begin"]),
        &ints(&c["end"]),
        Some(&ints(&c["strides"])),
        tf_masks(c),
    );
    run(
        strided_slice(&spec, Flavour::Tf, dims.len()),
        &dims,
        Clamp::Tf,
    )
}

fn strided_ov(c: &Value) -> Answer {
    let dims = uints(&c["input_shape"]);
    let (begin, end, strides) = (ints(&c["begin"]), ints(&c["end"]), ints(&c["strides"]));
    let lists: Vec<Vec<i64>> = if c["ov_masks"].is_null() {
        // The integer masks as OpenVINO lists of length len(begin).
        let n = begin.len();
        [
            "begin_mask",
            "end_mask",
            "ellipsis_mask",
            "new_axis_mask",
            "shrink_axis_mask",
        ]
        .iter()
        .map(|k| {
            let m = c[*k].as_i64().expect("mask");
            (0..n).map(|i| (m >> i) & 1).collect()
        })
        .collect()
    } else {
        [
            "begin_mask",
            "end_mask",
            "ellipsis_mask",
            "new_axis_mask",
            "shrink_axis_mask",
        ]
        .iter()
        .map(|k| ints(&c["ov_masks"][*k]))
        .collect()
    };
    let masks = OvMasks {
        begin: &lists[0],
        end: &lists[1],
        ellipsis: &lists[2],
        new_axis: &lists[3],
        shrink: &lists[4],
    };
    let spec = StridedSliceSpec::from_ov_lists(&begin, &end, Some(&strides), masks);
    run(
        strided_slice(&spec, Flavour::Ov, dims.len()),
        &dims,
        Clamp::Ov,
    )
}

fn slice_onnx(c: &Value) -> Answer {
    run(onnx_case_plan(c), &uints(&c["input_shape"]), Clamp::Ov)
}

fn slice_ov8(c: &Value) -> Answer {
    let dims = uints(&c["input_shape"]);
    let (axes, steps) = (
        opt_ints(&c["axes"]),
        opt_ints(&c["steps"]).map(|s| constant(&s)),
    );
    let plan = ov_slice8(
        &constant(&ints(&c["starts"])),
        &constant(&ints(&c["ends"])),
        steps.as_deref(),
        axes.as_deref(),
        dims.len(),
    );
    run(plan, &dims, Clamp::Ov)
}

fn short(a: &Answer) -> String {
    match a {
        Answer::Error => "error".into(),
        Answer::Ok { shape, indices } => {
            let head: Vec<_> = indices.iter().take(8).collect();
            format!(
                "shape {shape:?} indices {head:?}{}",
                if indices.len() > 8 { "..." } else { "" }
            )
        }
    }
}

/// Does our answer equal a runtime's expected answer? An expected answer with `indices: null`
/// (the data's "shape alone") checks the shape only.
fn equals(got: &Answer, want: &Value) -> bool {
    if want.get("error").is_none() && want["indices"].is_null() {
        return matches!(got, Answer::Ok { shape, .. } if *shape == uints(&want["shape"]));
    }
    *got == answer(want)
}

/// Every case of `file` against `key`, or against `expected_ov_alt` where the case has one (either
/// answer is accepted, policy v2). No pins: every case must match. Returns how many cases took
/// the alternative.
fn check(oracle: &str, file: &str, key: &str, ours: fn(&Value) -> Answer) -> usize {
    let cases = load_cases(file);
    let (mut pass, mut alt, mut failures) = (0usize, 0usize, Vec::new());
    for c in &cases {
        let id = c["id"].as_str().expect("id");
        let got = ours(c);
        let alt_v = c
            .get("expected_ov_alt")
            .filter(|v| !v.is_null() && key == "expected_ov");
        if equals(&got, &c[key]) {
            pass += 1;
        } else if alt_v.is_some_and(|v| equals(&got, v)) {
            pass += 1;
            alt += 1;
        } else {
            failures.push(format!(
                "{id}: ours {} / expected {}{}",
                short(&got),
                short(&answer(&c[key])),
                alt_v.map_or(String::new(), |v| format!(" / alt {}", short(&answer(v))))
            ));
        }
    }
    println!(
        "{oracle} {pass}/{} ({alt} equal to expected_ov_alt)",
        cases.len()
    );
    if std::env::var_os("CONFORMANCE_ALL").is_some() {
        for f in &failures {
            println!("FAIL {oracle} {f}");
        }
    }
    assert!(
        failures.is_empty(),
        "{oracle}: {} failures, first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    alt
}

#[test]
fn conformance_tf_strided_slice() {
    check("tf", "strided_slice.jsonl.gz", "expected_tf", strided_tf);
}

#[test]
fn conformance_ov_strided_slice() {
    check("ov_ss", "strided_slice.jsonl.gz", "expected_ov", strided_ov);
}

#[test]
fn conformance_onnx_slice() {
    check("onnx", "slice.jsonl.gz", "expected_onnx", slice_onnx);
}

#[test]
fn conformance_ov_slice8() {
    check("ov_slice8", "slice.jsonl.gz", "expected_ov", slice_ov8);
}

// ---------------------------------------------------------------------------------------------
// Named tests: one representative case per category of disagreement between the raw runtimes
// (or between a runtime and the spec prose), stating which behaviour we follow and why.
// ---------------------------------------------------------------------------------------------

fn case(file: &str, id: &str) -> Value {
    load_cases(file)
        .into_iter()
        .find(|c| c["id"] == id)
        .expect("case present")
}

/// TensorFlow vs OpenVINO, reverse slicing with a begin below `-dim`: `x[-6:-4:-1]` on (1,).
/// TensorFlow clamps begin to -1 (empty); OpenVINO clamps it to 0 (one element), as its spec's
/// prose says. Two different ops: we follow each runtime in its own flavour (`Clamp`).
#[test]
fn tf_and_ov_clamp_reverse_begin_differently() {
    let c = case("strided_slice.jsonl.gz", "ss-1-01722");
    assert_eq!(strided_tf(&c), answer(&c["expected_tf"]));
    assert_eq!(strided_ov(&c), answer(&c["expected_ov"]));
    assert_eq!(
        strided_tf(&c),
        Answer::Ok {
            shape: vec![0],
            indices: vec![]
        }
    );
    assert_eq!(
        strided_ov(&c),
        Answer::Ok {
            shape: vec![1],
            indices: vec![0]
        }
    );
}

/// An entry with both the ellipsis and the shrink bit: OpenVINO's shape inference (and
/// TensorFlow) read it as the ellipsis; OpenVINO's compiler also runs `make_slice_plan`, whose
/// main loop executes it as a shrink of the first input axis and requires `-dim <= begin < dim`
/// there (`begin = 6` on a dim of 3 here), so the model fails to compile, as does the reference
/// evaluation. We follow OpenVINO: the result has shape inference's shape, and the slice is
/// invalid where `make_slice_plan` rejects it (the plan's `check` indices).
#[test]
fn ov_compiler_checks_ellipsis_shrink_entry_as_a_shrink() {
    let c = case("strided_slice.jsonl.gz", "ss-1-00245");
    assert_eq!(answer(&c["expected_ov"]), Answer::Error);
    assert_eq!(answer(&c["ov_ref"]), Answer::Error);
    assert_ne!(answer(&c["tf"]), Answer::Error);
    assert_eq!(strided_ov(&c), Answer::Error);
    assert_eq!(strided_tf(&c), answer(&c["tf"]));
}

/// The shrink + begin_mask choice. On a spec entry with both a shrink bit and a begin_mask bit,
/// OpenVINO's CPU plugin keeps element 0 (begin_mask wins) and its reference evaluation (= its
/// constant folding) keeps `begin[i]`, as TensorFlow does; the data accepts either
/// (`expected_ov` = plugin, `expected_ov_alt` = reference). We keep `begin[i]`: it is the only
/// one rule that matches every case, because in 7 cases of this pattern the plugin's answer is
/// broken (not a lattice of input elements) and `expected_ov` is the reference's `begin[i]` with
/// no alternative (e.g. ss-1-01869 below). Here (`begin = -1` on a dim of 2, stride -1): plugin
/// element 0, reference element 1; we give `expected_ov_alt`.
#[test]
fn ov_shrink_with_begin_mask_keeps_begin() {
    let c = case("strided_slice.jsonl.gz", "ss-1-00510");
    assert_ne!(answer(&c["ov_cpu"]), answer(&c["ov_ref"]));
    assert_eq!(answer(&c["expected_ov"]), answer(&c["ov_cpu"]));
    assert_eq!(answer(&c["expected_ov_alt"]), answer(&c["ov_ref"]));
    assert_eq!(strided_ov(&c), answer(&c["expected_ov_alt"]));
    // A case of the same pattern where the plugin is broken: only `begin[i]` is accepted.
    let c = case("strided_slice.jsonl.gz", "ss-1-01869");
    assert!(c.get("expected_ov_alt").is_none_or(Value::is_null));
    assert_eq!(c["ov_cpu_sane"], Value::Bool(false));
    assert_eq!(strided_ov(&c), answer(&c["expected_ov"]));
    assert_eq!(strided_ov(&c), answer(&c["ov_ref"]));
}

/// OpenVINO StridedSlice-1 does not check a shrink index where its shape inference decodes it
/// (only where its compiler's `make_slice_plan` executes a shrink): here entry 2 shrinks an axis
/// of size 1 with `begin = -2`, and the plugin compiles and runs. As OpenVINO's spec says of
/// `begin`, out-of-bounds values are clamped: we keep element 0 and give the plugin's result.
/// TensorFlow refuses the same slice.
#[test]
fn ov_plugin_clamps_out_of_range_shrink() {
    for id in ["ss-1-00884", "ss-1-02152"] {
        let c = case("strided_slice.jsonl.gz", id);
        assert_ne!(answer(&c["expected_ov"]), Answer::Error);
        assert_eq!(strided_ov(&c), answer(&c["expected_ov"]));
        assert_eq!(answer(&c["tf"]), Answer::Error);
        assert_eq!(strided_tf(&c), Answer::Error);
    }
}

/// OpenVINO's reference evaluation (used by its constant folding) returns values that are not
/// input elements at all on some cases; the CPU plugin is right there and we follow it.
#[test]
fn ov_reference_returns_garbage() {
    let c = case("strided_slice.jsonl.gz", "ss-1-00043");
    assert_ne!(answer(&c["ov_ref"]), answer(&c["ov_cpu"]));
    assert_eq!(strided_ov(&c), answer(&c["ov_cpu"]));
}

/// OpenVINO's spec says each mask may have its own length; OpenVINO 2026.4 refuses masks that
/// are neither empty nor as long as `begin_mask`. The runtime decides: a typed error.
#[test]
fn ov_unequal_mask_lengths_are_an_error() {
    let c = case("strided_slice.jsonl.gz", "ss-1-00010");
    assert_eq!(answer(&c["expected_ov"]), Answer::Error);
    assert_eq!(strided_ov(&c), Answer::Error);
    let spec = StridedSliceSpec::from_ov_lists(
        &[0, 0],
        &[1, 1],
        None,
        OvMasks {
            begin: &[0, 0],
            end: &[0],
            ..Default::default()
        },
    );
    assert!(matches!(
        strided_slice(&spec, Flavour::Ov, 2),
        Err(SliceError::UnequalMaskLengths(_))
    ));
}

/// ...but an empty mask next to non-empty ones is accepted (OpenVINO's exact rule).
#[test]
fn ov_empty_mask_is_accepted() {
    let c = case("strided_slice.jsonl.gz", "ss-2-00865");
    assert_ne!(answer(&c["expected_ov"]), Answer::Error);
    assert_eq!(strided_ov(&c), answer(&c["expected_ov"]));
}

/// ONNX Runtime reads an `INT32_MAX`/`INT64_MAX` end with a negative step as "to the beginning";
/// the ONNX spec clamps it to `dim - 1`, as the ONNX reference evaluator and OpenVINO do. The
/// majority (and the spec) decide.
#[test]
fn onnx_runtime_int_max_end_with_negative_step_is_outvoted() {
    let c = case("slice.jsonl.gz", "sl-1-00157");
    assert_ne!(answer(&c["ort"]), answer(&c["expected_onnx"]));
    assert_eq!(answer(&c["onnx_ref"]), answer(&c["expected_onnx"]));
    assert_eq!(slice_onnx(&c), answer(&c["expected_onnx"]));
}

/// The ONNX reference evaluator mis-clamps some negative-step slices (`x[-5:-3:-2]` on axis 0
/// of size 1); ONNX Runtime and OpenVINO follow the spec. The majority decides.
#[test]
fn onnx_reference_misclamps_negative_step() {
    let c = case("slice.jsonl.gz", "sl-1-00034");
    assert_ne!(answer(&c["onnx_ref"]), answer(&c["expected_onnx"]));
    assert_eq!(answer(&c["ort"]), answer(&c["expected_onnx"]));
    assert_eq!(slice_onnx(&c), answer(&c["expected_onnx"]));
}

/// Three-way split (ORT's INT_MAX reading, the reference's mis-clamp, OpenVINO = spec): policy
/// v2 takes the answer that follows the ONNX spec's clamping, OpenVINO's, as we do.
#[test]
fn onnx_three_way_split_follows_the_spec() {
    for id in ["sl-1-00118", "sl-1-00595", "sl-2-00420"] {
        let c = case("slice.jsonl.gz", id);
        assert_ne!(answer(&c["ort"]), answer(&c["onnx_ref"]));
        assert_ne!(answer(&c["ort"]), answer(&c["ov_cpu"]));
        assert_eq!(answer(&c["expected_onnx"]), answer(&c["ov_cpu"]));
        assert_eq!(slice_onnx(&c), answer(&c["expected_onnx"]));
    }
    let c = case("slice.jsonl.gz", "sl-1-00118");
    assert_eq!(
        slice_onnx(&c),
        Answer::Ok {
            shape: vec![0, 1, 4, 1],
            indices: vec![]
        }
    );
}
