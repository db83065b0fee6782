//! Slice ops (ONNX `Slice`, OpenVINO `Slice`/`StridedSlice`, TensorFlow-style `StridedSlice`):
//! decoded with the facts of their inputs (the data rank, constant or propagated parameter
//! values) and resolved by the semantics core; a slice of a small symbolic value slices the value.

use petgraph::stable_graph::NodeIndex;

use super::slice_node::{self, DecodeError, SliceNode, SliceOp};
use super::{Ctx, Fact, Facts, MAX_VALUE_ELEMENTS};
use crate::ir::Graph;
use crate::semantics::{self, AxisPlan, Bound, Dim, SlicePlan, SymParams};

/// Decodes the slice node `ix` with `facts` and resolves its output dims.
pub fn slice_dims(
    graph: &Graph,
    facts: &Facts,
    ix: NodeIndex,
    op: SliceOp,
) -> Result<(SliceNode, Vec<Dim>), DecodeError> {
    let sn = slice_node::decode_with(graph, ix, op, Some(facts))?;
    let dims = resolve(graph, facts, ix, &sn)?;
    Ok((sn, dims))
}

/// [`slice_dims`], the plan and the dims of a slice with constant parameters taken from `memo`
/// (and kept there). The decoded node is given only when `want_node` (or when it had to be
/// built anyway).
pub(crate) fn slice_dims_memo(
    graph: &Graph,
    facts: &Facts,
    ix: NodeIndex,
    op: SliceOp,
    memo: &mut slice_node::PlanMemo,
    want_node: bool,
) -> Result<(Option<SliceNode>, Vec<Dim>), DecodeError> {
    let (data, entry) = match slice_node::look_up(graph, ix, op, Some(facts), memo)? {
        slice_node::Looked::Plain(sn) => {
            let dims = resolve(graph, facts, ix, &sn)?;
            return Ok((Some(sn), dims));
        }
        slice_node::Looked::Entry(data, entry) => (data, entry),
    };
    let slice_node::MemoEntry { decoded, resolved } = entry;
    let (plan, provenance) = decoded.as_ref().map_err(Clone::clone)?;
    let node = || SliceNode {
        op,
        data,
        plan: plan.clone(),
        provenance: provenance.clone(),
    };
    if !plan.is_constant() {
        let sn = node();
        let dims = resolve(graph, facts, ix, &sn)?;
        return Ok((Some(sn), dims));
    }
    let dims = data_dims(facts, data)?;
    let out = match resolved.iter().find(|(d, _)| d[..] == *dims) {
        Some((_, r)) => r.clone(),
        None => {
            let r = resolve_constant(op, plan, dims);
            if resolved.len() < slice_node::MemoEntry::RESOLVED {
                resolved.push((dims.to_vec(), r.clone()));
            }
            r
        }
    }?;
    Ok((want_node.then(node), out))
}

/// The dims of the slice's data input `data` (an error when its shape is unknown).
fn data_dims(facts: &Facts, data: crate::ir::OutletId) -> Result<&[Dim], DecodeError> {
    // Borrowed, not cloned: one allocation less for each of a graph's slices.
    facts
        .get(data)
        .shape
        .as_deref()
        .ok_or_else(|| DecodeError::Unknown("the rank of the data input is unknown".into()))
}

/// The output dims of the decoded slice `sn` (node `ix`) on its data's dims in `facts`.
fn resolve(
    graph: &Graph,
    facts: &Facts,
    ix: NodeIndex,
    sn: &SliceNode,
) -> Result<Vec<Dim>, DecodeError> {
    let dims = data_dims(facts, sn.data)?;
    // Begins and ends that are not constants but expressions (`k_len - q_len`, `-seq` computed
    // from `Shape`) go where the decoder says each element is read. A constant plan has none:
    // it is resolved with no parameters (not an empty set built and dropped for each slice).
    if sn.plan.is_constant() {
        return resolve_constant(sn.op, &sn.plan, dims);
    }
    let values = |port: Option<usize>| list_value(graph, facts, ix, port);
    let mut params = SymParams::from_provenance(
        &sn.provenance,
        values(sn.ports().begin),
        values(sn.ports().end),
    );
    let edges = ends_at_dim(&sn.plan, dims, &mut params);
    let out = semantics::resolve_dims_sym(
        edges.as_ref().unwrap_or(&sn.plan),
        dims,
        sn.op.clamp(),
        &params,
    )
    .map_err(DecodeError::Invalid)?;
    split_dims(sn.op, &sn.plan, dims, out)
}

/// The output dims of the constant plan `plan` of an `op` slice on input `dims`.
fn resolve_constant(op: SliceOp, plan: &SlicePlan, dims: &[Dim]) -> Result<Vec<Dim>, DecodeError> {
    let out = semantics::resolve_dims_sym(plan, dims, op.clamp(), &NO_PARAMS)
        .map_err(DecodeError::Invalid)?;
    split_dims(op, plan, dims, out)
}

