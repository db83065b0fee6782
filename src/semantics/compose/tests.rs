//! Unit tests of the slice algebra: the one-axis rule against `resolve`, and a proved
//! composition on a symbol.

use super::*;
use crate::semantics::resolve::resolve_concrete;

fn r(b: Bound, e: Bound, s: i64) -> Ax {
    Ax::Range {
        b,
        e,
        s,
        check: None,
    }
}

/// `range1` is `resolve_concrete` on one axis.
#[test]
fn range1_is_resolve() {
    let vals = [-7, -3, -1, 0, 1, 2, 5, 9];
    let bounds: Vec<Bound> = vals
        .iter()
        .map(|&v| Bound::Index(v))
        .chain([Bound::Edge])
        .collect();
    for d in 0..7u64 {
        for &b in &bounds {
            for &e in &bounds {
                for s in [-3, -1, 1, 2] {
                    for clamp in [Clamp::Tf, Clamp::Ov] {
                        let plan = SlicePlan {
                            input_rank: 1,
                            axes: vec![to_entry(r(b, e, s), 0)],
                        };
                        let want = resolve_concrete(&plan, &[d], clamp).unwrap();
                        let crate::semantics::ResolvedAxis::Range { start, len, .. } = want[0]
                        else {
                            panic!()
                        };
                        let got = eval1(r(b, e, s), d as i128, clamp).unwrap();
                        assert_eq!(norm_sel(start as i128, s as i128, len as i128), got);
                    }
                }
            }
        }
    }
}

#[test]
fn x_2_30_then_1_10_on_a_symbol() {
    let d = Dim::symbol("n");
    let ax = compose_axis(
        0,
        &d,
        r(Bound::Index(2), Bound::Index(30), 1),
        Clamp::Ov,
        r(Bound::Index(1), Bound::Index(10), 1),
        Clamp::Ov,
        Clamp::Ov,
    )
    .unwrap();
    assert_eq!(r(Bound::Index(3), Bound::Index(12), 1), ax);
}
