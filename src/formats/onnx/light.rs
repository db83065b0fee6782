//! Node and tensor records read in place, without decoding them with prost.

use super::*;

/// What [`build_graph`] takes from an ordinary node record, read in place.
pub(super) struct LightNode<'a> {
    pub(super) name: &'a str,
    pub(super) op_type: &'a str,
    pub(super) domain: &'a str,
    /// The input names, in order (empty names included: omitted optional inputs).
    pub(super) inputs: Names<'a>,
    pub(super) outputs: Names<'a>,
    pub(super) attributes: Vec<proto::AttributeProto>,
}

/// The node record `rec` read in place, without decoding its names into `String`s: `None` when
/// the record needs the full decode, because it is not an ordinary node (a `Constant`, an
/// attribute holding a tensor, graph, sparse tensor or type, metadata or device
/// configurations) or because prost could refuse it (a wire type, UTF-8 string or attribute
/// that does not read). So a record read here is one prost decodes, to the same values.
pub(super) fn light_node(rec: &[u8]) -> Option<LightNode<'_>> {
    let text = |wire: u8, payload| {
        if wire == 2 {
            utf8(payload)
        } else {
            None
        }
    };
    let mut node = LightNode {
        name: "",
        op_type: "",
        domain: "",
        inputs: Names::default(),
        outputs: Names::default(),
        attributes: Vec::new(),
    };
    for f in fields(rec) {
        let (field, wire, payload, _) = f?;
        match field {
            1 => node.inputs.push(text(wire, payload)?),
            2 => node.outputs.push(text(wire, payload)?),
            3 => node.name = text(wire, payload)?,
            4 => node.op_type = text(wire, payload)?,
            7 => node.domain = text(wire, payload)?,
            6 | 8 => {
                text(wire, payload)?;
            }
            5 if wire == 2 => {
                let a = proto::AttributeProto::decode(payload).ok()?;
                let plain = a.t.is_none()
                    && a.g.is_none()
                    && a.sparse_tensor.is_none()
                    && a.tp.is_none()
                    && a.tensors.is_empty()
                    && a.graphs.is_empty()
                    && a.sparse_tensors.is_empty()
                    && a.type_protos.is_empty();
                if !plain {
                    return None;
                }
                node.attributes.push(a);
            }
            5 | 9 | 10 => return None,
            _ => {}
        }
    }
    if node.op_type == "Constant" && node.domain.is_empty() {
        return None;
    }
    Some(node)
}

/// [`light_tensor_named`] without the name.
#[cfg(test)]
pub(super) fn light_tensor(rec: &Bytes) -> Option<Tensor> {
    light_tensor_named(rec).map(|(t, _)| t)
}

/// The initializer record `rec` as an IR tensor, read in place, with the record's name (the
/// last `name` field, as prost reads it; `""` when it has none), from one walk of the record:
/// `None` when it needs the full decode, because its data is not `raw_data` in the record
/// (typed fields, external data, segments, strings), it has metadata, or prost or
/// `tensor_from_proto` could refuse it (a wire type, UTF-8 string or varint that does not
/// read, a negative dim, data of the wrong size). So a tensor read here is the one the full
/// decode gives.
pub(super) fn light_tensor_named(rec: &Bytes) -> Option<(Tensor, &str)> {
    let mut name = "";
    let mut dims: Vec<i64> = Vec::with_capacity(4);
    let mut code = 0i32;
    let mut raw: Option<&[u8]> = None;
    for f in fields(rec) {
        let (field, wire, payload, whole) = f?;
        match (field, wire) {
            // `fields` gives no payload for a varint: it is read from the whole field.
            (1, 0) => dims.push(varint_value(whole)? as i64),
            (1, 2) => {
                let mut b = payload;
                while !b.is_empty() {
                    dims.push(varint(&mut b)? as i64);
                }
            }
            (2, 0) => code = varint_value(whole)? as i32,
            (8, 2) => name = utf8(payload)?,
            (12, 2) => {
                utf8(payload)?;
            }
            (9, 2) => raw = Some(payload),
            (14, 0) if varint_value(whole)? == 0 => {}
            (1..=14 | 16, _) => return None,
            _ => {}
        }
    }
    let dtype = DType::from_onnx_code(code).filter(|&d| d != DType::String)?;
    let shape: Vec<u64> = dims
        .iter()
        .map(|&d| u64::try_from(d).ok())
        .collect::<Option<_>>()?;
    let bits = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))?
        .checked_mul(dtype.bits() as u64)?;
    let raw = raw?;
    (raw.len() as u64 == bits.div_ceil(8)).then(|| {
        let t = Tensor {
            dtype,
            shape,
            data: crate::ir::TensorData::Raw(rec.slice_ref(raw)),
        };
        (t, name)
    })
}

