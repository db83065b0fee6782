//! End-to-end verification of a transformed ONNX model: the original and the transformed model
//! run in tract-onnx on the same seeded random inputs, and every output must match.
//!
//! How inputs are made (the rule `--verify` documents):
//! - Every input dim is bound to a concrete size *before* tract analyses the model, in the input
//!   declarations and in every `value_info`/output that names the same symbol (so a symbolic
//!   batch never meets a concrete one inside tract). A dim named in [`VerifyOptions::bind`]
//!   (`--bind name=size`) takes that size. Other symbolic or unknown dims are tried with
//!   [`DEFAULT_SIZES`] in turn (all 3; then axis 0 at 1 and the others at 64; then 1 and 512;
//!   then 1 everywhere but the last axis at 512, 256, 1024), the first with which tract runs the
//!   original is kept. One name gets one size everywhere (the first input axis that names it
//!   decides). The search is made for each case (control values, below) on its own, the sizes
//!   that served the previous case first: a model may take other sizes for other values.
//! - The search keeps the relations the model states between its input dims (see
//!   `verify/relations.rs`): a declared dim that is an expression (`past_sequence_length +
//!   sequence_length`) is bound as that expression of its symbols' sizes; dims that meet in a
//!   broadcast, a `Concat` or a `MatMul` (our own shape propagation) are unified
//!   (`total = past + seq`); a `--bind` that contradicts one is reported as not verified. When
//!   no size runs the original under them, a few relations are assumed in turn (a mask's
//!   length the sum of two other dims), and the verdict names the one kept. Integer inputs
//!   that index a constant table take values below its number of rows. The verdict prints
//!   every symbol's size and the shape of each input declared with an expression or an
//!   unknown dim.
//! - A scalar integer or boolean input that the graph compares with `Equal` (through `Cast`,
//!   `Reshape`, `Squeeze`, `Unsqueeze`, `Gather`, `Identity`) or that feeds an `If` condition is
//!   a *control input*: it is fixed as a constant before tract's analysis, once per value: every
//!   constant it is compared with and half the smallest of them (a value equal to none), `true`
//!   and `false` for a boolean. So an `If` on such an input runs with both branch outcomes.
//!   The branch taken is inlined with its values renamed apart from the graph's (a branch may
//!   name its output like its `If`, as optimum's merged decoders do).
//! - Inputs whose total size is above [`VerifyOptions::max_input_bytes`] (1 GiB by default), or a
//!   model whose intermediate tensors would be, are not run: "not verified: inputs too large to
//!   run". A panic inside tract is caught and reported as not verified.
//! - Resources: the tensors of a model (inputs, constants and every intermediate whose shape
//!   tract's analysis knows, summed) must fit in [`VerifyOptions::memory_budget`] (by default
//!   [`default_memory_budget`], a sixteenth of the machine's memory, at least 1 GiB), and while
//!   tract builds and runs the models, the large allocations it holds at once must too (the
//!   `slice-opt` binary's allocator refuses one that would pass it: [`charge`]). The whole
//!   verification must end within [`VerifyOptions::time_budget`] (5 minutes by default).
//!   Models beyond what tract analyses in reasonable time are not given to it: a node with
//!   more than [`MAX_NODE_OUTPUTS`] outputs (tract-onnx 0.23 took 41 s for a Split into 4,000),
//!   a tensor of rank above [`MAX_RANK`] (a rank-10,000 input of one element took 7.6 GB).
//!   Each is reported as NOT verified, with the reason.
//!
//! A model tract cannot run (for example an ONNX `Loop`, which tract-onnx 0.23 does not
//! implement) is reported as not verified — never as verified.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use prost::Message;
use tract_onnx::pb;
use tract_onnx::pb::tensor_shape_proto::dimension::Value as DimValue;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

use crate::formats::onnx::OnnxModel;

mod branches;
mod inputs;
mod relations;
mod run;

use branches::*;
use inputs::*;
use relations::{param_dim, Relations};
use run::Runnable;
use run::*;
pub use run::{alloc_limit, charge, refund, LARGE};

/// The outcome of [`verify_onnx`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Verification {
    /// Every output matched on every run of every verified case. `detail` says which dims were
    /// bound to which sizes, which control-input values were run, and which cases (if any) could
    /// not be run.
    Passed {
        runs: usize,
        outputs: usize,
        detail: String,
    },
    /// An output differed: what and where.
    Failed(String),
    /// Verification could not run (tract cannot load or run the original, or the inputs are too
    /// large).
    NotVerified(String),
}

