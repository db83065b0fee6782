//! Reading a model: the protobuf walked field by field over the map, and its records read into IR
//! nodes (the graph is assembled in `build.rs`).

use super::*;

/// Decodes a model, keeping the main graph's node and initializer records encoded: `(model
/// without graph.node and graph.initializer, their records, whether every record is known to
/// walk)`. Each record is a slice of `bytes` (nothing is copied); every other field is decoded
/// by prost, one field at a time, with the graph's repeated fields sized before decoding
/// (prost grows them by doubling, which for a graph of 300,000 nodes left a quarter of the
/// decoded model as spare capacity). A file too malformed to walk field by field is left to
/// prost whole ([`decode_whole`]), which decodes it or reports why not.
///
/// Records split field by field are not walked here (the third value is `false`): a file is
/// taken this way only if every node and initializer record walks ([`walks`]), which the
/// graph's build checks as it reads them ([`records_walk_all`] where it fails); see
/// [`OnnxModel::decode`](super::OnnxModel).
pub(super) fn decode_model(
    bytes: Bytes,
) -> std::result::Result<(ModelProto, Records, bool), prost::DecodeError> {
    if let Some(split) = split_model(&bytes) {
        return split.map(|(proto, records)| (proto, records, false));
    }
    decode_whole(bytes).map(|(proto, records)| (proto, records, true))
}

/// The model decoded by prost whole, its main graph's records encoded again one by one.
pub(super) fn decode_whole(
    bytes: Bytes,
) -> std::result::Result<(ModelProto, Records), prost::DecodeError> {
    let mut proto = ModelProto::decode(bytes)?;
    let records = proto
        .graph
        .as_mut()
        .map(Records::take_from)
        .unwrap_or_default();
    Ok((proto, records))
}

/// [`decode_model`] field by field; `None` when a key or a length of the model's or graph's
/// fields does not walk, or when the split stopped at an error and a node or initializer
/// record of the file does not walk.
#[allow(clippy::type_complexity)]
pub(super) fn split_model(
    bytes: &Bytes,
) -> Option<std::result::Result<(ModelProto, Records), prost::DecodeError>> {
    let counts = graph_record_counts(bytes)?;
    let mut proto = ModelProto::default();
    let mut records = Records {
        nodes: Vec::with_capacity(counts[0]),
        inits: Vec::with_capacity(counts[1]),
    };
    let result = (|| -> std::result::Result<(), prost::DecodeError> {
        for (field, wire, payload, whole) in fields(bytes).flatten() {
            if field != 7 || wire != 2 {
                proto.merge(bytes.slice_ref(whole))?;
                continue;
            }
            let g = proto.graph.get_or_insert_with(|| {
                let mut g = GraphProto::default();
                g.input.reserve_exact(counts[2]);
                g.output.reserve_exact(counts[3]);
                g.value_info.reserve_exact(counts[4]);
                g
            });
            for (gfield, gwire, record, gwhole) in fields(payload).flatten() {
                if gfield == 1 && gwire == 2 {
                    records.nodes.push(bytes.slice_ref(record));
                } else if gfield == 5 && gwire == 2 {
                    records.inits.push(bytes.slice_ref(record));
                } else {
                    g.merge(bytes.slice_ref(gwhole))?;
                }
            }
        }
        Ok(())
    })();
    // A split that stopped at an error did not list every record: those are walked in the
    // file (and a record that does not walk leaves the file to prost).
    if result.is_err() && !records_walk(bytes) {
        return None;
    }
    Some(result.map(|()| (proto, records)))
}

/// True when every node and initializer record of `records` walks ([`walks`]), checked on
/// rayon's pool (a graph of one window or less: here).
pub(super) fn records_walk_all(records: &Records) -> bool {
    if records.nodes.len() + records.inits.len() <= WINDOW {
        return records.nodes.iter().chain(&records.inits).all(|r| walks(r));
    }
    use rayon::prelude::*;
    records
        .nodes
        .par_iter()
        .chain(records.inits.par_iter())
        .all(|r| walks(r))
}

