//! Rewrite: **a Slice of a Slice on disjoint axes, with computed parameters**, becomes one
//! Slice (ONNX `Slice` opset >= 10, OpenVINO `Slice-8`) whose starts, ends, axes and steps are
//! the two lists one after the other (`Concat` on axis 0; constants stay constants, joined).
//! What exporters write for GPT-2's causal mask: `bias[:, :, k - q : k, :k]`, two Slices whose
//! starts and ends are computed from `Shape`s. [`super::merge`] takes the pairs whose
//! parameters are all constant (it gets the exact positions); this one the others.
//!
//! Why it is exact: a Slice leaves the axes it does not list as they are, so when the two
//! lists of axes are disjoint the second Slice reads, on each axis it slices, the input's own
//! dim, and each output axis is sliced by exactly one of the two, by its own parameters: what
//! one Slice listing both does. Checked before it is kept: the parameters written are decoded
//! (semantics core) and each axis's entry must be the entry of the one slice that lists it,
//! the other slice's entry on it the whole axis.
//!
//! Refused (reported): axes not constant or not given, axes that are or may be the same (a
//! negative and a non-negative axis with the rank unknown), a first Slice read elsewhere too,
//! a list whose element type is not known or not an integer type. ONNX Slice takes one type
//! for all four lists: the lists of the other type are cast (constants converted); OpenVINO's
//! Concat takes one type per list, cast the same way. OpenVINO's `SliceSequenceToSingleSlice`
//! does this transformation too, on Slice-8 with constant axes that differ as written.

use petgraph::stable_graph::NodeIndex;

use super::{answer, changed, Decoded, PassCx};
use crate::formats::Format;
use crate::ir::{Attr, DType, DeclaredDim, Graph, OutletId, Tensor, TensorData, ValueType};
use crate::passes::patch::{NewNodes, Outlet, Patch};
use crate::semantics::{self, AxisPlan, Bound, SlicePlan};
use crate::shape::slice_node::{self, SliceOp};

/// The merge of the slice `ix` (decoded: `d`, constant) with the slice it reads when that one's
/// parameters are not all constant; `None` when it does not read a Slice of its kind, or that
/// one is constant too ([`super::merge`]'s case).
pub fn rewrite(cx: &PassCx, graph: &Graph, ix: NodeIndex, d: &Decoded) -> Option<Patch> {
    let inner = pair(cx, graph, ix, d.op)?;
    let sn = slice_node::decode(graph, inner, d.op).ok()?;
    if sn.plan.is_constant() {
        return None;
    }
    merge(cx, graph, ix, d.op, inner)
}

/// The merge of the slice `ix` (of kind `op`), whose parameters are not all constant, with the
/// slice it reads; `None` when it does not read a Slice of its kind.
pub fn computed(cx: &PassCx, graph: &Graph, ix: NodeIndex, op: SliceOp) -> Option<Patch> {
    let inner = pair(cx, graph, ix, op)?;
    merge(cx, graph, ix, op, inner)
}

/// The Slice that slice `ix` (of kind `op`) reads, when both are ONNX Slice-10+ or both
/// OpenVINO Slice-8.
fn pair(cx: &PassCx, graph: &Graph, ix: NodeIndex, op: SliceOp) -> Option<NodeIndex> {
    let ok = |o: SliceOp| match o {
        SliceOp::OnnxSlice { opset } => opset >= 10,
        SliceOp::OvSlice8 => true,
        _ => false,
    };
    if !ok(op) {
        return None;
    }
    let data = graph.input(ix, 0)?;
    let inner_op = slice_node::classify(graph, data.node, cx.dialect, cx.onnx_opset)?;
    (data.port == 0 && inner_op == op).then_some(data.node)
}

/// One parameter list of a slice: a constant, or a computed value of `len` elements.
#[derive(Clone)]
enum List {
    Const(DType, Vec<i64>),
    Computed(OutletId, DType),
}

impl List {
    fn dtype(&self) -> DType {
        match self {
            List::Const(t, _) | List::Computed(_, t) => *t,
        }
    }
    /// Its elements as the decoder takes them (`None`: computed), `len` of them.
    fn values(&self, len: usize) -> Vec<Option<i64>> {
        match self {
            List::Const(_, v) => v.iter().copied().map(Some).collect(),
            List::Computed(..) => vec![None; len],
        }
    }
}

