//! Recognising slice nodes in the IR and decoding them into a [`SlicePlan`].
//!
//! This is the only place that looks at op types, opset versions, attribute spellings and input
//! positions; every pass after it reads the plan.

use petgraph::stable_graph::NodeIndex;

use crate::formats::Format;
use crate::ir::{DeclaredDim, Graph, OutletId};
use crate::semantics::decode::{OvMasks, TfMasks};
use crate::semantics::{
    self, Clamp, Dim, Flavour, Provenance, SliceError, SlicePlan, StridedSliceSpec,
};
use crate::shape::Facts;

/// Which slice op a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SliceOp {
    /// ONNX `Slice` of the given opset (1..=9 attribute form, 10+ inputs).
    OnnxSlice { opset: u32 },
    /// OpenVINO `Slice-8`.
    OvSlice8,
    /// OpenVINO `StridedSlice-1`.
    OvStridedSlice,
    /// A TensorFlow-style `StridedSlice` (integer mask attributes), e.g. an ONNX custom-domain node.
    TfStridedSlice,
}

impl SliceOp {
    /// The clamping rule of the op.
    pub fn clamp(self) -> Clamp {
        match self {
            SliceOp::TfStridedSlice => Flavour::Tf.clamp(),
            SliceOp::OvStridedSlice => Flavour::Ov.clamp(),
            SliceOp::OnnxSlice { .. } | SliceOp::OvSlice8 => Clamp::Ov,
        }
    }

    /// The input port of each parameter list of the op.
    pub fn ports(self) -> SlicePorts {
        match self {
            // The attribute form: no parameter inputs.
            SliceOp::OnnxSlice { opset } if opset < 10 => SlicePorts::default(),
            SliceOp::OnnxSlice { .. } => SlicePorts {
                begin: Some(1),
                end: Some(2),
                axes: Some(3),
                steps: Some(4),
            },
            SliceOp::OvSlice8 => SlicePorts {
                begin: Some(1),
                end: Some(2),
                steps: Some(3),
                axes: Some(4),
            },
            SliceOp::OvStridedSlice | SliceOp::TfStridedSlice => SlicePorts {
                begin: Some(1),
                end: Some(2),
                steps: Some(3),
                axes: None,
            },
        }
    }
}

/// Where a slice op's parameter lists enter it (`None`: the op has no such input). The begin
/// list is `begin`/`starts`/`start`, the end list `end`/`ends`/`stop`, the steps
/// `strides`/`steps`/`step`. Only this module knows these numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlicePorts {
    /// The begin list.
    pub begin: Option<usize>,
    /// The end list.
    pub end: Option<usize>,
    /// The steps.
    pub steps: Option<usize>,
    /// The axes (Slice only).
    pub axes: Option<usize>,
}

/// The op type of ONNX `Slice` and OpenVINO `Slice-8`, for a pass that builds one (`lower`)
/// and for the op-count table.
pub const SLICE: &str = "Slice";

/// The op type of OpenVINO `StridedSlice-1` and of a TensorFlow-style `StridedSlice`, for a
/// pass that builds one (`raise`) and for the op-count table.
pub const STRIDED_SLICE: &str = "StridedSlice";

/// What kind of slice `node` is, if it is one.
pub fn classify(
    graph: &Graph,
    node: NodeIndex,
    format: Format,
    onnx_opset: i64,
) -> Option<SliceOp> {
    let n = graph.node(node);
    if n.kind != crate::ir::NodeKind::Op {
        return None;
    }
    match (format, n.op_type.as_str()) {
        (Format::Onnx, "Slice") if n.domain.is_empty() || n.domain == "ai.onnx" => {
            Some(SliceOp::OnnxSlice {
                opset: u32::try_from(onnx_opset.clamp(1, 1000)).unwrap_or(1),
            })
        }
        (Format::Onnx, "StridedSlice") => Some(SliceOp::TfStridedSlice),
        (Format::OpenVino, "Slice") => Some(SliceOp::OvSlice8),
        (Format::OpenVino, "StridedSlice") => Some(SliceOp::OvStridedSlice),
        _ => None,
    }
}

