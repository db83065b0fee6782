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

/// Counts a large allocation against `--verify`'s memory budget; false: refuse it (only when
/// `enforce`: on a thread where tract runs for `--verify`).
#[cfg(feature = "verify")]
fn charge(size: usize, enforce: bool) -> bool {
    slice_opt::verify::charge(size, !enforce)
}

#[cfg(feature = "verify")]
fn refund(size: usize) {
    slice_opt::verify::refund(size)
}

#[cfg(not(feature = "verify"))]
fn charge(_: usize, _: bool) -> bool {
    true
}

#[cfg(not(feature = "verify"))]
fn refund(_: usize) {}

// SAFETY: every call is forwarded to mimalloc unchanged, or answered with null (allocation
// failure), which the GlobalAlloc contract allows.
unsafe impl std::alloc::GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let limit = alloc_limit();
        if layout.size() > limit || !charge(layout.size(), limit != usize::MAX) {
            return std::ptr::null_mut();
        }
        let p = mimalloc::MiMalloc.alloc(layout);
        if p.is_null() {
            refund(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let limit = alloc_limit();
        if layout.size() > limit || !charge(layout.size(), limit != usize::MAX) {
            return std::ptr::null_mut();
        }
        let p = mimalloc::MiMalloc.alloc_zeroed(layout);
        if p.is_null() {
            refund(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        refund(layout.size());
        mimalloc::MiMalloc.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let limit = alloc_limit();
        if new_size > limit {
            return std::ptr::null_mut();
        }
        // Counted as the old block freed and the new one allocated; on a refusal or a failure
        // the old block stays, and so does its count.
        refund(layout.size());
        if !charge(new_size, limit != usize::MAX) {
            charge(layout.size(), false);
            return std::ptr::null_mut();
        }
        let p = mimalloc::MiMalloc.realloc(ptr, layout, new_size);
        if p.is_null() {
            refund(new_size);
            charge(layout.size(), false);
        }
        p
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

use clap::{Parser, Subcommand, ValueEnum};
use slice_opt::check::{self, Verdict};
use slice_opt::pipeline::{PassKind, Report};
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

    /// With --verify: the memory tract may give the models' tensors in all (K, M, G suffixes);
    /// a model over it is reported as not verified. Default: a sixteenth of the machine's
    /// memory, at least 1G.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, requires = "verify")]
    verify_memory: Option<u64>,

    /// With --verify: the longest a verification may take, in seconds; past it the model is
    /// reported as not verified. Default: 300.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, requires = "verify")]
    verify_time: Option<std::time::Duration>,

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

/// Everything the command line prints goes through this module: each line is escaped
/// ([`term::escape`]: a node name, an op type or a path holding a newline or a terminal escape
/// sequence cannot break a line in two, fake a line of ours or drive the terminal), and a closed
/// stdout or stderr (`slice-opt info m.onnx | head`) ends the printing quietly instead of
/// panicking: the run finishes (a transform still writes its output) and exits with its usual
/// code.
mod term {
    use std::borrow::Cow;
    use std::io::Write;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Set once stdout was found closed: nothing more is written to it.
    static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);

    /// Characters shown escaped: control characters (C0, DEL, C1) and the Unicode format
    /// characters that reorder text on screen (bidirectional marks, embeddings, overrides and
    /// isolates).
    pub fn hidden(c: char) -> bool {
        c.is_control()
            || matches!(
                c,
                '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
            )
    }

    /// `s` with every hidden character written as an escape: `\n`, `\r`, `\t`, `\x1b` (other
    /// control characters below U+0100), `\u{202e}` (the others). Escaping twice changes
    /// nothing more (the result holds no hidden character).
    pub fn escape(s: &str) -> Cow<'_, str> {
        if !s.chars().any(hidden) {
            return Cow::Borrowed(s);
        }
        let mut out = String::with_capacity(s.len() + 8);
        for c in s.chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if hidden(c) && (c as u32) < 0x100 => {
                    out.push_str(&format!("\\x{:02x}", c as u32))
                }
                c if hidden(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => out.push(c),
            }
        }
        Cow::Owned(out)
    }

    fn write_lines<S: AsRef<str>>(
        w: &mut impl Write,
        lines: impl IntoIterator<Item = S>,
    ) -> std::io::Result<()> {
        for l in lines {
            w.write_all(escape(l.as_ref()).as_bytes())?;
            w.write_all(b"\n")?;
        }
        w.flush()
    }

    /// Prints `lines` to stdout, each escaped and ended by a newline. A closed stdout ends
    /// the printing quietly (this and every later call print nothing); another failure
    /// (a full disk behind a redirection) is returned.
    pub fn out<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) -> std::io::Result<()> {
        if STDOUT_CLOSED.load(Ordering::Relaxed) {
            return Ok(());
        }
        let stdout = std::io::stdout();
        let mut w = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
        match write_lines(&mut w, lines) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                STDOUT_CLOSED.store(true, Ordering::Relaxed);
                // Nothing buffered is kept for the drop to retry.
                let _ = w.into_parts();
                Ok(())
            }
            r => r,
        }
    }

    /// Prints `lines` to stderr, each escaped and ended by a newline; a failure (a closed
    /// stderr) is ignored: there is nowhere left to report it.
    pub fn err<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) {
        let stderr = std::io::stderr();
        let mut w = std::io::BufWriter::new(stderr.lock());
        let _ = write_lines(&mut w, lines);
        let _ = w.into_parts();
    }

    /// Directory mode's progress line on a terminal: `text` escaped, after a carriage return
    /// and followed by "erase to the end of the line" (the only control sequences printed).
    pub fn progress(text: &str) {
        let _ = write!(std::io::stderr(), "\r{}\x1b[K", escape(text));
    }

    /// Clears the progress line.
    pub fn clear_progress() {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
}

