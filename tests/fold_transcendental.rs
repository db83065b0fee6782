//! Layer: passes (`fold`), ONNX `Sin`, `Cos`, `Log` and cubic `Resize` of f32 constants
//! (issue 43).
//!
//! `tests/data/trig/ort_trig.bin.gz` holds ONNX Runtime's outputs (onnxruntime 1.32, CPU, x86-64,
//! written by `tools/gen_trig_fixtures.py`) for single-node models over many tensors: every
//! length 1..70 over rotary angles, small and large angles, Log of integers, fractions and T5
//! relative-position ratios, random positive bit patterns with denormals, special values (0,
//! -0, inf, NaN, negatives, denormals, the Payne-Hanek thresholds) at packet and tail
//! positions, and long tensors. ONNX Runtime's values are not correctly rounded and depend on
//! the element's position, so the fold must reproduce each bit: here every case is a node of a
//! model, `fold` + `cleanup` run, and every node folded must give ONNX Runtime's bits for every
//! element. The cases the fold must not refuse (finite inputs below the thresholds; Log of any
//! value, but of zero or positive values in the tail) must all be folded.
//!
//! The fixture's cubic `Resize` cases (rank 4 and 2, up and down, four coordinate modes, two
//! `cubic_coeff_a`, `exclude_outside` 0 and 1, ViT's 4x4 -> 8x10 position embeddings) are
//! checked the same way, and must all fold; so are its `ScatterND` cases (f32 and int64, rank
//! 1..4, negative indices, T5's decoder mask), data movement that must equal ONNX Runtime's.
//!
//! `TRIG_FIXTURE=FILE` checks another fixture (`gen_trig_fixtures.py --big`: ~11 M elements).

mod common;

use std::collections::HashMap;
use std::io::Read;

use common::{model, node, tensor_value};
use prost::Message;
use slice_opt::formats::onnx::{proto, OnnxModel};
use slice_opt::pipeline::PassKind;
use slice_opt::{Model, Pipeline};

const OPS: [&str; 3] = ["Sin", "Cos", "Log"];

struct Case {
    op: usize,
    x: Vec<u32>,
    y: Vec<u32>,
}

/// A cubic `Resize` case.
struct ResizeCase {
    coord: &'static str,
    a: f32,
    exclude: i64,
    shape: Vec<u64>,
    sizes: Vec<u64>,
    x: Vec<u32>,
    y: Vec<u32>,
}

/// A `ScatterND` case: element type (ONNX code), data dims, indices dims, and the data's,
/// indices', updates' and ONNX Runtime's output's bytes.
struct ScatterCase {
    elem: i32,
    shape: Vec<i64>,
    ishape: Vec<i64>,
    data: Vec<u8>,
    indices: Vec<u8>,
    updates: Vec<u8>,
    out: Vec<u8>,
}

const COORDS: [&str; 4] = [
    "half_pixel",
    "pytorch_half_pixel",
    "asymmetric",
    "align_corners",
];

fn read_fixture() -> (Vec<Case>, Vec<ResizeCase>, Vec<ScatterCase>) {
    let path = std::env::var("TRIG_FIXTURE").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/trig/ort_trig.bin.gz"
        )
        .to_string()
    });
    let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut data = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut data)
        .expect("gzip");
    assert_eq!(&data[..8], b"ORTTRIG1", "{path}: not a trig fixture");
    let mut at = 8;
    let words = |at: &mut usize, n: usize| -> Vec<u32> {
        let v = data[*at..*at + 4 * n]
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        *at += 4 * n;
        v
    };
    let mut cases = Vec::new();
    let mut resizes = Vec::new();
    let mut scatters = Vec::new();
    while at < data.len() {
        if data[at] == 4 {
            let (elem, r) = (data[at + 1] as i32, data[at + 2] as usize);
            at += 3;
            let shape: Vec<i64> = words(&mut at, r).into_iter().map(i64::from).collect();
            let q = data[at] as usize;
            at += 1;
            let ishape: Vec<i64> = words(&mut at, q).into_iter().map(i64::from).collect();
            let w = if elem == 1 { 4 } else { 8 };
            let n: i64 = shape.iter().product();
            let ni: i64 = ishape.iter().product();
            let k = *ishape.last().expect("indices rank >= 1") as usize;
            let nu = if k == 0 {
                0
            } else {
                ni / k as i64 * shape[k..].iter().product::<i64>()
            };
            let mut take = |len: usize| {
                let v = data[at..at + len].to_vec();
                at += len;
                v
            };
            let d = take(w * n as usize);
            let i = take(8 * ni as usize);
            let u = take(w * nu as usize);
            let o = take(w * n as usize);
            scatters.push(ScatterCase {
                elem,
                shape,
                ishape,
                data: d,
                indices: i,
                updates: u,
                out: o,
            });
            continue;
        }
        if data[at] == 3 {
            let coord = COORDS[data[at + 1] as usize];
            let a = f32::from_le_bytes(data[at + 2..at + 6].try_into().expect("4 bytes"));
            let exclude = data[at + 6] as i64;
            let rank = data[at + 7] as usize;
            at += 8;
            let dims: Vec<u64> = words(&mut at, 2 * rank)
                .into_iter()
                .map(u64::from)
                .collect();
            let (shape, sizes) = (dims[..rank].to_vec(), dims[rank..].to_vec());
            let x = words(&mut at, shape.iter().product::<u64>() as usize);
            let y = words(&mut at, sizes.iter().product::<u64>() as usize);
            resizes.push(ResizeCase {
                coord,
                a,
                exclude,
                shape,
                sizes,
                x,
                y,
            });
            continue;
        }
        let op = data[at] as usize;
        let n = u32::from_le_bytes(data[at + 1..at + 5].try_into().expect("4 bytes")) as usize;
        at += 5;
        let x = words(&mut at, n);
        let y = words(&mut at, n);
        assert!(op < OPS.len(), "op {op}");
        cases.push(Case { op, x, y });
    }
    (cases, resizes, scatters)
}

