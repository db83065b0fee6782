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
use crate::ir::{Attr, DeclaredDim, Graph, OutletId, Text, Value};
use crate::passes::eval;
use crate::passes::rewrite::{self, Builder};
use crate::report::{Change, PassReport};
use crate::semantics::lowering::{LoweredDim, Lowering, LoweringInput, Shaping, SliceAxis, Val};
use crate::semantics::{self, Clamp, SlicePlan};
use crate::shape::slice_node::{self, SliceOp};
use petgraph::stable_graph::NodeIndex;

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
        parts.push(after_begin(b, begin, nb));
    }
    let kept_base = after_base + if needs_after { nb } else { 0 };
    let m = rt.shrinks.len() as u64;
    if m > 0 {
        let (kept, after) = kept_shrinks(b, begin.ok_or(needs_begin)?, rt);
        parts.extend([kept, after]);
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
    let mut pool_len = total;
    if !guarded.is_empty() {
        let ix = (&mut start_ix, &mut stop_ix);
        pool = guard(b, sliced, &guarded, (pool, total), ix, rt);
        pool_len += 2 * guarded.len() as u64;
    }
    if !ir {
        let ix = (&mut start_ix, &mut stop_ix);
        (pool, pool_len) = cap_reverse_stops(b, sliced, (pool, pool_len), ix);
    }
    debug_assert!(start_ix
        .iter()
        .chain(&stop_ix)
        .all(|&i| (i as u64) < pool_len));
    let start = b.gather0(pool, "start_index", &start_ix);
    let stop = b.gather0(pool, "stop_index", &stop_ix);
    Ok((start, stop))
}

/// ONNX Runtime reads a reverse Slice end of exactly INT32_MAX or INT64_MAX as running through
/// element 0 (microsoft/onnxruntime#2272; issue 42, pattern G). A reverse end at or past
/// `dim - 1` selects nothing in either op, so each end of `sliced` taken at run time on a
/// reverse range is capped at `INT32_MAX - 1`: the same range for every dim up to the dim limit
/// (2^31 - 1). Appends the capped ends to the pool of `len` elements, points `stop_ix` at them
/// and returns the new pool and its length.
fn cap_reverse_stops(
    b: &mut Builder,
    sliced: &[SliceAxis],
    (pool, len): (OutletId, u64),
    (_, stop_ix): (&mut Vec<i64>, &mut Vec<i64>),
) -> (OutletId, u64) {
    let capped: Vec<usize> = (0..sliced.len())
        .filter(|&k| sliced[k].3 < 0 && matches!(sliced[k].2, Val::End(_)))
        .collect();
    if capped.is_empty() {
        return (pool, len);
    }
    let v = |n: u64| rewrite::i64_vec(Some(n));
    let c = capped.len() as u64;
    let ix: Vec<i64> = capped.iter().map(|&k| stop_ix[k]).collect();
    let es = b.gather0(pool, "reverse_stop_index", &ix);
    let cap = b.const_i64("reverse_stop_cap", &[i32::MAX as i64 - 1]);
    let over = b.std_op("Less", &[cap, es], Vec::new(), rewrite::bool_vec(Some(c)));
    let es = b.std_op("Where", &[over, cap, es], Vec::new(), v(c));
    let pool = b.concat0(&[pool, es], Some(len + c));
    for (i, &k) in capped.iter().enumerate() {
        stop_ix[k] = (len + i as u64) as i64;
    }
    (pool, len + c)
}

