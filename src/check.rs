//! `check` and `info`: declared versus inferred shapes of every slice node, and a summary of a
//! model.
//!
//! ```
//! let model = slice_opt::Model::load("models/last_token.tf.xml".as_ref())?;
//! let report = slice_opt::check::check(&model);
//! for row in &report.rows {
//!     println!("{} {} {:?}", row.node, row.op, row.verdict);
//! }
//! assert!(report.passed());
//! # Ok::<(), slice_opt::Error>(())
//! ```

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::formats::{Format, Model};
use crate::ir::{DeclaredDim, NodeKind};
use crate::semantics::{AxisPlan, Bound, Dim, SlicePlan};
use crate::shape;
use crate::shape::slice_node::{self, DecodeError};

/// The verdict on one slice node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Declared and inferred shapes agree (symbolic dims compared as expressions).
    Ok,
    /// The model declares no shape; ours is shown.
    Undeclared,
    /// Not enough is known to infer a shape (the reason is given).
    Unknown,
    /// Declared and inferred shapes agree, and we know more than the model declares (a value or
    /// an expression where it declares `?` or a fresh name, a narrower interval).
    Tighter,
    /// Declared and inferred shapes disagree.
    Mismatch,
    /// The node's parameters are invalid.
    Invalid,
}

/// One row of the check table.
#[derive(Debug, Clone, Serialize)]
pub struct CheckRow {
    pub node: String,
    /// Where the node is: its name at the top level (`If_3/then_branch/Slice_7` inside bodies).
    pub path: String,
    pub op: String,
    pub declared: String,
    pub inferred: String,
    /// The propagated shape of the data input (`?` when its rank is unknown).
    pub input: String,
    pub verdict: Verdict,
    /// Why, for anything but `ok`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// A warning on a node whose result depends on the runtime (OpenVINO StridedSlice-1 with a
    /// shrink + begin_mask entry: see `passes::rewrite::ov_shrink_begin_mask_warning`; an ONNX
    /// Slice the runtimes read differently: `passes::slice_node::runtime_split_warning`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub warning: String,
}

/// The result of [`check`].
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub model: String,
    pub format: Format,
    pub rows: Vec<CheckRow>,
    /// The assumptions the dims were inferred under (`seq=1..4096`, `k_len >= q_len`): those
    /// installed (`--dim`, `--assume`), else those the model records (an output written under
    /// them, see [`crate::pipeline::ASSUMPTIONS_KEY`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<String>,
}

impl CheckReport {
    /// False when any node is `mismatch` or `invalid`.
    pub fn passed(&self) -> bool {
        self.rows
            .iter()
            .all(|r| !matches!(r.verdict, Verdict::Mismatch | Verdict::Invalid))
    }
}

fn show_declared(s: &Option<Vec<DeclaredDim>>) -> String {
    crate::ir::show_shape(s.as_deref())
}

/// How an inferred dim relates to the declared one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum DimCmp {
    /// The same (equal for every value of the symbols), or consistent where we know less.
    Same,
    /// Consistent, and we know more.
    Tighter,
    /// They cannot both be right.
    Mismatch,
}

/// A few values to try for the symbols of a comparison (a difference at any of them proves a
/// mismatch, since the inferred dim is exact).
fn probe_bindings(
    syms: &[crate::semantics::Symbol],
) -> Vec<std::collections::HashMap<String, i64>> {
    let mut out = Vec::new();
    for k in 0..24i64 {
        let mut b = std::collections::HashMap::new();
        for (i, s) in syms.iter().enumerate() {
            let (lo, hi) = s.bounds();
            let v = lo.saturating_add((k * (2 * i as i64 + 3) + i as i64) % 67);
            b.insert(s.name().to_string(), hi.map_or(v, |h| v.min(h)));
        }
        out.push(b);
    }
    out
}

