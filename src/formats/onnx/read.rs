//! Reading a model: the protobuf walked field by field over the map, and the IR graph built from
//! its records.

use super::*;

/// Decodes a model, keeping the main graph's node and initializer records encoded: `(model
/// without graph.node and graph.initializer, their records)`. Each record is a slice of `bytes`
/// (nothing is copied); every other field is decoded by prost, one field at a time, with the graph's repeated fields sized
/// before decoding (prost grows them by doubling, which for a graph of 300,000 nodes left a
/// quarter of the decoded model as spare capacity). A file too malformed to walk field by field
/// is left to prost whole, which decodes it or reports why not.
pub(super) fn decode_model(
    bytes: Bytes,
) -> std::result::Result<(ModelProto, Records), prost::DecodeError> {
    if let Some(split) = split_model(&bytes) {
        return split;
    }
    let mut proto = ModelProto::decode(bytes)?;
    let records = proto
        .graph
        .as_mut()
        .map(Records::take_from)
        .unwrap_or_default();
    Ok((proto, records))
}

/// [`decode_model`] field by field; `None` when a key, a length, or a node or initializer
/// record does not walk.
#[allow(clippy::type_complexity)]
pub(super) fn split_model(
    bytes: &Bytes,
) -> Option<std::result::Result<(ModelProto, Records), prost::DecodeError>> {
    let counts = graph_record_counts(bytes)?;
    // Walk everything first: nothing is decoded unless the whole file walks.
    for f in fields(bytes) {
        let (field, wire, payload, _) = f?;
        if field == 7 && wire == 2 {
            for gf in fields(payload) {
                let (gfield, gwire, record, _) = gf?;
                if (gfield == 1 || gfield == 5) && gwire == 2 && !walks(record) {
                    return None;
                }
            }
        }
    }
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
    Some(result.map(|()| (proto, records)))
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
            let key = u32::try_from(prost::encoding::decode_varint(&mut buf).ok()?).ok()?;
            let (field, wire) = (key >> 3, (key & 7) as u8);
            let len = match wire {
                0 => {
                    prost::encoding::decode_varint(&mut buf).ok()?;
                    0
                }
                1 => 8,
                2 => usize::try_from(prost::encoding::decode_varint(&mut buf).ok()?).ok()?,
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
) -> Result<(Node, Vec<&'g str>)> {
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
    let outputs = names(rec, 2)
        .ok_or_else(|| node_err(path, &n, i, "an output name does not read"))?
        .collect();
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

pub(super) struct Built {
    pub(super) graph: Graph,
    /// Indices of the nodes that hold subgraphs.
    pub(super) holders: Vec<usize>,
    /// True when an initializer keeps its data in an external file.
    pub(super) uses_external: bool,
    /// Indices of the initializers a graph input of the same name shadows, ascending.
    pub(super) shadowed: Vec<u32>,
}

/// The IR of the graph `g` whose node and initializer records are `records` (`g.node` and
/// `g.initializer` are not read).
pub(super) fn build_graph<'g>(
    path: &Path,
    g: &'g GraphProto,
    records: &'g Records,
    ext: &mut ExternalFiles,
) -> Result<Built> {
    let nodes = &records.nodes[..];
    let inits = &records.inits[..];
    // Every node defines at least one name (sized for one each; a map grows by doubling).
    let defined = g.input.len() + inits.len() + g.sparse_initializer.len() + nodes.len();
    let count =
        g.input.len() + inits.len() + g.sparse_initializer.len() + nodes.len() + g.output.len();
    if count > crate::ir::MAX_RECORDS {
        return Err(fmt_err(
            path,
            format!(
                "the graph has {count} records (inputs, initializers, nodes, outputs); at most {} are supported",
                crate::ir::MAX_RECORDS
            ),
        ));
    }
    // Headroom for what passes add (folded constants, lowered nodes): the first node added
    // past the capacity would copy the whole node array. Edges are reserved once the nodes'
    // input counts are known.
    let graph = Graph::with_capacity(count + count / 4 + 16, 0);
    let mut producers: FastMap<&str, OutletId> = FastMap::default();
    producers.reserve(defined);
    let mut types: FastMap<&str, ValueType> = FastMap::default();
    types.reserve(g.value_info.len() + g.input.len() + g.output.len());
    for vi in g
        .value_info
        .iter()
        .chain(g.input.iter())
        .chain(g.output.iter())
    {
        types.insert(vi.name(), value_type_of(vi));
    }
    let mut b = Builder {
        path,
        graph,
        producers,
    };
    add_inputs(&mut b, g)?;
    // Duplicates are found in `producers`, one hash per initializer (a set of their own names
    // and a separate check for graph inputs were two more each, and most of a model's names
    // are initializers'). An initializer a graph input shadows is not in `producers`: those
    // are remembered here, to refuse a second initializer of the same name all the same.
    let mut shadowed: HashSet<&str> = HashSet::default();
    let (uses_external, shadowed_at) = add_initializers(&mut b, inits, ext, &mut shadowed)?;
    add_sparse_initializers(&mut b, g, inits.len(), &shadowed)?;
    let added = add_node_records(&mut b, nodes, &types, ext)?;
    let edges = added.wires + g.output.len();
    b.graph.g.reserve_exact_edges(edges + edges / 4 + 16);
    wire_inputs(&mut b, nodes, &added.node_ix)?;
    wire_captures(&mut b, nodes, &added.node_ix, added.captures)?;
    add_outputs(&mut b, g)?;
    let Builder { graph, .. } = b;
    graph.topo_order().map_err(|c| Error::cycle(path, c))?;
    Ok(Built {
        graph,
        holders: added.holders,
        uses_external,
        shadowed: shadowed_at,
    })
}

/// What [`build_graph`] builds up step by step: the graph, and the outlet each name defined so
/// far comes from.
struct Builder<'g, 'p> {
    path: &'p Path,
    graph: Graph,
    producers: FastMap<&'g str, OutletId>,
}

fn define<'g>(producers: &mut FastMap<&'g str, OutletId>, name: &'g str, outlet: OutletId) {
    if !name.is_empty() {
        producers.insert(name, outlet);
    }
}

