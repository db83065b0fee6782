//! The `slice-opt` command line: thin argument parsing over the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use slice_opt::pipeline::{PassKind, Pipeline};
use slice_opt::{Error, Model};

const EXAMPLES: &str = "\
Examples:
  slice-opt models/last_token.onnx -o /tmp/out.onnx
      infer shapes, fold constant slices and clean up (the default passes)
  slice-opt models/last_token.tf.xml -o /tmp/out.xml
      the same on OpenVINO IR (writes out.xml and out.bin)
  slice-opt model.onnx -o out.onnx --passes none
      a pure round-trip: load and save without changing anything

Exit codes: 0 success, 1 a pass or check failed, 2 the input could not be read.";

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
    /// The model to transform (.onnx, or .xml with its .bin beside it).
    #[arg(required = true)]
    input: Option<PathBuf>,

    /// Where to write the result (for IR, the .xml; the .bin goes beside it).
    #[arg(short, long, required = true)]
    output: Option<PathBuf>,

    /// Comma-separated passes to run, or `none` for a pure round-trip.
    #[arg(long, default_value = "infer,fold,cleanup")]
    passes: String,

    /// Largest constant `fold` may produce, in bytes (K, M, G suffixes allowed).
    #[arg(long, default_value = "16M", value_parser = parse_size)]
    fold_limit: u64,

    /// Write what every pass changed to this JSON file.
    #[arg(long, value_name = "FILE.json")]
    report: Option<PathBuf>,

    /// Print nothing but errors.
    #[arg(short, long)]
    quiet: bool,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(&cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("slice-opt: error: {e}");
            if e.is_input_error() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

fn run(cli: &Cli) -> Result<ExitCode, Error> {
    let (Some(input), Some(output)) = (&cli.input, &cli.output) else {
        return Err(Error::Usage(
            "an input model and -o OUTPUT are required".into(),
        ));
    };
    let passes = PassKind::parse_list(&cli.passes)?;
    let mut model = Model::load(input)?;
    let report = Pipeline::with_passes(passes)
        .fold_limit(cli.fold_limit)
        .run(&mut model)?;
    model.save(output)?;
    if let Some(path) = &cli.report {
        let json = serde_json::to_vec_pretty(&report).map_err(|e| Error::Usage(e.to_string()))?;
        slice_opt::formats::write_atomic(path, &[&json])?;
    }
    if !cli.quiet {
        eprintln!(
            "{} -> {}: {} pass(es), {} change(s)",
            input.display(),
            output.display(),
            report.passes.len(),
            report.passes.iter().map(|p| p.changes.len()).sum::<usize>()
        );
    }
    Ok(ExitCode::SUCCESS)
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
