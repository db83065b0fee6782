//! Pass `lower`: each StridedSlice (OpenVINO `StridedSlice-1`, ONNX custom-domain TensorFlow-style
//! `StridedSlice`) becomes one `Slice` (OpenVINO `Slice-8`, ONNX `Slice-10+`) over the axes it
//! slices, followed by at most one `Reshape` that inserts its new axes and removes its shrunk
//! ones (or, where a Reshape target cannot say it, `Squeeze`/`Unsqueeze`, reported). The
//! Reshape target holds known dims and `0` copies of dims in place; never `-1`, which runtimes
//! cannot infer on an empty tensor.
//!
//! Parameters come from the plan: on an axis of known size they are the exact resolved
//! `start/stop/step` (so the clamping rules of the two ops cannot differ); on an axis of
//! unknown size they are the plan's bounds, `Edge` becoming `0`/`INT64_MAX` (forward) or
//! `INT64_MAX`/`INT64_MIN` (reverse), a shrink of `i` becoming `i:i+1` (`-1:INT64_MAX` for -1).
//! A TensorFlow reverse range starting below `-dim` is empty where Slice takes one element: on
//! an axis of unknown size (or from a non-constant begin) the range is guarded with the dim at
//! run time, start and stop becoming `0:0` when `begin < -dim`. An OpenVINO shrink of a
//! run-time index is clamped into the axis first, as the CPU plugin does.
//!
//! When the input shape is static, the rewrite is kept only if the new subgraph selects the same
//! elements in the same order with the same output shape (translation validation).

use crate::error::{Error, Result};
use crate::formats::{Format, Model};
use crate::ir::{Attr, DeclaredDim, Graph, OutletId};
use crate::passes::eval;
use crate::passes::rewrite::{self, Builder};
use crate::report::{Change, PassReport};
use crate::semantics::{self, AxisPlan, Bound, Clamp, ResolvedAxis, SlicePlan};
use crate::shape::slice_node::{self, SliceOp};
use petgraph::stable_graph::NodeIndex;

/// A Slice parameter: a constant, or taken at run time from the StridedSlice's own inputs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Val {
    Const(i64),
    /// `begin[j]`.
    Begin(usize),
    /// `end[j]`.
    End(usize),
    /// The stop of a shrink of `begin[j]`: `begin[j] + 1`, or `INT64_MAX` when `begin[j]` is -1.
    AfterBegin(usize),
    /// OpenVINO: the element kept by run-time shrink `k` (of the list given to
    /// `dynamic_bounds`): its begin made non-negative and clamped into `[0, dim - 1]`, as the
    /// CPU plugin does.
    Kept(usize),
    /// The element after `Kept(k)`.
    AfterKept(usize),
}

impl Val {
    fn constant(self) -> Option<i64> {
        match self {
            Val::Const(v) => Some(v),
            _ => None,
        }
    }
}

/// One sliced axis: `(axis, start, stop, step, guarded)`. Guarded: a TensorFlow reverse range
/// whose begin may lie below `-dim` (non-constant, or a negative constant on an axis of unknown
/// size), where TensorFlow selects nothing and Slice the first element: start and stop become
/// `0:0` at run time when `start < -dim`.
type SliceAxis = (usize, Val, Val, i64, bool);

/// True when `begin:end:step` selects nothing on an axis of any size: both indices of one sign
/// (so adding the dim to negative ones and clamping keep their order) and `end` not past
/// `begin` in the step's direction.
fn provably_empty(begin: Bound, end: Bound, step: i64) -> bool {
    match (begin, end) {
        (Bound::Index(b), Bound::Index(e)) if (b < 0) == (e < 0) => {
            if step > 0 {
                e <= b
            } else {
                b <= e
            }
        }
        _ => false,
    }
}

