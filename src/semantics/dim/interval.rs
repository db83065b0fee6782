//! `Iv`: an interval with optional (infinite) ends, and its arithmetic, for bounds.

/// Interval with optional (infinite) ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Iv {
    pub(super) lo: Option<i128>,
    pub(super) hi: Option<i128>,
}

pub(super) fn iv_add(a: Iv, b: Iv) -> Iv {
    Iv {
        lo: a.lo.zip(b.lo).and_then(|(x, y)| x.checked_add(y)),
        hi: a.hi.zip(b.hi).and_then(|(x, y)| x.checked_add(y)),
    }
}

pub(super) fn iv_scale(a: Iv, k: i128) -> Iv {
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
pub(super) fn iv_mul(a: Iv, b: Iv) -> Iv {
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
