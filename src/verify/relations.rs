//! The relations a model states between the dims of its inputs, which the size search keeps.
//!
//! - A declared dim is read as the expression it is (optimum names an attention mask's length
//!   `past_sequence_length + sequence_length`): its size follows from its symbols' sizes.
//! - Inputs that meet must agree: where two values are broadcast together (`Add`, `Mul`,
//!   `Where`, ...; `Expand`), concatenated (`Concat`: every axis but the one joined) or
//!   multiplied (`MatMul`: the contracted axis; the batch axes broadcast), a dim of one that is
//!   not 1 equals the other's. The dims come from our own shape propagation over the original
//!   model, so a TorchScript export's three free names (`past`, `seq`, `total` for the mask)
//!   meet as `past + seq` (keys concatenated with the past) against `total` (the mask added to
//!   the attention scores): `total` is then bound as `past + seq`.
//!
//! Each equality found is solved for one symbol (a side that is a symbol alone first, else a
//! symbol of coefficient ±1), substituted everywhere, and propagation runs again with the inputs
//! so rewritten, until nothing new is found. The sizes given with `--bind` are constants in the
//! equations: one they contradict is reported, and verification does not run with it.

use crate::formats::onnx::OnnxModel;
use crate::formats::Format;
use crate::ir::{Graph, NodeKind, OutletId};
use crate::semantics::dim::model_symbol;
use crate::semantics::Dim;
use crate::shape::{declared_fact, Fact, Facts};

use super::*;

/// Rounds of propagation at most (each finds what the previous substitutions made visible).
const MAX_ROUNDS: usize = 6;

/// Ops whose inputs broadcast together (numpy rules).
const BROADCAST: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Pow",
    "Mod",
    "Where",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
    "Max",
    "Min",
    "Sum",
    "Mean",
    "BitShift",
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
];

/// One equality the model states between dims, as found.
#[derive(Debug, Clone)]
pub(super) struct Stated {
    pub(super) lhs: Dim,
    pub(super) rhs: Dim,
    /// The node where the two dims meet.
    pub(super) node: String,
    pub(super) op: String,
}

impl Stated {
    fn show(&self) -> String {
        format!(
            "{} = {} ({} '{}')",
            show_dim(&self.lhs),
            show_dim(&self.rhs),
            self.op,
            self.node
        )
    }
}

/// What the size search must keep.
#[derive(Debug, Clone, Default)]
pub(super) struct Relations {
    /// Each symbol solved for, with the expression over the other symbols it stands for.
    pub(super) subst: BTreeMap<String, Dim>,
    /// The equalities found, in the order found.
    pub(super) stated: Vec<Stated>,
    /// Equalities the `--bind` sizes contradict.
    pub(super) conflicts: Vec<String>,
    /// A relation assumed rather than found ([`candidates`]).
    pub(super) assumed: Option<Stated>,
}

fn show_dim(d: &Dim) -> String {
    d.to_onnx().unwrap_or_else(|| "?".into())
}

/// A declared `dim_param` as a dim: the expression it is, or one opaque name (as the model
/// loader reads it).
pub(super) fn param_dim(p: &str) -> Dim {
    Dim::parse(p, &model_symbol).unwrap_or_else(|| model_symbol(p))
}

/// `d` with the symbols `map` names replaced by their expressions; `None` when the result
/// cannot be represented (the caller leaves such a dim out).
pub(super) fn substitute(d: &Dim, map: &BTreeMap<String, Dim>) -> Option<Dim> {
    let symbols = d.symbols();
    if !symbols.iter().any(|s| map.contains_key(s.name())) {
        return Some(d.clone());
    }
    let text = d.to_onnx()?;
    let own = |n: &str| {
        symbols
            .iter()
            .find(|s| s.name() == n)
            .map(|s| {
                let (lo, hi) = s.bounds();
                Dim::symbol_bounded(n, lo, hi)
            })
            .unwrap_or_else(|| model_symbol(n))
    };
    Dim::parse(&text, &|n: &str| {
        map.get(n).cloned().unwrap_or_else(|| own(n))
    })
}

