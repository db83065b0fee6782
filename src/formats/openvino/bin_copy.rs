//! A copy of an IR model's `.bin` to where its save will write it, started before the model is
//! even loaded ([`BinCopy`]).
//!
//! A big `.bin` is written back with its layout unchanged when little of it is no longer
//! referenced ([`super::write::keeps_layout`]): every byte where it was, new constants after
//! the end. Its bytes are then known before the passes run, and copying them (most of a big
//! model's save) can overlap loading, inferring and folding. The save takes the copy when the
//! written `.bin` is the original one followed by new bytes and the copy is of the file the
//! model was read from, finished and whole; in any other case the copy is stopped, its
//! temporary file removed, and the save writes the `.bin` as it would have without it.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::write::KEEP_LAYOUT_MIN;
use crate::formats::output::Staged;

/// What the copy thread copies at a time between looks at the stop flag: a copy that is not
/// needed any more stops within one step. 8 MB: on `half_kept.xml` (issue 44; its folds leave
/// none of the `.bin` referenced, so the copy is dropped at the save's plan) steps of 64 MB
/// copied 128 MB for nothing (two steps, `strace`); a step is one `copy_file_range` call, so
/// the 128 steps of a 1 GB `.bin` cost nothing measurable.
const STEP: u64 = 8 << 20;

/// A copy of the `.bin` of an IR model to a temporary file beside the `.bin` a save will write,
/// running on its own thread. Start it before loading the model, hand it to
/// [`crate::formats::Model::save_with`]: the save uses it when it can (see the module
/// documentation) and otherwise writes the `.bin` itself. Dropping it unused stops the copy
/// and removes its temporary file.
///
/// ```no_run
/// use slice_opt::formats::{openvino::BinCopy, Model};
/// use std::path::Path;
/// let (input, output) = (Path::new("model.xml"), Path::new("out.xml"));
/// let copy = BinCopy::start(input, output);
/// let model = Model::load(input)?;
/// // ... passes ...
/// model.save_with(output, copy)?;
/// # Ok::<(), slice_opt::error::Error>(())
/// ```
#[derive(Debug)]
pub struct BinCopy {
    /// The `.bin` the save will write.
    target: PathBuf,
    /// Device and inode of the `.bin` copied, and its length when the copy started.
    source: (u64, u64),
    len: u64,
    stop: Arc<AtomicBool>,
    /// The temporary file with the whole `.bin` in it, or `None` when the copy failed or
    /// stopped.
    thread: Option<JoinHandle<Option<Staged>>>,
}

impl BinCopy {
    /// Starts copying the `.bin` of the IR model `xml` (`<stem>.bin` beside it) to a temporary
    /// file beside the `.bin` of `output_xml`. `None` (nothing started) when there is no such
    /// regular file, when it is shorter than the `.bin`s whose layout a save keeps (64 MB), or
    /// when no thread can be started. Errors of the copy are not reported here: a save that
    /// cannot use the copy writes the `.bin` itself and reports its own errors.
    pub fn start(xml: &Path, output_xml: &Path) -> Option<BinCopy> {
        let from = crate::formats::fs::open_regular(&super::bin_path_for(xml)).ok()?;
        let meta = from.metadata().ok()?;
        let len = meta.len();
        if len < KEEP_LAYOUT_MIN {
            return None;
        }
        let source = super::node_of(&meta)?;
        let target = super::bin_path_for(output_xml);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("slice-opt-bin-copy".into())
            .spawn({
                let (target, stop) = (target.clone(), stop.clone());
                move || copy_whole(&from, len, &target, &stop)
            })
            .ok()?;
        Some(BinCopy {
            target,
            source,
            len,
            stop,
            thread: Some(thread),
        })
    }

    /// The finished copy, when it is of `len` bytes of the file `source` and meant for
    /// `target`; `None` otherwise (the copy is then stopped and its file removed).
    pub(super) fn take(
        mut self,
        target: &Path,
        source: Option<(u64, u64)>,
        len: u64,
    ) -> Option<Staged> {
        if self.target != target || source != Some(self.source) || len != self.len {
            return None;
        }
        self.thread.take()?.join().ok().flatten()
    }
}

impl Drop for BinCopy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // The temporary file goes with the thread's result.
            let _ = t.join();
        }
    }
}

/// Copies the `len` bytes of `from` to a new temporary file beside `target`, `STEP` bytes at
/// a time (file to file where the system can), until done or `stop` is set.
fn copy_whole(from: &std::fs::File, len: u64, target: &Path, stop: &AtomicBool) -> Option<Staged> {
    let staged = Staged::new(target).ok()?;
    let mut out = staged.as_file();
    let mut done = 0u64;
    while done < len {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let step = STEP.min(len - done);
        let n = io::copy(&mut from.take(step), &mut out).ok()?;
        if n != step {
            // The file shrank while being copied.
            return None;
        }
        done += n;
    }
    Some(staged)
}
