//! Saving a changed graph: value infos, nodes and graphs rebuilt from the IR.

use super::*;

pub(super) fn dims_to_proto(shape: &[DeclaredDim]) -> proto::TensorShapeProto {
    use proto::tensor_shape_proto::{dimension::Value as DV, Dimension};
    proto::TensorShapeProto {
        dim: shape
            .iter()
            .map(|d| Dimension {
                denotation: None,
                value: match d {
                    DeclaredDim::Known(v) => Some(DV::DimValue(*v as i64)),
                    DeclaredDim::Param(p) => Some(DV::DimParam(p.clone())),
                    _ => None,
                },
            })
            .collect(),
    }
}

/// The record of `value_info_proto(name, ty, None)`, encoded straight into its bytes (the
/// same bytes as prost's encoding of it; no message built, one allocation): a pass that
/// infers the outputs of 100,000 slices writes 100,000 of them.
#[cfg(test)]
pub(super) fn new_value_info(name: &str, ty: &ValueType) -> Bytes {
    let mut out = Vec::new();
    encode_value_info(name, ty, &mut out);
    Bytes::from(out)
}

/// [`new_value_info`], appended to `out` (the save encodes every new entry into one buffer:
/// an allocation per entry was 100,000 on wide_sym_100k.onnx).
pub(super) fn encode_value_info(name: &str, ty: &ValueType, out: &mut Vec<u8>) {
    use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};
    // A length-delimited field: key, length, body.
    let field_len = |body: usize| 1 + encoded_len_varint(body as u64) + body;
    let dim_len = |d: &DeclaredDim| match d {
        DeclaredDim::Known(v) => 1 + encoded_len_varint(*v as i64 as u64),
        DeclaredDim::Param(p) => field_len(p.len()),
        _ => 0,
    };
    let shape_len: Option<usize> = ty
        .shape
        .as_ref()
        .map(|s| s.iter().map(|d| field_len(dim_len(d))).sum());
    let elem = ty.dtype.map(|d| d.onnx_code() as i64 as u64);
    let tensor_len = elem.map_or(0, |e| 1 + encoded_len_varint(e)) + shape_len.map_or(0, field_len);
    let type_len = field_len(tensor_len);
    out.reserve(field_len(name.len()) + field_len(type_len));
    let buf = out;
    // ValueInfoProto: name = 1, type = 2.
    encode_key(1, WireType::LengthDelimited, buf);
    encode_varint(name.len() as u64, buf);
    buf.extend_from_slice(name.as_bytes());
    encode_key(2, WireType::LengthDelimited, buf);
    encode_varint(type_len as u64, buf);
    // TypeProto: tensor_type = 1.
    encode_key(1, WireType::LengthDelimited, buf);
    encode_varint(tensor_len as u64, buf);
    // TypeProto.Tensor: elem_type = 1, shape = 2.
    if let Some(e) = elem {
        encode_key(1, WireType::Varint, buf);
        encode_varint(e, buf);
    }
    if let (Some(dims), Some(len)) = (&ty.shape, shape_len) {
        encode_key(2, WireType::LengthDelimited, buf);
        encode_varint(len as u64, buf);
        // TensorShapeProto: dim = 1; Dimension: dim_value = 1, dim_param = 2.
        for d in dims {
            encode_key(1, WireType::LengthDelimited, buf);
            encode_varint(dim_len(d) as u64, buf);
            match d {
                DeclaredDim::Known(v) => {
                    encode_key(1, WireType::Varint, buf);
                    encode_varint(*v as i64 as u64, buf);
                }
                DeclaredDim::Param(p) => {
                    encode_key(2, WireType::LengthDelimited, buf);
                    encode_varint(p.len() as u64, buf);
                    buf.extend_from_slice(p.as_bytes());
                }
                _ => {}
            }
        }
    }
}

pub(super) fn value_info_proto(
    name: &str,
    ty: &ValueType,
    base: Option<&ValueInfoProto>,
) -> ValueInfoProto {
    use proto::type_proto::{Tensor as TT, Value as TV};
    let mut vi = base.cloned().unwrap_or_default();
    vi.name = Some(name.to_string());
    // An element type the pass does not know stays the declared one: a tensor type without
    // one is invalid (ONNX Runtime rejects the model).
    let declared = base
        .and_then(|b| b.r#type.as_ref())
        .and_then(|t| match &t.value {
            Some(TV::TensorType(tt)) => tt.elem_type,
            _ => None,
        });
    let elem_type = ty.dtype.map(|d| d.onnx_code()).or(declared);
    vi.r#type = Some(proto::TypeProto {
        denotation: base
            .and_then(|b| b.r#type.as_ref())
            .and_then(|t| t.denotation.clone()),
        value: Some(TV::TensorType(TT {
            elem_type,
            shape: ty.shape.as_ref().map(|s| dims_to_proto(s)),
        })),
    });
    vi
}