/// The symbol `d` is, when it is one symbol alone.
fn lone_symbol(d: &Dim) -> Option<String> {
    let s = d.symbols();
    let [s] = s.as_slice() else { return None };
    let (lo, hi) = s.bounds();
    (*d == Dim::symbol_bounded(s.name(), lo, hi)).then(|| s.name().to_string())
}

/// Solves `a = b` for one symbol: `(symbol, expression)`. A side that is a symbol alone (not
/// in the other side) is taken first; otherwise a symbol with coefficient ±1 in `a - b`, the
/// last of `order` first (inputs declare the sizes they are given before those derived).
fn solve(a: &Dim, b: &Dim, order: &[String]) -> Option<(String, Dim)> {
    for (x, y) in [(b, a), (a, b)] {
        if let Some(s) = lone_symbol(x) {
            if !y.symbols().iter().any(|t| t.name() == s) {
                return Some((s, y.clone()));
            }
        }
    }
    let diff = a.sub(b);
    if diff.is_unknown() {
        return None;
    }
    let mut symbols = diff.symbols();
    let rank = |n: &str| order.iter().position(|o| o == n).unwrap_or(usize::MAX);
    symbols.sort_by_key(|s| std::cmp::Reverse(rank(s.name())));
    for s in symbols {
        let zero = BTreeMap::from([(s.name().to_string(), Dim::known(0))]);
        let Some(rest) = substitute(&diff, &zero) else {
            continue;
        };
        let (lo, hi) = s.bounds();
        let sym = Dim::symbol_bounded(s.name(), lo, hi);
        let term = diff.sub(&rest);
        let value = if term.provably_equal(&sym) {
            rest.neg()
        } else if term.provably_equal(&sym.neg()) {
            rest
        } else {
            continue;
        };
        if value.is_unknown() || value.symbols().iter().any(|t| t.name() == s.name()) {
            continue;
        }
        return Some((s.name().to_string(), value));
    }
    None
}

/// The dims that must be equal at node `ix`, from the facts of its inputs.
fn equations(
    graph: &Graph,
    facts: &Facts,
    ix: petgraph::stable_graph::NodeIndex,
) -> Vec<(Dim, Dim)> {
    let node = graph.node(ix);
    let ins: Vec<Option<&Fact>> = graph
        .inputs(ix)
        .into_iter()
        .map(|o| o.map(|o| facts.get(o)))
        .collect();
    let shape = |i: usize| {
        ins.get(i)
            .copied()
            .flatten()
            .and_then(|f| f.shape.as_deref())
    };
    let mut out = Vec::new();
    let op = node.op_type.as_str();
    if BROADCAST.contains(&op) {
        let shapes: Vec<&[Dim]> = (0..ins.len()).filter_map(shape).collect();
        broadcast_equations(&shapes, &mut out);
    } else if op == "Expand" {
        let target = ins
            .get(1)
            .copied()
            .flatten()
            .and_then(|f| f.value.as_deref());
        if let (Some(x), Some(t)) = (shape(0), target) {
            broadcast_equations(&[x, t], &mut out);
        }
    } else if op == "Concat" {
        let shapes: Vec<&[Dim]> = (0..ins.len()).filter_map(shape).collect();
        let Some(first) = shapes.first() else {
            return out;
        };
        let rank = first.len();
        let Some(axis) = node
            .attr_int("axis")
            .and_then(|a| crate::shape::norm_axis(a, rank))
        else {
            return out;
        };
        for s in shapes.iter().skip(1).filter(|s| s.len() == rank) {
            for i in (0..rank).filter(|&i| i != axis) {
                push_pair(&first[i], &s[i], &mut out);
            }
        }
    } else if op == "MatMul" {
        if let (Some(a), Some(b)) = (shape(0), shape(1)) {
            if let (Some(ka), Some(kb)) = (a.last(), b.get(b.len().saturating_sub(2))) {
                push_pair(ka, kb, &mut out);
            }
            if a.len() > 2 && b.len() > 2 {
                broadcast_equations(&[&a[..a.len() - 2], &b[..b.len() - 2]], &mut out);
            }
        }
    }
    out
}

