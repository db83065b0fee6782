//! Typed attributes of the ops slice-opt evaluates, each decoded once from its dialect's
//! spelling (ONNX attribute names and integer codes, OpenVINO string attributes), so that the
//! code computing with them never reads attribute strings itself.
//!
//! Each reader returns the same value the ONNX and OpenVINO specs give the attribute, with the
//! spec's default when it is absent. Readers of values that may come from an input (OpenVINO
//! Gather's axis, Squeeze/Unsqueeze axes in ONNX opset 13+) take that input's constant.

use crate::ir::{DType, Format, Node, Tensor};

/// An OpenVINO boolean attribute (`"true"`/`"1"`, any case, spaces ignored), `default` when
/// absent.
pub fn ov_bool(n: &Node, name: &str, default: bool) -> bool {
    match n.attr_str(name).map(|s| s.trim().to_ascii_lowercase()) {
        Some(v) => matches!(v.as_str(), "true" | "1"),
        None => default,
    }
}

/// `Reshape` (ONNX) / `Reshape` (OpenVINO): what a `0` in the target means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReshapeAttrs {
    /// A `0` copies the input's dim at that position (ONNX `allowzero` 0, its default;
    /// OpenVINO `special_zero` true); otherwise it is a literal 0.
    pub zero_copies: bool,
}

impl ReshapeAttrs {
    pub fn of(n: &Node, dialect: Format) -> ReshapeAttrs {
        let zero_copies = match dialect {
            Format::OpenVino => ov_bool(n, "special_zero", false),
            Format::Onnx => n.attr_int("allowzero").unwrap_or(0) == 0,
        };
        ReshapeAttrs { zero_copies }
    }
}

/// Why an attribute (or the input standing for one) could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttrError {
    /// An integer input standing for an attribute is not readable as integers.
    #[error("an integer parameter is unreadable")]
    UnreadableInts,
    /// A value slice-opt does not evaluate (the message says which).
    #[error("{0}")]
    Unsupported(String),
}

/// The integers of a constant input standing for an attribute.
pub fn input_ints(t: Option<&Tensor>) -> Result<Vec<i64>, AttrError> {
    t.and_then(|t| t.to_i64_vec())
        .ok_or(AttrError::UnreadableInts)
}

/// `Squeeze` / `Unsqueeze` axes: the `axes` input when connected (ONNX opset 13+, OpenVINO),
/// else the `axes` attribute (ONNX before opset 13); empty when neither (Squeeze: every size-1
/// axis).
pub struct SqueezeAxes;

impl SqueezeAxes {
    pub fn of(n: &Node, axes_input: Option<&Tensor>) -> Result<Vec<i64>, AttrError> {
        match axes_input {
            Some(t) => input_ints(Some(t)),
            None => Ok(n.attr_ints("axes").and_then(|r| r.ok()).unwrap_or_default()),
        }
    }
}

/// `Gather`'s axis: ONNX attribute `axis` (default 0); OpenVINO input 2 (its first element, 0
/// when empty). OpenVINO `batch_dims` other than 0 is not evaluated.
pub struct GatherAxis;

impl GatherAxis {
    pub fn of(n: &Node, dialect: Format, axis_input: Option<&Tensor>) -> Result<i64, AttrError> {
        match dialect {
            Format::OpenVino => {
                if n.attr_int("batch_dims").unwrap_or(0) != 0 {
                    return Err(AttrError::Unsupported(
                        "Gather with batch_dims is not folded".into(),
                    ));
                }
                Ok(input_ints(axis_input)?.first().copied().unwrap_or(0))
            }
            Format::Onnx => Ok(n.attr_int("axis").unwrap_or(0)),
        }
    }
}

/// `Concat`'s axis (attribute `axis` in both dialects, default 0).
pub fn concat_axis(n: &Node) -> i64 {
    n.attr_int("axis").unwrap_or(0)
}

/// The element type `Cast` (ONNX `to`, a TensorProto code) or `Convert` (OpenVINO
/// `destination_type`, a name) produces.
pub struct CastTo;

