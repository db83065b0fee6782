//! Pass `simplify`: fewer slices, each rewrite decided by the semantics core
//! ([`crate::semantics::compose`]) and checked before it is kept.
//!
//! - **Identity slices** (every axis taken whole, in order, for every size the dims may take,
//!   symbolic too: `x[0:INT64_MAX]` on a dynamic axis) are removed: their consumers read the
//!   input. Kept when the slice's output is a graph output (the writer would put an Identity
//!   in its place).
//! - **A slice of a slice** becomes one slice of the first one's input, when the first has no
//!   other consumer: one node fewer, never one more (when the first slice is read elsewhere
//!   too, merging would leave as many nodes and only move the work; left alone, reported).
//!   Known sizes get the exact positions; symbolic sizes only a plan proved exact for every
//!   size (else refused with the reason).
//! - **Disjoint slices of one source along one axis** (step-1 runs, every other axis whole)
//!   become one `Split` (ONNX; known sizes) or `VariadicSplit` (IR; one size may be the rest,
//!   `-1`): gaps between them are outputs nothing reads.
//! - **A slice of a `Concat` that selects within one input** becomes the same slice of that
//!   input.
//! - **ONNX `Shape` then `Slice`** becomes the constant of the dims it selects when they are
//!   all known (`Shape(x)[-1:]` of `[N, S, 32]`: `[32]`), else (step 1, opset >= 15)
//!   `Shape(start, end)`.
//!
//! The pass reads the shapes the graph declares: run it after `infer` (`--passes
//! infer,simplify,cleanup`; `cleanup` drops the parameters and Concats left unused). Not in
//! the default set.
//!
//! The merged node is written as the op that can say the plan: ONNX `Slice` (ranges only) or a
//! TensorFlow-style `StridedSlice` when one of the pair was one; OpenVINO `Slice-8` when both
//! were and the plan has ranges only, else `StridedSlice-1`. Its parameters are decoded back
//! and must give the plan proved; on a static input the new node's selection is compared with
//! the old one's on an index tensor (translation validation).

use petgraph::stable_graph::NodeIndex;

use crate::error::{Error, Result};
use crate::formats::{Format, Model};
use crate::ir::{Attr, DType, DeclaredDim, Graph, NodeKind, OutletId, ValueType};
use crate::passes::rewrite::{self, Builder};
use crate::report::{Change, PassReport};
use crate::semantics::compose;
use crate::semantics::{self, Clamp, Dim, Flavour, SlicePlan, DEFAULT_MAX_ELEMENTS};
use crate::shape::slice_node::{self, SliceOp};

mod split;
use split::splits;

/// The ONNX custom domain of TensorFlow-style StridedSlice nodes (as `raise` writes them).
const TF_DOMAIN: &str = "org.tensorflow";

/// Simplifies the slices of `model`.
pub fn run(model: &mut Model, report: &mut PassReport) -> Result<()> {
    let format = model.format();
    let opset = model.onnx_opset();
    let order = model
        .graph()
        .topo_order()
        .map_err(|c| Error::cycle(model.path(), c))?;
    let graph = model.graph_mut();
    for &ix in &order {
        if !graph.is_live(ix) {
            continue;
        }
        let Some(op) = slice_node::classify(graph, ix, format, opset) else {
            continue;
        };
        let (name, op_type) = {
            let n = graph.node(ix);
            (n.name.to_string(), n.op_type.to_string())
        };
        // OpenVINO's CPU plugin reads a shrink with begin_mask as index 0 where its constant
        // folding reads `begin` (which every pass follows): a node with such an entry that is
        // rewritten gets the warning `lower` gives.
        let mut warn = vec![rewrite::ov_shrink_begin_mask_warning(graph, ix, op)];
        let data = graph.input(ix, 0);
        if let Some(p) = data.filter(|d| d.port == 0).map(|d| d.node) {
            if let Some(pop) = slice_node::classify(graph, p, format, opset) {
                warn.push(rewrite::ov_shrink_begin_mask_warning(graph, p, pop));
            }
        }
        match simplify_node(graph, ix, op, format, opset) {
            Ok(Some(what)) => {
                let merged = what.starts_with("merged");
                let warn = warn.into_iter().take(if merged { 2 } else { 1 }).flatten();
                report.warnings.extend(warn);
                report.change(|| Change::note(name, op_type, what))
            }
            Ok(None) => {}
            Err(why) => report.skip(|| Change::note(name, op_type, why)),
        }
    }
    graph.flush_detached();
    splits(graph, format, opset, report);
    graph.flush_detached();
    Ok(())
}

