//! The IR graph built from a graph's records: inputs, initializers, nodes (read on rayon's pool
//! a window ahead), edges and outputs.

use super::*;

pub(super) struct Built {
    pub(super) graph: Graph,
    /// Indices of the nodes that hold subgraphs.
    pub(super) holders: Vec<usize>,
    /// True when an initializer keeps its data in an external file.
    pub(super) uses_external: bool,
    /// Indices of the initializers a graph input of the same name shadows, ascending.
    pub(super) shadowed: Vec<u32>,
}

/// The IR of the graph `g` whose node and initializer records are `records` (`g.node` and
/// `g.initializer` are not read).
pub(super) fn build_graph<'g>(
    path: &Path,
    g: &'g GraphProto,
    records: &'g Records,
    ext: &mut ExternalFiles,
) -> Result<Built> {
    let nodes = &records.nodes[..];
    let inits = &records.inits[..];
    // Every node defines at least one name (sized for one each; a map grows by doubling).
    let defined = g.input.len() + inits.len() + g.sparse_initializer.len() + nodes.len();
    let count =
        g.input.len() + inits.len() + g.sparse_initializer.len() + nodes.len() + g.output.len();
    if count > crate::ir::MAX_RECORDS {
        return Err(fmt_err(
            path,
            format!(
                "the graph has {count} records (inputs, initializers, nodes, outputs); at most {} are supported",
                crate::ir::MAX_RECORDS
            ),
        ));
    }
    // Headroom for what passes add (folded constants, lowered nodes): the first node added
    // past the capacity would copy the whole node array. Edges are reserved once the nodes'
    // input counts are known.
    let graph = Graph::with_capacity(count + count / 4 + 16, 0);
    let mut producers: FastMap<&str, OutletId> = FastMap::default();
    producers.reserve(defined);
    let mut types: FastMap<&str, ValueType> = FastMap::default();
    types.reserve(g.value_info.len() + g.input.len() + g.output.len());
    for vi in g
        .value_info
        .iter()
        .chain(g.input.iter())
        .chain(g.output.iter())
    {
        types.insert(vi.name(), value_type_of(vi));
    }
    let mut b = Builder {
        path,
        graph,
        producers,
    };
    add_inputs(&mut b, g)?;
    // Duplicates are found in `producers`, one hash per initializer (a set of their own names
    // and a separate check for graph inputs were two more each, and most of a model's names
    // are initializers'). An initializer a graph input shadows is not in `producers`: those
    // are remembered here, to refuse a second initializer of the same name all the same.
    let mut shadowed: HashSet<&str> = HashSet::default();
    let (uses_external, shadowed_at) = add_initializers(&mut b, inits, ext, &mut shadowed)?;
    add_sparse_initializers(&mut b, g, inits.len(), &shadowed)?;
    let added = add_node_records(&mut b, nodes, &types, ext)?;
    let edges = added.wires + g.output.len();
    let room = (edges + edges / 4 + 16).saturating_sub(b.graph.g.edge_count());
    b.graph.g.reserve_exact_edges(room);
    wire_inputs(&mut b, nodes, &added.node_ix, added.wired_up_to)?;
    let captured = !added.captures.is_empty();
    wire_captures(&mut b, nodes, &added.node_ix, added.captures)?;
    add_outputs(&mut b, g)?;
    let Builder { graph, .. } = b;
    // Wired as added, every edge goes from a node added before its target (a node reading
    // its own output was left to `wire_inputs`): no cycle. Else (and with captures, whose
    // producers may come later) the check walks the graph.
    let acyclic = added.wired_up_to == nodes.len() && !captured;
    if !acyclic {
        graph.topo_order().map_err(|c| Error::cycle(path, c))?;
    }
    Ok(Built {
        graph,
        holders: added.holders,
        uses_external,
        shadowed: shadowed_at,
    })
}

/// What [`build_graph`] builds up step by step: the graph, and the outlet each name defined so
/// far comes from.
struct Builder<'g, 'p> {
    path: &'p Path,
    graph: Graph,
    producers: FastMap<&'g str, OutletId>,
}

fn define<'g>(producers: &mut FastMap<&'g str, OutletId>, name: &'g str, outlet: OutletId) {
    if !name.is_empty() {
        producers.insert(name, outlet);
    }
}

fn is_input(graph: &Graph, o: &OutletId) -> bool {
    graph.node(o.node).kind == NodeKind::Input
}

