//! Tests of the slice resolver: concrete and symbolic dims, symbolic parameters, bounds.
use super::*;
use crate::semantics::decode::TfMasks;
use crate::semantics::decode::{onnx_slice_with_provenance, strided_slice_with_provenance};
use crate::semantics::{onnx_slice, Flavour, StridedSliceSpec};
use std::collections::HashMap;

/// Decodes a slice from its begin and end values (`None`: not constant).
type DecodeFn<'a> =
    dyn Fn(&[Option<i64>], &[Option<i64>]) -> Result<(SlicePlan, Provenance), SliceError> + 'a;

/// The oracle for [`SymParams::from_provenance`]: finds which plan entry each symbolic
/// parameter element feeds without knowing the op's decoding rules. Each expression element
/// is probed alone (set to a constant while the others stay as they are); the entry whose
/// bound turns from `Dynamic` into that index is the one it feeds.
fn locate(
    decode: &DecodeFn<'_>,
    begin: &[Dim],
    end: &[Dim],
) -> Result<(SlicePlan, SymParams), SliceError> {
    let base_b: Vec<Option<i64>> = begin.iter().map(Dim::as_known).collect();
    let base_e: Vec<Option<i64>> = end.iter().map(Dim::as_known).collect();
    let (plan, _) = decode(&base_b, &base_e)?;
    let n = plan.axes.len();
    let mut out = SymParams {
        begin: vec![None; n],
        end: vec![None; n],
    };
    for (list, is_begin) in [(begin, true), (end, false)] {
        for (j, v) in list.iter().enumerate() {
            if !says_more(v) {
                continue;
            }
            let (mut b, mut e) = (base_b.clone(), base_e.clone());
            if is_begin {
                b[j] = Some(0);
            } else {
                e[j] = Some(0);
            }
            let Ok((probe, _)) = decode(&b, &e) else {
                continue;
            };
            if probe.axes.len() != n {
                continue;
            }
            for (k, (p0, p1)) in plan.axes.iter().zip(&probe.axes).enumerate() {
                match (p0, p1) {
                    (
                        AxisPlan::Range {
                            begin: b0, end: e0, ..
                        },
                        AxisPlan::Range {
                            begin: b1, end: e1, ..
                        },
                    ) => {
                        if *b0 == Bound::Dynamic && *b1 != Bound::Dynamic {
                            out.begin[k] = Some(v.clone());
                        }
                        if *e0 == Bound::Dynamic && *e1 != Bound::Dynamic {
                            out.end[k] = Some(v.clone());
                        }
                    }
                    (
                        AxisPlan::Shrink { index: None, .. },
                        AxisPlan::Shrink { index: Some(_), .. },
                    ) => out.begin[k] = Some(v.clone()),
                    _ => {}
                }
            }
        }
    }
    Ok((plan, out))
}

/// The plan and the symbolic parameters of a slice, placed by the decoder's provenance, after
/// checking them against the oracle.
fn placed(
    decode: &DecodeFn<'_>,
    begin: &[Dim],
    end: &[Dim],
) -> Result<(SlicePlan, SymParams), SliceError> {
    let base_b: Vec<Option<i64>> = begin.iter().map(Dim::as_known).collect();
    let base_e: Vec<Option<i64>> = end.iter().map(Dim::as_known).collect();
    let (plan, prov) = decode(&base_b, &base_e)?;
    let params = SymParams::from_provenance(&prov, begin, end);
    let (oracle_plan, oracle) = locate(decode, begin, end)?;
    assert_eq!(plan, oracle_plan);
    assert_eq!(params, oracle, "{plan} from {prov:?}");
    Ok((plan, params))
}

#[test]
fn symbolic_begin_of_unknown_sign_is_exact() {
    // gpt2's causal mask: bias[k_len - q_len : k_len] on an axis of 32, steps 1 and 2,
    // for every pair of sizes (including k_len < q_len, where the begin is negative).
    let (q, k) = (Dim::symbol("q"), Dim::symbol("k"));
    for step in [1i64, 2, -1] {
        let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
            onnx_slice_with_provenance(b, e, Some(&[0]), Some(&[Some(step)]), 1, 13)
        };
        let (plan, params) = placed(&decode, &[k.sub(&q)], std::slice::from_ref(&k)).unwrap();
        let sym = resolve_dims_sym(&plan, &[Dim::known(32)], Clamp::Ov, &params).unwrap();
        assert!(!sym[0].is_unknown(), "{}", sym[0]);
        for qv in 0..40i64 {
            for kv in 0..40i64 {
                let p = onnx_slice(
                    &[Some(kv - qv)],
                    &[Some(kv)],
                    Some(&[0]),
                    Some(&[Some(step)]),
                    1,
                    13,
                )
                .unwrap();
                let want = output_shape(&p, &[32], Clamp::Ov).unwrap()[0] as i64;
                let b: HashMap<String, i64> = [("q".into(), qv), ("k".into(), kv)].into();
                assert_eq!(
                    sym[0].eval(&b),
                    Some(want),
                    "q={qv} k={kv} step={step}: {}",
                    sym[0]
                );
            }
        }
    }
}

