//! Pass `raise`: a Slice (ONNX `Slice`, OpenVINO `Slice-8`) with constant axes and steps,
//! optionally followed by a `Reshape`/`Squeeze`/`Unsqueeze` that only adds or removes size-1
//! axes (and is the Slice's only consumer), becomes one StridedSlice: OpenVINO `StridedSlice-1`
//! with 0/1 list masks, or in ONNX the TensorFlow-style `StridedSlice` of the custom domain
//! `org.tensorflow` (added to the model's opset imports).
//!
//! On axes of known size the parameters are the exact resolved ranges; on axes of unknown size
//! the Slice bounds are kept, except a reverse range starting at a negative index, which
//! TensorFlow clamps differently (left alone for ONNX, reported). A follow-up node that cannot
//! be absorbed (non-constant axes, a Reshape on dims not all known) stays after the new node.
//! Starts/ends taken at run time become the StridedSlice's begin/end, assembled from them (a
//! `Gather` placing each element at its axis; for TensorFlow clamping, reverse begins below
//! `-dim` raised to `-dim`). With a static input and constant parameters the rewrite is checked
//! by translation validation.

use petgraph::stable_graph::NodeIndex;

use crate::error::{Error, Result};
use crate::formats::{Format, Model};
use crate::ir::{Attr, Graph, OutletId};
use crate::passes::rewrite::{self, Builder};
use crate::report::{Change, PassReport};
use crate::semantics::raising::{self, shape_after, Ent, Ev};
use crate::semantics::{self, AxisPlan, Bound, Clamp, Flavour, ResolvedAxis, StridedSliceSpec};
use crate::shape::slice_node::{self, SliceOp};

mod follow;
mod orphans;
mod unlower;

use follow::{follow_and_events, follow_events, is_shaping, Follow};
use orphans::inputs_from;
pub(crate) use orphans::remove_orphans;

/// The ONNX custom domain of TensorFlow-style StridedSlice nodes.
pub const TF_DOMAIN: &str = "org.tensorflow";

/// Raises every Slice of `model`.
pub fn run(model: &mut Model, report: &mut PassReport) -> Result<()> {
    let format = model.format();
    let opset = model.onnx_opset();
    let order = model
        .graph()
        .topo_order()
        .map_err(|c| Error::cycle(model.path(), c))?;
    let mut raised = false;
    for ix in order {
        let graph = model.graph_mut();
        if !graph.is_live(ix) {
            continue;
        }
        let (name, op_type) = {
            let n = graph.node(ix);
            (n.name.clone(), n.op_type.clone())
        };
        let marked = name.contains(rewrite::LOWERED_MARK);
        let outcome = if graph.lowered_shaping.remove(&ix) || marked {
            raise_lone_shaping(graph, ix, format)
        } else {
            let Some(op) = slice_node::classify(graph, ix, format, opset) else {
                continue;
            };
            if !matches!(op, SliceOp::OnnxSlice { .. } | SliceOp::OvSlice8) {
                continue;
            }
            raise_node(graph, ix, op, format)
        };
        match outcome {
            Ok(what) => {
                raised = true;
                report.change(|| Change::note(name, op_type, what))
            }
            Err(why) => report.skip(|| Change::note(name, op_type, why)),
        }
    }
    model.graph_mut().flush_detached();
    if raised {
        if let Model::Onnx(m) = model {
            m.ensure_opset_import(TF_DOMAIN, 1);
        }
    }
    Ok(())
}

