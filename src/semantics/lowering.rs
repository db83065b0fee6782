//! Lowering a StridedSlice plan to one Slice and at most one reshaping, as data: OpenVINO's
//! `make_slice_plan` (the per-axis slice, then the reshape that inserts new axes and removes
//! shrunk ones) without a graph. Pass `lower` decodes a node, calls [`lowering`], validates the
//! result on the index tensor and builds the nodes it describes.
//!
//! Parameters come from the plan: on an axis of known size they are the exact resolved
//! `start/stop/step` (so the clamping rules of the two ops cannot differ); on an axis of unknown
//! size they are the plan's bounds, `Edge` becoming `0`/`INT64_MAX` (forward) or
//! `INT64_MAX`/`INT64_MIN` (reverse), a shrink of `i` becoming `i:i+1` (`-1:INT64_MAX` for -1).
//! A TensorFlow reverse range whose begin may lie below `-dim` is marked guarded (the builder
//! makes it `0:0` at run time when it does).

use super::raising::{align, align_partial, Ev};
use super::{resolve_concrete, AxisPlan, Bound, Clamp, ResolvedAxis, SliceError, SlicePlan};

/// A Slice parameter: a constant, or taken at run time from the StridedSlice's own inputs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    Const(i64),
    /// `begin[j]`.
    Begin(usize),
    /// `end[j]`.
    End(usize),
    /// The stop of a shrink of `begin[j]`: `begin[j] + 1`, or `INT64_MAX` when `begin[j]` is -1.
    AfterBegin(usize),
    /// OpenVINO: the element kept by run-time shrink `k` (of [`Lowering::runtime_shrinks`]):
    /// its begin made non-negative and clamped into `[0, dim - 1]`, as the CPU plugin does.
    Kept(usize),
    /// The element after `Kept(k)`.
    AfterKept(usize),
}

impl Val {
    /// The value, when it is a constant.
    pub fn constant(self) -> Option<i64> {
        match self {
            Val::Const(v) => Some(v),
            _ => None,
        }
    }
}

/// One sliced axis: `(axis, start, stop, step, guarded)`. Guarded: a TensorFlow reverse range
/// whose begin may lie below `-dim` (non-constant, or a negative constant on an axis of unknown
/// size), where TensorFlow selects nothing and Slice the first element: start and stop become
/// `0:0` at run time when `start < -dim`.
pub type SliceAxis = (usize, Val, Val, i64, bool);

/// A dim of the Slice's or the lowering's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoweredDim {
    Known(u64),
    /// Not known (a range of unknown length).
    Unknown,
    /// The input's dim on this axis, untouched (only for an axis whose size is not known).
    Input(usize),
}

/// How the output is reshaped after the Slice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shaping {
    None,
    /// Target, and whether its zeros are literal (`allowzero` 1 / `special_zero` false); a
    /// zero that is not literal copies the dim at its position.
    Reshape(Vec<i64>, bool),
    /// Squeeze these axes of the Slice output, then unsqueeze these axes of the result.
    SqueezeUnsqueeze(Vec<i64>, Vec<i64>),
    /// Unsqueeze these axes of the Slice output, then squeeze these axes of the result (new
    /// axes written before the shrunk ones they sit beside, as in `x[tf.newaxis, 0]`).
    UnsqueezeSqueeze(Vec<i64>, Vec<i64>),
}

/// What [`lowering`] reads besides the plan.
#[derive(Clone, Copy, Debug)]
pub struct LoweringInput<'a> {
    pub plan: &'a SlicePlan,
    /// Per plan entry, the element of `begin` and of `end` it reads at run time (all `None`
    /// when the plan is constant).
    pub sources: &'a [(Option<usize>, Option<usize>)],
    /// Per input axis, its size when known.
    pub dims: &'a [Option<u64>],
    /// Per input axis, the smallest size it can have.
    pub lower: &'a [u64],
    /// The clamping rule of the op lowered.
    pub clamp: Clamp,
    /// Whether a shrink of a run-time index is clamped into the axis (OpenVINO: the CPU plugin
    /// and the spec of begin) instead of read as `i:i+1`.
    pub clamp_runtime_shrinks: bool,
    /// Whether a Reshape target may hold literal zeros (OpenVINO, ONNX opset 14 and later).
    pub literal_zeros: bool,
    /// Whether the Slice written is ONNX's, whose reverse end of exactly INT32_MAX or
    /// INT64_MAX ONNX Runtime reads as running through element 0 (microsoft/onnxruntime#2272;
    /// issue 42, pattern G): such an end is never written.
    pub onnx_slice: bool,
}