#[test]
fn whole_axis_ranges_of_a_symbol_are_exact() {
    // ONNX Slice on a symbolic axis, begins and ends at and next to the edges, steps 1, 2
    // and -1: the symbolic dim evaluates to the concrete rule's length for every size.
    let n = Dim::symbol("n");
    let (max, min) = (Some(i64::MAX), Some(i64::MIN));
    let cases = [
        (Some(0), max),
        (Some(0), Some(i64::MAX - 1)),
        (Some(1), max),
        (Some(0), Some(-1)),
        (Some(-1), min),
        (Some(0), Some(5)),
    ];
    for (b, e) in cases {
        for step in [1i64, 2, -1] {
            let plan = onnx_slice(&[b], &[e], Some(&[0]), Some(&[Some(step)]), 1, 13).unwrap();
            for clamp in [Clamp::Ov, Clamp::Tf] {
                let sym = resolve_dims(&plan, std::slice::from_ref(&n), clamp).unwrap();
                for nv in 0..12i64 {
                    let want = output_shape(&plan, &[nv as u64], clamp).unwrap()[0] as i64;
                    let bind: HashMap<String, i64> = [("n".into(), nv)].into();
                    assert_eq!(
                        sym[0].eval(&bind),
                        Some(want),
                        "n={nv} [{b:?}:{e:?}:{step}] {clamp:?}: {}",
                        sym[0]
                    );
                }
            }
        }
    }
    // The edge on both sides with step 1 is the dim itself, symbol or unknown.
    for d in [n.clone(), Dim::unknown_bounded(2, Some(9))] {
        let edges = range_dim_sym(&d, &SymBound::Edge, &SymBound::Edge, Some(1), Clamp::Ov);
        assert_eq!(edges, d);
    }
}

#[test]
fn symbolic_strided_slice_params_are_located() {
    // x[..., n:] with an ellipsis and a new axis in front: the probe finds the entry.
    let n = Dim::symbol("n");
    let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
        let m = TfMasks {
            ellipsis: 1,
            new_axis: 2,
            end: 4,
            ..Default::default()
        };
        let mut spec = StridedSliceSpec::from_tf_bits(&[0, 0, 0], &[0, 0, 0], None, m);
        spec.begin = b.to_vec();
        spec.end = e.to_vec();
        strided_slice_with_provenance(&spec, Flavour::Tf, 2)
    };
    let (plan, params) = placed(
        &decode,
        &[Dim::known(0), Dim::known(0), n.clone()],
        &[Dim::known(0), Dim::known(0), Dim::known(0)],
    )
    .unwrap();
    let out = resolve_dims_sym(
        &plan,
        &[Dim::known(3), Dim::symbol("T")],
        Clamp::Tf,
        &params,
    )
    .unwrap();
    let shown: Vec<String> = out.iter().map(|d| d.to_string()).collect();
    assert_eq!(shown[..2], ["3".to_string(), "1".to_string()]);
    let b: HashMap<String, i64> = [("n".into(), 2), ("T".into(), 7)].into();
    assert_eq!(out[2].eval(&b), Some(5), "{}", out[2]);
}

