//! Layer: robustness: formats, shape and passes on hostile sizes and depths.
//!
//! Hostile sizes, deep graphs and deep nesting end in a typed error or a result, never in a huge
//! allocation, an arithmetic overflow panic (tests run with overflow checks) or a stack overflow.
//! Deep inputs run on a thread with a 2 MiB stack (a library caller's default), not the 8 MiB main
//! thread (issue 9, hardening).

mod common;

use prost::Message;
use slice_opt::formats::onnx::proto::{self, ModelProto};
use slice_opt::formats::onnx::OnnxModel;
use slice_opt::formats::openvino::OvModel;
use slice_opt::{Model, Pipeline};

use common::{i64_tensor, model, node};

/// Runs `f` on a thread with a 2 MiB stack; a stack overflow aborts the test binary.
fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic")
}

fn input(name: &str, dims: &[Result<i64, &str>]) -> proto::ValueInfoProto {
    use proto::tensor_shape_proto::dimension::Value as DV;
    use proto::type_proto::{Tensor as TT, Value as TV};
    proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(TV::TensorType(TT {
                elem_type: Some(1),
                shape: Some(proto::TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|d| proto::tensor_shape_proto::Dimension {
                            value: Some(match d {
                                Ok(v) => DV::DimValue(*v),
                                Err(p) => DV::DimParam(p.to_string()),
                            }),
                            ..Default::default()
                        })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn output(name: &str) -> proto::ValueInfoProto {
    proto::ValueInfoProto {
        name: Some(name.into()),
        ..Default::default()
    }
}

fn load(m: &ModelProto) -> slice_opt::Result<OnnxModel> {
    OnnxModel::from_bytes("hardening.onnx".as_ref(), m.encode_to_vec().into())
}

/// A tensor that declares 2^62 (or 2^31 x 2^31) elements but carries a few bytes is refused
/// with an error naming it; nothing is sized from the declared shape.
#[test]
fn declared_huge_initializers_do_not_allocate() {
    for dims in [vec![1i64 << 62], vec![1 << 31, 1 << 31], vec![i64::MAX, 2]] {
        for typed in [false, true] {
            let t = proto::TensorProto {
                name: Some("w".into()),
                dims: dims.clone(),
                data_type: Some(1),
                raw_data: (!typed).then(|| bytes::Bytes::from_static(&[0, 0, 128, 63])),
                float_data: if typed { vec![1.0] } else { vec![] },
                ..Default::default()
            };
            let g = proto::GraphProto {
                initializer: vec![t],
                output: vec![output("w")],
                ..Default::default()
            };
            let err = load(&model(g)).expect_err("refused").to_string();
            assert!(err.contains("'w'"), "{dims:?}: {err}");
        }
    }
}

/// Slices on inputs with dims near i64::MAX and bounds at the i64 extremes infer a shape
/// (or a typed error) without overflowing and without allocating per element.
#[test]
fn extreme_dims_and_bounds_infer_without_overflow() {
    let big = [Ok(i64::MAX), Ok(1 << 62), Err("N")];
    let bounds = [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX - 1, i64::MAX];
    let steps = [i64::MIN, -(1 << 62), -1, 1, 1 << 62, i64::MAX];
    let mut ran = 0;
    for d in big {
        for &s in &bounds {
            for &e in &bounds {
                for &st in &steps {
                    let g = proto::GraphProto {
                        node: vec![node("Slice", "s", &["x", "b", "e", "a", "st"], &["y"])],
                        initializer: vec![
                            i64_tensor("b", &[s]),
                            i64_tensor("e", &[e]),
                            i64_tensor("a", &[0]),
                            i64_tensor("st", &[st]),
                        ],
                        input: vec![input("x", &[d])],
                        output: vec![output("y")],
                        ..Default::default()
                    };
                    let mut m = Model::Onnx(load(&model(g)).expect("load"));
                    let _ = Pipeline::new().run(&mut m);
                    let _ = slice_opt::check::check(&m);
                    ran += 1;
                }
            }
        }
    }
    assert_eq!(ran, 3 * 7 * 7 * 6);
}

/// A chain of 200,000 nodes goes through load, the default passes, check and save on a 2 MiB
/// stack: no pass walks the graph recursively.
#[test]
fn a_200k_node_chain_does_not_overflow_the_stack() {
    let out = small_stack(|| {
        let n = 200_000;
        let mut nodes = Vec::with_capacity(n);
        let mut prev = "x".to_string();
        for i in 0..n {
            let y = format!("y{i}");
            if i % 2 == 0 {
                nodes.push(node(
                    "Slice",
                    &format!("s{i}"),
                    &[&prev, "b", "e", "a"],
                    &[&y],
                ));
            } else {
                nodes.push(node("Identity", &format!("i{i}"), &[&prev], &[&y]));
            }
            prev = y;
        }
        let g = proto::GraphProto {
            node: nodes,
            initializer: vec![
                i64_tensor("b", &[0]),
                i64_tensor("e", &[i64::MAX]),
                i64_tensor("a", &[0]),
            ],
            input: vec![input("x", &[Err("N")])],
            output: vec![output(&prev)],
            ..Default::default()
        };
        let mut m = Model::Onnx(load(&model(g)).expect("load"));
        let report = Pipeline::new().run(&mut m).expect("pipeline");
        let checked = slice_opt::check::check(&m);
        let saved = match &m {
            Model::Onnx(o) => o.to_proto().map(|p| p.encode_to_vec().len()),
            Model::OpenVino(_) => unreachable!("built as ONNX"),
        };
        (
            report.passes.len(),
            checked.rows.len(),
            checked.passed(),
            saved.is_ok(),
        )
    });
    assert_eq!(out, (3, 100_000, true, true));
}

/// ONNX subgraphs nested 200 deep (If inside If...) are refused by the decoder's recursion
/// limit with a typed error, on a 2 MiB stack.
#[test]
fn deeply_nested_subgraphs_are_refused() {
    let err = small_stack(|| {
        let mut g = proto::GraphProto {
            node: vec![node("Identity", "leaf", &["c"], &["o"])],
            output: vec![output("o")],
            ..Default::default()
        };
        for depth in 0..200 {
            let mut n = node("If", &format!("if{depth}"), &["c"], &["o"]);
            n.attribute.push(proto::AttributeProto {
                name: Some("then_branch".into()),
                r#type: Some(proto::attribute_proto::AttributeType::Graph as i32),
                g: Some(Box::new(g)),
                ..Default::default()
            });
            g = proto::GraphProto {
                node: vec![n],
                output: vec![output("o")],
                ..Default::default()
            };
        }
        g.input = vec![input("c", &[])];
        load(&model(g)).map(|_| ()).map_err(|e| e.to_string())
    });
    let err = err.expect_err("refused");
    assert!(err.contains("not a valid ONNX model"), "{err}");
}

/// IR XML nested 100,000 elements deep is refused with a typed error, on a 2 MiB stack.
#[test]
fn deeply_nested_ir_xml_is_refused() {
    let err = small_stack(|| {
        let depth = 100_000;
        let mut xml = String::from("<?xml version=\"1.0\"?>\n<net name=\"deep\" version=\"11\">");
        xml.push_str(&"<a>".repeat(depth));
        xml.push_str(&"</a>".repeat(depth));
        xml.push_str("</net>");
        OvModel::from_parts("deep.xml".as_ref(), xml, None)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    let err = err.expect_err("refused");
    assert!(err.contains("deep.xml"), "{err}");
}

/// An IR constant whose declared shape is 2^62 elements but whose `size` is 4 bytes is refused
/// (the element count is checked against the bytes, not allocated).
#[test]
fn ir_constant_with_a_huge_declared_shape_is_refused() {
    let xml = r#"<?xml version="1.0"?>
<net name="huge" version="11">
  <layers>
    <layer id="0" name="c" type="Const" version="opset1">
      <data element_type="f32" shape="4611686018427387904" offset="0" size="4"/>
      <output>
        <port id="0" precision="FP32">
          <dim>4611686018427387904</dim>
        </port>
      </output>
    </layer>
    <layer id="1" name="out" type="Result" version="opset1">
      <input>
        <port id="0" precision="FP32">
          <dim>4611686018427387904</dim>
        </port>
      </input>
    </layer>
  </layers>
  <edges>
    <edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
  </edges>
</net>
"#;
    let r = small_stack(move || {
        let bin = bytes::Bytes::from_static(&[0, 0, 128, 63]);
        match OvModel::from_parts("huge.xml".as_ref(), xml.to_string(), Some(bin)) {
            Err(e) => Err(e.to_string()),
            Ok(m) => {
                let mut m = Model::OpenVino(m);
                Ok(Pipeline::new().run(&mut m).is_ok())
            }
        }
    });
    let err = r.expect_err("refused");
    assert!(err.contains("huge.xml") && err.contains("'c'"), "{err}");
}

/// CPU time of the calling thread (load-independent, unlike wall time on a shared machine).
#[cfg(target_os = "linux")]
fn thread_cpu() -> std::time::Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Issue 18: a `Concat` of 100,000 inputs went through `infer` in 11 s (release), quadratic
/// in the input count (each input port was looked up by scanning every incoming edge). Linear
/// work is a fraction of a second even in a debug build; the quadratic one was over 10^10
/// edge visits. The bound is on this thread's CPU time, not on wall time.
#[cfg(target_os = "linux")]
#[test]
fn a_concat_of_100k_inputs_is_not_quadratic() {
    let n = 100_000;
    let names: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut concat = node("Concat", "concat", &refs, &["c"]);
    concat.attribute.push(common::int_attr("axis", 0));
    let g = proto::GraphProto {
        node: vec![concat, node("Slice", "slice", &["c", "b", "e"], &["y"])],
        initializer: vec![i64_tensor("b", &[0]), i64_tensor("e", &[5])],
        input: names.iter().map(|x| input(x, &[Ok(1), Ok(4)])).collect(),
        output: vec![output("y")],
        ..Default::default()
    };
    let mut m = Model::Onnx(load(&model(g)).expect("load"));
    let start = thread_cpu();
    let report = Pipeline::new().run(&mut m).expect("pipeline");
    let cpu = thread_cpu() - start;
    assert_eq!(report.passes.len(), 3);
    // The Slice's input has a known shape [100000, 4] only through the Concat's inference.
    let rows = slice_opt::check::check(&m).rows;
    assert_eq!(rows.len(), 1);
    assert!(rows[0].inferred.contains('5'), "{:?}", rows[0].inferred);
    assert!(
        cpu.as_secs_f64() < 10.0,
        "default passes took {cpu:?} of CPU"
    );
}
