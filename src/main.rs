//! The `slice-opt` command line: thin argument parsing, progress and exit codes over the library.

/// mimalloc: loading a model makes millions of small allocations (names, node records);
/// measured on nodes_100k.onnx, see bench/RESULTS.md. Wrapped so that a single allocation above
/// `slice_opt::verify::alloc_limit()` (set only while tract runs a model for `--verify`) fails:
/// tract then panics (caught and reported) instead of taking all memory.
#[global_allocator]
static GLOBAL: Capped = Capped;

struct Capped;

#[cfg(feature = "verify")]
fn alloc_limit() -> usize {
    slice_opt::verify::alloc_limit()
}

#[cfg(not(feature = "verify"))]
fn alloc_limit() -> usize {
    usize::MAX
}

// SAFETY: every call is forwarded to mimalloc unchanged, or answered with null (allocation
// failure), which the GlobalAlloc contract allows.
unsafe impl std::alloc::GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.size() > alloc_limit() {
            return std::ptr::null_mut();
        }
        mimalloc::MiMalloc.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if layout.size() > alloc_limit() {
            return std::ptr::null_mut();
        }
        mimalloc::MiMalloc.alloc_zeroed(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        mimalloc::MiMalloc.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if new_size > alloc_limit() {
            return std::ptr::null_mut();
        }
        mimalloc::MiMalloc.realloc(ptr, layout, new_size)
    }
}

/// mimalloc's `mi_option_purge_delay`: entry 15 of `mi_option_e` in the mimalloc 3 header that
/// libmimalloc-sys 0.1 builds (which names no constant for it). Its default is 1000 ms.
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    #[cfg(test)]
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
}

/// Has mimalloc give freed memory back to the system after 10 ms instead of 1 s (unless
/// `MIMALLOC_PURGE_DELAY` says otherwise). A run frees its large temporaries (the name maps of
/// a load) before the next phase allocates: given back early, they no longer add to the peak.
/// Measured on the bench models: peak RSS of `wide_100k.onnx` 322 -> 306 MB, `nodes_100k.onnx`
/// 505 -> 477 MB, wall no slower (bench/RESULTS.md).
fn purge_freed_memory_early() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets an integer option; mimalloc reads its options at any time.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 10) };
    }
}

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand, ValueEnum};
use slice_opt::check::{self, Verdict};
use slice_opt::pipeline::{PassKind, Pipeline, Report};
use slice_opt::semantics::dim::Assumptions;
use slice_opt::{Error, Model};

const EXAMPLES: &str = "\
Examples:
  slice-opt models/last_token.onnx -o /tmp/out.onnx
      infer shapes, fold constant slices and clean up (the default passes)
  slice-opt models/last_token.tf.xml -o /tmp/out.xml
      the same on OpenVINO IR (writes out.xml and out.bin)
  slice-opt model.onnx -o out.onnx --passes none
      a pure round-trip: load and save without changing anything
  slice-opt model.onnx -o out.onnx --verify
      also run the original and the result in tract-onnx on random inputs and compare
  slice-opt models/ -o out/
      every model of a directory, in parallel
  slice-opt check model.xml
      CI gate: declared vs inferred shape of every slice; exit 1 on a mismatch
  slice-opt info model.onnx
      opsets, op counts and every slice in Python notation
  slice-opt check gpt2.onnx --assume \"k_len >= q_len\" --dim q_len=1..4096
      dims exact (and short) for every size where what you state holds

Exit codes: 0 success, 1 a pass, check or verification failed, 2 the input could not be read
or the output could not be written (or was refused: an input, a device, a FIFO, the same file
twice, an unrelated existing file). An interrupted run (SIGINT, SIGTERM, SIGHUP) leaves no file.";

