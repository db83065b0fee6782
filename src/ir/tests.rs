//! Tests of the graph IR.

use petgraph::stable_graph::NodeIndex;
use petgraph::visit::{EdgeRef, IntoEdgeReferences, NodeIndexable};
use petgraph::Direction;

use super::remove::NodeRecords;
use super::topo::RankSet;
use super::*;

/// `with_drop_later` has dropped every item when it returns: the first batch at once,
/// the rest on the pool, the remainder with the `DropLater`.
#[test]
fn drop_later_drops_everything() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    let batch = DropLater::<Counted>::BATCH;
    let total = 5 * batch + 17;
    with_drop_later(
        total,
        |_| {},
        |later| {
            for i in 0..total {
                later.push(Counted(dropped.clone()));
                if i + 1 == batch {
                    assert_eq!(
                        dropped.load(Ordering::SeqCst),
                        batch,
                        "the first batch, at once"
                    );
                }
            }
        },
    );
    assert_eq!(dropped.load(Ordering::SeqCst), total);
    // Fewer expected than a batch: all on this thread, even if more come.
    let dropped = Arc::new(AtomicUsize::new(0));
    with_drop_later(
        10,
        |_| {},
        |later| {
            for i in 0..total {
                later.push(Counted(dropped.clone()));
                assert_eq!(dropped.load(Ordering::SeqCst), i + 1);
            }
        },
    );
    // From a thread of the pool, with every other thread of the pool busy waiting too.
    let dropped = Arc::new(AtomicUsize::new(0));
    let threads = rayon::current_num_threads();
    rayon::scope(|s| {
        for _ in 0..threads {
            let dropped = dropped.clone();
            s.spawn(move |_| {
                with_drop_later(
                    total,
                    |_| {},
                    |later| {
                        for _ in 0..total {
                            later.push(Counted(dropped.clone()));
                        }
                    },
                )
            });
        }
    });
    assert_eq!(dropped.load(Ordering::SeqCst), threads * total);
}

/// `NodeHeap::of` moves a node's heap blocks (the same allocations, not copies) and is
/// a third of a record.
#[test]
fn node_heap_keeps_the_blocks_of_the_node() {
    let mut n = Node::op("c", "", "");
    let t = Tensor::from_i64(vec![3], &[1, 2, 3]);
    n.kind = NodeKind::Const(Box::new(t.clone()));
    n.outputs = vec![Value {
        name: "c:0".into(),
        ..Value::default()
    }];
    n.attrs = vec![("axis".into(), Attr::Int(1))];
    let blocks = |n: &Node| {
        (
            match &n.kind {
                NodeKind::Const(t) => (&**t as *const Tensor) as usize,
                _ => 0,
            },
            n.outputs.as_ptr() as usize,
            n.attrs.as_ptr() as usize,
        )
    };
    let before = blocks(&n);
    let heap = NodeHeap::of(n);
    let after = (
        heap.tensor
            .as_deref()
            .map_or(0, |t| t as *const Tensor as usize),
        heap.outputs.as_ptr() as usize,
        heap.attrs.as_ptr() as usize,
    );
    assert_eq!(before, after);
    assert_eq!(heap.tensor.as_deref(), Some(&t));
    assert_eq!(heap.outputs[0].name, "c:0");
    assert_eq!(heap.attrs, vec![("axis".to_string(), Attr::Int(1))]);
    #[cfg(target_pointer_width = "64")]
    assert_eq!(std::mem::size_of::<NodeHeap>(), 56);
}

/// The prefetch of `remove_nodes_with` computes a record's address from another's and
/// the size of petgraph's node entry: that is where the records are.
#[test]
fn node_records_are_where_the_prefetch_looks() {
    let mut g = Graph::new();
    let ix: Vec<NodeIndex> = (0..5)
        .map(|i| g.add_node(Node::op(format!("n{i}"), "Relu", "")))
        .collect();
    let records = NodeRecords::of(&g.g, ix[1]);
    for &k in &ix {
        let at = records.base.wrapping_add(
            (k.index().wrapping_sub(records.base_index)).wrapping_mul(records.stride),
        );
        assert_eq!(
            at,
            (&g.g[k] as *const Node).cast::<u8>(),
            "node {}",
            k.index()
        );
    }
}

