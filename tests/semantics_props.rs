//! Layer: semantics (property tests).
//!
//! Property tests of the semantics core, plus the symbolic acceptance tests.
//!
//! (a) inferred shape == shape of the gathered result, (b) symbolic inference, once symbols are
//! bound, == numeric inference, (c) random parameters never panic.

use std::collections::HashMap;

use proptest::prelude::*;
use slice_opt::semantics::decode::{constant, TfMasks};
use slice_opt::semantics::{
    gather, onnx_slice, output_shape, ov_slice8, resolve_dims, strided_slice, Clamp, Dim, Flavour,
    SlicePlan, StridedSliceSpec,
};

const LIMIT: u64 = 1 << 20;

fn index() -> impl Strategy<Value = i64> {
    prop_oneof![
        -8i64..8,
        Just(i64::MIN),
        Just(i64::MAX),
        Just(i32::MAX as i64),
        Just(i32::MIN as i64)
    ]
}

/// A random StridedSlice problem (flavour, dims, spec), printed readably on failure.
#[derive(Debug, Clone)]
struct StridedSliceProblem {
    dims: Vec<u64>,
    begin: Vec<i64>,
    end: Vec<i64>,
    strides: Vec<i64>,
    masks: TfMasks,
    flavour: Flavour,
}

impl Arbitrary for StridedSliceProblem {
    type Parameters = ();
    type Strategy = BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        (prop::collection::vec(0u64..6, 0..5), 0usize..6)
            .prop_flat_map(|(dims, n)| {
                let m = 0i64..(1 << n);
                (
                    Just(dims),
                    prop::collection::vec(index(), n),
                    prop::collection::vec(index(), n),
                    prop::collection::vec(prop_oneof![-3i64..4, Just(i64::MIN)], n),
                    (m.clone(), m.clone(), m.clone(), m.clone(), m),
                    prop_oneof![Just(Flavour::Tf), Just(Flavour::Ov)],
                )
            })
            .prop_map(|(dims, begin, end, strides, (b, e, el, na, sh), flavour)| {
                StridedSliceProblem {
                    dims,
                    begin,
                    end,
                    strides,
                    masks: TfMasks {
                        begin: b,
                        end: e,
                        ellipsis: el,
                        new_axis: na,
                        shrink: sh,
                    },
                    flavour,
                }
            })
            .boxed()
    }
}

impl StridedSliceProblem {
    fn plan(&self) -> Option<SlicePlan> {
        let spec =
            StridedSliceSpec::from_tf_bits(&self.begin, &self.end, Some(&self.strides), self.masks);
        strided_slice(&spec, self.flavour, self.dims.len()).ok()
    }
}

/// A random ONNX Slice / Slice-8 problem.
#[derive(Debug, Clone)]
struct SliceProblem {
    dims: Vec<u64>,
    starts: Vec<i64>,
    ends: Vec<i64>,
    axes: Option<Vec<i64>>,
    steps: Option<Vec<i64>>,
    onnx: bool,
}

impl Arbitrary for SliceProblem {
    type Parameters = ();
    type Strategy = BoxedStrategy<Self>;
    fn arbitrary_with(_: ()) -> Self::Strategy {
        (prop::collection::vec(0u64..6, 1..5), 0usize..4)
            .prop_flat_map(|(dims, n)| {
                let r = dims.len() as i64;
                (
                    Just(dims),
                    prop::collection::vec(index(), n),
                    prop::collection::vec(index(), n),
                    prop::option::of(prop::collection::vec(-r..r, n)),
                    prop::option::of(prop::collection::vec(
                        prop_oneof![-3i64..4, Just(i64::MIN), Just(i64::MAX)],
                        n,
                    )),
                    any::<bool>(),
                )
            })
            .prop_map(|(dims, starts, ends, axes, steps, onnx)| SliceProblem {
                dims,
                starts,
                ends,
                axes,
                steps,
                onnx,
            })
            .boxed()
    }
}

