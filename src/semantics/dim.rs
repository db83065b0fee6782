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
    /// Product of at least two sorted atoms (none a product), e.g. `N*M` (tract's `Mul`).
    /// First in the order, so products print first, as sympy prints them.
    Prod(Vec<Atom>),
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

/// Product of two intervals (infinite ends handled by sign; an overflow widens to infinite).
fn iv_mul(a: Iv, b: Iv) -> Iv {
    // Ends as extended integers: None below is -inf for lo and +inf for hi.
    #[derive(Clone, Copy)]
    enum E {
        NegInf,
        V(i128),
        PosInf,
    }
    let lo = |v: Option<i128>| v.map_or(E::NegInf, E::V);
    let hi = |v: Option<i128>| v.map_or(E::PosInf, E::V);
    let sign = |e: E| match e {
        E::NegInf => -1,
        E::PosInf => 1,
        E::V(v) => v.signum() as i32,
    };
    let mul = |x: E, y: E| -> Option<E> {
        match (x, y) {
            (E::V(p), E::V(q)) => p.checked_mul(q).map(E::V),
            _ => match sign(x) * sign(y) {
                0 => Some(E::V(0)),
                s if s > 0 => Some(E::PosInf),
                _ => Some(E::NegInf),
            },
        }
    };
    let corners = [
        mul(lo(a.lo), lo(b.lo)),
        mul(lo(a.lo), hi(b.hi)),
        mul(hi(a.hi), lo(b.lo)),
        mul(hi(a.hi), hi(b.hi)),
    ];
    if corners.iter().any(Option::is_none) {
        return Iv { lo: None, hi: None };
    }
    let key = |e: &E| match e {
        E::NegInf => (0, 0),
        E::V(v) => (1, *v),
        E::PosInf => (2, 0),
    };
    let vals: Vec<E> = corners.into_iter().flatten().collect();
    let min = vals.iter().min_by_key(|e| key(e)).copied();
    let max = vals.iter().max_by_key(|e| key(e)).copied();
    Iv {
        lo: match min {
            Some(E::V(v)) => Some(v),
            _ => None,
        },
        hi: match max {
            Some(E::V(v)) => Some(v),
            _ => None,
        },
    }
}

/// Beyond this magnitude a bound is taken as infinite (see [`Dim::bounds`]).
const HUGE: i128 = 1 << 62;

/// Largest expression (in atoms, nested included) whose bounds `Lin::tight` computes exactly.
const TIGHT_MAX_ATOMS: usize = 32;

/// Largest distributed form (in atoms, nested included) `Lin::distribute` takes; it
/// distributes sums of up to half as many.
const DISTRIBUTE_MAX_ATOMS: usize = 128;

/// The most terms a product of two sums may expand to before it is given up (unknown dim).
const MAX_TERMS: usize = 64;

fn atom_mul(a: &Atom, b: &Atom) -> Atom {
    let mut v: Vec<Atom> = Vec::new();
    for x in [a, b] {
        match x {
            Atom::Prod(inner) => v.extend(inner.iter().cloned()),
            other => v.push(other.clone()),
        }
    }
    v.sort();
    Atom::Prod(v)
}

