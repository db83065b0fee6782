//! Shapes in: the sizes and bounds a user gives a model's inputs before the passes run
//! (`--dim NAME=SIZE`, `--dim NAME=LO..HI`, `--input-shape INPUT=D1,D2,...`; the library's
//! [`crate::Pipeline::dim`] and [`crate::Pipeline::input_shape`]).
//!
//! [`apply`] checks what is given against the model and rewrites its declarations: a fixed
//! symbol becomes its size in every dim that names it (ONNX graph inputs, `value_info` and
//! graph outputs: `batch` becomes `1`, `seq - 1` becomes `127`), an input given a whole shape
//! gets it, and an OpenVINO `Parameter` gets its `shape` attribute as `ov.save_model` writes it
//! (`1,1..4096,8`, `?`; its port `<dim>`s say `-1` for every dim that is not a number, see
//! [`finish`]). The bounds it returns are assumed while the passes run, so the dims they infer
//! are exact for every size in range. A bounded symbol keeps its name in ONNX (`dim_param`);
//! OpenVINO IR, which has no names, writes its interval.
//!
//! What cannot hold is refused, before anything is changed: an input or a symbol the model
//! does not have, a size that contradicts a static dim, a rank mismatch, two sizes for one
//! symbol.

use std::collections::BTreeMap;

use petgraph::stable_graph::NodeIndex;

use crate::formats::onnx::proto;
use crate::formats::{Format, Model};
use crate::ir::{Attr, DeclaredDim, NodeKind};
use crate::semantics::dim::{model_symbol, Dim};

/// A size or the bounds of a symbolic dim: `8` (`lo == hi`), `1..4096`, `1..` (no upper
/// bound), `..64` (from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DimBound {
    pub lo: u64,
    /// `None`: unbounded.
    pub hi: Option<u64>,
}

impl DimBound {
    /// Exactly `n`.
    pub fn exact(n: u64) -> DimBound {
        DimBound { lo: n, hi: Some(n) }
    }
    /// `[lo, hi]` (`hi = None`: unbounded).
    pub fn range(lo: u64, hi: Option<u64>) -> DimBound {
        DimBound { lo, hi }
    }
    /// The size, when the bounds fix one.
    pub fn fixed(&self) -> Option<u64> {
        (self.hi == Some(self.lo)).then_some(self.lo)
    }
    /// Reads `8`, `1..4096`, `1..` or `..64`.
    pub fn parse(text: &str) -> Result<DimBound, ShapesInError> {
        let bad = || ShapesInError::Malformed {
            what: text.to_string(),
            expected: "a size (8) or bounds (1..4096, 1..)",
        };
        match text.trim().split_once("..") {
            Some((l, h)) => {
                let lo = match l.trim() {
                    "" => 0,
                    l => size(l).ok_or_else(bad)?,
                };
                let hi = match h.trim() {
                    "" => None,
                    h => Some(size(h).ok_or_else(bad)?),
                };
                if hi.is_some_and(|h| h < lo) {
                    return Err(bad());
                }
                Ok(DimBound { lo, hi })
            }
            None => size(text.trim()).map(DimBound::exact).ok_or_else(bad),
        }
    }
    /// The intersection, `None` when empty.
    fn meet(self, o: DimBound) -> Option<DimBound> {
        let lo = self.lo.max(o.lo);
        let hi = match (self.hi, o.hi) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (hi.is_none_or(|h| h >= lo)).then_some(DimBound { lo, hi })
    }
    fn contains(&self, v: u64) -> bool {
        v >= self.lo && self.hi.is_none_or(|h| v <= h)
    }
}

impl std::str::FromStr for DimBound {
    type Err = ShapesInError;
    fn from_str(s: &str) -> Result<DimBound, ShapesInError> {
        DimBound::parse(s)
    }
}

impl std::fmt::Display for DimBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.fixed(), self.hi) {
            (Some(v), _) => write!(f, "{v}"),
            (None, Some(h)) => write!(f, "{}..{h}", self.lo),
            (None, None) => write!(f, "{}..", self.lo),
        }
    }
}

