//! Elementwise ops: unary (shape and type unchanged), binary and ternary with numpy broadcasting
//! (ONNX multidirectional broadcasting, OpenVINO `auto_broadcast="numpy"`), and the integer
//! arithmetic of shape computations on symbolic values (`Add`, `Sub`, `Mul`, `Div`, `Min`, `Max`).

use super::{mul, Ctx, Fact};
use crate::ir::DType;
use crate::semantics::Dim;

const UNARY: &[&str] = &[
    "Identity",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Exp",
    "Log",
    "Neg",
    "Negative",
    "Abs",
    "Sqrt",
    "Softmax",
    "LogSoftmax",
    "Erf",
    "Not",
    "LogicalNot",
    "Floor",
    "Ceil",
    "Ceiling",
    "Round",
    "Reciprocal",
    "Gelu",
    "LeakyRelu",
    "PRelu",
    "Elu",
    "Selu",
    "Celu",
    "HardSigmoid",
    "HardSwish",
    "Clip",
    "Clamp",
    "Sign",
    "Sin",
    "Cos",
    "Tan",
    "Asin",
    "Acos",
    "Atan",
    "Sinh",
    "Cosh",
    "Asinh",
    "Acosh",
    "Atanh",
    "IsNaN",
    "IsInf",
    "Swish",
    "HSwish",
    "HSigmoid",
    "Mish",
    "SoftPlus",
    "Softplus",
    "Softsign",
    "SoftSign",
    "ThresholdedRelu",
    "Shrink",
    "Cast",
    "CastLike",
    "Convert",
    "ConvertLike",
    "QuantizeLinear",
    "DequantizeLinear",
    "FakeQuantize",
    "BatchNormalization",
    "BatchNormInference",
    "InstanceNormalization",
    "LpNormalization",
    "MVN",
    "MeanVarianceNormalization",
    "NormalizeL2",
    "LRN",
    "SoftMax",
    "LogSoftMax",
    "Trilu",
    "CumSum",
    "Hardmax",
    "Bernoulli",
    "RandomNormalLike",
    "RandomUniformLike",
];

const BOOL_OUT: &[&str] = &[
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
    "Not",
    "IsNaN",
    "IsInf",
    "NotEqual",
    "LogicalAnd",
    "LogicalOr",
    "LogicalXor",
    "LogicalNot",
];

const BINARY: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
    "Max",
    "Min",
    "Mean",
    "Sum",
    "Mod",
    "FloorMod",
    "BitShift",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
    "Multiply",
    "Subtract",
    "Divide",
    "Maximum",
    "Minimum",
    "Power",
    "SquaredDifference",
    "LogicalAnd",
    "LogicalOr",
    "LogicalXor",
    "NotEqual",
    "PRelu",
    "Where",
    "Select",
];

/// One broadcast dim of two (numpy rules, for inputs the runtime accepts): a 1 takes the other;
/// a known value other than 1 wins over a symbol (the symbol is then that value or 1); equal dims
/// stay; anything else is unknown with the bounds that are sure.
pub(crate) fn broadcast_dim(a: &Dim, b: &Dim) -> Dim {
    match (a.as_known(), b.as_known()) {
        (Some(1), _) => b.clone(),
        (_, Some(1)) => a.clone(),
        (Some(_), _) => a.clone(),
        (_, Some(_)) => b.clone(),
        _ if a == b => a.clone(),
        _ => {
            // Either equal or one is 1: the result is one of them.
            let (alo, ahi) = a.bounds();
            let (blo, bhi) = b.bounds();
            let lo = alo.zip(blo).map(|(x, y)| x.min(y)).unwrap_or(0);
            let hi = ahi.zip(bhi).map(|(x, y)| x.max(y));
            Dim::unknown_bounded(lo.max(0), hi)
        }
    }
}

/// Numpy broadcast of shapes (aligned on the right).
pub(crate) fn broadcast(shapes: &[&[Dim]]) -> Vec<Dim> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..rank)
        .map(|i| {
            let mut acc = Dim::known(1);
            for s in shapes {
                if let Some(j) = (i + s.len()).checked_sub(rank) {
                    acc = broadcast_dim(&acc, &s[j]);
                }
            }
            acc
        })
        .collect()
}