/// True when every node and initializer record of the model's graphs walks ([`walks`]).
fn records_walk(bytes: &[u8]) -> bool {
    fields(bytes).all(|f| {
        let Some((field, wire, payload, _)) = f else {
            return false;
        };
        field != 7
            || wire != 2
            || fields(payload).all(|gf| {
                gf.is_some_and(|(gfield, gwire, record, _)| {
                    !((gfield == 1 || gfield == 5) && gwire == 2) || walks(record)
                })
            })
    })
}

/// True when every field of the message `buf` has a key and length that parse.
pub(super) fn walks(buf: &[u8]) -> bool {
    fields(buf).all(|f| f.is_some())
}

/// Records encoded one by one (for a graph decoded whole).
pub(super) fn encode_all<M: Message>(records: Vec<M>) -> Vec<Bytes> {
    records
        .into_iter()
        .map(|n| Bytes::from(n.encode_to_vec()))
        .collect()
}

/// Encoded records decoded.
pub(super) fn decode_all<M: Message + Default>(
    records: &[Bytes],
) -> std::result::Result<Vec<M>, prost::DecodeError> {
    records.iter().map(|b| M::decode(b.clone())).collect()
}

/// True when `n` has a graph-valued attribute.
pub(crate) fn holds_bodies(n: &NodeProto) -> bool {
    n.attribute
        .iter()
        .any(|a| a.g.is_some() || !a.graphs.is_empty())
}

/// Fields of a protobuf message as (field number, wire type, payload, whole field with its
/// key); `None` on a key or length that does not parse, or a key prost refuses (above
/// `u32::MAX`), and nothing after it.
pub(super) fn fields(mut buf: &[u8]) -> impl Iterator<Item = Option<(u32, u8, &[u8], &[u8])>> {
    std::iter::from_fn(move || {
        if buf.is_empty() {
            return None;
        }
        let item = (|| {
            let start = buf;
            let key = u32::try_from(varint(&mut buf)?).ok()?;
            let (field, wire) = (key >> 3, (key & 7) as u8);
            let len = match wire {
                0 => {
                    varint(&mut buf)?;
                    0
                }
                1 => 8,
                2 => usize::try_from(varint(&mut buf)?).ok()?,
                5 => 4,
                _ => return None,
            };
            if buf.len() < len || field == 0 {
                return None;
            }
            let (payload, rest) = buf.split_at(len);
            buf = rest;
            let whole = &start[..start.len() - rest.len()];
            Some((field, wire, payload, whole))
        })();
        if item.is_none() {
            buf = &[];
        }
        Some(item)
    })
}

/// The varint at the front of `buf`, which it moves past: prost's `decode_varint` (`None` where
/// it fails), with the one- and two-byte cases read inline. Keys, and the lengths of names and
/// node records, are that short; the call per varint was a twentieth of a load of
/// wide_sym_100k.onnx (callgrind: 234M instructions, three varints per field).
#[inline(always)]
pub(super) fn varint(buf: &mut &[u8]) -> Option<u64> {
    match *buf {
        [b, rest @ ..] if *b < 0x80 => {
            *buf = rest;
            Some(u64::from(*b))
        }
        [b0, b1, rest @ ..] if *b1 < 0x80 => {
            *buf = rest;
            Some(u64::from(b0 & 0x7f) | (u64::from(*b1) << 7))
        }
        _ => prost::encoding::decode_varint(buf).ok(),
    }
}

/// `bytes` as text when they are UTF-8, as `std::str::from_utf8` decides; a short ASCII string
/// (names, op types: almost all of them) is checked inline, without the call (4.6 million calls,
/// 230M instructions, on wide_sym_100k.onnx).
#[inline(always)]
pub(super) fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.len() <= 64 && bytes.iter().all(|&b| b < 0x80) {
        // SAFETY: every byte is ASCII, and ASCII is UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).ok()
}

/// Record counts of the main graph: node, initializer, input, output, value_info. Several
/// `graph` fields are merged by protobuf, so their counts add up.
pub(super) fn graph_record_counts(bytes: &[u8]) -> Option<[usize; 5]> {
    let mut counts = [0usize; 5];
    let mut any = false;
    for f in fields(bytes) {
        let (field, wire, payload, _) = f?;
        if field != 7 || wire != 2 {
            continue;
        }
        any = true;
        for g in fields(payload) {
            let (gf, gw, _, _) = g?;
            let slot = match (gf, gw) {
                (1, 2) => 0,
                (5, 2) => 1,
                (11, 2) => 2,
                (12, 2) => 3,
                (13, 2) => 4,
                _ => continue,
            };
            counts[slot] += 1;
        }
    }
    any.then_some(counts)
}