/// Raises Slice `ix` (with the reshaping after it when it can): decode, entries, follow-up,
/// parameters, then [`build_strided`]. `Err` says why it is left as is.
fn raise_node(
    graph: &mut Graph,
    ix: NodeIndex,
    op: SliceOp,
    format: Format,
) -> std::result::Result<String, String> {
    let ir = format == Format::OpenVino;
    let sn = slice_node::decode(graph, ix, op).map_err(|e| format!("left as is: {e}"))?;
    // Runtimes that disagree on the result (issue 42, pattern G): a StridedSlice would pick one.
    if let Some(w) = slice_node::runtime_split_warning(graph, None, ix, op) {
        return Err(format!("left as is: {w}"));
    }
    let constant = sn.plan.is_constant();
    let (flavour, clamp) = if ir {
        (Flavour::Ov, Clamp::Ov)
    } else {
        (Flavour::Tf, Clamp::Tf)
    };
    let rank = sn.plan.input_rank;
    // Starts/ends taken at run time: the element each plan entry (one per input axis, in
    // order) reads, as the decoder found.
    let prov = (!constant).then_some(&sn.provenance);
    let dims = rewrite::known_dims(graph, sn.data).unwrap_or_else(|| vec![None; rank]);
    let static_dims: Option<Vec<u64>> = dims.iter().copied().collect();
    let old_sel = match &static_dims {
        Some(_) if !constant => None,
        Some(d) => {
            Some(rewrite::select(&sn.plan, d, op.clamp()).map_err(|e| format!("left as is: {e}"))?)
        }
        None => None,
    };
    let unlowered = (ir && !constant)
        .then(|| raise_lowered(graph, ix, &sn, &dims, format))
        .flatten();
    let (ents, single, (follow, evs, kept_note), params) = match unlowered {
        Some(u) => u,
        None => {
            let (ents, single, out_dims) = slice_entries(graph, ix, &sn, op, &dims, ir)?;
            let f = follow_and_events(graph, ix, &out_dims, &single, &ents, format);
            let params = match prov {
                None => None,
                Some(prov) => Some(run_time_params(graph, ix, &sn, prov, &ents, &dims, ir)?),
            };
            (ents, single, f, params)
        }
    };
    let mut roots = inputs_from(graph, &[Some(ix)], 1);
    roots.extend(inputs_from(graph, &[follow.last, follow.middle], 1));
    let src = Source {
        data: sn.data,
        rank,
        flavour,
        clamp,
        static_dims,
        old_sel,
        ents,
        single,
        slice: Some(ix),
        params,
    };
    let what = build_strided(graph, src, follow.last, evs, format, kept_note)?;
    if let Some(m) = follow.middle {
        graph.remove_node_lazily(m);
    }
    remove_orphans(graph, roots);
    Ok(what)
}

