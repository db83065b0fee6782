//! Layer: formats and pipeline (thread-count independence).
//!
//! The result does not depend on how many threads the pool has (README, "Threads"): an ONNX model
//! of several load windows (4,096 records each) gives the same bytes when loaded and transformed in
//! a pool of one thread and in a pool of two, and both are what the ONNX Slice spec says.

mod common;

use prost::Message;
use slice_opt::formats::onnx::proto;

const N: usize = 3 * 4096 + 5;

fn int64s(name: &str, dims: &[i64], values: &[i64]) -> proto::TensorProto {
    proto::TensorProto {
        dims: dims.to_vec(),
        data_type: Some(7),
        name: Some(name.into()),
        raw_data: Some(
            values
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>()
                .into(),
        ),
        ..Default::default()
    }
}

fn input_x() -> proto::ValueInfoProto {
    let dim = |d| proto::tensor_shape_proto::Dimension {
        value: Some(proto::tensor_shape_proto::dimension::Value::DimValue(d)),
        ..Default::default()
    };
    proto::ValueInfoProto {
        name: Some("x".into()),
        r#type: Some(proto::TypeProto {
            value: Some(proto::type_proto::Value::TensorType(
                proto::type_proto::Tensor {
                    elem_type: Some(7),
                    shape: Some(proto::TensorShapeProto {
                        dim: vec![dim(8), dim(6)],
                    }),
                },
            )),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `v{i} = v{i-1} + c{i}[:, 0:6]` for `i < N` (`v{-1}` is `x`, int64 `[8, 6]`), where
/// `c{i}` is the `[1, 8]` constant `8i .. 8i + 7`.
fn chain() -> proto::ModelProto {
    let mut initializer = vec![
        int64s("st", &[1], &[0]),
        int64s("en", &[1], &[6]),
        int64s("ax", &[1], &[1]),
    ];
    let mut node = Vec::new();
    for i in 0..N {
        let base = 8 * i as i64;
        initializer.push(int64s(
            &format!("c{i}"),
            &[1, 8],
            &(base..base + 8).collect::<Vec<_>>(),
        ));
        let node_of =
            |op: &str, name: String, input: Vec<String>, output: String| proto::NodeProto {
                op_type: Some(op.into()),
                name: Some(name),
                input,
                output: vec![output],
                ..Default::default()
            };
        node.push(node_of(
            "Slice",
            format!("slice{i}"),
            vec![format!("c{i}"), "st".into(), "en".into(), "ax".into()],
            format!("k{i}"),
        ));
        let prev = if i == 0 {
            "x".to_string()
        } else {
            format!("v{}", i - 1)
        };
        node.push(node_of(
            "Add",
            format!("add{i}"),
            vec![prev, format!("k{i}")],
            format!("v{i}"),
        ));
    }
    let mut output = input_x();
    output.name = Some(format!("v{}", N - 1));
    proto::ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        graph: Some(proto::GraphProto {
            node,
            initializer,
            input: vec![input_x()],
            output: vec![output],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn transform_in(threads: usize, bytes: &[u8]) -> Vec<u8> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    pool.install(|| common::default_passes(bytes))
}

fn values(t: &proto::TensorProto) -> Vec<i64> {
    match &t.raw_data {
        Some(raw) => raw
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect(),
        None => t.int64_data.clone(),
    }
}

#[test]
fn one_thread_and_two_give_the_same_model_and_the_spec_values() {
    let bytes = chain().encode_to_vec();
    let one = transform_in(1, &bytes);
    let two = transform_in(2, &bytes);
    assert!(one == two, "the pool's size changed the output");
    let out = proto::ModelProto::decode(one.as_slice()).expect("output decodes");
    let g = out.graph.expect("graph");
    // Every Slice folds (constant data and parameters); the Adds stay, in file order.
    let adds: Vec<_> = g.node.iter().map(|n| (n.op_type(), n.name())).collect();
    assert_eq!(adds.len(), N);
    for (i, (op, name)) in adds.into_iter().enumerate() {
        assert_eq!((op, name), ("Add", format!("add{i}").as_str()));
    }
    // `c{i}[:, 0:6]` per the ONNX Slice spec: the first six of `8i .. 8i + 7`.
    let folded: std::collections::HashMap<_, _> = g
        .initializer
        .iter()
        .map(|t| (t.name().to_string(), t))
        .collect();
    for i in 0..N {
        let t = folded
            .get(&format!("k{i}"))
            .unwrap_or_else(|| panic!("k{i} is not a constant"));
        let base = 8 * i as i64;
        assert_eq!(t.dims, [1, 6], "k{i}");
        assert_eq!(values(t), (base..base + 6).collect::<Vec<_>>(), "k{i}");
    }
}