fn is_input(graph: &Graph, o: &OutletId) -> bool {
    graph.node(o.node).kind == NodeKind::Input
}

/// Like the onnx checker: a name is defined once. ONNX Runtime takes the last of two
/// initializers of one name, a fold would take the first: refuse rather than guess.
fn defined_twice(path: &Path, name: &str) -> Error {
    fmt_err(
        path,
        format!("initializer '{name}' is defined twice (the onnx checker refuses such a model)"),
    )
}

/// The graph inputs. Initializers that are also graph inputs may be overridden at run time:
/// they are inputs.
fn add_inputs<'g>(b: &mut Builder<'g, '_>, g: &'g GraphProto) -> Result<()> {
    for (i, vi) in g.input.iter().enumerate() {
        let mut node = Node::op(vi.name(), "", "");
        node.kind = NodeKind::Input;
        node.origin = Origin::OnnxInput(crate::ir::to_u32(i));
        node.order = (0, crate::ir::to_u32(i));
        node.dirty = false;
        node.outputs = vec![crate::ir::Value {
            name: crate::ir::Text::from(vi.name()),
            ty: value_type_of(vi),
            ty_changed: false,
        }];
        if b.producers.contains_key(vi.name()) {
            return Err(fmt_err(
                b.path,
                format!("graph input '{}' is declared twice", vi.name()),
            ));
        }
        let ix = b.graph.add_node(node);
        define(&mut b.producers, vi.name(), OutletId { node: ix, port: 0 });
    }
    Ok(())
}

