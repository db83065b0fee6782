//! Resolution of a [`SlicePlan`] against input dims: output dims ([`resolve_dims`] on [`Dim`],
//! [`output_shape`] on `u64`) and per-axis `start/step/len` ([`resolve_concrete`]).
//!
//! Clamping, for an axis of size `d`, a begin `b` and an end `e` (negative values first get `d`
//! added; `Edge` is the first element / one past the last in the step's direction):
//! - positive step: begin and end clamp to `[0, d]`;
//! - negative step: end clamps to `[-1, d - 1]`; begin clamps to `[0, d - 1]` ([`Clamp::Ov`],
//!   OpenVINO and ONNX) or to `[-1, d - 1]` ([`Clamp::Tf`], TensorFlow: a begin below `-d` selects
//!   nothing, where OpenVINO selects element 0).
//!
//! All arithmetic is on `i128`: `INT64_MIN`/`INT64_MAX` bounds cannot overflow.

use super::dim::Dim;
use super::plan::{AxisPlan, Bound, Provenance, SlicePlan};
use super::SliceError;

mod concrete;
pub(in crate::semantics) use concrete::range_concrete;
use concrete::{check_index, check_rank, shrink_kept};
pub use concrete::{output_shape, resolve_concrete};

/// The clamping rule for reverse ranges (the one place the flavours differ after decoding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Clamp {
    /// TensorFlow StridedSlice.
    Tf,
    /// OpenVINO StridedSlice-1 and Slice-8, and ONNX Slice.
    Ov,
}

/// One plan entry resolved against concrete dims.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResolvedAxis {
    /// Elements `start, start + step, ...` (`len` of them) of input axis `axis`. `start` is a
    /// valid index when `len > 0` (and 0 otherwise).
    Range {
        /// Input axis.
        axis: usize,
        /// First index taken.
        start: i64,
        /// Step (non-zero).
        step: i64,
        /// Number of elements (the output dim).
        len: u64,
    },
    /// A new axis of size 1.
    NewAxis,
    /// Input axis `axis` reduced to element `index` (in `[0, dim)`), no output axis.
    Shrink {
        /// Input axis.
        axis: usize,
        /// Index kept.
        index: u64,
    },
}

impl ResolvedAxis {
    /// The output dim of this entry (`None` for a shrink).
    pub fn output_dim(&self) -> Option<u64> {
        match self {
            ResolvedAxis::Range { len, .. } => Some(*len),
            ResolvedAxis::NewAxis => Some(1),
            ResolvedAxis::Shrink { .. } => None,
        }
    }
}

/// A begin or end of a range whose value may be a dim expression (a symbolic slice parameter
/// such as `k_len - q_len` computed from `Shape`): the symbolic counterpart of [`Bound`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SymBound {
    /// An index: a known value or an expression (negative values count from the end).
    Index(Dim),
    /// From the edge (mask, omitted input).
    Edge,
    /// Nothing known.
    Dynamic,
}

impl From<Bound> for SymBound {
    fn from(b: Bound) -> SymBound {
        match b {
            Bound::Index(v) => SymBound::Index(Dim::known(v)),
            Bound::Edge => SymBound::Edge,
            Bound::Dynamic => SymBound::Dynamic,
        }
    }
}

/// `max(min(v, hi), lo)`; a side given as `None` is not clamped.
fn clamp_dim(v: &Dim, lo: Option<&Dim>, hi: Option<&Dim>) -> Dim {
    let v = match hi {
        Some(h) => v.min(h),
        None => v.clone(),
    };
    match lo {
        Some(l) => v.max(l),
        None => v,
    }
}

