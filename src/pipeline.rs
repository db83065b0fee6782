//! The pass pipeline that the command line and the library both drive.
//!
//! ```no_run
//! use slice_opt::{Model, Pipeline};
//! let mut model = Model::load("model.onnx".as_ref())?;
//! let report = Pipeline::new().run(&mut model)?;
//! model.save("out.onnx".as_ref())?;
//! println!("{} passes ran", report.passes.len());
//! # Ok::<(), slice_opt::Error>(())
//! ```

use std::time::Instant;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::formats::Model;

/// One pass over the IR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PassKind {
    /// Shape inference of every Slice/StridedSlice output.
    Infer,
}

impl PassKind {
    /// Every pass, by name.
    pub const ALL: &'static [PassKind] = &[PassKind::Infer];

    /// The pass's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PassKind::Infer => "infer",
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
    pub node: String,
    pub op: String,
    pub what: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// What one pass did.
#[derive(Debug, Clone, Serialize)]
pub struct PassReport {
    pub pass: PassKind,
    pub changes: Vec<Change>,
    /// Things the pass left alone, and why.
    pub skipped: Vec<Change>,
    pub seconds: f64,
}

/// What a pipeline run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    pub passes: Vec<PassReport>,
}

/// An ordered list of passes; [`Pipeline::new`] is the default `infer,fold,cleanup`.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub passes: Vec<PassKind>,
}

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline::new()
    }
}

impl Pipeline {
    /// The default pipeline.
    pub fn new() -> Pipeline {
        Pipeline {
            passes: vec![PassKind::Infer],
        }
    }

    /// A pipeline with no pass (a pure round-trip).
    pub fn empty() -> Pipeline {
        Pipeline { passes: Vec::new() }
    }

    /// A pipeline from an explicit list.
    pub fn with_passes(passes: Vec<PassKind>) -> Pipeline {
        Pipeline { passes }
    }

    /// Appends shape inference.
    pub fn infer(mut self) -> Pipeline {
        self.passes.push(PassKind::Infer);
        self
    }

    /// Runs every pass in order on `model`.
    pub fn run(&self, model: &mut Model) -> Result<Report> {
        let mut report = Report::default();
        for &pass in &self.passes {
            let start = Instant::now();
            let mut pr = PassReport {
                pass,
                changes: Vec::new(),
                skipped: Vec::new(),
                seconds: 0.0,
            };
            match pass {
                PassKind::Infer => crate::passes::infer::run(model, &mut pr)?,
            }
            pr.seconds = start.elapsed().as_secs_f64();
            report.passes.push(pr);
        }
        Ok(report)
    }
}
