//! Removing nodes and edges: in batches ([`Graph::remove_nodes`], [`Graph::remove_edges`]), lazily
//! ([`Graph::detach_edge`], [`Graph::remove_node_lazily`], [`Graph::flush_detached`]), and
//! freeing what was removed off the pass's thread ([`with_drop_later`], [`NodeHeap`]).

use petgraph::stable_graph::{EdgeIndex, NodeIndex, StableDiGraph};
use petgraph::visit::{EdgeIndexable, EdgeRef, NodeIndexable};
use petgraph::Direction;

use super::{Attr, FastSet, Graph, Node, NodeKind, Tensor, Value, Wire};

/// The heap blocks a removed node owns directly (its constant, outputs and attributes), out
/// of its record: what a pass hands to [`with_drop_later`] for another thread to free. 56
/// bytes on 64-bit targets, against 160 for the whole record: the batches it is moved into
/// are a third of the memory to write (and of fresh pages to clear). The names stay behind
/// ([`NodeHeap::of`] drops them): most are inline, and a long one is a single block.
#[derive(Debug)]
pub struct NodeHeap {
    pub(super) tensor: Option<Box<Tensor>>,
    pub(super) outputs: Vec<Value>,
    pub(super) attrs: Vec<(String, Attr)>,
}

impl NodeHeap {
    /// Takes `node` apart: its heap blocks are kept, the rest of the record is dropped here.
    pub fn of(node: Node) -> NodeHeap {
        NodeHeap {
            tensor: match node.kind {
                NodeKind::Const(t) => Some(t),
                _ => None,
            },
            outputs: node.outputs,
            attrs: node.attrs,
        }
    }

    /// Asks the CPU for the first line of each block: freeing a block reads and writes there.
    pub fn prefetch(&self) {
        let blocks: [*const u8; 3] = [
            self.tensor
                .as_deref()
                .map_or(std::ptr::null(), |t| (t as *const Tensor).cast()),
            self.outputs.as_ptr().cast(),
            self.attrs.as_ptr().cast(),
        ];
        for at in blocks {
            prefetch_line(at);
        }
    }
}

/// Asks the CPU to bring the cache line at `at` in (a hint: nothing is read, and no address
/// faults, null or dangling included).
fn prefetch_line(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch does not access memory architecturally and cannot fault, whatever
    // the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Runs `f` with a [`DropLater`]: what `f` gives it is dropped on rayon's pool, in batches,
/// while `f` goes on; everything is dropped when this returns. What a pass removes from a
/// large graph (nodes, their tensors, names and shapes) lies scattered over memory, and
/// freeing it cost the pass's thread a cache miss or more per allocation. `prefetch` asks for
/// what dropping an item will touch, a few items ahead. When `expected` (the number of items
/// `f` will give) is at most [`DropLater::BATCH`], everything is dropped on this thread and
/// the pool is not involved (nor started).
///
/// The batches are jobs of a [`rayon::in_place_scope`]: a thread of the pool that waits for
/// them (a model transformed in directory mode) runs them itself, so nothing waits on a busy
/// pool.
pub fn with_drop_later<T: Send + 'static, R>(
    expected: usize,
    prefetch: fn(&T),
    f: impl FnOnce(&mut DropLater<'_, '_, T>) -> R,
) -> R {
    if expected <= DropLater::<T>::BATCH {
        return f(&mut DropLater::new(None, prefetch));
    }
    rayon::in_place_scope(|scope| f(&mut DropLater::new(Some(scope), prefetch)))
}

/// Takes items to drop, for [`with_drop_later`]. The first [`DropLater::BATCH`] are dropped at
/// once, here: a small graph never wakes the pool nor allocates a batch. A batch's buffer,
/// emptied on the pool, comes back for a later batch: a new buffer per batch was fresh memory,
/// which the kernel clears page by page, and that cost as much as the frees it saved.
pub struct DropLater<'a, 's, T: Send + 'static> {
    scope: Option<&'a rayon::Scope<'s>>,
    prefetch: fn(&T),
    seen: usize,
    batch: Vec<T>,
    empty_tx: std::sync::mpsc::Sender<Vec<T>>,
    empty_rx: std::sync::mpsc::Receiver<Vec<T>>,
}

