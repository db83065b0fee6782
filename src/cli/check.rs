//! `slice-opt check`: declared against inferred shapes of every slice, as a table or JSON.

use std::path::Path;
use std::process::ExitCode;

use slice_opt::check::{self, Verdict};
use slice_opt::{Error, Model};

use super::{json, print_out, table};
use crate::OutputFormat;

pub fn run_check(path: &Path, format: OutputFormat) -> Result<ExitCode, Error> {
    let model = Model::load(path)?;
    let report = check::check(&model);
    // Nothing is printed from a file that shrank while it was read.
    model.check_mapped()?;
    if format == OutputFormat::Json {
        print_out(json(&report)?.lines())?;
    } else {
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
                v => format!("{}: {}", format!("{v:?}").to_lowercase(), r.detail),
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
            .filter(|r| matches!(r.verdict, Verdict::Mismatch | Verdict::Invalid))
            .count();
        let mut lines = table(&rows);
        lines.push(format!(
            "{}: {} slice node(s), {} problem(s)",
            path.display(),
            report.rows.len(),
            bad
        ));
        if !report.assumptions.is_empty() {
            lines.push(format!(
                "under the assumptions: {}",
                report.assumptions.join("; ")
            ));
        }
        print_out(lines)?;
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
