//! `Reshape`: the output dims from the data's dims and the target's elements (ONNX
//! `allowzero`, OpenVINO `special_zero`), exact in the dim algebra where it can be.

use super::factor::Factors;
use super::Ctx;
use crate::semantics::Dim;

/// The output dims of `Reshape` (ONNX `allowzero`, OpenVINO `special_zero`).
///
/// Each target element, for every value of the symbols at which the runtime accepts the node:
/// - a known `0` with zero-copy is the data's dim at that position; any other known value
///   `>= 0` is itself; one `-1` is inferred;
/// - a symbolic element is itself when it is the data's dim at that position (it copies the same
///   value whether or not it is 0), when it is `>= 1`, or, when it may be 0, when it is `>= 0`
///   and either 0 copies nothing (`allowzero=1`) or it is 0 only where the data's dim at that
///   position is 0 (a factor of it: `b` against `b*s`), or past the data's rank (where a 0
///   would copy nothing: the node is invalid), or, alone of its kind without a `-1`,
///   when it is 0 only where the data has no element and every other element is `>= 1`
///   (`x.view(b * s, 64)`: a copied dim would have to be 0 too); otherwise unknown;
/// - the `-1` is the data's element count divided by the product of the other elements, when
///   every other element is known exactly and that division is exact in the dim algebra
///   (elements that copy the data's dim cancel that dim, whatever it is); with `allowzero=1`
///   only when no other element may be 0 (a 0 beside a -1 is invalid by the spec, and ONNX
///   Runtime 1.32 then divides the non-zero dims only: `[0, 64]` to `[0, 2, -1]` is `[0, 2, 32]`).
pub(super) fn reshape(cx: &Ctx) -> Option<Vec<Dim>> {
    let target = cx.value(1);
    let len = match cx.shape(1) {
        Some([n]) => n.as_known()?,
        _ => return None,
    };
    let Some(target) = target else {
        let len = usize::try_from(len)
            .ok()
            .filter(|&l| l <= super::MAX_RANK)?;
        return Some(vec![Dim::unknown(); len]);
    };
    let input = cx.shape(0);
    let zero_copies = if cx.onnx() {
        cx.attr_int("allowzero").unwrap_or(0) == 0
    } else {
        cx.attr_str("special_zero")
            .is_some_and(|s| s.trim().eq_ignore_ascii_case("true"))
    };
    reshape_dims(input, target, zero_copies)
}

/// [`reshape`] on the data's dims (`None`: rank unknown) and the target's elements.
pub(crate) fn reshape_dims(
    input: Option<&[Dim]>,
    target: &[Dim],
    zero_copies: bool,
) -> Option<Vec<Dim>> {
    // The data's dim at position `i` (`None`: the data's rank is unknown; an index past it is
    // an invalid node).
    let at = |i: usize| -> Option<Option<&Dim>> {
        match input {
            Some(x) => x.get(i).map(Some),
            None => Some(None),
        }
    };
    let mut out: Vec<Dim> = Vec::with_capacity(target.len());
    // Which data dim each element copies (its value is that dim whatever it is).
    let mut copies: Vec<Option<usize>> = Vec::with_capacity(target.len());
    let mut infer_at = None;
    // Symbolic elements `>= 0` left unknown because a 0 would copy the data's dim.
    let mut maybe_zero = Vec::new();
    for (i, t) in target.iter().enumerate() {
        let mut copy = None;
        let d = match t.as_known() {
            Some(-1) if infer_at.is_none() => {
                infer_at = Some(i);
                Dim::unknown()
            }
            Some(0) if zero_copies => match at(i)? {
                Some(d) => {
                    copy = Some(i);
                    d.clone()
                }
                None => Dim::unknown(),
            },
            Some(v) if v >= 0 => Dim::known(v),
            Some(_) => return None,
            None => {
                let here = input.and_then(|x| x.get(i));
                // Past the data's rank, a 0 that copies is invalid: the element is not 0.
                let past_rank = input.is_some_and(|x| i >= x.len());
                let nonneg = t.bounds().0.is_some_and(|l| l >= 0);
                if here.is_some_and(|d| !d.is_unknown() && (d == t || d.provably_equal(t))) {
                    copy = Some(i);
                    t.clone()
                } else if t.bounds().0.is_some_and(|l| l >= 1)
                    || nonneg && (!zero_copies || past_rank)
                    || nonneg
                        && here
                            .and_then(|d| Some((Factors::of(t)?, Factors::of(d)?)))
                            .is_some_and(|(ft, fd)| ft.zero_only_where(&fd))
                {
                    t.clone()
                } else {
                    if nonneg && zero_copies {
                        maybe_zero.push(i);
                    }
                    Dim::unknown()
                }
            }
        };
        out.push(d);
        copies.push(copy);
    }
    if let Some(i) = infer_at {
        // With 0 taken literally, a 0 beside the -1 is invalid by the spec, and ONNX Runtime
        // then divides the non-zero dims only: solved only when no other element may be 0.
        let defined = zero_copies
            || out
                .iter()
                .enumerate()
                .all(|(j, d)| j == i || d.bounds().0.is_some_and(|l| l >= 1));
        out[i] = defined
            .then(|| infer_minus_one(input, &out, &copies, i))
            .flatten()
            .unwrap_or_else(Dim::unknown);
    } else if let (Some(x), [i]) = (input, maybe_zero.as_slice()) {
        // `t` is 0 only where the data has no element, and every other element is >= 1: had
        // `t` been 0 and copied a dim `d`, the output's element count `d * (>= 1)` must be the
        // data's, 0, so `d` is 0 too (`x.view(b * s, 64)`).
        let t = &target[*i];
        let others_positive = out
            .iter()
            .enumerate()
            .all(|(j, d)| j == *i || d.bounds().0.is_some_and(|l| l >= 1));
        if others_positive
            && Factors::of(t)
                .zip(Factors::of_product(x))
                .is_some_and(|(ft, fx)| ft.zero_only_where(&fx))
        {
            out[*i] = t.clone();
        }
    }
    Some(out)
}