/// `v` (negative: counted from the end, `v + d`) clamped to `[lo, hi]`, exact for every value of
/// the symbols. `lo` is 0 or -1 and `d - 1 <= hi <= d` (the clamps of [`range_dim_sym`]); a side
/// given as `None` is not clamped (the caller's length does not depend on it: a start past the
/// end selects nothing whether or not it is clamped to `d`).
///
/// When the sign of `v` is not known, the two readings `A = min(v, hi)` (for `v >= 0`, where the
/// clamp at `lo` cannot act) and `B = max(v + d, lo)` (for `v <= -1`, where `v + d <= d - 1 <=
/// hi`) are combined by a selector, written as short as the bounds allow:
/// - `v <= 0` (the start of `x[-n:]`): `v` is 0 or negative, and `A` is the constant
///   `A0 = clamp(0)`. With `A0 <= B` (every positive step): `min(B, A0 - M*v)`, with `M` at
///   least `B - A0` (`x[-n:]` on `d` starts at `min(max(d - n, 0), M*n)`); with `A0 >= B`:
///   `max(B, A0 + M*v)`.
/// - `v >= -1`: likewise with the point `v = -1`, where `B1 = max(d - 1, lo)`: `max(A, B1 -
///   M*(v + 1))` when `B1 >= A`.
/// - otherwise `max(A, min(B, G))` with `G = c - M*v` (`c` = 0 when `A >= 0` for `v >= 0`, else
///   -1): for `v <= -1`, `A <= v <= v + d` and `A <= -1 <= lo`, so `A <= B`, and `G >= M + c >= B`;
///   for `v >= 0`, `G <= c <= A`. `M = max(d - 1, lo) - c` (the largest `B`) keeps the
///   coefficient as small as the bounds allow (63 on GPT-2's 64-row mask). With a `lo`, the
///   clamp moves out: `max(A, min(v + d, G), lo)`.
///
/// [`range_dim_sym`] also writes the index as [`indicator_clamp`] does and keeps the shorter.
fn norm_clamp(v: &Dim, d: &Dim, lo: Option<&Dim>, hi: Option<&Dim>) -> Dim {
    let (vl, vh) = v.bounds();
    if vl.is_some_and(|l| l >= 0) {
        return clamp_dim(v, lo, hi);
    }
    if vh.is_some_and(|h| h < 0) {
        return clamp_dim(&v.add(d), lo, hi);
    }
    // Both readings agree whatever the sign (`v = -d`: 0 either way): no selector.
    let a = clamp_dim(v, lo, hi);
    let b = clamp_dim(&v.add(d), lo, hi);
    if a.provably_equal(&b) {
        return a;
    }
    let lo_k = match lo.map(Dim::as_known) {
        None => None,
        Some(Some(l @ (0 | -1))) => Some(l),
        Some(_) => return general_selector(v, d, lo, hi),
    };
    let hi_ok = hi.is_none_or(|hi| {
        hi.sub(&d.add_const(-1)).bounds().0.is_some_and(|x| x >= 0)
            && d.sub(hi).bounds().0.is_some_and(|x| x >= 0)
    });
    let (true, Some(d_hi)) = (hi_ok, d.bounds().1) else {
        return general_selector(v, d, lo, hi);
    };
    // The readings on each side, simplified by what that side knows.
    let a = clamp_dim(v, None, hi);
    let b = clamp_dim(&v.add(d), lo, None);
    // Both readings agree whatever the sign (`v = -d`: 0 either way): no selector.
    if a.provably_equal(&b) {
        return a;
    }
    // The largest value `B` takes (at v = -1), and the smallest any reading takes.
    let b_top = match lo_k {
        Some(l) => (d_hi - 1).max(l),
        None => d_hi - 1,
    };
    let floor = lo_k.unwrap_or(-1).min(0);
    let ge = |x: &Dim, y: &Dim| x.sub(y).bounds().0.is_some_and(|m| m >= 0);
    let spread = |x: &Dim, y: &Dim| {
        // an upper bound of |x - y| over the readings, as small as the bounds show
        let far = b_top.saturating_sub(floor).max(0);
        match x.sub(y).bounds() {
            (Some(l), Some(h)) => h.max(-l).clamp(0, far),
            _ => far,
        }
    };
    if vh == Some(0) && (lo.is_some() || hi.is_some()) {
        // v is 0 or negative, and v = 0 is the one point of A.
        let a0 = clamp_dim(&Dim::known(0), lo, hi);
        if ge(&b, &a0) {
            return b.min(&a0.sub(&v.mul_const(spread(&b, &a0))));
        }
        if ge(&a0, &b) {
            return b.max(&a0.add(&v.mul_const(spread(&b, &a0))));
        }
    }
    if vl == Some(-1) {
        // v is -1 or not negative, and v = -1 is the one point of B.
        let b1 = clamp_dim(&d.add_const(-1), lo, None);
        if ge(&b1, &a) {
            let m = spread(&b1, &a);
            return a.max(&b1.sub(&v.add_const(1).mul_const(m)));
        }
    }
    // A is at least `c` for v >= 0: 0 when `hi` is (or there is none), else -1.
    let c: i64 = match hi {
        Some(h) if h.bounds().0.is_none_or(|x| x < 0) => -1,
        _ => 0,
    };
    let m = (b_top - c).max(0);
    let g = v.mul_const(-m).add_const(c);
    match lo {
        // For v >= 0, A >= lo; for v <= -1, A <= -1 <= lo.
        Some(l) if hi.is_none_or(|h| h.bounds().0.is_some_and(|x| x >= lo_k.unwrap_or(0))) => {
            a.max(&v.add(d).min(&g)).max(l)
        }
        _ => a.max(&b.min(&g)),
    }
}

