//! Memory maps that survive their file shrinking under them.
//!
//! A file truncated by another process while it is mapped makes every read of a page past its
//! new end raise SIGBUS, whose default action kills the process (exit 135) and leaves the
//! temporary files of a save in progress. Every map the loaders make is registered here
//! ([`guard`]); a SIGBUS handler, installed with the first map, answers a fault inside a
//! registered map by putting zero pages over the rest of that map and marking it shrunk: the
//! read completes (it reads zeros) and the run goes on to [`check`], which turns the mark, or a
//! file now shorter than its map, into an error naming the file. Loads check their maps when
//! they end and saves before they rename anything into place, so a shrunk input never yields
//! an output, and no temporary file is left (they are removed with the error).
//!
//! A fault anywhere else is passed to the handler that was installed before (the Rust
//! runtime's stack-overflow report), or gets the default action.

use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::error::{Error, Result};

/// A map and the registry entry it holds (released when the map is dropped).
struct Guarded {
    map: memmap2::Mmap,
    #[cfg(unix)]
    slot: Option<usize>,
}

impl AsRef<[u8]> for Guarded {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

#[cfg(unix)]
impl Drop for Guarded {
    fn drop(&mut self) {
        if let Some(s) = self.slot {
            registry::release(s);
        }
        // The map itself is unmapped after this (zero pages put over it included).
    }
}

/// Registers `map` (of the file `file`, opened from `path`) and returns it as `Bytes`.
pub(crate) fn guard(map: memmap2::Mmap, file: &std::fs::File, path: &Path) -> Bytes {
    #[cfg(unix)]
    {
        let slot = registry::register(&map, file, path);
        Bytes::from_owner(Guarded { map, slot })
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        Bytes::from_owner(Guarded { map })
    }
}

/// Fails, naming the file, when the map `bytes` lies in was hit by a read past the end of its
/// shrunk file, or when that file is now shorter than the map. Bytes that are not in a
/// registered map pass.
pub fn check(bytes: &[u8]) -> Result<()> {
    #[cfg(unix)]
    if let Some((path, why)) = registry::shrunk(bytes) {
        return Err(shrunk_error(path, why));
    }
    let _ = bytes;
    Ok(())
}

fn shrunk_error(path: PathBuf, why: String) -> Error {
    Error::Io {
        path,
        source: std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("the file shrank while it was being read ({why}): it was changed by another program during the run; nothing was written"),
        ),
    }
}

