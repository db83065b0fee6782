//! Layer: semantics (`Dim`) and shape propagation, on ONNX models.
//!
//! Dim expressions as exporters write them, symbols no input carries, and simplifications that must
//! be exact (issue 42, patterns D, F and H).
//!
//! The expected values are Python's integer semantics (`//` and `%` floor towards -inf, sympy's
//! `floor`/`ceiling` of a rational), written out below as plain `i64` arithmetic, and the sizes
//! ONNX `Slice` gives by its specification; never our own output.

mod common;

use std::collections::HashMap;

use proptest::prelude::*;
use slice_opt::formats::onnx::{proto, OnnxModel};
use slice_opt::semantics::dim::{self, Assumptions};
use slice_opt::semantics::Dim;
use slice_opt::Model;

/// Taken by the tests that install assumptions (process-wide): one at a time.
static ASSUMING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn sym(name: &str) -> Dim {
    dim::model_symbol(name)
}

fn at(pairs: &[(&str, i64)]) -> HashMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Python's `a // b` and `a % b` for `b != 0`.
fn py_div(a: i64, b: i64) -> i64 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}
fn py_mod(a: i64, b: i64) -> i64 {
    a - b * py_div(a, b)
}

/// sympy's `str` of the sizes torch's dynamo exporter writes (and ONNX Runtime's symbolic shape
/// inference), each with its value in Python.
type Case = (&'static str, fn(i64, i64) -> i64);

const PYTHON_DIMS: &[Case] = &[
    ("((height//8))*((width//8)) + 1", |h, w| {
        py_div(h, 8) * py_div(w, 8) + 1
    }),
    ("height - 2", |h, _| h - 2),
    ("2*width", |_, w| 2 * w),
    ("height + width", |h, w| h + w),
    ("height*width", |h, w| h * w),
    ("Max(1, height)", |h, _| h.max(1)),
    ("max(height, 2*width - 3)", |h, w| h.max(2 * w - 3)),
    ("Min(height, 1024)", |h, _| h.min(1024)),
    ("Max(1, Min(height, width - 1))", |h, w| h.min(w - 1).max(1)),
    ("((height - 1)//2) + 1", |h, _| py_div(h - 1, 2) + 1),
    ("((height//2))//4", |h, _| py_div(py_div(h, 2), 4)),
    ("floor(height/2 - 1/2)", |h, _| py_div(h - 1, 2)),
    ("floor(floor(floor(height/2 - 1/2)/2)/2)", |h, _| {
        py_div(py_div(py_div(h - 1, 2), 2), 2)
    }),
    ("floor((floor(width/3) + 1)/2)", |_, w| {
        py_div(py_div(w, 3) + 1, 2)
    }),
    ("floor(width/2 + height/3)", |h, w| py_div(3 * w + 2 * h, 6)),
    ("ceiling(height/3)", |h, _| -py_div(-h, 3)),
    ("-(-height//8)", |h, _| -py_div(-h, 8)),
    ("Mod(height, 4)", |h, _| py_mod(h, 4)),
    ("PythonMod(height + 3, 8)", |h, _| py_mod(h + 3, 8)),
    ("height % 8 + width % 3", |h, w| py_mod(h, 8) + py_mod(w, 3)),
    ("height - 8*((height//8))", |h, _| py_mod(h, 8)),
    ("FloorDiv(height + width, 3)", |h, w| py_div(h + w, 3)),
    ("height**2 - width", |h, w| h * h - w),
    ("(height + 1)*(width - 1)", |h, w| (h + 1) * (w - 1)),
    ("unk__9 - unk__9 + height", |h, _| h),
];

#[test]
fn python_syntax_dims_read_as_python_computes_them() {
    for (text, f) in PYTHON_DIMS {
        let d = Dim::parse(text, &sym).unwrap_or_else(|| panic!("{text} does not parse"));
        assert!(!d.is_unknown(), "{text}: {d}");
        for h in 0..40 {
            for w in 0..20 {
                let b = at(&[("height", h), ("width", w), ("unk__9", 5)]);
                assert_eq!(
                    d.eval(&b),
                    Some(f(h, w)),
                    "{text} at h={h} w={w}: read as {d}"
                );
            }
        }
        // What we write reads back as the same dim.
        let written = d.to_onnx().expect("an expression");
        assert_eq!(
            Dim::parse(&written, &sym),
            Some(d.clone()),
            "{text} -> {written}"
        );
    }
}

/// Every expression `dim_param` torch 2.15's dynamo exporter wrote on a corpus of 19 exported
/// models (gpt2, llama, qwen2, phi, gemma, bert, distilbert, vit, resnet, t5, whisper; opset 18),
/// read as the expression it is: its symbols are the names inside, and its value is Python's.
#[test]
fn the_dims_torch_dynamo_wrote_read_as_expressions() {
    type Env = fn(&dyn Fn(&str) -> i64) -> i64;
    let cases: [(&str, Env); 14] = [
        ("batch*seq", |v| v("batch") * v("seq")),
        ("past + seq", |v| v("past") + v("seq")),
        ("seq + past", |v| v("past") + v("seq")),
        ("(width//8)", |v| py_div(v("width"), 8)),
        ("(height//8)", |v| py_div(v("height"), 8)),
        ("Min(64, seq)", |v| v("seq").min(64)),
        ("(((width - 1)//2)) + 1", |v| py_div(v("width") - 1, 2) + 1),
        ("(((width - 1)//4)) + 1", |v| py_div(v("width") - 1, 4) + 1),
        ("(((width - 1)//8)) + 1", |v| py_div(v("width") - 1, 8) + 1),
        ("(((height - 1)//2)) + 1", |v| {
            py_div(v("height") - 1, 2) + 1
        }),
        ("(((height - 1)//4)) + 1", |v| {
            py_div(v("height") - 1, 4) + 1
        }),
        ("(((height - 1)//8)) + 1", |v| {
            py_div(v("height") - 1, 8) + 1
        }),
        ("((height//8))*((width//8))", |v| {
            py_div(v("height"), 8) * py_div(v("width"), 8)
        }),
        ("((height//8))*((width//8)) + 1", |v| {
            py_div(v("height"), 8) * py_div(v("width"), 8) + 1
        }),
    ];
    for (text, f) in cases {
        let d = Dim::parse(text, &sym).unwrap_or_else(|| panic!("{text}"));
        let names: Vec<String> = d.symbols().iter().map(|s| s.name().to_string()).collect();
        assert!(
            !names.is_empty() && names.iter().all(|n| !n.contains(' ')),
            "{text}: {names:?}"
        );
        for i in 0..300i64 {
            let val = |n: &str| (i * (n.len() as i64 + 3) + 7 * n.len() as i64) % 97;
            let b: HashMap<String, i64> = names.iter().map(|n| (n.clone(), val(n))).collect();
            assert_eq!(d.eval(&b), Some(f(&val)), "{text} at {b:?}: {d}");
        }
    }
}

#[test]
fn nested_floor_divisions_fold_into_one() {
    // The example: three halvings of a padded size are one division by 8.
    let nested = Dim::parse("floor(floor(floor(height/2 - 1/2)/2)/2)", &sym).unwrap();
    let flat = Dim::parse("floor((height - 1)/8)", &sym).unwrap();
    assert_eq!(nested, flat, "{nested} vs {flat}");
    assert_eq!(nested.to_onnx(), flat.to_onnx());
    assert!(nested.to_onnx().unwrap().len() <= "floor((height - 1)/8)".len() + 4);
    // Python's // of // by constants, and a constant between the two divisions.
    let a = Dim::parse("((((w + 5)//3) + 2)//4)", &sym).unwrap();
    let b = Dim::parse("((w + 11)//12)", &sym).unwrap();
    assert_eq!(a, b, "{a} vs {b}");
}

#[test]
fn texts_that_are_not_integer_expressions_stay_names() {
    for text in [
        "height/2",
        // Not an integer for every value (height = width = 1): refused, not floored.
        "2*height*width/4",
        "height // width",
        "height % width",
        "height % 0",
        "height // 0",
        "Foo(height)",
        "height ** width",
        "height**9",
        "batch size",
        "2.5*height",
        "min()",
        "floor(height, 2)",
        "",
        "(height",
        "height)",
    ] {
        assert_eq!(Dim::parse(text, &sym), None, "{text:?}");
    }
    // Too long, or a min/max of too many arguments: one opaque name, read at once (a sum of
    // 20,000 names took the algebra minutes).
    let long = (0..400)
        .map(|i| format!("a{i}"))
        .collect::<Vec<_>>()
        .join(" + ");
    let wide = format!(
        "Max({})",
        (0..40)
            .map(|i| format!("a{i} - {i}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for text in [long, wide] {
        let start = std::time::Instant::now();
        assert_eq!(Dim::parse(&text, &sym), None);
        assert!(start.elapsed().as_secs() < 2, "{:?}", start.elapsed());
    }
    // Hostile nesting is refused, not a stack overflow.
    for deep in [
        "-".repeat(200_000) + "h",
        "(".repeat(200_000) + "h" + &")".repeat(200_000),
        "Max(".repeat(100_000) + "h" + &")".repeat(100_000),
    ] {
        assert_eq!(Dim::parse(&deep, &sym), None);
    }
}

/// A random expression over two bounded symbols, built by the dim algebra and evaluated
/// directly; a named problem struct so that a failing case prints readably.
#[derive(Debug, Clone)]
enum Expr {
    N,
    M,
    K(i64),
    Add(Box<Expr>, Box<Expr>),
    Sub(Box<Expr>, Box<Expr>),
    MulK(Box<Expr>, i64),
    Mul(Box<Expr>, Box<Expr>),
    Div(Box<Expr>, i64),
    Min(Box<Expr>, Box<Expr>),
    Max(Box<Expr>, Box<Expr>),
}

/// N in [0, 30], M in [1, 12]: small enough to try every value.
const N_HI: i64 = 30;
const M_LO: i64 = 1;
const M_HI: i64 = 12;

impl Expr {
    fn dim(&self) -> Dim {
        self.dim_with(N_HI)
    }
    /// The dim with `N` in `[0, n_hi]`.
    fn dim_with(&self, n_hi: i64) -> Dim {
        let go = |e: &Expr| e.dim_with(n_hi);
        match self {
            Expr::N => Dim::symbol_bounded("N", 0, Some(n_hi)),
            Expr::M => Dim::symbol_bounded("M", M_LO, Some(M_HI)),
            Expr::K(k) => Dim::known(*k),
            Expr::Add(a, b) => go(a).add(&go(b)),
            Expr::Sub(a, b) => go(a).sub(&go(b)),
            Expr::MulK(a, k) => go(a).mul_const(*k),
            Expr::Mul(a, b) => go(a).mul(&go(b)),
            Expr::Div(a, k) => go(a).div_floor(*k),
            Expr::Min(a, b) => go(a).min(&go(b)),
            Expr::Max(a, b) => go(a).max(&go(b)),
        }
    }
    fn eval(&self, n: i64, m: i64) -> i64 {
        let v = self.eval_wide(n as i128, m as i128);
        v.and_then(|v| i64::try_from(v).ok())
            .expect("small symbols give small values")
    }
    /// The value in i128 (`None` beyond it: `N` up to 2^31 multiplied five times).
    fn eval_wide(&self, n: i128, m: i128) -> Option<i128> {
        let (x, y) = match self {
            Expr::N => return Some(n),
            Expr::M => return Some(m),
            Expr::K(k) => return Some(*k as i128),
            Expr::MulK(a, k) => return a.eval_wide(n, m)?.checked_mul(*k as i128),
            Expr::Div(a, k) => return Some(a.eval_wide(n, m)?.div_euclid(*k as i128)),
            Expr::Add(a, b)
            | Expr::Sub(a, b)
            | Expr::Mul(a, b)
            | Expr::Min(a, b)
            | Expr::Max(a, b) => (a.eval_wide(n, m)?, b.eval_wide(n, m)?),
        };
        match self {
            Expr::Add(..) => x.checked_add(y),
            Expr::Sub(..) => x.checked_sub(y),
            Expr::Mul(..) => x.checked_mul(y),
            Expr::Min(..) => Some(x.min(y)),
            _ => Some(x.max(y)),
        }
    }
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![Just(Expr::N), Just(Expr::M), (-40i64..40).prop_map(Expr::K)];
    leaf.prop_recursive(5, 24, 2, |inner| {
        let b = |e: Expr| Box::new(e);
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| Expr::Add(b(x), b(y))),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| Expr::Sub(b(x), b(y))),
            (inner.clone(), -4i64..5).prop_map(move |(x, k)| Expr::MulK(b(x), k)),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| Expr::Mul(b(x), b(y))),
            (inner.clone(), 1i64..10).prop_map(move |(x, k)| Expr::Div(b(x), k)),
            (inner.clone(), inner.clone()).prop_map(move |(x, y)| Expr::Min(b(x), b(y))),
            (inner.clone(), inner).prop_map(move |(x, y)| Expr::Max(b(x), b(y))),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// Every rewrite the algebra makes (constants pulled out of floor divisions, nested floor
    /// divisions folded, min/max arms dropped by bounds, min/max distributed over sums) is exact
    /// at every value of the symbols within their bounds; the text written reads back equal.
    #[test]
    fn simplified_dims_equal_the_expression_at_every_value(e in expr()) {
        let d = e.dim();
        let text = d.to_onnx();
        let reread = text.as_deref().and_then(|t| {
            Dim::parse(t, &|s: &str| match s {
                "N" => Dim::symbol_bounded("N", 0, Some(N_HI)),
                "M" => Dim::symbol_bounded("M", M_LO, Some(M_HI)),
                other => Dim::symbol(other),
            })
        });
        let (lo, hi) = d.bounds();
        for n in 0..=N_HI {
            for m in M_LO..=M_HI {
                let want = e.eval(n, m);
                let b = at(&[("N", n), ("M", m)]);
                match d.eval(&b) {
                    Some(v) => prop_assert_eq!(v, want, "{:?} at N={}, M={}: {}", e, n, m, d),
                    // Given up (too large): still bounded correctly.
                    None => prop_assert!(d.is_unknown(), "{:?}: {} does not evaluate", e, d),
                }
                prop_assert!(lo.is_none_or(|l| l <= want) && hi.is_none_or(|h| want <= h),
                    "{:?}: bounds {:?}..{:?} miss {} at N={}, M={}", e, lo, hi, want, n, m);
                if let Some(r) = &reread {
                    prop_assert_eq!(r.eval(&b), Some(want), "{:?}: {:?} re-read", e, text);
                }
            }
        }
        if !d.is_unknown() {
            prop_assert!(reread.is_some(), "{:?}: {:?} does not read back", e, text);
        }
    }

    /// The same with `N` up to the dim limit (2^31 - 1), where bounds are not found by trying
    /// every value: values near both ends and at random points are exact and within bounds.
    #[test]
    fn bounds_hold_for_symbols_up_to_the_dim_limit(
        e in expr(),
        far in prop::collection::vec(0i64..=i32::MAX as i64, 8),
    ) {
        let lim = i32::MAX as i64;
        let d = e.dim_with(lim);
        let (lo, hi) = d.bounds();
        let ns = (0..=40).chain(lim - 40..=lim).chain(far);
        for n in ns {
            for m in M_LO..=M_HI {
                let Some(want) = e.eval_wide(n as i128, m as i128) else {
                    continue;
                };
                let b = at(&[("N", n), ("M", m)]);
                if let Some(v) = d.eval(&b) {
                    prop_assert_eq!(v as i128, want, "{:?} at N={}, M={}: {}", e, n, m, d);
                }
                prop_assert!(
                    lo.is_none_or(|l| l as i128 <= want) && hi.is_none_or(|h| want <= h as i128),
                    "{:?}: bounds {:?}..{:?} miss {} at N={}, M={}: {}", e, lo, hi, want, n, m, d
                );
            }
        }
    }
}

/// Bounds of a floor division beside another term come from interval arithmetic, not from
/// the two ends: `N mod 3` on [0, 2^31 - 1] reaches 2 although it is 0 and 1 at the ends.
#[test]
fn floor_divisions_beside_other_terms_keep_sound_bounds() {
    let n = sym("n_mod");
    let m3 = n.sub(&n.div_floor(3).mul_const(3));
    let (lo, hi) = m3.bounds();
    assert!(
        lo.is_none_or(|l| l <= 0) && hi.is_none_or(|h| h >= 2),
        "{m3}: {lo:?}..{hi:?}"
    );
    // Exact where the expression is linear plus periodic (symbols and floor divisions only):
    // N mod 3 is within [0, 2] and reaches both; padding N up to a multiple of 4 (what the
    // dynamo exporter writes for it) is at least N, so the smaller of the two is N.
    assert_eq!((lo, hi), (Some(0), Some(2)), "{m3}");
    let padded = Dim::parse("4*(((n_mod + (Mod(4 - (Mod(n_mod, 4)), 4)))//4))", &sym).unwrap();
    assert_eq!(n.min(&padded), n, "{padded}");
    let a = Dim::parse("((n_mod + 6)//8)", &sym).unwrap();
    let b = Dim::parse("((n_mod + 7)//8)", &sym).unwrap();
    assert!(!a.provably_equal(&b), "{a} = {b} at n = 1? 0 vs 1");
}

/// `--dim` / `--assume`: under what the user states, a GPT-2 causal mask slice
/// `bias[k - q : k]` on a buffer of 32 (the shipped `models/gpt2_causal_mask.onnx`) is short,
/// and exact wherever the assumption holds.
#[test]
fn assumptions_shorten_dims_and_stay_exact_where_they_hold() {
    use slice_opt::semantics::resolve::{range_dim_sym, SymBound};
    use slice_opt::semantics::Clamp;
    // Names of their own: other tests in this binary run at the same time.
    let size = || {
        let (k, q) = (sym("k_assumed"), sym("q_assumed"));
        range_dim_sym(
            &Dim::known(32),
            &SymBound::Index(k.sub(&q)),
            &SymBound::Index(k),
            Some(1),
            Clamp::Ov,
        )
    };
    // ONNX Slice (spec): start/end negative count from the end, then clamp to [0, 32].
    let spec = |k: i64, q: i64| {
        let norm = |v: i64| (if v < 0 { v + 32 } else { v }).clamp(0, 32);
        (norm(k) - norm(k - q)).max(0)
    };
    let _one = ASSUMING.lock().unwrap_or_else(|p| p.into_inner());
    let plain = size();
    let before = plain.to_onnx().unwrap();
    let a = Assumptions::new()
        .parse_fact("k_assumed >= q_assumed")
        .unwrap()
        .parse_dim("q_assumed=1..4096")
        .unwrap();
    let old = dim::assume_in_thread(a.clone());
    let short = size();
    // Another thread (another model worked on at the same time) is not affected.
    let elsewhere = std::thread::spawn(size).join().unwrap();
    dim::assume_in_thread(old);
    assert_eq!(elsewhere, plain);
    let after = short.to_onnx().unwrap();
    assert!(
        after.len() < 80 && after.len() < before.len(),
        "{} chars before, {} after: {after}",
        before.len(),
        after.len()
    );
    for k in 0..80 {
        for q in 0..80 {
            let b = at(&[("k_assumed", k), ("q_assumed", q)]);
            assert_eq!(plain.eval(&b), Some(spec(k, q)), "k={k} q={q}: {before}");
            if k >= q && q >= 1 {
                assert_eq!(short.eval(&b), Some(spec(k, q)), "k={k} q={q}: {after}");
            }
        }
    }
    assert_eq!(
        a.describe(),
        ["q_assumed=1..4096", "k_assumed >= q_assumed"]
    );
    for bad in ["k_assumed", "k_assumed >= ", "3 >= 2", "x >= y z"] {
        assert!(Assumptions::new().parse_fact(bad).is_err(), "{bad}");
    }
    for bad in ["seq", "seq=", "seq=4..2", "=1..3", "seq=a..b", "seq=-1..3"] {
        assert!(Assumptions::new().parse_dim(bad).is_err(), "{bad}");
    }
}

// ---- models built here ------------------------------------------------------------------

fn dims_value(name: &str, dims: &[&str]) -> proto::ValueInfoProto {
    use proto::tensor_shape_proto::{dimension::Value as D, Dimension};
    proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(proto::type_proto::Value::TensorType(
                proto::type_proto::Tensor {
                    elem_type: Some(1),
                    shape: Some(proto::TensorShapeProto {
                        dim: dims
                            .iter()
                            .map(|d| Dimension {
                                value: Some(match d.parse::<i64>() {
                                    Ok(v) => D::DimValue(v),
                                    Err(_) => D::DimParam(d.to_string()),
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

fn load(m: proto::ModelProto) -> Model {
    use prost::Message;
    let onnx = OnnxModel::from_bytes("m.onnx".as_ref(), bytes::Bytes::from(m.encode_to_vec()))
        .expect("load");
    Model::Onnx(onnx)
}

/// `x[batch, seq]` -> an op no rule knows (declared output `y`) -> `y[:, 1:]` -> `z`.
fn free_symbol_model(declared_y: &str) -> proto::ModelProto {
    let mut m = common::model(proto::GraphProto {
        name: Some("g".into()),
        node: vec![
            common::node("Mystery", "mystery", &["x"], &["y"]),
            common::node("Slice", "slice", &["y", "starts", "ends", "axes"], &["z"]),
        ],
        initializer: vec![
            common::i64_tensor("starts", &[1]),
            common::i64_tensor("ends", &[i64::MAX]),
            common::i64_tensor("axes", &[1]),
        ],
        input: vec![dims_value("x", &["batch", "seq"])],
        value_info: vec![dims_value("y", &["batch", declared_y])],
        output: vec![dims_value("z", &["batch", "past_decoder_sequence_length"])],
        ..Default::default()
    });
    m.graph.as_mut().unwrap().node[0].domain = Some("test.free".into());
    m.opset_import.push(proto::OperatorSetIdProto {
        domain: Some("test.free".into()),
        version: Some(1),
    });
    m
}

/// Pattern F: optimum's no-past T5 decoder declares a dim over `past_decoder_sequence_length`,
/// a name no input carries. It must not enter an inferred dim (it holds only if that name is
/// 0); a declared dim over the inputs' own symbols still does.
#[test]
fn a_symbol_no_input_carries_never_enters_an_inferred_dim() {
    let model = load(free_symbol_model("past_decoder_sequence_length + 1"));
    let facts = slice_opt::shape::propagate(&model).expect("propagates");
    let z = facts.by_name(model.graph(), "z").expect("z");
    let z1 = &z.shape.as_ref().expect("rank known")[1];
    assert!(z1.symbols().is_empty(), "inferred {z1}");
    let report = slice_opt::check::check(&model);
    assert_eq!(report.rows.len(), 1);
    let row = &report.rows[0];
    assert!(
        !row.inferred.contains("past_decoder"),
        "check infers {}",
        row.inferred
    );
    // Control: the same model declaring `seq + 1` (a symbol of input `x`) is trusted, and
    // x[:, 1:] of it is `seq` (ONNX Slice: max(seq + 1 - 1, 0)).
    let model = load(free_symbol_model("seq + 1"));
    let facts = slice_opt::shape::propagate(&model).expect("propagates");
    let z = facts.by_name(model.graph(), "z").expect("z");
    let z1 = &z.shape.as_ref().expect("rank known")[1];
    for s in [0i64, 1, 2, 7, 4096] {
        assert_eq!(z1.eval(&at(&[("seq", s)])), Some(s), "{z1}");
    }
}

/// Pattern D: a slice whose declared dims are written by the dynamo exporter (`x[:, ::8]` on
/// `width` is `((width + 7)//8)`: sympy's `str` of torch's FloorDiv) is judged as an expression:
/// `ok` when it is the size ONNX Slice gives, `mismatch` when it is not.
#[test]
fn python_syntax_declared_dims_are_judged_as_expressions() {
    let slice = |out: &str| {
        common::node(
            "Slice",
            out,
            &["x", "zero", "ends", "axes1", "eight"],
            &[out],
        )
    };
    let m = common::model(proto::GraphProto {
        name: Some("g".into()),
        node: vec![slice("right"), slice("wrong")],
        initializer: vec![
            common::i64_tensor("zero", &[0]),
            common::i64_tensor("ends", &[i64::MAX]),
            common::i64_tensor("axes1", &[1]),
            common::i64_tensor("eight", &[8]),
        ],
        input: vec![dims_value("x", &["height", "width"])],
        output: vec![
            dims_value("right", &["height", "((width + 7)//8)"]),
            dims_value("wrong", &["height", "((width + 6)//8)"]),
        ],
        ..Default::default()
    });
    let report = slice_opt::check::check(&load(m));
    let verdict = |name: &str| {
        report
            .rows
            .iter()
            .find(|r| r.node == name)
            .map(|r| (r.verdict, r.detail.clone()))
            .expect("row")
    };
    use slice_opt::check::Verdict;
    assert_eq!(verdict("right").0, Verdict::Ok, "{:?}", verdict("right"));
    assert_eq!(
        verdict("wrong").0,
        Verdict::Mismatch,
        "{:?}",
        verdict("wrong")
    );
}

/// The dims written for the two slices of `models/gpt2_causal_mask.onnx` after the default
/// passes under `a` (each parsed back as a reader would), and the written model's metadata.
fn gpt2_written(a: Assumptions) -> (Vec<Vec<Dim>>, Vec<proto::StringStringEntryProto>) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/gpt2_causal_mask.onnx");
    let mut model = Model::load(&path).expect("loads");
    slice_opt::Pipeline::new()
        .assume(a)
        .run(&mut model)
        .expect("runs");
    let Model::Onnx(m) = &model else {
        unreachable!("ONNX in, ONNX out")
    };
    let written = m.to_proto().expect("record");
    let g = written.graph.as_ref().expect("graph");
    let mut out = Vec::new();
    for n in g
        .node
        .iter()
        .filter(|n| n.op_type.as_deref() == Some("Slice"))
    {
        let name = &n.output[0];
        let vi = g
            .value_info
            .iter()
            .chain(&g.output)
            .find(|v| v.name.as_deref() == Some(name.as_str()))
            .expect("a written shape");
        let Some(proto::type_proto::Value::TensorType(t)) =
            vi.r#type.as_ref().and_then(|t| t.value.as_ref())
        else {
            panic!("tensor type")
        };
        let dims = t
            .shape
            .as_ref()
            .expect("shape")
            .dim
            .iter()
            .map(|d| match &d.value {
                Some(proto::tensor_shape_proto::dimension::Value::DimValue(v)) => Dim::known(*v),
                Some(proto::tensor_shape_proto::dimension::Value::DimParam(p)) => {
                    assert!(p.len() <= 77, "{name}: {} characters: {p}", p.len());
                    Dim::parse(p, &sym).unwrap_or_else(|| panic!("{p} parses"))
                }
                None => panic!("{name}: an unknown dim written"),
            });
        out.push(dims.collect());
    }
    assert_eq!(out.len(), 2);
    (out, written.metadata_props.clone())
}

/// GPT-2's `bias[:, :, k - q : k]` on a buffer of 32 (ONNX Slice: a negative index counts from
/// the end, then both are clamped to [0, 32]).
fn gpt2_rows(k: i64, q: i64) -> i64 {
    let norm = |v: i64| (if v < 0 { v + 32 } else { v }).clamp(0, 32);
    (norm(k) - norm(k - q)).max(0)
}

/// With no assumption the mask slice's dim is written (exact for every `k_len`, `q_len`, the
/// wrap-around of a negative start included) in at most 77 characters: 370 before sums of
/// two symbols stopped distributing into longer forms, 111 with the interim rule for symbolic
/// starts, 176 with the exact resolver's first sign selector (`max(-34*k_len + 34*q_len, 0)`
/// gates), 81 when the start was written as the specification defines it, `k - q + 32*[k < q]`
/// with the indicator `min(max(q_len - k_len, 0), 1)`, 77 with the floor spelling `k - q -
/// 32*floor((k - q)/64)`. The length is a guard against growth.
#[test]
fn gpt2_mask_dims_are_written_exact_and_readable() {
    let _one = ASSUMING.lock().unwrap_or_else(|p| p.into_inner());
    let (dims, meta) = gpt2_written(Assumptions::new());
    assert!(meta
        .iter()
        .all(|p| p.key.as_deref() != Some("slice_opt.assumptions")));
    for k in 0..70 {
        for q in 0..70 {
            let b = at(&[("k_len", k), ("q_len", q)]);
            for d in &dims {
                assert_eq!(d[2].eval(&b), Some(gpt2_rows(k, q)), "k={k} q={q}: {d:?}");
            }
            assert_eq!(dims[1][3].eval(&b), Some(k.min(32)), "k={k}");
        }
    }
}

/// Every `dim_param` of a graph (its inputs, `value_info` and outputs, subgraph bodies
/// included), with the name of the value it shapes.
fn written_dim_params(g: &proto::GraphProto, out: &mut Vec<(String, String)>) {
    for v in g.input.iter().chain(&g.value_info).chain(&g.output) {
        let Some(proto::type_proto::Value::TensorType(t)) =
            v.r#type.as_ref().and_then(|t| t.value.as_ref())
        else {
            continue;
        };
        for d in t.shape.iter().flat_map(|s| &s.dim) {
            if let Some(proto::tensor_shape_proto::dimension::Value::DimParam(p)) = &d.value {
                out.push((v.name.clone().unwrap_or_default(), p.clone()));
            }
        }
    }
    for a in g.node.iter().flat_map(|n| &n.attribute) {
        for body in a.g.iter().map(|b| b.as_ref()).chain(&a.graphs) {
            written_dim_params(body, out);
        }
    }
}

/// Issue 42, acceptance 4: no dim the default passes write into a model of `models/` is over
/// 80 characters (the longest, the row count of `models/gpt2_causal_mask.onnx`'s causal mask
/// slice, `bias[:, :, k_len - q_len : k_len]` on 32 rows with the wrap-around of a negative
/// start, is 77 with the floor spelling of the start; it was 81 with the indicator). A guard
/// against growth; the values of those dims are checked against the specification's slice
/// sizes by the tests above.
#[test]
fn dims_written_for_the_shipped_models_fit_80_characters() {
    let _one = ASSUMING.lock().unwrap_or_else(|p| p.into_inner());
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .expect("models/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "onnx"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{} ONNX models in models/", files.len());
    let mut symbolic = 0;
    for path in &files {
        let mut model = Model::load(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        slice_opt::Pipeline::new()
            .run(&mut model)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let Model::Onnx(m) = &model else {
            unreachable!("ONNX in, ONNX out")
        };
        let written = m.to_proto().expect("record");
        let mut dims = Vec::new();
        written_dim_params(written.graph.as_ref().expect("graph"), &mut dims);
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let limit = 80;
        for (value, p) in &dims {
            assert!(
                p.len() <= limit,
                "{name}: {value}: {} characters: {p}",
                p.len()
            );
            symbolic += usize::from(p.contains(['(', '+', '-', '*']));
        }
    }
    // The guard sees expressions, not only names (the GPT-2 mask's two slices at least).
    assert!(symbolic >= 2, "{symbolic} expressions written");
}

/// `Pipeline::assume`: the run infers under the assumptions, records them in the ONNX output's
/// `metadata_props`, and leaves none installed afterwards; what it writes is exact wherever
/// they hold, and under 80 characters.
#[test]
fn a_pipeline_records_its_assumptions_in_the_output() {
    use slice_opt::pipeline::ASSUMPTIONS_KEY;
    let _one = ASSUMING.lock().unwrap_or_else(|p| p.into_inner());
    let a = Assumptions::new()
        .parse_fact("k_len >= q_len")
        .unwrap()
        .parse_dim("q_len=1..4096")
        .unwrap();
    let (dims, meta) = gpt2_written(a);
    assert!(dim::assumptions().is_empty(), "left installed");
    let props: Vec<_> = meta
        .iter()
        .filter(|p| p.key.as_deref() == Some(ASSUMPTIONS_KEY))
        .collect();
    assert_eq!(props.len(), 1);
    assert_eq!(
        props[0].value.as_deref(),
        Some("q_len=1..4096\nk_len >= q_len")
    );
    for d in &dims {
        for x in d {
            let text = x.to_onnx().unwrap_or_default();
            assert!(text.len() < 80, "{text}");
        }
    }
    for k in 0..70 {
        for q in 1..=k {
            let b = at(&[("k_len", k), ("q_len", q)]);
            for d in &dims {
                assert_eq!(d[2].eval(&b), Some(gpt2_rows(k, q)), "k={k} q={q}: {d:?}");
            }
            assert_eq!(dims[1][3].eval(&b), Some(k.min(32)), "k={k}");
        }
    }
}

/// A model written under assumptions records them, and `check` (and a later run) works under
/// what it records: the dims written hold there. Without the record they are mismatches (they
/// do not hold for `k_len < q_len`).
#[test]
fn check_works_under_the_assumptions_a_model_records() {
    use prost::Message;
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("models/gpt2_causal_mask.onnx");
    let _one = ASSUMING.lock().unwrap_or_else(|p| p.into_inner());
    let mut model = Model::load(&path).expect("loads");
    let a = Assumptions::new().parse_fact("k_len >= q_len").unwrap();
    slice_opt::Pipeline::new()
        .assume(a)
        .run(&mut model)
        .expect("runs");
    let Model::Onnx(m) = &model else {
        unreachable!("ONNX in, ONNX out")
    };
    let mut written = m.to_proto().expect("record");
    let report = slice_opt::check::check(&load(written.clone()));
    assert!(report.passed(), "{:?}", report.rows);
    assert_eq!(report.assumptions, ["k_len >= q_len"]);
    assert!(dim::assumptions().is_empty(), "left installed");
    written.metadata_props.clear();
    let bytes = written.encode_to_vec();
    let report = slice_opt::check::check(&load(proto::ModelProto::decode(&bytes[..]).unwrap()));
    assert!(!report.passed(), "{:?}", report.rows);
    assert!(report.assumptions.is_empty());
}

/// ONNX `Slice` (opset 13) on one axis of size `d`, by its specification: a negative start or
/// end gets `d` added; then, for a positive step, both clamp to `[0, d]`; for a negative step,
/// the start clamps to `[0, d - 1]` and the end to `[-1, d - 1]`. `None` is the omitted bound
/// (`start` 0 / `end` past the end in the step's direction).
fn onnx_len(d: i64, start: Option<i64>, end: Option<i64>, step: i64) -> i64 {
    let norm = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
    if step > 0 {
        let s = start.map_or(0, |v| norm(v).max(0).min(d));
        let e = end.map_or(d, |v| norm(v).max(0).min(d));
        if e > s {
            (e - s + step - 1) / step
        } else {
            0
        }
    } else {
        let m = -step;
        let s = start.map_or(d - 1, |v| norm(v).max(0).min(d - 1));
        let e = end.map_or(-1, |v| norm(v).max(-1).min(d - 1));
        if s > e {
            (s - e + m - 1) / m
        } else {
            0
        }
    }
}

/// A begin or end of `range_dim_sym` from an expression (`None`: the edge).
fn bound(v: Option<&Dim>) -> slice_opt::semantics::resolve::SymBound {
    use slice_opt::semantics::resolve::SymBound;
    v.map_or(SymBound::Edge, |d| SymBound::Index(d.clone()))
}

/// Begins and ends computed from two sizes (`k - q` as GPT-2's mask, `-q` as T5's position
/// bias, `q - k`, `k`, constants) on an axis of a third size or of a fixed 16, every step
/// sign: the dim the exact resolver writes equals the ONNX specification's size at every
/// value tried, the wrap-around of a negative start or end included (the sign selectors).
#[test]
fn sign_selectors_of_two_symbols_are_exact() {
    use slice_opt::semantics::resolve::{range_dim_sym, Clamp};
    let _one = ASSUMING.lock().unwrap_or_else(|p| p.into_inner());
    let (k, q) = (sym("k"), sym("q"));
    type Param = (
        &'static str,
        fn(&Dim, &Dim) -> Option<Dim>,
        fn(i64, i64) -> Option<i64>,
    );
    let params: [Param; 7] = [
        ("edge", |_, _| None, |_, _| None),
        ("k - q", |k, q| Some(k.sub(q)), |k, q| Some(k - q)),
        ("-q", |_, q| Some(q.neg()), |_, q| Some(-q)),
        ("q - k", |k, q| Some(q.sub(k)), |k, q| Some(q - k)),
        ("k", |k, _| Some(k.clone()), |k, _| Some(k)),
        (
            "-q - 1",
            |_, q| Some(q.neg().add_const(-1)),
            |_, q| Some(-q - 1),
        ),
        ("3", |_, _| Some(Dim::known(3)), |_, _| Some(3)),
    ];
    let axes: [(&str, Dim); 2] = [("d", sym("d")), ("16", Dim::known(16))];
    for (axis, d) in &axes {
        for (bn, bsym, bval) in &params {
            for (en, esym, eval) in &params {
                for step in [1i64, 2, -1, -3] {
                    let out = range_dim_sym(
                        d,
                        &bound(bsym(&k, &q).as_ref()),
                        &bound(esym(&k, &q).as_ref()),
                        Some(step),
                        Clamp::Ov,
                    );
                    assert!(!out.is_unknown(), "x[{bn}:{en}:{step}] on {axis}: {out}");
                    let ds: Vec<i64> = match d.as_known() {
                        Some(v) => vec![v],
                        None => vec![0, 1, 5, 16, 23],
                    };
                    for dv in ds {
                        for kv in 0..24 {
                            for qv in 0..24 {
                                let b = at(&[("k", kv), ("q", qv), ("d", dv)]);
                                let want = onnx_len(dv, bval(kv, qv), eval(kv, qv), step);
                                assert_eq!(
                                    out.eval(&b),
                                    Some(want),
                                    "x[{bn}:{en}:{step}] on {axis} = {dv}, k = {kv}, q = {qv}: {out}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The slices of issue 42's corpus whose dims were long (tests/data/exports: T5's
/// `position_bias[:, :, -seq:, :]` on `past + seq`, a static cache's `cache[:, :, -seq:]` on
/// its own size, tf2onnx's reverse `x[:, ::-1]` written with the ends 1e9 and -1e9, GPT-2's
/// `bias[:, :, k - q : k]` on 64 rows): exact at every size tried (0, the thresholds and the
/// 2^31 - 1 limit included), each within the length it is written in now.
#[test]
fn corpus_slices_are_exact_and_short() {
    use slice_opt::semantics::resolve::{range_dim_sym, Clamp};
    let _one = ASSUMING.lock().unwrap_or_else(|p| p.into_inner());
    let (seq, past, total, n) = (sym("seq"), sym("past"), sym("total"), sym("N"));
    let end = Dim::known(i64::MAX);
    let short = |d: &Dim, max: usize| {
        let t = d.to_onnx().expect("exact");
        assert!(t.len() <= max, "{} characters: {t}", t.len());
    };
    // T5: x[-seq:] on past + seq: seq elements, all past + seq when seq = 0 (x[-0:] = x[0:]).
    let t5 = range_dim_sym(
        &past.add(&seq),
        &bound(Some(&seq.neg())),
        &bound(Some(&end)),
        Some(1),
        Clamp::Ov,
    );
    short(&t5, 31);
    // the static cache: x[-seq:] on total.
    let cache = range_dim_sym(
        &total,
        &bound(Some(&seq.neg())),
        &bound(Some(&end)),
        Some(1),
        Clamp::Ov,
    );
    short(&cache, 45);
    let big = [i32::MAX as i64 - 1, i32::MAX as i64];
    for s in (0..40).chain(big) {
        for p in (0..40).chain(big) {
            let b = at(&[("seq", s), ("past", p), ("total", p)]);
            assert_eq!(
                t5.eval(&b),
                Some(onnx_len(p + s, Some(-s), Some(i64::MAX), 1)),
                "{t5}"
            );
            assert_eq!(
                cache.eval(&b),
                Some(onnx_len(p, Some(-s), Some(i64::MAX), 1)),
                "{cache}"
            );
        }
    }
    // tf2onnx's x[::-1]: start 1e9, end -1e9, step -1.
    let e9 = 1_000_000_000i64;
    let rev = range_dim_sym(
        &n,
        &bound(Some(&Dim::known(e9))),
        &bound(Some(&Dim::known(-e9))),
        Some(-1),
        Clamp::Ov,
    );
    short(&rev, 60);
    let around = |c: i64| c - 3..=c + 3;
    for v in (0..40)
        .chain(around(e9))
        .chain(around(2 * e9))
        .chain(i32::MAX as i64 - 3..=i32::MAX as i64)
    {
        let b = at(&[("N", v)]);
        assert_eq!(
            rev.eval(&b),
            Some(onnx_len(v, Some(e9), Some(-e9), -1)),
            "N = {v}: {rev}"
        );
    }
    // GPT-2: bias[:, :, k - q : k] on 64 rows (k the key length, q the query length): the floor
    // spelling of the start, 74 characters (77 with the indicator).
    let (k, q) = (sym("total"), sym("seq"));
    let mask = range_dim_sym(
        &Dim::known(64),
        &bound(Some(&k.sub(&q))),
        &bound(Some(&k)),
        Some(1),
        Clamp::Ov,
    );
    short(&mask, 74);
    for kv in 0..140 {
        for qv in 0..140 {
            let b = at(&[("total", kv), ("seq", qv)]);
            assert_eq!(
                mask.eval(&b),
                Some(onnx_len(64, Some(kv - qv), Some(kv), 1)),
                "k = {kv}, q = {qv}: {mask}"
            );
        }
    }
}

/// A floor division drops the constant arm of a `min`/`max` it cannot see: `floor(max(N, 1)/2)`
/// is `floor(N/2)` (N = 0 and N = 1 both give 0), written as short; `floor(max(N - 1, 1)/2)`
/// keeps its arm (at N = 0, `floor((N - 1)/2)` is -1, the expression 0). Values: Python's
/// `//` of the expression as written.
#[test]
fn floor_divisions_drop_the_arms_they_cannot_see() {
    let _one = ASSUMING.lock().unwrap_or_else(|p| p.into_inner());
    let parse = |t: &str| Dim::parse(t, &sym).unwrap_or_else(|| panic!("{t} parses"));
    let a = parse("floor(max(N, 1)/2)");
    let plain = parse("floor(N/2)");
    assert_eq!(a, plain, "{a}");
    let b = parse("floor(max(N - 1, 1)/2)");
    let c = parse("floor(min(max(N, 1), 1000000001)/2)");
    assert!(c.to_onnx().expect("exact").len() <= "floor(min(N, 1000000001)/2)".len());
    for v in (0..100).chain([999_999_999, 1_000_000_000, 1_000_000_001, 1_000_000_002]) {
        let e = at(&[("N", v)]);
        assert_eq!(a.eval(&e), Some(py_div(v.max(1), 2)), "N = {v}");
        assert_eq!(b.eval(&e), Some(py_div((v - 1).max(1), 2)), "N = {v}: {b}");
        assert_eq!(
            c.eval(&e),
            Some(py_div(v.clamp(1, 1_000_000_001), 2)),
            "N = {v}: {c}"
        );
    }
}

/// Terms every argument of a `min`/`max` shares are written once, outside (`min(N - floor(N/2),
/// 1000000000 - floor(N/2))`, tf2onnx's window of half a sequence, loses a repeated `floor`),
/// and the text reads back as the same dim. Values: Python's semantics of the text as given.
#[test]
fn shared_terms_of_min_and_max_are_written_once() {
    let _one = ASSUMING.lock().unwrap_or_else(|p| p.into_inner());
    let given = "max(min(N - floor(N/2), 1000000000 - floor(N/2)), 0)";
    let d = Dim::parse(given, &sym).expect("parses");
    let text = d.to_onnx().expect("exact");
    assert!(text.len() + 10 <= given.len(), "{text}");
    let back = Dim::parse(&text, &sym).expect("reads back");
    assert_eq!(back, d, "{text}");
    for v in (0..50).chain([1_999_999_999, 2_000_000_000, 2_000_000_001, i32::MAX as i64]) {
        let want = (v - py_div(v, 2)).min(1_000_000_000 - py_div(v, 2)).max(0);
        assert_eq!(d.eval(&at(&[("N", v)])), Some(want), "N = {v}: {text}");
    }
}
