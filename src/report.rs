//! The report types every pass fills in ([`PassReport`], [`Change`]) and the pipeline returns
//! ([`Report`]). They live apart from the pipeline so the passes do not depend on the pipeline
//! that calls them; `slice_opt::pipeline` re-exports them.

use serde::Serialize;

use crate::error::{Error, Result};

/// One pass over the IR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PassKind {
    /// Shape inference of every Slice/StridedSlice output.
    Infer,
    /// Constant folding of slices and the shape arithmetic feeding them.
    Fold,
    /// Removal of nodes and constants nothing uses.
    Cleanup,
    /// StridedSlice to Slice (+ Reshape).
    Lower,
    /// Slice (+ Reshape/Squeeze/Unsqueeze of size-1 axes) to StridedSlice.
    Raise,
    /// Fewer slices: identities removed, slices of slices merged, disjoint slices to a split,
    /// slices of a Concat forwarded, `Shape` + `Slice` to `Shape(start, end)`, one element of a
    /// shape value to a `Gather`, slices on disjoint axes with computed parameters to one.
    Simplify,
}

impl PassKind {
    /// Every pass, by name.
    pub const ALL: &'static [PassKind] = &[
        PassKind::Infer,
        PassKind::Fold,
        PassKind::Cleanup,
        PassKind::Lower,
        PassKind::Raise,
        PassKind::Simplify,
    ];

    /// The pass's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PassKind::Infer => "infer",
            PassKind::Fold => "fold",
            PassKind::Cleanup => "cleanup",
            PassKind::Lower => "lower",
            PassKind::Raise => "raise",
            PassKind::Simplify => "simplify",
        }
    }

    /// Parses a comma-separated pass list (`none` = no pass).
    pub fn parse_list(list: &str) -> Result<Vec<PassKind>> {
        let list = list.trim();
        if list.is_empty() || list == "none" {
            return Ok(Vec::new());
        }
        list.split(',')
            .map(|p| {
                let p = p.trim();
                PassKind::ALL
                    .iter()
                    .copied()
                    .find(|k| k.name() == p)
                    .ok_or_else(|| {
                        let known: Vec<&str> = PassKind::ALL.iter().map(|k| k.name()).collect();
                        Error::Usage(format!(
                            "unknown pass '{p}' (known: {}, or none)",
                            known.join(", ")
                        ))
                    })
            })
            .collect()
    }
}

/// One change a pass made.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The node's name.
    pub node: String,
    /// The node's op type.
    pub op: String,
    /// What was done (or why not, or the warning).
    pub what: String,
    /// Before the change (e.g. a shape), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// After the change, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

impl Change {
    /// A change (or a reason for skipping) with no before/after shapes.
    pub fn note(node: impl Into<String>, op: impl Into<String>, what: impl Into<String>) -> Change {
        Change {
            node: node.into(),
            op: op.into(),
            what: what.into(),
            before: None,
            after: None,
        }
    }
}

/// What one pass did.
#[derive(Debug, Clone, Serialize)]
pub struct PassReport {
    /// Which pass.
    pub pass: PassKind,
    /// What it changed.
    pub changes: Vec<Change>,
    /// Things the pass left alone, and why.
    pub skipped: Vec<Change>,
    /// Nodes the pass handled but whose meaning differs between runtimes (e.g. OpenVINO's CPU
    /// plugin vs its constant folding), with the behaviour chosen.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Change>,
    /// How many changes the pass made: `changes.len()`, unless the pipeline ran without
    /// details ([`crate::pipeline::Pipeline::details`]), when `changes` stays empty.
    pub changed: usize,
    /// How many nodes the pass left alone: `skipped.len()`, or their count without details.
    pub skipped_count: usize,
    /// Wall time of the pass.
    pub seconds: f64,
    /// Whether `changes` and `skipped` are filled (else only counted).
    #[serde(skip)]
    pub details: bool,
}

impl PassReport {
    /// An empty report of `pass`; `details` says whether changes are recorded or only counted.
    pub fn new(pass: PassKind, details: bool) -> PassReport {
        PassReport {
            pass,
            changes: Vec::new(),
            skipped: Vec::new(),
            warnings: Vec::new(),
            changed: 0,
            skipped_count: 0,
            seconds: 0.0,
            details,
        }
    }

    /// Counts a change, and records it (built by `change`, only then) when details are on.
    pub fn change(&mut self, change: impl FnOnce() -> Change) {
        self.changed += 1;
        if self.details {
            self.changes.push(change());
        }
    }

    /// Counts a node left alone, and records why (built by `why`, only then) when details are
    /// on.
    pub fn skip(&mut self, why: impl FnOnce() -> Change) {
        self.skipped_count += 1;
        if self.details {
            self.skipped.push(why());
        }
    }
}

/// What a pipeline run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// One report per pass run, in order.
    pub passes: Vec<PassReport>,
    /// Seconds spent loading the model, when the caller timed it (the command line does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_seconds: Option<f64>,
    /// Seconds spent saving the model, when the caller timed it (the command line does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub save_seconds: Option<f64>,
    /// Op counts and sizes before/after and the run's time, when the caller measured them (the
    /// command line and the Python package do): see [`crate::summary`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<crate::summary::Summary>,
    /// The `--verify` line, when the command line verified the result: "verified in tract-onnx:
    /// ...", "NOT verified: `<why>`", or "rewrites validated by the semantics core" (IR).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification: Option<String>,
}
