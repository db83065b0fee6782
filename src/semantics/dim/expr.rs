//! The normal form of a symbolic expression: `Lin` (a sum of atoms with coefficients plus a
//! constant) and `Atom` (a symbol, a product, a floor division, a `min`/`max`), with their
//! arithmetic, simplification and evaluation.

use super::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum MinMax {
    Min,
    Max,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Atom {
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
pub(super) struct Lin {
    pub(super) terms: Vec<(Atom, i128)>,
    pub(super) c: i128,
}

/// Beyond this magnitude a bound is taken as infinite (see [`Dim::bounds`]).
pub(super) const HUGE: i128 = 1 << 62;

/// The largest period (product of divisors) `Lin::tight` tries every value of.
pub(super) const MAX_PERIOD: i128 = 256;

/// Largest expression (in atoms, nested included) whose bounds `Lin::tight` computes exactly.
pub(super) const TIGHT_MAX_ATOMS: usize = 32;

/// Largest distributed form (in atoms, nested included) `Lin::distribute` takes; it
/// distributes sums of up to half as many.
pub(super) const DISTRIBUTE_MAX_ATOMS: usize = 128;

/// The most terms a product of two sums may expand to before it is given up (unknown dim).
pub(super) const MAX_TERMS: usize = 64;

pub(super) fn atom_mul(a: &Atom, b: &Atom) -> Atom {
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
    pub(super) fn mul(&self, o: &Lin) -> Option<Lin> {
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

    pub(super) fn constant(c: i128) -> Lin {
        Lin { terms: vec![], c }
    }
    pub(super) fn atom(a: Atom) -> Lin {
        Lin {
            terms: vec![(a, 1)],
            c: 0,
        }
    }
    pub(super) fn as_const(&self) -> Option<i128> {
        self.terms.is_empty().then_some(self.c)
    }
    /// `floor(x / d2) + c` (one floor division with coefficient 1, plus a constant): `(x, d2)`.
    pub(super) fn div_plus_const(&self) -> Option<(&Lin, i128)> {
        match self.terms.as_slice() {
            [(Atom::Div(x, d2), 1)] => Some((x, *d2)),
            _ => None,
        }
    }
    pub(super) fn single_atom(&self) -> Option<&Atom> {
        match self.terms.as_slice() {
            [(a, 1)] if self.c == 0 => Some(a),
            _ => None,
        }
    }

    pub(super) fn interval(&self) -> Iv {
        let mut acc = Iv {
            lo: Some(self.c),
            hi: Some(self.c),
        };
        for (a, k) in &self.terms {
            acc = iv_add(acc, iv_scale(a.interval(), *k));
        }
        if assuming() {
            acc = assumed_bounds(self, acc);
        }
        acc
    }

    pub(super) fn eval(&self, b: &HashMap<String, i64>) -> Option<i128> {
        self.eval_with(&|s: &str| b.get(s).map(|&v| v as i128))
    }

    pub(super) fn eval_with(&self, b: &dyn Fn(&str) -> Option<i128>) -> Option<i128> {
        let mut acc = self.c;
        for (a, k) in &self.terms {
            acc = acc.checked_add(a.eval_with(b)?.checked_mul(*k)?)?;
        }
        Some(acc)
    }

    /// Sum of two normal forms, without distributing min/max (for sign tests).
    pub(super) fn add_raw(&self, o: &Lin) -> Option<Lin> {
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
    pub(super) fn add(&self, o: &Lin) -> Option<Lin> {
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

    pub(super) fn scale(&self, k: i128) -> Option<Lin> {
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
    pub(super) fn distribute(self) -> Option<Lin> {
        let Some(i) = self
            .terms
            .iter()
            .position(|(a, k)| matches!(a, Atom::Ext(..)) && (*k == 1 || *k == -1))
        else {
            return Some(self);
        };
        // A lone min/max, or its negation, is kept as it is: whether a sum distributes is
        // decided by the whole sum (see below), and `a - max(x, y)` must reach one form
        // whether it is built as `a + (-max(x, y))` or at once (the text written is read back
        // through the other path).
        if self.terms.len() == 1 && self.c == 0 && self.terms[0].1.abs() == 1 {
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
        // Distributing is for cancelling (`N - min(1, N)` is `max(N - 1, 0)`); over several
        // symbols a form that came out longer is not kept (readable dims: GPT-2's mask slice
        // over `k_len` and `q_len`, 370 characters distributed, 111 not; the price: a later
        // cancellation is missed, `max(min(past + seq, 64) - min(past, 64), 0)` stays so
        // rather than `max(min(64 - past, seq), 0)`. Allowing twice as long made the text
        // written for GPT-2's mask read back as another form, so it was not written). Over one
        // symbol it is always kept: the exact bounds found at its breakpoints decide more
        // min/max arms.
        if out.size() > self.size() && self.several_symbols() {
            return Some(self);
        }
        Some(out)
    }

    /// True when the expression uses two symbols or more.
    pub(super) fn several_symbols(&self) -> bool {
        let mut v = Vec::new();
        self.collect_symbols(&mut v);
        v.iter().any(|s| s.name != v[0].name)
    }

    /// The number of atoms and constants, nested ones included: a measure of printed length.
    pub(super) fn size(&self) -> usize {
        usize::from(self.c != 0) + self.terms.iter().map(|(a, _)| a.size()).sum::<usize>()
    }

    /// Number of min/max arguments at the top (1 for anything else).
    pub(super) fn width(&self) -> usize {
        match self.single_atom() {
            Some(Atom::Ext(_, a)) => a.len(),
            _ => 1,
        }
    }
}

/// How deep distribution of min/max over sums may recurse (each level simplifies the arguments
/// of the one above): deeper, the sum is kept as it is (still exact, only longer).
pub(super) const MAX_DEPTH: u32 = 6;

thread_local! {
    static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

pub(super) struct DepthGuard;

impl DepthGuard {
    pub(super) fn enter() -> DepthGuard {
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
    pub(super) fn flip(self) -> MinMax {
        match self {
            MinMax::Min => MinMax::Max,
            MinMax::Max => MinMax::Min,
        }
    }
}

impl Atom {
    pub(super) fn interval(&self) -> Iv {
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

    pub(super) fn eval_with(&self, b: &dyn Fn(&str) -> Option<i128>) -> Option<i128> {
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
pub(super) fn eval_at(l: &Lin, name: &str, v: i128) -> Option<i128> {
    l.eval_with(&|s: &str| (s == name).then_some(v))
}

impl Lin {
    pub(super) fn collect_symbols(&self, out: &mut Vec<Symbol>) {
        for (a, _) in &self.terms {
            a.collect_symbols(out);
        }
    }

    /// Adds to `pts` every point of `[lo, hi]` where the one-symbol expression `self` may change
    /// slope (the crossings of min/max arguments, found on segments where both are linear), so
    /// that between two consecutive points it is linear or a floor of a linear function, hence
    /// monotone. Returns false when that cannot be guaranteed (a floor inside a min/max argument).
    pub(super) fn breakpoints(
        &self,
        name: &str,
        pts: &mut std::collections::BTreeSet<i128>,
    ) -> bool {
        // A floor division beside any other term is not monotone between breakpoints
        // (`N - 2*floor(N/2)` is N mod 2; `floor((N + 6)/8) - floor((N + 7)/8)` is 0 at both
        // ends of [0, 2^31 - 1] and -1 at N = 1): only a floor division alone is.
        let divs = self
            .terms
            .iter()
            .filter(|(a, _)| matches!(a, Atom::Div(..)))
            .count();
        if divs > 0 && self.terms.len() > 1 {
            return false;
        }
        self.terms.iter().all(|(a, _)| match a {
            Atom::Sym(_) => true,
            Atom::Prod(_) => false,
            Atom::Div(e, _) => e.breakpoints(name, pts),
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
                            // t = floor(-fp / slope), rounded down for either sign of the
                            // slope (`(-fp).div_euclid(slope)` rounds up for a negative one:
                            // min(-2N, N - 22) peaks at N = 7, not 8).
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

    /// For an expression of symbols and floor divisions only (no min/max, no product) with a
    /// floor division among its terms: the product of every divisor, when at most
    /// [`MAX_PERIOD`]. With one symbol `x`, `f(x + p) - f(x)` is then the same for every `x`
    /// (each `floor(e/d)` grows by `(e(x + p) - e(x)) / d`, an integer since `d` divides what
    /// `p` leaves of the growth of `e`), so `f` is linear plus a function of period `p`.
    pub(super) fn period(&self) -> Option<i128> {
        fn walk(l: &Lin, p: &mut i128) -> bool {
            l.terms.iter().all(|(a, _)| match a {
                Atom::Sym(_) => true,
                Atom::Div(e, d) => match p.checked_mul(*d) {
                    Some(q) if q <= MAX_PERIOD => {
                        *p = q;
                        walk(e, p)
                    }
                    _ => false,
                },
                Atom::Ext(..) | Atom::Prod(_) => false,
            })
        }
        let mut p = 1;
        (walk(self, &mut p) && p > 1).then_some(p)
    }

    /// Counts this expression's atoms (nested ones included) against `budget`; false when it
    /// runs out.
    pub(super) fn within(&self, budget: &mut usize) -> bool {
        self.terms.iter().all(|(a, _)| a.within(budget))
    }

    pub(super) fn has_div(&self) -> bool {
        self.terms.iter().any(|(a, _)| match a {
            Atom::Div(..) => true,
            Atom::Ext(_, args) => args.iter().any(Lin::has_div),
            Atom::Prod(v) => v.iter().any(|x| matches!(x, Atom::Div(..))),
            Atom::Sym(_) => false,
        })
    }

    /// Bounds of the expression: exact when it has a single symbol (the extremes of a piecewise
    /// linear function lie at its breakpoints and ends), interval arithmetic otherwise.
    pub(super) fn tight(&self) -> Iv {
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
        } else if let Some(p) = self.period() {
            // Linear plus periodic: f(x + p) - f(x) is one constant, so the extremes lie in
            // the first and the last period (or anywhere in one, when that constant is 0).
            if hi - lo < 4 * p {
                pts.extend(lo..=hi);
            } else {
                pts.extend(lo..lo + p);
                pts.extend(hi - p + 1..=hi);
            }
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
    pub(super) fn size(&self) -> usize {
        1 + match self {
            Atom::Sym(_) => 0,
            Atom::Div(e, _) => e.size(),
            Atom::Ext(_, args) => args.iter().map(Lin::size).sum(),
            Atom::Prod(v) => v.iter().map(Atom::size).sum(),
        }
    }
    pub(super) fn within(&self, budget: &mut usize) -> bool {
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

    pub(super) fn collect_symbols(&self, out: &mut Vec<Symbol>) {
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
pub(super) fn mk_ext(kind: MinMax, args: Vec<Lin>) -> Option<Lin> {
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

/// `e'` with `floor(e'/d) = floor(e/d)` for every value, without the constant arms of a
/// `min`/`max` (at the top, or in an argument of one) that the division cannot see: a constant
/// `c` of a `max` whose other arguments are at least `lo` with `floor(lo/d) = floor(c/d)` (the
/// `max` changes its value only below `c`, where the division gives `floor(c/d)` either way:
/// `floor(max(N, 1)/2)` is `floor(N/2)`), and a constant of a `min` likewise above it. The
/// division is monotone, so it commutes with `min` and `max`: an argument may be replaced by one
/// with the same quotient.
pub(super) fn floor_arms(e: &Lin, d: i128) -> Option<Lin> {
    let Some(Atom::Ext(kind, args)) = e.single_atom() else {
        return Some(e.clone());
    };
    let mut args: Vec<Lin> = args
        .iter()
        .map(|a| floor_arms(a, d))
        .collect::<Option<_>>()?;
    if let Some(i) = args.iter().position(|a| a.as_const().is_some()) {
        let c = args[i].c;
        let mut rest = args.clone();
        rest.remove(i);
        let others = mk_ext(*kind, rest)?.tight();
        let edge = match kind {
            MinMax::Max => others.lo,
            MinMax::Min => others.hi,
        };
        if edge.is_some_and(|x| x.div_euclid(d) == c.div_euclid(d)) {
            args.remove(i);
        }
    }
    mk_ext(*kind, args)
}

/// floor(e / d), d >= 1, simplified.
pub(super) fn mk_div(e: &Lin, d: i128) -> Option<Lin> {
    if d == 1 {
        return Some(e.clone());
    }
    if d < 1 {
        return None;
    }
    let e = &floor_arms(e, d)?;
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
    } else if let Some((x, d2)) = rem.div_plus_const() {
        // floor((floor(x / d2) + c) / d) = floor(floor((x + c*d2) / d2) / d)
        // = floor((x + c*d2) / (d2 * d)) for d, d2 >= 1: nested floor divisions fold into one
        // (ONNX Runtime's `floor(floor(floor(H/2 - 1/2)/2)/2)` is `floor((H + 7)/8) - 1`).
        // `x`'s coefficients and constant lie in [0, d2) and 0 <= c < d, so the new
        // numerator's lie in [0, d2 * d): it is in normal form.
        let x = x.add_raw(&Lin::constant(rem.c.checked_mul(d2)?))?;
        Lin::atom(Atom::Div(Box::new(x), d2.checked_mul(d)?))
    } else {
        Lin::atom(Atom::Div(Box::new(rem), d))
    };
    whole.add(&inner)
}
