//! "Optimize one model file", the use case the command line and the Python package share: load,
//! run the passes, optionally check the result against the model as loaded, save, and report
//! what was done with the op counts and sizes before and after.
//!
//! ```
//! use slice_opt::pipeline::PassKind;
//! use slice_opt::run::{optimize_file, Options};
//! let out = std::env::temp_dir().join("slice_opt_doctest_run.onnx");
//! let report = optimize_file(
//!     "models/const_weight_slice.onnx".as_ref(),
//!     &out,
//!     &Options::new(&[PassKind::Infer, PassKind::Fold, PassKind::Cleanup]),
//! )?;
//! // The one Slice, of a constant weight, is folded into a constant.
//! assert_eq!(report.passes[1].changed, 1);
//! let slices = report.summary.expect("counted").ops.into_iter().find(|r| r.op == "Slice");
//! assert_eq!(slices.map(|r| (r.before, r.after)), Some((1, 0)));
//! # Ok::<(), slice_opt::Error>(())
//! ```

use std::path::Path;
use std::time::Instant;

use crate::error::Result;
use crate::formats::input_shapes::{DimBound, InputShape, ShapesIn};
use crate::formats::{Format, Model};
use crate::pipeline::{PassKind, Pipeline, Report};
use crate::summary::{op_rows, Summary};

/// A check of the transformed model against the model as loaded (`--verify`), run between the
/// passes and the save; what it returns goes to [`Report::verification`], its error stops the
/// run before anything is written.
pub type Check<'a> = &'a dyn Fn(&Model, &Model) -> Result<String>;

/// How [`optimize_file`] runs.
#[derive(Clone, Copy)]
pub struct Options<'a> {
    /// The passes, in order.
    pub passes: &'a [PassKind],
    /// Largest constant `fold` may produce, in bytes.
    pub fold_limit: u64,
    /// Whether the report lists every change and skipped node, or only counts them
    /// ([`Pipeline::details`](crate::pipeline::Pipeline#structfield.details)).
    pub details: bool,
    /// Whether to count ops before and after and fill [`Report::summary`] (two walks over
    /// every node).
    pub summary: bool,
    /// A check to run on the result (the loaded model is then kept until it ran).
    pub check: Option<Check<'a>>,
    /// Files the caller writes once the save is done (the `--report` file): checked in the
    /// save's output plan, so one that is a file this run reads or writes is refused before
    /// anything is written.
    pub also: &'a [&'a Path],
    /// Sizes and bounds of the inputs' symbolic dims (`--dim`; [`Pipeline::dim`]): a fixed
    /// symbol is written as its size everywhere the model declares it, a bounded one is
    /// assumed in range. A name no input has is refused, before anything is written.
    pub dims: &'a [(String, DimBound)],
    /// Whole shapes of inputs (`--input-shape`; [`Pipeline::input_shape`]). An unknown input,
    /// a rank mismatch or a size against a static dim is refused, before anything is written.
    pub input_shapes: &'a [InputShape],
}

impl<'a> Options<'a> {
    /// `passes` with the default fold limit, every change recorded, the summary counted and
    /// no check.
    pub fn new(passes: &'a [PassKind]) -> Options<'a> {
        Options {
            passes,
            fold_limit: crate::passes::fold::DEFAULT_FOLD_LIMIT,
            details: true,
            summary: true,
            check: None,
            also: &[],
            dims: &[],
            input_shapes: &[],
        }
    }
}

/// The size of a model on disk: the file, plus for IR (`.xml`) its `.bin`; 0 for what cannot
/// be read.
pub fn file_size(p: &Path) -> u64 {
    let mut n = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    if p.extension().is_some_and(|e| e == "xml") {
        n += std::fs::metadata(p.with_extension("bin"))
            .map(|m| m.len())
            .unwrap_or(0);
    }
    n
}

/// Loads the model at `input`, runs `opts.passes` (then `opts.check`), saves the result to
/// `output` and returns the report with load and save times and, with `opts.summary`, the op
/// counts and sizes before and after.
pub fn optimize_file(input: &Path, output: &Path, opts: &Options) -> Result<Report> {
    let start = Instant::now();
    // A big IR `.bin` starts copying to the output now, while the model loads and the passes
    // run; the save takes the copy when the `.bin` keeps its layout (most of such a save is
    // that copy), and otherwise stops it and writes the `.bin` itself.
    let bin_copy = match crate::formats::detect_format(input) {
        Ok(Format::OpenVino) => crate::formats::openvino::BinCopy::start(input, output),
        _ => None,
    };
    let mut model = Model::load(input)?;
    let load_seconds = start.elapsed().as_secs_f64();
    let ops_before = if opts.summary {
        op_rows(&model)
    } else {
        Vec::new()
    };
    let shapes = ShapesIn {
        dims: opts.dims.to_vec(),
        inputs: opts.input_shapes.to_vec(),
    };
    // The check compares with the model as loaded, its inputs given the same shapes (what
    // does not fit is refused by the run below).
    let original = opts.check.map(|_| {
        let mut m = model.clone();
        if !shapes.is_empty() {
            let _ = crate::formats::input_shapes::apply(&mut m, &shapes);
        }
        m
    });
    let mut pipeline = Pipeline::with_passes(opts.passes.to_vec())
        .fold_limit(opts.fold_limit)
        .details(opts.details);
    pipeline.shapes = shapes;
    let mut report = pipeline.run(&mut model)?;
    let verification = match (opts.check, &original) {
        (Some(check), Some(original)) => Some(check(original, &model)?),
        _ => None,
    };
    let save_start = Instant::now();
    model.save_also(output, bin_copy, opts.also)?;
    report.load_seconds = Some(load_seconds);
    report.save_seconds = Some(save_start.elapsed().as_secs_f64());
    report.summary = opts.summary.then(|| {
        Summary::new(
            &ops_before,
            &model,
            file_size(input),
            file_size(output),
            start.elapsed().as_secs_f64(),
        )
    });
    report.verification = verification;
    // Freeing a model of a million small allocations takes a noticeable share of a run: do it
    // off the critical path (the process may exit before it finishes, which is fine).
    std::thread::spawn(move || drop((model, original)));
    Ok(report)
}
