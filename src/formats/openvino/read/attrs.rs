//! Layer attributes read and checked: integers, shapes, element types, constants' ranges in the
//! `.bin`, output values and port ids.

use super::*;

pub(super) fn parse_int(el: El<'_, '_>, attr: &str) -> Option<i64> {
    el.attr(attr)?.trim().parse().ok()
}

/// Parses a `Const` `shape` attribute (`""` = scalar, `"2,3"`).
pub(super) fn parse_shape(s: &str) -> Option<Vec<u64>> {
    let s = s.trim();
    if s.is_empty() {
        return Some(Vec::new());
    }
    s.split(',').map(|p| p.trim().parse::<u64>().ok()).collect()
}

/// Byte size of `count` elements of `dtype`, packed (sub-byte types round up).
pub(in crate::formats::openvino) fn packed_size(dtype: DType, count: u64) -> Option<u64> {
    let bits = count.checked_mul(dtype.bits() as u64)?;
    Some(bits.div_ceil(8))
}

/// What a Const layer's `<data>` says about its bytes.
pub(super) struct ConstSpec {
    pub(super) offset: u64,
    pub(super) size: u64,
    /// Element type and shape, when we can represent the tensor (not strings or unknown types).
    pub(super) typed: Option<(DType, Vec<u64>)>,
}

/// OpenVINO's element type names (`ov::element::Type_t`).
pub(super) const OV_ELEMENT_TYPES: &[&str] = &[
    "undefined",
    "dynamic",
    "boolean",
    "bf16",
    "f16",
    "f32",
    "f64",
    "i4",
    "i8",
    "i16",
    "i32",
    "i64",
    "u1",
    "u2",
    "u3",
    "u4",
    "u6",
    "u8",
    "u16",
    "u32",
    "u64",
    "nf4",
    "f8e4m3",
    "f8e5m2",
    "string",
    "f4e2m1",
    "f8e8m0",
];

/// True when OpenVINO's IR reader accepts `s` as an `element_type` (or `destination_type`):
/// an element type name in any case (measured with openvino 2025: `F32`, `Boolean` are read,
/// `q99`, `fp32`, `bool` are refused).
pub(super) fn valid_element_type(s: &str) -> bool {
    OV_ELEMENT_TYPES.iter().any(|n| n.eq_ignore_ascii_case(s))
}

/// True when OpenVINO's IR reader accepts `s` as a port `precision`: an element type name in
/// lower case, in upper case (except `UNDEFINED`, `DYNAMIC`, `BOOLEAN`, `F16`, `F32`, `F64`),
/// or a legacy name `FP16`, `FP32`, `FP64`, `BOOL`, `BIN`, `UNSPECIFIED` (measured with
/// openvino 2025; mixed case such as `Fp16` is refused).
pub(super) fn valid_precision(s: &str) -> bool {
    const LEGACY: &[&str] = &["FP16", "FP32", "FP64", "BOOL", "BIN", "UNSPECIFIED"];
    const NO_UPPER: &[&str] = &["undefined", "dynamic", "boolean", "f16", "f32", "f64"];
    OV_ELEMENT_TYPES.contains(&s)
        || LEGACY.contains(&s)
        || (s.bytes().all(|b| !b.is_ascii_lowercase())
            && OV_ELEMENT_TYPES
                .iter()
                .any(|n| !NO_UPPER.contains(n) && n.eq_ignore_ascii_case(s)))
}

