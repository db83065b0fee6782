//! `slice-opt info`: a model's opsets, op counts and slice nodes, as text or JSON.

use std::path::Path;
use std::process::ExitCode;

use slice_opt::check;
use slice_opt::{Error, Model};

use super::{json, print_out, table};
use crate::OutputFormat;

pub fn run_info(path: &Path, format: OutputFormat) -> Result<ExitCode, Error> {
    let model = Model::load(path)?;
    let info = check::info(&model);
    model.check_mapped()?;
    if format == OutputFormat::Json {
        print_out(json(&info)?.lines())?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut lines = vec![format!("{} ({})", info.model, info.format)];
    lines.push(format!(
        "opsets: {}",
        info.opsets
            .iter()
            .map(|(d, v)| format!("{d} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    lines.push(format!(
        "{} nodes: {}",
        info.nodes,
        info.ops
            .iter()
            .map(|(o, n)| format!("{o} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    if info.slices.is_empty() {
        lines.push("no slice nodes".into());
    } else {
        let mut rows = vec![vec![
            "path".into(),
            "op".into(),
            "input".into(),
            "spec".into(),
        ]];
        rows.extend(info.slices.iter().map(|s| {
            vec![
                s.path.clone(),
                s.op.clone(),
                s.input.clone(),
                s.spec.clone(),
            ]
        }));
        lines.extend(table(&rows));
    }
    print_out(lines)?;
    Ok(ExitCode::SUCCESS)
}