/// A StridedSlice as one Slice and a reshaping.
#[derive(Clone, Debug, PartialEq)]
pub struct Lowering {
    /// The Slice's axes, empty ranges first (see [`lowering`]); empty when nothing is sliced.
    pub sliced: Vec<SliceAxis>,
    /// The Slice's output dims, per input axis.
    pub slice_out: Vec<LoweredDim>,
    /// Output dims with the input axis each one comes from (`None`: a new axis).
    pub out_dims: Vec<(LoweredDim, Option<usize>)>,
    pub shaping: Shaping,
    /// OpenVINO shrinks whose index is taken at run time: `(j, axis)` for a shrink of
    /// `begin[j]` on input `axis` ([`Val::Kept`] `k` is the `k`-th).
    pub runtime_shrinks: Vec<(usize, usize)>,
    /// Whether some range is guarded.
    pub any_guarded: bool,
}

/// Why a StridedSlice is not lowered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Skip {
    #[error(
        "left as is: non-constant strides (the edge a mask stands for depends on the stride's \
         sign, and so does the clamping)"
    )]
    NonConstantStride,
    #[error("left as is: {0}")]
    Invalid(#[from] SliceError),
    #[error("internal: {0}")]
    Internal(&'static str),
    #[error(
        "left as is: a reverse range ending at INT32_MAX on an axis of unknown size, with no dim \
         limit: ONNX Runtime reads such an end of a Slice as running through element 0 \
         (microsoft/onnxruntime#2272)"
    )]
    ReverseMaxEnd,
}

/// True when `begin:end:step` selects nothing on an axis of any size: both indices of one sign
/// (so adding the dim to negative ones and clamping keep their order) and `end` not past
/// `begin` in the step's direction.
pub fn provably_empty(begin: Bound, end: Bound, step: i64) -> bool {
    match (begin, end) {
        (Bound::Index(b), Bound::Index(e)) if (b < 0) == (e < 0) => {
            if step > 0 {
                e <= b
            } else {
                b <= e
            }
        }
        _ => false,
    }
}

/// A reverse range ending at `INT32_MAX` or `INT64_MAX` on an axis of unknown size, which an
/// ONNX Slice must not say as such: ONNX Runtime reads that end as running through element 0
/// (microsoft/onnxruntime#2272; issue 42, pattern G). The StridedSlice selects nothing there
/// (its end clamps to `dim - 1`, at or after any start) for every dim up to `end + 1`: always for
/// `INT64_MAX`, and for `INT32_MAX` under the dim limit ([`crate::semantics::dim::dim_limit`],
/// 2^31 - 1 by default). Said as `0:0` instead.
pub fn reverse_max_end_is_empty(end: Bound, step: i64) -> bool {
    match end {
        Bound::Index(e) if step < 0 && e == i64::MAX => true,
        Bound::Index(e) if step < 0 && e == i32::MAX as i64 => {
            crate::semantics::dim::dim_limit().is_some_and(|l| l <= e + 1)
        }
        _ => false,
    }
}

/// Resolves one plan entry against a known dim `d` (the entry's axis is ignored).
pub fn resolve_entry(entry: AxisPlan, d: u64, clamp: Clamp) -> Result<ResolvedAxis, SliceError> {
    let entry = match entry {
        AxisPlan::Range {
            begin,
            end,
            step,
            check,
            ..
        } => AxisPlan::Range {
            axis: 0,
            begin,
            end,
            step,
            check,
        },
        AxisPlan::Shrink { index, check, .. } => AxisPlan::Shrink {
            axis: 0,
            index,
            check,
        },
        AxisPlan::NewAxis => AxisPlan::NewAxis,
    };
    let plan = SlicePlan {
        input_rank: 1,
        axes: vec![entry],
    };
    Ok(resolve_concrete(&plan, &[d], clamp)?[0])
}

