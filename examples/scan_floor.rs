//! The memory floor under the per-node time of a pass (issue 19, acceptance 2: per-node time
//! of every pass flat within 1.5x from 1k to 100k chains).
//!
//! Run: `cargo run --release --example scan_floor -- nodes_1k.onnx nodes_10k.onnx
//! nodes_100k.onnx` (the models of `bench/gen_models.py`). For each model it times, best of 9,
//! the least work a pass that looks at every node does, with nothing else:
//! - `records`: read three fields of every node record (kind, number of outputs, order key),
//!   in index order;
//! - `records + inputs`: the same, and for each node the sources of its input edges (what
//!   `cleanup` and `fold` must look at).
//!
//! and prints the time per graph node and its ratio to the first model's. A model of 1,000
//! chains fits in the CPU's caches; one of 100,000 does not, so these ratios are what memory
//! alone adds per node when a graph grows, before any pass does its work.

use std::hint::black_box;
use std::time::Instant;

use petgraph::visit::{EdgeRef, IntoNodeReferences};
use petgraph::Direction;
use slice_opt::ir::{Node, NodeKind};
use slice_opt::Model;

fn best_of<F: FnMut() -> u64>(reps: usize, mut f: F) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

/// Three fields of a node record: its kind, its number of outputs, its order key.
fn read(n: &Node) -> u64 {
    u64::from(matches!(n.kind, NodeKind::Op))
        .wrapping_add(n.outputs.len() as u64)
        .wrapping_add(u64::from(n.order.0))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("| model | graph nodes | records (ns / node) | ratio | records + inputs (ns / node) | ratio |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut first: Option<(f64, f64)> = None;
    for path in std::env::args().skip(1) {
        let model = Model::load(path.as_ref())?;
        let g = &model.graph().g;
        let nodes = g.node_count().max(1);
        let records = best_of(9, || {
            let mut acc = 0u64;
            for (_, n) in g.node_references() {
                acc = acc.wrapping_add(read(n));
            }
            acc
        });
        let inputs = best_of(9, || {
            let mut acc = 0u64;
            for (ix, n) in g.node_references() {
                acc = acc.wrapping_add(read(n));
                for e in g.edges_directed(ix, Direction::Incoming) {
                    acc = acc.wrapping_add(e.source().index() as u64);
                }
            }
            acc
        });
        let per = |s: f64| s * 1e9 / nodes as f64;
        let (r0, i0) = *first.get_or_insert((per(records), per(inputs)));
        let name = std::path::Path::new(&path)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        println!(
            "| {name} | {nodes} | {:.1} | {:.1}x | {:.1} | {:.1}x |",
            per(records),
            per(records) / r0,
            per(inputs),
            per(inputs) / i0
        );
    }
    Ok(())
}
