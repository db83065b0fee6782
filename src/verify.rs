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
//! - A scalar integer or boolean input that the graph compares with `Equal` (through `Cast`,
//!   `Reshape`, `Squeeze`, `Unsqueeze`, `Gather`, `Identity`) or that feeds an `If` condition is
//!   a *control input*: it is fixed as a constant before tract's analysis, once per value: every
//!   constant it is compared with and half the smallest of them (a value equal to none), `true`
//!   and `false` for a boolean. So an `If` on such an input runs with both branch outcomes.
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

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One graph input as declared.
#[derive(Debug, Clone)]
struct InputDecl {
    name: String,
    elem_type: i32,
    /// `None`: no shape declared.
    dims: Option<Vec<Decl>>,
}

#[derive(Debug, Clone)]
enum Decl {
    Known(i64),
    Param(String),
    Unknown,
}

const F32: i32 = 1;
const I32: i32 = 6;
const I64: i32 = 7;
const BOOL: i32 = 9;
const F16: i32 = 10;
const F64: i32 = 11;

fn elem_size(t: i32) -> Option<u64> {
    match t {
        F32 | I32 => Some(4),
        I64 | F64 => Some(8),
        BOOL => Some(1),
        F16 => Some(2),
        _ => None,
    }
}

fn graph_inputs(g: &pb::GraphProto) -> Vec<InputDecl> {
    let inits: HashSet<&str> = g.initializer.iter().map(|t| t.name.as_str()).collect();
    g.input
        .iter()
        .filter(|i| !inits.contains(i.name.as_str()))
        .map(|i| {
            let tt = i
                .r#type
                .as_ref()
                .and_then(|t| t.value.as_ref())
                .map(|pb::type_proto::Value::TensorType(t)| t);
            InputDecl {
                name: i.name.clone(),
                elem_type: tt.map(|t| t.elem_type).unwrap_or(0),
                dims: tt.and_then(|t| t.shape.as_ref()).map(|s| {
                    s.dim
                        .iter()
                        .map(|d| match &d.value {
                            Some(DimValue::DimValue(v)) => Decl::Known(*v),
                            Some(DimValue::DimParam(p)) if !p.is_empty() => Decl::Param(p.clone()),
                            _ => Decl::Unknown,
                        })
                        .collect()
                }),
            }
        })
        .collect()
}

/// A scalar integer value of a constant (an initializer or a `Constant` node's `value`).
fn scalar_of(t: &pb::TensorProto) -> Option<i64> {
    if t.dims.iter().product::<i64>() != 1 {
        return None;
    }
    match t.data_type {
        I64 => t.int64_data.first().copied().or_else(|| {
            let b: [u8; 8] = t.raw_data.get(..8)?.try_into().ok()?;
            Some(i64::from_le_bytes(b))
        }),
        I32 => t.int32_data.first().map(|v| *v as i64).or_else(|| {
            let b: [u8; 4] = t.raw_data.get(..4)?.try_into().ok()?;
            Some(i32::from_le_bytes(b) as i64)
        }),
        _ => None,
    }
}

/// Values to run a control input with, or `None` when the input is not one.
fn control_values(g: &pb::GraphProto, input: &InputDecl) -> Option<Vec<i64>> {
    let scalar = match &input.dims {
        Some(d) => d.iter().all(|d| matches!(d, Decl::Known(1))),
        None => false,
    };
    if !scalar || !matches!(input.elem_type, I64 | I32 | BOOL) {
        return None;
    }
    let mut consts: HashMap<&str, i64> = HashMap::new();
    for t in &g.initializer {
        if let Some(v) = scalar_of(t) {
            consts.insert(t.name.as_str(), v);
        }
    }
    for n in &g.node {
        if n.op_type == "Constant" {
            if let (Some(o), Some(t)) = (
                n.output.first(),
                n.attribute
                    .iter()
                    .find(|a| a.name == "value")
                    .and_then(|a| a.t.as_ref()),
            ) {
                if let Some(v) = scalar_of(t) {
                    consts.insert(o.as_str(), v);
                }
            }
        }
    }
    // Values derived from the input without changing it.
    let mut derived: HashSet<&str> = HashSet::from([input.name.as_str()]);
    let mut compared = Vec::new();
    let mut feeds_if = false;
    // Nodes are topologically sorted in a valid model; one pass suffices, two are cheap.
    for _ in 0..2 {
        for n in &g.node {
            let first = n.input.first().map(String::as_str).unwrap_or("");
            match n.op_type.as_str() {
                "Cast" | "Reshape" | "Squeeze" | "Unsqueeze" | "Gather" | "Identity"
                | "Flatten"
                    if derived.contains(first) =>
                {
                    derived.extend(n.output.iter().map(String::as_str));
                }
                "Equal" if n.input.len() == 2 => {
                    for (a, b) in [(0, 1), (1, 0)] {
                        if derived.contains(n.input[a].as_str()) {
                            if let Some(v) = consts.get(n.input[b].as_str()) {
                                if !compared.contains(v) {
                                    compared.push(*v);
                                }
                            }
                        }
                    }
                }
                "If" if derived.contains(first) => feeds_if = true,
                _ => {}
            }
        }
    }
    if input.elem_type == BOOL {
        return (feeds_if || !compared.is_empty()).then(|| vec![1, 0]);
    }
    if compared.is_empty() {
        return None;
    }
    compared.sort_unstable();
    let other = compared[0] / 2;
    if !compared.contains(&other) {
        compared.push(other);
    }
    Some(compared)
}

