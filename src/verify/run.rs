//! Building and running a model in tract within the memory and time budgets, and comparing outputs.

use super::*;

pub(super) type Runnable = Arc<TypedRunnableModel>;

/// Loads and optimizes `model` in tract, refusing a model whose intermediate tensors are larger
/// than `limit` bytes. A panic inside tract is caught.
pub(super) fn build(
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
                // A dim tract's analysis leaves symbolic (a size known only once the model
                // runs: a `NonZero`, a `Range` of computed bounds) is not known here; the
                // allocation limit guards such a tensor when it is made.
                let Some(dims) = shape
                    .iter()
                    .map(|d| d.to_i64().ok().and_then(|d| u64::try_from(d).ok()))
                    .collect::<Option<Vec<u64>>>()
                else {
                    continue;
                };
                let bytes = dims
                    .iter()
                    .try_fold(dt.size_of() as u64, |n, &d| n.checked_mul(d));
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

pub(super) fn run(plan: &Runnable, inputs: &[Tensor], limit: u64) -> Result<TVec<TValue>, String> {
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
#[inline]
pub fn alloc_limit() -> usize {
    ALLOC_LIMIT.try_with(|c| c.get()).unwrap_or(usize::MAX)
}

/// Runs `f`, turning an error into its first line and a panic into "tract panicked: ...".
/// The panic message is not printed (the default hook still prints panics outside of this).
pub(super) fn guarded<T>(limit: u64, f: impl FnOnce() -> TractResult<T>) -> Result<T, String> {
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

pub(super) fn same(a: &TValue, b: &TValue) -> Result<(), String> {
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

/// The bytes of the constants of `g` (not its subgraphs): initializers, `Constant` nodes, and
/// the outputs of `Range` and `ConstantOfShape` nodes whose inputs are constants (what tract's
/// analysis computes before anything runs). Saturates instead of overflowing.
pub(super) fn constant_bytes(g: &pb::GraphProto) -> u64 {
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
pub(super) fn beyond_tract(m: &pb::ModelProto) -> Option<String> {
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
#[inline]
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
#[inline]
pub fn refund(size: usize) {
    use std::sync::atomic::Ordering;
    if size >= LARGE {
        LARGE_LIVE.fetch_sub(size as u64, Ordering::Relaxed);
    }
}

/// The memory budget in force while it lives (verifications running at once share the first
/// one's).
pub(super) struct Budget;

impl Budget {
    pub(super) fn start(budget: u64) -> Budget {
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
