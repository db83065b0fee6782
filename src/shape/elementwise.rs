//! Elementwise ops: unary (shape and type unchanged), binary and ternary with numpy broadcasting
//! (ONNX multidirectional broadcasting, OpenVINO `auto_broadcast="numpy"`), and the integer
//! arithmetic of shape computations on symbolic values (`Add`, `Sub`, `Mul`, `Div`, `Mod`, `Min`,
//! `Max`, `Abs`, `Neg`), with comparisons, logic and `Where` on them (boolean values as 0/1).

use super::{Ctx, Fact};
use crate::ir::DType;
use crate::semantics::Dim;

/// The ops whose output has the shape of input 0 (unary elementwise ops, and ops that keep the
/// data's shape).
fn is_unary(op: &str) -> bool {
    // A `match`, not a list searched (`contains` compared "Add" with a dozen names first, on
    // every node of a graph).
    matches!(
        op,
        "Identity"
        | "Relu"
        | "Sigmoid"
        | "Tanh"
        | "Exp"
        | "Log"
        | "Neg"
        | "Negative"
        | "Abs"
        | "Sqrt"
        | "Softmax"
        | "LogSoftmax"
        | "Erf"
        | "Not"
        | "LogicalNot"
        | "Floor"
        | "Ceil"
        | "Ceiling"
        | "Round"
        | "Reciprocal"
        | "Gelu"
        | "LeakyRelu"
        | "PRelu"
        | "Elu"
        | "Selu"
        | "Celu"
        | "HardSigmoid"
        | "HardSwish"
        | "Clip"
        | "Clamp"
        | "Sign"
        | "Sin"
        | "Cos"
        | "Tan"
        | "Asin"
        | "Acos"
        | "Atan"
        | "Sinh"
        | "Cosh"
        | "Asinh"
        | "Acosh"
        | "Atanh"
        | "IsNaN"
        | "IsInf"
        | "Swish"
        | "HSwish"
        | "HSigmoid"
        | "Mish"
        | "SoftPlus"
        | "Softplus"
        | "Softsign"
        | "SoftSign"
        | "ThresholdedRelu"
        | "Shrink"
        | "Cast"
        | "CastLike"
        | "Convert"
        | "ConvertLike"
        | "QuantizeLinear"
        | "DequantizeLinear"
        | "FakeQuantize"
        | "BatchNormalization"
        | "BatchNormInference"
        | "InstanceNormalization"
        | "LpNormalization"
        | "MVN"
        | "MeanVarianceNormalization"
        | "NormalizeL2"
        | "LRN"
        | "SoftMax"
        | "LogSoftMax"
        | "Trilu"
        | "CumSum"
        | "Hardmax"
        | "Bernoulli"
        | "RandomNormalLike"
        | "RandomUniformLike"
        // The data's shape (the sequence lengths only say what is reversed).
        | "ReverseSequence"
        | "Reverse"
    )
}

/// The elementwise ops whose output is boolean.
fn is_bool_out(op: &str) -> bool {
    matches!(
        op,
        "Equal"
            | "Less"
            | "Greater"
            | "LessOrEqual"
            | "GreaterOrEqual"
            | "And"
            | "Or"
            | "Xor"
            | "Not"
            | "IsNaN"
            | "IsInf"
            | "NotEqual"
            | "LogicalAnd"
            | "LogicalOr"
            | "LogicalXor"
            | "LogicalNot"
    )
}

/// The ops that broadcast their inputs' shapes (numpy rules).
fn is_binary(op: &str) -> bool {
    matches!(
        op,
        "Add"
            | "Sub"
            | "Mul"
            | "Div"
            | "Pow"
            | "Equal"
            | "Less"
            | "Greater"
            | "LessOrEqual"
            | "GreaterOrEqual"
            | "And"
            | "Or"
            | "Xor"
            | "Max"
            | "Min"
            | "Mean"
            | "Sum"
            | "Mod"
            | "FloorMod"
            | "BitShift"
            | "BitwiseAnd"
            | "BitwiseOr"
            | "BitwiseXor"
            | "Multiply"
            | "Subtract"
            | "Divide"
            | "Maximum"
            | "Minimum"
            | "Power"
            | "SquaredDifference"
            | "LogicalAnd"
            | "LogicalOr"
            | "LogicalXor"
            | "NotEqual"
            | "PRelu"
            | "Where"
            | "Select"
    )
}

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
        // Valid pairs are equal, or one is 1: `a` is the result unless `a` is 1 and `b` not,
        // so `a` is when `a = 1` forces `b = 1` (`T` against `min(T, 1024)`).
        _ if one_forces_one(a, b) => a.clone(),
        _ if one_forces_one(b, a) => b.clone(),
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

