//! How a rewritten slice is written: the op that can say its plan ([`Emit`]), the parameters
//! that decode back to the plan ([`written`]), and the patch that puts the new node in the
//! old one's place after checking it ([`replacement`]). Shared by [`super::merge`] and
//! [`super::concat`].

use petgraph::stable_graph::NodeIndex;

use super::{known_dims, select, Selection};
use crate::formats::Format;
use crate::ir::{Attr, Graph, OutletId};
use crate::passes::patch::{NewNodes, Outlet, Patch};
use crate::passes::rewrite;
use crate::semantics::compose;
use crate::semantics::{self, Clamp, Dim, Flavour, SlicePlan};
use crate::shape::slice_node::{self, SliceOp};

/// The ONNX custom domain of TensorFlow-style StridedSlice nodes (as `raise` writes them).
const TF_DOMAIN: &str = "org.tensorflow";

/// How the merged node is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emit {
    OnnxSlice,
    TfStrided,
    OvSlice8,
    OvStrided,
}

impl Emit {
    pub fn clamp(self) -> Clamp {
        match self {
            Emit::TfStrided => Clamp::Tf,
            _ => Clamp::Ov,
        }
    }

    /// The op that can say a plan (`ranges`: ranges only) where the ops `ops` were.
    pub fn choose(
        format: Format,
        ops: &[SliceOp],
        ranges: bool,
        opset: i64,
    ) -> std::result::Result<Emit, String> {
        match format {
            Format::Onnx if ranges && opset >= 10 => Ok(Emit::OnnxSlice),
            Format::Onnx if ops.contains(&SliceOp::TfStridedSlice) => Ok(Emit::TfStrided),
            Format::Onnx if ranges => {
                Err("left as is: an attribute-form Slice (opset < 10) is not rewritten".into())
            }
            Format::Onnx => Err(
                "left as is: the merged slice adds or removes axes, which ONNX Slice cannot say"
                    .into(),
            ),
            Format::OpenVino if ranges && ops.iter().all(|o| *o == SliceOp::OvSlice8) => {
                Ok(Emit::OvSlice8)
            }
            Format::OpenVino => Ok(Emit::OvStrided),
        }
    }

    /// The op type and domain a slice of `self` is written with.
    pub fn op(self) -> (&'static str, &'static str) {
        match self {
            Emit::OnnxSlice => (slice_node::SLICE, ""),
            Emit::TfStrided => (slice_node::STRIDED_SLICE, TF_DOMAIN),
            Emit::OvSlice8 => (slice_node::SLICE, "opset8"),
            Emit::OvStrided => (slice_node::STRIDED_SLICE, "opset1"),
        }
    }
}

/// The parameters of a slice: constant inputs after the data (name, values) and attributes.
pub type Params = (Vec<(&'static str, Vec<i64>)>, Vec<(String, Attr)>);

/// The plan the parameters written for `plan` as `emit` decode to (what the runtime will
/// read), and the parameters: `Err` when they cannot be written.
pub fn written(emit: Emit, plan: &SlicePlan) -> std::result::Result<(SlicePlan, Params), String> {
    let rank = plan.input_rank;
    let c = semantics::decode::constant;
    match emit {
        Emit::OnnxSlice | Emit::OvSlice8 => {
            let (st, en, ax, sp) =
                compose::slice_params(plan).ok_or("internal: a range plan without parameters")?;
            let back = if emit == Emit::OnnxSlice {
                semantics::onnx_slice(&c(&st), &c(&en), Some(&ax), Some(&c(&sp)), rank, 13)
            } else {
                semantics::ov_slice8(&c(&st), &c(&en), Some(&c(&sp)), Some(&ax), rank)
            }
            .map_err(|e| format!("internal: the Slice written is invalid: {e}"))?;
            let params = if emit == Emit::OnnxSlice {
                vec![("starts", st), ("ends", en), ("axes", ax), ("steps", sp)]
            } else {
                vec![("start", st), ("stop", en), ("step", sp), ("axes", ax)]
            };
            Ok((back, (params, Vec::new())))
        }
        Emit::TfStrided | Emit::OvStrided => {
            let spec = compose::strided_spec(plan).ok_or("internal: a plan without a spec")?;
            let n = spec.begin.len();
            if emit == Emit::TfStrided && n > 63 {
                return Err("left as is: more than 63 entries do not fit TensorFlow masks".into());
            }
            let flavour = if emit == Emit::TfStrided {
                Flavour::Tf
            } else {
                Flavour::Ov
            };
            let back = semantics::strided_slice(&spec, flavour, rank)
                .map_err(|e| format!("internal: the StridedSlice written is invalid: {e}"))?;
            let col = |v: &[Option<i64>]| v.iter().map(|x| x.unwrap_or(0)).collect::<Vec<i64>>();
            let strides = spec.strides.as_deref().map(col).unwrap_or(vec![1; n]);
            let params = vec![
                ("begin", col(&spec.begin)),
                ("end", col(&spec.end)),
                ("strides", strides),
            ];
            let attrs = [
                ("begin_mask", &spec.begin_mask),
                ("end_mask", &spec.end_mask),
                ("new_axis_mask", &spec.new_axis_mask),
                ("shrink_axis_mask", &spec.shrink_axis_mask),
                ("ellipsis_mask", &spec.ellipsis_mask),
            ]
            .into_iter()
            .map(|(name, m)| {
                let v: Vec<i64> = m.iter().map(|&b| i64::from(b)).collect();
                let a = if emit == Emit::OvStrided {
                    rewrite::ov_list(&v)
                } else {
                    Attr::Int(v.iter().enumerate().map(|(i, &x)| x << i).sum::<i64>())
                };
                (name.to_string(), a)
            })
            .collect();
            Ok((back, (params, attrs)))
        }
    }
}

/// The patch that replaces node `old` by a slice of `data` by `plan` written as `emit`; the
/// new node keeps `old`'s name and output. Checks first that the parameters decode back to
/// `plan` (index checks that pass on known dims aside) and, when every dim is known, that the
/// new node selects `want` (shape, indices) on an index tensor.
#[allow(clippy::too_many_arguments)]
pub fn replacement(
    graph: &Graph,
    format: Format,
    old: NodeIndex,
    data: OutletId,
    plan: &SlicePlan,
    dims: &[Dim],
    emit: Emit,
    want: Option<&Selection>,
) -> std::result::Result<Patch, String> {
    let (back, (params, attrs)) = written(emit, plan)?;
    if compose::without_passing_checks(&back, dims) != *plan {
        return Err(format!(
            "internal: the parameters written read as {back}, not {plan}"
        ));
    }
    if let (Some(want), Some(d)) = (want, known_dims(dims)) {
        let got = select(&back, &d, emit.clamp())
            .ok_or("left as is: translation validation: the new slice fails")?;
        rewrite::compare(want, &got).map_err(|e| format!("left as is: {e}"))?;
    }
    let n = graph.node(old);
    let out_value = n.outputs.first().cloned().ok_or("left as is: no output")?;
    let mut add = NewNodes::beside(format, old);
    let mut inputs = vec![Some(Outlet::from(data))];
    for (what, v) in &params {
        inputs.push(Some(add.const_i64(what, v)));
    }
    let (op_type, domain) = emit.op();
    add.op(
        Some(n.name.to_string()),
        op_type,
        domain,
        &inputs,
        attrs,
        Some(out_value),
        Default::default(),
    );
    Ok(Patch::replacing(old, add))
}
