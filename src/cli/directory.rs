//! Directory mode: every model of a directory and its subdirectories transformed on rayon's
//! pool, each written to the same relative path under the output directory, with progress on a
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
    std::fs::create_dir_all(output).map_err(io(output))?;
    // The output directory is not read as input when it lies inside the input directory.
    let skip = std::fs::canonicalize(output).ok();
    let mut models: Vec<PathBuf> = Vec::new();
    collect_models(input, skip.as_deref(), 0, &mut models).map_err(io(input))?;
    models.sort();
    let total = models.len();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let tty = std::io::stderr().is_terminal() && !cli.quiet;
    let results: Vec<(PathBuf, Result<Outcome, Error>)> = {
        use rayon::prelude::*;
        models
            .par_iter()
            .map(|m| {
                // The same place under the output directory (`in/gpt2/model.onnx` ->
                // `out/gpt2/model.onnx`): exports that are folders of `model.onnx` and
                // `model.onnx.data` keep their folders.
                let rel = m.strip_prefix(input).unwrap_or(m);
                let out = output.join(rel);
                let r = match out.parent() {
                    Some(d) => std::fs::create_dir_all(d).map_err(io(d)),
                    None => Ok(()),
                }
                .and_then(|()| transform_one(cli, passes, m, &out, &[]));
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

/// Subdirectories deeper than this are not searched for models.
const MAX_DEPTH: usize = 32;

/// Appends the model files (`.onnx`, `.xml`) in `dir` and its subdirectories to `out`, except
/// under `skip` (the output directory). Links to directories are not followed (a link to an
/// ancestor would never end); links to files are.
fn collect_models(
    dir: &Path,
    skip: Option<&Path>,
    depth: usize,
    out: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let Ok(e) = e else { continue };
        let p = e.path();
        let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
        if is_dir {
            let inside_output =
                skip.is_some_and(|s| std::fs::canonicalize(&p).is_ok_and(|c| c == s));
            if depth < MAX_DEPTH && !inside_output {
                // A subdirectory that cannot be read is left out, as an unreadable entry is.
                let _ = collect_models(&p, skip, depth + 1, out);
            }
        } else if p.is_file() && is_model(&p) {
            out.push(p);
        }
    }
    Ok(())
}
