//! Transforming one model file (the default command): passes, optional `--verify`, save,
//! `--report` and the printed summary.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use slice_opt::pipeline::{PassKind, Report};
use slice_opt::{Error, Model};

use super::{json, term};
use crate::Cli;

/// What one model's transformation did, for the summary.
pub struct Outcome {
    pub report: Report,
    pub verification: Option<String>,
}

/// Transforms `input` into `output`; `also` are files the caller writes once the save is done
/// (the `--report` file), checked in the save's output plan.
pub fn transform_one(
    cli: &Cli,
    passes: &[PassKind],
    input: &Path,
    output: &Path,
    also: &[&Path],
) -> Result<Outcome, Error> {
    // `--verify`: an ONNX model runs before and after in tract-onnx; IR rewrites were validated
    // by the semantics core as they were made.
    let check = |a: &Model, b: &Model| match (a, b) {
        (Model::Onnx(a), Model::Onnx(b)) => verify(a, b, cli),
        _ => Ok("rewrites validated by the semantics core".to_string()),
    };
    let opts = slice_opt::run::Options {
        passes,
        fold_limit: cli.fold_limit,
        // Every change is recorded only when something shows the list (`-v`, `--report`); the
        // summary needs the counts alone.
        details: cli.verbose || cli.report.is_some(),
        // The summary (op counts before and after: two walks over every node) is computed only
        // when something shows it: the printed table, directory mode's lines, or `--report`.
        summary: !cli.quiet || cli.report.is_some(),
        check: cli.verify.then_some(&check as slice_opt::run::Check),
        also,
        dims: &cli.shapes.dims,
        input_shapes: &cli.shapes.inputs,
    };
    let report = slice_opt::run::optimize_file(input, output, &opts)?;
    Ok(Outcome {
        verification: report.verification.clone(),
        report,
    })
}

#[cfg(feature = "verify")]
fn verify(
    a: &slice_opt::formats::onnx::OnnxModel,
    b: &slice_opt::formats::onnx::OnnxModel,
    cli: &Cli,
) -> Result<String, Error> {
    use slice_opt::verify::{verify_onnx_with, Verification, VerifyOptions};
    let mut opts = VerifyOptions {
        bind: cli.bind.iter().cloned().collect(),
        ..VerifyOptions::default()
    };
    if let Some(m) = cli.verify_memory {
        opts.memory_budget = m;
    }
    if let Some(t) = cli.verify_time {
        opts.time_budget = t;
    }
    match verify_onnx_with(a, b, &opts) {
        Verification::Passed {
            runs,
            outputs,
            detail,
        } => Ok(format!(
            "verified in tract-onnx: {runs} runs, {outputs} outputs equal{}",
            if detail.is_empty() {
                String::new()
            } else {
                format!(" ({detail})")
            }
        )),
        Verification::NotVerified(why) => Ok(format!("NOT verified: {why}")),
        Verification::Failed(why) => Err(Error::Pass {
            pass: "verify",
            node: String::new(),
            message: format!("the transformed model differs from the original: {why}"),
        }),
    }
}

#[cfg(not(feature = "verify"))]
fn verify(
    _: &slice_opt::formats::onnx::OnnxModel,
    _: &slice_opt::formats::onnx::OnnxModel,
    _: &Cli,
) -> Result<String, Error> {
    Err(Error::Usage(
        "--verify needs slice-opt built with the `verify` feature (tract-onnx)".into(),
    ))
}

/// The lines printed after a transform (each is escaped when printed).
pub fn summary(input: &Path, output: &Path, o: &Outcome, verbose: bool) -> Vec<String> {
    let mut s = vec![format!("{} -> {}", input.display(), output.display())];
    for p in &o.report.passes {
        s.push(format!(
            "  {:8} {} change(s), {} skipped  {:.3}s",
            p.pass.name(),
            p.changed,
            p.skipped_count,
            p.seconds
        ));
        for c in &p.warnings {
            s.push(format!("      warning {} ({}): {}", c.node, c.op, c.what));
        }
        if verbose {
            for c in &p.changes {
                let arrow = match (&c.before, &c.after) {
                    (Some(b), Some(a)) => format!(": {b} -> {a}"),
                    (None, Some(a)) => format!(": {a}"),
                    _ => String::new(),
                };
                s.push(format!("      {} ({}) {}{arrow}", c.node, c.op, c.what));
            }
            for c in &p.skipped {
                s.push(format!("      skipped {} ({}): {}", c.node, c.op, c.what));
            }
        }
    }
    if let Some(v) = &o.verification {
        s.push(format!("  verify   {v}"));
    }
    if let Some(t) = &o.report.summary {
        // The table's cells are op names of its own and numbers: it holds no text of the
        // model's.
        s.extend(t.table().lines().map(str::to_string));
    }
    s
}

pub fn is_model(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("onnx" | "xml"))
}

pub fn run_transform(cli: &Cli) -> Result<ExitCode, Error> {
    let (Some(input), Some(output)) = (&cli.input, &cli.output) else {
        return Err(Error::Usage(
            "an input model and -o OUTPUT are required".into(),
        ));
    };
    let passes = PassKind::parse_list(&cli.passes)?;
    if input.is_dir() {
        // A directory named like a model is a mistake (or a trap), not a batch of models:
        // do not answer it by creating an output directory.
        if is_model(input) || is_model(output) {
            return Err(Error::Refused {
                path: input.clone(),
                message: format!(
                    "is a directory, not a model file (directory mode needs a directory input and a directory -o, not {})",
                    output.display()
                ),
            });
        }
        if let Some(report) = &cli.report {
            return Err(Error::Refused {
                path: report.clone(),
                message: "--report writes the report of one model: directory mode takes none"
                    .into(),
            });
        }
        return super::directory::run_directory(cli, &passes, input, output);
    }
    // The report file is checked and its temporary file created before anything else is
    // written (a report in a missing folder fails here, not after the model was saved); the
    // save checks it again among every file it reads and writes, and it is renamed into place
    // last.
    let report = match &cli.report {
        Some(path) => {
            check_report_path(path, input, output)?;
            Some(slice_opt::formats::output::Staged::new(path)?)
        }
        None => None,
    };
    let also: Vec<&Path> = cli.report.iter().map(PathBuf::as_path).collect();
    let outcome = transform_one(cli, &passes, input, output, &also)?;
    if let Some(tmp) = report {
        use std::io::Write;
        let text = json(&outcome.report)?;
        let mut w = std::io::BufWriter::new(tmp.as_file());
        w.write_all(text.as_bytes())
            .and_then(|()| w.flush())
            .map_err(|source| Error::Io {
                path: tmp.target().to_path_buf(),
                source,
            })?;
        drop(w);
        tmp.persist()?;
    }
    if !cli.quiet {
        term::err(summary(input, output, &outcome, cli.verbose));
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--report` file must not be a device, a FIFO or a directory, nor the input model (or
/// its IR `.bin`) or the output model. The save checks it again against every file it reads
/// and writes (external data, the output's `.bin` or data files).
fn check_report_path(report: &Path, input: &Path, output: &Path) -> Result<(), Error> {
    use slice_opt::formats::output::OutputPlan;
    let mut plan = OutputPlan::new();
    plan.input(input);
    if let Ok(slice_opt::formats::Format::OpenVino) = slice_opt::formats::detect_format(input) {
        plan.input(&input.with_extension("bin"));
    }
    plan.model(output, Some(input)).other(report);
    plan.check()
}
