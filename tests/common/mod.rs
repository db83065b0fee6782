//! Helpers shared by integration tests: conformance data, one-node model builders, npz files.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};

use serde_json::Value;
use slice_opt::formats::onnx::proto;

/// The ONNX model `bytes` after the default passes (infer, fold, cleanup), re-encoded.
pub fn default_passes(bytes: &[u8]) -> Vec<u8> {
    use prost::Message;
    use slice_opt::formats::onnx::OnnxModel;
    use slice_opt::{Model, Pipeline};
    let onnx = OnnxModel::from_bytes("m.onnx".as_ref(), bytes::Bytes::copy_from_slice(bytes))
        .expect("load");
    let mut model = Model::Onnx(onnx);
    Pipeline::new().run(&mut model).expect("pipeline");
    let Model::Onnx(onnx) = model else {
        unreachable!("ONNX in, ONNX out")
    };
    onnx.to_proto().expect("encode").encode_to_vec()
}

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

/// `v` as a list of integers, or `None` when it is null (an omitted input).
pub fn opt_ints(v: &Value) -> Option<Vec<i64>> {
    (!v.is_null()).then(|| ints(v))
}

/// The plan of an ONNX Slice conformance case (constant starts, ends, axes and steps).
pub fn onnx_case_plan(
    c: &Value,
) -> Result<slice_opt::semantics::SlicePlan, slice_opt::semantics::SliceError> {
    use slice_opt::semantics::decode::constant;
    let rank = c["input_shape"].as_array().expect("input_shape").len();
    let steps = opt_ints(&c["steps"]).map(|s| constant(&s));
    slice_opt::semantics::onnx_slice(
        &constant(&ints(&c["starts"])),
        &constant(&ints(&c["ends"])),
        opt_ints(&c["axes"]).as_deref(),
        steps.as_deref(),
        rank,
        c["onnx_opset"].as_u64().expect("opset") as u32,
    )
}

/// An expected answer: `None` for an error, else (shape, flat indices).
pub fn expected(v: &Value) -> Option<(Vec<u64>, Vec<u64>)> {
    if v.get("error").is_some() {
        None
    } else {
        Some((uints(&v["shape"]), uints(&v["indices"])))
    }
}

/// ONNX Slice conformance case: whether the raw answers of the runtimes that run it (ONNX
/// Runtime, the ONNX reference evaluator, OpenVINO's CPU plugin and reference evaluation)
/// differ, an error counting as one answer whatever its text (issue 42, pattern G).
pub fn onnx_runtimes_differ(case: &Value) -> bool {
    let answers: Vec<Option<(Vec<u64>, Vec<u64>)>> = ["ort", "onnx_ref", "ov_cpu", "ov_ref"]
        .iter()
        .filter(|k| !case[**k].is_null())
        .map(|k| expected(&case[*k]))
        .collect();
    answers.windows(2).any(|w| w[0] != w[1])
}

/// The answers a case accepts for `key`: `expected_*`, plus `expected_ov_alt` where the case
/// has one and `key` is `expected_ov` (conformance data policy v2: either is accepted).
pub fn accepted(case: &Value, key: &str) -> Vec<Option<(Vec<u64>, Vec<u64>)>> {
    let mut v = vec![expected(&case[key])];
    if key == "expected_ov" {
        if let Some(alt) = case.get("expected_ov_alt").filter(|a| !a.is_null()) {
            v.push(expected(alt));
        }
    }
    v
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
    tensor_value(name, 6, dims)
}

