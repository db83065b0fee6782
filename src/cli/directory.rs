//! Directory mode: every model of a directory transformed on rayon's pool, with progress on a
//! terminal and one line per model.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use slice_opt::pipeline::PassKind;
use slice_opt::Error;

use super::term;
use super::transform::{is_model, transform_one, Outcome};
use crate::Cli;

pub fn run_directory(
    cli: &Cli,
    passes: &[PassKind],
    input: &Path,
    output: &Path,
) -> Result<ExitCode, Error> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let mut models: Vec<PathBuf> = std::fs::read_dir(input)
        .map_err(io(input))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && is_model(p))
        .collect();
    models.sort();
    std::fs::create_dir_all(output).map_err(io(output))?;
    let total = models.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let tty = std::io::stderr().is_terminal() && !cli.quiet;
    let results: Vec<(PathBuf, Result<Outcome, Error>)> = {
        use rayon::prelude::*;
        models
            .par_iter()
            .map(|m| {
                let out = output.join(m.file_name().unwrap_or_default());
                let r = transform_one(cli, passes, m, &out, &[]);
                let k = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                if tty {
                    term::progress(&format!("[{k}/{total}] {}", m.display()));
                }
                (m.clone(), r)
            })
            .collect()
    };
    if tty {
        term::clear_progress();
    }
    let mut failed = 0;
    for (m, r) in &results {
        match r {
            Ok(o) => {
                if !cli.quiet {
                    let changes: usize = o.report.passes.iter().map(|p| p.changed).sum();
                    let v = o
                        .verification
                        .as_deref()
                        .map(|v| format!(", {v}"))
                        .unwrap_or_default();
                    let seconds = o.report.summary.as_ref().map_or(0.0, |s| s.seconds);
                    term::err([format!(
                        "ok    {}  {changes} change(s), {seconds:.2}s{v}",
                        m.display(),
                    )]);
                }
            }
            Err(e) => {
                failed += 1;
                term::err([format!("FAIL  {}  {e}", m.display())]);
            }
        }
    }
    if !cli.quiet {
        term::err([format!(
            "{} model(s): {} ok, {failed} failed",
            total,
            total - failed
        )]);
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
