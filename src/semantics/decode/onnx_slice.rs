//! ONNX `Slice`, all versions in one place.
//!
//! Opset versions:
//! - 1 (through 9): attributes `starts`, `ends`, optional `axes`; no steps.
//! - 10: inputs `starts`, `ends`, optional `axes`, optional `steps`.
//! - 11: negative `axes` documented (accepted for every opset here, as the runtimes do).
//! - 13: more types; same semantics.
//!
//! Clamping (resolve with [`crate::semantics::Clamp::Ov`], which is the ONNX rule too): starts
//! clamp to `[0, dim]` (`[0, dim - 1]` for negative steps), ends to `[0, dim]` (`[-1, dim - 1]`).

use super::super::plan::{Provenance, SlicePlan};
use super::super::SliceError;

/// Decode ONNX Slice of `opset` (1..=9 is the attribute form: `steps` must be `None`).
/// Errors: steps on opset < 10, zero step, length mismatch, axis out of range, repeated axis.
pub fn onnx_slice(
    starts: &[Option<i64>],
    ends: &[Option<i64>],
    axes: Option<&[i64]>,
    steps: Option<&[Option<i64>]>,
    input_rank: usize,
    opset: u32,
) -> Result<SlicePlan, SliceError> {
    if opset < 10 && steps.is_some() {
        return Err(SliceError::StepsUnsupported { opset });
    }
    super::axes_slice(starts, ends, axes, steps, input_rank)
}

/// [`onnx_slice`], and the element of `starts`/`ends` each plan entry reads: entry `a` (input
/// axis `a`) reads element `i` where `axes[i] = a` (`axes` omitted: `i = a`); the axes not
/// listed read none.
pub fn onnx_slice_with_provenance(
    starts: &[Option<i64>],
    ends: &[Option<i64>],
    axes: Option<&[i64]>,
    steps: Option<&[Option<i64>]>,
    input_rank: usize,
    opset: u32,
) -> Result<(SlicePlan, Provenance), SliceError> {
    let plan = onnx_slice(starts, ends, axes, steps, input_rank, opset)?;
    Ok((plan, super::axes_provenance(axes, starts.len(), input_rank)))
}