/// A graph input or output `name` of ONNX element type `elem_type` with the given dims
/// (`None` = a symbolic dim `d{i}`).
pub fn tensor_value(name: &str, elem_type: i32, dims: &[Option<u64>]) -> proto::ValueInfoProto {
    use proto::tensor_shape_proto::{dimension::Value as D, Dimension};
    proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(proto::type_proto::Value::TensorType(
                proto::type_proto::Tensor {
                    elem_type: Some(elem_type),
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

/// Builds OpenVINO IR text + .bin for `data` (arange int32 of `shape`) feeding one op whose
/// other inputs are i64 constants; the op's output goes to a Result.
pub fn ov_one_op_ir(
    shape: &[u64],
    op: &str,
    version: &str,
    data_attrs: &str,
    params: &[Vec<i64>],
) -> (String, Vec<u8>) {
    let n: u64 = shape.iter().product();
    let mut bin: Vec<u8> = (0..n as i32).flat_map(|v| v.to_le_bytes()).collect();
    let dims = |s: &[u64]| {
        s.iter()
            .map(|d| format!("<dim>{d}</dim>"))
            .collect::<String>()
    };
    let shape_attr = |s: &[u64]| {
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let mut layers = format!(
        "<layer id=\"0\" name=\"data\" type=\"Const\" version=\"opset1\"><data element_type=\"i32\" shape=\"{}\" offset=\"0\" size=\"{}\"/><output><port id=\"0\" precision=\"I32\">{}</port></output></layer>\n",
        shape_attr(shape),
        n * 4,
        dims(shape)
    );
    let mut edges =
        String::from("<edge from-layer=\"0\" from-port=\"0\" to-layer=\"100\" to-port=\"0\"/>\n");
    let mut inputs = format!("<port id=\"0\" precision=\"I32\">{}</port>", dims(shape));
    for (i, p) in params.iter().enumerate() {
        let offset = bin.len();
        bin.extend(p.iter().flat_map(|v| v.to_le_bytes()));
        let id = i + 1;
        layers.push_str(&format!(
            "<layer id=\"{id}\" name=\"p{id}\" type=\"Const\" version=\"opset1\"><data element_type=\"i64\" shape=\"{}\" offset=\"{offset}\" size=\"{}\"/><output><port id=\"0\" precision=\"I64\"><dim>{}</dim></port></output></layer>\n",
            p.len(),
            p.len() * 8,
            p.len()
        ));
        edges.push_str(&format!(
            "<edge from-layer=\"{id}\" from-port=\"0\" to-layer=\"100\" to-port=\"{id}\"/>\n"
        ));
        inputs.push_str(&format!(
            "<port id=\"{id}\" precision=\"I64\"><dim>{}</dim></port>",
            p.len()
        ));
    }
    let out_port = params.len() + 1;
    layers.push_str(&format!(
        "<layer id=\"100\" name=\"op\" type=\"{op}\" version=\"{version}\"><data {data_attrs}/><input>{inputs}</input><output><port id=\"{out_port}\" precision=\"I32\" names=\"y\"/></output></layer>\n\
         <layer id=\"101\" name=\"out\" type=\"Result\" version=\"opset1\"><input><port id=\"0\" precision=\"I32\"/></input></layer>\n"
    ));
    edges.push_str(&format!(
        "<edge from-layer=\"100\" from-port=\"{out_port}\" to-layer=\"101\" to-port=\"0\"/>\n"
    ));
    let xml = format!("<?xml version=\"1.0\"?>\n<net name=\"case\" version=\"11\">\n<layers>\n{layers}</layers>\n<edges>\n{edges}</edges>\n</net>\n");
    (xml, bin)
}

/// The OpenVINO mask lists of a StridedSlice case: `ov_masks` when given, else the integer
/// masks as lists of `len(begin)`.
pub fn ov_mask_lists(case: &Value) -> Vec<(&'static str, Vec<i64>)> {
    let len = case["begin"].as_array().map(|a| a.len()).unwrap_or(0);
    [
        "begin_mask",
        "end_mask",
        "new_axis_mask",
        "shrink_axis_mask",
        "ellipsis_mask",
    ]
    .iter()
    .map(|&m| {
        let list = if case["ov_masks"].is_null() {
            let bits = case[m].as_i64().expect("mask");
            (0..len)
                .map(|i| if i < 64 { (bits >> i) & 1 } else { 0 })
                .collect()
        } else {
            ints(&case["ov_masks"][m])
        };
        (m, list)
    })
    .collect()
}

/// The StridedSlice case as an OpenVINO StridedSlice-1 IR model.
pub fn ov_strided_slice_ir(case: &Value) -> (String, Vec<u8>) {
    let attrs = ov_mask_lists(case)
        .iter()
        .map(|(m, l)| {
            format!(
                "{m}=\"{}\"",
                l.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    let params = vec![
        ints(&case["begin"]),
        ints(&case["end"]),
        ints(&case["strides"]),
    ];
    ov_one_op_ir(
        &uints(&case["input_shape"]),
        "StridedSlice",
        "opset1",
        &attrs,
        &params,
    )
}

/// The Slice case as an OpenVINO Slice-8 IR model (`steps` null = ones).
pub fn ov_slice8_ir(case: &Value) -> (String, Vec<u8>) {
    let starts = ints(&case["starts"]);
    let steps = if case["steps"].is_null() {
        vec![1; starts.len()]
    } else {
        ints(&case["steps"])
    };
    let mut params = vec![starts, ints(&case["ends"]), steps];
    if !case["axes"].is_null() {
        params.push(ints(&case["axes"]));
    }
    ov_one_op_ir(&uints(&case["input_shape"]), "Slice", "opset8", "", &params)
}

/// An ONNX model of IR version 8 and opset 17 around `graph`.
pub fn model(graph: proto::GraphProto) -> proto::ModelProto {
    proto::ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        graph: Some(graph),
        ..Default::default()
    }
}

/// A node of `op` named `name`.
pub fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> proto::NodeProto {
    proto::NodeProto {
        op_type: Some(op.into()),
        name: Some(name.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// The element type a fixture's `expected.json` names as numpy does (`"int64"`, `"float32"`, ...).
pub fn fixture_dtype(name: &str) -> slice_opt::ir::DType {
    use slice_opt::ir::DType;
    match name {
        "int64" => DType::I64,
        "int32" => DType::I32,
        "int8" => DType::I8,
        "bool" => DType::Bool,
        "float32" => DType::F32,
        "float64" => DType::F64,
        other => panic!("dtype {other} not in the fixtures' list"),
    }
}
