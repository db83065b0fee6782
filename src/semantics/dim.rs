//! [`Dim`]: a tensor dimension that is a known value, a symbolic expression over named symbols, or
//! unknown; each with (possibly derived) bounds.
//!
//! Expressions are kept in one normal form so that equal things print equally:
//! a sum of atoms with integer coefficients plus a constant, where an atom is a symbol, a floor
//! division by a constant `> 1`, or a `min`/`max` of two or more expressions. Simplification is
//! eager and only uses rewrites that are exact for every value of every symbol within its bounds
//! (symbols are dims, so their lower bound is at least 0).
//!
//! All arithmetic is done on `i128` with checked operations; an overflow degrades the result to an
//! unknown dim (with the bounds that are still known), never to a wrong one.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

/// A named dimension variable, with bounds `[lo, hi]` (`hi = None`: unbounded). `lo >= 0`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Symbol {
    name: Arc<str>,
    lo: i64,
    hi: Option<i64>,
}

impl Symbol {
    /// The symbol's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The symbol's bounds `(lo, hi)`; `hi = None` is unbounded.
    pub fn bounds(&self) -> (i64, Option<i64>) {
        (self.lo, self.hi)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum MinMax {
    Min,
    Max,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Atom {
    Sym(Symbol),
    /// floor(expr / d), d > 1.
    Div(Box<Lin>, i128),
    /// min/max over at least two sorted, distinct expressions.
    Ext(MinMax, Vec<Lin>),
}

/// `sum(coef * atom) + c`, terms sorted by atom, coefficients non-zero.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Lin {
    terms: Vec<(Atom, i128)>,
    c: i128,
}

/// Interval with optional (infinite) ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Iv {
    lo: Option<i128>,
    hi: Option<i128>,
}

fn iv_add(a: Iv, b: Iv) -> Iv {
    Iv {
        lo: a.lo.zip(b.lo).and_then(|(x, y)| x.checked_add(y)),
        hi: a.hi.zip(b.hi).and_then(|(x, y)| x.checked_add(y)),
    }
}

fn iv_scale(a: Iv, k: i128) -> Iv {
    let m = |v: Option<i128>| v.and_then(|v| v.checked_mul(k));
    if k >= 0 {
        Iv {
            lo: m(a.lo),
            hi: m(a.hi),
        }
    } else {
        Iv {
            lo: m(a.hi),
            hi: m(a.lo),
        }
    }
}

impl Lin {
    fn constant(c: i128) -> Lin {
        Lin { terms: vec![], c }
    }
    fn atom(a: Atom) -> Lin {
        Lin {
            terms: vec![(a, 1)],
            c: 0,
        }
    }
    fn as_const(&self) -> Option<i128> {
        self.terms.is_empty().then_some(self.c)
    }
    fn single_atom(&self) -> Option<&Atom> {
        match self.terms.as_slice() {
            [(a, 1)] if self.c == 0 => Some(a),
            _ => None,
        }
    }

    fn interval(&self) -> Iv {
        let mut acc = Iv {
            lo: Some(self.c),
            hi: Some(self.c),
        };
        for (a, k) in &self.terms {
            acc = iv_add(acc, iv_scale(a.interval(), *k));
        }
        acc
    }

    fn eval(&self, b: &HashMap<String, i64>) -> Option<i128> {
        let mut acc = self.c;
        for (a, k) in &self.terms {
            acc = acc.checked_add(a.eval(b)?.checked_mul(*k)?)?;
        }
        Some(acc)
    }

    /// Sum of two normal forms (then re-normalized).
    fn add(&self, o: &Lin) -> Option<Lin> {
        let mut m: BTreeMap<Atom, i128> = BTreeMap::new();
        for (a, k) in self.terms.iter().chain(o.terms.iter()) {
            let e = m.entry(a.clone()).or_insert(0);
            *e = e.checked_add(*k)?;
        }
        let terms = m.into_iter().filter(|(_, k)| *k != 0).collect();
        Lin {
            terms,
            c: self.c.checked_add(o.c)?,
        }
        .distribute()
    }

