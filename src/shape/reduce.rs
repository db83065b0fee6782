//! Reductions: ONNX `Reduce*` (axes as attribute or, from opset 18, input; `keepdims`,
//! `noop_with_empty_axes`), `ArgMax`/`ArgMin`; OpenVINO `Reduce*` (axes input, `keep_dims`);
//! normalizations with statistics outputs (`LayerNormalization`).

use super::{norm_axis, Ctx, Fact};
use crate::ir::DType;
use crate::semantics::Dim;

fn reduce(x: &[Dim], axes: &[i64], keep: bool) -> Option<Vec<Dim>> {
    let r = x.len();
    let mut drop = vec![false; r];
    for &a in axes {
        drop[norm_axis(a, r)?] = true;
    }
    Some(
        x.iter()
            .zip(drop)
            .filter_map(|(d, dr)| match (dr, keep) {
                (false, _) => Some(d.clone()),
                (true, true) => Some(Dim::known(1)),
                (true, false) => None,
            })
            .collect(),
    )
}

/// The value of a reduction of a 1-D value to one element (`ReduceProd` of a shape is its
/// element count; `ReduceSum`, `ReduceMax`, `ReduceMin` likewise on shape values).
fn reduce_value(op: &str, cx: &Ctx, out_shape: &[Dim]) -> Option<Vec<Dim>> {
    if !matches!(op, "ReduceProd" | "ReduceSum" | "ReduceMax" | "ReduceMin") {
        return None;
    }
    let v = cx.value(0)?;
    if cx.shape(0)?.len() != 1 || out_shape.iter().any(|d| d.as_known() != Some(1)) {
        return None;
    }
    let (first, rest) = v.split_first()?;
    let f = |a: Dim, d: &Dim| match op {
        "ReduceProd" => Some(a.mul(d)),
        "ReduceSum" => Some(a.add(d)),
        "ReduceMax" => Some(a.max(d)),
        "ReduceMin" => Some(a.min(d)),
        _ => None,
    };
    let r = rest.iter().try_fold(first.clone(), f)?;
    // One element: the whole value reduced.
    Some(vec![r])
}

/// The rule for reductions.
pub(crate) fn rule(op: &str, cx: &Ctx) -> Option<Vec<Fact>> {
    let x = cx.shape(0);
    let fact = |dtype, shape| {
        vec![Fact {
            dtype,
            shape,
            value: None,
        }]
    };
    if op.starts_with("Reduce") {
        let shape = x.and_then(|x| {
            if cx.onnx() {
                let keep = cx.attr_int("keepdims").unwrap_or(1) != 0;
                let axes = match cx.attr_ints("axes") {
                    Some(a) => a,
                    None if cx.has(1) => cx.ints(1)?,
                    None => Vec::new(),
                };
                if axes.is_empty() {
                    if cx.attr_int("noop_with_empty_axes").unwrap_or(0) != 0 {
                        return Some(x.to_vec());
                    }
                    let all: Vec<i64> = (0..x.len() as i64).collect();
                    return reduce(x, &all, keep);
                }
                reduce(x, &axes, keep)
            } else {
                let keep = cx
                    .attr_str("keep_dims")
                    .is_some_and(|s| s.trim().eq_ignore_ascii_case("true"));
                reduce(x, &cx.ints(1)?, keep)
            }
        });
        let value = shape.as_ref().and_then(|s| reduce_value(op, cx, s));
        return Some(vec![Fact {
            dtype: cx.dtype(0),
            shape,
            value: None,
        }
        .with_value(value)]);
    }
    match op {
        "ArgMax" | "ArgMin" => {
            let keep = cx.attr_int("keepdims").unwrap_or(1) != 0;
            let axis = cx.attr_int("axis").unwrap_or(0);
            let shape = x.and_then(|x| reduce(x, &[axis], keep));
            Some(fact(Some(DType::I64), shape))
        }
        "LayerNormalization" => {
            let axis = cx.attr_int("axis").unwrap_or(-1);
            let stats = x.and_then(|x| {
                let a = norm_axis(axis, x.len())?;
                let mut s = x[..a].to_vec();
                s.extend(std::iter::repeat_n(Dim::known(1), x.len() - a));
                Some(s)
            });
            let stat_type = cx
                .attr_int("stash_type")
                .and_then(|c| i32::try_from(c).ok())
                .and_then(DType::from_onnx_code)
                .or(Some(DType::F32));
            Some(vec![
                Fact {
                    dtype: cx.dtype(0),
                    shape: x.map(<[Dim]>::to_vec),
                    value: None,
                },
                Fact {
                    dtype: stat_type,
                    shape: stats.clone(),
                    value: None,
                },
                Fact {
                    dtype: stat_type,
                    shape: stats,
                    value: None,
                },
            ])
        }
        _ => None,
    }
}
