//! `StridedSlice` in its two flavours: TensorFlow (integer bit masks) and OpenVINO
//! StridedSlice-1 (0/1 mask lists of any length, padded with zeros or truncated).
//!
//! Common rules (both runtimes agree): at one position, ellipsis beats new-axis beats shrink
//! beats range; a missing ellipsis is implied at the end; the ellipsis covers the input axes the
//! other entries do not consume; a shrink takes `begin` as is (begin/end masks and `end` are
//! ignored). Differences:
//! - TensorFlow: a zero stride is an error on shrink entries too, and a shrink entry with a
//!   negative stride is an error ("only stride 1 allowed on non-range indexing").
//! - OpenVINO: the stride of a shrink entry is ignored; a mask that is neither empty nor as long
//!   as `begin_mask` is an error ("All masks of StridedSlice must have the same size"), though its
//!   spec allows masks of any length. Its compiler also decodes the entries with
//!   `make_slice_plan`'s precedence and rejects shrink indices out of range there (an
//!   ellipsis+shrink entry is executed as a shrink): see `ov_slice_plan_checks`; those become the
//!   plan's `check` indices, verified when resolving against dims.
//! - Resolution: reverse ranges clamp a begin below `-dim` differently ([`Clamp`]).
//!
//! [`Clamp`]: crate::semantics::Clamp

use super::super::plan::{AxisPlan, Bound, Provenance, SlicePlan};
use super::super::SliceError;

/// Which runtime's StridedSlice the parameters come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Flavour {
    /// TensorFlow / TFLite `StridedSlice` (integer masks).
    Tf,
    /// OpenVINO `StridedSlice-1` (mask lists).
    Ov,
}

impl Flavour {
    /// The clamping rule that goes with this flavour.
    pub fn clamp(self) -> crate::semantics::Clamp {
        match self {
            Flavour::Tf => crate::semantics::Clamp::Tf,
            Flavour::Ov => crate::semantics::Clamp::Ov,
        }
    }
}

/// TensorFlow's five integer bit masks (bit i = entry i).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TfMasks {
    /// begin_mask
    pub begin: i64,
    /// end_mask
    pub end: i64,
    /// ellipsis_mask
    pub ellipsis: i64,
    /// new_axis_mask
    pub new_axis: i64,
    /// shrink_axis_mask
    pub shrink: i64,
}

/// OpenVINO's five mask lists (non-zero = set), as written in the IR.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OvMasks<'a> {
    /// begin_mask
    pub begin: &'a [i64],
    /// end_mask
    pub end: &'a [i64],
    /// ellipsis_mask
    pub ellipsis: &'a [i64],
    /// new_axis_mask
    pub new_axis: &'a [i64],
    /// shrink_axis_mask
    pub shrink: &'a [i64],
}

/// The parameters of a StridedSlice, flavour-neutral. Masks may be shorter or longer than
/// `begin` (missing entries are 0).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct StridedSliceSpec {
    /// Begin per entry; `None` = not constant.
    pub begin: Vec<Option<i64>>,
    /// End per entry; `None` = not constant.
    pub end: Vec<Option<i64>>,
    /// Strides per entry (`None` list = all ones; `None` element = not constant).
    pub strides: Option<Vec<Option<i64>>>,
    /// begin_mask
    pub begin_mask: Vec<bool>,
    /// end_mask
    pub end_mask: Vec<bool>,
    /// ellipsis_mask
    pub ellipsis_mask: Vec<bool>,
    /// new_axis_mask
    pub new_axis_mask: Vec<bool>,
    /// shrink_axis_mask
    pub shrink_axis_mask: Vec<bool>,
}

fn bits(m: i64, len: usize) -> Vec<bool> {
    (0..len).map(|i| i < 64 && (m >> i) & 1 == 1).collect()
}

fn list(m: &[i64]) -> Vec<bool> {
    m.iter().map(|&v| v != 0).collect()
}

impl StridedSliceSpec {
    /// Constant begin/end/strides, no masks.
    pub fn new(begin: &[i64], end: &[i64], strides: Option<&[i64]>) -> Self {
        StridedSliceSpec {
            begin: super::constant(begin),
            end: super::constant(end),
            strides: strides.map(super::constant),
            ..Default::default()
        }
    }