/// Compares a declared dim with the inferred one. `free` are the symbol names of the graph
/// inputs: a declared name that is not one of them (tf2onnx's `unk__N`) is an unnamed unknown;
/// a declared expression over them (`min(N, 4)`) is compared as an expression.
fn compare(declared: &DeclaredDim, inferred: &Dim, free: &HashSet<String>) -> DimCmp {
    let (ilo, ihi) = inferred.bounds();
    let overlaps = |lo: u64, hi: Option<u64>| {
        ihi.is_none_or(|h| h >= lo as i64) && hi.is_none_or(|h| ilo.is_none_or(|l| l <= h as i64))
    };
    let knows_something = !inferred.is_unknown() || ilo.unwrap_or(0) > 0 || ihi.is_some();
    match declared {
        DeclaredDim::Unknown if knows_something => DimCmp::Tighter,
        DeclaredDim::Unknown => DimCmp::Same,
        DeclaredDim::Param(p) => {
            let d = slice_node::to_dim(declared);
            let syms = d.symbols();
            if syms.is_empty() || syms.iter().any(|s| !free.contains(s.name())) {
                // A fresh name: any size is possible.
                let _ = p;
                return if knows_something {
                    DimCmp::Tighter
                } else {
                    DimCmp::Same
                };
            }
            if inferred.is_unknown() {
                let (dlo, dhi) = d.bounds();
                let ok = overlaps(dlo.unwrap_or(0).max(0) as u64, dhi.map(|h| h.max(0) as u64));
                return if ok { DimCmp::Same } else { DimCmp::Mismatch };
            }
            if d.provably_equal(inferred) {
                return DimCmp::Same;
            }
            let mut all = d.symbols();
            all.extend(inferred.symbols());
            all.sort();
            all.dedup();
            let differs = probe_bindings(&all)
                .iter()
                .any(|b| matches!((d.eval(b), inferred.eval(b)), (Some(x), Some(y)) if x != y));
            if differs {
                DimCmp::Mismatch
            } else {
                DimCmp::Same
            }
        }
        DeclaredDim::Known(v) => match inferred.as_known() {
            Some(k) if k >= 0 && k as u64 == *v => DimCmp::Same,
            Some(_) => DimCmp::Mismatch,
            None if overlaps(*v, Some(*v)) => DimCmp::Same,
            None => DimCmp::Mismatch,
        },
        DeclaredDim::Interval(lo, hi) => {
            if !overlaps(*lo, *hi) {
                return DimCmp::Mismatch;
            }
            let (ilo, ihi) = (ilo.unwrap_or(0).max(0) as u64, ihi.map(|h| h.max(0) as u64));
            let inside = ilo >= *lo && hi.is_none_or(|h| ihi.is_some_and(|ih| ih <= h));
            let same = ilo == *lo && ihi == *hi;
            if inside && !same {
                DimCmp::Tighter
            } else {
                DimCmp::Same
            }
        }
    }
}

/// Whether a declared dim can be the inferred one.
fn compatible(declared: &DeclaredDim, inferred: &Dim, free: &HashSet<String>) -> bool {
    compare(declared, inferred, free) != DimCmp::Mismatch
}

/// Symbol names that graph inputs declare (the symbols of their declared dims).
fn input_symbols(model: &Model) -> HashSet<String> {
    let g = model.graph();
    let mut out = HashSet::new();
    for n in g.g.node_weights() {
        let is_input =
            n.kind == NodeKind::Input || (n.kind == NodeKind::Op && n.op_type == "Parameter");
        if is_input {
            for v in &n.outputs {
                // An input may declare an expression (`2*s1`): its symbols are the free ones.
                for d in v.ty.shape.iter().flatten() {
                    if let DeclaredDim::Param(_) = d {
                        let d = slice_node::to_dim(d);
                        out.extend(d.symbols().iter().map(|s| s.name().to_string()));
                    }
                }
            }
        }
    }
    out
}

/// Infers the shape of every slice node and compares it with what the model declares (ONNX
/// `value_info` and graph outputs; OpenVINO output port dims and the consumers' input dims).
/// Slices inside ONNX `If`/`Loop`/`Scan` bodies are listed too, with their path
/// (`If_3/then_branch/Slice_7`), inferred from what flows into the body
/// ([`crate::subgraph::scope`]).
pub fn check(model: &Model) -> CheckReport {
    use crate::semantics::dim;
    // A model written under assumptions is checked under them (unless others are installed).
    let recorded = match dim::assumptions().is_empty() {
        true => crate::pipeline::recorded_assumptions(model),
        false => dim::Assumptions::new(),
    };
    let restore = (!recorded.is_empty()).then(|| dim::assume_in_thread(recorded));
    let mut report = check_now(model);
    report.assumptions = dim::assumptions().describe();
    if let Some(before) = restore {
        dim::assume_in_thread(before);
    }
    report
}

/// [`check`] under the assumptions installed now.
fn check_now(model: &Model) -> CheckReport {
    let free = input_symbols(model);
    let format = model.format();
    let opset = model.onnx_opset();
    let mut rows = Vec::new();
    for (n, scope) in crate::subgraph::scope::scopes(model).iter().enumerate() {
        for e in &scope.errors {
            rows.push(CheckRow {
                node: scope.prefix.trim_end_matches('/').to_string(),
                path: scope.prefix.trim_end_matches('/').to_string(),
                op: "(body)".into(),
                declared: "-".into(),
                inferred: "-".into(),
                input: "?".into(),
                verdict: Verdict::Invalid,
                detail: format!("the body cannot be read: {e}"),
                warning: String::new(),
            });
        }
        // The consumers' declared ports are read only at the top level.
        let top = if n == 0 { Some(model) } else { None };
        scope_rows(scope, format, opset, &free, top, &mut rows);
    }
    CheckReport {
        model: model.path().display().to_string(),
        format,
        rows,
        assumptions: Vec::new(),
    }
}