impl Lin {
    /// Product of two normal forms, expanded (`None` on overflow or too many terms).
    fn mul(&self, o: &Lin) -> Option<Lin> {
        if let Some(k) = o.as_const() {
            return self.scale(k);
        }
        if let Some(k) = self.as_const() {
            return o.scale(k);
        }
        if self.terms.len().saturating_mul(o.terms.len()) > MAX_TERMS {
            return None;
        }
        let mut acc = Lin::constant(self.c.checked_mul(o.c)?);
        for (a, ka) in &self.terms {
            acc = acc.add(&Lin {
                terms: vec![(a.clone(), ka.checked_mul(o.c)?)],
                c: 0,
            })?;
            for (b, kb) in &o.terms {
                acc = acc.add(&Lin {
                    terms: vec![(atom_mul(a, b), ka.checked_mul(*kb)?)],
                    c: 0,
                })?;
            }
        }
        for (b, kb) in &o.terms {
            acc = acc.add(&Lin {
                terms: vec![(b.clone(), kb.checked_mul(self.c)?)],
                c: 0,
            })?;
        }
        Some(acc)
    }

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
        self.eval_with(&|s: &str| b.get(s).map(|&v| v as i128))
    }

    fn eval_with(&self, b: &dyn Fn(&str) -> Option<i128>) -> Option<i128> {
        let mut acc = self.c;
        for (a, k) in &self.terms {
            acc = acc.checked_add(a.eval_with(b)?.checked_mul(*k)?)?;
        }
        Some(acc)
    }

    /// Sum of two normal forms, without distributing min/max (for sign tests).
    fn add_raw(&self, o: &Lin) -> Option<Lin> {
        let mut m: BTreeMap<Atom, i128> = BTreeMap::new();
        for (a, k) in self.terms.iter().chain(o.terms.iter()) {
            let e = m.entry(a.clone()).or_insert(0);
            *e = e.checked_add(*k)?;
        }
        Some(Lin {
            terms: m.into_iter().filter(|(_, k)| *k != 0).collect(),
            c: self.c.checked_add(o.c)?,
        })
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

    /// `rest + k * ext(args)` with k = ±1 becomes `ext'(rest + k * arg, ...)`: exact, and it makes
    /// `N - min(1, N)` print as `max(N - 1, 0)`. With several min/max terms the first one is
    /// distributed and the others follow recursively (`min(N, C) - max(N - 4, 0)` becomes
    /// `min(4, N, C - N + 4, C)` before domination prunes it), up to [`MAX_TERMS`] arguments.
    fn distribute(self) -> Option<Lin> {
        let Some(i) = self
            .terms
            .iter()
            .position(|(a, k)| matches!(a, Atom::Ext(..)) && (*k == 1 || *k == -1))
        else {
            return Some(self);
        };
        if self.terms.len() == 1 && self.c == 0 && self.terms[0].1 == 1 {
            return Some(self);
        }
        let (Atom::Ext(kind, args), k) = (&self.terms[i].0, self.terms[i].1) else {
            return Some(self);
        };
        let exts = self
            .terms
            .iter()
            .filter(|(a, _)| matches!(a, Atom::Ext(..)))
            .count();
        if exts > 3 || args.len() > MAX_TERMS / 4 {
            return Some(self);
        }
        if DEPTH.with(|d| d.get()) >= MAX_DEPTH {
            return Some(self);
        }
        let fits = |e: &Lin, atoms: usize| {
            let mut budget = atoms;
            e.within(&mut budget)
        };
        if !fits(&self, DISTRIBUTE_MAX_ATOMS / 2) {
            return Some(self);
        }
        let _guard = DepthGuard::enter();
        let mut rest = self.clone();
        rest.terms.remove(i);
        let kind = if k == 1 { *kind } else { kind.flip() };
        let mut new_args = Vec::with_capacity(args.len());
        for a in args {
            new_args.push(rest.add(&a.scale(k)?)?);
        }
        if new_args.iter().map(Lin::width).sum::<usize>() > MAX_TERMS {
            return Some(self);
        }
        let out = mk_ext(kind, new_args)?;
        // Distributed, a sum of clamped dims can grow without end (`n + max(n - 1, 0) + ...`
        // doubles every few terms, where the sum itself grows by one atom a term; a Concat of a
        // hundred slices `x[i:]` ran for minutes): a sum over DISTRIBUTE_MAX_ATOMS / 2 atoms,
        // or one whose distributed form is over DISTRIBUTE_MAX_ATOMS, is kept as it is.
        if !fits(&out, DISTRIBUTE_MAX_ATOMS) {
            return Some(self);
        }
        Some(out)
    }

    /// Number of min/max arguments at the top (1 for anything else).
    fn width(&self) -> usize {
        match self.single_atom() {
            Some(Atom::Ext(_, a)) => a.len(),
            _ => 1,
        }
    }
}

/// How deep distribution of min/max over sums may recurse (each level simplifies the arguments
/// of the one above): deeper, the sum is kept as it is (still exact, only longer).
const MAX_DEPTH: u32 = 6;