/// What a Slice raises with: entries, single elements, follow-up and events, run-time params.
type Raising = (
    Vec<Ent>,
    Vec<Option<i64>>,
    (Follow, Vec<Ev>, &'static str),
    Option<Params>,
);

/// Slice `ix` as `lower` built it from a StridedSlice with begin/end taken at run time
/// ([`unlower::unlower`]), when the StridedSlice entries raised read that begin and end in
/// place: its entries and the StridedSlice's own begin and end as the parameters.
fn raise_lowered(
    graph: &Graph,
    ix: NodeIndex,
    sn: &slice_node::SliceNode,
    dims: &[Option<u64>],
    format: Format,
) -> Option<Raising> {
    let u = unlower::unlower(graph, ix, sn.data, dims)?;
    let rank = dims.len();
    let declared = rewrite::known_dims(graph, OutletId { node: ix, port: 0 });
    let out_dims: Vec<Option<u64>> = (0..rank)
        .map(|a| {
            let d = declared.as_ref().and_then(|d| d.get(a).copied().flatten());
            d.or(u.single[a].map(|_| 1))
        })
        .collect();
    let f = follow_and_events(graph, ix, &out_dims, &u.single, &u.ents, format);
    // A run-time shrink is said only as a shrink: its entry has no end.
    let removed = |a: usize| f.1.contains(&Ev::Remove(a));
    if (0..rank).any(|a| u.single[a].is_some() && !removed(a)) {
        return None;
    }
    let mut cols = raising::columns_in_place(&f.1, &u.ents, u.n)?;
    if raising::ov_cpu_entries_short(&f.1, &cols) {
        // Every axis named (the events after the first `n` keep whole axes): begin and end
        // get constants appended for them (not read in place any more).
        cols = (0..f.1.len()).map(Some).collect();
    }
    let params = Params {
        cols: Some(cols),
        start: u.begin,
        stop: u.end,
        n: u.n,
        axes: vec![0; u.n],
        dims: dims.to_vec(),
        clamp_begin: false,
    };
    Some((u.ents, u.single, f, Some(params)))
}

/// The StridedSlice entry of each axis of Slice `ix`, the element each selects when it selects
/// exactly one (`single`), and the Slice's output dims where known.
#[allow(clippy::type_complexity)]
fn slice_entries(
    graph: &Graph,
    ix: NodeIndex,
    sn: &slice_node::SliceNode,
    op: SliceOp,
    dims: &[Option<u64>],
    ir: bool,
) -> std::result::Result<(Vec<Ent>, Vec<Option<i64>>, Vec<Option<u64>>), String> {
    let rank = sn.plan.input_rank;
    let prov = (!sn.plan.is_constant()).then_some(&sn.provenance);
    let declared_out = rewrite::known_dims(graph, OutletId { node: ix, port: 0 });
    let mut ents = Vec::with_capacity(rank);
    let mut single: Vec<Option<i64>> = Vec::with_capacity(rank);
    let mut out_dims: Vec<Option<u64>> = Vec::with_capacity(rank);
    for (k, entry) in sn.plan.axes.iter().enumerate() {
        let AxisPlan::Range {
            axis,
            begin,
            end,
            step,
            ..
        } = *entry
        else {
            return Err("internal: a Slice plan with a new or shrunk axis".into());
        };
        let s = step.ok_or("left as is: non-constant steps")?;
        let dynamic = begin == Bound::Dynamic || end == Bound::Dynamic;
        if let (Some(d), false) = (dims[axis], dynamic) {
            let ResolvedAxis::Range {
                start, step, len, ..
            } = rewrite::resolve_entry(*entry, d, op.clamp())
                .map_err(|e| format!("left as is: {e}"))?
            else {
                return Err("internal: a range resolved to something else".into());
            };
            ents.push(exact_ent(rewrite::exact_range(start, step, len, d)));
            single.push((len == 1).then_some(start));
            out_dims.push(Some(len));
        } else {
            if !ir {
                let lo = rewrite::lower_bound(graph, sn.data, axis);
                if let Some(why) = rewrite::clamp_ambiguity(begin, s, lo) {
                    return Err(format!("left as is: {why}"));
                }
            }
            // The extreme `lower` writes for an edge (the same for every dim) is a mask again.
            let edge = |v: i64, is_begin: bool| {
                v == rewrite::bound_value(Bound::Edge, is_begin, s).unwrap_or(0)
                    && (v == i64::MAX || v == i64::MIN)
            };
            let val = |b: Bound, is_begin: bool, src: Option<&Vec<Option<usize>>>| match b {
                Bound::Index(v) if edge(v, is_begin) => Ok((0, true, None)),
                Bound::Index(v) => Ok((v, false, None)),
                Bound::Edge => Ok((0, true, None)),
                Bound::Dynamic => match src.and_then(|s| s.get(k).copied().flatten()) {
                    Some(j) => Ok((0, false, Some(j))),
                    None => Err("internal: a non-constant bound without its source".to_string()),
                },
            };
            let (b, bm, bs) = val(begin, true, prov.map(|p| &p.begin))?;
            let (e, em, es) = val(end, false, prov.map(|p| &p.end))?;
            ents.push(Ent {
                begin: b,
                end: e,
                stride: s,
                begin_mask: bm,
                end_mask: em,
                begin_src: bs,
                end_src: es,
            });
            let one = match (begin, end) {
                (Bound::Index(b), Bound::Index(e)) if s > 0 && b >= 0 && e == b.wrapping_add(1) => {
                    Some(b)
                }
                (Bound::Index(b), Bound::Index(e)) if s > 0 && b < -1 && e == b + 1 => Some(b),
                (Bound::Index(-1), Bound::Edge | Bound::Index(i64::MAX)) if s > 0 => Some(-1),
                _ => None,
            };
            single.push(one);
            out_dims.push(
                declared_out
                    .as_ref()
                    .and_then(|d| d.get(axis).copied().flatten())
                    .or(one.map(|_| 1)),
            );
        }
    }
    Ok((ents, single, out_dims))
}

/// The entry of an exact range ([`rewrite::exact_range`]; `None`: the whole axis).
fn exact_ent(range: Option<(i64, i64, i64)>) -> Ent {
    let ent = |begin, end, stride, begin_mask, end_mask| Ent {
        begin,
        end,
        stride,
        begin_mask,
        end_mask,
        begin_src: None,
        end_src: None,
    };
    match range {
        None => ent(0, 0, 1, true, true),
        Some((a, i64::MIN, c)) => ent(a, 0, c, false, true),
        Some((a, b, c)) => ent(a, b, c, false, false),
    }
}

/// The Slice's starts and ends taken at run time, for the StridedSlice's begin and end.
fn run_time_params(
    graph: &Graph,
    ix: NodeIndex,
    sn: &slice_node::SliceNode,
    prov: &semantics::Provenance,
    ents: &[Ent],
    dims: &[Option<u64>],
    ir: bool,
) -> std::result::Result<Params, String> {
    let input = |port: Option<usize>| {
        port.and_then(|p| graph.input(ix, p))
            .ok_or("left as is: starts or ends missing")
    };
    // Per element, the input axis it slices (entry `a` of a Slice plan is axis `a`).
    let n = prov.len;
    let mut axes = vec![0; n];
    for (a, p) in prov.begin.iter().enumerate() {
        if let Some(j) = p {
            axes[*j] = a;
        }
    }
    // TensorFlow clamps a reverse begin below -dim to -1 (nothing selected), Slice to the
    // first element: such begins are raised to -dim first.
    let clamp_begin = !ir && ents.iter().any(|e| e.begin_src.is_some() && e.stride < 0);
    Ok(Params {
        cols: None,
        start: input(sn.ports().begin)?,
        stop: input(sn.ports().end)?,
        n,
        axes,
        dims: dims.to_vec(),
        clamp_begin,
    })
}

/// A reshaping node that `lower` made out of a StridedSlice that sliced nothing (only new and
/// removed size-1 axes) becomes a StridedSlice again: the whole input, with those axes.
fn raise_lone_shaping(
    graph: &mut Graph,
    ix: NodeIndex,
    format: Format,
) -> std::result::Result<String, String> {
    if !is_shaping(graph, ix, format) {
        return Err("left as is: not a reshaping node".into());
    }
    let data = graph
        .input(ix, 0)
        .ok_or("left as is: the reshaping node has no data input")?;
    let ir = format == Format::OpenVino;
    let (flavour, clamp) = if ir {
        (Flavour::Ov, Clamp::Ov)
    } else {
        (Flavour::Tf, Clamp::Tf)
    };
    let dims = rewrite::known_dims(graph, data).ok_or("left as is: input rank unknown")?;
    let rank = dims.len();
    let static_dims: Option<Vec<u64>> = dims.iter().copied().collect();
    let old_sel = static_dims.as_ref().map(|d| {
        let n: u64 = d.iter().product();
        ((0..n).collect::<Vec<u64>>(), d.clone())
    });
    let whole = Ent::WHOLE;
    // A removed axis is one of size 1 (follow_events checks it): its only index is 0.
    let single = vec![Some(0); rank];
    let (evs, _) = follow_events(graph, ix, &dims, &single, format)
        .ok_or("left as is: not only size-1 axes added or removed, or not known to be")?;
    let src = Source {
        data,
        rank,
        flavour,
        clamp,
        static_dims,
        old_sel,
        ents: vec![whole; rank],
        single,
        slice: None,
        params: None,
    };
    let roots = inputs_from(graph, &[Some(ix)], 1);
    let what = build_strided(graph, src, Some(ix), evs, format, "")?;
    remove_orphans(graph, roots);
    Ok(what)
}

/// What a StridedSlice is raised from: the data, its per-axis entries, and (for translation
/// validation) what the old subgraph selects before any reshaping.
struct Source {
    data: OutletId,
    rank: usize,
    flavour: Flavour,
    clamp: Clamp,
    static_dims: Option<Vec<u64>>,
    old_sel: Option<rewrite::Selection>,
    ents: Vec<Ent>,
    single: Vec<Option<i64>>,
    /// The Slice node, when there is one.
    slice: Option<NodeIndex>,
    /// The Slice's starts and ends when some entries take them at run time.
    params: Option<Params>,
}

/// A Slice's starts and ends taken at run time.
struct Params {
    /// The StridedSlice entries, when they are chosen to read the parameters in place (or one
    /// per event, appended to them: [`raising::ov_cpu_entries_short`]); `None`: one per event
    /// (no ellipsis: OpenVINO's CPU plugin cannot run some with run-time bounds).
    cols: Option<Vec<Option<usize>>>,
    start: OutletId,
    stop: OutletId,
    /// Their length.
    n: usize,
    /// Per element, the input axis it slices.
    axes: Vec<usize>,
    /// The input dims where known.
    dims: Vec<Option<u64>>,
    /// Raise every start below `-dim` to `-dim` (TensorFlow clamping of reverse begins).
    clamp_begin: bool,
}

/// A StridedSlice begin or end: `consts`, except the elements with a source, taken from
/// `input` (the Slice's starts or ends) at run time. Without constants and in order, `input`
/// itself (as i64); else a `Gather` from `Concat(input, constants)`.
#[allow(clippy::too_many_arguments)]
fn assemble(
    b: &mut Builder,
    p: &Params,
    input: OutletId,
    data: Option<OutletId>,
    what: &str,
    consts: &[i64],
    srcs: &[Option<usize>],
    masked: &[bool],
) -> std::result::Result<OutletId, String> {
    let n = p.n as u64;
    // Every element read in place, and the others masked: `input` itself (OpenVINO takes
    // begin/end of any integer type).
    let in_place = srcs.len() == p.n
        && (srcs.iter().zip(masked).enumerate()).all(|(k, (s, &m))| s.map_or(m, |j| j == k));
    if in_place && data.is_none() && b.format == Format::OpenVino {
        return Ok(input);
    }
    let mut x = b.as_i64(input, Some(n));
    if let Some(data) = data {
        // max(start, -dim), as Where(start < -dim, -dim, start).
        let d = b.dims_at_run_time(data, &p.dims, &p.axes);
        let neg = b.std_op("Neg", &[d], Vec::new(), rewrite::i64_vec(Some(n)));
        let below = b.std_op("Less", &[x, neg], Vec::new(), rewrite::bool_vec(Some(n)));
        x = b.std_op(
            "Where",
            &[below, neg, x],
            Vec::new(),
            rewrite::i64_vec(Some(n)),
        );
    }
    let in_order = srcs.len() == p.n && srcs.iter().enumerate().all(|(k, s)| *s == Some(k));
    if in_order {
        return Ok(x);
    }
    // Read in place, then constants only (the entries `raise_lowered` appends): a Concat does.
    let (head, tail) = srcs.split_at(p.n.min(srcs.len()));
    if p.cols.is_some()
        && head.len() == p.n
        && (head.iter().zip(masked).enumerate()).all(|(k, (s, &m))| s.map_or(m, |j| j == k))
        && tail.iter().all(Option::is_none)
    {
        let c = b.const_i64(&format!("{what}_appended"), &consts[p.n..]);
        return Ok(b.concat0(&[x, c], Some(srcs.len() as u64)));
    }
    let mut pool: Vec<i64> = Vec::new();
    let idx: Vec<i64> = srcs
        .iter()
        .zip(consts)
        .map(|(s, &c)| match s {
            Some(j) => *j as i64,
            None => {
                let k = pool.iter().position(|&v| v == c).unwrap_or_else(|| {
                    pool.push(c);
                    pool.len() - 1
                });
                (p.n + k) as i64
            }
        })
        .collect();
    let all = if pool.is_empty() {
        x
    } else {
        let c = b.const_i64(&format!("{what}_constants"), &pool);
        b.concat0(&[x, c], Some(n + pool.len() as u64))
    };
    Ok(b.gather0(all, &format!("{what}_index"), &idx))
}

/// What [`emit_strided`] builds from.
struct Strided<'a> {
    data: OutletId,
    spec: &'a StridedSliceSpec,
    evs: &'a [Ev],
    /// Per StridedSlice entry, its event (`None`: an ellipsis).
    cols: &'a [Option<usize>],
    ents: &'a [Ent],
    params: Option<&'a Params>,
    ir: bool,
}