/// An edge stores its ports in 32 bits (8 bytes, 28 in petgraph's edge list instead of
/// 40), and ports past 16 bits read back as written through every accessor.
#[test]
fn wires_are_compact_and_wide_ports_read_back() {
    assert_eq!(std::mem::size_of::<Wire>(), 8);
    assert_eq!(std::mem::size_of::<Option<Wire>>(), 12);
    let mut g = Graph::new();
    let mut a = Node::op("a", "Split", "");
    a.outputs = vec![Value::default(); 70_001];
    let a = g.add_node(a);
    let mut b = Node::op("b", "Concat", "");
    b.num_inputs = 65_538;
    let b = g.add_node(b);
    let from = OutletId {
        node: a,
        port: 70_000,
    };
    g.connect(from, b, 65_537);
    assert_eq!(g.input(b, 65_537), Some(from));
    assert_eq!(g.input(b, 1), None);
    assert_eq!(g.inputs(b)[65_537], Some(from));
    assert_eq!(g.consumers(from), vec![(b, 65_537)]);
    assert_eq!(
        g.consumers(OutletId {
            node: a,
            port: 4464
        }),
        vec![]
    );
    let w = *g.g.edge_weights().next().unwrap();
    assert_eq!((w.src_port, w.dst_port), (70_000, 65_537));
}

/// A seeded generator for the graph tests: `rand(n)` is below `n` (0 for `n` = 0).
fn lcg(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n.max(1)
    }
}

/// `topo_order` is the topological order that takes, at each step, the ready node of
/// smallest (order key, index), and refuses a cycle (self-loops included). Checked against
/// that definition, computed the slow way, on 3,000 small graphs: keys in index order
/// (a graph as loaded), keys shuffled, nodes removed, edges backwards.
#[test]
fn topo_order_is_the_smallest_key_first_order_and_refuses_cycles() {
    let mut rand = lcg(0x9e37_79b9_7f4a_7c15);
    let (mut acyclic, mut cyclic) = (0, 0);
    for case in 0..3000 {
        let n = 1 + rand(9) as usize;
        let shuffled = case % 3 == 1;
        let mut g = Graph::new();
        let ix: Vec<NodeIndex> = (0..n)
            .map(|i| {
                let mut node = Node::op(format!("n{i}"), "Op", "");
                node.order = if shuffled {
                    (rand(3) as u32, rand(4) as u32)
                } else {
                    (1, i as u32)
                };
                g.add_node(node)
            })
            .collect();
        for _ in 0..rand(2 * n as u64 + 1) {
            let (a, b) = (rand(n as u64) as usize, rand(n as u64) as usize);
            // Mostly forward edges; a backward edge or a self-loop now and then.
            let (a, b) = if a < b || rand(8) == 0 {
                (a, b)
            } else {
                (b, a)
            };
            if a != b || rand(4) == 0 {
                g.connect(
                    OutletId {
                        node: ix[a],
                        port: 0,
                    },
                    ix[b],
                    0,
                );
            }
        }
        if case % 3 == 2 && n > 1 {
            g.g.remove_node(ix[rand(n as u64) as usize]);
        }
        // The definition, slowly.
        let mut done: Vec<NodeIndex> = Vec::new();
        let mut want = Some(loop {
            let ready =
                g.g.node_indices()
                    .filter(|v| !done.contains(v))
                    .filter(|&v| {
                        g.g.edges_directed(v, Direction::Incoming)
                            .all(|e| done.contains(&e.source()))
                    })
                    .min_by_key(|&v| (g.g[v].order, v.index()));
            match ready {
                Some(v) => done.push(v),
                None => break done.clone(),
            }
        });
        if want.as_ref().map(Vec::len) != Some(g.g.node_count()) {
            want = None;
        }
        match (g.topo_order(), want) {
            (Ok(got), Some(want)) => {
                assert_eq!(got, want, "case {case}");
                acyclic += 1;
            }
            (Err(_), None) => cyclic += 1,
            (got, want) => panic!("case {case}: {got:?} against {want:?}"),
        }
    }
    assert!(
        acyclic > 1000 && cyclic > 300,
        "{acyclic} acyclic, {cyclic} cyclic"
    );
}

/// `RankSet` against `BTreeSet` under random inserts and removals of the smallest, on sizes
/// around each level's boundary (one word, one summary word, three levels).
#[test]
fn rank_set_gives_the_smallest_rank() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rand = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    for n in [1usize, 2, 63, 64, 65, 4095, 4096, 4097, 262_145, 300_000] {
        let mut set = RankSet::new(n);
        let mut want = std::collections::BTreeSet::new();
        for _ in 0..20_000 {
            if rand(3) == 0 {
                assert_eq!(set.pop_min(), want.pop_first(), "n {n}");
            } else {
                // Near the end of the range as often as anywhere else.
                let r = if rand(2) == 0 {
                    rand(n as u64) as usize
                } else {
                    n - 1 - (rand(n.min(100) as u64) as usize)
                };
                set.insert(r);
                want.insert(r);
            }
        }
        while let Some(w) = want.pop_first() {
            assert_eq!(set.pop_min(), Some(w), "n {n}");
        }
        assert_eq!(set.pop_min(), None, "n {n}");
    }
}

