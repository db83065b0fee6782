//! Rewrite: slices of one source that are disjoint step-1 runs along one axis (every other
//! axis whole) become one `Split` (ONNX; known sizes) or `VariadicSplit` (IR; one size may be
//! the rest, `-1`): gaps between them are outputs nothing reads.
//!
//! A rewrite of a group of slices, not of one: it runs after the walk over single slices
//! ([`super::REWRITES`]), in rounds ([`splits`]).

use petgraph::stable_graph::NodeIndex;

use super::{decoded, known_dims, ranges_only, select, Decoded, PassCx};
use crate::formats::Format;
use crate::ir::{Attr, Graph, OutletId, Tensor, ValueType};
use crate::passes::patch::{self, NewKind, NewNode, NewNodes, NewValue, Outlet, Patch};
use crate::passes::rewrite;
use crate::report::PassReport;
use crate::semantics::compose::{self, PieceSize};
use crate::semantics::{self, Clamp, SlicePlan};
use crate::shape::slice_node;

/// Groups of slices of one source that are disjoint step-1 runs along one axis: one `Split`
/// (ONNX) or `VariadicSplit` (IR) each ([`patch`]). A group whose source is a slice of another
/// group is done in a later round, once that one is a split output (at most
/// [`SPLIT_ROUNDS`]).
pub fn splits(cx: &PassCx, graph: &mut Graph, report: &mut PassReport) {
    use std::collections::BTreeMap;
    let mut refused: std::collections::BTreeSet<Vec<usize>> = Default::default();
    for _ in 0..SPLIT_ROUNDS {
        let mut groups: BTreeMap<(usize, usize), Vec<(NodeIndex, Decoded)>> = BTreeMap::new();
        let nodes: Vec<NodeIndex> = graph.g.node_indices().collect();
        for ix in nodes {
            if !graph.is_live(ix) {
                continue;
            }
            let Some(op) = slice_node::classify(graph, ix, cx.dialect, cx.onnx_opset) else {
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
            let p = patch(cx, graph, &group);
            if p.skips.is_empty() {
                done += 1;
                gone.extend(group.iter().map(|(ix, _)| *ix));
            } else {
                refused.insert(key);
            }
            patch::apply_in_walk(graph, p, report);
        }
        graph.flush_detached();
        if done == 0 {
            break;
        }
    }
}

/// Rounds of [`splits`] (a split of a split of a split...).
const SPLIT_ROUNDS: usize = 4;

/// The split of `group` (slices of one source, decoded, in index order), reported at its
/// first slice, or why not.
pub fn patch(cx: &PassCx, graph: &Graph, group: &[(NodeIndex, Decoded)]) -> Patch {
    let first = group[0].0;
    match split_group(cx, graph, group) {
        Ok((p, what)) => p.note(graph, first, what),
        Err(why) => Patch::skip(graph, first, why),
    }
}

fn split_group(
    cx: &PassCx,
    graph: &Graph,
    group: &[(NodeIndex, Decoded)],
) -> std::result::Result<(Patch, String), String> {
    let (format, opset) = (cx.dialect, cx.onnx_opset);
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
    let mut add = NewNodes::beside(format, first);
    let mut node = split_node(&mut add, opset, data, axis, &lengths, &ty);
    // One output per piece: a slice's own output for its piece, a fresh one for a gap.
    let outputs = (0..split.sizes.len())
        .map(|p| match split.piece_of.iter().position(|&q| q == p) {
            Some(k) => NewValue::Is(graph.node(group[k].0).outputs[0].clone()),
            None => NewValue::Fresh {
                what: format!("split_gap_{p}"),
                ty: ty.clone(),
            },
        })
        .collect();
    node.outputs = Some(outputs);
    let Outlet::New { node: k, .. } = add.add(node) else {
        return Err("internal: the split is not a new node".into());
    };
    let mut p = Patch {
        add: Some(add),
        ..Patch::default()
    };
    for (j, (ix, _)) in group.iter().enumerate() {
        let piece = Outlet::New {
            node: k,
            port: split.piece_of[j],
        };
        p.shunts.push((OutletId { node: *ix, port: 0 }, piece));
        p.remove.push(*ix);
    }
    let op = if format == Format::OpenVino {
        "VariadicSplit"
    } else {
        "Split"
    };
    let what = format!(
        "{} slices of one source along axis {axis} -> one {op} of lengths {lengths:?}",
        group.len()
    );
    Ok((p, what))
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
/// attribute) of `data` along `axis` into pieces of `lengths`, its outputs not yet set; the
/// constants it reads are added to `add`.
fn split_node(
    add: &mut NewNodes,
    opset: i64,
    data: OutletId,
    axis: usize,
    lengths: &[i64],
    ty: &ValueType,
) -> NewNode {
    let op = |op_type: &str, inputs: Vec<Outlet>, attrs: Vec<(String, Attr)>| NewNode {
        kind: NewKind::Op {
            name: None,
            op_type: op_type.into(),
            domain: if op_type == "VariadicSplit" {
                "opset1".into()
            } else {
                String::new()
            },
            inputs: inputs.into_iter().map(Some).collect(),
            attrs,
            ty: ty.clone(),
        },
        outputs: None,
    };
    let axis_attr = || ("axis".to_string(), Attr::Int(axis as i64));
    if add.format == Format::OpenVino {
        // The axis is a scalar.
        let ax = add.constant("split_axis", Tensor::from_i64(Vec::new(), &[axis as i64]));
        let len = add.const_i64("split_lengths", lengths);
        op("VariadicSplit", vec![data.into(), ax, len], Vec::new())
    } else if opset >= 13 {
        let len = add.const_i64("split", lengths);
        op("Split", vec![data.into(), len], vec![axis_attr()])
    } else {
        let split = ("split".to_string(), Attr::Ints(lengths.to_vec()));
        op("Split", vec![data.into()], vec![axis_attr(), split])
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{onnx_slice, ops, simplified, skipped};
    use crate::ir::builder::GraphBuilder;
    use crate::ir::{DType, Graph, OutletId};
    use petgraph::stable_graph::NodeIndex;

    /// The output of `g` named `y` reads: (node, port).
    fn read_by(g: &Graph, y: NodeIndex) -> OutletId {
        g.input(y, 0).expect("an input")
    }

    /// A fused QKV: `x[:, 0:64]`, `x[:, 64:128]`, `x[:, 128:192]` of `[B, 192]` are the three
    /// pieces of one ONNX Split of x on axis 1 with `split = [64, 64, 64]` (opset 13: an
    /// input), outputs 0, 1, 2 in order.
    #[test]
    fn qkv_is_one_split() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, "B, 192");
        let max = i64::MAX;
        let q = onnx_slice(&mut b, "q", x, (&[0], &[64], &[1], &[1]), "B, 64");
        let k = onnx_slice(&mut b, "k", x, (&[64], &[128], &[1], &[1]), "B, 64");
        let v = onnx_slice(&mut b, "v", x, (&[128], &[max], &[1], &[1]), "B, 64");
        let ys: Vec<NodeIndex> = [("yq", q), ("yk", k), ("yv", v)]
            .into_iter()
            .map(|(n, o)| b.output(n, o))
            .collect();
        b.input("unused", DType::F32, [1]);
        let (g, rep) = simplified(b, 13);
        // x on a symbolic B but a known 192: every size is known on axis 1.
        assert_eq!(ops(&g), vec!["Split"], "{}", skipped(&rep));
        let s = read_by(&g, ys[0]).node;
        for (port, &y) in ys.iter().enumerate() {
            assert_eq!(read_by(&g, y), OutletId { node: s, port });
        }
        let n = g.node(s);
        assert_eq!(n.attr_int("axis"), Some(1));
        assert_eq!(g.input(s, 0), Some(x));
        let lens = g.input(s, 1).and_then(|c| g.constant_at(c));
        assert_eq!(lens.and_then(|t| t.to_i64_vec()), Some(vec![64, 64, 64]));
        assert_eq!(n.outputs[0].name.as_str(), "q");
        assert_eq!(rep.changed, 1);
    }

    /// `x[0:2]` and `x[5:8]` of x of 8 leave 2..5 out: a Split of `[2, 3, 3]` whose output 1
    /// (the gap) nothing reads; opset 11 writes the lengths as an attribute.
    #[test]
    fn a_gap_is_an_output_nothing_reads() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, [8]);
        let a = onnx_slice(&mut b, "a", x, (&[0], &[2], &[0], &[1]), [2]);
        let c = onnx_slice(&mut b, "c", x, (&[5], &[8], &[0], &[1]), [3]);
        let ya = b.output("ya", a);
        let yc = b.output("yc", c);
        let (g, _) = simplified(b, 11);
        let s = read_by(&g, ya);
        assert_eq!((s.port, read_by(&g, yc).port), (0, 2));
        let n = g.node(s.node);
        assert_eq!(n.attr_ints("split"), Some(Ok(vec![2, 3, 3])));
        assert_eq!(n.outputs.len(), 3);
        assert_eq!(n.outputs[1].name.as_str(), "a/split_gap_1");
    }

    /// Overlapping slices (`x[0:5]`, `x[3:8]`) stay apart.
    #[test]
    fn overlapping_stay_apart() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, [8]);
        let a = onnx_slice(&mut b, "a", x, (&[0], &[5], &[0], &[1]), [5]);
        let c = onnx_slice(&mut b, "c", x, (&[3], &[8], &[0], &[1]), [5]);
        b.output("ya", a);
        b.output("yc", c);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice", "Slice"]);
        assert!(skipped(&rep).contains("left apart"), "{}", skipped(&rep));
    }

    /// OpenVINO: `x[:, 0:4]` and `x[:, 4:]` of `[2, N]` (N from 4) are one VariadicSplit of
    /// lengths `[4, -1]` (the spec: -1 is the rest), axis a scalar constant 1.
    #[test]
    fn openvino_rest_is_minus_one() {
        let mut b = GraphBuilder::openvino();
        let x = b.input("x", DType::F32, "2, 4..");
        let ov = |b: &mut GraphBuilder, name: &str, st: i64, en: i64, dims: &str| {
            let c: Vec<_> = [("start", st), ("stop", en), ("step", 1), ("axes", 1)]
                .iter()
                .map(|(w, v)| b.const_i64(&format!("{name}_{w}"), &[*v]))
                .collect();
            b.op("Slice", &[x, c[0], c[1], c[2], c[3]])
                .name(name)
                .domain("opset8")
                .typed(DType::F32, dims)
                .out()
        };
        let a = ov(&mut b, "a", 0, 4, "2, 4");
        let r = ov(&mut b, "r", 4, i64::MAX, "2, ?");
        let ya = b.output("ya", a);
        let yr = b.output("yr", r);
        let (g, rep) = simplified(b, 0);
        assert_eq!(
            ops(&g),
            vec!["Parameter", "Result", "Result", "VariadicSplit"],
            "{}",
            skipped(&rep)
        );
        let s = read_by(&g, ya);
        assert_eq!(
            read_by(&g, yr),
            OutletId {
                node: s.node,
                port: 1
            }
        );
        let c = |k| g.input(s.node, k).and_then(|o| g.constant_at(o)).cloned();
        let axis = c(1).expect("axis");
        assert!(axis.shape.is_empty());
        assert_eq!(axis.to_i64_vec(), Some(vec![1]));
        assert_eq!(c(2).and_then(|t| t.to_i64_vec()), Some(vec![4, -1]));
    }
}
