//! Model formats: ONNX (`.onnx`) and OpenVINO IR (`.xml` + `.bin`), behind one [`Model`] type.

mod copy;
pub mod fs;
pub mod input_shapes;
pub mod mapped;
pub mod onnx;
pub mod openvino;
pub mod output;

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};
use crate::ir::Graph;

/// The on-disk format of a model (defined in [`crate::ir::dialect`]; this is its public path).
pub use crate::ir::Format;
/// Moved to [`fs`]; re-exported at their former path.
pub use fs::{open_regular, resolve_inside, resolved_model_dir};

/// A loaded model of either format.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one model per process: the size does not matter
pub enum Model {
    Onnx(onnx::OnnxModel),
    OpenVino(openvino::OvModel),
}

impl Model {
    /// Loads a model, choosing the format by extension and, failing that, by content.
    ///
    /// ```
    /// let model = slice_opt::Model::load("models/qkv_split.tf.xml".as_ref())?;
    /// assert_eq!(model.format(), slice_opt::formats::Format::OpenVino);
    /// assert_eq!(model.graph().op_counts()["StridedSlice"], 3);
    /// # Ok::<(), slice_opt::Error>(())
    /// ```
    pub fn load(path: &Path) -> Result<Model> {
        match detect_format(path)? {
            Format::Onnx => Ok(Model::Onnx(onnx::OnnxModel::load(path)?)),
            Format::OpenVino => Ok(Model::OpenVino(openvino::OvModel::load(path)?)),
        }
    }

    /// Saves the model to `path` (for IR, `path` is the `.xml`; the `.bin` goes beside it).
    /// Every file the save writes is checked first ([`output::OutputPlan`]: an input, a
    /// device, a FIFO, the same file twice or an unrelated existing data file is refused with
    /// [`Error::Refused`]), then written to a temporary name; all are renamed into place at
    /// the end: on failure no file changes and none is added.
    pub fn save(&self, path: &Path) -> Result<()> {
        match self {
            Model::Onnx(m) => m.save(path),
            Model::OpenVino(m) => m.save(path),
        }
    }

    /// [`Model::save`], taking an IR model's `.bin` from `copy` (started before the model was
    /// loaded, see [`openvino::BinCopy`]) when it can. The files written are the same; an
    /// ONNX model drops the copy unused.
    pub fn save_with(&self, path: &Path, copy: Option<openvino::BinCopy>) -> Result<()> {
        self.save_also(path, copy, &[])
    }

    /// [`Model::save_with`], with `also` (files the caller writes once the save is done, such
    /// as a report) in the same output plan: the save is refused, before anything is written,
    /// when one of them is a file it reads or writes, a device, a FIFO or a directory.
    pub fn save_also(
        &self,
        path: &Path,
        copy: Option<openvino::BinCopy>,
        also: &[&Path],
    ) -> Result<()> {
        let r = match self {
            Model::Onnx(m) => {
                drop(copy);
                m.save_also(path, also)
            }
            Model::OpenVino(m) => m.save_also(path, copy, also),
        };
        // A file that shrank under the save is the cause of whatever failed.
        if r.is_err() {
            self.check_mapped()?;
        }
        r
    }

    /// Fails, naming the file, when a file this model maps (the model, an IR `.bin`, ONNX
    /// external data) shrank since it was loaded (see [`mapped`]): what was read from it past
    /// its new end is zeros, not the model's bytes.
    pub fn check_mapped(&self) -> Result<()> {
        match self {
            Model::Onnx(m) => m.check_mapped(),
            Model::OpenVino(m) => m.check_mapped(),
        }
    }

    /// The format the model was read from.
    pub fn format(&self) -> Format {
        match self {
            Model::Onnx(_) => Format::Onnx,
            Model::OpenVino(_) => Format::OpenVino,
        }
    }

    /// The default-domain ONNX opset (0 for OpenVINO IR).
    pub fn onnx_opset(&self) -> i64 {
        match self {
            Model::Onnx(m) => m.opset(),
            Model::OpenVino(_) => 0,
        }
    }