/// On graphs large enough for every level of `RankSet` (up to 20,000 nodes, keys shuffled
/// so the fast paths do not apply), `topo_order` is the smallest-key-first order a binary
/// heap gives.
#[test]
fn topo_order_of_large_shuffled_graphs_is_the_heap_order() {
    let mut rand = lcg(0x9e37_79b9_7f4a_7c15);
    for n in [100usize, 5_000, 20_000] {
        let mut g = Graph::new();
        let ix: Vec<NodeIndex> = (0..n)
            .map(|i| {
                let mut node = Node::op(format!("n{i}"), "Op", "");
                node.order = (rand(4) as u32, rand(n as u64) as u32);
                g.add_node(node)
            })
            .collect();
        for _ in 0..2 * n {
            let (a, b) = (rand(n as u64) as usize, rand(n as u64) as usize);
            if a != b {
                let (a, b) = (a.min(b), a.max(b));
                g.connect(
                    OutletId {
                        node: ix[a],
                        port: 0,
                    },
                    ix[b],
                    0,
                );
            }
        }
        // The reference: Kahn's algorithm with a binary heap of (key, index).
        let mut indegree = vec![0usize; g.g.node_bound()];
        for e in g.g.edge_references() {
            indegree[e.target().index()] += 1;
        }
        let mut heap: std::collections::BinaryHeap<_> =
            g.g.node_indices()
                .filter(|v| indegree[v.index()] == 0)
                .map(|v| std::cmp::Reverse((g.g[v].order, v.index())))
                .collect();
        let mut want = Vec::new();
        while let Some(std::cmp::Reverse((_, i))) = heap.pop() {
            want.push(NodeIndex::new(i));
            for e in g.g.edges_directed(NodeIndex::new(i), Direction::Outgoing) {
                let t = e.target();
                indegree[t.index()] -= 1;
                if indegree[t.index()] == 0 {
                    heap.push(std::cmp::Reverse((g.g[t].order, t.index())));
                }
            }
        }
        assert_eq!(want.len(), n);
        assert_eq!(g.topo_order().expect("acyclic"), want, "n {n}");
    }
}

/// A node record holds its positions and input count in 32 bits: every pass reads every
/// record, and a 600,000-node graph's records are larger than the cache (issue 19). On
/// 64-bit targets: five 24-byte names and vectors, the 16-byte kind, then 8 bytes each for
/// the order key and the origin, and the input count and flag in the last 8.
#[test]
#[cfg(target_pointer_width = "64")]
fn a_node_record_is_compact() {
    assert_eq!(std::mem::size_of::<Origin>(), 8);
    assert_eq!(std::mem::size_of::<(u32, u32)>(), 8);
    assert!(
        std::mem::size_of::<Node>() <= 5 * 24 + 16 + 8 + 8 + 8,
        "Node is {} bytes",
        std::mem::size_of::<Node>()
    );
}

/// An attribute is no larger than its largest unboxed payload (a `Vec` or `String`) and a
/// tag: a 600,000-layer IR model holds over two million of them (issue 19).
#[test]
fn an_attribute_is_a_vec_and_a_tag() {
    let word = std::mem::size_of::<usize>();
    assert!(
        std::mem::size_of::<Attr>() <= std::mem::size_of::<Vec<i64>>() + word,
        "Attr is {} bytes",
        std::mem::size_of::<Attr>()
    );
}

/// `unique_name` never returns a name a node or value of the graph has, nor one it returned
/// before, however the graph was built (the loaders reserve nothing).
#[test]
fn unique_names_avoid_the_graph_and_each_other() {
    let mut g = Graph::new();
    let mut n = Node::op("node_a", "Neg", "");
    n.outputs = vec![Value {
        name: "value_b".into(),
        ..Value::default()
    }];
    g.add_node(n);
    let a = g.unique_name("node_a");
    let b = g.unique_name("value_b");
    assert!(a != "node_a" && a.starts_with("node_a"), "{a}");
    assert!(b != "value_b" && b.starts_with("value_b"), "{b}");
    assert_eq!(g.unique_name("c"), "c");
    let c2 = g.unique_name("c");
    assert!(c2 != "c" && c2.starts_with('c'), "{c2}");
    // A node added after the first call: its name is reserved by whoever named it.
    g.reserve_name("late");
    assert_ne!(g.unique_name("late"), "late");
}