/// A decoded slice with constant parameters, and the dims of its input.
struct Decoded {
    op: SliceOp,
    data: OutletId,
    plan: SlicePlan,
    dims: Vec<Dim>,
}

fn decoded(graph: &Graph, ix: NodeIndex, op: SliceOp) -> std::result::Result<Decoded, String> {
    let sn = slice_node::decode(graph, ix, op).map_err(|e| format!("left as is: {e}"))?;
    if !sn.plan.is_constant() {
        return Err("left as is: parameters not constant".into());
    }
    let dims: Vec<Dim> = slice_node::declared_shape(graph, sn.data)
        .ok_or("left as is: input shape unknown")?
        .iter()
        .map(slice_node::to_dim)
        .collect();
    Ok(Decoded {
        op: sn.op,
        data: sn.data,
        plan: sn.plan,
        dims,
    })
}

fn known_dims(dims: &[Dim]) -> Option<Vec<u64>> {
    dims.iter()
        .map(|d| d.as_known().and_then(|v| u64::try_from(v).ok()))
        .collect()
}

/// `Ok(Some(what))`: rewritten; `Ok(None)`: nothing to do; `Err(why)`: refused.
fn simplify_node(
    graph: &mut Graph,
    ix: NodeIndex,
    op: SliceOp,
    format: Format,
    opset: i64,
) -> std::result::Result<Option<String>, String> {
    let d = decoded(graph, ix, op)?;
    let out = OutletId { node: ix, port: 0 };
    if compose::is_identity(&d.plan, &d.dims, op.clamp()) {
        if graph.consumers(out).iter().any(|&(c, _)| {
            let n = graph.node(c);
            n.kind == NodeKind::Output || (format == Format::OpenVino && n.op_type == "Result")
        }) {
            return Err("identity slice kept: its output is a graph output".into());
        }
        graph.redirect(out, d.data);
        graph.remove_node_lazily(ix);
        return Ok(Some(format!("identity slice {} removed", d.plan)));
    }
    let producer = d.data.node;
    if d.data.port == 0 {
        if let Some(inner_op) = slice_node::classify(graph, producer, format, opset) {
            return merge(graph, ix, &d, producer, inner_op, format, opset).map(Some);
        }
        let p = graph.node(producer);
        if p.kind == NodeKind::Op && p.op_type.as_str() == "Concat" {
            return concat(graph, ix, &d, format, opset).map(Some);
        }
        if format == Format::Onnx
            && p.kind == NodeKind::Op
            && p.op_type.as_str() == "Shape"
            && (p.domain.is_empty() || p.domain.as_str() == "ai.onnx")
        {
            return shape_slice(graph, ix, &d, opset).map(Some);
        }
    }
    Ok(None)
}

/// How the merged node is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Emit {
    OnnxSlice,
    TfStrided,
    OvSlice8,
    OvStrided,
}

impl Emit {
    fn clamp(self) -> Clamp {
        match self {
            Emit::TfStrided => Clamp::Tf,
            _ => Clamp::Ov,
        }
    }

    /// The op that can say a plan (`ranges`: ranges only) where the ops `ops` were.
    fn choose(
        format: Format,
        ops: &[SliceOp],
        ranges: bool,
        opset: i64,
    ) -> std::result::Result<Emit, String> {
        match format {
            Format::Onnx if ranges && opset >= 10 => Ok(Emit::OnnxSlice),
            Format::Onnx if ops.contains(&SliceOp::TfStridedSlice) => Ok(Emit::TfStrided),
            Format::Onnx if ranges => {
                Err("left as is: an attribute-form Slice (opset < 10) is not rewritten".into())
            }
            Format::Onnx => Err(
                "left as is: the merged slice adds or removes axes, which ONNX Slice cannot say"
                    .into(),
            ),
            Format::OpenVino if ranges && ops.iter().all(|o| *o == SliceOp::OvSlice8) => {
                Ok(Emit::OvSlice8)
            }
            Format::OpenVino => Ok(Emit::OvStrided),
        }
    }
}

