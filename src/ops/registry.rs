//! The ops slice-opt can evaluate on constants, in one table: op name × dialect → family, what
//! the op needs before it can be evaluated (constant inputs, or only its input's dims), and the
//! function computing its value from typed attributes ([`super::attrs`]) and the evaluator
//! ([`super::eval`]). The `fold` pass looks a node up here; to fold a new op, add its row and
//! its function in this file (and, when it is a new kind of computation, the computation in the
//! `eval/` file of its family).
//!
//! Slices are not in the table: recognising and decoding them needs the graph
//! (`shape::slice_node`), and `fold` evaluates them with [`super::eval::slice`] directly.

use bytes::Bytes;

use super::attrs::{self, AttrError, CastTo, GatherAxis, ReshapeAttrs, SqueezeAxes};
use super::eval::{self, Arith, EvalError};
use crate::ir::{Attr, DType, Format, Node, Tensor, TensorData};

/// The op families, named after the files holding their values (`ops/eval/`) and their shape
/// rules (`shape/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `Shape` / `ShapeOf`: the value is the input's dims (`shape/gather.rs`).
    Shape,
    /// `Gather` (`eval/slice.rs`, `shape/gather.rs`).
    Select,
    /// `Identity`, `Concat`, `Squeeze`, `Unsqueeze`, `Reshape` (`eval/manip.rs`,
    /// `shape/manip.rs`).
    Manip,
    /// `Cast` / `Convert` (`eval/cast.rs`).
    Cast,
    /// Integer `Add`, `Sub`, `Mul`, `Div`, `Range`, `ConstantOfShape` (`eval/arith.rs`,
    /// `shape/elementwise.rs`).
    Arith,
}

/// What a node must offer before its op can be evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Every connected input is a constant ([`Inputs::consts`]).
    Constants,
    /// The dims of input 0 are all known ([`Inputs::dims`]); the inputs need not be constant.
    InputDims,
}

/// What an evaluation function reads.
pub struct Inputs<'a> {
    pub node: &'a Node,
    pub dialect: Format,
    /// One per input port (`None`: the port is not connected); empty unless
    /// [`Needs::Constants`].
    pub consts: &'a [Option<&'a Tensor>],
    /// The dims of input 0; empty unless [`Needs::InputDims`].
    pub dims: &'a [u64],
    /// A tensor attribute the IR does not keep (ONNX `ConstantOfShape`'s `value`), read from
    /// the node's record.
    pub tensor_attr: &'a dyn Fn(&str) -> Option<Tensor>,
    /// The largest result, in bytes.
    pub limit: u64,
}

impl Inputs<'_> {
    fn input(&self, port: usize) -> Option<&Tensor> {
        self.consts.get(port).copied().flatten()
    }
}

/// Why a node was not evaluated.
#[derive(Debug, Clone, PartialEq)]
pub enum NoEval {
    /// Nothing to report: an input is missing or of a kind this op is not evaluated for.
    Silent,
    /// Worth reporting (too large, unsupported type or attribute...).
    Skip(String),
}

impl From<EvalError> for NoEval {
    fn from(e: EvalError) -> Self {
        NoEval::Skip(e.to_string())
    }
}

impl From<AttrError> for NoEval {
    fn from(e: AttrError) -> Self {
        NoEval::Skip(e.to_string())
    }
}

/// An attribute check made before the inputs are looked at.
pub type Precheck = fn(&Node) -> Result<(), AttrError>;

/// Computes a node's value.
pub type EvalFn = fn(&Inputs) -> Result<Tensor, NoEval>;

/// One row of [`OPS`].
pub struct OpEntry {
    pub op: &'static str,
    pub dialect: Format,
    pub family: Family,
    pub needs: Needs,
    /// An attribute check made before the inputs are looked at: its refusal is reported even
    /// when the inputs are not constant.
    pub precheck: Option<Precheck>,
    pub eval: EvalFn,
}

const fn row(op: &'static str, dialect: Format, family: Family, eval: EvalFn) -> OpEntry {
    OpEntry {
        op,
        dialect,
        family,
        needs: Needs::Constants,
        precheck: None,
        eval,
    }
}

use Family::*;
use Format::{Onnx, OpenVino};