pub(super) fn value_type_of(vi: &ValueInfoProto) -> ValueType {
    use proto::type_proto::Value as TV;
    let mut ty = ValueType::default();
    if let Some(TV::TensorType(t)) = vi.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        ty.dtype = t.elem_type.and_then(crate::ir::DType::from_onnx_code);
        ty.shape = t.shape.as_ref().map(|s| {
            s.dim
                .iter()
                .map(|d| match &d.value {
                    Some(proto::tensor_shape_proto::dimension::Value::DimValue(v)) if *v >= 0 => {
                        DeclaredDim::Known(*v as u64)
                    }
                    Some(proto::tensor_shape_proto::dimension::Value::DimParam(p))
                        if !p.is_empty() =>
                    {
                        DeclaredDim::Param(p.clone())
                    }
                    _ => DeclaredDim::Unknown,
                })
                .collect()
        });
    }
    ty
}

pub(super) fn convert_attr(a: &proto::AttributeProto) -> Attr {
    match a.r#type() {
        AttributeType::Int => Attr::Int(a.i()),
        AttributeType::Ints => Attr::Ints(a.ints.clone()),
        AttributeType::Float => Attr::Float(a.f()),
        AttributeType::Floats => Attr::Floats(a.floats.clone()),
        AttributeType::String => Attr::String(String::from_utf8_lossy(a.s()).into_owned()),
        AttributeType::Strings => Attr::Strings(
            a.strings
                .iter()
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect(),
        ),
        AttributeType::Tensor => match a.t.as_deref().and_then(small_tensor) {
            Some(t) => Attr::Tensor(Box::new(t)),
            None => Attr::Opaque,
        },
        _ => Attr::Opaque,
    }
}

/// The most elements of a tensor attribute that [`small_tensor`] decodes: as many as shape
/// propagation carries in a value (`shape::MAX_VALUE_ELEMENTS`; the loader does not import
/// `shape`, a layer above it).
pub(super) const SMALL_TENSOR_ELEMENTS: u64 = 64;

/// A tensor attribute of at most [`SMALL_TENSOR_ELEMENTS`] elements held in the
/// record (`ConstantOfShape`'s fill value), decoded so that shape propagation and folding read
/// it; larger or external ones stay opaque. Saving compares it with the record's own decode, so
/// an unchanged attribute is written from its record.
pub(super) fn small_tensor(t: &proto::TensorProto) -> Option<Tensor> {
    if t.data_location == Some(1) {
        return None;
    }
    let n = t
        .dims
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?))?;
    if n > SMALL_TENSOR_ELEMENTS {
        return None;
    }
    tensor_from_proto(t, &mut ExternalFiles::new(Path::new("."))).ok()
}

/// Names a subgraph reads from enclosing scopes (recursively through nested subgraphs).
pub(super) fn free_names(g: &GraphProto, out: &mut HashSet<String>) {
    let mut defined: HashSet<&str> = HashSet::default();
    for i in &g.input {
        defined.insert(i.name());
    }
    for t in &g.initializer {
        defined.insert(t.name());
    }
    for t in &g.sparse_initializer {
        if let Some(v) = &t.values {
            defined.insert(v.name());
        }
    }
    for n in &g.node {
        for o in &n.output {
            defined.insert(o);
        }
    }
    let mut used: HashSet<String> = HashSet::default();
    for n in &g.node {
        for i in &n.input {
            if !i.is_empty() {
                used.insert(i.clone());
            }
        }
        for a in &n.attribute {
            let mut inner = HashSet::default();
            for sg in a.g.as_deref().into_iter().chain(a.graphs.iter()) {
                free_names(sg, &mut inner);
            }
            used.extend(inner);
        }
    }
    for o in &g.output {
        used.insert(o.name().to_string());
    }
    for u in used {
        if !defined.contains(u.as_str()) {
            out.insert(u);
        }
    }
}