#[test]
fn provenance_places_parameters_where_probing_finds_them() {
    // Every combination of the five TensorFlow masks over three entries (and OpenVINO mask
    // lists of the same bits), on ranks 1 to 4, begin/end elements a mix of expressions,
    // constants and unknowns: the decoder's provenance places each expression on the entry
    // the probing oracle finds. Combinations the decoder refuses are skipped.
    let x = |i: usize| Dim::symbol(&format!("x{i}"));
    let lists: [Vec<Dim>; 3] = [
        (0..3).map(x).collect(),
        vec![x(0), Dim::known(2), Dim::unknown()],
        vec![
            Dim::known(-1),
            Dim::unknown_bounded(-4, Some(9)),
            x(2).neg(),
        ],
    ];
    let mut checked = 0;
    for bits in 0u32..1 << 15 {
        let m = |k: u32| i64::from((bits >> (3 * k)) & 7);
        let masks = TfMasks {
            begin: m(0),
            end: m(1),
            ellipsis: m(2),
            new_axis: m(3),
            shrink: m(4),
        };
        // A sample of the combinations (all would take long in a debug build).
        if bits % 7 != 0 {
            continue;
        }
        for rank in 1..=4 {
            for flavour in [Flavour::Tf, Flavour::Ov] {
                for (begin, end) in [(&lists[0], &lists[1]), (&lists[2], &lists[0])] {
                    let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
                        let mut spec =
                            StridedSliceSpec::from_tf_bits(&[0; 3], &[0; 3], None, masks);
                        spec.begin = b.to_vec();
                        spec.end = e.to_vec();
                        strided_slice_with_provenance(&spec, flavour, rank)
                    };
                    if placed(&decode, begin, end).is_ok() {
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked > 5000, "{checked}");
    // ONNX Slice: listed axes in any order, negative ones included.
    for axes in [&[0i64, 1, 2][..], &[2, 0, 1], &[-1, 0, -2], &[1, 2, 0]] {
        for rank in 3..=4 {
            let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
                onnx_slice_with_provenance(b, e, Some(axes), None, rank, 13)
            };
            placed(&decode, &lists[0], &lists[2]).unwrap();
            placed(&decode, &lists[1], &lists[0]).unwrap();
        }
    }
}

#[test]
fn negative_begins_and_ends_from_a_shape_are_exact() {
    // Issue 42, pattern B, by the ONNX Slice spec (positive step: starts and ends below 0
    // get the dim added, then clamp to [0, dim]; negative step: starts clamp to
    // [0, dim - 1], ends to [-1, dim - 1]).
    let seq = Dim::symbol("seq");
    let dims = [Dim::symbol("b"), Dim::known(4), seq.clone(), Dim::known(16)];
    // x[:, :, -seq:, :]: start -seq + seq = 0 for seq > 0, and 0 (clamped) for seq = 0;
    // end INT64_MAX clamps to seq: exactly seq.
    let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
        onnx_slice_with_provenance(b, e, Some(&[2]), None, 4, 13)
    };
    let (plan, params) = placed(&decode, &[seq.neg()], &[Dim::known(i64::MAX)]).unwrap();
    let out = resolve_dims_sym(&plan, &dims, Clamp::Ov, &params).unwrap();
    assert_eq!(out, dims, "{}", out[2]);
    // x[::-1] as exporters write it, x[-1 : -(N + 1) : -1] with N = Shape(x)[0]: start
    // -1 + N = N - 1, end -(N + 1) + N = -1 (clamped to [-1, N - 1]): N elements. For N = 0
    // both are -1 after clamping (start's [0, -1] is empty): 0 = N.
    let n = Dim::symbol("N");
    let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
        onnx_slice_with_provenance(b, e, Some(&[0]), Some(&[Some(-1)]), 1, 13)
    };
    let end = n.add_const(1).neg();
    let (plan, params) = placed(&decode, &[Dim::known(-1)], &[end]).unwrap();
    let out = resolve_dims_sym(&plan, std::slice::from_ref(&n), Clamp::Ov, &params).unwrap();
    assert_eq!(out, [n], "{}", out[0]);
}

#[test]
fn end_of_unknown_sign_on_a_model_symbol_is_exact() {
    // OpenVINO Slice-8 x[2 : N - 5] on a dim N (a model's symbol, 0..2^31 - 1), by the
    // spec (a negative end gets N added, then begin and end clamp to [0, N]):
    // N <= 3: the begin is min(2, N), the end clamps to at most 1: 0 elements;
    // N = 4: end -1 + 4 = 3, begin 2: 1 element;
    // 5 <= N: the end N - 5 >= 0 as is: max(N - 5 - 2, 0) elements (0 for N = 5, 6).
    // (dims_props found N = 4 written 0: the bounds of a min of the two clamp readings
    // missed the point where one peaks, and the reading that holds at N = 4 was dropped.)
    let n = crate::semantics::dim::model_symbol("N");
    let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
        crate::semantics::decode::ov_slice8_with_provenance(b, e, None, None, 1)
    };
    let (plan, params) = placed(&decode, &[Dim::known(2)], &[n.add_const(-5)]).unwrap();
    let out = resolve_dims_sym(&plan, std::slice::from_ref(&n), Clamp::Ov, &params).unwrap();
    let want = |v: i64| if v == 4 { 1 } else { (v - 7).max(0) };
    let (lo, hi) = out[0].bounds();
    for v in (0..64).chain([1000, 65_537, i32::MAX as i64]) {
        let b: HashMap<String, i64> = [("N".to_string(), v)].into();
        assert_eq!(out[0].eval(&b), Some(want(v)), "N = {v}: {}", out[0]);
        assert!(lo.is_none_or(|l| l <= want(v)) && hi.is_none_or(|h| want(v) <= h));
    }
}