/// Every op evaluated on constants. ONNX rows match the default domain (`""` or `ai.onnx`)
/// only; OpenVINO rows every opset.
pub const OPS: &[OpEntry] = &[
    OpEntry {
        needs: Needs::InputDims,
        ..row("Shape", Onnx, Shape, onnx_shape)
    },
    OpEntry {
        needs: Needs::InputDims,
        ..row("ShapeOf", OpenVino, Shape, ov_shape_of)
    },
    row("Identity", Onnx, Manip, identity),
    row("Gather", Onnx, Select, gather),
    row("Gather", OpenVino, Select, gather),
    row("Concat", Onnx, Manip, concat),
    row("Concat", OpenVino, Manip, concat),
    row("Squeeze", Onnx, Manip, squeeze),
    row("Squeeze", OpenVino, Manip, squeeze),
    row("Unsqueeze", Onnx, Manip, unsqueeze),
    row("Unsqueeze", OpenVino, Manip, unsqueeze),
    row("Reshape", Onnx, Manip, reshape),
    row("Reshape", OpenVino, Manip, reshape),
    row("Cast", Onnx, Cast, cast),
    row("Convert", OpenVino, Cast, cast),
    row("Add", Onnx, Arith, |i| binary(i, Arith::Add)),
    row("Sub", Onnx, Arith, |i| binary(i, Arith::Sub)),
    row("Mul", Onnx, Arith, |i| binary(i, Arith::Mul)),
    row("Div", Onnx, Arith, |i| binary(i, Arith::DivTrunc)),
    OpEntry {
        precheck: Some(attrs::ov_numpy_broadcast),
        ..row("Add", OpenVino, Arith, |i| binary(i, Arith::Add))
    },
    OpEntry {
        precheck: Some(attrs::ov_numpy_broadcast),
        ..row("Subtract", OpenVino, Arith, |i| binary(i, Arith::Sub))
    },
    OpEntry {
        precheck: Some(attrs::ov_numpy_broadcast),
        ..row("Multiply", OpenVino, Arith, |i| binary(i, Arith::Mul))
    },
    OpEntry {
        precheck: Some(attrs::ov_numpy_broadcast),
        ..row("Divide", OpenVino, Arith, ov_divide)
    },
    row("Range", Onnx, Arith, range),
    row("ConstantOfShape", Onnx, Arith, constant_of_shape),
];

/// The row for `node` in a graph of `dialect`, if its op is evaluated.
pub fn lookup(node: &Node, dialect: Format) -> Option<&'static OpEntry> {
    if dialect == Onnx && !(node.domain.is_empty() || node.domain == "ai.onnx") {
        return None;
    }
    OPS.iter()
        .find(|e| e.dialect == dialect && e.op == node.op_type.as_str())
}

fn dims_tensor(dims: &[u64]) -> Tensor {
    let dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    Tensor::from_i64(vec![dims.len() as u64], &dims)
}

fn onnx_shape(i: &Inputs) -> Result<Tensor, NoEval> {
    let (start, end) = attrs::shape_range(i.node, i.dims.len());
    Ok(dims_tensor(
        i.dims.get(start..end.max(start)).unwrap_or(&[]),
    ))
}

fn ov_shape_of(i: &Inputs) -> Result<Tensor, NoEval> {
    let t = dims_tensor(i.dims);
    match attrs::shape_of_type(i.node) {
        DType::I32 => Ok(eval::cast(&t, DType::I32, i.limit)?),
        _ => Ok(t),
    }
}

fn identity(i: &Inputs) -> Result<Tensor, NoEval> {
    i.input(0).cloned().ok_or(NoEval::Silent)
}

fn gather(i: &Inputs) -> Result<Tensor, NoEval> {
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let idx = i.input(1).ok_or(NoEval::Silent)?;
    let axis = GatherAxis::of(i.node, i.dialect, i.input(2))?;
    let indices = attrs::input_ints(Some(idx))?;
    Ok(eval::gather(data, &indices, &idx.shape, axis, i.limit)?)
}

fn concat(i: &Inputs) -> Result<Tensor, NoEval> {
    let parts: Vec<&Tensor> = i.consts.iter().flatten().copied().collect();
    Ok(eval::concat(&parts, attrs::concat_axis(i.node), i.limit)?)
}

fn squeeze(i: &Inputs) -> Result<Tensor, NoEval> {
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let axes = SqueezeAxes::of(i.node, i.input(1))?;
    Ok(eval::reshape(
        data,
        eval::squeeze_shape(&data.shape, &axes)?,
    )?)
}