#[cfg(unix)]
mod registry {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Mutex, Once, OnceLock};

    /// Maps registered at most at once; beyond that a map is not guarded (a model with more
    /// external data files than this mapped at one time).
    const SLOTS: usize = 1 << 14;

    struct Slot {
        taken: AtomicBool,
        start: AtomicUsize,
        end: AtomicUsize,
        shrunk: AtomicBool,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Slot = Slot {
        taken: AtomicBool::new(false),
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
        shrunk: AtomicBool::new(false),
    };

    /// Read by the signal handler: atomics only.
    static TABLE: [Slot; SLOTS] = [FREE; SLOTS];
    /// One past the highest slot ever taken.
    static USED: AtomicUsize = AtomicUsize::new(0);
    static PAGE: AtomicUsize = AtomicUsize::new(4096);
    /// The file of each taken slot, its path and the map's length (not read by the handler).
    #[allow(clippy::type_complexity)]
    static FILES: Mutex<Vec<Option<(PathBuf, std::fs::File, u64)>>> = Mutex::new(Vec::new());
    static INSTALL: Once = Once::new();
    /// The SIGBUS action before ours.
    static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

    fn files() -> std::sync::MutexGuard<'static, Vec<Option<(PathBuf, std::fs::File, u64)>>> {
        FILES.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn register(map: &[u8], file: &std::fs::File, path: &Path) -> Option<usize> {
        INSTALL.call_once(install);
        if map.is_empty() {
            return None;
        }
        let handle = file.try_clone().ok()?;
        let i = (0..SLOTS).find(|&i| {
            TABLE[i]
                .taken
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        })?;
        {
            let mut f = files();
            if f.len() <= i {
                f.resize_with(i + 1, || None);
            }
            f[i] = Some((path.to_path_buf(), handle, map.len() as u64));
        }
        let s = &TABLE[i];
        s.shrunk.store(false, Ordering::Release);
        s.start.store(map.as_ptr() as usize, Ordering::Release);
        s.end
            .store(map.as_ptr() as usize + map.len(), Ordering::Release);
        USED.fetch_max(i + 1, Ordering::AcqRel);
        Some(i)
    }

    pub(super) fn release(i: usize) {
        let s = &TABLE[i];
        s.end.store(0, Ordering::Release);
        s.start.store(0, Ordering::Release);
        if let Some(f) = files().get_mut(i) {
            *f = None;
        }
        s.taken.store(false, Ordering::Release);
    }

    /// The file and the reason when the registered map holding `bytes` shrank.
    pub(super) fn shrunk(bytes: &[u8]) -> Option<(PathBuf, String)> {
        let at = bytes.as_ptr() as usize;
        let n = USED.load(Ordering::Acquire);
        let i = (0..n).find(|&i| {
            let s = &TABLE[i];
            s.taken.load(Ordering::Acquire)
                && s.start.load(Ordering::Acquire) <= at
                && at < s.end.load(Ordering::Acquire)
        })?;
        let f = files();
        let (path, file, len) = f.get(i)?.as_ref()?;
        let now = file.metadata().map(|m| m.len()).unwrap_or(0);
        if TABLE[i].shrunk.load(Ordering::Acquire) {
            return Some((
                path.clone(),
                format!("{len} bytes when mapped, {now} now; a read past its end"),
            ));
        }
        (now < *len).then(|| (path.clone(), format!("{len} bytes when mapped, {now} now")))
    }

    fn install() {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if page > 0 {
            PAGE.store(page as usize, Ordering::Relaxed);
        }
        // SAFETY: a zeroed sigaction is a valid value to fill in; sigaction(2) with valid
        // pointers. The previous action is kept before ours can run.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 {
                return;
            }
            let _ = PREVIOUS.set(old);
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigbus as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut());
        }
    }

    /// The SIGBUS handler: async-signal-safe (atomic loads and stores, mmap, sigaction).
    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
        let addr = unsafe { (*info).si_addr() } as usize;
        let page = PAGE.load(Ordering::Relaxed);
        let n = USED.load(Ordering::Acquire);
        for s in &TABLE[..n.min(SLOTS)] {
            let start = s.start.load(Ordering::Acquire);
            let end = s.end.load(Ordering::Acquire);
            if start <= addr && addr < end {
                let from = addr & !(page - 1);
                // SAFETY: [from, end) lies in a live read-only map of ours (its owner clears
                // the slot before unmapping it); anonymous zero pages replace those pages of
                // it, which no longer have a file behind them.
                let r = unsafe {
                    libc::mmap(
                        from as *mut libc::c_void,
                        end - from,
                        libc::PROT_READ,
                        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                        -1,
                        0,
                    )
                };
                if r != libc::MAP_FAILED {
                    s.shrunk.store(true, Ordering::Release);
                    return;
                }
            }
        }
        // Not a map of ours: the handler before ours, or the default action (restored; the
        // faulting instruction runs again and the fault ends the process as it would have).
        // SAFETY: calls the previous handler as it was installed, with the same arguments.
        unsafe {
            match PREVIOUS.get() {
                Some(old)
                    if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN =>
                {
                    if old.sa_flags & libc::SA_SIGINFO != 0 {
                        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                            std::mem::transmute(old.sa_sigaction);
                        f(sig, info, ctx);
                    } else {
                        let f: extern "C" fn(libc::c_int) = std::mem::transmute(old.sa_sigaction);
                        f(sig);
                    }
                }
                _ => {
                    let mut dfl: libc::sigaction = std::mem::zeroed();
                    dfl.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
                }
            }
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_map_whose_file_shrinks_reads_zeros_and_fails_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, vec![7u8; 64 << 10]).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        // SAFETY: a read-only map of our own file.
        let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
        let bytes = guard(map, &file, &path);
        assert!(check(&bytes).is_ok());
        assert_eq!(bytes[40 << 10], 7);
        // Another program truncates the file: the pages past 8 KiB have no data any more.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(8 << 10)
            .unwrap();
        let err = check(&bytes).unwrap_err().to_string();
        assert!(err.contains("f.bin") && err.contains("shrank"), "{err}");
        // A read past the new end: zeros instead of SIGBUS, and the map is marked.
        let sum: u64 = bytes[(32 << 10)..].iter().map(|&b| b as u64).sum();
        assert_eq!(sum, 0);
        assert_eq!(bytes[100], 7, "the part still in the file reads as it was");
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(64 << 10)
            .unwrap();
        let err = check(&bytes).unwrap_err().to_string();
        assert!(err.contains("a read past its end"), "{err}");
        // Bytes elsewhere pass; a dropped map frees its slot.
        assert!(check(&[1, 2, 3]).is_ok());
        drop(bytes);
    }
}
