//! Writing OpenVINO IR: the untouched file as it was read, or the source text with splices and a compacted `.bin`.

use super::read::packed_size;
use super::*;
use petgraph::visit::{EdgeIndexable, NodeIndexable};
use std::borrow::Cow;

mod big_const;
mod edit;
mod writer;

use edit::*;
use writer::Writer;

/// The IR `precision` name of a port of element type `d`.
pub(super) fn precision_name(d: DType) -> String {
    match d {
        DType::Bool => "BOOL".to_string(),
        DType::F32 => "FP32".to_string(),
        DType::F16 => "FP16".to_string(),
        DType::F64 => "FP64".to_string(),
        other => other.ov_name().to_ascii_uppercase(),
    }
}

impl OvModel {
    /// What would be written: the `.xml` as pieces and the `.bin` as parts.
    pub(super) fn plan(&self) -> Result<(Vec<Piece>, Vec<BinPart>)> {
        let bin = self.bin.clone().unwrap_or_default();
        if self.is_untouched() {
            let whole = vec![BinPart::Original(0..bin.len())];
            return Ok((vec![Piece::Source(0..self.source.len())], whole));
        }
        let mut w = Writer::new(self, bin);
        let pieces = w.rebuild()?;
        Ok((pieces, w.bin_parts()))
    }
}

/// A part of a written file.
pub(super) enum Out<'a> {
    /// A byte range of the file read.
    Original(Range<usize>),
    /// New bytes.
    New(&'a [u8]),
}

/// Ranges at least this long are copied file to file.
pub(super) const COPY_MIN: usize = 1 << 16;

/// Writes `parts` to a temporary file beside `target`, to be renamed over it by
/// [`crate::formats::output::commit`]. Original ranges come from `orig` (the map of the file
/// read), or, for long ones, straight from `orig_file` while it is still that file (see
/// [`crate::formats::copy`]); the writes run on a writer thread.
pub(super) fn stage_copying<'a>(
    target: &Path,
    parts: impl Iterator<Item = Out<'a>>,
    orig: &'a Bytes,
    orig_file: Option<&FileId>,
) -> Result<crate::formats::output::Staged> {
    let tmp = crate::formats::output::Staged::new(target)?;
    write_parts(&tmp, parts, orig, orig_file)?;
    Ok(tmp)
}

/// [`stage_copying`], giving back the pages of `orig` that lazy bytes were produced from once
/// the output has moved past them (see [`write_parts_releasing`]).
///
/// # Safety
/// As [`write_parts_releasing`].
pub(super) unsafe fn stage_copying_releasing<'a>(
    target: &Path,
    parts: impl Iterator<Item = Out<'a>>,
    orig: &'a Bytes,
    orig_file: Option<&FileId>,
) -> Result<crate::formats::output::Staged> {
    let tmp = crate::formats::output::Staged::new(target)?;
    // SAFETY: passed on from the caller.
    unsafe { write_parts_releasing(&tmp, parts, orig, orig_file)? };
    Ok(tmp)
}

/// Writes `parts` to `tmp` from its current position (see [`stage_copying`]).
pub(super) fn write_parts<'a>(
    tmp: &crate::formats::output::Staged,
    parts: impl Iterator<Item = Out<'a>>,
    orig: &'a Bytes,
    orig_file: Option<&FileId>,
) -> Result<()> {
    write_parts_with(tmp, parts, orig, orig_file, None)
}

/// [`write_parts`], giving back the pages of `orig` that lazy bytes (a folded slice of a
/// weight) were produced from, behind the runs as they are produced: a save that folds most
/// of a big `.bin` does not end up holding the whole `.bin` in its resident set (the pages
/// stay in the page cache; a page read again is mapped again, with the same bytes).
///
/// # Safety
/// `orig` must be a whole read-only shared map of a file (as [`OvModel::load`] maps the
/// `.bin`) whose contents nothing changes while it is written: giving back a page of anything
/// else (a heap buffer) would lose its contents.
pub(super) unsafe fn write_parts_releasing<'a>(
    tmp: &crate::formats::output::Staged,
    parts: impl Iterator<Item = Out<'a>>,
    orig: &'a Bytes,
    orig_file: Option<&FileId>,
) -> Result<()> {
    write_parts_with(tmp, parts, orig, orig_file, Some(Releaser::new(orig)))
}

