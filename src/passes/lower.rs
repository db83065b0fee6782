//! Pass `lower`: each StridedSlice (OpenVINO `StridedSlice-1`, ONNX custom-domain TensorFlow-style
//! `StridedSlice`) becomes one `Slice` (OpenVINO `Slice-8`, ONNX `Slice-10+`) over the axes it
//! slices, followed by at most one `Reshape` that inserts its new axes and removes its shrunk
//! ones (or, where a Reshape target cannot say it, `Squeeze`/`Unsqueeze`, reported). The
//! Reshape target holds known dims and `0` copies of dims in place; never `-1`, which runtimes
//! cannot infer on an empty tensor.
//!
//! Parameters come from the plan: on an axis of known size they are the exact resolved
//! `start/stop/step` (so the clamping rules of the two ops cannot differ); on an axis of
//! unknown size they are the plan's bounds, `Edge` becoming `0`/`INT64_MAX` (forward) or
//! `INT64_MAX`/`INT64_MIN` (reverse), a shrink of `i` becoming `i:i+1` (`-1:INT64_MAX` for -1).
//! A TensorFlow reverse range starting below `-dim` is empty where Slice takes one element: on
//! an axis of unknown size that case is left alone and reported.
//!
//! When the input shape is static, the rewrite is kept only if the new subgraph selects the same
//! elements in the same order with the same output shape (translation validation).

use crate::error::{Error, Result};
use crate::formats::{Format, Model};
use crate::ir::{Attr, DeclaredDim, Graph, OutletId};
use crate::passes::eval;
use crate::passes::rewrite::{self, Builder};
use crate::passes::slice_node::{self, SliceOp};
use crate::pipeline::{Change, PassReport};
use crate::semantics::{self, AxisPlan, Bound, Clamp, ResolvedAxis, SlicePlan};
use petgraph::stable_graph::NodeIndex;

/// One sliced axis: `(axis, start, stop, step)`.
type SliceAxis = (usize, i64, i64, i64);

/// How the output is reshaped after the Slice.
enum Shaping {
    None,
    /// Target, and whether its zeros are literal (`allowzero` 1 / `special_zero` false).
    Reshape(Vec<i64>, bool),
    /// Squeeze these axes of the Slice output, then unsqueeze these axes of the result.
    SqueezeUnsqueeze(Vec<i64>, Vec<i64>),
}

/// Lowers every StridedSlice of `model`.
pub fn run(model: &mut Model, report: &mut PassReport) -> Result<()> {
    let format = model.format();
    let opset = model.onnx_opset();
    let order = model
        .graph()
        .topo_order()
        .map_err(|c| Error::cycle(model.path(), c))?;
    for ix in order {
        let graph = model.graph_mut();
        if graph.g.node_weight(ix).is_none() {
            continue;
        }
        let Some(op) = slice_node::classify(graph, ix, format, opset) else {
            continue;
        };
        if !matches!(op, SliceOp::OvStridedSlice | SliceOp::TfStridedSlice) {
            continue;
        }
        let (name, op_type) = {
            let n = graph.node(ix);
            (n.name.clone(), n.op_type.clone())
        };
        let before = graph.node(ix).outputs.first().map(|v| v.name.clone());
        match lower_node(graph, ix, op, format, opset) {
            Ok(what) => report.changes.push(Change {
                node: name,
                op: op_type,
                what,
                before,
                after: None,
            }),
            Err(why) => report.skipped.push(Change::note(name, op_type, why)),
        }
    }
    Ok(())
}

/// The Slice plan of `axes` on an input of rank `rank` (Slice clamping).
fn slice_plan(axes: &[SliceAxis], rank: usize) -> std::result::Result<SlicePlan, String> {
    let c = |f: fn(&SliceAxis) -> i64| -> Vec<Option<i64>> {
        axes.iter().map(|a| Some(f(a))).collect()
    };
    let ax: Vec<i64> = axes.iter().map(|a| a.0 as i64).collect();
    semantics::ov_slice8(&c(|a| a.1), &c(|a| a.2), Some(&c(|a| a.3)), Some(&ax), rank)
        .map_err(|e| format!("internal: the Slice built is invalid: {e}"))
}