/// Like the onnx checker: a name is defined once. ONNX Runtime takes the last of two
/// initializers of one name, a fold would take the first: refuse rather than guess.
fn defined_twice(path: &Path, name: &str) -> Error {
    fmt_err(
        path,
        format!("initializer '{name}' is defined twice (the onnx checker refuses such a model)"),
    )
}

/// The graph inputs. Initializers that are also graph inputs may be overridden at run time:
/// they are inputs.
fn add_inputs<'g>(b: &mut Builder<'g, '_>, g: &'g GraphProto) -> Result<()> {
    for (i, vi) in g.input.iter().enumerate() {
        let mut node = Node::op(vi.name(), "", "");
        node.kind = NodeKind::Input;
        node.origin = Origin::OnnxInput(crate::ir::to_u32(i));
        node.order = (0, crate::ir::to_u32(i));
        node.dirty = false;
        node.outputs = vec![crate::ir::Value {
            name: crate::ir::Text::from(vi.name()),
            ty: value_type_of(vi),
            ty_changed: false,
        }];
        if b.producers.contains_key(vi.name()) {
            return Err(fmt_err(
                b.path,
                format!("graph input '{}' is declared twice", vi.name()),
            ));
        }
        let ix = b.graph.add_node(node);
        define(&mut b.producers, vi.name(), OutletId { node: ix, port: 0 });
    }
    Ok(())
}

/// The constant node of initializer `i`.
fn init_node(i: usize, name: &str, tensor: Tensor) -> Node {
    let mut node = Node::op(name, "", "");
    node.origin = Origin::OnnxInitializer(crate::ir::to_u32(i));
    node.order = (1, crate::ir::to_u32(i));
    node.dirty = false;
    node.outputs = vec![crate::ir::Value {
        name: crate::ir::Text::from(name),
        ty: ValueType {
            dtype: Some(tensor.dtype),
            shape: Some(
                tensor
                    .shape
                    .iter()
                    .map(|&d| DeclaredDim::Known(d))
                    .collect(),
            ),
        },
        ty_changed: false,
    }];
    node.kind = NodeKind::Const(Box::new(tensor));
    node
}

/// The initializers, as constants; one a graph input shadows is kept in the record only (its
/// name goes to `shadowed`). Returns whether one keeps its data in an external file, and the
/// indices of the shadowed ones, ascending.
fn add_initializers<'g>(
    b: &mut Builder<'g, '_>,
    inits: &'g [Bytes],
    ext: &mut ExternalFiles,
    shadowed: &mut HashSet<&'g str>,
) -> Result<(bool, Vec<u32>)> {
    let path = b.path;
    let Builder {
        graph, producers, ..
    } = b;
    let mut uses_external = false;
    let mut shadowed_at: Vec<u32> = Vec::new();
    // The records are read into nodes on rayon's pool, a window ahead of the nodes added here
    // (in file order, so names, errors and node indices are those of a loop in one thread).
    // Most records (raw data in the file): read in place, name and tensor in one walk (the
    // name alone for the others; `None`: it does not read).
    type InitRead<'a> = (Option<&'a str>, Option<Node>);
    // The pages of the window's nodes are asked for on the pool, as for the nodes' records
    // (see `add_node_records`): initializer `i` is node `first + i` or, after shadowed ones,
    // an index below it, in the capacity reserved for the graph.
    let first = graph.g.node_count();
    let slots = graph.slots();
    let read_inits = |range: std::ops::Range<usize>, out: &mut Vec<InitRead<'g>>| {
        out.extend(range.clone().map(|i| match light_tensor_named(&inits[i]) {
            Some((t, name)) => (Some(name), Some(init_node(i, name, t))),
            None => (last_string(&inits[i], 8), None),
        }));
        if let Some(slots) = slots {
            let (at, len) = slots.nodes(first + range.start, first + range.end);
            crate::formats::fs::prefault_for_write(at, len);
        }
    };
    let add_inits = |start: usize, window: std::vec::Drain<'_, InitRead<'g>>| -> Result<()> {
        for (i, (name, light)) in (start..).zip(window) {
            let Some(name) = name else {
                return Err(fmt_err(
                    path,
                    format!("initializer #{i}: its name does not read"),
                ));
            };
            let rec = &inits[i];
            // An empty name defines nothing (no input can name it), but the constant is kept.
            let slot = if name.is_empty() {
                None
            } else {
                match producers.entry(name) {
                    std::collections::hash_map::Entry::Occupied(o) => {
                        if !is_input(graph, o.get()) || !shadowed.insert(name) {
                            return Err(defined_twice(path, name));
                        }
                        // Shadowed by a graph input of the same name: kept in the record only.
                        shadowed_at.push(crate::ir::to_u32(i));
                        continue;
                    }
                    std::collections::hash_map::Entry::Vacant(v) => Some(v),
                }
            };
            let node = match light {
                Some(node) => node,
                None => {
                    let t = proto::TensorProto::decode(rec.clone()).map_err(|e| {
                        fmt_err(
                            path,
                            format!("not a valid ONNX model: initializer '{name}': {e}"),
                        )
                    })?;
                    uses_external |= t.data_location == Some(1);
                    let tensor = tensor_from_proto(&t, ext)
                        .map_err(|m| fmt_err(path, format!("initializer '{}': {m}", t.name())))?;
                    init_node(i, name, tensor)
                }
            };
            let ix = graph.add_node(node);
            if let Some(slot) = slot {
                slot.insert(OutletId { node: ix, port: 0 });
            }
        }
        Ok(())
    };
    pipelined(inits.len(), read_inits, add_inits)?;
    Ok((uses_external, shadowed_at))
}