/// A decoded slice node.
#[derive(Debug, Clone)]
pub struct SliceNode {
    pub op: SliceOp,
    /// What feeds the data input.
    pub data: OutletId,
    pub plan: SlicePlan,
    /// Which element of the begin and end lists each plan entry reads. Empty (the default)
    /// when the plan is constant: every bound is in the plan, there is nothing to place.
    pub provenance: Provenance,
}

impl SliceNode {
    /// The input port of each list (the op's: [`SliceOp::ports`]).
    pub fn ports(&self) -> SlicePorts {
        self.op.ports()
    }
}

/// Why a slice node could not be decoded.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// The parameters are invalid (a typed semantics error).
    Invalid(SliceError),
    /// The node is malformed (missing input, unreadable attribute...).
    Malformed(String),
    /// Not enough is known (rank of the data, length of a non-constant parameter).
    Unknown(String),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::Invalid(e) => write!(f, "{e}"),
            DecodeError::Malformed(m) | DecodeError::Unknown(m) => f.write_str(m),
        }
    }
}

/// The declared shape of the value at `outlet`.
pub fn declared_shape(graph: &Graph, outlet: OutletId) -> Option<Vec<DeclaredDim>> {
    if let Some(t) = graph.constant_at(outlet) {
        return Some(t.shape.iter().map(|&d| DeclaredDim::Known(d)).collect());
    }
    graph.value(outlet)?.ty.shape.clone()
}

/// A short list on the stack: a slice's parameter lists have a few elements (one per sliced
/// axis), and slices are decoded by the hundred thousand, four lists each: no allocation for
/// up to [`INLINE`] elements, a vector beyond.
enum List<T> {
    Inline(usize, [T; INLINE]),
    Heap(Vec<T>),
}

/// The longest list [`List`] keeps on the stack.
const INLINE: usize = 4;

impl<T: Copy + Default> List<T> {
    /// The items of `it`, in order.
    #[inline]
    fn collect(it: impl ExactSizeIterator<Item = T>) -> List<T> {
        if it.len() > INLINE {
            return List::Heap(it.collect());
        }
        let mut buf = [T::default(); INLINE];
        let mut n = 0;
        for (slot, v) in buf.iter_mut().zip(it) {
            *slot = v;
            n += 1;
        }
        List::Inline(n, buf)
    }

    /// `n` copies of `v`.
    fn filled(v: T, n: usize) -> List<T> {
        List::collect(std::iter::repeat_n(v, n))
    }

    /// As a vector (for the decoders that keep their lists).
    fn into_vec(self) -> Vec<T> {
        match self {
            List::Inline(n, buf) => buf[..n].to_vec(),
            List::Heap(v) => v,
        }
    }
}

impl<T> std::ops::Deref for List<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            List::Inline(n, buf) => &buf[..*n],
            List::Heap(v) => v,
        }
    }
}

/// One list input of a slice node: its values (`None` elements = not constant).
type Param = List<Option<i64>>;

/// The most inputs a slice op has (data, begin, end, and steps and axes).
const MAX_INPUTS: usize = 5;

/// What feeds each of the first [`MAX_INPUTS`] inputs of `node` (`None`: not connected): what
/// [`Graph::input`] gives for each port, read in one walk of the node's edges.
fn slice_inputs(graph: &Graph, node: NodeIndex) -> [Option<OutletId>; MAX_INPUTS] {
    use petgraph::visit::EdgeRef;
    let mut out = [None; MAX_INPUTS];
    for e in graph.g.edges_directed(node, petgraph::Direction::Incoming) {
        // The first edge of a port, as `Graph::input` finds it.
        if let Some(slot @ None) = out.get_mut(e.weight().dst_port as usize) {
            *slot = Some(OutletId {
                node: e.source(),
                port: e.weight().src_port as usize,
            });
        }
    }
    out
}