/// Pairs of dims that numpy broadcasting of `shapes` makes equal: on each axis (aligned on the
/// right), every dim that is not 1 equals the first such.
fn broadcast_equations(shapes: &[&[Dim]], out: &mut Vec<(Dim, Dim)>) {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    for i in 0..rank {
        let dims: Vec<&Dim> = shapes
            .iter()
            .filter_map(|s| (i + s.len()).checked_sub(rank).map(|j| &s[j]))
            .filter(|d| !d.is_unknown() && d.as_known() != Some(1))
            .collect();
        if let Some((first, rest)) = dims.split_first() {
            for d in rest {
                push_pair(first, d, out);
            }
        }
    }
}

fn push_pair(a: &Dim, b: &Dim, out: &mut Vec<(Dim, Dim)>) {
    if a.is_unknown() || b.is_unknown() || (a.is_known() && b.is_known()) || a == b {
        return;
    }
    out.push((a.clone(), b.clone()));
}

/// The relations of `model`'s main graph (see the module doc), with the sizes of `bind` as
/// constants.
pub(super) fn find(model: &OnnxModel, bind: &BTreeMap<String, usize>) -> Relations {
    find_with(model, bind, None)
}

/// At most this many relations are assumed in turn ([`candidates`]), of twice as many looked at.
pub(super) const MAX_CANDIDATES: usize = 8;

/// Candidates are looked for in graphs of at most this many nodes (each costs propagations).
pub(super) const MAX_CANDIDATE_NODES: usize = 200_000;

fn graph_size(model: &OnnxModel) -> usize {
    model.graph.g.node_count()
}

/// Relations to assume, in turn, when the model runs with none of the sizes under the relations
/// found: a model may tie its inputs' sizes where no shape shows it (a TorchScript export reads
/// the attention mask at `batch * total + kv_index` through a `Gather`, so `total` must be at
/// least `past + seq`, and nothing is broadcast against it). Each candidate makes one free
/// symbol `t` the sum of two others, then equal to one other; symbols that share no input with
/// `t` first (a mask's length is the sum of a past and a sequence length declared on other
/// inputs), `t` among those named by the fewest inputs first. A candidate with which our own
/// propagation meets a contradiction is left out; tract decides among the rest.
pub(super) fn candidates(
    model: &OnnxModel,
    bind: &BTreeMap<String, usize>,
    base: &Relations,
    inputs: &[&InputDecl],
) -> Vec<Relations> {
    // The free symbols of each input (after the substitutions found), in declaration order.
    let mut free: Vec<String> = Vec::new();
    let mut per_input: Vec<Vec<String>> = Vec::new();
    for i in inputs {
        let mut mine = Vec::new();
        for d in i.dims.iter().flatten() {
            let Decl::Param(p) = d else { continue };
            for s in base.dim(p).symbols() {
                let n = s.name().to_string();
                if bind.contains_key(&n) {
                    continue;
                }
                if !free.contains(&n) {
                    free.push(n.clone());
                }
                if !mine.contains(&n) {
                    mine.push(n);
                }
            }
        }
        per_input.push(mine);
    }
    if free.len() < 2 {
        return Vec::new();
    }
    let named_by = |n: &str| {
        per_input
            .iter()
            .filter(|m| m.iter().any(|x| x == n))
            .count()
    };
    let share = |a: &str, b: &str| {
        per_input
            .iter()
            .any(|m| m.iter().any(|x| x == a) && m.iter().any(|x| x == b))
    };
    let mut targets = free.clone();
    targets.reverse();
    targets.sort_by_key(|t| named_by(t));
    let mut wanted: Vec<(usize, String, Vec<String>)> = Vec::new();
    for t in &targets {
        let others: Vec<&String> = free.iter().filter(|o| *o != t).collect();
        for (i, p) in others.iter().enumerate() {
            for q in &others[i + 1..] {
                let apart = usize::from(share(t, p)) + usize::from(share(t, q));
                wanted.push((apart, t.clone(), vec![(*p).clone(), (*q).clone()]));
            }
        }
        for p in &others {
            wanted.push((3 + usize::from(share(t, p)), t.clone(), vec![(*p).clone()]));
        }
    }
    // Stable: by how much the terms share inputs with the target, then target order.
    wanted.sort_by_key(|(apart, _, _)| *apart);
    let mut out = Vec::new();
    // Each candidate costs a propagation or a few; the graph's size bounds how many are looked at.
    let looked_at = if graph_size(model) > MAX_CANDIDATE_NODES {
        0
    } else {
        2 * MAX_CANDIDATES
    };
    for (_, t, terms) in wanted.into_iter().take(looked_at) {
        if out.len() >= MAX_CANDIDATES {
            break;
        }
        let sum = terms
            .iter()
            .fold(Dim::known(0), |acc, n| acc.add(&model_symbol(n)));
        let sum = substitute(&sum, &base.subst).unwrap_or(sum);
        let assumed = BTreeMap::from([(t.clone(), sum.clone())]);
        let mut rel = find_with(model, bind, Some(&assumed));
        if !rel.conflicts.is_empty() {
            continue;
        }
        rel.subst.insert(t.clone(), sum.clone());
        let all = rel.subst.clone();
        for v in rel.subst.values_mut() {
            if let Some(n) = substitute(v, &all) {
                *v = n;
            }
        }
        rel.assumed = Some(Stated {
            lhs: model_symbol(&t),
            rhs: sum,
            node: String::new(),
            op: "assumed".into(),
        });
        out.push(rel);
    }
    out
}