/// Refuses element types OpenVINO's reader refuses: `element_type` / `destination_type` of the
/// layer's `<data>` and the `precision` of each port, naming the layer and the attribute.
pub(super) fn check_element_types(path: &Path, layer: El<'_, '_>) -> Result<()> {
    if let Some(data) = layer.child("data") {
        for attr in ["element_type", "destination_type"] {
            if let Some(v) = data.attr(attr) {
                if !valid_element_type(v) {
                    return Err(layer_err(
                        path,
                        layer,
                        format!("<data {attr}=\"{v}\">: not an OpenVINO element type"),
                    ));
                }
            }
        }
    }
    for group in ["input", "output"] {
        let Some(g) = layer.child(group) else {
            continue;
        };
        for port in g.elements().filter(|e| e.name() == "port") {
            if let Some(v) = port.attr("precision") {
                if !valid_precision(v) {
                    return Err(layer_err(
                        path,
                        layer,
                        format!(
                            "{group} port {}: precision=\"{v}\" is not an OpenVINO element type",
                            port.attr("id").unwrap_or("?")
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

pub(super) fn const_spec(path: &Path, layer: El<'_, '_>) -> Result<ConstSpec> {
    let data = layer
        .child("data")
        .ok_or_else(|| layer_err(path, layer, "Const layer has no <data>"))?;
    let num = |name: &str| -> Result<u64> {
        let v = data
            .attr(name)
            .ok_or_else(|| layer_err(path, layer, format!("Const <data> has no '{name}'")))?;
        v.trim().parse::<u64>().map_err(|_| {
            layer_err(
                path,
                layer,
                format!("Const '{name}' is not a non-negative integer: '{v}'"),
            )
        })
    };
    let offset = num("offset")?;
    let size = num("size")?;
    let et = data.attr("element_type").unwrap_or_default();
    let shape_text = data.attr("shape").unwrap_or_default();
    let shape = parse_shape(shape_text).ok_or_else(|| {
        layer_err(
            path,
            layer,
            format!("Const shape '{shape_text}' is not valid"),
        )
    })?;
    let typed = match DType::from_ov_name(et) {
        Some(DType::String) | None => None,
        Some(d) => {
            let count = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
            let expected = count.and_then(|c| packed_size(d, c)).ok_or_else(|| {
                layer_err(
                    path,
                    layer,
                    format!("Const shape '{shape_text}' is too large"),
                )
            })?;
            // OpenVINO itself writes empty constants with `size="1"`: accept any size there.
            if expected != size && expected != 0 {
                return Err(layer_err(
                    path,
                    layer,
                    format!(
                        "Const size {size} does not match element_type {et} x shape [{shape_text}] \
                         ({expected} bytes)"
                    ),
                ));
            }
            Some((d, shape))
        }
    };
    Ok(ConstSpec {
        offset,
        size,
        typed,
    })
}

/// Checks a Const range against the `.bin`.
pub(super) fn check_range(
    path: &Path,
    bin_path: &Path,
    layer: El<'_, '_>,
    bin: Option<&Bytes>,
    offset: u64,
    size: u64,
) -> Result<Option<Bytes>> {
    if size == 0 {
        return Ok(Some(Bytes::new()));
    }
    let Some(bin) = bin else {
        return Err(layer_err(
            path,
            layer,
            format!(
                "Const needs {size} bytes of weights but {} does not exist",
                bin_path.display()
            ),
        ));
    };
    let end = offset
        .checked_add(size)
        .filter(|&e| e <= bin.len() as u64)
        .ok_or_else(|| {
            layer_err(
                path,
                layer,
                format!(
                    "Const offset {offset} + size {size} passes the end of {} ({} bytes)",
                    bin_path.display(),
                    bin.len()
                ),
            )
        })?;
    // Both fit in the file length, which is a usize.
    let (o, e) = (offset as usize, end as usize);
    Ok(Some(bin.slice(o..e)))
}

pub(super) fn output_value(path: &Path, layer: El<'_, '_>, port: El<'_, '_>) -> Result<Value> {
    let dtype = port.attr("precision").and_then(DType::from_ov_name);
    let dims = || port.elements().filter(|e| e.name() == "dim");
    let mut shape = Vec::with_capacity(dims().count());
    for d in dims() {
        let t = d.text_cow();
        shape.push(parse_dim(&t).ok_or_else(|| {
            layer_err(
                path,
                layer,
                format!(
                    "port {}: dim '{}' is not valid",
                    port.attr("id").unwrap_or("?"),
                    t.trim()
                ),
            )
        })?);
    }
    let mut shape = Some(shape);
    // `ov.save_model` writes a Parameter's intervals only in its `shape` attribute
    // (`shape="..2000,10..20,3..,?"`; the port dims say `-1`) and a dynamic rank as
    // `shape="..."` with no port dims.
    if layer.attr("type") == Some("Parameter") {
        if let Some(text) = layer.child("data").and_then(|d| d.attr("shape")) {
            shape = merge_parameter_shape(shape, text).map_err(|m| layer_err(path, layer, m))?;
        }
    }
    Ok(Value {
        name: crate::ir::Text::from(port.attr("names").unwrap_or_default()),
        ty: ValueType { dtype, shape },
        ty_changed: false,
    })
}

/// A Parameter's `shape` attribute over its port dims: `...` is a dynamic rank (`None`); else
/// each dim of the attribute (`N`, `-1`, `?`, `lo..hi`, `..hi`, `lo..`) replaces an unknown port
/// dim, and a known or narrower port dim stays. The ranks must agree when the port has dims.
pub(super) fn merge_parameter_shape(
    port: Option<Vec<DeclaredDim>>,
    text: &str,
) -> std::result::Result<Option<Vec<DeclaredDim>>, String> {
    let t = text.trim();
    if t == "..." {
        return Ok(match port {
            Some(p) if !p.is_empty() => Some(p),
            _ => None,
        });
    }
    let attr: Vec<DeclaredDim> = if t.is_empty() {
        Vec::new()
    } else {
        t.split(',')
            .map(|d| {
                parse_dim(d).ok_or_else(|| {
                    format!("Parameter shape '{t}': dim '{}' is not valid", d.trim())
                })
            })
            .collect::<std::result::Result<_, _>>()?
    };
    match port {
        Some(p) if p.is_empty() => Ok(Some(attr)),
        Some(p) if p.len() == attr.len() => Ok(Some(
            p.into_iter()
                .zip(attr)
                .map(|(pd, ad)| match pd {
                    DeclaredDim::Unknown => ad,
                    other => other,
                })
                .collect(),
        )),
        Some(p) => Err(format!(
            "Parameter shape '{t}' has rank {} but its port has {} dims",
            attr.len(),
            p.len()
        )),
        None => Ok(Some(attr)),
    }
}

pub(super) fn port_ids(path: &Path, layer: El<'_, '_>, group: &str) -> Result<Vec<i64>> {
    let mut ids = Vec::new();
    if let Some(g) = layer.child(group) {
        let ports = || g.elements().filter(|e| e.name() == "port");
        ids.reserve_exact(ports().count());
        for p in ports() {
            let id = parse_int(p, "id").ok_or_else(|| {
                layer_err(path, layer, format!("an <{group}> port has no valid id"))
            })?;
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Builds the graph from what [`xml::scan`] hands over.
/// A port id that appears twice in a layer's input and output ids (a few each; sorted when
/// there are many, so a hostile layer with thousands of ports is not quadratic).
pub(super) fn repeated(inputs: &[i64], outputs: &[i64]) -> Option<i64> {
    let n = inputs.len() + outputs.len();
    if n <= 32 {
        let all = || inputs.iter().chain(outputs);
        return all()
            .enumerate()
            .find(|&(k, p)| all().take(k).any(|q| q == p))
            .map(|(_, &p)| p);
    }
    // The first id (in port order) seen before: its position among equal ids sorts it after
    // the earlier one.
    let mut ids: Vec<(i64, usize)> = inputs
        .iter()
        .chain(outputs)
        .copied()
        .enumerate()
        .map(|(k, p)| (p, k))
        .collect();
    ids.sort_unstable();
    ids.windows(2)
        .filter(|w| w[0].0 == w[1].0)
        .map(|w| w[1])
        .min_by_key(|&(_, k)| k)
        .map(|(p, _)| p)
}