/// A size as written by a user: digits, at most `i64::MAX` (the largest dim a model holds).
fn size(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<u64>().ok().filter(|&v| v <= i64::MAX as u64)
}

/// A symbol name as a user writes it: a letter or `_`, then letters, digits and `_`.
fn is_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// One dim of an input shape as given (`--input-shape x=1,seq,?,1..2048`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputDim {
    /// A size: `1`.
    Size(u64),
    /// A symbol: `seq` (bounded or fixed by a [`DimBound`] given for that name).
    Name(String),
    /// Unknown: `?`.
    Any,
    /// An unnamed interval: `1..2048`, `1..`.
    Range(DimBound),
}

impl InputDim {
    /// Reads one dim: a size, a name, `?` or `lo..hi`.
    pub fn parse(text: &str) -> Result<InputDim, ShapesInError> {
        let t = text.trim();
        if t == "?" {
            return Ok(InputDim::Any);
        }
        if t.contains("..") {
            return DimBound::parse(t).map(|b| match b.fixed() {
                Some(v) => InputDim::Size(v),
                None => InputDim::Range(b),
            });
        }
        if let Some(v) = size(t) {
            return Ok(InputDim::Size(v));
        }
        if is_name(t) {
            return Ok(InputDim::Name(t.to_string()));
        }
        Err(ShapesInError::Malformed {
            what: text.to_string(),
            expected: "a dim: a size (8), a name (seq), ? or bounds (1..2048)",
        })
    }

    /// Reads a comma-separated list (`1,seq,?,1..2048`; an empty text is a scalar, rank 0).
    pub fn parse_list(text: &str) -> Result<Vec<InputDim>, ShapesInError> {
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        text.split(',').map(InputDim::parse).collect()
    }
}

impl std::fmt::Display for InputDim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InputDim::Size(v) => write!(f, "{v}"),
            InputDim::Name(n) => write!(f, "{n}"),
            InputDim::Any => write!(f, "?"),
            InputDim::Range(b) => write!(f, "{b}"),
        }
    }
}

/// The whole shape of one input (`--input-shape INPUT=D1,D2,...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputShape {
    /// The input's name (ONNX graph input; OpenVINO `Parameter` layer or tensor name).
    pub input: String,
    pub dims: Vec<InputDim>,
}

impl InputShape {
    /// Reads `INPUT=D1,D2,...` (each dim a size, a name, `?` or `lo..hi`). The input name is
    /// what comes before the last `=` (ONNX names may hold `=`; dims never do).
    pub fn parse(text: &str) -> Result<InputShape, ShapesInError> {
        let (input, dims) = text
            .rsplit_once('=')
            .filter(|(i, _)| !i.trim().is_empty())
            .ok_or_else(|| ShapesInError::Malformed {
                what: text.to_string(),
                expected: "INPUT=D1,D2,... (x=1,seq,?,1..2048)",
            })?;
        Ok(InputShape {
            input: input.trim().to_string(),
            dims: InputDim::parse_list(dims)?,
        })
    }
}

/// Everything given about a model's input shapes; empty: nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShapesIn {
    /// Sizes and bounds of symbols by name (`--dim`), in the order given.
    pub dims: Vec<(String, DimBound)>,
    /// Whole shapes of inputs (`--input-shape`), in the order given.
    pub inputs: Vec<InputShape>,
}

impl ShapesIn {
    /// Nothing given.
    pub fn is_empty(&self) -> bool {
        self.dims.is_empty() && self.inputs.is_empty()
    }
    /// Reads `NAME=SIZE` or `NAME=LO..HI` (the `--dim` syntax; `NAME` as the model spells
    /// the dim, without spaces).
    pub fn parse_dim(text: &str) -> Result<(String, DimBound), ShapesInError> {
        let (name, v) = text
            .split_once('=')
            .filter(|(n, _)| !n.trim().is_empty() && !n.trim().contains(char::is_whitespace))
            .ok_or_else(|| ShapesInError::Malformed {
                what: text.to_string(),
                expected: "NAME=SIZE or NAME=LO..HI (batch=1, seq=1..4096)",
            })?;
        Ok((name.trim().to_string(), DimBound::parse(v)?))
    }
}