    /// Constant values with TensorFlow integer masks. Every mask list gets the same length:
    /// `len(begin)`, or more if a mask has higher bits set (TensorFlow still counts those
    /// ellipsis bits when refusing several ellipses).
    pub fn from_tf_bits(
        begin: &[i64],
        end: &[i64],
        strides: Option<&[i64]>,
        masks: TfMasks,
    ) -> Self {
        let high = [
            masks.begin,
            masks.end,
            masks.ellipsis,
            masks.new_axis,
            masks.shrink,
        ]
        .iter()
        .map(|m| 64 - m.leading_zeros() as usize)
        .max()
        .unwrap_or(0);
        let len = begin.len().max(high);
        StridedSliceSpec {
            begin_mask: bits(masks.begin, len),
            end_mask: bits(masks.end, len),
            ellipsis_mask: bits(masks.ellipsis, len),
            new_axis_mask: bits(masks.new_axis, len),
            shrink_axis_mask: bits(masks.shrink, len),
            ..StridedSliceSpec::new(begin, end, strides)
        }
    }

    /// Constant values with OpenVINO mask lists (kept at their own lengths).
    pub fn from_ov_lists(
        begin: &[i64],
        end: &[i64],
        strides: Option<&[i64]>,
        masks: OvMasks<'_>,
    ) -> Self {
        StridedSliceSpec {
            begin_mask: list(masks.begin),
            end_mask: list(masks.end),
            ellipsis_mask: list(masks.ellipsis),
            new_axis_mask: list(masks.new_axis),
            shrink_axis_mask: list(masks.shrink),
            ..StridedSliceSpec::new(begin, end, strides)
        }
    }
}

/// One spec entry as decoded; `usize` is its position in begin/end.
enum Entry {
    Ellipsis,
    New,
    Shrink(Option<i64>, usize),
    Range(Bound, Bound, Option<i64>, usize),
}

fn get(mask: &[bool], i: usize) -> bool {
    mask.get(i).copied().unwrap_or(false)
}

/// Decode a StridedSlice of the given flavour for an input of rank `input_rank`.
///
/// Errors: begin/end/strides length mismatch, several ellipses, zero stride, (TF) shrink with a
/// negative stride, (OV) a mask neither empty nor as long as `begin_mask`, more input axes addressed than the
/// input has. Shrink indices are checked later, against dims, by `resolve`.
pub fn strided_slice(
    spec: &StridedSliceSpec,
    flavour: Flavour,
    input_rank: usize,
) -> Result<SlicePlan, SliceError> {
    strided_slice_with_provenance(spec, flavour, input_rank).map(|(p, _)| p)
}

/// [`strided_slice`], and the entry of `begin`/`end` each plan entry reads: a range entry `i`
/// reads element `i` of each list unless its begin/end mask is set; a shrink entry `i` reads
/// `begin[i]`; ellipsis axes and new axes read nothing.
pub fn strided_slice_with_provenance(
    spec: &StridedSliceSpec,
    flavour: Flavour,
    input_rank: usize,
) -> Result<(SlicePlan, Provenance), SliceError> {
    check_lists(spec, flavour)?;
    let mut entries = spec_entries(spec, flavour)?;
    if !entries.iter().any(|e| matches!(e, Entry::Ellipsis)) {
        entries.push(Entry::Ellipsis);
    }
    let used = entries
        .iter()
        .filter(|e| matches!(e, Entry::Shrink(..) | Entry::Range(..)))
        .count();
    if used > input_rank {
        return Err(SliceError::TooManyAxes {
            used,
            rank: input_rank,
        });
    }
    let checks = match flavour {
        Flavour::Ov => ov_slice_plan_checks(spec, input_rank, used),
        Flavour::Tf => Vec::new(),
    };
    Ok(place(entries, input_rank, used, &checks, spec.begin.len()))
}