/// `remove_nodes` drops the nodes and every edge touching them, and leaves the other nodes
/// at their indices with their edges.
#[test]
fn remove_nodes_keeps_the_rest() {
    let mut g = Graph::new();
    let c = g.add_node(Node::op("c", "Const", ""));
    let users: Vec<_> = (0..5)
        .map(|i| {
            let mut n = Node::op(format!("u{i}"), "Neg", "");
            n.num_inputs = 1;
            let u = g.add_node(n);
            g.connect(OutletId { node: c, port: 0 }, u, 0);
            u
        })
        .collect();
    let mut n = Node::op("sink", "Sum", "");
    n.num_inputs = 5;
    let sink = g.add_node(n);
    for (k, &u) in users.iter().enumerate() {
        g.connect(OutletId { node: u, port: 0 }, sink, k);
    }
    let dead: FastSet<_> = [users[1], users[3]].into_iter().collect();
    let removed = g.remove_nodes(&dead);
    let names: Vec<_> = removed.iter().map(|(_, n)| n.name.as_str()).collect();
    assert_eq!(names, ["u1", "u3"]);
    assert_eq!(g.g.node_count(), 5);
    assert_eq!(g.g.edge_count(), 6);
    for &u in &[users[0], users[2], users[4]] {
        assert_eq!(
            g.node(u).name,
            format!("u{}", users.iter().position(|&x| x == u).unwrap())
        );
        assert_eq!(g.input(u, 0), Some(OutletId { node: c, port: 0 }));
    }
    assert_eq!(g.consumers(OutletId { node: c, port: 0 }).len(), 3);
    let ports: Vec<_> = g.inputs(sink).iter().map(|o| o.map(|o| o.node)).collect();
    assert_eq!(
        ports,
        vec![Some(users[0]), None, Some(users[2]), None, Some(users[4])]
    );
    assert!(g.g.node_weight(users[1]).is_none());
}

/// An incoming edge as `(source index, src_port, dst_port)`.
type InEdge = (usize, usize, usize);

/// A hub with `kept` consumers it keeps and `dead` it loses, every other one, and the edge
/// list of each consumer afterwards (sorted: `(source, src_port, dst_port)`).
fn hub_after_removal(kept: usize, dead: usize) -> (Graph, Vec<Vec<InEdge>>) {
    let mut g = Graph::new();
    let hub = g.add_node(Node::op("hub", "Const", ""));
    let mut gone = Vec::new();
    let mut users = Vec::new();
    for i in 0..kept + dead {
        let mut n = Node::op(format!("u{i}"), "Neg", "");
        n.num_inputs = 2;
        let u = g.add_node(n);
        users.push(u);
        g.connect(OutletId { node: hub, port: 0 }, u, 1);
        let e = g.connect(OutletId { node: hub, port: 0 }, u, 0);
        if i % 2 == 1 && gone.len() < dead {
            gone.push(e);
        }
    }
    g.remove_edges(gone);
    let lists = users
        .iter()
        .map(|&u| {
            let mut l: Vec<_> =
                g.g.edges_directed(u, Direction::Incoming)
                    .map(|e| {
                        (
                            e.source().index(),
                            e.weight().src_port as usize,
                            e.weight().dst_port as usize,
                        )
                    })
                    .collect();
            l.sort_unstable();
            l
        })
        .collect();
    (g, lists)
}

/// `remove_edges` removes exactly the listed edges, whether it unlinks them in place (few
/// kept consumers) or rebuilds the graph (a hub with thousands of kept and removed
/// consumers: in place would be quadratic); node indices do not move.
#[test]
fn remove_edges_removes_exactly_those_edges_in_place_or_rebuilt() {
    for (kept, dead) in [(3, 3), (4000, 4000)] {
        let (g, lists) = hub_after_removal(kept, dead);
        assert_eq!(g.g.node_count(), 1 + kept + dead);
        assert_eq!(g.g.edge_count(), 2 * (kept + dead) - dead);
        for (i, l) in lists.iter().enumerate() {
            let want: &[InEdge] = if i % 2 == 1 && i / 2 < dead {
                &[(0, 0, 1)]
            } else {
                &[(0, 0, 0), (0, 0, 1)]
            };
            assert_eq!(l, want, "consumer u{i} ({kept} kept, {dead} removed)");
            assert_eq!(g.node(NodeIndex::new(i + 1)).name, format!("u{i}"));
        }
    }
}

