//! The facts of ONNX `Loop` outputs, from what the body gives (the [`crate::shape::HolderRule`]
//! that propagation asks at a `Loop`).
//!
//! The `Loop` spec (onnx/docs/Operators.md#Loop): inputs `M` (trip count, optional), `cond`
//! (optional), `v_initial...` (N loop-carried values); the body takes `(iteration_num,
//! cond_in, carried...)` and gives `(cond_out, carried..., scan...)`; the node's outputs are
//! the N final carried values, then each scan output: the body's value of every iteration
//! stacked on a new leading axis. Iteration `i` runs while `i < M` and the condition is true
//! (`cond` for the first, the previous iteration's `cond_out` after that).
//!
//! - A carried output is its initial value if the body passes it through unchanged, else the
//!   body's fixed point ([`super::seeds::body_seeds`]: the initial dims the body keeps, the
//!   others unknown; the rank unknown if the body changes it). That holds after any number of
//!   iterations, zero included.
//! - A scan output is `[iterations] + ` the body's shape of that value (the same in every
//!   iteration: the body's facts hold for every iteration). A dim over a symbol that neither
//!   the node's inputs nor the values it reads from outside carry (one only the body
//!   declares) is left unknown.
//! - After zero iterations no iteration gives that shape, and the spec does not say what it
//!   is. ONNX Runtime and OpenVINO (measured: `tools/gen_loop_zero_trip.py`) both give every
//!   per-iteration dim that is not a number as 0 (`[0, 0, 3]` for a `[batch, 3]` value), so
//!   such a dim `d` is written `d*r`, `r` being 1 if an iteration runs, else 0: `min(M, 1)`
//!   when the first condition is true whenever `M >= 1` (the Keras GRU's loop, whose count
//!   is not known exactly), `min(iterations, 1)` otherwise (`d` when an iteration provably
//!   runs; an interval from 0 when that is not known). (ONNX Runtime gives a rank-1 `[0]` when
//!   its own inference does not find the body value's shape; not followed here.)
//! - `iterations` is `max(M, 0)` only when no iteration can end the loop early: the first
//!   condition is true whenever `M >= 1`, and the body's `cond_out` of iteration `i` is true
//!   for every `i <= M - 2` (proved by [`Prover`]: a condition passed through, a constant
//!   true, `And`s of comparisons of values affine in `i` such as tf2onnx's
//!   `Less(counter + 1, limit)`, checked at both ends of the range; a `Cast` counts only where
//!   it keeps every value the range can give: `float32` only up to 2^24). Otherwise it is
//!   unknown, bounded by `M` when `M` is a number. ONNX Runtime's symbolic inference assumes
//!   no early exit; where that is not provable, its dim holds only under that assumption.

use std::path::{Path, PathBuf};

use petgraph::stable_graph::NodeIndex;
use petgraph::visit::EdgeRef;

use super::seeds;
use crate::formats::onnx::proto::NodeProto;
use crate::formats::onnx::subgraph as onnx_subgraph;
use crate::formats::onnx::OnnxModel;
use crate::formats::Model;
use crate::ir::{DType, FastMap, FastSet, Graph, NodeKind, Origin, OutletId, Wire};
use crate::semantics::Dim;
use crate::shape::{Fact, Facts};

/// The `Loop` nodes of one ONNX graph, with their records (owned: the rule outlives borrows of
/// the model, which a pass changes while it propagates).
#[derive(Debug, Default)]
pub(crate) struct Loops {
    path: PathBuf,
    opset: i64,
    /// Node record index -> record.
    records: FastMap<usize, NodeProto>,
}

impl Loops {
    /// The `Loop` nodes of `model`'s graph (none for OpenVINO).
    pub(crate) fn of(model: &Model) -> Loops {
        match model {
            Model::Onnx(m) => Loops::of_onnx(m),
            Model::OpenVino(_) => Loops::default(),
        }
    }