/// A parameter input as values (`None` elements = not constant): the list that `src` (what
/// feeds input `port`) gives. `Ok(None)` when the input is omitted.
#[inline]
fn param(
    graph: &Graph,
    facts: Option<&Facts>,
    src: Option<OutletId>,
    port: usize,
    what: &str,
) -> Result<Option<Param>, DecodeError> {
    let Some(src) = src else {
        return Ok(None);
    };
    if let Some(t) = graph.constant_at(src) {
        if !t.dtype.is_index_type() {
            return Err(DecodeError::Malformed(format!(
                "input {port} ({what}) has element type {:?}; an integer type is required",
                t.dtype
            )));
        }
        if t.shape.len() > 1 {
            return Err(DecodeError::Malformed(format!(
                "input {port} ({what}) must be 1-D, has shape {:?}",
                t.shape
            )));
        }
        // Read in place into the one list returned (not collected twice: slices are decoded
        // by the hundred thousand).
        let v = t.i64_values().ok_or_else(|| {
            DecodeError::Malformed(format!("input {port} ({what}): unreadable data"))
        })?;
        return Ok(Some(List::collect(v.map(Some))));
    }
    if let Some(f) = facts.map(|f| f.get(src)) {
        // Propagated facts: the value (known elements as integers), else the length.
        match (&f.value, f.shape.as_deref()) {
            (Some(v), Some([_])) => return Ok(Some(List::collect(v.iter().map(Dim::as_known)))),
            (_, Some([n])) => {
                if let Some(n) = n.as_known().filter(|&n| (0..=1 << 16).contains(&n)) {
                    return Ok(Some(List::filled(None, n as usize)));
                }
            }
            _ => {}
        }
    }
    match declared_shape(graph, src).as_deref() {
        Some([DeclaredDim::Known(n)]) if *n <= 1 << 16 => Ok(Some(List::filled(None, *n as usize))),
        _ => Err(DecodeError::Unknown(format!(
            "input {port} ({what}) is neither constant nor of known length"
        ))),
    }
}

/// The parameter list at `port` of a node whose inputs are `inputs` (`port` `None`: the op has
/// no such list; `Ok(None)`: the list or the input is absent).
#[inline]
fn param_at(
    graph: &Graph,
    facts: Option<&Facts>,
    inputs: &[Option<OutletId>; MAX_INPUTS],
    port: Option<usize>,
    what: &str,
) -> Result<Option<Param>, DecodeError> {
    match port {
        Some(port) => param(
            graph,
            facts,
            inputs.get(port).copied().flatten(),
            port,
            what,
        ),
        None => Ok(None),
    }
}

/// [`param_at`] for a list the op requires.
#[inline]
fn required_at(
    graph: &Graph,
    facts: Option<&Facts>,
    inputs: &[Option<OutletId>; MAX_INPUTS],
    port: Option<usize>,
    what: &str,
) -> Result<Param, DecodeError> {
    let Some(port) = port else {
        return Err(DecodeError::Malformed(format!("no {what} input")));
    };
    param_at(graph, facts, inputs, Some(port), what)?
        .ok_or_else(|| DecodeError::Malformed(format!("input {port} ({what}) is missing")))
}

fn known_axes(v: Option<Param>, what: &str) -> Result<Option<List<i64>>, DecodeError> {
    match v {
        None => Ok(None),
        Some(v) => match v.iter().all(Option::is_some) {
            true => Ok(Some(List::collect(v.iter().map(|a| a.unwrap_or_default())))),
            false => Err(DecodeError::Unknown(format!("{what} are not constant"))),
        },
    }
}

fn ints_attr(graph: &Graph, node: NodeIndex, name: &str) -> Result<Option<Vec<i64>>, DecodeError> {
    match graph.node(node).attr_ints(name) {
        None => Ok(None),
        Some(Ok(v)) => Ok(Some(v)),
        Some(Err(text)) => Err(DecodeError::Malformed(format!(
            "attribute {name} is not a list of integers: {text}"
        ))),
    }
}

/// Decodes a slice node into its plan, given the rank of its data input.
pub fn decode(graph: &Graph, node: NodeIndex, op: SliceOp) -> Result<SliceNode, DecodeError> {
    decode_with(graph, node, op, None)
}

