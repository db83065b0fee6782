//! What slice-opt knows about each op apart from its shape rule: its attributes, decoded once
//! from the dialect's spellings ([`attrs`]), and the evaluator of constant tensors ([`eval`],
//! one file per op family, the same families as `shape/`). Below `shape` and `passes`: imports
//! only `ir` and `semantics`.

pub mod attrs;
pub mod eval;