/// Why what was given cannot be applied to the model (one line each).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShapesInError {
    #[error("`{what}`: expected {expected}")]
    Malformed {
        what: String,
        expected: &'static str,
    },
    #[error("--input-shape: the model has no input '{input}' (its inputs: {known})")]
    UnknownInput { input: String, known: String },
    #[error("--dim: no input of the model has a dim named '{name}' (named dims: {known})")]
    UnknownSymbol { name: String, known: String },
    #[error("--input-shape {input}: {given} dims given, the input has {rank}")]
    Rank {
        input: String,
        given: usize,
        rank: usize,
    },
    #[error("--input-shape {input}: dim {axis} is {declared} in the model, not {given}")]
    Static {
        input: String,
        axis: usize,
        declared: String,
        given: String,
    },
    #[error("dim '{name}': {a} and {b} cannot both hold")]
    Conflict { name: String, a: String, b: String },
    #[error("--input-shape: input '{0}' is given twice")]
    Twice(String),
}

/// What [`apply`] did, for the run that follows: the bounds to assume, and the OpenVINO
/// `Parameter`s whose ports [`finish`] writes as OpenVINO does.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// Every symbol's size or bounds (given, and implied by input shapes), by name.
    pub bounds: Vec<(String, DimBound)>,
    params: Vec<NodeIndex>,
}

/// A graph input: its node, the names it answers to and its declared shape.
struct Input {
    ix: NodeIndex,
    names: Vec<String>,
    shape: Option<Vec<DeclaredDim>>,
}

fn inputs_of(model: &Model) -> Vec<Input> {
    let g = model.graph();
    let mut out: Vec<Input> =
        g.g.node_indices()
            .filter_map(|ix| {
                let n = g.node(ix);
                let v = n.outputs.first();
                let mut names = vec![n.name.to_string()];
                match (&n.kind, model.format()) {
                    (NodeKind::Input, Format::Onnx) => {}
                    (NodeKind::Op, Format::OpenVino) if n.op_type == "Parameter" => {
                        names.extend(
                            v.iter()
                                .flat_map(|v| v.name.split(','))
                                .map(|s| s.trim().to_string()),
                        );
                    }
                    _ => return None,
                }
                if let Some(v) = v {
                    names.push(v.name.to_string());
                }
                names.retain(|s| !s.is_empty());
                names.dedup();
                Some(Input {
                    ix,
                    names,
                    shape: v.and_then(|v| v.ty.shape.clone()),
                })
            })
            .collect();
    out.sort_by_key(|i| g.node(i.ix).order);
    out
}

/// The symbols a declared dim names (`seq - 1` names `seq`; a text that is not an expression
/// is one opaque name).
fn symbols_of(p: &str) -> Vec<String> {
    match Dim::parse(p, &Dim::symbol) {
        Some(d) => d.symbols().iter().map(|s| s.name().to_string()).collect(),
        None => vec![p.to_string()],
    }
}

/// `p` with the fixed symbols replaced by their sizes; `None` when it names none of them.
fn substitute(p: &str, fixed: &BTreeMap<String, u64>) -> Option<DeclaredDim> {
    if let Some(&v) = fixed.get(p) {
        return Some(DeclaredDim::Known(v));
    }
    let d = Dim::parse(p, &Dim::symbol)?;
    if !d.symbols().iter().any(|s| fixed.contains_key(s.name())) {
        return None;
    }
    let sym = |n: &str| match fixed.get(n) {
        Some(&v) => Dim::known(v as i64),
        None => model_symbol(n),
    };
    let d = Dim::parse(p, &sym)?;
    if let Some(v) = d.as_known().and_then(|v| u64::try_from(v).ok()) {
        return Some(DeclaredDim::Known(v));
    }
    d.to_onnx().map(DeclaredDim::Param)
}