/// Elementwise integer arithmetic on symbolic values (with numpy broadcasting of the values).
fn value_op(op: &str, cx: &Ctx, out_shape: &[Dim]) -> Option<Vec<Dim>> {
    let a = cx.value(0)?;
    let b = cx.value(1)?;
    let n: usize = out_shape.iter().try_fold(1usize, |acc, d| {
        acc.checked_mul(usize::try_from(d.as_known()?).ok()?)
    })?;
    if n > super::MAX_VALUE_ELEMENTS {
        return None;
    }
    // Broadcasting between values: only scalars or equal lengths (the shape computations of
    // exported models); anything else is left unknown.
    let pick = |v: &[Dim], i: usize| -> Option<Dim> {
        match v.len() {
            1 => Some(v[0].clone()),
            l if l == n => Some(v[i].clone()),
            _ => None,
        }
    };
    (0..n)
        .map(|i| {
            let (x, y) = (pick(a, i)?, pick(b, i)?);
            Some(match op {
                "Add" => x.add(&y),
                "Sub" | "Subtract" => x.sub(&y),
                "Mul" | "Multiply" => mul(&x, &y),
                "Div" | "Divide" => match y.as_known() {
                    // Integer division truncates toward zero: the floor for a non-negative
                    // numerator and a positive divisor.
                    Some(k) if k > 0 && x.bounds().0.is_some_and(|l| l >= 0) => x.div_floor(k),
                    _ => Dim::unknown_bounded(i64::MIN, None),
                },
                "Min" | "Minimum" => x.min(&y),
                "Max" | "Maximum" => x.max(&y),
                _ => return None,
            })
        })
        .collect()
}

/// The rule for elementwise ops.
pub(crate) fn rule(op: &str, cx: &Ctx) -> Option<Vec<Fact>> {
    if UNARY.contains(&op) {
        let inp = cx.input(0);
        let dtype = match op {
            _ if BOOL_OUT.contains(&op) => Some(DType::Bool),
            "Cast" => cx
                .attr_int("to")
                .and_then(|c| i32::try_from(c).ok())
                .and_then(DType::from_onnx_code),
            "Convert" => cx
                .attr_str("destination_type")
                .and_then(DType::from_ov_name),
            "CastLike" | "ConvertLike" => cx.dtype(1),
            "QuantizeLinear" | "DequantizeLinear" | "FakeQuantize" => None,
            _ => inp.dtype,
        };
        // Values pass through casts between integer types and identities.
        let keeps_value = matches!(
            op,
            "Identity" | "Cast" | "Convert" | "CastLike" | "ConvertLike"
        ) && dtype.is_some_and(DType::is_index_type);
        let value = match op {
            "Neg" | "Negative" => inp
                .value
                .as_ref()
                .map(|v| v.iter().map(|d| Dim::known(0).sub(d)).collect()),
            _ if keeps_value => inp.value.clone(),
            _ => None,
        };
        let out = vec![Fact {
            dtype,
            shape: inp.shape.clone(),
            value: None,
        }
        .with_value(value)];
        return Some(out);
    }
    if op == "Dropout" {
        let inp = cx.input(0);
        return Some(vec![
            Fact {
                dtype: inp.dtype,
                shape: inp.shape.clone(),
                value: None,
            },
            Fact {
                dtype: Some(DType::Bool),
                shape: inp.shape.clone(),
                value: None,
            },
        ]);
    }
    if !BINARY.contains(&op) {
        return None;
    }
    let n = cx.node.num_inputs as usize;
    let shapes: Option<Vec<&[Dim]>> = (0..n).map(|p| cx.shape(p)).collect();
    let shape = shapes.map(|s| broadcast(&s));
    let dtype = if BOOL_OUT.contains(&op) {
        Some(DType::Bool)
    } else if op == "Where" || op == "Select" {
        cx.dtype(1)
    } else {
        cx.dtype(0)
    };
    let value = match (&shape, n) {
        (Some(s), 2) if dtype.is_some_and(DType::is_index_type) => value_op(op, cx, s),
        _ => None,
    };
    Some(vec![Fact {
        dtype,
        shape,
        value: None,
    }
    .with_value(value)])
}