/// Three exact spellings of an index of unknown sign: the selector of [`norm_clamp`] (each
/// reading, one of them gated by a steep arm), the specification's own `v + d*[v < 0]` with the
/// indicator `[v < 0] = min(max(-v, 0), 1)` ([`indicator_clamp`]), or, on a dim of known size,
/// `v - d*floor(v/(2*d))` ([`floor_clamp`]). Which is shortest depends on the slice (T5's
/// `x[-seq:]`: the selector; GPT-2's `bias[k - q : k]` on 32 or 64 rows: the floor).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spelling {
    Selector,
    Indicator,
    Floor,
}

/// `v` (negative: counted from the end) clamped to `[lo, hi]` (`None`: that side not clamped),
/// written as the specification says it: `clamp(v + d*[v < 0])`, with `[v < 0] = min(max(-v,
/// 0), 1)` (1 for every integer `v <= -1`, 0 for `v >= 0`). Exact for every value.
fn indicator_clamp(v: &Dim, d: &Dim, lo: Option<&Dim>, hi: Option<&Dim>) -> Dim {
    let (vl, vh) = v.bounds();
    if vl.is_some_and(|l| l >= 0) || vh.is_some_and(|h| h < 0) {
        return norm_clamp(v, d, lo, hi);
    }
    let ind = v.neg().max(&Dim::known(0)).min(&Dim::known(1));
    clamp_dim(&v.add(&d.mul(&ind)), lo, hi)
}

