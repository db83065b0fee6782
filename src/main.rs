//! The `slice-opt` command line: argument parsing (clap) and dispatch to `cli/` (one module per
//! thing the command does, printing, the allocator), with the exit codes.

mod cli;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use slice_opt::formats::input_shapes::{InputShape, ShapesIn};
use slice_opt::semantics::dim::Assumptions;

use cli::{
    alloc::{no_transparent_huge_pages, purge_freed_memory_early},
    exit_code, term,
};

const EXAMPLES: &str = "\
Examples:
  slice-opt models/last_token.onnx -o /tmp/out.onnx
      infer shapes, fold constant slices and clean up (the default passes)
  slice-opt models/last_token.tf.xml -o /tmp/out.xml
      the same on OpenVINO IR (writes out.xml and out.bin)
  slice-opt model.onnx -o out.onnx --passes none
      a pure round-trip: load and save without changing anything
  slice-opt model.onnx -o out.onnx --passes infer,simplify,cleanup
      simplify slices (identity removed, slice of a slice merged, disjoint slices to one
      Split, a slice of a Concat to its input, Shape+Slice to Shape(start,end), one element
      of a shape to a Gather, slices on disjoint axes with computed bounds to one), each proven
  slice-opt model.onnx -o out.onnx --verify
      also run the original and the result in tract-onnx on random inputs and compare
  slice-opt models/ -o out/
      every model of a directory, in parallel
  slice-opt check model.xml
      CI gate: declared vs inferred shape of every slice; exit 1 on a mismatch
  slice-opt check models/ --format github --fail-on looser
      every model under models/: GitHub annotations; also fail on looser declarations
  slice-opt info model.onnx
      opsets, op counts and every slice in Python notation
  slice-opt check gpt2.onnx --assume \"k_len >= q_len\" --dim q_len=1..4096
      dims exact (and short) for every size where what you state holds
  slice-opt model.onnx -o out.onnx --dim batch=1 --dim seq=1..4096
      pin `batch` to 1 everywhere the model names it (inputs, value_info, outputs) and
      bound `seq`: every slice dim written holds for every seq in 1..4096
  slice-opt model.xml -o out.xml --input-shape x=1,seq,8 --dim seq=1..2048
      give an input (here an IR Parameter, whose dims have no names) its whole shape: each
      dim a size, a name, ? or lo..hi; IR writes the interval (shape=\"1,1..2048,8\")

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

    /// Comma-separated passes to run (infer, fold, cleanup, simplify, lower, raise), or `none`
    /// for a round-trip.
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

    /// Fix (`--dim batch=1`) or bound (`--dim seq=1..4096`, `--dim n=1..`) a symbolic dim of
    /// the model's inputs; repeatable. A fixed size is written everywhere the model names the
    /// dim (ONNX inputs, value_info and outputs; IR Parameters); a bounded dim keeps its name in
    /// ONNX and is written as an interval in IR. Written dims are exact for every size in
    /// range, and shorter. A name no input has is refused. Also for `check` and `info` (as an
    /// assumption only).
    #[arg(long, global = true, value_name = "NAME=SIZE|LO..HI")]
    dim: Vec<String>,

    /// The whole shape of one input, repeatable: `--input-shape x=1,seq,?,1..2048` (each dim a
    /// size, a name, `?` or `lo..hi`); for inputs whose dims have no names (IR Parameters,
    /// unnamed ONNX dims). A size against a static dim, a rank mismatch or an unknown input
    /// is refused.
    #[arg(long = "input-shape", value_name = "INPUT=D1,D2,...")]
    input_shape: Vec<String>,

    /// `--dim` and `--input-shape` as read (filled after parsing).
    #[arg(skip)]
    shapes: ShapesIn,

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

/// What `check` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CheckFormat {
    /// A table for people.
    Table,
    /// The report as JSON (an array of reports for a directory).
    Json,
    /// GitHub Actions workflow commands: one `::error` annotation per failing slice.
    Github,
    /// SARIF 2.1.0 (code scanning): one result per slice, rule ids per verdict.
    Sarif,
    /// JUnit XML: one test case per slice, a failure per failing slice.
    Junit,
}

/// `check --fail-on`: the least severe verdict that fails the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FailOnArg {
    /// A declared shape that is wrong for some input size, or invalid slice parameters.
    Mismatch,
    /// Also a declaration looser than what is known (verdict `tighter`).
    #[value(alias = "tighter")]
    Looser,
    /// Also a slice whose shape cannot be inferred (verdict `unknown`).
    Unknown,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Infer every slice's shape and compare with what the model declares; exit 1 on a mismatch
    /// or invalid parameters (or what --fail-on adds), 2 if a model cannot be read.
    Check {
        /// The model (.onnx, or .xml with its .bin), or a directory: every model under it
        /// (recursively). Several paths (as a pre-commit hook passes them) are checked together,
        /// with one exit code; there an `.xml` file that is not OpenVINO IR is skipped.
        #[arg(required = true, value_name = "MODEL|DIR")]
        model: Vec<PathBuf>,
        /// `table` for people, `json` for machines, `github` (annotations), `sarif`, `junit` for
        /// CI systems.
        #[arg(long, value_enum, default_value = "table")]
        format: CheckFormat,
        /// How strict: `mismatch` fails on wrong declarations and invalid slices (default);
        /// `looser` also where the model declares less than is known (`tighter` rows);
        /// `unknown` also where a slice's shape cannot be inferred.
        #[arg(long, value_enum, default_value = "mismatch")]
        fail_on: FailOnArg,
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

fn main() -> ExitCode {
    purge_freed_memory_early();
    no_transparent_huge_pages();
    let mut cli = Cli::parse();
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
    // `--dim` / `--input-shape` for the inputs of the model transformed.
    if cli.command.is_none() {
        match read_shapes(&cli.dim, &cli.input_shape) {
            Ok(s) => cli.shapes = s,
            Err(e) => {
                term::err([format!("slice-opt: error: {e}")]);
                return ExitCode::from(2);
            }
        }
    }
    let result = match &cli.command {
        Some(Command::Check {
            model,
            format,
            fail_on,
        }) => {
            let fail_on = match fail_on {
                FailOnArg::Mismatch => slice_opt::check::FailOn::Mismatch,
                FailOnArg::Looser => slice_opt::check::FailOn::Looser,
                FailOnArg::Unknown => slice_opt::check::FailOn::Unknown,
            };
            cli::check::run_check(model, *format, fail_on)
        }
        Some(Command::Info { model, format }) => cli::info::run_info(model, *format),
        None => cli::transform::run_transform(&cli),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            term::err([format!("slice-opt: error: {e}")]);
            exit_code(&e)
        }
    }
}

/// Reads the `--dim` and `--input-shape` values; the error names the value.
fn read_shapes(dims: &[String], inputs: &[String]) -> Result<ShapesIn, String> {
    let mut s = ShapesIn::default();
    for d in dims {
        s.dims
            .push(ShapesIn::parse_dim(d).map_err(|e| format!("--dim {d}: {e}"))?);
    }
    for i in inputs {
        s.inputs
            .push(InputShape::parse(i).map_err(|e| format!("--input-shape {i}: {e}"))?);
    }
    Ok(s)
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
