//! Slices whose result depends on the runtime: the cases where the runtimes that run the same
//! op disagree, found in the conformance data (`tools/runtime_splits.py`, which checks that the
//! rules below select exactly the cases whose raw runtime answers differ).
//!
//! ONNX `Slice` (run by ONNX Runtime, the ONNX reference evaluator and OpenVINO), on a sliced
//! axis of size `d > 0` with a negative step:
//! - [`SplitClass::OrtReverseMaxEnd`]: the end is exactly `INT32_MAX` or `INT64_MAX`. The spec,
//!   the ONNX reference evaluator and OpenVINO clamp it to `d - 1` and select nothing; ONNX
//!   Runtime reads it as "past the start" and selects through element 0
//!   (microsoft/onnxruntime#2272). 36 of the 2800 conformance cases.
//! - [`SplitClass::RefReverseStartBelowDim`]: the start and the end are both below `-d`. The
//!   spec, ONNX Runtime and OpenVINO clamp the start to 0 and take element 0; the ONNX reference
//!   evaluator slices as numpy does and selects nothing (a reverse start below `-d`). 134 cases
//!   (3 of them in both classes).
//!
//! OpenVINO `Slice-8`: its CPU plugin and its reference evaluation agree on every case. OpenVINO
//! `StridedSlice-1`'s split (shrink + begin_mask, see `decode::ov_shrink_begin_mask_entries`) is
//! decided elsewhere: its shapes agree, and on a constant input OpenVINO itself folds the node as
//! its reference evaluation computes, which is what `fold` gives. TensorFlow has one runtime.
//!
//! Where a node falls in a class, no pass may pick one of the readings: [`Split`] gives each
//! reading (as a plan and a clamping rule the rest of the semantics resolves) and a dim that
//! holds for all of them ([`Split::dims`]).

use super::dim::Dim;
use super::plan::{AxisPlan, Bound, SlicePlan};
use super::resolve::{output_shape, resolve_dims, Clamp};
use super::SliceError;

/// `INT32_MAX`, one of the two ends ONNX Runtime misreads on a reverse range.
pub const INT32_MAX: i64 = i32::MAX as i64;

/// A kind of disagreement between the runtimes of ONNX Slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SplitClass {
    /// A reverse range whose end is exactly `INT32_MAX` or `INT64_MAX`: ONNX Runtime selects
    /// through element 0, the others nothing.
    OrtReverseMaxEnd,
    /// A reverse range whose start and end are below `-dim`: the ONNX reference evaluator
    /// selects nothing, the others element 0.
    RefReverseStartBelowDim,
}

impl SplitClass {
    /// The runtime that reads the node otherwise than the spec.
    pub fn runtime(self) -> &'static str {
        match self {
            SplitClass::OrtReverseMaxEnd => "ONNX Runtime",
            SplitClass::RefReverseStartBelowDim => "the ONNX reference evaluator",
        }
    }
}

/// One entry of a node in a split class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SplitEntry {
    /// Plan entry (output order).
    pub entry: usize,
    /// Input axis.
    pub axis: usize,
    /// Which disagreement.
    pub class: SplitClass,
}

/// One way the runtimes read the node: the plan and clamping rule that give their result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reading {
    /// Who reads it so (`"the ONNX spec, ONNX Runtime and OpenVINO"`).
    pub runtimes: String,
    /// The plan that gives their result.
    pub plan: SlicePlan,
    /// With this clamping rule.
    pub clamp: Clamp,
}

/// An ONNX Slice whose result depends on the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    /// The entries in a split class.
    pub entries: Vec<SplitEntry>,
    /// The readings: the spec's first, then one per runtime that reads it otherwise.
    pub readings: Vec<Reading>,
}

