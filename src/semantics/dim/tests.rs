//! Tests of the dim algebra.

use super::*;

/// A root of a decreasing piece between two integers: both neighbours are breakpoints.
/// `x[2:N-5]` on `N` (OpenVINO clamping) built as `resolve` builds it: at N = 4 the end is
/// `-1`, i.e. 3, one element; the bound search once skipped N = 4 and dropped the arm that
/// holds there (dims_props seed eb18e384).
#[test]
fn breakpoints_of_a_falling_piece_include_the_point_before_its_root() {
    let n = Dim::symbol_bounded("N", 0, Some(i32::MAX as i64));
    let v = n.add_const(-5);
    let zero = Dim::known(0);
    let a = v.min(&n).max(&zero);
    let b = v.add(&n).min(&n).max(&zero);
    let m = i32::MAX as i64 + 2;
    let s1 = v.mul_const(m).add_const(m).max(&zero).add_const(-1);
    let s0 = v.neg().mul_const(m).max(&zero).add_const(-1);
    let stop = a.min(&s1).max(&b.min(&s0));
    let len = stop.add_const(-2).max(&zero);
    for nv in 0..40i64 {
        let end = if nv - 5 < 0 { 2 * nv - 5 } else { nv - 5 };
        let want = (end.clamp(0, nv) - 2.min(nv)).max(0);
        let got = len.eval(&HashMap::from([("N".to_string(), nv)]));
        assert_eq!(got, Some(want), "N = {nv}: {len}");
    }
}

/// A constant has one form however it is reached (a value, an expression whose symbols
/// cancel, a detour beyond `i64`): equal, hashed equally, printed as the number.
#[test]
fn constants_have_one_normal_form_however_reached() {
    use std::hash::{BuildHasher, RandomState};
    let n = Dim::symbol("N");
    let m = Dim::symbol_bounded("M", 2, Some(9));
    let big = Dim::known(i64::MAX).add(&Dim::known(1));
    assert_eq!(big.as_known(), None, "2^63 does not fit i64");
    let cases = [
        (n.sub(&n), 0),
        (n.add_const(1).sub(&n), 1),
        (n.mul_const(2).add_const(2).div_floor(2).sub(&n), 1),
        (m.min(&Dim::known(20)).sub(&m), 0),
        (m.max(&Dim::known(1)).sub(&m), 0),
        (big.sub(&Dim::known(1)), i64::MAX),
        (
            Dim::known(i64::MIN).sub(&Dim::known(1)).add_const(1),
            i64::MIN,
        ),
        (Dim::known(7).mul(&Dim::known(-3)), -21),
        (Dim::known(-7).div_floor(2), -4),
        (Dim::symbol_bounded("K", 5, Some(5)), 5),
        (Dim::unknown_bounded(3, Some(3)), 3),
        (n.mul_const(0), 0),
        (n.neg().add(&n), 0),
    ];
    let h = RandomState::new();
    for (i, (d, v)) in cases.into_iter().enumerate() {
        let k = Dim::known(v);
        assert_eq!(d, k, "case {i}: {d}");
        assert_eq!(h.hash_one(&d), h.hash_one(&k), "case {i}");
        assert_eq!(d.as_known(), Some(v), "case {i}");
        assert_eq!(d.to_string(), v.to_string(), "case {i}");
        assert_eq!(d.to_onnx(), Some(v.to_string()), "case {i}");
        assert_eq!(d.bounds(), (Some(v), Some(v)), "case {i}");
    }
}

/// The length of a Concat of a hundred slices `x[s:]` (`s` = 0, 1, 2, ...) of a dim `N`:
/// the sum of `max(N - s, 0)`. Distributed at every step its min/max form doubled every
/// few terms (minutes at 100 terms); it must stay small, fast and exact.
#[test]
fn long_sums_of_clamped_dims_stay_small_and_exact() {
    let n = Dim::symbol("N");
    let start = std::time::Instant::now();
    let mut total = Dim::known(0);
    for i in 0..100i64 {
        let s = i % 3;
        // ONNX Slice on a dim of size N from start s to the end: N - min(s, N).
        total = total.add(&n.sub(&n.min(&Dim::known(s))));
    }
    let text = total.to_string();
    assert!(text.len() < 4000, "{} characters: {text}", text.len());
    for v in [0i64, 1, 2, 3, 7, 1000] {
        let want: i64 = (0..100i64).map(|i| (v - i % 3).max(0)).sum();
        let got = total.eval(&HashMap::from([("N".to_string(), v)]));
        assert_eq!(got, Some(want), "N = {v}: {text}");
    }
    assert!(start.elapsed().as_secs() < 30, "took {:?}", start.elapsed());
}

