//! The [`Graph`] and its editing API: adding, connecting, reading and redirecting nodes.

use std::collections::BTreeMap;

use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableDiGraph};
use petgraph::visit::EdgeRef;
use petgraph::Direction;

use super::{FastSet, Node, NodeKind, OutletId, Tensor, Value, Wire};

/// The graph.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub g: StableDiGraph<Node, Wire>,
    next_order: u32,
    /// Every name in use (values and nodes), as 64-bit hashes of `name_hasher`: a name is
    /// never stored twice (the graph holds it already). Two names of one hash only make
    /// [`Graph::unique_name`] pass over a free name, never reuse a taken one. Filled with the
    /// graph's node and value names by the first [`Graph::unique_name`] (`names_built`), not
    /// while loading: most runs never name a new node, and hashing every name of a large model
    /// was a tenth of its load time.
    pub(super) names: FastSet<u64>,
    pub(super) names_built: bool,
    pub(super) name_hasher: foldhash::quality::RandomState,
    /// Reshaping nodes (`Reshape`, `Squeeze`, `Unsqueeze`) that pass `lower` made out of a
    /// StridedSlice that sliced nothing: `raise` turns these back into a StridedSlice in the
    /// same run. Not written to the file.
    pub lowered_shaping: std::collections::HashSet<NodeIndex>,
    /// Edges unlinked lazily, removed all at once by [`Graph::flush_detached`].
    pub(super) detached: Vec<EdgeIndex>,
    /// Nodes removed lazily (edges detached), removed by [`Graph::flush_detached`].
    pub(super) doomed: FastSet<NodeIndex>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Graph {
        Graph::default()
    }

    /// An empty graph with room for `nodes` nodes, `edges` edges and `nodes` names (loaders
    /// that know the sizes: growing a graph of a million nodes by doubling costs more than
    /// building it).
    pub fn with_capacity(nodes: usize, edges: usize) -> Graph {
        Graph {
            g: StableDiGraph::with_capacity(nodes, edges),
            ..Graph::default()
        }
    }

    /// Adds a node; nodes added without an explicit order key sort after everything loaded,
    /// in creation order.
    pub fn add_node(&mut self, mut node: Node) -> NodeIndex {
        if node.order.0 == u32::MAX {
            self.next_order = self.next_order.saturating_add(1);
            node.order.1 = self.next_order;
        }
        self.g.add_node(node)
    }

    /// Connects `from` to input `port` of `to`.
    pub fn connect(&mut self, from: OutletId, to: NodeIndex, port: usize) -> EdgeIndex {
        self.g.add_edge(from.node, to, Wire::new(from.port, port))
    }

    /// The node at `ix` (panics on a stale index, which is a programming error).
    pub fn node(&self, ix: NodeIndex) -> &Node {
        &self.g[ix]
    }

    /// Mutable node.
    pub fn node_mut(&mut self, ix: NodeIndex) -> &mut Node {
        &mut self.g[ix]
    }

    /// What feeds input `port` of `node`, if anything.
    pub fn input(&self, node: NodeIndex, port: usize) -> Option<OutletId> {
        self.g
            .edges_directed(node, Direction::Incoming)
            .find(|e| e.weight().dst_port as usize == port)
            .map(|e| OutletId {
                node: e.source(),
                port: e.weight().src_port as usize,
            })
    }

    /// The inputs of `node` by port (`None` for an omitted optional input).
    pub fn inputs(&self, node: NodeIndex) -> Vec<Option<OutletId>> {
        let n = self.g[node].num_inputs as usize;
        let mut out = vec![None; n];
        for e in self.g.edges_directed(node, Direction::Incoming) {
            let p = e.weight().dst_port as usize;
            if p < n {
                out[p] = Some(OutletId {
                    node: e.source(),
                    port: e.weight().src_port as usize,
                });
            }
        }
        out
    }

    /// The value produced at `outlet`.
    pub fn value(&self, outlet: OutletId) -> Option<&Value> {
        self.g.node_weight(outlet.node)?.outputs.get(outlet.port)
    }

    /// The constant at `outlet`, if its producer is a constant.
    pub fn constant_at(&self, outlet: OutletId) -> Option<&Tensor> {
        self.g.node_weight(outlet.node)?.constant()
    }

    /// Consumers of `outlet`: (node, input port).
    pub fn consumers(&self, outlet: OutletId) -> Vec<(NodeIndex, usize)> {
        self.g
            .edges_directed(outlet.node, Direction::Outgoing)
            .filter(|e| {
                e.weight().src_port as usize == outlet.port && e.weight().dst_port != Wire::DETACHED
            })
            .map(|e| (e.target(), e.weight().dst_port as usize))
            .collect()
    }

    /// Moves every consumer of `from` to read `to` instead. The old edges are detached
    /// ([`Graph::detach_edge`]): call [`Graph::flush_detached`] before reading `g` directly.
    pub fn redirect(&mut self, from: OutletId, to: OutletId) {
        let edges: Vec<(EdgeIndex, NodeIndex, Wire)> = self
            .g
            .edges_directed(from.node, Direction::Outgoing)
            .filter(|e| {
                e.weight().src_port as usize == from.port && e.weight().dst_port != Wire::DETACHED
            })
            .map(|e| (e.id(), e.target(), *e.weight()))
            .collect();
        for (id, target, w) in edges {
            self.detach_edge(id);
            self.g.add_edge(
                to.node,
                target,
                Wire {
                    src_port: Wire::port(to.port),
                    dst_port: w.dst_port,
                },
            );
            self.g[target].dirty = true;
        }
    }

    /// Puts `new` in the place of `old`: `old`'s index takes `new`'s node and inputs and keeps
    /// the consumers of its output 0 (marked dirty, as [`Graph::redirect`] marks them); `new`'s
    /// index goes away. The graph is the same as after redirecting output 0 of `old` to output 0
    /// of `new` and removing `old`, but an input edge both share (the data input) is kept
    /// instead of removed and re-added. The edges that go are detached
    /// ([`Graph::detach_edge`]): call [`Graph::flush_detached`] before reading `g` directly.
    /// Returns the index the new node now has (`old`).
    pub fn replace_node(&mut self, old: NodeIndex, new: NodeIndex) -> NodeIndex {
        let incoming =
            |g: &StableDiGraph<Node, Wire>, n: NodeIndex| -> Vec<(EdgeIndex, NodeIndex, Wire)> {
                g.edges_directed(n, Direction::Incoming)
                    .filter(|e| e.weight().dst_port != Wire::DETACHED)
                    .map(|e| (e.id(), e.source(), *e.weight()))
                    .collect()
            };
        let mut new_in: Vec<Option<(NodeIndex, Wire)>> = incoming(&self.g, new)
            .into_iter()
            .map(|(_, s, w)| Some((s, w)))
            .collect();
        for (id, src, w) in incoming(&self.g, old) {
            match new_in.iter_mut().find(|e| **e == Some((src, w))) {
                Some(slot) => *slot = None,
                None => self.detach_edge(id),
            }
        }
        // Only output 0 of `old` is taken over: consumers of other ports are dropped, as they
        // were when `old` was removed.
        let mut consumers = Vec::new();
        let mut dropped = Vec::new();
        for e in self.g.edges_directed(old, Direction::Outgoing) {
            let w = e.weight();
            if w.dst_port == Wire::DETACHED {
                continue;
            }
            if w.src_port != 0 {
                dropped.push(e.id());
            } else {
                consumers.push(e.target());
            }
        }
        for id in dropped {
            self.detach_edge(id);
        }
        for t in consumers {
            self.g[t].dirty = true;
        }
        for (src, w) in new_in.into_iter().flatten() {
            self.g.add_edge(src, old, w);
        }
        // Anything already reading `new` reads `old` now.
        let out: Vec<(NodeIndex, Wire)> = self
            .g
            .edges_directed(new, Direction::Outgoing)
            .filter(|e| e.weight().dst_port != Wire::DETACHED)
            .map(|e| (e.target(), *e.weight()))
            .collect();
        for (t, w) in out {
            self.g.add_edge(old, if t == new { old } else { t }, w);
        }
        // `new` goes with its edges, unlinked at once: its inputs were added just now, each
        // near the head of its source's out-list.
        let node = self.g.remove_node(new).expect("replace_node: stale index");
        self.g[old] = node;
        old
    }

    /// Count of operation nodes by `op_type`.
    pub fn op_counts(&self) -> BTreeMap<String, usize> {
        // Counted by the op type borrowed: one `String` per op type, not per node.
        let mut m: BTreeMap<&str, usize> = BTreeMap::new();
        for n in self.g.node_weights() {
            if n.kind == NodeKind::Op {
                *m.entry(n.op_type.as_str()).or_insert(0) += 1;
            }
        }
        m.into_iter().map(|(op, n)| (op.to_string(), n)).collect()
    }
}