/// `replace_node` on every consumer of a shared hub (what `raise` and `lower` do to slices
/// that share a constant parameter): before the flush the graph's accessors see only the
/// new inputs, after it the petgraph lists hold exactly them; the node takes the old
/// one's index and consumers, and a node removed lazily is gone after the flush.
#[test]
fn replace_node_defers_unlinking_until_the_flush() {
    let mut g = Graph::new();
    let x = g.add_node(Node::op("x", "Input", ""));
    let hub = g.add_node(Node::op("hub", "Const", ""));
    let at = |node| OutletId { node, port: 0 };
    let mut olds = Vec::new();
    let mut sinks = Vec::new();
    for i in 0..50 {
        let mut n = Node::op(format!("s{i}"), "Slice", "");
        n.num_inputs = 2;
        let s = g.add_node(n);
        g.connect(at(x), s, 0);
        g.connect(at(hub), s, 1);
        let mut t = Node::op(format!("t{i}"), "Neg", "");
        t.num_inputs = 1;
        let t = g.add_node(t);
        g.connect(at(s), t, 0);
        olds.push(s);
        sinks.push(t);
    }
    let mut fresh = Vec::new();
    for (i, &s) in olds.iter().enumerate() {
        let c = g.add_node(Node::op(format!("c{i}"), "Const", ""));
        let mut n = Node::op(format!("r{i}"), "StridedSlice", "");
        n.num_inputs = 2;
        let r = g.add_node(n);
        g.connect(at(x), r, 0);
        g.connect(at(c), r, 1);
        assert_eq!(g.replace_node(s, r), s);
        fresh.push(c);
    }
    // The last sink is removed lazily: its edge goes, its index stays until the flush.
    g.remove_node_lazily(sinks[49]);
    assert!(!g.is_live(sinks[49]));
    let check = |g: &Graph| {
        assert!(g.consumers(at(hub)).is_empty());
        assert_eq!(g.consumers(at(x)).len(), 50);
        for (i, &s) in olds.iter().enumerate() {
            assert_eq!(g.node(s).name, format!("r{i}"));
            assert_eq!(g.inputs(s), vec![Some(at(x)), Some(at(fresh[i]))]);
            let want: Vec<(NodeIndex, usize)> = if i < 49 { vec![(sinks[i], 0)] } else { vec![] };
            assert_eq!(g.consumers(at(s)), want);
        }
    };
    check(&g);
    g.flush_detached();
    check(&g);
    assert!(g.g.node_weight(sinks[49]).is_none());
    // x: 50 slices; each slice: its constant; 49 sinks.
    assert_eq!(g.g.edge_count(), 50 + 50 + 49);
    assert!(g.g.edge_weights().all(|w| w.dst_port != Wire::DETACHED));
    assert_eq!(g.g.node_count(), 2 + 50 + 49 + 50);
}

/// [`Graph::slots`] names the bytes of each node and edge entry: the span of entry `i` holds
/// the record `node_weight(i)` / `edge_weight(i)` points to, and the spans of consecutive
/// entries follow one another.
#[test]
fn slots_span_the_records_of_nodes_and_edges() {
    let mut g = Graph::with_capacity(64, 64);
    assert!(g.slots().is_none(), "no node: no address");
    let ix: Vec<NodeIndex> = (0..40)
        .map(|i| g.add_node(Node::op(format!("n{i}"), "Relu", "")))
        .collect();
    assert!(g.slots().is_some_and(|s| s.edges(0, 1).is_none()));
    for w in ix.windows(2) {
        g.connect(
            OutletId {
                node: w[0],
                port: 0,
            },
            w[1],
            0,
        );
    }
    let slots = g.slots().expect("nodes");
    let inside = |(at, len): (usize, usize), p: usize, size: usize| at <= p && p + size <= at + len;
    for (i, &n) in ix.iter().enumerate() {
        let p = g.node(n) as *const Node as usize;
        assert!(
            inside(slots.nodes(i, i + 1), p, std::mem::size_of::<Node>()),
            "node {i}"
        );
        let (at, len) = slots.nodes(i, i + 2);
        assert_eq!(
            (at, len / 2),
            slots.nodes(i, i + 1),
            "node {i}: consecutive"
        );
        assert_eq!(at + len / 2, slots.nodes(i + 1, i + 2).0);
    }
    for e in 0..ix.len() - 1 {
        let w =
            g.g.edge_weight(petgraph::stable_graph::EdgeIndex::new(e))
                .expect("edge");
        let p = w as *const Wire as usize;
        let span = slots.edges(e, e + 1).expect("edges");
        assert!(inside(span, p, std::mem::size_of::<Wire>()), "edge {e}");
    }
}
