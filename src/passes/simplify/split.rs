//! Slices of one source that are disjoint step-1 runs along one axis, rewritten as one
//! `Split` (ONNX) or `VariadicSplit` (IR).

use petgraph::stable_graph::NodeIndex;

use super::{decoded, known_dims, ranges_only, select, Decoded};
use crate::formats::Format;
use crate::ir::{Attr, DType, Graph, NodeKind, OutletId, Tensor, Value, ValueType};
use crate::passes::rewrite::{self, Builder};
use crate::report::{Change, PassReport};
use crate::semantics::compose::{self, PieceSize};
use crate::semantics::{self, Clamp, SlicePlan};
use crate::shape::slice_node;

/// Groups of slices of one source that are disjoint step-1 runs along one axis: one `Split`
/// (ONNX) or `VariadicSplit` (IR) each. A group whose source is a slice of another group is
/// done in a later round, once that one is a split output (at most [`SPLIT_ROUNDS`]).
pub(super) fn splits(graph: &mut Graph, format: Format, opset: i64, report: &mut PassReport) {
    use std::collections::BTreeMap;
    let mut refused: std::collections::BTreeSet<Vec<usize>> = Default::default();
    for _ in 0..SPLIT_ROUNDS {
        let mut groups: BTreeMap<(usize, usize), Vec<(NodeIndex, Decoded)>> = BTreeMap::new();
        let nodes: Vec<NodeIndex> = graph.g.node_indices().collect();
        for ix in nodes {
            if !graph.is_live(ix) {
                continue;
            }
            let Some(op) = slice_node::classify(graph, ix, format, opset) else {
                continue;
            };
            if let Ok(d) = decoded(graph, ix, op) {
                if ranges_only(&d.plan) {
                    groups
                        .entry((d.data.node.index(), d.data.port))
                        .or_default()
                        .push((ix, d));
                }
            }
        }
        // Members removed in this round (a later group's source may be one).
        let mut gone: std::collections::BTreeSet<NodeIndex> = Default::default();
        let mut done = 0;
        for (_, group) in groups {
            let key: Vec<usize> = group.iter().map(|(ix, _)| ix.index()).collect();
            if group.len() < 2 || refused.contains(&key) {
                continue;
            }
            if gone.contains(&group[0].1.data.node) {
                continue;
            }
            let name = graph.node(group[0].0).name.to_string();
            let op_type = graph.node(group[0].0).op_type.to_string();
            match split_group(graph, format, opset, &group) {
                Ok(what) => {
                    done += 1;
                    gone.extend(group.iter().map(|(ix, _)| *ix));
                    report.change(|| Change::note(name, op_type, what))
                }
                Err(why) => {
                    refused.insert(key);
                    report.skip(|| Change::note(name, op_type, why))
                }
            }
        }
        graph.flush_detached();
        if done == 0 {
            break;
        }
    }
}

/// Rounds of [`splits`] (a split of a split of a split...).
const SPLIT_ROUNDS: usize = 4;

