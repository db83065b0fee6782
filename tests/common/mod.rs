//! Helpers shared by integration tests: conformance data, one-node model builders, npz files.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};

use serde_json::Value;
use slice_opt::formats::onnx::proto;

/// Every case of a gzipped conformance file under `tests/data/`.
pub fn load_cases(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"));
    let f = std::fs::File::open(&path).expect("conformance data present");
    BufReader::new(flate2::read::GzDecoder::new(f))
        .lines()
        .map(|l| serde_json::from_str(&l.expect("readable line")).expect("valid json"))
        .collect()
}

pub fn ints(v: &Value) -> Vec<i64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_i64().expect("i64"))
        .collect()
}

pub fn uints(v: &Value) -> Vec<u64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_u64().expect("u64"))
        .collect()
}

/// An expected answer: `None` for an error, else (shape, flat indices).
pub fn expected(v: &Value) -> Option<(Vec<u64>, Vec<u64>)> {
    if v.get("error").is_some() {
        None
    } else {
        Some((uints(&v["shape"]), uints(&v["indices"])))
    }
}

pub fn i64_tensor(name: &str, values: &[i64]) -> proto::TensorProto {
    proto::TensorProto {
        name: Some(name.into()),
        dims: vec![values.len() as i64],
        data_type: Some(7),
        raw_data: Some(bytes::Bytes::from(
            values
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        )),
        ..Default::default()
    }
}

/// `arange(prod(shape))` as int32, the conformance input.
pub fn arange_i32(name: &str, shape: &[u64]) -> proto::TensorProto {
    let n: u64 = shape.iter().product();
    proto::TensorProto {
        name: Some(name.into()),
        dims: shape.iter().map(|&d| d as i64).collect(),
        data_type: Some(6),
        raw_data: Some(bytes::Bytes::from(
            (0..n as i32)
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        )),
        ..Default::default()
    }
}

pub fn int_attr(name: &str, v: i64) -> proto::AttributeProto {
    proto::AttributeProto {
        name: Some(name.into()),
        i: Some(v),
        r#type: Some(proto::attribute_proto::AttributeType::Int as i32),
        ..Default::default()
    }
}

pub fn ints_attr(name: &str, v: &[i64]) -> proto::AttributeProto {
    proto::AttributeProto {
        name: Some(name.into()),
        ints: v.to_vec(),
        r#type: Some(proto::attribute_proto::AttributeType::Ints as i32),
        ..Default::default()
    }
}