fn substitute_shape(shape: &mut [DeclaredDim], fixed: &BTreeMap<String, u64>) -> bool {
    let mut changed = false;
    for d in shape.iter_mut() {
        if let DeclaredDim::Param(p) = d {
            if let Some(new) = substitute(p, fixed) {
                *d = new;
                changed = true;
            }
        }
    }
    changed
}

/// Adds `b` for `name` to `bounds` (the intersection with what is there); `why` says where it
/// comes from, for the message when they cannot both hold.
fn add_bound(
    bounds: &mut BTreeMap<String, (DimBound, String)>,
    name: &str,
    b: DimBound,
    why: String,
) -> Result<(), ShapesInError> {
    match bounds.get_mut(name) {
        None => {
            bounds.insert(name.to_string(), (b, why));
        }
        Some((old, old_why)) => {
            *old = old.meet(b).ok_or_else(|| ShapesInError::Conflict {
                name: name.to_string(),
                a: old_why.clone(),
                b: why,
            })?;
        }
    }
    Ok(())
}

/// The dim `given` for a dim the model declares as `declared` (axis `axis` of `input`): the
/// new declared dim, and a bound it implies for a symbol.
fn merge_dim(
    input: &str,
    axis: usize,
    declared: Option<&DeclaredDim>,
    given: &InputDim,
) -> Result<(DeclaredDim, Option<(String, DimBound)>), ShapesInError> {
    let static_err = |declared: &DeclaredDim| ShapesInError::Static {
        input: input.to_string(),
        axis,
        declared: declared.to_string(),
        given: given.to_string(),
    };
    // A plain symbol the model names (`batch`, not `2*n`).
    let plain = |p: &str| -> Option<String> {
        let s = symbols_of(p);
        (s.len() == 1 && (s[0] == p || Dim::parse(p, &Dim::symbol) == Some(Dim::symbol(&s[0]))))
            .then(|| s[0].clone())
    };
    Ok(match (declared, given) {
        (Some(DeclaredDim::Known(k)), InputDim::Size(v)) if k == v => {
            (DeclaredDim::Known(*v), None)
        }
        (Some(d @ DeclaredDim::Known(_)), _) => return Err(static_err(d)),
        (Some(DeclaredDim::Param(p)), InputDim::Size(v)) => (
            DeclaredDim::Known(*v),
            plain(p).map(|s| (s, DimBound::exact(*v))),
        ),
        (Some(DeclaredDim::Param(p)), InputDim::Range(b)) => match plain(p) {
            Some(s) => (DeclaredDim::Param(p.clone()), Some((s, *b))),
            None => (DeclaredDim::Interval(b.lo, b.hi), None),
        },
        (Some(d @ DeclaredDim::Interval(lo, hi)), InputDim::Size(v)) => {
            if !DimBound::range(*lo, *hi).contains(*v) {
                return Err(static_err(d));
            }
            (DeclaredDim::Known(*v), None)
        }
        (Some(DeclaredDim::Interval(lo, hi)), InputDim::Name(n)) => (
            DeclaredDim::Param(n.clone()),
            Some((n.clone(), DimBound::range(*lo, *hi))),
        ),
        (_, InputDim::Size(v)) => (DeclaredDim::Known(*v), None),
        (_, InputDim::Name(n)) => (DeclaredDim::Param(n.clone()), None),
        (_, InputDim::Any) => (DeclaredDim::Unknown, None),
        (_, InputDim::Range(b)) => (DeclaredDim::Interval(b.lo, b.hi), None),
    })
}

