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
    let runs = Runs::new(resolved, dims, max_elements)?;
    let mut out = Vec::with_capacity(runs.total() as usize);
    runs.for_each(|first, len| out.extend(first..first + len));
    Ok(out)
}

/// The selection of [`gather_resolved`] as runs of consecutive input elements: each run
/// `(first, len)` stands for the offsets `first, first + 1, ..., first + len - 1`, and the runs
/// come in output order. An innermost axis taken at step 1, and every axis outside it whose
/// step spans exactly the run inside it, make one run together (a slice `x[:, 2:5]` of a
/// row-major input is one run per row; `x[1:3]` is one run), so a caller copying bytes copies a
/// run at a time and no offset vector is built.
#[derive(Debug, Clone)]
pub struct Runs {
    /// Offset of the first element selected.
    base: u64,
    /// (offset step, count) of each axis outside the run selecting more than one element, in
    /// input (= output) order.
    walk: Vec<(i128, u64)>,
    /// Elements in one run.
    len: u64,
    /// Elements selected in all.
    total: u64,
}

impl Runs {
    /// The runs of `resolved` ([`resolve_concrete`]) on an input of `dims`. The checks are
    /// [`gather_resolved`]'s: more than `max_elements` elements selected is
    /// [`SliceError::TooLarge`], and so is an input whose offsets do not fit `u64`.
    pub fn new(
        resolved: &[ResolvedAxis],
        dims: &[u64],
        max_elements: u64,
    ) -> Result<Runs, SliceError> {
        // Row-major strides of the input, in u128 (a product of dims <= i64::MAX may exceed
        // u64).
        let mut strides = vec![0u128; dims.len()];
        let mut acc: u128 = 1;
        for (i, &d) in dims.iter().enumerate().rev() {
            strides[i] = acc;
            acc = acc.saturating_mul(d as u128);
        }
        let count = resolved
            .iter()
            .filter_map(ResolvedAxis::output_dim)
            .fold(1u128, |t, l| t.saturating_mul(l as u128));
        if count > max_elements as u128 {
            return Err(SliceError::TooLarge {
                elements: count,
                limit: max_elements,
            });
        }
        if count == 0 {
            return Ok(Runs {
                base: 0,
                walk: Vec::new(),
                len: 0,
                total: 0,
            });
        }
        if acc.saturating_sub(1) > u64::MAX as u128 {
            // Indices would not fit u64 (inputs beyond 2^64 elements).
            return Err(SliceError::TooLarge {
                elements: acc,
                limit: u64::MAX,
            });
        }
        // All fit i128: offsets are below `acc <= 2^64`, and a step matters only when count >
        // 1, where |step| * stride < dim * stride <= acc.
        let mut base: i128 = 0;
        let mut walk: Vec<(i128, u64)> = Vec::with_capacity(dims.len());
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
            base += start * s;
            if len > 1 {
                walk.push((step * s, len));
            }
        }
        // The innermost axes that continue each other make one run.
        let mut len: u64 = 1;
        while let Some(&(step, n)) = walk.last() {
            if step != len as i128 {
                break;
            }
            len *= n;
            walk.pop();
        }
        Ok(Runs {
            base: base as u64,
            walk,
            len,
            total: count as u64,
        })
    }

    /// Elements selected in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Calls `run(first, len)` for every run, in output order (never when nothing is
    /// selected).
    pub fn for_each(&self, mut run: impl FnMut(u64, u64)) {
        if self.total == 0 {
            return;
        }
        let walk = &self.walk;
        let mut counters = vec![0u64; walk.len()];
        let mut cur = self.base as i128;
        loop {
            run(cur as u64, self.len);
            // Odometer over the walk, last axis fastest.
            let mut k = walk.len();
            loop {
                if k == 0 {
                    return;
                }
                k -= 1;
                counters[k] += 1;
                if counters[k] < walk[k].1 {
                    cur += walk[k].0;
                    break;
                }
                cur -= walk[k].0 * (counters[k] as i128 - 1);
                counters[k] = 0;
            }
        }
    }
}
