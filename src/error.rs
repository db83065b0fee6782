//! The library's one error type.

use std::path::PathBuf;

/// Result with the crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in slice-opt, with enough context (file, node, op, input) to act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a model we can read, or is corrupt.
    #[error("{path}: {message}")]
    Format { path: PathBuf, message: String },
    /// A node of the graph is malformed (dangling input, cycle, bad attribute...).
    #[error("{path}: node '{node}' ({op}): {message}")]
    Node {
        path: PathBuf,
        node: String,
        op: String,
        message: String,
    },
    /// A slice node has invalid parameters (the semantics core refused them).
    #[error("node '{node}' ({op}): {source}")]
    Slice {
        node: String,
        op: String,
        #[source]
        source: crate::semantics::SliceError,
    },
    /// Anything else a pass refuses to do, with the node it concerns.
    #[error("{pass}: node '{node}': {message}")]
    Pass {
        pass: &'static str,
        node: String,
        message: String,
    },
    /// The run refuses to read or write a file: an output that is an input, a device, a FIFO or
    /// the same file twice; external data outside the model's directory or not a regular file.
    #[error("{path}: {message}")]
    Refused { path: PathBuf, message: String },
    /// A usage error (bad option, unsupported combination).
    #[error("{0}")]
    Usage(String),
}

impl Error {
    /// The graph of `path` has a cycle through the node named in `cycle`.
    pub fn cycle(path: &std::path::Path, cycle: crate::ir::Cycle) -> Error {
        Error::Node {
            path: path.to_path_buf(),
            node: cycle.0,
            op: String::new(),
            message: "the graph has a cycle through this node".into(),
        }
    }

    /// True when the error means the input could not be read at all, or a file could not be
    /// written (exit code 2 in the CLI).
    pub fn is_input_error(&self) -> bool {
        matches!(
            self,
            Error::Io { .. } | Error::Format { .. } | Error::Node { .. } | Error::Refused { .. }
        )
    }
}
