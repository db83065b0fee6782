//! Rewrite: a slice that takes **one element of a 1-D shape value** (an integer vector such as
//! `Shape(x)` or `Cast(Shape(x))`) becomes one `Gather` on axis 0:
//!
//! - a slice then a `Squeeze` of its axis (`Shape(x)[-1:]` then `Squeeze`, what PyTorch and
//!   tf2onnx export for `x.shape[-1]`), or a StridedSlice whose only entry is a shrink
//!   (`shape[-1]` in OpenVINO IR), becomes `Gather(data, k)` with a scalar index: the scalar
//!   the pair gave (OpenVINO's MOC ShapeOf simplification does the same);
//! - ONNX only, a slice not squeezed: `Gather(data, [k])`, the same one-element vector, where
//!   [`super::shape`] does not already make it `Shape(start, end)` (a `Shape` read directly,
//!   opset >= 15) or the constant of a known dim.
//!
//! Proof ([`one_element`]): on a known length `L` the plan is gathered (semantics core) and must
//! select exactly one element, `k`. On a symbolic length the plan is gathered at every length
//! from the lower bound to past its last breakpoint (where a constant bound stops clamping; the
//! selection is affine in `L` after it, so a step more than the plan's step shows any change)
//! and must select, at each, exactly the element `Gather(k)` takes. Where the slice would take
//! nothing the pair is not rewritten even before a Squeeze: ONNX Runtime's Squeeze fails on an
//! axis of size 0 as the Gather would, but OpenVINO's Squeeze ignores an axis not of size 1
//! (since 2024.3, measured in `tests/squeeze_errors.rs`) and gives an empty vector there. A
//! shrink is a `Gather` by definition (its index must lie in `[-L, L)`, as a Gather's).

use petgraph::stable_graph::NodeIndex;

use super::{answer, changed, Decoded, PassCx};
use crate::formats::Format;
use crate::ir::{Attr, Graph, NodeKind, OutletId, Tensor};
use crate::passes::patch::{NewNodes, Outlet, Patch};
use crate::semantics::{self, AxisPlan, Bound, Clamp, Dim, SlicePlan, DEFAULT_MAX_ELEMENTS};

/// Sizes a proof on a symbolic length may check.
const PROOF_SIZES: i64 = 4096;

/// The slice `ix` (decoded: `d`) as a `Gather`; `None` when it is not a slice of a 1-D integer
/// value taking one element (or when [`super::shape`] rewrites it).
pub fn rewrite(cx: &PassCx, graph: &Graph, ix: NodeIndex, d: &Decoded) -> Option<Patch> {
    if d.dims.len() != 1 || !integer(graph, d.data) {
        return None;
    }
    let len = &d.dims[0];
    match d.plan.axes[..] {
        [AxisPlan::Shrink {
            axis: 0,
            index: Some(k),
            check,
        }] if check.is_none() || check == Some(k) => {
            let r = index_for(cx, len, k).map(|k| {
                let p = gather(cx, graph, ix, d.data, k, true);
                let what = format!("one element {} as Gather(index {k})", d.plan);
                (p, what)
            });
            answer(
                graph,
                ix,
                r.map(|(p, w)| changed(graph, p, ix, w, &[(ix, d.op)])),
            )
        }
        [AxisPlan::Range { axis: 0, .. }] => range(cx, graph, ix, d, len),
        _ => None,
    }
}

