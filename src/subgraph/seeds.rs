//! What is known about a body's inputs from outside it: the formal inputs of `Loop` and `Scan`
//! from the node's own inputs (`formal_seeds`), refined for loop-carried values by propagating
//! through the body until it keeps them (`body_seeds`), and the captured names from the
//! enclosing scope.

use petgraph::stable_graph::NodeIndex;

use crate::formats::onnx::subgraph as onnx_subgraph;
use crate::formats::Format;
use crate::ir::{DType, FastMap, NodeKind, Origin};
use crate::semantics::Dim;
use crate::shape::{propagate_seeded, Fact, Facts};

/// What the node's own inputs say about the body's formal inputs, by position (`None`: only
/// what the body declares), and the carried values as (formal input, body output) pairs, which
/// [`body_facts`] refines.
pub(crate) type FormalSeeds = (Vec<Option<Fact>>, Vec<(usize, usize)>);

pub(crate) fn formal_seeds(node: &crate::ir::Node, opset: i64, inputs: &[Fact]) -> FormalSeeds {
    if !(node.domain.is_empty() || node.domain == "ai.onnx") {
        return FormalSeeds::default();
    }
    let carried = |f: &Fact| Fact {
        dtype: f.dtype,
        shape: f.shape.clone(),
        value: None,
    };
    match node.op_type.as_str() {
        "Loop" => {
            // Body inputs: iteration, condition, carried...; outputs: condition, carried...
            let mut v = vec![
                Some(Fact {
                    dtype: Some(DType::I64),
                    shape: Some(Vec::new()),
                    value: None,
                }),
                Some(Fact {
                    dtype: Some(DType::Bool),
                    shape: Some(Vec::new()),
                    value: None,
                }),
            ];
            v.extend(inputs.iter().skip(2).map(|f| Some(carried(f))));
            let pairs = (2..v.len()).map(|i| (i, i - 1)).collect();
            (v, pairs)
        }
        "Scan" if opset >= 9 => {
            // Body inputs: states..., scan elements...; outputs: states..., scan outputs.
            let Some(m) = node.attr_int("num_scan_inputs") else {
                return FormalSeeds::default();
            };
            let Some(n) = usize::try_from(m)
                .ok()
                .and_then(|m| inputs.len().checked_sub(m))
            else {
                return FormalSeeds::default();
            };
            let axes = node
                .attr_ints("scan_input_axes")
                .and_then(|r| r.ok())
                .unwrap_or_default();
            let mut v: Vec<Option<Fact>> = inputs[..n].iter().map(|f| Some(carried(f))).collect();
            for (j, f) in inputs[n..].iter().enumerate() {
                let axis = axes.get(j).copied().unwrap_or(0);
                let shape = f.shape.as_ref().and_then(|s| {
                    let a = crate::shape::norm_axis(axis, s.len())?;
                    let mut s = s.clone();
                    s.remove(a);
                    Some(s)
                });
                v.push(Some(Fact {
                    dtype: f.dtype,
                    shape,
                    value: None,
                }));
            }
            (v, (0..n).map(|i| (i, i)).collect())
        }
        _ => FormalSeeds::default(),
    }
}

/// Propagates facts through `body`, seeding its inputs. A carried value whose dims the body
/// changes is seeded again with those dims unknown (its rank unknown if the body changes the
/// rank), until the body keeps every seed.
pub(crate) fn body_facts(
    body: &onnx_subgraph::Body,
    opset: i64,
    formal: Vec<Option<Fact>>,
    carried: &[(usize, usize)],
    outer: impl Fn(&str) -> Option<Fact>,
) -> Facts {
    body_seeds(body, opset, formal, carried, outer).0
}

/// What is known about the inputs of `body` from outside it (by input node: the formal inputs
/// from `formal`, refined for the carried values as [`body_facts`] says; the captured names
/// from `outer`), with the facts they give.
pub(crate) fn body_seeds(
    body: &onnx_subgraph::Body,
    opset: i64,
    mut formal: Vec<Option<Fact>>,
    carried: &[(usize, usize)],
    outer: impl Fn(&str) -> Option<Fact>,
) -> (Facts, FastMap<NodeIndex, Fact>) {
    let g = &body.graph;
    // Graph input node and graph output node by position.
    let mut ins: Vec<(usize, NodeIndex)> = Vec::new();
    let mut outs: FastMap<usize, NodeIndex> = FastMap::default();
    for ix in g.g.node_indices() {
        match (g.node(ix).kind.clone(), g.node(ix).origin) {
            (NodeKind::Input, Origin::OnnxInput(i)) => ins.push((i as usize, ix)),
            (NodeKind::Output, Origin::OnnxOutput(i)) => {
                outs.insert(i as usize, ix);
            }
            _ => {}
        }
    }
    let captured: FastMap<NodeIndex, Fact> = ins
        .iter()
        .filter(|(i, _)| *i >= body.formal_inputs)
        .filter_map(|&(_, ix)| {
            let name = g.node(ix).outputs.first()?.name.as_str();
            Some((ix, outer(name)?))
        })
        .collect();
    formal.truncate(body.formal_inputs);
    let seeds = |formal: &[Option<Fact>]| -> FastMap<NodeIndex, Fact> {
        let mut m: FastMap<NodeIndex, Fact> = ins
            .iter()
            .filter_map(|&(i, ix)| Some((ix, formal.get(i)?.clone()?)))
            .collect();
        for (ix, f) in &captured {
            m.entry(*ix).or_insert_with(|| f.clone());
        }
        m
    };
    const ROUNDS: usize = 8;
    let mut round = 0;
    loop {
        let by_ix = seeds(&formal);
        let facts = propagate_seeded(g, Format::Onnx, opset, &|ix| by_ix.get(&ix).cloned())
            .unwrap_or_default();
        let mut changed = false;
        for &(i, o) in carried {
            let Some(s) = formal.get_mut(i).and_then(Option::as_mut) else {
                continue;
            };
            let Some(&out_ix) = outs.get(&o) else {
                continue;
            };
            let updated = g.input(out_ix, 0).map(|src| facts.get(src));
            let updated_shape = updated.and_then(|f| f.shape.as_ref());
            let Some(shape) = s.shape.as_mut() else {
                continue;
            };
            match updated_shape {
                Some(u) if u.len() == shape.len() => {
                    for (d, u) in shape.iter_mut().zip(u) {
                        if d != u && !d.is_unknown() {
                            *d = Dim::unknown();
                            changed = true;
                        }
                    }
                }
                _ => {
                    s.shape = None;
                    changed = true;
                }
            }
        }
        round += 1;
        if !changed {
            return (facts, by_ix);
        }
        if round >= ROUNDS {
            // Give up on what the carried values are: rank-only knowledge could still be
            // wrong after more rounds, so every carried seed goes.
            for &(i, _) in carried {
                if let Some(seed) = formal.get_mut(i) {
                    *seed = None;
                }
            }
            let by_ix = seeds(&formal);
            let facts = propagate_seeded(g, Format::Onnx, opset, &|ix| by_ix.get(&ix).cloned())
                .unwrap_or_default();
            return (facts, by_ix);
        }
    }
}
