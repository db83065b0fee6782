//! Pass `simplify`: fewer slices, each rewrite decided by the semantics core
//! ([`crate::semantics::compose`]) and checked before it is kept.
//!
//! One file per rewrite, each with its tests:
//!
//! - [`identity`]: **identity slices** (every axis taken whole, in order, for every size the
//!   dims may take, symbolic too: `x[0:INT64_MAX]` on a dynamic axis) are removed: their
//!   consumers read the input. Kept when the slice's output is a graph output (the writer would
//!   put an Identity in its place). A slice whose begin or end is computed is read with the
//!   facts propagation gives (once a walk, on the first such slice): an end that is the axis's
//!   own symbolic dim (`x[:, :Shape(x)[1]]`) is its edge.
//! - [`merge`]: **a slice of a slice** becomes one slice of the first one's input, when the
//!   first has no other consumer: one node fewer, never one more (when the first slice is read
//!   elsewhere too, merging would leave as many nodes and only move the work; left alone,
//!   reported). Known sizes get the exact positions; symbolic sizes only a plan proved exact
//!   for every size (else refused with the reason).
//! - [`sequence`]: **a Slice of a Slice on disjoint constant axes, parameters computed**
//!   (GPT-2's causal mask `bias[:, :, k - q : k, :k]`) becomes one Slice whose lists are the
//!   two joined (`Concat`; constants joined as constants).
//! - [`concat`]: **a slice of a `Concat` that selects within one input** becomes the same
//!   slice of that input.
//! - [`element`]: **one element of a 1-D shape value** (`Shape(x)[-1:]` then `Squeeze`, an
//!   IR StridedSlice with one shrink) becomes one `Gather` with a scalar index; an ONNX slice
//!   taking one element, not squeezed, a `Gather` of one index (where [`shape`] does not make
//!   it a constant or `Shape(start, end)`).
//! - [`shape`]: **ONNX `Shape` then `Slice`** becomes the constant of the dims it selects when
//!   they are all known (`Shape(x)[-1:]` of `[N, S, 32]`: `[32]`), else (step 1, opset >= 15)
//!   `Shape(start, end)`.
//! - [`split`]: **disjoint slices of one source along one axis** (step-1 runs, every other axis
//!   whole) become one `Split` (ONNX; known sizes) or `VariadicSplit` (IR; one size may be the
//!   rest, `-1`): gaps between them are outputs nothing reads.
//!
//! A rewrite reads the graph and says what to change as a [`Patch`] (read-only), which
//! [`patch::apply_in_walk`] makes. The rewrites of one slice are listed in [`REWRITES`] and
//! tried in that order on every slice, in topological order, each patch applied before the
//! next slice is read (a merged slice is merged again with the slice after it); the first
//! rewrite that answers decides. The group rewrite [`split`] runs after that walk.
//!
//! The pass reads the shapes the graph declares: run it after `infer` (`--passes
//! infer,simplify,cleanup`; `cleanup` drops the parameters and Concats left unused). Not in
//! the default set.
//!
//! The merged node is written as the op that can say the plan ([`write`]): ONNX `Slice`
//! (ranges only) or a TensorFlow-style `StridedSlice` when one of the pair was one; OpenVINO
//! `Slice-8` when both were and the plan has ranges only, else `StridedSlice-1`. Its parameters
//! are decoded back and must give the plan proved; on a static input the new node's selection
//! is compared with the old one's on an index tensor (translation validation).

use petgraph::stable_graph::NodeIndex;

use super::patch::{self, Patch};
use super::PassCx;
use crate::error::{Error, Result};
use crate::formats::Model;
use crate::ir::{Graph, OutletId};
use crate::passes::rewrite;
use crate::report::PassReport;
use crate::semantics::{self, Clamp, Dim, SlicePlan, DEFAULT_MAX_ELEMENTS};
use crate::shape::slice_node::{self, SliceOp};

pub mod concat;
pub mod element;
pub mod identity;
pub mod merge;
pub mod sequence;
pub mod shape;
pub mod split;
pub mod write;

/// A rewrite of one slice: `None` when the slice is not its case; else the patch, which
/// either changes the graph and reports it ([`Patch::note`]) or only reports why the slice is
/// left as it is ([`Patch::skip`]).
pub type Rewrite = fn(&PassCx, &Graph, NodeIndex, &Decoded) -> Option<Patch>;

/// The rewrites of one slice, in the order they are tried.
pub const REWRITES: &[Rewrite] = &[
    identity::rewrite,
    sequence::rewrite,
    merge::rewrite,
    concat::rewrite,
    element::rewrite,
    shape::rewrite,
];

