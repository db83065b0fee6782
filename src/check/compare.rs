//! Declared against inferred dims: the comparison behind each verdict, and the search for the
//! smallest sizes at which a declared dim (a constant or an expression) is wrong.
//!
//! The inferred dim is exact for every size of the model's symbols (within their bounds and the
//! installed assumptions), so one binding of the symbols where the two evaluate differently
//! proves the declaration wrong. Bindings are tried smallest first (by the sum of every symbol's
//! distance from its lower bound, then in the order of the symbols' names), exhaustively up to a
//! budget; then at the sizes around the constants of both expressions (`min(seq, 64)` differs
//! from `seq` only past 64) and on a spread of larger sizes.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::ir::DeclaredDim;
use crate::semantics::dim::{self, model_symbol};
use crate::semantics::Dim;
use crate::shape::slice_node;

/// How an inferred dim relates to the declared one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum DimCmp {
    /// The same (equal for every value of the symbols), or consistent where we know less.
    Same,
    /// Consistent, and we know more.
    Tighter,
    /// They cannot both be right; with the sizes that show it, when they are sizes of symbols.
    Mismatch(Option<Witness>),
}

impl DimCmp {
    pub(super) fn is_mismatch(&self) -> bool {
        matches!(self, DimCmp::Mismatch(_))
    }
}

/// Sizes of the symbols at which a declared dim is wrong.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Witness {
    /// Each symbol's size.
    pub sizes: BTreeMap<String, i64>,
    /// The declared dim at those sizes.
    pub declared: i64,
    /// The slice's dim at those sizes.
    pub inferred: i64,
}

impl Witness {
    /// `seq = 2 (declared 2, the slice gives 1)`.
    pub(super) fn describe(&self) -> String {
        let sizes = self
            .sizes
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "wrong at {sizes} (declared {}, the slice gives {})",
            self.declared, self.inferred
        )
    }
}

/// How many bindings the smallest-first search tries before it moves on to the sizes around
/// the expressions' constants.
const SMALL_BUDGET: usize = 20_000;
/// How many bindings the second stage tries at most.
const WIDE_BUDGET: usize = 20_000;

/// A fact the user assumed (`k_len >= q_len`), to test a binding against.
struct Fact {
    lhs: Dim,
    op: &'static str,
    rhs: Dim,
}

impl Fact {
    /// Reads one entry of [`dim::Assumptions::describe`] that is a comparison.
    fn parse(text: &str) -> Option<Fact> {
        let ops = [">=", "<=", "==", ">", "<"];
        let (at, op) = ops
            .iter()
            .filter_map(|op| text.find(op).map(|i| (i, *op)))
            .min_by_key(|(i, op)| (*i, std::cmp::Reverse(op.len())))?;
        let lhs = Dim::parse(text[..at].trim(), &model_symbol)?;
        let rhs = Dim::parse(text[at + op.len()..].trim(), &model_symbol)?;
        Some(Fact { lhs, op, rhs })
    }
    /// False when the fact is false at `b`; true when it holds or names a symbol `b` leaves
    /// free (a value that makes it hold can be chosen for that one).
    fn holds(&self, b: &HashMap<String, i64>) -> bool {
        let (Some(l), Some(r)) = (self.lhs.eval(b), self.rhs.eval(b)) else {
            return true;
        };
        match self.op {
            ">=" => l >= r,
            "<=" => l <= r,
            "==" => l == r,
            ">" => l > r,
            _ => l < r,
        }
    }
}

/// The installed facts between symbols (`--assume`, or those a model records).
fn installed_facts() -> Vec<Fact> {
    dim::assumptions()
        .describe()
        .iter()
        .filter(|t| ["<", ">", "=="].iter().any(|op| t.contains(op)))
        .filter_map(|t| Fact::parse(t))
        .collect()
}

/// The integers written in `text` (the constants of an expression, to try sizes around).
fn constants(text: &str, out: &mut Vec<i64>) {
    let mut cur = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_digit() {
            cur.push(c);
        } else {
            if let Ok(v) = cur.parse::<i64>() {
                out.push(v);
            }
            cur.clear();
        }
    }
}