/// Concrete shapes of the non-control inputs, and the size given to each symbol.
type Binding = (Vec<Vec<usize>>, BTreeMap<String, usize>);

/// Concrete shapes of the non-control inputs for one try, or why not.
fn bind_shapes(
    inputs: &[&InputDecl],
    bind: &BTreeMap<String, usize>,
    sizes: (usize, usize, usize),
) -> Result<Binding, String> {
    let mut names: BTreeMap<String, usize> = bind.clone();
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    let mut shapes = Vec::new();
    for i in inputs {
        let dims = i
            .dims
            .as_ref()
            .ok_or_else(|| format!("input '{}' has no declared shape", i.name))?;
        let mut shape = Vec::new();
        for (axis, d) in dims.iter().enumerate() {
            let fallback = if axis + 1 == dims.len() {
                sizes.2
            } else if axis == 0 {
                sizes.0
            } else {
                sizes.1
            };
            let v = match d {
                Decl::Known(v) if *v >= 0 => *v as usize,
                Decl::Param(p) => {
                    let v = *names.entry(p.clone()).or_insert(fallback);
                    used.insert(p.clone(), v);
                    v
                }
                _ => fallback,
            };
            shape.push(v);
        }
        shapes.push(shape);
    }
    Ok((shapes, used))
}

fn input_bytes(inputs: &[&InputDecl], shapes: &[Vec<usize>]) -> Option<u64> {
    let mut total: u64 = 0;
    for (i, s) in inputs.iter().zip(shapes) {
        let mut n = elem_size(i.elem_type).unwrap_or(8);
        for d in s {
            n = n.checked_mul(*d as u64)?;
        }
        total = total.checked_add(n)?;
    }
    Some(total)
}

fn random_tensor(input: &InputDecl, shape: &[usize], rng: &mut Rng) -> Result<Tensor, String> {
    let count: usize = shape.iter().product();
    let t = match input.elem_type {
        F32 => Tensor::from_shape(
            shape,
            &(0..count)
                .map(|_| (rng.next() % 2000) as f32 / 1000.0 - 1.0)
                .collect::<Vec<f32>>(),
        ),
        F16 => Tensor::from_shape(
            shape,
            &(0..count)
                .map(|_| f16::from_f32((rng.next() % 2000) as f32 / 1000.0 - 1.0))
                .collect::<Vec<f16>>(),
        ),
        F64 => Tensor::from_shape(
            shape,
            &(0..count)
                .map(|_| (rng.next() % 2000) as f64 / 1000.0 - 1.0)
                .collect::<Vec<f64>>(),
        ),
        I64 => Tensor::from_shape(
            shape,
            &(0..count)
                .map(|_| (rng.next() % 4) as i64)
                .collect::<Vec<i64>>(),
        ),
        I32 => Tensor::from_shape(
            shape,
            &(0..count)
                .map(|_| (rng.next() % 4) as i32)
                .collect::<Vec<i32>>(),
        ),
        BOOL => Tensor::from_shape(
            shape,
            &(0..count)
                .map(|_| rng.next() % 2 == 0)
                .collect::<Vec<bool>>(),
        ),
        other => {
            return Err(format!(
                "input '{}' has ONNX element type {other}, which verification does not generate",
                input.name
            ))
        }
    };
    t.map_err(|e| format!("{e:#}"))
}

/// Rewrites the declared dims of every value of `g` (and its subgraphs): a bound symbol becomes
/// its size, any other symbol becomes unknown.
fn bind_graph_dims(g: &mut pb::GraphProto, names: &BTreeMap<String, usize>) {
    let fix = |v: &mut pb::ValueInfoProto| {
        if let Some(pb::type_proto::Value::TensorType(t)) =
            v.r#type.as_mut().and_then(|t| t.value.as_mut())
        {
            if let Some(s) = t.shape.as_mut() {
                for d in &mut s.dim {
                    if let Some(DimValue::DimParam(p)) = &d.value {
                        d.value = names.get(p).map(|v| DimValue::DimValue(*v as i64));
                    }
                }
            }
        }
    };
    g.value_info.iter_mut().for_each(fix);
    g.output.iter_mut().for_each(fix);
    g.input.iter_mut().for_each(fix);
    for n in &mut g.node {
        for a in &mut n.attribute {
            if let Some(sub) = a.g.as_mut() {
                bind_graph_dims(sub, names);
            }
            for sub in &mut a.graphs {
                bind_graph_dims(sub, names);
            }
        }
    }
}