fn unsqueeze(i: &Inputs) -> Result<Tensor, NoEval> {
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let axes = SqueezeAxes::of(i.node, i.input(1))?;
    Ok(eval::reshape(
        data,
        eval::unsqueeze_shape(&data.shape, &axes)?,
    )?)
}

fn reshape(i: &Inputs) -> Result<Tensor, NoEval> {
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let target = attrs::input_ints(i.input(1))?;
    let zero_copies = ReshapeAttrs::of(i.node, i.dialect).zero_copies;
    let shape = eval::reshape_target(&data.shape, &target, zero_copies)?;
    Ok(eval::reshape(data, shape)?)
}

fn cast(i: &Inputs) -> Result<Tensor, NoEval> {
    let data = i.input(0).ok_or(NoEval::Silent)?;
    let to = CastTo::of(i.node, i.dialect)?;
    Ok(eval::cast(data, to, i.limit)?)
}

/// An element-wise integer operation of two constant inputs; float arithmetic is not shape
/// arithmetic and is left to the runtime.
fn binary(i: &Inputs, op: Arith) -> Result<Tensor, NoEval> {
    match i.consts {
        [Some(a), Some(b)] if a.dtype.is_index_type() => Ok(eval::arith(a, b, op, i.limit)?),
        _ => Err(NoEval::Silent),
    }
}

fn ov_divide(i: &Inputs) -> Result<Tensor, NoEval> {
    let op = if attrs::ov_python_div(i.node) {
        Arith::DivFloor
    } else {
        Arith::DivTrunc
    };
    binary(i, op)
}

fn range(i: &Inputs) -> Result<Tensor, NoEval> {
    match i.consts {
        [Some(s), Some(e), Some(d)] => Ok(eval::range(s, e, d, i.limit)?),
        _ => Err(NoEval::Silent),
    }
}

/// ONNX `ConstantOfShape`: `value` defaults to one f32 zero.
fn constant_of_shape(i: &Inputs) -> Result<Tensor, NoEval> {
    let shape = attrs::input_ints(i.input(0))?;
    let value = match i.node.attr("value") {
        Some(Attr::Tensor(t)) => t.as_ref().clone(),
        None => Tensor {
            dtype: DType::F32,
            shape: vec![1],
            data: TensorData::Raw(Bytes::from(vec![0u8; 4])),
        },
        Some(_) => (i.tensor_attr)("value")
            .ok_or_else(|| NoEval::Skip("ConstantOfShape value is not a readable tensor".into()))?,
    };
    Ok(eval::fill(&shape, &value, i.limit)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each (op, dialect) has one row, and an ONNX node of another domain is not evaluated.
    #[test]
    fn one_row_per_op_and_dialect() {
        for (k, a) in OPS.iter().enumerate() {
            for b in &OPS[k + 1..] {
                assert!(
                    !(a.op == b.op && a.dialect == b.dialect),
                    "{} {:?} twice",
                    a.op,
                    a.dialect
                );
            }
        }
        let mut n = Node::op("n", "Add", "com.microsoft");
        assert!(lookup(&n, Onnx).is_none());
        n.domain = "".into();
        assert_eq!(lookup(&n, Onnx).map(|e| e.family), Some(Arith));
        n.op_type = "Subtract".into();
        assert!(lookup(&n, Onnx).is_none());
        assert!(lookup(&n, OpenVino).is_some());
    }

    /// ONNX Range(3, 9, 3) = [3, 6] (the operator's documented example), through the table.
    #[test]
    fn a_row_evaluates() {
        let n = Node::op("r", "Range", "");
        let s = |v| Tensor::from_i64(vec![], &[v]);
        let (a, b, c) = (s(3), s(9), s(3));
        let consts = [Some(&a), Some(&b), Some(&c)];
        let no_attr = |_: &str| None;
        let e = lookup(&n, Onnx).expect("Range is a row");
        let t = (e.eval)(&Inputs {
            node: &n,
            dialect: Onnx,
            consts: &consts,
            dims: &[],
            tensor_attr: &no_attr,
            limit: 1 << 20,
        })
        .expect("evaluates");
        assert_eq!(t.to_i64_vec().expect("ints"), [3, 6]);
    }
}
