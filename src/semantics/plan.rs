//! [`SlicePlan`]: the canonical, flavour-free description of a slice that every op decodes into.

use std::fmt;

/// One end of a range on an input axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bound {
    /// An index as given: negative counts from the end; out-of-range values are clamped when
    /// resolved.
    Index(i64),
    /// From the edge: the first element (begin) or past the last one (end) in the direction of
    /// the step. What a begin/end mask or an omitted Slice input means.
    Edge,
    /// A value that is not constant (only known at run time).
    Dynamic,
}

/// One axis of the output, in output order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AxisPlan {
    /// Input axis `axis` sliced `begin:end:step`. `step = None`: not constant (its sign is
    /// unknown). A known step is never 0.
    Range {
        /// Input axis.
        axis: usize,
        /// Where the range starts.
        begin: Bound,
        /// Where the range stops (exclusive).
        end: Bound,
        /// Step, non-zero; `None` when not constant.
        step: Option<i64>,
        /// An index that must lie in `[-dim, dim)` for the slice to be valid, without any
        /// effect on the result (see the same field of `Shrink`). `None`: no condition.
        check: Option<i64>,
    },
    /// A new axis of size 1 (consumes no input axis).
    NewAxis,
    /// Input axis `axis` reduced to the element `index` (negative counts from the end) and
    /// removed from the output. `index = None`: not constant.
    Shrink {
        /// Input axis.
        axis: usize,
        /// Index kept; must lie in `[-dim, dim)` when resolved.
        index: Option<i64>,
        /// A second index that must lie in `[-dim, dim)`, without effect on the result.
        /// OpenVINO StridedSlice-1 only: its compiler also decodes the masks with another
        /// precedence (`make_slice_plan`) and rejects a shrink index that is out of range *there*,
        /// which may be another entry's begin on this axis. `None`: no condition.
        check: Option<i64>,
    },
}

/// A complete slice plan: every input axis appears exactly once, in increasing order, as a
/// `Range` or a `Shrink`; `NewAxis` entries are interleaved where the output has them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SlicePlan {
    /// Rank of the input the plan was decoded for.
    pub input_rank: usize,
    /// Output axes (plus shrunk input axes) in output order.
    pub axes: Vec<AxisPlan>,
}

/// Where each plan entry's begin and end were read from, decided once by the decoder: the
/// position in the op's begin list (`begin`, `starts`, `start`) and end list (`end`, `ends`,
/// `stop`). A shrink's index is its begin. `None`: the bound does not come from the list (a mask,
/// an edge such as an axis a Slice does not list or an ellipsis, a new axis, a shrink's end).
///
/// This is what lets a pass put a value known only at run time (or as an expression) where the
/// plan says [`Bound::Dynamic`], without knowing the op's decoding rules.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Provenance {
    /// Per plan entry: the element of the begin list that gives its begin (or shrink index).
    pub begin: Vec<Option<usize>>,
    /// Per plan entry: the element of the end list that gives its end.
    pub end: Vec<Option<usize>>,
    /// The length of the begin and of the end list (the decoders refuse unequal lengths).
    pub len: usize,
}

impl SlicePlan {
    /// Rank of the output.
    pub fn output_rank(&self) -> usize {
        self.axes
            .iter()
            .filter(|a| !matches!(a, AxisPlan::Shrink { .. }))
            .count()
    }

    /// True when every begin, end, step and shrink index is constant.
    pub fn is_constant(&self) -> bool {
        self.axes.iter().all(|a| match a {
            AxisPlan::Range {
                begin, end, step, ..
            } => *begin != Bound::Dynamic && *end != Bound::Dynamic && step.is_some(),
            AxisPlan::NewAxis => true,
            AxisPlan::Shrink { index, .. } => index.is_some(),
        })
    }

    /// The plan in Python slice notation, one item per plan entry: `x[1:, :, None, ::-1, 0]`.
    /// Dynamic values print as `?`.
    pub fn to_python(&self) -> String {
        self.to_string()
    }
}

fn fmt_bound(b: Bound, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match b {
        Bound::Index(i) => write!(f, "{i}"),
        Bound::Edge => Ok(()),
        Bound::Dynamic => write!(f, "?"),
    }
}

impl fmt::Display for SlicePlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "x[")?;
        for (i, a) in self.axes.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            match a {
                AxisPlan::NewAxis => write!(f, "None")?,
                AxisPlan::Shrink { index: Some(i), .. } => write!(f, "{i}")?,
                AxisPlan::Shrink { index: None, .. } => write!(f, "?")?,
                AxisPlan::Range {
                    begin, end, step, ..
                } => {
                    fmt_bound(*begin, f)?;
                    write!(f, ":")?;
                    fmt_bound(*end, f)?;
                    match step {
                        Some(1) => {}
                        Some(s) => write!(f, ":{s}")?,
                        None => write!(f, ":?")?,
                    }
                }
            }
        }
        write!(f, "]")
    }
}