/// Builds the StridedSlice of `cx.spec` (its begin and end assembled at run time where the
/// Slice's are) and puts it in the place of `last`.
fn emit_strided(
    graph: &mut Graph,
    format: Format,
    last: NodeIndex,
    cx: &Strided,
) -> std::result::Result<(), String> {
    let out_value = graph
        .node(last)
        .outputs
        .first()
        .cloned()
        .ok_or("left as is: no output")?;
    let name = graph.node(last).name.clone();
    let col = |f: &dyn Fn(usize) -> i64| -> Vec<i64> { (0..cx.cols.len()).map(f).collect() };
    let begin = col(&|i| cx.spec.begin[i].unwrap_or(0));
    let end = col(&|i| cx.spec.end[i].unwrap_or(0));
    let stride = col(&|i| cx.spec.strides.as_ref().and_then(|s| s[i]).unwrap_or(1));
    let masks: Vec<(&str, Vec<i64>)> = [
        ("begin_mask", &cx.spec.begin_mask),
        ("end_mask", &cx.spec.end_mask),
        ("new_axis_mask", &cx.spec.new_axis_mask),
        ("shrink_axis_mask", &cx.spec.shrink_axis_mask),
        ("ellipsis_mask", &cx.spec.ellipsis_mask),
    ]
    .into_iter()
    .map(|(n, m)| (n, m.iter().map(|&b| i64::from(b)).collect()))
    .collect();
    let src_of = |f: fn(&Ent) -> Option<usize>| -> Vec<Option<usize>> {
        cx.cols
            .iter()
            .map(|c| match c.map(|k| cx.evs[k]) {
                Some(Ev::Keep(a)) => f(&cx.ents[a]),
                _ => None,
            })
            .collect()
    };
    let begin_src: Vec<Option<usize>> = (cx.cols.iter())
        .map(|c| match c.map(|k| cx.evs[k]) {
            Some(Ev::Keep(a) | Ev::Remove(a)) => cx.ents[a].begin_src,
            _ => None,
        })
        .collect();
    let end_src = src_of(|e| e.end_src);
    let sp = cx.spec;
    let n = cx.cols.len();
    let free = |k: usize| sp.new_axis_mask[k] || sp.ellipsis_mask[k];
    let begin_free: Vec<bool> = (0..n).map(|k| sp.begin_mask[k] || free(k)).collect();
    let end_free: Vec<bool> = (0..n)
        .map(|k| sp.end_mask[k] || sp.shrink_axis_mask[k] || free(k))
        .collect();
    let mut b = Builder::new(graph, format, last);
    let bc = match cx.params {
        Some(p) if begin_src.iter().any(Option::is_some) => {
            let clamp_data = p.clamp_begin.then_some(cx.data);
            Some(assemble(
                &mut b,
                p,
                p.start,
                clamp_data,
                "begin",
                &begin,
                &begin_src,
                &begin_free,
            )?)
        }
        _ => None,
    };
    let bc = bc.unwrap_or_else(|| b.const_i64("begin", &begin));
    // An end every entry ignores is still the one read in place (the graph as it was).
    let all_free =
        cx.ir && end_free.len() == cx.params.map_or(0, |p| p.n) && end_free.iter().all(|&f| f);
    let ec = match cx.params {
        Some(p) if end_src.iter().any(Option::is_some) || all_free => Some(assemble(
            &mut b, p, p.stop, None, "end", &end, &end_src, &end_free,
        )?),
        _ => None,
    };
    let ec = ec.unwrap_or_else(|| b.const_i64("end", &end));
    let sc = b.const_i64("strides", &stride);
    let attrs = masks
        .iter()
        .map(|(n, m)| {
            let v = if cx.ir {
                rewrite::ov_list(m)
            } else {
                Attr::Int(m.iter().enumerate().map(|(i, &x)| x << i).sum::<i64>())
            };
            (n.to_string(), v)
        })
        .collect();
    let node = b.op(
        Some(name.into()),
        slice_node::STRIDED_SLICE,
        if cx.ir { "opset1" } else { TF_DOMAIN },
        &[Some(cx.data), Some(bc), Some(ec), Some(sc)],
        attrs,
        Some(out_value),
        Default::default(),
    );
    let _ = rewrite::take_over(graph, last, node);
    Ok(())
}