/// Exact `(start, stop, step)` selecting `len` elements from `start` by `step` on an axis of
/// size `d`, valid under every clamping rule; `None` when it selects the whole axis in order.
/// A reverse range ending below index 0 gets the stop `INT64_MIN` (a stop of `-1` would mean the
/// last element).
pub fn exact_range(start: i64, step: i64, len: u64, d: u64) -> Option<(i64, i64, i64)> {
    if len == d && (step == 1 || d <= 1) {
        return None;
    }
    // Canonical forms: an empty range is `d:d` (tract 0.23 mis-optimizes a `0:0` slice of a
    // size-1 axis next to another sliced axis), a single element `i:i+1` (whatever the step).
    if len == 0 {
        let d = i64::try_from(d).unwrap_or(i64::MAX);
        return Some((d, d, 1));
    }
    if len == 1 {
        return Some((start, start + 1, 1));
    }
    let last = start as i128 + step as i128 * (len as i128 - 1);
    let stop = if step > 0 {
        last + 1
    } else if last >= 1 {
        last - 1
    } else {
        i64::MIN as i128
    };
    Some((start, stop as i64, step))
}

/// Value of a bound as a Slice / StridedSlice parameter: `Edge` becomes the extreme in the
/// step's direction.
pub fn bound_value(b: Bound, is_begin: bool, step: i64) -> Option<i64> {
    match b {
        Bound::Index(v) => Some(v),
        Bound::Dynamic => None,
        Bound::Edge => Some(match (is_begin, step > 0) {
            (true, true) => 0,
            (true, false) => i64::MAX,
            (false, true) => i64::MAX,
            (false, false) => i64::MIN,
        }),
    }
}

/// Why a TensorFlow-clamped reverse range cannot be expressed with OpenVINO/ONNX clamping on an
/// axis whose size is not known: TensorFlow selects nothing when `begin < -dim`, the others the
/// first element.
pub fn clamp_ambiguity(begin: Bound, step: i64, lower: u64) -> Option<String> {
    match begin {
        Bound::Index(v) if step < 0 && v < 0 && (lower as i128) < -(v as i128) => Some(format!(
            "reverse range from {v} on an axis of unknown size: TensorFlow selects nothing when \
             the size is below {}, Slice/OpenVINO one element",
            -(v as i128)
        )),
        _ => None,
    }
}

/// The Slice and the reshaping that do what `input.plan` does.
///
/// Empty ranges come first in [`Lowering::sliced`]: tract 0.23 mis-optimizes a multi-axis
/// Slice where a later axis of size 1 becomes empty (PushSliceUp); the order of axes does not
/// change a Slice's meaning.
pub fn lowering(input: &LoweringInput) -> Result<Lowering, Skip> {
    let rank = input.plan.input_rank;
    let mut low = Lowering {
        sliced: Vec::new(),
        slice_out: (0..rank).map(LoweredDim::Input).collect(),
        out_dims: Vec::new(),
        shaping: Shaping::None,
        runtime_shrinks: Vec::new(),
        any_guarded: false,
    };
    let mut shrunk: Vec<i64> = Vec::new();
    let mut new_axes: Vec<i64> = Vec::new();
    let mut evs: Vec<Ev> = Vec::new();
    for (entry, &sources) in input.plan.axes.iter().zip(input.sources) {
        match *entry {
            AxisPlan::NewAxis => {
                new_axes.push(low.out_dims.len() as i64);
                low.out_dims.push((LoweredDim::Known(1), None));
                evs.push(Ev::New);
            }
            AxisPlan::Range { axis, .. } => {
                range(input, *entry, sources, &mut low)?;
                evs.push(Ev::Keep(axis));
            }
            AxisPlan::Shrink { axis, .. } => {
                shrunk.push(axis as i64);
                shrink(input, *entry, sources.0, &mut low)?;
                low.slice_out[axis] = LoweredDim::Known(1);
                evs.push(Ev::Remove(axis));
            }
        }
    }
    low.sliced
        .sort_by_key(|a| (a.1 != a.2 || a.1.constant().is_none(), a.0));
    low.shaping = shaping(&low.out_dims, shrunk, new_axes, input.literal_zeros);
    // On a static input the Reshape stays (one node; `raise` reads a Reshape that changes no
    // dim as a shrink then a new axis); without a Slice, too (`raise` takes back one lone node).
    let static_input = input.dims.iter().all(Option::is_some);
    let ambiguous = !static_input && !low.sliced.is_empty() && !reads_back(&low, &evs);
    if matches!(low.shaping, Shaping::SqueezeUnsqueeze(..)) || ambiguous {
        low.shaping = two_nodes(&evs);
    }
    Ok(low)
}

