//! End-to-end verification of a transformed ONNX model: the original and the transformed model
//! run in tract-onnx on the same seeded random inputs, and every output must match.
//!
//! Symbolic input dims are bound to small sizes (each name to the same size everywhere), element
//! types are respected. A model tract cannot run (for example an ONNX `Loop`, which tract-onnx
//! 0.23 does not implement) is reported as not verified — never as verified.

use std::collections::HashMap;
use std::path::Path;

use prost::Message;
use tract_onnx::prelude::*;

use crate::formats::onnx::OnnxModel;
use crate::ir::{DType, DeclaredDim, NodeKind};

/// The outcome of [`verify_onnx`].
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub enum Verification {
    /// Every output matched on every run.
    Passed { runs: usize, outputs: usize },
    /// An output differed: what and where.
    Failed(String),
    /// Verification could not run (tract cannot load or run the original).
    NotVerified(String),
}

/// Size a symbolic or unknown input dim is bound to.
pub const SYMBOL_SIZE: usize = 3;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn random_inputs(model: &OnnxModel, seed: u64) -> Result<Vec<Tensor>, String> {
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let mut sizes: HashMap<String, usize> = HashMap::new();
    let g = &model.graph;
    let mut inputs: Vec<_> =
        g.g.node_weights()
            .filter(|n| n.kind == NodeKind::Input)
            .collect();
    inputs.sort_by_key(|n| n.order);
    let mut out = Vec::new();
    for n in inputs {
        let ty = &n.outputs[0].ty;
        let shape: Vec<usize> = ty
            .shape
            .as_ref()
            .ok_or_else(|| format!("input '{}' has no declared shape", n.name))?
            .iter()
            .map(|d| match d {
                DeclaredDim::Known(v) => *v as usize,
                DeclaredDim::Param(p) => *sizes.entry(p.clone()).or_insert(SYMBOL_SIZE),
                _ => SYMBOL_SIZE,
            })
            .collect();
        let count: usize = shape.iter().product();
        let t = match ty.dtype.unwrap_or(DType::F32) {
            DType::F32 => Tensor::from_shape(
                &shape,
                &(0..count)
                    .map(|_| (rng.next() % 2000) as f32 / 1000.0 - 1.0)
                    .collect::<Vec<f32>>(),
            ),
            DType::F64 => Tensor::from_shape(
                &shape,
                &(0..count)
                    .map(|_| (rng.next() % 2000) as f64 / 1000.0 - 1.0)
                    .collect::<Vec<f64>>(),
            ),
            DType::I64 => Tensor::from_shape(
                &shape,
                &(0..count)
                    .map(|_| (rng.next() % 4) as i64)
                    .collect::<Vec<i64>>(),
            ),
            DType::I32 => Tensor::from_shape(
                &shape,
                &(0..count)
                    .map(|_| (rng.next() % 4) as i32)
                    .collect::<Vec<i32>>(),
            ),
            DType::Bool => Tensor::from_shape(
                &shape,
                &(0..count)
                    .map(|_| rng.next() % 2 == 0)
                    .collect::<Vec<bool>>(),
            ),
            other => {
                return Err(format!(
                    "input '{}' has element type {other:?}, which verification does not generate",
                    n.name
                ))
            }
        }
        .map_err(|e| format!("{e:#}"))?;
        out.push(t);
    }
    Ok(out)
}

fn run(bytes: &[u8], dir: &Path, inputs: &[Tensor]) -> TractResult<TVec<TValue>> {
    let proto = tract_onnx::pb::ModelProto::decode(bytes)?;
    let onnx = tract_onnx::onnx();
    let mut model = onnx.parse(&proto, dir.to_str())?.model;
    for (i, t) in inputs.iter().enumerate() {
        model.set_input_fact(i, InferenceFact::from(t.clone()).without_value())?;
    }
    let runnable = model.into_optimized()?.into_runnable()?;
    runnable.run(inputs.iter().cloned().map(TValue::from).collect())
}

fn same(a: &TValue, b: &TValue) -> Result<(), String> {
    if a.shape() != b.shape() {
        return Err(format!("shape {:?} vs {:?}", a.shape(), b.shape()));
    }
    if a.datum_type() != b.datum_type() {
        return Err(format!("type {:?} vs {:?}", a.datum_type(), b.datum_type()));
    }
    let fa = a
        .clone()
        .into_tensor()
        .cast_to::<f64>()
        .map(|t| t.into_owned());
    let fb = b
        .clone()
        .into_tensor()
        .cast_to::<f64>()
        .map(|t| t.into_owned());
    match (fa, fb) {
        (Ok(fa), Ok(fb)) => {
            let va = fa
                .to_plain_array_view::<f64>()
                .map_err(|e| format!("{e:#}"))?;
            let vb = fb
                .to_plain_array_view::<f64>()
                .map_err(|e| format!("{e:#}"))?;
            for (i, (x, y)) in va.iter().zip(vb.iter()).enumerate() {
                let equal = (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-5 + 1e-5 * y.abs();
                if !equal {
                    return Err(format!("element {i}: {x} vs {y}"));
                }
            }
            Ok(())
        }
        _ => {
            if a == b {
                Ok(())
            } else {
                Err("values differ".into())
            }
        }
    }
}

/// Runs `original` and `transformed` in tract on `runs` seeded random input sets and compares
/// every output. External data is read from the original model's directory.
pub fn verify_onnx(
    original: &OnnxModel,
    transformed: &OnnxModel,
    seed: u64,
    runs: usize,
) -> Verification {
    let dir = original
        .path
        .parent()
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let a = match original.to_proto() {
        Ok(p) => p.encode_to_vec(),
        Err(e) => return Verification::NotVerified(e.to_string()),
    };
    let b = match transformed.to_proto() {
        Ok(p) => p.encode_to_vec(),
        Err(e) => {
            return Verification::Failed(format!("the transformed model cannot be encoded: {e}"))
        }
    };
    let mut outputs = 0;
    for r in 0..runs {
        let inputs = match random_inputs(original, seed.wrapping_add(r as u64)) {
            Ok(i) => i,
            Err(e) => return Verification::NotVerified(e),
        };
        let want = match run(&a, &dir, &inputs) {
            Ok(o) => o,
            Err(e) => {
                return Verification::NotVerified(format!(
                    "tract cannot run the original: {}",
                    first_line(&e)
                ))
            }
        };
        let got = match run(&b, &dir, &inputs) {
            Ok(o) => o,
            Err(e) => {
                return Verification::Failed(format!(
                    "tract cannot run the transformed model: {}",
                    first_line(&e)
                ))
            }
        };
        if want.len() != got.len() {
            return Verification::Failed(format!(
                "{} outputs before, {} after",
                want.len(),
                got.len()
            ));
        }
        for (i, (w, g)) in want.iter().zip(got.iter()).enumerate() {
            if let Err(e) = same(g, w) {
                return Verification::Failed(format!("run {r}, output {i}: {e}"));
            }
        }
        outputs += want.len();
    }
    Verification::Passed { runs, outputs }
}

fn first_line(e: &anyhow::Error) -> String {
    format!("{e:#}")
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}
