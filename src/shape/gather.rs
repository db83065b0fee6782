//! Shape sources and index ops: `Shape`/`ShapeOf` (whose *value* is the input's dims), `Size`,
//! `Gather` (ONNX `axis` attribute; OpenVINO axis input and `batch_dims`), `GatherElements`,
//! the scatters (`ScatterND`, `ScatterElements`; OpenVINO `Scatter*Update`: the data's shape),
//! `Range`, `ConstantOfShape`, `TopK`, `Resize`, `NonZero`.

use super::{mul_const, norm_axis, Ctx, Fact, MAX_VALUE_ELEMENTS};
use crate::ir::{Attr, DType};
use crate::semantics::Dim;

fn f32_values(cx: &Ctx, p: usize) -> Option<Vec<f32>> {
    let o = cx.graph.input(cx.ix, p)?;
    let t = cx.graph.constant_at(o)?;
    if t.dtype != DType::F32 {
        return None;
    }
    let raw = t.raw()?;
    let n = usize::try_from(t.element_count()?).ok()?;
    if raw.len() < n.checked_mul(4)? {
        return None;
    }
    Some(
        raw[..n * 4]
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}

fn gather(cx: &Ctx) -> Option<Vec<Fact>> {
    let (axis, batch_dims) = if cx.onnx() {
        (cx.attr_int("axis").unwrap_or(0), 0)
    } else {
        (
            *cx.ints(2)?.first()?,
            cx.attr_int("batch_dims").unwrap_or(0),
        )
    };
    let data = cx.shape(0);
    let idx = cx.shape(1);
    let shape = data.zip(idx).and_then(|(data, idx)| {
        let a = norm_axis(axis, data.len())?;
        let b = if batch_dims < 0 {
            usize::try_from(batch_dims + idx.len() as i64).ok()?
        } else {
            usize::try_from(batch_dims).ok()?
        };
        if b > a || b > idx.len() {
            return None;
        }
        let mut out = data[..a].to_vec();
        out.extend_from_slice(&idx[b..]);
        out.extend_from_slice(&data[a + 1..]);
        Some(out)
    });
    // Values: gathering from a 1-D value with known indices.
    let value = (|| {
        let v = cx.value(0)?;
        if data?.len() != 1 || batch_dims != 0 {
            return None;
        }
        let n = v.len() as i64;
        cx.ints(1)?
            .into_iter()
            .map(|i| {
                let i = if i < 0 { i + n } else { i };
                usize::try_from(i).ok().and_then(|i| v.get(i).cloned())
            })
            .collect::<Option<Vec<Dim>>>()
    })();
    Some(vec![Fact {
        dtype: cx.dtype(0),
        shape,
        value: None,
    }
    .with_value(value)])
}

/// `Shape` / `ShapeOf`: the input's dims (ONNX `start`/`end` taken) as a value.
fn shape_of(op: &str, cx: &Ctx, x: Option<&[Dim]>) -> Option<Vec<Fact>> {
    let dtype = if op == "ShapeOf" && cx.attr_str("output_type") == Some("i32") {
        DType::I32
    } else {
        DType::I64
    };
    let dims = x.map(|x| {
        let r = x.len() as i64;
        let clampi = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
        let (s, e) = if cx.onnx() {
            (
                clampi(cx.attr_int("start").unwrap_or(0)),
                clampi(cx.attr_int("end").unwrap_or(r)),
            )
        } else {
            (0, r as usize)
        };
        x[s..e.max(s)].to_vec()
    });
    Some(vec![Fact {
        dtype: Some(dtype),
        shape: dims.as_ref().map(|d| vec![Dim::known(d.len() as i64)]),
        value: None,
    }
    .with_value(dims)])
}

/// `Size`: the product of the input's dims.
fn size(x: Option<&[Dim]>) -> Option<Vec<Fact>> {
    let value = x.map(|x| vec![x.iter().fold(Dim::known(1), |a, d| a.mul(d))]);
    Some(vec![Fact {
        dtype: Some(DType::I64),
        shape: Some(Vec::new()),
        value: None,
    }
    .with_value(value)])
}

/// `Range`: `ceil((limit - start) / delta)` elements, and their values when few and known.
fn range(cx: &Ctx) -> Option<Vec<Fact>> {
    let one = |p: usize| cx.value(p).filter(|v| v.len() == 1).map(|v| v[0].clone());
    let (start, limit, delta) = (one(0), one(1), one(2));
    let (count, value) = match (start, limit, delta.as_ref().and_then(Dim::as_known)) {
        (Some(s), Some(l), Some(d)) if d > 0 => {
            let c = l.sub(&s).add_const(d - 1).div_floor(d).max(&Dim::known(0));
            let value = c.as_known().and_then(|n| {
                (usize::try_from(n).ok()? <= MAX_VALUE_ELEMENTS).then(|| {
                    (0..n)
                        .map(|i| s.add(&Dim::known(i.saturating_mul(d))))
                        .collect::<Vec<_>>()
                })
            });
            (c, value)
        }
        (Some(s), Some(l), Some(d)) if d < 0 => {
            let nd = d.checked_neg().unwrap_or(i64::MAX);
            let c = s
                .sub(&l)
                .add_const(nd - 1)
                .div_floor(nd)
                .max(&Dim::known(0));
            (c, None)
        }
        _ => (Dim::unknown(), None),
    };
    Some(vec![Fact {
        // OpenVINO Range-4 says its element type (`output_type`: an i64 range over an i32
        // start, as the PyTorch front end writes `arange`); Range-1 and ONNX's take the inputs'.
        dtype: cx
            .attr_str("output_type")
            .and_then(DType::from_ov_name)
            .or_else(|| cx.dtype(0)),
        shape: Some(vec![count]),
        value: None,
    }
    .with_value(value)])
}

/// `ConstantOfShape`: the shape is the input's value; the value, an index fill repeated.
fn constant_of_shape(cx: &Ctx) -> Option<Vec<Fact>> {
    let shape = cx.value(0).map(<[Dim]>::to_vec);
    let (dtype, fill) = match cx.node.attr("value") {
        Some(Attr::Tensor(t)) => (
            Some(t.dtype),
            t.to_i64_vec().and_then(|v| v.first().copied()),
        ),
        // No attribute: float 0 (ONNX). One the loader keeps opaque: type unknown.
        None => (Some(DType::F32), None),
        Some(_) => (None, None),
    };
    let value = shape.as_ref().and_then(|s| {
        let n: i64 = s
            .iter()
            .try_fold(1i64, |acc, d| acc.checked_mul(d.as_known()?))?;
        let fill = fill.filter(|_| dtype.is_some_and(DType::is_index_type))?;
        (usize::try_from(n).ok()? <= MAX_VALUE_ELEMENTS).then(|| vec![Dim::known(fill); n as usize])
    });
    Some(vec![Fact {
        dtype,
        shape,
        value: None,
    }
    .with_value(value)])
}

/// `TopK`: values and indices, the input's shape with `k` on the axis.
fn top_k(cx: &Ctx, x: Option<&[Dim]>) -> Option<Vec<Fact>> {
    let k = if cx.has(1) {
        cx.value(1).and_then(|v| v.first().cloned())
    } else {
        cx.attr_int("k").map(Dim::known)
    };
    let axis = cx.attr_int("axis").unwrap_or(-1);
    let shape = x.and_then(|x| {
        let a = norm_axis(axis, x.len())?;
        let mut s = x.to_vec();
        s[a] = match &k {
            // OpenVINO clamps k to the dim; ONNX requires k <= dim.
            Some(k) if cx.onnx() => k.clone(),
            Some(k) => k.min(&x[a]),
            None => Dim::unknown(),
        };
        Some(s)
    });
    let idx_type = if cx.onnx() {
        Some(DType::I64)
    } else {
        cx.attr_str("index_element_type")
            .and_then(DType::from_ov_name)
            .or(Some(DType::I32))
    };
    Some(vec![
        Fact {
            dtype: cx.dtype(0),
            shape: shape.clone(),
            value: None,
        },
        Fact {
            dtype: idx_type,
            shape,
            value: None,
        },
    ])
}

/// `Resize` / `Upsample`: the sizes input, or each dim times its scale.
fn resize(op: &str, cx: &Ctx, x: Option<&[Dim]>) -> Option<Vec<Fact>> {
    let shape = x
        .and_then(|x| {
            let r = x.len();
            let axes: Vec<usize> = match cx.attr_ints("axes") {
                Some(a) => a
                    .into_iter()
                    .map(|a| norm_axis(a, r))
                    .collect::<Option<_>>()?,
                None => (0..r).collect(),
            };
            let mut out = x.to_vec();
            let sizes_port = if op == "Upsample" { usize::MAX } else { 3 };
            if cx.has(sizes_port) {
                let sizes = cx.value(sizes_port)?;
                if sizes.len() != axes.len() {
                    return None;
                }
                for (&a, s) in axes.iter().zip(sizes) {
                    out[a] = s.clone();
                }
                return Some(out);
            }
            let scales_port = if op == "Upsample" || cx.onnx_opset < 11 {
                1
            } else {
                2
            };
            let scales = f32_values(cx, scales_port)?;
            if scales.len() != axes.len() {
                return None;
            }
            for (&a, &s) in axes.iter().zip(&scales) {
                let s = f64::from(s);
                out[a] = match out[a].as_known() {
                    Some(d) => Dim::known((d as f64 * s).floor() as i64),
                    None if s.fract() == 0.0 && (0.0..1e9).contains(&s) => {
                        mul_const(&out[a], s as i64)
                    }
                    None => Dim::unknown(),
                };
            }
            Some(out)
        })
        .or_else(|| x.map(|x| vec![Dim::unknown(); x.len()]));
    Some(vec![Fact {
        dtype: cx.dtype(0),
        shape,
        value: None,
    }])
}

/// The rule for shape sources and index ops.
pub(crate) fn rule(op: &str, cx: &Ctx) -> Option<Vec<Fact>> {
    let x = cx.shape(0);
    match op {
        "Shape" | "ShapeOf" => shape_of(op, cx, x),
        "Size" => size(x),
        "Gather" => gather(cx),
        // Scatters write into a copy of the data: its type and shape.
        "ScatterND"
        | "ScatterElements"
        | "Scatter"
        | "ScatterUpdate"
        | "ScatterNDUpdate"
        | "ScatterElementsUpdate" => Some(vec![Fact {
            dtype: cx.dtype(0),
            shape: x.map(<[Dim]>::to_vec),
            value: None,
        }]),
        "GatherElements" => Some(vec![Fact {
            dtype: cx.dtype(0),
            shape: cx.shape(1).map(<[Dim]>::to_vec),
            value: None,
        }]),
        "NonZero" => Some(vec![Fact {
            dtype: Some(DType::I64),
            shape: x.map(|x| vec![Dim::known(x.len() as i64), Dim::unknown()]),
            value: None,
        }]),
        "Range" => range(cx),
        "ConstantOfShape" => constant_of_shape(cx),
        "TopK" => top_k(cx, x),
        "Resize" | "Upsample" => resize(op, cx, x),
        _ => None,
    }
}