/// The input nodes of `graph` with their declared facts, in input order, and the names of the
/// symbols their dims use, in order of first use (node-index order).
fn declared_inputs(graph: &Graph) -> (Vec<(petgraph::stable_graph::NodeIndex, Fact)>, Vec<String>) {
    let mut inputs: Vec<(petgraph::stable_graph::NodeIndex, Fact)> = Vec::new();
    let mut order: Vec<String> = Vec::new();
    for ix in graph.g.node_indices() {
        if graph.node(ix).kind != NodeKind::Input {
            continue;
        }
        let fact = declared_fact(graph, OutletId { node: ix, port: 0 });
        for d in fact.shape.iter().flatten() {
            for s in d.symbols() {
                if !order.iter().any(|o| o == s.name()) {
                    order.push(s.name().to_string());
                }
            }
        }
        inputs.push((ix, fact));
    }
    inputs.sort_by_key(|(ix, _)| graph.node(*ix).order);
    (inputs, order)
}

/// The facts the inputs are seeded with: each declared dim with the `solved` symbols replaced
/// (unknown where that fails).
fn seeds(
    inputs: &[(petgraph::stable_graph::NodeIndex, Fact)],
    solved: &BTreeMap<String, Dim>,
) -> HashMap<petgraph::stable_graph::NodeIndex, Fact> {
    inputs
        .iter()
        .map(|(ix, f)| {
            let mut f = f.clone();
            for d in f.shape.iter_mut().flatten() {
                *d = substitute(d, solved).unwrap_or_else(Dim::unknown);
            }
            (*ix, f)
        })
        .collect()
}