/// `v` (negative: counted from the end) clamped to `[lo, hi]` on a dim of known size `D >= 1`,
/// written `clamp(w)` with `w = v - D*floor(v/(2*D))`, one floor division in place of the
/// indicator's two clamps. Exact for every integer `v` with `lo` in {0, -1} (or none) and `hi` in
/// {`D - 1`, `D`} (or none), the clamps of [`range_dim_sym`]:
/// - `0 <= v < 2D`: the floor is 0 and `w = v`, the reading for `v >= 0`;
/// - `-2D <= v <= -1`: the floor is -1 and `w = v + D`, the reading for `v < 0`;
/// - `v >= 2D`, floor `n >= 1` with `v >= 2nD`: `w >= 2nD - nD >= D >= hi`, so `clamp(w) = hi =
///   min(v, hi)`; without `hi` both starts are past the end (the length is 0 either way);
/// - `v < -2D`, floor `-n <= -2` with `v <= 2D(1 - n) - 1`: `w <= D(2 - n) - 1 <= -1 <= lo`, so
///   `clamp(w) = lo = max(v + D, lo)` (`v + D < -D`); without `lo` both are before the start.
///
/// Other clamps, an unknown size, or a size over `i64::MAX / 2`: [`indicator_clamp`].
fn floor_clamp(v: &Dim, d: &Dim, lo: Option<&Dim>, hi: Option<&Dim>) -> Dim {
    let (vl, vh) = v.bounds();
    if vl.is_some_and(|l| l >= 0) || vh.is_some_and(|h| h < 0) {
        return norm_clamp(v, d, lo, hi);
    }
    let Some(size) = d.as_known().filter(|n| (1..=i64::MAX / 2).contains(n)) else {
        return indicator_clamp(v, d, lo, hi);
    };
    let lo_ok = lo.is_none_or(|l| matches!(l.as_known(), Some(0 | -1)));
    let hi_ok = hi.is_none_or(|h| matches!(h.as_known(), Some(x) if x == size || x == size - 1));
    if !(lo_ok && hi_ok) {
        return indicator_clamp(v, d, lo, hi);
    }
    let w = v.sub(&v.div_floor(2 * size).mul_const(size));
    clamp_dim(&w, lo, hi)
}

/// The selector of [`norm_clamp`] for clamps other than its own: `max(min(a, S1), min(b, S0))`
/// with `S1 = max(m*v + m, 0) - 1` (huge when `v >= 0`, `-1` otherwise) and `S0 = max(-m*v, 0) -
/// 1`, exact for values in `[-1, m - 1]` (a missing clamp is taken as `-1` / `d`, which it does
/// not change).
fn general_selector(v: &Dim, d: &Dim, lo: Option<&Dim>, hi: Option<&Dim>) -> Dim {
    let (neg1, lo) = (Dim::known(-1), lo.cloned());
    let lo = lo.unwrap_or(neg1);
    let hi = hi.unwrap_or(d);
    let a = clamp_dim(v, Some(&lo), Some(hi));
    let b = clamp_dim(&v.add(d), Some(&lo), Some(hi));
    // Both lie in [lo, hi] ⊂ [-1, d]: m = d.hi + 2 > every value, and m*|v| >= m for v != 0.
    let m = match d.bounds().1.and_then(|h| h.checked_add(2)) {
        Some(m) => m,
        None => return Dim::unknown_bounded(-1, d.bounds().1),
    };
    let s1 = v
        .mul_const(m)
        .add_const(m)
        .max(&Dim::known(0))
        .add_const(-1);
    let s0 = v.neg().mul_const(m).max(&Dim::known(0)).add_const(-1);
    a.min(&s1).max(&b.min(&s0))
}

/// A begin that is the first element for a positive step: the edge, or index 0.
fn is_start(b: &SymBound) -> bool {
    match b {
        SymBound::Edge => true,
        SymBound::Index(v) => v.as_known() == Some(0),
        SymBound::Dynamic => false,
    }
}

/// An end that is past the last element of any dim for a positive step: the edge, or
/// `i64::MAX`.
fn is_stop(e: &SymBound) -> bool {
    match e {
        SymBound::Edge => true,
        SymBound::Index(v) => v.as_known() == Some(i64::MAX),
        SymBound::Dynamic => false,
    }
}

/// An unknown output dim within `[lo, hi]`: at least 0, and an upper bound of `i64::MAX` says
/// nothing (every dim is at most that).
fn output_bounds(lo: Option<i64>, hi: Option<i64>) -> Dim {
    Dim::unknown_bounded(lo.unwrap_or(0).max(0), hi.filter(|&h| h < i64::MAX))
}