/// A model with constant data `x` (arange int32) and one node producing graph output `y`.
pub fn one_node_model(
    node: proto::NodeProto,
    initializers: Vec<proto::TensorProto>,
    opsets: &[(&str, i64)],
) -> proto::ModelProto {
    proto::ModelProto {
        ir_version: Some(8),
        opset_import: opsets
            .iter()
            .map(|(d, v)| proto::OperatorSetIdProto {
                domain: Some(d.to_string()),
                version: Some(*v),
            })
            .collect(),
        graph: Some(proto::GraphProto {
            name: Some("case".into()),
            node: vec![node],
            initializer: initializers,
            output: vec![proto::ValueInfoProto {
                name: Some("y".into()),
                r#type: Some(proto::TypeProto {
                    value: Some(proto::type_proto::Value::TensorType(
                        proto::type_proto::Tensor {
                            elem_type: Some(6),
                            shape: None,
                        },
                    )),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The ONNX Slice conformance case as a one-node model (Slice-1 attributes for opset 9).
pub fn onnx_slice_model(case: &Value) -> proto::ModelProto {
    let shape = uints(&case["input_shape"]);
    let opset = case["onnx_opset"].as_i64().expect("opset");
    let starts = ints(&case["starts"]);
    let ends = ints(&case["ends"]);
    let axes = (!case["axes"].is_null()).then(|| ints(&case["axes"]));
    let steps = (!case["steps"].is_null()).then(|| ints(&case["steps"]));
    let mut inits = vec![arange_i32("x", &shape)];
    let mut node = proto::NodeProto {
        op_type: Some("Slice".into()),
        name: Some(case["id"].as_str().expect("id").into()),
        output: vec!["y".into()],
        ..Default::default()
    };
    if opset < 10 {
        node.input = vec!["x".into()];
        node.attribute.push(ints_attr("starts", &starts));
        node.attribute.push(ints_attr("ends", &ends));
        if let Some(a) = &axes {
            node.attribute.push(ints_attr("axes", a));
        }
    } else {
        node.input = vec!["x".into(), "starts".into(), "ends".into()];
        inits.push(i64_tensor("starts", &starts));
        inits.push(i64_tensor("ends", &ends));
        match (&axes, &steps) {
            (Some(a), _) => {
                node.input.push("axes".into());
                inits.push(i64_tensor("axes", a));
            }
            (None, Some(_)) => node.input.push(String::new()),
            (None, None) => {}
        }
        if let Some(s) = &steps {
            node.input.push("steps".into());
            inits.push(i64_tensor("steps", s));
        }
    }
    one_node_model(node, inits, &[("", opset)])
}

/// The custom domain our TensorFlow-flavour StridedSlice nodes use in ONNX.
pub const TF_DOMAIN: &str = "org.tensorflow";

/// The StridedSlice conformance case as an ONNX custom-domain TF-style StridedSlice.
pub fn tf_strided_slice_model(case: &Value) -> proto::ModelProto {
    let shape = uints(&case["input_shape"]);
    let mut node = proto::NodeProto {
        op_type: Some("StridedSlice".into()),
        domain: Some(TF_DOMAIN.into()),
        name: Some(case["id"].as_str().expect("id").into()),
        input: vec!["x".into(), "begin".into(), "end".into(), "strides".into()],
        output: vec!["y".into()],
        ..Default::default()
    };
    for m in [
        "begin_mask",
        "end_mask",
        "ellipsis_mask",
        "new_axis_mask",
        "shrink_axis_mask",
    ] {
        node.attribute
            .push(int_attr(m, case[m].as_i64().expect("mask")));
    }
    let inits = vec![
        arange_i32("x", &shape),
        i64_tensor("begin", &ints(&case["begin"])),
        i64_tensor("end", &ints(&case["end"])),
        i64_tensor("strides", &ints(&case["strides"])),
    ];
    one_node_model(node, inits, &[("", 17), (TF_DOMAIN, 1)])
}

/// A graph input `name` of int32 with the given dims (`None` = a symbolic dim `d{i}`).
pub fn i32_input(name: &str, dims: &[Option<u64>]) -> proto::ValueInfoProto {
    use proto::tensor_shape_proto::{dimension::Value as D, Dimension};
    proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(proto::type_proto::Value::TensorType(
                proto::type_proto::Tensor {
                    elem_type: Some(6),
                    shape: Some(proto::TensorShapeProto {
                        dim: dims
                            .iter()
                            .enumerate()
                            .map(|(i, d)| Dimension {
                                value: Some(match d {
                                    Some(v) => D::DimValue(*v as i64),
                                    None => D::DimParam(format!("d{i}")),
                                }),
                                ..Default::default()
                            })
                            .collect(),
                    }),
                },
            )),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The StridedSlice conformance case as an ONNX custom-domain TF-style StridedSlice whose data
/// `x` is a graph input (static dims, or all symbolic when `symbolic`).
pub fn tf_strided_slice_model_with_input(case: &Value, symbolic: bool) -> proto::ModelProto {
    let mut m = tf_strided_slice_model(case);
    let shape = uints(&case["input_shape"]);
    let g = m.graph.as_mut().expect("graph");
    g.initializer.retain(|t| t.name() != "x");
    let dims: Vec<Option<u64>> = shape.iter().map(|&d| (!symbolic).then_some(d)).collect();
    g.input.push(i32_input("x", &dims));
    m
}
