//! What slice-opt knows about each op apart from its shape rule: the evaluator of constant
//! tensors ([`eval`], one file per op family, the same families as `shape/`). Below `shape`
//! and `passes`: imports only `ir` and `semantics`.

pub mod eval;