/// [`decode`] reading the data rank and the parameters from propagated `facts` (falling back on
/// what the file declares).
pub fn decode_with(
    graph: &Graph,
    node: NodeIndex,
    op: SliceOp,
    facts: Option<&Facts>,
) -> Result<SliceNode, DecodeError> {
    decode_memo(graph, node, op, facts, None)
}

/// What decides the plan of a slice whose parameter lists all come from constants: the op, the
/// rank of its data, and which outlets feed its parameter inputs (ports 1..). Nothing else is
/// read for such an op ([`PlanMemo::key`] is `None` for the ops that read attributes). Packed
/// in 48 bytes (hashing the fields one by one cost 220 instructions a lookup): the op's
/// discriminant and opset, the rank, and each outlet as `(node index + 1) << 32 | port` (0:
/// not connected).
type PlanKey = (u64, u64, [u64; MAX_INPUTS - 1]);

/// A decoded plan with its provenance, or why it could not be decoded.
type Decoded = Result<(SlicePlan, Provenance), DecodeError>;

/// The plans decoded lately for slices whose parameters are constants, by [`PlanKey`]: graphs
/// slice with the same few constant lists over and over (100,000 slices of wide_sym_100k read
/// four pairs of lists), and decoding one again cost about 2,000 instructions where a lookup
/// costs a tenth of that. A few plans only ([`SLOTS`], replaced in turn): a graph whose slices
/// each read their own constants (nodes_100k) has nothing to reuse, and keeping every plan
/// cost 60 MB there. Valid while no constant the keys name changes (a pass that only turns
/// ops into constants, as `fold` does, keeps it valid: a key names only outlets that were
/// constants).
#[derive(Default)]
pub(crate) struct PlanMemo {
    /// At most [`SLOTS`].
    slots: Vec<(PlanKey, MemoEntry)>,
    /// The slot the next key not found replaces once all are taken.
    next: usize,
}

/// How many plans a [`PlanMemo`] keeps.
const SLOTS: usize = 8;

/// Output dims resolved from a plan, or why there are none.
pub(crate) type Resolved = Result<Vec<Dim>, DecodeError>;

/// One plan of a [`PlanMemo`], and the output dims resolved from it so far.
pub(crate) struct MemoEntry {
    /// The plan, or why there is none.
    pub(crate) decoded: Decoded,
    /// Input dims and the output dims [`crate::shape::slice::slice_dims`] resolves from them
    /// (at most [`MemoEntry::RESOLVED`]; a constant plan's only).
    pub(crate) resolved: Vec<(Vec<Dim>, Resolved)>,
}

impl MemoEntry {
    /// The most input dims an entry keeps the resolution of.
    pub(crate) const RESOLVED: usize = 16;
}

impl PlanMemo {
    /// The key of a slice of op `op` on data of rank `rank` whose inputs are `inputs`, when every
    /// parameter input is a constant and the op reads no attribute.
    fn key(
        graph: &Graph,
        op: SliceOp,
        rank: usize,
        inputs: &[Option<OutletId>; MAX_INPUTS],
    ) -> Option<PlanKey> {
        match op {
            SliceOp::OnnxSlice { opset } if opset >= 10 => {}
            SliceOp::OvSlice8 => {}
            _ => return None,
        }
        let code = match op {
            SliceOp::OnnxSlice { opset } => u64::from(opset),
            // (The ONNX opset fits 32 bits: clamped to 1..=1000 by `classify`.)
            _ => 1 << 32,
        };
        let mut params = [0u64; MAX_INPUTS - 1];
        for (slot, src) in params.iter_mut().zip(&inputs[1..]) {
            if let Some(src) = src {
                graph.constant_at(*src)?;
                let port = u32::try_from(src.port).ok()?;
                *slot = (src.node.index() as u64 + 1) << 32 | u64::from(port);
            }
        }
        Some((code, rank as u64, params))
    }