/// The list lengths and the ellipsis count of `spec`, checked.
fn check_lists(spec: &StridedSliceSpec, flavour: Flavour) -> Result<(), SliceError> {
    let m = spec.begin.len();
    if spec.end.len() != m {
        return Err(SliceError::LengthMismatch {
            what: "begin/end",
            a: m,
            b: spec.end.len(),
        });
    }
    if let Some(s) = &spec.strides {
        if s.len() != m {
            return Err(SliceError::LengthMismatch {
                what: "begin/strides",
                a: m,
                b: s.len(),
            });
        }
    }
    let masks = [
        &spec.begin_mask,
        &spec.end_mask,
        &spec.ellipsis_mask,
        &spec.new_axis_mask,
        &spec.shrink_axis_mask,
    ];
    if flavour == Flavour::Ov {
        // OpenVINO's rule, exactly: each mask is empty or as long as begin_mask.
        let lens: Vec<usize> = masks.iter().map(|v| v.len()).collect();
        if lens.iter().any(|&l| l != 0 && l != lens[0]) {
            return Err(SliceError::UnequalMaskLengths(lens));
        }
    }
    if spec.ellipsis_mask.iter().filter(|&&b| b).count() > 1 {
        return Err(SliceError::SeveralEllipses);
    }
    Ok(())
}

/// One entry per element of `spec`'s lists, masks applied.
fn spec_entries(spec: &StridedSliceSpec, flavour: Flavour) -> Result<Vec<Entry>, SliceError> {
    let m = spec.begin.len();
    let mut entries = Vec::with_capacity(m + 1);
    for i in 0..m {
        let stride = match &spec.strides {
            Some(s) => s[i],
            None => Some(1),
        };
        let entry = if get(&spec.ellipsis_mask, i) {
            Entry::Ellipsis
        } else if get(&spec.new_axis_mask, i) {
            Entry::New
        } else if get(&spec.shrink_axis_mask, i) {
            if flavour == Flavour::Tf {
                match stride {
                    Some(0) => return Err(SliceError::ZeroStep { index: i }),
                    Some(s) if s < 0 => {
                        return Err(SliceError::ShrinkStride {
                            index: i,
                            stride: s,
                        })
                    }
                    _ => {}
                }
            }
            Entry::Shrink(spec.begin[i], i)
        } else {
            if stride == Some(0) {
                return Err(SliceError::ZeroStep { index: i });
            }
            let bound = |masked: bool, v: Option<i64>| {
                if masked {
                    Bound::Edge
                } else {
                    v.map_or(Bound::Dynamic, Bound::Index)
                }
            };
            Entry::Range(
                bound(get(&spec.begin_mask, i), spec.begin[i]),
                bound(get(&spec.end_mask, i), spec.end[i]),
                stride,
                i,
            )
        };
        entries.push(entry);
    }
    Ok(entries)
}

/// The plan entries of `entries` on an input of `input_rank` (`used` of its axes addressed,
/// the ellipsis taking the others) and where each reads its begin and end (of lists of
/// length `m`).
fn place(
    entries: Vec<Entry>,
    input_rank: usize,
    used: usize,
    checks: &[Option<i64>],
    m: usize,
) -> (SlicePlan, Provenance) {
    let check_of = |axis: usize| checks.get(axis).copied().flatten();
    let mut axes = Vec::with_capacity(entries.len() + input_rank);
    let mut prov = Provenance {
        begin: Vec::with_capacity(entries.len() + input_rank),
        end: Vec::with_capacity(entries.len() + input_rank),
        len: m,
    };
    let mut axis = 0usize;
    for e in entries {
        let (from_begin, from_end) = match e {
            Entry::Ellipsis => {
                for _ in 0..input_rank - used {
                    axes.push(AxisPlan::Range {
                        axis,
                        begin: Bound::Edge,
                        end: Bound::Edge,
                        step: Some(1),
                        check: check_of(axis),
                    });
                    prov.begin.push(None);
                    prov.end.push(None);
                    axis += 1;
                }
                continue;
            }
            Entry::New => {
                axes.push(AxisPlan::NewAxis);
                (None, None)
            }
            Entry::Shrink(index, i) => {
                axes.push(AxisPlan::Shrink {
                    axis,
                    index,
                    check: check_of(axis),
                });
                axis += 1;
                (Some(i), None)
            }
            Entry::Range(begin, end, step, i) => {
                axes.push(AxisPlan::Range {
                    axis,
                    begin,
                    end,
                    step,
                    check: check_of(axis),
                });
                axis += 1;
                let listed = |b: Bound| (b != Bound::Edge).then_some(i);
                (listed(begin), listed(end))
            }
        };
        prov.begin.push(from_begin);
        prov.end.push(from_end);
    }
    (SlicePlan { input_rank, axes }, prov)
}