/// The guarded ranges of `sliced` (indices `guarded`), TensorFlow reverse ranges: their start
/// and stop become 0:0 at run time where the begin lies below `-dim`. Appends those to the
/// pool of `total` elements and points `start_ix`/`stop_ix` at them; returns the new pool.
fn guard(
    b: &mut Builder,
    sliced: &[SliceAxis],
    guarded: &[usize],
    (pool, total): (OutletId, u64),
    (start_ix, stop_ix): (&mut Vec<i64>, &mut Vec<i64>),
    rt: &RunTime,
) -> OutletId {
    let v = |n: u64| rewrite::i64_vec(Some(n));
    // TensorFlow selects nothing from a reverse begin below -dim: there start and stop
    // become 0:0 (empty under Slice clamping), elsewhere they stay.
    let g = guarded.len() as u64;
    let pick = |ix: &[i64]| guarded.iter().map(|&k| ix[k]).collect::<Vec<i64>>();
    let bs = b.gather0(pool, "guard_start_index", &pick(start_ix));
    let es = b.gather0(pool, "guard_stop_index", &pick(stop_ix));
    let axes: Vec<usize> = guarded.iter().map(|&k| sliced[k].0).collect();
    let d = b.dims_at_run_time(rt.data, &rt.dims, &axes);
    let neg = b.std_op("Neg", &[d], Vec::new(), v(g));
    let below = b.std_op("Less", &[bs, neg], Vec::new(), rewrite::bool_vec(Some(g)));
    let zero = b.const_i64("zero", &[0]);
    let bs = b.std_op("Where", &[below, zero, bs], Vec::new(), v(g));
    let es = b.std_op("Where", &[below, zero, es], Vec::new(), v(g));
    let pool = b.concat0(&[pool, bs, es], Some(total + 2 * g));
    for (i, &k) in guarded.iter().enumerate() {
        start_ix[k] = (total + i as u64) as i64;
        stop_ix[k] = (total + g + i as u64) as i64;
    }
    pool
}

/// `begin + 1` for each element of `begin` (of length `nb`), except where it is -1 (the last
/// element): `INT64_MAX`.
fn after_begin(b: &mut Builder, begin: OutletId, nb: u64) -> OutletId {
    let ir = b.format == Format::OpenVino;
    let v = |n: u64| rewrite::i64_vec(Some(n));
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
    b.std_op(sel, &[last, max, plus], Vec::new(), v(nb))
}

/// The elements kept by the run-time shrinks of `rt` and the next ones: `kept = min(max(b < 0
/// ? b + dim : b, 0), dim - 1)`, with `b` the shrink's begin and `dim` its axis' size at run
/// time; then `kept + 1`.
fn kept_shrinks(b: &mut Builder, begin: OutletId, rt: &RunTime) -> (OutletId, OutletId) {
    let m = rt.shrinks.len() as u64;
    let v = |n: u64| rewrite::i64_vec(Some(n));
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
    (kept, after)
}

/// What the bounds computed at run time need besides the parameters: the OpenVINO shrinks
/// whose index is taken at run time, `(j, axis)` for a shrink of `begin[j]` on input `axis`,
/// and the data input with its known dims (for dims at run time).
struct RunTime {
    shrinks: Vec<(usize, usize)>,
    data: OutletId,
    dims: Vec<Option<u64>>,
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

/// Lowers StridedSlice `ix`: decode, plan ([`semantics::lowering`]), validate, emit, report.
/// `Err` says why it is left as is.
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
    let facts = Facts::of(graph, &sn, op)?;
    let sources = facts.sources(&sn);
    let input = LoweringInput {
        plan: &sn.plan,
        sources: &sources,
        dims: &facts.dims,
        lower: &facts.lower,
        clamp: op.clamp(),
        clamp_runtime_shrinks: format == Format::OpenVino,
        literal_zeros: format == Format::OpenVino || opset >= 14,
        onnx_slice: format == Format::Onnx,
    };
    let low = semantics::lowering(&input).map_err(|e| e.to_string())?;
    let validated = validate(&low, &facts, sn.plan.input_rank)?;
    let cx = Emit {
        ix,
        sn: &sn,
        facts: &facts,
        low: &low,
        ir: format == Format::OpenVino,
        opset,
    };
    let roots: Vec<OutletId> = graph.inputs(ix).into_iter().skip(1).flatten().collect();
    let (last, parts) = emit(graph, format, &cx)?;
    let what = finish(graph, &cx, last, &parts, validated);
    crate::passes::raise::remove_orphans(graph, roots);
    Ok(what)
}

/// What `lower_node` knows of a StridedSlice's input besides its plan.
struct Facts {
    /// Whether begin, end and strides are all constant.
    constant: bool,
    /// Per input axis, the dim when known.
    dims: Vec<Option<u64>>,
    /// Per input axis, the smallest value its declared dim can take.
    lower: Vec<u64>,
    /// The declared input shape (unknown dims when none is declared).
    in_shape: Vec<DeclaredDim>,
    /// The input dims when all are known.
    static_dims: Option<Vec<u64>>,
    /// What the StridedSlice selects, when its input is static and its parameters constant.
    old_sel: Option<rewrite::Selection>,
}