/// True when `v + d < 0` is possible with `d > 0` (for the bounds known of `v` and `d`).
fn below_minus_dim(v: &Dim, d: &Dim) -> bool {
    if v.is_unknown()
        || d.is_unknown()
        || !v
            .symbols()
            .iter()
            .any(|s| d.symbols().iter().any(|t| t.name() == s.name()))
    {
        // Independent: the smallest sum is `lo(v) + max(lo(d), 1)`.
        let dlo = d.bounds().0.unwrap_or(0).max(1) as i128;
        return match v.bounds().0 {
            Some(l) => (l as i128) + dlo < 0,
            None => true,
        };
    }
    // Related (`-(N + 1)` on `N`): the bounds of the sum, with `d > 0` assumed.
    v.add(d).bounds().0.is_none_or(|l| l < 0)
}

/// Whether an ONNX Slice plan falls in a split class on input `dims` (a value, an expression or
/// an unknown with bounds per axis): `None` when every runtime gives the same result for every
/// value the dims may take. Begins and ends that are not constant (`Bound::Dynamic`) are not
/// classified: their dims are already only bounds, which hold for every reading.
///
/// For known dims the test is exact (the conformance data's 167 disagreeing cases and no
/// other); for symbolic or unknown dims it is true when some value within their bounds splits.
pub fn onnx_slice(plan: &SlicePlan, dims: &[Dim]) -> Option<Split> {
    let mut entries = Vec::new();
    for (k, a) in plan.axes.iter().enumerate() {
        let AxisPlan::Range {
            axis,
            begin,
            end,
            step: Some(s),
            ..
        } = *a
        else {
            continue;
        };
        let Some(d) = dims.get(axis) else { continue };
        if s > 0 || d.bounds().1.is_some_and(|h| h <= 0) {
            continue;
        }
        if let Bound::Index(e) = end {
            if e == INT32_MAX || e == i64::MAX {
                entries.push(SplitEntry {
                    entry: k,
                    axis,
                    class: SplitClass::OrtReverseMaxEnd,
                });
            }
        }
        let below = |b: Bound| match b {
            Bound::Index(v) => below_minus_dim(&Dim::known(v), d),
            // A reverse range's end edge is below the first element; its begin edge is the last.
            Bound::Edge => false,
            Bound::Dynamic => false,
        };
        let end_below = end == Bound::Edge || below(end);
        if below(begin) && end_below {
            entries.push(SplitEntry {
                entry: k,
                axis,
                class: SplitClass::RefReverseStartBelowDim,
            });
        }
    }
    if entries.is_empty() {
        return None;
    }
    let has = |c: SplitClass| entries.iter().any(|e| e.class == c);
    let (ort, reference) = (
        has(SplitClass::OrtReverseMaxEnd),
        has(SplitClass::RefReverseStartBelowDim),
    );
    let mut spec_readers = vec!["the ONNX spec"];
    if !ort {
        spec_readers.push("ONNX Runtime");
    }
    if !reference {
        spec_readers.push("the ONNX reference evaluator");
    }
    spec_readers.push("OpenVINO");
    let mut readings = vec![Reading {
        runtimes: join(&spec_readers),
        plan: plan.clone(),
        clamp: Clamp::Ov,
    }];
    if ort {
        // ONNX Runtime: such an end is the edge (through element 0).
        let mut p = plan.clone();
        for e in entries
            .iter()
            .filter(|e| e.class == SplitClass::OrtReverseMaxEnd)
        {
            if let Some(AxisPlan::Range { end, .. }) = p.axes.get_mut(e.entry) {
                *end = Bound::Edge;
            }
        }
        readings.push(Reading {
            runtimes: "ONNX Runtime".into(),
            plan: p,
            clamp: Clamp::Ov,
        });
    }
    if reference {
        // numpy slicing: TensorFlow's clamping (a reverse begin below -dim selects nothing).
        readings.push(Reading {
            runtimes: "the ONNX reference evaluator".into(),
            plan: plan.clone(),
            clamp: Clamp::Tf,
        });
    }
    Some(Split { entries, readings })
}