/// The sparse initializers (after the `inits` initializers), as op nodes without inputs.
fn add_sparse_initializers<'g>(
    b: &mut Builder<'g, '_>,
    g: &'g GraphProto,
    inits: usize,
    shadowed: &HashSet<&str>,
) -> Result<()> {
    for (i, t) in g.sparse_initializer.iter().enumerate() {
        let name = t.values.as_ref().map(|v| v.name()).unwrap_or_default();
        if !name.is_empty() {
            match b.producers.get(name) {
                // A sparse initializer takes a graph input's name over (as before).
                Some(o) if !is_input(&b.graph, o) || shadowed.contains(name) => {
                    return Err(defined_twice(b.path, name))
                }
                _ => {}
            }
        }
        let mut node = Node::op(name, "SparseInitializer", "");
        node.origin = Origin::OnnxSparseInitializer(crate::ir::to_u32(i));
        node.order = (1, crate::ir::to_u32(inits + i));
        node.dirty = false;
        node.outputs = vec![crate::ir::Value {
            name: crate::ir::Text::from(name),
            ty: ValueType::default(),
            ty_changed: false,
        }];
        let ix = b.graph.add_node(node);
        define(&mut b.producers, name, OutletId { node: ix, port: 0 });
    }
    Ok(())
}

/// What [`add_node_records`] leaves for the wiring.
struct Added {
    /// The IR node of each node record.
    node_ix: Vec<NodeIndex>,
    /// Indices of the nodes that hold subgraphs.
    holders: Vec<usize>,
    /// The outer names each subgraph-holding node's bodies read.
    captures: Vec<(usize, Vec<String>)>,
    /// Number of named inputs of all nodes.
    wires: usize,
    /// The first node record whose inputs are not wired yet ([`wire_inputs`] wires it and
    /// every one after it); the records before it are wired.
    wired_up_to: usize,
}

