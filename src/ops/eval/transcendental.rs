//! ONNX `Sin`, `Cos` and `Log` of `f32` constants, bit for bit as ONNX Runtime's CPU kernels
//! compute them (measured against onnxruntime 1.32 on x86-64: `tools/gen_trig_fixtures.py`,
//! `tests/fold_transcendental.rs`), and only for ONNX graphs (OpenVINO computes these
//! otherwise; no OpenVINO row is declared).
//!
//! These functions are not correctly rounded in ONNX Runtime, and the value of an element
//! depends on where it sits in the tensor. The kernels assign `X.array().sin()` (`cos`, `log`)
//! through Eigen over the whole tensor (`Log`: over each block of a parallel loop): Eigen
//! computes the elements in packets of 4 lanes (the wheel's x86-64 build: SSE, no FMA) from the
//! first aligned element, and the elements after the last whole packet one by one with the C
//! library (`sinf`, `cosf`, `logf`). ONNX Runtime's buffers are aligned, so for a tensor of `n`
//! elements computed as one block, elements `0 .. 4 * (n / 4)` take the packet algorithm and
//! the rest the scalar one.
//!
//! The packet algorithms, reimplemented here from their description (each step one `f32`
//! operation rounded to nearest, multiply-adds as a multiply then an add):
//! - sine and cosine: `k = round(|x| * 2/pi)` by adding and subtracting 1.5 * 2^23, then
//!   `r = |x| - k * pi/2` with pi/2 split into four parts (Cody and Waite), then a degree-8 even
//!   polynomial for the cosine and a degree-7 odd one for the sine of `r`, the quadrant (`k`'s
//!   low bits) choosing the polynomial and the sign. Inputs of magnitude at least 25966 (sine)
//!   or 18838 (cosine) take a Payne-Hanek reduction there instead: not folded.
//! - logarithm: `x = m * 2^e` with `m` in [0.5, 1) (denormals scaled by 2^24 first); if `m <
//!   sqrt(1/2)`, `m = 2m` and `e = e - 1`; then `log(1 + f) ~ f * P(f) / Q(f)` with `f = m - 1`
//!   (P of degree 2, Q of degree 3), plus `e * ln 2`; 0 gives -inf, +inf +inf, negative or NaN
//!   a NaN with every bit set.
//!
//! The scalar elements are the C library's: here Rust's `f32::sin`/`cos`/`ln`, which call the
//! same `libm` functions (glibc's on Linux); an element whose scalar input is not finite, or
//! negative for `Log`, is not folded.
//!
//! `Log` runs as a parallel loop (cost 15 cycles an element): above a size ONNX Runtime's cost
//! model may split it into blocks whose boundaries depend on its thread count, each block with
//! its own scalar tail. There the tensor is folded only when the packet and the scalar value of
//! every element agree (the position does not matter then).

use bytes::Bytes;

use crate::ir::Format::Onnx;
use crate::ir::{DType, Tensor, TensorData};
use crate::ops::registry::{row, Inputs, NoEval, OpEntry};

use super::{check_size, count, EvalError};

/// The lanes of an ONNX Runtime (Eigen, SSE) packet of `f32`.
pub const LANES: usize = 4;

/// A function ONNX Runtime computes with a packet algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trans {
    Sin,
    Cos,
    /// Natural logarithm.
    Log,
}

const ROUNDING_MAGIC: f32 = 12_582_912.0; // 1.5 * 2^23
/// 2/pi rounded to `f32`.
const TWO_OVER_PI: f32 = f32::from_bits(0x3f22_f983);

/// pi/2 as four `f32` (1.5703125, 4.8399e-4, -1.6287e-7, -5.5644e-11) whose sum is pi/2 to
/// about 2^-60 and whose products with a quadrant count below 2^14 are exact (the first
/// two have few significant bits).
const PIO2: [f32; 4] = [
    f32::from_bits(0x3fc9_0000),
    f32::from_bits(0x39fd_c000),
    f32::from_bits(0xb42e_e000),
    f32::from_bits(0xae74_b9ee),
];

/// The magnitudes from which the packet algorithms reduce by Payne-Hanek (not folded).
const HUGE_SIN: f32 = 25966.0;
const HUGE_COS: f32 = 18838.0;

/// cos(r) ~ 1 - r^2/2 + ..., a polynomial in r^2 from its r^8 coefficient (2.4372e-5,
/// -1.3887e-3, 4.1667e-2, -0.5, 1).
const COS_POLY: [f32; 5] = [
    f32::from_bits(0x37cc_730b),
    f32::from_bits(0xbab6_036e),
    f32::from_bits(0x3d2a_aa9e),
    -0.5,
    1.0,
];

/// sin(r) ~ r + r^3 (s0 + s1 r^2 + s2 r^4): s2, s1, s0 (-1.9592e-4, 8.3327e-3, -0.16667).
const SIN_POLY: [f32; 3] = [
    f32::from_bits(0xb94d_70ca),
    f32::from_bits(0x3c08_85d3),
    f32::from_bits(0xbe2a_aaa8),
];

