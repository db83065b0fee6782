//! Where a save's bytes go: a writer thread that owns the output file's writes, fed in order
//! by the thread that encodes the model ([`with_sink`]).
//!
//! Most of a big model's output is unchanged stretches of the input (tensor data), copied from
//! the input file. On Linux `copy_file_range` copies them without bringing the pages into this
//! process, at `cp`'s speed, but only when a range lands at the same offset modulo the page
//! size as it was read from. A shifted range (a pass changed a record before it, so the output
//! is shorter or longer there) goes through the kernel's splice path at less than half that
//! speed: 1 GB in 2.3-2.6x `cp`'s time, measured on ext4 with Linux 6.18. A shifted range is
//! therefore read into 512 KB buffers (`pread`) by the encoding thread and written by the
//! writer thread while the next ones are read. Measured on the same machine, 1 GB this way:
//! - 512 KB reads and writes: 0.9-1.1x `cp`'s time;
//! - 2 MB writes: from 0.8x to over 5x from one run to the next (a write that long makes the
//!   kernel allocate large page-cache folios);
//! - 64 KB writes: about 1.5x (more system calls);
//! - one thread, reading then writing 512 KB at a time: 1.2-2.6x.
//!
//! Small records are encoded into a buffer that is handed to the writer thread whole, so the
//! encoding of the rest of the model overlaps the writes too. The resident set stays at a few
//! buffers whatever the size of the copy.

use std::fs::File;
use std::io::{self, Seek, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};

use bytes::Bytes;

/// The page size the alignment is judged by.
const PAGE: u64 = 4096;
/// The buffers a shifted range is read into (and written from).
const CHUNK: usize = 512 << 10;
/// Writes queued for the writer thread at most (each a buffer, or a range borrowed or copied
/// file to file).
const DEPTH: usize = 8;

/// One write, in output order.
enum Op<'s> {
    /// Encoded bytes (the buffer comes back to be filled again).
    Data(Vec<u8>),
    /// The first `.1` bytes of a chunk read from a source file (the buffer comes back).
    Chunk(Vec<u8>, usize),
    /// Bytes borrowed for the whole save.
    Slice(&'s [u8]),
    /// Shared bytes.
    Bytes(Bytes),
    /// `len` bytes of `from` at `at`, landing at the same offset modulo the page size:
    /// copied file to file.
    Copy { from: &'s File, at: u64, len: u64 },
}

/// The encoding side of a save: queues writes for the writer thread (see the module docs).
/// Every method fails once the writer has failed; [`with_sink`] then returns the writer's
/// error.
pub(crate) struct Sink<'s> {
    tx: SyncSender<Op<'s>>,
    /// Buffers the writer is done with: encoded data (cleared), chunks (full length).
    spare_data: Receiver<Vec<u8>>,
    spare_chunks: Receiver<Vec<u8>>,
    /// Offset in the output of the next byte queued.
    pos: u64,
}

fn writer_gone() -> io::Error {
    io::Error::other("the output writer stopped")
}

impl<'s> Sink<'s> {
    fn send(&mut self, op: Op<'s>, len: u64) -> io::Result<()> {
        self.tx.send(op).map_err(|_| writer_gone())?;
        self.pos += len;
        Ok(())
    }

    /// An empty buffer of at least `cap` bytes' capacity to encode into (one the writer
    /// has finished with when there is one).
    pub(crate) fn data_buf(&mut self, cap: usize) -> Vec<u8> {
        match self.spare_data.try_recv() {
            Ok(mut b) => {
                b.clear();
                b.reserve(cap);
                b
            }
            Err(_) => Vec::with_capacity(cap),
        }
    }

    /// Queues encoded bytes (nothing for an empty buffer).
    pub(crate) fn data(&mut self, b: Vec<u8>) -> io::Result<()> {
        if b.is_empty() {
            return Ok(());
        }
        let n = b.len() as u64;
        self.send(Op::Data(b), n)
    }

