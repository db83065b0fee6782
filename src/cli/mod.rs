//! The parts of the `slice-opt` command line behind its argument parsing (`main.rs`): the
//! allocator, printing, and one module per thing the command does.

pub mod alloc;
pub mod check;
pub mod directory;
pub mod info;
pub mod term;
pub mod transform;

use std::path::PathBuf;
use std::process::ExitCode;

use slice_opt::Error;

/// Prints `lines` to stdout ([`term::out`]); a failure other than a closed stdout is an
/// error of the run.
pub fn print_out<S: AsRef<str>>(lines: impl IntoIterator<Item = S>) -> Result<(), Error> {
    term::out(lines).map_err(|source| Error::Io {
        path: PathBuf::from("<stdout>"),
        source,
    })
}

/// The exit code of a run that failed with `e`: 2 for unreadable input or unwritable output, 1
/// otherwise.
pub fn exit_code(e: &Error) -> ExitCode {
    if e.is_input_error() {
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}

/// `v` as pretty JSON. serde_json escapes control characters below U+0020 in strings; the
/// others a terminal acts on (DEL, C1, bidirectional overrides) are escaped here too
/// (`\u009b`): the same JSON value, safe to print.
pub fn json<T: serde::Serialize>(v: &T) -> Result<String, Error> {
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
pub fn table(rows: &[Vec<String>]) -> Vec<String> {
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