/// Output dim of a range with everything known (dim, begin, end, non-zero step): the
/// concrete rule. `None` when something is not known or the length does not fit.
fn range_known(
    d: &Dim,
    begin: &SymBound,
    end: &SymBound,
    step: Option<i64>,
    clamp: Clamp,
) -> Option<Dim> {
    if let (Some(n), Some(s)) = (d.as_known(), step.filter(|&s| s != 0)) {
        let concrete = |b: &SymBound| match b {
            SymBound::Index(v) => v.as_known().map(Bound::Index),
            SymBound::Edge => Some(Bound::Edge),
            SymBound::Dynamic => None,
        };
        if let (Some(b), Some(e), true) = (concrete(begin), concrete(end), n >= 0) {
            if let Some(len) = range_concrete(n as i128, b, e, s, clamp)
                .ok()
                .and_then(|(_, len)| i64::try_from(len).ok())
            {
                return Some(Dim::known(len));
            }
        }
    }
    None
}

/// `r`, a range of `d`, as an unknown with its bounds (at most `d`'s upper bound) when it was
/// lost in the algebra.
fn with_bounds(r: Dim, d: &Dim) -> Dim {
    if r.is_unknown() {
        // Lost in the algebra (overflow, size): the bounds are still right.
        let (lo, hi) = r.bounds();
        // A range never selects more than the dim has.
        let hi = match (hi, d.bounds().1) {
            (Some(h), Some(dh)) => Some(h.min(dh)),
            (h, dh) => h.or(dh),
        };
        return output_bounds(lo, hi);
    }
    r
}