    /// Queues the bytes of `buf` and leaves it an empty buffer of at least `cap` bytes'
    /// capacity (see [`Sink::data_buf`]).
    pub(crate) fn flush_buf(&mut self, buf: &mut Vec<u8>, cap: usize) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        let next = self.data_buf(cap);
        self.data(std::mem::replace(buf, next))
    }

    /// Queues bytes borrowed for the whole save.
    pub(crate) fn slice(&mut self, b: &'s [u8]) -> io::Result<()> {
        if b.is_empty() {
            return Ok(());
        }
        self.send(Op::Slice(b), b.len() as u64)
    }

    /// Queues shared bytes.
    pub(crate) fn bytes(&mut self, b: &Bytes) -> io::Result<()> {
        if b.is_empty() {
            return Ok(());
        }
        self.send(Op::Bytes(b.clone()), b.len() as u64)
    }

    /// Queues `len` bytes of `from` starting at `at`. Fails with `UnexpectedEof` (here or
    /// from the writer) when `from` ends first.
    pub(crate) fn copy(&mut self, from: &'s File, at: u64, len: u64) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        if at % PAGE == self.pos % PAGE {
            return self.send(Op::Copy { from, at, len }, len);
        }
        let mut done = 0u64;
        while done < len {
            let want = usize::try_from(len - done).map_or(CHUNK, |r| r.min(CHUNK));
            let mut buf = match self.spare_chunks.try_recv() {
                Ok(b) => b,
                Err(_) => vec![0; CHUNK],
            };
            let got = read_full(from, &mut buf[..want], at + done)?;
            if got < want {
                return Err(shrank(done + got as u64, len));
            }
            self.send(Op::Chunk(buf, got), got as u64)?;
            done += got as u64;
        }
        Ok(())
    }
}

fn shrank(copied: u64, want: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("source file shrank: copied {copied} of {want} bytes"),
    )
}

/// Runs `f` with a [`Sink`] writing to `out` from its current position, on a writer thread
/// that lives as long as `f` runs; returns once every queued write is done. The writer's
/// error, if it failed, is returned in preference to `f`'s (which is then only that the
/// writer stopped).
pub(crate) fn with_sink<'s, T>(
    out: &'s File,
    f: impl FnOnce(&mut Sink<'s>) -> io::Result<T>,
) -> io::Result<T> {
    let pos = (&mut &*out).stream_position()?;
    let (tx, rx) = sync_channel(DEPTH);
    let (data_tx, spare_data) = channel();
    let (chunk_tx, spare_chunks) = channel();
    std::thread::scope(|s| {
        let writer = std::thread::Builder::new()
            .name("slice-opt-writer".into())
            .spawn_scoped(s, move || write_ops(out, rx, data_tx, chunk_tx))?;
        let mut sink = Sink {
            tx,
            spare_data,
            spare_chunks,
            pos,
        };
        let r = f(&mut sink);
        // The writer ends when the queue is closed and empty.
        drop(sink);
        let w = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the output writer panicked")));
        match (r, w) {
            (Ok(v), Ok(())) => Ok(v),
            (_, Err(e)) | (Err(e), Ok(())) => Err(e),
        }
    })
}

/// The writer thread: every op in order; buffers go back to the encoding side.
fn write_ops(
    out: &File,
    rx: Receiver<Op<'_>>,
    data_tx: Sender<Vec<u8>>,
    chunk_tx: Sender<Vec<u8>>,
) -> io::Result<()> {
    let mut w = out;
    for op in rx {
        match op {
            Op::Data(b) => {
                w.write_all(&b)?;
                let _ = data_tx.send(b);
            }
            Op::Chunk(b, n) => {
                w.write_all(&b[..n])?;
                let _ = chunk_tx.send(b);
            }
            Op::Slice(b) => w.write_all(b)?,
            Op::Bytes(b) => w.write_all(&b)?,
            Op::Copy { from, at, len } => {
                let mut src = from;
                src.seek(io::SeekFrom::Start(at))?;
                // File to file: `std::io::copy` uses copy_file_range / sendfile where it can.
                let n = io::copy(&mut io::Read::take(src, len), &mut w)?;
                if n != len {
                    return Err(shrank(n, len));
                }
            }
        }
    }
    Ok(())
}