/// True when `a` is a symbol and `b` an expression over that symbol alone that is 1 where the
/// symbol is 1 (so `a = 1` implies `b = 1`).
fn one_forces_one(a: &Dim, b: &Dim) -> bool {
    let (sa, sb) = (a.symbols(), b.symbols());
    let [x] = sa.as_slice() else {
        return false;
    };
    let (lo, hi) = x.bounds();
    if *a != Dim::symbol_bounded(x.name(), lo, hi) || sb.iter().any(|s| s != x) || b.is_unknown() {
        return false;
    }
    let one = std::collections::HashMap::from([(x.name().to_string(), 1)]);
    b.eval(&one) == Some(1)
}

/// Numpy broadcast of shapes (aligned on the right).
pub(crate) fn broadcast(shapes: &[&[Dim]]) -> Vec<Dim> {
    // Equal shapes broadcast to that shape (each dim against itself is itself, known, symbolic
    // or unknown): copied, not merged dim by dim (the commonest case, on every Add of a graph).
    if let [first, rest @ ..] = shapes {
        if rest.iter().all(|s| s == first) {
            return first.to_vec();
        }
    }
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

/// The element count of `shape` when it is small enough to carry a value.
fn value_len(shape: &[Dim]) -> Option<usize> {
    let n: usize = shape.iter().try_fold(1usize, |acc, d| {
        acc.checked_mul(usize::try_from(d.as_known()?).ok()?)
    })?;
    (n <= super::MAX_VALUE_ELEMENTS).then_some(n)
}

/// Element `i` of a value broadcast to `n` elements: only scalars (one element) or equal
/// lengths (the shape computations of exported models); anything else is left unknown.
fn pick(v: &[Dim], i: usize, n: usize) -> Option<Dim> {
    match v.len() {
        1 => Some(v[0].clone()),
        l if l == n => Some(v[i].clone()),
        _ => None,
    }
}

/// A truth value as a value element: 1, 0, or unknown in `[0, 1]`.
fn truth(b: Option<bool>) -> Dim {
    match b {
        Some(b) => Dim::known(i64::from(b)),
        None => Dim::unknown_bounded(0, Some(1)),
    }
}

/// The truth of a value element (`None`: not known to be 0 or not 0).
fn is_true(d: &Dim) -> Option<bool> {
    match d.bounds() {
        (Some(0), Some(0)) => Some(false),
        (Some(lo), _) if lo > 0 => Some(true),
        (_, Some(hi)) if hi < 0 => Some(true),
        _ => None,
    }
}

/// `x mod k` with the sign of the divisor (ONNX `Mod` with `fmod=0`, OpenVINO `FloorMod`), for
/// a known `k > 0`: `x - k*floor(x/k)`; with the sign of the dividend (ONNX `fmod=1`, OpenVINO
/// `Mod`) only where that is the same (`x >= 0`).
fn modulo(x: &Dim, y: &Dim, floor: bool) -> Dim {
    match y.as_known() {
        Some(k) if k > 0 && (floor || x.bounds().0.is_some_and(|l| l >= 0)) => {
            let r = x.sub(&x.div_floor(k).mul_const(k));
            if !r.is_unknown() {
                return r;
            }
            // In [0, k - 1], and at most x where x >= 0.
            let hi = match x.bounds() {
                (Some(lo), Some(hi)) if lo >= 0 => hi.min(k - 1),
                _ => k - 1,
            };
            Dim::unknown_bounded(0, Some(hi))
        }
        _ => Dim::unknown_bounded(i64::MIN, None),
    }
}

/// Elementwise integer arithmetic on symbolic values (with numpy broadcasting of the values);
/// comparisons and logic give 0/1 elements (a boolean value), decided by the bounds of the
/// difference.
fn value_op(op: &str, cx: &Ctx, out_shape: &[Dim]) -> Option<Vec<Dim>> {
    let a = cx.value(0)?;
    let b = cx.value(1)?;
    let n = value_len(out_shape)?;
    let floor_mod = op == "FloorMod" || cx.onnx() && cx.attr_int("fmod").unwrap_or(0) == 0;
    (0..n)
        .map(|i| {
            let (x, y) = (pick(a, i, n)?, pick(b, i, n)?);
            // x - y, for comparisons: `None` when it is not an expression.
            let diff = || {
                let d = x.sub(&y);
                let (lo, hi) = d.bounds();
                (lo, hi, x.provably_equal(&y))
            };
            Some(match op {
                "Add" => x.add(&y),
                "Sub" | "Subtract" => x.sub(&y),
                "Mul" | "Multiply" => x.mul(&y),
                "Div" | "Divide" => match y.as_known() {
                    // Integer division truncates toward zero: the floor for a non-negative
                    // numerator and a positive divisor.
                    Some(k) if k > 0 && x.bounds().0.is_some_and(|l| l >= 0) => x.div_floor(k),
                    _ => Dim::unknown_bounded(i64::MIN, None),
                },
                "Mod" | "FloorMod" => modulo(&x, &y, floor_mod),
                "Min" | "Minimum" => x.min(&y),
                "Max" | "Maximum" => x.max(&y),
                "Equal" | "NotEqual" => {
                    let (lo, hi, eq) = diff();
                    let ne = lo.is_some_and(|l| l > 0) || hi.is_some_and(|h| h < 0);
                    let r = if eq {
                        Some(true)
                    } else if ne {
                        Some(false)
                    } else {
                        None
                    };
                    truth(if op == "Equal" { r } else { r.map(|r| !r) })
                }
                "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual" => {
                    let (lo, hi, eq) = diff();
                    // Decided by the bounds of x - y.
                    let (lo, hi) = if eq { (Some(0), Some(0)) } else { (lo, hi) };
                    truth(match op {
                        "Less" if hi.is_some_and(|h| h < 0) => Some(true),
                        "Less" if lo.is_some_and(|l| l >= 0) => Some(false),
                        "Greater" if lo.is_some_and(|l| l > 0) => Some(true),
                        "Greater" if hi.is_some_and(|h| h <= 0) => Some(false),
                        "LessOrEqual" if hi.is_some_and(|h| h <= 0) => Some(true),
                        "LessOrEqual" if lo.is_some_and(|l| l > 0) => Some(false),
                        "GreaterOrEqual" if lo.is_some_and(|l| l >= 0) => Some(true),
                        "GreaterOrEqual" if hi.is_some_and(|h| h < 0) => Some(false),
                        _ => None,
                    })
                }
                "And" | "LogicalAnd" => truth(match (is_true(&x), is_true(&y)) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                }),
                "Or" | "LogicalOr" => truth(match (is_true(&x), is_true(&y)) {
                    (Some(true), _) | (_, Some(true)) => Some(true),
                    (Some(false), Some(false)) => Some(false),
                    _ => None,
                }),
                "Xor" | "LogicalXor" => truth(is_true(&x).zip(is_true(&y)).map(|(p, q)| p != q)),
                _ => return None,
            })
        })
        .collect()
}