/// A one-element range of slice `ix`: with the `Squeeze` that reads it, one scalar `Gather`;
/// else (ONNX) a one-element `Gather`.
fn range(cx: &PassCx, graph: &Graph, ix: NodeIndex, d: &Decoded, len: &Dim) -> Option<Patch> {
    let out = OutletId { node: ix, port: 0 };
    let consumers = graph.consumers(out);
    let squeeze = match consumers[..] {
        [(c, 0)] => squeeze_of_axis0(cx, graph, c),
        _ => None,
    };
    let shape_rewrites = super::shape::rewrites(cx, graph, ix, d);
    match squeeze {
        Some(()) => {
            // The constant of a known dim ([`super::shape`]) is better than a Gather.
            if shape_rewrites == Some(super::shape::Kind::Constant) {
                return None;
            }
            let (c, _) = consumers[0];
            let r = one_element(&d.plan, len, d.op.clamp()).and_then(|k| {
                let k = index_for(cx, len, k)?;
                let mut p = gather(cx, graph, c, d.data, k, true);
                p.remove.push(ix);
                let sq = graph.node(c).name.to_string();
                Ok((
                    p,
                    format!(
                        "one element {} then Squeeze {sq} as Gather(index {k})",
                        d.plan
                    ),
                ))
            });
            answer(
                graph,
                ix,
                r.map(|(p, w)| changed(graph, p, ix, w, &[(ix, d.op)])),
            )
        }
        None => {
            if cx.dialect != Format::Onnx || shape_rewrites.is_some() {
                return None;
            }
            // Not squeezed: only a slice that takes one element at every length.
            let k = one_element(&d.plan, len, d.op.clamp()).ok()?;
            let r = index_for(cx, len, k).map(|k| {
                let p = gather(cx, graph, ix, d.data, k, false);
                (
                    p,
                    format!("one element {} as Gather(indices [{k}])", d.plan),
                )
            });
            answer(
                graph,
                ix,
                r.map(|(p, w)| changed(graph, p, ix, w, &[(ix, d.op)])),
            )
        }
    }
}

/// Whether `v` is an integer tensor (a shape value).
fn integer(graph: &Graph, v: OutletId) -> bool {
    graph
        .constant_at(v)
        .map(|t| t.dtype)
        .or_else(|| graph.value(v).and_then(|v| v.ty.dtype))
        .is_some_and(|t| t.is_index_type())
}

/// `Some` when node `c` is a `Squeeze` of axis 0 of a 1-D input (axes `[0]`, `[-1]` or
/// omitted).
fn squeeze_of_axis0(cx: &PassCx, graph: &Graph, c: NodeIndex) -> Option<()> {
    let n = graph.node(c);
    if n.kind != NodeKind::Op || n.op_type.as_str() != "Squeeze" {
        return None;
    }
    let axes = match cx.dialect {
        Format::Onnx if !(n.domain.is_empty() || n.domain.as_str() == "ai.onnx") => return None,
        Format::Onnx if cx.onnx_opset < 13 => match n.attr_ints("axes") {
            Some(a) => Some(a.ok()?),
            None => None,
        },
        _ => match graph.input(c, 1) {
            Some(a) => Some(graph.constant_at(a)?.to_i64_vec()?),
            None => None,
        },
    };
    match axes.as_deref() {
        None | Some([0] | [-1]) => Some(()),
        Some(_) => None,
    }
}

/// The index `k` as the Gather takes it: counted from the start when the length is known, else
/// as is (negative: from the end; ONNX Gather from opset 11). Out of range on a known length
/// (the slice fails at every run): refused.
fn index_for(cx: &PassCx, len: &Dim, k: i64) -> std::result::Result<i64, String> {
    if let Some(l) = len.as_known() {
        let n = if k < 0 { k + l } else { k };
        if !(0..l).contains(&n) {
            return Err(format!(
                "one element left as is: index {k} out of range on length {l}"
            ));
        }
        return Ok(n);
    }
    if k < 0 && cx.dialect == Format::Onnx && cx.onnx_opset < 11 {
        return Err(
            "one element left as is: a negative Gather index needs opset 11 (the length is \
             not known)"
                .into(),
        );
    }
    Ok(k)
}