/// Output dim of a range on `d` (a value, an expression or an unknown with bounds) with begin and
/// end that may be expressions: the tightest the inputs allow, exact for every value of the
/// symbols. An unknown `d` is treated as a fresh symbol with its bounds, and the result is the
/// exact range of the expression over those bounds (for constant begin/end/step: every slice is
/// a piecewise linear function of `d`, whose extremes lie at its breakpoints).
pub fn range_dim_sym(
    d: &Dim,
    begin: &SymBound,
    end: &SymBound,
    step: Option<i64>,
    clamp: Clamp,
) -> Dim {
    if d.is_unknown() {
        let (lo, hi) = d.bounds();
        let fresh = Dim::symbol_bounded("\u{0}d", lo.unwrap_or(0), hi);
        let r = range_dim_sym(&fresh, begin, end, step, clamp);
        let (rlo, rhi) = r.bounds();
        return output_bounds(rlo, rhi);
    }
    if let Some(r) = range_of_unknown_params(d, begin, end, step, clamp) {
        return r;
    }
    // The whole axis with step 1 (every axis a Slice does not name, `x[:]`, `x[0:INT64_MAX]`):
    // `d` itself, with no expression algebra (which would rebuild `max(d - 0, 0)` and simplify
    // it back). Every dim is at most i64::MAX, so an end of i64::MAX is the edge.
    if step == Some(1) && is_start(begin) && is_stop(end) {
        return d.clone();
    }
    // Everything known: the concrete rule (no expression algebra; most slices of real models).
    if let Some(r) = range_known(d, begin, end, step, clamp) {
        return r;
    }
    let unknown = || Dim::unknown_bounded(0, d.bounds().1);
    let (Some(s), false) = (
        step,
        *begin == SymBound::Dynamic || *end == SymBound::Dynamic,
    ) else {
        return unknown();
    };
    // Any index at or beyond ±i64::MAX behaves like ±infinity for dims <= i64::MAX; saturate
    // so that `d + v` cannot overflow.
    // Also, for a dim bounded by `h`, any index beyond `±(h + 1)` acts as `±(h + 1)`: clamping
    // there keeps the constants of the expression small (so that it can be written).
    let lim = d
        .bounds()
        .1
        .and_then(|h| h.checked_add(1))
        .unwrap_or(i64::MAX);
    let sat = |v: &Dim| match v.as_known() {
        Some(k) => Dim::known(k.clamp(-lim, lim)),
        None => v.clone(),
    };
    // ceil(x / m) for 0 <= x <= d: `min(x, 1)` when m >= d's upper bound (no huge constants).
    let d_hi = d.bounds().1.unwrap_or(i64::MAX);
    let ceil_div = |x: Dim, m: i64| {
        if m >= d_hi {
            x.min(&Dim::known(1))
        } else {
            x.add_const(m - 1).div_floor(m)
        }
    };
    let zero = Dim::known(0);
    let neg1 = Dim::known(-1);
    let last = d.add_const(-1);
    // An index of unknown sign can be written two ways (see [`Spelling`]): both are built, and
    // the shorter result is kept.
    let mixed = std::cell::Cell::new(false);
    let index = |v: &Dim, lo: Option<&Dim>, hi: Option<&Dim>, how: Spelling| {
        let v = sat(v);
        let (vl, vh) = v.bounds();
        if !(vl.is_some_and(|l| l >= 0) || vh.is_some_and(|h| h < 0)) {
            mixed.set(true);
        }
        match how {
            Spelling::Selector => norm_clamp(&v, d, lo, hi),
            Spelling::Indicator => indicator_clamp(&v, d, lo, hi),
            Spelling::Floor => floor_clamp(&v, d, lo, hi),
        }
    };
    let build = |how: Spelling| {
        if s > 0 {
            // The start needs no clamp at `d`, nor the stop at 0: the length is 0 either way.
            let start = match begin {
                SymBound::Index(v) => index(v, Some(&zero), None, how),
                _ => zero.clone(),
            };
            let stop = match end {
                SymBound::Index(v) => index(v, None, Some(d), how),
                _ => d.clone(),
            };
            ceil_div(stop.sub(&start).max(&zero), s)
        } else {
            // |i64::MIN| > any dim: the same result.
            let m = s.checked_neg().unwrap_or(i64::MAX);
            // Neither TensorFlow's start needs a clamp at -1 nor the stop one at `d - 1` (the
            // other is clamped there: the length is 0 either way); OpenVINO's start clamps at 0.
            let start = match begin {
                SymBound::Index(v) => match clamp {
                    Clamp::Tf => index(v, None, Some(&last), how),
                    // A start known not negative needs no clamp at 0 (which the last `min`
                    // undoes on an empty axis): `min(v, d - 1)`.
                    Clamp::Ov if v.bounds().0.is_some_and(|l| l >= 0) => sat(v).min(&last),
                    Clamp::Ov => index(v, Some(&zero), Some(&last), how).min(&last),
                },
                _ => last.clone(),
            };
            let stop = match end {
                SymBound::Index(v) => index(v, Some(&neg1), None, how),
                _ => neg1.clone(),
            };
            ceil_div(start.sub(&stop).max(&zero), m)
        }
    };
    let mut r = build(Spelling::Selector);
    if mixed.get() {
        // The shortest as written in a model (ONNX Runtime's sympy form); the first on a tie.
        let len = |x: &Dim| x.to_onnx().map_or(usize::MAX, |t| t.len());
        for how in [Spelling::Indicator, Spelling::Floor] {
            let other = build(how);
            if len(&other) < len(&r) {
                r = other;
            }
        }
    }
    with_bounds(r, d)
}

/// `[lo, hi]` of a begin or end that is an unknown value (with bounds: a value computed from an
/// interval dim, OpenVINO's `evaluate_lower/upper`), split at its sign (negative values count
/// from the end, so the length jumps there): one or two intervals. `None` for anything else.
fn unknown_parts(b: &SymBound) -> Option<Vec<(i64, i64)>> {
    let SymBound::Index(v) = b else {
        return None;
    };
    if !v.is_unknown() {
        return None;
    }
    let (lo, hi) = v.bounds();
    let (lo, hi) = (lo.unwrap_or(i64::MIN), hi.unwrap_or(i64::MAX));
    let mut parts = Vec::with_capacity(2);
    if lo < 0 {
        parts.push((lo, hi.min(-1)));
    }
    if hi >= 0 {
        parts.push((lo.max(0), hi));
    }
    Some(parts)
}

