//! Shapes in (issue 43): `--dim NAME=SIZE`, `--dim NAME=LO..HI`, `--input-shape INPUT=D1,...`.
//!
//! - Fixed sizes: the written output shapes are those ONNX Runtime / OpenVINO computed at the
//!   same sizes (the `.io.npz` beside each model), and no dim names a fixed symbol any more.
//! - Bounds (acceptance 2): IR writes the interval in the `Parameter`'s `shape` attribute as
//!   `ov.save_model` writes it (measured with OpenVINO 2026.4: `shape="1,1..4096,8"`, port
//!   `<dim>-1</dim>`), ONNX keeps the symbol, and every slice dim written under the bounds
//!   holds at the ends of the range and inside: it is compared with the dim written when the
//!   symbol is fixed to that size (symbolic == numeric once bound). `tools/shapes_in_check.py`
//!   compares the same dims with what ONNX Runtime and OpenVINO compute.
//! - Refusals (acceptance 5): one line each, exit 2, nothing written.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use slice_opt::formats::input_shapes::{DimBound, InputDim};
use slice_opt::ir::{DeclaredDim, NodeKind};
use slice_opt::semantics::Dim;
use slice_opt::{Model, Pipeline};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `p` on the model at `path`, saves it to `out` and loads what was written.
fn run_written(path: &Path, p: Pipeline, out: &Path) -> Model {
    let mut m = Model::load(path).expect("loads");
    p.run(&mut m).expect("runs");
    m.save(out).expect("saves");
    Model::load(out).expect("written model loads")
}

/// The declared output dims of every slice node, by node name.
fn slice_dims(m: &Model) -> BTreeMap<String, Vec<DeclaredDim>> {
    use slice_opt::shape::slice_node::classify;
    let g = m.graph();
    g.g.node_indices()
        .filter(|&ix| classify(g, ix, m.format(), m.onnx_opset()).is_some())
        .filter_map(|ix| {
            let n = g.node(ix);
            Some((n.name.to_string(), n.outputs.first()?.ty.shape.clone()?))
        })
        .collect()
}

/// The declared shapes of the graph outputs (ONNX graph outputs, OpenVINO `Result` inputs), in
/// file order.
fn output_shapes(m: &Model) -> Vec<Vec<DeclaredDim>> {
    let g = m.graph();
    let mut outs: Vec<_> =
        g.g.node_indices()
            .filter(|&ix| {
                let n = g.node(ix);
                n.kind == NodeKind::Output || (n.kind == NodeKind::Op && n.op_type == "Result")
            })
            .collect();
    outs.sort_by_key(|&ix| g.node(ix).order);
    outs.iter()
        .map(|&ix| {
            let src = g.input(ix, 0).expect("output is fed");
            g.value(src)
                .and_then(|v| v.ty.shape.clone())
                .expect("declared output shape")
        })
        .collect()
}

/// The shapes of the arrays `prefix0`, `prefix1`, ... of a model's `.io.npz`.
fn npz_shapes(name: &str, prefix: &str) -> Vec<Vec<u64>> {
    use ndarray_npy::NpzReader;
    let f = std::fs::File::open(repo().join("models").join(format!("{name}.io.npz"))).expect("npz");
    let mut npz = NpzReader::new(f).expect("npz reader");
    let mut out = Vec::new();
    for i in 0.. {
        let key = format!("{prefix}{i}");
        if !npz
            .names()
            .expect("names")
            .iter()
            .any(|n| n == &key || *n == format!("{key}.npy"))
        {
            break;
        }
        let a: ndarray::ArrayD<f32> = npz.by_name(&key).expect("f32 array");
        out.push(a.shape().iter().map(|&d| d as u64).collect());
    }
    out
}

fn known(shape: &[DeclaredDim]) -> Option<Vec<u64>> {
    shape
        .iter()
        .map(|d| match d {
            DeclaredDim::Known(v) => Some(*v),
            _ => None,
        })
        .collect()
}

/// Every declared dim of a loaded model (inputs, values, graph outputs).
fn all_dims(m: &Model) -> Vec<DeclaredDim> {
    m.graph()
        .g
        .node_weights()
        .flat_map(|n| n.outputs.iter())
        .flat_map(|v| v.ty.shape.iter().flatten().cloned())
        .collect()
}