/// The model as tract should see it for one case: input shapes concrete, control inputs
/// constants.
fn prepare(
    model: &pb::ModelProto,
    shapes: &HashMap<&str, &[usize]>,
    names: &BTreeMap<String, usize>,
    controls: &[(&InputDecl, i64)],
) -> pb::ModelProto {
    let mut m = model.clone();
    if let Some(g) = m.graph.as_mut() {
        bind_graph_dims(g, names);
        for i in &mut g.input {
            if let (Some(shape), Some(pb::type_proto::Value::TensorType(t))) = (
                shapes.get(i.name.as_str()),
                i.r#type.as_mut().and_then(|t| t.value.as_mut()),
            ) {
                t.shape = Some(pb::TensorShapeProto {
                    dim: shape
                        .iter()
                        .map(|d| pb::tensor_shape_proto::Dimension {
                            denotation: String::new(),
                            value: Some(DimValue::DimValue(*d as i64)),
                        })
                        .collect(),
                });
            }
        }
        for (decl, value) in controls {
            g.input.retain(|i| i.name != decl.name);
            let dims: Vec<i64> = decl.dims.iter().flatten().map(|_| 1).collect();
            let raw_data = match decl.elem_type {
                I64 => value.to_le_bytes().to_vec(),
                I32 => (*value as i32).to_le_bytes().to_vec(),
                _ => vec![(*value != 0) as u8],
            };
            g.initializer.push(pb::TensorProto {
                name: decl.name.clone(),
                dims,
                data_type: decl.elem_type,
                raw_data,
                ..Default::default()
            });
        }
        // Branches may nest: inline what the control values decide, a few levels deep.
        for _ in 0..4 {
            if !inline_known_ifs(g, controls) {
                break;
            }
        }
        unique_node_names(g);
    }
    m
}

/// Renames the second and later nodes of `g` that share a name (`n`, then `n#1`, `n#2`, ...
/// avoiding names in use). ONNX only asks node names to be unique; exporters do not always
/// make them so (silero-vad's OpenVINO export has 43 Constants named `F0::anon`), and tract,
/// which identifies nodes by name, then fails ("duplicate name for node"). Only tract's copy is
/// renamed; node names are not referenced by edges, so the graph is the same.
fn unique_node_names(g: &mut pb::GraphProto) {
    let mut used: HashSet<String> = HashSet::with_capacity(g.node.len());
    let mut dup = false;
    for n in &g.node {
        dup |= !n.name.is_empty() && !used.insert(n.name.clone());
    }
    if !dup {
        return;
    }
    let mut seen: HashSet<String> = HashSet::with_capacity(g.node.len());
    for n in &mut g.node {
        if n.name.is_empty() || seen.insert(n.name.clone()) {
            continue;
        }
        let mut k = 1usize;
        let fresh = loop {
            let c = format!("{}#{k}", n.name);
            if !used.contains(&c) {
                break c;
            }
            k += 1;
        };
        used.insert(fresh.clone());
        seen.insert(fresh.clone());
        n.name = fresh;
    }
}

/// Replaces every `If` of `g` whose condition follows from the control inputs' values (through
/// `Cast`, `Reshape`, `Squeeze`, `Unsqueeze`, `Identity`, `Flatten`, `Gather`, and `Equal` with a
/// constant) by the nodes of the branch it takes. Tract analyses both branches of an `If` even
/// when the condition is constant, and the branch not taken may not fit the inputs (silero-vad's
/// 8 kHz branch on 16 kHz input). Returns true when an `If` was replaced.
fn inline_known_ifs(g: &mut pb::GraphProto, controls: &[(&InputDecl, i64)]) -> bool {
    let mut consts: HashMap<String, i64> = HashMap::new();
    for t in &g.initializer {
        if let Some(v) = scalar_of(t) {
            consts.insert(t.name.clone(), v);
        }
    }
    for n in &g.node {
        if n.op_type == "Constant" {
            if let (Some(o), Some(t)) = (
                n.output.first(),
                n.attribute
                    .iter()
                    .find(|a| a.name == "value")
                    .and_then(|a| a.t.as_ref()),
            ) {
                if let Some(v) = scalar_of(t) {
                    consts.insert(o.clone(), v);
                }
            }
        }
    }
    let mut known: HashMap<String, i64> =
        controls.iter().map(|(d, v)| (d.name.clone(), *v)).collect();
    let mut changed = false;
    let mut out = Vec::with_capacity(g.node.len());
    for n in std::mem::take(&mut g.node) {
        let first = n.input.first().cloned().unwrap_or_default();
        match n.op_type.as_str() {
            "Cast" | "Reshape" | "Squeeze" | "Unsqueeze" | "Identity" | "Flatten" | "Gather" => {
                if let Some(v) = known.get(&first).copied() {
                    for o in &n.output {
                        known.insert(o.clone(), v);
                    }
                }
                out.push(n);
            }
            "Equal" if n.input.len() == 2 && !n.output.is_empty() => {
                let a = &n.input[0];
                let b = &n.input[1];
                let value = |x: &String| known.get(x).or_else(|| consts.get(x)).copied();
                if known.contains_key(a) || known.contains_key(b) {
                    if let (Some(x), Some(y)) = (value(a), value(b)) {
                        known.insert(n.output[0].clone(), (x == y) as i64);
                    }
                }
                out.push(n);
            }
            "If" if known.contains_key(&first) => {
                changed |= take_branch(n, known[&first] != 0, &mut g.initializer, &mut out);
            }
            _ => out.push(n),
        }
    }
    g.node = out;
    changed
}