/// The Slice's start and stop inputs when some are computed at run time: from the
/// StridedSlice's non-constant begin and end (`params`, of lengths `lens`; `None` when they are
/// constant), OpenVINO shrinks clamped into the axis, TensorFlow reverse ranges guarded against
/// a begin below `-dim`. One pool `Concat(begin, end, begin + 1 with -1 → INT64_MAX, kept
/// shrink indices and the next ones, constants)` in i64, and a `Gather` of it for the starts
/// and one for the stops; guarded ranges take theirs from a second pool after it.
fn dynamic_bounds(
    b: &mut Builder,
    sliced: &[SliceAxis],
    params: Option<(OutletId, OutletId)>,
    lens: (usize, usize),
    rt: &RunTime,
) -> std::result::Result<(OutletId, OutletId), String> {
    let ir = b.format == Format::OpenVino;
    let v = |n: u64| rewrite::i64_vec(Some(n));
    let (nb, ne) = match params {
        Some(_) => (lens.0 as u64, lens.1 as u64),
        None => (0, 0),
    };
    let mut parts = Vec::new();
    let mut begin = None;
    if let Some((pb, pe)) = params {
        let bi = b.as_i64(pb, Some(nb));
        let ei = b.as_i64(pe, Some(ne));
        parts.extend([bi, ei]);
        begin = Some(bi);
    }
    let needs_begin = "internal: a run-time bound without its begin input";
    let mut consts: Vec<i64> = Vec::new();
    let after_base = nb + ne;
    let needs_after = sliced.iter().any(|a| matches!(a.2, Val::AfterBegin(_)));
    if needs_after {
        let begin = begin.ok_or(needs_begin)?;
        // begin + 1, except where begin is -1 (the last element): INT64_MAX.
        let one = b.const_i64("one", &[1]);
        let minus_one = b.const_i64("minus_one", &[-1]);
        // OpenVINO's CPU plugin computes this Select in f32 and narrows to i32 (2^31 - 2
        // comes out as -2^31): 2^30 is exact there and past the end of any dim it runs.
        let max = b.const_i64("last", &[if ir { 1 << 30 } else { i64::MAX }]);
        let plus = b.std_op("Add", &[begin, one], Vec::new(), v(nb));
        let last = b.std_op(
            "Equal",
            &[begin, minus_one],
            Vec::new(),
            rewrite::bool_vec(Some(nb)),
        );
        let sel = if ir { "Select" } else { "Where" };
        let after = b.std_op(sel, &[last, max, plus], Vec::new(), v(nb));
        parts.push(after);
    }
    let kept_base = after_base + if needs_after { nb } else { 0 };
    let m = rt.shrinks.len() as u64;
    if m > 0 {
        // kept = min(max(b < 0 ? b + dim : b, 0), dim - 1), with b the shrink's begin and dim
        // its axis' size at run time; then kept + 1.
        let begin = begin.ok_or(needs_begin)?;
        let js: Vec<i64> = rt.shrinks.iter().map(|&(j, _)| j as i64).collect();
        let axes: Vec<usize> = rt.shrinks.iter().map(|&(_, a)| a).collect();
        let bs = b.gather0(begin, "shrink_begin_index", &js);
        let d = b.dims_at_run_time(rt.data, &rt.dims, &axes);
        let zero = b.const_i64("zero", &[0]);
        let one = b.const_i64("one", &[1]);
        let neg = b.std_op("Less", &[bs, zero], Vec::new(), rewrite::bool_vec(Some(m)));
        let wrapped = b.std_op("Add", &[bs, d], Vec::new(), v(m));
        let norm = b.std_op("Select", &[neg, wrapped, bs], Vec::new(), v(m));
        let low = b.std_op("Maximum", &[norm, zero], Vec::new(), v(m));
        let last = b.std_op("Subtract", &[d, one], Vec::new(), v(m));
        let kept = b.std_op("Minimum", &[low, last], Vec::new(), v(m));
        let after = b.std_op("Add", &[kept, one], Vec::new(), v(m));
        parts.push(kept);
        parts.push(after);
    }
    let const_base = kept_base + 2 * m;
    let mut index_of = |v: Val| -> i64 {
        (match v {
            Val::Begin(j) => j as u64,
            Val::End(j) => nb + j as u64,
            Val::AfterBegin(j) => after_base + j as u64,
            Val::Kept(k) => kept_base + k as u64,
            Val::AfterKept(k) => kept_base + m + k as u64,
            Val::Const(c) => {
                let k = consts.iter().position(|&x| x == c).unwrap_or_else(|| {
                    consts.push(c);
                    consts.len() - 1
                });
                const_base + k as u64
            }
        }) as i64
    };
    let mut start_ix: Vec<i64> = sliced.iter().map(|a| index_of(a.1)).collect();
    let mut stop_ix: Vec<i64> = sliced.iter().map(|a| index_of(a.2)).collect();
    if !consts.is_empty() {
        if ir {
            // OpenVINO's CPU plugin narrows Slice bounds computed at run time to i32 (INT64_MAX
            // becomes -1) and mishandles i32::MIN: the edges go in as ±2^30, the same for any
            // dim it runs.
            for c in &mut consts {
                *c = (*c).clamp(-(1 << 30), 1 << 30);
            }
        }
        parts.push(b.const_i64("bounds", &consts));
    }
    let total = const_base + consts.len() as u64;
    let mut pool = if parts.len() == 1 {
        parts[0]
    } else {
        b.concat0(&parts, Some(total))
    };
    let guarded: Vec<usize> = (0..sliced.len()).filter(|&k| sliced[k].4).collect();
    if !guarded.is_empty() {
        // TensorFlow selects nothing from a reverse begin below -dim: there start and stop
        // become 0:0 (empty under Slice clamping), elsewhere they stay.
        let g = guarded.len() as u64;
        let pick = |ix: &[i64]| guarded.iter().map(|&k| ix[k]).collect::<Vec<i64>>();
        let bs = b.gather0(pool, "guard_start_index", &pick(&start_ix));
        let es = b.gather0(pool, "guard_stop_index", &pick(&stop_ix));
        let axes: Vec<usize> = guarded.iter().map(|&k| sliced[k].0).collect();
        let d = b.dims_at_run_time(rt.data, &rt.dims, &axes);
        let neg = b.std_op("Neg", &[d], Vec::new(), v(g));
        let below = b.std_op("Less", &[bs, neg], Vec::new(), rewrite::bool_vec(Some(g)));
        let zero = b.const_i64("zero", &[0]);
        let bs = b.std_op("Where", &[below, zero, bs], Vec::new(), v(g));
        let es = b.std_op("Where", &[below, zero, es], Vec::new(), v(g));
        pool = b.concat0(&[pool, bs, es], Some(total + 2 * g));
        for (i, &k) in guarded.iter().enumerate() {
            start_ix[k] = (total + i as u64) as i64;
            stop_ix[k] = (total + g + i as u64) as i64;
        }
    }
    let start = b.gather0(pool, "start_index", &start_ix);
    let stop = b.gather0(pool, "stop_index", &stop_ix);
    Ok((start, stop))
}

