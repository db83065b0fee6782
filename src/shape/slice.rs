//! Slice ops (ONNX `Slice`, OpenVINO `Slice`/`StridedSlice`, TensorFlow-style `StridedSlice`):
//! decoded with the facts of their inputs (the data rank, constant or propagated parameter
//! values) and resolved by the semantics core; a slice of a small symbolic value slices the value.

use petgraph::stable_graph::NodeIndex;

use super::{Ctx, Fact, Facts, MAX_VALUE_ELEMENTS};
use crate::ir::Graph;
use crate::passes::slice_node::{self, DecodeError, SliceNode, SliceOp};
use crate::semantics::{self, Dim};

/// Decodes the slice node `ix` with `facts` and resolves its output dims.
pub fn slice_dims(
    graph: &Graph,
    facts: &Facts,
    ix: NodeIndex,
    op: SliceOp,
) -> Result<(SliceNode, Vec<Dim>), DecodeError> {
    let sn = slice_node::decode_with(graph, ix, op, Some(facts))?;
    // Borrowed, not cloned: one allocation less for each of a graph's slices.
    let dims = facts
        .get(sn.data)
        .shape
        .as_deref()
        .ok_or_else(|| DecodeError::Unknown("the rank of the data input is unknown".into()))?;
    let mut out =
        semantics::resolve_dims(&sn.plan, dims, op.clamp()).map_err(DecodeError::Invalid)?;
    symbolic_params(graph, facts, ix, op, &mut out);
    // Runtimes that disagree on this node (issue 42, pattern G): a dim that holds for each reading.
    if let Some(split) = slice_node::runtime_split(op, &sn.plan, dims) {
        out = split.dims(dims, &out).map_err(DecodeError::Invalid)?;
    }
    Ok((sn, out))
}

/// The rule for slice nodes (`None`: not a slice).
pub(crate) fn rule(cx: &Ctx) -> Option<Vec<Fact>> {
    let op = slice_node::classify(cx.graph, cx.ix, cx.format, cx.onnx_opset)?;
    let data = cx.input(0);
    let resolved = slice_dims(cx.graph, cx.facts, cx.ix, op);
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

/// A start or end index `i` (any sign) clamped into `[0, d]` as ONNX `Slice` and OpenVINO
/// `Slice-8` do for a positive step: `i < 0 ? max(i + d, 0) : min(i, d)`. Exact when the sign
/// of `i` follows from its bounds; otherwise, for a known `d`, the branch-free form
/// `min(max(i, 0), d) + max(min(i + d, -d * i), 0)` (the second term is `max(i + d, 0)` for
/// `i < 0` and 0 for `i >= 0`, since `-d * i >= d > i + d` there). `None` when neither applies.
fn clamp_index(i: &Dim, d: &Dim) -> Option<Dim> {
    let zero = Dim::known(0);
    let (lo, hi) = i.bounds();
    if lo.is_some_and(|l| l >= 0) {
        return Some(i.min(d));
    }
    if hi.is_some_and(|h| h < 0) {
        return Some(i.add(d).max(&zero));
    }
    let dk = d.as_known()?;
    let neg = super::mul_const(i, dk.checked_neg()?);
    Some(i.max(&zero).min(d).add(&i.add(d).min(&neg).max(&zero)))
}

/// ONNX `Slice` (opset 10+) and OpenVINO `Slice-8` whose start/end are not constant but carry
/// symbolic values (`k_len - q_len`): each such axis with a known positive step gets the exact
/// length. An interim rule until the semantics core's `resolve` accepts `Dim` bounds; it only
/// replaces dims that `resolve` left unknown.
fn symbolic_params(graph: &Graph, facts: &Facts, ix: NodeIndex, op: SliceOp, dims: &mut [Dim]) {
    // Only unknown dims are replaced: with none, there is nothing to look up (most slices).
    if !dims.iter().any(Dim::is_unknown) {
        return;
    }
    let inputs = graph.inputs(ix);
    let fact = |p: usize| inputs.get(p).copied().flatten().map(|o| facts.get(o));
    let has = |p: usize| fact(p).is_some();
    let value = |p: usize| fact(p).and_then(|f| f.value.as_deref());
    let ints = |p: usize| fact(p).and_then(Fact::known_value);
    let (starts, ends, axes, steps) = match op {
        SliceOp::OnnxSlice { opset } if opset >= 10 => (1, 2, 3, 4),
        SliceOp::OvSlice8 => (1, 2, 4, 3),
        _ => return,
    };
    let (Some(data), Some(s), Some(e)) = (
        fact(0).and_then(|f| f.shape.as_deref()),
        value(starts),
        value(ends),
    ) else {
        return;
    };
    if s.len() != e.len() || data.len() != dims.len() {
        return;
    }
    let axes: Vec<usize> = if has(axes) {
        let Some(a) = ints(axes) else { return };
        let Some(a) = a
            .into_iter()
            .map(|a| super::norm_axis(a, data.len()))
            .collect::<Option<Vec<_>>>()
        else {
            return;
        };
        a
    } else {
        (0..s.len()).collect()
    };
    let steps = if has(steps) {
        match ints(steps) {
            Some(v) => v,
            None => return,
        }
    } else {
        vec![1; s.len()]
    };
    if axes.len() != s.len() || steps.len() != s.len() {
        return;
    }
    for (k, &a) in axes.iter().enumerate() {
        let step = steps[k];
        if step <= 0 || !dims[a].is_unknown() || (s[k].is_known() && e[k].is_known()) {
            continue;
        }
        let d = &data[a];
        if let (Some(b), Some(f)) = (clamp_index(&s[k], d), clamp_index(&e[k], d)) {
            let len = f.sub(&b).max(&Dim::known(0));
            dims[a] = len.add_const(step - 1).div_floor(step);
        }
    }
}