/// Where petgraph keeps a graph's node and edge records, as addresses, for a loader that asks
/// the kernel for the pages of the records it is about to add ([`Graph::slots`]). Computed
/// from a record's address and the size of petgraph's entries; nothing is read or written
/// through them, and the spans are not checked against the allocation: only hints.
#[derive(Debug, Clone, Copy)]
pub struct Slots {
    node0: usize,
    node_stride: usize,
    edge0: Option<usize>,
    edge_stride: usize,
}

impl Slots {
    /// The bytes of the node entries of indices `from..to`, as (address, length).
    pub fn nodes(&self, from: usize, to: usize) -> (usize, usize) {
        Self::span(self.node0, self.node_stride, from, to)
    }

    /// The bytes of the edge entries of indices `from..to`, as (address, length); `None`
    /// when the graph had no edge to take the address from.
    pub fn edges(&self, from: usize, to: usize) -> Option<(usize, usize)> {
        Some(Self::span(self.edge0?, self.edge_stride, from, to))
    }

    fn span(base: usize, stride: usize, from: usize, to: usize) -> (usize, usize) {
        let start = base.wrapping_add(from.wrapping_mul(stride));
        (start, to.saturating_sub(from).saturating_mul(stride))
    }
}

impl Graph {
    /// The addresses of the node and edge entries as they are now ([`Slots`]): `None` when the
    /// graph has no node of index 0. The addresses hold while the node and edge arrays are not
    /// reallocated (within their reserved capacity).
    pub fn slots(&self) -> Option<Slots> {
        use petgraph::visit::EdgeIndexable;
        let weight_in_node = std::mem::offset_of!(petgraph::graph::Node<Option<Node>, u32>, weight);
        let weight_in_edge = std::mem::offset_of!(petgraph::graph::Edge<Option<Wire>, u32>, weight);
        let node0 = self.g.node_weight(NodeIndex::new(0))? as *const Node as usize;
        let edge0 = (self.g.edge_bound() > 0)
            .then(|| self.g.edge_weight(EdgeIndex::new(0)))
            .flatten()
            .map(|w| w as *const Wire as usize);
        Some(Slots {
            // (The `Node` may sit a few bytes into its `Option`: a span off by that is still
            // the right pages but for its ends.)
            node0: node0.wrapping_sub(weight_in_node),
            node_stride: std::mem::size_of::<petgraph::graph::Node<Option<Node>, u32>>(),
            edge0: edge0.map(|e| e.wrapping_sub(weight_in_edge)),
            edge_stride: std::mem::size_of::<petgraph::graph::Edge<Option<Wire>, u32>>(),
        })
    }
}