/// Whether the fold must give a value for this case (see the module comment): finite inputs
/// under the packet algorithms' Payne-Hanek thresholds (Sin, Cos); for Log, zero, positive or
/// +inf inputs after the last whole packet (the C library's values), anything in a packet. Log
/// tensors ONNX Runtime may split across threads (over ~12,800 elements) are not required.
fn must_fold(c: &Case) -> bool {
    let packets = c.x.len() / 4 * 4;
    c.x.iter().enumerate().all(|(i, &b)| {
        let x = f32::from_bits(b);
        match OPS[c.op] {
            "Sin" => x.is_finite() && x.abs() < 25966.0,
            "Cos" => x.is_finite() && x.abs() < 18838.0,
            _ => i < packets || x >= 0.0,
        }
    }) && !(OPS[c.op] == "Log" && c.x.len() > 12_000)
}

/// One model per op: node `n{k}` computes case `k` from initializer `x{k}` into output `y{k}`.
fn op_model(op: usize, cases: &[(usize, &Case)]) -> proto::ModelProto {
    let float = proto::tensor_proto::DataType::Float as i32;
    let mut nodes = Vec::new();
    let mut inits = Vec::new();
    let mut outputs = Vec::new();
    for (k, c) in cases {
        let (x, y) = (format!("x{k}"), format!("y{k}"));
        nodes.push(node(OPS[op], &format!("n{k}"), &[&x], &[&y]));
        inits.push(proto::TensorProto {
            name: Some(x),
            dims: vec![c.x.len() as i64],
            data_type: Some(float),
            raw_data: Some(c.x.iter().flat_map(|b| b.to_le_bytes()).collect()),
            ..Default::default()
        });
        outputs.push(tensor_value(&y, float, &[Some(c.x.len() as u64)]));
    }
    model(proto::GraphProto {
        name: Some(OPS[op].into()),
        node: nodes,
        initializer: inits,
        output: outputs,
        ..Default::default()
    })
}

/// The folded constants of the model's outputs, by output name.
fn folded(m: &proto::ModelProto, limit: u64) -> HashMap<String, Vec<u32>> {
    let bytes = bytes::Bytes::from(m.encode_to_vec());
    let onnx = OnnxModel::from_bytes("trig.onnx".as_ref(), bytes).expect("load");
    let mut model = Model::Onnx(onnx);
    Pipeline::with_passes(vec![PassKind::Fold, PassKind::Cleanup])
        .fold_limit(limit)
        .run(&mut model)
        .expect("fold");
    let Model::Onnx(onnx) = model else {
        unreachable!("ONNX in, ONNX out")
    };
    let p = onnx.to_proto().expect("encode");
    let g = p.graph.expect("graph");
    let words = |t: &proto::TensorProto| -> Vec<u32> {
        match &t.raw_data {
            Some(r) => r
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            None => t.float_data.iter().map(|v| v.to_bits()).collect(),
        }
    };
    let mut out: HashMap<String, Vec<u32>> = g
        .initializer
        .iter()
        .filter_map(|t| Some((t.name.clone()?, words(t))))
        .collect();
    for n in &g.node {
        if n.op_type.as_deref() == Some("Constant") {
            if let (Some(o), Some(t)) = (
                n.output.first(),
                n.attribute.iter().find_map(|a| a.t.as_ref()),
            ) {
                out.insert(o.clone(), words(t));
            }
        }
    }
    out
}

