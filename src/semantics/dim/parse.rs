//! Reading dims from text: exact rationals (`Ratio`) and the recursive-descent `Parser` of
//! sympy's and Python's syntax behind [`Dim::parse`].

use super::*;

/// A rational value `n / d` (`d >= 1`) met while parsing: sympy's `/` is rational
/// (`floor(W/2 - 1/2)`), so a quotient is kept exact until a `floor`, `//` or `%` makes it an
/// integer again. A parsed dim must end as an integer (`d == 1` once reduced).
#[derive(Clone)]
pub(super) struct Ratio {
    pub(super) n: Dim,
    pub(super) d: i64,
}

/// The largest denominator a parsed expression may build (beyond it the text is refused).
pub(super) const MAX_DEN: i64 = 1 << 40;

pub(super) fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.unsigned_abs(), b.unsigned_abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a as i128
}

impl Lin {
    /// The gcd of every top-level coefficient and the constant (0 for the constant 0).
    pub(super) fn content(&self) -> i128 {
        self.terms.iter().fold(self.c, |g, (_, k)| gcd(g, *k))
    }
    /// `self / g` when `g` divides every top-level coefficient and the constant (exact).
    pub(super) fn div_exact(&self, g: i128) -> Option<Lin> {
        if g == 0 || self.c % g != 0 || self.terms.iter().any(|(_, k)| k % g != 0) {
            return None;
        }
        Some(Lin {
            terms: self.terms.iter().map(|(a, k)| (a.clone(), k / g)).collect(),
            c: self.c / g,
        })
    }
}

impl Ratio {
    pub(super) fn int(n: Dim) -> Ratio {
        Ratio { n, d: 1 }
    }
    /// Divides numerator and denominator by their common factor.
    pub(super) fn reduce(self) -> Option<Ratio> {
        if self.d == 1 {
            return Some(self);
        }
        let l = self.n.lin()?;
        let g = gcd(l.content(), self.d as i128);
        if g <= 1 {
            return Some(self);
        }
        Some(Ratio {
            n: Dim::from_lin(l.div_exact(g)?),
            d: i64::try_from(self.d as i128 / g).ok()?,
        })
    }
    pub(super) fn checked(n: Dim, d: i64) -> Option<Ratio> {
        if n.is_unknown() || !(1..=MAX_DEN).contains(&d) {
            return None;
        }
        Ratio { n, d }.reduce()
    }
    /// The value as an integer dim, when it is one for every value of the symbols.
    pub(super) fn integer(self) -> Option<Dim> {
        let r = self.reduce()?;
        (r.d == 1 && !r.n.is_unknown()).then_some(r.n)
    }
    pub(super) fn add(&self, o: &Ratio) -> Option<Ratio> {
        if self.d == o.d {
            return Ratio::checked(self.n.add(&o.n), self.d);
        }
        Ratio::checked(
            self.n.mul_const(o.d).add(&o.n.mul_const(self.d)),
            self.d.checked_mul(o.d)?,
        )
    }
    pub(super) fn neg(&self) -> Ratio {
        Ratio {
            n: self.n.neg(),
            d: self.d,
        }
    }
    pub(super) fn mul(&self, o: &Ratio) -> Option<Ratio> {
        Ratio::checked(self.n.mul(&o.n), self.d.checked_mul(o.d)?)
    }
    /// `self / o` for a constant `o != 0` (rational division; anything else is refused).
    pub(super) fn div(&self, o: &Ratio) -> Option<Ratio> {
        let k = o.n.as_known()?;
        if k == 0 {
            return None;
        }
        // (n/d) / (k/e) = (n*e) / (d*k), the sign moved to the numerator.
        let n = self.n.mul_const(o.d.checked_mul(k.signum())?);
        Ratio::checked(n, self.d.checked_mul(k.checked_abs()?)?)
    }
    /// `floor(self)`.
    pub(super) fn floor(&self) -> Option<Ratio> {
        let f = self.n.div_floor(self.d);
        (!f.is_unknown()).then(|| Ratio::int(f))
    }
    /// Python's `self // o` (floor of the rational quotient), `o` a non-zero constant.
    pub(super) fn floor_div(&self, o: &Ratio) -> Option<Ratio> {
        self.div(o)?.floor()
    }
    /// Python's `self % o` = `self - o * (self // o)`, `o` a non-zero constant.
    pub(super) fn modulo(&self, o: &Ratio) -> Option<Ratio> {
        self.add(&o.mul(&self.floor_div(o)?)?.neg())
    }
    pub(super) fn ext(&self, o: &Ratio, kind: MinMax) -> Option<Ratio> {
        // A positive common denominator keeps the order.
        let d = self.d.checked_mul(o.d)?;
        let (a, b) = (self.n.mul_const(o.d), o.n.mul_const(self.d));
        let n = match kind {
            MinMax::Min => a.min(&b),
            MinMax::Max => a.max(&b),
        };
        Ratio::checked(n, d)
    }
}

/// A recursive-descent parser of dim expressions in the syntax of sympy's `str` (what ONNX
/// Runtime's symbolic shape inference and torch's dynamo exporter write) and of Python.
pub(super) struct Parser<'a> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
    pub(super) symbol: &'a dyn Fn(&str) -> Dim,
}

