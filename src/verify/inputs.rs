//! The inputs of a verification: input declarations, dims bound to sizes, seeded random tensors,
//! and the model as tract sees it for one case.

use super::*;
use crate::semantics::Dim;

pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// One graph input as declared.
#[derive(Debug, Clone)]
pub(super) struct InputDecl {
    pub(super) name: String,
    pub(super) elem_type: i32,
    /// `None`: no shape declared.
    pub(super) dims: Option<Vec<Decl>>,
    /// Random integer values are drawn below this (see [`index_limit`]).
    pub(super) high: u64,
}

/// Integer inputs take random values in `[0, DEFAULT_HIGH)`, or fewer (see [`index_limit`]).
pub(super) const DEFAULT_HIGH: u64 = 4;

/// The number of rows of the smallest constant table an integer input indexes: a `Gather`
/// whose indices are the input (through `Cast`, `Reshape`, `Squeeze`, `Unsqueeze`,
/// `Identity`, `Flatten`) and whose data is an initializer or a `Constant`; the size of its
/// gathered axis. BERT's `token_type_ids` index a table of 2 rows: a 2 or a 3 there is out of
/// range (tract panics; ONNX Runtime refuses it), not an input the model admits.
pub(super) fn index_limit(g: &pb::GraphProto, input: &str) -> Option<u64> {
    let mut tables: HashMap<&str, &[i64]> = g
        .initializer
        .iter()
        .map(|t| (t.name.as_str(), t.dims.as_slice()))
        .collect();
    for n in &g.node {
        if n.op_type != "Constant" {
            continue;
        }
        let value = n.attribute.iter().find(|a| a.name == "value");
        if let (Some(o), Some(t)) = (n.output.first(), value.and_then(|a| a.t.as_ref())) {
            tables.insert(o.as_str(), t.dims.as_slice());
        }
    }
    let mut derived: HashSet<&str> = HashSet::from([input]);
    let mut limit: Option<u64> = None;
    for n in &g.node {
        let first = n.input.first().map(String::as_str).unwrap_or("");
        match n.op_type.as_str() {
            "Cast" | "Reshape" | "Squeeze" | "Unsqueeze" | "Identity" | "Flatten"
                if derived.contains(first) =>
            {
                derived.extend(n.output.iter().map(String::as_str));
            }
            "Gather" if n.input.len() == 2 && derived.contains(n.input[1].as_str()) => {
                let Some(dims) = tables.get(n.input[0].as_str()) else {
                    continue;
                };
                let axis = n
                    .attribute
                    .iter()
                    .find(|a| a.name == "axis")
                    .map_or(0, |a| a.i);
                let axis = if axis < 0 {
                    axis + dims.len() as i64
                } else {
                    axis
                };
                let rows = usize::try_from(axis)
                    .ok()
                    .and_then(|a| dims.get(a))
                    .and_then(|&d| u64::try_from(d).ok())
                    .filter(|&d| d >= 1);
                if let Some(rows) = rows {
                    limit = Some(limit.map_or(rows, |l| l.min(rows)));
                }
            }
            _ => {}
        }
    }
    limit
}

#[derive(Debug, Clone)]
pub(super) enum Decl {
    Known(i64),
    Param(String),
    Unknown,
}

pub(super) const F32: i32 = 1;
pub(super) const I32: i32 = 6;
pub(super) const I64: i32 = 7;
pub(super) const BOOL: i32 = 9;
pub(super) const F16: i32 = 10;
pub(super) const F64: i32 = 11;

pub(super) fn elem_size(t: i32) -> Option<u64> {
    match t {
        F32 | I32 => Some(4),
        I64 | F64 => Some(8),
        BOOL => Some(1),
        F16 => Some(2),
        _ => None,
    }
}

