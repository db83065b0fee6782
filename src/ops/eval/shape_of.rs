//! Values of the shape sources: ONNX `Shape` (with `start`/`end`), OpenVINO `ShapeOf`. They
//! need only their input's dims, not its value. Their shape rules are in `shape/gather.rs`.

use crate::ir::Format::{Onnx, OpenVino};
use crate::ir::{DType, Tensor};
use crate::ops::attrs;
use crate::ops::registry::{row, Inputs, Needs, NoEval, OpEntry};

use super::cast;

/// The dims as a 1-D i64 tensor.
pub fn dims_tensor(dims: &[u64]) -> Tensor {
    let dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    Tensor::from_i64(vec![dims.len() as u64], &dims)
}

// The ops of this family that `fold` evaluates on constants: their rows of
// `ops::registry::OPS`, and the functions reading a node's inputs and attributes.

/// Rows of [`crate::ops::registry::OPS`].
pub(crate) const OPS: &[OpEntry] = &[
    OpEntry {
        needs: Needs::InputDims,
        ..row("Shape", Onnx, onnx_shape_node)
    },
    OpEntry {
        needs: Needs::InputDims,
        ..row("ShapeOf", OpenVino, ov_shape_of_node)
    },
];

fn onnx_shape_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let (start, end) = attrs::shape_range(i.node, i.dims.len());
    Ok(dims_tensor(
        i.dims.get(start..end.max(start)).unwrap_or(&[]),
    ))
}

fn ov_shape_of_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let t = dims_tensor(i.dims);
    match attrs::shape_of_type(i.node) {
        DType::I32 => Ok(cast(&t, DType::I32, i.limit)?),
        _ => Ok(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Attr, Node};

    /// ONNX Shape-15 on dims [2, 3, 4] with start=-2 is [3, 4] (the operator's documented
    /// example `start: -1` gives the last dim; here the last two); OpenVINO ShapeOf with
    /// output_type i32 gives i32.
    #[test]
    fn shape_values() {
        let mut n = Node::op("s", "Shape", "");
        n.attrs = vec![("start".into(), Attr::Int(-2))];
        let no_attr = |_: &str| None;
        let i = Inputs {
            node: &n,
            dialect: Onnx,
            consts: &[],
            dims: &[2, 3, 4],
            tensor_attr: &no_attr,
            limit: 1 << 20,
        };
        assert_eq!(onnx_shape_node(&i).unwrap().to_i64_vec().unwrap(), [3, 4]);
        let mut n = Node::op("s", "ShapeOf", "opset3");
        n.attrs = vec![("output_type".into(), Attr::String("i32".into()))];
        let t = ov_shape_of_node(&Inputs {
            node: &n,
            dialect: OpenVino,
            ..i
        })
        .unwrap();
        assert_eq!((t.dtype, t.shape.clone()), (DType::I32, vec![3]));
        assert_eq!(t.to_i64_vec().unwrap(), [2, 3, 4]);
    }
}