    fn scale(&self, k: i128) -> Option<Lin> {
        if k == 0 {
            return Some(Lin::constant(0));
        }
        let mut terms = Vec::with_capacity(self.terms.len());
        for (a, c) in &self.terms {
            terms.push((a.clone(), c.checked_mul(k)?));
        }
        Some(Lin {
            terms,
            c: self.c.checked_mul(k)?,
        })
    }

    /// `rest + k * ext(args)` with k = ±1 and `rest` free of min/max becomes `ext'(rest ± arg)`:
    /// exact, and it makes `N - min(1, N)` print as `max(N - 1, 0)`.
    fn distribute(self) -> Option<Lin> {
        let ext: Vec<usize> = (0..self.terms.len())
            .filter(|&i| matches!(self.terms[i].0, Atom::Ext(..)))
            .collect();
        let [i] = ext.as_slice() else {
            return Some(self);
        };
        let (atom, k) = &self.terms[*i];
        let (Atom::Ext(kind, args), k @ (1 | -1)) = (atom, *k) else {
            return Some(self);
        };
        if self.terms.len() == 1 && self.c == 0 && k == 1 {
            return Some(self);
        }
        let mut rest = self.clone();
        rest.terms.remove(*i);
        let kind = if k == 1 { *kind } else { kind.flip() };
        let mut new_args = Vec::with_capacity(args.len());
        for a in args {
            new_args.push(rest.add(&a.scale(k)?)?);
        }
        mk_ext(kind, new_args)
    }
}

impl MinMax {
    fn flip(self) -> MinMax {
        match self {
            MinMax::Min => MinMax::Max,
            MinMax::Max => MinMax::Min,
        }
    }
}

impl Atom {
    fn interval(&self) -> Iv {
        match self {
            // A dim always fits i64: an unbounded symbol is still at most i64::MAX.
            Atom::Sym(s) => Iv {
                lo: Some(s.lo as i128),
                hi: Some(s.hi.unwrap_or(i64::MAX) as i128),
            },
            Atom::Div(e, d) => {
                let i = e.interval();
                Iv {
                    lo: i.lo.map(|v| v.div_euclid(*d)),
                    hi: i.hi.map(|v| v.div_euclid(*d)),
                }
            }
            Atom::Ext(kind, args) => {
                let ivs: Vec<Iv> = args.iter().map(Lin::interval).collect();
                let (lo, hi) = match kind {
                    // min: lo = min of los (any infinite -> infinite); hi = min of finite his.
                    MinMax::Min => (
                        ivs.iter()
                            .map(|i| i.lo)
                            .collect::<Option<Vec<_>>>()
                            .and_then(|v| v.into_iter().min()),
                        ivs.iter().filter_map(|i| i.hi).min(),
                    ),
                    MinMax::Max => (
                        ivs.iter().filter_map(|i| i.lo).max(),
                        ivs.iter()
                            .map(|i| i.hi)
                            .collect::<Option<Vec<_>>>()
                            .and_then(|v| v.into_iter().max()),
                    ),
                };
                Iv { lo, hi }
            }
        }
    }

