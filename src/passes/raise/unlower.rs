//! Recognising an OpenVINO Slice whose starts and stops `lower` gathered at run time from a
//! StridedSlice's begin and end (`lower`'s pool: `Concat(begin, end, kept shrink indices,
//! the next ones, constants)` and a `Gather` of it for each), so that `raise` gives back the
//! StridedSlice reading that begin and end, not a second pool around the first.
//!
//! Every part is checked against what `lower` builds: the kept shrink indices must be exactly
//! `min(max(b < 0 ? b + dim : b, 0), dim - 1)` of `begin[j]` with `dim` the sliced axis' size
//! (the clamping an OpenVINO StridedSlice does itself), the next ones `kept + 1`. A constant
//! start or stop is taken back only where it is an edge (a mask); anything else is left to the
//! general path.

use crate::ir::{Graph, NodeKind, OutletId};
use crate::semantics::raising::Ent;
use crate::semantics::{AxisPlan, Bound, Clamp, ResolvedAxis};
use petgraph::stable_graph::NodeIndex;

/// Where a Slice start or stop comes from in `lower`'s pool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Src {
    Begin(usize),
    End(usize),
    /// The kept index of the shrink of `begin[j]`, clamped by the size of input axis `axis`
    /// (`Err(d)`: by the constant size `d`).
    Kept {
        j: usize,
        axis: Result<usize, i64>,
    },
    AfterKept {
        j: usize,
        axis: Result<usize, i64>,
    },
    Const(i64),
}

/// A Slice recognised as `lower`'s: the StridedSlice's begin and end (each of `n` elements),
/// and per input axis its entry, with `single` set (to a placeholder) where it is a run-time
/// shrink.
pub(super) struct Unlowered {
    pub begin: OutletId,
    pub end: OutletId,
    pub n: usize,
    pub ents: Vec<Ent>,
    pub single: Vec<Option<i64>>,
}

fn op<'a>(graph: &'a Graph, o: OutletId, ty: &str) -> Option<&'a crate::ir::Node> {
    let n = graph.node(o.node);
    (n.kind == NodeKind::Op && n.op_type == ty && o.port == 0).then_some(n)
}

fn ins(graph: &Graph, node: NodeIndex) -> Vec<OutletId> {
    graph.inputs(node).into_iter().flatten().collect()
}

fn consts(graph: &Graph, o: OutletId) -> Option<Vec<i64>> {
    graph.constant_at(o)?.to_i64_vec()
}

/// `Gather(data, indices, axis 0)` with constant indices: `(data, indices)`.
fn gather0(graph: &Graph, o: OutletId) -> Option<(OutletId, Vec<i64>)> {
    let n = op(graph, o, "Gather")?;
    let i = ins(graph, o.node);
    let [data, idx, axis] = i.as_slice() else {
        return None;
    };
    (n.attr_str("batch_dims").is_none_or(|b| b.trim() == "0") && consts(graph, *axis)? == [0])
        .then_some(())?;
    Some((*data, consts(graph, *idx)?))
}

/// The tensor `o` is `as_i64` of: the input of a `Convert` to i64, or `o` itself.
fn strip_convert(graph: &Graph, o: OutletId) -> OutletId {
    match op(graph, o, "Convert") {
        Some(n)
            if n.attr_str("destination_type")
                .is_some_and(|t| t.trim() == "i64") =>
        {
            ins(graph, o.node).first().copied().unwrap_or(o)
        }
        _ => o,
    }
}

/// The length of 1-D `o` when declared.
fn len(graph: &Graph, o: OutletId) -> Option<usize> {
    match crate::passes::rewrite::known_dims(graph, o)?.as_slice() {
        [Some(n)] => usize::try_from(*n).ok(),
        _ => None,
    }
}

/// `a` and `b` are `op(x, y)` in either order? Returns `x, y` as found for `ty` with the
/// given first input.
fn binary(graph: &Graph, o: OutletId, ty: &str) -> Option<(OutletId, OutletId)> {
    op(graph, o, ty)?;
    match ins(graph, o.node).as_slice() {
        [a, b] => Some((*a, *b)),
        _ => None,
    }
}

