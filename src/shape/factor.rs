//! Products of dims as factors: a constant, powers of symbols, and opaque factors (any other
//! expression, taken whole). Exact division of one product by another in the dim algebra, for
//! `Reshape`'s `-1` (the element count divided by the product of the other target elements) and
//! for its `0` rule (a target element that is 0 only where the data's dim is 0).
//!
//! A dim is recognised as a monomial `k * s1^e1 * ... * sn^en` by evaluating it at 1 and 2 for
//! each symbol, and the guess is accepted only when the monomial rebuilt with [`Dim::mul`] is the
//! dim itself (the normal form is canonical): a wrong guess is never used.

use std::collections::{BTreeMap, HashMap};

use crate::semantics::{Dim, Symbol};

/// The largest exponent a monomial guess may have (beyond it the dim is taken whole).
const MAX_EXP: u32 = 16;

/// A product of factors.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Factors {
    coef: i128,
    syms: BTreeMap<Symbol, u32>,
    /// Factors that are not monomials (`s + 1`, `floor(s/2)`, `min(s, 4)`), each whole.
    opaque: Vec<Dim>,
}

impl Factors {
    /// The empty product, 1.
    pub(crate) fn one() -> Factors {
        Factors {
            coef: 1,
            syms: BTreeMap::new(),
            opaque: Vec::new(),
        }
    }

    /// The factors of `d` (`None` for an unknown dim: nothing is known to divide it).
    pub(crate) fn of(d: &Dim) -> Option<Factors> {
        if d.is_unknown() {
            return None;
        }
        if let Some(v) = d.as_known() {
            return Some(Factors {
                coef: v as i128,
                ..Factors::one()
            });
        }
        Some(
            monomial(d)
                .or_else(|| content(d))
                .unwrap_or_else(|| Factors {
                    opaque: vec![d.clone()],
                    ..Factors::one()
                }),
        )
    }