/// What the bounds computed at run time need besides the parameters: the OpenVINO shrinks
/// whose index is taken at run time, `(j, axis)` for a shrink of `begin[j]` on input `axis`,
/// and the data input with its known dims (for dims at run time).
struct RunTime {
    shrinks: Vec<(usize, usize)>,
    data: OutletId,
    dims: Vec<Option<u64>>,
}

/// How the output is reshaped after the Slice.
enum Shaping {
    None,
    /// Target, and whether its zeros are literal (`allowzero` 1 / `special_zero` false).
    Reshape(Vec<i64>, bool),
    /// Squeeze these axes of the Slice output, then unsqueeze these axes of the result.
    SqueezeUnsqueeze(Vec<i64>, Vec<i64>),
}

/// Lowers every StridedSlice of `model`.
pub fn run(model: &mut Model, report: &mut PassReport) -> Result<()> {
    let format = model.format();
    let opset = model.onnx_opset();
    let order = model
        .graph()
        .topo_order()
        .map_err(|c| Error::cycle(model.path(), c))?;
    for ix in order {
        let graph = model.graph_mut();
        if !graph.is_live(ix) {
            continue;
        }
        let Some(op) = slice_node::classify(graph, ix, format, opset) else {
            continue;
        };
        if !matches!(op, SliceOp::OvStridedSlice | SliceOp::TfStridedSlice) {
            continue;
        }
        let (name, op_type) = {
            let n = graph.node(ix);
            (n.name.clone(), n.op_type.clone())
        };
        let before = graph.node(ix).outputs.first().map(|v| v.name.clone());
        let warning = rewrite::ov_shrink_begin_mask_warning(graph, ix, op);
        match lower_node(graph, ix, op, format, opset) {
            Ok(what) => {
                report.warnings.extend(warning);
                report.change(|| Change {
                    node: name.into(),
                    op: op_type.into(),
                    what,
                    before: before.map(Into::into),
                    after: None,
                });
            }
            Err(why) => report.skip(|| Change::note(name, op_type, why)),
        }
    }
    model.graph_mut().flush_detached();
    Ok(())
}