#[test]
fn normal_forms_print_equally() {
    let n = Dim::symbol("N");
    assert_eq!(n.add_const(1).sub(&n).to_string(), "1");
    assert_eq!(n.add_const(1).div_floor(2).to_string(), "(N + 1) / 2");
    assert_eq!(n.min(&Dim::known(4)).to_string(), "min(N, 4)");
    assert_eq!(Dim::known(4).min(&n), n.min(&Dim::known(4)));
    assert_eq!(n.sub(&n.min(&Dim::known(1))).to_string(), "max(N - 1, 0)");
    assert_eq!(n.max(&Dim::known(0)).to_string(), "N");
    assert_eq!(n.add(&n).add_const(2).div_floor(2).to_string(), "N + 1");
    let b: HashMap<String, i64> = [("N".to_string(), 7)].into();
    assert_eq!(n.add_const(1).div_floor(2).eval(&b), Some(4));
}

/// Shapes are vectors of dims: a dim is two words, a tag and a value or a pointer.
#[test]
fn a_dim_is_16_bytes() {
    assert_eq!(std::mem::size_of::<Dim>(), 16);
    assert_eq!(std::mem::size_of::<Option<Dim>>(), 16);
}

#[test]
fn unknown_keeps_bounds() {
    let u = Dim::unknown_bounded(1, Some(10));
    assert_eq!(u.add_const(-1).bounds(), (Some(0), Some(9)));
    assert_eq!(u.to_string(), "1..10");
}

#[test]
fn tf2onnx_int32_end_is_the_plain_symbol_under_the_default_limit() {
    // The example: x[-4:] written by tf2onnx with an INT32_MAX end, N >= 0.
    let n = Dim::symbol_bounded("N", 0, Some(DEFAULT_DIM_LIMIT));
    let e = n
        .min(&Dim::known(2147483647))
        .sub(&n.add_const(-4).max(&Dim::known(0)))
        .max(&Dim::known(0));
    assert_eq!(e.to_string(), "min(N, 4)");
    // Without the limit the result is longer but exact at the edge.
    let n = Dim::symbol("N");
    let e = n
        .min(&Dim::known(2147483647))
        .sub(&n.add_const(-4).max(&Dim::known(0)))
        .max(&Dim::known(0));
    for v in [0, 3, 4, 5, 2147483647, 2147483650, 2147483652] {
        let b: HashMap<String, i64> = [("N".to_string(), v)].into();
        let want = (v.min(2147483647) - (v - 4).max(0)).max(0);
        assert_eq!(e.eval(&b), Some(want), "N = {v}: {e}");
    }
}

#[test]
fn one_symbol_bounds_are_exact() {
    // x[2:8] on [0, inf): at most 6, although interval arithmetic says 8.
    let n = Dim::symbol("N");
    let e = Dim::known(8)
        .min(&n)
        .sub(&Dim::known(2).min(&n))
        .max(&Dim::known(0));
    assert_eq!(e.bounds(), (Some(0), Some(6)));
    let n10 = Dim::symbol_bounded("N", 0, Some(10));
    // x[-7:3] on 0..10: the largest value 3 is at N = 3..=7, not at N = 10.
    let start = n10.add_const(-7).max(&Dim::known(0));
    let e = Dim::known(3).min(&n10).sub(&start).max(&Dim::known(0));
    assert_eq!(e.bounds(), (Some(0), Some(3)));
}

#[test]
fn products_expand_and_bound() {
    let (n, m) = (Dim::symbol("N"), Dim::symbol_bounded("M", 1, Some(4)));
    let p = n.add_const(1).mul(&m);
    assert_eq!(p.to_string(), "M*N + M");
    let b: HashMap<String, i64> = [("N".to_string(), 5), ("M".to_string(), 3)].into();
    assert_eq!(p.eval(&b), Some(18));
    assert_eq!(p.bounds(), (Some(1), None));
    assert_eq!(n.mul_const(-2).to_string(), "-2*N");
}

