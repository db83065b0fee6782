//! Time of whole-graph shape propagation per node (issue 17, acceptance 4).
//!
//! Run: `cargo run --release --example propagation_bench -- nodes_1k.onnx nodes_10k.onnx ...`
//! (the models of `bench/gen_models.py`). Prints, per model, the best of 5 runs of
//! `slice_opt::shape::propagate` and that time per graph node.

use std::time::Instant;

use slice_opt::Model;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("| model | nodes | propagate (ms, best of 5) | µs / node | ranks known |");
    println!("|---|---:|---:|---:|---:|");
    for path in std::env::args().skip(1) {
        let model = Model::load(path.as_ref())?;
        let nodes = model.graph().g.node_count();
        let mut best = f64::INFINITY;
        let mut known = 0;
        let mut total = 0;
        for _ in 0..5 {
            let t = Instant::now();
            let facts = slice_opt::shape::propagate(&model)?;
            best = best.min(t.elapsed().as_secs_f64());
            (known, total) = (0, 0);
            for ix in model.graph().g.node_indices() {
                for f in facts.outputs(ix) {
                    total += 1;
                    known += usize::from(f.shape.is_some());
                }
            }
            drop(facts);
        }
        println!(
            "| {} | {nodes} | {:.1} | {:.2} | {known}/{total} |",
            std::path::Path::new(&path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or(path.clone()),
            best * 1e3,
            best * 1e6 / nodes as f64
        );
    }
    Ok(())
}