fn is_const(graph: &Graph, o: OutletId, v: i64) -> bool {
    consts(graph, o).is_some_and(|c| c.len() == 1 && c[0] == v)
}

/// The kept shrink indices `lower` built (`kept_shrinks`) from `b64`: per element, the begin
/// element `j` and the input axis of `data` whose size clamps it (or that size, a constant).
fn kept_of(
    graph: &Graph,
    kept: OutletId,
    b64: OutletId,
    data: OutletId,
) -> Option<Vec<(usize, Result<usize, i64>)>> {
    let (low, last) = binary(graph, kept, "Minimum")?;
    let (norm, zero) = binary(graph, low, "Maximum")?;
    let (d, one) = binary(graph, last, "Subtract")?;
    (is_const(graph, zero, 0) && is_const(graph, one, 1)).then_some(())?;
    op(graph, norm, "Select")?;
    let [cond, wrapped, g] = ins(graph, norm.node)[..] else {
        return None;
    };
    let (g1, zero) = binary(graph, cond, "Less")?;
    let (g2, d2) = binary(graph, wrapped, "Add")?;
    (g1 == g && g2 == g && d2 == d && is_const(graph, zero, 0)).then_some(())?;
    let (src, js) = gather0(graph, g)?;
    (src == b64).then_some(())?;
    // The dims: constants where known, else ShapeOf(data) gathered at the axes.
    let axes: Vec<Result<usize, i64>> = match gather0(graph, d) {
        Some((shape, axes)) => {
            op(graph, shape, "ShapeOf")?;
            (ins(graph, shape.node).first() == Some(&data)).then_some(())?;
            axes.iter()
                .map(|&a| usize::try_from(a).ok().map(Ok))
                .collect::<Option<_>>()?
        }
        // Constant dims: each must be the known size of the axis sliced (checked by the caller).
        None => consts(graph, d)?.into_iter().map(Err).collect(),
    };
    (axes.len() == js.len()).then_some(())?;
    js.iter()
        .zip(axes)
        .map(|(&j, a)| Some((usize::try_from(j).ok()?, a)))
        .collect()
}

/// The pool's parts in order: what each element of it is.
fn pool_sources(
    graph: &Graph,
    pool: OutletId,
    data: OutletId,
) -> Option<(OutletId, OutletId, usize, Vec<Src>)> {
    op(graph, pool, "Concat")?;
    let parts = ins(graph, pool.node);
    let (p0, p1) = (*parts.first()?, *parts.get(1)?);
    let (nb, ne) = (len(graph, p0)?, len(graph, p1)?);
    (nb == ne).then_some(())?;
    let mut srcs: Vec<Src> = (0..nb)
        .map(Src::Begin)
        .chain((0..ne).map(Src::End))
        .collect();
    let mut rest = &parts[2..];
    if let [kept, after, tail @ ..] = rest {
        if let Some(k) = kept_of(graph, *kept, p0, data) {
            let (x, one) = binary(graph, *after, "Add")?;
            (x == *kept && is_const(graph, one, 1)).then_some(())?;
            srcs.extend(k.iter().map(|&(j, axis)| Src::Kept { j, axis }));
            srcs.extend(k.iter().map(|&(j, axis)| Src::AfterKept { j, axis }));
            rest = tail;
        }
    }
    match rest {
        [] => {}
        [c] => srcs.extend(consts(graph, *c)?.into_iter().map(Src::Const)),
        _ => return None,
    }
    Some((strip_convert(graph, p0), strip_convert(graph, p1), nb, srcs))
}

/// Whether constant `v` is the edge `lower` writes for a masked bound (the ±2^30 of the CPU
/// plugin, or the i64 extremes, or 0 for a forward begin).
fn is_edge(v: i64, is_begin: bool, step: i64) -> bool {
    match (is_begin, step > 0) {
        (true, true) => v == 0,
        (false, true) | (true, false) => v >= 1 << 30,
        (false, false) => v <= -(1 << 30),
    }
}