/// The check rows of the slices of one graph (`top`: the model, when it is its top level).
fn scope_rows(
    scope: &crate::subgraph::scope::Scope,
    format: Format,
    opset: i64,
    free: &HashSet<String>,
    top: Option<&Model>,
    rows: &mut Vec<CheckRow>,
) {
    let graph: &crate::ir::Graph = &scope.graph;
    let facts = &scope.facts;
    for ix in graph.topo_order().unwrap_or_default() {
        let Some(op) = slice_node::classify(graph, ix, format, opset) else {
            continue;
        };
        let result = shape::slice::slice_dims(graph, facts, ix, op);
        let node = graph.node(ix);
        let declared = node.outputs.first().and_then(|v| v.ty.shape.clone());
        let warning = crate::passes::rewrite::ov_shrink_begin_mask_warning(graph, ix, op)
            .map(|w| w.what)
            .or_else(|| slice_node::runtime_split_warning(graph, Some(facts), ix, op));
        let (name, op) = (display_name(node), node.op_type.clone());
        let path = format!(
            "{}{}",
            scope.prefix,
            crate::subgraph::scope::label(graph, ix)
        );
        let input = data_input_shape(graph, facts, ix);
        let mut row = CheckRow {
            node: name,
            path,
            op: op.into(),
            input,
            declared: show_declared(&declared),
            inferred: "-".into(),
            verdict: Verdict::Invalid,
            detail: String::new(),
            warning: warning.unwrap_or_default(),
        };
        match result {
            Err(DecodeError::Invalid(e)) => row.detail = e.to_string(),
            Err(DecodeError::Malformed(m)) => row.detail = m,
            Err(DecodeError::Unknown(m)) => {
                row.inferred = "?".into();
                row.verdict = Verdict::Unknown;
                row.detail = m;
            }
            Ok((_, dims)) => {
                row.inferred = crate::ir::show_shape(Some(&dims));
                let mut detail = String::new();
                let verdict = match &declared {
                    None => Verdict::Undeclared,
                    Some(d) if d.len() != dims.len() => {
                        detail = format!("rank {} declared, {} inferred", d.len(), dims.len());
                        Verdict::Mismatch
                    }
                    Some(d) => {
                        let cmps: Vec<DimCmp> = d
                            .iter()
                            .zip(&dims)
                            .map(|(a, b)| compare(a, b, free))
                            .collect();
                        match cmps.iter().max() {
                            Some(DimCmp::Mismatch) => {
                                let i = cmps.iter().position(|c| *c == DimCmp::Mismatch);
                                let i = i.unwrap_or(0);
                                detail =
                                    format!("dim {i}: declared {}, inferred {}", d[i], dims[i]);
                                Verdict::Mismatch
                            }
                            Some(DimCmp::Tighter) => {
                                detail = cmps
                                    .iter()
                                    .enumerate()
                                    .filter(|(_, c)| **c == DimCmp::Tighter)
                                    .map(|(i, _)| {
                                        format!("dim {i}: declared {}, inferred {}", d[i], dims[i])
                                    })
                                    .collect::<Vec<_>>()
                                    .join("; ");
                                Verdict::Tighter
                            }
                            _ => Verdict::Ok,
                        }
                    }
                };
                // IR: the consumers' input ports declare the shape too.
                let consumer_problem = match top {
                    Some(model)
                        if matches!(
                            verdict,
                            Verdict::Ok | Verdict::Undeclared | Verdict::Tighter
                        ) =>
                    {
                        consumer_mismatch(model, ix, &dims, free)
                    }
                    _ => None,
                };
                match consumer_problem {
                    Some(p) => {
                        row.verdict = Verdict::Mismatch;
                        row.detail = p;
                    }
                    None => {
                        row.verdict = verdict;
                        row.detail = detail;
                    }
                }
            }
        }
        rows.push(row);
    }
}

/// The propagated shape of the data input of node `ix`, for display.
fn data_input_shape(
    graph: &crate::ir::Graph,
    facts: &shape::Facts,
    ix: petgraph::stable_graph::NodeIndex,
) -> String {
    let shape = graph
        .input(ix, 0)
        .and_then(|o| facts.get(o).shape.as_deref());
    crate::ir::show_shape(shape)
}

fn consumer_mismatch(
    model: &Model,
    ix: petgraph::stable_graph::NodeIndex,
    dims: &[Dim],
    free: &HashSet<String>,
) -> Option<String> {
    let Model::OpenVino(ov) = model else {
        return None;
    };
    for (consumer, port) in model
        .graph()
        .consumers(crate::ir::OutletId { node: ix, port: 0 })
    {
        let Some(declared) = ov.input_port_shape(consumer, port) else {
            continue;
        };
        let bad = declared.len() != dims.len()
            || declared
                .iter()
                .zip(dims)
                .any(|(a, b)| !compatible(a, b, free));
        if bad {
            return Some(format!(
                "consumer {} input {port} declares {}",
                model.graph().node(consumer).describe(),
                show_declared(&Some(declared))
            ));
        }
    }
    None
}