impl Facts {
    /// The facts of `sn`'s input. Validates the old node first: an invalid one (shrink out
    /// of range...) is left alone.
    fn of(
        graph: &Graph,
        sn: &slice_node::SliceNode,
        op: SliceOp,
    ) -> std::result::Result<Facts, String> {
        let constant = sn.plan.is_constant();
        let rank = sn.plan.input_rank;
        let dims = rewrite::known_dims(graph, sn.data).unwrap_or_else(|| vec![None; rank]);
        let declared = slice_node::declared_shape(graph, sn.data);
        let lower = (0..rank)
            .map(|axis| match declared.as_ref().and_then(|s| s.get(axis)) {
                Some(DeclaredDim::Known(v)) | Some(DeclaredDim::Interval(v, _)) => *v,
                _ => 0,
            })
            .collect();
        let in_shape = declared.unwrap_or_else(|| vec![DeclaredDim::Unknown; rank]);
        let static_dims: Option<Vec<u64>> = dims.iter().copied().collect();
        let old_sel = match &static_dims {
            Some(d) if constant => Some(
                rewrite::select(&sn.plan, d, op.clamp()).map_err(|e| format!("left as is: {e}"))?,
            ),
            _ => None,
        };
        Ok(Facts {
            constant,
            dims,
            lower,
            in_shape,
            static_dims,
            old_sel,
        })
    }

    /// Per plan entry, the begin/end elements it reads, when some are taken at run time.
    fn sources(&self, sn: &slice_node::SliceNode) -> Vec<(Option<usize>, Option<usize>)> {
        if self.constant {
            return vec![(None, None); sn.plan.axes.len()];
        }
        let p = &sn.provenance;
        p.begin.iter().copied().zip(p.end.iter().copied()).collect()
    }

    /// A lowered dim as declared.
    fn declared(&self, d: LoweredDim) -> DeclaredDim {
        match d {
            LoweredDim::Known(v) => DeclaredDim::Known(v),
            LoweredDim::Unknown => DeclaredDim::Unknown,
            LoweredDim::Input(axis) => self.in_shape[axis].clone(),
        }
    }
}

/// Translation validation on the index tensor, when the input is static and the parameters
/// constant: whether it ran (`Err` when the lowering selects something else).
fn validate(low: &Lowering, facts: &Facts, rank: usize) -> std::result::Result<bool, String> {
    let (Some(d), Some(old)) = (&facts.static_dims, &facts.old_sel) else {
        return Ok(false);
    };
    let plan = slice_plan(&low.sliced, rank)?;
    let (idx, shape) =
        rewrite::select(&plan, d, Clamp::Ov).map_err(|e| format!("left as is: {e}"))?;
    let shape = match &low.shaping {
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
        Shaping::UnsqueezeSqueeze(un, sq) => {
            eval::unsqueeze_shape(&shape, un).and_then(|s| eval::squeeze_shape(&s, sq))
        }
    }
    .map_err(|e| format!("left as is: translation validation: {e}"))?;
    rewrite::compare(old, &(idx, shape)).map_err(|e| format!("left as is: {e}"))?;
    Ok(true)
}

/// What `emit` builds from.
struct Emit<'a> {
    ix: NodeIndex,
    sn: &'a slice_node::SliceNode,
    facts: &'a Facts,
    low: &'a Lowering,
    ir: bool,
    opset: i64,
}

/// The names and values of the nodes `emit` builds: the last one takes the StridedSlice's
/// name and output value, the others get fresh ones.
struct Outputs {
    remaining: usize,
    slot: Option<Value>,
    final_name: Text,
}

impl Outputs {
    fn next(&mut self) -> (Option<Text>, Option<Value>) {
        self.remaining -= 1;
        if self.remaining == 0 {
            (Some(self.final_name.clone()), self.slot.take())
        } else {
            (None, None)
        }
    }
}

