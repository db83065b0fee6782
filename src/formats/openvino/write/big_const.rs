//! The big new constants of a written `.bin`, told apart by their length and first bytes.

use super::*;

/// How many first bytes of a big new constant are kept to compare it with the next ones (as
/// many as `Lazy::same_as` compares first).
pub(super) const HEAD: usize = 4096;

/// A big new constant of the written `.bin` (see `Writer::big`).
pub(super) struct BigConst {
    pub(super) data: TensorData,
    pub(super) offset: u64,
    /// Its length and first [`HEAD`] bytes, produced once: a constant whose length or first
    /// bytes differ is not the same, and is told apart without producing anything again
    /// (`half_kept.xml`'s 32 folded weights were each produced from their first run to their
    /// last for every comparison: 992 walks of 16,384 runs).
    pub(super) len: usize,
    pub(super) head: Vec<u8>,
}

impl BigConst {
    pub(super) fn new(data: TensorData, offset: u64) -> BigConst {
        let (len, head) = match &data {
            TensorData::Lazy(l) => (l.len(), l.prefix(HEAD)),
            TensorData::Raw(b) => (b.len(), b[..HEAD.min(b.len())].to_vec()),
            TensorData::Strings(_) => (0, Vec::new()),
        };
        BigConst {
            data,
            offset,
            len,
            head,
        }
    }

    /// False when the constant's bytes cannot be `(len, head)`'s (see [`BigConst::head`]).
    pub(super) fn may_be(&self, len: usize, head: &[u8]) -> bool {
        self.len == len && self.head == head
    }
}