/// Pages of the map lazy runs were read from, given back behind the output (see
/// [`write_parts_releasing`]).
struct Releaser<'a> {
    map: &'a [u8],
    /// Offsets in `map` read since the pages were last given back: `(lowest, highest end)`.
    span: Option<(usize, usize)>,
    /// Bytes read since the pages were last given back.
    read: usize,
}

/// Pages behind lazy runs are given back after about this many bytes were read.
const RELEASE_EVERY: usize = 4 << 20;

impl<'a> Releaser<'a> {
    fn new(map: &'a [u8]) -> Releaser<'a> {
        Releaser {
            map,
            span: None,
            read: 0,
        }
    }

    /// Notes that `b` was read (copied into the output buffer); every [`RELEASE_EVERY`]
    /// bytes, gives back the pages read before `b`'s (those after it too, for runs read
    /// back to front), keeping `b`'s own.
    fn read(&mut self, b: &[u8]) {
        let base = self.map.as_ptr() as usize;
        let p = b.as_ptr() as usize;
        if b.is_empty() || p < base || p - base + b.len() > self.map.len() {
            // Not bytes of the map.
            return;
        }
        let (start, end) = (p - base, p - base + b.len());
        let (lo, hi) = match self.span {
            Some((lo, hi)) => (lo.min(start), hi.max(end)),
            None => (start, end),
        };
        self.span = Some((lo, hi));
        self.read += b.len();
        if self.read < RELEASE_EVERY {
            return;
        }
        // Whole pages below `b`'s first page, and from the page after `b`'s last byte.
        self.give_back(page_floor(lo), page_floor(start));
        self.give_back(page_floor(end - 1) + PAGE, hi);
        self.span = Some((start, end));
        self.read = 0;
    }

    /// Gives back every page read since the last time (at the end of the writes).
    fn finish(&mut self) {
        if let Some((lo, hi)) = self.span.take() {
            self.give_back(page_floor(lo), hi);
        }
        self.read = 0;
    }

    /// Gives back the pages of `map[from..to]` (`from` on a page boundary; the last page is
    /// given back whole).
    fn give_back(&self, from: usize, to: usize) {
        if from >= to {
            return;
        }
        if let Some(range) = self.map.get(from..to.min(self.map.len())) {
            // SAFETY: `write_parts_releasing`'s caller vouched that `map` is a whole read-only
            // shared file map; `from` is a multiple of the page size and the map starts on a
            // page.
            unsafe { crate::formats::fs::release_resident_range(range) };
        }
    }
}

const PAGE: usize = 4096;

fn page_floor(off: usize) -> usize {
    off / PAGE * PAGE
}

/// [`write_parts`], with `release` given (see [`write_parts_releasing`]).
fn write_parts_with<'a>(
    tmp: &crate::formats::output::Staged,
    parts: impl Iterator<Item = Out<'a>>,
    orig: &'a Bytes,
    orig_file: Option<&FileId>,
    mut release: Option<Releaser<'_>>,
) -> Result<()> {
    const FLUSH_AT: usize = 1 << 20;
    let io = |source| Error::Io {
        path: tmp.target().to_path_buf(),
        source,
    };
    let from = orig_file.and_then(|p| same_file(p, orig));
    crate::formats::copy::with_sink(tmp.as_file(), |sink| {
        let mut buf = sink.data_buf(FLUSH_AT);
        for p in parts {
            let b: &'a [u8] = match p {
                Out::Original(r) => {
                    if let (Some(f), true) = (from.as_ref(), r.len() >= COPY_MIN) {
                        sink.flush_buf(&mut buf, FLUSH_AT)?;
                        sink.copy(f, r.start as u64, r.len() as u64)?;
                        continue;
                    }
                    orig.get(r).unwrap_or_default()
                }
                Out::New(b) => {
                    if let Some(l) = crate::ir::Lazy::behind(b) {
                        // Lazy bytes (a folded slice): produced run by run into the buffer.
                        let mut result = Ok(());
                        l.producer().runs(&mut |mut run: &[u8]| {
                            while !run.is_empty() && result.is_ok() {
                                let room = FLUSH_AT.saturating_sub(buf.len()).max(1);
                                let (now, rest) = run.split_at(room.min(run.len()));
                                buf.extend_from_slice(now);
                                if let Some(r) = release.as_mut() {
                                    r.read(now);
                                }
                                run = rest;
                                if buf.len() >= FLUSH_AT {
                                    result = sink.flush_buf(&mut buf, FLUSH_AT);
                                }
                            }
                        });
                        result?;
                        continue;
                    }
                    b
                }
            };
            if b.len() >= COPY_MIN {
                // Long: written from where it is, not through the buffer.
                sink.flush_buf(&mut buf, FLUSH_AT)?;
                sink.slice(b)?;
            } else {
                buf.extend_from_slice(b);
                if buf.len() >= FLUSH_AT {
                    sink.flush_buf(&mut buf, FLUSH_AT)?;
                }
            }
        }
        if let Some(r) = release.as_mut() {
            r.finish();
        }
        sink.data(buf)
    })
    .map_err(io)
}