fn ranges_only(plan: &SlicePlan) -> bool {
    plan.axes
        .iter()
        .all(|a| matches!(a, semantics::AxisPlan::Range { .. }))
}

/// The op type and domain a slice of `emit` is written with.
fn op_of(emit: Emit) -> (&'static str, &'static str) {
    match emit {
        Emit::OnnxSlice => (slice_node::SLICE, ""),
        Emit::TfStrided => (slice_node::STRIDED_SLICE, TF_DOMAIN),
        Emit::OvSlice8 => (slice_node::SLICE, "opset8"),
        Emit::OvStrided => (slice_node::STRIDED_SLICE, "opset1"),
    }
}

/// The plan the parameters written for `plan` as `emit` decode to (what the runtime will
/// read), and the parameters: `Err` when they cannot be written.
#[allow(clippy::type_complexity)]
fn written(
    emit: Emit,
    plan: &SlicePlan,
) -> std::result::Result<
    (
        SlicePlan,
        Vec<(&'static str, Vec<i64>)>,
        Vec<(String, Attr)>,
    ),
    String,
> {
    let rank = plan.input_rank;
    let c = semantics::decode::constant;
    match emit {
        Emit::OnnxSlice | Emit::OvSlice8 => {
            let (st, en, ax, sp) =
                compose::slice_params(plan).ok_or("internal: a range plan without parameters")?;
            let back = if emit == Emit::OnnxSlice {
                semantics::onnx_slice(&c(&st), &c(&en), Some(&ax), Some(&c(&sp)), rank, 13)
            } else {
                semantics::ov_slice8(&c(&st), &c(&en), Some(&c(&sp)), Some(&ax), rank)
            }
            .map_err(|e| format!("internal: the Slice written is invalid: {e}"))?;
            let params = if emit == Emit::OnnxSlice {
                vec![("starts", st), ("ends", en), ("axes", ax), ("steps", sp)]
            } else {
                vec![("start", st), ("stop", en), ("step", sp), ("axes", ax)]
            };
            Ok((back, params, Vec::new()))
        }
        Emit::TfStrided | Emit::OvStrided => {
            let spec = compose::strided_spec(plan).ok_or("internal: a plan without a spec")?;
            let n = spec.begin.len();
            if emit == Emit::TfStrided && n > 63 {
                return Err("left as is: more than 63 entries do not fit TensorFlow masks".into());
            }
            let flavour = if emit == Emit::TfStrided {
                Flavour::Tf
            } else {
                Flavour::Ov
            };
            let back = semantics::strided_slice(&spec, flavour, rank)
                .map_err(|e| format!("internal: the StridedSlice written is invalid: {e}"))?;
            let col = |v: &[Option<i64>]| v.iter().map(|x| x.unwrap_or(0)).collect::<Vec<i64>>();
            let strides = spec.strides.as_deref().map(col).unwrap_or(vec![1; n]);
            let params = vec![
                ("begin", col(&spec.begin)),
                ("end", col(&spec.end)),
                ("strides", strides),
            ];
            let attrs = [
                ("begin_mask", &spec.begin_mask),
                ("end_mask", &spec.end_mask),
                ("new_axis_mask", &spec.new_axis_mask),
                ("shrink_axis_mask", &spec.shrink_axis_mask),
                ("ellipsis_mask", &spec.ellipsis_mask),
            ]
            .into_iter()
            .map(|(name, m)| {
                let v: Vec<i64> = m.iter().map(|&b| i64::from(b)).collect();
                let a = if emit == Emit::OvStrided {
                    rewrite::ov_list(&v)
                } else {
                    Attr::Int(v.iter().enumerate().map(|(i, &x)| x << i).sum::<i64>())
                };
                (name.to_string(), a)
            })
            .collect();
            Ok((back, params, attrs))
        }
    }
}

/// Replaces node `old` by a slice of `data` by `plan` written as `emit`; the new node keeps
/// `old`'s name and output. Checks first that the parameters decode back to `plan` (index
/// checks that pass on known dims aside) and, when every dim is known, that the new node
/// selects `want` (shape, indices) on an index tensor.
#[allow(clippy::too_many_arguments)]
fn replace_with_slice(
    graph: &mut Graph,
    format: Format,
    old: NodeIndex,
    data: OutletId,
    plan: &SlicePlan,
    dims: &[Dim],
    emit: Emit,
    want: Option<&Selection>,
) -> std::result::Result<(), String> {
    let (back, params, attrs) = written(emit, plan)?;
    if compose::without_passing_checks(&back, dims) != *plan {
        return Err(format!(
            "internal: the parameters written read as {back}, not {plan}"
        ));
    }
    if let (Some(want), Some(d)) = (want, known_dims(dims)) {
        let got = select(&back, &d, emit.clamp())
            .ok_or("left as is: translation validation: the new slice fails")?;
        rewrite::compare(want, &got).map_err(|e| format!("left as is: {e}"))?;
    }
    let out_value = graph
        .node(old)
        .outputs
        .first()
        .cloned()
        .ok_or("left as is: no output")?;
    let name = graph.node(old).name.clone();
    let mut b = Builder::new(graph, format, old);
    let mut inputs = vec![Some(data)];
    for (what, v) in &params {
        inputs.push(Some(b.const_i64(what, v)));
    }
    let (op_type, domain) = op_of(emit);
    let node = b.op(
        Some(name.into()),
        op_type,
        domain,
        &inputs,
        attrs,
        Some(out_value),
        Default::default(),
    );
    rewrite::take_over(graph, old, node);
    Ok(())
}

type Selection = rewrite::Selection;

fn select(plan: &SlicePlan, dims: &[u64], clamp: Clamp) -> Option<Selection> {
    let idx = semantics::gather(plan, dims, clamp, DEFAULT_MAX_ELEMENTS).ok()?;
    let shape = semantics::output_shape(plan, dims, clamp).ok()?;
    Some((idx, shape))
}

/// The slice `ix` (decoded: `d`) of the slice `inner` as one slice.
fn merge(
    graph: &mut Graph,
    ix: NodeIndex,
    d: &Decoded,
    inner: NodeIndex,
    inner_op: SliceOp,
    format: Format,
    opset: i64,
) -> std::result::Result<String, String> {
    let consumers = graph.consumers(OutletId {
        node: inner,
        port: 0,
    });
    if consumers.len() != 1 {
        return Err(format!(
            "not merged with the slice before it: that one has {} consumers (merging would \
             not remove a node)",
            consumers.len()
        ));
    }
    let i = decoded(graph, inner, inner_op).map_err(|e| format!("not merged: inner {e}"))?;
    let ranges = |p: &SlicePlan| ranges_only(p);
    // Try the plan's op first with the target clamping; a plan with new or shrunk axes needs
    // a StridedSlice.
    let mut emit = Emit::choose(format, &[inner_op, d.op], true, opset);
    let mut plan = emit.clone().and_then(|e| {
        compose::compose(
            &i.plan,
            inner_op.clamp(),
            &d.plan,
            d.op.clamp(),
            &i.dims,
            e.clamp(),
        )
        .map_err(|r| format!("not merged: {r}"))
    });
    if let Ok(p) = &plan {
        if !ranges(p) {
            emit = Emit::choose(format, &[inner_op, d.op], false, opset);
            plan = emit.clone().and_then(|e| {
                compose::compose(
                    &i.plan,
                    inner_op.clamp(),
                    &d.plan,
                    d.op.clamp(),
                    &i.dims,
                    e.clamp(),
                )
                .map_err(|r| format!("not merged: {r}"))
            });
        }
    }
    let (emit, plan) = (emit?, plan?);
    if !ranges(&plan) && matches!(emit, Emit::OnnxSlice | Emit::OvSlice8) {
        return Err("internal: a Slice chosen for a plan with new or shrunk axes".into());
    }
    // Translation validation on static inputs: the pair on an index tensor.
    let want = known_dims(&i.dims).and_then(|dims| {
        let (idx1, shape1) = select(&i.plan, &dims, inner_op.clamp())?;
        let (idx2, shape2) = select(&d.plan, &shape1, d.op.clamp())?;
        Some((
            idx2.iter().map(|&j| idx1[j as usize]).collect::<Vec<u64>>(),
            shape2,
        ))
    });
    let before = format!("{} then {}", i.plan, d.plan);
    replace_with_slice(
        graph,
        format,
        ix,
        i.data,
        &plan,
        &i.dims,
        emit,
        want.as_ref(),
    )?;
    graph.remove_node_lazily(inner);
    let (op_type, _) = op_of(emit);
    Ok(format!(
        "merged with the slice before it: {before} -> {op_type} {plan}"
    ))
}

/// The axis attribute of a Concat node, normalised for `rank`.
fn concat_axis(graph: &Graph, node: NodeIndex, rank: usize) -> Option<usize> {
    let n = graph.node(node);
    let a = match n.attr("axis")? {
        Attr::Int(v) => *v,
        Attr::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    let a = if a < 0 { a + rank as i64 } else { a };
    usize::try_from(a).ok().filter(|&a| a < rank)
}

/// The slice `ix` of a Concat selecting within one of its inputs: the same slice of that
/// input.
fn concat(
    graph: &mut Graph,
    ix: NodeIndex,
    d: &Decoded,
    format: Format,
    opset: i64,
) -> std::result::Result<String, String> {
    let cat = d.data.node;
    let rank = d.dims.len();
    let axis = concat_axis(graph, cat, rank).ok_or("left as is: Concat axis unreadable")?;
    let inputs: Vec<OutletId> = graph
        .inputs(cat)
        .into_iter()
        .collect::<Option<Vec<_>>>()
        .ok_or("left as is: a Concat input is missing")?;
    let mut sizes = Vec::with_capacity(inputs.len());
    for o in &inputs {
        let s = slice_node::declared_shape(graph, *o)
            .ok_or("left as is: Concat input shape unknown")?;
        if s.len() != rank {
            return Err("left as is: Concat input rank differs".into());
        }
        sizes.push(slice_node::to_dim(&s[axis]));
    }
    let (k, plan) = compose::within_concat(&d.plan, axis, &sizes, &d.dims, d.op.clamp())
        .map_err(|r| format!("slice of Concat left as is: {r}"))?;
    let src = inputs[k];
    let src_dims: Vec<Dim> = slice_node::declared_shape(graph, src)
        .ok_or("left as is: input shape unknown")?
        .iter()
        .map(slice_node::to_dim)
        .collect();
    let ranges = ranges_only(&plan);
    let emit = Emit::choose(format, &[d.op], ranges, opset)?;
    // The slice of the Concat on an index tensor: the positions shifted into input `k`.
    let want = match (known_dims(&d.dims), known_dims(&src_dims)) {
        (Some(all), Some(part)) => {
            let (idx, shape) =
                select(&d.plan, &all, d.op.clamp()).ok_or("left as is: the slice fails")?;
            // Map a flat index of the concatenation to one of input `k`, or refuse.
            let off: u64 = sizes[..k]
                .iter()
                .map(|s| s.as_known().unwrap_or(0) as u64)
                .sum();
            let inner: u64 = all[axis + 1..].iter().product();
            let mut mapped = Vec::with_capacity(idx.len());
            for &f in &idx {
                let (outer, rest) = (f / (all[axis] * inner), f % (all[axis] * inner));
                let (a, r) = (rest / inner, rest % inner);
                if a < off || a - off >= part[axis] {
                    return Err("left as is: translation validation: outside the input".into());
                }
                mapped.push((outer * part[axis] + (a - off)) * inner + r);
            }
            Some((mapped, shape))
        }
        _ => None,
    };
    let before = d.plan.to_string();
    replace_with_slice(
        graph,
        format,
        ix,
        src,
        &plan,
        &src_dims,
        emit,
        want.as_ref(),
    )?;
    Ok(format!(
        "slice {before} of Concat reads its input {k} only: now {plan} of that input"
    ))
}

/// ONNX `Shape` then `Slice` (step 1) as one `Shape(start, end)`, opset >= 15.
fn shape_slice(
    graph: &mut Graph,
    ix: NodeIndex,
    d: &Decoded,
    opset: i64,
) -> std::result::Result<String, String> {
    let shape_node = d.data.node;
    if let Some(what) = shape_slice_constant(graph, ix, d)? {
        return Ok(what);
    }
    if opset < 15 {
        return Err("Shape then Slice left as is: Shape has start/end from opset 15".into());
    }
    let n = graph.node(shape_node);
    if n.attr("start").is_some() || n.attr("end").is_some() {
        return Err("Shape then Slice left as is: the Shape has start/end already".into());
    }
    let src = graph
        .input(shape_node, 0)
        .ok_or("left as is: Shape input missing")?;
    let src_shape =
        slice_node::declared_shape(graph, src).ok_or("left as is: Shape input rank unknown")?;
    if src_shape.iter().all(|s| matches!(s, DeclaredDim::Known(_))) {
        return Err("Shape then Slice left as is: the shape is static (fold folds it)".into());
    }
    let r = src_shape.len() as u64;
    let resolved = semantics::resolve_concrete(&d.plan, &[r], d.op.clamp())
        .map_err(|e| format!("left as is: {e}"))?;
    let [semantics::ResolvedAxis::Range {
        start, step, len, ..
    }] = resolved[..]
    else {
        return Err("left as is: not a range".into());
    };
    if step != 1 && len > 1 {
        return Err("Shape then Slice left as is: a step other than 1".into());
    }
    let (start, end) = (start, start + len as i64);
    // Check: Shape(start, end) on rank r selects dims start..end (ONNX clamping of start/end
    // to [0, r]); the Slice selected the same on the shape vector.
    let want: Vec<u64> = semantics::gather(&d.plan, &[r], d.op.clamp(), DEFAULT_MAX_ELEMENTS)
        .map_err(|e| format!("left as is: {e}"))?;
    let got: Vec<u64> = (start.clamp(0, r as i64) as u64..end.clamp(0, r as i64) as u64).collect();
    if want != got {
        return Err("left as is: translation validation failed".into());
    }
    let out_value = graph.node(ix).outputs[0].clone();
    let name = graph.node(ix).name.clone();
    let mut b = Builder::new(graph, Format::Onnx, ix);
    let node = b.op(
        Some(name.into()),
        "Shape",
        "",
        &[Some(src)],
        vec![
            ("start".to_string(), Attr::Int(start)),
            ("end".to_string(), Attr::Int(end)),
        ],
        Some(out_value),
        Default::default(),
    );
    rewrite::take_over(graph, ix, node);
    Ok(format!(
        "Shape then Slice {} -> Shape(start={start}, end={end})",
        d.plan
    ))
}

/// ONNX `Shape` (no start/end) then `Slice` selecting only dims that are known: the constant
/// they make (`Shape(x)[-1:]` of an `[N, S, 32]` input is `[32]`). `Ok(None)`: a dim selected
/// is not known.
fn shape_slice_constant(
    graph: &mut Graph,
    ix: NodeIndex,
    d: &Decoded,
) -> std::result::Result<Option<String>, String> {
    let shape_node = d.data.node;
    let n = graph.node(shape_node);
    if n.attr("start").is_some() || n.attr("end").is_some() {
        return Ok(None);
    }
    let Some(src) = graph.input(shape_node, 0) else {
        return Ok(None);
    };
    let Some(src_shape) = slice_node::declared_shape(graph, src) else {
        return Ok(None);
    };
    let r = src_shape.len() as u64;
    let Ok(idx) = semantics::gather(&d.plan, &[r], d.op.clamp(), DEFAULT_MAX_ELEMENTS) else {
        return Ok(None);
    };
    let values: Option<Vec<i64>> = idx
        .iter()
        .map(|&i| match src_shape.get(i as usize) {
            Some(DeclaredDim::Known(v)) => i64::try_from(*v).ok(),
            _ => None,
        })
        .collect();
    let Some(values) = values else {
        return Ok(None);
    };
    let out = OutletId { node: ix, port: 0 };
    if graph
        .consumers(out)
        .iter()
        .any(|&(c, _)| graph.node(c).kind == NodeKind::Output)
    {
        return Ok(None);
    }
    let mut value = graph.node(ix).outputs[0].clone();
    value.ty = ValueType {
        dtype: Some(DType::I64),
        shape: Some(vec![DeclaredDim::Known(values.len() as u64)]),
    };
    value.ty_changed = true;
    let mut b = Builder::new(graph, Format::Onnx, ix);
    let c = b.const_i64("dims", &values);
    graph.node_mut(c.node).outputs[0] = value;
    rewrite::take_over(graph, ix, c.node);
    Ok(Some(format!(
        "Shape then Slice {} selects known dims only: the constant {values:?}",
        d.plan
    )))
}