fn split_group(
    graph: &mut Graph,
    format: Format,
    opset: i64,
    group: &[(NodeIndex, Decoded)],
) -> std::result::Result<String, String> {
    let plans: Vec<&SlicePlan> = group.iter().map(|(_, d)| &d.plan).collect();
    let d0 = &group[0].1;
    if group.iter().any(|(_, d)| d.dims != d0.dims) {
        return Err("slices of one source left apart: input shapes differ".into());
    }
    let clamp = d0.op.clamp();
    let split = compose::split_pieces(&plans, &d0.dims, clamp)
        .map_err(|r| format!("{} slices of one source left apart: {r}", group.len()))?;
    let axis = split.axis;
    let has_rest = split.sizes.contains(&PieceSize::Rest);
    if format == Format::Onnx && has_rest {
        return Err(format!(
            "{} slices of one source left apart: ONNX Split needs every size known",
            group.len()
        ));
    }
    if format == Format::Onnx && opset < 2 {
        return Err("left apart: Split-1".into());
    }
    let lengths: Vec<i64> = split
        .sizes
        .iter()
        .map(|s| match s {
            PieceSize::Known(v) => *v as i64,
            PieceSize::Rest => -1,
        })
        .collect();
    validate_pieces(group, &split)?;
    let first = group[0].0;
    let data = d0.data;
    let ty = rewrite::ty_like(graph, data, None);
    let mut b = Builder::new(graph, format, first);
    let base = b.base.clone();
    let node = split_node(&mut b, opset, data, axis, &lengths, &ty);
    // One output per piece: a slice's own output for its piece, a fresh one for a gap.
    let mut outputs: Vec<Value> = Vec::with_capacity(split.sizes.len());
    for p in 0..split.sizes.len() {
        let owner = split.piece_of.iter().position(|&q| q == p);
        let v = match owner {
            Some(k) => graph.node(group[k].0).outputs[0].clone(),
            None => Value {
                name: graph.unique_name(&format!("{base}/split_gap_{p}")).into(),
                ty: ty.clone(),
                ty_changed: true,
            },
        };
        outputs.push(v);
    }
    graph.node_mut(node).outputs = outputs;
    for (k, (ix, _)) in group.iter().enumerate() {
        graph.redirect(
            OutletId { node: *ix, port: 0 },
            OutletId {
                node,
                port: split.piece_of[k],
            },
        );
        graph.remove_node_lazily(*ix);
    }
    let op = if format == Format::OpenVino {
        "VariadicSplit"
    } else {
        "Split"
    };
    Ok(format!(
        "{} slices of one source along axis {axis} -> one {op} of lengths {lengths:?}",
        group.len()
    ))
}

/// Translation validation on a static input: each slice of `group` is its piece of `split`
/// (nothing to check on a symbolic input).
fn validate_pieces(
    group: &[(NodeIndex, Decoded)],
    split: &compose::Split,
) -> std::result::Result<(), String> {
    let Some(dims) = known_dims(&group[0].1.dims) else {
        return Ok(());
    };
    let axis = split.axis;
    let runs = compose::split_runs(split, dims[axis] as i128)
        .ok_or("left apart: translation validation: the split fails")?;
    for (k, (_, d)) in group.iter().enumerate() {
        let (st, len) = runs[split.piece_of[k]];
        let mut piece = d.plan.clone();
        piece.axes[axis] = semantics::AxisPlan::Range {
            axis,
            begin: semantics::Bound::Index(st as i64),
            end: semantics::Bound::Index((st + len) as i64),
            step: Some(1),
            check: None,
        };
        let want = select(&d.plan, &dims, d.op.clamp()).ok_or("left apart: a slice fails")?;
        let got = select(&piece, &dims, Clamp::Ov).ok_or("left apart: a piece fails")?;
        rewrite::compare(&want, &got).map_err(|e| format!("left apart: {e}"))?;
    }
    Ok(())
}

/// The `VariadicSplit` (IR) or `Split` (ONNX; lengths as an input from opset 13, else an
/// attribute) of `data` along `axis` into pieces of `lengths`, its outputs not yet set.
fn split_node(
    b: &mut Builder,
    opset: i64,
    data: OutletId,
    axis: usize,
    lengths: &[i64],
    ty: &ValueType,
) -> NodeIndex {
    if b.format == Format::OpenVino {
        let ax = b.const_i64("split_axis", &[axis as i64]);
        let len = b.const_i64("split_lengths", lengths);
        let n = b.op(
            None,
            "VariadicSplit",
            "opset1",
            &[Some(data), Some(ax), Some(len)],
            Vec::new(),
            None,
            ty.clone(),
        );
        // The axis is a scalar.
        let axn = b.graph.node_mut(ax.node);
        axn.kind = NodeKind::Const(Box::new(Tensor::from_i64(Vec::new(), &[axis as i64])));
        axn.outputs[0].ty = ValueType {
            dtype: Some(DType::I64),
            shape: Some(Vec::new()),
        };
        n
    } else if opset >= 13 {
        let len = b.const_i64("split", lengths);
        b.op(
            None,
            "Split",
            "",
            &[Some(data), Some(len)],
            vec![("axis".to_string(), Attr::Int(axis as i64))],
            None,
            ty.clone(),
        )
    } else {
        b.op(
            None,
            "Split",
            "",
            &[Some(data)],
            vec![
                ("axis".to_string(), Attr::Int(axis as i64)),
                ("split".to_string(), Attr::Ints(lengths.to_vec())),
            ],
            None,
            ty.clone(),
        )
    }
}