#[test]
fn bounds_of_a_sum_with_a_floor_hold_between_breakpoints() {
    // N - 2*floor(N/2) is N mod 2: 0 at even N, 1 at odd N (0 at both ends of 0..100, so
    // evaluating at the ends only gave 0..0, and N - 2*floor(N/2) "was" 0).
    let n = Dim::symbol_bounded("N", 0, Some(100));
    let odd = n.sub(&n.div_floor(2).mul_const(2));
    let (lo, hi) = odd.bounds();
    assert!(
        lo.is_none_or(|l| l <= 0) && hi.is_none_or(|h| h >= 1),
        "{lo:?}..{hi:?}"
    );
    // min(2147483649*floor(N/2), N) at N = 1 is min(0, 1) = 0: not N.
    let m = n.div_floor(2).mul_const(2_147_483_649).min(&n);
    let b: HashMap<String, i64> = [("N".to_string(), 1)].into();
    assert_eq!(m.eval(&b), Some(0), "{m}");
}

#[test]
fn unknown_begins_and_ends_keep_what_their_bounds_say() {
    // A value element computed from an unknown dim is unknown but `>= 0`. OpenVINO Slice-8
    // x[:, ?:1000000000] on `?`: at most 1e9 - 0 elements (tf2onnx's `x[:, T // 2:]`).
    let decode = |b: &[Option<i64>], e: &[Option<i64>]| {
        crate::semantics::decode::ov_slice8_with_provenance(b, e, None, None, 2)
    };
    let (plan, params) = placed(
        &decode,
        &[Dim::known(0), Dim::unknown()],
        &[Dim::known(1_000_000_000), Dim::known(1_000_000_000)],
    )
    .unwrap();
    let dims = [Dim::unknown(), Dim::unknown()];
    let out = resolve_dims_sym(&plan, &dims, Clamp::Ov, &params).unwrap();
    assert_eq!(out[1].to_string(), "0..1000000000");
    // x[:, :?] on `?` (the end unknown and >= 0): nothing bounds it; no vacuous
    // `0..9223372036854775807` either.
    let (plan, params) = placed(
        &decode,
        &[Dim::known(0), Dim::known(0)],
        &[Dim::known(i64::MAX), Dim::unknown()],
    )
    .unwrap();
    let out = resolve_dims_sym(&plan, &dims, Clamp::Ov, &params).unwrap();
    assert_eq!(out[1], Dim::unknown(), "{}", out[1]);
}