/// The constant node of initializer `i`.
fn init_node(i: usize, name: &str, tensor: Tensor) -> Node {
    let mut node = Node::op(name, "", "");
    node.origin = Origin::OnnxInitializer(crate::ir::to_u32(i));
    node.order = (1, crate::ir::to_u32(i));
    node.dirty = false;
    node.outputs = vec![crate::ir::Value {
        name: crate::ir::Text::from(name),
        ty: ValueType {
            dtype: Some(tensor.dtype),
            shape: Some(
                tensor
                    .shape
                    .iter()
                    .map(|&d| DeclaredDim::Known(d))
                    .collect(),
            ),
        },
        ty_changed: false,
    }];
    node.kind = NodeKind::Const(Box::new(tensor));
    node
}

/// The initializers, as constants; one a graph input shadows is kept in the record only (its
/// name goes to `shadowed`). Returns whether one keeps its data in an external file, and the
/// indices of the shadowed ones, ascending.
fn add_initializers<'g>(
    b: &mut Builder<'g, '_>,
    inits: &'g [Bytes],
    ext: &mut ExternalFiles,
    shadowed: &mut HashSet<&'g str>,
) -> Result<(bool, Vec<u32>)> {
    let path = b.path;
    let Builder {
        graph, producers, ..
    } = b;
    let mut uses_external = false;
    let mut shadowed_at: Vec<u32> = Vec::new();
    // The records are read into nodes on rayon's pool, a window ahead of the nodes added here
    // (in file order, so names, errors and node indices are those of a loop in one thread).
    // Most records (raw data in the file): read in place, name and tensor in one walk (the
    // name alone for the others; `None`: it does not read).
    type InitRead<'a> = (Option<&'a str>, Option<Node>);
    let read_inits = |range: std::ops::Range<usize>, out: &mut Vec<InitRead<'g>>| {
        out.extend(range.map(|i| match light_tensor_named(&inits[i]) {
            Some((t, name)) => (Some(name), Some(init_node(i, name, t))),
            None => (last_string(&inits[i], 8), None),
        }));
    };
    let add_inits = |start: usize, window: std::vec::Drain<'_, InitRead<'g>>| -> Result<()> {
        for (i, (name, light)) in (start..).zip(window) {
            let Some(name) = name else {
                return Err(fmt_err(
                    path,
                    format!("initializer #{i}: its name does not read"),
                ));
            };
            let rec = &inits[i];
            // An empty name defines nothing (no input can name it), but the constant is kept.
            let slot = if name.is_empty() {
                None
            } else {
                match producers.entry(name) {
                    std::collections::hash_map::Entry::Occupied(o) => {
                        if !is_input(graph, o.get()) || !shadowed.insert(name) {
                            return Err(defined_twice(path, name));
                        }
                        // Shadowed by a graph input of the same name: kept in the record only.
                        shadowed_at.push(crate::ir::to_u32(i));
                        continue;
                    }
                    std::collections::hash_map::Entry::Vacant(v) => Some(v),
                }
            };
            let node = match light {
                Some(node) => node,
                None => {
                    let t = proto::TensorProto::decode(rec.clone()).map_err(|e| {
                        fmt_err(
                            path,
                            format!("not a valid ONNX model: initializer '{name}': {e}"),
                        )
                    })?;
                    uses_external |= t.data_location == Some(1);
                    let tensor = tensor_from_proto(&t, ext)
                        .map_err(|m| fmt_err(path, format!("initializer '{}': {m}", t.name())))?;
                    init_node(i, name, tensor)
                }
            };
            let ix = graph.add_node(node);
            if let Some(slot) = slot {
                slot.insert(OutletId { node: ix, port: 0 });
            }
        }
        Ok(())
    };
    pipelined(inits.len(), read_inits, add_inits)?;
    Ok((uses_external, shadowed_at))
}