/// The XML identity a node gets in the written file (an original layer's port lists are
/// borrowed from its record while the node has as many ports as the layer had).
#[derive(Debug, Clone)]
pub(super) struct Placed<'a> {
    id: i64,
    inputs: Cow<'a, [i64]>,
    outputs: Cow<'a, [i64]>,
}

/// Where each node is placed, indexed by node index (dense: a 600,000-layer model looks
/// nodes up millions of times while writing).
type Places<'a> = Vec<Option<Placed<'a>>>;

/// A `.bin` at least this long keeps its layout when little of it is no longer referenced
/// ([`keeps_layout`]).
pub(super) const KEEP_LAYOUT_MIN: u64 = 64 << 20;

/// Whether a `.bin` of `len` bytes, `referenced` of which are still used by a constant, is
/// written with its layout unchanged (every byte where it was, new constants after the end)
/// rather than compacted: when it is at least [`KEEP_LAYOUT_MIN`] bytes and at most 1/256 of it
/// is left unreferenced. Kept whole, the `.bin` is one file-to-file copy that can start before
/// the model is loaded ([`super::BinCopy`]); the price is at most 0.4 % of the file in bytes
/// nothing reads (as when a body changes, which keeps the whole `.bin` too). Measured on
/// `big_1gb.xml` (256 KB of 1 GB no longer referenced after the default passes), best of 3 in
/// two bench runs: 0.267 and 0.289 s with the copy started at load, `cp` 0.262 and 0.277 s;
/// compacted, 0.41-0.50 s in the runs before (`bench/RESULTS.md`).
pub(super) fn keeps_layout(len: u64, referenced: u64) -> bool {
    len >= KEEP_LAYOUT_MIN && len.saturating_sub(referenced) <= len / 256
}

/// The kept ranges of the original `.bin` and where they go in the written one.
#[derive(Debug, Default)]
pub(super) struct Compaction {
    /// Disjoint, sorted `(old start, old end, new start)`.
    kept: Vec<(u64, u64, u64)>,
    /// Total size of the kept ranges.
    len: u64,
}

impl Compaction {
    /// Merges the referenced `(offset, size)` ranges (overlapping or touching ranges become one,
    /// so shared bytes stay shared); empty ranges keep nothing.
    fn new(mut refs: Vec<(u64, u64)>) -> Compaction {
        refs.retain(|&(_, size)| size > 0);
        refs.sort_unstable();
        let mut kept: Vec<(u64, u64, u64)> = Vec::new();
        let mut len = 0u64;
        for (off, size) in refs {
            let end = off.saturating_add(size);
            match kept.last_mut() {
                Some(last) if off <= last.1 => {
                    if end > last.1 {
                        len += end - last.1;
                        last.1 = end;
                    }
                }
                _ => {
                    kept.push((off, end, len));
                    len += end - off;
                }
            }
        }
        Compaction { kept, len }
    }

    /// Where original offset `off` is in the compacted `.bin` (an offset in a dropped gap maps
    /// to where the gap was, which only empty ranges use).
    fn map(&self, off: u64) -> u64 {
        let i = self.kept.partition_point(|&(start, _, _)| start <= off);
        match i.checked_sub(1).map(|i| self.kept[i]) {
            Some((start, end, new)) => new + (off.min(end) - start),
            None => 0,
        }
    }

    /// True when nothing moves: the kept bytes are the whole `.bin` of `len` bytes.
    fn is_whole(&self, len: u64) -> bool {
        self.len == len
    }
}

#[cfg(test)]
mod tests;