/// Sizes tried in turn for the symbolic or unknown input dims that `bind` does not name:
/// `(axis 0, middle axes, last axis)` of each input (a rank-1 input's one axis is its last).
pub const DEFAULT_SIZES: [(usize, usize, usize); 6] = [
    (3, 3, 3),
    (1, 64, 64),
    (1, 512, 512),
    (1, 1, 512),
    (1, 1, 256),
    (1, 1, 1024),
];

/// Default bound on the bytes of one run's inputs (and of any one intermediate tensor).
pub const MAX_INPUT_BYTES: u64 = 1 << 30;

/// A node with more outputs than this is not given to tract (its optimizer is superlinear in
/// them: a Split into 1,000 / 2,000 / 4,000 outputs took 0.9 / 5.3 / 41 s in `PushSplitDown`).
pub const MAX_NODE_OUTPUTS: usize = 1024;

/// A tensor of a higher rank is not given to tract (a rank-10,000 input of one element took
/// 7.6 GB). ONNX Runtime and NumPy stop at lower ranks still.
pub const MAX_RANK: usize = 64;

/// Default bound on the time of one verification.
pub const DEFAULT_TIME_BUDGET: std::time::Duration = std::time::Duration::from_secs(300);

/// The default [`VerifyOptions::memory_budget`]: a sixteenth of the machine's physical memory
/// (1.5 GB of 24 GB), at least [`MAX_INPUT_BYTES`] (one tensor as large as an input may be).
pub fn default_memory_budget() -> u64 {
    // SAFETY: sysconf has no preconditions.
    #[cfg(unix)]
    let physical = unsafe {
        let pages = libc::sysconf(libc::_SC_PHYS_PAGES);
        let size = libc::sysconf(libc::_SC_PAGESIZE);
        u64::try_from(pages)
            .ok()
            .zip(u64::try_from(size).ok())
            .map(|(p, s)| p.saturating_mul(s))
    };
    #[cfg(not(unix))]
    let physical: Option<u64> = None;
    physical
        .map_or(4 * MAX_INPUT_BYTES, |m| m / 16)
        .max(MAX_INPUT_BYTES)
}

/// How [`verify_onnx_with`] runs.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// Sizes of named symbolic dims (`--bind name=size`).
    pub bind: BTreeMap<String, usize>,
    /// Seed of the random inputs.
    pub seed: u64,
    /// Random input sets per case.
    pub runs: usize,
    /// Largest total input size of one run, in bytes; also the largest intermediate tensor.
    pub max_input_bytes: u64,
    /// Largest total of a model's tensors, and of the large allocations tract holds at once
    /// while it builds and runs the models (see the module doc), in bytes.
    pub memory_budget: u64,
    /// Longest a verification may take; past it, it is reported as not verified (tract is
    /// left to finish on its own thread, which the end of the process stops).
    pub time_budget: std::time::Duration,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            bind: BTreeMap::new(),
            seed: 0x5eed,
            runs: 3,
            max_input_bytes: MAX_INPUT_BYTES,
            memory_budget: default_memory_budget(),
            time_budget: DEFAULT_TIME_BUDGET,
        }
    }
}

/// [`verify_onnx_with`] with the default options, `seed` and `runs`.
pub fn verify_onnx(
    original: &OnnxModel,
    transformed: &OnnxModel,
    seed: u64,
    runs: usize,
) -> Verification {
    verify_onnx_with(
        original,
        transformed,
        &VerifyOptions {
            seed,
            runs,
            ..VerifyOptions::default()
        },
    )
}

fn encode(m: &OnnxModel) -> Result<pb::ModelProto, String> {
    let bytes = m.to_proto().map_err(|e| e.to_string())?.encode_to_vec();
    pb::ModelProto::decode(bytes.as_slice()).map_err(|e| e.to_string())
}