    fn eval(&self, b: &HashMap<String, i64>) -> Option<i128> {
        match self {
            Atom::Sym(s) => b.get(s.name()).map(|&v| v as i128),
            Atom::Div(e, d) => Some(e.eval(b)?.div_euclid(*d)),
            Atom::Ext(kind, args) => {
                let vals = args.iter().map(|a| a.eval(b)).collect::<Option<Vec<_>>>()?;
                match kind {
                    MinMax::Min => vals.into_iter().min(),
                    MinMax::Max => vals.into_iter().max(),
                }
            }
        }
    }
}

/// Build `min`/`max` of `args`, simplified: flattened, constants folded, dominated arguments
/// dropped (using bounds), duplicates removed, sorted.
fn mk_ext(kind: MinMax, args: Vec<Lin>) -> Option<Lin> {
    let mut flat: Vec<Lin> = Vec::new();
    for a in args {
        match a.single_atom() {
            Some(Atom::Ext(k, inner)) if *k == kind => flat.extend(inner.iter().cloned()),
            _ => flat.push(a),
        }
    }
    flat.sort();
    flat.dedup();
    // Drop `a` when another argument `b` is always at least as good (b <= a for min).
    let mut keep = vec![true; flat.len()];
    for i in 0..flat.len() {
        for j in 0..flat.len() {
            if i == j || !keep[j] {
                continue;
            }
            let diff = flat[j].add(&flat[i].scale(-1)?)?.interval(); // b - a
            let dominated = match kind {
                MinMax::Min => diff.hi.is_some_and(|h| h <= 0),
                MinMax::Max => diff.lo.is_some_and(|l| l >= 0),
            };
            if dominated {
                keep[i] = false;
                break;
            }
        }
    }
    let mut kept: Vec<Lin> = flat
        .into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(a, _)| a)
        .collect();
    match kept.len() {
        0 => None,
        1 => kept.pop(),
        _ => {
            // Constants last so `min(N, 4)` prints that way.
            kept.sort_by(|a, b| (a.terms.is_empty(), a).cmp(&(b.terms.is_empty(), b)));
            Some(Lin::atom(Atom::Ext(kind, kept)))
        }
    }
}

