//! What slice-opt knows about each op apart from its shape rule: its attributes, decoded once
//! from the dialect's spellings ([`attrs`]); the evaluator of constant tensors ([`eval`], one
//! file per op family, the same families as `shape/`); and the table of ops evaluated on
//! constants, which `fold` looks up ([`registry`]). Below `shape` and `passes`: imports only
//! `ir` and `semantics`.

pub mod attrs;
pub mod eval;
pub mod registry;
