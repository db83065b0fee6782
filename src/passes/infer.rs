//! Pass `infer`: shape inference of every Slice / StridedSlice output.
//!
//! Nodes are visited in topological order, so a slice of a slice sees the shape inferred for its
//! input. The inferred shape replaces the declared one (ONNX `value_info` / graph output,
//! OpenVINO output port `<dim>`s); symbolic results become ONNX `dim_param` expressions such as
//! `N - 1`, and OpenVINO interval dims where only bounds are known.

use crate::error::{Error, Result};
use crate::formats::{Format, Model};
use crate::ir::ValueType;
use crate::passes::shapes;
use crate::passes::slice_node::{self, DecodeError};
use crate::pipeline::{Change, PassReport};
use crate::semantics;

/// The inferred output type of one slice node (as the file will declare it, and as exact
/// [`semantics::Dim`]s), or why there is none.
pub type Inferred = std::result::Result<(ValueType, Vec<semantics::Dim>), DecodeError>;

/// The inferred output type of the slice node `ix` as the file will declare it.
pub fn infer_type(
    model: &Model,
    ix: petgraph::stable_graph::NodeIndex,
) -> Option<std::result::Result<ValueType, DecodeError>> {
    infer_node(model, ix).map(|r| r.map(|(t, _)| t))
}

/// Infers the output type of the slice node `ix` (`None` if it is not a slice node).
pub fn infer_node(model: &Model, ix: petgraph::stable_graph::NodeIndex) -> Option<Inferred> {
    let graph = model.graph();
    let opset = model.onnx_opset();
    let op = slice_node::classify(graph, ix, model.format(), opset)?;
    Some((|| -> Inferred {
        let sn = slice_node::decode(graph, ix, op)?;
        let declared = slice_node::declared_shape(graph, sn.data).unwrap_or_default();
        let dims: Vec<semantics::Dim> = declared.iter().map(slice_node::to_dim).collect();
        let out =
            semantics::resolve_dims(&sn.plan, &dims, op.clamp()).map_err(DecodeError::Invalid)?;
        let symbolic = model.format() == Format::Onnx;
        let dtype = graph
            .constant_at(sn.data)
            .map(|t| t.dtype)
            .or_else(|| graph.value(sn.data).and_then(|v| v.ty.dtype));
        let ty = ValueType {
            dtype,
            shape: Some(
                out.iter()
                    .map(|d| slice_node::from_dim(d, symbolic))
                    .collect(),
            ),
        };
        Ok((ty, out))
    })())
}

/// Runs shape inference on every slice node of `model`. Invalid parameters are an error naming
/// the node; a node whose input shape or parameters are unknown is reported as skipped.
pub fn run(model: &mut Model, report: &mut PassReport) -> Result<()> {
    let order = model
        .graph()
        .topo_order()
        .map_err(|c| Error::cycle(model.path(), c))?;
    let format = model.format();
    for ix in order {
        let Some(result) = infer_node(model, ix) else {
            shapes::refine_node(model.graph_mut(), ix, format);
            continue;
        };
        let node = model.graph().node(ix);
        let (name, op) = (node.name.clone(), node.op_type.clone());
        match result {
            Ok((mut ty, dims)) => {
                let before = node
                    .outputs
                    .first()
                    .map(|v| v.ty.clone())
                    .unwrap_or_default();
                if ty.dtype.is_none() {
                    ty.dtype = before.dtype;
                }
                if ty != before {
                    report.changes.push(Change {
                        node: name,
                        op,
                        what: "shape inferred".into(),
                        before: Some(crate::ir::show_shape(before.shape.as_deref())),
                        after: Some(crate::ir::show_shape(Some(&dims))),
                    });
                    let n = model.graph_mut().node_mut(ix);
                    if let Some(v) = n.outputs.first_mut() {
                        v.ty = ty;
                        v.ty_changed = true;
                    }
                }
            }
            Err(DecodeError::Invalid(source)) => {
                return Err(Error::Slice {
                    node: name,
                    op,
                    source,
                })
            }
            Err(DecodeError::Malformed(message)) => {
                return Err(Error::Node {
                    path: model.path().to_path_buf(),
                    node: name,
                    op,
                    message,
                })
            }
            Err(DecodeError::Unknown(why)) => report.skipped.push(Change {
                node: name,
                op,
                what: why,
                before: None,
                after: None,
            }),
        }
    }
    Ok(())
}