/// The nodes: all created, in file order; each wired as it is added while every name it
/// reads is already defined (a file in topological order: all of them), the first one
/// that reads a name not yet defined and all after it afterwards ([`wire_inputs`]), so the
/// edges are added in the same order either way (node by node, port by port). Each record is
/// decoded once, into the IR node; output and input names are read in place from the
/// record's bytes, so nothing decoded outlives its node's turn.
fn add_node_records<'g>(
    b: &mut Builder<'g, '_>,
    nodes: &'g [Bytes],
    types: &FastMap<&'g str, ValueType>,
    ext: &mut ExternalFiles,
) -> Result<Added> {
    let path = b.path;
    let Builder {
        graph, producers, ..
    } = b;
    let mut node_ix = Vec::with_capacity(nodes.len());
    let mut holders = Vec::new();
    let mut captures: Vec<(usize, Vec<String>)> = Vec::new();
    let mut wires = 0usize;
    // Wired as added: the wiring was a second walk of every record on the pool, to read the
    // input names again (a fifth of the load of wide_sym_100k.onnx in instructions).
    let mut wired_up_to: Option<usize> = None;
    let mut sources: Vec<(OutletId, usize)> = Vec::new();
    // Room for four inputs a node and the headroom for passes (a quarter more, as below):
    // edges grown by doubling were copied each time. Pages of it no edge uses are not
    // touched (not resident). More inputs a node: the room grows, once the count is known.
    graph
        .g
        .reserve_exact_edges(5usize.saturating_mul(nodes.len()).saturating_add(16));
    // The pages the nodes and edges of a window are written to are asked for on the pool,
    // once the window is read (this thread stopped at a page fault every few records of
    // fresh memory: a quarter of its time on wide_sym_100k.onnx). Record `i` is node
    // `first + i` (indices are given in order while loading); its edges follow those of the
    // records before it, as it is wired as added (those left to `wire_inputs` come in the
    // same order), so their place is the count of named inputs before it. Only the
    // capacity reserved above is named.
    let first = graph.g.node_count();
    let node_room = first + nodes.len();
    let edge_room = 5usize.saturating_mul(nodes.len()).saturating_add(16);
    let node_slots = graph.slots();
    // (The edges' addresses are known once there is an edge: set after the first window.)
    let edge_slots = std::sync::Mutex::new((None::<crate::ir::Slots>, 0usize));
    let prefault = |range: std::ops::Range<usize>, named: usize| {
        if let Some(slots) = node_slots {
            let (at, len) = slots.nodes(first + range.start, (first + range.end).min(node_room));
            crate::formats::fs::prefault_for_write(at, len);
        }
        let Ok(mut edges) = edge_slots.lock() else {
            return;
        };
        let (slots, done) = &mut *edges;
        if let Some((at, len)) = slots.and_then(|s| s.edges(*done, (*done + named).min(edge_room)))
        {
            crate::formats::fs::prefault_for_write(at, len);
        }
        *done += named;
    };
    // Most records: read in place, on rayon's pool, a window ahead (as the initializers).
    type Read<'a> = Option<(Node, Names<'a>, Names<'a>)>;
    let read_nodes = |range: std::ops::Range<usize>, out: &mut Vec<Read<'g>>| {
        let at = out.len();
        out.extend(range.clone().map(|i| {
            let l = light_node(&nodes[i])?;
            let mut node = onnx_node(
                i,
                l.name,
                l.op_type,
                l.domain,
                l.inputs.len(),
                &l.attributes,
            );
            node.outputs = l
                .outputs
                .iter()
                .map(|o| crate::ir::Value {
                    ty: types.get(o).cloned().unwrap_or_default(),
                    name: crate::ir::Text::from(o),
                    ty_changed: false,
                })
                .collect();
            Some((node, l.outputs, l.inputs))
        }));
        let named = out[at..]
            .iter()
            .flatten()
            .map(|(_, _, inputs)| inputs.iter().filter(|n| !n.is_empty()).count())
            .sum();
        prefault(range, named);
    };
    let add_nodes = |start: usize, window: std::vec::Drain<'_, Read<'g>>| -> Result<()> {
        for (i, light) in (start..).zip(window) {
            let rec = &nodes[i];
            let (node, outputs, inputs) = match light {
                Some((node, outputs, inputs)) => {
                    wires += inputs.len();
                    (node, outputs, Some(inputs))
                }
                None => {
                    // Read by prost: `full_node` reads the output names in place, a walk of the
                    // whole record that fails the build on one that does not walk (the caller
                    // then checks every record; see `OnnxModel::decode`).
                    let (node, outputs) = full_node(
                        path,
                        i,
                        rec,
                        types,
                        ext,
                        &mut holders,
                        &mut captures,
                        &mut wires,
                    )?;
                    (node, outputs, None)
                }
            };
            // The producers of its inputs are looked up before its outputs are defined: a
            // node reading its own output is left to `wire_inputs` (and the cycle check).
            let all_known = wired_up_to.is_none() && {
                // The names read in place (a record read by prost: read again, here).
                let inputs = inputs.or_else(|| names(rec, 1));
                sources.clear();
                inputs.as_ref().is_some_and(|inputs| {
                    inputs.iter().enumerate().all(|(p, name)| {
                        name.is_empty()
                            || producers
                                .get(name)
                                .map(|&src| sources.push((src, p)))
                                .is_some()
                    })
                })
            };
            let ix = graph.add_node(node);
            for (p, o) in outputs.iter().enumerate() {
                if o.is_empty() {
                    continue;
                }
                // One hash for the check and the insertion.
                match producers.entry(o) {
                    std::collections::hash_map::Entry::Occupied(_) => {
                        let n = NodeProto::decode(rec.clone()).unwrap_or_default();
                        return Err(node_err(
                            path,
                            &n,
                            i,
                            format!("output '{o}' is already produced by another node"),
                        ));
                    }
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(OutletId { node: ix, port: p });
                    }
                }
            }
            node_ix.push(ix);
            if all_known {
                for &(src, p) in &sources {
                    graph.connect(src, ix, p);
                }
            } else if wired_up_to.is_none() {
                // This node and all after it are wired by `wire_inputs`.
                wired_up_to = Some(i);
            }
        }
        if let Ok(mut edges) = edge_slots.lock() {
            if edges.0.is_none_or(|s| s.edges(0, 0).is_none()) {
                edges.0 = graph.slots();
            }
        }
        Ok(())
    };
    pipelined(nodes.len(), read_nodes, add_nodes)?;
    Ok(Added {
        node_ix,
        holders,
        captures,
        wires,
        wired_up_to: wired_up_to.unwrap_or(nodes.len()),
    })
}

