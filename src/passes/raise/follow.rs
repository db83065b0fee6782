//! The reshaping after a Slice that `raise` absorbs: which node (a Reshape, Squeeze or
//! Unsqueeze that is the Slice's only consumer, or two of them, as `lower` writes a Squeeze
//! then an Unsqueeze), and the axes it keeps, removes and adds ([`Ev`]).

use petgraph::stable_graph::NodeIndex;

use crate::formats::Format;
use crate::ir::{Graph, NodeKind, OutletId};
use crate::ops::eval;
use crate::semantics::raising::{self, align, norm_axes, shape_after, Ent, Ev};

pub(super) fn const_ints(graph: &Graph, node: NodeIndex, port: usize) -> Option<Option<Vec<i64>>> {
    match graph.input(node, port) {
        None => Some(None),
        Some(o) => graph.constant_at(o)?.to_i64_vec().map(Some),
    }
}

/// Events of a follow-up node, or `None` when it cannot be absorbed.
pub(super) fn follow_events(
    graph: &Graph,
    f: NodeIndex,
    out_dims: &[Option<u64>],
    single: &[Option<i64>],
    format: Format,
) -> Option<(Vec<Ev>, Vec<u64>)> {
    let n = graph.node(f);
    let rank = out_dims.len();
    let known: Option<Vec<u64>> = out_dims.iter().copied().collect();
    let evs: Vec<Ev> = match n.op_type.as_str() {
        "Squeeze" => {
            let axes = match const_ints(graph, f, 1)? {
                Some(a) => Some(a),
                None => n.attr_ints("axes").and_then(|r| r.ok()),
            };
            let removed: Vec<usize> = match axes {
                Some(a) => norm_axes(&a, rank)?,
                None if known.is_some() => (0..rank).filter(|&i| out_dims[i] == Some(1)).collect(),
                None => return None,
            };
            if axes_unknown_all(&removed, out_dims) {
                return None;
            }
            (0..rank)
                .map(|i| {
                    if removed.contains(&i) {
                        Ev::Remove(i)
                    } else {
                        Ev::Keep(i)
                    }
                })
                .collect()
        }
        "Unsqueeze" => {
            let axes = match const_ints(graph, f, 1)? {
                Some(a) => a,
                None => n.attr_ints("axes").and_then(|r| r.ok())?,
            };
            let out_rank = rank + axes.len();
            let new = norm_axes(&axes, out_rank)?;
            let mut next = 0;
            (0..out_rank)
                .map(|p| {
                    if new.contains(&p) {
                        Ev::New
                    } else {
                        next += 1;
                        Ev::Keep(next - 1)
                    }
                })
                .collect()
        }
        "Reshape" => {
            let target = const_ints(graph, f, 1)??;
            let zero_copies = match format {
                Format::OpenVino => matches!(
                    n.attr_str("special_zero")
                        .map(|s| s.trim().to_ascii_lowercase())
                        .as_deref(),
                    Some("true" | "1")
                ),
                Format::Onnx => n.attr_int("allowzero").unwrap_or(0) == 0,
            };
            match known.clone() {
                Some(dims) => {
                    let out = eval::reshape_target(&dims, &target, zero_copies).ok()?;
                    align(&dims, &out)?
                }
                // What `lower` writes on dims not all known: zeros copying dims in place.
                None if zero_copies && target.iter().all(|&t| t >= 0) => {
                    raising::align_partial(out_dims, &target)?
                }
                None => return None,
            }
        }
        _ => return None,
    };
    // Every removed axis must select exactly one known element.
    if evs
        .iter()
        .any(|e| matches!(e, Ev::Remove(i) if single[*i].is_none()))
    {
        return None;
    }
    let shape = known.map(|k| shape_after(&k, &evs)).unwrap_or_default();
    Some((evs, shape))
}

pub(super) fn axes_unknown_all(removed: &[usize], out_dims: &[Option<u64>]) -> bool {
    removed.iter().any(|&i| out_dims[i] != Some(1))
}