fn names_symbol(d: &DeclaredDim, sym: &str) -> bool {
    match d {
        DeclaredDim::Param(p) => Dim::parse(p, &Dim::symbol)
            .map(|e| e.symbols().iter().any(|s| s.name() == sym))
            .unwrap_or(p == sym),
        _ => false,
    }
}

#[test]
fn fixed_sizes_give_the_runtime_output_shapes_onnx() {
    let tmp = tempfile::tempdir().expect("tmp");
    // (model, the symbols and the sizes the .io.npz inputs give them)
    // (symbol, input, axis): where the .io.npz inputs give the symbol its size.
    type Syms<'a> = &'a [(&'a str, usize, usize)];
    let cases: [(&str, Syms); 3] = [
        // x0: [batch, seq, 16]
        ("pos_embedding", &[("batch", 0, 0), ("seq", 0, 1)]),
        // q: [b, 2, q_len, 8], k: [b, 2, k_len, 8]
        (
            "gpt2_causal_mask",
            &[("b", 0, 0), ("q_len", 0, 2), ("k_len", 1, 2)],
        ),
        // x0: [unk__9, 9, 6] (tf2onnx's name)
        ("dynamic_batch_tail", &[("unk__9", 0, 0)]),
    ];
    for (name, syms) in cases {
        let ins = npz_shapes(name, "x");
        let outs = npz_shapes(name, "y");
        let mut p = Pipeline::new();
        for (sym, input, axis) in syms {
            p = p.dim(sym, DimBound::exact(ins[*input][*axis]));
        }
        let path = repo().join("models").join(format!("{name}.onnx"));
        let written = run_written(&path, p, &tmp.path().join(format!("{name}.onnx")));
        let got: Vec<_> = output_shapes(&written).iter().map(|s| known(s)).collect();
        let want: Vec<_> = outs.into_iter().map(Some).collect();
        assert_eq!(got, want, "{name}: output shapes written vs the runtime's");
        for (sym, _, _) in syms {
            let left: Vec<_> = all_dims(&written)
                .into_iter()
                .filter(|d| names_symbol(d, sym))
                .collect();
            assert!(left.is_empty(), "{name}: `{sym}` still named: {left:?}");
        }
    }
}

/// IR: `infer` writes the slice outputs (OpenVINO infers the rest again when it reads the
/// file): in these models the one slice's output has the model output's shape (an elementwise
/// op follows it).
#[test]
fn fixed_input_shape_gives_the_runtime_slice_shapes_ir() {
    let tmp = tempfile::tempdir().expect("tmp");
    for name in ["kv_cache_tail", "last_token", "dynamic_batch_tail"] {
        let ins = npz_shapes(name, "x");
        let outs = npz_shapes(name, "y");
        let dims: Vec<InputDim> = ins[0].iter().map(|&d| InputDim::Size(d)).collect();
        let path = repo().join("models").join(format!("{name}.tf.xml"));
        let out = tmp.path().join(format!("{name}.xml"));
        let written = run_written(&path, Pipeline::new().input_shape("x0", dims), &out);
        let got: Vec<_> = slice_dims(&written).values().map(|s| known(s)).collect();
        assert_eq!(
            got,
            vec![Some(outs[0].clone())],
            "{name}: slice shape written vs the runtime's output"
        );
        let text = std::fs::read_to_string(&out).expect("xml");
        let attr = format!(
            "shape=\"{}\"",
            ins[0]
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        );
        assert!(text.contains(&attr), "{name}: no {attr} in the Parameter");
    }
}

/// What `ov.save_model` writes for `PartialShape([1, Dimension(1, 4096), 8])` (OpenVINO
/// 2026.4): the interval in the `shape` attribute, `-1` in the port.
#[test]
fn ir_writes_the_interval_as_openvino_does() {
    let tmp = tempfile::tempdir().expect("tmp");
    let out = tmp.path().join("k.xml");
    let p = Pipeline::new()
        .input_shape("x0", InputDim::parse_list("1,seq,8").expect("dims"))
        .dim("seq", DimBound::range(1, Some(4096)));
    run_written(&repo().join("models/kv_cache_tail.tf.xml"), p, &out);
    let text = std::fs::read_to_string(&out).expect("xml");
    let param = &text[text.find("type=\"Parameter\"").expect("Parameter")..];
    let param = &param[..param.find("</layer>").expect("end")];
    assert!(param.contains("shape=\"1,1..4096,8\""), "{param}");
    let dims: Vec<&str> = param
        .split("<dim>")
        .skip(1)
        .map(|s| &s[..s.find("</dim>").expect("dim end")])
        .collect();
    assert_eq!(dims, ["1", "-1", "8"]);
    // `?`, `lo..` and `..hi` as OpenVINO spells them.
    let p = Pipeline::new().input_shape("x0", InputDim::parse_list("..64,3..,8").expect("dims"));
    run_written(&repo().join("models/causal_mask_dynamic.tf.xml"), p, &out);
    let text = std::fs::read_to_string(&out).expect("xml");
    assert!(text.contains("shape=\"..64,3..,8\""), "{text}");
    let p = Pipeline::new().input_shape("x0", InputDim::parse_list("?,9,6").expect("dims"));
    run_written(&repo().join("models/dynamic_batch_tail.tf.xml"), p, &out);
    let text = std::fs::read_to_string(&out).expect("xml");
    assert!(text.contains("shape=\"?,9,6\""), "{text}");
}

/// One model, one bounded symbol: the dims written under `sym=lo..hi` against those written
/// with `sym` fixed, at the ends of the range and inside.
struct Bounded<'a> {
    path: PathBuf,
    sym: &'a str,
    lo: u64,
    hi: u64,
    /// Other symbols, fixed in both runs (ONNX), or the inputs' shapes with `sym` and their
    /// names (IR: its dims have no names).
    others: &'a [(&'a str, u64)],
    inputs: &'a [(&'a str, &'a str)],
}