/// The sparse initializers (after the `inits` initializers), as op nodes without inputs.
fn add_sparse_initializers<'g>(
    b: &mut Builder<'g, '_>,
    g: &'g GraphProto,
    inits: usize,
    shadowed: &HashSet<&str>,
) -> Result<()> {
    for (i, t) in g.sparse_initializer.iter().enumerate() {
        let name = t.values.as_ref().map(|v| v.name()).unwrap_or_default();
        if !name.is_empty() {
            match b.producers.get(name) {
                // A sparse initializer takes a graph input's name over (as before).
                Some(o) if !is_input(&b.graph, o) || shadowed.contains(name) => {
                    return Err(defined_twice(b.path, name))
                }
                _ => {}
            }
        }
        let mut node = Node::op(name, "SparseInitializer", "");
        node.origin = Origin::OnnxSparseInitializer(crate::ir::to_u32(i));
        node.order = (1, crate::ir::to_u32(inits + i));
        node.dirty = false;
        node.outputs = vec![crate::ir::Value {
            name: crate::ir::Text::from(name),
            ty: ValueType::default(),
            ty_changed: false,
        }];
        let ix = b.graph.add_node(node);
        define(&mut b.producers, name, OutletId { node: ix, port: 0 });
    }
    Ok(())
}

/// What [`add_node_records`] leaves for the wiring.
struct Added {
    /// The IR node of each node record.
    node_ix: Vec<NodeIndex>,
    /// Indices of the nodes that hold subgraphs.
    holders: Vec<usize>,
    /// The outer names each subgraph-holding node's bodies read.
    captures: Vec<(usize, Vec<String>)>,
    /// Number of named inputs of all nodes.
    wires: usize,
}

/// The nodes: all created first (they need not be in topological order), wired afterwards.
/// Each record is decoded once, into the IR node; output and input names are read in place
/// from the record's bytes (`names`), so nothing decoded outlives its node's turn.
fn add_node_records<'g>(
    b: &mut Builder<'g, '_>,
    nodes: &'g [Bytes],
    types: &FastMap<&'g str, ValueType>,
    ext: &mut ExternalFiles,
) -> Result<Added> {
    let path = b.path;
    let Builder {
        graph, producers, ..
    } = b;
    let mut node_ix = Vec::with_capacity(nodes.len());
    let mut holders = Vec::new();
    let mut captures: Vec<(usize, Vec<String>)> = Vec::new();
    let mut wires = 0usize;
    // Most records: read in place, on rayon's pool, a window ahead (as the initializers).
    type Read<'a> = Option<(Node, Vec<&'a str>, usize)>;
    let read_nodes = |range: std::ops::Range<usize>, out: &mut Vec<Read<'g>>| {
        out.extend(range.map(|i| {
            let l = light_node(&nodes[i])?;
            let mut node = onnx_node(i, l.name, l.op_type, l.domain, l.inputs, &l.attributes);
            node.outputs = l
                .outputs
                .iter()
                .map(|&o| crate::ir::Value {
                    ty: types.get(o).cloned().unwrap_or_default(),
                    name: crate::ir::Text::from(o),
                    ty_changed: false,
                })
                .collect();
            Some((node, l.outputs, l.inputs))
        }));
    };
    let add_nodes = |start: usize, window: std::vec::Drain<'_, Read<'g>>| -> Result<()> {
        for (i, light) in (start..).zip(window) {
            let rec = &nodes[i];
            let (node, outputs) = match light {
                Some((node, outputs, inputs)) => {
                    wires += inputs;
                    (node, outputs)
                }
                None => full_node(
                    path,
                    i,
                    rec,
                    types,
                    ext,
                    &mut holders,
                    &mut captures,
                    &mut wires,
                )?,
            };
            let ix = graph.add_node(node);
            for (p, o) in outputs.into_iter().enumerate() {
                if o.is_empty() {
                    continue;
                }
                // One hash for the check and the insertion.
                match producers.entry(o) {
                    std::collections::hash_map::Entry::Occupied(_) => {
                        let n = NodeProto::decode(rec.clone()).unwrap_or_default();
                        return Err(node_err(
                            path,
                            &n,
                            i,
                            format!("output '{o}' is already produced by another node"),
                        ));
                    }
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(OutletId { node: ix, port: p });
                    }
                }
            }
            node_ix.push(ix);
        }
        Ok(())
    };
    pipelined(nodes.len(), read_nodes, add_nodes)?;
    Ok(Added {
        node_ix,
        holders,
        captures,
        wires,
    })
}