/// The follow-up of Slice `ix` and its events; a Reshape that changes no dim is read as the
/// shrink then new axis `lower` made it of ([`raising::shrink_then_new`]).
pub(super) fn follow_and_events(
    graph: &Graph,
    ix: NodeIndex,
    out_dims: &[Option<u64>],
    single: &[Option<i64>],
    ents: &[Ent],
    format: Format,
) -> (Follow, Vec<Ev>, &'static str) {
    let (follow, mut evs, note) = follow_up(graph, ix, out_dims, single, format);
    let reshape = follow
        .last
        .is_some_and(|f| graph.node(f).op_type == "Reshape");
    if follow.middle.is_none() && reshape {
        evs = raising::shrink_then_new(&evs, ents, single);
    }
    (follow, evs, note)
}

/// The only consumer of `ix`'s output 0 when it reads it as its data and is a reshaping node.
pub(super) fn only_shaping_consumer(
    graph: &Graph,
    ix: NodeIndex,
    format: Format,
) -> Option<NodeIndex> {
    let consumers = graph.consumers(OutletId { node: ix, port: 0 });
    match consumers.as_slice() {
        [(c, 0)] if is_shaping(graph, *c, format) => Some(*c),
        _ => None,
    }
}

/// An absorbable follow-up of Slice `ix`: its only consumer, a Reshape/Squeeze/Unsqueeze, with
/// its events (and, when that one's only consumer is another reshaping node that is absorbable
/// too, as `lower`'s Squeeze then Unsqueeze: that one last and the first in the middle); else
/// no follow-up, every axis kept, and a note when one was there but is kept.
pub(super) fn follow_up(
    graph: &Graph,
    ix: NodeIndex,
    out_dims: &[Option<u64>],
    single: &[Option<i64>],
    format: Format,
) -> (Follow, Vec<Ev>, &'static str) {
    let keep_all = (0..out_dims.len()).map(Ev::Keep).collect();
    let Some(c) = only_shaping_consumer(graph, ix, format) else {
        return (Follow::default(), keep_all, "");
    };
    let Some((e, _)) = follow_events(graph, c, out_dims, single, format) else {
        return (
            Follow::default(),
            keep_all,
            " (the reshaping node after it is kept: not only size-1 axes, or not known to be)",
        );
    };
    let one = Follow {
        last: Some(c),
        middle: None,
    };
    let Some(c2) = only_shaping_consumer(graph, c, format) else {
        return (one, e, "");
    };
    let dims2: Vec<Option<u64>> = (e.iter())
        .filter_map(|ev| match *ev {
            Ev::Keep(a) => Some(out_dims[a]),
            Ev::New => Some(Some(1)),
            Ev::Remove(_) => None,
        })
        .collect();
    let single2: Vec<Option<i64>> = (e.iter())
        .filter_map(|ev| match *ev {
            Ev::Keep(a) => Some(single[a]),
            Ev::New => Some(Some(0)),
            Ev::Remove(_) => None,
        })
        .collect();
    let both = follow_events(graph, c2, &dims2, &single2, format)
        .and_then(|(e2, _)| raising::compose(&e, &e2));
    match both {
        Some(evs) => (
            Follow {
                last: Some(c2),
                middle: Some(c),
            },
            evs,
            "",
        ),
        None => (one, e, ""),
    }
}

/// The reshaping nodes a raised StridedSlice absorbs: the last one (whose place it takes) and
/// the one between the Slice and it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Follow {
    pub last: Option<NodeIndex>,
    pub middle: Option<NodeIndex>,
}

/// True when `ix` is a one-output `Reshape`/`Squeeze`/`Unsqueeze` of the standard domain.
pub(super) fn is_shaping(graph: &Graph, ix: NodeIndex, format: Format) -> bool {
    let n = graph.node(ix);
    let same_domain = match format {
        Format::OpenVino => n.domain.starts_with("opset"),
        Format::Onnx => n.domain.is_empty() || n.domain == "ai.onnx",
    };
    n.kind == NodeKind::Op
        && same_domain
        && n.outputs.len() == 1
        && matches!(n.op_type.as_str(), "Reshape" | "Squeeze" | "Unsqueeze")
}