/// Builds the Slice and the reshaping nodes beside `cx.ix`: the last one built and the op
/// types built (empty when the StridedSlice selects its whole input).
fn emit(
    graph: &mut Graph,
    format: Format,
    cx: &Emit,
) -> std::result::Result<(Option<NodeIndex>, Vec<&'static str>), String> {
    let old = graph.node(cx.ix);
    let out_value = old
        .outputs
        .first()
        .cloned()
        .ok_or("left as is: the node has no output")?;
    let n_reshape_nodes = match &cx.low.shaping {
        Shaping::None => 0,
        Shaping::Reshape(..) => 1,
        Shaping::SqueezeUnsqueeze(s, u) | Shaping::UnsqueezeSqueeze(u, s) => {
            usize::from(!s.is_empty()) + usize::from(!u.is_empty())
        }
    };
    let mut outs = Outputs {
        remaining: usize::from(!cx.low.sliced.is_empty()) + n_reshape_nodes,
        slot: Some(out_value),
        final_name: old.name.clone(),
    };
    let mut b = Builder::new(graph, format, cx.ix);
    let mut cur: OutletId = cx.sn.data;
    let mut last: Option<NodeIndex> = None;
    let mut parts: Vec<&'static str> = Vec::new();
    if !cx.low.sliced.is_empty() {
        let node = emit_slice(&mut b, cx, &mut outs)?;
        cur = OutletId { node, port: 0 };
        last = Some(node);
        parts.push(slice_node::SLICE);
    }
    emit_shaping(&mut b, cx, &mut outs, cur, &mut last, &mut parts);
    Ok((last, parts))
}

/// The Slice node, its bounds constant or gathered at run time ([`dynamic_bounds`]).
fn emit_slice(
    b: &mut Builder,
    cx: &Emit,
    outs: &mut Outputs,
) -> std::result::Result<NodeIndex, String> {
    let sliced = &cx.low.sliced;
    let col = |f: fn(&SliceAxis) -> i64| -> Vec<i64> { sliced.iter().map(f).collect() };
    let (start, stop) = if cx.facts.constant && !cx.low.any_guarded {
        let c = |v: Val| v.constant().unwrap_or(0);
        let start = b.const_i64("start", &sliced.iter().map(|a| c(a.1)).collect::<Vec<_>>());
        let stop = b.const_i64("stop", &sliced.iter().map(|a| c(a.2)).collect::<Vec<_>>());
        (start, stop)
    } else {
        let param = |b: &Builder, port: Option<usize>| {
            port.and_then(|p| b.graph.input(cx.ix, p))
                .ok_or("left as is: begin or end missing")
        };
        let (params, lens) = if cx.facts.constant {
            (None, (0, 0))
        } else {
            let params = (param(b, cx.sn.ports().begin)?, param(b, cx.sn.ports().end)?);
            let len = cx.sn.provenance.len;
            (Some(params), (len, len))
        };
        let rt = RunTime {
            shrinks: cx.low.runtime_shrinks.clone(),
            data: cx.sn.data,
            dims: cx.facts.dims.clone(),
        };
        dynamic_bounds(b, sliced, params, lens, &rt)?
    };
    let step = b.const_i64("step", &col(|a| a.3));
    let axes = b.const_i64("axes", &col(|a| a.0 as i64));
    let cur = Some(cx.sn.data);
    let inputs = if cx.ir {
        [cur, Some(start), Some(stop), Some(step), Some(axes)]
    } else {
        [cur, Some(start), Some(stop), Some(axes), Some(step)]
    };
    let (name, out) = outs.next();
    let slice_out = cx
        .low
        .slice_out
        .iter()
        .map(|&d| cx.facts.declared(d))
        .collect();
    let ty = rewrite::ty_like(b.graph, cx.sn.data, Some(slice_out));
    Ok(b.op(
        name.map(Into::into),
        slice_node::SLICE,
        if cx.ir { "opset8" } else { "" },
        &inputs,
        Vec::new(),
        out,
        ty,
    ))
}