/// Node record `i` decoded (for an error message; empty when it does not decode).
fn decoded(nodes: &[Bytes], i: usize) -> NodeProto {
    nodes
        .get(i)
        .and_then(|r| NodeProto::decode(r.clone()).ok())
        .unwrap_or_default()
}

/// The edges from each node's named inputs to their producers.
fn wire_inputs<'g>(
    b: &mut Builder<'g, '_>,
    nodes: &'g [Bytes],
    node_ix: &[NodeIndex],
) -> Result<()> {
    let path = b.path;
    let Builder {
        graph, producers, ..
    } = b;
    let producers = &*producers;
    // Input names are looked up on rayon's pool, a window ahead of the edges added here.
    enum Wiring<'a> {
        Edge(usize, OutletId, usize),
        Unreadable(usize),
        Missing(usize, usize, &'a str),
    }
    let read_inputs = |range: std::ops::Range<usize>, out: &mut Vec<Wiring<'g>>| {
        for i in range {
            let Some(inputs) = names(&nodes[i], 1) else {
                out.push(Wiring::Unreadable(i));
                continue;
            };
            for (p, name) in inputs.enumerate().filter(|(_, name)| !name.is_empty()) {
                out.push(match producers.get(name) {
                    Some(&src) => Wiring::Edge(i, src, p),
                    None => Wiring::Missing(i, p, name),
                });
            }
        }
    };
    let wire = |_: usize, window: std::vec::Drain<'_, Wiring<'g>>| -> Result<()> {
        for w in window {
            match w {
                Wiring::Edge(i, src, p) => {
                    graph.connect(src, node_ix[i], p);
                }
                Wiring::Unreadable(i) => {
                    return Err(node_err(
                        path,
                        &decoded(nodes, i),
                        i,
                        "an input name does not read",
                    ));
                }
                Wiring::Missing(i, p, name) => {
                    return Err(node_err(
                        path,
                        &decoded(nodes, i),
                        i,
                        format!(
                            "input {p} names '{name}', which no node, input or initializer \
                             produces"
                        ),
                    ));
                }
            }
        }
        Ok(())
    };
    pipelined(nodes.len(), read_inputs, wire)
}

/// The edges from the outer names a node's subgraphs read to their producers.
fn wire_captures(
    b: &mut Builder<'_, '_>,
    nodes: &[Bytes],
    node_ix: &[NodeIndex],
    captures: Vec<(usize, Vec<String>)>,
) -> Result<()> {
    for (i, captured) in captures {
        let ix = node_ix[i];
        for name in captured {
            let Some(&src) = b.producers.get(name.as_str()) else {
                return Err(node_err(
                    b.path,
                    &decoded(nodes, i),
                    i,
                    format!(
                        "a subgraph reads '{name}', which the enclosing graph does not produce"
                    ),
                ));
            };
            b.graph.g.add_edge(
                src.node,
                ix,
                Wire {
                    src_port: Wire::port(src.port),
                    dst_port: Wire::CAPTURED,
                },
            );
        }
    }
    Ok(())
}

/// The graph outputs, each wired to its producer.
fn add_outputs(b: &mut Builder<'_, '_>, g: &GraphProto) -> Result<()> {
    for (i, vi) in g.output.iter().enumerate() {
        let Some(&src) = b.producers.get(vi.name()) else {
            return Err(fmt_err(
                b.path,
                format!("graph output '{}' is produced by no node", vi.name()),
            ));
        };
        let mut node = Node::op(vi.name(), "", "");
        node.kind = NodeKind::Output;
        node.origin = Origin::OnnxOutput(crate::ir::to_u32(i));
        node.order = (3, crate::ir::to_u32(i));
        node.dirty = false;
        node.num_inputs = 1;
        let ix = b.graph.add_node(node);
        b.graph.connect(src, ix, 0);
    }
    Ok(())
}