/// The output dim of a range whose begin and/or end is an unknown value with bounds: the exact
/// interval over every begin, end (and `d`) in their bounds. Within one sign of the begin and
/// one of the end, the clamped start is non-decreasing in the begin and the clamped stop in the
/// end (whatever `d`), so for a positive step the length is largest at (lowest begin, highest
/// end) and smallest at (highest begin, lowest end), and the other way round for a negative
/// step: each extreme is a range with constant parameters, whose range over `d` is exact.
fn range_of_unknown_params(
    d: &Dim,
    begin: &SymBound,
    end: &SymBound,
    step: Option<i64>,
    clamp: Clamp,
) -> Option<Dim> {
    let (bp, ep) = (unknown_parts(begin), unknown_parts(end));
    if bp.is_none() && ep.is_none() {
        return None;
    }
    let s = step.filter(|&s| s != 0)?;
    // (low, high) ends of each part; a parameter that is not an unknown is its own ends.
    let ends = |parts: Option<Vec<(i64, i64)>>, b: &SymBound| -> Vec<(SymBound, SymBound)> {
        match parts {
            Some(p) => p
                .into_iter()
                .map(|(lo, hi)| {
                    (
                        SymBound::Index(Dim::known(lo)),
                        SymBound::Index(Dim::known(hi)),
                    )
                })
                .collect(),
            None => vec![(b.clone(), b.clone())],
        }
    };
    let (bs, es) = (ends(bp, begin), ends(ep, end));
    let (mut lo, mut hi): (Option<i64>, Option<i64>) = (None, Some(0));
    for (b_lo, b_hi) in &bs {
        for (e_lo, e_hi) in &es {
            let (small, large) = if s > 0 {
                (
                    range_dim_sym(d, b_hi, e_lo, step, clamp),
                    range_dim_sym(d, b_lo, e_hi, step, clamp),
                )
            } else {
                (
                    range_dim_sym(d, b_lo, e_hi, step, clamp),
                    range_dim_sym(d, b_hi, e_lo, step, clamp),
                )
            };
            let l = small.bounds().0.unwrap_or(0).max(0);
            lo = Some(lo.map_or(l, |x: i64| x.min(l)));
            hi = match (hi, large.bounds().1) {
                (Some(a), Some(b)) => Some(a.max(b)),
                _ => None,
            };
        }
    }
    // A range never selects more than the dim has.
    let hi = match (hi, d.bounds().1) {
        (Some(h), Some(dh)) => Some(h.min(dh)),
        (h, dh) => h.or(dh),
    };
    Some(output_bounds(lo, hi))
}

/// Symbolic begin/end values for the `Dynamic` bounds of a plan, one pair per plan entry (in
/// plan order; `None`: keep the plan's bound). Build it with [`SymParams::from_provenance`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SymParams {
    /// Per plan entry: the begin (or shrink index) value.
    pub begin: Vec<Option<Dim>>,
    /// Per plan entry: the end value.
    pub end: Vec<Option<Dim>>,
}

impl SymParams {
    /// The values of the begin and end lists (`begin`, `end`: their elements as dims, known
    /// values, expressions or unknowns; empty when nothing is known) placed at the plan entries
    /// that read them, as the decoder recorded in `provenance`. Kept: expressions and unknowns
    /// (with their bounds: a value computed from an interval dim, or a plain unknown, `>= 0`);
    /// a known element is already in the plan.
    pub fn from_provenance(provenance: &Provenance, begin: &[Dim], end: &[Dim]) -> SymParams {
        let place = |from: &[Option<usize>], values: &[Dim]| -> Vec<Option<Dim>> {
            from.iter()
                .map(|j| {
                    let v = values.get((*j)?)?;
                    says_more(v).then(|| v.clone())
                })
                .collect()
        };
        SymParams {
            begin: place(&provenance.begin, begin),
            end: place(&provenance.end, end),
        }
    }
}