/// A graph's IR as [`build_graph`] makes it, and what it learnt on the way.
/// The IR node of node record `i`, outputs not yet set.
pub(super) fn onnx_node(
    i: usize,
    name: &str,
    op_type: &str,
    domain: &str,
    inputs: usize,
    attributes: &[proto::AttributeProto],
) -> Node {
    let mut node = Node::op(name, op_type, domain);
    node.origin = Origin::OnnxNode(crate::ir::to_u32(i));
    node.order = (2, crate::ir::to_u32(i));
    node.dirty = false;
    node.num_inputs = crate::ir::to_u32(inputs);
    node.attrs = attributes
        .iter()
        .map(|a| (a.name().to_string(), convert_attr(a)))
        .collect();
    node
}

/// Node record `i` decoded by prost, for the records [`light_node`] leaves: its IR node and
/// output names (holders of subgraphs are listed in `holders`, with what they capture).
#[allow(clippy::too_many_arguments)]
pub(super) fn full_node<'g>(
    path: &Path,
    i: usize,
    rec: &'g Bytes,
    types: &FastMap<&str, ValueType>,
    ext: &mut ExternalFiles,
    holders: &mut Vec<usize>,
    captures: &mut Vec<(usize, Vec<String>)>,
    wires: &mut usize,
) -> Result<(Node, Names<'g>)> {
    let n = NodeProto::decode(rec.clone())
        .map_err(|e| fmt_err(path, format!("not a valid ONNX model: node #{i}: {e}")))?;
    if holds_bodies(&n) {
        holders.push(i);
        let mut captured = HashSet::default();
        for a in &n.attribute {
            for sg in a.g.as_deref().into_iter().chain(a.graphs.iter()) {
                free_names(sg, &mut captured);
            }
        }
        let mut captured: Vec<String> = captured.into_iter().collect();
        captured.sort();
        captures.push((i, captured));
    }
    *wires += n.input.len();
    let mut node = onnx_node(
        i,
        n.name(),
        n.op_type(),
        n.domain(),
        n.input.len(),
        &n.attribute,
    );
    if n.op_type() == "Constant" && n.domain().is_empty() {
        if let Some(t) = constant_node_value(&n, ext).map_err(|m| node_err(path, &n, i, m))? {
            node.kind = NodeKind::Const(Box::new(t));
        }
    }
    let outputs =
        names(rec, 2).ok_or_else(|| node_err(path, &n, i, "an output name does not read"))?;
    node.outputs = n
        .output
        .into_iter()
        .map(|o| crate::ir::Value {
            ty: types.get(o.as_str()).cloned().unwrap_or_default(),
            name: o.into(),
            ty_changed: false,
        })
        .collect();
    Ok((node, outputs))
}

/// Records read per window by [`pipelined`]: a few milliseconds of work, so a graph of a few
/// thousand nodes is read in one window, as before.
pub(super) const WINDOW: usize = 4096;

/// Runs `read` over consecutive windows of `0..n`, each window on rayon's pool while `add`
/// takes the one before it on this thread, in order: `read(start..end, buffer)` appends to
/// an empty buffer what `add(start, ..)` then drains. The first error of `add` stops the loop
/// (no later window is added). A range of one window is read and added on this thread alone.
///
/// Measured on `wide_100k.onnx` (350,000 records): load 0.27 -> 0.21 s (min of 5), peak RSS
/// +2 MB. Two buffers are filled and drained in turn: a buffer per window, freed by the
/// other thread, added 8 MB to the peak.
pub(super) fn pipelined<T: Send, R, A>(n: usize, read: R, mut add: A) -> Result<()>
where
    R: Fn(std::ops::Range<usize>, &mut Vec<T>) + Sync,
    A: FnMut(usize, std::vec::Drain<'_, T>) -> Result<()>,
{
    let (mut start, mut end) = (0, n.min(WINDOW));
    let (mut window, mut ahead) = (Vec::new(), Vec::new());
    read(start..end, &mut window);
    while start < n {
        let next_end = end.saturating_add(WINDOW).min(n);
        if end < next_end {
            rayon::in_place_scope(|s| {
                s.spawn(|_| read(end..next_end, &mut ahead));
                add(start, window.drain(..))
            })?;
        } else {
            add(start, window.drain(..))?;
        }
        std::mem::swap(&mut window, &mut ahead);
        (start, end) = (end, next_end);
    }
    Ok(())
}