impl Bounded<'_> {
    /// The default passes under the bounds; `infer` alone for the reference at a fixed size
    /// (`fold` would fold the slices a fixed size makes constant).
    fn pipeline(&self, sym: DimBound) -> Pipeline {
        let base = match sym.fixed() {
            Some(_) => Pipeline::empty().infer(),
            None => Pipeline::new(),
        };
        let mut p = base.dim(self.sym, sym);
        for (input, dims) in self.inputs {
            p = p.input_shape(input, InputDim::parse_list(dims).expect("dims"));
        }
        for (s, v) in self.others {
            p = p.dim(s, DimBound::exact(*v));
        }
        p
    }

    /// (dims checked exactly, dims checked against bounds, dims left unknown).
    fn check(&self, tmp: &Path) -> (usize, usize, usize) {
        let ext = self.path.extension().and_then(|e| e.to_str()).expect("ext");
        let out = tmp.join(format!("bounded.{ext}"));
        let bounded = run_written(
            &self.path,
            self.pipeline(DimBound::range(self.lo, Some(self.hi))),
            &out,
        );
        let name = self.path.display();
        match bounded.format() {
            slice_opt::formats::Format::Onnx => {
                let named = all_dims(&bounded)
                    .iter()
                    .any(|d| *d == DeclaredDim::Param(self.sym.to_string()));
                assert!(named, "{name}: ONNX does not write the symbol {}", self.sym);
            }
            slice_opt::formats::Format::OpenVino => {
                let text = std::fs::read_to_string(&out).expect("xml");
                let iv = format!("{}..{}", self.lo, self.hi);
                assert!(text.contains(&iv), "{name}: IR does not write {iv}");
            }
        }
        let written = slice_dims(&bounded);
        assert!(!written.is_empty(), "{name}: no slice");
        let (mut exact, mut within, mut unknown) = (0, 0, 0);
        let mid = (self.lo + self.hi) / 2;
        for s in [self.lo, self.lo + 1, mid, self.hi - 1, self.hi] {
            let fixed = run_written(
                &self.path,
                self.pipeline(DimBound::exact(s)),
                &tmp.join(format!("fixed.{ext}")),
            );
            let mut bind: HashMap<String, i64> = self
                .others
                .iter()
                .map(|(n, v)| (n.to_string(), *v as i64))
                .collect();
            bind.insert(self.sym.to_string(), s as i64);
            for (node, want) in slice_dims(&fixed) {
                let Some(got) = written.get(&node) else {
                    continue;
                };
                assert_eq!(got.len(), want.len(), "{name} {node}: rank");
                for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                    let DeclaredDim::Known(w) = *w else {
                        continue;
                    };
                    let at = format!("{name} {node} dim {k} at {}={s}", self.sym);
                    match g {
                        DeclaredDim::Known(v) => {
                            assert_eq!(*v, w, "{at}");
                            exact += 1;
                        }
                        DeclaredDim::Param(p) => {
                            let e = Dim::parse(p, &Dim::symbol).expect("written dim parses");
                            assert_eq!(e.eval(&bind), Some(w as i64), "{at}: {p}");
                            exact += 1;
                        }
                        DeclaredDim::Interval(lo, hi) => {
                            assert!(w >= *lo && hi.is_none_or(|h| w <= h), "{at}: {g}");
                            within += 1;
                        }
                        DeclaredDim::Unknown => unknown += 1,
                    }
                }
            }
        }
        (exact, within, unknown)
    }
}