/// [`find`], with `assumed` (symbol: expression) taken as given from the start; an equality it
/// contradicts is a conflict.
fn find_with(
    model: &OnnxModel,
    bind: &BTreeMap<String, usize>,
    assumed: Option<&BTreeMap<String, Dim>>,
) -> Relations {
    let graph = &model.graph;
    let (inputs, order) = declared_inputs(graph);
    let mut rel = Relations::default();
    let mut consts: BTreeMap<String, Dim> = bind
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), Dim::known(i64::try_from(*v).ok()?))))
        .collect();
    let fixed: Vec<String> = bind
        .keys()
        .cloned()
        .chain(assumed.into_iter().flat_map(|a| a.keys().cloned()))
        .collect();
    // What the inputs are seeded with: the symbols solved (and assumed) replaced, the sizes
    // given left symbols, so that the dims that meet keep them and show a contradiction.
    let mut solved: BTreeMap<String, Dim> = BTreeMap::new();
    if let Some(a) = assumed {
        for (k, v) in a {
            solved.insert(k.clone(), v.clone());
            let v = substitute(v, &consts).unwrap_or_else(|| v.clone());
            consts.insert(k.clone(), v);
        }
    }
    if inputs
        .iter()
        .all(|(_, f)| f.shape.iter().flatten().all(|d| d.symbols().is_empty()))
    {
        return rel;
    }
    let mut seen: Vec<(Dim, Dim)> = Vec::new();
    for _ in 0..MAX_ROUNDS {
        let seeds = seeds(&inputs, &solved);
        let Ok(facts) = crate::shape::propagate_seeded(graph, Format::Onnx, model.opset(), &|ix| {
            seeds.get(&ix).cloned()
        }) else {
            return rel;
        };
        let mut found = false;
        for ix in graph.g.node_indices() {
            let node = graph.node(ix);
            if node.kind != NodeKind::Op {
                continue;
            }
            for (x, y) in equations(graph, &facts, ix) {
                if seen.iter().any(|(a, b)| *a == x && *b == y) {
                    continue;
                }
                seen.push((x.clone(), y.clone()));
                let (Some(a), Some(b)) = (substitute(&x, &consts), substitute(&y, &consts)) else {
                    continue;
                };
                if a.provably_equal(&b) {
                    continue;
                }
                let stated = Stated {
                    lhs: x.clone(),
                    rhs: y.clone(),
                    node: node.name.to_string(),
                    op: node.op_type.to_string(),
                };
                let diff = a.sub(&b);
                if diff.is_known() {
                    // Equal only where a size given with --bind differs from what it is.
                    let named = |d: &Dim| {
                        d.symbols()
                            .iter()
                            .any(|s| fixed.iter().any(|f| f == s.name()))
                    };
                    if named(&x) || named(&y) {
                        rel.conflicts.push(format!(
                            "{} with --bind {} (the two sides differ by {})",
                            stated.show(),
                            show_binding(bind),
                            diff.as_known().unwrap_or_default()
                        ));
                    }
                    continue;
                }
                let Some((s, e)) = solve(&a, &b, &order) else {
                    continue;
                };
                let one = BTreeMap::from([(s.clone(), e.clone())]);
                let mut ok = true;
                for v in consts.values_mut().chain(solved.values_mut()) {
                    match substitute(v, &one) {
                        Some(n) => *v = n,
                        None => ok = false,
                    }
                }
                if !ok {
                    continue;
                }
                consts.insert(s.clone(), e.clone());
                solved.insert(s.clone(), e.clone());
                rel.subst.insert(s, e);
                // Solved symbols of earlier solutions follow the new one.
                for v in rel.subst.values_mut() {
                    if let Some(n) = substitute(v, &consts) {
                        *v = n;
                    }
                }
                rel.stated.push(stated);
                found = true;
            }
        }
        if !found {
            break;
        }
    }
    rel
}

impl Relations {
    /// A declared `dim_param` with the solved symbols replaced.
    pub(super) fn dim(&self, p: &str) -> Dim {
        let d = param_dim(p);
        substitute(&d, &self.subst).unwrap_or(d)
    }

    /// The first stated equality `sizes` (every symbol's size) contradicts, described.
    pub(super) fn contradiction(&self, sizes: &BTreeMap<String, usize>) -> Option<String> {
        let names: HashMap<String, i64> = sizes
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), i64::try_from(*v).ok()?)))
            .collect();
        self.stated.iter().chain(&self.assumed).find_map(|s| {
            let (a, b) = (s.lhs.eval(&names)?, s.rhs.eval(&names)?);
            (a != b).then(|| format!("{} does not hold: {a} vs {b}", s.show()))
        })
    }

    /// The equalities kept, for the verdict (`relations kept: total = past + seq`), the one
    /// assumed named as such.
    pub(super) fn describe(&self) -> String {
        let assumed = self.assumed.as_ref().map(|a| show_dim(&a.lhs));
        let found: Vec<String> = self
            .subst
            .iter()
            .filter(|(k, _)| Some(*k) != assumed.as_ref())
            .map(|(k, v)| format!("{k} = {}", show_dim(v)))
            .collect();
        let mut parts = Vec::new();
        if !found.is_empty() {
            parts.push(format!("relations kept: {}", found.join(", ")));
        }
        if let Some(a) = &self.assumed {
            parts.push(format!(
                "relation assumed (the first candidate tract runs the original with): {} = {}",
                show_dim(&a.lhs),
                show_dim(&a.rhs)
            ));
        }
        parts.join("; ")
    }
}