    /// The entry of `key`, made by `decode` when it is not kept.
    fn entry(&mut self, key: PlanKey, decode: impl FnOnce() -> Decoded) -> &mut MemoEntry {
        let at = match self.slots.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                let entry = MemoEntry {
                    decoded: decode(),
                    resolved: Vec::new(),
                };
                if self.slots.len() < SLOTS {
                    self.slots.push((key, entry));
                    self.slots.len() - 1
                } else {
                    let at = self.next;
                    self.next = (self.next + 1) % SLOTS;
                    self.slots[at] = (key, entry);
                    at
                }
            }
        };
        &mut self.slots[at].1
    }
}

/// A slice decoded through a [`PlanMemo`]: its data input and the memo's entry when its
/// parameters are constants, else decoded as [`decode_with`] does.
pub(crate) enum Looked<'m> {
    /// The data input and the memo's entry.
    Entry(OutletId, &'m mut MemoEntry),
    /// Not kept in the memo (parameters not all constant, or an op that reads attributes).
    Plain(SliceNode),
}

/// Looks the slice `node` up in `memo` (decoding and keeping it on first sight), or decodes
/// it as [`decode_with`] does when it cannot be kept.
pub(crate) fn look_up<'m>(
    graph: &Graph,
    node: NodeIndex,
    op: SliceOp,
    facts: Option<&Facts>,
    memo: &'m mut PlanMemo,
) -> Result<Looked<'m>, DecodeError> {
    let inputs = slice_inputs(graph, node);
    let data =
        inputs[0].ok_or_else(|| DecodeError::Malformed("the data input (0) is missing".into()))?;
    let rank = facts
        .and_then(|f| f.get(data).rank())
        .or_else(|| declared_shape(graph, data).map(|s| s.len()))
        .ok_or_else(|| DecodeError::Unknown("the rank of the data input is unknown".into()))?;
    Ok(match PlanMemo::key(graph, op, rank, &inputs) {
        Some(key) => Looked::Entry(
            data,
            memo.entry(key, || decode_plan(graph, node, op, facts, &inputs, rank)),
        ),
        None => {
            let (plan, provenance) = decode_plan(graph, node, op, facts, &inputs, rank)?;
            Looked::Plain(SliceNode {
                op,
                data,
                plan,
                provenance,
            })
        }
    })
}

/// [`decode_with`], taking the plan from `memo` (and keeping it there) when the slice's
/// parameters are all constants.
pub(crate) fn decode_memo(
    graph: &Graph,
    node: NodeIndex,
    op: SliceOp,
    facts: Option<&Facts>,
    memo: Option<&mut PlanMemo>,
) -> Result<SliceNode, DecodeError> {
    let Some(memo) = memo else {
        let inputs = slice_inputs(graph, node);
        let data = inputs[0]
            .ok_or_else(|| DecodeError::Malformed("the data input (0) is missing".into()))?;
        let rank = facts
            .and_then(|f| f.get(data).rank())
            .or_else(|| declared_shape(graph, data).map(|s| s.len()))
            .ok_or_else(|| DecodeError::Unknown("the rank of the data input is unknown".into()))?;
        let (plan, provenance) = decode_plan(graph, node, op, facts, &inputs, rank)?;
        return Ok(SliceNode {
            op,
            data,
            plan,
            provenance,
        });
    };
    match look_up(graph, node, op, facts, memo)? {
        Looked::Plain(sn) => Ok(sn),
        Looked::Entry(data, entry) => {
            let (plan, provenance) = entry.decoded.clone()?;
            Ok(SliceNode {
                op,
                data,
                plan,
                provenance,
            })
        }
    }
}