/// `out` as it holds where the runtimes disagree on the node (issue 42, pattern G): a dim that
/// holds for each reading.
fn split_dims(
    op: SliceOp,
    plan: &SlicePlan,
    dims: &[Dim],
    out: Vec<Dim>,
) -> Result<Vec<Dim>, DecodeError> {
    match slice_node::runtime_split(op, plan, dims) {
        Some(split) => split.dims(dims, &out).map_err(DecodeError::Invalid),
        None => Ok(out),
    }
}

/// The parameters of a constant plan: none.
static NO_PARAMS: SymParams = SymParams {
    begin: Vec::new(),
    end: Vec::new(),
};

/// A positive-step range whose end is the axis's own symbolic dim (`x[0:n]` on an axis of size
/// `n`, with `n` read by `Shape`: how exporters write "to the end") stops at the edge, for every
/// value of the symbols and under every clamping rule: such an end becomes [`Bound::Edge`] in a
/// copy of the plan (returned; `None` when there is none) and leaves `params`. The resolver
/// gives the same dim either way; this way it needs no expression algebra for it (which cost
/// 15,000 instructions a slice).
pub(crate) fn ends_at_dim(
    plan: &SlicePlan,
    dims: &[Dim],
    params: &mut SymParams,
) -> Option<SlicePlan> {
    let mut edges: Option<SlicePlan> = None;
    for (k, a) in plan.axes.iter().enumerate() {
        let AxisPlan::Range {
            axis,
            end: Bound::Dynamic,
            step: Some(s),
            ..
        } = *a
        else {
            continue;
        };
        let Some(slot) = params.end.get_mut(k) else {
            continue;
        };
        let at_dim = match (slot.as_ref(), dims.get(axis)) {
            (Some(v), Some(d)) => s > 0 && v == d && !d.is_known() && !d.is_unknown(),
            _ => false,
        };
        if at_dim {
            *slot = None;
            if let Some(AxisPlan::Range { end, .. }) =
                edges.get_or_insert_with(|| plan.clone()).axes.get_mut(k)
            {
                *end = Bound::Edge;
            }
        }
    }
    edges
}

/// The propagated value of the 1-D list at input `port` of `ix` (empty when it has none): the
/// same value the decoder read its known elements from.
pub(crate) fn list_value<'f>(
    graph: &Graph,
    facts: &'f Facts,
    ix: NodeIndex,
    port: Option<usize>,
) -> &'f [Dim] {
    let fact = port.and_then(|p| graph.input(ix, p)).map(|o| facts.get(o));
    match fact.map(|f| (f.value.as_deref(), f.shape.as_deref())) {
        Some((Some(v), Some([_]))) => v,
        _ => &[],
    }
}

/// The rule for slice nodes (`None`: not a slice).
pub(crate) fn rule(cx: &Ctx) -> Option<Vec<Fact>> {
    let op = slice_node::classify(cx.graph, cx.ix, cx.format, cx.onnx_opset)?;
    let data = cx.input(0);
    let resolved = slice_dims_memo(
        cx.graph,
        cx.facts,
        cx.ix,
        op,
        &mut cx.plans.borrow_mut(),
        data.value.is_some(),
    );
    *cx.slice_dims.borrow_mut() = Some(match &resolved {
        // Merging with the declared shape replaces only unknown dims: without one, the
        // output fact's shape is these dims.
        Ok((_, dims)) if !dims.iter().any(Dim::is_unknown) => Ok(None),
        Ok((_, dims)) => Ok(Some(dims.clone())),
        Err(e) => Err(e.clone()),
    });
    let (shape, value) = match resolved {
        Ok((sn, dims)) => {
            // A slice of a small value with a constant plan slices the value.
            let value = data.value.as_ref().and_then(|v| {
                let sn = sn.as_ref()?;
                if !sn.plan.is_constant() {
                    return None;
                }
                // No value where the runtimes disagree on it (issue 42, pattern G).
                if slice_node::runtime_split(op, &sn.plan, data.shape.as_deref()?).is_some() {
                    return None;
                }
                let in_dims: Vec<u64> = data
                    .known_shape()?
                    .into_iter()
                    .map(|d| u64::try_from(d).ok())
                    .collect::<Option<_>>()?;
                let idx =
                    semantics::gather(&sn.plan, &in_dims, op.clamp(), MAX_VALUE_ELEMENTS as u64)
                        .ok()?;
                idx.iter()
                    .map(|&i| v.get(usize::try_from(i).ok()?).cloned())
                    .collect::<Option<Vec<Dim>>>()
            });
            (Some(dims), value)
        }
        Err(_) => {
            // ONNX Slice and OpenVINO Slice keep the rank; each dim is at most the input's.
            let keeps_rank = matches!(op, SliceOp::OnnxSlice { .. } | SliceOp::OvSlice8);
            let shape = data.shape.as_ref().filter(|_| keeps_rank).map(|s| {
                s.iter()
                    .map(|d| Dim::unknown_bounded(0, d.bounds().1))
                    .collect()
            });
            (shape, None)
        }
    };
    Some(vec![Fact {
        dtype: data.dtype,
        shape,
        value: None,
    }
    .with_value(value)])
}
