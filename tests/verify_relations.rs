//! Issue 45: `--verify` on LLM exports. The size search keeps the relations a model states
//! between its input dims (a declared dim that is an expression, as optimum names an attention
//! mask `past_sequence_length + sequence_length`; dims that meet in a `Concat`/`Add`/`MatMul`)
//! and prints the sizes it chose; a size given with `--bind` that contradicts such a relation is
//! never "verified"; inlining the branch of an `If` whose branch names its output like the `If`
//! (optimum's merged decoders) makes no cycle. Every model is built here; what a model admits is
//! ONNX's own rules (Concat joins equal dims, Add broadcasts equal dims or 1).

mod common;

use std::path::{Path, PathBuf};

use common::{i64_tensor, int_attr, model, node};
use prost::Message;
use slice_opt::formats::onnx::{proto, OnnxModel};
use slice_opt::verify::{verify_onnx_with, Verification, VerifyOptions};

fn value(name: &str, elem: i32, dims: Option<&[Result<i64, &str>]>) -> proto::ValueInfoProto {
    use proto::tensor_shape_proto::dimension::Value as DV;
    use proto::type_proto::{Tensor as TT, Value as TV};
    proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(TV::TensorType(TT {
                elem_type: Some(elem),
                shape: dims.map(|dims| proto::TensorShapeProto {
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

fn f32_scalar(name: &str, v: f32) -> proto::TensorProto {
    proto::TensorProto {
        name: Some(name.into()),
        data_type: Some(1),
        raw_data: Some(bytes::Bytes::from(v.to_le_bytes().to_vec())),
        ..Default::default()
    }
}

fn write(dir: &Path, name: &str, m: &proto::ModelProto) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, m.encode_to_vec()).expect("write model");
    p
}

fn load(p: &Path) -> OnnxModel {
    OnnxModel::load(p).expect("load")
}

/// A decoder's attention in miniature: keys = Concat(past, new, axis 1): `[batch, past + seq,
/// 4]`; scores = ReduceSum over the last axis: `[batch, past + seq]`; `y = scores + mask`, the
/// mask `[batch, mask_dim]`. ONNX's Add admits only `mask_dim = past + seq` (or 1).
fn attention_model(past: &str, seq: &str, mask_dim: &str) -> proto::ModelProto {
    let mut reduce = node("ReduceSum", "scores", &["keys", "axes"], &["scores"]);
    reduce.attribute.push(int_attr("keepdims", 0));
    model(proto::GraphProto {
        name: Some("g".into()),
        node: vec![
            node("Concat", "keys", &["past_key", "key"], &["keys"]).tap_axis(1),
            reduce,
            node("Add", "masked", &["scores", "attention_mask"], &["y"]),
        ],
        initializer: vec![i64_tensor("axes", &[2])],
        input: vec![
            value("past_key", 1, Some(&[Err("batch"), Err(past), Ok(4)])),
            value("key", 1, Some(&[Err("batch"), Err(seq), Ok(4)])),
            value("attention_mask", 1, Some(&[Err("batch"), Err(mask_dim)])),
        ],
        output: vec![value("y", 1, None)],
        ..Default::default()
    })
}

trait TapAxis {
    fn tap_axis(self, axis: i64) -> Self;
}

impl TapAxis for proto::NodeProto {
    fn tap_axis(mut self, axis: i64) -> Self {
        self.attribute.push(int_attr("axis", axis));
        self
    }
}

fn verify(dir: &Path, name: &str, m: &proto::ModelProto, bind: &[(&str, usize)]) -> Verification {
    let a = load(&write(dir, name, m));
    let opts = VerifyOptions {
        bind: bind.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..VerifyOptions::default()
    };
    verify_onnx_with(&a, &a, &opts)
}

/// optimum's naming: the mask's dim is the expression `past_sequence_length + sequence_length`,
/// bound as that expression (3 + 3), not as a name of its own (which got 3, 64 or 512, never
/// what the keys have).
#[test]
fn optimum_mask_dim_is_bound_as_the_expression_it_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = attention_model(
        "past_sequence_length",
        "sequence_length",
        "past_sequence_length + sequence_length",
    );
    match verify(dir.path(), "opt.onnx", &m, &[]) {
        Verification::Passed { detail, .. } => {
            assert!(detail.contains("past_sequence_length=3"), "{detail}");
            assert!(detail.contains("sequence_length=3"), "{detail}");
            // The mask's shape is printed: batch 3, past + seq = 6.
            assert!(detail.contains("attention_mask=3x6"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    // Sizes given for the two symbols decide the mask's: 2 + 5.
    let bind = [("past_sequence_length", 2), ("sequence_length", 5)];
    match verify(dir.path(), "opt.onnx", &m, &bind) {
        Verification::Passed { detail, .. } => {
            assert!(detail.contains("attention_mask=3x7"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
}

/// TorchScript's naming: three free names. The Concat and the Add state `total = past + seq`;
/// the search keeps it and says so.
#[test]
fn free_names_that_meet_in_concat_and_add_are_bound_consistently() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = attention_model("past", "seq", "total");
    match verify(dir.path(), "ts.onnx", &m, &[]) {
        Verification::Passed { detail, .. } => {
            assert!(detail.contains("past=3"), "{detail}");
            assert!(detail.contains("seq=3"), "{detail}");
            assert!(detail.contains("total=6"), "{detail}");
            assert!(
                detail.contains("relations kept: total = past + seq"),
                "{detail}"
            );
        }
        other => panic!("{other:?}"),
    }
    // A size given for `total` alone: the others follow (past + seq = 10).
    match verify(dir.path(), "ts.onnx", &m, &[("total", 10)]) {
        Verification::Passed { detail, .. } => {
            assert!(detail.contains("total=10"), "{detail}");
            let size = |name: &str| -> usize {
                let at = detail
                    .find(&format!(" {name}="))
                    .unwrap_or_else(|| panic!("{name} in {detail}"));
                detail[at + name.len() + 2..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("{name} in {detail}"))
            };
            assert_eq!(size("past") + size("seq"), 10, "{detail}");
        }
        other => panic!("{other:?}"),
    }
}

/// Sizes given with `--bind` that contradict a stated relation are never "verified", whatever
/// tract would do with them.
#[test]
fn a_binding_that_contradicts_a_stated_relation_is_not_verified() {
    let dir = tempfile::tempdir().expect("tempdir");
    let m = attention_model("past", "seq", "total");
    let bind = [("past", 3), ("seq", 3), ("total", 5)];
    match verify(dir.path(), "ts.onnx", &m, &bind) {
        Verification::NotVerified(why) => {
            assert!(why.contains("contradict"), "{why}");
            assert!(why.contains("total"), "{why}");
        }
        other => panic!("a contradicting binding must not verify: {other:?}"),
    }
    // The same with the relation in the declaration (optimum's naming).
    let m = attention_model(
        "past_sequence_length",
        "sequence_length",
        "past_sequence_length + sequence_length",
    );
    let bind = [
        ("past_sequence_length", 3),
        ("sequence_length", 3),
        ("past_sequence_length + sequence_length", 5),
    ];
    match verify(dir.path(), "opt.onnx", &m, &bind) {
        Verification::Passed { detail, .. } => {
            // The expression is not a name to bind: the mask has 3 + 3.
            assert!(detail.contains("attention_mask=3x6"), "{detail}")
        }
        other => panic!("{other:?}"),
    }
}

fn graph_attr(name: &str, g: proto::GraphProto) -> proto::AttributeProto {
    proto::AttributeProto {
        name: Some(name.into()),
        g: Some(Box::new(g)),
        r#type: Some(proto::attribute_proto::AttributeType::Graph as i32),
        ..Default::default()
    }
}

/// A branch of optimum's merged decoder in miniature: `t = op(x, c)`, then an inner `If` on a
/// constant that reads `t` from the enclosing scope (`u = t` or `u = -t`), then
/// `logits = u * k`. Its values are named as in the other branch, and its output as the
/// outer `If`'s.
fn merged_branch(op: &str, k: f32) -> proto::GraphProto {
    let mut inner = node("If", "inner", &["inner_cond"], &["u"]);
    inner.attribute.push(graph_attr(
        "then_branch",
        proto::GraphProto {
            name: Some("inner_then".into()),
            node: vec![node("Identity", "keep", &["t"], &["u_then"])],
            output: vec![value("u_then", 1, None)],
            ..Default::default()
        },
    ));
    inner.attribute.push(graph_attr(
        "else_branch",
        proto::GraphProto {
            name: Some("inner_else".into()),
            node: vec![node("Neg", "flip", &["t"], &["u_else"])],
            output: vec![value("u_else", 1, None)],
            ..Default::default()
        },
    ));
    let mut cond = proto::TensorProto {
        name: Some("inner_cond".into()),
        data_type: Some(9),
        raw_data: Some(bytes::Bytes::from(vec![1u8])),
        ..Default::default()
    };
    cond.dims.clear();
    proto::GraphProto {
        name: Some(format!("{op}_branch")),
        node: vec![
            node(op, "first", &["x", "c"], &["t"]),
            inner,
            node("Mul", "last", &["u", "k"], &["logits"]),
        ],
        initializer: vec![f32_scalar("c", 1.0), f32_scalar("k", k), cond],
        output: vec![value("logits", 1, None)],
        ..Default::default()
    }
}

/// `logits = If(use_cache_branch, with_past, without_past)`, each branch naming its output
/// `logits` like the `If` does.
fn merged_decoder(k_with_past: f32) -> proto::ModelProto {
    let mut iff = node("If", "optimum::if", &["use_cache_branch"], &["logits"]);
    iff.attribute
        .push(graph_attr("then_branch", merged_branch("Add", k_with_past)));
    iff.attribute
        .push(graph_attr("else_branch", merged_branch("Sub", 2.0)));
    model(proto::GraphProto {
        name: Some("merged".into()),
        node: vec![iff],
        input: vec![
            value("x", 1, Some(&[Err("batch_size"), Ok(4)])),
            value("use_cache_branch", 9, Some(&[Ok(1)])),
        ],
        output: vec![value("logits", 1, Some(&[Err("batch_size"), Ok(4)]))],
        ..Default::default()
    })
}

#[test]
fn inlining_a_branch_named_like_its_if_makes_no_cycle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = load(&write(dir.path(), "merged.onnx", &merged_decoder(3.0)));
    let opts = VerifyOptions::default();
    match verify_onnx_with(&a, &a, &opts) {
        Verification::Passed { detail, runs, .. } => {
            assert!(!detail.contains("NOT verified"), "{detail}");
            assert!(detail.contains("use_cache_branch=1"), "{detail}");
            assert!(detail.contains("use_cache_branch=0"), "{detail}");
            assert_eq!(runs, 2 * opts.runs, "{detail}");
        }
        other => panic!("{other:?}"),
    }
    // A change in the with-past branch only is caught in that case.
    let b = load(&write(dir.path(), "changed.onnx", &merged_decoder(4.0)));
    match verify_onnx_with(&a, &b, &opts) {
        Verification::Failed(why) => assert!(why.contains("use_cache_branch=1"), "{why}"),
        other => panic!("a with-past difference must fail: {other:?}"),
    }
}

/// Acceptance 1 on three exports of the corpus (`tools/verify_exports.py` runs all of them):
/// TorchScript's gpt2 with past (three free names: the mask is read through a `Gather` at
/// `batch * total + kv_index`, so `total` must be `past + seq`), optimum's gpt2 (the mask named
/// `past_sequence_length + sequence_length`) and dynamo's BERT (`token_type_ids` index a table
/// of 2 rows). Each is verified, and the sizes printed keep the relation.
#[test]
fn corpus_llm_exports_are_verified_with_sizes_that_keep_their_relations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for (name, wants) in [
        // The relation is assumed (no shape shows it), tried first with distinct sizes.
        (
            "gpt2_past.ts13.onnx",
            &["past=3", "seq=4", "total=7", "total = past + seq"][..],
        ),
        (
            "opt_gpt2_model.optimum14.onnx",
            &[
                "past_sequence_length=3",
                "sequence_length=3",
                "attention_mask=3x6",
            ][..],
        ),
        ("bert.dynamo18.onnx", &["batch=3", "seq=3"][..]),
    ] {
        let out = dir.path().join(name);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_slice-opt"))
            .arg(repo.join("tests/data/exports").join(name))
            .arg("-o")
            .arg(&out)
            .arg("--verify")
            .output()
            .expect("run slice-opt");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{name}: {err}");
        let line = err
            .lines()
            .find(|l| l.trim_start().starts_with("verify "))
            .unwrap_or_else(|| panic!("{name}: no verify line: {err}"));
        assert!(line.contains("verified in tract-onnx"), "{name}: {line}");
        assert!(!line.contains("NOT verified"), "{name}: {line}");
        for w in wants {
            assert!(line.contains(w), "{name}: {w} in {line}");
        }
    }
}
