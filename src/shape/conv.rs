//! Convolutions and pools: ONNX `Conv`, `ConvTranspose`, `MaxPool`, `AveragePool`, `LpPool`,
//! `Global*Pool`; OpenVINO `Convolution`, `GroupConvolution`, `ConvolutionBackpropData`,
//! `MaxPool`, `AvgPool`. Spatial dims follow the ONNX operator documentation:
//! `floor((in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1` (ceil with
//! `ceil_mode`), and `ceil(in / stride)` for `SAME_*` auto padding.

use super::{mul_const, Ctx, Fact};
use crate::ir::DType;
use crate::semantics::Dim;

struct Window {
    kernel: Vec<i64>,
    strides: Vec<i64>,
    dilations: Vec<i64>,
    /// begin pads then end pads.
    pads: Vec<i64>,
    auto_pad: String,
    ceil: bool,
}

fn window(cx: &Ctx, kernel: Vec<i64>) -> Option<Window> {
    let n = kernel.len();
    let ones = vec![1; n];
    let onnx = cx.onnx();
    let get = |onnx_name: &str, ov_name: &str| cx.attr_ints(if onnx { onnx_name } else { ov_name });
    let strides = get("strides", "strides").unwrap_or_else(|| ones.clone());
    let dilations = get("dilations", "dilations").unwrap_or_else(|| ones.clone());
    let pads = if onnx {
        cx.attr_ints("pads").unwrap_or_else(|| vec![0; 2 * n])
    } else {
        let mut p = cx.attr_ints("pads_begin").unwrap_or_else(|| vec![0; n]);
        p.extend(cx.attr_ints("pads_end").unwrap_or_else(|| vec![0; n]));
        p
    };
    let auto_pad = cx
        .attr_str("auto_pad")
        .unwrap_or("NOTSET")
        .to_ascii_uppercase();
    let ceil = if onnx {
        cx.attr_int("ceil_mode").unwrap_or(0) != 0
    } else {
        cx.attr_str("rounding_type")
            .is_some_and(|r| r.eq_ignore_ascii_case("ceil"))
    };
    let ok = strides.len() == n
        && dilations.len() == n
        && pads.len() == 2 * n
        && strides.iter().all(|&s| s >= 1)
        && dilations.iter().all(|&d| d >= 1);
    ok.then_some(Window {
        kernel,
        strides,
        dilations,
        pads,
        auto_pad,
        ceil,
    })
}

fn spatial(w: &Window, input: &[Dim]) -> Option<Vec<Dim>> {
    let n = w.kernel.len();
    if input.len() != n {
        return None;
    }
    (0..n)
        .map(|i| {
            let s = w.strides[i];
            let x = &input[i];
            Some(match w.auto_pad.as_str() {
                "SAME_UPPER" | "SAME_LOWER" => x.add_const(s - 1).div_floor(s),
                _ => {
                    let eff = w.dilations[i].checked_mul(w.kernel[i].checked_sub(1)?)?;
                    let (pad, extra) = if w.auto_pad == "VALID" {
                        (0, 0)
                    } else {
                        (w.pads[i].checked_add(w.pads[i + n])?, 0)
                    };
                    let base =
                        x.add_const(pad.checked_sub(eff)?.checked_sub(1)?.checked_add(extra)?);
                    let q = if w.ceil {
                        base.add_const(s - 1).div_floor(s)
                    } else {
                        base.div_floor(s)
                    };
                    // A negative numerator is an error for the runtime; keep exactness only
                    // where it is non-negative.
                    if base.bounds().0.is_some_and(|l| l >= 0) {
                        q.add_const(1)
                    } else {
                        q.add_const(1).max(&Dim::known(0))
                    }
                }
            })
        })
        .collect()
}

fn transposed_spatial(w: &Window, input: &[Dim], out_pad: &[i64]) -> Option<Vec<Dim>> {
    let n = w.kernel.len();
    if input.len() != n {
        return None;
    }
    (0..n)
        .map(|i| {
            let s = w.strides[i];
            let x = &input[i];
            let op = out_pad.get(i).copied().unwrap_or(0);
            Some(match w.auto_pad.as_str() {
                "SAME_UPPER" | "SAME_LOWER" => mul_const(x, s),
                _ => {
                    let eff = w.dilations[i]
                        .checked_mul(w.kernel[i].checked_sub(1)?)?
                        .checked_add(1)?;
                    let pad = if w.auto_pad == "VALID" {
                        0
                    } else {
                        w.pads[i].checked_add(w.pads[i + n])?
                    };
                    mul_const(&x.add_const(-1), s).add_const(op.checked_add(eff)?.checked_sub(pad)?)
                }
            })
        })
        .collect()
}

