//! Using slice-opt inside a converter pipeline: after exporting a model, infer slice shapes, fold
//! constant slices, gate on `check`, and save.
//!
//! Run: `cargo run --example converter -- models/const_weight_slice.onnx /tmp/converted.onnx`

use slice_opt::check::check;
use slice_opt::{Model, Pipeline};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let input = args
        .next()
        .unwrap_or_else(|| "models/const_weight_slice.onnx".into());
    let output = args.next().unwrap_or_else(|| {
        std::env::temp_dir()
            .join("converted.onnx")
            .display()
            .to_string()
    });

    // The converter's own export step would produce `input`; here we just load it.
    let mut model = Model::load(input.as_ref())?;
    let report = Pipeline::new().run(&mut model)?;
    for pass in &report.passes {
        for c in &pass.changes {
            println!("{:8} {} ({}): {}", pass.pass.name(), c.node, c.op, c.what);
        }
    }
    // Refuse to ship a model whose declared slice shapes are wrong.
    let verdicts = check(&model);
    if !verdicts.passed() {
        return Err(format!("{} has slice shape problems", input).into());
    }
    model.save(output.as_ref())?;
    println!("wrote {output}");
    Ok(())
}