/// Checks `s` against `model` and rewrites its declarations (see the module documentation).
/// On an error the model is unchanged.
pub fn apply(model: &mut Model, s: &ShapesIn) -> Result<Applied, ShapesInError> {
    let inputs = inputs_of(model);
    let mut bounds: BTreeMap<String, (DimBound, String)> = BTreeMap::new();
    for (name, b) in &s.dims {
        add_bound(&mut bounds, name, *b, format!("--dim {name}={b}"))?;
    }
    // The named dims of the inputs as the model declares them, then the names given.
    let mut known: Vec<String> = Vec::new();
    for i in &inputs {
        for d in i.shape.iter().flatten() {
            if let DeclaredDim::Param(p) = d {
                known.extend(symbols_of(p));
            }
        }
    }
    // New shapes by input node.
    let mut shapes: Vec<(NodeIndex, Vec<DeclaredDim>)> = Vec::new();
    for spec in &s.inputs {
        let Some(i) = inputs.iter().find(|i| i.names.contains(&spec.input)) else {
            let names: Vec<&str> = inputs
                .iter()
                .filter_map(|i| i.names.last().map(String::as_str))
                .collect();
            return Err(ShapesInError::UnknownInput {
                input: spec.input.clone(),
                known: list(names.iter().copied()),
            });
        };
        if shapes.iter().any(|(ix, _)| *ix == i.ix) {
            return Err(ShapesInError::Twice(spec.input.clone()));
        }
        if let Some(decl) = &i.shape {
            if decl.len() != spec.dims.len() {
                return Err(ShapesInError::Rank {
                    input: spec.input.clone(),
                    given: spec.dims.len(),
                    rank: decl.len(),
                });
            }
        }
        let mut out = Vec::with_capacity(spec.dims.len());
        for (axis, g) in spec.dims.iter().enumerate() {
            let declared = i.shape.as_ref().and_then(|d| d.get(axis));
            let (d, implied) = merge_dim(&spec.input, axis, declared, g)?;
            if let InputDim::Name(n) = g {
                known.push(n.clone());
            }
            if let Some((name, b)) = implied {
                let why = format!("--input-shape {} (dim {axis} is {name})", spec.input);
                add_bound(&mut bounds, &name, b, why)?;
            }
            out.push(d);
        }
        shapes.push((i.ix, out));
    }
    check_symbols(&s.dims, known)?;
    // Checked: now the model changes.
    let fixed: BTreeMap<String, u64> = bounds
        .iter()
        .filter_map(|(n, (b, _))| b.fixed().map(|v| (n.clone(), v)))
        .collect();
    let mut params = Vec::new();
    let format = model.format();
    let graph = model.graph_mut();
    for (ix, mut shape) in shapes {
        substitute_shape(&mut shape, &fixed);
        let v = &mut graph.node_mut(ix).outputs[0];
        v.ty.shape = Some(shape);
        if format == Format::OpenVino {
            params.push(ix);
        }
    }
    // Every other declared dim that names a fixed symbol.
    if !fixed.is_empty() {
        let all: Vec<NodeIndex> = graph.g.node_indices().collect();
        for ix in all {
            let n = graph.node_mut(ix);
            let mut any = false;
            for v in n.outputs.iter_mut() {
                if let Some(s) = v.ty.shape.as_mut() {
                    any |= substitute_shape(s, &fixed);
                }
            }
            let is_param = n.kind == NodeKind::Op && n.op_type == "Parameter";
            if any && format == Format::OpenVino && is_param && !params.contains(&ix) {
                params.push(ix);
            }
        }
    }
    let bound_of = |name: &str| bounds.get(name).map(|(b, _)| *b);
    for &ix in &params {
        let n = graph.node_mut(ix);
        let Some(v) = n.outputs.first_mut() else {
            continue;
        };
        v.ty_changed = true;
        let text = match &v.ty.shape {
            Some(s) => s
                .iter()
                .map(|d| ov_shape_dim(d, &bound_of))
                .collect::<Vec<_>>()
                .join(","),
            None => "...".to_string(),
        };
        n.set_attr("shape", Attr::String(text));
    }
    if let Model::Onnx(m) = model {
        rewrite_onnx_proto(m, &fixed);
    }
    Ok(Applied {
        bounds: bounds.into_iter().map(|(n, (b, _))| (n, b)).collect(),
        params,
    })
}

