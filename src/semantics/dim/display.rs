//! Printing dims: ours (`(N + 1) / 2`) and ONNX Runtime's sympy form (`floor((N + 1)/2)`).

use super::*;

/// Printing style: ours (`(N + 1) / 2` is floor division, as tract's `TDim` prints it) or ONNX
/// Runtime's (`floor((N + 1)/2)`, the sympy form its symbolic shape inference writes).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Ours,
    Onnx,
}

/// A `min`/`max` whose arguments share terms, written with them outside: `min(N - floor(N/2),
/// 1000000000 - floor(N/2))` as `min(N, 1000000000) - floor(N/2)`. Only when the algebra builds
/// that text back into the same expression (what a reader of the written dim gets), so that
/// equal dims still print equally.
fn factored(l: &Lin) -> Option<Lin> {
    let Some(Atom::Ext(kind, args)) = l.single_atom() else {
        return None;
    };
    let (head, rest) = args.split_first()?;
    let common: Vec<(Atom, i128)> = head
        .terms
        .iter()
        .filter(|t| rest.iter().all(|a| a.terms.contains(t)))
        .cloned()
        .collect();
    if common.is_empty() {
        return None;
    }
    let t = Lin {
        terms: common,
        c: 0,
    };
    let minus = t.scale(-1)?;
    let reduced: Vec<Lin> = args
        .iter()
        .map(|a| a.add_raw(&minus))
        .collect::<Option<_>>()?;
    let ext = mk_ext(*kind, reduced)?;
    if ext.add(&t)? != *l {
        return None;
    }
    ext.add_raw(&t)
}

/// Whether `l` prints as one atom, needing no parentheses as a numerator: a single atom that
/// [`factored`] does not turn into a sum (`min(N + a, 1 + a)` prints as `min(N, 1) + a`).
fn prints_as_atom(l: &Lin) -> bool {
    l.single_atom().is_some() && factored(l).is_none_or(|s| s.single_atom().is_some())
}

/// The most numerator shifts [`shifted_floors`] tries in one sum (2 per term and constant of
/// each floor division in it).
const SHIFT_COMBOS: usize = 256;

/// The sum `l` with its floor divisions' numerators shifted by multiples of the divisor, when
/// that prints shorter: `floor((a*x + c)/d) = floor(((a - d)*x + c)/d) + x` (and likewise
/// `c - d` for the constant), so `k_len + 31*q_len - 32*floor((k_len + 63*q_len)/64)`, the normal
/// form (numerator coefficients in `[0, d)`), is written `k_len - q_len - 32*floor((k_len -
/// q_len)/64)`. The same value for every value of the symbols (the identity above), and the
/// algebra reads the text back into the same normal form. `None` when no shift is shorter.
fn shifted_floors(l: &Lin, st: Style) -> Option<String> {
    // (term index, divisor, slots): a slot is a numerator term (Some(j)) or its constant (None).
    let mut slots: Vec<(usize, Option<usize>)> = Vec::new();
    for (i, (a, _)) in l.terms.iter().enumerate() {
        if let Atom::Div(e, d) = a {
            for (j, (_, c)) in e.terms.iter().enumerate() {
                if *c > 0 && c < d {
                    slots.push((i, Some(j)));
                }
            }
            if e.c > 0 && e.c < *d {
                slots.push((i, None));
            }
        }
    }
    if slots.is_empty() || slots.len() > SHIFT_COMBOS.trailing_zeros() as usize {
        return None;
    }
    let mut plain = String::new();
    fmt_lin_as_is(l, &mut plain, st).ok()?;
    let mut best: Option<String> = None;
    for mask in 1usize..(1 << slots.len()) {
        let mut numerators: Vec<Option<Lin>> = l
            .terms
            .iter()
            .map(|(a, _)| match a {
                Atom::Div(e, _) => Some((**e).clone()),
                _ => None,
            })
            .collect();
        let mut outer = Lin {
            terms: Vec::new(),
            c: l.c,
        };
        for (bit, &(i, j)) in slots.iter().enumerate() {
            if mask & (1 << bit) == 0 {
                continue;
            }
            let (Atom::Div(_, d), k) = &l.terms[i] else {
                continue;
            };
            let e = numerators[i].as_mut()?;
            match j {
                Some(j) => {
                    e.terms[j].1 -= d;
                    let x = e.terms[j].0.clone();
                    outer = outer.add_raw(&Lin {
                        terms: vec![(x, *k)],
                        c: 0,
                    })?;
                }
                None => {
                    e.c -= d;
                    outer.c = outer.c.checked_add(*k)?;
                }
            }
        }
        let mut alt = outer;
        for ((a, k), e) in l.terms.iter().zip(numerators) {
            let atom = match (a, e) {
                (Atom::Div(_, d), Some(e)) => Atom::Div(Box::new(e), *d),
                (a, _) => a.clone(),
            };
            alt = alt.add_raw(&Lin {
                terms: vec![(atom, *k)],
                c: 0,
            })?;
        }
        let mut text = String::new();
        fmt_lin_as_is(&alt, &mut text, st).ok()?;
        if text.len() < best.as_ref().map_or(plain.len(), String::len) {
            best = Some(text);
        }
    }
    best
}

pub(super) fn fmt_lin(l: &Lin, f: &mut dyn fmt::Write, st: Style) -> fmt::Result {
    if let Some(short) = shifted_floors(l, st) {
        return f.write_str(&short);
    }
    fmt_lin_as_is(l, f, st)
}

/// [`fmt_lin`] without trying [`shifted_floors`] at this level.
fn fmt_lin_as_is(l: &Lin, f: &mut dyn fmt::Write, st: Style) -> fmt::Result {
    if let Some(short) = factored(l) {
        if short.single_atom().is_none() {
            return fmt_lin(&short, f, st);
        }
    }
    let mut first = true;
    // Terms added first, then those subtracted (`total - seq`, not `-seq + total`); with none
    // added, a positive constant leads (`64 - N`).
    let lead_const = l.c > 0 && l.terms.iter().all(|(_, k)| *k < 0);
    if lead_const {
        write!(f, "{}", l.c)?;
        first = false;
    }
    let ordered = l
        .terms
        .iter()
        .filter(|(_, k)| *k > 0)
        .chain(l.terms.iter().filter(|(_, k)| *k < 0));
    for (a, k) in ordered {
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
    } else if lead_const {
        Ok(())
    } else if l.c > 0 {
        write!(f, " + {}", l.c)
    } else if l.c < 0 {
        write!(f, " - {}", l.c.unsigned_abs())
    } else {
        Ok(())
    }
}

pub(super) fn fmt_atom(a: &Atom, f: &mut dyn fmt::Write, st: Style) -> fmt::Result {
    match a {
        Atom::Sym(s) => write!(f, "{}", s.name),
        Atom::Div(e, d) => match st {
            Style::Onnx => {
                write!(f, "floor(")?;
                if prints_as_atom(e) {
                    fmt_lin(e, f, st)?;
                } else {
                    write!(f, "(")?;
                    fmt_lin(e, f, st)?;
                    write!(f, ")")?;
                }
                write!(f, "/{d})")
            }
            Style::Ours => {
                if prints_as_atom(e) {
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
