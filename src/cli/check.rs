//! `slice-opt check`: declared against inferred shapes of every slice, as a table, JSON, GitHub
//! annotations, SARIF or JUnit XML; over one model or every model under a directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use slice_opt::check::formats::{self, Checked};
use slice_opt::check::{self, CheckReport, FailOn, Verdict};
use slice_opt::{Error, Model};

use super::{json, print_out, table, term};
use crate::CheckFormat;

/// Checks one model (a report, or the error that kept it from being read).
fn check_one(path: &Path) -> Result<CheckReport, Error> {
    let model = Model::load(path)?;
    let report = check::check(&model);
    // Nothing is printed from a file that shrank while it was read.
    model.check_mapped()?;
    Ok(report)
}

/// Every model under `dir` (recursively, in name order): `.onnx` files, and `.xml` files that
/// are OpenVINO IR (an `<net` element near the start: other XML files are not models).
/// Hidden entries (`.git`) and symbolic links to directories are not entered.
fn models_under(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(io(&d))? {
            let e = e.map_err(io(&d))?;
            let p = e.path();
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(p);
            } else if p.is_file() && is_checked_model(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

fn is_checked_model(p: &Path) -> bool {
    match p.extension().and_then(|e| e.to_str()) {
        Some("onnx") => true,
        Some("xml") => {
            use std::io::Read;
            let mut head = [0u8; 1024];
            let n = std::fs::File::open(p)
                .and_then(|mut f| f.read(&mut head))
                .unwrap_or(0);
            String::from_utf8_lossy(&head[..n]).contains("<net")
        }
        _ => false,
    }
}

/// The line of each node of an IR model's `.xml` (empty for other models).
fn node_lines(path: &Path) -> BTreeMap<String, u64> {
    if path.extension().and_then(|e| e.to_str()) != Some("xml") {
        return BTreeMap::new();
    }
    std::fs::read_to_string(path)
        .map(|t| formats::ir_layer_lines(&t))
        .unwrap_or_default()
}

/// The table of one report, with its summary line.
fn table_lines(report: &CheckReport, fail_on: FailOn) -> Vec<String> {
    let mut rows = vec![vec![
        "path".into(),
        "op".into(),
        "input".into(),
        "declared".into(),
        "inferred".into(),
        "verdict".into(),
    ]];
    for r in &report.rows {
        let verdict = match r.verdict {
            Verdict::Ok => "ok".to_string(),
            Verdict::Undeclared => "undeclared".to_string(),
            v => format!("{}: {}", v.name(), r.detail),
        };
        let verdict = if r.warning.is_empty() {
            verdict
        } else {
            format!("{verdict} (warning: {})", r.warning)
        };
        rows.push(vec![
            r.path.clone(),
            r.op.clone(),
            r.input.clone(),
            r.declared.clone(),
            r.inferred.clone(),
            verdict,
        ]);
    }
    let bad = report
        .rows
        .iter()
        .filter(|r| r.verdict.fails(fail_on))
        .count();
    let mut lines = table(&rows);
    lines.push(format!(
        "{}: {} slice node(s), {} problem(s)",
        report.model,
        report.rows.len(),
        bad
    ));
    if !report.assumptions.is_empty() {
        lines.push(format!(
            "under the assumptions: {}",
            report.assumptions.join("; ")
        ));
    }
    lines
}

/// The model files to check among `inputs` (`single`: one path, not a directory), directories
/// searched; an error for a directory named like a model, or one alone with no model under it.
fn model_paths(inputs: &[PathBuf], single: bool) -> Result<Vec<PathBuf>, Error> {
    let mut paths = Vec::new();
    for path in inputs {
        // A directory named like a model is a mistake (or a trap), not a folder of models.
        if path.is_dir()
            && matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("onnx" | "xml")
            )
        {
            return Err(Error::Refused {
                path: path.to_path_buf(),
                message: "is a directory, not a model file (a directory of models must not be named like one)".into(),
            });
        }
        if path.is_dir() {
            let found = models_under(path)?;
            if found.is_empty() && inputs.len() == 1 {
                return Err(Error::Refused {
                    path: path.to_path_buf(),
                    message: "no model (.onnx, or OpenVINO IR .xml) under this directory".into(),
                });
            }
            paths.extend(found);
        } else if single || is_checked_model(path) || !path.exists() {
            // A path given alone is checked whatever it is; among several, an `.xml` that is
            // not IR (a pre-commit hook passes every changed `.xml`) is not a model.
            paths.push(path.to_path_buf());
        }
    }
    Ok(paths)
}

pub fn run_check(
    inputs: &[PathBuf],
    format: CheckFormat,
    fail_on: FailOn,
) -> Result<ExitCode, Error> {
    // One model as the table or JSON: as before (an unreadable model is the run's error).
    if let [path] = inputs {
        if !path.is_dir() && matches!(format, CheckFormat::Table | CheckFormat::Json) {
            let report = check_one(path)?;
            if format == CheckFormat::Json {
                print_out(json(&report)?.lines())?;
            } else {
                print_out(table_lines(&report, fail_on))?;
            }
            return Ok(if report.passes(fail_on) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            });
        }
    }
    let single = matches!(inputs, [p] if !p.is_dir());
    let paths = model_paths(inputs, single)?;
    let checked: Vec<Checked> = {
        use rayon::prelude::*;
        paths
            .par_iter()
            .map(|p| Checked {
                path: p.display().to_string(),
                report: check_one(p).map_err(|e| e.to_string()),
                lines: node_lines(p),
            })
            .collect()
    };
    for c in &checked {
        if let Err(e) = &c.report {
            term::err([format!("slice-opt: error: {e}")]);
        }
    }
    let unreadable = checked.iter().filter(|c| c.report.is_err()).count();
    let failed = checked
        .iter()
        .filter(|c| c.report.as_ref().is_ok_and(|r| !r.passes(fail_on)))
        .count();
    // 2 when a model cannot be read, else 1 when one fails, else 0.
    let code: u8 = if unreadable > 0 {
        2
    } else if failed > 0 {
        1
    } else {
        0
    };
    let summary = format!(
        "{} model(s): {} passed, {failed} failed, {unreadable} unreadable",
        checked.len(),
        checked.len() - failed - unreadable
    );
    match format {
        CheckFormat::Table => {
            let mut lines = Vec::new();
            for c in &checked {
                if let Ok(r) = &c.report {
                    lines.extend(table_lines(r, fail_on));
                    lines.push(String::new());
                }
            }
            lines.push(summary);
            print_out(lines)?;
        }
        CheckFormat::Json => {
            let all: Vec<serde_json::Value> = checked
                .iter()
                .map(|c| match &c.report {
                    Ok(r) => serde_json::to_value(r).unwrap_or_default(),
                    Err(e) => serde_json::json!({"model": c.path, "error": e}),
                })
                .collect();
            print_out(json(&all)?.lines())?;
        }
        CheckFormat::Github => {
            print_out(formats::github(&checked, fail_on))?;
            if !single {
                term::err([summary]);
            }
        }
        CheckFormat::Sarif => {
            print_out(json(&formats::sarif(&checked, fail_on, code as i32))?.lines())?;
        }
        CheckFormat::Junit => print_out(formats::junit(&checked, fail_on))?,
    }
    Ok(ExitCode::from(code))
}
