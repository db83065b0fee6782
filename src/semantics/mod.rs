//! Pure slice semantics: decoding of every slice op into one canonical plan, resolution of a plan
//! against (possibly symbolic) dims, and evaluation of a plan as a list of selected flat indices.

/// Invalid slice parameters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SliceError {
    #[error("{0}")]
    Invalid(String),
}