    /// The `Loop` nodes of `m`'s graph.
    pub(crate) fn of_onnx(m: &OnnxModel) -> Loops {
        let g = &m.graph;
        let records =
            g.g.node_indices()
                .filter(|&ix| g.node(ix).op_type == "Loop")
                .filter_map(|ix| match g.node(ix).origin {
                    Origin::OnnxNode(i) => Some(i as usize),
                    _ => None,
                })
                .filter(|i| m.body_holders().binary_search(i).is_ok())
                .filter_map(|i| Some((i, m.node_record(i)?)))
                .filter(|(_, np)| np.op_type() == "Loop" && matches!(np.domain(), "" | "ai.onnx"))
                .collect();
        Loops {
            path: m.path.clone(),
            opset: m.opset(),
            records,
        }
    }

    /// The output facts of node `ix` of `graph` if it is one of these `Loop`s (see the module
    /// documentation); `facts` has every value before it.
    pub(crate) fn rule(&self, graph: &Graph, facts: &Facts, ix: NodeIndex) -> Option<Vec<Fact>> {
        if self.records.is_empty() {
            return None;
        }
        let Origin::OnnxNode(i) = graph.node(ix).origin else {
            return None;
        };
        let np = self.records.get(&(i as usize))?;
        loop_outputs(&self.path, self.opset, np, graph, facts, ix)
    }
}

/// A value affine in the iteration number `i`: `base + coef * i`.
#[derive(Debug, Clone)]
struct Aff {
    base: Dim,
    coef: i64,
}

impl Aff {
    fn at(&self, i: &Dim) -> Dim {
        self.base.add(&i.mul_const(self.coef))
    }

    /// `self + c`.
    fn shift(&self, c: i64) -> Aff {
        Aff {
            base: self.base.add_const(c),
            coef: self.coef,
        }
    }
}

/// Proves that a boolean value is true, for every iteration `i` in `[0, last]` (no `last`:
/// no iteration number), whenever `M >= need`.
struct Prover<'a> {
    graph: &'a Graph,
    facts: &'a Facts,
    /// Values known per iteration: graph input node -> its value.
    leaves: FastMap<NodeIndex, Aff>,
    /// Graph input nodes known true (the body's `cond_in`: an iteration runs only when true).
    truths: FastSet<NodeIndex>,
    last: Option<Dim>,
    m: Dim,
    need: i64,
}

/// How deep the provers follow a value back.
const DEPTH: usize = 32;