/// The name shown for a node: its name, else its first output's name.
pub fn display_name(n: &crate::ir::Node) -> String {
    if !n.name.is_empty() {
        n.name.to_string()
    } else {
        n.outputs
            .first()
            .map(|v| format!("({})", v.name))
            .unwrap_or_else(|| "(unnamed)".into())
    }
}

/// A slice plan in Python notation, shortened the way a person writes it: trailing full ranges
/// dropped and a run of two or more full ranges written `...` (e.g. `x[1:, ..., None, ::-1]`).
pub fn python_notation(plan: &SlicePlan) -> String {
    let full = |a: &AxisPlan| {
        matches!(
            a,
            AxisPlan::Range {
                begin: Bound::Edge,
                end: Bound::Edge,
                step: Some(1),
                ..
            }
        )
    };
    let items: Vec<String> = plan
        .axes
        .iter()
        .map(|a| {
            let one = SlicePlan {
                input_rank: plan.input_rank,
                axes: vec![*a],
            };
            let s = one.to_string();
            s[2..s.len() - 1].to_string()
        })
        .collect();
    let mut keep = items.len();
    while keep > 0 && full(&plan.axes[keep - 1]) {
        keep -= 1;
    }
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    let mut ellipsis_used = false;
    while i < keep {
        let mut j = i;
        while j < keep && full(&plan.axes[j]) {
            j += 1;
        }
        if j - i >= 2 && !ellipsis_used {
            out.push("...".into());
            ellipsis_used = true;
            i = j;
        } else {
            out.push(items[i].clone());
            i += 1;
        }
    }
    if keep < items.len() && !ellipsis_used && out.iter().any(|s| s == "None") {
        // Trailing full ranges after a new axis are needed to place it: keep them explicit.
        out.extend(items[keep..].iter().cloned());
    }
    format!("x[{}]", out.join(", "))
}

/// One slice node in [`Info`].
#[derive(Debug, Clone, Serialize)]
pub struct SliceInfo {
    pub node: String,
    /// Where the node is: its name at the top level (`If_3/then_branch/Slice_7` inside bodies).
    pub path: String,
    /// The propagated shape of the data input (`?` when its rank is unknown).
    pub input: String,
    pub op: String,
    /// The decoded spec in Python slice notation, or why it could not be decoded.
    pub spec: String,
}

/// A summary of a model.
#[derive(Debug, Clone, Serialize)]
pub struct Info {
    pub model: String,
    pub format: Format,
    /// ONNX opset imports (domain → version), or the IR version.
    pub opsets: BTreeMap<String, i64>,
    pub nodes: usize,
    pub ops: BTreeMap<String, usize>,
    pub slices: Vec<SliceInfo>,
}

/// Summarizes `model`.
pub fn info(model: &Model) -> Info {
    let work = model;
    let format = work.format();
    let opsets = match model {
        Model::Onnx(m) => m
            .proto
            .opset_import
            .iter()
            .map(|o| {
                (
                    if o.domain().is_empty() {
                        "ai.onnx".to_string()
                    } else {
                        o.domain().to_string()
                    },
                    o.version(),
                )
            })
            .collect(),
        Model::OpenVino(m) => m
            .ir_version()
            .map(|v| ("ir_version".to_string(), v))
            .into_iter()
            .collect(),
    };
    let opset = model.onnx_opset();
    let mut slices = Vec::new();
    for scope in crate::subgraph::scope::scopes(model) {
        let graph: &crate::ir::Graph = &scope.graph;
        for ix in graph.topo_order().unwrap_or_default() {
            let Some(op) = slice_node::classify(graph, ix, format, opset) else {
                continue;
            };
            let n = graph.node(ix);
            let spec = match slice_node::decode_with(graph, ix, op, Some(&scope.facts)) {
                Ok(sn) => python_notation(&sn.plan),
                Err(e) => format!("({e})"),
            };
            slices.push(SliceInfo {
                path: format!(
                    "{}{}",
                    scope.prefix,
                    crate::subgraph::scope::label(graph, ix)
                ),
                input: data_input_shape(graph, &scope.facts, ix),
                node: display_name(n),
                op: n.op_type.to_string(),
                spec,
            });
        }
    }
    Info {
        model: model.path().display().to_string(),
        format,
        opsets,
        nodes: model
            .graph()
            .g
            .node_weights()
            .filter(|n| n.kind == NodeKind::Op)
            .count(),
        ops: model.graph().op_counts(),
        slices,
    }
}