/// The value of the varint field `whole` (its key, then the value).
pub(super) fn varint_value(mut whole: &[u8]) -> Option<u64> {
    varint(&mut whole)?;
    varint(&mut whole)
}

/// The last value of the string field `field` of the message `rec` (protobuf: the last one
/// counts), read in place; `""` when absent, `None` when the message does not walk or the
/// value is not UTF-8.
pub(super) fn last_string(rec: &[u8], field: u32) -> Option<&str> {
    let mut out = "";
    for f in fields(rec) {
        let (number, wire, payload, _) = f?;
        if number == field {
            if wire != 2 {
                return None;
            }
            out = utf8(payload)?;
        }
    }
    Some(out)
}

/// The strings of field `field` of the node record `rec` (1: inputs, 2: outputs), in order,
/// read in place; `None` when the record does not walk or a name is not UTF-8.
pub(super) fn names(rec: &[u8], field: u32) -> Option<Names<'_>> {
    let mut out = Names::default();
    for f in fields(rec) {
        let (number, wire, payload, _) = f?;
        if number == field {
            if wire != 2 {
                return None;
            }
            out.push(utf8(payload)?);
        }
    }
    Some(out)
}

/// Names read in place from a record: up to [`Names::INLINE`] kept inline, more on the heap.
/// Most nodes have one output and a few inputs: the loader read them into a `Vec` each, one
/// allocation per node on rayon's pool, freed on the loading thread (a free across threads,
/// 4 % of the load of wide_sym_100k.onnx in `perf`).
#[derive(Debug, Clone, Default)]
pub(super) struct Names<'a> {
    inline: [&'a str; Names::INLINE],
    len: usize,
    heap: Vec<&'a str>,
}

impl<'a> Names<'a> {
    /// Names kept without an allocation.
    pub(super) const INLINE: usize = 4;

    pub(super) fn push(&mut self, name: &'a str) {
        if self.len < Self::INLINE {
            self.inline[self.len] = name;
        } else {
            if self.len == Self::INLINE {
                self.heap.reserve(2 * Self::INLINE);
                self.heap.extend_from_slice(&self.inline);
            }
            self.heap.push(name);
        }
        self.len += 1;
    }

    /// The names, in order.
    pub(super) fn as_slice(&self) -> &[&'a str] {
        if self.len <= Self::INLINE {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }

    /// Number of names.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The names, in order, by value.
    pub(super) fn iter(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.as_slice().iter().copied()
    }
}

pub(super) fn constant_node_value(
    n: &NodeProto,
    ext: &mut ExternalFiles,
) -> std::result::Result<Option<Tensor>, String> {
    let Some(a) = n.attribute.first() else {
        return Ok(None);
    };
    if n.attribute.len() != 1 {
        return Ok(None);
    }
    Ok(match a.name() {
        "value" => match &a.t {
            Some(t) => Some(tensor_from_proto(t, ext)?),
            None => None,
        },
        "value_int" => Some(Tensor::from_i64(vec![], &[a.i()])),
        "value_ints" => Some(Tensor::from_i64(vec![a.ints.len() as u64], &a.ints)),
        "value_float" => Some(tensor::f32_tensor(vec![], &[a.f()])),
        "value_floats" => Some(tensor::f32_tensor(vec![a.floats.len() as u64], &a.floats)),
        _ => None,
    })
}