thread_local! {
    static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

struct DepthGuard;

impl DepthGuard {
    fn enter() -> DepthGuard {
        DEPTH.with(|d| d.set(d.get() + 1));
        DepthGuard
    }
}

impl Drop for DepthGuard {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
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
            Atom::Prod(atoms) => {
                let mut acc = Iv {
                    lo: Some(1),
                    hi: Some(1),
                };
                for a in atoms {
                    acc = iv_mul(acc, a.interval());
                }
                acc
            }
        }
    }

    fn eval_with(&self, b: &dyn Fn(&str) -> Option<i128>) -> Option<i128> {
        match self {
            Atom::Prod(atoms) => {
                let mut acc: i128 = 1;
                for a in atoms {
                    acc = acc.checked_mul(a.eval_with(b)?)?;
                }
                Some(acc)
            }
            Atom::Sym(s) => b(s.name()),
            Atom::Div(e, d) => Some(e.eval_with(b)?.div_euclid(*d)),
            Atom::Ext(kind, args) => {
                let mut acc: Option<i128> = None;
                for a in args {
                    let v = a.eval_with(b)?;
                    acc = Some(match (acc, kind) {
                        (None, _) => v,
                        (Some(x), MinMax::Min) => x.min(v),
                        (Some(x), MinMax::Max) => x.max(v),
                    });
                }
                acc
            }
        }
    }
}

/// Value of `l` with the one symbol `name` bound to `v` (every other symbol: `None`).
fn eval_at(l: &Lin, name: &str, v: i128) -> Option<i128> {
    l.eval_with(&|s: &str| (s == name).then_some(v))
}

impl Lin {
    fn collect_symbols(&self, out: &mut Vec<Symbol>) {
        for (a, _) in &self.terms {
            a.collect_symbols(out);
        }
    }

    /// Adds to `pts` every point of `[lo, hi]` where the one-symbol expression `self` may change
    /// slope (the crossings of min/max arguments, found on segments where both are linear), so
    /// that between two consecutive points it is linear or a floor of a linear function, hence
    /// monotone. Returns false when that cannot be guaranteed (a floor inside a min/max argument
    /// or next to another term).
    fn breakpoints(&self, name: &str, pts: &mut std::collections::BTreeSet<i128>) -> bool {
        self.terms.iter().all(|(a, _)| match a {
            Atom::Sym(_) => true,
            Atom::Prod(_) => false,
            // A floor of a function monotone between the points is monotone there; a sum of
            // it with other terms need not be (`N - 2*floor(N/2)` is 0, 1, 0, ...).
            Atom::Div(e, _) => self.terms.len() == 1 && e.breakpoints(name, pts),
            Atom::Ext(_, args) => {
                if args.iter().any(Lin::has_div) {
                    return false;
                }
                if !args.iter().all(|x| x.breakpoints(name, pts)) {
                    return false;
                }
                let seg: Vec<i128> = pts.iter().copied().collect();
                for (i, x) in args.iter().enumerate() {
                    for y in &args[i + 1..] {
                        let Some(f) = x.add(&y.scale(-1).unwrap_or_else(|| Lin::constant(0)))
                        else {
                            return false;
                        };
                        for w in seg.windows(2) {
                            let (p, q) = (w[0], w[1]);
                            let (Some(fp), Some(fq)) = (eval_at(&f, name, p), eval_at(&f, name, q))
                            else {
                                return false;
                            };
                            if fp.signum() * fq.signum() >= 0 {
                                continue;
                            }
                            // Linear on [p, q]: f(x) = fp + slope * (x - p), root between
                            // p + t and p + t + 1.
                            let Some(f1) = eval_at(&f, name, p + 1) else {
                                return false;
                            };
                            let slope = f1 - fp;
                            if slope == 0 {
                                continue;
                            }
                            // t = floor(-fp / slope). Euclidean division floors only for a
                            // positive divisor: for a falling f it rounded up, and the point
                            // just left of the crossing (where a min/max may peak) was missed.
                            let t = if slope > 0 {
                                (-fp).div_euclid(slope)
                            } else {
                                fp.div_euclid(-slope)
                            };
                            let (a, b) = ((p + t).clamp(p, q), (p + t + 1).clamp(p, q));
                            pts.insert(a);
                            pts.insert(b);
                        }
                    }
                }
                true
            }
        })
    }