impl Prover<'_> {
    /// `d >= c` for every value of the symbols with `M >= need`.
    fn at_least(&self, d: &Dim, c: i64) -> bool {
        if d.is_unknown() {
            return false;
        }
        if d.bounds().0.is_some_and(|lo| lo >= c) {
            return true;
        }
        // d - M >= c - need and M >= need give d >= c.
        let over = d.sub(&self.m);
        !over.is_unknown() && over.bounds().0.is_some_and(|lo| lo >= c - self.need)
    }

    /// The ends of the range of `i` (just `0` without an iteration number).
    fn ends(&self) -> Vec<Dim> {
        let mut v = vec![Dim::known(0)];
        v.extend(self.last.clone());
        v
    }

    fn scalar(&self, o: OutletId) -> Option<Dim> {
        match self.facts.get(o).value.as_deref() {
            Some([d]) if !d.is_unknown() => Some(d.clone()),
            _ => None,
        }
    }

    fn is_true(&self, o: OutletId, depth: usize) -> bool {
        if depth > DEPTH {
            return false;
        }
        if o.port == 0 && self.truths.contains(&o.node) {
            return true;
        }
        if let Some(v) = self.scalar(o) {
            return v.as_known().is_some_and(|v| v != 0);
        }
        let n = self.graph.node(o.node);
        if n.kind != NodeKind::Op || !(n.domain.is_empty() || n.domain == "ai.onnx") {
            return false;
        }
        let input = |p: usize| self.graph.input(o.node, p);
        let cmp = |a: usize, b: usize, c: i64| match (input(a), input(b)) {
            (Some(a), Some(b)) => self.holds(a, b, c, depth + 1),
            _ => false,
        };
        match n.op_type.as_str() {
            "Identity" => input(0).is_some_and(|i| self.is_true(i, depth + 1)),
            "And" => {
                let ins = self.graph.inputs(o.node);
                !ins.is_empty()
                    && ins
                        .iter()
                        .all(|i| i.is_some_and(|i| self.is_true(i, depth + 1)))
            }
            "Less" => cmp(0, 1, 1),
            "Greater" => cmp(1, 0, 1),
            "LessOrEqual" => cmp(0, 1, 0),
            "GreaterOrEqual" => cmp(1, 0, 0),
            _ => false,
        }
    }

    /// `b - a >= c` at every `i` of the range (affine: at both ends). One side may be a cast
    /// of an integer to a float type that does not keep every value (tf2onnx's
    /// `Less(0.0, Cast<float>(M))`): rounding is monotone, so `B >= A + c` gives
    /// `float(B) >= float(A + c) = A + c` when `A + c` is exact in that type (and `A <= B - c`
    /// gives `float(A) <= B - c` when `B - c` is).
    fn holds(&self, a: OutletId, b: OutletId, c: i64, depth: usize) -> bool {
        match (self.aff(a, depth), self.aff(b, depth)) {
            (Some(a), Some(b)) => self.apart(&a, &b, c),
            (Some(a), None) => self.rounded(b, depth).is_some_and(|(b, lo, hi)| {
                self.apart(&a, &b, c) && self.within(&a.shift(c), lo, hi)
            }),
            (None, Some(b)) => self.rounded(a, depth).is_some_and(|(a, lo, hi)| {
                self.apart(&a, &b, c) && self.within(&b.shift(-c), lo, hi)
            }),
            (None, None) => false,
        }
    }

    /// The integer a cast to a float type rounds (`Cast<float>(x)`, `x` affine), with the
    /// integers that type keeps exactly.
    fn rounded(&self, o: OutletId, depth: usize) -> Option<(Aff, i64, i64)> {
        let n = self.graph.node(o.node);
        if n.kind != NodeKind::Op
            || n.op_type != "Cast"
            || !(n.domain.is_empty() || n.domain == "ai.onnx")
        {
            return None;
        }
        let from = self.graph.input(o.node, 0)?;
        if !self.facts.get(from).dtype.is_some_and(DType::is_index_type) {
            return None;
        }
        let to = DType::from_onnx_code(i32::try_from(n.attr_int("to")?).ok()?)?;
        if !matches!(to, DType::F64 | DType::F32 | DType::F16 | DType::BF16) {
            return None;
        }
        let (lo, hi) = exact_range(to)?;
        Some((self.aff(from, depth + 1)?, lo, hi))
    }

    /// `b - a >= c` at every `i` of the range, `a` and `b` exact.
    fn apart(&self, a: &Aff, b: &Aff, c: i64) -> bool {
        let d = Aff {
            base: b.base.sub(&a.base),
            coef: match b.coef.checked_sub(a.coef) {
                Some(k) => k,
                None => return false,
            },
        };
        self.ends().iter().all(|i| self.at_least(&d.at(i), c))
    }

    /// The value of scalar `o` as `base + coef * i`, when every step to it is exact.
    fn aff(&self, o: OutletId, depth: usize) -> Option<Aff> {
        if depth > DEPTH {
            return None;
        }
        if o.port == 0 {
            if let Some(a) = self.leaves.get(&o.node) {
                return self.fits(a.clone(), o);
            }
        }
        if let Some(v) = self.scalar(o) {
            return Some(Aff { base: v, coef: 0 });
        }
        let n = self.graph.node(o.node);
        if let NodeKind::Const(t) = &n.kind {
            return integral_float(t).map(|v| Aff {
                base: Dim::known(v),
                coef: 0,
            });
        }
        if n.kind != NodeKind::Op || !(n.domain.is_empty() || n.domain == "ai.onnx") {
            return None;
        }
        let input = |p: usize| self.graph.input(o.node, p);
        let integer = |o: OutletId| self.facts.get(o).dtype.is_some_and(DType::is_index_type);
        match n.op_type.as_str() {
            "Identity" => self.aff(input(0)?, depth + 1),
            "Cast" => {
                let from = input(0)?;
                if !integer(from) {
                    return None;
                }
                let a = self.aff(from, depth + 1)?;
                let to = DType::from_onnx_code(i32::try_from(n.attr_int("to")?).ok()?)?;
                let (lo, hi) = exact_range(to)?;
                self.within(&a, lo, hi).then_some(a)
            }
            "Add" | "Sub" if integer(o) => {
                let (x, y) = (
                    self.aff(input(0)?, depth + 1)?,
                    self.aff(input(1)?, depth + 1)?,
                );
                let sum = if n.op_type == "Add" {
                    Aff {
                        base: x.base.add(&y.base),
                        coef: x.coef.checked_add(y.coef)?,
                    }
                } else {
                    Aff {
                        base: x.base.sub(&y.base),
                        coef: x.coef.checked_sub(y.coef)?,
                    }
                };
                self.fits(sum, o)
            }
            _ => None,
        }
    }

    /// `a` if every value it takes in the range fits `o`'s integer type (no wrap-around).
    fn fits(&self, a: Aff, o: OutletId) -> Option<Aff> {
        let (lo, hi) = exact_range(self.facts.get(o).dtype?)?;
        self.within(&a, lo, hi).then_some(a)
    }

    /// Every value of `a` in the range lies in `[lo, hi]` (affine: at both ends).
    fn within(&self, a: &Aff, lo: i64, hi: i64) -> bool {
        if (lo, hi) == (i64::MIN, i64::MAX) {
            return true;
        }
        self.ends().iter().all(|i| {
            let (l, h) = a.at(i).bounds();
            l.is_some_and(|l| l >= lo) && h.is_some_and(|h| h <= hi)
        })
    }
}

