//! [`Rec`]: a record to write, borrowed or owned (a boxed `Cow`).

/// A record to write: borrowed from the record read, or built by a pass.
///
/// Like `Cow`, but an owned record is boxed, so a list of records costs two words per entry
/// whatever the record's size (a `Cow<TensorProto>` is a few hundred bytes: the lists of a
/// graph of a million records were hundreds of megabytes of freshly zeroed pages).
#[derive(Debug, Clone)]
pub enum Rec<'a, M> {
    /// Unchanged: the record read.
    Borrowed(&'a M),
    /// Rebuilt or new.
    Owned(Box<M>),
}

impl<'a, M: Clone> Rec<'a, M> {
    /// A new or rebuilt record.
    pub fn owned(m: M) -> Self {
        Rec::Owned(Box::new(m))
    }

    /// True for a rebuilt or new record.
    pub fn is_owned(&self) -> bool {
        matches!(self, Rec::Owned(_))
    }

    /// The record, cloned when borrowed.
    pub fn into_owned(self) -> M {
        match self {
            Rec::Borrowed(m) => m.clone(),
            Rec::Owned(b) => *b,
        }
    }

    /// The record for changing (a borrowed one is cloned first).
    pub fn to_mut(&mut self) -> &mut M {
        if let Rec::Borrowed(m) = *self {
            *self = Rec::Owned(Box::new(m.clone()));
        }
        match self {
            Rec::Owned(b) => b,
            Rec::Borrowed(_) => unreachable!("a borrowed record was replaced by an owned one"),
        }
    }
}

impl<M> std::ops::Deref for Rec<'_, M> {
    type Target = M;
    fn deref(&self) -> &M {
        match self {
            Rec::Borrowed(m) => m,
            Rec::Owned(b) => b,
        }
    }
}

impl<M> AsRef<M> for Rec<'_, M> {
    fn as_ref(&self) -> &M {
        self
    }
}