#[test]
fn onnx_syntax_round_trips() {
    let n = Dim::symbol("N");
    let sym = |s: &str| Dim::symbol(s);
    for d in [
        n.add_const(1).div_floor(2),
        n.min(&Dim::known(4)),
        n.sub(&n.min(&Dim::known(1))),
        n.mul(&Dim::symbol("M")).add_const(-3),
        Dim::known(7),
    ] {
        let text = d.to_onnx().unwrap();
        assert_eq!(Dim::parse(&text, &sym), Some(d.clone()), "{text}");
    }
    assert_eq!(
        n.add_const(1).div_floor(2).to_onnx().unwrap(),
        "floor((N + 1)/2)"
    );
    // ONNX Runtime's division is rational: `floor(W/2 - 1/2)` is floor((W - 1) / 2), not
    // floor(W / 2) - 1 (W = 8: floor(3.5) + 1 = 4; W = 7: 3 + 1 = 4; W = 0: -1 + 1 = 0).
    let w = Dim::parse("floor(W/2 - 1/2) + 1", &sym).expect("parses");
    for (v, want) in [(0, 0), (1, 1), (7, 4), (8, 4), (9, 5)] {
        let b: HashMap<String, i64> = [("W".to_string(), v)].into();
        assert_eq!(w.eval(&b), Some(want), "W = {v}: {w}");
    }
    // A quotient that is not made an integer is refused, not misread as a floor.
    assert_eq!(Dim::parse("N/2", &sym), None);
    assert_eq!(Dim::parse("N/2 + 1/3", &sym), None);
    assert_eq!(Dim::parse("2*N/2", &sym), Some(n.clone()));
    assert_eq!(
        Dim::parse("Min(1000000000, unk__9)", &sym).map(|d| d.to_string()),
        Some("min(unk__9, 1000000000)".into())
    );
    assert_eq!(Dim::parse("batch size", &sym), None);
}

#[test]
fn provable_equality() {
    let n = Dim::symbol("N");
    assert!(n.add_const(2).sub(&n).provably_equal(&Dim::known(2)));
    assert!(!n.provably_equal(&Dim::symbol("M")));
    assert!(!Dim::unknown().provably_equal(&Dim::unknown()));
}

/// A floor division whose normal-form numerator (coefficients in `[0, d)`) prints longer than a
/// shifted one is written shifted (`floor((a + 63*b)/64) - b` as `floor((a - b)/64)`), reads
/// back into the same expression, and keeps its value at every point.
#[test]
fn floor_numerators_print_shifted_when_shorter() {
    let (a, b) = (Dim::symbol("a"), Dim::symbol("b"));
    let sym = |s: &str| Dim::symbol(s);
    let q = a.sub(&b).div_floor(64);
    let w = a.sub(&b).sub(&q.mul_const(32));
    assert_eq!(q.to_onnx().as_deref(), Some("floor((a - b)/64)"));
    assert_eq!(w.to_onnx().as_deref(), Some("a - b - 32*floor((a - b)/64)"));
    assert_eq!(w.to_string(), "a - b - 32*((a - b) / 64)");
    // A constant numerator term shifts too: floor((a + 63)/64) is not shortened by it.
    let c = a.add_const(-1).div_floor(64);
    assert_eq!(c.to_onnx().as_deref(), Some("floor((a - 1)/64)"));
    for d in [
        q,
        w,
        c,
        a.add_const(63).div_floor(64),
        a.mul_const(3).sub(&b).div_floor(4),
    ] {
        let text = d.to_onnx().expect("an expression");
        assert_eq!(Dim::parse(&text, &sym), Some(d.clone()), "{text}");
        for (av, bv) in [
            (0, 0),
            (0, 1),
            (5, 200),
            (200, 5),
            (63, 0),
            (64, 1),
            (1000, 999),
        ] {
            let env: HashMap<String, i64> = [("a".to_string(), av), ("b".to_string(), bv)].into();
            let back = Dim::parse(&text, &sym).and_then(|x| x.eval(&env));
            assert_eq!(back, d.eval(&env), "{text} at a = {av}, b = {bv}");
        }
    }
}
