//! Layer: passes (`cleanup`), on ONNX files.
//!
//! Pass `cleanup` keeps exactly what a graph output depends on, whatever order the file lists its
//! nodes and initializers in. The expected sets come from the definition (walk back from the graph
//! outputs through the producers of the names each kept node reads), computed here on the protobuf,
//! not from the pass; the graphs are random, with their node lists shuffled so that producers come
//! after their consumers (ONNX asks for a sorted list, but files without one exist and are loaded).
//! Some graphs are large enough that the removed nodes go through the batched drop of large graphs.

mod common;

use std::collections::{HashMap, HashSet};

use common::{model, node, tensor_value};
use prost::Message;
use slice_opt::formats::onnx::{proto, OnnxModel};
use slice_opt::pipeline::PassKind;
use slice_opt::{Model, Pipeline};

/// splitmix64: a small, seeded generator, so that every case is reproducible from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

fn float_tensor(name: &str) -> proto::TensorProto {
    proto::TensorProto {
        name: Some(name.into()),
        dims: vec![2],
        data_type: Some(proto::tensor_proto::DataType::Float as i32),
        float_data: vec![1.0, 2.0],
        ..Default::default()
    }
}

/// A random graph of `n` nodes over input `x` and a few initializers, its node and
/// initializer lists shuffled.
fn random_model(rng: &mut Rng, n: usize) -> proto::ModelProto {
    let consts: Vec<String> = (0..1 + rng.below(6)).map(|i| format!("c{i}")).collect();
    let mut values: Vec<String> = vec!["x".into()];
    values.extend(consts.iter().cloned());
    let mut nodes = Vec::new();
    for i in 0..n {
        let out = format!("v{i}");
        let pick = |rng: &mut Rng, values: &[String]| values[rng.below(values.len())].clone();
        let a = pick(rng, &values);
        let nd = if rng.below(2) == 0 {
            let b = pick(rng, &values);
            node("Add", &format!("n{i}"), &[&a, &b], &[&out])
        } else {
            node("Relu", &format!("n{i}"), &[&a], &[&out])
        };
        nodes.push(nd);
        values.push(out);
    }
    let mut outputs: Vec<String> = (0..1 + rng.below(3))
        .map(|_| format!("v{}", rng.below(n)))
        .collect();
    outputs.sort();
    outputs.dedup();
    rng.shuffle(&mut nodes);
    let mut initializer: Vec<proto::TensorProto> = consts.iter().map(|c| float_tensor(c)).collect();
    rng.shuffle(&mut initializer);
    let float = proto::tensor_proto::DataType::Float as i32;
    model(proto::GraphProto {
        name: Some("g".into()),
        node: nodes,
        initializer,
        input: vec![tensor_value("x", float, &[Some(2)])],
        output: outputs
            .iter()
            .map(|o| tensor_value(o, float, &[Some(2)]))
            .collect(),
        ..Default::default()
    })
}

/// The node names and initializer names that a graph output depends on, by definition.
fn needed(m: &proto::ModelProto) -> (HashSet<String>, HashSet<String>) {
    let g = m.graph.as_ref().expect("graph");
    let producer: HashMap<&str, &proto::NodeProto> = g
        .node
        .iter()
        .flat_map(|n| n.output.iter().map(move |o| (o.as_str(), n)))
        .collect();
    let consts: HashSet<&str> = g
        .initializer
        .iter()
        .filter_map(|t| t.name.as_deref())
        .collect();
    let (mut nodes, mut inits) = (HashSet::new(), HashSet::new());
    let mut todo: Vec<&str> = g.output.iter().filter_map(|o| o.name.as_deref()).collect();
    let mut seen = HashSet::new();
    while let Some(v) = todo.pop() {
        if !seen.insert(v) {
            continue;
        }
        if let Some(n) = producer.get(v) {
            nodes.insert(n.name.clone().unwrap_or_default());
            todo.extend(n.input.iter().map(String::as_str));
        } else if consts.contains(v) {
            inits.insert(v.to_string());
        }
    }
    (nodes, inits)
}

fn cleaned(m: &proto::ModelProto) -> proto::ModelProto {
    let bytes = bytes::Bytes::from(m.encode_to_vec());
    let onnx = OnnxModel::from_bytes("random.onnx".as_ref(), bytes).expect("load");
    let mut model = Model::Onnx(onnx);
    Pipeline::with_passes(vec![PassKind::Cleanup])
        .run(&mut model)
        .expect("cleanup");
    let Model::Onnx(onnx) = model else {
        unreachable!("ONNX in, ONNX out")
    };
    onnx.to_proto().expect("encode")
}

#[test]
fn cleanup_keeps_exactly_what_the_outputs_need_in_any_file_order() {
    let mut removed_somewhere = 0;
    let mut most_removed = 0;
    for seed in 0..300u64 {
        let mut rng = Rng(seed);
        let n = 1 + rng.below(match seed % 50 {
            0 => 5000,
            k if k % 10 == 0 => 400,
            _ => 40,
        });
        let m = random_model(&mut rng, n);
        let (want_nodes, want_inits) = needed(&m);
        let out = cleaned(&m);
        let g = out.graph.as_ref().expect("graph");
        let got_nodes: HashSet<String> = g.node.iter().filter_map(|n| n.name.clone()).collect();
        let got_inits: HashSet<String> = g
            .initializer
            .iter()
            .filter_map(|t| t.name.clone())
            .collect();
        assert_eq!(got_nodes, want_nodes, "seed {seed}: nodes kept");
        assert_eq!(got_inits, want_inits, "seed {seed}: initializers kept");
        let inputs: Vec<_> = g.input.iter().filter_map(|v| v.name.as_deref()).collect();
        assert_eq!(inputs, ["x"], "seed {seed}: the graph input is always kept");
        removed_somewhere += n - want_nodes.len();
        most_removed = most_removed.max(n - want_nodes.len());
    }
    // Some graph loses more nodes than a batch of `ir::DropLater` (1024), so the removed
    // nodes of a large graph (dropped on the pool, in batches) are covered too.
    assert!(most_removed > 2 * 1024, "{most_removed}");
    // The cases remove something: a pass that kept everything would fail above, not pass.
    assert!(removed_somewhere > 1000, "{removed_somewhere}");
}