#[test]
fn bounded_dims_hold_at_the_ends_and_inside() {
    let tmp = tempfile::tempdir().expect("tmp");
    let m = |p: &str| repo().join("models").join(p);
    let e = |p: &str| repo().join("tests/data/exports").join(p);
    let cases = [
        Bounded {
            path: m("pos_embedding.onnx"),
            sym: "seq",
            lo: 1,
            hi: 4096,
            others: &[("batch", 2)],
            inputs: &[],
        },
        Bounded {
            path: m("gpt2_causal_mask.onnx"),
            sym: "q_len",
            lo: 1,
            hi: 4096,
            others: &[("b", 1), ("k_len", 9)],
            inputs: &[],
        },
        Bounded {
            path: m("kv_cache_tail.onnx"),
            sym: "unk__9",
            lo: 1,
            hi: 4096,
            others: &[],
            inputs: &[],
        },
        Bounded {
            path: e("pat_flip_and_tail.ts14.onnx"),
            sym: "seq",
            lo: 1,
            hi: 4096,
            others: &[("batch", 2)],
            inputs: &[],
        },
        Bounded {
            path: e("gpt2_past.ts13.onnx"),
            sym: "seq",
            lo: 1,
            hi: 1024,
            others: &[("batch", 2), ("past", 3)],
            inputs: &[],
        },
        Bounded {
            path: m("kv_cache_tail.tf.xml"),
            sym: "seq",
            lo: 1,
            hi: 4096,
            others: &[],
            inputs: &[("x0", "1,seq,8")],
        },
        Bounded {
            path: m("last_token.onnx.xml"),
            sym: "n",
            lo: 1,
            hi: 4096,
            others: &[],
            inputs: &[("x0", "n,7,16")],
        },
        Bounded {
            path: e("pat_flip_and_tail.pt.xml"),
            sym: "seq",
            lo: 1,
            hi: 4096,
            others: &[],
            inputs: &[("x", "2,seq,8")],
        },
    ];
    let mut total = (0, 0, 0);
    for c in &cases {
        let (a, b, u) = c.check(tmp.path());
        println!(
            "{}: {} {}..{}: {a} dims exact, {b} within bounds, {u} unknown",
            c.path.display(),
            c.sym,
            c.lo,
            c.hi
        );
        assert!(a + b > 0, "{}: nothing checked", c.path.display());
        total = (total.0 + a, total.1 + b, total.2 + u);
    }
    println!("total: {total:?}");
}

// ---- refusals (acceptance 5) ----

fn slice_opt(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_slice-opt"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("runs")
}