/// Appends to `out` the nodes of the branch of the `If` node `n` that `cond` selects (its
/// initializers to `inits`) and an `Identity` per output; or `n` itself when it has no such
/// branch. Returns true when the branch was taken.
fn take_branch(
    n: pb::NodeProto,
    cond: bool,
    inits: &mut Vec<pb::TensorProto>,
    out: &mut Vec<pb::NodeProto>,
) -> bool {
    let name = if cond { "then_branch" } else { "else_branch" };
    let body = n
        .attribute
        .iter()
        .find(|a| a.name == name)
        .and_then(|a| a.g.clone());
    match body {
        Some(body) if body.output.len() == n.output.len() => {
            inits.extend(body.initializer);
            out.extend(body.node);
            for (o, bo) in n.output.iter().zip(&body.output) {
                out.push(pb::NodeProto {
                    name: format!("{}__taken_{}", n.name, o),
                    op_type: "Identity".into(),
                    input: vec![bo.name.clone()],
                    output: vec![o.clone()],
                    ..Default::default()
                });
            }
            true
        }
        _ => {
            out.push(n);
            false
        }
    }
}

/// Replaces the `If` nodes named in `decided` (name → condition) by the branch taken.
fn inline_decided_ifs(g: &mut pb::GraphProto, decided: &HashMap<String, bool>) -> bool {
    let mut changed = false;
    let mut out = Vec::with_capacity(g.node.len());
    for n in std::mem::take(&mut g.node) {
        match decided.get(&n.name) {
            Some(&c) if n.op_type == "If" => {
                changed |= take_branch(n, c, &mut g.initializer, &mut out)
            }
            _ => out.push(n),
        }
    }
    g.node = out;
    changed
}

type Runnable = Arc<TypedRunnableModel>;

/// Loads and optimizes `model` in tract, refusing a model whose intermediate tensors are larger
/// than `limit` bytes. A panic inside tract is caught.
fn build(
    model: &pb::ModelProto,
    dir: &Path,
    inputs: &[Tensor],
    limit: u64,
    budget: u64,
) -> Result<Runnable, String> {
    let alloc = limit.max(model.encoded_len() as u64);
    guarded(alloc, || {
        let onnx = tract_onnx::onnx();
        let parse = |m: &pb::ModelProto| -> TractResult<InferenceModel> {
            let mut parsed = onnx.parse(m, dir.to_str())?.model;
            for (i, t) in inputs.iter().enumerate() {
                parsed.set_input_fact(i, InferenceFact::from(t.clone()).without_value())?;
            }
            Ok(parsed)
        };
        // An `If` whose condition tract's analysis finds constant (a shape test, once the input
        // shapes are concrete) is replaced by the branch taken: tract types both branches and
        // refuses branches whose output shapes differ.
        let mut proto = model.clone();
        let mut parsed = parse(&proto)?;
        for _ in 0..4 {
            let mut probe = parsed.clone();
            let _ = probe.analyse(true);
            let mut decided = HashMap::new();
            for node in probe.nodes() {
                if node.op.name() != "If" {
                    continue;
                }
                let Some(cond) = node.inputs.first() else {
                    continue;
                };
                if let Some(v) = probe
                    .outlet_fact(*cond)
                    .ok()
                    .and_then(|f| f.value.concretize())
                {
                    if let Ok(c) = v.cast_to_scalar::<bool>() {
                        decided.insert(node.name.clone(), c);
                    }
                }
            }
            let changed = match proto.graph.as_mut() {
                Some(g) if !decided.is_empty() => inline_decided_ifs(g, &decided),
                _ => false,
            };
            if !changed {
                break;
            }
            parsed = parse(&proto)?;
        }
        // What the tensors whose shapes the analysis knows take in all (constants folded by
        // the optimizer are computed there: six constant Ranges of 960 MB each peaked at
        // 5.5 GB), checked before anything is computed.
        let mut probe = parsed.clone();
        let _ = probe.analyse(false);
        let mut total: u64 = inputs
            .iter()
            .map(|t| t.len() as u64 * t.datum_type().size_of() as u64)
            .sum();
        for node in probe.nodes() {
            for o in &node.outputs {
                let (Some(shape), Some(dt)) =
                    (o.fact.shape.concretize(), o.fact.datum_type.concretize())
                else {
                    continue;
                };
                if shape.len() > MAX_RANK {
                    anyhow::bail!(
                        "node '{}' makes a tensor of rank {} (tract is given ranks up to {MAX_RANK})",
                        node.name,
                        shape.len()
                    );
                }
                let bytes = shape.iter().try_fold(dt.size_of() as u64, |n, d| {
                    d.to_i64()
                        .ok()
                        .and_then(|d| u64::try_from(d).ok())
                        .and_then(|d| n.checked_mul(d))
                });
                total = bytes.and_then(|b| total.checked_add(b)).unwrap_or(u64::MAX);
            }
        }
        if total > budget {
            anyhow::bail!(
                "over the memory budget: the model's tensors take {total} bytes in all (inputs, constants and intermediates), the verification memory budget is {budget} bytes (--verify-memory)"
            );
        }
        let typed = parsed.into_optimized()?;
        for node in typed.nodes() {
            for o in &node.outputs {
                let Some(shape) = o.fact.shape.as_concrete() else {
                    continue;
                };
                let bytes = shape
                    .iter()
                    .try_fold(o.fact.datum_type.size_of() as u64, |n, d| {
                        n.checked_mul(*d as u64)
                    });
                if bytes.is_none_or(|b| b > limit) {
                    anyhow::bail!(
                        "inputs too large to run: node '{}' would make a tensor of shape {shape:?} (limit {limit} bytes)",
                        node.name
                    );
                }
            }
        }
        typed.into_runnable()
    })
}