/// Shape inference, constant folding and lowering of StridedSlice/Slice in ONNX and OpenVINO IR
/// models.
#[derive(Debug, Parser)]
#[command(
    name = "slice-opt",
    version,
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    /// The model to transform (.onnx, or .xml with its .bin beside it), or a directory of models.
    #[arg(required = true)]
    input: Option<PathBuf>,

    /// Where to write the result (for IR, the .xml; the .bin goes beside it); a directory when
    /// the input is one.
    #[arg(short, long, required = true)]
    output: Option<PathBuf>,

    /// Comma-separated passes to run (infer, fold, cleanup, ...), or `none` for a round-trip.
    #[arg(long, default_value = "infer,fold,cleanup")]
    passes: String,

    /// Largest constant `fold` may produce, in bytes (K, M, G suffixes allowed).
    #[arg(long, default_value = "16M", value_parser = parse_size)]
    fold_limit: u64,

    /// Write what every pass changed to this JSON file.
    #[arg(long, value_name = "FILE.json")]
    report: Option<PathBuf>,

    /// Verify the result: ONNX models run before and after in tract-onnx on seeded random
    /// inputs (symbolic dims bound to small sizes) and must agree; IR rewrites are validated by
    /// the semantics core as they are made. A model tract cannot run is reported as not verified.
    #[arg(long)]
    verify: bool,

    /// With --verify: the size of a symbolic input dim (`--bind batch=1 --bind seq=128`, or
    /// `--bind batch=1,seq=128`). Unbound symbols are tried at 3, then 64, then 512.
    #[arg(long, value_name = "NAME=SIZE", value_parser = parse_bind, value_delimiter = ',')]
    bind: Vec<(String, usize)>,

    /// The bounds of a symbolic dim (`--dim seq=1..4096 --dim batch=1..`, repeatable; also for
    /// `check` and `info`). Written dims are exact for sizes within them, and shorter.
    #[arg(long, global = true, value_name = "NAME=LO..HI")]
    dim: Vec<String>,

    /// A fact between symbolic dims (`--assume "k_len >= q_len"`; >=, >, <=, <, ==;
    /// repeatable; also for `check` and `info`). Written dims are exact where it holds, and
    /// shorter; an ONNX output records the assumptions in `metadata_props`
    /// (`slice_opt.assumptions`).
    #[arg(long, global = true, value_name = "FACT")]
    assume: Vec<String>,

    /// Print nothing but errors.
    #[arg(short, long, conflicts_with = "verbose")]
    quiet: bool,

    /// Print every change each pass made.
    #[arg(short, long)]
    verbose: bool,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    Table,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Infer every slice's shape and compare with what the model declares; exit 1 on a mismatch
    /// or invalid parameters, 2 if the model cannot be read.
    Check {
        /// The model (.onnx, or .xml with its .bin).
        model: PathBuf,
        /// `table` for people, `json` for machines.
        #[arg(long, value_enum, default_value = "table")]
        format: OutputFormat,
    },
    /// Summarize a model: format, opsets, op counts and every slice in Python notation.
    Info {
        /// The model (.onnx, or .xml with its .bin).
        model: PathBuf,
        /// `table` for people, `json` for machines.
        #[arg(long, value_enum, default_value = "table")]
        format: OutputFormat,
    },
}

fn exit_code(e: &Error) -> ExitCode {
    if e.is_input_error() {
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}

fn main() -> ExitCode {
    purge_freed_memory_early();
    let cli = Cli::parse();
    // Temporary files of a save in progress are removed on SIGINT, SIGTERM and SIGHUP.
    if let Err(e) = slice_opt::formats::output::install_signal_cleanup() {
        eprintln!("slice-opt: warning: cannot install signal handlers: {e}");
    }
    // `--dim` / `--assume`: installed for the whole run (inference, check, info).
    let assumed = cli
        .dim
        .iter()
        .try_fold(Assumptions::new(), |a, d| a.parse_dim(d));
    let assumed = assumed.and_then(|a| cli.assume.iter().try_fold(a, |a, f| a.parse_fact(f)));
    match assumed {
        Ok(a) => {
            slice_opt::semantics::dim::assume(a);
        }
        Err(e) => {
            eprintln!("slice-opt: error: {e}");
            return ExitCode::from(2);
        }
    }
    let result = match &cli.command {
        Some(Command::Check { model, format }) => run_check(model, *format),
        Some(Command::Info { model, format }) => run_info(model, *format),
        None => run_transform(&cli),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("slice-opt: error: {e}");
            exit_code(&e)
        }
    }
}

fn json<T: serde::Serialize>(v: &T) -> Result<String, Error> {
    serde_json::to_string_pretty(v).map_err(|e| Error::Usage(e.to_string()))
}

fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|r| {
            r.iter()
                .enumerate()
                .map(|(c, s)| {
                    // Padded by hand: a width over 65535 (a dim_param that long) panics in
                    // `format!`.
                    let w = if c + 1 == r.len() { 0 } else { widths[c] };
                    let pad = w.saturating_sub(s.chars().count());
                    format!("{s}{}", " ".repeat(pad))
                })
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_check(path: &Path, format: OutputFormat) -> Result<ExitCode, Error> {
    let model = Model::load(path)?;
    let report = check::check(&model);
    if format == OutputFormat::Json {
        println!("{}", json(&report)?);
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
        println!("{}", table(&rows));
        let bad = report
            .rows
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Mismatch | Verdict::Invalid))
            .count();
        println!(
            "{}: {} slice node(s), {} problem(s)",
            path.display(),
            report.rows.len(),
            bad
        );
        if !report.assumptions.is_empty() {
            println!("under the assumptions: {}", report.assumptions.join("; "));
        }
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn run_info(path: &Path, format: OutputFormat) -> Result<ExitCode, Error> {
    let model = Model::load(path)?;
    let info = check::info(&model);
    if format == OutputFormat::Json {
        println!("{}", json(&info)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("{} ({})", info.model, info.format);
    println!(
        "opsets: {}",
        info.opsets
            .iter()
            .map(|(d, v)| format!("{d} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "{} nodes: {}",
        info.nodes,
        info.ops
            .iter()
            .map(|(o, n)| format!("{o} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if info.slices.is_empty() {
        println!("no slice nodes");
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
        println!("{}", table(&rows));
    }
    Ok(ExitCode::SUCCESS)
}

/// What one model's transformation did, for the summary.
struct Outcome {
    report: Report,
    verification: Option<String>,
}

fn file_size(p: &Path) -> u64 {
    let mut n = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    if p.extension().is_some_and(|e| e == "xml") {
        n += std::fs::metadata(p.with_extension("bin"))
            .map(|m| m.len())
            .unwrap_or(0);
    }
    n
}

fn transform_one(
    cli: &Cli,
    passes: &[PassKind],
    input: &Path,
    output: &Path,
) -> Result<Outcome, Error> {
    let start = Instant::now();
    // A big IR `.bin` starts copying to the output now, while the model loads and the passes
    // run; the save takes the copy when the `.bin` keeps its layout (most of such a save is
    // that copy), and otherwise stops it and writes the `.bin` itself.
    let bin_copy = match slice_opt::formats::detect_format(input) {
        Ok(slice_opt::formats::Format::OpenVino) => {
            slice_opt::formats::openvino::BinCopy::start(input, output)
        }
        _ => None,
    };
    let mut model = Model::load(input)?;
    let load_seconds = start.elapsed().as_secs_f64();
    // The summary (op counts before and after: two walks over every node) is computed only
    // when something shows it: the printed table, directory mode's lines, or `--report`.
    let shown = !cli.quiet || cli.report.is_some();
    let ops_before = if shown {
        slice_opt::summary::op_rows(&model)
    } else {
        Vec::new()
    };
    let original = if cli.verify {
        Some(model.clone())
    } else {
        None
    };
    // Every change is recorded only when something shows the list (`-v`, `--report`); the
    // summary needs the counts alone.
    let mut report = Pipeline::with_passes(passes.to_vec())
        .fold_limit(cli.fold_limit)
        .details(cli.verbose || cli.report.is_some())
        .run(&mut model)?;
    let verification = match (&original, &model) {
        (Some(Model::Onnx(a)), Model::Onnx(b)) => Some(verify(a, b, &cli.bind)?),
        (Some(_), _) => Some("rewrites validated by the semantics core".to_string()),
        (None, _) => None,
    };
    let save_start = Instant::now();
    model.save_with(output, bin_copy)?;
    report.load_seconds = Some(load_seconds);
    report.save_seconds = Some(save_start.elapsed().as_secs_f64());
    report.summary = shown.then(|| {
        slice_opt::summary::Summary::new(
            &ops_before,
            &model,
            file_size(input),
            file_size(output),
            start.elapsed().as_secs_f64(),
        )
    });
    report.verification = verification.clone();
    // Freeing a model of a million small allocations takes a noticeable share of a run: do it
    // off the critical path (the process may exit before it finishes, which is fine).
    std::thread::spawn(move || drop((model, original)));
    Ok(Outcome {
        report,
        verification,
    })
}

#[cfg(feature = "verify")]
fn verify(
    a: &slice_opt::formats::onnx::OnnxModel,
    b: &slice_opt::formats::onnx::OnnxModel,
    bind: &[(String, usize)],
) -> Result<String, Error> {
    use slice_opt::verify::{verify_onnx_with, Verification, VerifyOptions};
    let opts = VerifyOptions {
        bind: bind.iter().cloned().collect(),
        ..VerifyOptions::default()
    };
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
    _: &[(String, usize)],
) -> Result<String, Error> {
    Err(Error::Usage(
        "--verify needs slice-opt built with the `verify` feature (tract-onnx)".into(),
    ))
}

fn summary(input: &Path, output: &Path, o: &Outcome, verbose: bool) -> String {
    let mut s = format!("{} -> {}", input.display(), output.display());
    for p in &o.report.passes {
        s.push_str(&format!(
            "\n  {:8} {} change(s), {} skipped  {:.3}s",
            p.pass.name(),
            p.changed,
            p.skipped_count,
            p.seconds
        ));
        for c in &p.warnings {
            s.push_str(&format!(
                "\n      warning {} ({}): {}",
                c.node, c.op, c.what
            ));
        }
        if verbose {
            for c in &p.changes {
                let arrow = match (&c.before, &c.after) {
                    (Some(b), Some(a)) => format!(": {b} -> {a}"),
                    (None, Some(a)) => format!(": {a}"),
                    _ => String::new(),
                };
                s.push_str(&format!("\n      {} ({}) {}{arrow}", c.node, c.op, c.what));
            }
            for c in &p.skipped {
                s.push_str(&format!(
                    "\n      skipped {} ({}): {}",
                    c.node, c.op, c.what
                ));
            }
        }
    }
    if let Some(v) = &o.verification {
        s.push_str(&format!("\n  verify   {v}"));
    }
    if let Some(t) = &o.report.summary {
        s.push('\n');
        s.push_str(&t.table());
    }
    s
}

fn is_model(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("onnx" | "xml"))
}

fn run_transform(cli: &Cli) -> Result<ExitCode, Error> {
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
        return run_directory(cli, &passes, input, output);
    }
    if let Some(report) = &cli.report {
        check_report_path(report, input, output)?;
    }
    let outcome = transform_one(cli, &passes, input, output)?;
    if let Some(path) = &cli.report {
        slice_opt::formats::write_atomic(path, &[json(&outcome.report)?.as_bytes()])?;
    }
    if !cli.quiet {
        eprintln!("{}", summary(input, output, &outcome, cli.verbose));
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--report` file must not be the input or the output model.
fn check_report_path(report: &Path, input: &Path, output: &Path) -> Result<(), Error> {
    use slice_opt::formats::output::OutputPlan;
    let mut plan = OutputPlan::new();
    plan.input(input)
        .model(output, Some(input))
        .model(report, None);
    match plan.check() {
        // The model output's own problems are reported when it is written.
        Err(Error::Refused { path, message }) if path == report => {
            Err(Error::Refused { path, message })
        }
        _ => Ok(()),
    }
}

fn run_directory(
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
                let r = transform_one(cli, passes, m, &out);
                let k = done.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                if tty {
                    eprint!("\r[{k}/{total}] {}\x1b[K", m.display());
                }
                (m.clone(), r)
            })
            .collect()
    };
    if tty {
        eprint!("\r\x1b[K");
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
                    eprintln!(
                        "ok    {}  {changes} change(s), {seconds:.2}s{v}",
                        m.display(),
                    );
                }
            }
            Err(e) => {
                failed += 1;
                eprintln!("FAIL  {}  {e}", m.display());
            }
        }
    }
    if !cli.quiet {
        eprintln!("{} model(s): {} ok, {failed} failed", total, total - failed);
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Parses `name=size` (`--bind`).
fn parse_bind(s: &str) -> Result<(String, usize), String> {
    let (name, size) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not NAME=SIZE"))?;
    let size = size
        .trim()
        .parse::<usize>()
        .map_err(|_| format!("'{size}' in '{s}' is not a size"))?;
    Ok((name.trim().to_string(), size))
}

/// Parses `123`, `16K`, `16M`, `1G` (powers of 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mul) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mul))
        .ok_or_else(|| format!("'{s}' is not a size (e.g. 4096, 16M, 1G)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // Option 15 is mimalloc's purge delay: its documented default (1000 ms, or what the
        // environment says) before the tool sets it, 10 after.
        let default = std::env::var("MIMALLOC_PURGE_DELAY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        // SAFETY: reads an integer option.
        assert_eq!(unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }, default);
        purge_freed_memory_early();
        let want = if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            default
        } else {
            10
        };
        // SAFETY: as above.
        assert_eq!(unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }, want);
    }
}
