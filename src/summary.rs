//! The summary of one run, like onnxsim's: op counts before and after, model size before and
//! after, time. The command line prints it as a table (silenced by `-q`), `--report` writes the
//! same numbers as JSON (the report's `summary` field).
//!
//! ```
//! use slice_opt::{summary::Summary, Model, Pipeline};
//! let mut model = Model::load("models/const_weight_slice.onnx".as_ref())?;
//! let before = slice_opt::summary::op_rows(&model);
//! Pipeline::new().run(&mut model)?;
//! let s = Summary::new(&before, &model, 100, 90, 0.01);
//! let slice = s.ops.iter().find(|r| r.op == "Slice").unwrap();
//! assert_eq!((slice.before, slice.after), (1, 0));
//! println!("{}", s.table());
//! # Ok::<(), slice_opt::Error>(())
//! ```

use serde::Serialize;

use std::collections::BTreeMap;

use crate::formats::{Format, Model};
use crate::ir::{NodeKind, Origin};
use crate::shape::slice_node::{SLICE, STRIDED_SLICE};

/// The rows of the table, and the op types each counts (ONNX name, OpenVINO IR name).
pub const ROWS: &[(&str, &[&str])] = &[
    (SLICE, &[SLICE]),
    (STRIDED_SLICE, &[STRIDED_SLICE]),
    ("Reshape", &["Reshape"]),
    // `simplify` turns disjoint slices of one source into one Split / VariadicSplit.
    ("Split", &["Split", "VariadicSplit"]),
    ("Shape", &["Shape", "ShapeOf"]),
    ("Gather", &["Gather"]),
    ("Constant", &["Constant", "Const"]),
];

/// One op row: how many nodes of the op before and after the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpRow {
    pub op: String,
    pub before: usize,
    pub after: usize,
}

/// The numbers of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// One row per entry of [`ROWS`], in that order.
    pub ops: Vec<OpRow>,
    /// Operation nodes of the main graph (inputs, outputs and initializers not counted).
    pub nodes_before: usize,
    pub nodes_after: usize,
    /// Model size in bytes: the model file plus, for IR, its `.bin` (ONNX external data not
    /// included); for a model given as bytes, the serialized size.
    pub bytes_before: u64,
    pub bytes_after: u64,
    /// Wall time of the run (load, passes, verification, save), seconds.
    pub seconds: f64,
}

/// The counts [`Summary::new`] needs from the model before the run: `(row, count)` per entry
/// of [`ROWS`], then `("nodes", total)`. Nodes are counted as the file has them: ONNX
/// `graph.node` (a `Constant` node counts, an initializer does not), IR `<layer>`s other than
/// `Parameter` and `Result` (every `Const` counts).
pub fn op_rows(model: &Model) -> Vec<(&'static str, usize)> {
    let ir = model.format() == Format::OpenVino;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut total = 0;
    for n in model.graph().g.node_weights() {
        let op = match (&n.kind, n.origin) {
            (NodeKind::Op, _) if ir && matches!(n.op_type.as_str(), "Parameter" | "Result") => {
                continue
            }
            (NodeKind::Op, _) => n.op_type.as_str(),
            (NodeKind::Const(_), Origin::OnnxNode(_) | Origin::OvLayer(_)) => "Constant",
            (NodeKind::Const(_), Origin::New) if ir => "Constant",
            _ => continue,
        };
        total += 1;
        *counts.entry(op).or_insert(0) += 1;
    }
    let mut out: Vec<(&'static str, usize)> = ROWS
        .iter()
        .map(|(row, ops)| {
            (
                *row,
                ops.iter()
                    .map(|o| counts.get(*o).copied().unwrap_or(0))
                    .sum(),
            )
        })
        .collect();
    out.push(("nodes", total));
    out
}

impl Summary {
    /// The summary from the counts taken before the run ([`op_rows`]) and the model after it.
    pub fn new(
        before: &[(&'static str, usize)],
        after: &Model,
        bytes_before: u64,
        bytes_after: u64,
        seconds: f64,
    ) -> Summary {
        let after = op_rows(after);
        let get = |rows: &[(&'static str, usize)], k: &str| {
            rows.iter()
                .find(|(r, _)| *r == k)
                .map(|(_, n)| *n)
                .unwrap_or(0)
        };
        Summary {
            ops: ROWS
                .iter()
                .map(|(row, _)| OpRow {
                    op: row.to_string(),
                    before: get(before, row),
                    after: get(&after, row),
                })
                .collect(),
            nodes_before: get(before, "nodes"),
            nodes_after: get(&after, "nodes"),
            bytes_before,
            bytes_after,
            seconds,
        }
    }

    /// The table the command line prints.
    pub fn table(&self) -> String {
        let mut rows: Vec<[String; 3]> = vec![["".into(), "before".into(), "after".into()]];
        for r in &self.ops {
            rows.push([r.op.clone(), r.before.to_string(), r.after.to_string()]);
        }
        rows.push([
            "total nodes".into(),
            self.nodes_before.to_string(),
            self.nodes_after.to_string(),
        ]);
        rows.push([
            "model size".into(),
            human_bytes(self.bytes_before),
            human_bytes(self.bytes_after),
        ]);
        let w0 = rows.iter().map(|r| r[0].len()).max().unwrap_or(0);
        let w1 = rows.iter().map(|r| r[1].len()).max().unwrap_or(0);
        let w2 = rows.iter().map(|r| r[2].len()).max().unwrap_or(0);
        let rule = format!(
            "+-{}-+-{}-+-{}-+",
            "-".repeat(w0),
            "-".repeat(w1),
            "-".repeat(w2)
        );
        let mut out = vec![rule.clone()];
        for (i, r) in rows.iter().enumerate() {
            out.push(format!("| {:w0$} | {:>w1$} | {:>w2$} |", r[0], r[1], r[2]));
            if i == 0 || i == self.ops.len() {
                out.push(rule.clone());
            }
        }
        out.push(rule);
        out.push(format!("time: {:.2}s", self.seconds));
        out.join("\n")
    }
}

/// `1234` → `1.2 KiB`.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}