/// Simplifies the slices of `model`.
pub fn run(model: &mut Model, report: &mut PassReport) -> Result<()> {
    let path = model.path().to_path_buf();
    let cx = PassCx {
        dialect: model.format(),
        onnx_opset: model.onnx_opset(),
        source: &path,
    };
    simplify_graph(&cx, model.graph_mut(), report)
}

/// Simplifies the slices of `graph` (what [`run`] does to a model's graph).
pub fn simplify_graph(cx: &PassCx, graph: &mut Graph, report: &mut PassReport) -> Result<()> {
    let order = graph.topo_order().map_err(|c| Error::cycle(cx.source, c))?;
    let mut facts = None;
    for &ix in &order {
        if !graph.is_live(ix) {
            continue;
        }
        let p = patch_at_with(cx, graph, ix, &mut facts);
        patch::apply_in_walk(graph, p, report);
    }
    graph.flush_detached();
    split::splits(cx, graph, report);
    graph.flush_detached();
    Ok(())
}

/// What the first rewrite of [`REWRITES`] that answers says of node `ix` (nothing when it is
/// not a slice, or no rewrite answers; a skip when its parameters are not constant or its
/// input's shape is unknown).
pub fn patch_at(cx: &PassCx, graph: &Graph, ix: NodeIndex) -> Patch {
    patch_at_with(cx, graph, ix, &mut None)
}

/// [`patch_at`] with the facts of the graph, propagated on the first slice whose parameters
/// are not constant (`facts`: `None` until then; `Some(None)` when propagation failed). The
/// rewrites of the walk keep every value the same, and the indices of the nodes they remove
/// are not reused in the walk: the facts hold for every node there was when they were
/// computed (a node made since has none, [`Facts::get`] says nothing of it).
///
/// [`Facts::get`]: crate::shape::Facts::get
fn patch_at_with(
    cx: &PassCx,
    graph: &Graph,
    ix: NodeIndex,
    facts: &mut Option<Option<crate::shape::Facts>>,
) -> Patch {
    let Some(op) = slice_node::classify(graph, ix, cx.dialect, cx.onnx_opset) else {
        return Patch::default();
    };
    let d = match decoded(graph, ix, op) {
        Ok(d) => d,
        Err(why) => {
            if why == NOT_CONSTANT {
                let f = facts.get_or_insert_with(|| {
                    crate::shape::propagate_graph(graph, cx.dialect, cx.onnx_opset).ok()
                });
                if let Some(p) = f
                    .as_ref()
                    .and_then(|f| identity::computed(cx, graph, ix, op, f))
                {
                    return p;
                }
                if let Some(p) = sequence::computed(cx, graph, ix, op) {
                    return p;
                }
            }
            return Patch::skip(graph, ix, why);
        }
    };
    REWRITES
        .iter()
        .find_map(|r| r(cx, graph, ix, &d))
        .unwrap_or_default()
}

/// A decoded slice with constant parameters, and the dims of its input.
pub struct Decoded {
    pub op: SliceOp,
    pub data: OutletId,
    pub plan: SlicePlan,
    pub dims: Vec<Dim>,
}

/// Why [`decoded`] refuses a slice whose parameters are not all constant.
const NOT_CONSTANT: &str = "left as is: parameters not constant";

fn decoded(graph: &Graph, ix: NodeIndex, op: SliceOp) -> std::result::Result<Decoded, String> {
    let sn = slice_node::decode(graph, ix, op).map_err(|e| format!("left as is: {e}"))?;
    if !sn.plan.is_constant() {
        return Err(NOT_CONSTANT.into());
    }
    let dims: Vec<Dim> = slice_node::declared_shape(graph, sn.data)
        .ok_or("left as is: input shape unknown")?
        .iter()
        .map(slice_node::to_dim)
        .collect();
    Ok(Decoded {
        op: sn.op,
        data: sn.data,
        plan: sn.plan,
        dims,
    })
}

fn known_dims(dims: &[Dim]) -> Option<Vec<u64>> {
    dims.iter()
        .map(|d| d.as_known().and_then(|v| u64::try_from(v).ok()))
        .collect()
}

fn ranges_only(plan: &SlicePlan) -> bool {
    plan.axes
        .iter()
        .all(|a| matches!(a, semantics::AxisPlan::Range { .. }))
}

type Selection = rewrite::Selection;

fn select(plan: &SlicePlan, dims: &[u64], clamp: Clamp) -> Option<Selection> {
    let idx = semantics::gather(plan, dims, clamp, DEFAULT_MAX_ELEMENTS).ok()?;
    let shape = semantics::output_shape(plan, dims, clamp).ok()?;
    Some((idx, shape))
}

