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

mod assume;
mod display;
mod expr;
mod interval;
mod parse;
#[cfg(test)]
mod tests;

pub use assume::{assume, assume_in_thread, assumptions, AssumptionError, Assumptions};
pub use parse::MAX_PARSE_LEN;

use assume::*;
use display::*;
use expr::*;
use interval::*;
use parse::*;

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

    /// Parses a dim expression as [`Dim::to_onnx`] prints it, as ONNX Runtime's symbolic shape
    /// inference writes it and as torch's dynamo exporter writes it (sympy's `str` of a symbolic
    /// size: `s0 - 2`, `2*s1`, `((height//8))*((width//8)) + 1`, `Max(1, s0)`): integers,
    /// symbols, `+ - *`, `**` by a small integer, parentheses, `min`/`Min`/`max`/`Max`, and the
    /// integer-valued divisions by a constant: `floor(E)`/`ceiling(E)` of a rational `E` (sympy's
    /// `/` is rational: `floor(W/2 - 1/2)` is `floor((W - 1)/2)`), Python's `//` and `%`, torch's
    /// `Mod`/`PythonMod`/`FloorDiv`. A `/` whose result is not made an integer is refused.
    /// Identifiers become symbols through `symbol` (which gives their bounds). `None` when the
    /// text is not such an expression (the caller then takes it as one opaque name), or when its
    /// value cannot be represented exactly (an expansion too large).
    pub fn parse(text: &str, symbol: &dyn Fn(&str) -> Dim) -> Option<Dim> {
        // Exporters write dims of a few dozen characters; a file's text of thousands of terms
        // would take the algebra quadratic time (a sum of 20,000 names ran for minutes): such
        // a text stays one opaque name.
        if text.len() > MAX_PARSE_LEN {
            return None;
        }
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
            symbol,
        };
        let d = p.expr(0)?;
        p.ws();
        if p.i != p.s.len() {
            return None;
        }
        d.integer()
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

/// A symbol named by a model: bounds `[0, dim_limit()]`, or those the user states for it
/// ([`Assumptions::dim`], installed with [`assume`]).
pub fn model_symbol(name: &str) -> Dim {
    if assuming() {
        if let Some(&(lo, hi)) = installed().and_then(|a| a.dims.get(name).copied()).as_ref() {
            let hi = match (hi, dim_limit()) {
                (Some(h), Some(l)) => Some(h.min(l)),
                (h, l) => h.or(l),
            };
            return Dim::symbol_bounded(name, lo, hi);
        }
    }
    Dim::symbol_bounded(name, 0, dim_limit())
}

impl From<i64> for Dim {
    fn from(v: i64) -> Dim {
        Dim::known(v)
    }
}
