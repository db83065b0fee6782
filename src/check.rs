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

mod admit;
mod compare;
pub mod formats;

use compare::{compare, incompatible, DimCmp};

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
    /// For a `mismatch` of a dim that depends on the inputs' sizes: the smallest sizes found at
    /// which the declared dim is wrong (`{"seq": 2}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrong_at: Option<BTreeMap<String, i64>>,
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
        self.passes(FailOn::Mismatch)
    }
    /// False when any node's verdict fails at the strictness `fail_on`.
    pub fn passes(&self, fail_on: FailOn) -> bool {
        self.rows.iter().all(|r| !r.verdict.fails(fail_on))
    }
}

/// How strict a check is: the least severe verdict that fails it. Each level fails on what
/// the ones before it fail on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    /// `mismatch` and `invalid` (the default).
    #[default]
    Mismatch,
    /// Also `tighter`: the model declares less than is known (a `?`, a fresh name or a wider
    /// interval where the dim is known).
    Looser,
    /// Also `unknown`: a slice whose shape cannot be inferred.
    Unknown,
}

impl Verdict {
    /// The verdict's name (`mismatch`), as JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Undeclared => "undeclared",
            Verdict::Unknown => "unknown",
            Verdict::Tighter => "tighter",
            Verdict::Mismatch => "mismatch",
            Verdict::Invalid => "invalid",
        }
    }
    /// True when this verdict fails a check at the strictness `fail_on`.
    pub fn fails(self, fail_on: FailOn) -> bool {
        match self {
            Verdict::Mismatch | Verdict::Invalid => true,
            Verdict::Tighter => fail_on >= FailOn::Looser,
            Verdict::Unknown => fail_on >= FailOn::Unknown,
            Verdict::Ok | Verdict::Undeclared => false,
        }
    }
}

fn show_declared(s: &Option<Vec<DeclaredDim>>) -> String {
    crate::ir::show_shape(s.as_deref())
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
                wrong_at: None,
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
    let mut admits: Option<Vec<Dim>> = None;
    for ix in graph.topo_order().unwrap_or_default() {
        let Some(op) = slice_node::classify(graph, ix, format, opset) else {
            continue;
        };
        let admits = admits.get_or_insert_with(|| admit::conditions(graph, facts, format));
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
            wrong_at: None,
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
                let mut wrong_at = None;
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
                            .map(|(a, b)| compare(a, b, free, admits))
                            .collect();
                        if let Some(i) = cmps.iter().position(DimCmp::is_mismatch) {
                            detail = format!("dim {i}: declared {}, inferred {}", d[i], dims[i]);
                            if let DimCmp::Mismatch(Some(w)) = &cmps[i] {
                                detail = format!("{detail}: {}", w.describe());
                                wrong_at = Some(w.sizes.clone());
                            }
                            Verdict::Mismatch
                        } else if cmps.contains(&DimCmp::Tighter) {
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
                        } else {
                            Verdict::Ok
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
                        consumer_mismatch(model, ix, &dims, free, admits)
                    }
                    _ => None,
                };
                match consumer_problem {
                    Some((p, w)) => {
                        row.verdict = Verdict::Mismatch;
                        row.detail = p;
                        row.wrong_at = w;
                    }
                    None => {
                        row.verdict = verdict;
                        row.detail = detail;
                        row.wrong_at = wrong_at;
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

/// An IR consumer whose input port declares a shape the slice's output cannot have: what it
/// declares, and the sizes that show it (when a dim over the inputs' sizes is wrong).
fn consumer_mismatch(
    model: &Model,
    ix: petgraph::stable_graph::NodeIndex,
    dims: &[Dim],
    free: &HashSet<String>,
    admits: &[Dim],
) -> Option<(String, Option<BTreeMap<String, i64>>)> {
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
        let bad = if declared.len() != dims.len() {
            Some(None)
        } else {
            declared
                .iter()
                .zip(dims)
                .find_map(|(a, b)| incompatible(a, b, free, admits))
        };
        if let Some(w) = bad {
            let mut text = format!(
                "consumer {} input {port} declares {}",
                model.graph().node(consumer).describe(),
                show_declared(&Some(declared))
            );
            if let Some(w) = &w {
                text = format!("{text}: {}", w.describe());
            }
            return Some((text, w.map(|w| w.sizes)));
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
