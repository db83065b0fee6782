//! OpenVINO `Slice-8`: inputs `start`, `stop`, `step` (required) and optional `axes`
//! (negative allowed, unique). Clamping is [`crate::semantics::Clamp::Ov`].

use super::super::plan::{Provenance, SlicePlan};
use super::super::SliceError;

/// Decode OpenVINO Slice-8. `steps = None` means all ones (as the conformance data's callers use
/// it; the op itself requires the input). Errors: zero step, length mismatch, axis out of range,
/// repeated axis.
pub fn ov_slice8(
    starts: &[Option<i64>],
    stops: &[Option<i64>],
    steps: Option<&[Option<i64>]>,
    axes: Option<&[i64]>,
    input_rank: usize,
) -> Result<SlicePlan, SliceError> {
    super::axes_slice(starts, stops, axes, steps, input_rank)
}

/// [`ov_slice8`], and the element of `start`/`stop` each plan entry reads (as for ONNX Slice:
/// entry `a` reads element `i` where `axes[i] = a`).
pub fn ov_slice8_with_provenance(
    starts: &[Option<i64>],
    stops: &[Option<i64>],
    steps: Option<&[Option<i64>]>,
    axes: Option<&[i64]>,
    input_rank: usize,
) -> Result<(SlicePlan, Provenance), SliceError> {
    let plan = ov_slice8(starts, stops, steps, axes, input_rank)?;
    Ok((plan, super::axes_provenance(axes, starts.len(), input_rank)))
}