/// The plan of slice `node` (inputs `inputs`, data of rank `rank`) and its provenance.
fn decode_plan(
    graph: &Graph,
    node: NodeIndex,
    op: SliceOp,
    facts: Option<&Facts>,
    inputs: &[Option<OutletId>; MAX_INPUTS],
    rank: usize,
) -> Decoded {
    let ports = op.ports();
    // A list input: its port, and the name the op's spec gives it (for errors).
    let required = |port: Option<usize>, what: &str| required_at(graph, facts, inputs, port, what);
    let optional = |port: Option<usize>, what: &str| param_at(graph, facts, inputs, port, what);
    // The provenance is computed only for a plan that is not constant: no pass reads it
    // otherwise (every bound is in the plan), and slices are decoded by the hundred thousand.
    let lazy = |plan: SlicePlan, axes: Option<&[i64]>, len: usize| {
        let provenance = if plan.is_constant() {
            Provenance::default()
        } else {
            semantics::decode::axes_provenance(axes, len, rank)
        };
        (plan, provenance)
    };
    match op {
        SliceOp::OnnxSlice { opset } if opset < 10 => {
            let starts = ints_attr(graph, node, "starts")?
                .ok_or_else(|| DecodeError::Malformed("attribute starts is missing".into()))?;
            let ends = ints_attr(graph, node, "ends")?
                .ok_or_else(|| DecodeError::Malformed("attribute ends is missing".into()))?;
            let axes = ints_attr(graph, node, "axes")?;
            semantics::decode::onnx_slice(
                &semantics::decode::constant(&starts),
                &semantics::decode::constant(&ends),
                axes.as_deref(),
                None,
                rank,
                opset,
            )
            .map(|plan| lazy(plan, axes.as_deref(), starts.len()))
        }
        SliceOp::OnnxSlice { opset } => {
            let starts = required(ports.begin, "starts")?;
            let ends = required(ports.end, "ends")?;
            let axes = known_axes(optional(ports.axes, "axes")?, "axes")?;
            let steps = optional(ports.steps, "steps")?;
            semantics::decode::onnx_slice(
                &starts,
                &ends,
                axes.as_deref(),
                steps.as_deref(),
                rank,
                opset,
            )
            .map(|plan| lazy(plan, axes.as_deref(), starts.len()))
        }
        SliceOp::OvSlice8 => {
            let start = required(ports.begin, "start")?;
            let stop = required(ports.end, "stop")?;
            let step = required(ports.steps, "step")?;
            let axes = known_axes(optional(ports.axes, "axes")?, "axes")?;
            semantics::decode::ov_slice8(&start, &stop, Some(&step), axes.as_deref(), rank)
                .map(|plan| lazy(plan, axes.as_deref(), start.len()))
        }
        SliceOp::OvStridedSlice | SliceOp::TfStridedSlice => {
            let (spec, flavour) = spec_of(graph, facts, inputs, node, op)?;
            semantics::decode::strided_slice_with_provenance(&spec, flavour, rank).map(
                |(plan, provenance)| match plan.is_constant() {
                    true => (plan, Provenance::default()),
                    false => (plan, provenance),
                },
            )
        }
    }
    .map_err(DecodeError::Invalid)
}

/// The spec of a StridedSlice node (`op` is `OvStridedSlice` or `TfStridedSlice`) and its
/// flavour: begin, end and strides as constants or `None` (their length known), the masks.
pub fn strided_slice_spec(
    graph: &Graph,
    node: NodeIndex,
    op: SliceOp,
) -> Result<(StridedSliceSpec, Flavour), DecodeError> {
    spec_of(graph, None, &slice_inputs(graph, node), node, op)
}