#[test]
fn bad_values_are_refused_in_one_line_and_nothing_is_written() {
    let tmp = tempfile::tempdir().expect("tmp");
    let onnx = "models/pos_embedding.onnx";
    let xml = "models/kv_cache_tail.tf.xml";
    let cases: &[(&str, &[&str], &str)] = &[
        (
            onnx,
            &["--dim", "nope=3"],
            "no input of the model has a dim named 'nope'",
        ),
        (
            xml,
            &["--dim", "seq=3"],
            "no input of the model has a dim named 'seq'",
        ),
        (onnx, &["--input-shape", "y=1,2,16"], "no input 'y'"),
        (xml, &["--input-shape", "x9=1,2,8"], "no input 'x9'"),
        (
            onnx,
            &["--input-shape", "x=1,2,17"],
            "dim 2 is 16 in the model, not 17",
        ),
        (
            xml,
            &["--input-shape", "x0=2,5,8"],
            "dim 0 is 1 in the model, not 2",
        ),
        (
            xml,
            &["--input-shape", "x0=1,seq,?"],
            "dim 2 is 8 in the model, not ?",
        ),
        (
            onnx,
            &["--input-shape", "x=1,2"],
            "2 dims given, the input has 3",
        ),
        (
            xml,
            &["--input-shape", "x0=1,2,8,1"],
            "4 dims given, the input has 3",
        ),
        (onnx, &["--input-shape", "x=1,2,1x"], "`1x`: expected a dim"),
        (onnx, &["--input-shape", "x=1,,16"], "expected a dim"),
        (onnx, &["--input-shape", "x=1,5..2,16"], "`5..2`: expected"),
        (onnx, &["--input-shape", "x"], "expected INPUT=D1,D2,..."),
        (onnx, &["--dim", "seq=4..2"], "`seq=4..2`"),
        (onnx, &["--dim", "seq=abc"], "`seq=abc`"),
        (onnx, &["--dim", "seq"], "`seq`"),
        (onnx, &["--dim", "seq=-1"], "`seq=-1`"),
        (
            onnx,
            &["--dim", "batch=1", "--input-shape", "x=2,3,16"],
            "--dim batch=1 and --input-shape x (dim 0 is batch) cannot both hold",
        ),
        (
            onnx,
            &["--dim", "seq=1..8", "--dim", "seq=9..12"],
            "cannot both hold",
        ),
        (
            onnx,
            &["--input-shape", "x=1,2,16", "--input-shape", "x=1,3,16"],
            "input 'x' is given twice",
        ),
    ];
    for (model, args, want) in cases {
        let ext = if model.ends_with(".xml") {
            "xml"
        } else {
            "onnx"
        };
        let out = tmp.path().join(format!("out.{ext}"));
        let mut all = vec![*model, "-o", out.to_str().expect("utf-8")];
        all.extend_from_slice(args);
        let o = slice_opt(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
        assert!(err.starts_with("slice-opt: error: "), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err} (want {want})");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).expect("dir").collect();
        assert!(left.is_empty(), "{args:?}: wrote {left:?}");
    }
}

#[test]
fn help_shows_both_options_with_an_example() {
    let o = slice_opt(&["--help"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for want in [
        "--input-shape <INPUT=D1,D2,...>",
        "--dim <NAME=SIZE|LO..HI>",
        "--dim batch=1 --dim seq=1..4096",
        "--input-shape x=1,seq,8 --dim seq=1..2048",
    ] {
        assert!(text.contains(want), "--help lacks {want}");
    }
}

/// The library's `run::Options` (what the Python package drives): the sizes reach the file, and
/// a refusal writes nothing.
#[test]
fn run_options_carry_dims_and_input_shapes() {
    use slice_opt::formats::input_shapes::InputShape;
    use slice_opt::pipeline::PassKind;
    use slice_opt::run::{optimize_file, Options};
    let tmp = tempfile::tempdir().expect("tmp");
    let passes = [PassKind::Infer, PassKind::Fold, PassKind::Cleanup];
    let out = tmp.path().join("pe.onnx");
    let dims = [("batch".to_string(), DimBound::exact(2))];
    let shapes = [InputShape::parse("x=batch,10,16").expect("shape")];
    let mut opts = Options::new(&passes);
    opts.dims = &dims;
    opts.input_shapes = &shapes;
    optimize_file(&repo().join("models/pos_embedding.onnx"), &out, &opts).expect("runs");
    // The .io.npz output of pos_embedding is [2, 10, 16].
    let want = npz_shapes("pos_embedding", "y");
    let written = Model::load(&out).expect("loads");
    let got: Vec<_> = output_shapes(&written).iter().map(|s| known(s)).collect();
    assert_eq!(got, want.into_iter().map(Some).collect::<Vec<_>>());
    let bad = [InputShape::parse("x=1,10").expect("shape")];
    opts.input_shapes = &bad;
    let out2 = tmp.path().join("bad.onnx");
    let e = optimize_file(&repo().join("models/pos_embedding.onnx"), &out2, &opts)
        .expect_err("rank mismatch refused");
    assert!(e.is_input_error(), "{e}");
    assert!(!out2.exists());
}
