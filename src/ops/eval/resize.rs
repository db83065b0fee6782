//! ONNX `Resize` in `cubic` mode of an `f32` constant to constant `sizes`, bit for bit as ONNX
//! Runtime's CPU kernel computes it (measured against onnxruntime 1.32:
//! `tools/gen_trig_fixtures.py`, `tests/fold_transcendental.rs`). Exporters write it to
//! interpolate a vision transformer's position embeddings to the input's patch grid (torch
//! `interpolate(mode="bicubic")`): with the image size fixed it is constant.
//!
//! ONNX Runtime's bicubic resize, as its kernel is written (every step in `f32`):
//! - the scale of an axis is `out / in`; the source coordinate of output index `o` is, by
//!   `coordinate_transformation_mode`: `half_pixel` `(o + 0.5) / scale - 0.5`,
//!   `pytorch_half_pixel` the same where the output has more than one element (else 0),
//!   `asymmetric` `o / scale`, `align_corners` `o * (in - 1) / (out - 1)` (0 for one element);
//!   an axis of scale 1 takes `o` itself;
//! - with `t` the coordinate minus its floor, the four weights of the neighbours `floor - 1 ..
//!   floor + 2` are Keys' cubic kernel with parameter `a` at distances `t + 1, t, 1 - t, 2 - t`,
//!   each evaluated as `((a (d) - 5a) d + 8a) d - 4a` or `((a + 2) d - (a + 3)) d d + 1`;
//!   neighbours outside the input read the nearest edge (with `exclude_outside`, their weight is
//!   0 and the weights are divided by their sum);
//! - each output is the sum, from 0 and in order, over the four rows of (the sum over the four
//!   columns of `weight_x / sum_x * x`) `* weight_y / sum_y`;
//! - the row sums are cached per channel by (column fraction, `row * width + floor - 1`), as
//!   the kernel does (a key two positions can share gives the first one's value there too);
//! - output dims equal to the input's: a copy.
//!
//! Only rank 2, or rank 4 with the first two dims kept, without `antialias`, `axes` or a
//! `keep_aspect_ratio_policy` other than `stretch`, `sizes` given (not `scales`); otherwise
//! not folded.

use std::collections::HashMap;

use bytes::Bytes;

use crate::ir::Format::Onnx;
use crate::ir::{Attr, DType, Node, Tensor, TensorData};
use crate::ops::registry::{row, Inputs, NoEval, OpEntry};

use super::{check_size, count, EvalError};

/// How an output index maps to an input coordinate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coord {
    HalfPixel,
    PytorchHalfPixel,
    Asymmetric,
    AlignCorners,
}

/// The attributes of a cubic resize.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cubic {
    pub coord: Coord,
    /// Keys' parameter (`cubic_coeff_a`, -0.75 by default).
    pub a: f32,
    pub exclude_outside: bool,
}

