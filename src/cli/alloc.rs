//! The binary's global allocator (mimalloc, capped for `--verify`) and its tuning.

/// mimalloc: loading a model makes millions of small allocations (names, node records);
/// measured on nodes_100k.onnx, see bench/RESULTS.md. Wrapped so that a single allocation above
/// `slice_opt::verify::alloc_limit()` (set only while tract runs a model for `--verify`) fails:
/// tract then panics (caught and reported) instead of taking all memory.
#[global_allocator]
static GLOBAL: Capped = Capped;

struct Capped;

#[cfg(feature = "verify")]
fn alloc_limit() -> usize {
    slice_opt::verify::alloc_limit()
}

#[cfg(not(feature = "verify"))]
fn alloc_limit() -> usize {
    usize::MAX
}

/// Counts a large allocation against `--verify`'s memory budget; false: refuse it (only when
/// `enforce`: on a thread where tract runs for `--verify`).
#[cfg(feature = "verify")]
fn charge(size: usize, enforce: bool) -> bool {
    slice_opt::verify::charge(size, !enforce)
}

#[cfg(feature = "verify")]
fn refund(size: usize) {
    slice_opt::verify::refund(size)
}

#[cfg(not(feature = "verify"))]
fn charge(_: usize, _: bool) -> bool {
    true
}

#[cfg(not(feature = "verify"))]
fn refund(_: usize) {}

// SAFETY: every call is forwarded to mimalloc unchanged, or answered with null (allocation
// failure), which the GlobalAlloc contract allows.
unsafe impl std::alloc::GlobalAlloc for Capped {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        let limit = alloc_limit();
        if layout.size() > limit || !charge(layout.size(), limit != usize::MAX) {
            return std::ptr::null_mut();
        }
        let p = mimalloc::MiMalloc.alloc(layout);
        if p.is_null() {
            refund(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        let limit = alloc_limit();
        if layout.size() > limit || !charge(layout.size(), limit != usize::MAX) {
            return std::ptr::null_mut();
        }
        let p = mimalloc::MiMalloc.alloc_zeroed(layout);
        if p.is_null() {
            refund(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        refund(layout.size());
        mimalloc::MiMalloc.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        let limit = alloc_limit();
        if new_size > limit {
            return std::ptr::null_mut();
        }
        // Counted as the old block freed and the new one allocated; on a refusal or a failure
        // the old block stays, and so does its count.
        refund(layout.size());
        if !charge(new_size, limit != usize::MAX) {
            charge(layout.size(), false);
            return std::ptr::null_mut();
        }
        let p = mimalloc::MiMalloc.realloc(ptr, layout, new_size);
        if p.is_null() {
            refund(new_size);
            charge(layout.size(), false);
        }
        p
    }
}

/// mimalloc's `mi_option_purge_delay`: entry 15 of `mi_option_e` in the mimalloc 3 header that
/// libmimalloc-sys 0.1 builds (which names no constant for it). Its default is 1000 ms.
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    #[cfg(test)]
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
}

/// Has mimalloc give freed memory back to the system after 10 ms instead of 1 s (unless
/// `MIMALLOC_PURGE_DELAY` says otherwise). A run frees its large temporaries (the name maps of
/// a load) before the next phase allocates: given back early, they no longer add to the peak.
/// Measured on the bench models: peak RSS of `wide_100k.onnx` 322 -> 306 MB, `nodes_100k.onnx`
/// 505 -> 477 MB, wall no slower (bench/RESULTS.md).
pub fn purge_freed_memory_early() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets an integer option; mimalloc reads its options at any time.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, 10) };
    }
}

/// Turns transparent huge pages off for this process (Linux `PR_SET_THP_DISABLE`).
/// mimalloc asks for huge pages on its arenas; a 2 MiB page is resident as soon as one byte of
/// it is written, so the peak counted every part-used page whole, and a purge (see
/// [`purge_freed_memory_early`]) split and gave back pages that were then faulted in again.
/// Measured on wide_sym_100k.onnx: peak RSS 217 -> 209 MiB, CPU time 3-28 % lower depending on
/// the machine's state (bench/RESULTS.md, issue 44 acceptance 2). A no-op elsewhere.
pub fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: sets a flag of the calling process; no pointer is passed.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_purge_delay_option_is_the_one_set() {
        // Option 15 is mimalloc's purge delay: its documented default (1000 ms, or what the
        // environment says) before the tool sets it, 10 after.
        let default = std::env::var("MIMALLOC_PURGE_DELAY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        // SAFETY: reads an integer option.
        assert_eq!(unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }, default);
        purge_freed_memory_early();
        let want = if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            default
        } else {
            10
        };
        // SAFETY: as above.
        assert_eq!(unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) }, want);
    }
}