/// Reads into `buf` from `at` until it is full or the file ends; the bytes read.
fn read_full(from: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match read_at(from, &mut buf[n..], at + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(unix)]
fn read_at(f: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, at)
}

#[cfg(windows)]
fn read_at(f: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(f, buf, at)
}

#[cfg(not(any(unix, windows)))]
fn read_at(f: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    let mut src = f;
    src.seek(io::SeekFrom::Start(at))?;
    io::Read::read(&mut src, buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 + i / 251) as u8).collect()
    }

    fn contents(f: &mut File) -> Vec<u8> {
        let mut got = Vec::new();
        f.seek(io::SeekFrom::Start(0)).unwrap();
        f.read_to_end(&mut got).unwrap();
        got
    }

    /// Copies at every alignment of source and destination (ranges shorter and longer than
    /// a chunk) between encoded bytes, slices and shared bytes: the file is what was queued,
    /// in order.
    #[test]
    fn writes_in_order_at_every_alignment() {
        let data = pattern(3 * CHUNK + 12_345);
        let mut src = tempfile::tempfile().unwrap();
        src.write_all(&data).unwrap();
        let n = data.len() as u64;
        let extra = pattern(5000);
        let shared = Bytes::from(vec![0x55u8; 70_000]);
        let copies = [
            (0, n),
            (4096, 10_000),
            (1, 4095),
            (4103, 2 * CHUNK as u64 + 5),
            (100, 3 * CHUNK as u64),
            (n - 10, 10),
            (7, 0),
        ];
        let mut out = tempfile::tempfile().unwrap();
        out.write_all(b"prefix").unwrap();
        let mut want = b"prefix".to_vec();
        with_sink(&out, |sink| {
            for (k, &(at, len)) in copies.iter().enumerate() {
                let mut b = sink.data_buf(16);
                b.extend_from_slice(&extra[..k * 700 + 1]);
                sink.data(b)?;
                want.extend_from_slice(&extra[..k * 700 + 1]);
                sink.copy(&src, at, len)?;
                want.extend_from_slice(&data[at as usize..(at + len) as usize]);
                sink.slice(&extra[k..k + 3])?;
                want.extend_from_slice(&extra[k..k + 3]);
                sink.bytes(&shared)?;
                want.extend_from_slice(&shared);
            }
            Ok(())
        })
        .unwrap();
        let got = contents(&mut out);
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the output differs from what was queued");
    }

    /// A copy past the end of the source fails, aligned (in the writer) or shifted (in the
    /// encoding thread), with `UnexpectedEof`.
    #[test]
    fn a_copy_past_the_end_fails() {
        let mut src = tempfile::tempfile().unwrap();
        src.write_all(&pattern(10_000)).unwrap();
        for shift in [0usize, 3] {
            let mut out = tempfile::tempfile().unwrap();
            out.write_all(&vec![1; shift]).unwrap();
            let e = with_sink(&out, |sink| sink.copy(&src, 0, 20_000)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof, "shift {shift}: {e}");
        }
    }

    /// The writer's error is the one returned (here: the output is read-only).
    #[test]
    fn the_writers_error_is_returned() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("ro");
        std::fs::write(&p, b"x").unwrap();
        let out = File::open(&p).unwrap();
        let e = with_sink(&out, |sink| {
            for _ in 0..100 {
                let mut b = sink.data_buf(8);
                b.extend_from_slice(b"12345678");
                sink.data(b)?;
            }
            Ok(())
        })
        .unwrap_err();
        assert_ne!(e.to_string(), writer_gone().to_string());
    }
}