/// An error for the first of `dims` (the `--dim` names) that is not among `known` (the named
/// dims of the inputs and the names `--input-shape` gives).
fn check_symbols(dims: &[(String, DimBound)], mut known: Vec<String>) -> Result<(), ShapesInError> {
    known.sort();
    known.dedup();
    for (name, _) in dims {
        if known.binary_search(name).is_err() {
            return Err(ShapesInError::UnknownSymbol {
                name: name.clone(),
                known: if known.is_empty() {
                    "none; --input-shape INPUT=D1,D2,... names one".to_string()
                } else {
                    list(known.iter().map(String::as_str))
                },
            });
        }
    }
    Ok(())
}

/// A list for a message: `a, b, c` (at most 20 names), or `none`.
fn list<'s>(names: impl Iterator<Item = &'s str>) -> String {
    let names: Vec<&str> = names.collect();
    match names.len() {
        0 => "none".to_string(),
        n if n > 20 => format!("{}, ... ({n} in all)", names[..20].join(", ")),
        _ => names.join(", "),
    }
}

/// A dim of a `Parameter`'s `shape` attribute as `ov.save_model` writes it: `8`, `1..4096`,
/// `1..`, `..64`, `?`; a named dim takes its symbol's bounds.
fn ov_shape_dim(d: &DeclaredDim, bound: &dyn Fn(&str) -> Option<DimBound>) -> String {
    let iv = |lo: u64, hi: Option<u64>| match (lo, hi) {
        (lo, Some(h)) if lo == h => lo.to_string(),
        (0, Some(h)) => format!("..{h}"),
        (lo, Some(h)) => format!("{lo}..{h}"),
        (0, None) => "?".to_string(),
        (lo, None) => format!("{lo}.."),
    };
    match d {
        DeclaredDim::Known(v) => v.to_string(),
        DeclaredDim::Param(p) => bound(p).map_or("?".to_string(), |b| iv(b.lo, b.hi)),
        DeclaredDim::Interval(lo, hi) => iv(*lo, *hi),
        DeclaredDim::Unknown => "?".to_string(),
    }
}

/// Rewrites the ONNX record's graph inputs (their new shapes, from the graph) and every
/// `value_info` and graph output dim that names a fixed symbol.
fn rewrite_onnx_proto(m: &mut crate::formats::onnx::OnnxModel, fixed: &BTreeMap<String, u64>) {
    use proto::tensor_shape_proto::{dimension::Value as DV, Dimension};
    use proto::type_proto::Value as TV;
    let by_name: BTreeMap<String, Vec<DeclaredDim>> = m
        .graph
        .g
        .node_weights()
        .filter(|n| n.kind == NodeKind::Input)
        .filter_map(|n| {
            let v = n.outputs.first()?;
            Some((v.name.to_string(), v.ty.shape.clone()?))
        })
        .collect();
    let Some(g) = m.proto.graph.as_mut() else {
        return;
    };
    fn shape_of(vi: &mut proto::ValueInfoProto) -> Option<&mut proto::TensorShapeProto> {
        match vi.r#type.as_mut()?.value.as_mut()? {
            TV::TensorType(t) => Some(t.shape.get_or_insert_with(Default::default)),
            _ => None,
        }
    }
    for vi in g.input.iter_mut() {
        let Some(new) = vi.name.as_deref().and_then(|n| by_name.get(n)).cloned() else {
            continue;
        };
        let Some(shape) = shape_of(vi) else {
            continue;
        };
        let old = std::mem::take(&mut shape.dim);
        shape.dim = new
            .iter()
            .enumerate()
            .map(|(k, d)| Dimension {
                denotation: old.get(k).and_then(|o| o.denotation.clone()),
                value: match d {
                    DeclaredDim::Known(v) => Some(DV::DimValue(*v as i64)),
                    DeclaredDim::Param(p) => Some(DV::DimParam(p.clone())),
                    _ => None,
                },
            })
            .collect();
    }
    if fixed.is_empty() {
        return;
    }
    for vi in g.value_info.iter_mut().chain(g.output.iter_mut()) {
        let Some(TV::TensorType(t)) = vi.r#type.as_mut().and_then(|t| t.value.as_mut()) else {
            continue;
        };
        for d in t.shape.iter_mut().flat_map(|s| s.dim.iter_mut()) {
            if let Some(DV::DimParam(p)) = &d.value {
                match substitute(p, fixed) {
                    Some(DeclaredDim::Known(v)) => d.value = Some(DV::DimValue(v as i64)),
                    Some(DeclaredDim::Param(q)) => d.value = Some(DV::DimParam(q)),
                    _ => {}
                }
            }
        }
    }
}

