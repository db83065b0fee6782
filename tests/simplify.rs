//! Issue 43, pass `simplify` and its semantics core (`semantics::compose`).
//!
//! - The core against `gather` on index tensors: random pairs of slices (proptest) on known
//!   dims (every composition of a valid pair merges, to the same elements) and on symbolic
//!   dims (a merge claimed exact gives the same elements at every size of the symbol's
//!   range); identity and split decisions the same way.
//! - Acceptance 3's conformance leg: pairs of consecutive slices drawn from the conformance
//!   data (`tests/data/slice.jsonl.gz`, `strided_slice.jsonl.gz`), static and symbolic.
//! - The pass: one test per rewrite and per refusal, expected elements from the spec's rules
//!   (Python slicing on `arange`), never from our output.

mod common;

use proptest::prelude::*;
use serde_json::Value;
use slice_opt::semantics::compose::{
    compose, is_identity, split_pieces, split_runs, within_concat, PieceSize, Refusal,
};
use slice_opt::semantics::decode::{constant, TfMasks};
use slice_opt::semantics::{
    gather, onnx_slice, output_shape, strided_slice, AxisPlan, Bound, Clamp, Dim, Flavour,
    SlicePlan, StridedSliceSpec,
};

const MAX: u64 = 1 << 20;

/// What a plan selects on `dims`: (shape, flat indices), `None` when it fails.
fn sel(plan: &SlicePlan, dims: &[u64], clamp: Clamp) -> Option<(Vec<u64>, Vec<u64>)> {
    let idx = gather(plan, dims, clamp, MAX).ok()?;
    let shape = output_shape(plan, dims, clamp).ok()?;
    Some((shape, idx))
}

/// What `outer` of `inner` selects on `dims` (an index tensor sliced twice).
fn pair_sel(
    inner: &SlicePlan,
    c1: Clamp,
    outer: &SlicePlan,
    c2: Clamp,
    dims: &[u64],
) -> Option<(Vec<u64>, Vec<u64>)> {
    let (shape1, idx1) = sel(inner, dims, c1)?;
    let (shape2, idx2) = sel(outer, &shape1, c2)?;
    Some((shape2, idx2.iter().map(|&j| idx1[j as usize]).collect()))
}

fn tf_plan(
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    masks: TfMasks,
    rank: usize,
) -> Option<SlicePlan> {
    let spec = StridedSliceSpec::from_tf_bits(begin, end, Some(strides), masks);
    strided_slice(&spec, Flavour::Tf, rank).ok()
}

fn known(dims: &[u64]) -> Vec<Dim> {
    dims.iter().map(|&d| Dim::known(d as i64)).collect()
}

// ---------------------------------------------------------------------------------------------
// Random pairs (proptest).

/// A random StridedSlice (TensorFlow bits) or Slice, as parameters; decoded for a given rank.
#[derive(Debug, Clone)]
enum SpecProblem {
    Strided {
        begin: Vec<i64>,
        end: Vec<i64>,
        strides: Vec<i64>,
        masks: TfMasks,
    },
    Slice {
        starts: Vec<i64>,
        ends: Vec<i64>,
        axes: Vec<i64>,
        steps: Vec<i64>,
    },
}

impl SpecProblem {
    fn plan(&self, rank: usize) -> Option<(SlicePlan, Clamp)> {
        match self {
            SpecProblem::Strided {
                begin,
                end,
                strides,
                masks,
            } => Some((tf_plan(begin, end, strides, *masks, rank)?, Clamp::Tf)),
            SpecProblem::Slice {
                starts,
                ends,
                axes,
                steps,
            } => {
                let n = starts.len().min(rank);
                let axes: Vec<i64> = axes[..n].to_vec();
                let plan = onnx_slice(
                    &constant(&starts[..n]),
                    &constant(&ends[..n]),
                    Some(&axes),
                    Some(&constant(&steps[..n])),
                    rank,
                    13,
                )
                .ok()?;
                Some((plan, Clamp::Ov))
            }
        }
    }
}

fn index() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => -8i64..9,
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
        1 => Just(i32::MAX as i64),
    ]
}

fn step() -> impl Strategy<Value = i64> {
    prop_oneof![4 => Just(1i64), 1 => Just(2i64), 1 => Just(3i64), 2 => Just(-1i64), 1 => Just(-2i64)]
}

fn spec_problem() -> impl Strategy<Value = SpecProblem> {
    let strided = (1usize..5).prop_flat_map(|n| {
        (
            prop::collection::vec(index(), n),
            prop::collection::vec(index(), n),
            prop::collection::vec(step(), n),
            0i64..(1 << n),
            0i64..(1 << n),
            prop_oneof![3 => Just(0i64), 1 => 0i64..(1 << n)],
            prop_oneof![2 => Just(0i64), 1 => 0i64..(1 << n)],
            prop_oneof![2 => Just(0i64), 1 => 0i64..(1 << n)],
        )
            .prop_map(|(begin, end, strides, b, e, el, na, sh)| {
                // One ellipsis bit at most.
                let el = if el == 0 { 0 } else { 1 << el.trailing_zeros() };
                SpecProblem::Strided {
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
                }
            })
    });
    let slice = (
        prop::collection::vec(index(), 3),
        prop::collection::vec(index(), 3),
        Just(vec![0i64, 1, 2]).prop_shuffle(),
        prop::collection::vec(step(), 3),
    )
        .prop_map(|(starts, ends, axes, steps)| SpecProblem::Slice {
            starts,
            ends,
            axes,
            steps,
        });
    prop_oneof![strided, slice]
}

#[derive(Debug, Clone)]
struct PairProblem {
    dims: Vec<u64>,
    inner: SpecProblem,
    outer: SpecProblem,
    target: Clamp,
}

