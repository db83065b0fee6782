//! The sizes a model admits beyond its symbols' bounds: conditions the runtime enforces on the
//! inputs' sizes, so that `check` does not call a declared dim wrong at sizes where the model
//! cannot run at all.
//!
//! A convolution or a pool needs each padded spatial input at least as large as its dilated
//! window (ONNX `Conv`/`MaxPool`/`AveragePool`/`LpPool`, OpenVINO `Convolution`,
//! `GroupConvolution`, `MaxPool`, `AvgPool`): `in + pad_begin + pad_end - dilation * (k - 1) -
//! 1` (the numerator of the output size in the ONNX operator documentation) is not negative.
//! ONNX Runtime refuses a smaller input ("Invalid input shape").

use petgraph::stable_graph::NodeIndex;

use crate::formats::Format;
use crate::ir::Graph;
use crate::semantics::Dim;
use crate::shape::Facts;

/// Expressions over the inputs' sizes that are `>= 0` wherever the model can run.
pub(super) fn conditions(graph: &Graph, facts: &Facts, format: Format) -> Vec<Dim> {
    let mut out: Vec<Dim> = Vec::new();
    for ix in graph.topo_order().unwrap_or_default() {
        for c in window_conditions(graph, facts, format, ix) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

fn window_conditions(graph: &Graph, facts: &Facts, format: Format, ix: NodeIndex) -> Vec<Dim> {
    let node = graph.node(ix);
    let onnx = format == Format::Onnx;
    let op: &str = &node.op_type;
    let shape_of = |port: usize| {
        graph
            .input(ix, port)
            .and_then(|o| facts.get(o).shape.clone())
    };
    let ints = |name: &str| node.attr_ints(name).and_then(|r| r.ok());
    // The window's size per spatial axis.
    let weight_dims = |skip: usize| -> Option<Vec<i64>> {
        let w = shape_of(1)?;
        w.get(skip..)?.iter().map(|d| d.as_known()).collect()
    };
    let kernel = match (onnx, op) {
        (true, "Conv") => ints("kernel_shape").or_else(|| weight_dims(2)),
        (true, "MaxPool" | "AveragePool" | "LpPool") => ints("kernel_shape"),
        (false, "Convolution") => weight_dims(2),
        (false, "GroupConvolution") => weight_dims(3),
        (false, "MaxPool" | "AvgPool") => ints("kernel"),
        _ => None,
    };
    let Some(kernel) = kernel else {
        return Vec::new();
    };
    let n = kernel.len();
    let auto_pad = node
        .attr_str("auto_pad")
        .unwrap_or("NOTSET")
        .to_ascii_uppercase();
    // `SAME_*` pads to the window: any size runs.
    if auto_pad.starts_with("SAME") {
        return Vec::new();
    }
    let dil = ints("dilations").unwrap_or_else(|| vec![1; n]);
    let pads = if auto_pad == "VALID" {
        vec![0; 2 * n]
    } else if onnx {
        ints("pads").unwrap_or_else(|| vec![0; 2 * n])
    } else {
        let mut p = ints("pads_begin").unwrap_or_else(|| vec![0; n]);
        p.extend(ints("pads_end").unwrap_or_else(|| vec![0; n]));
        p
    };
    let Some(x) = shape_of(0) else {
        return Vec::new();
    };
    if dil.len() != n || pads.len() != 2 * n || x.len() != n + 2 {
        return Vec::new();
    }
    (0..n)
        .filter_map(|i| {
            let d = &x[2 + i];
            if d.is_unknown() || d.is_known() {
                return None;
            }
            let eff = dil[i]
                .checked_mul(kernel[i].checked_sub(1)?)?
                .checked_add(1)?;
            let pad = pads[i].checked_add(pads[i + n])?;
            Some(d.add_const(pad.checked_sub(eff)?))
        })
        .collect()
}