pub(super) fn rebuild_node<'a>(
    path: &Path,
    graph: &Graph,
    ix: NodeIndex,
    records: &'a [Bytes],
    bodies: &BodyOverrides,
) -> Result<NodeOut<'a>> {
    let n = graph.node(ix);
    let record = |i: usize| -> Result<NodeProto> {
        match records.get(i) {
            Some(r) => NodeProto::decode(r.clone())
                .map_err(|e| fmt_err(path, format!("node #{i}: its record does not decode: {e}"))),
            None => Ok(NodeProto::default()),
        }
    };
    if let Origin::OnnxNode(i) = n.origin {
        let i = i as usize;
        if let (false, Some(rec)) = (n.dirty, records.get(i)) {
            return Ok(match bodies.get(&i) {
                Some(b) => NodeOut::Record(Rec::owned(with_bodies(record(i)?, b))),
                None => NodeOut::Encoded(rec),
            });
        }
    }
    let mut np = match n.origin {
        Origin::OnnxNode(i) => record(i as usize)?,
        _ => NodeProto::default(),
    };
    np.name = if n.name.is_empty() {
        None
    } else {
        Some(n.name.to_string())
    };
    np.op_type = Some(n.op_type.to_string());
    np.domain = if n.domain.is_empty() {
        None
    } else {
        Some(n.domain.to_string())
    };
    np.input = graph
        .inputs(ix)
        .into_iter()
        .map(|o| {
            o.and_then(|o| graph.value(o))
                .map(|v| v.name.to_string())
                .unwrap_or_default()
        })
        .collect();
    while np.input.last().is_some_and(|s| s.is_empty()) {
        np.input.pop();
    }
    np.output = n.outputs.iter().map(|v| v.name.to_string()).collect();
    // Attributes: keep the original record of each attribute the IR did not change.
    let old: HashMap<String, proto::AttributeProto> = np
        .attribute
        .drain(..)
        .map(|a| (a.name().to_string(), a))
        .collect();
    for (name, value) in &n.attrs {
        let prev = old.get(name);
        if let Some(p) = prev {
            if convert_attr(p) == *value {
                np.attribute.push(p.clone());
                continue;
            }
        }
        np.attribute.push(attr_proto(n, name, value, prev)?);
    }
    if let Some(b) = match n.origin {
        Origin::OnnxNode(i) => bodies.get(&(i as usize)),
        _ => None,
    } {
        np = with_bodies(np, b);
    }
    Ok(NodeOut::built(&np))
}

/// The attribute `name` of a rebuilt node `n` holding `value`; an opaque value (one the IR does
/// not read) is written as its previous record `prev`.
fn attr_proto(
    n: &Node,
    name: &str,
    value: &Attr,
    prev: Option<&proto::AttributeProto>,
) -> Result<proto::AttributeProto> {
    let mut a = proto::AttributeProto {
        name: Some(name.to_string()),
        ..Default::default()
    };
    match value {
        Attr::Int(v) => {
            a.i = Some(*v);
            a.set_type(AttributeType::Int);
        }
        Attr::Ints(v) => {
            a.ints = v.clone();
            a.set_type(AttributeType::Ints);
        }
        Attr::Float(v) => {
            a.f = Some(*v);
            a.set_type(AttributeType::Float);
        }
        Attr::Floats(v) => {
            a.floats = v.clone();
            a.set_type(AttributeType::Floats);
        }
        Attr::String(s) => {
            a.s = Some(Bytes::from(s.clone().into_bytes()));
            a.set_type(AttributeType::String);
        }
        Attr::Strings(v) => {
            a.strings = v
                .iter()
                .map(|s| Bytes::from(s.clone().into_bytes()))
                .collect();
            a.set_type(AttributeType::Strings);
        }
        Attr::Tensor(t) => {
            a.t = Some(Box::new(tensor_to_proto(t, name)));
            a.set_type(AttributeType::Tensor);
        }
        Attr::Opaque => match prev {
            Some(p) => a = p.clone(),
            None => {
                return Err(Error::Pass {
                    pass: "save",
                    node: n.name.to_string(),
                    message: format!("attribute '{name}' has no value to write"),
                })
            }
        },
    }
    Ok(a)
}