fn pair_problem() -> impl Strategy<Value = PairProblem> {
    (
        prop::collection::vec(0u64..7, 1..4),
        spec_problem(),
        spec_problem(),
        prop_oneof![Just(Clamp::Tf), Just(Clamp::Ov)],
    )
        .prop_map(|(dims, inner, outer, target)| PairProblem {
            dims,
            inner,
            outer,
            target,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// On known dims a valid pair always merges, into a plan selecting the same elements.
    #[test]
    fn static_pairs_merge_exactly(p in pair_problem()) {
        let Some((inner, c1)) = p.inner.plan(p.dims.len()) else { return Ok(()) };
        let Some((outer, c2)) = p.outer.plan(inner.output_rank()) else { return Ok(()) };
        let want = pair_sel(&inner, c1, &outer, c2, &p.dims);
        match compose(&inner, c1, &outer, c2, &known(&p.dims), p.target) {
            Ok(plan) => {
                prop_assert!(want.is_some(), "merged a failing pair into {plan}");
                prop_assert_eq!(sel(&plan, &p.dims, p.target), want, "{} then {} -> {}", inner, outer, plan);
            }
            // Refused whether or not a later entry fails too.
            Err(Refusal::EmptyNewAxis) => {}
            Err(e) => prop_assert!(want.is_none(), "refused a valid pair: {e}"),
        }
    }

    /// On symbolic dims (bounds `lo..=hi`), a merge is exact at every size of the range.
    #[test]
    fn symbolic_merges_hold_at_every_size(
        p in pair_problem(),
        lo in 0i64..4,
        span in 1i64..40,
    ) {
        let rank = p.dims.len().min(2);
        let Some((inner, c1)) = p.inner.plan(rank) else { return Ok(()) };
        let Some((outer, c2)) = p.outer.plan(inner.output_rank()) else { return Ok(()) };
        let hi = lo + span;
        // Axis 0 symbolic, axis 1 (if any) known.
        let mut dims = vec![Dim::symbol_bounded("n", lo, Some(hi))];
        if rank == 2 {
            dims.push(Dim::known(p.dims[1] as i64));
        }
        if let Ok(plan) = compose(&inner, c1, &outer, c2, &dims, p.target) {
            for n in lo..=hi {
                let mut d = vec![n as u64];
                if rank == 2 {
                    d.push(p.dims[1]);
                }
                prop_assert_eq!(
                    sel(&plan, &d, p.target),
                    pair_sel(&inner, c1, &outer, c2, &d),
                    "{} then {} -> {} at {:?}", inner, outer, plan, d
                );
            }
        }
    }

    /// An identity on a symbolic axis gives every size of its range back whole.
    #[test]
    fn identity_holds_at_every_size(p in spec_problem(), lo in 0i64..4, span in 1i64..40) {
        let Some((plan, c)) = p.plan(1) else { return Ok(()) };
        let hi = lo + span;
        if is_identity(&plan, &[Dim::symbol_bounded("n", lo, Some(hi))], c) {
            for n in lo..=hi {
                let all: Vec<u64> = (0..n as u64).collect();
                prop_assert_eq!(sel(&plan, &[n as u64], c), Some((vec![n as u64], all)));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// `simplify`'s one-element proof (`element::one_element`) on random 1-D ONNX Slice plans
    /// (small constants, INT64 edges, steps of both signs) and lengths `lo..` (unbounded, or
    /// `lo..=hi`): when it names an index `k`, the slice takes exactly element `k` (counted from
    /// the end when negative) at every length from `lo` to far past the sizes the proof checks.
    #[test]
    fn one_element_holds_at_every_length(
        b in prop_oneof![-12i64..12, Just(i64::MIN), Just(i64::MAX)],
        e in prop_oneof![-12i64..12, Just(i64::MIN), Just(i64::MAX)],
        s in prop_oneof![1i64..4, -3i64..0],
        lo in 0i64..6,
        hi in prop::option::of(6i64..40),
    ) {
        use slice_opt::passes::simplify::element::one_element;
        let c = constant;
        let Ok(plan) = onnx_slice(&c(&[b]), &c(&[e]), Some(&[0]), Some(&c(&[s])), 1, 13) else {
            return Ok(());
        };
        let len = Dim::symbol_bounded("L", lo, hi);
        if let Ok(k) = one_element(&plan, &len, Clamp::Ov) {
            for l in lo..=hi.unwrap_or(lo + 300) {
                let n = if k < 0 { k + l } else { k };
                prop_assert!((0..l).contains(&n), "{plan}: index {k} out of range at {l}");
                prop_assert_eq!(sel(&plan, &[l as u64], Clamp::Ov), Some((vec![1], vec![n as u64])),
                    "{} at {}", plan, l);
            }
        }
    }
}

/// Random disjoint runs on a symbolic axis: a split, when claimed, is exact at every size.
#[test]
fn split_pieces_hold_at_every_size() {
    let mut claimed = 0;
    let plan = |b: Bound, e: Bound| SlicePlan {
        input_rank: 1,
        axes: vec![AxisPlan::Range {
            axis: 0,
            begin: b,
            end: e,
            step: Some(1),
            check: None,
        }],
    };
    let bounds: Vec<Bound> = [-4, -2, -1, 0, 1, 2, 3, 5]
        .iter()
        .map(|&v| Bound::Index(v))
        .chain([Bound::Edge])
        .collect();
    for (i, &b1) in bounds.iter().enumerate() {
        for &e1 in &bounds[i..] {
            for &b2 in &bounds {
                for &e2 in &bounds {
                    let (p, q) = (plan(b1, e1), plan(b2, e2));
                    for lo in [0i64, 3, 6] {
                        let d = Dim::symbol_bounded("n", lo, Some(lo + 30));
                        let Ok(split) = split_pieces(&[&p, &q], &[d], Clamp::Ov) else {
                            continue;
                        };
                        claimed += 1;
                        for n in lo..=lo + 30 {
                            let runs = split_runs(&split, n as i128).expect("split valid");
                            for (k, pl) in [&p, &q].iter().enumerate() {
                                let (st, len) = runs[split.piece_of[k]];
                                let want: Vec<u64> = (st as u64..(st + len) as u64).collect();
                                assert_eq!(
                                    sel(pl, &[n as u64], Clamp::Ov).map(|s| s.1),
                                    Some(want),
                                    "{pl} in {split:?} at {n}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(claimed > 50, "only {claimed} splits claimed");
}

// ---------------------------------------------------------------------------------------------
// Core decisions, one named test each (expected values: Python slicing on arange).

fn slice1(b: Bound, e: Bound, s: i64) -> SlicePlan {
    SlicePlan {
        input_rank: 1,
        axes: vec![AxisPlan::Range {
            axis: 0,
            begin: b,
            end: e,
            step: Some(s),
            check: None,
        }],
    }
}

/// `x[2:30][1:10]` is `x[3:12]` for every size of `x`.
#[test]
fn compose_x_2_30_then_1_10_symbolic() {
    let (i, o) = (
        slice1(Bound::Index(2), Bound::Index(30), 1),
        slice1(Bound::Index(1), Bound::Index(10), 1),
    );
    let plan = compose(&i, Clamp::Ov, &o, Clamp::Ov, &[Dim::symbol("n")], Clamp::Ov).unwrap();
    // numpy: arange(n)[2:30][1:10] == arange(n)[3:12] for every n.
    assert_eq!(plan, slice1(Bound::Index(3), Bound::Index(12), 1));
}

/// `x[::2][-1:]` (the last element of even index) has no one-slice form for every size.
#[test]
fn compose_refuses_parity_dependent_symbolic() {
    let (i, o) = (
        slice1(Bound::Edge, Bound::Edge, 2),
        slice1(Bound::Index(-1), Bound::Edge, 1),
    );
    let r = compose(&i, Clamp::Ov, &o, Clamp::Ov, &[Dim::symbol("n")], Clamp::Ov);
    assert!(matches!(r, Err(Refusal::NotExact { .. })), "{r:?}");
    // On a known size it merges: arange(7)[::2][-1:] == [6].
    let p = compose(&i, Clamp::Ov, &o, Clamp::Ov, &known(&[7]), Clamp::Ov).unwrap();
    assert_eq!(sel(&p, &[7], Clamp::Ov), Some((vec![1], vec![6])));
}

/// `x[-5:][1:]` is `x[-4:]` only for sizes >= 5 (size 3: `[1, 2]` vs `[0, 1, 2]`): refused
/// on a symbol from 0, merged when the symbol is at least 5.
#[test]
fn compose_from_end_needs_bounds() {
    let (i, o) = (
        slice1(Bound::Index(-5), Bound::Edge, 1),
        slice1(Bound::Index(1), Bound::Edge, 1),
    );
    let free = Dim::symbol("n");
    assert!(compose(&i, Clamp::Ov, &o, Clamp::Ov, &[free], Clamp::Ov).is_err());
    let big = Dim::symbol_bounded("n", 5, Some(1 << 20));
    let p = compose(&i, Clamp::Ov, &o, Clamp::Ov, &[big], Clamp::Ov).unwrap();
    assert_eq!(p, slice1(Bound::Index(-4), Bound::Edge, 1));
}

/// Reverse of reverse: `x[::-1][::-1]` is `x` read forward, for every size.
#[test]
fn compose_reverse_of_reverse() {
    let r = slice1(Bound::Edge, Bound::Edge, -1);
    let p = compose(&r, Clamp::Tf, &r, Clamp::Tf, &[Dim::symbol("n")], Clamp::Ov).unwrap();
    assert!(is_identity(&p, &[Dim::symbol("n")], Clamp::Ov), "{p}");
}

/// Identity: `x[0:INT64_MAX]` on a symbolic dim and `x[:]`; not `x[1:]` nor `x[0:1000]`.
#[test]
fn identity_decisions() {
    let n = [Dim::symbol_bounded("n", 0, Some(i32::MAX as i64))];
    assert!(is_identity(
        &slice1(Bound::Index(0), Bound::Index(i64::MAX), 1),
        &n,
        Clamp::Ov
    ));
    assert!(is_identity(
        &slice1(Bound::Edge, Bound::Edge, 1),
        &n,
        Clamp::Ov
    ));
    assert!(!is_identity(
        &slice1(Bound::Index(1), Bound::Edge, 1),
        &n,
        Clamp::Ov
    ));
    assert!(!is_identity(
        &slice1(Bound::Index(0), Bound::Index(1000), 1),
        &n,
        Clamp::Ov
    ));
    // On a known size of 1000 it is one.
    assert!(is_identity(
        &slice1(Bound::Index(0), Bound::Index(1000), 1),
        &known(&[1000]),
        Clamp::Ov
    ));
    // Reversing one element is the identity too: arange(1)[::-1] == [0].
    assert!(is_identity(
        &slice1(Bound::Edge, Bound::Edge, -1),
        &known(&[1]),
        Clamp::Ov
    ));
}

/// Three disjoint slices of a fused QKV (`[:, 0:64]`, `[:, 64:128]`, `[:, 128:]` of 192) are a
/// split of sizes 64 each; on a symbolic axis from 128 the last is the rest.
#[test]
fn split_of_qkv() {
    let s = |b: Bound, e: Bound| SlicePlan {
        input_rank: 2,
        axes: vec![
            AxisPlan::Range {
                axis: 0,
                begin: Bound::Edge,
                end: Bound::Edge,
                step: Some(1),
                check: None,
            },
            AxisPlan::Range {
                axis: 1,
                begin: b,
                end: e,
                step: Some(1),
                check: None,
            },
        ],
    };
    let (q, k, v) = (
        s(Bound::Index(0), Bound::Index(64)),
        s(Bound::Index(64), Bound::Index(128)),
        s(Bound::Index(128), Bound::Edge),
    );
    let split = split_pieces(&[&v, &q, &k], &known(&[2, 192]), Clamp::Ov).unwrap();
    assert_eq!(split.axis, 1);
    assert_eq!(split.sizes, vec![PieceSize::Known(64); 3]);
    assert_eq!(split.piece_of, vec![2, 0, 1]);
    let sym = [Dim::symbol("b"), Dim::symbol_bounded("h", 128, None)];
    let split = split_pieces(&[&q, &k, &v], &sym, Clamp::Ov).unwrap();
    assert_eq!(
        split.sizes,
        vec![PieceSize::Known(64), PieceSize::Known(64), PieceSize::Rest]
    );
    // From 0 the pieces are not 64 wide at every size: refused.
    let free = [Dim::symbol("b"), Dim::symbol("h")];
    assert!(split_pieces(&[&q, &k, &v], &free, Clamp::Ov).is_err());
    // Overlapping slices are no split.
    let w = s(Bound::Index(32), Bound::Index(96));
    assert!(split_pieces(&[&q, &w], &known(&[2, 192]), Clamp::Ov).is_err());
}

/// A slice of `Concat([a(4), b(6)])` at `[5:9]` is `b[1:5]`; `[3:6]` spans both.
#[test]
fn slice_within_concat() {
    let p = slice1(Bound::Index(5), Bound::Index(9), 1);
    let (k, q) = within_concat(&p, 0, &known(&[4, 6]), &known(&[10]), Clamp::Ov).unwrap();
    assert_eq!(k, 1);
    assert_eq!(sel(&q, &[6], Clamp::Ov).unwrap().1, vec![1, 2, 3, 4]);
    let p = slice1(Bound::Index(3), Bound::Index(6), 1);
    assert!(within_concat(&p, 0, &known(&[4, 6]), &known(&[10]), Clamp::Ov).is_err());
}

// ---------------------------------------------------------------------------------------------
// Acceptance 3, conformance leg.

/// A case's plan for an input of `rank` and its clamping rule (`None`: it does not decode).
fn case_plan(c: &Value, rank: usize) -> Option<(SlicePlan, Clamp)> {
    use common::{ints, opt_ints};
    if c["op"] == "Slice" {
        let opset = c["onnx_opset"].as_u64()? as u32;
        let steps = opt_ints(&c["steps"]).map(|s| constant(&s));
        let plan = onnx_slice(
            &constant(&ints(&c["starts"])),
            &constant(&ints(&c["ends"])),
            opt_ints(&c["axes"]).as_deref(),
            steps.as_deref(),
            rank,
            opset,
        )
        .ok()?;
        Some((plan, Clamp::Ov))
    } else if let Some(m) = c.get("ov_masks").filter(|m| !m.is_null()) {
        // OpenVINO mask lists: the OpenVINO flavour (its shrinks carry their index checks).
        let spec = StridedSliceSpec::from_ov_lists(
            &ints(&c["begin"]),
            &ints(&c["end"]),
            Some(&ints(&c["strides"])),
            slice_opt::semantics::decode::OvMasks {
                begin: &ints(&m["begin_mask"]),
                end: &ints(&m["end_mask"]),
                ellipsis: &ints(&m["ellipsis_mask"]),
                new_axis: &ints(&m["new_axis_mask"]),
                shrink: &ints(&m["shrink_axis_mask"]),
            },
        );
        let plan = strided_slice(&spec, Flavour::Ov, rank).ok()?;
        Some((plan, Clamp::Ov))
    } else {
        let masks = TfMasks {
            begin: c["begin_mask"].as_i64()?,
            end: c["end_mask"].as_i64()?,
            ellipsis: c["ellipsis_mask"].as_i64()?,
            new_axis: c["new_axis_mask"].as_i64()?,
            shrink: c["shrink_axis_mask"].as_i64()?,
        };
        let plan = tf_plan(
            &ints(&c["begin"]),
            &ints(&c["end"]),
            &ints(&c["strides"]),
            masks,
            rank,
        )?;
        Some((plan, Clamp::Tf))
    }
}

/// A small deterministic generator (xorshift), so the pairs are the same on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Every pair of consecutive slices drawn from the conformance data (the first case's input
/// shape and spec, the second case's spec decoded for the first's output rank) merges or is
/// refused; a merged plan selects the same elements as the pair, on the static shape and, for
/// the symbolic leg (every axis a symbol bounded around its size), at sizes across the range.
#[test]
fn conformance_pairs_merge_or_are_refused() {
    let mut cases = common::load_cases("slice.jsonl.gz");
    cases.extend(common::load_cases("strided_slice.jsonl.gz"));
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut pairs, mut merged, mut refused, mut invalid) = (0, 0, 0, 0);
    let (mut sym_pairs, mut sym_merged, mut sym_refused, mut sym_checks) = (0, 0, 0, 0);
    let mut mismatches: Vec<String> = Vec::new();
    let mut tries = 0;
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    while pairs < 6000 && tries < 200_000 {
        tries += 1;
        let a = &cases[rng.below(cases.len())];
        let b = &cases[rng.below(cases.len())];
        let dims = common::uints(&a["input_shape"]);
        let Some((inner, c1)) = case_plan(a, dims.len()) else {
            continue;
        };
        let Some((outer, c2)) = case_plan(b, inner.output_rank()) else {
            continue;
        };
        let target = if rng.below(2) == 0 {
            Clamp::Tf
        } else {
            Clamp::Ov
        };
        pairs += 1;
        let want = pair_sel(&inner, c1, &outer, c2, &dims);
        if want.is_none() {
            invalid += 1;
        }
        match compose(&inner, c1, &outer, c2, &known(&dims), target) {
            Ok(plan) => {
                merged += 1;
                let got = sel(&plan, &dims, target);
                if got != want {
                    mismatches.push(format!(
                        "{} then {} on {dims:?}: {inner} ; {outer} -> {plan}",
                        a["id"], b["id"]
                    ));
                }
            }
            Err(e) => {
                refused += 1;
                if want.is_some() {
                    let k = format!("{e}").chars().take(40).collect::<String>();
                    *reasons.entry(k).or_insert(0) += 1;
                }
            }
        }
        // Symbolic leg: every axis a symbol in [max(0, d - 3), d + 3].
        let sym: Vec<Dim> = dims
            .iter()
            .enumerate()
            .map(|(k, &d)| {
                Dim::symbol_bounded(&format!("s{k}"), (d as i64 - 3).max(0), Some(d as i64 + 3))
            })
            .collect();
        sym_pairs += 1;
        match compose(&inner, c1, &outer, c2, &sym, target) {
            Ok(plan) => {
                sym_merged += 1;
                // Every size on each axis in turn (others at the case's size), and all corners.
                let mut points: Vec<Vec<u64>> = Vec::new();
                for k in 0..dims.len() {
                    for v in (dims[k].saturating_sub(3))..=dims[k] + 3 {
                        let mut d = dims.clone();
                        d[k] = v;
                        points.push(d);
                    }
                }
                for corner in 0..(1u32 << dims.len().min(6)) {
                    points.push(
                        dims.iter()
                            .enumerate()
                            .map(|(k, &d)| {
                                if corner >> k & 1 == 1 {
                                    d + 3
                                } else {
                                    d.saturating_sub(3)
                                }
                            })
                            .collect(),
                    );
                }
                for d in points {
                    sym_checks += 1;
                    let want = pair_sel(&inner, c1, &outer, c2, &d);
                    if sel(&plan, &d, target) != want {
                        mismatches.push(format!(
                            "symbolic {} then {} at {d:?}: {inner} ; {outer} -> {plan}",
                            a["id"], b["id"]
                        ));
                    }
                }
            }
            Err(_) => sym_refused += 1,
        }
    }
    println!(
        "conformance pairs: static {pairs} ({merged} merged, {refused} refused, of which {invalid} \
         pairs fail on their dims); symbolic {sym_pairs} ({sym_merged} merged, {sym_refused} \
         refused, {sym_checks} sizes checked); mismatches {}",
        mismatches.len()
    );
    println!("static refusals of valid pairs: {reasons:?}");
    assert!(pairs >= 5000, "only {pairs} pairs");
    assert!(
        mismatches.is_empty(),
        "{:#?}",
        &mismatches[..mismatches.len().min(10)]
    );
    // On known dims only a failing pair, or one whose outer range empties a new axis of the
    // inner (an output dim of 0 where a plan can only put a new axis of 1), is refused.
    assert!(
        reasons
            .keys()
            .all(|k| k.starts_with("an empty range on a new axis")),
        "{reasons:?}"
    );
    assert!(
        sym_merged > sym_pairs / 4,
        "symbolic: only {sym_merged} of {sym_pairs} merged"
    );
}

/// The parameters written for a plan decode back to the plan (Slice and StridedSlice, both
/// flavours), on the plans the conformance pairs compose to.
#[test]
fn written_parameters_decode_to_the_plan() {
    use slice_opt::semantics::compose::{slice_params, strided_spec, without_passing_checks};
    use slice_opt::semantics::decode::ov_slice8;
    let mut cases = common::load_cases("slice.jsonl.gz");
    cases.extend(common::load_cases("strided_slice.jsonl.gz"));
    let mut rng = Rng(7);
    let (mut slices, mut strided) = (0, 0);
    for _ in 0..20_000 {
        let a = &cases[rng.below(cases.len())];
        let b = &cases[rng.below(cases.len())];
        let dims = common::uints(&a["input_shape"]);
        let Some((inner, c1)) = case_plan(a, dims.len()) else {
            continue;
        };
        let Some((outer, c2)) = case_plan(b, inner.output_rank()) else {
            continue;
        };
        let Ok(plan) = compose(&inner, c1, &outer, c2, &known(&dims), Clamp::Ov) else {
            continue;
        };
        let rank = dims.len();
        if let Some((st, en, ax, sp)) = slice_params(&plan) {
            slices += 1;
            let want = sel(&plan, &dims, Clamp::Ov);
            let o = onnx_slice(
                &constant(&st),
                &constant(&en),
                Some(&ax),
                Some(&constant(&sp)),
                rank,
                13,
            )
            .unwrap();
            assert_eq!(sel(&o, &dims, Clamp::Ov), want, "{plan}");
            let v = ov_slice8(
                &constant(&st),
                &constant(&en),
                Some(&constant(&sp)),
                Some(&ax),
                rank,
            )
            .unwrap();
            assert_eq!(sel(&v, &dims, Clamp::Ov), want, "{plan}");
        }
        let spec = strided_spec(&plan).expect("a constant plan");
        strided += 1;
        for (flavour, clamp) in [(Flavour::Tf, Clamp::Tf), (Flavour::Ov, Clamp::Ov)] {
            let d = strided_slice(&spec, flavour, rank).unwrap();
            assert_eq!(
                without_passing_checks(&d, &known(&dims)),
                plan,
                "{flavour:?}"
            );
            assert_eq!(sel(&d, &dims, clamp), sel(&plan, &dims, Clamp::Ov));
        }
    }
    assert!(slices > 1000 && strided > 1000, "{slices} {strided}");
    // Symbolic: an OpenVINO StridedSlice written for a merged plan reads back as the plan
    // (its shrinks decode with their own index as check, which the plan carries).
    let mut sym_ok = 0;
    for _ in 0..20_000 {
        let a = &cases[rng.below(cases.len())];
        let b = &cases[rng.below(cases.len())];
        let dims = common::uints(&a["input_shape"]);
        let Some((inner, c1)) = case_plan(a, dims.len()) else {
            continue;
        };
        let Some((outer, c2)) = case_plan(b, inner.output_rank()) else {
            continue;
        };
        let sym: Vec<Dim> = (0..dims.len())
            .map(|k| Dim::symbol_bounded(&format!("s{k}"), 0, Some(1 << 20)))
            .collect();
        let Ok(plan) = compose(&inner, c1, &outer, c2, &sym, Clamp::Ov) else {
            continue;
        };
        let spec = strided_spec(&plan).expect("a constant plan");
        let d = strided_slice(&spec, Flavour::Ov, dims.len()).unwrap();
        assert_eq!(without_passing_checks(&d, &sym), plan, "{plan}");
        sym_ok += 1;
    }
    assert!(sym_ok > 500, "{sym_ok}");
}

// ---------------------------------------------------------------------------------------------
// The pass on ONNX models: one test per rewrite and per refusal. Expected elements are Python
// slicing of `arange` worked by hand; the rewritten node is read back from the saved model.

mod pass {
    use super::common::{self, i64_tensor, node, tensor_value};
    use prost::Message;
    use slice_opt::formats::onnx::{proto, OnnxModel};
    use slice_opt::pipeline::{PassKind, PassReport, Pipeline};
    use slice_opt::semantics::decode::constant;
    use slice_opt::semantics::{gather, onnx_slice, Clamp};
    use slice_opt::Model;

    /// A model: input `x` (float) of `dims`, `nodes`, constant `inits`, outputs `outs`.
    pub fn model(
        inputs: &[(&str, &[Option<u64>])],
        nodes: Vec<proto::NodeProto>,
        inits: Vec<proto::TensorProto>,
        outs: &[&str],
        opset: i64,
    ) -> proto::ModelProto {
        let mut m = common::model(proto::GraphProto {
            name: Some("g".into()),
            node: nodes,
            initializer: inits,
            input: inputs.iter().map(|(n, d)| tensor_value(n, 1, d)).collect(),
            output: outs
                .iter()
                .map(|o| proto::ValueInfoProto {
                    name: Some(o.to_string()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        m.opset_import[0].version = Some(opset);
        m
    }

    /// A Slice node `name` of `input` to `out` with constant parameters (initializers added).
    pub fn slice(
        name: &str,
        input: &str,
        out: &str,
        p: (&[i64], &[i64], &[i64], &[i64]),
        inits: &mut Vec<proto::TensorProto>,
    ) -> proto::NodeProto {
        let names: Vec<String> = ["starts", "ends", "axes", "steps"]
            .iter()
            .map(|w| format!("{name}_{w}"))
            .collect();
        for (n, v) in names.iter().zip([p.0, p.1, p.2, p.3]) {
            inits.push(i64_tensor(n, v));
        }
        let ins: Vec<&str> = std::iter::once(input)
            .chain(names.iter().map(String::as_str))
            .collect();
        node("Slice", name, &ins, &[out])
    }

    /// Runs `simplify` (and `cleanup`) on `m`: the model after, and simplify's report.
    pub fn simplify(m: &proto::ModelProto) -> (proto::ModelProto, PassReport) {
        let bytes = m.encode_to_vec();
        let onnx = OnnxModel::from_bytes("m.onnx".as_ref(), bytes::Bytes::from(bytes)).unwrap();
        let mut model = Model::Onnx(onnx);
        let report =
            Pipeline::with_passes(vec![PassKind::Infer, PassKind::Simplify, PassKind::Cleanup])
                .run(&mut model)
                .unwrap();
        let Model::Onnx(onnx) = model else {
            unreachable!()
        };
        (onnx.to_proto().unwrap(), report.passes[1].clone())
    }

    pub fn ops(m: &proto::ModelProto) -> Vec<String> {
        m.graph
            .as_ref()
            .unwrap()
            .node
            .iter()
            .map(|n| n.op_type().to_string())
            .collect()
    }

    fn ints_of(m: &proto::ModelProto, name: &str) -> Vec<i64> {
        let t = m
            .graph
            .as_ref()
            .unwrap()
            .initializer
            .iter()
            .find(|t| t.name() == name)
            .unwrap_or_else(|| panic!("no initializer {name}"));
        let raw = t.raw_data.as_ref().expect("raw data");
        raw.chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    /// The elements the (only) Slice node of `m` takes from an index tensor of `dims`, and
    /// the name of its data input.
    pub fn slice_selects(m: &proto::ModelProto, dims: &[u64]) -> (String, Vec<u64>) {
        let g = m.graph.as_ref().unwrap();
        let s = g
            .node
            .iter()
            .find(|n| n.op_type() == "Slice")
            .expect("a Slice");
        let v = |k: usize| ints_of(m, &s.input[k]);
        let plan = onnx_slice(
            &constant(&v(1)),
            &constant(&v(2)),
            Some(&v(3)),
            Some(&constant(&v(4))),
            dims.len(),
            13,
        )
        .unwrap();
        (
            s.input[0].clone(),
            gather(&plan, dims, Clamp::Ov, 1 << 20).unwrap(),
        )
    }

    pub fn skipped(r: &PassReport) -> String {
        r.skipped
            .iter()
            .map(|c| c.what.clone())
            .collect::<Vec<_>>()
            .join("; ")
    }
}

use pass::{model, ops, simplify, skipped, slice, slice_selects};

/// `x[0:INT64_MAX]` on a dynamic axis (then Relu) is removed.
#[test]
fn pass_removes_identity_on_symbolic_axis() {
    let mut inits = Vec::new();
    let s = slice("s", "x", "t", (&[0], &[i64::MAX], &[0], &[1]), &mut inits);
    let relu = common::node("Relu", "r", &["t"], &["y"]);
    let m = model(&[("x", &[None, Some(3)])], vec![s, relu], inits, &["y"], 17);
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Relu"]);
    assert_eq!(after.graph.as_ref().unwrap().node[0].input[0], "x");
    assert_eq!(r.changed, 1);
}

/// An identity slice whose output is a graph output stays (an Identity would replace it).
#[test]
fn pass_keeps_identity_that_is_a_graph_output() {
    let mut inits = Vec::new();
    let s = slice("s", "x", "y", (&[0], &[i64::MAX], &[0], &[1]), &mut inits);
    let m = model(&[("x", &[None])], vec![s], inits, &["y"], 17);
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Slice"]);
    assert!(skipped(&r).contains("graph output"), "{}", skipped(&r));
}

/// `x[2:30][1:10]` on x of 40 becomes one Slice of x selecting 3..12
/// (numpy: `arange(40)[2:30][1:10] == [3, 4, ..., 11]`).
#[test]
fn pass_merges_slice_of_slice_static() {
    let mut inits = Vec::new();
    let a = slice("a", "x", "t", (&[2], &[30], &[0], &[1]), &mut inits);
    let b = slice("b", "t", "y", (&[1], &[10], &[0], &[1]), &mut inits);
    let m = model(&[("x", &[Some(40)])], vec![a, b], inits, &["y"], 17);
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Slice"]);
    let (src, idx) = slice_selects(&after, &[40]);
    assert_eq!(src, "x");
    assert_eq!(idx, (3..12).collect::<Vec<u64>>());
    assert_eq!(r.changed, 1);
}

/// The same on a symbolic axis, and a reverse pair on a 2-D input:
/// `x[:, ::-1][:, 1::2]` of a `[N, 5]` input is `x[:, 3::-2]` (columns 3, 1).
#[test]
fn pass_merges_slice_of_slice_symbolic() {
    let mut inits = Vec::new();
    let a = slice("a", "x", "t", (&[2], &[30], &[0], &[1]), &mut inits);
    let b = slice("b", "t", "y", (&[1], &[10], &[0], &[1]), &mut inits);
    let m = model(&[("x", &[None])], vec![a, b], inits, &["y"], 17);
    let (after, _) = simplify(&m);
    assert_eq!(ops(&after), vec!["Slice"]);
    for n in [0u64, 2, 5, 12, 29, 40] {
        let want: Vec<u64> = (3..12).filter(|&i| i < n.min(30)).collect();
        assert_eq!(slice_selects(&after, &[n]).1, want, "size {n}");
    }
    let mut inits = Vec::new();
    let a = slice("a", "x", "t", (&[-1], &[i64::MIN], &[1], &[-1]), &mut inits);
    let b = slice("b", "t", "y", (&[1], &[i64::MAX], &[1], &[2]), &mut inits);
    let m = model(&[("x", &[None, Some(5)])], vec![a, b], inits, &["y"], 17);
    let (after, _) = simplify(&m);
    assert_eq!(ops(&after), vec!["Slice"]);
    // Rows 0 and 1 of a [2, 5] index tensor: columns 3, 1.
    assert_eq!(slice_selects(&after, &[2, 5]).1, vec![3, 1, 8, 6]);
}

/// `x[-5:][1:]` on a dynamic axis: `x[-4:]` only for sizes >= 5 (size 3: `[1, 2]` vs `[0, 1,
/// 2]`); both slices stay and the report says why.
#[test]
fn pass_refuses_merge_not_exact_for_every_size() {
    let mut inits = Vec::new();
    let a = slice("a", "x", "t", (&[-5], &[i64::MAX], &[0], &[1]), &mut inits);
    let b = slice("b", "t", "y", (&[1], &[i64::MAX], &[0], &[1]), &mut inits);
    let m = model(&[("x", &[None])], vec![a, b], inits, &["y"], 17);
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Slice", "Slice"]);
    assert!(
        skipped(&r).contains("no single slice is exact"),
        "{}",
        skipped(&r)
    );
}

/// A first slice read by two nodes is not merged into the second.
#[test]
fn pass_refuses_merge_when_inner_is_shared() {
    let mut inits = Vec::new();
    let a = slice("a", "x", "t", (&[2], &[30], &[0], &[1]), &mut inits);
    let b = slice("b", "t", "y", (&[1], &[10], &[0], &[1]), &mut inits);
    let relu = common::node("Relu", "r", &["t"], &["z"]);
    let m = model(
        &[("x", &[Some(40)])],
        vec![a, b, relu],
        inits,
        &["y", "z"],
        17,
    );
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Slice", "Slice", "Relu"]);
    assert!(skipped(&r).contains("2 consumers"), "{}", skipped(&r));
}

/// A fused QKV: `x[:, 0:64]`, `x[:, 64:128]`, `x[:, 128:192]` of `[B, 192]` -> one Split.
#[test]
fn pass_splits_disjoint_slices() {
    let mut inits = Vec::new();
    let q = slice("q", "x", "yq", (&[0], &[64], &[1], &[1]), &mut inits);
    let k = slice("k", "x", "yk", (&[64], &[128], &[1], &[1]), &mut inits);
    let v = slice("v", "x", "yv", (&[128], &[192], &[1], &[1]), &mut inits);
    let m = model(
        &[("x", &[None, Some(192)])],
        vec![q, k, v],
        inits,
        &["yq", "yk", "yv"],
        17,
    );
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Split"]);
    let g = after.graph.as_ref().unwrap();
    assert_eq!(g.node[0].output, vec!["yq", "yk", "yv"]);
    let split = g
        .initializer
        .iter()
        .find(|t| t.name() == g.node[0].input[1])
        .unwrap();
    let lens: Vec<i64> = split
        .raw_data
        .as_ref()
        .unwrap()
        .chunks(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(lens, vec![64, 64, 64]);
    assert_eq!(r.changed, 1);
}

/// Overlapping slices of one source stay apart.
#[test]
fn pass_refuses_split_of_overlapping_slices() {
    let mut inits = Vec::new();
    let q = slice("q", "x", "yq", (&[0], &[96], &[1], &[1]), &mut inits);
    let k = slice("k", "x", "yk", (&[64], &[128], &[1], &[1]), &mut inits);
    let m = model(
        &[("x", &[None, Some(192)])],
        vec![q, k],
        inits,
        &["yq", "yk"],
        17,
    );
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Slice", "Slice"]);
    assert!(skipped(&r).contains("overlap"), "{}", skipped(&r));
}

/// On a symbolic axis the last piece is the rest, which ONNX Split cannot say with constants:
/// refused (OpenVINO's VariadicSplit takes -1).
#[test]
fn pass_refuses_onnx_split_with_symbolic_rest() {
    let mut inits = Vec::new();
    let q = slice("q", "x", "yq", (&[0], &[64], &[0], &[1]), &mut inits);
    let k = slice("k", "x", "yk", (&[64], &[i64::MAX], &[0], &[1]), &mut inits);
    let m = model(&[("x", &[None])], vec![q, k], inits, &["yq", "yk"], 17);
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Slice", "Slice"]);
    assert!(skipped(&r).contains("every size"), "{}", skipped(&r));
}

/// `Concat([a(4), b(6)])[5:9]` is `b[1:5]` (numpy: `concatenate([arange(4), arange(6)])[5:9]
/// == [1, 2, 3, 4]`, elements of b).
#[test]
fn pass_forwards_slice_of_concat() {
    let mut inits = Vec::new();
    let mut cat = common::node("Concat", "c", &["a", "b"], &["t"]);
    cat.attribute.push(common::int_attr("axis", 0));
    let s = slice("s", "t", "y", (&[5], &[9], &[0], &[1]), &mut inits);
    let m = model(
        &[("a", &[Some(4)]), ("b", &[Some(6)])],
        vec![cat, s],
        inits,
        &["y"],
        17,
    );
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Slice"]);
    let (src, idx) = slice_selects(&after, &[6]);
    assert_eq!(src, "b");
    assert_eq!(idx, vec![1, 2, 3, 4]);
    assert_eq!(r.changed, 1);
}

/// A slice spanning both inputs of the Concat stays.
#[test]
fn pass_refuses_slice_spanning_concat_inputs() {
    let mut inits = Vec::new();
    let mut cat = common::node("Concat", "c", &["a", "b"], &["t"]);
    cat.attribute.push(common::int_attr("axis", 0));
    let s = slice("s", "t", "y", (&[3], &[6], &[0], &[1]), &mut inits);
    let m = model(
        &[("a", &[Some(4)]), ("b", &[Some(6)])],
        vec![cat, s],
        inits,
        &["y"],
        17,
    );
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Concat", "Slice"]);
    assert!(
        skipped(&r).contains("more than one input"),
        "{}",
        skipped(&r)
    );
}

/// `Shape(x)[1:3]` of a `[N, 3, M]` input is `Shape(x, start=1, end=3)` at opset 15.
#[test]
fn pass_shape_then_slice_to_shape_start_end() {
    let mut inits = Vec::new();
    let sh = common::node("Shape", "sh", &["x"], &["s"]);
    let s = slice("sl", "s", "y", (&[1], &[3], &[0], &[1]), &mut inits);
    let m = model(
        &[("x", &[None, Some(3), None])],
        vec![sh, s],
        inits,
        &["y"],
        15,
    );
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Shape"]);
    let n = &after.graph.as_ref().unwrap().node[0];
    let attr = |k: &str| n.attribute.iter().find(|a| a.name() == k).map(|a| a.i());
    assert_eq!((attr("start"), attr("end")), (Some(1), Some(3)));
    assert_eq!(n.output, vec!["y"]);
    assert_eq!(r.changed, 1);
}

/// Before opset 15 Shape has no start/end: left as is.
#[test]
fn pass_refuses_shape_slice_before_opset_15() {
    let mut inits = Vec::new();
    let sh = common::node("Shape", "sh", &["x"], &["s"]);
    let s = slice("sl", "s", "y", (&[1], &[3], &[0], &[1]), &mut inits);
    let m = model(
        &[("x", &[None, Some(3), None])],
        vec![sh, s],
        inits,
        &["y"],
        14,
    );
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Shape", "Slice"]);
    assert!(skipped(&r).contains("opset 15"), "{}", skipped(&r));
}

/// `Shape(x)[-2:-1]` then `Squeeze(axes=[0])` of `x: [N, T, 4]` (opset 14): Slice-13 `[-2:-1]`
/// of the 3 dims is `[1:2]`, the element at index 1 (`T`, not known), squeezed to a scalar:
/// written as one `Gather(Shape(x), 1)` whose index is a scalar initializer, under the
/// Squeeze's output.
#[test]
fn pass_shape_element_then_squeeze_is_a_gather() {
    let mut inits = Vec::new();
    let sh = common::node("Shape", "sh", &["x"], &["s"]);
    let sl = slice("sl", "s", "t", (&[-2], &[-1], &[0], &[1]), &mut inits);
    inits.push(common::i64_tensor("zero", &[0]));
    let sq = common::node("Squeeze", "sq", &["t", "zero"], &["y"]);
    let m = model(
        &[("x", &[None, None, Some(4)])],
        vec![sh, sl, sq],
        inits,
        &["y"],
        14,
    );
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Shape", "Gather"]);
    let g = after.graph.as_ref().unwrap();
    let n = &g.node[1];
    assert_eq!(
        (n.input[0].as_str(), n.output.clone()),
        ("s", vec!["y".to_string()])
    );
    let idx = g
        .initializer
        .iter()
        .find(|t| t.name() == n.input[1])
        .expect("index");
    assert!(idx.dims.is_empty(), "a scalar index: {:?}", idx.dims);
    let raw = idx.raw_data.as_ref().expect("raw");
    assert_eq!(i64::from_le_bytes(raw[..8].try_into().unwrap()), 1);
    assert_eq!(r.changed, 1);
}

/// GPT-2's causal mask `bias[:, :, st:en][:, :, :, 0:en]` (opset 13, `st` and `en` graph
/// inputs): one Slice of `bias` with axes `[2, 3]`, its starts and ends `Concat`s.
#[test]
fn pass_merges_computed_slices_on_disjoint_axes() {
    let mut inits = vec![
        common::i64_tensor("ax2", &[2]),
        common::i64_tensor("ax3", &[3]),
        common::i64_tensor("one", &[1]),
        common::i64_tensor("zero", &[0]),
    ];
    let s1 = common::node("Slice", "rows", &["x", "st", "en", "ax2", "one"], &["t"]);
    let s2 = common::node("Slice", "mask", &["t", "zero", "en", "ax3", "one"], &["y"]);
    let mut m = model(
        &[("x", &[Some(1), Some(1), Some(8), Some(8)])],
        vec![s1, s2],
        std::mem::take(&mut inits),
        &["y"],
        13,
    );
    let g = m.graph.as_mut().unwrap();
    g.input.push(common::tensor_value("st", 7, &[Some(1)]));
    g.input.push(common::tensor_value("en", 7, &[Some(1)]));
    let (after, r) = simplify(&m);
    let mut o = ops(&after);
    o.sort();
    assert_eq!(o, vec!["Concat", "Concat", "Slice"]);
    let g = after.graph.as_ref().unwrap();
    let s = g.node.iter().find(|n| n.op_type() == "Slice").unwrap();
    assert_eq!(
        (s.input[0].as_str(), s.output.clone()),
        ("x", vec!["y".to_string()])
    );
    let axes = g
        .initializer
        .iter()
        .find(|t| t.name() == s.input[3])
        .expect("axes");
    let raw = axes.raw_data.as_ref().expect("raw");
    let axes: Vec<i64> = raw
        .chunks(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(axes, vec![2, 3]);
    assert_eq!(r.changed, 1);
}

// ---------------------------------------------------------------------------------------------
// The pass on OpenVINO IR.

mod ir {
    use slice_opt::formats::openvino::OvModel;
    use slice_opt::pipeline::{PassKind, PassReport, Pipeline};
    use slice_opt::Model;

    /// A small IR under construction: layers, edges, weights.
    #[derive(Default)]
    pub struct Ir {
        layers: String,
        edges: String,
        bin: Vec<u8>,
        /// Output port id of each layer.
        out_port: Vec<usize>,
    }

    fn dims(d: &[i64]) -> String {
        d.iter().map(|v| format!("<dim>{v}</dim>")).collect()
    }

    impl Ir {
        fn add(&mut self, body: String, out_port: usize) -> usize {
            let id = self.out_port.len();
            self.layers.push_str(&body.replace("ID", &id.to_string()));
            self.out_port.push(out_port);
            id
        }
        /// A Parameter with the `shape` attribute (intervals allowed) and port dims.
        pub fn parameter(&mut self, shape: &str, port: &[i64]) -> usize {
            self.add(
                format!(
                    "<layer id=\"ID\" name=\"x\" type=\"Parameter\" version=\"opset1\"><data shape=\"{shape}\" element_type=\"f32\"/><output><port id=\"0\" precision=\"FP32\" names=\"x\">{}</port></output></layer>\n",
                    dims(port)
                ),
                0,
            )
        }
        /// An i32 Const `arange` of `shape`.
        pub fn arange(&mut self, shape: &[i64]) -> usize {
            let n: i64 = shape.iter().product();
            let off = self.bin.len();
            self.bin.extend((0..n as i32).flat_map(|v| v.to_le_bytes()));
            let s: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
            self.add(
                format!(
                    "<layer id=\"ID\" name=\"data\" type=\"Const\" version=\"opset1\"><data element_type=\"i32\" shape=\"{}\" offset=\"{off}\" size=\"{}\"/><output><port id=\"0\" precision=\"I32\">{}</port></output></layer>\n",
                    s.join(","),
                    n * 4,
                    dims(shape)
                ),
                0,
            )
        }
        pub fn konst(&mut self, v: &[i64]) -> usize {
            let off = self.bin.len();
            self.bin.extend(v.iter().flat_map(|x| x.to_le_bytes()));
            self.add(
                format!(
                    "<layer id=\"ID\" name=\"c{off}\" type=\"Const\" version=\"opset1\"><data element_type=\"i64\" shape=\"{}\" offset=\"{off}\" size=\"{}\"/><output><port id=\"0\" precision=\"I64\"><dim>{}</dim></port></output></layer>\n",
                    v.len(),
                    v.len() * 8,
                    v.len()
                ),
                0,
            )
        }
        /// A layer of `ty` reading `inputs` (layer, its dims); output dims `out`.
        pub fn op(
            &mut self,
            name: &str,
            ty: &str,
            version: &str,
            attrs: &str,
            inputs: &[(usize, Vec<i64>)],
            out: Option<&[i64]>,
        ) -> usize {
            let id = self.out_port.len();
            let mut ins = String::new();
            for (k, (src, d)) in inputs.iter().enumerate() {
                ins.push_str(&format!("<port id=\"{k}\">{}</port>", dims(d)));
                self.edges.push_str(&format!(
                    "<edge from-layer=\"{src}\" from-port=\"{}\" to-layer=\"{id}\" to-port=\"{k}\"/>\n",
                    self.out_port[*src]
                ));
            }
            let k = inputs.len();
            let output = match out {
                Some(o) => format!(
                    "<output><port id=\"{k}\" names=\"{name}\">{}</port></output>",
                    dims(o)
                ),
                None => String::new(),
            };
            self.add(
                format!("<layer id=\"ID\" name=\"{name}\" type=\"{ty}\" version=\"{version}\"><data {attrs}/><input>{ins}</input>{output}</layer>\n"),
                k,
            )
        }
        pub fn result(&mut self, src: usize, d: &[i64]) {
            let name = format!("out{src}");
            self.op(&name, "Result", "opset1", "", &[(src, d.to_vec())], None);
        }
        pub fn model(&self) -> Model {
            let xml = format!(
                "<?xml version=\"1.0\"?>\n<net name=\"t\" version=\"11\">\n<layers>\n{}</layers>\n<edges>\n{}</edges>\n</net>\n",
                self.layers, self.edges
            );
            let ov = OvModel::from_parts(
                "t.xml".as_ref(),
                xml,
                Some(bytes::Bytes::from(self.bin.clone())),
            )
            .expect("IR loads");
            Model::OpenVino(ov)
        }
    }

    /// Runs infer, simplify and cleanup, saves and reloads: op types after, simplify's report,
    /// and the model reloaded.
    pub fn simplify(m: Model) -> (Vec<String>, PassReport, Model) {
        let mut m = m;
        let r = Pipeline::with_passes(vec![PassKind::Infer, PassKind::Simplify, PassKind::Cleanup])
            .run(&mut m)
            .unwrap();
        let Model::OpenVino(ov) = &m else {
            unreachable!()
        };
        let (xml, bins) = ov.to_parts().unwrap();
        let bin: Vec<u8> = bins.iter().flat_map(|b| b.iter().copied()).collect();
        let ov = OvModel::from_parts("t.xml".as_ref(), xml, Some(bytes::Bytes::from(bin))).unwrap();
        let m = Model::OpenVino(ov);
        let g = m.graph();
        let ops =
            g.g.node_indices()
                .map(|ix| g.node(ix).op_type.to_string())
                .filter(|t| !matches!(t.as_str(), "Const" | "Parameter" | "Result" | ""))
                .collect();
        (ops, r.passes[1].clone(), m)
    }

    /// The i32 constant reaching the first Result after folding.
    pub fn folded_result(mut m: Model) -> Vec<i64> {
        Pipeline::with_passes(vec![PassKind::Fold, PassKind::Cleanup])
            .run(&mut m)
            .unwrap();
        let g = m.graph();
        let res =
            g.g.node_indices()
                .find(|&ix| g.node(ix).op_type == "Result")
                .unwrap();
        let src = g.input(res, 0).unwrap();
        g.constant_at(src).expect("folded").to_i64_vec().unwrap()
    }
}

/// IR: `x[1:, ::-1]` then `[0, 1::2]` (a shrink) on arange [4, 6] is one StridedSlice taking
/// elements 10, 8, 6 (numpy: `arange(24).reshape(4, 6)[1:, ::-1][0, 1::2] == [10, 8, 6]`).
#[test]
fn pass_ir_merges_strided_slices() {
    let mut ir = ir::Ir::default();
    let x = ir.arange(&[4, 6]);
    let (b, e, s) = (ir.konst(&[1, 0]), ir.konst(&[0, 0]), ir.konst(&[1, -1]));
    let a = ir.op(
        "a",
        "StridedSlice",
        "opset1",
        "begin_mask=\"0,1\" end_mask=\"1,1\" new_axis_mask=\"\" shrink_axis_mask=\"\" ellipsis_mask=\"\"",
        &[(x, vec![4, 6]), (b, vec![2]), (e, vec![2]), (s, vec![2])],
        Some(&[3, 6]),
    );
    let (b, e, s) = (ir.konst(&[0, 1]), ir.konst(&[1, 0]), ir.konst(&[1, 2]));
    let c = ir.op(
        "b",
        "StridedSlice",
        "opset1",
        "begin_mask=\"0,0\" end_mask=\"0,1\" new_axis_mask=\"\" shrink_axis_mask=\"1,0\" ellipsis_mask=\"\"",
        &[(a, vec![3, 6]), (b, vec![2]), (e, vec![2]), (s, vec![2])],
        Some(&[3]),
    );
    ir.result(c, &[3]);
    let (ops, r, m) = ir::simplify(ir.model());
    assert_eq!(ops, vec!["StridedSlice"], "{:?}", r.skipped);
    assert_eq!(r.changed, 1);
    assert_eq!(ir::folded_result(m), vec![10, 8, 6]);
}

/// IR: `x[0:64]` and `x[64:]` of a Parameter of size `64..` are one VariadicSplit (the second
/// piece the rest, `-1`); from size 0 they are refused (at size 10 `x[0:64]` is all of it).
#[test]
fn pass_ir_variadic_split_with_rest() {
    let build = |shape: &str| {
        let mut ir = ir::Ir::default();
        let x = ir.parameter(shape, &[-1]);
        let mut outs = Vec::new();
        for (k, (b, e)) in [(0i64, 64i64), (64, i64::MAX)].into_iter().enumerate() {
            let (b, e, s, a) = (
                ir.konst(&[b]),
                ir.konst(&[e]),
                ir.konst(&[1]),
                ir.konst(&[0]),
            );
            let o = ir.op(
                &format!("s{k}"),
                "Slice",
                "opset8",
                "",
                &[
                    (x, vec![-1]),
                    (b, vec![1]),
                    (e, vec![1]),
                    (s, vec![1]),
                    (a, vec![1]),
                ],
                Some(&[-1]),
            );
            outs.push(o);
        }
        for o in outs {
            ir.result(o, &[-1]);
        }
        ir.model()
    };
    let (ops, r, _) = ir::simplify(build("64.."));
    assert_eq!(ops, vec!["VariadicSplit"], "{:?}", r.skipped);
    assert!(
        r.changes[0].what.contains("[64, -1]"),
        "{}",
        r.changes[0].what
    );
    let (ops, r, _) = ir::simplify(build("?"));
    assert_eq!(ops, vec!["Slice", "Slice"]);
    assert!(
        skipped_has(&r, "no single slice is exact"),
        "{:?}",
        r.skipped
    );
}

fn skipped_has(r: &slice_opt::pipeline::PassReport, what: &str) -> bool {
    r.skipped.iter().any(|c| c.what.contains(what))
}

/// `Shape(x)[-1:]` of a `[N, 3, 32]` input selects a known dim only: the constant `[32]`, at
/// any opset (here 13).
#[test]
fn pass_shape_then_slice_of_known_dims_is_a_constant() {
    let mut inits = Vec::new();
    let sh = common::node("Shape", "sh", &["x"], &["s"]);
    let s = slice("sl", "s", "t", (&[-1], &[i64::MAX], &[0], &[1]), &mut inits);
    let mut cast = common::node("Cast", "c", &["t"], &["y"]);
    cast.attribute.push(common::int_attr("to", 1));
    let m = model(
        &[("x", &[None, Some(3), Some(32)])],
        vec![sh, s, cast],
        inits,
        &["y"],
        13,
    );
    let (after, r) = simplify(&m);
    assert_eq!(ops(&after), vec!["Cast"]);
    let g = after.graph.as_ref().unwrap();
    let t = g
        .initializer
        .iter()
        .find(|t| t.name() == g.node[0].input[0])
        .unwrap();
    let v: Vec<i64> = t
        .raw_data
        .as_ref()
        .unwrap()
        .chunks(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(v, vec![32]);
    assert_eq!(r.changed, 1);
}