/// The packet sine or cosine of `x` (finite, below the Payne-Hanek threshold).
fn packet_sincos(x: f32, sine: bool) -> f32 {
    let a = x.abs();
    let q = a * TWO_OVER_PI;
    let rounded = q + ROUNDING_MAGIC;
    // The low bits of the rounded sum hold the integer nearest to q.
    let quadrant = rounded.to_bits();
    let k = rounded - ROUNDING_MAGIC;
    let mut r = a;
    for p in PIO2 {
        r += k * -p;
    }
    let sign = if sine {
        (x.to_bits() ^ (quadrant << 30)) & 0x8000_0000
    } else {
        (quadrant.wrapping_add(1) << 30) & 0x8000_0000
    };
    let r2 = r * r;
    let mut c = COS_POLY[0];
    for &k in &COS_POLY[1..] {
        c = c * r2 + k;
    }
    let mut s = SIN_POLY[0];
    for &k in &SIN_POLY[1..] {
        s = s * r2 + k;
    }
    s *= r2;
    s = s * r + r;
    // An even quadrant takes the function's own polynomial, an odd one the other's.
    let even = quadrant & 1 == 0;
    let v = if sine == even { s } else { c };
    f32::from_bits(v.to_bits() ^ sign)
}

/// `(m, e)` with `x = m * 2^e`, `|m|` in [0.5, 1), for finite nonzero `x` (denormals too); `x`
/// itself and 0 for zeros, infinities and NaN.
fn frexp(x: f32) -> (f32, f32) {
    let denormal = x.abs() < f32::MIN_POSITIVE;
    let n = if denormal { x * 16_777_216.0 } else { x };
    let biased = ((n.to_bits() & 0x7fff_ffff) >> 23) as f32;
    if x == 0.0 || biased == 255.0 {
        return (x, 0.0);
    }
    let offset = if denormal { -150.0 } else { -126.0 };
    let m = f32::from_bits((n.to_bits() & 0x807f_ffff) | 0.5f32.to_bits());
    (m, biased + offset)
}

/// P(f) / Q(f) with log(1 + f) ~ f P(f) / Q(f): P's coefficients from f^2, Q's from f^3.
/// (0.18256, 1, 1 and 0.049616, 0.59923, 1.5, 1: a rational fit whose other coefficients
/// round to 1 and 1.5 in `f32`.)
const LOG_P: [f32; 3] = [f32::from_bits(0x3e3a_f1c9), 1.0, 1.0];
const LOG_Q: [f32; 4] = [
    f32::from_bits(0x3d4b_3a68),
    f32::from_bits(0x3f19_674d),
    1.5,
    1.0,
];

/// The packet natural logarithm of `x` (any value).
fn packet_log(x: f32) -> f32 {
    if x == 0.0 {
        return f32::NEG_INFINITY;
    }
    if x.is_nan() || x < 0.0 {
        return f32::from_bits(u32::MAX);
    }
    if x == f32::INFINITY {
        return x;
    }
    let (mut m, mut e) = frexp(x);
    let small = m < std::f32::consts::FRAC_1_SQRT_2;
    let twice = if small { m } else { 0.0 };
    m -= 1.0;
    if small {
        e -= 1.0;
    }
    let f = m + twice;
    let mut p = LOG_P[0];
    for &k in &LOG_P[1..] {
        p = p * f + k;
    }
    p *= f;
    let mut q = LOG_Q[0];
    for &k in &LOG_Q[1..] {
        q = q * f + k;
    }
    e * std::f32::consts::LN_2 + p / q
}

/// The packet value of `op` at `x`, `None` where the packet algorithm is not reproduced.
pub fn packet_value(op: Trans, x: f32) -> Option<f32> {
    match op {
        Trans::Sin | Trans::Cos => {
            let huge = if op == Trans::Sin { HUGE_SIN } else { HUGE_COS };
            (x.is_finite() && x.abs() < huge).then(|| packet_sincos(x, op == Trans::Sin))
        }
        Trans::Log => Some(packet_log(x)),
    }
}

/// The scalar (C library) value of `op` at `x`, `None` where its bits are not reproduced (a
/// NaN result: its sign and payload are the library's).
pub fn scalar_value(op: Trans, x: f32) -> Option<f32> {
    if !(x.is_finite() || (op == Trans::Log && x == f32::INFINITY)) {
        return None;
    }
    match op {
        Trans::Sin => Some(x.sin()),
        Trans::Cos => Some(x.cos()),
        Trans::Log => (x >= 0.0).then(|| x.ln()),
    }
}

/// Whether ONNX Runtime may split `Log` of `n` elements into several blocks: its parallel
/// loop runs in one block when Eigen's cost model asks for one thread, whatever the number of
/// threads. The model: per element 4 bytes loaded and 4 stored at 11/64 cycles a byte and 15
/// compute cycles; threads = (n * cost - 100000) / 100000 + 0.9, truncated.
pub fn log_may_split(n: u64) -> bool {
    let per = 4.0 * (11.0 / 64.0) + 4.0 * (11.0 / 64.0) + 15.0;
    let threads = (n as f64 * per - 100_000.0) / 100_000.0 + 0.9;
    threads >= 2.0
}

