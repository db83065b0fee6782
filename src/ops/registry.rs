//! The ops slice-opt evaluates on constants, in one table: op name × dialect → what the op
//! needs before it can be evaluated (constant inputs, or only its input's dims), and the
//! function computing its value from typed attributes ([`super::attrs`]) and the evaluator
//! ([`super::eval`]). The `fold` pass looks a node up here.
//!
//! The rows are not written here: each family file of `ops/eval/` declares its own (`OPS`, next
//! to the functions they name), and [`OPS`] is their concatenation, made at compile time. To
//! fold a new op, add its row and its function to the `eval/` file of its family (a new family:
//! a new file there, its `pub mod` in `eval/mod.rs` and its line in [`FAMILIES`]).
//!
//! Slices are not in the table: recognising and decoding them needs the graph
//! (`shape::slice_node`), and `fold` evaluates them with [`super::eval::slice`] directly.

use super::attrs::AttrError;
use super::eval::{self, EvalError};
use crate::ir::{Format, Node, Tensor};

/// What a node must offer before its op can be evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Every connected input is a constant ([`Inputs::consts`]).
    Constants,
    /// The dims of input 0 are all known ([`Inputs::dims`]); the inputs need not be constant.
    InputDims,
}

/// What an evaluation function reads.
pub struct Inputs<'a> {
    pub node: &'a Node,
    pub dialect: Format,
    /// One per input port (`None`: the port is not connected); empty unless
    /// [`Needs::Constants`].
    pub consts: &'a [Option<&'a Tensor>],
    /// The dims of input 0; empty unless [`Needs::InputDims`].
    pub dims: &'a [u64],
    /// A tensor attribute the IR does not keep (ONNX `ConstantOfShape`'s `value`), read from
    /// the node's record.
    pub tensor_attr: &'a dyn Fn(&str) -> Option<Tensor>,
    /// The largest result, in bytes.
    pub limit: u64,
}

impl Inputs<'_> {
    /// The constant at input `port`, if connected.
    pub fn input(&self, port: usize) -> Option<&Tensor> {
        self.consts.get(port).copied().flatten()
    }
}

/// Why a node was not evaluated.
#[derive(Debug, Clone, PartialEq)]
pub enum NoEval {
    /// Nothing to report: an input is missing or of a kind this op is not evaluated for.
    Silent,
    /// Worth reporting (too large, unsupported type or attribute...).
    Skip(String),
}

impl From<EvalError> for NoEval {
    fn from(e: EvalError) -> Self {
        NoEval::Skip(e.to_string())
    }
}

impl From<AttrError> for NoEval {
    fn from(e: AttrError) -> Self {
        NoEval::Skip(e.to_string())
    }
}

/// An attribute check made before the inputs are looked at.
pub type Precheck = fn(&Node) -> Result<(), AttrError>;

/// Computes a node's value.
pub type EvalFn = fn(&Inputs) -> Result<Tensor, NoEval>;

/// One row of [`OPS`].
#[derive(Clone, Copy)]
pub struct OpEntry {
    pub op: &'static str,
    pub dialect: Format,
    pub needs: Needs,
    /// An attribute check made before the inputs are looked at: its refusal is reported even
    /// when the inputs are not constant.
    pub precheck: Option<Precheck>,
    pub eval: EvalFn,
}

/// A row needing constant inputs, without a precheck (`OpEntry { needs: …, ..row(…) }` for
/// the others).
pub const fn row(op: &'static str, dialect: Format, eval: EvalFn) -> OpEntry {
    OpEntry {
        op,
        dialect,
        needs: Needs::Constants,
        precheck: None,
        eval,
    }
}

use Format::Onnx;

/// The family files' rows, in the order [`lookup`] tries them.
const FAMILIES: &[&[OpEntry]] = &[
    eval::shape_of::OPS,
    eval::slice::OPS,
    eval::manip::OPS,
    eval::cast::OPS,
    eval::arith::OPS,
    eval::elementwise::OPS,
    eval::float::OPS,
    eval::reduce::OPS,
    eval::transcendental::OPS,
    eval::resize::OPS,
    eval::scatter::OPS,
];

const COUNT: usize = {
    let mut n = 0;
    let mut f = 0;
    while f < FAMILIES.len() {
        n += FAMILIES[f].len();
        f += 1;
    }
    n
};

/// [`FAMILIES`] end to end, as one array (computed at compile time: a lookup scans one table,
/// as when the rows were written here).
const ALL: [OpEntry; COUNT] = {
    let mut all = [FAMILIES[0][0]; COUNT];
    let (mut k, mut f) = (0, 0);
    while f < FAMILIES.len() {
        let mut r = 0;
        while r < FAMILIES[f].len() {
            all[k] = FAMILIES[f][r];
            k += 1;
            r += 1;
        }
        f += 1;
    }
    all
};

/// Every op evaluated on constants. ONNX rows match the default domain (`""` or `ai.onnx`)
/// only; OpenVINO rows every opset.
pub const OPS: &[OpEntry] = &ALL;

/// The row for `node` in a graph of `dialect`, if its op is evaluated.
pub fn lookup(node: &Node, dialect: Format) -> Option<&'static OpEntry> {
    if dialect == Onnx && !(node.domain.is_empty() || node.domain == "ai.onnx") {
        return None;
    }
    // One hash lookup a node instead of a scan of every row (the table has ~70 rows and
    // `fold` asks for every node of the graph).
    static INDEX: std::sync::OnceLock<
        std::collections::HashMap<(bool, &'static str), usize, foldhash::fast::FixedState>,
    > = std::sync::OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut m = std::collections::HashMap::with_hasher(foldhash::fast::FixedState::default());
        for (i, e) in OPS.iter().enumerate() {
            m.entry((e.dialect == Onnx, e.op)).or_insert(i);
        }
        m
    });
    index
        .get(&(dialect == Onnx, node.op_type.as_str()))
        .map(|&i| &OPS[i])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Format::{Onnx, OpenVino};

    /// Each (op, dialect) has one row, and an ONNX node of another domain is not evaluated.
    #[test]
    fn one_row_per_op_and_dialect() {
        for (k, a) in OPS.iter().enumerate() {
            for b in &OPS[k + 1..] {
                assert!(
                    !(a.op == b.op && a.dialect == b.dialect),
                    "{} {:?} twice",
                    a.op,
                    a.dialect
                );
            }
        }
        let mut n = Node::op("n", "Add", "com.microsoft");
        assert!(lookup(&n, Onnx).is_none());
        n.domain = "".into();
        assert_eq!(lookup(&n, Onnx).map(|e| e.op), Some("Add"));
        n.op_type = "Subtract".into();
        assert!(lookup(&n, Onnx).is_none());
        assert!(lookup(&n, OpenVino).is_some());
    }

    /// ONNX Range(3, 9, 3) = [3, 6] (the operator's documented example), through the table.
    #[test]
    fn a_row_evaluates() {
        let n = Node::op("r", "Range", "");
        let s = |v| Tensor::from_i64(vec![], &[v]);
        let (a, b, c) = (s(3), s(9), s(3));
        let consts = [Some(&a), Some(&b), Some(&c)];
        let no_attr = |_: &str| None;
        let e = lookup(&n, Onnx).expect("Range is a row");
        let t = (e.eval)(&Inputs {
            node: &n,
            dialect: Onnx,
            consts: &consts,
            dims: &[],
            tensor_attr: &no_attr,
            limit: 1 << 20,
        })
        .expect("evaluates");
        assert_eq!(t.to_i64_vec().expect("ints"), [3, 6]);
    }
}
