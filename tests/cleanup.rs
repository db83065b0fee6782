//! Layer: passes (`fold`, `cleanup`), end to end in tract-onnx.
//!
//! After fold + cleanup, a slice that feeds only a subgraph and a slice on a graph output keep
//! working (checked by running the result in tract-onnx) (issue 5, acceptance 3).

mod common;

use common::*;
use prost::Message;
use slice_opt::formats::onnx::{proto, OnnxModel};
use slice_opt::{Model, Pipeline};
use tract_onnx::prelude::*;

fn node(op: &str, inputs: &[&str], outputs: &[&str]) -> proto::NodeProto {
    proto::NodeProto {
        op_type: Some(op.into()),
        name: Some(format!("{op}_{}", outputs[0])),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn vi(name: &str, elem: i32, dims: &[i64]) -> proto::ValueInfoProto {
    proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(proto::type_proto::Value::TensorType(
                proto::type_proto::Tensor {
                    elem_type: Some(elem),
                    shape: Some(proto::TensorShapeProto {
                        dim: dims
                            .iter()
                            .map(|&d| proto::tensor_shape_proto::Dimension {
                                value: Some(proto::tensor_shape_proto::dimension::Value::DimValue(
                                    d,
                                )),
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

fn transform(m: &proto::ModelProto) -> Vec<u8> {
    default_passes(&m.encode_to_vec())
}

fn run(bytes: &[u8], inputs: TVec<TValue>) -> Vec<i64> {
    let m = tract_onnx::onnx()
        .model_for_read(&mut &bytes[..])
        .and_then(|m| m.into_optimized())
        .and_then(|m| m.into_runnable())
        .expect("tract loads the model");
    let out = m.run(inputs).expect("tract runs the model");
    out[0]
        .clone()
        .into_tensor()
        .cast_to::<i64>()
        .expect("cast")
        .to_plain_array_view::<i64>()
        .expect("view")
        .iter()
        .copied()
        .collect()
}

#[test]
fn a_slice_feeding_only_a_subgraph_survives_cleanup() {
    // s = w[1:3] with w = arange(5) (int32) -> [1, 2]; read only inside the If branches, by an
    // op `fold` does not evaluate (`Abs`: an `Identity` of the outer constant would fold inside
    // the branches, which then no longer read `s`).
    let branch = |name: &str| proto::GraphProto {
        name: Some(name.into()),
        node: vec![node("Abs", &["s"], &[&format!("{name}_out")])],
        output: vec![vi(&format!("{name}_out"), 6, &[2])],
        ..Default::default()
    };
    let graph_attr = |name: &str, g: proto::GraphProto| proto::AttributeProto {
        name: Some(name.into()),
        g: Some(Box::new(g)),
        r#type: Some(proto::attribute_proto::AttributeType::Graph as i32),
        ..Default::default()
    };
    let mut if_node = node("If", &["cond"], &["y"]);
    if_node.attribute = vec![
        graph_attr("then_branch", branch("then")),
        graph_attr("else_branch", branch("else")),
    ];
    let g = proto::GraphProto {
        name: Some("g".into()),
        node: vec![node("Slice", &["w", "starts", "ends"], &["s"]), if_node],
        initializer: vec![
            arange_i32("w", &[5]),
            i64_tensor("starts", &[1]),
            i64_tensor("ends", &[3]),
        ],
        input: vec![vi("cond", 9, &[])],
        output: vec![vi("y", 6, &[2])],
        ..Default::default()
    };
    let out = transform(&model(g));
    let decoded = proto::ModelProto::decode(out.as_slice()).expect("decode");
    let g = decoded.graph.expect("graph");
    assert!(
        g.node.iter().all(|n| n.op_type() != "Slice"),
        "the constant slice folds"
    );
    assert!(
        g.initializer.iter().any(|t| t.name() == "s"),
        "the folded value the branches read stays"
    );
    let cond = tensor0(true);
    assert_eq!(run(&out, tvec![cond.into()]), vec![1, 2]);
}

#[test]
fn a_slice_on_a_graph_output_survives_cleanup() {
    // Constant: y = w[::-2] with w = arange(5) -> [4, 2, 0]. Dynamic: z = x[1:] on x = [10, 20, 30].
    let g = proto::GraphProto {
        name: Some("g".into()),
        node: vec![
            node("Slice", &["w", "s0", "e0", "a0", "st0"], &["y"]),
            node("Slice", &["x", "s1", "e1"], &["z"]),
        ],
        initializer: vec![
            arange_i32("w", &[5]),
            i64_tensor("s0", &[-1]),
            i64_tensor("e0", &[i64::MIN]),
            i64_tensor("a0", &[0]),
            i64_tensor("st0", &[-2]),
            i64_tensor("s1", &[1]),
            i64_tensor("e1", &[i64::MAX]),
        ],
        input: vec![vi("x", 7, &[3])],
        output: vec![vi("y", 6, &[3]), vi("z", 7, &[2])],
        ..Default::default()
    };
    let out = transform(&model(g));
    let x = tract_ndarray::arr1(&[10i64, 20, 30]).into_dyn();
    let m = tract_onnx::onnx()
        .model_for_read(&mut &out[..])
        .and_then(|m| m.into_optimized())
        .and_then(|m| m.into_runnable())
        .expect("tract loads the model");
    let res = m.run(tvec![Tensor::from(x).into()]).expect("run");
    let vals = |t: &TValue| -> Vec<i64> {
        t.clone()
            .into_tensor()
            .cast_to::<i64>()
            .expect("cast")
            .to_plain_array_view::<i64>()
            .expect("view")
            .iter()
            .copied()
            .collect()
    };
    assert_eq!(vals(&res[0]), vec![4, 2, 0]);
    assert_eq!(vals(&res[1]), vec![20, 30]);
}

/// The dims of graph output `name` as written: a number, a `dim_param`, or `?`.
fn output_dims(bytes: &[u8], name: &str) -> Vec<String> {
    use proto::tensor_shape_proto::dimension::Value as D;
    let m = proto::ModelProto::decode(bytes).expect("decodes");
    let g = m.graph.expect("graph");
    let o = g
        .output
        .iter()
        .find(|o| o.name() == name)
        .expect("the output");
    let Some(proto::type_proto::Value::TensorType(t)) =
        o.r#type.as_ref().and_then(|t| t.value.as_ref())
    else {
        return Vec::new();
    };
    t.shape
        .as_ref()
        .map(|s| {
            s.dim
                .iter()
                .map(|d| match &d.value {
                    Some(D::DimValue(v)) => v.to_string(),
                    Some(D::DimParam(p)) => p.clone(),
                    None => "?".into(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Graph input `x`: float [n, 200].
fn x_n_by_200() -> proto::ValueInfoProto {
    let mut x = vi("x", 1, &[0, 200]);
    if let Some(proto::type_proto::Value::TensorType(t)) =
        x.r#type.as_mut().and_then(|t| t.value.as_mut())
    {
        if let Some(s) = t.shape.as_mut() {
            s.dim[0].value = Some(proto::tensor_shape_proto::dimension::Value::DimParam(
                "n".into(),
            ));
        }
    }
    x
}

/// Issue 19 keeps the second `infer` after `fold` only for slices the first left open: here
/// the start of `x[:, t[150]:]` is a slice of a 200-element table, too big to be carried as a
/// value by propagation, so `infer` alone leaves dim 1 unknown; `fold` makes the start the
/// constant 150 and `infer` runs again. ONNX Slice semantics on x[n, 200]: [n, 200 - 150].
#[test]
fn infer_runs_again_for_a_slice_folding_made_exact() {
    let table: Vec<i64> = (0..200).collect();
    let x = x_n_by_200();
    let m = model(proto::GraphProto {
        node: vec![
            node("Slice", &["table", "s0", "e0"], &["start"]),
            node("Slice", &["x", "start", "big", "ax1"], &["y"]),
        ],
        initializer: vec![
            i64_tensor("table", &table),
            i64_tensor("s0", &[150]),
            i64_tensor("e0", &[151]),
            i64_tensor("ax1", &[1]),
            i64_tensor("big", &[i64::MAX]),
        ],
        input: vec![x],
        output: vec![proto::ValueInfoProto {
            name: Some("y".into()),
            ..Default::default()
        }],
        ..Default::default()
    });
    let run = |passes: Vec<slice_opt::pipeline::PassKind>| {
        let onnx = OnnxModel::from_bytes("m.onnx".as_ref(), bytes::Bytes::from(m.encode_to_vec()))
            .expect("load");
        let mut model = Model::Onnx(onnx);
        Pipeline::with_passes(passes)
            .run(&mut model)
            .expect("pipeline");
        let Model::Onnx(onnx) = model else {
            unreachable!("ONNX in, ONNX out")
        };
        onnx.to_proto().expect("encode").encode_to_vec()
    };
    use slice_opt::pipeline::PassKind::{Fold, Infer};
    assert_eq!(output_dims(&run(vec![Infer]), "y"), ["n", "?"]);
    assert_eq!(output_dims(&run(vec![Infer, Fold]), "y"), ["n", "50"]);
}

/// Issue 19: the second `infer` runs only when an open slice is downstream of a folded node,
/// and then reaches it through other ops. `y = x[:, s:]` with `s = Identity(t[150:151])`
/// (folding `t[150:151]` makes `s` known: ONNX Slice on x[n, 200] gives [n, 50]);
/// `z = w[:, 1:]` with `w` of unknown rank is skipped by `infer` (so left open) but is
/// downstream of nothing folded. With only `z` and an unrelated fold, `fold`'s report lists no
/// node that a second `infer` would have skipped again; with `y` too, it lists `y`'s new shape.
#[test]
fn infer_runs_again_only_downstream_of_a_folded_node() {
    use slice_opt::pipeline::PassKind::{Fold, Infer};
    let table: Vec<i64> = (0..200).collect();
    let x = x_n_by_200();
    // A float input of unknown rank.
    let mut w = vi("w", 1, &[]);
    if let Some(proto::type_proto::Value::TensorType(t)) =
        w.r#type.as_mut().and_then(|t| t.value.as_mut())
    {
        t.shape = None;
    }
    let out = |name: &str| proto::ValueInfoProto {
        name: Some(name.into()),
        ..Default::default()
    };
    let build = |with_y: bool| {
        let mut nodes = vec![
            // Unrelated to any open slice: folds to [151, 152].
            node("Slice", &["table", "e0", "e2"], &["c"]),
            node("Slice", &["w", "s0", "big", "ax1"], &["z"]),
        ];
        let mut outputs = vec![out("c"), out("z")];
        if with_y {
            nodes.push(node("Slice", &["table", "s0", "e0"], &["start"]));
            nodes.push(node("Identity", &["start"], &["s"]));
            nodes.push(node("Slice", &["x", "s", "big", "ax1"], &["y"]));
            outputs.push(out("y"));
        }
        model(proto::GraphProto {
            node: nodes,
            initializer: vec![
                i64_tensor("table", &table),
                i64_tensor("s0", &[150]),
                i64_tensor("e0", &[151]),
                i64_tensor("e2", &[153]),
                i64_tensor("ax1", &[1]),
                i64_tensor("big", &[i64::MAX]),
            ],
            input: vec![x.clone(), w.clone()],
            output: outputs,
            ..Default::default()
        })
    };
    let run = |m: &proto::ModelProto| {
        let onnx = OnnxModel::from_bytes("m.onnx".as_ref(), bytes::Bytes::from(m.encode_to_vec()))
            .expect("load");
        let mut model = Model::Onnx(onnx);
        let report = Pipeline::with_passes(vec![Infer, Fold])
            .run(&mut model)
            .expect("pipeline");
        let Model::Onnx(onnx) = model else {
            unreachable!("ONNX in, ONNX out")
        };
        (onnx.to_proto().expect("encode").encode_to_vec(), report)
    };
    let (_, report) = run(&build(false));
    let infer = &report.passes[0];
    assert!(
        infer.skipped.iter().any(|c| c.node == "Slice_z"),
        "infer left z open: {:?}",
        infer.skipped
    );
    let fold = &report.passes[1];
    assert_eq!(fold.changes.len(), 1, "{:?}", fold.changes);
    assert!(
        fold.skipped.is_empty(),
        "a second infer ran: {:?}",
        fold.skipped
    );

    let (bytes, report) = run(&build(true));
    assert_eq!(output_dims(&bytes, "y"), ["n", "50"]);
    let fold = &report.passes[1];
    assert!(
        fold.changes
            .iter()
            .any(|c| c.node == "Slice_y" && c.what == "shape inferred"),
        "{:?}",
        fold.changes
    );
}

/// Issue 19: a pipeline without details (what the command line runs unless `-v` or `--report`
/// asks for the list) counts exactly the changes and skipped nodes a detailed run records, on
/// every shipped model and every pass, and transforms the model the same way.
#[test]
fn counting_without_details_matches_the_detailed_report() {
    use slice_opt::pipeline::PassKind;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut models: Vec<_> = std::fs::read_dir(&dir)
        .expect("models")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "onnx" || x == "xml"))
        .collect();
    models.sort();
    assert!(models.len() >= 20, "{} models", models.len());
    let passes = [
        vec![PassKind::Infer, PassKind::Fold, PassKind::Cleanup],
        vec![PassKind::Lower, PassKind::Raise],
    ];
    let mut compared = 0;
    for path in &models {
        for list in &passes {
            let mut a = Model::load(path).expect("load");
            let mut b = Model::load(path).expect("load");
            let detailed = Pipeline::with_passes(list.clone())
                .run(&mut a)
                .expect("run");
            let counted = Pipeline::with_passes(list.clone())
                .details(false)
                .run(&mut b)
                .expect("run");
            for (d, c) in detailed.passes.iter().zip(&counted.passes) {
                assert_eq!(d.changes.len(), d.changed, "{}", path.display());
                assert_eq!(d.skipped.len(), d.skipped_count, "{}", path.display());
                assert_eq!(
                    c.changed,
                    d.changes.len(),
                    "{} {:?}",
                    path.display(),
                    c.pass
                );
                assert_eq!(c.skipped_count, d.skipped.len(), "{}", path.display());
                assert!(c.changes.is_empty() && c.skipped.is_empty());
                compared += d.changed;
            }
            // One name in two directories: a model with external data names its file after it.
            let (da, db) = (
                tempfile::tempdir().expect("tempdir"),
                tempfile::tempdir().expect("tempdir"),
            );
            let name = path.file_name().expect("name");
            let (pa, pb) = (da.path().join(name), db.path().join(name));
            a.save(&pa).expect("save");
            b.save(&pb).expect("save");
            assert_eq!(
                std::fs::read(&pa).expect("read"),
                std::fs::read(&pb).expect("read"),
                "{}",
                path.display()
            );
        }
    }
    assert!(compared > 50, "only {compared} changes compared");
}

/// Propagation keeps one copy of a slice's dims when merging with the declared shape cannot
/// change them; when a dim is unknown the declaration fills it in the propagated fact, and the
/// slice's own inferred dims must still be its own. `y = x[:, s:]` on x[3, 200] with `s` a graph
/// input: by ONNX Slice, dim 1 is 200 - clamp(s, 0, 200), anything in [0, 200], so the
/// declared 7 is neither confirmed nor contradicted.
#[test]
fn an_unknown_slice_dim_is_not_taken_from_the_declaration() {
    let m = model(proto::GraphProto {
        node: vec![node("Slice", &["x", "s", "big", "ax1"], &["y"])],
        initializer: vec![i64_tensor("ax1", &[1]), i64_tensor("big", &[i64::MAX])],
        input: vec![vi("x", 1, &[3, 200]), vi("s", 7, &[1])],
        output: vec![vi("y", 1, &[3, 7])],
        ..Default::default()
    });
    let load = || {
        let onnx = OnnxModel::from_bytes("m.onnx".as_ref(), bytes::Bytes::from(m.encode_to_vec()))
            .expect("load");
        Model::Onnx(onnx)
    };
    // `check` resolves the slice itself.
    let report = slice_opt::check::check(&load());
    assert_eq!(report.rows[0].declared, "[3, 7]");
    assert_eq!(report.rows[0].inferred, "[3, 0..200]");
    assert!(report.passed());
    // Pass `infer` takes the dims propagation resolved.
    let mut model = load();
    let run = Pipeline::with_passes(vec![slice_opt::pipeline::PassKind::Infer])
        .run(&mut model)
        .expect("infer");
    let change = &run.passes[0].changes[0];
    assert_eq!(change.node, "Slice_y");
    assert_eq!(change.after.as_deref(), Some("[3, 0..200]"));
}

/// A name a pass asks for is free: `unique_name` on a model loaded from a file (every fixture,
/// ONNX and IR) never returns the name of a node or value of that model.
#[test]
fn a_unique_name_is_not_one_of_the_loaded_model() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("models/") {
        let path = entry.expect("entry").path();
        let ext = path.extension().and_then(|e| e.to_str());
        if !matches!(ext, Some("onnx") | Some("xml")) {
            continue;
        }
        let mut model = slice_opt::Model::load(&path).expect("fixture loads");
        let graph = model.graph_mut();
        let taken: std::collections::HashSet<String> = graph
            .g
            .node_weights()
            .flat_map(|n| {
                std::iter::once(n.name.to_string())
                    .chain(n.outputs.iter().map(|v| v.name.to_string()))
            })
            .filter(|n| !n.is_empty())
            .collect();
        assert!(!taken.is_empty(), "{}", path.display());
        for name in &taken {
            let fresh = graph.unique_name(name);
            assert!(
                !taken.contains(&fresh),
                "{}: unique_name('{name}') gave '{fresh}', a name of the model",
                path.display()
            );
        }
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} fixtures");
}
