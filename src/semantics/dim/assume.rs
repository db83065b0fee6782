//! Assumptions the user states about a model's symbols (`--dim`, `--assume`), their
//! installation (process-wide or per thread), and the bounds they narrow.

use super::*;

/// What the user states about a model's symbols (`--dim seq=1..4096`, `--assume "k_len >=
/// q_len"`): bounds of a symbol, and linear facts between symbols. Installed with [`assume`],
/// they narrow the bounds every expression over those symbols gets, so that dims stay exact
/// *under the stated assumptions* and get shorter (a `min`/`max` arm the facts decide is
/// dropped; a slice start `k_len - q_len` known not negative needs no wrap-around case).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assumptions {
    /// Bounds `[lo, hi]` of a symbol by name (`hi = None`: the dim limit).
    pub(super) dims: BTreeMap<String, (i64, Option<i64>)>,
    /// Facts `e >= 0`, each a sum of symbols (and other atoms) with integer coefficients plus a
    /// constant, kept with the text the user gave.
    pub(super) facts: Vec<(Lin, String)>,
}

/// Why an assumption could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssumptionError {
    #[error("`{0}`: expected `NAME=LO..HI` (`seq=1..4096`, `batch=1..`, `n=8`)")]
    Dim(String),
    #[error(
        "`{0}`: expected a comparison of two dim expressions (`k_len >= q_len`, `2*n <= m + 1`)"
    )]
    Fact(String),
}

impl Assumptions {
    /// No assumption.
    pub fn new() -> Assumptions {
        Assumptions::default()
    }
    /// True when nothing is assumed.
    pub fn is_empty(&self) -> bool {
        self.dims.is_empty() && self.facts.is_empty()
    }
    /// Bounds `[lo, hi]` for the symbol `name` (`hi = None`: up to the dim limit).
    pub fn dim(mut self, name: &str, lo: i64, hi: Option<i64>) -> Assumptions {
        self.dims.insert(name.to_string(), (lo.max(0), hi));
        self
    }
    /// Reads `NAME=LO..HI`, `NAME=LO..`, `NAME=..HI` or `NAME=V` (the `--dim` syntax).
    pub fn parse_dim(mut self, text: &str) -> Result<Assumptions, AssumptionError> {
        let err = || AssumptionError::Dim(text.to_string());
        let (name, range) = text.split_once('=').ok_or_else(err)?;
        let name = name.trim();
        if name.is_empty() {
            return Err(err());
        }
        let num = |s: &str| -> Result<Option<i64>, AssumptionError> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            s.parse::<i64>().map(Some).map_err(|_| err())
        };
        let (lo, hi) = match range.split_once("..") {
            Some((l, h)) => (num(l)?.unwrap_or(0), num(h)?),
            None => {
                let v = num(range)?.ok_or_else(err)?;
                (v, Some(v))
            }
        };
        if lo < 0 || hi.is_some_and(|h| h < lo) {
            return Err(err());
        }
        self.dims.insert(name.to_string(), (lo, hi));
        Ok(self)
    }
    /// Reads a fact `A >= B`, `A > B`, `A <= B`, `A < B` or `A == B` between two dim
    /// expressions (the `--assume` syntax; the expressions as [`Dim::parse`] reads them).
    pub fn parse_fact(mut self, text: &str) -> Result<Assumptions, AssumptionError> {
        let err = || AssumptionError::Fact(text.to_string());
        let ops: [(&str, i8); 5] = [(">=", 1), ("<=", -1), ("==", 0), (">", 2), ("<", -2)];
        let (at, op, kind) = ops
            .iter()
            .filter_map(|(op, k)| text.find(op).map(|i| (i, *op, *k)))
            .min_by_key(|(i, op, _)| (*i, std::cmp::Reverse(op.len())))
            .ok_or_else(err)?;
        let (a, b) = (&text[..at], &text[at + op.len()..]);
        let side = |s: &str| {
            Dim::parse(s.trim(), &model_symbol)
                .and_then(|d| d.lin().map(|l| l.into_owned()))
                .ok_or_else(err)
        };
        let (a, b) = (side(a)?, side(b)?);
        let diff = |x: &Lin, y: &Lin, strict: bool| -> Result<Lin, AssumptionError> {
            let d = x.add_raw(&y.scale(-1).ok_or_else(err)?).ok_or_else(err)?;
            let d = if strict {
                d.add_raw(&Lin::constant(-1)).ok_or_else(err)?
            } else {
                d
            };
            // A fact with no symbol is true or false by itself: nothing to assume.
            if d.terms.is_empty() {
                return Err(err());
            }
            Ok(d)
        };
        let mut add = |l: Lin| self.facts.push((l, text.trim().to_string()));
        match kind {
            1 => add(diff(&a, &b, false)?),
            2 => add(diff(&a, &b, true)?),
            -1 => add(diff(&b, &a, false)?),
            -2 => add(diff(&b, &a, true)?),
            _ => {
                add(diff(&a, &b, false)?);
                add(diff(&b, &a, false)?);
            }
        }
        Ok(self)
    }
    /// Reads one entry as [`Assumptions::describe`] writes it: a fact when it has a comparison
    /// (`k_len >= q_len`), else a symbol's bounds (`seq=1..4096`).
    pub fn parse_entry(self, text: &str) -> Result<Assumptions, AssumptionError> {
        if ["<", ">", "=="].iter().any(|op| text.contains(op)) {
            self.parse_fact(text)
        } else {
            self.parse_dim(text)
        }
    }
    /// The assumptions as text, one per entry (`seq=1..4096`, `k_len >= q_len`): what an output
    /// model records.
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .dims
            .iter()
            .map(|(n, (lo, hi))| match hi {
                Some(h) if h == lo => format!("{n}={lo}"),
                Some(h) => format!("{n}={lo}..{h}"),
                None => format!("{n}={lo}.."),
            })
            .collect();
        for (_, text) in &self.facts {
            if out.last() != Some(text) {
                out.push(text.clone());
            }
        }
        out
    }
}