    /// Counts this expression's atoms (nested ones included) against `budget`; false when it
    /// runs out.
    fn within(&self, budget: &mut usize) -> bool {
        self.terms.iter().all(|(a, _)| a.within(budget))
    }

    fn has_div(&self) -> bool {
        self.terms.iter().any(|(a, _)| match a {
            Atom::Div(..) => true,
            Atom::Ext(_, args) => args.iter().any(Lin::has_div),
            Atom::Prod(v) => v.iter().any(|x| matches!(x, Atom::Div(..))),
            Atom::Sym(_) => false,
        })
    }

    /// Bounds of the expression: exact when it has a single symbol (the extremes of a piecewise
    /// linear function lie at its breakpoints and ends), interval arithmetic otherwise.
    fn tight(&self) -> Iv {
        let base = self.interval();
        // The breakpoint search is superlinear in the expression's size (every pair of min/max
        // arguments, at every level, evaluated at every breakpoint): past a size no real
        // model's dims reach, interval arithmetic's bounds are used. A fuzzed 4.7 KB model
        // whose slice clamps nested ever larger expressions ran for minutes here.
        let mut budget = TIGHT_MAX_ATOMS;
        if !self.within(&mut budget) {
            return base;
        }
        let mut syms = Vec::new();
        self.collect_symbols(&mut syms);
        syms.sort();
        syms.dedup();
        let [s] = syms.as_slice() else {
            return base;
        };
        let (lo, hi) = (s.lo as i128, s.hi.unwrap_or(i64::MAX) as i128);
        let mut pts: std::collections::BTreeSet<i128> = [lo, hi].into();
        if hi - lo <= 64 {
            pts.extend(lo..=hi);
        } else if !self.breakpoints(&s.name, &mut pts) {
            return base;
        }
        let mut vals = Vec::with_capacity(pts.len());
        for p in pts.range(lo..=hi) {
            match eval_at(self, &s.name, *p) {
                Some(v) => vals.push(v),
                None => return base,
            }
        }
        let (Some(&mn), Some(&mx)) = (vals.iter().min(), vals.iter().max()) else {
            return base;
        };
        // An unbounded symbol stands for "any size": a value that grows with it is unbounded.
        let huge = |v: i128| s.hi.is_none() && v.abs() >= HUGE;
        let lo_v = if huge(mn) { None } else { Some(mn) };
        let hi_v = if huge(mx) { None } else { Some(mx) };
        Iv {
            lo: match (base.lo, lo_v) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            },
            hi: match (base.hi, hi_v) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        }
    }
}

impl Atom {
    fn within(&self, budget: &mut usize) -> bool {
        if *budget == 0 {
            return false;
        }
        *budget -= 1;
        match self {
            Atom::Sym(_) => true,
            Atom::Div(e, _) => e.within(budget),
            Atom::Ext(_, args) => args.iter().all(|a| a.within(budget)),
            Atom::Prod(v) => v.iter().all(|a| a.within(budget)),
        }
    }