/// `Where`/`Select` on values: the element of the branch the condition picks; where the
/// condition is not known, the branches' element when both are the same, else unknown within
/// both.
fn where_value(cx: &Ctx, out_shape: &[Dim]) -> Option<Vec<Dim>> {
    let (c, a, b) = (cx.value(0)?, cx.value(1)?, cx.value(2)?);
    let n = value_len(out_shape)?;
    (0..n)
        .map(|i| {
            let (c, x, y) = (pick(c, i, n)?, pick(a, i, n)?, pick(b, i, n)?);
            Some(match is_true(&c) {
                Some(true) => x,
                Some(false) => y,
                None if x == y && !x.is_unknown() => x,
                None => {
                    let (xl, xh) = x.bounds();
                    let (yl, yh) = y.bounds();
                    let lo = xl.zip(yl).map_or(i64::MIN, |(p, q)| p.min(q));
                    Dim::unknown_bounded(lo, xh.zip(yh).map(|(p, q)| p.max(q)))
                }
            })
        })
        .collect()
}

/// Unary ops on values: `Neg`, `Abs`, `Not`, and rounding (`Floor`, `Ceil`, `Round`) of an
/// integer value, which keeps it.
fn unary_value(op: &str, v: &[Dim], in_type: Option<DType>) -> Option<Vec<Dim>> {
    Some(match op {
        "Neg" | "Negative" => v.iter().map(Dim::neg).collect(),
        "Abs" => v
            .iter()
            .map(|d| match d.bounds() {
                (Some(lo), _) if lo >= 0 => d.clone(),
                (_, Some(hi)) if hi <= 0 => d.neg(),
                _ => d.max(&d.neg()),
            })
            .collect(),
        "Not" | "LogicalNot" => v.iter().map(|d| truth(is_true(d).map(|b| !b))).collect(),
        "Floor" | "Ceil" | "Ceiling" | "Round" if in_type.is_some_and(DType::is_index_type) => {
            v.to_vec()
        }
        _ => return None,
    })
}

/// The rule for elementwise ops.
pub(crate) fn rule(op: &str, cx: &Ctx) -> Option<Vec<Fact>> {
    if is_unary(op) {
        let inp = cx.input(0);
        let dtype = match op {
            _ if is_bool_out(op) => Some(DType::Bool),
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
            _ if keeps_value => inp.value.clone(),
            _ => inp
                .value
                .as_deref()
                .and_then(|v| unary_value(op, v, inp.dtype)),
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
    if !is_binary(op) {
        return None;
    }
    let n = cx.node.num_inputs as usize;
    let shapes: Option<Vec<&[Dim]>> = (0..n).map(|p| cx.shape(p)).collect();
    let shape = shapes.map(|s| broadcast(&s));
    let dtype = if is_bool_out(op) {
        Some(DType::Bool)
    } else if op == "Where" || op == "Select" {
        cx.dtype(1)
    } else {
        cx.dtype(0)
    };
    let value = match (&shape, n) {
        (Some(s), 3) if matches!(op, "Where" | "Select") => where_value(cx, s),
        (Some(s), 2) if dtype.is_some_and(DType::is_index_type) => value_op(op, cx, s),
        (Some(s), 2) if is_bool_out(op) => value_op(op, cx, s),
        _ => None,
    };
    Some(vec![Fact {
        dtype,
        shape,
        value: None,
    }
    .with_value(value)])
}