fn lower_node(
    graph: &mut Graph,
    ix: NodeIndex,
    op: SliceOp,
    format: Format,
    opset: i64,
) -> std::result::Result<String, String> {
    if format == Format::Onnx && opset < 10 {
        return Err("left as is: Slice with steps needs ONNX opset 10 or later".into());
    }
    let sn = slice_node::decode(graph, ix, op).map_err(|e| format!("left as is: {e}"))?;
    if !sn.plan.is_constant() {
        return Err("left as is: non-constant begin, end or strides".into());
    }
    let clamp = op.clamp();
    let rank = sn.plan.input_rank;
    let dims = rewrite::known_dims(graph, sn.data).unwrap_or_else(|| vec![None; rank]);
    let in_shape = slice_node::declared_shape(graph, sn.data)
        .unwrap_or_else(|| vec![DeclaredDim::Unknown; rank]);
    let static_dims: Option<Vec<u64>> = dims.iter().copied().collect();
    // Validate the old node first: an invalid one (shrink out of range...) is left alone.
    let old_sel = match &static_dims {
        Some(d) => {
            Some(rewrite::select(&sn.plan, d, clamp).map_err(|e| format!("left as is: {e}"))?)
        }
        None => None,
    };

    let mut sliced: Vec<SliceAxis> = Vec::new();
    let mut slice_out = in_shape.clone();
    // Output dims with the input axis each one comes from (None: a new axis).
    let mut out_dims: Vec<(DeclaredDim, Option<usize>)> = Vec::new();
    let mut shrunk: Vec<i64> = Vec::new();
    let mut new_axes: Vec<i64> = Vec::new();
    let err = |e: semantics::SliceError| format!("left as is: {e}");
    for entry in &sn.plan.axes {
        match *entry {
            AxisPlan::NewAxis => {
                new_axes.push(out_dims.len() as i64);
                out_dims.push((DeclaredDim::Known(1), None));
            }
            AxisPlan::Range {
                axis,
                begin,
                end,
                step,
                ..
            } => {
                let s = step.ok_or("left as is: non-constant strides")?;
                if let Some(d) = dims[axis] {
                    let ResolvedAxis::Range {
                        start, step, len, ..
                    } = rewrite::resolve_entry(*entry, d, clamp).map_err(err)?
                    else {
                        return Err("internal: a range resolved to something else".into());
                    };
                    if let Some((a, b, c)) = rewrite::exact_range(start, step, len, d) {
                        sliced.push((axis, a, b, c));
                    }
                    slice_out[axis] = DeclaredDim::Known(len);
                    out_dims.push((DeclaredDim::Known(len), Some(axis)));
                } else if begin == Bound::Edge && end == Bound::Edge && s == 1 {
                    out_dims.push((in_shape[axis].clone(), Some(axis)));
                } else {
                    if clamp == Clamp::Tf {
                        let lo = rewrite::lower_bound(graph, sn.data, axis);
                        if let Some(why) = rewrite::clamp_ambiguity(begin, s, lo) {
                            return Err(format!("left as is: {why}"));
                        }
                    }
                    let (Some(b), Some(e)) = (
                        rewrite::bound_value(begin, true, s),
                        rewrite::bound_value(end, false, s),
                    ) else {
                        return Err("left as is: non-constant begin or end".into());
                    };
                    sliced.push((axis, b, e, s));
                    slice_out[axis] = DeclaredDim::Unknown;
                    out_dims.push((DeclaredDim::Unknown, Some(axis)));
                }
            }
            AxisPlan::Shrink { axis, index, .. } => {
                let i = index.ok_or("left as is: non-constant begin")?;
                shrunk.push(axis as i64);
                if let Some(d) = dims[axis] {
                    let ResolvedAxis::Shrink { index, .. } =
                        rewrite::resolve_entry(*entry, d, clamp).map_err(err)?
                    else {
                        return Err("internal: a shrink resolved to something else".into());
                    };
                    if d != 1 {
                        sliced.push((axis, index as i64, index as i64 + 1, 1));
                    }
                } else {
                    sliced.push((
                        axis,
                        i,
                        if i == -1 {
                            i64::MAX
                        } else {
                            i.saturating_add(1)
                        },
                        1,
                    ));
                }
                slice_out[axis] = DeclaredDim::Known(1);
            }
        }
    }

    // Empty ranges first: tract 0.23 mis-optimizes a multi-axis Slice where a later axis of
    // size 1 becomes empty (PushSliceUp); the order of axes does not change a Slice's meaning.
    sliced.sort_by_key(|a| (a.1 != a.2, a.0));

    // The Reshape target: known dims, 0 where the dim is copied from the same position, one -1.
    let shaping = if shrunk.is_empty() && new_axes.is_empty() {
        Shaping::None
    } else {
        // No `-1`: runtimes cannot infer it when the tensor is empty (a dynamic dim may be 0),
        // so a dim that is neither known nor copied in place falls back to Squeeze/Unsqueeze.
        let mut target = Vec::with_capacity(out_dims.len());
        let mut ok = true;
        for (j, (d, src)) in out_dims.iter().enumerate() {
            match d {
                DeclaredDim::Known(v) if *v > 0 => target.push(*v as i64),
                _ if *src == Some(j) => target.push(0),
                _ => ok = false,
            }
        }
        let all_known = out_dims
            .iter()
            .all(|(d, _)| matches!(d, DeclaredDim::Known(_)));
        let literal_ok = format == Format::OpenVino || opset >= 14;
        if ok {
            Shaping::Reshape(target, false)
        } else if all_known && literal_ok {
            // Every dim known but a 0 sits where no copy can give it: literal zeros.
            let t = out_dims
                .iter()
                .map(|(d, _)| match d {
                    DeclaredDim::Known(v) => *v as i64,
                    _ => 0,
                })
                .collect();
            Shaping::Reshape(t, true)
        } else {
            Shaping::SqueezeUnsqueeze(shrunk.clone(), new_axes.clone())
        }
    };

    // Translation validation on the index tensor.
    let mut validated = false;
    if let (Some(d), Some(old)) = (&static_dims, &old_sel) {
        let plan = slice_plan(&sliced, rank)?;
        let (idx, shape) =
            rewrite::select(&plan, d, Clamp::Ov).map_err(|e| format!("left as is: {e}"))?;
        let shape = match &shaping {
            Shaping::None => Ok(shape),
            Shaping::Reshape(t, literal) => eval::reshape_target(&shape, t, !literal),
            Shaping::SqueezeUnsqueeze(sq, un) => {
                let s = if sq.is_empty() {
                    Ok(shape)
                } else {
                    eval::squeeze_shape(&shape, sq)
                };
                s.and_then(|s| {
                    if un.is_empty() {
                        Ok(s)
                    } else {
                        eval::unsqueeze_shape(&s, un)
                    }
                })
            }
        }
        .map_err(|e| format!("left as is: translation validation: {e}"))?;
        rewrite::compare(old, &(idx, shape)).map_err(|e| format!("left as is: {e}"))?;
        validated = true;
    }

    // Build.
    let old = graph.node(ix).clone();
    let out_value = old
        .outputs
        .first()
        .cloned()
        .ok_or("left as is: the node has no output")?;
    let ir = format == Format::OpenVino;
    let mut b = Builder::new(graph, format, ix);
    let mut cur: OutletId = sn.data;
    let mut last: Option<NodeIndex> = None;
    let mut parts: Vec<&str> = Vec::new();
    let n_reshape_nodes = match &shaping {
        Shaping::None => 0,
        Shaping::Reshape(..) => 1,
        Shaping::SqueezeUnsqueeze(s, u) => usize::from(!s.is_empty()) + usize::from(!u.is_empty()),
    };
    let mut remaining = usize::from(!sliced.is_empty()) + n_reshape_nodes;
    let mut out_slot = Some(out_value);
    let final_name = old.name.clone();
    let next = |remaining: &mut usize, slot: &mut Option<crate::ir::Value>| {
        *remaining -= 1;
        if *remaining == 0 {
            (Some(final_name.clone()), slot.take())
        } else {
            (None, None)
        }
    };
    if !sliced.is_empty() {
        let col = |f: fn(&SliceAxis) -> i64| -> Vec<i64> { sliced.iter().map(f).collect() };
        let start = b.const_i64("start", &col(|a| a.1));
        let stop = b.const_i64("stop", &col(|a| a.2));
        let step = b.const_i64("step", &col(|a| a.3));
        let axes = b.const_i64("axes", &col(|a| a.0 as i64));
        let inputs = if ir {
            [Some(cur), Some(start), Some(stop), Some(step), Some(axes)]
        } else {
            [Some(cur), Some(start), Some(stop), Some(axes), Some(step)]
        };
        let (name, out) = next(&mut remaining, &mut out_slot);
        let ty = rewrite::ty_like(b.graph, sn.data, Some(slice_out.clone()));
        let node = b.op(
            name,
            "Slice",
            if ir { "opset8" } else { "" },
            &inputs,
            Vec::new(),
            out,
            ty,
        );
        cur = OutletId { node, port: 0 };
        last = Some(node);
        parts.push("Slice");
    }
    let out_shape: Vec<DeclaredDim> = out_dims.iter().map(|(d, _)| d.clone()).collect();
    match &shaping {
        Shaping::None => {}
        Shaping::Reshape(target, literal) => {
            let t = b.const_i64("shape", target);
            let attrs = if ir {
                let v = if *literal { "false" } else { "true" };
                vec![("special_zero".to_string(), Attr::String(v.into()))]
            } else if opset >= 14 {
                vec![("allowzero".to_string(), Attr::Int(i64::from(*literal)))]
            } else {
                Vec::new()
            };
            let (name, out) = next(&mut remaining, &mut out_slot);
            let ty = rewrite::ty_like(b.graph, sn.data, Some(out_shape.clone()));
            let node = b.op(
                name,
                "Reshape",
                if ir { "opset1" } else { "" },
                &[Some(cur), Some(t)],
                attrs,
                out,
                ty,
            );
            last = Some(node);
            parts.push("Reshape");
        }
        Shaping::SqueezeUnsqueeze(sq, un) => {
            for (op_type, axes) in [("Squeeze", sq), ("Unsqueeze", un)] {
                if axes.is_empty() {
                    continue;
                }
                let (name, out) = next(&mut remaining, &mut out_slot);
                let shape = if op_type == "Squeeze" {
                    slice_out
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !axes.contains(&(*i as i64)))
                        .map(|(_, d)| d.clone())
                        .collect()
                } else {
                    out_shape.clone()
                };
                let ty = rewrite::ty_like(b.graph, sn.data, Some(shape));
                let node = if ir || opset >= 13 {
                    let a = b.const_i64("axes", axes);
                    b.op(
                        name,
                        op_type,
                        if ir { "opset1" } else { "" },
                        &[Some(cur), Some(a)],
                        Vec::new(),
                        out,
                        ty,
                    )
                } else {
                    b.op(
                        name,
                        op_type,
                        "",
                        &[Some(cur)],
                        vec![("axes".to_string(), Attr::Ints(axes.clone()))],
                        out,
                        ty,
                    )
                };
                cur = OutletId { node, port: 0 };
                last = Some(node);
                parts.push(op_type);
            }
        }
    }
    let note = if validated {
        ""
    } else {
        " (input shape not static: not validated)"
    };
    match last {
        Some(last) => {
            rewrite::take_over(graph, ix, last);
            if sliced.is_empty() && parts.len() == 1 {
                graph.lowered_shaping.insert(last);
            }
            let fallback = if matches!(shaping, Shaping::SqueezeUnsqueeze(..)) {
                ": a Reshape cannot express the new/removed axes (dims unknown), Squeeze/Unsqueeze used"
            } else {
                ""
            };
            Ok(format!("lowered to {}{fallback}{note}", parts.join(" + ")))
        }
        None => {
            graph.redirect(OutletId { node: ix, port: 0 }, sn.data);
            graph.g.remove_node(ix);
            Ok(format!("removed: it selects the whole input{note}"))
        }
    }
}