    fn collect_symbols(&self, out: &mut Vec<Symbol>) {
        match self {
            Atom::Sym(s) => out.push(s.clone()),
            Atom::Div(e, _) => e.collect_symbols(out),
            Atom::Ext(_, args) => args.iter().for_each(|a| a.collect_symbols(out)),
            Atom::Prod(v) => v.iter().for_each(|a| a.collect_symbols(out)),
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
            let diff = flat[j].add_raw(&flat[i].scale(-1)?)?.tight(); // b - a
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

/// One normal form per dim: a constant that fits `i64` is always `Known` (never an `Expr`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Repr {
    /// A known value.
    Known(i64),
    /// Any other expression (a constant only beyond `i64`). Shared: copying a dim, as every
    /// shape function does for the dims it passes through, is a count, not an allocation.
    Expr(Arc<Lin>),
    /// Unknown, bounds `[0, ∞)`: the commonest unknown, without an allocation.
    Unknown,
    /// Unknown with any other bounds `(lo, hi)`. Shared, so that a dim is 16 bytes, not 32:
    /// shapes are vectors of dims, one or more per value of a graph.
    Bounded(Arc<(i64, Option<i64>)>),
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
        Dim(Repr::Known(v))
    }
    /// The dim of expression `l`, in normal form.
    fn from_lin(l: Lin) -> Dim {
        match l.as_const() {
            Some(c) => Dim::from_const(c),
            None => Dim(Repr::Expr(Arc::new(l))),
        }
    }
    /// The dim of constant `c`, in normal form.
    fn from_const(c: i128) -> Dim {
        match to_i64(c) {
            Some(v) => Dim(Repr::Known(v)),
            None => Dim(Repr::Expr(Arc::new(Lin::constant(c)))),
        }
    }
    /// The expression, `None` for an unknown dim (a known value's is built: it allocates
    /// nothing).
    fn lin(&self) -> Option<std::borrow::Cow<'_, Lin>> {
        match &self.0 {
            Repr::Known(v) => Some(std::borrow::Cow::Owned(Lin::constant(*v as i128))),
            Repr::Expr(l) => Some(std::borrow::Cow::Borrowed(l)),
            Repr::Unknown | Repr::Bounded(_) => None,
        }
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
        Dim(Repr::Expr(Arc::new(Lin::atom(Atom::Sym(Symbol {
            name: name.into(),
            lo,
            hi,
        })))))
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
        if lo == 0 && hi.is_none() {
            return Dim(Repr::Unknown);
        }
        Dim(Repr::Bounded(Arc::new((lo, hi))))
    }

    fn from_iv(iv: Iv) -> Dim {
        let lo = iv.lo.and_then(to_i64).unwrap_or(i64::MIN);
        Dim::unknown_bounded(lo, iv.hi.and_then(to_i64))
    }

    fn iv(&self) -> Iv {
        match &self.0 {
            Repr::Known(v) => Iv {
                lo: Some(*v as i128),
                hi: Some(*v as i128),
            },
            Repr::Expr(l) => l.tight(),
            Repr::Unknown => Iv {
                lo: Some(0),
                hi: None,
            },
            Repr::Bounded(b) => Iv {
                lo: Some(b.0 as i128),
                hi: b.1.map(|h| h as i128),
            },
        }
    }

    /// The value when known.
    pub fn as_known(&self) -> Option<i64> {
        match &self.0 {
            Repr::Known(v) => Some(*v),
            // A constant beyond i64 (nothing else is a constant `Expr`).
            Repr::Expr(_) | Repr::Unknown | Repr::Bounded(_) => None,
        }
    }
    /// True for a value, false for an expression or unknown.
    pub fn is_known(&self) -> bool {
        self.as_known().is_some()
    }
    /// True for a dim about which nothing but bounds is known.
    pub fn is_unknown(&self) -> bool {
        matches!(self.0, Repr::Unknown | Repr::Bounded(_))
    }
    /// Bounds `(lo, hi)` implied by the expression and its symbols' bounds; `None` is infinite
    /// (or beyond `i64`).
    ///
    /// For an expression over a symbol without an upper bound, a bound at or beyond `±2^62` is
    /// reported infinite: it comes from that symbol standing for "any size" (whose interval
    /// ends at `i64::MAX`).
    pub fn bounds(&self) -> (Option<i64>, Option<i64>) {
        let iv = self.iv();
        let unbounded = self.symbols().iter().any(|s| s.hi.is_none());
        let far = |v: i128| unbounded && v.abs() >= HUGE;
        (
            iv.lo.filter(|&v| !far(v)).and_then(to_i64),
            iv.hi.filter(|&v| !far(v)).and_then(to_i64),
        )
    }
    /// Value once every symbol is bound; `None` if a symbol is missing, the dim is unknown, or
    /// the value does not fit `i64`.
    pub fn eval(&self, bindings: &HashMap<String, i64>) -> Option<i64> {
        match &self.0 {
            Repr::Known(v) => Some(*v),
            Repr::Expr(l) => l.eval(bindings).and_then(to_i64),
            Repr::Unknown | Repr::Bounded(_) => None,
        }
    }