/// The `-1` at `at`: the data's element count over the product of the other elements.
fn infer_minus_one(
    input: Option<&[Dim]>,
    out: &[Dim],
    copies: &[Option<usize>],
    at: usize,
) -> Option<Dim> {
    let input = input?;
    let mut cancelled = vec![false; input.len()];
    let mut others = Vec::new();
    for (j, d) in out.iter().enumerate() {
        if j == at {
            continue;
        }
        match copies[j] {
            Some(k) if !cancelled[k] => cancelled[k] = true,
            _ => others.push(d),
        }
    }
    let rest: Vec<&Dim> = input
        .iter()
        .zip(&cancelled)
        .filter(|(_, c)| !**c)
        .map(|(d, _)| d)
        .collect();
    let exact = (!others.iter().any(|d| d.is_unknown()))
        .then(|| {
            let num = Factors::of_product(rest.iter().copied())?;
            num.div(&Factors::of_product(others.iter().copied())?)
        })
        .flatten();
    exact.or_else(|| Some(quotient_bounds(&rest, &others)))
}

/// An unknown dim with the bounds of `P / Q`, `P` and `Q` the products of `num` and `den`, for a
/// run where `Q` divides `P` and is not 0 (as a `-1` needs).
fn quotient_bounds(num: &[&Dim], den: &[&Dim]) -> Dim {
    let prod = |ds: &[&Dim]| ds.iter().fold(Dim::known(1), |a, d| a.mul(d)).bounds();
    let ((plo, phi), (qlo, qhi)) = (prod(num), prod(den));
    let (plo, qlo) = (plo.unwrap_or(0).max(0), qlo.unwrap_or(0).max(1));
    let lo = match qhi {
        // ceil(plo / qh), plo >= 0.
        Some(qh) if qh >= 1 => plo / qh + i64::from(plo % qh != 0),
        _ => 0,
    };
    Dim::unknown_bounded(lo, phi.map(|ph| ph / qlo))
}

/// A `Reshape` (ONNX or OpenVINO opset1), the op [`constant_target`] reads the facts of.
pub(crate) fn is_reshape(n: &crate::ir::Node) -> bool {
    n.op_type == "Reshape" && matches!(&*n.domain, "" | "ai.onnx" | "opset1")
}