/// The longest text [`Dim::parse`] reads as an expression.
pub const MAX_PARSE_LEN: usize = 2048;

/// The most arguments of a `min`/`max` that [`Dim::parse`] reads.
pub(super) const MAX_PARSE_ARGS: usize = 16;

/// How deeply a parsed expression may nest (parentheses, unary signs, calls).
pub(super) const MAX_PARSE_DEPTH: usize = 64;

impl Parser<'_> {
    pub(super) fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    pub(super) fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(super) fn eat2(&mut self, c: &[u8; 2]) -> bool {
        self.ws();
        if self.s.get(self.i..self.i + 2) == Some(&c[..]) {
            self.i += 2;
            true
        } else {
            false
        }
    }
    /// `term (('+' | '-') term)*`
    pub(super) fn expr(&mut self, depth: usize) -> Option<Ratio> {
        if depth > MAX_PARSE_DEPTH {
            return None;
        }
        let mut acc = self.term(depth)?;
        loop {
            if self.eat(b'+') {
                acc = acc.add(&self.term(depth)?)?;
            } else if self.eat(b'-') {
                acc = acc.add(&self.term(depth)?.neg())?;
            } else {
                return Some(acc);
            }
        }
    }
    /// `unary (('*' | '/' | '//' | '%') unary)*`, left to right as in Python.
    pub(super) fn term(&mut self, depth: usize) -> Option<Ratio> {
        let mut acc = self.unary(depth)?;
        loop {
            self.ws();
            if self.s.get(self.i..self.i + 2) == Some(b"**") {
                return None; // `**` is taken by `power`; here it is misplaced
            }
            if self.eat2(b"//") {
                acc = acc.floor_div(&self.unary(depth)?)?;
            } else if self.eat(b'*') {
                acc = acc.mul(&self.unary(depth)?)?;
            } else if self.eat(b'/') {
                acc = acc.div(&self.unary(depth)?)?;
            } else if self.eat(b'%') {
                acc = acc.modulo(&self.unary(depth)?)?;
            } else {
                return Some(acc);
            }
        }
    }
    /// `('-' | '+') unary | power`
    pub(super) fn unary(&mut self, depth: usize) -> Option<Ratio> {
        if depth > MAX_PARSE_DEPTH {
            return None;
        }
        if self.eat(b'-') {
            return Some(self.unary(depth + 1)?.neg());
        }
        if self.eat(b'+') {
            return self.unary(depth + 1);
        }
        self.power(depth)
    }
    /// `atom ('**' unary)?` with a small non-negative integer exponent.
    pub(super) fn power(&mut self, depth: usize) -> Option<Ratio> {
        let base = self.atom(depth)?;
        if !self.eat2(b"**") {
            return Some(base);
        }
        let e = self.unary(depth + 1)?.integer()?.as_known()?;
        if !(0..=8).contains(&e) {
            return None;
        }
        let mut acc = Ratio::int(Dim::known(1));
        for _ in 0..e {
            acc = acc.mul(&base)?;
        }
        Some(acc)
    }
    /// The comma-separated arguments of a call, after its `(`.
    pub(super) fn args(&mut self, depth: usize) -> Option<Vec<Ratio>> {
        let mut args = vec![self.expr(depth + 1)?];
        while self.eat(b',') {
            args.push(self.expr(depth + 1)?);
        }
        self.eat(b')').then_some(args)
    }
    pub(super) fn atom(&mut self, depth: usize) -> Option<Ratio> {
        self.ws();
        let c = *self.s.get(self.i)?;
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
            return Some(Ratio::int(Dim::known(v)));
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
            if self.eat(b'(') {
                let args = self.args(depth)?;
                return match (name, args.as_slice()) {
                    // sympy's floor and ceiling; torch's FloorToInt / CeilToInt.
                    ("floor" | "FloorToInt", [x]) => x.floor(),
                    ("ceiling" | "ceil" | "CeilToInt", [x]) => Some(x.neg().floor()?.neg()),
                    // torch's FloorDiv(a, b) prints `(a//b)`; read its call form too.
                    ("FloorDiv", [x, y]) => x.floor_div(y),
                    // torch's Mod and PythonMod: Python's `%` (sign of the divisor).
                    ("Mod" | "PythonMod", [x, y]) => x.modulo(y),
                    // At most MAX_PARSE_ARGS arguments: dropping the dominated ones compares
                    // every pair, at every step (150 arguments took seconds).
                    ("min" | "Min" | "max" | "Max", [first, rest @ ..])
                        if rest.len() < MAX_PARSE_ARGS =>
                    {
                        let kind = if name.eq_ignore_ascii_case("min") {
                            MinMax::Min
                        } else {
                            MinMax::Max
                        };
                        rest.iter().try_fold(first.clone(), |a, b| a.ext(b, kind))
                    }
                    _ => None,
                };
            }
            self.i = save;
            let d = (self.symbol)(name);
            return (!d.is_unknown()).then(|| Ratio::int(d));
        }
        None
    }
}