/// True when a parameter element says more than the plan's `Dynamic` (whose value may be any
/// integer) without being in the plan already: an expression, or an unknown value, whose bounds
/// say something (a plain unknown is `>= 0`: a value computed from a dim).
fn says_more(v: &Dim) -> bool {
    !v.is_known()
}

/// The output dim of a range of a known dim `d` whose bounds are in the plan (no `Dynamic`,
/// a known non-zero step): what [`range_dim_sym`] gives for them (its concrete rule, and the
/// whole axis `d` itself, which the rule gives too). `None` otherwise.
fn range_constant(
    d: u64,
    begin: Bound,
    end: Bound,
    step: Option<i64>,
    clamp: Clamp,
) -> Option<i64> {
    let s = step.filter(|&s| s != 0)?;
    if begin == Bound::Dynamic || end == Bound::Dynamic {
        return None;
    }
    let (_, len) = range_concrete(i128::from(d), begin, end, s, clamp).ok()?;
    i64::try_from(len).ok()
}

/// Output dims of a plan whose `Dynamic` begins/ends may be given as expressions (`params`, see
/// [`SymParams::from_provenance`]): exact for every value of the symbols. A shrink with a symbolic index
/// is not checked against the dim.
pub fn resolve_dims_sym(
    plan: &SlicePlan,
    dims: &[Dim],
    clamp: Clamp,
    params: &SymParams,
) -> Result<Vec<Dim>, SliceError> {
    check_rank(plan, dims.len())?;
    let mut out = Vec::with_capacity(plan.axes.len());
    for (k, a) in plan.axes.iter().enumerate() {
        let pick = |v: &Vec<Option<Dim>>, b: Bound| match v.get(k) {
            Some(Some(d)) if b == Bound::Dynamic => SymBound::Index(d.clone()),
            _ => SymBound::from(b),
        };
        match *a {
            AxisPlan::NewAxis => out.push(Dim::known(1)),
            AxisPlan::Shrink { axis, index, check } => {
                if let Some(d) = dims[axis].as_known() {
                    let d = u64::try_from(d).map_err(|_| SliceError::DimTooLarge(0))?;
                    if index.is_some() {
                        shrink_kept(axis, index, d, clamp)?;
                    }
                    check_index(axis, check, d)?;
                }
            }
            AxisPlan::Range {
                axis,
                begin,
                end,
                step,
                check,
            } => {
                if let Some(d) = dims[axis].as_known() {
                    let d = u64::try_from(d).map_err(|_| SliceError::DimTooLarge(0))?;
                    check_index(axis, check, d)?;
                    // Constant bounds on a known dim (most slices of real models): the
                    // concrete rule, as `range_dim_sym` applies it, without building its
                    // symbolic bounds.
                    if let Some(len) = range_constant(d, begin, end, step, clamp) {
                        out.push(Dim::known(len));
                        continue;
                    }
                }
                let (b, e) = (pick(&params.begin, begin), pick(&params.end, end));
                out.push(range_dim_sym(&dims[axis], &b, &e, step, clamp));
            }
        }
    }
    Ok(out)
}

/// Output dims of a plan on (possibly symbolic or unknown) input dims.
///
/// Errors: rank mismatch, or a shrink index known to be out of range for a known dim.
pub fn resolve_dims(plan: &SlicePlan, dims: &[Dim], clamp: Clamp) -> Result<Vec<Dim>, SliceError> {
    resolve_dims_sym(plan, dims, clamp, &SymParams::default())
}

#[cfg(test)]
mod tests;