fn original(o: usize, scale: f32, out: usize, inp: usize, coord: Coord) -> f32 {
    let o = o as f32;
    if scale == 1.0 {
        return o;
    }
    match coord {
        Coord::HalfPixel => (o + 0.5) / scale - 0.5,
        Coord::PytorchHalfPixel => {
            if out > 1 {
                (o + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        Coord::Asymmetric => o / scale,
        Coord::AlignCorners => {
            if out == 1 {
                0.0
            } else {
                o * (inp as f32 - 1.0) / (out as f32 - 1.0)
            }
        }
    }
}

/// Keys' weights of the neighbours at distances `t + 1, t, 1 - t, 2 - t`.
fn weights(t: f32, a: f32) -> [f32; 4] {
    let s = t.abs();
    let far = |d: f32| ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a;
    let near = |d: f32| ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0;
    [far(s + 1.0), near(s), near(1.0 - s), far(2.0 - s)]
}

/// One axis: per output index, the floor of its source coordinate and its weights.
struct Axis {
    floor: Vec<i64>,
    frac: Vec<f32>,
}

fn axis(inp: usize, out: usize, coord: Coord) -> Axis {
    let scale = out as f32 / inp as f32;
    let (mut floor, mut frac) = (Vec::with_capacity(out), Vec::with_capacity(out));
    for o in 0..out {
        let x = original(o, scale, out, inp, coord);
        let f = x.floor();
        floor.push(f as i64);
        frac.push(x - f);
    }
    Axis { floor, frac }
}

/// The weights at fraction `t` for a window starting at `first` over `len` elements, and their
/// divisor (1, or their sum where `exclude_outside` zeroes those outside).
fn window(t: f32, first: i64, len: usize, c: &Cubic) -> ([f32; 4], f32) {
    let mut w = weights(t, c.a);
    if !c.exclude_outside {
        return (w, 1.0);
    }
    let mut sum = 0.0f32;
    for (i, w) in w.iter_mut().enumerate() {
        let v = first + i as i64;
        if v < 0 || v as f32 >= len as f32 {
            *w = 0.0;
        }
        sum += *w;
    }
    (w, sum)
}

/// `x` (rank 2, or rank 4 resized on its last two axes) resized to `sizes` by ONNX Runtime's
/// bicubic kernel.
pub fn resize_cubic(x: &Tensor, sizes: &[u64], c: &Cubic, limit: u64) -> Result<Tensor, EvalError> {
    if x.dtype != DType::F32 {
        return Err(EvalError::Unsupported(format!(
            "cubic Resize of {:?}",
            x.dtype
        )));
    }
    let rank = x.shape.len();
    if sizes.len() != rank {
        return Err(EvalError::Invalid("Resize sizes of another rank".into()));
    }
    if !(rank == 2 || (rank == 4 && sizes[..2] == x.shape[..2])) {
        return Err(EvalError::Unsupported(
            "cubic Resize other than of the last two axes of a rank-2 or rank-4 tensor".into(),
        ));
    }
    let n_out = count(sizes)?;
    check_size(DType::F32, n_out, limit)?;
    let n_in = count(&x.shape)?;
    let raw = x
        .raw()
        .ok_or_else(|| EvalError::Invalid("constant without raw data".into()))?;
    let bytes = (n_in as usize)
        .checked_mul(4)
        .filter(|&b| b <= raw.len())
        .ok_or_else(|| EvalError::Invalid("constant data shorter than its shape".into()))?;
    if sizes == x.shape.as_slice() {
        return Ok(Tensor {
            dtype: DType::F32,
            shape: x.shape.clone(),
            data: TensorData::Raw(raw.slice(..bytes)),
        });
    }
    let src: Vec<f32> = raw[..bytes]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let (h, w) = (x.shape[rank - 2] as usize, x.shape[rank - 1] as usize);
    let (oh, ow) = (sizes[rank - 2] as usize, sizes[rank - 1] as usize);
    if h == 0 || w == 0 {
        return Err(EvalError::Unsupported("Resize of an empty tensor".into()));
    }
    let planes = (n_in as usize) / (h * w);
    let (ya, xa) = (axis(h, oh, c.coord), axis(w, ow, c.coord));
    let at = |plane: &[f32], y: i64, x: i64| {
        let y = y.clamp(0, h as i64 - 1) as usize;
        let x = x.clamp(0, w as i64 - 1) as usize;
        plane[y * w + x]
    };
    let mut out = Vec::with_capacity(n_out as usize * 4);
    // The row sums, per channel: (column fraction, row * width + first column) -> sum.
    let mut cache: HashMap<(u32, i64), f32> = HashMap::new();
    for p in 0..planes {
        let plane = &src[p * h * w..(p + 1) * h * w];
        cache.clear();
        for oy in 0..oh {
            let yf = ya.floor[oy];
            let (wy, sy) = window(ya.frac[oy], yf - 1, h, c);
            for ox in 0..ow {
                let xf = xa.floor[ox];
                let t = xa.frac[ox];
                let (wx, sx) = window(t, xf - 1, w, c);
                // -0 and +0 are one key, as for the kernel's map of floats.
                let key_t = if t == 0.0 { 0 } else { t.to_bits() };
                let mut acc = 0.0f32;
                for (i, &wyi) in wy.iter().enumerate() {
                    let row = yf - 1 + i as i64;
                    let key = (key_t, row * w as i64 + (xf - 1));
                    let r = *cache.entry(key).or_insert_with(|| {
                        let mut r = 0.0f32;
                        for (j, &wxj) in wx.iter().enumerate() {
                            r += wxj / sx * at(plane, row, xf - 1 + j as i64);
                        }
                        r
                    });
                    acc += r * wyi / sy;
                }
                out.extend_from_slice(&acc.to_le_bytes());
            }
        }
    }
    Ok(Tensor {
        dtype: DType::F32,
        shape: sizes.to_vec(),
        data: TensorData::Raw(Bytes::from(out)),
    })
}

// The row `fold` evaluates (ONNX only).

/// Rows of [`crate::ops::registry::OPS`].
pub(crate) const OPS: &[OpEntry] = &[row("Resize", Onnx, resize_node)];

fn string_attr<'a>(n: &'a Node, name: &str) -> Option<&'a str> {
    match n.attr(name) {
        Some(Attr::String(s)) => Some(s),
        _ => None,
    }
}

fn int_attr(n: &Node, name: &str) -> Option<i64> {
    match n.attr(name) {
        Some(Attr::Int(v)) => Some(*v),
        _ => None,
    }
}

/// The cubic attributes of `n`, or why it is not folded.
fn cubic_attrs(n: &Node) -> Result<Cubic, String> {
    let mode = string_attr(n, "mode").unwrap_or("nearest");
    if mode != "cubic" {
        return Err(format!("Resize mode {mode}"));
    }
    if int_attr(n, "antialias").unwrap_or(0) != 0 {
        return Err("Resize with antialias".into());
    }
    if n.attr("axes").is_some() {
        return Err("Resize with axes".into());
    }
    if string_attr(n, "keep_aspect_ratio_policy").is_some_and(|p| p != "stretch") {
        return Err("Resize keeping the aspect ratio".into());
    }
    let coord = match string_attr(n, "coordinate_transformation_mode").unwrap_or("half_pixel") {
        "half_pixel" => Coord::HalfPixel,
        "pytorch_half_pixel" => Coord::PytorchHalfPixel,
        "asymmetric" => Coord::Asymmetric,
        "align_corners" => Coord::AlignCorners,
        m => {
            return Err(format!(
                "cubic Resize with coordinate_transformation_mode {m}"
            ))
        }
    };
    let a = match n.attr("cubic_coeff_a") {
        Some(Attr::Float(v)) => *v,
        None => -0.75,
        Some(_) => return Err("cubic_coeff_a is not a float".into()),
    };
    let exclude_outside = int_attr(n, "exclude_outside").unwrap_or(0) != 0;
    Ok(Cubic {
        coord,
        a,
        exclude_outside,
    })
}

/// `Resize(X, roi, scales, sizes)` (opset 11+) with `X` and `sizes` constant, `scales` absent
/// or empty.
fn resize_node(i: &Inputs) -> Result<Tensor, NoEval> {
    let (Some(x), Some(sizes)) = (i.input(0), i.input(3)) else {
        return Err(NoEval::Silent);
    };
    if x.dtype != DType::F32 {
        return Err(NoEval::Silent);
    }
    if i.input(2).is_some_and(|s| s.element_count() != Some(0)) {
        return Err(NoEval::Skip("Resize with both scales and sizes".into()));
    }
    let c = cubic_attrs(i.node).map_err(NoEval::Skip)?;
    let sizes = sizes
        .to_i64_vec()
        .ok_or_else(|| NoEval::Skip("Resize sizes unreadable".into()))?;
    let sizes: Vec<u64> = sizes
        .iter()
        .map(|&d| u64::try_from(d))
        .collect::<Result<_, _>>()
        .map_err(|_| NoEval::Skip("Resize to a negative size".into()))?;
    Ok(resize_cubic(x, &sizes, &c, i.limit)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys' kernel interpolates: at t = 0 the weights are 0, 1, 0, 0; they sum to 1.
    #[test]
    fn weights_at_the_grid() {
        assert_eq!(weights(0.0, -0.75), [0.0, 1.0, 0.0, 0.0]);
        let w = weights(0.25, -0.75);
        assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6, "{w:?}");
    }

    /// A constant image stays constant when upsampled (every weight sum is 1 up to rounding).
    #[test]
    fn constant_stays_constant() {
        let x = Tensor {
            dtype: DType::F32,
            shape: vec![2, 2],
            data: TensorData::Raw(Bytes::from(
                [1.0f32; 4]
                    .iter()
                    .flat_map(|v| v.to_le_bytes())
                    .collect::<Vec<u8>>(),
            )),
        };
        let c = Cubic {
            coord: Coord::HalfPixel,
            a: -0.75,
            exclude_outside: false,
        };
        let y = resize_cubic(&x, &[3, 5], &c, 1 << 20).expect("resize");
        let raw = y.raw().expect("raw");
        for b in raw.chunks_exact(4) {
            let v = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            assert!((v - 1.0).abs() < 1e-6, "{v}");
        }
    }
}