/// floor(e / d), d >= 1, simplified.
fn mk_div(e: &Lin, d: i128) -> Option<Lin> {
    if d == 1 {
        return Some(e.clone());
    }
    if d < 1 {
        return None;
    }
    // floor((d*q + r) / d) = q + floor(r / d): pull out every multiple of d.
    let mut whole = Lin::constant(e.c.div_euclid(d));
    let mut rem = Lin::constant(e.c.rem_euclid(d));
    for (a, k) in &e.terms {
        let (q, r) = (k.div_euclid(d), k.rem_euclid(d));
        if q != 0 {
            whole = whole.add(&Lin {
                terms: vec![(a.clone(), q)],
                c: 0,
            })?;
        }
        if r != 0 {
            rem = rem.add(&Lin {
                terms: vec![(a.clone(), r)],
                c: 0,
            })?;
        }
    }
    let iv = rem.interval();
    let inner = if iv.lo.is_some_and(|l| l >= 0) && iv.hi.is_some_and(|h| h < d) {
        Lin::constant(0)
    } else if let Some(c) = rem.as_const() {
        Lin::constant(c.div_euclid(d))
    } else if let Some(Atom::Div(x, d2)) = rem.single_atom() {
        // floor(floor(x / d2) / d) = floor(x / (d2 * d))
        Lin::atom(Atom::Div(x.clone(), d2.checked_mul(d)?))
    } else {
        Lin::atom(Atom::Div(Box::new(rem), d))
    };
    whole.add(&inner)
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Repr {
    Expr(Lin),
    Unknown { lo: i64, hi: Option<i64> },
}

/// A dimension: known value, symbolic expression, or unknown, with bounds.
///
/// Equality is structural on the normal form: two `Dim`s that print equally are equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Dim(Repr);

fn to_i64(v: i128) -> Option<i64> {
    i64::try_from(v).ok()
}

impl Dim {
    /// A known value.
    pub fn known(v: i64) -> Dim {
        Dim(Repr::Expr(Lin::constant(v as i128)))
    }
    /// A symbol with bounds `[0, ∞)`.
    pub fn symbol(name: &str) -> Dim {
        Dim::symbol_bounded(name, 0, None)
    }
    /// A symbol with bounds `[lo, hi]` (`lo` is raised to 0 if negative: dims are never negative).
    pub fn symbol_bounded(name: &str, lo: i64, hi: Option<i64>) -> Dim {
        let lo = lo.max(0);
        let hi = hi.map(|h| h.max(lo));
        if hi == Some(lo) {
            return Dim::known(lo);
        }
        Dim(Repr::Expr(Lin::atom(Atom::Sym(Symbol {
            name: name.into(),
            lo,
            hi,
        }))))
    }
    /// An unknown dim, bounds `[0, ∞)`.
    pub fn unknown() -> Dim {
        Dim::unknown_bounded(0, None)
    }
    /// An unknown dim with bounds `[lo, hi]` (an interval dim such as OpenVINO's `1..10`).
    pub fn unknown_bounded(lo: i64, hi: Option<i64>) -> Dim {
        let hi = hi.map(|h| h.max(lo));
        if hi == Some(lo) {
            return Dim::known(lo);
        }
        Dim(Repr::Unknown { lo, hi })
    }

    fn from_lin(l: Option<Lin>, fallback: Iv) -> Dim {
        match l {
            // Intermediate constants may exceed i64 (they are i128); only `as_known` needs a fit.
            Some(l) => Dim(Repr::Expr(l)),
            None => Dim::from_iv(fallback),
        }
    }

    fn from_iv(iv: Iv) -> Dim {
        let lo = iv.lo.and_then(to_i64).unwrap_or(i64::MIN);
        Dim::unknown_bounded(lo, iv.hi.and_then(to_i64))
    }

    fn iv(&self) -> Iv {
        match &self.0 {
            Repr::Expr(l) => l.interval(),
            Repr::Unknown { lo, hi } => Iv {
                lo: Some(*lo as i128),
                hi: hi.map(|h| h as i128),
            },
        }
    }

    /// The value when known.
    pub fn as_known(&self) -> Option<i64> {
        match &self.0 {
            Repr::Expr(l) => l.as_const().and_then(to_i64),
            Repr::Unknown { .. } => None,
        }
    }
    /// True for a value, false for an expression or unknown.
    pub fn is_known(&self) -> bool {
        self.as_known().is_some()
    }
    /// True for a dim about which nothing but bounds is known.
    pub fn is_unknown(&self) -> bool {
        matches!(self.0, Repr::Unknown { .. })
    }
    /// Bounds `(lo, hi)` implied by the expression and its symbols' bounds; `None` is infinite
    /// (or beyond `i64`).
    pub fn bounds(&self) -> (Option<i64>, Option<i64>) {
        let iv = self.iv();
        (iv.lo.and_then(to_i64), iv.hi.and_then(to_i64))
    }
    /// Value once every symbol is bound; `None` if a symbol is missing, the dim is unknown, or
    /// the value does not fit `i64`.
    pub fn eval(&self, bindings: &HashMap<String, i64>) -> Option<i64> {
        match &self.0 {
            Repr::Expr(l) => l.eval(bindings).and_then(to_i64),
            Repr::Unknown { .. } => None,
        }
    }

    fn binop(
        &self,
        o: &Dim,
        f: impl Fn(&Lin, &Lin) -> Option<Lin>,
        iv: impl Fn(Iv, Iv) -> Iv,
    ) -> Dim {
        let fallback = iv(self.iv(), o.iv());
        match (&self.0, &o.0) {
            (Repr::Expr(a), Repr::Expr(b)) => Dim::from_lin(f(a, b), fallback),
            _ => Dim::from_iv(fallback),
        }
    }

    /// `self + o`.
    pub fn add(&self, o: &Dim) -> Dim {
        self.binop(o, |a, b| a.add(b), iv_add)
    }
    /// `self - o`.
    pub fn sub(&self, o: &Dim) -> Dim {
        self.binop(
            o,
            |a, b| a.add(&b.scale(-1)?),
            |a, b| iv_add(a, iv_scale(b, -1)),
        )
    }
    /// `self + c`.
    pub fn add_const(&self, c: i64) -> Dim {
        self.add(&Dim::known(c))
    }
    /// `min(self, o)`.
    pub fn min(&self, o: &Dim) -> Dim {
        self.binop(
            o,
            |a, b| mk_ext(MinMax::Min, vec![a.clone(), b.clone()]),
            |a, b| Iv {
                lo: a.lo.zip(b.lo).map(|(x, y)| x.min(y)),
                hi: match (a.hi, b.hi) {
                    (Some(x), Some(y)) => Some(x.min(y)),
                    (x, y) => x.or(y),
                },
            },
        )
    }
    /// `max(self, o)`.
    pub fn max(&self, o: &Dim) -> Dim {
        self.binop(
            o,
            |a, b| mk_ext(MinMax::Max, vec![a.clone(), b.clone()]),
            |a, b| Iv {
                lo: match (a.lo, b.lo) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
                },
                hi: a.hi.zip(b.hi).map(|(x, y)| x.max(y)),
            },
        )
    }
    /// `floor(self / d)` for `d >= 1`; `d < 1` gives an unknown dim.
    pub fn div_floor(&self, d: i64) -> Dim {
        let d = d as i128;
        let iv = self.iv();
        let fallback = if d >= 1 {
            Iv {
                lo: iv.lo.map(|v| v.div_euclid(d)),
                hi: iv.hi.map(|v| v.div_euclid(d)),
            }
        } else {
            Iv { lo: None, hi: None }
        };
        match &self.0 {
            Repr::Expr(a) => Dim::from_lin(mk_div(a, d), fallback),
            Repr::Unknown { .. } => Dim::from_iv(fallback),
        }
    }
}