/// The smallest sizes found at which `declared` and `inferred` differ (see the module doc),
/// among those where every condition of `admits` is `>= 0` ([`super::admit::conditions`]);
/// `None` when none is found.
pub(super) fn find_difference(declared: &Dim, inferred: &Dim, admits: &[Dim]) -> Option<Witness> {
    let bounds = symbol_bounds(declared, inferred);
    if bounds.values().any(|(lo, hi)| hi.is_some_and(|h| h < *lo)) {
        return None;
    }
    let names: Vec<String> = bounds.keys().cloned().collect();
    let lo: Vec<i64> = bounds.values().map(|b| b.0).collect();
    let hi: Vec<i64> = bounds.values().map(|b| b.1.unwrap_or(i64::MAX)).collect();
    let facts = installed_facts();
    let mut binding: HashMap<String, i64> = HashMap::new();
    let mut test = |vals: &[i64]| -> Option<Witness> {
        for (n, v) in names.iter().zip(vals) {
            binding.insert(n.clone(), *v);
        }
        if !facts.iter().all(|f| f.holds(&binding))
            || !admits
                .iter()
                .all(|c| c.eval(&binding).is_none_or(|v| v >= 0))
        {
            return None;
        }
        match (declared.eval(&binding), inferred.eval(&binding)) {
            (Some(d), Some(i)) if d != i => Some(Witness {
                sizes: names.iter().cloned().zip(vals.iter().copied()).collect(),
                declared: d,
                inferred: i,
            }),
            _ => None,
        }
    };
    if names.is_empty() {
        return test(&[]);
    }
    // Stage 1: every binding whose offsets from the lower bounds sum to 0, 1, 2, ... (each
    // sum's bindings in lexicographic order), until the budget is spent.
    let k = names.len();
    let mut tried = 0usize;
    let mut offsets = vec![0i64; k];
    for sum in 0i64.. {
        let mut any = false;
        if let Some(w) = compositions(sum, &mut offsets, 0, &lo, &hi, &mut |off| {
            any = true;
            tried += 1;
            let vals: Vec<i64> = off.iter().zip(&lo).map(|(o, l)| l + o).collect();
            test(&vals)
        }) {
            return Some(w);
        }
        if !any || tried >= SMALL_BUDGET {
            break;
        }
    }
    // Stage 2: sizes around the constants of both expressions, the bounds, and a spread of
    // larger sizes; the smallest binding that shows a difference.
    let mut cands = candidates(declared, inferred, &lo, &hi);
    for c in &mut cands {
        if c.is_empty() {
            return None;
        }
    }
    let mut best: Option<(i128, Witness)> = None;
    let mut consider = |vals: &[i64], best: &mut Option<(i128, Witness)>| {
        if let Some(w) = test(vals) {
            let cost: i128 = vals.iter().zip(&lo).map(|(v, l)| (v - l) as i128).sum();
            if best.as_ref().is_none_or(|(c, b)| (cost, &w) < (*c, b)) {
                *best = Some((cost, w));
            }
        }
    };
    let product: usize = cands
        .iter()
        .try_fold(1usize, |p, c| p.checked_mul(c.len()))
        .unwrap_or(usize::MAX);
    if product <= WIDE_BUDGET {
        let mut idx = vec![0usize; k];
        loop {
            let vals: Vec<i64> = idx.iter().zip(&cands).map(|(i, c)| c[*i]).collect();
            consider(&vals, &mut best);
            let mut d = 0;
            while d < k {
                idx[d] += 1;
                if idx[d] < cands[d].len() {
                    break;
                }
                idx[d] = 0;
                d += 1;
            }
            if d == k {
                break;
            }
        }
    } else {
        // One symbol at each of its candidates, the others at their lower bounds or at the
        // same size; and the spread of sizes the check has always tried.
        for i in 0..k {
            for &v in &cands[i] {
                let mut vals = lo.clone();
                vals[i] = v;
                consider(&vals, &mut best);
                let same: Vec<i64> = (0..k).map(|j| v.clamp(lo[j], hi[j])).collect();
                consider(&same, &mut best);
            }
        }
        for step in 0..24i64 {
            let vals: Vec<i64> = (0..k)
                .map(|i| {
                    let v = lo[i].saturating_add((step * (2 * i as i64 + 3) + i as i64) % 67);
                    v.min(hi[i])
                })
                .collect();
            consider(&vals, &mut best);
        }
    }
    best.map(|(_, w)| w)
}