/// The rule for convolutions and pools.
pub(crate) fn rule(op: &str, cx: &Ctx) -> Option<Vec<Fact>> {
    let x = cx.shape(0);
    let dtype = cx.dtype(0);
    let fact = |shape: Option<Vec<Dim>>| Fact {
        dtype,
        shape,
        value: None,
    };
    match op {
        "GlobalAveragePool" | "GlobalMaxPool" | "GlobalLpPool" => {
            let shape = x.filter(|x| x.len() >= 2).map(|x| {
                let mut s = x[..2].to_vec();
                s.extend(std::iter::repeat_n(Dim::known(1), x.len() - 2));
                s
            });
            Some(vec![fact(shape)])
        }
        "Conv" | "Convolution" | "GroupConvolution" | "ConvInteger" => {
            let (x, w) = (x?, cx.shape(1)?);
            let group_ov = op == "GroupConvolution";
            // OpenVINO GroupConvolution weights: [G, O/G, I/G, k...].
            let k0 = if group_ov { 3 } else { 2 };
            if x.len() < 2 || w.len() < k0 || x.len() - 2 != w.len() - k0 {
                return Some(vec![fact(None)]);
            }
            let kernel: Option<Vec<i64>> = match cx.attr_ints("kernel_shape") {
                Some(k) if cx.onnx() => Some(k),
                _ => w[k0..].iter().map(Dim::as_known).collect(),
            };
            let channels = if group_ov {
                super::mul(&w[0], &w[1])
            } else {
                w[0].clone()
            };
            let shape = kernel
                .and_then(|k| window(cx, k))
                .and_then(|win| spatial(&win, &x[2..]))
                .map(|sp| {
                    let mut s = vec![x[0].clone(), channels];
                    s.extend(sp);
                    s
                });
            let dtype = if op == "ConvInteger" {
                Some(DType::I32)
            } else {
                dtype
            };
            Some(vec![Fact {
                dtype,
                shape,
                value: None,
            }])
        }
        "ConvTranspose" | "ConvolutionBackpropData" => {
            let (x, w) = (x?, cx.shape(1)?);
            if x.len() < 2 || w.len() != x.len() {
                return Some(vec![fact(None)]);
            }
            let group = if cx.onnx() {
                cx.attr_int("group").unwrap_or(1)
            } else {
                1
            };
            let channels = super::mul_const(&w[1], group);
            let explicit = if cx.onnx() {
                cx.attr_ints("output_shape")
            } else if cx.has(2) {
                cx.ints(2)
            } else {
                None
            };
            let kernel: Option<Vec<i64>> = match cx.attr_ints("kernel_shape") {
                Some(k) if cx.onnx() => Some(k),
                _ => w[2..].iter().map(Dim::as_known).collect(),
            };
            let out_pad = cx.attr_ints("output_padding").unwrap_or_default();
            let sp = match explicit {
                Some(e) if e.len() == x.len() - 2 => Some(e.into_iter().map(Dim::known).collect()),
                Some(_) => None,
                None => kernel
                    .and_then(|k| window(cx, k))
                    .and_then(|win| transposed_spatial(&win, &x[2..], &out_pad)),
            };
            let shape = sp.map(|sp| {
                let mut s = vec![x[0].clone(), channels];
                s.extend(sp);
                s
            });
            Some(vec![fact(shape)])
        }
        "MaxPool" | "AveragePool" | "AvgPool" | "LpPool" => {
            let x = x?;
            if x.len() < 3 {
                return Some(vec![fact(None)]);
            }
            let kernel = cx.attr_ints(if cx.onnx() { "kernel_shape" } else { "kernel" });
            let shape = kernel
                .filter(|k| k.len() == x.len() - 2)
                .and_then(|k| window(cx, k))
                .and_then(|win| spatial(&win, &x[2..]))
                .map(|sp| {
                    let mut s = x[..2].to_vec();
                    s.extend(sp);
                    s
                });
            let mut out = vec![fact(shape.clone())];
            if op == "MaxPool" {
                out.push(Fact {
                    dtype: Some(DType::I64),
                    shape,
                    value: None,
                });
            }
            Some(out)
        }
        _ => None,
    }
}