/// The index of the one element the 1-D range `plan` takes of a vector of length `len`, at
/// every length `len` may have: as an index counted from the start, or (negative) from the
/// end.
pub fn one_element(plan: &SlicePlan, len: &Dim, clamp: Clamp) -> std::result::Result<i64, String> {
    let sel = |l: i64| -> Option<Vec<u64>> {
        semantics::gather(plan, &[u64::try_from(l).ok()?], clamp, DEFAULT_MAX_ELEMENTS).ok()
    };
    if let Some(l) = len.as_known() {
        return match sel(l).as_deref() {
            Some(&[j]) => i64::try_from(j).map_err(|_| "index too large".into()),
            _ => Err(format!(
                "one element left as is: {plan} does not take one element of {l}"
            )),
        };
    }
    let [AxisPlan::Range {
        begin,
        end,
        step: Some(s),
        check: None,
        ..
    }] = plan.axes[..]
    else {
        return Err("one element left as is: not a constant range".into());
    };
    if s <= 0 {
        return Err("one element left as is: a negative step on a symbolic length".into());
    }
    let (lo, hi) = len.bounds();
    let lo = lo.unwrap_or(0).max(0);
    let hi = hi.unwrap_or(i64::MAX);
    // A bound at or past every length (`INT64_MAX`, or beyond the upper bound) clamps to the
    // same edge at every length: no breakpoint.
    let brk = |b: Bound| match b {
        Bound::Index(v) if v < hi && v > -hi => Some(v.unsigned_abs()),
        _ => None,
    };
    let t = brk(begin)
        .into_iter()
        .chain(brk(end))
        .max()
        .unwrap_or(0)
        .saturating_add(2);
    let t = i64::try_from(t).map_err(|_| "one element left as is: constants too large")?;
    let top = lo.max(t).saturating_add(s).saturating_add(2).min(hi);
    if top.saturating_sub(lo) > PROOF_SIZES {
        return Err("one element left as is: too many sizes to prove it on".into());
    }
    let at_top = sel(top).ok_or("one element left as is: the slice fails")?;
    let [j] = at_top[..] else {
        return Err(format!(
            "one element left as is: {plan} does not take one element at every size of {len}"
        ));
    };
    let j = i64::try_from(j).map_err(|_| "index too large")?;
    let holds = |k: i64| {
        (lo..=top).all(|l| {
            let n = if k < 0 { k + l } else { k };
            (0..l).contains(&n) && sel(l).as_deref() == Some(&[n as u64][..])
        })
    };
    [j, j - top].into_iter().find(|&k| holds(k)).ok_or_else(|| {
        format!(
            "one element left as is: {plan} does not take the same element at every size \
                 of {len}"
        )
    })
}