fn show_binding(names: &BTreeMap<String, usize>) -> String {
    names
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The sizes a case ran with: each symbol's size, and the shape of every input that has an
/// unnamed unknown dim (`input=1x512`).
fn show_bound(
    data: &[&InputDecl],
    shapes: &[Vec<usize>],
    names: &BTreeMap<String, usize>,
) -> String {
    let mut parts: Vec<String> = names.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for (d, s) in data.iter().zip(shapes) {
        // An unknown dim, or one declared as an expression (`past_sequence_length +
        // sequence_length`): the input's shape says what it was given.
        let unnamed = d.dims.iter().flatten().any(|x| match x {
            Decl::Known(v) => *v < 0,
            Decl::Param(p) => {
                let d = param_dim(p);
                let s = d.symbols();
                s.len() != 1 || d.to_onnx().as_deref() != Some(s[0].name())
            }
            Decl::Unknown => true,
        });
        if unnamed {
            let dims: Vec<String> = s.iter().map(|v| v.to_string()).collect();
            parts.push(format!("{}={}", d.name, dims.join("x")));
        }
    }
    parts.join(", ")
}

/// Runs `original` and `transformed` in tract on `opts.runs` seeded random input sets per case
/// (a case is one value of each control input, see the module doc) and compares every output.
/// External data is read from the original model's directory.
///
/// The verification runs on a thread of its own within [`VerifyOptions::time_budget`] and
/// [`VerifyOptions::memory_budget`]; a model beyond what tract handles in reasonable time (see
/// the module doc) is not given to tract. Each is reported as not verified, with the reason.
pub fn verify_onnx_with(
    original: &OnnxModel,
    transformed: &OnnxModel,
    opts: &VerifyOptions,
) -> Verification {
    let dir = original
        .path
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let a = match encode(original) {
        Ok(p) => p,
        Err(e) => return Verification::NotVerified(e),
    };
    let b = match encode(transformed) {
        Ok(p) => p,
        Err(e) => {
            return Verification::Failed(format!("the transformed model cannot be encoded: {e}"))
        }
    };
    if let Some(why) = beyond_tract(&a) {
        return Verification::NotVerified(why);
    }
    // What the model states between its input dims, kept by the size search.
    let rel = relations::find(original, &opts.bind);
    let mut rels = vec![rel.clone()];
    if let Some(g) = a.graph.as_ref() {
        let decls = graph_inputs(g);
        let (_, data) = split_inputs(g, &decls);
        rels.extend(relations::candidates(original, &opts.bind, &rel, &data));
    }
    if let Some(c) = rel.conflicts.first() {
        return Verification::NotVerified(format!(
            "the sizes given contradict a relation the model states: {c}"
        ));
    }
    // Constants a small file can describe (a Range of 240 million floats) are made by tract's
    // analysis itself: counted here first, before tract computes them.
    let constants = a.graph.as_ref().map_or(0, constant_bytes);
    if constants > opts.memory_budget {
        return Verification::NotVerified(format!(
            "over the memory budget: the model's constants (initializers, and Range and ConstantOfShape of constant inputs) take {constants} bytes, the verification memory budget is {} bytes (--verify-memory)",
            opts.memory_budget
        ));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let opts = opts.clone();
    let budget = opts.memory_budget;
    let time_budget = opts.time_budget;
    let worker = std::thread::Builder::new()
        .name("slice-opt-verify".into())
        // tract's analysis recurses over the graph: the main thread's stack size, not 2 MiB.
        .stack_size(64 << 20)
        .spawn(move || {
            let _budget = Budget::start(budget);
            let _ = tx.send(verify_protos(a, b, dir, &opts, &rels));
        });
    if let Err(e) = worker {
        return Verification::NotVerified(format!("cannot start the verification thread: {e}"));
    }
    match rx.recv_timeout(time_budget) {
        Ok(v) => v,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Verification::NotVerified(format!(
            "over the time budget: tract did not finish within {} s (--verify-time)",
            time_budget.as_secs_f64()
        )),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Verification::NotVerified("the verification thread stopped".into())
        }
    }
}

/// [`verify_onnx_with`] on the encoded models, on the calling thread.
fn verify_protos(
    a: pb::ModelProto,
    b: pb::ModelProto,
    dir: std::path::PathBuf,
    opts: &VerifyOptions,
    rels: &[Relations],
) -> Verification {
    let Some(graph) = a.graph.as_ref() else {
        return Verification::NotVerified("the model has no graph".into());
    };
    let decls = graph_inputs(graph);
    let (controls, data) = split_inputs(graph, &decls);
    let cases = control_cases(&controls);
    let bound = match bind_cases(&a, &dir, &data, &cases, opts, rels) {
        Ok(bound) => bound,
        Err(v) => return v,
    };

    let mut outputs = 0;
    let mut verified_cases = Vec::new();
    let mut bindings = Vec::new();
    let mut unverified = Vec::new();
    for (case, found) in cases.iter().zip(bound) {
        let label = show_case(case);
        let found = match found {
            Ok(f) => f,
            Err(e) => {
                unverified.push(labelled(&label, &e));
                continue;
            }
        };
        let (ran, not_run) = match run_case(&b, &dir, &data, case, &label, &found, opts) {
            Ok(r) => r,
            Err(v) => return v,
        };
        outputs += ran;
        match not_run {
            None => {
                verified_cases.push(label);
                let mut shown = show_bound(&data, &found.shapes, &found.names);
                let relations = rels.get(found.relations).map(|r| r.describe());
                if let Some(r) = relations.filter(|r| !r.is_empty()) {
                    shown = format!("{shown}; {r}");
                }
                bindings.push(shown);
            }
            Some(e) => unverified.push(e),
        }
    }
    summarize(
        outputs,
        verified_cases,
        bindings,
        unverified,
        !controls.is_empty(),
        opts,
    )
}

/// A control input with the values it takes, in the order of the graph's inputs.
type Controls<'d> = Vec<(&'d InputDecl, Vec<i64>)>;