impl<T: Send + 'static> DropLater<'_, '_, T> {
    /// Items per batch handed to the pool (and items dropped here before the first batch).
    pub const BATCH: usize = 1024;

    fn new<'a, 's>(scope: Option<&'a rayon::Scope<'s>>, prefetch: fn(&T)) -> DropLater<'a, 's, T> {
        let (empty_tx, empty_rx) = std::sync::mpsc::channel();
        DropLater {
            scope,
            prefetch,
            seen: 0,
            batch: Vec::new(),
            empty_tx,
            empty_rx,
        }
    }

    /// Takes `item`: dropped now while fewer than [`DropLater::BATCH`] came before it, then
    /// with its batch, on the pool. The last batch, partly full, is dropped here when `self`
    /// is.
    pub fn push(&mut self, item: T) {
        self.seen += 1;
        let Some(scope) = self.scope.filter(|_| self.seen > Self::BATCH) else {
            drop(item);
            return;
        };
        if self.batch.capacity() == 0 {
            self.batch = self
                .empty_rx
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(Self::BATCH));
        }
        self.batch.push(item);
        if self.batch.len() >= Self::BATCH {
            let mut full = std::mem::take(&mut self.batch);
            let back = self.empty_tx.clone();
            let prefetch = self.prefetch;
            scope.spawn(move |_| {
                // Dropped from the last, what the item 4 places before owns asked for first.
                while let Some(item) = full.pop() {
                    if let Some(ahead) = full.len().checked_sub(4).and_then(|k| full.get(k)) {
                        prefetch(ahead);
                    }
                    drop(item);
                }
                // The receiver is gone once `with_drop_later` returns: the buffer is freed.
                let _ = back.send(full);
            });
        }
    }
}

/// Where a graph's node records lie, to ask the CPU for one ahead of its use: a pass that
/// visits many nodes in index order but far apart (the nodes it removes) otherwise waits for
/// memory at each. The address is computed from a record's and the size of petgraph's node
/// entry; a prefetch reads nothing and cannot fault, so a wrong address would only be a
/// useless hint.
pub(super) struct NodeRecords {
    pub(super) base: *const u8,
    pub(super) base_index: usize,
    pub(super) stride: usize,
}

impl NodeRecords {
    pub(super) fn of(g: &StableDiGraph<Node, Wire>, ix: NodeIndex) -> NodeRecords {
        NodeRecords {
            base: g
                .node_weight(ix)
                .map_or(std::ptr::null(), |n| (n as *const Node).cast()),
            base_index: ix.index(),
            stride: std::mem::size_of::<petgraph::graph::Node<Option<Node>, u32>>(),
        }
    }

    pub(super) fn prefetch(&self, ix: NodeIndex) {
        if self.base.is_null() {
            return;
        }
        let offset = (ix.index().wrapping_sub(self.base_index)).wrapping_mul(self.stride);
        let at = self.base.wrapping_add(offset);
        // Three lines from where the record starts: all of it, or all but its last bytes.
        for line in [0, 64, 128] {
            prefetch_line(at.wrapping_add(line));
        }
    }
}

/// Where a graph's edge records lie, to ask the CPU for one ahead of its use (as
/// [`NodeRecords`] for nodes): the address is computed from a record's and the size of
/// petgraph's edge entry; a wrong one would only be a useless hint.
struct EdgeRecords {
    base: *const u8,
    base_index: usize,
    stride: usize,
}

impl EdgeRecords {
    fn of(g: &StableDiGraph<Node, Wire>, e: EdgeIndex) -> EdgeRecords {
        EdgeRecords {
            base: g
                .edge_weight(e)
                .map_or(std::ptr::null(), |w| (w as *const Wire).cast()),
            base_index: e.index(),
            stride: std::mem::size_of::<petgraph::graph::Edge<Option<Wire>, u32>>(),
        }
    }

    fn prefetch(&self, e: EdgeIndex) {
        if self.base.is_null() {
            return;
        }
        let offset = (e.index().wrapping_sub(self.base_index)).wrapping_mul(self.stride);
        let at = self.base.wrapping_add(offset);
        // The record may straddle two lines.
        prefetch_line(at);
        prefetch_line(at.wrapping_add(self.stride - 1));
    }
}

