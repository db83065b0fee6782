//! Layer: semantics and `shape::slice_node` against ONNX's shape inference.
//!
//! ONNX's own `test_slice_*` shape-inference cases, transcribed (issue 16, acceptance 4).
//!
//! Source: onnx/onnx `tests/python/shape_inference_test.py` (class `TestShapeInference`), test
//! name in each case. Every dim we infer must equal ONNX's expectation or be provably tighter
//! where ONNX gives an unnamed dim (`None`): "provably" = our dim, evaluated for every value of
//! its symbols in 0..48, equals the numeric inference (itself checked against ONNX Runtime in
//! `tests/conformance.rs`).

use std::collections::HashMap;

use slice_opt::ir::DeclaredDim;
use slice_opt::semantics::{onnx_slice, output_shape, resolve_dims, Clamp, Dim};
use slice_opt::shape::slice_node::to_dim;

/// A dim of ONNX's test: a value, a `dim_param`, or `None` (unnamed).
#[derive(Clone, Copy, Debug)]
enum E {
    V(u64),
    P(&'static str),
    N,
}

struct Case {
    name: &'static str,
    x: Vec<E>,
    /// `None`: the input is not a constant (ONNX's test gives no initializer).
    starts: Option<Vec<i64>>,
    ends: Option<Vec<i64>>,
    axes: Option<Vec<i64>>,
    steps: Option<Vec<i64>>,
    expected: Vec<E>,
}

fn declared(e: E) -> DeclaredDim {
    match e {
        E::V(v) => DeclaredDim::Known(v),
        E::P(p) => DeclaredDim::Param(p.into()),
        E::N => DeclaredDim::Unknown,
    }
}

fn cases() -> Vec<Case> {
    use E::*;
    let c = |v: &[i64]| Some(v.to_vec());
    vec![
        Case {
            name: "test_slice_without_input_shape",
            x: vec![V(3), V(2), P("a")],
            starts: None,
            ends: None,
            axes: None,
            steps: None,
            expected: vec![N, N, N],
        },
        Case {
            name: "test_slice_with_input_shape",
            x: vec![V(3), V(2)],
            starts: c(&[1, 0]),
            ends: c(&[2, 2]),
            axes: None,
            steps: None,
            expected: vec![V(1), V(2)],
        },
        Case {
            name: "test_slice_with_input_shape_containing_dim_params",
            x: vec![V(1), P("a"), V(1)],
            starts: c(&[0, 0, 0]),
            ends: c(&[1, 1, 1]),
            axes: None,
            steps: None,
            expected: vec![V(1), N, V(1)],
        },
        Case {
            name: "test_slice_with_input_shape_steps",
            x: vec![V(5), V(6), V(7)],
            starts: c(&[1, 0, 0]),
            ends: c(&[2, 6, 6]),
            axes: None,
            steps: c(&[1, 4, 3]),
            expected: vec![V(1), V(2), V(2)],
        },
        Case {
            name: "test_slice_with_input_shape_axes",
            x: vec![V(3), V(6), V(2)],
            starts: c(&[1, 0]),
            ends: c(&[2, 2]),
            axes: c(&[0, 2]),
            steps: None,
            expected: vec![V(1), V(6), V(2)],
        },
        Case {
            name: "test_slice_unsorted_axes",
            x: vec![V(3), V(2)],
            starts: c(&[1, 0]),
            ends: c(&[2, 2]),
            axes: c(&[1, 0]),
            steps: None,
            expected: vec![V(2), V(1)],
        },
        Case {
            name: "test_slice_giant_number",
            x: vec![V(3), V(2)],
            starts: c(&[1, 0]),
            ends: c(&[200, 22000]),
            axes: c(&[0, 1]),
            steps: None,
            expected: vec![V(2), V(2)],
        },
        Case {
            name: "test_slice_giant_step",
            x: vec![V(3), V(2)],
            starts: c(&[1, 0]),
            ends: c(&[200, 200]),
            axes: c(&[0, 1]),
            steps: c(&[1, 200]),
            expected: vec![V(2), V(1)],
        },
        Case {
            name: "test_slice_negative_end",
            x: vec![V(3), V(2)],
            starts: c(&[1, 0]),
            ends: c(&[200, -1]),
            axes: c(&[0, 1]),
            steps: None,
            expected: vec![V(2), V(1)],
        },
        Case {
            name: "test_slice_negative_start",
            x: vec![V(3), V(2)],
            starts: c(&[1, -2]),
            ends: c(&[200, 3]),
            axes: c(&[0, 1]),
            steps: None,
            expected: vec![V(2), V(2)],
        },
        Case {
            name: "test_slice_negative_step",
            x: vec![V(3), V(4)],
            starts: c(&[1, 4]),
            ends: c(&[200, 0]),
            axes: c(&[0, 1]),
            steps: c(&[1, -1]),
            expected: vec![V(2), V(3)],
        },
        Case {
            name: "test_slice_variable_copy",
            x: vec![P("a"), V(2)],
            starts: c(&[1]),
            ends: c(&[200]),
            axes: c(&[1]),
            steps: None,
            expected: vec![P("a"), V(1)],
        },
        Case {
            name: "test_slice_variable_input_types",
            x: vec![V(3), V(2)],
            starts: c(&[1, 0]),
            ends: c(&[200, 22000]),
            axes: c(&[0, 1]),
            steps: None,
            expected: vec![V(2), V(2)],
        },
        Case {
            name: "test_slice_empty_dim_positive_step",
            x: vec![V(0), V(6)],
            starts: c(&[0]),
            ends: c(&[0]),
            axes: c(&[0]),
            steps: c(&[1]),
            expected: vec![V(0), V(6)],
        },
        Case {
            name: "test_slice_empty_dim_negative_step",
            x: vec![V(0), V(6)],
            starts: c(&[1]),
            ends: c(&[0]),
            axes: c(&[0]),
            steps: c(&[-1]),
            expected: vec![V(0), V(6)],
        },
    ]
}

#[test]
fn onnx_shape_inference_slice_cases() {
    let (mut equal, mut tighter, mut total) = (0, 0, 0);
    for case in cases() {
        let rank = case.x.len();
        let n = case
            .starts
            .as_ref()
            .or(case.ends.as_ref())
            .map_or(rank, Vec::len);
        let opt = |v: &Option<Vec<i64>>| match v {
            Some(v) => v.iter().map(|&x| Some(x)).collect::<Vec<_>>(),
            None => vec![None; n],
        };
        let steps = case
            .steps
            .as_ref()
            .map(|s| s.iter().map(|&x| Some(x)).collect::<Vec<_>>());
        let plan = onnx_slice(
            &opt(&case.starts),
            &opt(&case.ends),
            case.axes.as_deref(),
            steps.as_deref(),
            rank,
            13,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let dims: Vec<Dim> = case.x.iter().map(|&e| to_dim(&declared(e))).collect();
        let out =
            resolve_dims(&plan, &dims, Clamp::Ov).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(out.len(), case.expected.len(), "{}", case.name);
        for (i, (ours, theirs)) in out.iter().zip(&case.expected).enumerate() {
            total += 1;
            match theirs {
                E::V(v) => {
                    assert_eq!(
                        ours.as_known(),
                        Some(*v as i64),
                        "{} dim {i}: ours {ours}",
                        case.name
                    );
                    equal += 1;
                }
                E::P(p) => {
                    assert!(
                        ours.provably_equal(&to_dim(&DeclaredDim::Param(p.to_string()))),
                        "{} dim {i}: ours {ours}, ONNX {p}",
                        case.name
                    );
                    equal += 1;
                }
                E::N if ours.is_unknown() && ours.bounds() == (Some(0), None) => equal += 1,
                E::N => {
                    tighter += 1;
                    println!(
                        "  tighter: {} dim {i}: ONNX unnamed, ours {ours}",
                        case.name
                    );
                }
            }
        }
        // Provably right: with constant parameters, every symbol value 0..48 gives the numeric
        // result; otherwise our bounds contain every result for every parameter value tried.
        let syms: Vec<String> = out
            .iter()
            .flat_map(|d| d.symbols())
            .map(|s| s.name().to_string())
            .collect();
        for v in 0..48u64 {
            let concrete: Vec<u64> = case
                .x
                .iter()
                .map(|e| match e {
                    E::V(x) => *x,
                    _ => v,
                })
                .collect();
            let b: HashMap<String, i64> = syms.iter().map(|s| (s.clone(), v as i64)).collect();
            if plan.is_constant() {
                let Ok(shape) = output_shape(&plan, &concrete, Clamp::Ov) else {
                    continue;
                };
                for (d, w) in out.iter().zip(&shape) {
                    assert_eq!(d.eval(&b), Some(*w as i64), "{}: {d} at {v}", case.name);
                }
            } else {
                for s in -4i64..5 {
                    for e in -4i64..5 {
                        let p =
                            onnx_slice(&vec![Some(s); n], &vec![Some(e); n], None, None, rank, 13)
                                .expect("plan");
                        let shape = output_shape(&p, &concrete, Clamp::Ov).expect("shape");
                        for (d, w) in out.iter().zip(&shape) {
                            let (l, h) = d.bounds();
                            assert!(
                                l.is_none_or(|l| l <= *w as i64)
                                    && h.is_none_or(|h| *w as i64 <= h),
                                "{}: {d} misses {w}",
                                case.name
                            );
                        }
                    }
                }
            }
        }
    }
    println!("onnx shape_inference_test.py test_slice_*: {total} dims, {equal} equal, {tighter} tighter, 0 looser");
}