#[test]
fn every_folded_value_is_onnx_runtimes() {
    let (cases, _, _) = read_fixture();
    assert!(cases.len() >= 200, "{} cases", cases.len());
    let mut failures = Vec::new();
    for (op, name) in OPS.iter().enumerate() {
        let mine: Vec<(usize, &Case)> = cases
            .iter()
            .enumerate()
            .filter(|(_, c)| c.op == op)
            .collect();
        let got = folded(&op_model(op, &mine), 1 << 30);
        let (mut elements, mut cases_folded, mut refused) = (0usize, 0usize, 0usize);
        for (k, c) in &mine {
            let Some(v) = got.get(&format!("y{k}")) else {
                refused += 1;
                if must_fold(c) {
                    failures.push(format!(
                        "{} case {k} ({} elements): not folded",
                        name,
                        c.x.len()
                    ));
                }
                continue;
            };
            cases_folded += 1;
            elements += v.len();
            for (i, ((&x, &want), &have)) in c.x.iter().zip(&c.y).zip(v).enumerate() {
                if want != have {
                    failures.push(format!(
                        "{} case {k} (n = {}) element {i}: x = {:e} ({x:#010x}): ONNX Runtime {:e} \
                         ({want:#010x}), fold {:e} ({have:#010x})",
                        name,
                        c.x.len(),
                        f32::from_bits(x),
                        f32::from_bits(want),
                        f32::from_bits(have)
                    ));
                }
            }
            assert_eq!(v.len(), c.x.len(), "{} case {k}: length", name);
        }
        println!(
            "{}: {cases_folded} cases folded ({elements} elements, each ONNX Runtime's bits), \
             {refused} refused",
            name
        );
    }
    assert!(
        failures.is_empty(),
        "{} differences, first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(20)]
    );
}

/// `--fold-limit` holds: a result over the limit is not computed.
#[test]
fn over_the_fold_limit_nothing_folds() {
    let (cases, _, _) = read_fixture();
    let big: Vec<(usize, &Case)> = cases
        .iter()
        .enumerate()
        .filter(|(_, c)| c.op == 0 && c.x.len() >= 1000 && must_fold(c))
        .collect();
    assert!(!big.is_empty());
    let got = folded(&op_model(0, &big), 1000);
    for (k, _) in &big {
        assert!(
            !got.contains_key(&format!("y{k}")),
            "case {k} folded over the limit"
        );
    }
}