/// [`strided_slice_spec`] of a node whose inputs are `inputs`, reading the lists from `facts`
/// too.
fn spec_of(
    graph: &Graph,
    facts: Option<&Facts>,
    inputs: &[Option<OutletId>; MAX_INPUTS],
    node: NodeIndex,
    op: SliceOp,
) -> Result<(StridedSliceSpec, Flavour), DecodeError> {
    let n = graph.node(node);
    match op {
        SliceOp::OvStridedSlice | SliceOp::TfStridedSlice => {
            let ports = op.ports();
            let list = |port: Option<usize>, what: &str| {
                param_at(graph, facts, inputs, port, what).map(|v| v.map(List::into_vec))
            };
            let missing = |port: Option<usize>, what: &str| {
                let port = port.map_or_else(|| "?".to_string(), |p| p.to_string());
                DecodeError::Malformed(format!("input {port} ({what}) is missing"))
            };
            let begin = list(ports.begin, "begin")?.ok_or_else(|| missing(ports.begin, "begin"))?;
            let end = list(ports.end, "end")?.ok_or_else(|| missing(ports.end, "end"))?;
            let strides = list(ports.steps, "strides")?;
            let mut spec = StridedSliceSpec {
                begin,
                end,
                strides,
                ..Default::default()
            };
            if op == SliceOp::OvStridedSlice {
                let get = |name: &str| ints_attr(graph, node, name).map(|v| v.unwrap_or_default());
                let (b, e, el, na, sh) = (
                    get("begin_mask")?,
                    get("end_mask")?,
                    get("ellipsis_mask")?,
                    get("new_axis_mask")?,
                    get("shrink_axis_mask")?,
                );
                // OpenVINO refuses any mask element other than 0 or 1 ("All masks of
                // StridedSlice must have be 0 or 1", op/strided_slice.cpp).
                for (name, m) in [
                    ("begin_mask", &b),
                    ("end_mask", &e),
                    ("ellipsis_mask", &el),
                    ("new_axis_mask", &na),
                    ("shrink_axis_mask", &sh),
                ] {
                    if let Some(v) = m.iter().find(|v| !matches!(v, 0 | 1)) {
                        return Err(DecodeError::Malformed(format!(
                            "attribute {name} has the value {v}; OpenVINO requires every mask \
                             element to be 0 or 1"
                        )));
                    }
                }
                let masks = OvMasks {
                    begin: &b,
                    end: &e,
                    ellipsis: &el,
                    new_axis: &na,
                    shrink: &sh,
                };
                let from = StridedSliceSpec::from_ov_lists(&[], &[], None, masks);
                spec.begin_mask = from.begin_mask;
                spec.end_mask = from.end_mask;
                spec.ellipsis_mask = from.ellipsis_mask;
                spec.new_axis_mask = from.new_axis_mask;
                spec.shrink_axis_mask = from.shrink_axis_mask;
                Ok((spec, Flavour::Ov))
            } else {
                let get = |name: &str| n.attr_int(name).unwrap_or(0);
                let masks = TfMasks {
                    begin: get("begin_mask"),
                    end: get("end_mask"),
                    ellipsis: get("ellipsis_mask"),
                    new_axis: get("new_axis_mask"),
                    shrink: get("shrink_axis_mask"),
                };
                let len = spec.begin.len();
                let from =
                    StridedSliceSpec::from_tf_bits(&vec![0; len], &vec![0; len], None, masks);
                spec.begin_mask = from.begin_mask;
                spec.end_mask = from.end_mask;
                spec.ellipsis_mask = from.ellipsis_mask;
                spec.new_axis_mask = from.new_axis_mask;
                spec.shrink_axis_mask = from.shrink_axis_mask;
                Ok((spec, Flavour::Tf))
            }
        }
        _ => Err(DecodeError::Malformed("not a StridedSlice".into())),
    }
}

/// A declared dim as a semantics [`Dim`].
pub fn to_dim(d: &DeclaredDim) -> Dim {
    match d {
        DeclaredDim::Known(v) => i64::try_from(*v)
            .map(Dim::known)
            .unwrap_or_else(|_| Dim::unknown()),
        // A dim_param is read as ONNX Runtime and tract read it: an expression over symbols
        // (`min(N, 4)`, `floor((N + 1)/2)`), each symbol bounded by the dim limit; anything
        // else is one opaque name.
        DeclaredDim::Param(p) => Dim::parse(p, &semantics::dim::model_symbol)
            .unwrap_or_else(|| semantics::dim::model_symbol(p)),
        DeclaredDim::Interval(lo, hi) => Dim::unknown_bounded(
            i64::try_from(*lo).unwrap_or(i64::MAX),
            hi.and_then(|h| i64::try_from(h).ok()),
        ),
        DeclaredDim::Unknown => Dim::unknown(),
    }
}

/// The symbol `name` of `d` (with its bounds), for parsing `d`'s own text back.
fn symbol_like(d: &Dim, name: &str) -> Dim {
    d.symbols()
        .into_iter()
        .find(|s| s.name() == name)
        .map(|s| {
            let (lo, hi) = s.bounds();
            Dim::symbol_bounded(name, lo, hi)
        })
        .unwrap_or_else(|| Dim::symbol(name))
}