/// How many installations are active: 1 for the process-wide one, plus 1 per thread with its
/// own. Zero (the common case): no lookup at all.
pub(super) static ASSUMING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

pub(super) static ASSUMED: std::sync::RwLock<Option<Arc<Assumptions>>> =
    std::sync::RwLock::new(None);

thread_local! {
    static ASSUMED_HERE: std::cell::RefCell<Option<Arc<Assumptions>>> =
        const { std::cell::RefCell::new(None) };
}

pub(super) fn assuming() -> bool {
    ASSUMING.load(std::sync::atomic::Ordering::Relaxed) > 0
}

/// The assumptions in force on this thread: its own ([`assume_in_thread`]), else the
/// process-wide ones ([`assume`]).
pub(super) fn installed() -> Option<Arc<Assumptions>> {
    if !assuming() {
        return None;
    }
    ASSUMED_HERE
        .with(|h| h.borrow().clone())
        .or_else(|| ASSUMED.read().ok().and_then(|a| a.clone()))
}

pub(super) fn count(before: bool, after: bool) {
    use std::sync::atomic::Ordering::Relaxed;
    match (before, after) {
        (false, true) => {
            ASSUMING.fetch_add(1, Relaxed);
        }
        (true, false) => {
            ASSUMING.fetch_sub(1, Relaxed);
        }
        _ => {}
    }
}

/// Installs `a` process-wide (like [`set_dim_limit`]; what the command line's `--dim` and
/// `--assume` do): every symbol a model names and every bound computed afterwards, on every
/// thread without assumptions of its own, takes them into account. Returns what was installed
/// before, to restore it. An empty set removes them.
pub fn assume(a: Assumptions) -> Assumptions {
    let new = (!a.is_empty()).then(|| Arc::new(a));
    let on = new.is_some();
    let old = match ASSUMED.write() {
        Ok(mut g) => std::mem::replace(&mut *g, new),
        Err(p) => std::mem::replace(&mut *p.into_inner(), new),
    };
    count(old.is_some(), on);
    old.map(|a| (*a).clone()).unwrap_or_default()
}

/// Installs `a` for the calling thread only (in place of the process-wide ones), as
/// [`crate::Pipeline::run`] and [`crate::check::check`] do for the assumptions of the model they
/// work on: models worked on at the same time on other threads are not affected. Returns this
/// thread's previous ones, to restore them.
pub fn assume_in_thread(a: Assumptions) -> Assumptions {
    let new = (!a.is_empty()).then(|| Arc::new(a));
    let on = new.is_some();
    let old = ASSUMED_HERE.with(|h| std::mem::replace(&mut *h.borrow_mut(), new));
    count(old.is_some(), on);
    old.map(|a| (*a).clone()).unwrap_or_default()
}

/// The assumptions in force on this thread (see [`assume`], [`assume_in_thread`]).
pub fn assumptions() -> Assumptions {
    installed().map(|a| (*a).clone()).unwrap_or_default()
}

/// Two atoms that are the same expression (symbols compared by name: a fact is read with the
/// bounds its symbols had then).
pub(super) fn same_atom(a: &Atom, b: &Atom) -> bool {
    match (a, b) {
        (Atom::Sym(x), Atom::Sym(y)) => x.name == y.name,
        _ => a == b,
    }
}

/// `iv` (bounds of `l`) narrowed by the installed facts: for a fact `f = t + c >= 0` and
/// `l = k*t + c'` (the same atoms, coefficients `k` times those of the fact), `l >= c' - k*c`
/// when `k > 0` and `l <= c' - k*c` when `k < 0`.
pub(super) fn assumed_bounds(l: &Lin, mut iv: Iv) -> Iv {
    let Some(a) = installed() else {
        return iv;
    };
    for (f, _) in &a.facts {
        if f.terms.len() != l.terms.len() || f.terms.is_empty() {
            continue;
        }
        let (fk, lk) = (f.terms[0].1, l.terms[0].1);
        if lk % fk != 0 {
            continue;
        }
        let k = lk / fk;
        let matches = f
            .terms
            .iter()
            .zip(&l.terms)
            .all(|((fa, fc), (la, lc))| same_atom(fa, la) && fc.checked_mul(k) == Some(*lc));
        if !matches {
            continue;
        }
        let Some(v) = k.checked_mul(f.c).and_then(|kc| l.c.checked_sub(kc)) else {
            continue;
        };
        if k > 0 {
            iv.lo = Some(iv.lo.map_or(v, |lo| lo.max(v)));
        } else {
            iv.hi = Some(iv.hi.map_or(v, |hi| hi.min(v)));
        }
    }
    iv
}