    /// The factors of the product of `dims` (`None` when one is unknown or the constant
    /// overflows).
    pub(crate) fn of_product<'a>(dims: impl IntoIterator<Item = &'a Dim>) -> Option<Factors> {
        dims.into_iter()
            .try_fold(Factors::one(), |acc, d| acc.times(&Factors::of(d)?))
    }

    /// `self * o` (`None` when the constant overflows).
    pub(crate) fn times(mut self, o: &Factors) -> Option<Factors> {
        self.coef = self.coef.checked_mul(o.coef)?;
        for (s, e) in &o.syms {
            let x = self.syms.entry(s.clone()).or_insert(0);
            *x = x.checked_add(*e)?;
        }
        self.opaque.extend(o.opaque.iter().cloned());
        Some(self)
    }

    /// The product as a dim.
    pub(crate) fn to_dim(&self) -> Option<Dim> {
        let mut d = Dim::known(i64::try_from(self.coef).ok()?);
        for (s, &e) in &self.syms {
            let (lo, hi) = s.bounds();
            let sd = Dim::symbol_bounded(s.name(), lo, hi);
            for _ in 0..e {
                d = d.mul(&sd);
            }
        }
        for o in &self.opaque {
            d = d.mul(o);
        }
        (!d.is_unknown()).then_some(d)
    }

    /// `self / den` when every symbol power and opaque factor of `den` is one of `self`'s, and
    /// `den`'s constant is positive: the quotient of the non-constant parts exactly, times
    /// `floor(self.coef / den.coef)`-style division of the constants (`floor((k * rest) / c)`:
    /// exact where the runtime's division is exact, as a `Reshape`'s `-1` requires).
    pub(crate) fn div(&self, den: &Factors) -> Option<Dim> {
        if den.coef <= 0 {
            return None;
        }
        let mut rest = Factors {
            coef: 1,
            syms: self.syms.clone(),
            opaque: self.opaque.clone(),
        };
        for (s, e) in &den.syms {
            let x = rest.syms.get_mut(s)?;
            *x = x.checked_sub(*e)?;
            if *x == 0 {
                rest.syms.remove(s);
            }
        }
        for o in &den.opaque {
            let i = rest.opaque.iter().position(|r| r == o)?;
            rest.opaque.swap_remove(i);
        }
        let g = gcd(self.coef.unsigned_abs(), den.coef.unsigned_abs());
        let (num_k, den_k) = (self.coef / g as i128, den.coef / g as i128);
        rest.coef = num_k;
        let r = rest.to_dim()?;
        if den_k == 1 {
            return Some(r);
        }
        let q = r.div_floor(i64::try_from(den_k).ok()?);
        (!q.is_unknown()).then_some(q)
    }

    /// True when `self` is 0 only where `d` is: `self`'s constant is not 0 and each of its
    /// symbols and opaque factors is also a factor of `d` (so one of them being 0 makes `d` 0).
    pub(crate) fn zero_only_where(&self, d: &Factors) -> bool {
        self.coef != 0
            && (d.coef == 0
                || self.syms.keys().all(|s| d.syms.contains_key(s))
                    && self.opaque.iter().all(|o| d.opaque.contains(o)))
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

/// `d` as a monomial `k * s1^e1 * ...`, when it is one (checked by rebuilding it).
fn monomial(d: &Dim) -> Option<Factors> {
    let syms = d.symbols();
    if syms.is_empty() {
        return None;
    }
    let mut bind: HashMap<String, i64> = syms.iter().map(|s| (s.name().to_string(), 1)).collect();
    if bind.len() != syms.len() {
        // Two symbols of one name with different bounds: not told apart by a binding.
        return None;
    }
    let k = d.eval(&bind)?;
    if k == 0 {
        return None;
    }
    let mut f = Factors {
        coef: k as i128,
        ..Factors::one()
    };
    for s in &syms {
        bind.insert(s.name().to_string(), 2);
        let v = d.eval(&bind)?;
        bind.insert(s.name().to_string(), 1);
        if v % k != 0 {
            return None;
        }
        let ratio = v / k;
        if ratio < 2 || ratio & (ratio - 1) != 0 {
            return None;
        }
        let e = ratio.trailing_zeros();
        if e > MAX_EXP {
            return None;
        }
        f.syms.insert(s.clone(), e);
    }
    (f.to_dim().as_ref() == Some(d)).then_some(f)
}

/// The terms of the sum `d`, each as a dim: its text as [`Dim::to_onnx`] prints it, split at the
/// top-level ` + ` and ` - `, each part read back with `d`'s own symbols (`None` when a part
/// does not read back).
fn terms(d: &Dim) -> Option<Vec<Dim>> {
    let text = d.to_onnx()?;
    let syms = d.symbols();
    let lookup = |n: &str| {
        syms.iter()
            .find(|s| s.name() == n)
            .map(|s| {
                let (lo, hi) = s.bounds();
                Dim::symbol_bounded(n, lo, hi)
            })
            .unwrap_or_else(|| Dim::symbol(n))
    };
    let b = text.as_bytes();
    let (mut depth, mut start, mut neg, mut i) = (0i32, 0usize, false, 0usize);
    let mut parts = Vec::new();
    while i < b.len() {
        match b[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b' ' if depth == 0
                && i + 2 < b.len()
                && matches!(b[i + 1], b'+' | b'-')
                && b[i + 2] == b' ' =>
            {
                parts.push((neg, &text[start..i]));
                neg = b[i + 1] == b'-';
                start = i + 3;
                i += 3;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push((neg, &text[start..]));
    parts
        .into_iter()
        .map(|(neg, t)| {
            let d = Dim::parse(t, &lookup)?;
            Some(if neg { d.neg() } else { d })
        })
        .collect()
}

/// A sum of monomials as its greatest common monomial times the rest (`b*p + b*s` is
/// `b * (p + s)`), checked by multiplying back; `None` when the common part is 1.
fn content(d: &Dim) -> Option<Factors> {
    let ts = terms(d)?;
    if ts.len() < 2 {
        return None;
    }
    let fs: Vec<Factors> = ts
        .iter()
        .map(|t| match t.as_known() {
            Some(v) => Some(Factors {
                coef: v as i128,
                ..Factors::one()
            }),
            None => monomial(t),
        })
        .collect::<Option<_>>()?;
    let mut g = Factors::one();
    g.coef = fs
        .iter()
        .fold(0u128, |a, f| gcd(a, f.coef.unsigned_abs()))
        .try_into()
        .ok()?;
    for s in fs[0].syms.keys() {
        let m = fs
            .iter()
            .map(|f| f.syms.get(s).copied().unwrap_or(0))
            .min()
            .unwrap_or(0);
        if m > 0 {
            g.syms.insert(s.clone(), m);
        }
    }
    if g.syms.is_empty() && g.coef == 1 {
        return None;
    }
    let mut rest = Dim::known(0);
    for f in &fs {
        rest = rest.add(&f.div(&g)?);
    }
    if g.to_dim()?.mul(&rest) != *d {
        return None;
    }
    match rest.as_known() {
        Some(k) => g.coef = g.coef.checked_mul(k as i128)?,
        None => g.opaque.push(rest),
    }
    Some(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: &str) -> Dim {
        crate::semantics::dim::model_symbol(n)
    }

    #[test]
    fn monomials_are_recognised_and_sums_are_opaque() {
        let (b, t) = (s("b"), s("t"));
        let bt = b.mul(&t).mul_const(64);
        let f = Factors::of(&bt).unwrap();
        assert_eq!(f.coef, 64);
        assert_eq!(f.syms.len(), 2);
        assert!(f.opaque.is_empty());
        let sum = b.add(&t);
        let f = Factors::of(&sum).unwrap();
        assert_eq!(f.opaque, vec![sum.clone()]);
        // b*t + 4*b = b * (t + 4): the common monomial comes out, the rest is one factor.
        let f = Factors::of(&b.mul(&t).add(&b.mul_const(4))).unwrap();
        assert_eq!(f.syms.len(), 1);
        assert_eq!(f.opaque, vec![t.add_const(4)]);
        let f = Factors::of(&b.mul_const(6).add_const(4)).unwrap();
        assert_eq!(
            (f.coef, f.opaque.clone()),
            (2, vec![b.mul_const(3).add_const(2)])
        );
        let sq = b.mul(&b).mul_const(3);
        assert_eq!(
            Factors::of(&sq).unwrap().syms.get(&b.symbols()[0]),
            Some(&2)
        );
        assert!(Factors::of(&Dim::unknown()).is_none());
    }

    #[test]
    fn division_cancels_factors_and_refuses_what_it_cannot() {
        let (b, t) = (s("b"), s("t"));
        let num = Factors::of_product(&[b.mul(&t), Dim::known(64)]).unwrap();
        let den = Factors::of_product(&[b.clone(), Dim::known(4)]).unwrap();
        assert_eq!(num.div(&den), Some(t.mul_const(16)));
        let den = Factors::of_product(&[b.clone(), t.clone(), Dim::known(64)]).unwrap();
        assert_eq!(num.div(&den), Some(Dim::known(1)));
        // t + 1 does not divide b*t*64.
        let den = Factors::of(&t.add_const(1)).unwrap();
        assert_eq!(num.div(&den), None);
        // An opaque factor cancels with itself.
        let p = t.add(&b);
        let num = Factors::of_product(&[b.clone(), p.clone(), Dim::known(6)]).unwrap();
        let den = Factors::of_product(&[p.clone(), Dim::known(4)]).unwrap();
        let q = num.div(&den).unwrap();
        // floor(6*b/4) = floor(3*b/2): exact wherever 4*(t+b) divides 6*b*(t+b).
        for v in 0..20 {
            let bind = HashMap::from([("b".to_string(), v), ("t".to_string(), 3)]);
            assert_eq!(q.eval(&bind), Some(3 * v / 2), "{q}");
        }
    }

    #[test]
    fn zero_only_where_needs_every_factor() {
        let (b, t) = (s("b"), s("t"));
        let fb = Factors::of(&b.mul_const(2)).unwrap();
        let fbt = Factors::of(&b.mul(&t)).unwrap();
        assert!(fb.zero_only_where(&fbt));
        assert!(!fbt.zero_only_where(&fb));
        assert!(!Factors::of(&Dim::known(0)).unwrap().zero_only_where(&fbt));
        assert!(Factors::of(&Dim::known(3)).unwrap().zero_only_where(&fb));
    }
}
