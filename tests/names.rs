//! Layer: formats (ONNX) and ir (`Text`): names through load, passes, save.
//!
//! Names, op types and domains survive the IR exactly, at every length: the IR keeps a string of up
//! to 24 bytes inline and a longer one on the heap (`ir::Text`), so the names here cross that
//! boundary, in ASCII and in multi-byte UTF-8 (a character of 2, 3 or 4 bytes straddling byte 24).
//! Every record is rebuilt from the IR before saving (no record is copied as read), and the saved
//! model must name every node, value, op type and domain as the file did.

mod common;

use common::i64_tensor;
use prost::Message;
use slice_opt::formats::onnx::{proto, OnnxModel};
use slice_opt::{Model, Pipeline};

/// A name of at least `len` characters: `role`, `i` (so that every name differs), then
/// `unit` repeated (at least once).
fn name(role: &str, unit: &str, len: usize, i: usize) -> String {
    let mut s = format!("{role}{i}_{unit}");
    while s.chars().count() < len {
        s.push_str(unit);
    }
    s
}

fn input(name: &str) -> proto::ValueInfoProto {
    common::tensor_value(name, 7, &[Some(8)])
}

/// A node as declared: (name, op type, domain, outputs).
type Declared = (String, String, String, Vec<String>);

/// The model: for each name length, `Slice(x)` then a custom op of a long op type in a long
/// domain, each node and value named at that length. Returns the model and every
/// (node name, op type, domain, outputs) it declares.
fn model() -> (proto::ModelProto, Vec<Declared>) {
    let x = name("x", "x", 30, 0);
    let mut node = Vec::new();
    let mut declared = Vec::new();
    let initializer = vec![
        i64_tensor("s", &[1]),
        i64_tensor("e", &[5]),
        i64_tensor("a", &[0]),
    ];
    let mut outputs = Vec::new();
    let units = ["a", "é", "名", "🦀"];
    let mut i = 0;
    for unit in units {
        for len in [1, 8, 11, 12, 13, 22, 23, 24, 25, 26, 40] {
            i += 1;
            let sliced = name("v", unit, len, i);
            let slice_name = name("n", unit, len, i);
            let custom_out = name("w", unit, len, i);
            let custom_name = name("m", unit, len, i);
            let op_type = format!("Op{}", "x".repeat(len));
            let domain = name("com.", unit, len, i);
            node.push(proto::NodeProto {
                op_type: Some("Slice".into()),
                name: Some(slice_name.clone()),
                input: vec![x.clone(), "s".into(), "e".into(), "a".into()],
                output: vec![sliced.clone()],
                ..Default::default()
            });
            declared.push((
                slice_name,
                "Slice".to_string(),
                String::new(),
                vec![sliced.clone()],
            ));
            node.push(proto::NodeProto {
                op_type: Some(op_type.clone()),
                domain: Some(domain.clone()),
                name: Some(custom_name.clone()),
                input: vec![sliced],
                output: vec![custom_out.clone()],
                ..Default::default()
            });
            declared.push((custom_name, op_type, domain, vec![custom_out.clone()]));
            outputs.push(proto::ValueInfoProto {
                name: Some(custom_out),
                ..Default::default()
            });
        }
    }
    let mut opset_import = vec![proto::OperatorSetIdProto {
        domain: Some(String::new()),
        version: Some(17),
    }];
    for (_, _, domain, _) in &declared {
        if !domain.is_empty() {
            opset_import.push(proto::OperatorSetIdProto {
                domain: Some(domain.clone()),
                version: Some(1),
            });
        }
    }
    let m = proto::ModelProto {
        ir_version: Some(8),
        opset_import,
        graph: Some(proto::GraphProto {
            name: Some("names".into()),
            node,
            initializer,
            input: vec![input(&x)],
            output: outputs,
            ..Default::default()
        }),
        ..Default::default()
    };
    (m, declared)
}

#[test]
fn every_name_op_type_and_domain_is_written_as_read_at_every_length() {
    let (m, declared) = model();
    // The names do cross the inline limit, in bytes, with multi-byte characters at the edge.
    let lengths: Vec<usize> = declared.iter().map(|d| d.0.len()).collect();
    assert!(lengths.iter().any(|&l| l <= 24) && lengths.iter().any(|&l| l > 24));
    let bytes = m.encode_to_vec();
    let onnx = OnnxModel::from_bytes("names.onnx".as_ref(), bytes::Bytes::from(bytes))
        .expect("the model loads");
    let mut model = Model::Onnx(onnx);
    Pipeline::new().run(&mut model).expect("default passes");
    // Rebuild every record from the IR: nothing is written from the bytes read.
    for n in model.graph_mut().g.node_weights_mut() {
        n.dirty = true;
    }
    let Model::Onnx(onnx) = model else {
        unreachable!("ONNX in, ONNX out")
    };
    let out = onnx.to_proto().expect("the model encodes");
    let g = out.graph.expect("graph");
    // The slices are of a graph input: nothing folds, every node stays, in file order.
    let written: Vec<Declared> = g
        .node
        .iter()
        .map(|n| {
            (
                n.name().to_string(),
                n.op_type().to_string(),
                n.domain().to_string(),
                n.output.clone(),
            )
        })
        .collect();
    assert_eq!(written, declared);
    // Each custom node reads the slice before it, by name.
    for pair in g.node.chunks(2) {
        assert_eq!(pair[1].input, pair[0].output);
        assert_eq!(pair[0].input[0], name("x", "x", 30, 0));
    }
    let outputs: Vec<&str> = g.output.iter().map(|o| o.name()).collect();
    let want: Vec<&str> = declared
        .iter()
        .filter(|d| d.1 != "Slice")
        .map(|d| d.3[0].as_str())
        .collect();
    assert_eq!(outputs, want);
}