/// The Slice plan of `axes` on an input of rank `rank` (Slice clamping).
fn slice_plan(axes: &[SliceAxis], rank: usize) -> std::result::Result<SlicePlan, String> {
    let c = |f: fn(&SliceAxis) -> Val| -> Vec<Option<i64>> {
        axes.iter().map(|a| f(a).constant()).collect()
    };
    let ax: Vec<i64> = axes.iter().map(|a| a.0 as i64).collect();
    let steps: Vec<Option<i64>> = axes.iter().map(|a| Some(a.3)).collect();
    semantics::ov_slice8(&c(|a| a.1), &c(|a| a.2), Some(&steps), Some(&ax), rank)
        .map_err(|e| format!("internal: the Slice built is invalid: {e}"))
}

fn lower_node(
    graph: &mut Graph,
    ix: NodeIndex,
    op: SliceOp,
    format: Format,
    opset: i64,
) -> std::result::Result<String, String> {
    if format == Format::Onnx && opset < 10 {
        return Err("left as is: Slice with steps needs ONNX opset 10 or later".into());
    }
    let sn = slice_node::decode(graph, ix, op).map_err(|e| format!("left as is: {e}"))?;
    let constant = sn.plan.is_constant();
    // Per plan entry, the begin/end elements it reads, when some are taken at run time.
    let sources: Vec<(Option<usize>, Option<usize>)> = if constant {
        vec![(None, None); sn.plan.axes.len()]
    } else {
        let p = &sn.provenance;
        p.begin.iter().copied().zip(p.end.iter().copied()).collect()
    };
    let lens = if constant {
        (0, 0)
    } else {
        (sn.provenance.len, sn.provenance.len)
    };
    let clamp = op.clamp();
    let rank = sn.plan.input_rank;
    let dims = rewrite::known_dims(graph, sn.data).unwrap_or_else(|| vec![None; rank]);
    let in_shape = slice_node::declared_shape(graph, sn.data)
        .unwrap_or_else(|| vec![DeclaredDim::Unknown; rank]);
    let static_dims: Option<Vec<u64>> = dims.iter().copied().collect();
    // Validate the old node first: an invalid one (shrink out of range...) is left alone.
    let old_sel = match &static_dims {
        Some(d) if constant => {
            Some(rewrite::select(&sn.plan, d, clamp).map_err(|e| format!("left as is: {e}"))?)
        }
        _ => None,
    };

    let mut sliced: Vec<SliceAxis> = Vec::new();
    let mut slice_out = in_shape.clone();
    // Output dims with the input axis each one comes from (None: a new axis).
    let mut out_dims: Vec<(DeclaredDim, Option<usize>)> = Vec::new();
    let mut shrunk: Vec<i64> = Vec::new();
    let mut new_axes: Vec<i64> = Vec::new();
    let mut runtime_shrinks: Vec<(usize, usize)> = Vec::new();
    let mut any_guarded = false;
    let err = |e: semantics::SliceError| format!("left as is: {e}");
    for (entry, &(begin_src, end_src)) in sn.plan.axes.iter().zip(&sources) {
        let dynamic = begin_src.is_some() || end_src.is_some();
        match *entry {
            AxisPlan::NewAxis => {
                new_axes.push(out_dims.len() as i64);
                out_dims.push((DeclaredDim::Known(1), None));
            }
            AxisPlan::Range {
                axis,
                begin,
                end,
                step,
                ..
            } => {
                let s = step.ok_or(
                    "left as is: non-constant strides (the edge a mask stands for depends on \
                     the stride's sign, and so does the clamping)",
                )?;
                if let (Some(d), false) = (dims[axis], dynamic) {
                    let ResolvedAxis::Range {
                        start, step, len, ..
                    } = rewrite::resolve_entry(*entry, d, clamp).map_err(err)?
                    else {
                        return Err("internal: a range resolved to something else".into());
                    };
                    if let Some((a, b, c)) = rewrite::exact_range(start, step, len, d) {
                        sliced.push((axis, Val::Const(a), Val::Const(b), c, false));
                    }
                    slice_out[axis] = DeclaredDim::Known(len);
                    out_dims.push((DeclaredDim::Known(len), Some(axis)));
                } else if begin == Bound::Edge && end == Bound::Edge && s == 1 && !dynamic {
                    out_dims.push((in_shape[axis].clone(), Some(axis)));
                } else if provably_empty(begin, end, s) {
                    // Empty whatever the dim: said as 0:0, which no runtime reads otherwise
                    // (ONNX Runtime, for one, takes an end of INT64_MAX on a reverse range as
                    // "to the start").
                    sliced.push((axis, Val::Const(0), Val::Const(0), 1, false));
                    slice_out[axis] = DeclaredDim::Known(0);
                    out_dims.push((DeclaredDim::Known(0), Some(axis)));
                } else {
                    // TensorFlow selects nothing from a reverse begin below -dim, Slice the
                    // first element: such a range is guarded with the dim at run time.
                    let guarded = clamp == Clamp::Tf
                        && s < 0
                        && (begin == Bound::Dynamic
                            || rewrite::clamp_ambiguity(
                                begin,
                                s,
                                rewrite::lower_bound(graph, sn.data, axis),
                            )
                            .is_some());
                    any_guarded |= guarded;
                    let val = |b: Bound, is_begin: bool, src: Option<usize>| match (b, src) {
                        (Bound::Dynamic, Some(j)) if is_begin => Ok(Val::Begin(j)),
                        (Bound::Dynamic, Some(j)) => Ok(Val::End(j)),
                        _ => rewrite::bound_value(b, is_begin, s)
                            .map(Val::Const)
                            .ok_or("internal: a non-constant bound without its source"),
                    };
                    sliced.push((
                        axis,
                        val(begin, true, begin_src)?,
                        val(end, false, end_src)?,
                        s,
                        guarded,
                    ));
                    slice_out[axis] = DeclaredDim::Unknown;
                    out_dims.push((DeclaredDim::Unknown, Some(axis)));
                }
            }
            AxisPlan::Shrink {
                axis, index: None, ..
            } => {
                let j = begin_src.ok_or("internal: a non-constant shrink without its source")?;
                shrunk.push(axis as i64);
                if format == Format::OpenVino {
                    // OpenVINO clamps an out-of-range shrink index into the axis (the CPU
                    // plugin, and the spec of begin); a Slice i:i+1 would select nothing.
                    let k = runtime_shrinks.len();
                    runtime_shrinks.push((j, axis));
                    sliced.push((axis, Val::Kept(k), Val::AfterKept(k), 1, false));
                } else {
                    sliced.push((axis, Val::Begin(j), Val::AfterBegin(j), 1, false));
                }
                slice_out[axis] = DeclaredDim::Known(1);
            }
            AxisPlan::Shrink {
                axis,
                index: Some(i),
                ..
            } => {
                shrunk.push(axis as i64);
                if let Some(d) = dims[axis] {
                    let ResolvedAxis::Shrink { index, .. } =
                        rewrite::resolve_entry(*entry, d, clamp).map_err(err)?
                    else {
                        return Err("internal: a shrink resolved to something else".into());
                    };
                    if d != 1 {
                        sliced.push((
                            axis,
                            Val::Const(index as i64),
                            Val::Const(index as i64 + 1),
                            1,
                            false,
                        ));
                    }
                } else {
                    sliced.push((
                        axis,
                        Val::Const(i),
                        Val::Const(if i == -1 {
                            i64::MAX
                        } else {
                            i.saturating_add(1)
                        }),
                        1,
                        false,
                    ));
                }
                slice_out[axis] = DeclaredDim::Known(1);
            }
        }
    }

    // Empty ranges first: tract 0.23 mis-optimizes a multi-axis Slice where a later axis of
    // size 1 becomes empty (PushSliceUp); the order of axes does not change a Slice's meaning.
    sliced.sort_by_key(|a| (a.1 != a.2 || a.1.constant().is_none(), a.0));

    // The Reshape target: known dims, 0 where the dim is copied from the same position, one -1.
    let shaping = if shrunk.is_empty() && new_axes.is_empty() {
        Shaping::None
    } else {
        // No `-1`: runtimes cannot infer it when the tensor is empty (a dynamic dim may be 0),
        // so a dim that is neither known nor copied in place falls back to Squeeze/Unsqueeze.
        let mut target = Vec::with_capacity(out_dims.len());
        let mut ok = true;
        for (j, (d, src)) in out_dims.iter().enumerate() {
            match d {
                DeclaredDim::Known(v) if *v > 0 => target.push(*v as i64),
                _ if *src == Some(j) => target.push(0),
                _ => ok = false,
            }
        }
        let all_known = out_dims
            .iter()
            .all(|(d, _)| matches!(d, DeclaredDim::Known(_)));
        let literal_ok = format == Format::OpenVino || opset >= 14;
        if ok {
            Shaping::Reshape(target, false)
        } else if all_known && literal_ok {
            // Every dim known but a 0 sits where no copy can give it: literal zeros.
            let t = out_dims
                .iter()
                .map(|(d, _)| match d {
                    DeclaredDim::Known(v) => *v as i64,
                    _ => 0,
                })
                .collect();
            Shaping::Reshape(t, true)
        } else {
            Shaping::SqueezeUnsqueeze(shrunk.clone(), new_axes.clone())
        }
    };

    // Translation validation on the index tensor.
    let mut validated = false;
    if let (Some(d), Some(old)) = (&static_dims, &old_sel) {
        let plan = slice_plan(&sliced, rank)?;
        let (idx, shape) =
            rewrite::select(&plan, d, Clamp::Ov).map_err(|e| format!("left as is: {e}"))?;
        let shape = match &shaping {
            Shaping::None => Ok(shape),
            Shaping::Reshape(t, literal) => eval::reshape_target(&shape, t, !literal),
            Shaping::SqueezeUnsqueeze(sq, un) => {
                let s = if sq.is_empty() {
                    Ok(shape)
                } else {
                    eval::squeeze_shape(&shape, sq)
                };
                s.and_then(|s| {
                    if un.is_empty() {
                        Ok(s)
                    } else {
                        eval::unsqueeze_shape(&s, un)
                    }
                })
            }
        }
        .map_err(|e| format!("left as is: translation validation: {e}"))?;
        rewrite::compare(old, &(idx, shape)).map_err(|e| format!("left as is: {e}"))?;
        validated = true;
    }

    // Build.
    let old = graph.node(ix).clone();
    let out_value = old
        .outputs
        .first()
        .cloned()
        .ok_or("left as is: the node has no output")?;
    let ir = format == Format::OpenVino;
    let mut b = Builder::new(graph, format, ix);
    let mut cur: OutletId = sn.data;
    let mut last: Option<NodeIndex> = None;
    let mut parts: Vec<&str> = Vec::new();
    let n_reshape_nodes = match &shaping {
        Shaping::None => 0,
        Shaping::Reshape(..) => 1,
        Shaping::SqueezeUnsqueeze(s, u) => usize::from(!s.is_empty()) + usize::from(!u.is_empty()),
    };
    let mut remaining = usize::from(!sliced.is_empty()) + n_reshape_nodes;
    let mut out_slot = Some(out_value);
    let final_name = old.name.clone();
    let next = |remaining: &mut usize, slot: &mut Option<crate::ir::Value>| {
        *remaining -= 1;
        if *remaining == 0 {
            (Some(final_name.clone()), slot.take())
        } else {
            (None, None)
        }
    };
    if !sliced.is_empty() {
        let col = |f: fn(&SliceAxis) -> i64| -> Vec<i64> { sliced.iter().map(f).collect() };
        let (start, stop) = if constant && !any_guarded {
            let c = |v: Val| v.constant().unwrap_or(0);
            let start = b.const_i64("start", &sliced.iter().map(|a| c(a.1)).collect::<Vec<_>>());
            let stop = b.const_i64("stop", &sliced.iter().map(|a| c(a.2)).collect::<Vec<_>>());
            (start, stop)
        } else {
            let param = |port: Option<usize>| {
                port.and_then(|p| b.graph.input(ix, p))
                    .ok_or("left as is: begin or end missing")
            };
            let params = if constant {
                None
            } else {
                Some((param(sn.ports.begin)?, param(sn.ports.end)?))
            };
            let rt = RunTime {
                shrinks: runtime_shrinks,
                data: sn.data,
                dims: dims.clone(),
            };
            dynamic_bounds(&mut b, &sliced, params, lens, &rt)?
        };
        let step = b.const_i64("step", &col(|a| a.3));
        let axes = b.const_i64("axes", &col(|a| a.0 as i64));
        let inputs = if ir {
            [Some(cur), Some(start), Some(stop), Some(step), Some(axes)]
        } else {
            [Some(cur), Some(start), Some(stop), Some(axes), Some(step)]
        };
        let (name, out) = next(&mut remaining, &mut out_slot);
        let ty = rewrite::ty_like(b.graph, sn.data, Some(slice_out.clone()));
        let node = b.op(
            name.map(Into::into),
            slice_node::SLICE,
            if ir { "opset8" } else { "" },
            &inputs,
            Vec::new(),
            out,
            ty,
        );
        cur = OutletId { node, port: 0 };
        last = Some(node);
        parts.push(slice_node::SLICE);
    }
    let out_shape: Vec<DeclaredDim> = out_dims.iter().map(|(d, _)| d.clone()).collect();
    match &shaping {
        Shaping::None => {}
        Shaping::Reshape(target, literal) => {
            let t = b.const_i64("shape", target);
            let attrs = if ir {
                let v = if *literal { "false" } else { "true" };
                vec![("special_zero".to_string(), Attr::String(v.into()))]
            } else if opset >= 14 {
                vec![("allowzero".to_string(), Attr::Int(i64::from(*literal)))]
            } else {
                Vec::new()
            };
            let (name, out) = next(&mut remaining, &mut out_slot);
            let ty = rewrite::ty_like(b.graph, sn.data, Some(out_shape.clone()));
            let node = b.op(
                name.map(Into::into),
                "Reshape",
                if ir { "opset1" } else { "" },
                &[Some(cur), Some(t)],
                attrs,
                out,
                ty,
            );
            last = Some(node);
            parts.push("Reshape");
        }
        Shaping::SqueezeUnsqueeze(sq, un) => {
            for (op_type, axes) in [("Squeeze", sq), ("Unsqueeze", un)] {
                if axes.is_empty() {
                    continue;
                }
                let (name, out) = next(&mut remaining, &mut out_slot);
                let shape = if op_type == "Squeeze" {
                    slice_out
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !axes.contains(&(*i as i64)))
                        .map(|(_, d)| d.clone())
                        .collect()
                } else {
                    out_shape.clone()
                };
                let ty = rewrite::ty_like(b.graph, sn.data, Some(shape));
                let node = if ir || opset >= 13 {
                    let a = b.const_i64("axes", axes);
                    b.op(
                        name.map(Into::into),
                        op_type,
                        if ir { "opset1" } else { "" },
                        &[Some(cur), Some(a)],
                        Vec::new(),
                        out,
                        ty,
                    )
                } else {
                    b.op(
                        name.map(Into::into),
                        op_type,
                        "",
                        &[Some(cur)],
                        vec![("axes".to_string(), Attr::Ints(axes.clone()))],
                        out,
                        ty,
                    )
                };
                cur = OutletId { node, port: 0 };
                last = Some(node);
                parts.push(op_type);
            }
        }
    }
    let note = if validated {
        ""
    } else if !constant {
        " (begin/end not constant: Slice bounds gathered from them; not validated)"
    } else {
        " (input shape not static: not validated)"
    };
    match last {
        Some(last) => {
            let last = rewrite::take_over(graph, ix, last);
            if sliced.is_empty() && parts.len() == 1 {
                graph.lowered_shaping.insert(last);
                let base = format!("{}{}", graph.node(last).name, rewrite::LOWERED_MARK);
                let marked = graph.unique_name(&base);
                let n = graph.node_mut(last);
                n.name = marked.into();
                n.dirty = true;
            }
            let fallback = if matches!(shaping, Shaping::SqueezeUnsqueeze(..)) {
                ": a Reshape cannot express the new/removed axes (dims unknown), Squeeze/Unsqueeze used"
            } else {
                ""
            };
            Ok(format!("lowered to {}{fallback}{note}", parts.join(" + ")))
        }
        None => {
            graph.redirect(OutletId { node: ix, port: 0 }, sn.data);
            graph.remove_node_lazily(ix);
            Ok(format!("removed: it selects the whole input{note}"))
        }
    }
}