/// The four lists of slice `n`: starts, ends, axes, steps (steps omitted: ones).
fn lists(graph: &Graph, n: NodeIndex, op: SliceOp) -> std::result::Result<[List; 4], String> {
    let ports = op.ports();
    let read = |port: Option<usize>, what: &str| -> std::result::Result<Option<List>, String> {
        let Some(o) = port.and_then(|p| graph.input(n, p)) else {
            return Ok(None);
        };
        if let Some(t) = graph.constant_at(o) {
            let v = t
                .to_i64_vec()
                .filter(|_| matches!(t.dtype, DType::I32 | DType::I64))
                .ok_or(format!("not merged: {what} not of type i32 or i64"))?;
            return Ok(Some(List::Const(t.dtype, v)));
        }
        let t = graph
            .value(o)
            .and_then(|v| v.ty.dtype)
            .filter(|t| matches!(t, DType::I32 | DType::I64))
            .ok_or(format!(
                "not merged: the element type of {what} is not known"
            ))?;
        Ok(Some(List::Computed(o, t)))
    };
    let starts = read(ports.begin, "starts")?.ok_or("not merged: starts missing")?;
    let ends = read(ports.end, "ends")?.ok_or("not merged: ends missing")?;
    let (t, ax) = match read(ports.axes, "axes")? {
        Some(List::Const(t, v)) => (t, v),
        Some(List::Computed(..)) => return Err("not merged: axes not constant".into()),
        None => return Err("not merged: axes not given".into()),
    };
    let steps = read(ports.steps, "steps")?.unwrap_or_else(|| List::Const(t, vec![1; ax.len()]));
    Ok([starts, ends, List::Const(t, ax), steps])
}

/// Slice `outer` (of kind `op`) of slice `inner` as one slice.
fn merge(
    cx: &PassCx,
    graph: &Graph,
    outer: NodeIndex,
    op: SliceOp,
    inner: NodeIndex,
) -> Option<Patch> {
    let r = merged(cx, graph, outer, op, inner)
        .map(|(p, what)| changed(graph, p, outer, what, &[(outer, op), (inner, op)]));
    answer(graph, outer, r)
}