/// The Reshape, or the Squeeze and Unsqueeze, after `cur` (the Slice or the data input).
fn emit_shaping(
    b: &mut Builder,
    cx: &Emit,
    outs: &mut Outputs,
    cur: OutletId,
    last: &mut Option<NodeIndex>,
    parts: &mut Vec<&'static str>,
) {
    let (ir, opset) = (cx.ir, cx.opset);
    let out_shape: Vec<DeclaredDim> = cx
        .low
        .out_dims
        .iter()
        .map(|&(d, _)| cx.facts.declared(d))
        .collect();
    match &cx.low.shaping {
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
            let (name, out) = outs.next();
            let ty = rewrite::ty_like(b.graph, cx.sn.data, Some(out_shape));
            let node = b.op(
                name.map(Into::into),
                "Reshape",
                if ir { "opset1" } else { "" },
                &[Some(cur), Some(t)],
                attrs,
                out,
                ty,
            );
            *last = Some(node);
            parts.push("Reshape");
        }
        Shaping::SqueezeUnsqueeze(sq, un) => {
            let steps = [("Squeeze", sq), ("Unsqueeze", un)];
            emit_squeeze_unsqueeze(b, cx, outs, steps, cur, last, parts, &out_shape)
        }
        Shaping::UnsqueezeSqueeze(un, sq) => {
            let steps = [("Unsqueeze", un), ("Squeeze", sq)];
            emit_squeeze_unsqueeze(b, cx, outs, steps, cur, last, parts, &out_shape)
        }
    }
}

/// The two steps (Squeeze and Unsqueeze, in either order; each only when it has axes) after
/// `cur`.
#[allow(clippy::too_many_arguments)]
fn emit_squeeze_unsqueeze(
    b: &mut Builder,
    cx: &Emit,
    outs: &mut Outputs,
    steps: [(&'static str, &Vec<i64>); 2],
    mut cur: OutletId,
    last: &mut Option<NodeIndex>,
    parts: &mut Vec<&'static str>,
    out_shape: &[DeclaredDim],
) {
    let (ir, opset) = (cx.ir, cx.opset);
    let both = steps.iter().all(|(_, a)| !a.is_empty());
    for (k, (op_type, axes)) in steps.into_iter().enumerate() {
        if axes.is_empty() {
            continue;
        }
        let (name, out) = outs.next();
        let slice_out = cx.low.slice_out.iter().map(|&d| cx.facts.declared(d));
        let shape = if k == 1 || !both {
            out_shape.to_vec()
        } else if op_type == "Squeeze" {
            (slice_out.enumerate())
                .filter(|(i, _)| !axes.contains(&(*i as i64)))
                .map(|(_, d)| d)
                .collect()
        } else {
            let mut s: Vec<DeclaredDim> = slice_out.collect();
            let mut sorted = axes.clone();
            sorted.sort_unstable();
            for a in sorted {
                s.insert((a as usize).min(s.len()), DeclaredDim::Known(1));
            }
            s
        };
        let ty = rewrite::ty_like(b.graph, cx.sn.data, Some(shape));
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
        *last = Some(node);
        parts.push(op_type);
    }
}

/// Puts the nodes built in the StridedSlice's place (or removes it when it selects its whole
/// input) and says what was done.
fn finish(
    graph: &mut Graph,
    cx: &Emit,
    last: Option<NodeIndex>,
    parts: &[&str],
    validated: bool,
) -> String {
    let note = if validated {
        ""
    } else if !cx.facts.constant {
        " (begin/end not constant: Slice bounds gathered from them; not validated)"
    } else {
        " (input shape not static: not validated)"
    };
    let Some(last) = last else {
        graph.redirect(
            OutletId {
                node: cx.ix,
                port: 0,
            },
            cx.sn.data,
        );
        graph.remove_node_lazily(cx.ix);
        return format!("removed: it selects the whole input{note}");
    };
    let last = rewrite::take_over(graph, cx.ix, last);
    if cx.low.sliced.is_empty() && parts.len() == 1 {
        graph.lowered_shaping.insert(last);
        let base = format!("{}{}", graph.node(last).name, rewrite::LOWERED_MARK);
        let marked = graph.unique_name(&base);
        let n = graph.node_mut(last);
        n.name = marked.into();
        n.dirty = true;
    }
    let fallback = match cx.low.shaping {
        Shaping::SqueezeUnsqueeze(..) | Shaping::UnsqueezeSqueeze(..) => {
            ": a Reshape cannot express the new/removed axes (dims unknown) or say which they \
             are, Squeeze/Unsqueeze used"
        }
        _ => "",
    };
    format!("lowered to {}{fallback}{note}", parts.join(" + "))
}
