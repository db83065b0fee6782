//! Raising a Slice and the reshaping after it to one StridedSlice, the pure parts: the events
//! of the reshaping (which axes it keeps, removes or adds: [`align`]), the shape after them
//! ([`shape_after`]) and the StridedSlice spec they make with the Slice's entries ([`spec`]).
//! Pass `raise` reads the graph, calls these and builds the node.

use super::StridedSliceSpec;

/// One StridedSlice entry for an input axis kept as a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ent {
    pub begin: i64,
    pub end: i64,
    pub stride: i64,
    pub begin_mask: bool,
    pub end_mask: bool,
    /// The begin is element `j` of the Slice's starts input (taken at run time).
    pub begin_src: Option<usize>,
    /// The end is element `j` of the Slice's ends input.
    pub end_src: Option<usize>,
}

/// What happens to the axes after the Slice, in output order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    Keep(usize),
    Remove(usize),
    New,
}

/// Normalised, sorted `axes` of a rank-`rank` tensor; `None` when one is out of range or
/// repeated.
pub fn norm_axes(axes: &[i64], rank: usize) -> Option<Vec<usize>> {
    let mut v: Vec<usize> = axes
        .iter()
        .map(|&a| {
            let a = if a < 0 { a + rank as i64 } else { a };
            (0..rank as i64).contains(&a).then_some(a as usize)
        })
        .collect::<Option<_>>()?;
    v.sort_unstable();
    let n = v.len();
    v.dedup();
    (v.len() == n).then_some(v)
}

/// The dims after `evs` of a tensor of `dims`.
pub fn shape_after(dims: &[u64], evs: &[Ev]) -> Vec<u64> {
    evs.iter()
        .filter_map(|e| match e {
            Ev::Keep(i) => Some(dims[*i]),
            Ev::New => Some(1),
            Ev::Remove(_) => None,
        })
        .collect()
}

/// Aligns `input` and `output` dims that differ only by size-1 axes.
pub fn align(input: &[u64], output: &[u64]) -> Option<Vec<Ev>> {
    let (mut i, mut j) = (0, 0);
    let mut evs = Vec::new();
    while i < input.len() || j < output.len() {
        match (input.get(i), output.get(j)) {
            (Some(a), Some(b)) if a == b => {
                evs.push(Ev::Keep(i));
                i += 1;
                j += 1;
            }
            (Some(1), _) => {
                evs.push(Ev::Remove(i));
                i += 1;
            }
            (_, Some(1)) => {
                evs.push(Ev::New);
                j += 1;
            }
            _ => return None,
        }
    }
    Some(evs)
}

/// The StridedSlice spec of `evs` over the Slice's entries `ents` (a removed axis takes its
/// element `single[a]`); `Err` names what is missing.
pub fn spec(
    evs: &[Ev],
    ents: &[Ent],
    single: &[Option<i64>],
) -> Result<StridedSliceSpec, &'static str> {
    let mut spec = StridedSliceSpec::default();
    let mut strides = Vec::new();
    for e in evs {
        let (b, en, s, bm, em, na, sh) = match *e {
            Ev::Keep(a) => {
                let t = ents[a];
                (
                    t.begin,
                    t.end,
                    t.stride,
                    t.begin_mask,
                    t.end_mask,
                    false,
                    false,
                )
            }
            Ev::Remove(a) => {
                let i = single[a].ok_or("internal: removed axis without an index")?;
                (i, i.saturating_add(1), 1, false, false, false, true)
            }
            Ev::New => (0, 0, 1, false, false, true, false),
        };
        spec.begin.push(Some(b));
        spec.end.push(Some(en));
        strides.push(Some(s));
        spec.begin_mask.push(bm);
        spec.end_mask.push(em);
        spec.new_axis_mask.push(na);
        spec.shrink_axis_mask.push(sh);
        spec.ellipsis_mask.push(false);
    }
    spec.strides = Some(strides);
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Size-1 axes removed and added between equal dims; anything else does not align.
    #[test]
    fn align_matches_size_one_axes() {
        assert_eq!(
            align(&[1, 3, 4], &[3, 1, 4]),
            Some(vec![Ev::Remove(0), Ev::Keep(1), Ev::New, Ev::Keep(2)])
        );
        assert_eq!(align(&[2, 3], &[3, 2]), None);
        assert_eq!(
            shape_after(
                &[1, 3, 4],
                &[Ev::Remove(0), Ev::Keep(1), Ev::New, Ev::Keep(2)]
            ),
            vec![3, 1, 4]
        );
        assert_eq!(norm_axes(&[-1, 0], 3), Some(vec![0, 2]));
        assert_eq!(norm_axes(&[0, -3], 3), None);
    }
}