fn merged(
    cx: &PassCx,
    graph: &Graph,
    outer: NodeIndex,
    op: SliceOp,
    inner: NodeIndex,
) -> std::result::Result<(Patch, String), String> {
    let consumers = graph.consumers(OutletId {
        node: inner,
        port: 0,
    });
    if consumers.len() != 1 {
        return Err(format!(
            "not merged with the slice before it: that one has {} consumers",
            consumers.len()
        ));
    }
    let data = graph
        .input(inner, 0)
        .ok_or("not merged: the data input is missing")?;
    let rank = slice_node::declared_shape(graph, data).map(|s| s.len());
    let l1 = lists(graph, inner, op)?;
    let l2 = lists(graph, outer, op)?;
    let axes = |l: &[List; 4]| match &l[2] {
        List::Const(_, v) => v.clone(),
        List::Computed(..) => Vec::new(),
    };
    let (a1, a2) = (axes(&l1), axes(&l2));
    // Disjoint axes, after normalising negative ones on a known rank.
    let norm = |a: i64| match rank {
        Some(r) if a < 0 => a + r as i64,
        _ => a,
    };
    if rank.is_none()
        && a1.iter().chain(&a2).any(|&a| a < 0)
        && a1.iter().chain(&a2).any(|&a| a >= 0)
    {
        return Err(
            "not merged: a negative and a non-negative axis may be the same (rank unknown)".into(),
        );
    }
    if a1.iter().any(|&a| a2.iter().any(|&b| norm(a) == norm(b))) {
        return Err(
            "not merged: the two slices share an axis (only disjoint axes are merged when \
                    parameters are computed)"
                .into(),
        );
    }
    let rank = rank.ok_or("not merged: the rank of the data is unknown")?;
    // The plans of the two, as the file says them (semantics core).
    let p1 = slice_node::decode(graph, inner, op)
        .map_err(|e| format!("not merged: inner {e}"))?
        .plan;
    let p2 = slice_node::decode(graph, outer, op)
        .map_err(|e| format!("not merged: {e}"))?
        .plan;
    // ONNX: one index type for the four lists; OpenVINO: one per list.
    let all64 = l1.iter().chain(&l2).any(|l| l.dtype() == DType::I64);
    let common = |k: usize| -> DType {
        let any64 = match cx.dialect {
            Format::Onnx => all64,
            Format::OpenVino => l1[k].dtype() == DType::I64 || l2[k].dtype() == DType::I64,
        };
        if any64 {
            DType::I64
        } else {
            DType::I32
        }
    };
    // The merged lists, decoded: each axis must be sliced as the one slice listing it did.
    let (n1, n2) = (a1.len(), a2.len());
    let cat = |k: usize| -> Vec<Option<i64>> {
        let mut v = l1[k].values(n1);
        v.extend(l2[k].values(n2));
        v
    };
    let (st, en, sp) = (cat(0), cat(1), cat(3));
    let ax: Vec<i64> = a1.iter().chain(&a2).copied().collect();
    let p3 = match op {
        SliceOp::OvSlice8 => semantics::ov_slice8(&st, &en, Some(&sp), Some(&ax), rank),
        _ => semantics::onnx_slice(&st, &en, Some(&ax), Some(&sp), rank, 13),
    }
    .map_err(|e| format!("not merged: the merged parameters are invalid: {e}"))?;
    check(
        &p1,
        &p2,
        &p3,
        &a1.iter().map(|&a| norm(a)).collect::<Vec<_>>(),
    )?;
    let dims = slice_node::declared_shape(graph, data).unwrap_or_default();
    sampled(op, &dims, [&l1, &l2], (n1, n2))?;
    // The new nodes: each list as a constant or a Concat, then the Slice in `outer`'s place.
    let mut add = NewNodes::beside(cx.dialect, outer);
    let what = ["starts", "ends", "axes", "steps"];
    let mut inputs = vec![Some(Outlet::from(data))];
    let mut made = [None; 4];
    for k in 0..4 {
        made[k] = Some(joined(
            cx,
            &mut add,
            what[k],
            &l1[k],
            &l2[k],
            common(k),
            n1 + n2,
        ));
    }
    let order: [usize; 4] = match op {
        SliceOp::OvSlice8 => [0, 1, 3, 2],
        _ => [0, 1, 2, 3],
    };
    inputs.extend(order.iter().map(|&k| made[k]));
    let n = graph.node(outer);
    let domain = match op {
        SliceOp::OvSlice8 => "opset8",
        _ => "",
    };
    let op_type = slice_node::SLICE;
    add.op(
        Some(n.name.to_string()),
        op_type,
        domain,
        &inputs,
        Vec::new(),
        n.outputs.first().cloned(),
        Default::default(),
    );
    let mut p = Patch::replacing(outer, add);
    p.remove.push(inner);
    Ok((
        p,
        format!(
            "merged with the slice before it (disjoint axes {a1:?} and {a2:?}, computed \
             parameters): one Slice, its lists joined"
        ),
    ))
}

/// Whether the merged plan `p3` slices each axis as the one of `p1` (first, listing the axes
/// `a1`, normalised) and `p2` (second) that slices it, the other taking it whole.
fn check(
    p1: &SlicePlan,
    p2: &SlicePlan,
    p3: &SlicePlan,
    a1: &[i64],
) -> std::result::Result<(), String> {
    let whole = |e: &AxisPlan| {
        matches!(
            e,
            AxisPlan::Range {
                begin: Bound::Edge,
                end: Bound::Edge,
                step: Some(1),
                check: None,
                ..
            }
        )
    };
    let bad =
        || Err("not merged: internal: the merged parameters do not decode to the pair".into());
    if p1.axes.len() != p3.axes.len() || p2.axes.len() != p3.axes.len() {
        return bad();
    }
    for (a, ((e1, e2), e3)) in p1.axes.iter().zip(&p2.axes).zip(&p3.axes).enumerate() {
        let (mine, other) = if a1.contains(&(a as i64)) {
            (e1, e2)
        } else {
            (e2, e1)
        };
        if e3 != mine || !whole(other) {
            return bad();
        }
    }
    Ok(())
}