impl Graph {
    /// Removes every node of `dead` with all its edges, in time linear in the graph's size
    /// however many nodes go and however they are connected (see [`Graph::remove_edges`]:
    /// their edges go first, then each node, edgeless, in constant time). Indices of the
    /// other nodes stay valid. Returns the removed nodes in index order.
    pub fn remove_nodes(&mut self, dead: &FastSet<NodeIndex>) -> Vec<(NodeIndex, Node)> {
        self.remove_node_list(dead.iter().copied().collect())
    }

    /// [`Graph::remove_nodes`] for a list of nodes (duplicates allowed).
    pub fn remove_node_list(&mut self, dead: Vec<NodeIndex>) -> Vec<(NodeIndex, Node)> {
        let mut out = Vec::new();
        self.remove_nodes_with(dead, |ix, n| out.push((ix, n)));
        out
    }

    /// [`Graph::remove_node_list`] handing each removed node to `f`, in index order, instead
    /// of collecting them.
    pub fn remove_nodes_with(
        &mut self,
        mut dead: Vec<NodeIndex>,
        mut f: impl FnMut(NodeIndex, Node),
    ) {
        if dead.is_empty() {
            return;
        }
        dead.sort_unstable();
        dead.dedup();
        let mut edges: Vec<EdgeIndex> = Vec::new();
        for &ix in &dead {
            for d in [Direction::Incoming, Direction::Outgoing] {
                edges.extend(self.g.edges_directed(ix, d).map(|e| e.id()));
            }
        }
        // An edge between two dead nodes is listed twice.
        edges.sort_unstable();
        edges.dedup();
        self.remove_edges(edges);
        let records = NodeRecords::of(&self.g, dead[0]);
        for (i, &ix) in dead.iter().enumerate() {
            if let Some(&ahead) = dead.get(i + 8) {
                records.prefetch(ahead);
            }
            if let Some(n) = self.g.remove_node(ix) {
                f(ix, n);
            }
        }
    }