    /// Gives back this process's pages of the mapped input files (the ONNX model, the IR
    /// `.bin`) when they are the read-only maps the load made; a page read again is mapped
    /// again from the page cache. Passes that read many constants call it now and then.
    pub(crate) fn release_input_pages(&self) {
        match self {
            Model::Onnx(m) => m.release_map_pages(),
            Model::OpenVino(m) => m.release_bin_pages(),
        }
    }

    /// The graph.
    pub fn graph(&self) -> &Graph {
        match self {
            Model::Onnx(m) => &m.graph,
            Model::OpenVino(m) => &m.graph,
        }
    }

    /// The graph, mutably (passes).
    pub fn graph_mut(&mut self) -> &mut Graph {
        match self {
            Model::Onnx(m) => &mut m.graph,
            Model::OpenVino(m) => &mut m.graph,
        }
    }

    /// Where the model was loaded from.
    pub fn path(&self) -> &Path {
        match self {
            Model::Onnx(m) => &m.path,
            Model::OpenVino(m) => &m.path,
        }
    }
}

/// Decides the format of `path`: `.onnx` / `.xml` by extension, otherwise by the first bytes
/// (`<` for XML; anything else is tried as ONNX protobuf).
pub fn detect_format(path: &Path) -> Result<Format> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
        .as_deref()
    {
        Some("onnx") => return Ok(Format::Onnx),
        Some("xml") => return Ok(Format::OpenVino),
        _ => {}
    }
    let mut head = [0u8; 64];
    let n = {
        use std::io::Read;
        let mut f = open_regular(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        f.read(&mut head).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?
    };
    let text = head[..n]
        .iter()
        .skip_while(|b| b.is_ascii_whitespace() || **b == 0xEF || **b == 0xBB || **b == 0xBF);
    match text.clone().next() {
        Some(b'<') => Ok(Format::OpenVino),
        Some(_) => Ok(Format::Onnx),
        None => Err(Error::Format {
            path: path.to_path_buf(),
            message: "empty file: neither an ONNX model nor OpenVINO IR".into(),
        }),
    }
}

/// Writes `parts` to a temporary file beside `path`, then renames it over `path`: a failure
/// leaves `path` as it was. Writing to the file being read (which may be memory-mapped) is safe,
/// since the old file's data stays alive until unmapped.
pub fn write_atomic(path: &Path, parts: &[&[u8]]) -> Result<()> {
    write_atomic_with(path, |file| {
        let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
        for p in parts {
            w.write_all(p)?;
        }
        w.flush()
    })
}

/// Like [`write_atomic`], with the contents written by `write` to the temporary file. The
/// temporary file is registered for removal on a signal (see [`output`]).
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&std::fs::File) -> std::io::Result<()>,
) -> Result<()> {
    let tmp = output::Staged::new(path)?;
    // On an error the temporary file is dropped, which deletes it.
    write(tmp.as_file()).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    tmp.persist()
}

/// A new temporary file in the directory of `path` (to be renamed over it once complete; it
/// is deleted if dropped before that).
///
/// It gets the permissions `path` has when it exists, else those of a newly created file
/// (read-write for all, less the umask), not the private mode of a temporary file: the
/// renamed result must be as readable as a file written in place.
pub fn temp_beside(path: &Path) -> Result<tempfile::NamedTempFile> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut b = tempfile::Builder::new();
    b.prefix(".slice-opt-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // Passed to open(2), so the umask applies.
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = b.tempfile_in(dir).map_err(|e| {
        // Name the directory, not the temporary file's random name.
        let reason = e.to_string();
        let reason = reason.split(" at path ").next().unwrap_or(&reason);
        io(std::io::Error::new(
            e.kind(),
            format!("cannot create a file in {}: {reason}", dir.display()),
        ))
    })?;
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.is_file() {
            tmp.as_file()
                .set_permissions(meta.permissions())
                .map_err(io)?;
        }
    }
    Ok(tmp)
}

/// Copies the file `from` to `to` atomically, file to file (`copy_file_range` on Linux: the
/// data does not pass through this process's memory).
pub fn copy_atomic(from: &Path, to: &Path) -> Result<()> {
    let mut src = open_regular(from).map_err(|source| Error::Io {
        path: from.to_path_buf(),
        source,
    })?;
    write_atomic_with(to, |mut out| {
        std::io::copy(&mut src, &mut out)?;
        Ok(())
    })
}
