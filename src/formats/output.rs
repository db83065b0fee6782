//! One output plan per run: every file a save writes is listed and checked before anything is
//! written, written to a temporary name beside its target, and renamed into place only when all
//! of them are complete (the model last).
//!
//! The checks ([`OutputPlan::check`]) refuse, in one line naming the files:
//! - an output that is a device, a FIFO, a socket or a directory (after following links);
//! - an output that is a file the run reads (compared by device and inode after following
//!   links, not by name), except the one in-place case: the model written over the model read,
//!   and an IR `.bin` over the `.bin` read when its `.xml` is written in place too;
//! - two outputs that are the same file;
//! - a data file (IR `.bin`, ONNX external data) that would replace an existing file not
//!   referenced by the model being replaced at the output path (an unrelated file is never
//!   overwritten).
//!
//! Temporary files are registered while they exist; [`install_signal_cleanup`] removes them
//! on SIGINT, SIGTERM and SIGHUP before the process ends with that signal.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, Result};

/// Temporary files that exist now (removed by the signal handler).
static TEMPS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn temps() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    TEMPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Installs a handler that removes every temporary file of a save in progress on SIGINT,
/// SIGTERM or SIGHUP, then ends the process with that signal's default action. A save whose
/// files are being renamed into place finishes its renames first (they take microseconds),
/// so a signal leaves either no output or a complete one. Call it once, from a binary.
#[cfg(unix)]
pub fn install_signal_cleanup() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("slice-opt-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                // Held until the process ends: no temporary file is created or renamed after.
                let list = temps();
                for p in list.iter() {
                    let _ = std::fs::remove_file(p);
                }
                let _ = signal_hook::low_level::emulate_default_handler(sig);
                std::process::exit(128 + sig);
            }
        })?;
    Ok(())
}

/// Elsewhere than on Unix: nothing to install.
#[cfg(not(unix))]
pub fn install_signal_cleanup() -> std::io::Result<()> {
    Ok(())
}