    /// `k` computes the result of two constants directly (`None` on overflow: the general path
    /// decides); the bounds `iv` are computed only when the expression path gives up (they cost
    /// an evaluation of each operand at its breakpoints).
    fn binop(
        &self,
        o: &Dim,
        f: impl Fn(&Lin, &Lin) -> Option<Lin>,
        iv: impl Fn(Iv, Iv) -> Iv,
        k: impl Fn(i128, i128) -> Option<i128>,
    ) -> Dim {
        // Intermediate constants may exceed i64 (they are i128); only `as_known` needs a fit.
        if let (Repr::Known(x), Repr::Known(y)) = (&self.0, &o.0) {
            if let Some(v) = k(*x as i128, *y as i128) {
                return Dim::from_const(v);
            }
        }
        match (self.lin(), o.lin()) {
            (Some(a), Some(b)) => {
                if let Some(v) = a.as_const().zip(b.as_const()).and_then(|(x, y)| k(x, y)) {
                    return Dim::from_const(v);
                }
                match f(&a, &b) {
                    Some(l) => Dim::from_lin(l),
                    None => Dim::from_iv(iv(self.iv(), o.iv())),
                }
            }
            _ => Dim::from_iv(iv(self.iv(), o.iv())),
        }
    }

    /// `self + o`.
    pub fn add(&self, o: &Dim) -> Dim {
        self.binop(o, |a, b| a.add(b), iv_add, i128::checked_add)
    }
    /// `self - o`.
    pub fn sub(&self, o: &Dim) -> Dim {
        self.binop(
            o,
            |a, b| a.add(&b.scale(-1)?),
            |a, b| iv_add(a, iv_scale(b, -1)),
            i128::checked_sub,
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
            |x, y| Some(x.min(y)),
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
            |x, y| Some(x.max(y)),
        )
    }
    /// `floor(self / d)` for `d >= 1`; `d < 1` gives an unknown dim.
    pub fn div_floor(&self, d: i64) -> Dim {
        let d = d as i128;
        let fallback = || {
            let iv = self.iv();
            Dim::from_iv(if d >= 1 {
                Iv {
                    lo: iv.lo.map(|v| v.div_euclid(d)),
                    hi: iv.hi.map(|v| v.div_euclid(d)),
                }
            } else {
                Iv { lo: None, hi: None }
            })
        };
        match self.lin() {
            Some(a) => match a.as_const() {
                Some(c) if d >= 1 => Dim::from_const(c.div_euclid(d)),
                _ => match mk_div(&a, d) {
                    Some(l) => Dim::from_lin(l),
                    None => fallback(),
                },
            },
            None => fallback(),
        }
    }
}

impl Dim {
    /// `self * o`: a product of two expressions expands into a sum of products of atoms (`N*M`,
    /// tract's `Mul`); exact. Too large an expansion gives an unknown dim with the bounds.
    pub fn mul(&self, o: &Dim) -> Dim {
        self.binop(o, |a, b| a.mul(b), iv_mul, i128::checked_mul)
    }
    /// `self * k`.
    pub fn mul_const(&self, k: i64) -> Dim {
        self.mul(&Dim::known(k))
    }
    /// `-self`.
    pub fn neg(&self) -> Dim {
        Dim::known(0).sub(self)
    }

    /// The symbols the expression uses (sorted, each once).
    pub fn symbols(&self) -> Vec<Symbol> {
        let mut v = Vec::new();
        if let Repr::Expr(l) = &self.0 {
            l.collect_symbols(&mut v);
        }
        v.sort();
        v.dedup();
        v
    }

    /// The expression in the syntax ONNX Runtime's symbolic shape inference writes in a
    /// `dim_param` (`min(N, 4)`, `floor((N + 1)/2)`, `N*M`); `None` for an unknown dim.
    pub fn to_onnx(&self) -> Option<String> {
        let l = self.lin()?;
        let mut s = String::new();
        fmt_lin(&l, &mut s, Style::Onnx).ok()?;
        Some(s)
    }