/// Node record `i` decoded (for an error message; empty when it does not decode).
fn decoded(nodes: &[Bytes], i: usize) -> NodeProto {
    nodes
        .get(i)
        .and_then(|r| NodeProto::decode(r.clone()).ok())
        .unwrap_or_default()
}

/// The edges from the named inputs of node records `from..` to their producers.
fn wire_inputs<'g>(
    b: &mut Builder<'g, '_>,
    nodes: &'g [Bytes],
    node_ix: &[NodeIndex],
    from: usize,
) -> Result<()> {
    let path = b.path;
    let Builder {
        graph, producers, ..
    } = b;
    let producers = &*producers;
    // Input names are looked up on rayon's pool, a window ahead of the edges added here.
    enum Wiring<'a> {
        Edge(usize, OutletId, usize),
        Unreadable(usize),
        Missing(usize, usize, &'a str),
    }
    let read_inputs = |range: std::ops::Range<usize>, out: &mut Vec<Wiring<'g>>| {
        let records = nodes[range.start + from..range.end + from].iter();
        for (i, rec) in (range.start + from..).zip(records) {
            let Some(inputs) = names(rec, 1) else {
                out.push(Wiring::Unreadable(i));
                continue;
            };
            for (p, name) in inputs
                .iter()
                .enumerate()
                .filter(|(_, name)| !name.is_empty())
            {
                out.push(match producers.get(name) {
                    Some(&src) => Wiring::Edge(i, src, p),
                    None => Wiring::Missing(i, p, name),
                });
            }
        }
    };
    let wire = |_: usize, window: std::vec::Drain<'_, Wiring<'g>>| -> Result<()> {
        for w in window {
            match w {
                Wiring::Edge(i, src, p) => {
                    graph.connect(src, node_ix[i], p);
                }
                Wiring::Unreadable(i) => {
                    return Err(node_err(
                        path,
                        &decoded(nodes, i),
                        i,
                        "an input name does not read",
                    ));
                }
                Wiring::Missing(i, p, name) => {
                    return Err(node_err(
                        path,
                        &decoded(nodes, i),
                        i,
                        format!(
                            "input {p} names '{name}', which no node, input or initializer \
                             produces"
                        ),
                    ));
                }
            }
        }
        Ok(())
    };
    pipelined(nodes.len().saturating_sub(from), read_inputs, wire)
}

/// The edges from the outer names a node's subgraphs read to their producers.
fn wire_captures(
    b: &mut Builder<'_, '_>,
    nodes: &[Bytes],
    node_ix: &[NodeIndex],
    captures: Vec<(usize, Vec<String>)>,
) -> Result<()> {
    for (i, captured) in captures {
        let ix = node_ix[i];
        for name in captured {
            let Some(&src) = b.producers.get(name.as_str()) else {
                return Err(node_err(
                    b.path,
                    &decoded(nodes, i),
                    i,
                    format!(
                        "a subgraph reads '{name}', which the enclosing graph does not produce"
                    ),
                ));
            };
            b.graph.g.add_edge(
                src.node,
                ix,
                Wire {
                    src_port: Wire::port(src.port),
                    dst_port: Wire::CAPTURED,
                },
            );
        }
    }
    Ok(())
}

/// The graph outputs, each wired to its producer.
fn add_outputs(b: &mut Builder<'_, '_>, g: &GraphProto) -> Result<()> {
    for (i, vi) in g.output.iter().enumerate() {
        let Some(&src) = b.producers.get(vi.name()) else {
            return Err(fmt_err(
                b.path,
                format!("graph output '{}' is produced by no node", vi.name()),
            ));
        };
        let mut node = Node::op(vi.name(), "", "");
        node.kind = NodeKind::Output;
        node.origin = Origin::OnnxOutput(crate::ir::to_u32(i));
        node.order = (3, crate::ir::to_u32(i));
        node.dirty = false;
        node.num_inputs = 1;
        let ix = b.graph.add_node(node);
        b.graph.connect(src, ix, 0);
    }
    Ok(())
}