/// Device and inode of the file `path` names after following links.
#[cfg(unix)]
fn file_id(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn file_id(_: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// The id of the file at `path`, following links (`None` when nothing is there).
pub fn id_of(path: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(path).ok().map(|m| file_id(&m))
}

/// What a non-regular file is, for messages.
pub fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else if meta.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

/// `path` with its directory resolved (links and `..`), for comparing files that may not exist
/// yet; `path` itself when its directory does not exist.
fn normalized(path: &Path) -> PathBuf {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(dir), path.file_name()) {
        (Ok(d), Some(n)) => d.join(n),
        _ => path.to_path_buf(),
    }
}

/// Device and inode of a file.
type FileId = (u64, u64);

/// One file a save writes.
#[derive(Debug, Clone)]
struct Planned {
    path: PathBuf,
    /// A data file (IR `.bin`, ONNX external data), as opposed to the model itself.
    data: bool,
    /// The input file this output may replace (writing in place).
    replaces: Option<PathBuf>,
}

/// The files a run reads and writes; see the module documentation for what
/// [`OutputPlan::check`] refuses.
#[derive(Debug, Clone, Default)]
pub struct OutputPlan {
    inputs: Vec<PathBuf>,
    outputs: Vec<Planned>,
    /// Existing files data outputs may replace: the data files of the model being replaced.
    replaceable: Vec<(u64, u64)>,
}

impl OutputPlan {
    /// An empty plan.
    pub fn new() -> OutputPlan {
        OutputPlan::default()
    }

    /// A file the run reads.
    pub fn input(&mut self, path: &Path) -> &mut Self {
        self.inputs.push(path.to_path_buf());
        self
    }

    /// The model file the run writes; `replaces` is the input model when writing in place.
    pub fn model(&mut self, path: &Path, replaces: Option<&Path>) -> &mut Self {
        self.outputs.push(Planned {
            path: path.to_path_buf(),
            data: false,
            replaces: replaces.map(Path::to_path_buf),
        });
        self
    }

    /// A data file the run writes (IR `.bin`, ONNX external data); `replaces` is the input
    /// file it takes the place of when writing in place.
    pub fn data(&mut self, path: &Path, replaces: Option<&Path>) -> &mut Self {
        self.outputs.push(Planned {
            path: path.to_path_buf(),
            data: true,
            replaces: replaces.map(Path::to_path_buf),
        });
        self
    }

    /// Another file the run writes beside the model (the `--report` file): checked like the
    /// model (not a device, FIFO or directory, not a file the run reads, not a file written
    /// twice) but, unlike a data file, it may replace an unrelated existing file.
    pub fn other(&mut self, path: &Path) -> &mut Self {
        self.outputs.push(Planned {
            path: path.to_path_buf(),
            data: false,
            replaces: None,
        });
        self
    }

    /// An existing file that a data output may replace (a data file of the model at the
    /// output path, which the run replaces).
    pub fn replaceable(&mut self, path: &Path) -> &mut Self {
        if let Some(id) = id_of(path) {
            self.replaceable.push(id);
        }
        self
    }

    /// Checks the plan; the error names the file(s) and the reason.
    pub fn check(&self) -> Result<()> {
        let inputs: Vec<(&PathBuf, (u64, u64))> = self
            .inputs
            .iter()
            .filter_map(|p| Some((p, id_of(p)?)))
            .collect();
        let mut seen: Vec<(PathBuf, Option<FileId>, &Path)> = Vec::new();
        for o in &self.outputs {
            let refuse = |message: String| Error::Refused {
                path: o.path.clone(),
                message,
            };
            let meta = std::fs::metadata(&o.path).ok();
            if let Some(m) = &meta {
                if !m.is_file() {
                    return Err(refuse(format!(
                        "is {}: refusing to write over it (an output must be a regular file or a new name)",
                        kind_of(m)
                    )));
                }
            }
            let id = meta.as_ref().map(file_id);
            let norm = normalized(&o.path);
            if let Some((_, _, first)) = seen
                .iter()
                .find(|(n, i, _)| *n == norm || (id.is_some() && *i == id))
            {
                return Err(refuse(format!(
                    "this run would write the same file twice (also as {}): refusing",
                    first.display()
                )));
            }
            seen.push((norm, id, &o.path));
            let Some(id) = id else { continue };
            if let Some((input, _)) = inputs.iter().find(|(_, i)| *i == id) {
                let in_place = o.replaces.as_deref().and_then(id_of) == Some(id);
                if !in_place {
                    return Err(refuse(format!(
                        "is {} (an input of this run): refusing to write over it",
                        input.display()
                    )));
                }
                continue;
            }
            if o.data && !self.replaceable.contains(&id) {
                return Err(refuse(
                    "exists and is not a data file of the model being replaced: refusing to overwrite it (remove it or choose another output name)"
                        .to_string(),
                ));
            }
        }
        Ok(())
    }
}

/// A temporary file beside its target, registered for removal on a signal; dropping it
/// removes it.
#[derive(Debug)]
pub struct Staged {
    tmp: Option<tempfile::NamedTempFile>,
    target: PathBuf,
}

impl Staged {
    /// A new temporary file in the directory of `target` (see [`super::temp_beside`] for its
    /// permissions).
    pub fn new(target: &Path) -> Result<Staged> {
        let mut list = temps();
        let tmp = super::temp_beside(target)?;
        list.push(tmp.path().to_path_buf());
        Ok(Staged {
            tmp: Some(tmp),
            target: target.to_path_buf(),
        })
    }

    /// The file to write to.
    pub fn as_file(&self) -> &std::fs::File {
        self.tmp
            .as_ref()
            .expect("present until persisted")
            .as_file()
    }

    /// The file to write to, mutably.
    pub fn as_file_mut(&mut self) -> &mut std::fs::File {
        self.tmp
            .as_mut()
            .expect("present until persisted")
            .as_file_mut()
    }

    /// Where it will be renamed to.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames into place; the caller holds the registry lock.
    fn persist_locked(mut self, list: &mut Vec<PathBuf>) -> Result<()> {
        let Some(tmp) = self.tmp.take() else {
            return Ok(());
        };
        let path = tmp.path().to_path_buf();
        let r = tmp.persist(&self.target);
        // On failure the temporary file was dropped (removed) with the error.
        list.retain(|p| *p != path);
        r.map(|_| ()).map_err(|e| Error::Io {
            path: self.target.clone(),
            source: e.error,
        })
    }

    /// Renames this one file into place.
    pub fn persist(self) -> Result<()> {
        let mut list = temps();
        self.persist_locked(&mut list)
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(tmp) = self.tmp.take() {
            let mut list = temps();
            let path = tmp.path().to_path_buf();
            drop(tmp);
            list.retain(|p| *p != path);
        }
    }
}

/// Renames `files` into place in order (data files first, the model last), with signals held
/// off until all are renamed. On a failure the files not yet renamed are removed.
pub fn commit(files: Vec<Staged>) -> Result<()> {
    let mut list = temps();
    let mut rest = files.into_iter();
    for f in rest.by_ref() {
        if let Err(e) = f.persist_locked(&mut list) {
            drop(list);
            drop(rest);
            return Err(e);
        }
    }
    Ok(())
}