impl SliceProblem {
    fn plan(&self) -> Option<SlicePlan> {
        let steps = self.steps.as_ref().map(|s| constant(s));
        let (s, e) = (constant(&self.starts), constant(&self.ends));
        if self.onnx {
            onnx_slice(
                &s,
                &e,
                self.axes.as_deref(),
                steps.as_deref(),
                self.dims.len(),
                13,
            )
            .ok()
        } else {
            ov_slice8(
                &s,
                &e,
                steps.as_deref(),
                self.axes.as_deref(),
                self.dims.len(),
            )
            .ok()
        }
    }
}

fn check_plan(plan: &SlicePlan, dims: &[u64], clamp: Clamp) -> Result<(), TestCaseError> {
    let Ok(shape) = output_shape(plan, dims, clamp) else {
        return Ok(());
    };
    let idx = gather(plan, dims, clamp, LIMIT).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(shape.iter().product::<u64>(), idx.len() as u64);
    let total: u64 = dims.iter().product();
    prop_assert!(idx.iter().all(|&i| i < total));
    // (b) symbolic == numeric once bound.
    let syms: Vec<Dim> = (0..dims.len())
        .map(|i| Dim::symbol(&format!("d{i}")))
        .collect();
    let bind: HashMap<String, i64> = dims
        .iter()
        .enumerate()
        .map(|(i, &d)| (format!("d{i}"), d as i64))
        .collect();
    let sym = resolve_dims(plan, &syms, clamp).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let bound: Vec<Option<i64>> = sym.iter().map(|d| d.eval(&bind)).collect();
    let want: Vec<Option<i64>> = shape.iter().map(|&d| Some(d as i64)).collect();
    prop_assert_eq!(
        bound,
        want,
        "symbolic {:?}",
        sym.iter().map(|d| d.to_string()).collect::<Vec<_>>()
    );
    // Bounded symbols (lower bound = the value, upper = value + 3) stay right too.
    let bsyms: Vec<Dim> = dims
        .iter()
        .enumerate()
        .map(|(i, &d)| Dim::symbol_bounded(&format!("d{i}"), d as i64, Some(d as i64 + 3)))
        .collect();
    let bsym = resolve_dims(plan, &bsyms, clamp).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let bbound: Vec<Option<i64>> = bsym.iter().map(|d| d.eval(&bind)).collect();
    prop_assert_eq!(
        bbound,
        shape.iter().map(|&d| Some(d as i64)).collect::<Vec<_>>()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// (a) + (b) for StridedSlice, both flavours.
    #[test]
    fn strided_slice_shape_matches_gather(p in any::<StridedSliceProblem>()) {
        if let Some(plan) = p.plan() {
            check_plan(&plan, &p.dims, p.flavour.clamp())?;
        }
    }

    /// (a) + (b) for ONNX Slice and Slice-8.
    #[test]
    fn slice_shape_matches_gather(p in any::<SliceProblem>()) {
        if let Some(plan) = p.plan() {
            check_plan(&plan, &p.dims, Clamp::Ov)?;
        }
    }

    /// (c) arbitrary parameters (any lengths, any values, huge dims) never panic.
    #[test]
    fn random_params_never_panic(
        dims in prop::collection::vec(prop_oneof![0u64..4, Just(u64::MAX), Just(1u64 << 40)], 0..4),
        begin in prop::collection::vec(any::<i64>(), 0..5),
        end in prop::collection::vec(any::<i64>(), 0..5),
        strides in prop::collection::vec(any::<i64>(), 0..5),
        masks in prop::collection::vec(any::<i64>(), 5),
        axes in prop::option::of(prop::collection::vec(any::<i64>(), 0..5)),
        opset in 1u32..20,
    ) {
        let m = TfMasks { begin: masks[0], end: masks[1], ellipsis: masks[2], new_axis: masks[3], shrink: masks[4] };
        let spec = StridedSliceSpec::from_tf_bits(&begin, &end, Some(&strides), m);
        let symbolic: Vec<Dim> = dims.iter().map(|&d| if d > i64::MAX as u64 { Dim::unknown() } else { Dim::known(d as i64) }).collect();
        for flavour in [Flavour::Tf, Flavour::Ov] {
            if let Ok(plan) = strided_slice(&spec, flavour, dims.len()) {
                let _ = gather(&plan, &dims, flavour.clamp(), 1 << 12);
                let _ = resolve_dims(&plan, &symbolic, flavour.clamp());
                let _ = plan.to_string();
            }
        }
        let (s, e, st) = (constant(&begin), constant(&end), constant(&strides));
        for plan in [
            onnx_slice(&s, &e, axes.as_deref(), Some(&st), dims.len(), opset),
            ov_slice8(&s, &e, Some(&st), axes.as_deref(), dims.len()),
        ].into_iter().flatten() {
            let _ = gather(&plan, &dims, Clamp::Ov, 1 << 12);
            let _ = resolve_dims(&plan, &symbolic, Clamp::Ov);
        }
    }
}

// ----- Symbolic acceptance tests (issue), on a dim named `N` -----

fn on_n(n: Dim, begin: &[i64], end: &[i64], strides: &[i64], masks: TfMasks) -> Vec<String> {
    let spec = StridedSliceSpec::from_tf_bits(begin, end, Some(strides), masks);
    let plan = strided_slice(&spec, Flavour::Tf, 1).expect("valid");
    resolve_dims(&plan, &[n], Clamp::Tf)
        .expect("valid")
        .iter()
        .map(|d| d.to_string())
        .collect()
}

/// `x[1:]`: for a symbol with the default lower bound 0 the honest answer is `max(N - 1, 0)`
/// (N may be 0); with `N >= 1` it prints `N - 1`. Correctness for every value wins.
#[test]
fn symbolic_from_one() {
    let m = TfMasks {
        end: 1,
        ..Default::default()
    };
    assert_eq!(
        on_n(Dim::symbol("N"), &[1], &[0], &[1], m),
        ["max(N - 1, 0)"]
    );
    assert_eq!(
        on_n(Dim::symbol_bounded("N", 1, None), &[1], &[0], &[1], m),
        ["N - 1"]
    );
}

/// `x[:-1]`: same as `x[1:]`.
#[test]
fn symbolic_drop_last() {
    let m = TfMasks {
        begin: 1,
        ..Default::default()
    };
    assert_eq!(
        on_n(Dim::symbol("N"), &[0], &[-1], &[1], m),
        ["max(N - 1, 0)"]
    );
    assert_eq!(
        on_n(Dim::symbol_bounded("N", 1, None), &[0], &[-1], &[1], m),
        ["N - 1"]
    );
}

/// `x[::2]` → `(N + 1) / 2` (floor division).
#[test]
fn symbolic_step_two() {
    let m = TfMasks {
        begin: 1,
        end: 1,
        ..Default::default()
    };
    assert_eq!(on_n(Dim::symbol("N"), &[0], &[0], &[2], m), ["(N + 1) / 2"]);
}

/// `x[::-1]` → `N`.
#[test]
fn symbolic_reverse() {
    let m = TfMasks {
        begin: 1,
        end: 1,
        ..Default::default()
    };
    assert_eq!(on_n(Dim::symbol("N"), &[0], &[0], &[-1], m), ["N"]);
}

/// `x[-1]` → the axis is removed.
#[test]
fn symbolic_shrink() {
    let m = TfMasks {
        shrink: 1,
        ..Default::default()
    };
    assert_eq!(
        on_n(Dim::symbol("N"), &[-1], &[0], &[1], m),
        Vec::<String>::new()
    );
}

/// `x[..., None]` → `N` and a new `1`.
#[test]
fn symbolic_ellipsis_new_axis() {
    let m = TfMasks {
        ellipsis: 1,
        new_axis: 2,
        ..Default::default()
    };
    let out = on_n(Dim::symbol("N"), &[0, 0], &[0, 0], &[1, 1], m);
    assert_eq!(out, ["N", "1"]);
    let spec = StridedSliceSpec::from_tf_bits(&[0, 0], &[0, 0], Some(&[1, 1]), m);
    let plan = strided_slice(&spec, Flavour::Tf, 1).expect("valid");
    assert_eq!(
        resolve_dims(&plan, &[Dim::symbol("N")], Clamp::Tf).expect("valid"),
        vec![Dim::symbol("N"), Dim::known(1)]
    );
}

/// `x[:4]` → `min(N, 4)`.
#[test]
fn symbolic_prefix() {
    let m = TfMasks {
        begin: 1,
        ..Default::default()
    };
    assert_eq!(on_n(Dim::symbol("N"), &[0], &[4], &[1], m), ["min(N, 4)"]);
}