/// `np` with the graph-valued attributes named in `bodies` replaced.
pub(super) fn with_bodies(mut np: NodeProto, bodies: &[(String, GraphProto)]) -> NodeProto {
    for (attr, body) in bodies {
        let (name, index) = match attr.strip_suffix(']').and_then(|a| a.split_once('[')) {
            Some((n, i)) => (n, i.parse::<usize>().ok()),
            None => (attr.as_str(), None),
        };
        let Some(a) = np.attribute.iter_mut().find(|a| a.name() == name) else {
            continue;
        };
        match index {
            None => a.g = Some(Box::new(body.clone())),
            Some(i) => {
                if let Some(slot) = a.graphs.get_mut(i) {
                    *slot = body.clone();
                }
            }
        }
    }
    np
}

pub(super) fn rebuild_graph<'a>(
    path: &Path,
    graph: &Graph,
    orig: &'a GraphProto,
    records: &'a Records,
    shadowed: Option<&[u32]>,
    bodies: &BodyOverrides,
) -> Result<GraphOut<'a>> {
    let order = graph.topo_order().map_err(|c| Error::cycle(path, c))?;
    let mut out = GraphOut {
        base: orig,
        node: Vec::with_capacity(records.nodes.len()),
        initializer: Vec::new(),
        value_info: Vec::new(),
        output: orig.output.iter().map(Rec::Borrowed).collect(),
    };
    let mut inits: Vec<(u64, write::InitOut<'a>)> = Vec::with_capacity(records.inits.len());
    let mut extra_identity: Vec<NodeOut<'a>> = Vec::new();
    for &ix in &order {
        let n = graph.node(ix);
        match (&n.kind, n.origin) {
            // A body's input that is an outer scope's constant (read as a constant by the
            // passes in the body) stays a name read from the outer scope.
            (NodeKind::Input, _)
            | (NodeKind::Const(_), Origin::OnnxInput(_))
            | (NodeKind::Op, Origin::OnnxSparseInitializer(_)) => {}
            (NodeKind::Output, _) => {
                // A graph output must be produced under its own name.
                if let Some(src) = graph.input(ix, 0) {
                    let produced = graph
                        .value(src)
                        .map(|v| v.name.as_str())
                        .unwrap_or_default();
                    if produced != n.name {
                        extra_identity.push(NodeOut::Record(Rec::owned(NodeProto {
                            input: vec![produced.to_string()],
                            output: vec![n.name.to_string()],
                            name: Some(format!("{}_identity", n.name)),
                            op_type: Some("Identity".into()),
                            ..Default::default()
                        })));
                    }
                }
            }
            (NodeKind::Const(t), Origin::OnnxInitializer(i)) => {
                let rec = match (n.dirty, records.inits.get(i as usize)) {
                    (false, Some(t)) => write::Out::Encoded(t),
                    _ => new_tensor(t, &n.outputs[0].name),
                };
                inits.push((i as u64, rec));
            }
            (NodeKind::Const(t), Origin::New) => {
                let name = n
                    .outputs
                    .first()
                    .map(|v| v.name.as_str())
                    .unwrap_or(&n.name);
                inits.push((u64::MAX, new_tensor(t, name)));
            }
            _ => out
                .node
                .push(rebuild_node(path, graph, ix, &records.nodes, bodies)?),
        }
    }
    out.node.extend(extra_identity);
    // Initializers: originals in their original order (shadowed ones included), then new ones.
    inits.extend(shadowed_inits(orig, records, shadowed));
    inits.sort_by_key(|(k, _)| *k);
    out.initializer = inits.into_iter().map(|(_, t)| t).collect();
    rebuild_value_info(graph, orig, &order, &mut out);
    Ok(out)
}

