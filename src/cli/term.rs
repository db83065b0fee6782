//! Everything the command line prints goes through this module: each line is escaped
//! ([`term::escape`]: a node name, an op type or a path holding a newline or a terminal escape
//! sequence cannot break a line in two, fake a line of ours or drive the terminal), and a closed
//! stdout or stderr (`slice-opt info m.onnx | head`) ends the printing quietly instead of
//! panicking: the run finishes (a transform still writes its output) and exits with its usual
//! code.

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
            c if hidden(c) && (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
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