impl CastTo {
    pub fn of(n: &Node, dialect: Format) -> Result<DType, AttrError> {
        match dialect {
            Format::Onnx => n
                .attr_int("to")
                .and_then(|v| DType::from_onnx_code(v as i32))
                .ok_or_else(|| AttrError::Unsupported("Cast without a known 'to' type".into())),
            Format::OpenVino => n
                .attr_str("destination_type")
                .and_then(DType::from_ov_name)
                .ok_or_else(|| {
                    AttrError::Unsupported("Convert without a known destination_type".into())
                }),
        }
    }
}

/// ONNX `Shape`'s `start` and `end` (opset 15; defaults: the whole shape), clamped to `0..=rank`
/// as the spec says.
pub fn shape_range(n: &Node, rank: usize) -> (usize, usize) {
    let r = rank as i64;
    let norm = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    (
        norm(n.attr_int("start").unwrap_or(0)),
        norm(n.attr_int("end").unwrap_or(r)),
    )
}

/// OpenVINO `ShapeOf`'s `output_type`: `I32` when it says `i32` (any case), else `I64`.
pub fn shape_of_type(n: &Node) -> DType {
    match n
        .attr_str("output_type")
        .map(|s| s.to_ascii_lowercase())
        .as_deref()
    {
        Some("i32") => DType::I32,
        _ => DType::I64,
    }
}

/// OpenVINO element-wise ops: only numpy broadcasting (or none) is evaluated.
pub fn ov_numpy_broadcast(n: &Node) -> Result<(), AttrError> {
    if n.attr_str("auto_broadcast")
        .is_some_and(|b| !matches!(b.to_ascii_lowercase().as_str(), "numpy" | "none"))
    {
        return Err(AttrError::Unsupported(
            "only numpy broadcasting is folded".into(),
        ));
    }
    Ok(())
}

/// OpenVINO `Divide`'s `m_pythondiv` (default true): integer division rounds toward minus
/// infinity; false rounds toward zero.
pub fn ov_python_div(n: &Node) -> bool {
    ov_bool(n, "m_pythondiv", true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Attr;

    fn node(op: &str, attrs: &[(&str, Attr)]) -> Node {
        let mut n = Node::op("n", op, "");
        n.attrs = attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        n
    }

    /// ONNX Reshape: allowzero defaults to 0 (a 0 copies); OpenVINO Reshape: special_zero is
    /// required by the spec, and a 0 copies only when it is true.
    #[test]
    fn reshape_zero_rules() {
        let onnx = |a: &[(&str, Attr)]| ReshapeAttrs::of(&node("Reshape", a), Format::Onnx);
        assert!(onnx(&[]).zero_copies);
        assert!(!onnx(&[("allowzero", Attr::Int(1))]).zero_copies);
        let ov = |a: &[(&str, Attr)]| ReshapeAttrs::of(&node("Reshape", a), Format::OpenVino);
        assert!(ov(&[("special_zero", Attr::String("true".into()))]).zero_copies);
        assert!(!ov(&[("special_zero", Attr::String("false".into()))]).zero_copies);
        assert!(!ov(&[]).zero_copies);
    }

    /// ONNX Cast `to` = 7 is INT64 (TensorProto.DataType); OpenVINO Convert names `i32`.
    #[test]
    fn cast_targets() {
        let n = node("Cast", &[("to", Attr::Int(7))]);
        assert_eq!(CastTo::of(&n, Format::Onnx), Ok(DType::I64));
        let n = node(
            "Convert",
            &[("destination_type", Attr::String("i32".into()))],
        );
        assert_eq!(CastTo::of(&n, Format::OpenVino), Ok(DType::I32));
        assert!(CastTo::of(&node("Cast", &[]), Format::Onnx).is_err());
    }

    /// ONNX Shape-15: start=-2 on rank 4 is 2; end past the rank clamps to 4.
    #[test]
    fn shape_start_end_clamp() {
        let n = node("Shape", &[("start", Attr::Int(-2)), ("end", Attr::Int(9))]);
        assert_eq!(shape_range(&n, 4), (2, 4));
        assert_eq!(shape_range(&node("Shape", &[]), 3), (0, 3));
    }
}