/// `p`, a change reported at `ix` as `what`, with the warning `lower` gives for each of
/// `slices` rewritten: OpenVINO's CPU plugin reads a shrink with begin_mask as index 0 where
/// its constant folding reads `begin` (which every pass follows).
fn changed(
    graph: &Graph,
    p: Patch,
    ix: NodeIndex,
    what: String,
    slices: &[(NodeIndex, SliceOp)],
) -> Patch {
    let mut p = p.note(graph, ix, what);
    p.warnings.extend(
        slices
            .iter()
            .filter_map(|&(n, op)| rewrite::ov_shrink_begin_mask_warning(graph, n, op)),
    );
    p
}

/// The patch of a rewrite of `ix` that answered `r`: a change, or a skip with the reason.
fn answer(graph: &Graph, ix: NodeIndex, r: std::result::Result<Patch, String>) -> Option<Patch> {
    Some(r.unwrap_or_else(|why| Patch::skip(graph, ix, why)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ir::builder::GraphBuilder;
    use crate::report::PassKind;

    /// Runs the pass on `b`'s graph (ONNX opset `opset`): the graph after, with `cleanup`
    /// run (what `--passes infer,simplify,cleanup` leaves), and simplify's report.
    pub(crate) fn simplified(b: GraphBuilder, opset: i64) -> (Graph, PassReport) {
        let mut cx = PassCx::new(b.dialect());
        if opset > 0 {
            cx.onnx_opset = opset;
        }
        let mut g = b.finish();
        let mut report = PassReport::new(PassKind::Simplify, true);
        simplify_graph(&cx, &mut g, &mut report).expect("no cycle");
        let unused = crate::passes::cleanup::patch(&cx, &g);
        patch::apply(
            &mut g,
            unused,
            &mut PassReport::new(PassKind::Cleanup, false),
        );
        (g, report)
    }

    /// An ONNX Slice-10+ `name` of `x` with constant `(starts, ends, axes, steps)`, its
    /// output declared `f32[dims]` (what `infer` would say).
    pub(crate) fn onnx_slice(
        b: &mut GraphBuilder,
        name: &str,
        x: OutletId,
        p: (&[i64], &[i64], &[i64], &[i64]),
        dims: impl crate::ir::builder::IntoDims,
    ) -> OutletId {
        let c: Vec<OutletId> = [
            ("starts", p.0),
            ("ends", p.1),
            ("axes", p.2),
            ("steps", p.3),
        ]
        .iter()
        .map(|(w, v)| b.const_i64(&format!("{name}_{w}"), v))
        .collect();
        b.op("Slice", &[x, c[0], c[1], c[2], c[3]])
            .name(name)
            .typed(crate::ir::DType::F32, dims)
            .out()
    }

    /// The flat indices the slice `node` of `g` takes from an index tensor of `dims`, read
    /// from its parameters as written (ONNX or OpenVINO rules by its op).
    pub(crate) fn selects(g: &Graph, node: NodeIndex, dims: &[u64]) -> Vec<u64> {
        let cx = PassCx::new(if g.node(node).domain.starts_with("opset") {
            crate::formats::Format::OpenVino
        } else {
            crate::formats::Format::Onnx
        });
        let op = slice_node::classify(g, node, cx.dialect, cx.onnx_opset).expect("a slice");
        let sn = slice_node::decode(g, node, op).expect("decodes");
        semantics::gather(&sn.plan, dims, op.clamp(), DEFAULT_MAX_ELEMENTS).expect("selects")
    }

    /// The reasons `r` gives for what it left alone.
    pub(crate) fn skipped(r: &PassReport) -> String {
        r.skipped
            .iter()
            .map(|c| c.what.clone())
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The op types of the operation nodes of `g`, sorted.
    pub(crate) fn ops(g: &Graph) -> Vec<String> {
        let mut v: Vec<_> =
            g.g.node_weights()
                .filter(|n| n.kind == crate::ir::NodeKind::Op)
                .map(|n| n.op_type.to_string())
                .collect();
        v.sort();
        v
    }

    /// A non-slice is not answered; a slice whose parameters are not constant is reported.
    #[test]
    fn dispatch() {
        let mut b = GraphBuilder::onnx();
        let x = b.input("x", crate::ir::DType::F32, [4]);
        let st = b.input("st", crate::ir::DType::I64, [1]);
        let en = b.const_i64("en", &[3]);
        let s = b.op("Slice", &[x, st, en]).name("s").out();
        b.output("y", s);
        let cx = PassCx::new(b.dialect());
        let g = b.finish();
        assert!(patch_at(&cx, &g, x.node).skips.is_empty());
        let p = patch_at(&cx, &g, s.node);
        assert!(p.is_empty());
        assert!(p.skips[0].what.starts_with("left as is: "));
    }
}