fn run(plan: &Runnable, inputs: &[Tensor], limit: u64) -> Result<TVec<TValue>, String> {
    guarded(limit, || {
        plan.run(inputs.iter().cloned().map(TValue::from).collect())
    })
}

thread_local! {
    static QUIET_PANICS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static ALLOC_LIMIT: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

/// The largest single allocation the current thread may make: `usize::MAX`, except while tract
/// loads or runs a model for verification, when it is the verification's limit (the larger of
/// [`VerifyOptions::max_input_bytes`] and the model's serialized size).
///
/// Tract sizes some tensors from values in the model (`Range(0, 10^12)` asks for 8 TB). A global
/// allocator that returns null above this limit (the `slice-opt` binary's does) turns such a
/// request into a panic inside tract (tract asserts its allocations), which verification catches
/// and reports, instead of an abort or the machine running out of memory.
pub fn alloc_limit() -> usize {
    ALLOC_LIMIT.try_with(|c| c.get()).unwrap_or(usize::MAX)
}

/// Runs `f`, turning an error into its first line and a panic into "tract panicked: ...".
/// The panic message is not printed (the default hook still prints panics outside of this).
fn guarded<T>(limit: u64, f: impl FnOnce() -> TractResult<T>) -> Result<T, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET_PANICS.with(|q| q.get()) {
                previous(info)
            }
        }));
    });
    QUIET_PANICS.with(|q| q.set(true));
    let previous = ALLOC_LIMIT.with(|c| c.replace(usize::try_from(limit).unwrap_or(usize::MAX)));
    let r = catch_unwind(AssertUnwindSafe(f));
    ALLOC_LIMIT.with(|c| c.set(previous));
    QUIET_PANICS.with(|q| q.set(false));
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(first_line(&e)),
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Err(format!("tract panicked: {msg}"))
        }
    }
}