/// Translation validation on samples (semantics core): with the computed elements given
/// values (every computed start one of a few values, every computed end one of a few, steps
/// 1, 2 or -1), on the data's dims (capped at 7 where large or symbolic: the rewrite holds at
/// every size), the merged slice takes the elements the pair takes (an index tensor gathered).
fn sampled(
    op: SliceOp,
    dims: &[DeclaredDim],
    lists: [&[List; 4]; 2],
    lens: (usize, usize),
) -> std::result::Result<(), String> {
    let total: Option<u64> = dims.iter().try_fold(1u64, |acc, d| match d {
        DeclaredDim::Known(v) => acc.checked_mul(*v),
        _ => None,
    });
    let small = matches!(total, Some(t) if t <= 1 << 16);
    let dims: Vec<u64> = dims
        .iter()
        .map(|d| match d {
            DeclaredDim::Known(v) if small => *v,
            DeclaredDim::Known(v) => (*v).min(7),
            _ => 7,
        })
        .collect();
    let rank = dims.len();
    let values = [-9, -2, 0, 1, 3, i64::MAX];
    let steps = [1, 2, -1];
    let plan = |st: &[i64], en: &[i64], ax: &[i64], sp: &[i64]| {
        let c = semantics::decode::constant;
        match op {
            SliceOp::OvSlice8 => semantics::ov_slice8(&c(st), &c(en), Some(&c(sp)), Some(ax), rank),
            _ => semantics::onnx_slice(&c(st), &c(en), Some(ax), Some(&c(sp)), rank, 13),
        }
        .ok()
    };
    let sel = |p: &SlicePlan, d: &[u64]| -> Option<(Vec<u64>, Vec<u64>)> {
        let idx = semantics::gather(p, d, op.clamp(), semantics::DEFAULT_MAX_ELEMENTS).ok()?;
        Some((semantics::output_shape(p, d, op.clamp()).ok()?, idx))
    };
    let cat = |x: &[i64], y: &[i64]| x.iter().chain(y).copied().collect::<Vec<_>>();
    for &b in &values {
        for &e in &values {
            for &st in &steps {
                let fill = |l: &List, n: usize, v: i64| -> Vec<i64> {
                    l.values(n).iter().map(|x| x.unwrap_or(v)).collect()
                };
                let lists_of = |l: &[List; 4], n: usize| {
                    [
                        fill(&l[0], n, b),
                        fill(&l[1], n, e),
                        fill(&l[2], n, 0),
                        fill(&l[3], n, st),
                    ]
                };
                let [s1, e1, a1, t1] = lists_of(lists[0], lens.0);
                let [s2, e2, a2, t2] = lists_of(lists[1], lens.1);
                let (Some(p1), Some(p2)) = (plan(&s1, &e1, &a1, &t1), plan(&s2, &e2, &a2, &t2))
                else {
                    continue;
                };
                let p3 = plan(
                    &cat(&s1, &s2),
                    &cat(&e1, &e2),
                    &cat(&a1, &a2),
                    &cat(&t1, &t2),
                )
                .ok_or("not merged: translation validation: the merged slice is invalid")?;
                let Some((shape1, idx1)) = sel(&p1, &dims) else {
                    continue;
                };
                let Some((shape2, idx2)) = sel(&p2, &shape1) else {
                    continue;
                };
                let want: Vec<u64> = idx2.iter().map(|&j| idx1[j as usize]).collect();
                if sel(&p3, &dims) != Some((shape2, want)) {
                    return Err(format!(
                        "not merged: translation validation failed (starts {b}, ends {e}, \
                         steps {st} on {dims:?})"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// List `k` of the merged slice: `a` then `b` of type `t` (`n` elements): a constant when both
/// are, else a `Concat` (a part of another type cast, a constant part converted).
fn joined(
    cx: &PassCx,
    add: &mut NewNodes,
    what: &str,
    a: &List,
    b: &List,
    t: DType,
    n: usize,
) -> Outlet {
    if let (List::Const(_, x), List::Const(_, y)) = (a, b) {
        let v: Vec<i64> = x.iter().chain(y).copied().collect();
        return add.constant(what, tensor(t, &v));
    }
    let part = |add: &mut NewNodes, l: &List| -> Outlet {
        match l {
            List::Const(_, v) => add.constant(what, tensor(t, v)),
            List::Computed(o, s) if *s == t => Outlet::from(*o),
            List::Computed(o, _) => {
                let (op, domain, attr) = match cx.dialect {
                    Format::Onnx => ("Cast", "", ("to", Attr::Int(i64::from(t.onnx_code())))),
                    Format::OpenVino => (
                        "Convert",
                        "opset1",
                        ("destination_type", Attr::String(t.ov_name().into())),
                    ),
                };
                add.op(
                    None,
                    op,
                    domain,
                    &[Some(Outlet::from(*o))],
                    vec![(attr.0.to_string(), attr.1)],
                    None,
                    ValueType {
                        dtype: Some(t),
                        shape: None,
                    },
                )
            }
        }
    };
    let x = part(add, a);
    let y = part(add, b);
    let axis = match cx.dialect {
        Format::Onnx => Attr::Int(0),
        Format::OpenVino => Attr::String("0".into()),
    };
    let domain = match cx.dialect {
        Format::Onnx => "",
        Format::OpenVino => "opset1",
    };
    add.op(
        None,
        "Concat",
        domain,
        &[Some(x), Some(y)],
        vec![("axis".to_string(), axis)],
        None,
        ValueType {
            dtype: Some(t),
            shape: Some(vec![DeclaredDim::Known(n as u64)]),
        },
    )
}

/// A 1-D tensor of `values` of type `t` (i64 or i32: only when every list joined is i32, so
/// every value fits).
fn tensor(t: DType, values: &[i64]) -> Tensor {
    if t == DType::I32 {
        let mut buf = Vec::with_capacity(values.len() * 4);
        for &v in values {
            buf.extend_from_slice(&(v as i32).to_le_bytes());
        }
        return Tensor {
            dtype: DType::I32,
            shape: vec![values.len() as u64],
            data: TensorData::Raw(bytes::Bytes::from(buf)),
        };
    }
    Tensor::from_i64(vec![values.len() as u64], values)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ops, simplified, skipped};
    use super::*;
    use crate::ir::builder::GraphBuilder;
    use crate::semantics::{Clamp, DEFAULT_MAX_ELEMENTS};

    /// The values of list `port` of slice `s`: constants, a Concat of parts (a Cast passes
    /// its input's values), or a graph input whose value `inputs` gives.
    fn list(g: &Graph, o: OutletId, inputs: &[(OutletId, Vec<i64>)]) -> Vec<i64> {
        if let Some(t) = g.constant_at(o) {
            return t.to_i64_vec().expect("integers");
        }
        if let Some((_, v)) = inputs.iter().find(|(i, _)| *i == o) {
            return v.clone();
        }
        let n = g.node(o.node);
        let parts = (0..n.num_inputs as usize).map(|p| g.input(o.node, p).expect("input"));
        match n.op_type.as_str() {
            "Concat" => parts.flat_map(|p| list(g, p, inputs)).collect(),
            "Cast" | "Convert" => parts.flat_map(|p| list(g, p, inputs)).collect(),
            t => panic!("unexpected {t}"),
        }
    }

    /// What slice `s` (ONNX Slice or OpenVINO Slice-8) takes of an index tensor of `dims`, its
    /// computed lists given by `inputs`.
    fn takes(g: &Graph, s: NodeIndex, dims: &[u64], inputs: &[(OutletId, Vec<i64>)]) -> Vec<u64> {
        let ov = g.node(s).domain.as_str() == "opset8";
        let port = |p: usize| list(g, g.input(s, p).expect("list"), inputs);
        let c = semantics::decode::constant;
        let plan = if ov {
            let (st, en, sp, ax) = (port(1), port(2), port(3), port(4));
            semantics::ov_slice8(&c(&st), &c(&en), Some(&c(&sp)), Some(&ax), dims.len())
        } else {
            let (st, en, ax, sp) = (port(1), port(2), port(3), port(4));
            semantics::onnx_slice(&c(&st), &c(&en), Some(&ax), Some(&c(&sp)), dims.len(), 13)
        }
        .expect("valid");
        semantics::gather(&plan, dims, Clamp::Ov, DEFAULT_MAX_ELEMENTS).expect("selects")
    }

    /// numpy `arange(64).reshape(1, 1, 8, 8)[:, :, st:en, :en2]`, flat.
    fn rows_cols(st: u64, en: u64, en2: u64) -> Vec<u64> {
        (st..en)
            .flat_map(|r| (0..en2).map(move |c| r * 8 + c))
            .collect()
    }

    /// A GPT-2 causal mask pair `bias[:, :, st:en][..., 0:en2]` (ONNX Slice-13, axes 2 then
    /// 3; `st`, `en`, `en2` graph inputs of type `t`, the other lists constants of i64).
    fn causal(b: &mut GraphBuilder, t: DType, axes: (i64, i64)) -> [OutletId; 5] {
        let bias = b.input("bias", DType::F32, [1, 1, 8, 8]);
        let st = b.input("st", t, [1]);
        let en = b.input("en", t, [1]);
        let en2 = b.input("en2", DType::I64, [1]);
        let ax1 = b.const_i64("ax1", &[axes.0]);
        let one = b.const_i64("one", &[1]);
        let rows = b
            .op("Slice", &[bias, st, en, ax1, one])
            .name("rows")
            .typed(DType::F32, "1, 1, ?, 8")
            .out();
        let zero = b.const_i64("zero", &[0]);
        let ax2 = b.const_i64("ax2", &[axes.1]);
        let mask = b
            .op("Slice", &[rows, zero, en2, ax2])
            .name("mask")
            .typed(DType::F32, "1, 1, ?, ?")
            .out();
        b.output("y", mask);
        [bias, st, en, en2, mask]
    }

    /// The pair on axes 2 and 3 is one Slice of `bias`: starts `[st, 0]`, ends `[en, en2]`,
    /// axes `[2, 3]`, steps `[1, 1]`; at st = 5, en = 7, en2 = 3 it takes rows 5 and 6, columns
    /// 0 to 2 (numpy `bias[:, :, 5:7, :3]`), as the pair does.
    #[test]
    fn computed_pair_on_disjoint_axes_is_one_slice() {
        let mut b = GraphBuilder::onnx();
        let [bias, st, en, en2, mask] = causal(&mut b, DType::I64, (2, 3));
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Concat", "Concat", "Slice"]);
        assert_eq!(g.input(mask.node, 0), Some(bias));
        let vals = [(st, vec![5]), (en, vec![7]), (en2, vec![3])];
        assert_eq!(
            takes(&g, mask.node, &[1, 1, 8, 8], &vals),
            rows_cols(5, 7, 3)
        );
        let vals = [(st, vec![-3]), (en, vec![i64::MAX]), (en2, vec![-2])];
        assert_eq!(
            takes(&g, mask.node, &[1, 1, 8, 8], &vals),
            rows_cols(5, 8, 6)
        );
        assert_eq!(
            list(&g, g.input(mask.node, 3).expect("axes"), &[]),
            vec![2, 3]
        );
        assert!(rep.changes[0]
            .what
            .starts_with("merged with the slice before it"));
    }

    /// Starts and ends of i32 with the other lists i64: ONNX Slice takes one type for all
    /// four (`Tind`), so the i32 parts are cast to i64.
    #[test]
    fn lists_of_two_types_are_cast_to_i64() {
        let mut b = GraphBuilder::onnx();
        let [_, st, en, en2, mask] = causal(&mut b, DType::I32, (2, 3));
        let (g, _) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Cast", "Cast", "Concat", "Concat", "Slice"]);
        for p in 1..5 {
            let o = g.input(mask.node, p).expect("list");
            let t = g
                .constant_at(o)
                .map(|t| t.dtype)
                .or_else(|| g.value(o).and_then(|v| v.ty.dtype));
            assert_eq!(t, Some(DType::I64), "list {p}");
        }
        let vals = [(st, vec![1]), (en, vec![4]), (en2, vec![2])];
        assert_eq!(
            takes(&g, mask.node, &[1, 1, 8, 8], &vals),
            rows_cols(1, 4, 2)
        );
    }

    /// Both on axis 2 (the second written `-2` on rank 4): the second's clamping reads the
    /// first's output, whose size depends on the computed values; stays apart.
    #[test]
    fn refused_on_the_same_axis() {
        for axes in [(2, 2), (2, -2)] {
            let mut b = GraphBuilder::onnx();
            causal(&mut b, DType::I64, axes);
            let (g, rep) = simplified(b, 13);
            assert_eq!(ops(&g), vec!["Slice", "Slice"]);
            assert!(skipped(&rep).contains("share an axis"), "{}", skipped(&rep));
        }
    }

    /// Rank unknown: axis `-1` and axis `3` may be the same axis (on rank 4); nothing can be
    /// decoded without the rank either. Both stay.
    #[test]
    fn refused_negative_and_non_negative_axes_on_unknown_rank() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, [2, 2, 2, 2]);
        let x = b.op("Relu", &[x]).name("relu").out();
        let st = b.input("st", DType::I64, [1]);
        let one = b.const_i64("one", &[1]);
        let ax1 = b.const_i64("ax1", &[-1]);
        let s1 = b.op("Slice", &[x, st, one, ax1]).name("s1").out();
        let zero = b.const_i64("zero", &[0]);
        let ax2 = b.const_i64("ax2", &[3]);
        let s2 = b.op("Slice", &[s1, zero, st, ax2]).name("s2").out();
        b.output("y", s2);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Relu", "Slice", "Slice"]);
        assert!(skipped(&rep).contains("rank"), "{}", skipped(&rep));
    }

    /// Axes not given (ONNX: `[0, 1, ...]` as long as starts, which is computed): refused.
    #[test]
    fn refused_without_axes() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", DType::F32, [4, 4]);
        let st = b.input("st", DType::I64, [1]);
        let en = b.const_i64("en", &[3]);
        let s1 = b
            .op("Slice", &[x, st, en])
            .name("s1")
            .typed(DType::F32, "?, 4")
            .out();
        let ax = b.const_i64("ax", &[1]);
        let s2 = b.op("Slice", &[s1, st, en, ax]).name("s2").out();
        b.output("y", s2);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice", "Slice"]);
        assert!(
            skipped(&rep).contains("axes not given"),
            "{}",
            skipped(&rep)
        );
    }

    /// A first Slice read elsewhere too is not merged (it would stay, and the work be done
    /// twice).
    #[test]
    fn refused_when_the_first_is_shared() {
        let mut b = GraphBuilder::onnx();
        let [..] = causal(&mut b, DType::I64, (2, 3));
        let rows = crate::ir::OutletId {
            node: b
                .graph()
                .g
                .node_indices()
                .find(|&n| b.graph().node(n).name.as_str() == "rows")
                .expect("rows"),
            port: 0,
        };
        b.output("z", rows);
        let (g, rep) = simplified(b, 13);
        assert_eq!(ops(&g), vec!["Slice", "Slice"]);
        assert!(skipped(&rep).contains("2 consumers"), "{}", skipped(&rep));
    }

    /// OpenVINO Slice-8 (inputs start, stop, step, axes) `x[st:en]` on axis 0 then `[1:3]` on
    /// axis 1 of an `[6, 4]` input: one Slice-8 with start `[st, 1]`, stop `[en, 3]`, step
    /// `[1, 1]`, axes `[0, 1]`; at st = 2, en = 4: rows 2, 3 and columns 1, 2 (flat 9, 10,
    /// 13, 14).
    #[test]
    fn openvino_slice8_pair() {
        let mut b = GraphBuilder::openvino();
        let x = b.input("x", DType::F32, [6, 4]);
        let st = b.input("st", DType::I64, [1]);
        let en = b.input("en", DType::I64, [1]);
        let one = b.const_i64("one", &[1]);
        let zero = b.const_i64("zero", &[0]);
        let s1 = b
            .op("Slice", &[x, st, en, one, zero])
            .name("s1")
            .typed(DType::F32, "?, 4")
            .out();
        let (c1, c3) = (b.const_i64("c1", &[1]), b.const_i64("c3", &[3]));
        let s2 = b
            .op("Slice", &[s1, c1, c3, one, one])
            .name("s2")
            .typed(DType::F32, "?, 2")
            .out();
        b.output("y", s2);
        let (g, rep) = simplified(b, 0);
        assert_eq!(
            ops(&g),
            vec![
                "Concat",
                "Concat",
                "Parameter",
                "Parameter",
                "Parameter",
                "Result",
                "Slice"
            ]
        );
        let n = g.node(s2.node);
        assert_eq!((n.op_type.as_str(), n.domain.as_str()), ("Slice", "opset8"));
        assert_eq!(g.input(s2.node, 0), Some(x));
        let vals = [(st, vec![2]), (en, vec![4])];
        assert_eq!(takes(&g, s2.node, &[6, 4], &vals), vec![9, 10, 13, 14]);
        assert_eq!(rep.changed, 1);
    }
}