/// Prints `lines` to stdout ([`term::out`]); a failure other than a closed stdout is an
/// error of the run.
fn print_out<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) -> Result<(), Error> {
    term::out(lines).map_err(|source| Error::Io {
        path: PathBuf::from("<stdout>"),
        source,
    })
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
    // A file size limit (`ulimit -f`) is handled like a full disk: with SIGXFSZ ignored, a
    // write past the limit fails with EFBIG, reported like any write error, and the
    // temporary files are removed (the signal's default action killed the process and left
    // them).
    #[cfg(unix)]
    // SAFETY: sets the disposition of one signal to "ignore", before any thread is started.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // Temporary files of a save in progress are removed on SIGINT, SIGTERM and SIGHUP.
    if let Err(e) = slice_opt::formats::output::install_signal_cleanup() {
        term::err([format!(
            "slice-opt: warning: cannot install signal handlers: {e}"
        )]);
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
            term::err([format!("slice-opt: error: {e}")]);
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
            term::err([format!("slice-opt: error: {e}")]);
            exit_code(&e)
        }
    }
}

/// `v` as pretty JSON. serde_json escapes control characters below U+0020 in strings; the
/// others a terminal acts on (DEL, C1, bidirectional overrides) are escaped here too
/// (`\u009b`): the same JSON value, safe to print.
fn json<T: serde::Serialize>(v: &T) -> Result<String, Error> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Error::Usage(e.to_string()))?;
    // The only raw control character left is the newline between lines (a string holds
    // none: serde_json writes `\n`); every hidden character is in the Basic Multilingual Plane.
    let hidden = |c: char| c != '\n' && term::hidden(c);
    if !text.chars().any(hidden) {
        return Ok(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// Rows as aligned columns, one line per row; every cell escaped ([`term::escape`]) so that
/// the widths are those printed.
fn table(rows: &[Vec<String>]) -> Vec<String> {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| term::escape(c).into_owned()).collect())
        .collect();
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
        .collect()
}

fn run_check(path: &Path, format: OutputFormat) -> Result<ExitCode, Error> {
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

fn run_info(path: &Path, format: OutputFormat) -> Result<ExitCode, Error> {
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

/// What one model's transformation did, for the summary.
struct Outcome {
    report: Report,
    verification: Option<String>,
}

/// Transforms `input` into `output`; `also` are files the caller writes once the save is done
/// (the `--report` file), checked in the save's output plan.
fn transform_one(
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
fn summary(input: &Path, output: &Path, o: &Outcome, verbose: bool) -> Vec<String> {
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
        if let Some(report) = &cli.report {
            return Err(Error::Refused {
                path: report.clone(),
                message: "--report writes the report of one model: directory mode takes none"
                    .into(),
            });
        }
        return run_directory(cli, &passes, input, output);
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

/// Parses a positive number of seconds (`90`, `2.5`).
fn parse_seconds(s: &str) -> Result<std::time::Duration, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0 && *v <= 1e9)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("'{s}' is not a number of seconds (e.g. 60, 2.5)"))
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
