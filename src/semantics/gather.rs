//! Evaluation of a plan: the flat indices (into a row-major input of the given dims) that the
//! slice selects, in output order. Used to fold slices of constants and to validate rewrites on
//! an index tensor.

use super::plan::SlicePlan;
use super::resolve::{resolve_concrete, Clamp, ResolvedAxis};
use super::SliceError;

/// A default cap on the number of selected elements (64 Mi).
pub const DEFAULT_MAX_ELEMENTS: u64 = 1 << 26;

/// The flat input indices selected by `plan` on an input of `dims`, in output order.
///
/// Refuses (with [`SliceError::TooLarge`]) a result of more than `max_elements` elements before
/// allocating anything; the input's element count may be anything that fits `u128`.
pub fn gather(
    plan: &SlicePlan,
    dims: &[u64],
    clamp: Clamp,
    max_elements: u64,
) -> Result<Vec<u64>, SliceError> {
    gather_resolved(&resolve_concrete(plan, dims, clamp)?, dims, max_elements)
}

/// [`gather`] of a plan already resolved on `dims` ([`resolve_concrete`]): for a caller that
/// needs the resolved axes too (the output shape), so the plan is resolved once.
pub fn gather_resolved(
    resolved: &[ResolvedAxis],
    dims: &[u64],
    max_elements: u64,
) -> Result<Vec<u64>, SliceError> {
    // Row-major strides of the input, in u128 (a product of dims <= i64::MAX may exceed u64).
    let mut strides = vec![0u128; dims.len()];
    let mut acc: u128 = 1;
    for (i, &d) in dims.iter().enumerate().rev() {
        strides[i] = acc;
        acc = acc.saturating_mul(d as u128);
    }
    let total = resolved
        .iter()
        .filter_map(ResolvedAxis::output_dim)
        .fold(1u128, |t, l| t.saturating_mul(l as u128));
    if total > max_elements as u128 {
        return Err(SliceError::TooLarge {
            elements: total,
            limit: max_elements,
        });
    }
    if total == 0 {
        return Ok(Vec::new());
    }
    if acc.saturating_sub(1) > u64::MAX as u128 {
        // Indices would not fit u64 (inputs beyond 2^64 elements).
        return Err(SliceError::TooLarge {
            elements: acc,
            limit: u64::MAX,
        });
    }
    // One (first offset, offset step, count) per input axis, in input (= output) order. All fit
    // i128: offsets are below `acc <= 2^64`, and a step matters only when count > 1, where
    // |step| * stride < dim * stride <= acc.
    let mut walk: Vec<(i128, i128, u64)> = Vec::with_capacity(dims.len());
    for r in resolved {
        let (axis, start, step, len) = match *r {
            ResolvedAxis::NewAxis => continue,
            ResolvedAxis::Shrink { axis, index } => (axis, index as i128, 0i128, 1u64),
            ResolvedAxis::Range {
                axis,
                start,
                step,
                len,
            } => (axis, start as i128, step as i128, len),
        };
        let s = strides[axis] as i128;
        let step = if len > 1 { step * s } else { 0 };
        walk.push((start * s, step, len));
    }
    let mut out = Vec::with_capacity(total as usize);
    let mut counters = vec![0u64; walk.len()];
    let base: i128 = walk.iter().map(|w| w.0).sum();
    let mut cur = base;
    loop {
        out.push(cur as u64);
        // Odometer over the walk, last axis fastest.
        let mut k = walk.len();
        loop {
            if k == 0 {
                return Ok(out);
            }
            k -= 1;
            counters[k] += 1;
            if counters[k] < walk[k].2 {
                cur += walk[k].1;
                break;
            }
            cur -= walk[k].1 * (counters[k] as i128 - 1);
            counters[k] = 0;
        }
    }
}