fn same(a: &TValue, b: &TValue) -> Result<(), String> {
    if a.shape() != b.shape() {
        return Err(format!("shape {:?} vs {:?}", a.shape(), b.shape()));
    }
    if a.datum_type() != b.datum_type() {
        return Err(format!("type {:?} vs {:?}", a.datum_type(), b.datum_type()));
    }
    let fa = a
        .clone()
        .into_tensor()
        .cast_to::<f64>()
        .map(|t| t.into_owned());
    let fb = b
        .clone()
        .into_tensor()
        .cast_to::<f64>()
        .map(|t| t.into_owned());
    match (fa, fb) {
        (Ok(fa), Ok(fb)) => {
            let va = fa
                .to_plain_array_view::<f64>()
                .map_err(|e| format!("{e:#}"))?;
            let vb = fb
                .to_plain_array_view::<f64>()
                .map_err(|e| format!("{e:#}"))?;
            for (i, (x, y)) in va.iter().zip(vb.iter()).enumerate() {
                let equal = (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-5 + 1e-5 * y.abs();
                if !equal {
                    return Err(format!("element {i}: {x} vs {y}"));
                }
            }
            Ok(())
        }
        _ => {
            if a == b {
                Ok(())
            } else {
                Err("values differ".into())
            }
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
        let unnamed = d
            .dims
            .iter()
            .flatten()
            .any(|x| !matches!(x, Decl::Param(_)) && !matches!(x, Decl::Known(v) if *v >= 0));
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
            let _ = tx.send(verify_protos(a, b, dir, &opts));
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

/// The bytes of the constants of `g` (not its subgraphs): initializers, `Constant` nodes, and
/// the outputs of `Range` and `ConstantOfShape` nodes whose inputs are constants (what tract's
/// analysis computes before anything runs). Saturates instead of overflowing.
fn constant_bytes(g: &pb::GraphProto) -> u64 {
    fn count(t: &pb::TensorProto) -> Option<u64> {
        t.dims
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(u64::try_from(d).ok()?))
    }
    fn bytes(t: &pb::TensorProto) -> u64 {
        count(t)
            .and_then(|n| n.checked_mul(elem_size(t.data_type).unwrap_or(4)))
            .unwrap_or(u64::MAX)
    }
    fn scalar(t: &pb::TensorProto) -> Option<f64> {
        if count(t)? != 1 {
            return None;
        }
        let raw = |n: usize| t.raw_data.get(..n);
        match t.data_type {
            F32 => t
                .float_data
                .first()
                .copied()
                .or_else(|| Some(f32::from_le_bytes(raw(4)?.try_into().ok()?)))
                .map(f64::from),
            F64 => t
                .double_data
                .first()
                .copied()
                .or_else(|| Some(f64::from_le_bytes(raw(8)?.try_into().ok()?))),
            I32 | I64 => scalar_of(t).map(|v| v as f64),
            _ => None,
        }
    }
    let mut consts: HashMap<&str, &pb::TensorProto> =
        g.initializer.iter().map(|t| (t.name.as_str(), t)).collect();
    for n in &g.node {
        if n.op_type == "Constant" {
            if let (Some(out), Some(t)) = (
                n.output.first(),
                n.attribute
                    .iter()
                    .find(|a| a.name == "value")
                    .and_then(|a| a.t.as_ref()),
            ) {
                consts.insert(out.as_str(), t);
            }
        }
    }
    let mut total = consts
        .values()
        .fold(0u64, |n, t| n.saturating_add(bytes(t)));
    let input = |n: &pb::NodeProto, i: usize| n.input.get(i).and_then(|x| consts.get(x.as_str()));
    for n in &g.node {
        let made = match n.op_type.as_str() {
            "Range" => (|| {
                let (s, l, d) = (input(n, 0)?, input(n, 1)?, input(n, 2)?);
                let (start, limit, delta) = (scalar(s)?, scalar(l)?, scalar(d)?);
                let len = ((limit - start) / delta).ceil();
                let len = if len.is_finite() {
                    len.max(0.0)
                } else {
                    f64::MAX
                };
                Some((len * elem_size(s.data_type).unwrap_or(4) as f64) as u64)
            })(),
            "ConstantOfShape" => (|| {
                let shape = input(n, 0)?;
                let dims: Vec<i64> = if !shape.int64_data.is_empty() {
                    shape.int64_data.clone()
                } else {
                    shape
                        .raw_data
                        .chunks_exact(8)
                        .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
                        .collect()
                };
                let elem = n
                    .attribute
                    .iter()
                    .find(|a| a.name == "value")
                    .and_then(|a| a.t.as_ref())
                    .and_then(|t| elem_size(t.data_type))
                    .unwrap_or(4);
                dims.iter()
                    .try_fold(elem, |b, &d| b.checked_mul(u64::try_from(d).ok()?))
                    .or(Some(u64::MAX))
            })(),
            _ => None,
        };
        total = total.saturating_add(made.unwrap_or(0));
    }
    total
}

/// Why `m` is beyond what tract handles in reasonable time, if it is: a node with more than
/// [`MAX_NODE_OUTPUTS`] outputs, or a declared tensor (input, output, value_info, initializer)
/// of rank above [`MAX_RANK`], in the graph or a subgraph.
fn beyond_tract(m: &pb::ModelProto) -> Option<String> {
    fn rank_of(v: &pb::ValueInfoProto) -> usize {
        match v.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            Some(pb::type_proto::Value::TensorType(t)) => {
                t.shape.as_ref().map_or(0, |s| s.dim.len())
            }
            _ => 0,
        }
    }
    fn walk(g: &pb::GraphProto) -> Option<String> {
        let values = g.input.iter().chain(&g.output).chain(&g.value_info);
        if let Some(v) = values.clone().find(|v| rank_of(v) > MAX_RANK) {
            return Some(format!(
                "'{}' has rank {}: tract is given ranks up to {MAX_RANK}",
                v.name,
                rank_of(v)
            ));
        }
        if let Some(t) = g.initializer.iter().find(|t| t.dims.len() > MAX_RANK) {
            return Some(format!(
                "initializer '{}' has rank {}: tract is given ranks up to {MAX_RANK}",
                t.name,
                t.dims.len()
            ));
        }
        for (i, n) in g.node.iter().enumerate() {
            if n.output.len() > MAX_NODE_OUTPUTS {
                let name = if n.name.is_empty() {
                    format!("#{i}")
                } else {
                    format!("'{}'", n.name)
                };
                return Some(format!(
                    "node {name} ({}) has {} outputs: tract's optimizer is superlinear in them, it is given nodes of up to {MAX_NODE_OUTPUTS}",
                    n.op_type,
                    n.output.len()
                ));
            }
            for a in &n.attribute {
                for sg in a.g.iter().chain(&a.graphs) {
                    if let Some(why) = walk(sg) {
                        return Some(why);
                    }
                }
            }
        }
        None
    }
    walk(m.graph.as_ref()?)
}

/// Bytes of the live allocations of at least [`LARGE`] bytes (tensor data), counted by the
/// binary's allocator through [`charge`] and [`refund`].
static LARGE_LIVE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// The memory budget of the verifications running (0: none), and what [`LARGE_LIVE`] was
/// when the first of them started.
static BUDGET: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static BASE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static RUNNING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Allocations from this size up are counted against the memory budget: tensor data, which
/// tract allocates through its `Blob` and checks (a refused allocation is a panic there, which
/// verification catches), not the small allocations of its graph structures (a refused one
/// would abort the process).
pub const LARGE: usize = 16 << 20;

/// For a global allocator: counts an allocation of `size` bytes about to be made and says
/// whether it may be made. While a verification runs, one that would bring the large
/// allocations held since it started above [`VerifyOptions::memory_budget`] may not (the
/// allocator then returns null). With `force`, it is counted whatever the budget.
pub fn charge(size: usize, force: bool) -> bool {
    use std::sync::atomic::Ordering;
    if size < LARGE {
        return true;
    }
    let size = size as u64;
    let now = LARGE_LIVE.fetch_add(size, Ordering::Relaxed) + size;
    let budget = BUDGET.load(Ordering::Relaxed);
    if !force && budget != 0 && now.saturating_sub(BASE.load(Ordering::Relaxed)) > budget {
        LARGE_LIVE.fetch_sub(size, Ordering::Relaxed);
        return false;
    }
    true
}

/// For a global allocator: an allocation of `size` bytes counted by [`charge`] was freed (or
/// could not be made).
pub fn refund(size: usize) {
    use std::sync::atomic::Ordering;
    if size >= LARGE {
        LARGE_LIVE.fetch_sub(size as u64, Ordering::Relaxed);
    }
}

/// The memory budget in force while it lives (verifications running at once share the first
/// one's).
struct Budget;

impl Budget {
    fn start(budget: u64) -> Budget {
        use std::sync::atomic::Ordering;
        if RUNNING.fetch_add(1, Ordering::AcqRel) == 0 {
            BASE.store(LARGE_LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
            BUDGET.store(budget.max(1), Ordering::Relaxed);
        }
        Budget
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering;
        if RUNNING.fetch_sub(1, Ordering::AcqRel) == 1 {
            BUDGET.store(0, Ordering::Relaxed);
        }
    }
}

/// [`verify_onnx_with`] on the encoded models, on the calling thread.
fn verify_protos(
    a: pb::ModelProto,
    b: pb::ModelProto,
    dir: std::path::PathBuf,
    opts: &VerifyOptions,
) -> Verification {
    let Some(graph) = a.graph.as_ref() else {
        return Verification::NotVerified("the model has no graph".into());
    };
    let decls = graph_inputs(graph);
    let mut controls: Vec<(&InputDecl, Vec<i64>)> = Vec::new();
    let mut data: Vec<&InputDecl> = Vec::new();
    for d in &decls {
        match control_values(graph, d) {
            Some(v) => controls.push((d, v)),
            None => data.push(d),
        }
    }
    // Every combination of control values (at most 16 cases).
    let mut cases: Vec<Vec<(&InputDecl, i64)>> = vec![Vec::new()];
    for (d, values) in &controls {
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
    let show_case = |c: &[(&InputDecl, i64)]| -> String {
        c.iter()
            .map(|(d, v)| format!("{}={v}", d.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let labelled = |label: &str, msg: &str| -> String {
        if label.is_empty() {
            msg.to_string()
        } else {
            format!("{label}: {msg}")
        }
    };

    // Each case gets its binding: the first try of the sizes with which tract runs the original
    // in that case (a control value may need other sizes than the others: silero-vad takes 512
    // samples at sr=16000 and 256 at sr=8000). Sizes that served a case are tried first next.
    let mut order: Vec<Sizes> = DEFAULT_SIZES.to_vec();
    let mut bound = Vec::with_capacity(cases.len());
    for case in &cases {
        match find_binding(&a, &dir, &data, case, &order, opts) {
            Err(BindError::Fatal(e)) => return Verification::NotVerified(e),
            Err(BindError::NoSize(e)) => bound.push(Err(e)),
            Ok(found) => {
                if let Some(i) = order.iter().position(|s| *s == found.sizes) {
                    let s = order.remove(i);
                    order.insert(0, s);
                }
                bound.push(Ok(found));
            }
        }
    }

    let mut outputs = 0;
    let mut verified_cases = Vec::new();
    let mut bindings = Vec::new();
    let mut unverified = Vec::new();
    for (case, found) in cases.iter().zip(bound) {
        let label = show_case(case);
        let Bound {
            shapes,
            names,
            plan: plan_a,
            ..
        } = match found {
            Ok(f) => f,
            Err(e) => {
                unverified.push(labelled(&label, &e));
                continue;
            }
        };
        let by_name: HashMap<&str, &[usize]> = data
            .iter()
            .zip(&shapes)
            .map(|(d, s)| (d.name.as_str(), s.as_slice()))
            .collect();
        let mut rng = Rng(opts.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut sets = Vec::new();
        for _ in 0..opts.runs.max(1) {
            let t: Result<Vec<Tensor>, String> = data
                .iter()
                .zip(&shapes)
                .map(|(d, s)| random_tensor(d, s, &mut rng))
                .collect();
            match t {
                Ok(t) => sets.push(t),
                Err(e) => return Verification::NotVerified(e),
            }
        }
        let plan_b = match build(
            &prepare(&b, &by_name, &names, case),
            &dir,
            &sets[0],
            opts.max_input_bytes,
            opts.memory_budget,
        ) {
            Ok(p) => p,
            Err(e) => {
                return Verification::Failed(format!(
                    "tract cannot run the transformed model{}: {e}",
                    if label.is_empty() {
                        String::new()
                    } else {
                        format!(" ({label})")
                    }
                ))
            }
        };
        let mut case_ok = true;
        for (r, inputs) in sets.iter().enumerate() {
            let want = match run(&plan_a, inputs, opts.max_input_bytes) {
                Ok(o) => o,
                Err(e) => {
                    unverified.push(labelled(
                        &label,
                        &format!("tract cannot run the original: {e}"),
                    ));
                    case_ok = false;
                    break;
                }
            };
            let got = match run(&plan_b, inputs, opts.max_input_bytes) {
                Ok(o) => o,
                Err(e) => {
                    return Verification::Failed(format!(
                        "tract cannot run the transformed model: {e}"
                    ))
                }
            };
            if want.len() != got.len() {
                return Verification::Failed(format!(
                    "{} outputs before, {} after",
                    want.len(),
                    got.len()
                ));
            }
            for (i, (w, g)) in want.iter().zip(got.iter()).enumerate() {
                if let Err(e) = same(g, w) {
                    let at = if label.is_empty() {
                        String::new()
                    } else {
                        format!(" ({label})")
                    };
                    return Verification::Failed(format!("run {r}{at}, output {i}: {e}"));
                }
            }
            outputs += want.len();
        }
        if case_ok {
            verified_cases.push(label);
            bindings.push(show_bound(&data, &shapes, &names));
        }
    }
    if verified_cases.is_empty() {
        return Verification::NotVerified(unverified.join("; "));
    }
    let mut detail = Vec::new();
    let one_binding = bindings.windows(2).all(|w| w[0] == w[1]);
    if one_binding {
        if !bindings[0].is_empty() {
            detail.push(format!("dims bound: {}", bindings[0]));
        }
        if !controls.is_empty() {
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

/// `(axis 0, middle axes, last axis)` sizes for the unbound input dims, see [`DEFAULT_SIZES`].
type Sizes = (usize, usize, usize);

/// The binding found for one case, with the original's plan built for it.
struct Bound {
    shapes: Vec<Vec<usize>>,
    names: BTreeMap<String, usize>,
    plan: Runnable,
    sizes: Sizes,
}

enum BindError {
    /// Verification cannot run at all (an input without a declared shape, an unsupported type).
    Fatal(String),
    /// No size in the list lets tract run the original in this case.
    NoSize(String),
}

/// Tries `order` in turn for the case `case`: the first sizes with which tract builds and runs
/// the original (one seeded random input set) are kept.
fn find_binding(
    a: &pb::ModelProto,
    dir: &Path,
    data: &[&InputDecl],
    case: &[(&InputDecl, i64)],
    order: &[Sizes],
    opts: &VerifyOptions,
) -> Result<Bound, BindError> {
    let mut first_error = None;
    let mut last_error = None;
    let mut tries = 0;
    for &sizes in order {
        let (shapes, names) = bind_shapes(data, &opts.bind, sizes).map_err(BindError::Fatal)?;
        match input_bytes(data, &shapes) {
            Some(n) if n <= opts.max_input_bytes => {}
            n => {
                if first_error.is_none() {
                    first_error = Some(format!(
                        "inputs too large to run: {} bytes with {} (limit {} bytes)",
                        n.map(|n| n.to_string())
                            .unwrap_or_else(|| "more than 2^64".into()),
                        if names.is_empty() {
                            "the declared shapes".to_string()
                        } else {
                            show_binding(&names)
                        },
                        opts.max_input_bytes
                    ));
                }
                continue;
            }
        }
        tries += 1;
        let mut rng = Rng(opts.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let tensors: Vec<Tensor> = data
            .iter()
            .zip(&shapes)
            .map(|(d, s)| random_tensor(d, s, &mut rng))
            .collect::<Result<_, _>>()
            .map_err(BindError::Fatal)?;
        let by_name: HashMap<&str, &[usize]> = data
            .iter()
            .zip(&shapes)
            .map(|(d, s)| (d.name.as_str(), s.as_slice()))
            .collect();
        let attempt = build(
            &prepare(a, &by_name, &names, case),
            dir,
            &tensors,
            opts.max_input_bytes,
            opts.memory_budget,
        )
        .and_then(|plan| run(&plan, &tensors, opts.max_input_bytes).map(|_| plan));
        match attempt {
            Ok(plan) => {
                return Ok(Bound {
                    shapes,
                    names,
                    plan,
                    sizes,
                })
            }
            Err(e) => {
                if first_error.is_none() {
                    first_error = Some(e.clone());
                }
                last_error = Some(e);
                // Only a binding with no symbol to grow can stop early.
                if names.is_empty()
                    && data.iter().all(|d| {
                        d.dims
                            .iter()
                            .flatten()
                            .all(|x| matches!(x, Decl::Known(v) if *v >= 0))
                    })
                {
                    break;
                }
            }
        }
    }
    let first = first_error.unwrap_or_default();
    Err(BindError::NoSize(match last_error {
        _ if first.starts_with("inputs too large") => first,
        Some(last) if tries > 1 => format!(
            "tract cannot run the original with any of {tries} sizes of the unbound input dims; with the last: {last}"
        ),
        _ => format!("tract cannot run the original: {first}"),
    }))
}

fn first_line(e: &anyhow::Error) -> String {
    format!("{e:#}")
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}