    /// Removes the edges `dead`, in time linear in the graph's size however they are spread.
    ///
    /// petgraph unlinks an edge by walking its source's out-list and its target's in-list up
    /// to it. Taken source by source in out-list order, an edge costs the kept edges before it
    /// in its source's list plus at most its target's in-degree; that sum is computed first
    /// (one walk of each source's list). Within a budget of a few times the graph's size the
    /// edges are removed in place; above it (a constant shared by many kept and many removed
    /// consumers, a node with a huge fan-in) the graph is rebuilt without them in one pass,
    /// which costs a new copy of the node and edge arrays. Node indices stay valid either way.
    pub fn remove_edges(&mut self, dead: Vec<EdgeIndex>) {
        if dead.is_empty() {
            return;
        }
        // Marks by edge index: dense, unlike a hash set of a million edges.
        let mut dead_set = vec![false; self.g.edge_bound()];
        let mut marked = 0usize;
        for &e in &dead {
            if let Some(m) = dead_set.get_mut(e.index()) {
                marked += usize::from(!*m);
                *m = true;
            }
        }
        let is_dead = |e: EdgeIndex| dead_set.get(e.index()).copied().unwrap_or(false);
        // The endpoints, each once, in index order: marked by node index (a byte a node, where
        // a list of every edge's endpoints, sorted and deduplicated, was eight bytes a removed
        // edge of fresh memory and a sort).
        const SOURCE: u8 = 1;
        const TARGET: u8 = 2;
        let mut ends = vec![0u8; self.g.node_bound()];
        for &e in &dead {
            if let Some((s, t)) = self.g.edge_endpoints(e) {
                ends[s.index()] |= SOURCE;
                ends[t.index()] |= TARGET;
            }
        }
        // Marked: the list goes before the removal order is built (as long as it, where
        // `fold` calls this at the peak of a run: 2 MB on wide_sym_100k.onnx).
        drop(dead);
        let marked_with = |bit: u8| {
            ends.iter()
                .enumerate()
                .filter(move |&(_, &m)| m & bit != 0)
                .map(|(i, _)| NodeIndex::new(i))
        };
        let targets = marked_with(TARGET);
        let sources = marked_with(SOURCE);
        let budget = 4 * (self.g.node_count() + self.g.edge_count()) + 1024;
        let mut cost = 0usize;
        for t in targets {
            let d = self.g.edges_directed(t, Direction::Incoming).count();
            cost = cost.saturating_add(d.saturating_mul(d));
        }
        let mut order = Vec::with_capacity(marked);
        if cost <= budget {
            'walk: for s in sources {
                let mut kept_before = 0usize;
                for e in self.g.edges_directed(s, Direction::Outgoing) {
                    if is_dead(e.id()) {
                        cost = cost.saturating_add(kept_before);
                        order.push(e.id());
                    } else {
                        kept_before += 1;
                    }
                    if cost > budget {
                        break 'walk;
                    }
                }
            }
        }
        if cost <= budget {
            // Each removal reads the edge's record and its target's (to walk the in-list):
            // both asked for ahead, the edge 16 removals ahead, the target 8 ahead (read
            // from the edge's record, by then in the cache). Scattered over a graph larger
            // than the cache, they were most of this loop's time (`fold` on wide_sym_100k).
            if let Some(&first) = order.first() {
                let edges_at = EdgeRecords::of(&self.g, first);
                let nodes_at = NodeRecords::of(
                    &self.g,
                    self.g
                        .edge_endpoints(first)
                        .map_or(NodeIndex::end(), |(_, t)| t),
                );
                for (i, &e) in order.iter().enumerate() {
                    if let Some(&ahead) = order.get(i + 16) {
                        edges_at.prefetch(ahead);
                    }
                    if let Some((_, t)) = order.get(i + 8).and_then(|&n| self.g.edge_endpoints(n)) {
                        nodes_at.prefetch(t);
                    }
                    self.g.remove_edge(e);
                }
            }
            return;
        }
        let g = std::mem::take(&mut self.g);
        self.g = g.filter_map_owned(|_, n| Some(n), |e, w| (!is_dead(e)).then_some(w));
    }

    /// Unlinks edge `e` lazily: it stays in petgraph's lists, marked [`Wire::DETACHED`] and
    /// invisible to every accessor of this type ([`Graph::input`], [`Graph::inputs`],
    /// [`Graph::consumers`], [`Graph::redirect`], [`Graph::replace_node`]), until [`Graph::flush_detached`]
    /// removes all such edges at once. petgraph unlinks an edge by walking its source's
    /// out-list up to it, so removing, one by one, the edges of a value read by `K` rewritten
    /// nodes costs `K²`; batched it costs the size of the graph.
    pub fn detach_edge(&mut self, e: EdgeIndex) {
        if let Some(w) = self.g.edge_weight_mut(e) {
            if w.dst_port != Wire::DETACHED {
                w.dst_port = Wire::DETACHED;
                self.detached.push(e);
            }
        }
    }

    /// Removes node `ix` lazily: its edges are detached ([`Graph::detach_edge`]) and the node,
    /// isolated, is removed by [`Graph::flush_detached`]; until then [`Graph::is_live`] is
    /// false for it.
    pub fn remove_node_lazily(&mut self, ix: NodeIndex) {
        if self.g.node_weight(ix).is_none() {
            return;
        }
        let edges: Vec<EdgeIndex> = [Direction::Incoming, Direction::Outgoing]
            .into_iter()
            .flat_map(|d| self.g.edges_directed(ix, d).map(|e| e.id()))
            .collect();
        for e in edges {
            self.detach_edge(e);
        }
        self.doomed.insert(ix);
    }

    /// Whether `ix` is a node of the graph (not removed, not removed lazily).
    pub fn is_live(&self, ix: NodeIndex) -> bool {
        self.g.node_weight(ix).is_some() && !self.doomed.contains(&ix)
    }

    /// Removes every edge detached and every node removed lazily since the last flush, in
    /// time linear in the graph's size ([`Graph::remove_edges`]). The passes that rewrite
    /// nodes one by one ([`Graph::redirect`], [`Graph::replace_node`]) call it before they
    /// return; code that reads `g` directly after such calls must call it first.
    pub fn flush_detached(&mut self) {
        let mut dead = std::mem::take(&mut self.detached);
        // An index whose edge went another way (a node removed with its edges) may have been
        // reused by a live edge since.
        dead.retain(|&e| {
            self.g
                .edge_weight(e)
                .is_some_and(|w| w.dst_port == Wire::DETACHED)
        });
        dead.sort_unstable();
        dead.dedup();
        self.remove_edges(dead);
        let mut doomed: Vec<NodeIndex> = std::mem::take(&mut self.doomed).into_iter().collect();
        doomed.sort_unstable();
        for ix in doomed {
            self.g.remove_node(ix);
        }
    }
}
