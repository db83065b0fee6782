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
    let dims = facts
        .get(sn.data)
        .shape
        .clone()
        .ok_or_else(|| DecodeError::Unknown("the rank of the data input is unknown".into()))?;
    let out = semantics::resolve_dims(&sn.plan, &dims, op.clamp()).map_err(DecodeError::Invalid)?;
    Ok((sn, out))
}

/// The rule for slice nodes (`None`: not a slice).
pub(crate) fn rule(cx: &Ctx) -> Option<Vec<Fact>> {
    let op = slice_node::classify(cx.graph, cx.ix, cx.format, cx.onnx_opset)?;
    let data = cx.input(0);
    let (shape, value) = match slice_dims(cx.graph, cx.facts, cx.ix, op) {
        Ok((sn, dims)) => {
            // A slice of a small 1-D value with a constant plan slices the value.
            let value = data.value.as_ref().and_then(|v| {
                if data.rank() != Some(1) || !sn.plan.is_constant() {
                    return None;
                }
                let idx = semantics::gather(
                    &sn.plan,
                    &[v.len() as u64],
                    op.clamp(),
                    MAX_VALUE_ELEMENTS as u64,
                )
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