/// Whether `low`'s Reshape (if that is its shaping) reads back as `evs`, the shrunk and new
/// axes of the StridedSlice, the way `raise` aligns a Slice's output with a Reshape target
/// ([`align`], [`align_partial`]). A Reshape that changes no dim, or that could remove one
/// size-1 axis for another, does not say which axes were shrunk and which added: Squeeze and
/// Unsqueeze do.
fn reads_back(low: &Lowering, evs: &[Ev]) -> bool {
    let Shaping::Reshape(target, literal) = &low.shaping else {
        return true;
    };
    let dims: Vec<Option<u64>> = (low.slice_out.iter())
        .map(|d| match d {
            LoweredDim::Known(v) => Some(*v),
            _ => None,
        })
        .collect();
    let got = if *literal {
        let (Some(dims), Ok(t)) = (
            dims.iter().copied().collect::<Option<Vec<u64>>>(),
            target
                .iter()
                .map(|&v| u64::try_from(v))
                .collect::<Result<Vec<u64>, _>>(),
        ) else {
            return false;
        };
        align(&dims, &t)
    } else {
        align_partial(&dims, target)
    };
    got.as_deref() == Some(evs)
}

/// Squeeze then Unsqueeze for `evs` (a StridedSlice's kept, shrunk and new axes), or Unsqueeze
/// then Squeeze where a new axis comes right before a shrunk one: the order `raise` reads the
/// two nodes back in.
fn two_nodes(evs: &[Ev]) -> Shaping {
    let new_first = evs
        .windows(2)
        .any(|w| matches!(w, [Ev::New, Ev::Remove(_)]));
    let at = |f: fn(&Ev) -> bool, skip_removed: bool| -> Vec<i64> {
        (evs.iter())
            .filter(|e| !(skip_removed && matches!(e, Ev::Remove(_))))
            .enumerate()
            .filter(|(_, e)| f(e))
            .map(|(k, _)| k as i64)
            .collect()
    };
    let is_new = |e: &Ev| matches!(e, Ev::New);
    let is_removed = |e: &Ev| matches!(e, Ev::Remove(_));
    if new_first {
        Shaping::UnsqueezeSqueeze(at(is_new, false), at(is_removed, false))
    } else {
        let shrunk = (evs.iter())
            .filter_map(|e| match e {
                Ev::Remove(a) => Some(*a as i64),
                _ => None,
            })
            .collect();
        Shaping::SqueezeUnsqueeze(shrunk, at(is_new, true))
    }
}