pub(super) fn graph_inputs(g: &pb::GraphProto) -> Vec<InputDecl> {
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
                high: index_limit(g, &i.name).map_or(DEFAULT_HIGH, |l| l.min(DEFAULT_HIGH)),
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
pub(super) fn scalar_of(t: &pb::TensorProto) -> Option<i64> {
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

/// Concrete shapes of the non-control inputs, and the size given to each symbol.
pub(super) type Binding = (Vec<Vec<usize>>, BTreeMap<String, usize>);

/// Concrete shapes of the non-control inputs for one try, or why not.
///
/// Each declared dim is read as the expression it is, with the symbols `rel` solved for
/// replaced by what they stand for ([`Relations::dim`]). A symbol gets its size from `bind`,
/// else from the first input axis it stands alone on, else from the first axis of an expression
/// it is part of (`sizes` by the axis' position); every dim is then evaluated. The sizes
/// returned are those of every symbol the inputs name, the ones solved for included.
pub(super) fn bind_shapes(
    inputs: &[&InputDecl],
    bind: &BTreeMap<String, usize>,
    sizes: (usize, usize, usize),
    rel: &Relations,
) -> Result<Binding, String> {
    let mut names: HashMap<String, i64> = bind
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), i64::try_from(*v).ok()?)))
        .collect();
    let mut decls: Vec<Vec<(Option<Dim>, usize)>> = Vec::new();
    for i in inputs {
        let dims = i
            .dims
            .as_ref()
            .ok_or_else(|| format!("input '{}' has no declared shape", i.name))?;
        let row = dims
            .iter()
            .enumerate()
            .map(|(axis, d)| {
                let fallback = if axis + 1 == dims.len() {
                    sizes.2
                } else if axis == 0 {
                    sizes.0
                } else {
                    sizes.1
                };
                let dim = match d {
                    Decl::Known(v) if *v >= 0 => Some(Dim::known(*v)),
                    Decl::Param(p) => Some(rel.dim(p)),
                    _ => None,
                };
                (dim, fallback)
            })
            .collect();
        decls.push(row);
    }
    // Symbols standing alone on an axis first, then those only met inside expressions.
    for alone in [true, false] {
        for (d, fallback) in decls.iter().flatten() {
            let Some(d) = d else { continue };
            let symbols = d.symbols();
            if alone && symbols.len() != 1 {
                continue;
            }
            for s in symbols {
                if alone && d.to_onnx().as_deref() != Some(s.name()) {
                    continue;
                }
                names
                    .entry(s.name().to_string())
                    .or_insert(i64::try_from(*fallback).unwrap_or(i64::MAX));
            }
        }
    }
    let mut shapes = Vec::with_capacity(inputs.len());
    for (i, row) in inputs.iter().zip(&decls) {
        let mut shape = Vec::with_capacity(row.len());
        for (axis, (d, fallback)) in row.iter().enumerate() {
            let v = match d {
                None => *fallback,
                Some(d) => {
                    let v = d.eval(&names).ok_or_else(|| {
                        format!("input '{}' axis {axis}: cannot evaluate {d}", i.name)
                    })?;
                    usize::try_from(v).ok().filter(|&v| v >= 1).ok_or_else(|| {
                        format!(
                            "input '{}' axis {axis}: {} is {v} with {}",
                            i.name,
                            d.to_onnx().unwrap_or_default(),
                            show_sizes(&names)
                        )
                    })?
                }
            };
            shape.push(v);
        }
        shapes.push(shape);
    }
    // Every symbol the declarations name, solved ones included (`total` of `total = past +
    // seq`), for the graph's other declarations and the verdict.
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    for i in inputs {
        for d in i.dims.iter().flatten() {
            let Decl::Param(p) = d else { continue };
            for s in param_dim(p).symbols() {
                let e = rel.dim(s.name());
                if let Some(v) = e.eval(&names).and_then(|v| usize::try_from(v).ok()) {
                    used.insert(s.name().to_string(), v);
                }
            }
        }
    }
    Ok((shapes, used))
}

fn show_sizes(names: &HashMap<String, i64>) -> String {
    let mut v: Vec<String> = names.iter().map(|(k, v)| format!("{k}={v}")).collect();
    v.sort();
    v.join(", ")
}

pub(super) fn input_bytes(inputs: &[&InputDecl], shapes: &[Vec<usize>]) -> Option<u64> {
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

pub(super) fn random_tensor(
    input: &InputDecl,
    shape: &[usize],
    rng: &mut Rng,
) -> Result<Tensor, String> {
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
                .map(|_| (rng.next() % input.high) as i64)
                .collect::<Vec<i64>>(),
        ),
        I32 => Tensor::from_shape(
            shape,
            &(0..count)
                .map(|_| (rng.next() % input.high) as i32)
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
pub(super) fn bind_graph_dims(g: &mut pb::GraphProto, names: &BTreeMap<String, usize>) {
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
pub(super) fn prepare(
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
pub(super) fn unique_node_names(g: &mut pb::GraphProto) {
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

/// `(axis 0, middle axes, last axis)` sizes for the unbound input dims, see [`DEFAULT_SIZES`].
pub(super) type Sizes = (usize, usize, usize);

/// The binding found for one case, with the original's plan built for it.
pub(super) struct Bound {
    pub(super) shapes: Vec<Vec<usize>>,
    pub(super) names: BTreeMap<String, usize>,
    pub(super) plan: Runnable,
    pub(super) sizes: Sizes,
    /// Which of the relations tried served (0: those found; see `bind_cases`).
    pub(super) relations: usize,
}

/// How a verdict on a model with an op tract-onnx lacks begins.
pub(super) const UNIMPLEMENTED: &str = "tract-onnx does not implement the op";

/// The op tract names in an error as not implemented (`Unimplemented(Loop)`), if any.
pub(super) fn unimplemented_op(e: &str) -> Option<&str> {
    let at = e.find("Unimplemented(")? + "Unimplemented(".len();
    let op = e[at..].split(')').next()?;
    (!op.is_empty() && op.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(op)
}

pub(super) enum BindError {
    /// Verification cannot run at all (an input without a declared shape, an unsupported type).
    Fatal(String),
    /// No size in the list lets tract run the original in this case.
    NoSize(String),
}

/// Tries `order` in turn for the case `case`: the first sizes with which tract builds and runs
/// the original (one seeded random input set) are kept.
pub(super) fn find_binding(
    a: &pb::ModelProto,
    dir: &Path,
    data: &[&InputDecl],
    case: &[(&InputDecl, i64)],
    order: &[Sizes],
    opts: &VerifyOptions,
    rel: &Relations,
) -> Result<Bound, BindError> {
    let mut first_error = None;
    let mut last_error = None;
    let mut tries = 0;
    for &sizes in order {
        let (shapes, names) = match bind_shapes(data, &opts.bind, sizes, rel) {
            Ok(b) => b,
            Err(e) => {
                // These sizes make a dim the model states as an expression zero or negative
                // (`past = total - seq` with total = seq): the next ones may not.
                if first_error.is_none() {
                    first_error = Some(e.clone());
                }
                last_error = Some(e);
                continue;
            }
        };
        if let Some(why) = rel.contradiction(&names) {
            return Err(BindError::Fatal(format!(
                "the sizes contradict a relation the model states: {why}"
            )));
        }
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
                    relations: 0,
                })
            }
            Err(e) => {
                // No size makes tract implement an op: say which, and try no other.
                if let Some(op) = unimplemented_op(&e) {
                    return Err(BindError::NoSize(format!("{UNIMPLEMENTED} {op}: {e}")));
                }
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