/// The value of a one-element `float32` / `float64` constant that is an integer the type
/// keeps exactly (tf2onnx's `0.0` a loop's first condition compares with).
fn integral_float(t: &crate::ir::Tensor) -> Option<i64> {
    if t.element_count()? != 1 {
        return None;
    }
    let raw = t.raw()?;
    let v = match t.dtype {
        DType::F32 => f64::from(f32::from_le_bytes(raw.get(..4)?.try_into().ok()?)),
        DType::F64 => f64::from_le_bytes(raw.get(..8)?.try_into().ok()?),
        _ => return None,
    };
    let (lo, hi) = exact_range(t.dtype)?;
    (v.fract() == 0.0 && v >= lo as f64 && v <= hi as f64).then_some(v as i64)
}

/// The integers a cast to `to` keeps exactly (from an integer type), as `[lo, hi]`.
fn exact_range(to: DType) -> Option<(i64, i64)> {
    Some(match to {
        DType::I64 => (i64::MIN, i64::MAX),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::U64 => (0, i64::MAX),
        DType::U32 => (0, u32::MAX.into()),
        DType::U16 => (0, u16::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        DType::F64 => (-(1 << 53), 1 << 53),
        DType::F32 => (-(1 << 24), 1 << 24),
        DType::F16 => (-(1 << 11), 1 << 11),
        DType::BF16 => (-(1 << 8), 1 << 8),
        _ => return None,
    })
}

/// The symbols named in `f`'s shape and value.
fn symbols_of(f: &Fact, into: &mut FastSet<String>) {
    for d in f.shape.iter().flatten().chain(f.value.iter().flatten()) {
        for s in d.symbols() {
            into.insert(s.name().to_string());
        }
    }
}

/// The output facts of the `Loop` node `ix` (record `np`) of `graph`.
fn loop_outputs(
    path: &Path,
    opset: i64,
    np: &NodeProto,
    graph: &Graph,
    facts: &Facts,
    ix: NodeIndex,
) -> Option<Vec<Fact>> {
    let node = graph.node(ix);
    if node.op_type != "Loop" || !(node.domain.is_empty() || node.domain == "ai.onnx") {
        return None;
    }
    let body = onnx_subgraph::node_bodies(path, np)
        .into_iter()
        .filter_map(Result::ok)
        .find(|b| b.attr == "body")?;
    let inputs: Vec<Fact> = graph
        .inputs(ix)
        .iter()
        .map(|o| o.map(|o| facts.get(o).clone()).unwrap_or_default())
        .collect();
    let n_carried = inputs.len().checked_sub(2)?;
    let n_out = node.outputs.len();
    let n_scan = n_out.checked_sub(n_carried)?;
    // The values the body reads from outside, by name.
    let mut captured: FastMap<String, Fact> = FastMap::default();
    for e in graph.g.edges_directed(ix, petgraph::Direction::Incoming) {
        if e.weight().dst_port != Wire::CAPTURED {
            continue;
        }
        let port = e.weight().src_port as usize;
        let Some(v) = graph.node(e.source()).outputs.get(port) else {
            continue;
        };
        let f = facts.get(OutletId {
            node: e.source(),
            port,
        });
        captured.insert(v.name.to_string(), f.clone());
    }
    let mut outer_symbols = FastSet::default();
    for f in inputs.iter().chain(captured.values()) {
        symbols_of(f, &mut outer_symbols);
    }
    let (formal, carried) = seeds::formal_seeds(node, opset, &inputs);
    let (bfacts, by_ix) = seeds::body_seeds(&body, opset, formal, &carried, |name| {
        captured.get(name).cloned()
    });
    let g = &body.graph;
    let mut ins: FastMap<usize, NodeIndex> = FastMap::default();
    let mut outs: FastMap<usize, NodeIndex> = FastMap::default();
    for bix in g.g.node_indices() {
        match (&g.node(bix).kind, g.node(bix).origin) {
            (NodeKind::Input, Origin::OnnxInput(i)) => {
                ins.insert(i as usize, bix);
            }
            (NodeKind::Output, Origin::OnnxOutput(i)) => {
                outs.insert(i as usize, bix);
            }
            _ => {}
        }
    }
    if body.formal_inputs != 2 + n_carried || outs.len() != 1 + n_out {
        return None;
    }
    let out_src = |k: usize| outs.get(&k).and_then(|&o| g.input(o, 0));
    let passes_through = |k: usize| matches!((out_src(1 + k), ins.get(&(2 + k))), (Some(s), Some(&n)) if s.node == n && s.port == 0);
    let (iterations, ran) = iterations(
        graph, facts, ix, &inputs, g, &bfacts, &ins, &out_src, n_carried,
    );
    let mut out = Vec::with_capacity(n_out);
    for k in 0..n_carried {
        if passes_through(k) {
            out.push(inputs[2 + k].clone());
            continue;
        }
        let seed = ins
            .get(&(2 + k))
            .and_then(|n| by_ix.get(n))
            .cloned()
            .unwrap_or_default();
        out.push(Fact {
            dtype: seed.dtype.or(inputs[2 + k].dtype),
            shape: seed.shape,
            value: None,
        });
    }
    // `ran` is 1 if an iteration runs, else 0: a scan output's per-iteration dim that is not
    // a number is 0 after zero iterations (see the module documentation).
    for j in 0..n_scan {
        let f = out_src(1 + n_carried + j)
            .map(|o| bfacts.get(o).clone())
            .unwrap_or_default();
        let outer_only = |d: Dim| {
            if d.symbols().iter().all(|s| outer_symbols.contains(s.name())) {
                d
            } else {
                Dim::unknown()
            }
        };
        let per_iteration = |d: Dim| if d.is_known() { d } else { d.mul(&ran) };
        let shape = f.shape.map(|s| {
            std::iter::once(iterations.clone())
                .chain(s.into_iter().map(outer_only).map(per_iteration))
                .collect()
        });
        out.push(Fact {
            dtype: f.dtype,
            shape,
            value: None,
        });
    }
    Some(out)
}

/// The loop-carried value `k` of a Loop body as an affine function of the iteration number,
/// when the body passes it through (`init`) or adds a constant of an index type to it each
/// iteration (`init + c * i`): the body's input node and that function.
fn carried_counter(
    body: &Graph,
    bfacts: &Facts,
    ins: &FastMap<usize, NodeIndex>,
    out_src: &dyn Fn(usize) -> Option<OutletId>,
    k: usize,
    init: Dim,
) -> Option<(NodeIndex, Aff)> {
    let n = *ins.get(&(2 + k))?;
    let src = out_src(1 + k)?;
    if src.node == n && src.port == 0 {
        return Some((
            n,
            Aff {
                base: init,
                coef: 0,
            },
        ));
    }
    // carried + c (either order), c the same in every iteration: init + c * i.
    let b = body.node(src.node);
    if b.kind != NodeKind::Op
        || b.op_type != "Add"
        || !(b.domain.is_empty() || b.domain == "ai.onnx")
        || !bfacts.get(src).dtype.is_some_and(DType::is_index_type)
    {
        return None;
    }
    let (x, y) = (body.input(src.node, 0)?, body.input(src.node, 1)?);
    let step = |o: OutletId| match bfacts.get(o).value.as_deref() {
        Some([d]) => d.as_known(),
        _ => None,
    };
    let c = if x.node == n && x.port == 0 {
        step(y)
    } else if y.node == n && y.port == 0 {
        step(x)
    } else {
        None
    };
    c.map(|c| {
        (
            n,
            Aff {
                base: init,
                coef: c,
            },
        )
    })
}

/// How many iterations the `Loop` node `ix` runs, and whether any does (1, or 0 after zero
/// iterations; see the module documentation).
#[allow(clippy::too_many_arguments)]
fn iterations(
    graph: &Graph,
    facts: &Facts,
    ix: NodeIndex,
    inputs: &[Fact],
    body: &Graph,
    bfacts: &Facts,
    ins: &FastMap<usize, NodeIndex>,
    out_src: &dyn Fn(usize) -> Option<OutletId>,
    n_carried: usize,
) -> (Dim, Dim) {
    let unsure = || Dim::unknown_bounded(0, Some(1));
    let scalar = |f: &Fact| match f.value.as_deref() {
        Some([d]) if !d.is_unknown() => Some(d.clone()),
        _ => None,
    };
    // No trip count: only the condition ends the loop.
    let Some(m) = graph.input(ix, 0).and_then(|_| scalar(&inputs[0])) else {
        return (Dim::unknown(), unsure());
    };
    let m = m.max(&Dim::known(0));
    let at_most = match m.as_known() {
        Some(0) => return (Dim::known(0), Dim::known(0)),
        Some(k) => Dim::unknown_bounded(0, Some(k)),
        None => Dim::unknown(),
    };
    // The first condition, whenever M >= 1.
    let first = match graph.input(ix, 1) {
        None => true,
        Some(c) => Prover {
            graph,
            facts,
            leaves: FastMap::default(),
            truths: FastSet::default(),
            last: None,
            m: m.clone(),
            need: 1,
        }
        .is_true(c, 0),
    };
    if !first {
        return (at_most, unsure());
    }
    // The first iteration runs whenever M >= 1.
    let ran = m.min(&Dim::known(1));
    // The body's condition at every iteration i <= M - 2, whenever M >= 2.
    let Some(cond_out) = out_src(0) else {
        return (at_most, ran);
    };
    let mut leaves = FastMap::default();
    if let Some(&n) = ins.get(&0) {
        leaves.insert(
            n,
            Aff {
                base: Dim::known(0),
                coef: 1,
            },
        );
    }
    for k in 0..n_carried {
        let Some(init) = scalar(&inputs[2 + k]) else {
            continue;
        };
        if let Some((n, aff)) = carried_counter(body, bfacts, ins, out_src, k, init) {
            leaves.insert(n, aff);
        }
    }
    let mut truths = FastSet::default();
    truths.extend(ins.get(&1).copied());
    let body_true = Prover {
        graph: body,
        facts: bfacts,
        leaves,
        truths,
        last: Some(m.add_const(-2)),
        m: m.clone(),
        need: 2,
    }
    .is_true(cond_out, 0);
    if body_true {
        (m, ran)
    } else {
        (at_most, ran)
    }
}