fn join(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `[lo, hi]` of a dim (never negative).
fn span(d: &Dim) -> (i64, Option<i64>) {
    let (lo, hi) = d.bounds();
    (lo.unwrap_or(0).max(0), hi)
}

/// Per output axis, a dim that holds for every one of `readings` (the dims each gives): the
/// dim itself where all are provably equal, else an unknown bounded by all of them.
pub fn merge(readings: &[Vec<Dim>]) -> Vec<Dim> {
    let Some(first) = readings.first() else {
        return Vec::new();
    };
    (0..first.len())
        .map(|i| {
            let d = &first[i];
            let others = readings[1..].iter().filter_map(|r| r.get(i));
            if others.clone().all(|o| o == d || o.provably_equal(d)) {
                return d.clone();
            }
            let (mut lo, mut hi) = span(d);
            for o in others {
                let (l, h) = span(o);
                lo = lo.min(l);
                hi = hi.zip(h).map(|(a, b)| a.max(b));
            }
            Dim::unknown_bounded(lo, hi)
        })
        .collect()
}

impl Split {
    /// The output dims each reading gives on `dims`.
    pub fn reading_dims(&self, dims: &[Dim]) -> Result<Vec<Vec<Dim>>, SliceError> {
        self.readings
            .iter()
            .map(|r| resolve_dims(&r.plan, dims, r.clamp))
            .collect()
    }

    /// Output dims that hold for every reading on `dims`: `spec` (the dims inferred for the
    /// spec's reading, possibly with more than [`resolve_dims`] knows) merged with the others'.
    pub fn dims(&self, dims: &[Dim], spec: &[Dim]) -> Result<Vec<Dim>, SliceError> {
        let mut all = self.reading_dims(dims)?;
        if let Some(first) = all.first_mut() {
            *first = spec.to_vec();
        }
        Ok(merge(&all))
    }

    /// The output shape each reading gives on concrete dims.
    pub fn shapes(&self, dims: &[u64]) -> Vec<Result<Vec<u64>, SliceError>> {
        self.readings
            .iter()
            .map(|r| output_shape(&r.plan, dims, r.clamp))
            .collect()
    }

    /// One sentence naming the disagreement and every reading (with its output shape on `dims`
    /// when they are given), for reports and `check`.
    pub fn describe(&self, plan: &SlicePlan, dims: Option<&[u64]>) -> String {
        let mut what: Vec<String> = Vec::new();
        for e in &self.entries {
            let (range, bits) = match plan.axes.get(e.entry) {
                Some(AxisPlan::Range {
                    begin, end, step, ..
                }) => {
                    let b = |x: &Bound| match x {
                        Bound::Index(v) => v.to_string(),
                        _ => String::new(),
                    };
                    let bits = if *end == Bound::Index(i64::MAX) {
                        64
                    } else {
                        32
                    };
                    (
                        format!("{}:{}:{}", b(begin), b(end), step.unwrap_or(0)),
                        bits,
                    )
                }
                _ => (String::new(), 32),
            };
            what.push(match e.class {
                SplitClass::OrtReverseMaxEnd => format!(
                    "axis {} is sliced {range}, a reverse range ending at INT{}_MAX (ONNX Runtime \
                     reads it as running through element 0, microsoft/onnxruntime#2272)",
                    e.axis, bits
                ),
                SplitClass::RefReverseStartBelowDim => format!(
                    "axis {} is sliced {range}, a reverse range starting below -dim (the ONNX \
                     reference evaluator selects nothing there, as numpy does)",
                    e.axis
                ),
            });
        }
        let shapes = dims.map(|d| self.shapes(d));
        let readings: Vec<String> = self
            .readings
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let one = !r.runtimes.contains(" and ");
                let verb = |plural: &str, single: &str| {
                    if one {
                        single.to_string()
                    } else {
                        plural.to_string()
                    }
                };
                match shapes.as_ref().and_then(|s| s.get(i)) {
                    Some(Ok(s)) => format!("{} {} shape {s:?}", r.runtimes, verb("give", "gives")),
                    Some(Err(e)) => format!("{} {} ({e})", r.runtimes, verb("fail", "fails")),
                    None if i == 0 => {
                        format!(
                            "{} {} the spec's clamping",
                            r.runtimes,
                            verb("follow", "follows")
                        )
                    }
                    None if r.clamp == Clamp::Tf => format!("{} slices as numpy does", r.runtimes),
                    None => format!(
                        "{} reads such an end as running through element 0",
                        r.runtimes
                    ),
                }
            })
            .collect();
        format!(
            "runtimes disagree on this Slice: {}; {}. Left as is (not folded, not rewritten); \
             its shape holds for every reading",
            what.join("; "),
            readings.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantics::onnx_slice as decode;

    fn plan(starts: &[i64], ends: &[i64], steps: &[i64], rank: usize) -> SlicePlan {
        let c = |v: &[i64]| v.iter().map(|&x| Some(x)).collect::<Vec<_>>();
        decode(&c(starts), &c(ends), None, Some(&c(steps)), rank, 13).unwrap()
    }

    #[test]
    fn ort_reverse_max_end_on_known_and_symbolic_dims() {
        // conformance sl-1-00428: [4, 10], starts [2], ends [INT64_MAX], steps [-1]:
        // ONNX Runtime [3, 10], the others [0, 10].
        let p = plan(&[2], &[i64::MAX], &[-1], 2);
        let s = onnx_slice(&p, &[Dim::known(4), Dim::known(10)]).expect("a split");
        assert_eq!(s.entries[0].class, SplitClass::OrtReverseMaxEnd);
        let shapes: Vec<_> = s.shapes(&[4, 10]).into_iter().map(Result::unwrap).collect();
        assert_eq!(shapes, [vec![0, 10], vec![3, 10]]);
        // An empty axis gives nothing in every reading.
        assert_eq!(onnx_slice(&p, &[Dim::known(0), Dim::known(10)]), None);
        // A symbol: 0 (spec) or min(3, n) (ONNX Runtime): bounded, never a reading's value.
        let n = Dim::symbol_bounded("n", 0, Some(100));
        let s = onnx_slice(&p, &[n.clone(), Dim::known(10)]).expect("a split");
        let spec = resolve_dims(&p, &[n.clone(), Dim::known(10)], Clamp::Ov).unwrap();
        let both = s.dims(&[n, Dim::known(10)], &spec).unwrap();
        assert_eq!(both[0].to_string(), "0..3");
        assert_eq!(both[1], Dim::known(10));
        // INT32_MAX too; INT64_MAX - 1 is not misread.
        assert!(onnx_slice(&plan(&[2], &[INT32_MAX], &[-1], 1), &[Dim::known(4)]).is_some());
        assert!(onnx_slice(&plan(&[2], &[i64::MAX - 1], &[-1], 1), &[Dim::known(4)]).is_none());
        assert!(onnx_slice(&plan(&[2], &[i64::MAX], &[1], 1), &[Dim::known(4)]).is_none());
    }

    #[test]
    fn reference_reverse_start_below_dim() {
        // conformance sl-1-00075: [3, ...], starts [-4], ends [-4], steps [-1]: 1 or 0.
        let p = plan(&[-4], &[-4], &[-1], 1);
        let s = onnx_slice(&p, &[Dim::known(3)]).expect("a split");
        assert_eq!(s.entries[0].class, SplitClass::RefReverseStartBelowDim);
        let shapes: Vec<_> = s.shapes(&[3]).into_iter().map(Result::unwrap).collect();
        assert_eq!(shapes, [vec![1], vec![0]]);
        assert_eq!(onnx_slice(&p, &[Dim::known(4)]), None);
        // -1 never lies below -d for d > 0: the usual reverse slice is not flagged.
        let rev = plan(&[-1], &[i64::MIN], &[-1], 1);
        for d in [Dim::symbol("n"), Dim::unknown(), Dim::known(5)] {
            assert_eq!(onnx_slice(&rev, std::slice::from_ref(&d)), None, "{d}");
        }
        // -(n + 1) on n: always below -n.
        let n = Dim::symbol("n");
        assert!(below_minus_dim(&n.add_const(1).neg(), &n));
        assert!(!below_minus_dim(&n.neg(), &n));
    }
}