#[test]
fn unknown_begins_and_ends_with_bounds_give_the_exact_interval() {
    // Issue 42, pattern E: a begin and an end known only by their bounds (OpenVINO's
    // `evaluate_lower/upper` of `ShapeOf(x) - c`), on a known dim or an interval dim: the
    // output is exactly the interval of the lengths over every begin, end and dim in their
    // bounds (brute force through the concrete rule), for both clamping rules.
    let vals = [
        (-8, -3),
        (-5, 4),
        (-1, 0),
        (0, 0),
        (0, 6),
        (2, 9),
        (-9, 9),
        (3, 3),
    ];
    let dims = [(0, 0), (3, 3), (7, 7), (0, 5), (2, 8), (6, 9)];
    for &(bl, bh) in &vals {
        for &(el, eh) in &vals {
            for &(dl, dh) in &dims {
                for step in [1i64, 2, 3, -1, -2, -3] {
                    for clamp in [Clamp::Ov, Clamp::Tf] {
                        let (mut lo, mut hi) = (u64::MAX, 0);
                        for d in dl..=dh {
                            for b in bl..=bh {
                                for e in el..=eh {
                                    let (_, len) = range_concrete(
                                        d as i128,
                                        Bound::Index(b),
                                        Bound::Index(e),
                                        step,
                                        clamp,
                                    )
                                    .unwrap();
                                    lo = lo.min(len as u64);
                                    hi = hi.max(len as u64);
                                }
                            }
                        }
                        let p = |l: i64, h: i64| SymBound::Index(Dim::unknown_bounded(l, Some(h)));
                        let d = Dim::unknown_bounded(dl, Some(dh));
                        let got = range_dim_sym(&d, &p(bl, bh), &p(el, eh), Some(step), clamp);
                        assert_eq!(
                            got.bounds(),
                            (Some(lo as i64), Some(hi as i64)),
                            "d {dl}..{dh} b {bl}..{bh} e {el}..{eh} step {step} {clamp:?}: {got}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn unknown_dims_get_exact_intervals() {
    // OpenVINO type_prop: x[2:8] on `?` is 0..6; x[-7:] on `?` is 0..7.
    let p = onnx_slice(&[Some(2)], &[Some(8)], None, None, 1, 13).unwrap();
    let out = resolve_dims(&p, &[Dim::unknown()], Clamp::Ov).unwrap();
    assert_eq!(out[0].to_string(), "0..6");
    let p = onnx_slice(&[Some(-7)], &[Some(i64::MAX)], None, None, 1, 13).unwrap();
    let out = resolve_dims(&p, &[Dim::unknown()], Clamp::Ov).unwrap();
    assert_eq!(out[0].to_string(), "0..7");
    let out = resolve_dims(&p, &[Dim::unknown_bounded(20, None)], Clamp::Ov).unwrap();
    assert_eq!(out[0].to_string(), "7");
}

/// The floor spelling of a normalized index, `clamp(v - D*floor(v/(2D)))`, against the
/// specifications' rule (ONNX Slice / OpenVINO: a negative index counts from the end, `v + D`,
/// then clamped to `[lo, hi]`) at every `v` in `[-7D, 7D]`, for each clamp `range_dim_sym` uses,
/// on dims 1..=40. Where a side is not clamped, the length the caller computes (against a
/// clamped other end) is compared instead.
#[test]
fn floor_spelling_is_the_specification_index() {
    // v = a - b over two dims (symbols are never negative): every sign.
    let v = Dim::symbol("a").sub(&Dim::symbol("b"));
    let zero = Dim::known(0);
    let neg1 = Dim::known(-1);
    for size in 1..=40i64 {
        let d = Dim::known(size);
        let last = Dim::known(size - 1);
        let spec = |x: i64, lo: i64, hi: i64| if x < 0 { (x + size).max(lo) } else { x.min(hi) };
        let clamps: [(Option<&Dim>, Option<&Dim>, i64, i64); 5] = [
            (Some(&zero), None, 0, size),
            (None, Some(&d), 0, size),
            (None, Some(&last), -1, size - 1),
            (Some(&zero), Some(&last), 0, size - 1),
            (Some(&neg1), None, -1, size - 1),
        ];
        for (lo, hi, lo_v, hi_v) in clamps {
            let w = floor_clamp(&v, &d, lo, hi);
            assert!(!w.is_unknown(), "{size}: unknown");
            for x in -7 * size..=7 * size {
                let (av, bv) = if x < 0 { (3, 3 - x) } else { (x + 5, 5) };
                let b: HashMap<String, i64> = [("a".to_string(), av), ("b".to_string(), bv)].into();
                let got = w.eval(&b).expect("evaluates");
                let want = spec(x, lo_v, hi_v);
                match (lo, hi) {
                    (Some(_), Some(_)) => assert_eq!(got, want, "D = {size}, v = {x}: {w}"),
                    // No clamp at hi: a start at or past hi selects nothing either way.
                    (Some(_), None) => assert_eq!(got.min(hi_v), want, "D = {size}, v = {x}: {w}"),
                    // No clamp at lo: at or before lo, nothing either way.
                    _ => assert_eq!(got.max(lo_v), want, "D = {size}, v = {x}: {w}"),
                }
            }
        }
    }
}

/// GPT-2's causal mask rows, `bias[k - q : k]` on 32 rows (`models/gpt2_causal_mask.onnx`):
/// the written dim equals the ONNX Slice specification's length for every k, q in 0..=150, and
/// is 80 characters at most as written in a model.
#[test]
fn gpt2_mask_rows_are_exact_and_short() {
    let k = Dim::symbol("k_len");
    let q = Dim::symbol("q_len");
    let rows = 32i64;
    let r = range_dim_sym(
        &Dim::known(rows),
        &SymBound::Index(k.sub(&q)),
        &SymBound::Index(k.clone()),
        Some(1),
        Clamp::Ov,
    );
    let text = r.to_onnx().expect("an expression");
    assert!(text.len() <= 80, "{} characters: {text}", text.len());
    for kv in 0..=150i64 {
        for qv in 0..=150i64 {
            // ONNX Slice: negative start + dim, clamp to [0, dim]; end likewise.
            let norm = |x: i64| {
                if x < 0 {
                    (x + rows).max(0)
                } else {
                    x.min(rows)
                }
            };
            let want = (norm(kv) - norm(kv - qv)).max(0);
            let b: HashMap<String, i64> =
                [("k_len".to_string(), kv), ("q_len".to_string(), qv)].into();
            assert_eq!(r.eval(&b), Some(want), "k = {kv}, q = {qv}: {text}");
        }
    }
}