/// The constant target a `Reshape` whose target is computed (not a constant) can read instead,
/// from the exact output shape `facts` know: every dim but at most one known, the one left
/// written `-1` (onnxslim's rule on `reshape(x, concat([shape(x)[:1], [-1]]))`, which makes the
/// `Shape`, `Slice` and `Concat` in front of it dead; `fold` applies it). Reshape gives the same
/// shape from it: the known dims as they are, and the `-1` the element count divided by their
/// product, which is the dim left since the output holds every element. Not where a known dim
/// is 0 (a `0` is a copy of the input's dim under `allowzero = 0` / `special_zero`, and a `-1`
/// beside a 0 is refused).
pub(crate) fn constant_target(
    graph: &crate::ir::Graph,
    facts: &super::Facts,
    ix: petgraph::stable_graph::NodeIndex,
) -> Option<Vec<i64>> {
    let n = graph.node(ix);
    if !is_reshape(n)
        || n.kind != crate::ir::NodeKind::Op
        || n.num_inputs != 2
        || n.outputs.len() != 1
    {
        return None;
    }
    let target = graph.input(ix, 1)?;
    if graph.constant_at(target).is_some() {
        return None;
    }
    let dims = facts
        .get(crate::ir::OutletId { node: ix, port: 0 })
        .shape
        .as_ref()?;
    let t = facts.get(target);
    if t.shape
        .as_deref()
        .map(|s| s.iter().map(Dim::as_known).collect::<Vec<_>>())
        != Some(vec![Some(dims.len() as i64)])
    {
        return None;
    }
    let mut unknown = 0;
    let values: Vec<i64> = dims
        .iter()
        .map(|d| match d.as_known() {
            Some(k) if k > 0 => Some(k),
            Some(_) => None,
            None => {
                unknown += 1;
                Some(-1)
            }
        })
        .collect::<Option<_>>()?;
    (unknown <= 1).then_some(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// One dim of a random reshape problem, over the symbols `b`, `s` and one unknown dim `u`
    /// (bound to a value of its own when evaluated).
    #[derive(Debug, Clone, Copy)]
    enum D {
        B,
        S,
        BS,
        /// `b*s + b`: `b * (s + 1)`, a sum with a common factor.
        Bsb,
        SPlus1,
        /// `s - 1`: -1 at s = 0 (a target element that may be the -1).
        SMinus1,
        K(i64),
        U,
    }

    /// A target element: a dim, or the data's dim at position `i` (as `Shape` gives it).
    #[derive(Debug, Clone, Copy)]
    enum T {
        Dim(D),
        DataAt(usize),
    }

    #[derive(Debug, Clone)]
    struct ReshapeProblem {
        data: Vec<D>,
        target: Vec<T>,
        zero_copies: bool,
    }

    fn d() -> impl Strategy<Value = D> {
        prop_oneof![
            Just(D::B),
            Just(D::S),
            Just(D::BS),
            Just(D::Bsb),
            Just(D::SPlus1),
            Just(D::U),
            prop_oneof![Just(0i64), Just(1), Just(2), Just(4), Just(6), Just(16)].prop_map(D::K),
        ]
    }

    fn t() -> impl Strategy<Value = T> {
        prop_oneof![
            3 => (0usize..4).prop_map(T::DataAt),
            2 => d().prop_map(T::Dim),
            1 => Just(T::Dim(D::SMinus1)),
            2 => Just(T::Dim(D::K(-1))),
        ]
    }

    fn problem() -> impl Strategy<Value = ReshapeProblem> {
        (
            prop::collection::vec(d(), 1..4),
            prop::collection::vec(t(), 1..5),
            any::<bool>(),
        )
            .prop_map(|(data, target, zero_copies)| ReshapeProblem {
                data,
                target,
                zero_copies,
            })
    }

    fn sym(d: D) -> Dim {
        let (b, s) = (
            crate::semantics::dim::model_symbol("b"),
            crate::semantics::dim::model_symbol("s"),
        );
        match d {
            D::B => b,
            D::S => s,
            D::BS => b.mul(&s),
            D::Bsb => b.mul(&s).add(&b),
            D::SPlus1 => s.add_const(1),
            D::SMinus1 => s.add_const(-1),
            D::K(k) => Dim::known(k),
            D::U => Dim::unknown(),
        }
    }

    fn num(d: D, b: i64, s: i64, u: i64) -> i64 {
        match d {
            D::B => b,
            D::S => s,
            D::BS => b * s,
            D::Bsb => b * s + b,
            D::SPlus1 => s + 1,
            D::SMinus1 => s - 1,
            D::K(k) => k,
            D::U => u,
        }
    }

    /// ONNX Reshape on numbers (the spec; a 0 beside a -1, refused by ONNX Runtime with
    /// `allowzero=0` and invalid by the spec with `allowzero=1`, is `None`).
    fn reshape_numeric(input: &[i64], target: &[i64], zero_copies: bool) -> Option<Vec<i64>> {
        let mut out = Vec::new();
        let mut infer = None;
        for (i, &t) in target.iter().enumerate() {
            match t {
                -1 if infer.is_none() => {
                    infer = Some(i);
                    out.push(1);
                }
                0 if zero_copies => out.push(*input.get(i)?),
                t if t >= 0 => out.push(t),
                _ => return None,
            }
        }
        let total: i64 = input.iter().product();
        let others: i64 = out.iter().product();
        match infer {
            Some(i) => {
                if others == 0 || total % others != 0 {
                    return None;
                }
                out[i] = total / others;
            }
            None if others != total => return None,
            None => {}
        }
        Some(out)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        /// Every dim the rule gives holds at every binding of the symbols (and of the unknown
        /// dim) at which the reshape is valid; an unknown dim's bounds contain the size.
        #[test]
        fn reshape_dims_hold_for_every_value_of_the_symbols(p in problem()) {
            let data: Vec<Dim> = p.data.iter().map(|&d| sym(d)).collect();
            let target: Vec<Dim> = p
                .target
                .iter()
                .map(|&t| match t {
                    T::Dim(d) => sym(d),
                    T::DataAt(i) => data.get(i).cloned().unwrap_or_else(|| sym(D::B)),
                })
                .collect();
            let Some(got) = reshape_dims(Some(&data), &target, p.zero_copies) else {
                return Ok(());
            };
            prop_assert_eq!(got.len(), target.len());
            for b in 0..5 {
                for s in 0..5 {
                    for u in [0, 3] {
                        let input: Vec<i64> = p.data.iter().map(|&d| num(d, b, s, u)).collect();
                        let tnum: Vec<i64> = p
                            .target
                            .iter()
                            .map(|&t| match t {
                                T::Dim(d) => num(d, b, s, u),
                                T::DataAt(i) => input.get(i).copied().unwrap_or(b),
                            })
                            .collect();
                        let Some(want) = reshape_numeric(&input, &tnum, p.zero_copies) else {
                            continue;
                        };
                        let bind = HashMap::from([("b".to_string(), b), ("s".to_string(), s)]);
                        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                            match g.eval(&bind) {
                                Some(v) => prop_assert_eq!(
                                    v, *w, "dim {} = {} at b={} s={} u={}: {:?}", i, g, b, s, u, p
                                ),
                                None => {
                                    prop_assert!(g.is_unknown(), "{}", g);
                                    let (lo, hi) = g.bounds();
                                    prop_assert!(
                                        lo.is_none_or(|l| l <= *w) && hi.is_none_or(|h| *w <= h),
                                        "dim {} = {} excludes {}", i, g, w
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn export_patterns_are_exact() {
        let (b, s) = (sym(D::B), sym(D::S));
        let k = Dim::known;
        let show = |v: Option<Vec<Dim>>| -> Vec<String> {
            v.expect("rank").iter().map(|d| d.to_string()).collect()
        };
        // ONNX Reshape spec: -1 = element count / product of the others.
        // [b, s, 64] to [b, s, 4, -1]: b*s*64 / (b*s*4) = 16.
        let x = [b.clone(), s.clone(), k(64)];
        let t = [b.clone(), s.clone(), k(4), k(-1)];
        assert_eq!(
            show(reshape_dims(Some(&x), &t, true)),
            ["b", "s", "4", "16"]
        );
        // [b, s, 64] to [b, s, -1, 16]: 4.
        let t = [b.clone(), s.clone(), k(-1), k(16)];
        assert_eq!(
            show(reshape_dims(Some(&x), &t, true)),
            ["b", "s", "4", "16"]
        );
        // input_ids[b, s].view(-1, s): b.
        let ids = [b.clone(), s.clone()];
        let t = [k(-1), s.clone()];
        assert_eq!(show(reshape_dims(Some(&ids), &t, true)), ["b", "s"]);
        // A copied dim cancels even when nothing is known about it: [?, s, 64] to [0, s, -1].
        let x = [Dim::unknown(), s.clone(), k(64)];
        let t = [k(0), s.clone(), k(-1)];
        let got = reshape_dims(Some(&x), &t, true).expect("rank");
        assert!(got[0].is_unknown());
        assert_eq!(got[2], k(64));
        // Not the same position and possibly 0: unknown ([b, s] to [s, -1] at s = 0 copies b).
        let t = [s.clone(), k(-1)];
        let got = reshape_dims(Some(&ids), &t, true).expect("rank");
        assert!(got.iter().all(Dim::is_unknown), "{got:?}");
    }
}