/// After the passes: the ports of the `Parameter`s [`apply`] changed say `-1` for every dim
/// that is not a number, as `ov.save_model` writes them (the interval is in the `shape`
/// attribute, which is what OpenVINO reads).
pub fn finish(model: &mut Model, a: &Applied) {
    let graph = model.graph_mut();
    for &ix in &a.params {
        if let Some(v) = graph
            .g
            .node_weight_mut(ix)
            .and_then(|n| n.outputs.first_mut())
        {
            for d in v.ty.shape.iter_mut().flatten() {
                if let DeclaredDim::Interval(..) = d {
                    *d = DeclaredDim::Unknown;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dims_and_shapes() {
        assert_eq!(DimBound::parse("8").unwrap(), DimBound::exact(8));
        assert_eq!(
            DimBound::parse("1..4096").unwrap(),
            DimBound::range(1, Some(4096))
        );
        assert_eq!(DimBound::parse("1..").unwrap(), DimBound::range(1, None));
        assert_eq!(
            DimBound::parse("..64").unwrap(),
            DimBound::range(0, Some(64))
        );
        for bad in [
            "",
            "x",
            "-1",
            "4..2",
            "1...4",
            "1..x",
            "99999999999999999999",
        ] {
            assert!(DimBound::parse(bad).is_err(), "{bad}");
        }
        let s = InputShape::parse("x=1,seq,?,1..2048,3..3").unwrap();
        assert_eq!(s.input, "x");
        assert_eq!(
            s.dims,
            vec![
                InputDim::Size(1),
                InputDim::Name("seq".into()),
                InputDim::Any,
                InputDim::Range(DimBound::range(1, Some(2048))),
                InputDim::Size(3),
            ]
        );
        assert_eq!(InputShape::parse("x=").unwrap().dims, vec![]);
        for bad in ["x", "=1,2", "x=1,,2", "x=1,2a", "x=-1", "x=1,s-q"] {
            assert!(InputShape::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            ShapesIn::parse_dim("batch=1").unwrap(),
            ("batch".to_string(), DimBound::exact(1))
        );
        for bad in ["batch", "=1", "a b=2", "b=", "b=x"] {
            assert!(ShapesIn::parse_dim(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn substitutes_fixed_symbols_in_expressions() {
        let fixed: BTreeMap<String, u64> = [("seq".to_string(), 128)].into();
        assert_eq!(substitute("seq", &fixed), Some(DeclaredDim::Known(128)));
        assert_eq!(substitute("seq - 1", &fixed), Some(DeclaredDim::Known(127)));
        assert_eq!(substitute("batch", &fixed), None);
        // An expression over a symbol left: the same value at every size of it.
        let Some(DeclaredDim::Param(p)) = substitute("batch*seq", &fixed) else {
            panic!("not an expression");
        };
        let d = Dim::parse(&p, &Dim::symbol).expect("parses back");
        let at = |b: i64| d.eval(&[("batch".to_string(), b)].into());
        assert_eq!((at(1), at(3)), (Some(128), Some(384)));
    }
}
