//! A stable topological order of the graph ([`Graph::topo_order`]) and what it needs.

use std::collections::BTreeMap;

use petgraph::stable_graph::NodeIndex;
use petgraph::visit::{EdgeRef, IntoEdgeReferences, IntoNodeReferences, NodeIndexable};
use petgraph::Direction;

use super::{to_u32, Graph};

/// A set of ranks `0..n` that gives back its smallest member: a bitset, and above it a
/// summary level per 64 words (a bit per non-empty word) up to a single word. Inserting or
/// taking the smallest costs a few word operations per level (four levels for 16 million
/// ranks), where a binary heap costs a logarithm of its size in comparisons and scattered
/// moves.
pub(super) struct RankSet {
    /// `levels[0]` holds the ranks; bit `w` of `levels[k + 1]` is set when word `w` of
    /// `levels[k]` is not zero. The last level is one word.
    levels: Vec<Vec<u64>>,
}

impl RankSet {
    pub(super) fn new(n: usize) -> RankSet {
        let mut levels = Vec::new();
        let mut len = n.max(1);
        loop {
            let words = len.div_ceil(64);
            levels.push(vec![0u64; words]);
            if words == 1 {
                return RankSet { levels };
            }
            len = words;
        }
    }

    /// Adds rank `r` (below the `n` it was made for).
    pub(super) fn insert(&mut self, r: usize) {
        let mut i = r;
        for level in &mut self.levels {
            let Some(word) = level.get_mut(i / 64) else {
                return;
            };
            let was = *word;
            *word |= 1 << (i % 64);
            if was != 0 {
                return;
            }
            i /= 64;
        }
    }

    /// Removes and returns the smallest rank, if any.
    pub(super) fn pop_min(&mut self) -> Option<usize> {
        let mut i = 0usize;
        for level in self.levels.iter().rev() {
            let word = *level.get(i)?;
            if word == 0 {
                return None;
            }
            i = i * 64 + word.trailing_zeros() as usize;
        }
        let r = i;
        for level in &mut self.levels {
            let Some(word) = level.get_mut(i / 64) else {
                break;
            };
            *word &= !(1 << (i % 64));
            if *word != 0 {
                break;
            }
            i /= 64;
        }
        Some(r)
    }
}

/// A cycle in the graph: the name of one node on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle(pub String);

impl Graph {
    /// Nodes in a stable topological order: ties broken by the original order key. A cycle is
    /// an error naming one node on it.
    pub fn topo_order(&self) -> Result<Vec<NodeIndex>, Cycle> {
        // Fast path: when the nodes sorted by their order key already are a topological order
        // (a loaded model lists its nodes in order; passes mostly append), that sorted list is
        // exactly what the heap below would produce: the smallest remaining key is always
        // ready. One sort and one pass over the edges instead of a heap of every node.
        // Fastest: node indices already in key order (a graph as loaded), so the edges alone
        // tell whether that order is topological. The keys end with the index, so in that
        // case comparing two nodes' keys is comparing their indices: the edges are checked
        // without reading a node (two reads of the node array per edge, at random, were most
        // of this function's time on a graph of 600,000 nodes). The indices are listed in the
        // same walk over the records that checks their keys (a second walk, on a graph larger
        // than the cache, took as long as the first).
        let mut listed = Vec::with_capacity(self.g.node_count());
        let mut last: Option<(u32, u32)> = None;
        let mut in_key_order = true;
        for (ix, n) in self.g.node_references() {
            if last.is_some_and(|k| k > n.order) {
                in_key_order = false;
                break;
            }
            last = Some(n.order);
            listed.push(ix);
        }
        if in_key_order
            && self
                .g
                .edge_references()
                .all(|e| e.source().index() < e.target().index())
        {
            return Ok(listed);
        }
        drop(listed);
        // One read of each record (not a walk of the indices, then a lookup of each).
        let mut sorted: Vec<((u32, u32), NodeIndex)> = self
            .g
            .node_references()
            .map(|(ix, n)| (n.order, ix))
            .collect();
        sorted.sort_unstable_by_key(|&(order, ix)| (order, ix.index()));
        // Ranks and in-degrees in 32 bits (a stable graph's indices are): half the fresh
        // memory of `usize`.
        let mut position = vec![u32::MAX; self.g.node_bound()];
        for (p, &(_, ix)) in sorted.iter().enumerate() {
            position[ix.index()] = to_u32(p);
        }
        if self
            .g
            .edge_references()
            .all(|e| position[e.source().index()] < position[e.target().index()])
        {
            return Ok(sorted.into_iter().map(|(_, ix)| ix).collect());
        }
        // Kahn's algorithm, the smallest ready key first. A node's rank in `sorted` orders it
        // as its key does, so the ready nodes are a set of ranks ([`RankSet`]: a few word
        // operations each), not a binary heap (a logarithm per node, and most of this
        // function's time on a large graph a pass had reordered).
        // Indexed by node index (a stable graph's indices are dense up to `node_bound`).
        let mut indegree = vec![0u32; self.g.node_bound()];
        for e in self.g.edge_references() {
            indegree[e.target().index()] += 1;
        }
        let mut ready = RankSet::new(sorted.len());
        for (r, &(_, ix)) in sorted.iter().enumerate() {
            if indegree[ix.index()] == 0 {
                ready.insert(r);
            }
        }
        let mut out = Vec::with_capacity(self.g.node_count());
        while let Some(r) = ready.pop_min() {
            let ix = sorted[r].1;
            out.push(ix);
            for e in self.g.edges_directed(ix, Direction::Outgoing) {
                let t = e.target();
                let d = &mut indegree[t.index()];
                *d -= 1;
                if *d == 0 {
                    ready.insert(position[t.index()] as usize);
                }
            }
        }
        drop((sorted, position));
        if out.len() != self.g.node_count() {
            // Some node is on (or behind) a cycle: name the first one, in original order, that
            // lies on a cycle.
            let remaining: BTreeMap<(u32, u32), NodeIndex> = self
                .g
                .node_indices()
                .filter(|ix| indegree[ix.index()] > 0)
                .map(|ix| (self.g[ix].order, ix))
                .collect();
            let on_cycle = petgraph::algo::kosaraju_scc(&self.g)
                .into_iter()
                .filter(|c| c.len() > 1 || self.g.contains_edge(c[0], c[0]))
                .flatten()
                .min_by_key(|ix| self.g[*ix].order);
            let ix = on_cycle
                .or_else(|| remaining.values().next().copied())
                .unwrap_or_else(|| NodeIndex::new(0));
            return Err(Cycle(
                self.g
                    .node_weight(ix)
                    .map(|n| n.name.to_string())
                    .unwrap_or_default(),
            ));
        }
        Ok(out)
    }
}