/// The patch that puts `Gather(data, k)` (a scalar index when `scalar`, else `[k]`) in the
/// place of node `at`, named and typed as `at` was.
fn gather(
    cx: &PassCx,
    graph: &Graph,
    at: NodeIndex,
    data: OutletId,
    k: i64,
    scalar: bool,
) -> Patch {
    let n = graph.node(at);
    let mut add = NewNodes::beside(cx.dialect, at);
    let shape = if scalar { vec![] } else { vec![1] };
    let idx = add.constant("index", Tensor::from_i64(shape, &[k]));
    let (domain, inputs, attrs) = match cx.dialect {
        Format::Onnx => (
            "",
            vec![Some(Outlet::from(data)), Some(idx)],
            vec![("axis".to_string(), Attr::Int(0))],
        ),
        Format::OpenVino => {
            let axis = add.constant("axis", Tensor::from_i64(vec![], &[0]));
            (
                "opset8",
                vec![Some(Outlet::from(data)), Some(idx), Some(axis)],
                vec![("batch_dims".to_string(), Attr::String("0".into()))],
            )
        }
    };
    add.op(
        Some(n.name.to_string()),
        "Gather",
        domain,
        &inputs,
        attrs,
        n.outputs.first().cloned(),
        Default::default(),
    );
    Patch::replacing(at, add)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{onnx_slice, ops, simplified, skipped};
    use super::*;
    use crate::ir::builder::GraphBuilder;
    use crate::ir::DType;

    /// The index constant the Gather `g_node` reads, and its shape.
    fn index_of(g: &Graph, node: NodeIndex) -> (Vec<u64>, Vec<i64>) {
        let i = g.input(node, 1).expect("indices");
        let t = g.constant_at(i).expect("a constant index");
        (t.shape.clone(), t.to_i64_vec().expect("integers"))
    }

    /// `Shape(x)[-1:]` then `Squeeze(axes=[0])` of `x: [N, S, H]` (ONNX Shape: `[N, S, H]`;
    /// Slice-13 `[-1:]` of 3 elements is `[H]`, index 2; Squeeze of axis 0: the scalar `H`):
    /// one `Gather(Shape(x), 2)` with a scalar index, in the Squeeze's place.
    #[test]
    fn shape_last_then_squeeze_is_a_gather() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, "N, S, H");
        let shape = b
            .op("Shape", &[x])
            .name("shape")
            .typed(DType::I64, [3])
            .out();
        let s = onnx_slice(&mut b, "s", shape, (&[-1], &[i64::MAX], &[0], &[1]), [1]);
        let zero = b.const_i64("zero", &[0]);
        let sq = b
            .op("Squeeze", &[s, zero])
            .name("sq")
            .typed(DType::I64, [])
            .out();
        b.output("y", sq);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Gather", "Shape"]);
        assert_eq!(g.node(sq.node).op_type.as_str(), "Gather");
        assert_eq!(g.input(sq.node, 0), Some(shape));
        assert_eq!(index_of(&g, sq.node), (vec![], vec![2]));
        assert_eq!(g.node(sq.node).attr_int("axis"), Some(0));
        assert_eq!(rep.changed, 1);
    }

    /// OpenVINO `StridedSlice-1` of `ShapeOf(x)` (`x: [N, S, H]`) with begin `[-1]`, end `[0]`,
    /// shrink_axis_mask `[1]`: the spec's shrink takes element `-1`, the last (index 2), and
    /// drops the axis: `Gather-8(ShapeOf(x), 2, axis 0)`.
    #[test]
    fn openvino_shrink_is_a_gather() {
        let mut b = GraphBuilder::openvino();
        let x = b.input("x", DType::F32, "N, S, H");
        let shape = b
            .op("ShapeOf", &[x])
            .name("shape")
            .typed(DType::I64, [3])
            .out();
        let c: Vec<_> = [("b", -1), ("e", 0), ("s", 1)]
            .iter()
            .map(|&(n, v)| b.const_i64(n, &[v]))
            .collect();
        let s = b
            .op("StridedSlice", &[shape, c[0], c[1], c[2]])
            .name("s")
            .attr("begin_mask", "0")
            .attr("end_mask", "0")
            .attr("shrink_axis_mask", "1")
            .typed(DType::I64, [])
            .out();
        b.output("y", s);
        let (g, rep) = simplified(b, 0);
        assert_eq!(ops(&g), vec!["Gather", "Parameter", "Result", "ShapeOf"]);
        let n = g.node(s.node);
        assert_eq!(
            (n.op_type.as_str(), n.domain.as_str()),
            ("Gather", "opset8")
        );
        assert_eq!(index_of(&g, s.node), (vec![], vec![2]));
        assert_eq!(rep.changed, 1);
    }

    /// OpenVINO `Slice-8` `ShapeOf(x)[1:2]` then `Squeeze(axes=[0])` of `x: [N, S, 4]`: the
    /// element at index 1 of the 3 dims, squeezed to a scalar: `Gather-8(ShapeOf(x), 1)`.
    #[test]
    fn openvino_slice8_then_squeeze_is_a_gather() {
        let mut b = GraphBuilder::openvino();
        let x = b.input("x", DType::F32, "N, S, 4");
        let shape = b
            .op("ShapeOf", &[x])
            .name("shape")
            .typed(DType::I64, [3])
            .out();
        let c: Vec<_> = [("b", 1), ("e", 2), ("s", 1), ("a", 0)]
            .iter()
            .map(|&(n, v)| b.const_i64(n, &[v]))
            .collect();
        let s = b
            .op("Slice", &[shape, c[0], c[1], c[2], c[3]])
            .name("s")
            .typed(DType::I64, [1])
            .out();
        let zero = b.const_i64("zero", &[0]);
        let sq = b
            .op("Squeeze", &[s, zero])
            .name("sq")
            .typed(DType::I64, [])
            .out();
        b.output("y", sq);
        let (g, _) = simplified(b, 0);
        assert_eq!(ops(&g), vec!["Gather", "Parameter", "Result", "ShapeOf"]);
        assert_eq!(index_of(&g, sq.node), (vec![], vec![1]));
    }

    /// A 1-D i64 input `v` of length at least 2 (`2..`), `v[-2:-1]` then `Squeeze(axes=[0])`.
    /// Slice clamping: at every `L >= 2` it takes element `L - 2`, what `Gather(v, -2)` takes:
    /// one `Gather` with index `-2`. With no lower bound it stays: at `L < 2` the start clamps
    /// to 0 and the end to 0, nothing is taken, and OpenVINO's Squeeze leaves that empty
    /// vector where the Gather fails.
    #[test]
    fn symbolic_length_negative_index() {
        let build = |dims: &str| {
            let mut b = GraphBuilder::onnx();
            let v = b.input("v", DType::I64, dims);
            let s = onnx_slice(&mut b, "s", v, (&[-2], &[-1], &[0], &[1]), [1]);
            let zero = b.const_i64("zero", &[0]);
            let sq = b
                .op("Squeeze", &[s, zero])
                .name("sq")
                .typed(DType::I64, [])
                .out();
            b.output("y", sq);
            (b, v, sq)
        };
        let (b, v, sq) = build("2..");
        let (g, _) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Gather"]);
        assert_eq!(index_of(&g, sq.node), (vec![], vec![-2]));
        assert_eq!(g.input(sq.node, 0), Some(v));
        let (b, _, _) = build("L");
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice", "Squeeze"]);
        assert!(skipped(&rep).contains("does not take"), "{}", skipped(&rep));
    }

    /// `v[1:-1]` of a symbolic length takes `L - 2` elements (one only at `L = 3`): stays, and
    /// the report says why.
    #[test]
    fn refused_when_not_one_element_at_every_size() {
        let mut b = GraphBuilder::onnx();
        let v = b.input("v", DType::I64, "L");
        let s = onnx_slice(&mut b, "s", v, (&[1], &[-1], &[0], &[1]), "?");
        let zero = b.const_i64("zero", &[0]);
        let sq = b.op("Squeeze", &[s, zero]).name("sq").out();
        b.output("y", sq);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice", "Squeeze"]);
        assert!(
            skipped(&rep).contains("does not take one element"),
            "{}",
            skipped(&rep)
        );
    }

    /// A Squeeze without axes removes every axis of size 1 and leaves an empty vector as it is
    /// (ONNX Squeeze-13: "If axes is not provided, all the single dimensions will be removed"):
    /// `v[-1:]` of a length-0 `v` gives `[]` there, where `Gather(v, -1)` fails. Stays.
    #[test]
    fn refused_before_a_squeeze_without_axes_on_a_symbolic_length() {
        let mut b = GraphBuilder::onnx();
        let v = b.input("v", DType::I64, "L");
        let s = onnx_slice(&mut b, "s", v, (&[-1], &[i64::MAX], &[0], &[1]), "?");
        let sq = b.op("Squeeze", &[s]).name("sq").out();
        b.output("y", sq);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice", "Squeeze"]);
        assert!(skipped(&rep).contains("does not take"), "{}", skipped(&rep));
    }

    /// ONNX Gather before opset 11 takes no negative index; with the length unknown the index
    /// cannot be counted from the start: stays.
    #[test]
    fn refused_negative_index_before_opset_11() {
        let mut b = GraphBuilder::onnx();
        let v = b.input("v", DType::I64, "1..");
        let s = onnx_slice(&mut b, "s", v, (&[-1], &[i64::MAX], &[0], &[1]), [1]);
        let sq = b
            .op("Squeeze", &[s])
            .name("sq")
            .attr("axes", vec![0i64])
            .out();
        b.output("y", sq);
        let (g, rep) = simplified(b, 10);
        assert_eq!(ops(&g), vec!["Slice", "Squeeze"]);
        assert!(skipped(&rep).contains("opset 11"), "{}", skipped(&rep));
    }

    /// tf2onnx's `Cast(Shape(x))[1:2]` (not squeezed, read by a Concat) of `x: [N, T, 4]`:
    /// Slice-13 `[1:2]` of the 3 dims takes element 1; `Gather(Cast(Shape(x)), [1])` is the
    /// same one-element vector. (A `Shape` read directly at opset >= 15 becomes
    /// `Shape(start, end)` instead: see `shape.rs`.)
    #[test]
    fn one_element_not_squeezed_is_a_gather_of_one() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, "N, T, 4");
        let shape = b
            .op("Shape", &[x])
            .name("shape")
            .typed(DType::I64, [3])
            .out();
        let cast = b
            .op("Cast", &[shape])
            .name("cast")
            .attr("to", 6i64)
            .typed(DType::I32, [3])
            .out();
        let s = onnx_slice(&mut b, "s", cast, (&[1], &[2], &[0], &[1]), [1]);
        let m = b.const_i64("m", &[-1]);
        let cat = b.op("Concat", &[s, m]).name("cat").attr("axis", 0i64).out();
        b.output("y", cat);
        let (g, _) = simplified(b, 17);
        assert_eq!(ops(&g), vec!["Cast", "Concat", "Gather", "Shape"]);
        assert_eq!(g.node(s.node).op_type.as_str(), "Gather");
        assert_eq!(g.input(s.node, 0), Some(cast));
        assert_eq!(index_of(&g, s.node), (vec![1], vec![1]));
    }

    /// The proof on its own: `[0:1]` takes element 0 at every length from 1 (none at 0, where
    /// `Gather(0)` fails: refused when the length may be 0); `[-1:]` is index -1; `[0:2:2]`
    /// is index 0 (step 2 from 0 stops at 2); `[0:3:2]` takes two from length 3; `[-3:-1:2]`
    /// takes index 0 at length 2 (start clamped), where `Gather(-3)` fails.
    #[test]
    fn proof_on_symbolic_lengths() {
        let plan = |b: i64, e: i64, s: i64| {
            semantics::onnx_slice(
                &semantics::decode::constant(&[b]),
                &semantics::decode::constant(&[e]),
                Some(&[0]),
                Some(&semantics::decode::constant(&[s])),
                1,
                13,
            )
            .expect("valid")
        };
        let l = Dim::symbol("L");
        let l1 = Dim::symbol_bounded("L1", 1, None);
        let l3 = Dim::symbol_bounded("L3", 3, None);
        assert!(one_element(&plan(0, 1, 1), &l, Clamp::Ov).is_err());
        assert_eq!(one_element(&plan(0, 1, 1), &l1, Clamp::Ov), Ok(0));
        assert_eq!(one_element(&plan(-1, i64::MAX, 1), &l1, Clamp::Ov), Ok(-1));
        assert_eq!(one_element(&plan(0, 2, 2), &l1, Clamp::Ov), Ok(0));
        assert!(one_element(&plan(0, 3, 2), &l1, Clamp::Ov).is_err());
        assert!(one_element(&plan(-3, -1, 2), &l1, Clamp::Ov).is_err());
        assert_eq!(one_element(&plan(-3, -2, 1), &l3, Clamp::Ov), Ok(-3));
    }
}
