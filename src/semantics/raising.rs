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

impl Ent {
    /// The whole axis, in order (`begin_mask` and `end_mask`, stride 1).
    pub const WHOLE: Ent = Ent {
        begin: 0,
        end: 0,
        stride: 1,
        begin_mask: true,
        end_mask: true,
        begin_src: None,
        end_src: None,
    };
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

/// Aligns the dims of a Slice output (`input`, `None` where not known) with a Reshape target
/// whose zeros copy the dim at their position and that holds no `-1`, as `lower` writes it:
/// a zero at position `j` keeps input axis `j`, a positive value keeps an axis of that known
/// size; otherwise a known size-1 axis is removed, a target 1 is a new axis. `None` when they
/// do not align so.
pub fn align_partial(input: &[Option<u64>], target: &[i64]) -> Option<Vec<Ev>> {
    let (mut i, mut j) = (0, 0);
    let mut evs = Vec::new();
    while i < input.len() || j < target.len() {
        match (input.get(i).copied(), target.get(j).copied()) {
            (Some(a), Some(t)) if (t == 0 && i == j) || (t > 0 && a == Some(t as u64)) => {
                evs.push(Ev::Keep(i));
                i += 1;
                j += 1;
            }
            (Some(Some(1)), _) => {
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

/// `evs` (of a first reshaping, over the Slice's axes) followed by `then` (a second one, over
/// the axes the first leaves): one list of events over the Slice's axes. An axis the first
/// removes stays right after the axis before it (before any new axis the second adds there:
/// Squeeze then Unsqueeze is `x[:, -1, tf.newaxis]`, Unsqueeze then Squeeze `x[tf.newaxis,
/// 0]`). `None` when the second removes an axis the first added, or does not read every
/// axis in order.
pub fn compose(evs: &[Ev], then: &[Ev]) -> Option<Vec<Ev>> {
    // The first's removals before its first output, and each output with those right after.
    let mut lead = Vec::new();
    let mut outs: Vec<(Ev, Vec<Ev>)> = Vec::new();
    for &e in evs {
        match (e, outs.last_mut()) {
            (Ev::Remove(_), None) => lead.push(e),
            (Ev::Remove(_), Some(o)) => o.1.push(e),
            _ => outs.push((e, Vec::new())),
        }
    }
    let mut next = 0;
    let mut out = lead;
    for &e in then {
        match e {
            Ev::New => out.push(Ev::New),
            Ev::Keep(p) | Ev::Remove(p) => {
                (p == next).then_some(())?;
                next += 1;
                let (item, after) = outs.get(p)?;
                match (e, *item) {
                    (Ev::Keep(_), it) => out.push(it),
                    (_, Ev::Keep(a)) => out.push(Ev::Remove(a)),
                    _ => return None,
                }
                out.extend(after.iter().copied());
            }
        }
    }
    (next == outs.len()).then_some(out)
}

/// A Reshape after a Slice that changes no dim (all of `evs` keep their axis) is what `lower`
/// writes for a shrink followed by a new axis in its place (`x[:, -1, tf.newaxis]`): each axis
/// the Slice narrows to one element (`single`, not its whole axis) is said so again, a removal
/// and a new axis. Any other `evs` are returned as they are.
pub fn shrink_then_new(evs: &[Ev], ents: &[Ent], single: &[Option<i64>]) -> Vec<Ev> {
    if !evs.iter().all(|e| matches!(e, Ev::Keep(_))) {
        return evs.to_vec();
    }
    let mut out = Vec::with_capacity(evs.len() + 1);
    for &e in evs {
        match e {
            Ev::Keep(a) if single[a].is_some() && !whole(&ents[a]) => {
                out.extend([Ev::Remove(a), Ev::New])
            }
            _ => out.push(e),
        }
    }
    out
}

/// Whether the StridedSlice entries `cols` (over `evs` and `ents`) can read a begin and an end
/// of `n` elements in place: one entry per element, and each element an entry reads at run
/// time its own.
pub fn sources_in_place(evs: &[Ev], ents: &[Ent], cols: &[Option<usize>], n: usize) -> bool {
    cols.len() == n
        && cols
            .iter()
            .enumerate()
            .all(|(c, col)| match col.map(|k| evs[k]) {
                Some(Ev::Keep(a) | Ev::Remove(a)) => {
                    let e = &ents[a];
                    e.begin_src.is_none_or(|j| j == c) && e.end_src.is_none_or(|j| j == c)
                }
                _ => true,
            })
}

/// StridedSlice entries over `evs` that read a begin and an end of `n` elements in place
/// ([`sources_in_place`]): the first `n` events when the others keep whole axes (entries not
/// written), or with an ellipsis ([`columns`]); the ellipsis first when there is a new axis
/// (OpenVINO's CPU plugin 2026.4 reads uninitialised memory for a new axis and a shrink with
/// run-time bounds and no ellipsis: ss-1-00048; and fails to compile an ellipsis with a shrink
/// of a run-time index and no new axis: ss-1-01896). `None` when neither reads in place.
pub fn columns_in_place(evs: &[Ev], ents: &[Ent], n: usize) -> Option<Vec<Option<usize>>> {
    let is_whole = |e: &Ev| matches!(e, Ev::Keep(a) if whole(&ents[*a]));
    let truncated = (n > 0 && evs.len() >= n && evs[n..].iter().all(is_whole))
        .then(|| (0..n).map(Some).collect::<Vec<_>>());
    let ellipsis = Some(columns(evs, ents));
    let order = if evs.contains(&Ev::New) {
        [ellipsis, truncated]
    } else {
        [truncated, ellipsis]
    };
    order
        .into_iter()
        .flatten()
        .find(|cols| sources_in_place(evs, ents, cols, n))
}

/// Whether OpenVINO's CPU plugin (2026.4) misreads a StridedSlice of entries `cols` (over
/// `evs`): with a new axis and a shrink, no ellipsis, and not every input axis named by an
/// entry. The plugin pads the entries only up to max(input rank, output rank), which is short
/// of input rank + new axes once a shrink takes one away, so it never visits the last input
/// axes and reads memory outside the input (lowerdynraise conformance cases ss-1-00838,
/// ss-1-00885, ss-3-00100: the original StridedSlice with begin/end inputs gives the same
/// wrong values there, OpenVINO's reference evaluation the right ones). Naming every axis
/// (trailing whole-axis entries) selects the same and the plugin runs it right.
pub fn ov_cpu_entries_short(evs: &[Ev], cols: &[Option<usize>]) -> bool {
    let ev = |c: &Option<usize>| c.map(|k| evs[k]);
    let has = |f: fn(Ev) -> bool| cols.iter().any(|c| ev(c).is_some_and(f));
    let named = (cols.iter())
        .filter(|c| matches!(ev(c), Some(Ev::Keep(_) | Ev::Remove(_))))
        .count();
    let rank = (evs.iter())
        .filter(|e| matches!(e, Ev::Keep(_) | Ev::Remove(_)))
        .count();
    has(|e| e == Ev::New)
        && has(|e| matches!(e, Ev::Remove(_)))
        && cols.iter().all(Option::is_some)
        && named < rank
}

/// Whether `e` selects its whole axis in order (both masks, stride 1, nothing at run time).
fn whole(e: &Ent) -> bool {
    e.begin_mask && e.end_mask && e.stride == 1 && e.begin_src.is_none() && e.end_src.is_none()
}

/// The StridedSlice entries of `evs` as TensorFlow code writes them: per entry, the event it
/// stands for, `None` for an ellipsis: the longest run of at least two whole-axis entries
/// becomes one ellipsis (`x[..., 0]`, not `x[:, :, 0]`). Trailing whole-axis entries stay
/// (OpenVINO's CPU plugin 2026.4 misplaces a reverse range when a new axis is followed by
/// fewer entries than input axes: conformance case ss-1-00001).
pub fn columns(evs: &[Ev], ents: &[Ent]) -> Vec<Option<usize>> {
    let is_whole = |e: &Ev| matches!(e, Ev::Keep(a) if whole(&ents[*a]));
    let n = evs.len();
    let (mut best, mut run) = ((0, 0), (0, 0));
    for (k, e) in evs.iter().enumerate() {
        if is_whole(e) {
            if run.1 == 0 {
                run.0 = k;
            }
            run.1 += 1;
            if run.1 > best.1 {
                best = run;
            }
        } else {
            run.1 = 0;
        }
    }
    let mut cols = Vec::with_capacity(n);
    let mut k = 0;
    while k < n {
        if best.1 >= 2 && k == best.0 {
            cols.push(None);
            k += best.1;
        } else {
            cols.push(Some(k));
            k += 1;
        }
    }
    cols
}

/// The StridedSlice spec of `evs` over the Slice's entries `ents` (a removed axis takes its
/// element `single[a]`), one entry per column of [`columns`]; `Err` names what is missing.
pub fn spec(
    evs: &[Ev],
    ents: &[Ent],
    single: &[Option<i64>],
    cols: &[Option<usize>],
) -> Result<StridedSliceSpec, &'static str> {
    let mut spec = StridedSliceSpec::default();
    let mut strides = Vec::new();
    for c in cols {
        let Some(k) = *c else {
            spec.begin.push(Some(0));
            spec.end.push(Some(0));
            strides.push(Some(1));
            spec.begin_mask.push(false);
            spec.end_mask.push(false);
            spec.new_axis_mask.push(false);
            spec.shrink_axis_mask.push(false);
            spec.ellipsis_mask.push(true);
            continue;
        };
        let e = &evs[k];
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

    /// OpenVINO CPU 2026.4 misruns `x[0, tf.newaxis]` on a rank-3 input written with 2 entries
    /// (ss-1-00838: new axis and shrink, the last input axis not named); with every axis named,
    /// an ellipsis, or no shrink it runs right.
    #[test]
    fn ov_cpu_short_entries_next_to_new_and_shrink() {
        let evs = [Ev::Remove(0), Ev::New, Ev::Keep(1), Ev::Keep(2)];
        assert!(ov_cpu_entries_short(&evs, &[Some(0), Some(1), Some(2)]));
        assert!(!ov_cpu_entries_short(
            &evs,
            &[Some(0), Some(1), Some(2), Some(3)]
        ));
        assert!(!ov_cpu_entries_short(&evs, &[Some(0), Some(1), None]));
        let no_shrink = [Ev::Keep(0), Ev::New, Ev::Keep(1), Ev::Keep(2)];
        assert!(!ov_cpu_entries_short(
            &no_shrink,
            &[Some(0), Some(1), Some(2)]
        ));
    }
}