/// Whether `u:v:s` selects on an axis of size `d` what `::s` does.
fn same_as_masked(u: i64, v: i64, s: i64, d: u64) -> bool {
    let range = |begin, end| {
        let entry = AxisPlan::Range {
            axis: 0,
            begin,
            end,
            step: Some(s),
            check: None,
        };
        crate::passes::rewrite::resolve_entry(entry, d, Clamp::Ov).ok()
    };
    let whole = range(Bound::Edge, Bound::Edge);
    let this = range(Bound::Index(u), Bound::Index(v));
    match (whole, this) {
        (
            Some(ResolvedAxis::Range {
                start: a, len: n, ..
            }),
            Some(ResolvedAxis::Range {
                start: b, len: m, ..
            }),
        ) => n == m && (a == b || n == 0),
        _ => false,
    }
}

/// Whether a kept index clamped by `by` is one of input axis `a` (of size `dims[a]` if known).
fn clamps(by: Result<usize, i64>, a: usize, dims: &[Option<u64>]) -> bool {
    match by {
        Ok(axis) => axis == a,
        Err(d) => u64::try_from(d).is_ok_and(|d| dims[a] == Some(d)),
    }
}

/// Recognises OpenVINO Slice `ix` (inputs data, start, stop, step, axes) as `lower`'s.
pub(super) fn unlower(
    graph: &Graph,
    ix: NodeIndex,
    data: OutletId,
    dims: &[Option<u64>],
) -> Option<Unlowered> {
    let i = ins(graph, ix);
    let [d, start, stop, step, axes] = i.as_slice() else {
        return None;
    };
    (*d == data).then_some(())?;
    let (pool, si) = gather0(graph, *start)?;
    let (pool2, ti) = gather0(graph, *stop)?;
    (pool == pool2).then_some(())?;
    let (begin, end, n, srcs) = pool_sources(graph, pool, data)?;
    let steps = consts(graph, *step)?;
    let axes = consts(graph, *axes)?;
    let rank = dims.len();
    let whole = Ent::WHOLE;
    let mut ents = vec![whole; rank];
    let mut single = vec![None; rank];
    let mut seen = vec![false; rank];
    (si.len() == axes.len() && ti.len() == axes.len() && steps.len() == axes.len()).then_some(())?;
    let at = |k: i64| srcs.get(usize::try_from(k).ok()?).copied();
    for (e, &a) in axes.iter().enumerate() {
        let a = usize::try_from(a).ok().filter(|&a| a < rank)?;
        (!std::mem::replace(&mut seen[a], true)).then_some(())?;
        let s = steps[e];
        let mut ent = Ent {
            stride: s,
            begin_mask: false,
            end_mask: false,
            ..whole
        };
        match (at(si[e])?, at(ti[e])?) {
            (Src::Kept { j, axis }, Src::AfterKept { j: j2, axis: a2 })
                if j == j2 && axis == a2 && s == 1 && clamps(axis, a, dims) =>
            {
                ent.begin_src = Some(j);
                single[a] = Some(0);
            }
            // A constant range on an axis of known size that selects what the whole axis
            // with this stride does (`lower` resolves such ranges): masks again.
            (Src::Const(u), Src::Const(v))
                if dims[a].is_some_and(|d| same_as_masked(u, v, s, d)) =>
            {
                ent.begin_mask = true;
                ent.end_mask = true;
            }
            (b, e) => {
                match b {
                    Src::Begin(j) => ent.begin_src = Some(j),
                    Src::Const(v) if is_edge(v, true, s) => ent.begin_mask = true,
                    _ => return None,
                }
                match e {
                    Src::End(j) => ent.end_src = Some(j),
                    Src::Const(v) if is_edge(v, false, s) => ent.end_mask = true,
                    _ => return None,
                }
            }
        }
        ents[a] = ent;
    }
    Some(Unlowered {
        begin,
        end,
        n,
        ents,
        single,
    })
}