impl From<i64> for Dim {
    fn from(v: i64) -> Dim {
        Dim::known(v)
    }
}

fn fmt_lin(l: &Lin, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let mut first = true;
    for (a, k) in &l.terms {
        let (neg, mag) = (*k < 0, k.unsigned_abs());
        match (first, neg) {
            (true, true) => write!(f, "-")?,
            (true, false) => {}
            (false, true) => write!(f, " - ")?,
            (false, false) => write!(f, " + ")?,
        }
        if mag != 1 {
            write!(f, "{mag}*")?;
        }
        fmt_atom(a, f)?;
        first = false;
    }
    if first {
        write!(f, "{}", l.c)
    } else if l.c > 0 {
        write!(f, " + {}", l.c)
    } else if l.c < 0 {
        write!(f, " - {}", l.c.unsigned_abs())
    } else {
        Ok(())
    }
}

fn fmt_atom(a: &Atom, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match a {
        Atom::Sym(s) => write!(f, "{}", s.name),
        Atom::Div(e, d) => {
            if e.single_atom().is_some() {
                fmt_lin(e, f)?;
            } else {
                write!(f, "(")?;
                fmt_lin(e, f)?;
                write!(f, ")")?;
            }
            write!(f, " / {d}")
        }
        Atom::Ext(kind, args) => {
            write!(f, "{}(", if *kind == MinMax::Min { "min" } else { "max" })?;
            for (i, x) in args.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                fmt_lin(x, f)?;
            }
            write!(f, ")")
        }
    }
}

impl fmt::Display for Dim {
    /// `5`, `N - 1`, `(N + 1) / 2`, `min(N, 4)`; an unknown dim prints `?` or its bounds `lo..hi`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Expr(l) => fmt_lin(l, f),
            Repr::Unknown { lo, hi } => match (lo, hi) {
                (lo, None) if *lo <= 0 => write!(f, "?"),
                (lo, None) => write!(f, "{lo}.."),
                (lo, Some(h)) => write!(f, "{lo}..{h}"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn unknown_keeps_bounds() {
        let u = Dim::unknown_bounded(1, Some(10));
        assert_eq!(u.add_const(-1).bounds(), (Some(0), Some(9)));
        assert_eq!(u.to_string(), "1..10");
    }
}