/// Lowers range `entry` (reading `begin[j]`/`end[j]` at run time for the sources given).
fn range(
    input: &LoweringInput,
    entry: AxisPlan,
    (begin_src, end_src): (Option<usize>, Option<usize>),
    low: &mut Lowering,
) -> Result<(), Skip> {
    let AxisPlan::Range {
        axis,
        begin,
        end,
        step,
        ..
    } = entry
    else {
        return Err(Skip::Internal("a range that is not one"));
    };
    let dynamic = begin_src.is_some() || end_src.is_some();
    let s = step.ok_or(Skip::NonConstantStride)?;
    if let (Some(d), false) = (input.dims[axis], dynamic) {
        let ResolvedAxis::Range {
            start, step, len, ..
        } = resolve_entry(entry, d, input.clamp)?
        else {
            return Err(Skip::Internal("a range resolved to something else"));
        };
        if let Some((a, b, c)) = exact_range(start, step, len, d) {
            low.sliced
                .push((axis, Val::Const(a), Val::Const(b), c, false));
        }
        low.slice_out[axis] = LoweredDim::Known(len);
        low.out_dims.push((LoweredDim::Known(len), Some(axis)));
    } else if begin == Bound::Edge && end == Bound::Edge && s == 1 && !dynamic {
        low.out_dims.push((LoweredDim::Input(axis), Some(axis)));
    } else if provably_empty(begin, end, s)
        || (input.onnx_slice && reverse_max_end_is_empty(end, s))
    {
        // Empty whatever the dim: said as 0:0, which no runtime reads otherwise (ONNX
        // Runtime, for one, takes an end of INT64_MAX on a reverse range as "to the start").
        low.sliced
            .push((axis, Val::Const(0), Val::Const(0), 1, false));
        low.slice_out[axis] = LoweredDim::Known(0);
        low.out_dims.push((LoweredDim::Known(0), Some(axis)));
    } else if input.onnx_slice
        && s < 0
        && matches!(end, Bound::Index(e) if e == i64::MAX || e == i32::MAX as i64)
    {
        return Err(Skip::ReverseMaxEnd);
    } else {
        // TensorFlow selects nothing from a reverse begin below -dim, Slice the first
        // element: such a range is guarded with the dim at run time.
        let guarded = input.clamp == Clamp::Tf
            && s < 0
            && (begin == Bound::Dynamic
                || clamp_ambiguity(begin, s, input.lower.get(axis).copied().unwrap_or(0))
                    .is_some());
        low.any_guarded |= guarded;
        let val = |b: Bound, is_begin: bool, src: Option<usize>| match (b, src) {
            (Bound::Dynamic, Some(j)) if is_begin => Ok(Val::Begin(j)),
            (Bound::Dynamic, Some(j)) => Ok(Val::End(j)),
            _ => bound_value(b, is_begin, s)
                .map(Val::Const)
                .ok_or(Skip::Internal("a non-constant bound without its source")),
        };
        let start = val(begin, true, begin_src)?;
        let stop = val(end, false, end_src)?;
        low.sliced.push((axis, start, stop, s, guarded));
        low.slice_out[axis] = LoweredDim::Unknown;
        low.out_dims.push((LoweredDim::Unknown, Some(axis)));
    }
    Ok(())
}

/// Lowers shrink `entry` (of `begin[j]` at run time when `begin_src` is `Some(j)`).
fn shrink(
    input: &LoweringInput,
    entry: AxisPlan,
    begin_src: Option<usize>,
    low: &mut Lowering,
) -> Result<(), Skip> {
    let AxisPlan::Shrink { axis, index, .. } = entry else {
        return Err(Skip::Internal("a shrink that is not one"));
    };
    let Some(i) = index else {
        let j = begin_src.ok_or(Skip::Internal("a non-constant shrink without its source"))?;
        if input.clamp_runtime_shrinks {
            // OpenVINO clamps an out-of-range shrink index into the axis (the CPU plugin, and
            // the spec of begin); a Slice i:i+1 would select nothing.
            let k = low.runtime_shrinks.len();
            low.runtime_shrinks.push((j, axis));
            low.sliced
                .push((axis, Val::Kept(k), Val::AfterKept(k), 1, false));
        } else {
            low.sliced
                .push((axis, Val::Begin(j), Val::AfterBegin(j), 1, false));
        }
        return Ok(());
    };
    if let Some(d) = input.dims[axis] {
        let ResolvedAxis::Shrink { index, .. } = resolve_entry(entry, d, input.clamp)? else {
            return Err(Skip::Internal("a shrink resolved to something else"));
        };
        if d != 1 {
            let at = index as i64;
            low.sliced
                .push((axis, Val::Const(at), Val::Const(at + 1), 1, false));
        }
    } else {
        let stop = if i == -1 {
            i64::MAX
        } else {
            i.saturating_add(1)
        };
        low.sliced
            .push((axis, Val::Const(i), Val::Const(stop), 1, false));
    }
    Ok(())
}