/// The initializers a graph input of the same name shadows (the IR has no node for them), as
/// `(record index, record)`: the ones the load found, or else every record named like an input.
fn shadowed_inits<'a>(
    orig: &GraphProto,
    records: &'a Records,
    shadowed: Option<&[u32]>,
) -> Vec<(u64, write::InitOut<'a>)> {
    if let Some(known) = shadowed {
        // As the load found them (no record read again: a graph of 383,000 initializers
        // walked every record and hashed every name here).
        known
            .iter()
            .filter_map(|&i| {
                Some((
                    u64::from(i),
                    write::Out::Encoded(records.inits.get(i as usize)?),
                ))
            })
            .collect()
    } else if orig.input.is_empty() {
        Vec::new()
    } else {
        let inputs: HashSet<&str> = orig.input.iter().map(|i| i.name()).collect();
        records
            .inits
            .iter()
            .enumerate()
            .filter(|(_, t)| last_string(t, 8).is_some_and(|n| inputs.contains(n)))
            .map(|(i, t)| (i as u64, write::Out::Encoded(t)))
            .collect()
    }
}

/// The value infos of `out`: originals of values that still exist, updated where a pass changed
/// the type; then new entries for values whose type a pass set; and the graph outputs whose
/// producer's type a pass refined.
fn rebuild_value_info<'a>(
    graph: &Graph,
    orig: &'a GraphProto,
    order: &[NodeIndex],
    out: &mut GraphOut<'a>,
) {
    // Only the values the original record declares are looked up by name.
    let declared: HashSet<&str> = orig
        .value_info
        .iter()
        .chain(orig.output.iter())
        .map(|v| v.name())
        .collect();
    let mut live: HashMap<&str, (&crate::ir::Value, NodeIndex)> = HashMap::default();
    live.reserve(declared.len());
    for ix in graph.g.node_indices() {
        let n = graph.node(ix);
        if matches!(n.kind, NodeKind::Op | NodeKind::Const(_)) {
            for v in &n.outputs {
                if declared.contains(v.name.as_str()) {
                    live.insert(v.name.as_str(), (v, ix));
                }
            }
        }
    }
    // The names that get no new entry: the graph's inputs and outputs, and (added below)
    // the entries kept. One set, so a value is looked up once (and inserted in the same
    // probe), where it was looked up in two and inserted in one. (Not sized for a value a
    // node: at the save's peak, twice the table the values need.)
    let mut seen: HashSet<&str> = HashSet::default();
    seen.reserve(orig.input.len() + orig.output.len() + orig.value_info.len());
    seen.extend(
        orig.input
            .iter()
            .chain(orig.output.iter())
            .map(|v| v.name()),
    );
    for vi in &orig.value_info {
        if let Some((v, _)) = live.get(vi.name()) {
            seen.insert(vi.name());
            if v.ty_changed {
                out.value_info.push(write::Out::built(&value_info_proto(
                    vi.name(),
                    &v.ty,
                    Some(vi),
                )));
            } else {
                out.value_info.push(write::Out::Record(Rec::Borrowed(vi)));
            }
        }
    }
    // New entries: encoded one after another into one buffer, each written from its part.
    let mut encoded: Vec<u8> = Vec::new();
    let mut ends: Vec<usize> = Vec::new();
    for &ix in order {
        let n = graph.node(ix);
        if n.kind != NodeKind::Op {
            continue;
        }
        for v in &n.outputs {
            // An entry needs an element type: without one, readers reject the model.
            if v.ty_changed
                && v.ty.dtype.is_some()
                && !v.name.is_empty()
                && seen.insert(v.name.as_str())
            {
                encode_value_info(&v.name, &v.ty, &mut encoded);
                ends.push(encoded.len());
            }
        }
    }
    let encoded = Bytes::from(encoded);
    let mut start = 0;
    for end in ends {
        out.value_info
            .push(write::Out::Built(encoded.slice(start..end)));
        start = end;
    }
    // Graph outputs whose producer's type a pass refined.
    for o in out.output.iter_mut() {
        if let Some((v, _)) = live.get(o.name()) {
            if v.ty_changed {
                let updated = value_info_proto(o.name(), &v.ty, Some(o));
                *o = Rec::owned(updated);
            }
        }
    }
}

/// A computed initializer to write: kept encoded when small; a big one stays a record whose
/// bytes are the tensor's own (written, or moved to external data, without a copy here).
pub(super) fn new_tensor<'a>(t: &Tensor, name: &str) -> write::InitOut<'a> {
    // Lazy bytes (a big folded slice) stay lazy: the writer produces them as it writes.
    let t = super::tensor::tensor_to_streamed_proto(t, name);
    if t.raw_data
        .as_ref()
        .is_some_and(|r| r.len() >= write::EXTERNAL_MIN)
    {
        write::Out::Record(Rec::owned(t))
    } else {
        write::Out::built(&t)
    }
}