    /// True when `self` and `o` are equal for every value of the symbols (within their bounds):
    /// equal normal forms, or a difference whose bounds are exactly `[0, 0]`. False means "not
    /// proven equal".
    pub fn provably_equal(&self, o: &Dim) -> bool {
        if self.is_unknown() || o.is_unknown() {
            return false;
        }
        if self == o {
            return true;
        }
        self.sub(o).bounds() == (Some(0), Some(0))
    }

    /// Parses an expression as [`Dim::to_onnx`] prints it (and as ONNX Runtime writes them:
    /// `min`/`Min`, `max`/`Max`, `floor(E/k)`, `+ - *`, parentheses; any other `/` is refused,
    /// since ONNX Runtime's division is rational).
    /// Identifiers become symbols through `symbol` (which gives their bounds). `None` when the
    /// text is not such an expression (the caller then takes it as one opaque name).
    pub fn parse(text: &str, symbol: &dyn Fn(&str) -> Dim) -> Option<Dim> {
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
            symbol,
        };
        let d = p.expr(0)?;
        p.ws();
        (p.i == p.s.len()).then_some(d)
    }
}

/// The default upper limit assumed for symbolic dims read from a file (see [`dim_limit`]).
pub const DEFAULT_DIM_LIMIT: i64 = i32::MAX as i64;

static DIM_LIMIT: std::sync::atomic::AtomicI64 =
    std::sync::atomic::AtomicI64::new(DEFAULT_DIM_LIMIT);

/// The largest value assumed for a symbolic dim a model names (`dim_param`), or `None` for no
/// limit. Default: `2^31 - 1` ([`DEFAULT_DIM_LIMIT`]), so that the `INT32_MAX` ends tf2onnx writes
/// for "to the end" give the plain symbol (`min(N, 2147483647)` is `N`). Every result stays
/// exact for dims up to the limit. Process-wide; set with [`set_dim_limit`].
pub fn dim_limit() -> Option<i64> {
    match DIM_LIMIT.load(std::sync::atomic::Ordering::Relaxed) {
        v if v < 0 => None,
        v => Some(v),
    }
}

/// Sets the limit of [`dim_limit`] (`None`: dims may be as large as `i64::MAX`).
pub fn set_dim_limit(limit: Option<i64>) {
    DIM_LIMIT.store(
        limit.map_or(-1, |v| v.max(0)),
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// A symbol named by a model: bounds `[0, dim_limit()]`.
pub fn model_symbol(name: &str) -> Dim {
    Dim::symbol_bounded(name, 0, dim_limit())
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    symbol: &'a dyn Fn(&str) -> Dim,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn expr(&mut self, depth: usize) -> Option<Dim> {
        if depth > 64 {
            return None;
        }
        let mut acc = self.term(depth)?;
        loop {
            if self.eat(b'+') {
                acc = acc.add(&self.term(depth)?);
            } else if self.eat(b'-') {
                acc = acc.sub(&self.term(depth)?);
            } else {
                return Some(acc);
            }
        }
    }
    fn term(&mut self, depth: usize) -> Option<Dim> {
        let mut acc = self.factor(depth)?;
        loop {
            if self.eat(b'*') {
                acc = acc.mul(&self.factor(depth)?);
            } else {
                return Some(acc);
            }
        }
    }
    fn factor(&mut self, depth: usize) -> Option<Dim> {
        self.ws();
        let c = *self.s.get(self.i)?;
        if c == b'-' {
            self.i += 1;
            return Some(self.factor(depth + 1)?.neg());
        }
        if c == b'(' {
            self.i += 1;
            let e = self.expr(depth + 1)?;
            return self.eat(b')').then_some(e);
        }
        if c.is_ascii_digit() {
            let st = self.i;
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
            let v: i64 = std::str::from_utf8(&self.s[st..self.i])
                .ok()?
                .parse()
                .ok()?;
            return Some(Dim::known(v));
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let st = self.i;
            while self.i < self.s.len()
                && (self.s[self.i].is_ascii_alphanumeric() || matches!(self.s[self.i], b'_' | b'.'))
            {
                self.i += 1;
            }
            let name = std::str::from_utf8(&self.s[st..self.i]).ok()?;
            let save = self.i;
            if name == "floor" && self.eat(b'(') {
                // Only `floor(E/k)`: ONNX Runtime's `/` is rational (`floor(W/2 - 1/2)`), so any
                // other use of `/` is refused rather than read as a floor division.
                let e = self.term(depth + 1)?;
                if !self.eat(b'/') {
                    return None;
                }
                let d = self.factor(depth + 1)?.as_known()?;
                if d < 1 || !self.eat(b')') {
                    return None;
                }
                return Some(e.div_floor(d));
            }
            if matches!(name, "min" | "max" | "Min" | "Max") && self.eat(b'(') {
                let mut args = vec![self.expr(depth + 1)?];
                while self.eat(b',') {
                    args.push(self.expr(depth + 1)?);
                }
                if !self.eat(b')') {
                    return None;
                }
                let mut it = args.into_iter();
                let first = it.next()?;
                return match name {
                    "min" | "Min" => Some(it.fold(first, |a, b| a.min(&b))),
                    _ => Some(it.fold(first, |a, b| a.max(&b))),
                };
            }
            self.i = save;
            return Some((self.symbol)(name));
        }
        None
    }
}

impl From<i64> for Dim {
    fn from(v: i64) -> Dim {
        Dim::known(v)
    }
}

/// Printing style: ours (`(N + 1) / 2` is floor division, as tract's `TDim` prints it) or ONNX
/// Runtime's (`floor((N + 1)/2)`, the sympy form its symbolic shape inference writes).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Ours,
    Onnx,
}