/// A semantics [`Dim`] as a declared dim: known values stay values; an expression over symbols
/// becomes a named dim (ONNX `dim_param`) when `symbolic` is allowed, else its bounds.
pub fn from_dim(d: &Dim, symbolic: bool) -> DeclaredDim {
    if let Some(v) = d.as_known() {
        if let Ok(v) = u64::try_from(v) {
            return DeclaredDim::Known(v);
        }
    }
    if symbolic {
        // The expression in ONNX Runtime's syntax (`min(N, 4)`, `floor((N + 1)/2)`), which
        // ONNX Runtime and tract both parse back.
        // Written only when it reads back as the same expression (a constant beyond i64 would
        // not).
        if let Some(text) = d.to_onnx() {
            if Dim::parse(&text, &|n: &str| symbol_like(d, n)).as_ref() == Some(d) {
                return DeclaredDim::Param(text);
            }
        }
    }
    match d.bounds() {
        (lo, hi) if lo.unwrap_or(0) > 0 || hi.is_some() => DeclaredDim::Interval(
            lo.and_then(|l| u64::try_from(l).ok()).unwrap_or(0),
            hi.and_then(|h| u64::try_from(h).ok()),
        ),
        _ => DeclaredDim::Unknown,
    }
}

/// Where the runtimes of the node's op disagree on its result on input `dims`
/// ([`semantics::disagree`]; ONNX Slice only): `None` when they all agree.
pub fn runtime_split(
    op: SliceOp,
    plan: &SlicePlan,
    dims: &[Dim],
) -> Option<semantics::disagree::Split> {
    match op {
        SliceOp::OnnxSlice { .. } if may_split(op, plan) => {
            semantics::disagree::onnx_slice(plan, dims)
        }
        _ => None,
    }
}

/// Whether [`runtime_split`] may find a split on some dims: an ONNX Slice with a constant
/// negative step (the only entries [`semantics::disagree`] classifies). Asked of every slice
/// before building the dims to ask it with.
pub fn may_split(op: SliceOp, plan: &SlicePlan) -> bool {
    matches!(op, SliceOp::OnnxSlice { .. })
        && plan
            .axes
            .iter()
            .any(|a| matches!(a, semantics::AxisPlan::Range { step: Some(s), .. } if *s < 0))
}

/// [`runtime_split`] of node `ix` as one sentence naming every reading, decoding the node with
/// `facts` (its data dims from them, else from the file). Decodes only an ONNX Slice with a
/// negative constant step (no other node can split), so it is cheap to ask of every slice.
pub fn runtime_split_warning(
    graph: &Graph,
    facts: Option<&Facts>,
    ix: NodeIndex,
    op: SliceOp,
) -> Option<String> {
    let SliceOp::OnnxSlice { opset } = op else {
        return None;
    };
    // No steps input (most slices): asked without walking the node's input edges.
    if opset < 10 || graph.node(ix).num_inputs <= 4 {
        return None;
    }
    let steps = graph.input(ix, 4)?;
    let negative = match graph.constant_at(steps) {
        Some(t) => t.i64_values()?.any(|s| s < 0),
        None => facts
            .and_then(|f| f.get(steps).value.as_deref())
            .is_some_and(|v| v.iter().any(|s| s.as_known().is_some_and(|s| s < 0))),
    };
    if !negative {
        return None;
    }
    let sn = decode_with(graph, ix, op, facts).ok()?;
    let dims: Vec<Dim> = match facts.and_then(|f| f.get(sn.data).shape.clone()) {
        Some(d) => d,
        None => declared_shape(graph, sn.data)?.iter().map(to_dim).collect(),
    };
    let split = runtime_split(op, &sn.plan, &dims)?;
    let known: Option<Vec<u64>> = dims
        .iter()
        .map(|d| d.as_known().and_then(|v| u64::try_from(v).ok()))
        .collect();
    Some(split.describe(&sn.plan, known.as_deref()))
}