/// `decls` parted into control inputs (with their values) and data inputs.
fn split_inputs<'d>(
    graph: &pb::GraphProto,
    decls: &'d [InputDecl],
) -> (Controls<'d>, Vec<&'d InputDecl>) {
    let mut controls: Controls<'d> = Vec::new();
    let mut data: Vec<&InputDecl> = Vec::new();
    for d in decls {
        match control_values(graph, d) {
            Some(v) => controls.push((d, v)),
            None => data.push(d),
        }
    }
    (controls, data)
}

/// Every combination of control values (at most 16 cases).
fn control_cases<'d>(controls: &[(&'d InputDecl, Vec<i64>)]) -> Vec<Vec<(&'d InputDecl, i64)>> {
    let mut cases: Vec<Vec<(&InputDecl, i64)>> = vec![Vec::new()];
    for (d, values) in controls {
        cases = cases
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((*d, *v));
                    c
                })
            })
            .take(16)
            .collect();
    }
    cases
}

fn show_case(c: &[(&InputDecl, i64)]) -> String {
    c.iter()
        .map(|(d, v)| format!("{}={v}", d.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn labelled(label: &str, msg: &str) -> String {
    if label.is_empty() {
        msg.to_string()
    } else {
        format!("{label}: {msg}")
    }
}

/// Each case gets its binding: the first try of the sizes with which tract runs the original
/// in that case (a control value may need other sizes than the others: silero-vad takes 512
/// samples at sr=16000 and 256 at sr=8000). Sizes that served a case are tried first next.
/// The relations found (`rels[0]`) are kept; when no size runs the original under them, the
/// relations assumed in turn (`rels[1..]`, [`relations::candidates`]) with [`DISTINCT_SIZES`],
/// then the first [`CANDIDATE_SIZES`] sizes. `Err`: the verification cannot run at all.
fn bind_cases(
    a: &pb::ModelProto,
    dir: &Path,
    data: &[&InputDecl],
    cases: &[Vec<(&InputDecl, i64)>],
    opts: &VerifyOptions,
    rels: &[Relations],
) -> Result<Vec<Result<Bound, String>>, Verification> {
    let mut order: Vec<Sizes> = DEFAULT_SIZES.to_vec();
    let mut bound = Vec::with_capacity(cases.len());
    // The relations that served the last case are tried first.
    let mut first_rel = 0;
    for case in cases {
        let mut tries: Vec<usize> = vec![first_rel];
        tries.extend((0..rels.len()).filter(|&r| r != first_rel));
        let mut outcome = None;
        for r in tries {
            let sizes: Vec<Sizes> = if r == 0 {
                order.clone()
            } else {
                std::iter::once(DISTINCT_SIZES)
                    .chain(order.iter().copied().take(CANDIDATE_SIZES))
                    .collect()
            };
            match find_binding(a, dir, data, case, &sizes, opts, &rels[r]) {
                Err(BindError::Fatal(e)) if r == 0 => return Err(Verification::NotVerified(e)),
                // An assumed relation the sizes cannot meet: the next one.
                Err(BindError::Fatal(_)) => {}
                Err(BindError::NoSize(e)) => {
                    let lacking = e.starts_with(UNIMPLEMENTED);
                    // The message of the relations found, not of a candidate's.
                    if r == 0 || outcome.is_none() {
                        outcome = Some(Err(e));
                    }
                    // Sizes do not give tract an op it lacks.
                    if lacking {
                        break;
                    }
                }
                Ok(mut found) => {
                    found.relations = r;
                    first_rel = r;
                    if let Some(i) = order.iter().position(|s| *s == found.sizes) {
                        let s = order.remove(i);
                        order.insert(0, s);
                    }
                    outcome = Some(Ok(found));
                    break;
                }
            }
        }
        bound.push(outcome.unwrap_or_else(|| Err("no relations to try".into())));
    }
    Ok(bound)
}

/// With an assumed relation, only this many of the sizes are tried (after [`DISTINCT_SIZES`]).
pub const CANDIDATE_SIZES: usize = 2;

/// The sizes tried first with an assumed relation: each axis position its own size, so that
/// the dims a candidate adds up differ (a past of 3 and a sequence of 4 make a mask of 7, which
/// `batch + seq` does not), and tract's run tells the candidates apart.
pub const DISTINCT_SIZES: Sizes = (2, 3, 4);

/// Runs the original (its plan in `found`) and the transformed model `b` on `opts.runs` seeded
/// random input sets of one case and compares their outputs. `Ok((outputs compared, None))`
/// when every run matched; `Some(reason)` when tract could not run the original (the case is
/// not verified); `Err`: the verification's outcome (a mismatch, or the transformed model does
/// not run).
fn run_case(
    b: &pb::ModelProto,
    dir: &Path,
    data: &[&InputDecl],
    case: &[(&InputDecl, i64)],
    label: &str,
    found: &Bound,
    opts: &VerifyOptions,
) -> Result<(usize, Option<String>), Verification> {
    let Bound {
        shapes,
        names,
        plan: plan_a,
        ..
    } = found;
    let by_name: HashMap<&str, &[usize]> = data
        .iter()
        .zip(shapes)
        .map(|(d, s)| (d.name.as_str(), s.as_slice()))
        .collect();
    let mut rng = Rng(opts.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut sets = Vec::new();
    for _ in 0..opts.runs.max(1) {
        let t: Result<Vec<Tensor>, String> = data
            .iter()
            .zip(shapes)
            .map(|(d, s)| random_tensor(d, s, &mut rng))
            .collect();
        match t {
            Ok(t) => sets.push(t),
            Err(e) => return Err(Verification::NotVerified(e)),
        }
    }
    let plan_b = match build(
        &prepare(b, &by_name, names, case),
        dir,
        &sets[0],
        opts.max_input_bytes,
        opts.memory_budget,
    ) {
        Ok(p) => p,
        Err(e) => {
            return Err(Verification::Failed(format!(
                "tract cannot run the transformed model{}: {e}",
                if label.is_empty() {
                    String::new()
                } else {
                    format!(" ({label})")
                }
            )))
        }
    };
    let mut outputs = 0;
    for (r, inputs) in sets.iter().enumerate() {
        let want = match run(plan_a, inputs, opts.max_input_bytes) {
            Ok(o) => o,
            Err(e) => {
                let reason = labelled(label, &format!("tract cannot run the original: {e}"));
                return Ok((outputs, Some(reason)));
            }
        };
        let got = match run(&plan_b, inputs, opts.max_input_bytes) {
            Ok(o) => o,
            Err(e) => {
                return Err(Verification::Failed(format!(
                    "tract cannot run the transformed model: {e}"
                )))
            }
        };
        if want.len() != got.len() {
            return Err(Verification::Failed(format!(
                "{} outputs before, {} after",
                want.len(),
                got.len()
            )));
        }
        for (i, (w, g)) in want.iter().zip(got.iter()).enumerate() {
            if let Err(e) = same(g, w) {
                let at = if label.is_empty() {
                    String::new()
                } else {
                    format!(" ({label})")
                };
                return Err(Verification::Failed(format!(
                    "run {r}{at}, output {i}: {e}"
                )));
            }
        }
        outputs += want.len();
    }
    Ok((outputs, None))
}

/// The outcome once every case ran: passed when at least one case was verified, with what
/// was bound and which cases were not run.
fn summarize(
    outputs: usize,
    verified_cases: Vec<String>,
    bindings: Vec<String>,
    unverified: Vec<String>,
    has_controls: bool,
    opts: &VerifyOptions,
) -> Verification {
    if verified_cases.is_empty() {
        return Verification::NotVerified(unverified.join("; "));
    }
    let mut detail = Vec::new();
    let one_binding = bindings.windows(2).all(|w| w[0] == w[1]);
    if one_binding {
        if !bindings[0].is_empty() {
            detail.push(format!("dims bound: {}", bindings[0]));
        }
        if has_controls {
            detail.push(format!("control inputs: {}", verified_cases.join(" | ")));
        }
    } else {
        let shown: Vec<String> = verified_cases
            .iter()
            .zip(&bindings)
            .map(|(c, n)| {
                if n.is_empty() {
                    c.clone()
                } else {
                    format!("{c} (dims bound: {n})")
                }
            })
            .collect();
        detail.push(format!("control inputs: {}", shown.join(" | ")));
    }
    if !unverified.is_empty() {
        detail.push(format!("NOT verified for {}", unverified.join("; ")));
    }
    Verification::Passed {
        runs: opts.runs.max(1) * verified_cases.len(),
        outputs,
        detail: detail.join("; "),
    }
}

fn first_line(e: &anyhow::Error) -> String {
    format!("{e:#}")
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}