/// `op` of every element of `t` (`f32`), as ONNX Runtime computes it for this tensor.
pub fn ort_unary(t: &Tensor, op: Trans, limit: u64) -> Result<Tensor, EvalError> {
    if t.dtype != DType::F32 {
        return Err(EvalError::Unsupported(format!("{op:?} of {:?}", t.dtype)));
    }
    let n = count(&t.shape)?;
    check_size(t.dtype, n, limit)?;
    let raw = t
        .raw()
        .ok_or_else(|| EvalError::Invalid("constant without raw data".into()))?;
    let len = (n as usize)
        .checked_mul(4)
        .filter(|&l| l <= raw.len())
        .ok_or_else(|| EvalError::Invalid("constant data shorter than its shape".into()))?;
    let xs: Vec<f32> = raw[..len]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let refuse = |i: usize, x: f32, how: &str| {
        EvalError::Unsupported(format!(
            "{op:?} of {x:?} (element {i}): ONNX Runtime's {how} value is not reproduced"
        ))
    };
    let packets = xs.len() / LANES * LANES;
    let anywhere = op == Trans::Log && log_may_split(n);
    let mut out = Vec::with_capacity(len);
    for (i, &x) in xs.iter().enumerate() {
        let v = if anywhere {
            // Any element may be in a block's scalar tail: fold only where both agree.
            let p = packet_value(op, x).ok_or_else(|| refuse(i, x, "packet"))?;
            let s = scalar_value(op, x).ok_or_else(|| refuse(i, x, "scalar"))?;
            if p.to_bits() != s.to_bits() {
                return Err(EvalError::Unsupported(format!(
                    "{op:?} of {n} elements: ONNX Runtime may split it by its thread count, and \
                     element {i} ({x:?}) depends on where the split falls"
                )));
            }
            p
        } else if i < packets {
            packet_value(op, x).ok_or_else(|| refuse(i, x, "packet"))?
        } else {
            scalar_value(op, x).ok_or_else(|| refuse(i, x, "scalar"))?
        };
        out.extend_from_slice(&v.to_le_bytes());
    }
    Ok(Tensor {
        dtype: DType::F32,
        shape: t.shape.clone(),
        data: TensorData::Raw(Bytes::from(out)),
    })
}

// The rows `fold` evaluates (ONNX only: OpenVINO's `Sin`, `Cos` and `Log` are computed by
// other code, and stay unfolded).

/// Rows of [`crate::ops::registry::OPS`].
pub(crate) const OPS: &[OpEntry] = &[
    row("Sin", Onnx, |i| trans_node(i, Trans::Sin)),
    row("Cos", Onnx, |i| trans_node(i, Trans::Cos)),
    row("Log", Onnx, |i| trans_node(i, Trans::Log)),
];

fn trans_node(i: &Inputs, op: Trans) -> Result<Tensor, NoEval> {
    match i.consts {
        [Some(t)] if t.dtype == DType::F32 => Ok(ort_unary(t, op, i.limit)?),
        [Some(t)] => Err(NoEval::Skip(format!(
            "{op:?} of {:?}: only f32 is computed as ONNX Runtime does",
            t.dtype
        ))),
        _ => Err(NoEval::Silent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The split constants of pi/2 add up to pi/2 (to f64 precision).
    #[test]
    fn pio2_parts_sum_to_pi_over_2() {
        let s: f64 = PIO2.iter().map(|&p| p as f64).sum();
        assert!((s - std::f64::consts::FRAC_PI_2).abs() < 1e-15, "{s}");
    }

    /// frexp: 8 = 0.5 * 2^4; the smallest denormal 2^-149 = 0.5 * 2^-148; -3 = -0.75 * 2^2.
    #[test]
    fn frexp_parts() {
        assert_eq!(frexp(8.0), (0.5, 4.0));
        assert_eq!(frexp(f32::from_bits(1)), (0.5, -148.0));
        assert_eq!(frexp(-3.0), (-0.75, 2.0));
    }

    /// Values exact in every algorithm: sin 0 = 0 (sign kept), cos 0 = 1, log 1 = 0, log 0 =
    /// -inf.
    #[test]
    fn exact_points() {
        assert_eq!(
            packet_value(Trans::Sin, -0.0).map(f32::to_bits),
            Some(0x8000_0000)
        );
        assert_eq!(packet_value(Trans::Cos, 0.0), Some(1.0));
        assert_eq!(packet_value(Trans::Log, 1.0), Some(0.0));
        assert_eq!(packet_value(Trans::Log, 0.0), Some(f32::NEG_INFINITY));
        assert_eq!(packet_value(Trans::Sin, 1e30), None);
    }

    /// `Log` is one block up to 12,824 elements: measured, ONNX Runtime 1.32 computes 12,824
    /// elements as one block and splits 12,825 (with 2, 3, 5, 7, 16 and 64 threads alike).
    #[test]
    fn log_split_threshold() {
        assert!(!log_may_split(1000));
        assert!(!log_may_split(12_824));
        assert!(log_may_split(12_825));
    }
}