/// OpenVINO StridedSlice-1: the entries where its CPU plugin and its reference evaluation (what
/// its constant folding runs) give different results: a shrink entry (not an ellipsis or
/// new-axis one) that also has its begin_mask bit, unless `begin` is the constant 0. The plugin
/// keeps element 0 there (begin_mask wins), the reference keeps `begin[i]`, as TensorFlow does.
/// slice-opt keeps `begin[i]` in every pass (fold, lower, raise, infer, check): see the README
/// ("The shrink + begin_mask choice"); the passes warn on each such node.
pub fn ov_shrink_begin_mask_entries(spec: &StridedSliceSpec) -> Vec<usize> {
    (0..spec.begin.len())
        .filter(|&i| {
            get(&spec.shrink_axis_mask, i)
                && get(&spec.begin_mask, i)
                && !get(&spec.ellipsis_mask, i)
                && !get(&spec.new_axis_mask, i)
                && spec.begin[i] != Some(0)
        })
        .collect()
}

/// The warning the passes give on a node with [`ov_shrink_begin_mask_entries`].
pub fn ov_shrink_begin_mask_warning(entries: &[usize]) -> String {
    let list: Vec<String> = entries.iter().map(|i| i.to_string()).collect();
    format!(
        "OpenVINO's CPU plugin and its constant folding disagree here; folded as its constant \
         folding computes: entry {} has shrink_axis_mask and begin_mask, and keeps element \
         begin[i] (the CPU plugin keeps element 0)",
        list.join(", ")
    )
}

/// OpenVINO StridedSlice-1: the shrink indices its compiler checks, per input axis.
///
/// Besides shape inference (whose decoding [`strided_slice`] follows), OpenVINO's CPU compiler
/// runs `ov::op::util::make_slice_plan` (`src/core/src/op/util/slice_plan.cpp`, called by the
/// `GroupedStridedSliceOptimizer` pass for constant begin/end/strides), and so does its reference
/// evaluation. Its main loop decodes each entry with another precedence than shape inference:
/// new-axis first, then shrink, then ellipsis, then range — while its counting loop (and shape
/// inference) give the ellipsis priority. So an entry with both the ellipsis and the shrink bit
/// is *executed* as a shrink of the input axis it reaches (and the ellipsis never expands), and an
/// entry with the ellipsis and new-axis bits inserts an axis. Every shrink it executes requires
/// `-dim <= begin < dim` on that axis, else the model fails to compile. The result itself follows
/// shape inference, so these are conditions only: `checks[axis]` = the begin to check there.
///
/// Where the loop walks past the last input axis, OpenVINO reads beyond its shape (undefined;
/// in practice no error is raised): the walk stops there.
fn ov_slice_plan_checks(
    spec: &StridedSliceSpec,
    input_rank: usize,
    real: usize,
) -> Vec<Option<i64>> {
    let mut checks = vec![None; input_rank];
    let ellipsis_size = input_rank - real;
    let mut i_in = 0usize;
    for i in 0..spec.begin.len() {
        if get(&spec.new_axis_mask, i) {
            continue;
        }
        if get(&spec.ellipsis_mask, i) && !get(&spec.shrink_axis_mask, i) {
            i_in += ellipsis_size;
            continue;
        }
        if i_in >= input_rank {
            break;
        }
        if get(&spec.shrink_axis_mask, i) {
            checks[i_in] = spec.begin[i];
        }
        i_in += 1;
    }
    checks
}
