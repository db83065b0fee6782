//! Input-side file primitives every format reads through: opening only regular files,
//! resolving a referenced file inside the model's directory, and memory-mapping files as
//! `Bytes` (the load is zero-copy from these maps).

use std::path::{Path, PathBuf};

use bytes::Bytes;

use crate::error::{Error, Result};

/// Opens `path` for reading only when it is a regular file: a FIFO is opened without blocking
/// (`O_NONBLOCK`) and refused, as are devices, sockets and directories, so reading a model never
/// hangs on a FIFO or reads a device.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK);
    }
    let f = o.open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is {}, not a regular file", super::output::kind_of(&meta)),
        ));
    }
    Ok(f)
}

/// Resolves `path` (links, `..`) and checks that it is a regular file inside `dir` (also after
/// resolving), or inside `alt_dir` when given (the directory of the model after resolving its
/// own links: a model in a cache of linked blobs). Returns the resolved path, or the reason.
pub fn resolve_inside(
    path: &Path,
    dir: &Path,
    alt_dir: Option<&Path>,
) -> std::result::Result<PathBuf, String> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let real = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let inside = |d: &Path| std::fs::canonicalize(d).is_ok_and(|d| real.starts_with(d));
    if !inside(dir) && !alt_dir.is_some_and(inside) {
        return Err(format!(
            "{} resolves outside the model's directory (to {}): refusing to read it",
            path.display(),
            real.display()
        ));
    }
    let meta = std::fs::metadata(&real).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!(
            "{} is {}, not a regular file: refusing to read it",
            path.display(),
            super::output::kind_of(&meta)
        ));
    }
    Ok(real)
}

/// The directory of the model at `path` after resolving its links, when it differs from the
/// directory as named (see [`resolve_inside`]).
pub fn resolved_model_dir(path: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(path).ok()?;
    real.parent().map(Path::to_path_buf)
}

/// Memory-maps a file as `Bytes` (an empty file becomes an empty buffer).
pub fn map_file(path: &Path) -> Result<Bytes> {
    map_file_with_handle(path).map(|(b, _)| b)
}

/// Memory-maps a file whose bytes are read here and there, not front to back (an IR `.bin`:
/// passes read a few small constants out of a file of weights that are copied file to file):
/// a page fault reads that page, not a readahead window around it.
pub fn map_file_sparse(path: &Path) -> Result<Bytes> {
    map_file_advised(path, Some(memmap2::Advice::Random)).map(|(b, _)| b)
}

/// Memory-maps a file as `Bytes`, also returning the open file (`None` for an empty file).
pub fn map_file_with_handle(path: &Path) -> Result<(Bytes, Option<std::fs::File>)> {
    map_file_advised(path, None)
}

/// Gives back this process's pages of `range`, keeping the mapping: the next read of a page
/// maps it again from the page cache, with the same bytes. Does nothing off Linux, or when
/// the kernel refuses.
///
/// # Safety
/// `range` must lie in a read-only shared map of a file ([`map_file_advised`] makes them)
/// and start on a page boundary. On anything else (a heap buffer) the pages' contents would
/// be lost.
pub(crate) unsafe fn release_resident_range(range: &[u8]) {
    #[cfg(target_os = "linux")]
    if !range.is_empty() {
        // SAFETY: per the contract above; for a read-only MAP_SHARED file map MADV_DONTNEED
        // only drops page table entries. Failure changes nothing.
        unsafe {
            libc::madvise(
                range.as_ptr() as *mut libc::c_void,
                range.len(),
                libc::MADV_DONTNEED,
            );
        }
    }
}

/// Asks the kernel to map the pages of `len` bytes at `addr` as if written (Linux 5.14's
/// `MADV_POPULATE_WRITE`), so the thread that then writes there does not stop at a page fault
/// per page: a loader calls it on another thread for the memory of the records it adds next
/// ([`crate::ir::Slots`]). The contents do not change; pages already mapped stay as they are.
/// Only pages of this process's anonymous, writable memory should be named (a heap block
/// reserved for the records): a wrong range fails (ignored) or maps pages of the heap early.
/// Does nothing off Linux, or when the kernel refuses.
pub(crate) fn prefault_for_write(addr: usize, len: usize) {
    #[cfg(target_os = "linux")]
    {
        /// `MADV_POPULATE_WRITE` (not in every `libc` release).
        const MADV_POPULATE_WRITE: libc::c_int = 23;
        const PAGE: usize = 4096;
        if len == 0 || addr == 0 {
            return;
        }
        let start = addr & !(PAGE - 1);
        let end = addr.saturating_add(len).saturating_add(PAGE - 1) & !(PAGE - 1);
        // SAFETY: MADV_POPULATE_WRITE only populates page tables (zero pages for anonymous
        // memory never touched); it reads and writes no byte of the range, so it races with
        // nothing. Errors (unmapped or unsuitable ranges) change nothing and are ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, MADV_POPULATE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (addr, len);
}

fn map_file_advised(
    path: &Path,
    advice: Option<memmap2::Advice>,
) -> Result<(Bytes, Option<std::fs::File>)> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = open_regular(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len == 0 {
        return Ok((Bytes::new(), None));
    }
    // SAFETY: the map is read-only; a file truncated under us by another process makes reads
    // past its new end fault, which `mapped::guard` turns into zeros and a mark that the
    // load's and the save's checks report.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(io)?;
    if let Some(a) = advice {
        // Advice only: a kernel that ignores it reads the same bytes.
        let _ = map.advise(a);
    }
    Ok((crate::formats::mapped::guard(map, &file, path), Some(file)))
}

#[cfg(test)]
mod prefault_tests {
    /// Asking for the pages of a buffer, written or not, changes none of its bytes.
    #[test]
    fn a_prefault_keeps_the_bytes() {
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 22);
        buf.extend((0..(1 << 21)).map(|i| (i % 251) as u8));
        let spare = buf.spare_capacity_mut();
        let (at, len) = (spare.as_ptr() as usize, spare.len());
        // The written half and the untouched half, over a page's edge.
        super::prefault_for_write(buf.as_ptr() as usize + 100, 1 << 21);
        super::prefault_for_write(at, len);
        assert!(buf.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8));
        buf.extend(std::iter::repeat_n(7u8, 1 << 21));
        assert!(buf[1 << 21..].iter().all(|&b| b == 7));
    }
}