/// The reshaping after the Slice: a Reshape whose target holds known dims and `0` copies of
/// dims in place, never `-1` (runtimes cannot infer it when the tensor is empty, and a dynamic
/// dim may be 0); literal zeros when every dim is known but a 0 sits where no copy can give it;
/// otherwise Squeeze/Unsqueeze.
fn shaping(
    out_dims: &[(LoweredDim, Option<usize>)],
    shrunk: Vec<i64>,
    new_axes: Vec<i64>,
    literal_zeros: bool,
) -> Shaping {
    if shrunk.is_empty() && new_axes.is_empty() {
        return Shaping::None;
    }
    let mut target = Vec::with_capacity(out_dims.len());
    let mut ok = true;
    for (j, (d, src)) in out_dims.iter().enumerate() {
        match d {
            LoweredDim::Known(v) if *v > 0 => target.push(*v as i64),
            _ if *src == Some(j) => target.push(0),
            _ => ok = false,
        }
    }
    let all_known = out_dims
        .iter()
        .all(|(d, _)| matches!(d, LoweredDim::Known(_)));
    if ok {
        Shaping::Reshape(target, false)
    } else if all_known && literal_zeros {
        let t = out_dims
            .iter()
            .map(|(d, _)| match d {
                LoweredDim::Known(v) => *v as i64,
                _ => 0,
            })
            .collect();
        Shaping::Reshape(t, true)
    } else {
        Shaping::SqueezeUnsqueeze(shrunk, new_axes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantics::{gather, output_shape, ov_slice8, strided_slice, Flavour};
    use crate::semantics::{StridedSliceSpec, DEFAULT_MAX_ELEMENTS};
    use proptest::prelude::*;

    /// The Slice of `low` applied to an input of `dims` (Slice clamping; a guarded range whose
    /// start lies below `-dim` made `0:0`, as the builder does at run time), then its
    /// reshaping: the flat input indices selected and the output shape.
    fn apply(low: &Lowering, dims: &[u64]) -> Result<(Vec<u64>, Vec<u64>), String> {
        let mut starts = Vec::new();
        let mut stops = Vec::new();
        for &(axis, start, stop, _, guarded) in &low.sliced {
            let (mut a, mut b) = (start.constant().unwrap(), stop.constant().unwrap());
            if guarded && (a as i128) < -(dims[axis] as i128) {
                (a, b) = (0, 0);
            }
            starts.push(Some(a));
            stops.push(Some(b));
        }
        let steps: Vec<Option<i64>> = low.sliced.iter().map(|a| Some(a.3)).collect();
        let axes: Vec<i64> = low.sliced.iter().map(|a| a.0 as i64).collect();
        let plan = ov_slice8(&starts, &stops, Some(&steps), Some(&axes), dims.len())
            .map_err(|e| e.to_string())?;
        let idx =
            gather(&plan, dims, Clamp::Ov, DEFAULT_MAX_ELEMENTS).map_err(|e| e.to_string())?;
        let shape = output_shape(&plan, dims, Clamp::Ov).map_err(|e| e.to_string())?;
        let shape = match &low.shaping {
            Shaping::None => shape,
            Shaping::Reshape(t, literal) => t
                .iter()
                .enumerate()
                .map(|(j, &v)| {
                    if v == 0 && !literal {
                        shape[j]
                    } else {
                        v as u64
                    }
                })
                .collect(),
            Shaping::UnsqueezeSqueeze(un, sq) => {
                let mut s = shape.clone();
                let mut sorted = un.clone();
                sorted.sort_unstable();
                for a in sorted {
                    s.insert(a as usize, 1);
                }
                s.iter()
                    .enumerate()
                    .filter(|(i, _)| !sq.contains(&(*i as i64)))
                    .map(|(_, &d)| d)
                    .collect()
            }
            Shaping::SqueezeUnsqueeze(sq, un) => {
                let mut s: Vec<u64> = shape
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !sq.contains(&(*i as i64)))
                    .map(|(_, &d)| d)
                    .collect();
                let mut sorted = un.clone();
                sorted.sort_unstable();
                for a in sorted {
                    s.insert(a as usize, 1);
                }
                s
            }
        };
        Ok((idx, shape))
    }

    fn spec() -> impl Strategy<Value = (StridedSliceSpec, bool, Vec<u64>, Vec<bool>)> {
        (1usize..=4, 1usize..=4).prop_flat_map(|(n, rank)| {
            let idx = || prop_oneof![-6i64..=6, Just(i64::MAX), Just(i64::MIN)];
            let mask = move || proptest::collection::vec(any::<bool>(), n);
            (
                proptest::collection::vec(idx(), n),
                proptest::collection::vec(idx(), n),
                proptest::collection::vec(prop_oneof![-3i64..=-1, 1i64..=3], n),
                (mask(), mask(), mask(), mask()),
                proptest::collection::vec(0u64..=5, rank),
                proptest::collection::vec(any::<bool>(), rank),
                any::<bool>(),
                proptest::collection::vec(prop_oneof![Just(false), Just(false), Just(true)], n),
            )
                .prop_map(|(b, e, s, (bm, em, nm, sm), dims, known, tf, el)| {
                    let spec = StridedSliceSpec {
                        begin: b.into_iter().map(Some).collect(),
                        end: e.into_iter().map(Some).collect(),
                        strides: Some(s.into_iter().map(Some).collect()),
                        begin_mask: bm,
                        end_mask: em,
                        ellipsis_mask: el,
                        new_axis_mask: nm,
                        shrink_axis_mask: sm,
                    };
                    (spec, tf, dims, known)
                })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The lowering's Slice then its reshaping select what the StridedSlice selects, in
        /// the same order and shape, on every input (its dims known to the lowering or not).
        #[test]
        fn lowering_selects_what_gather_selects((spec, tf, dims, known) in spec()) {
            let flavour = if tf { Flavour::Tf } else { Flavour::Ov };
            let clamp = flavour.clamp();
            let Ok(plan) = strided_slice(&spec, flavour, dims.len()) else {
                return Ok(());
            };
            let (Ok(old), Ok(old_shape)) = (
                gather(&plan, &dims, clamp, DEFAULT_MAX_ELEMENTS),
                output_shape(&plan, &dims, clamp),
            ) else {
                return Ok(());
            };
            // Known divergences on an axis whose size the lowering does not know, left as is
            // (this is a refactoring, no behaviour change): with OpenVINO clamping, a reverse
            // begin below -dim is clamped to 0, where the 0:0 of `provably_empty` (both bounds
            // negative) selects nothing; and a constant shrink index outside [-dim, dim) is
            // clamped into the axis, where its Slice i:i+1 selects nothing.
            let ov_reverse_below = |e: &AxisPlan| match *e {
                AxisPlan::Range { axis, begin: Bound::Index(b), step: Some(s), .. } => {
                    clamp == Clamp::Ov && s < 0 && b < 0 && !known[axis]
                        && -(b as i128) > dims[axis] as i128
                }
                AxisPlan::Shrink { axis, index: Some(i), .. } => {
                    clamp == Clamp::Ov && !known[axis]
                        && (i as i128 >= dims[axis] as i128 || -(i as i128) > dims[axis] as i128)
                }
                _ => false,
            };
            if plan.axes.iter().any(ov_reverse_below) {
                return Ok(());
            }
            let seen: Vec<Option<u64>> =
                dims.iter().zip(&known).map(|(&d, &k)| k.then_some(d)).collect();
            let sources = vec![(None, None); plan.axes.len()];
            let input = LoweringInput {
                plan: &plan,
                sources: &sources,
                dims: &seen,
                lower: &vec![0; dims.len()],
                clamp,
                clamp_runtime_shrinks: !tf,
                literal_zeros: true,
                onnx_slice: false,
            };
            let low = match lowering(&input) {
                Ok(low) => low,
                Err(e) => return Err(TestCaseError::fail(format!("not lowered: {e}"))),
            };
            let new = apply(&low, &dims).map_err(TestCaseError::fail)?;
            prop_assert_eq!(new, (old, old_shape), "{:?}", low);
        }
    }
}