/// Every cubic `Resize` case folds to ONNX Runtime's bits.
#[test]
fn cubic_resize_is_onnx_runtimes() {
    let (_, cases, _) = read_fixture();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let float = proto::tensor_proto::DataType::Float as i32;
    let int64 = proto::tensor_proto::DataType::Int64 as i32;
    let attr_s = |name: &str, v: &str| proto::AttributeProto {
        name: Some(name.into()),
        r#type: Some(proto::attribute_proto::AttributeType::String as i32),
        s: Some(bytes::Bytes::copy_from_slice(v.as_bytes())),
        ..Default::default()
    };
    let (mut nodes, mut inits, mut outputs) = (Vec::new(), Vec::new(), Vec::new());
    for (k, c) in cases.iter().enumerate() {
        let (x, s, y) = (format!("x{k}"), format!("s{k}"), format!("y{k}"));
        let mut n = node("Resize", &format!("n{k}"), &[&x, "", "", &s], &[&y]);
        n.attribute = vec![
            attr_s("mode", "cubic"),
            attr_s("coordinate_transformation_mode", c.coord),
            proto::AttributeProto {
                name: Some("cubic_coeff_a".into()),
                r#type: Some(proto::attribute_proto::AttributeType::Float as i32),
                f: Some(c.a),
                ..Default::default()
            },
            proto::AttributeProto {
                name: Some("exclude_outside".into()),
                r#type: Some(proto::attribute_proto::AttributeType::Int as i32),
                i: Some(c.exclude),
                ..Default::default()
            },
        ];
        nodes.push(n);
        inits.push(proto::TensorProto {
            name: Some(x),
            dims: c.shape.iter().map(|&d| d as i64).collect(),
            data_type: Some(float),
            raw_data: Some(c.x.iter().flat_map(|b| b.to_le_bytes()).collect()),
            ..Default::default()
        });
        inits.push(proto::TensorProto {
            name: Some(s),
            dims: vec![c.sizes.len() as i64],
            data_type: Some(int64),
            int64_data: c.sizes.iter().map(|&d| d as i64).collect(),
            ..Default::default()
        });
        let dims: Vec<Option<u64>> = c.sizes.iter().map(|&d| Some(d)).collect();
        outputs.push(tensor_value(&y, float, &dims));
    }
    let mut m = model(proto::GraphProto {
        name: Some("resize".into()),
        node: nodes,
        initializer: inits,
        output: outputs,
        ..Default::default()
    });
    m.opset_import[0].version = Some(19);
    let got = folded(&m, 1 << 30);
    let mut failures = Vec::new();
    let mut elements = 0;
    for (k, c) in cases.iter().enumerate() {
        let Some(v) = got.get(&format!("y{k}")) else {
            failures.push(format!(
                "case {k} ({:?} -> {:?}, {}): not folded",
                c.shape, c.sizes, c.coord
            ));
            continue;
        };
        assert_eq!(v.len(), c.y.len(), "case {k}: length");
        elements += v.len();
        let bad = v.iter().zip(&c.y).filter(|(a, b)| a != b).count();
        if bad > 0 {
            failures.push(format!(
                "case {k} ({:?} -> {:?}, {}, a {}, exclude_outside {}): {bad} of {} elements differ",
                c.shape,
                c.sizes,
                c.coord,
                c.a,
                c.exclude,
                v.len()
            ));
        }
    }
    println!("Resize: {} cases, {elements} elements", cases.len());
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Every `ScatterND` case folds to ONNX Runtime's bytes.
#[test]
fn scatter_nd_is_onnx_runtimes() {
    let (_, _, cases) = read_fixture();
    assert!(cases.len() >= 30, "{} cases", cases.len());
    let int64 = proto::tensor_proto::DataType::Int64 as i32;
    let (mut nodes, mut inits, mut outputs) = (Vec::new(), Vec::new(), Vec::new());
    for (k, c) in cases.iter().enumerate() {
        let (d, i, u, y) = (
            format!("d{k}"),
            format!("i{k}"),
            format!("u{k}"),
            format!("y{k}"),
        );
        nodes.push(node("ScatterND", &format!("n{k}"), &[&d, &i, &u], &[&y]));
        let q = c.ishape.len();
        let kk = c.ishape[q - 1] as usize;
        let mut ushape = c.ishape[..q - 1].to_vec();
        ushape.extend_from_slice(&c.shape[kk..]);
        for (name, dims, elem, raw) in [
            (&d, c.shape.clone(), c.elem, &c.data),
            (&i, c.ishape.clone(), int64, &c.indices),
            (&u, ushape, c.elem, &c.updates),
        ] {
            inits.push(proto::TensorProto {
                name: Some(name.clone()),
                dims,
                data_type: Some(elem),
                raw_data: Some(bytes::Bytes::from(raw.clone())),
                ..Default::default()
            });
        }
        let dims: Vec<Option<u64>> = c.shape.iter().map(|&v| Some(v as u64)).collect();
        outputs.push(tensor_value(&y, c.elem, &dims));
    }
    let mut m = model(proto::GraphProto {
        name: Some("scatter".into()),
        node: nodes,
        initializer: inits,
        output: outputs,
        ..Default::default()
    });
    m.opset_import[0].version = Some(18);
    let bytes = bytes::Bytes::from(m.encode_to_vec());
    let onnx = OnnxModel::from_bytes("scatter.onnx".as_ref(), bytes).expect("load");
    let mut model = Model::Onnx(onnx);
    Pipeline::with_passes(vec![PassKind::Fold, PassKind::Cleanup])
        .run(&mut model)
        .expect("fold");
    let Model::Onnx(onnx) = model else {
        unreachable!("ONNX in, ONNX out")
    };
    let g = onnx.to_proto().expect("encode").graph.expect("graph");
    let mut failures = Vec::new();
    for (k, c) in cases.iter().enumerate() {
        let name = format!("y{k}");
        let got = g
            .initializer
            .iter()
            .find(|t| t.name.as_deref() == Some(name.as_str()))
            .map(|t| match (&t.raw_data, c.elem) {
                (Some(r), _) => r.to_vec(),
                (None, 1) => t.float_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
                (None, _) => t.int64_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            });
        match got {
            None => failures.push(format!(
                "case {k} ({:?}, indices {:?}): not folded",
                c.shape, c.ishape
            )),
            Some(v) if v != c.out => failures.push(format!(
                "case {k} ({:?}, indices {:?}): differs from ONNX Runtime",
                c.shape, c.ishape
            )),
            Some(_) => {}
        }
    }
    println!("ScatterND: {} cases", cases.len());
    assert!(failures.is_empty(), "{failures:#?}");
}