fn fmt_lin(l: &Lin, f: &mut dyn fmt::Write, st: Style) -> fmt::Result {
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
        let paren = mag != 1 && st == Style::Ours && matches!(a, Atom::Div(..));
        if paren {
            write!(f, "(")?;
        }
        fmt_atom(a, f, st)?;
        if paren {
            write!(f, ")")?;
        }
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

fn fmt_atom(a: &Atom, f: &mut dyn fmt::Write, st: Style) -> fmt::Result {
    match a {
        Atom::Sym(s) => write!(f, "{}", s.name),
        Atom::Div(e, d) => match st {
            Style::Onnx => {
                write!(f, "floor(")?;
                if e.single_atom().is_some() {
                    fmt_lin(e, f, st)?;
                } else {
                    write!(f, "(")?;
                    fmt_lin(e, f, st)?;
                    write!(f, ")")?;
                }
                write!(f, "/{d})")
            }
            Style::Ours => {
                if e.single_atom().is_some() {
                    fmt_lin(e, f, st)?;
                } else {
                    write!(f, "(")?;
                    fmt_lin(e, f, st)?;
                    write!(f, ")")?;
                }
                write!(f, " / {d}")
            }
        },
        Atom::Ext(kind, args) => {
            write!(f, "{}(", if *kind == MinMax::Min { "min" } else { "max" })?;
            for (i, x) in args.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                fmt_lin(x, f, st)?;
            }
            write!(f, ")")
        }
        Atom::Prod(v) => {
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    write!(f, "*")?;
                }
                let paren = st == Style::Ours && matches!(x, Atom::Div(..));
                if paren {
                    write!(f, "(")?;
                }
                fmt_atom(x, f, st)?;
                if paren {
                    write!(f, ")")?;
                }
            }
            Ok(())
        }
    }
}

impl fmt::Display for Dim {
    /// `5`, `N - 1`, `(N + 1) / 2`, `min(N, 4)`; an unknown dim prints `?` or its bounds `lo..hi`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Known(v) => fmt_lin(&Lin::constant(*v as i128), f, Style::Ours),
            Repr::Expr(l) => fmt_lin(l, f, Style::Ours),
            Repr::Unknown => write!(f, "?"),
            Repr::Bounded(b) => match b.as_ref() {
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
        // ONNX Runtime's rational division is refused, not misread as a floor.
        assert_eq!(Dim::parse("floor(W/2 - 1/2) + 1", &sym), None);
        assert_eq!(Dim::parse("N/2", &sym), None);
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
}