/// The symbols of `declared` and `inferred`, by name, each within the bounds both give it
/// (`None`: no upper bound).
fn symbol_bounds(declared: &Dim, inferred: &Dim) -> BTreeMap<String, (i64, Option<i64>)> {
    let mut bounds: BTreeMap<String, (i64, Option<i64>)> = BTreeMap::new();
    for s in declared.symbols().iter().chain(&inferred.symbols()) {
        let (lo, hi) = s.bounds();
        let e = bounds.entry(s.name().to_string()).or_insert((lo, hi));
        e.0 = e.0.max(lo);
        e.1 = match (e.1, hi) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    bounds
}

/// The sizes stage 2 of [`find_difference`] tries for each symbol (within `lo[i]..=hi[i]`,
/// sorted): the bounds and next to them, around each constant of `declared` and `inferred`,
/// and the powers of two (and one past each) up to `2^30`.
fn candidates(declared: &Dim, inferred: &Dim, lo: &[i64], hi: &[i64]) -> Vec<Vec<i64>> {
    let mut cs = Vec::new();
    constants(&declared.to_string(), &mut cs);
    constants(&inferred.to_string(), &mut cs);
    (0..lo.len())
        .map(|i| {
            let mut v: Vec<i64> = vec![lo[i], lo[i].saturating_add(1), hi[i], hi[i] - 1];
            for c in &cs {
                v.extend([c.saturating_sub(1), *c, c.saturating_add(1)]);
            }
            for p in 1..31 {
                v.push(1i64 << p);
                v.push((1i64 << p) + 1);
            }
            v.retain(|x| (lo[i]..=hi[i]).contains(x));
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect()
}

/// Calls `f` on every `off` with `off[i..]` summing to `rest` (each `off[j] <= hi[j] - lo[j]`),
/// in lexicographic order; stops at the first `Some`.
fn compositions(
    rest: i64,
    off: &mut [i64],
    i: usize,
    lo: &[i64],
    hi: &[i64],
    f: &mut dyn FnMut(&[i64]) -> Option<Witness>,
) -> Option<Witness> {
    let room = |j: usize| hi[j].saturating_sub(lo[j]);
    if i + 1 == off.len() {
        if rest > room(i) {
            return None;
        }
        off[i] = rest;
        return f(off);
    }
    for v in 0..=rest.min(room(i)) {
        off[i] = v;
        if let Some(w) = compositions(rest - v, off, i + 1, lo, hi, f) {
            return Some(w);
        }
    }
    None
}

/// Compares a declared dim with the inferred one. `free` are the symbol names of the graph
/// inputs: a declared name that is not one of them (tf2onnx's `unk__N`) is an unnamed unknown;
/// a declared constant or expression over them (`2`, `min(N, 4)`, dynamo's `((height//8))`) is
/// judged at the sizes the model admits: wrong at one of them is a mismatch, with those sizes.
/// `admits`: conditions on the sizes where the model can run ([`super::admit::conditions`]).
pub(super) fn compare(
    declared: &DeclaredDim,
    inferred: &Dim,
    free: &HashSet<String>,
    admits: &[Dim],
) -> DimCmp {
    let (ilo, ihi) = inferred.bounds();
    let overlaps = |lo: u64, hi: Option<u64>| {
        ihi.is_none_or(|h| h >= lo as i64) && hi.is_none_or(|h| ilo.is_none_or(|l| l <= h as i64))
    };
    let knows_something = !inferred.is_unknown() || ilo.unwrap_or(0) > 0 || ihi.is_some();
    match declared {
        DeclaredDim::Unknown if knows_something => DimCmp::Tighter,
        DeclaredDim::Unknown => DimCmp::Same,
        DeclaredDim::Param(_) => {
            let d = slice_node::to_dim(declared);
            let syms = d.symbols();
            if syms.is_empty() || syms.iter().any(|s| !free.contains(s.name())) {
                // A fresh name: any size is possible.
                return if knows_something {
                    DimCmp::Tighter
                } else {
                    DimCmp::Same
                };
            }
            if inferred.is_unknown() {
                let (dlo, dhi) = d.bounds();
                let ok = overlaps(dlo.unwrap_or(0).max(0) as u64, dhi.map(|h| h.max(0) as u64));
                return if ok {
                    DimCmp::Same
                } else {
                    DimCmp::Mismatch(None)
                };
            }
            if d.provably_equal(inferred) {
                return DimCmp::Same;
            }
            match find_difference(&d, inferred, admits) {
                Some(w) => DimCmp::Mismatch(Some(w)),
                None => DimCmp::Same,
            }
        }
        DeclaredDim::Known(v) => match inferred.as_known() {
            Some(k) if k >= 0 && k as u64 == *v => DimCmp::Same,
            Some(_) => DimCmp::Mismatch(None),
            // An expression over the inputs' sizes: the constant must hold at every size the
            // model admits.
            None if !inferred.is_unknown()
                && inferred.symbols().iter().all(|s| free.contains(s.name())) =>
            {
                match i64::try_from(*v)
                    .ok()
                    .and_then(|v| find_difference(&Dim::known(v), inferred, admits))
                {
                    Some(w) => DimCmp::Mismatch(Some(w)),
                    None if overlaps(*v, Some(*v)) => DimCmp::Same,
                    None => DimCmp::Mismatch(None),
                }
            }
            None if overlaps(*v, Some(*v)) => DimCmp::Same,
            None => DimCmp::Mismatch(None),
        },
        DeclaredDim::Interval(lo, hi) => {
            if !overlaps(*lo, *hi) {
                return DimCmp::Mismatch(None);
            }
            let (ilo, ihi) = (ilo.unwrap_or(0).max(0) as u64, ihi.map(|h| h.max(0) as u64));
            let inside = ilo >= *lo && hi.is_none_or(|h| ihi.is_some_and(|ih| ih <= h));
            let same = ilo == *lo && ihi == *hi;
            if inside && !same {
                DimCmp::Tighter
            } else {
                DimCmp::Same
            }
        }
    }
}

/// Whether a declared dim can be the inferred one; if not, the sizes that show it (when there
/// are such sizes).
pub(super) fn incompatible(
    declared: &DeclaredDim,
    inferred: &Dim,
    free: &HashSet<String>,
    admits: &[Dim],
) -> Option<Option<Witness>> {
    match compare(declared, inferred, free, admits) {
        DimCmp::Mismatch(w) => Some(w),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(n: &str) -> Dim {
        Dim::symbol(n)
    }

    #[test]
    fn a_constant_that_holds_from_some_size_on_is_wrong_below() {
        // narrow(x, 1, 1, 2) on a dim `seq`: min(max(seq - 1, 0), 2) by the Slice clamping rule
        // (ONNX Slice spec: the start clamped to [0, seq], the end to [0, seq]).
        let seq = sym("seq");
        let narrow = seq
            .min(&Dim::known(3))
            .sub(&seq.min(&Dim::known(1)))
            .max(&Dim::known(0));
        let w = find_difference(&Dim::known(2), &narrow, &[]).expect("differs");
        assert_eq!(w.sizes.get("seq"), Some(&0));
        assert_eq!((w.declared, w.inferred), (2, 0));
        // With sizes from 2 on (`--dim seq=2..`), the smallest wrong size is 2.
        let seq2 = Dim::symbol_bounded("seq", 2, None);
        let narrow2 = seq2
            .min(&Dim::known(3))
            .sub(&seq2.min(&Dim::known(1)))
            .max(&Dim::known(0));
        let w = find_difference(&Dim::known(2), &narrow2, &[]).expect("differs");
        assert_eq!(w.sizes.get("seq"), Some(&2));
        assert_eq!((w.declared, w.inferred), (2, 1));
        // From 3 on it holds.
        let seq3 = Dim::symbol_bounded("seq", 3, None);
        let narrow3 = seq3
            .min(&Dim::known(3))
            .sub(&seq3.min(&Dim::known(1)))
            .max(&Dim::known(0));
        assert_eq!(find_difference(&Dim::known(2), &narrow3, &[]), None);
    }

    #[test]
    fn a_difference_past_a_constant_is_found() {
        let seq = sym("seq");
        let w = find_difference(&seq, &seq.min(&Dim::known(100_000)), &[]).expect("differs");
        assert_eq!(w.sizes.get("seq"), Some(&100_001));
    }

    #[test]
    fn two_symbols_smallest_sum_first() {
        // `seq` against `max(min(total, 64) - max(total - seq, 0), 0)`-like: wrong where seq >
        // total; the smallest such binding is seq = 1, total = 0.
        let (seq, total) = (sym("seq"), sym("total"));
        let inferred = total
            .sub(&total.sub(&seq).max(&Dim::known(0)))
            .max(&Dim::known(0));
        let w = find_difference(&seq, &inferred, &[]).expect("differs");
        assert_eq!(
            w.sizes,
            BTreeMap::from([("seq".to_string(), 1), ("total".to_string(), 0)])
        );
    }

    #[test]
    fn sizes_the_model_cannot_run_at_are_skipped() {
        // `min(h / 8 + 1, 3)` against 3: wrong for h < 16, but an 8-wide window needs h >= 8.
        let h = sym("h");
        let inferred = h.div_floor(8).add_const(1).min(&Dim::known(3));
        let w = find_difference(&Dim::known(3), &inferred, &[h.add_const(-8)]).expect("differs");
        assert_eq!(w.sizes.get("h"), Some(&8));
        assert_eq!((w.declared, w.inferred), (3, 2));
    }

    #[test]
    fn equal_expressions_have_no_difference() {
        let seq = sym("seq");
        let a = seq.div_floor(2).mul_const(2);
        let b = seq.sub(&seq.sub(&seq.div_floor(2).mul_const(2)));
        assert_eq!(find_difference(&a, &b, &[]), None);
    }
}