/// Builds the StridedSlice that replaces `src.slice` followed by `follow` (`evs` its events).
fn build_strided(
    graph: &mut Graph,
    src: Source,
    follow: Option<NodeIndex>,
    evs: Vec<Ev>,
    format: Format,
    kept_note: &str,
) -> std::result::Result<String, String> {
    let ir = format == Format::OpenVino;
    let Source {
        data,
        rank,
        flavour,
        clamp,
        static_dims,
        old_sel,
        ents,
        single,
        slice,
        params,
    } = src;

    // The StridedSlice spec, one entry per event.
    let cols = match &params {
        Some(p) => (p.cols.clone()).unwrap_or_else(|| (0..evs.len()).map(Some).collect()),
        None => raising::columns(&evs, &ents),
    };
    let spec = raising::spec(&evs, &ents, &single, &cols)?;
    if !ir && cols.len() > 63 {
        return Err("left as is: more than 63 entries do not fit TensorFlow mask bits".into());
    }
    let new_plan = semantics::strided_slice(&spec, flavour, rank)
        .map_err(|e| format!("internal: the StridedSlice built is invalid: {e}"))?;

    // Translation validation.
    let mut validated = false;
    if let (Some(d), Some((idx, shape))) = (&static_dims, &old_sel) {
        let want = (idx.clone(), shape_after(shape, &evs));
        let got = rewrite::select(&new_plan, d, clamp).map_err(|e| format!("left as is: {e}"))?;
        rewrite::compare(&want, &got).map_err(|e| format!("left as is: {e}"))?;
        validated = true;
    }

    let follow_op = follow.map(|f| graph.node(f).op_type.clone());
    let cx = Strided {
        data,
        spec: &spec,
        evs: &evs,
        cols: &cols,
        ents: &ents,
        params: params.as_ref(),
        ir,
    };
    let last = follow.or(slice).ok_or("internal: nothing to replace")?;
    emit_strided(graph, format, last, &cx)?;
    if let (Some(_), Some(s)) = (follow, slice) {
        graph.remove_node_lazily(s);
    }
    let note = if validated {
        ""
    } else if params.is_some() {
        " (starts/ends not constant: begin/end assembled from them; not validated)"
    } else {
        " (input shape not static: not validated)"
    };
    let with = match (slice, follow_op) {
        (Some(_), Some(op)) => format!(" with the {op} after it"),
        (None, Some(op)) => format!(" from the {op} that lower made of one"),
        _ => String::new(),
    };
    Ok(format!("raised to StridedSlice{with}{kept_note}{note}"))
}
