//! Layer: formats (OpenVINO IR load and save).
//!
//! OpenVINO IR load/save: lossless round trips of the fixture models, a changed graph, and bad
//! input that must fail with a one-line error and write nothing.

use std::path::{Path, PathBuf};

use slice_opt::formats::openvino::xml::{Document, Element};
use slice_opt::formats::openvino::{bin_path_for, OvModel};
use slice_opt::ir::{DType, DeclaredDim, Node, NodeKind, Tensor, TensorData, Value, ValueType};
use slice_opt::Error;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ir");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/data/ir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    v.sort();
    v
}

fn strip_ws(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn every_fixture_round_trips_byte_identical() {
    let files = fixtures();
    assert!(
        files.len() >= 28,
        "expected the IR fixtures, found {}",
        files.len()
    );
    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    for f in &files {
        let m = OvModel::load(f).unwrap_or_else(|e| panic!("{e}"));
        assert!(m.is_untouched());
        assert!(m.graph.g.node_count() > 0, "{}", f.display());
        let out = tmp.path().join(f.file_name().unwrap());
        m.save(&out).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(read(f), read(&out), "{}: .xml differs", f.display());
        assert_eq!(
            read(&bin_path_for(f)),
            read(&bin_path_for(&out)),
            "{}: .bin differs",
            f.display()
        );
        n += 1;
    }
    println!("{n} IR fixtures round-tripped byte-identical");
}

/// A rebuild of every layer (all marked dirty) must still give the same document modulo
/// whitespace, and the same `.bin`.
#[test]
fn every_fixture_rebuilt_equals_modulo_whitespace() {
    let tmp = tempfile::tempdir().unwrap();
    for f in fixtures() {
        let mut m = OvModel::load(&f).unwrap();
        let ixs: Vec<_> = m.graph.g.node_indices().collect();
        for ix in ixs {
            m.graph.node_mut(ix).dirty = true;
        }
        assert!(!m.is_untouched());
        let out = tmp.path().join(f.file_name().unwrap());
        m.save(&out).unwrap_or_else(|e| panic!("{e}"));
        let a = String::from_utf8(read(&f)).unwrap();
        let b = String::from_utf8(read(&out)).unwrap();
        assert_eq!(strip_ws(&a), strip_ws(&b), "{}", f.display());
        assert_eq!(read(&bin_path_for(&f)), read(&bin_path_for(&out)));
        // And it loads again to the same graph shape.
        let m2 = OvModel::load(&out).unwrap();
        assert_eq!(m.graph.g.node_count(), m2.graph.g.node_count());
        assert_eq!(m.graph.g.edge_count(), m2.graph.g.edge_count());
    }
}

fn find(m: &OvModel, name: &str) -> petgraph::stable_graph::NodeIndex {
    m.graph
        .g
        .node_indices()
        .find(|&ix| m.graph.node(ix).name == name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/ir")
        .join(name)
}

#[test]
fn changed_graph_saves_well_formed_and_reloads() {
    let src = fixture("last_token.tf.xml");
    let mut m = OvModel::load(&src).unwrap();
    let layers_before = m.graph.g.node_count();

    // 1. A new type on the StridedSlice output: batch -1 becomes the interval 1..8.
    let ss = find(&m, "strided_slice");
    m.graph.node_mut(ss).outputs[0].ty = ValueType {
        dtype: Some(DType::F32),
        shape: Some(vec![
            DeclaredDim::Interval(1, Some(8)),
            DeclaredDim::Known(16),
        ]),
    };
    m.graph.node_mut(ss).outputs[0].ty_changed = true;

    // 2. A new constant feeding nothing.
    let mut c = Node::op("extra_const", "Const", "opset1");
    c.kind = NodeKind::Const(Box::new(Tensor::from_i64(vec![2], &[7, -3])));
    c.outputs = vec![Value {
        name: "extra_const:0".into(),
        ty: ValueType {
            dtype: Some(DType::I64),
            shape: Some(vec![DeclaredDim::Known(2)]),
        },
        ty_changed: false,
    }];
    m.graph.add_node(c);

    // 3. Remove the ReLU: Result reads the StridedSlice directly.
    let relu = find(&m, "Relu");
    let result = find(&m, "Identity:0");
    m.graph.redirect(
        slice_opt::ir::OutletId {
            node: relu,
            port: 0,
        },
        slice_opt::ir::OutletId { node: ss, port: 0 },
    );
    m.graph.g.remove_node(relu);
    assert!(m.graph.node(result).dirty);

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("changed.xml");
    m.save(&out).unwrap();
    let text = String::from_utf8(read(&out)).unwrap();
    assert!(text.contains("<dim>1..8</dim>"), "{text}");
    assert!(!text.contains("\"Relu\""));
    assert!(
        text.contains(
            "<layer id=\"7\" name=\"extra_const\" type=\"Const\" version=\"opset1\">\n\t\t\t\
             <data element_type=\"i64\" shape=\"2\" offset=\"36\" size=\"16\" />\n\t\t\t<output>"
        ),
        "{text}"
    );

    let bin_in = read(&bin_path_for(&src));
    let bin_out = read(&bin_path_for(&out));
    assert_eq!(
        &bin_out[..bin_in.len()],
        &bin_in[..],
        "original weights are a prefix"
    );
    assert_eq!(bin_out.len(), bin_in.len() + 16);

    let m2 = OvModel::load(&out).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(m2.graph.g.node_count(), layers_before); // -1 ReLU, +1 Const
    let ss2 = find(&m2, "strided_slice");
    assert_eq!(
        m2.graph.node(ss2).outputs[0].ty.shape,
        Some(vec![
            DeclaredDim::Interval(1, Some(8)),
            DeclaredDim::Known(16)
        ])
    );
    let c2 = find(&m2, "extra_const");
    let t = m2.graph.node(c2).constant().expect("a Const node");
    assert_eq!(t.to_i64_vec(), Some(vec![7, -3]));
    let r2 = find(&m2, "Identity:0");
    let feeder = m2.graph.input(r2, 0).expect("Result is fed");
    assert_eq!(feeder.node, ss2);
    // The Result's input port carries the new dims too.
    assert!(text.matches("<dim>1..8</dim>").count() >= 2, "{text}");

    // Untouched layers keep their original text.
    let orig = String::from_utf8(read(&src)).unwrap();
    let param = &orig[orig.find("<layer id=\"0\"").unwrap()..];
    let param = &param[..param.find("</layer>").unwrap()];
    assert!(text.contains(param));
    assert!(text.contains("<rt_info>"));
}

#[test]
fn changed_const_data_is_appended_and_unchanged_is_reused() {
    let src = fixture("qkv_split.tf.xml");
    let mut m = OvModel::load(&src).unwrap();
    let consts: Vec<_> = m
        .graph
        .g
        .node_indices()
        .filter(|&ix| m.graph.node(ix).constant().is_some())
        .collect();
    assert!(!consts.is_empty());
    // Dirty but same data: reuses the original range.
    m.graph.node_mut(consts[0]).dirty = true;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("q.xml");
    m.save(&out).unwrap();
    assert_eq!(read(&bin_path_for(&src)), read(&bin_path_for(&out)));
    // Changed data: appended, and its old range (used by no other constant) dropped.
    let n = m.graph.node_mut(consts[0]);
    let Some(NodeKind::Const(t)) = Some(n.kind.clone()) else {
        unreachable!()
    };
    let raw = t.raw().unwrap().to_vec();
    let mut changed = raw.clone();
    changed[0] ^= 1;
    n.kind = NodeKind::Const(Box::new(Tensor {
        data: TensorData::Raw(changed.clone().into()),
        ..*t
    }));
    m.save(&out).unwrap();
    let bin_in = read(&bin_path_for(&src));
    let bin_out = read(&bin_path_for(&out));
    assert_eq!(bin_out.len(), bin_in.len() - raw.len() + changed.len());
    assert_eq!(&bin_out[bin_out.len() - changed.len()..], &changed[..]);
    let m2 = OvModel::load(&out).unwrap();
    let ix = find(&m2, &m.graph.node(consts[0]).name.clone());
    assert_eq!(
        m2.graph
            .node(ix)
            .constant()
            .unwrap()
            .raw()
            .unwrap()
            .as_ref(),
        &changed[..]
    );
}

#[test]
fn loop_body_stays_in_the_outer_layer() {
    let m = OvModel::load(&fixture("loop_body_slice.tf.xml")).unwrap();
    let ops = m.graph.op_counts();
    assert_eq!(ops.get("Loop"), Some(&1));
    // The body's StridedSlice is not a node of the outer graph.
    assert_eq!(ops.get("StridedSlice"), None);
    let m = OvModel::load(&fixture("if_outer_slice.onnx.xml")).unwrap();
    assert_eq!(m.graph.op_counts().get("If"), Some(&1));
}

#[test]
fn ports_and_values_are_read() {
    let m = OvModel::load(&fixture("last_token.tf.xml")).unwrap();
    let ss = find(&m, "strided_slice");
    let n = m.graph.node(ss);
    assert_eq!(n.op_type, "StridedSlice");
    assert_eq!(n.domain, "opset1");
    assert_eq!(n.num_inputs, 4);
    assert_eq!(n.attr_ints("shrink_axis_mask"), Some(Ok(vec![0, 1, 0])));
    assert_eq!(n.outputs[0].name, "strided_slice:0");
    assert_eq!(
        n.outputs[0].ty,
        ValueType {
            dtype: Some(DType::F32),
            shape: Some(vec![DeclaredDim::Unknown, DeclaredDim::Known(16)])
        }
    );
    let begin = m.graph.input(ss, 1).unwrap();
    let t = m.graph.constant_at(begin).unwrap();
    assert_eq!(t.dtype, DType::I32);
    assert_eq!(t.shape, vec![3]);
    // Port ids map to indices: output port id 4 is output index 0.
    let rec = &m.layer_records()[4];
    assert_eq!(rec.input_ports, vec![0, 1, 2, 3]);
    assert_eq!(rec.output_ports, vec![4]);
}

// ---------------------------------------------------------------------------------------------
// Bad input

const GOOD: &str = r#"<?xml version="1.0"?>
<net name="t" version="11">
	<layers>
		<layer id="0" name="x" type="Parameter" version="opset1">
			<data shape="2" element_type="f32" />
			<output>
				<port id="0" precision="FP32" names="x"><dim>2</dim></port>
			</output>
		</layer>
		<layer id="1" name="c" type="Const" version="opset1">
			<data element_type="f32" shape="2" offset="OFFSET" size="8" />
			<output>
				<port id="0" precision="FP32"><dim>2</dim></port>
			</output>
		</layer>
		<layer id="2" name="add" type="Add" version="opset1">
			<input>
				<port id="0" precision="FP32"><dim>2</dim></port>
				<port id="1" precision="FP32"><dim>2</dim></port>
			</input>
			<output>
				<port id="2" precision="FP32"><dim>2</dim></port>
			</output>
		</layer>
		<layer id="3" name="y" type="Result" version="opset1">
			<input>
				<port id="0" precision="FP32"><dim>2</dim></port>
			</input>
		</layer>
	</layers>
	<edges>
		<edge from-layer="0" from-port="0" to-layer="2" to-port="0" />
		<edge from-layer="1" from-port="0" to-layer="2" to-port="1" />
		<edge from-layer="2" from-port="2" to-layer="3" to-port="0" />
	</edges>
</net>
"#;

/// Writes `xml` (and `bin` if given) to a fresh directory; returns the dir and the xml path.
fn write_case(xml: &str, bin: Option<&[u8]>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.xml");
    std::fs::write(&p, xml).unwrap();
    if let Some(b) = bin {
        std::fs::write(bin_path_for(&p), b).unwrap();
    }
    (dir, p)
}

fn load_err(xml: &str, bin: Option<&[u8]>) -> String {
    let (dir, p) = write_case(xml, bin);
    let before: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    let e = match OvModel::load(&p) {
        Ok(_) => panic!("loaded bad input:\n{xml}"),
        Err(e) => e,
    };
    assert!(
        matches!(
            e,
            Error::Format { .. } | Error::Node { .. } | Error::Io { .. }
        ),
        "{e:?}"
    );
    let after: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(before.len(), after.len(), "nothing is written");
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "one line: {msg}");
    assert!(msg.contains("m.xml"), "names the file: {msg}");
    msg
}

#[test]
fn good_case_loads() {
    let (_d, p) = write_case(&GOOD.replace("OFFSET", "0"), Some(&[0u8; 8]));
    let m = OvModel::load(&p).unwrap();
    assert_eq!(m.graph.g.node_count(), 4);
    assert_eq!(m.graph.g.edge_count(), 3);
}

#[test]
fn not_ir_is_an_error() {
    let msg = load_err("<html><body/></html>", None);
    assert!(msg.contains("not OpenVINO IR"), "{msg}");
    let msg = load_err("<net version=\"11\"><edges/></net>", None);
    assert!(msg.contains("<layers>"), "{msg}");
    let msg = load_err("not xml at all", None);
    assert!(msg.contains("XML") || msg.contains("IR"), "{msg}");
    load_err("<net version=\"11\"><layers>", None);
    load_err("", None);
    let msg = load_err("<net version=\"7\"><layers/></net>", None);
    assert!(msg.contains("version 7"), "{msg}");
}

#[test]
fn edge_to_missing_layer_is_an_error() {
    let xml = GOOD.replace("OFFSET", "0").replace(
        r#"from-layer="2" from-port="2" to-layer="3""#,
        r#"from-layer="2" from-port="2" to-layer="9""#,
    );
    let msg = load_err(&xml, Some(&[0u8; 8]));
    assert!(
        msg.contains("no layer has id 9") && msg.contains("'add'"),
        "{msg}"
    );
}

#[test]
fn edge_to_missing_port_is_an_error() {
    let xml = GOOD
        .replace("OFFSET", "0")
        .replace(r#"to-layer="2" to-port="1""#, r#"to-layer="2" to-port="5""#);
    let msg = load_err(&xml, Some(&[0u8; 8]));
    assert!(
        msg.contains("'add'") && msg.contains("no input port 5"),
        "{msg}"
    );
    let xml = GOOD.replace("OFFSET", "0").replace(
        r#"from-layer="1" from-port="0""#,
        r#"from-layer="1" from-port="3""#,
    );
    let msg = load_err(&xml, Some(&[0u8; 8]));
    assert!(
        msg.contains("'c'") && msg.contains("no output port 3"),
        "{msg}"
    );
}

#[test]
fn const_past_end_of_bin_is_an_error() {
    let msg = load_err(&GOOD.replace("OFFSET", "4"), Some(&[0u8; 8]));
    assert!(
        msg.contains("'c'") && msg.contains("passes the end"),
        "{msg}"
    );
    let msg = load_err(
        &GOOD.replace("OFFSET", "18446744073709551615"),
        Some(&[0u8; 8]),
    );
    assert!(msg.contains("passes the end"), "{msg}");
    let msg = load_err(
        &GOOD
            .replace("OFFSET", "0")
            .replace("size=\"8\"", "size=\"12\""),
        Some(&[0u8; 16]),
    );
    assert!(msg.contains("does not match"), "{msg}");
    let msg = load_err(
        &GOOD.replace("OFFSET", "0").replace(
            "shape=\"2\" offset",
            "shape=\"4294967296,4294967296,16\" offset",
        ),
        Some(&[0u8; 8]),
    );
    assert!(msg.contains("'c'"), "{msg}");
}

#[test]
fn missing_bin_is_an_error_only_when_needed() {
    let msg = load_err(&GOOD.replace("OFFSET", "0"), None);
    assert!(
        msg.contains("'c'") && msg.contains("does not exist"),
        "{msg}"
    );
    // Without constants no .bin is needed.
    let xml = r#"<net name="t" version="10"><layers>
        <layer id="0" name="x" type="Parameter" version="opset1"><data shape="1" element_type="f32"/>
          <output><port id="0" precision="FP32"><dim>1</dim></port></output></layer>
        <layer id="1" name="y" type="Result" version="opset1">
          <input><port id="0" precision="FP32"><dim>1</dim></port></input></layer>
        </layers><edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/></edges></net>"#;
    let (_d, p) = write_case(xml, None);
    OvModel::load(&p).unwrap();
}

#[test]
fn duplicate_ids_and_cycles_are_errors() {
    let xml = GOOD
        .replace("OFFSET", "0")
        .replace(r#"<layer id="3""#, r#"<layer id="2""#);
    let msg = load_err(&xml, Some(&[0u8; 8]));
    assert!(msg.contains("used twice"), "{msg}");
    // A cycle: add's output feeds the Parameter... Parameter has no input; make add feed itself.
    let xml = GOOD.replace("OFFSET", "0").replace(
        r#"from-layer="0" from-port="0" to-layer="2""#,
        r#"from-layer="2" from-port="2" to-layer="2""#,
    );
    let msg = load_err(&xml, Some(&[0u8; 8]));
    assert!(msg.contains("cycle") && msg.contains("'add'"), "{msg}");
    // Two edges into one port.
    let xml = GOOD.replace("OFFSET", "0").replace(
        r#"<edge from-layer="1" from-port="0" to-layer="2" to-port="1" />"#,
        r#"<edge from-layer="1" from-port="0" to-layer="2" to-port="0" />"#,
    );
    let msg = load_err(&xml, Some(&[0u8; 8]));
    assert!(msg.contains("more than one edge"), "{msg}");
}

#[test]
fn bad_dims_and_garbage_never_panic() {
    let msg = load_err(
        &GOOD.replace("OFFSET", "0").replace(
            "<dim>2</dim></port>\n\t\t\t</output>\n\t\t</layer>\n\t\t<layer id=\"1\"",
            "<dim>zz</dim></port>\n\t\t\t</output>\n\t\t</layer>\n\t\t<layer id=\"1\"",
        ),
        Some(&[0u8; 8]),
    );
    assert!(msg.contains("'x'") && msg.contains("zz"), "{msg}");
    // Every prefix of a valid file either loads or fails cleanly.
    let good = GOOD.replace("OFFSET", "0");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("m.xml");
    std::fs::write(bin_path_for(&p), [0u8; 8]).unwrap();
    for cut in (0..good.len()).step_by(7) {
        if !good.is_char_boundary(cut) {
            continue;
        }
        std::fs::write(&p, &good[..cut]).unwrap();
        let _ = OvModel::load(&p);
    }
    // Random byte flips.
    let mut state = 0x2545F4914F6CDD1Du64;
    for _ in 0..300 {
        let mut b = good.clone().into_bytes();
        for _ in 0..3 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let i = (state as usize) % b.len();
            b[i] = (state >> 32) as u8;
        }
        std::fs::write(&p, &b).unwrap();
        let _ = OvModel::load(&p);
    }
}

#[test]
fn dims_parse_and_format_as_openvino_reads_them() {
    use slice_opt::formats::openvino::{format_dim, parse_dim};
    let cases = [
        ("7", DeclaredDim::Known(7), "7"),
        ("-1", DeclaredDim::Unknown, "-1"),
        ("?", DeclaredDim::Unknown, "-1"),
        ("1..10", DeclaredDim::Interval(1, Some(10)), "1..10"),
        ("3..", DeclaredDim::Interval(3, None), "3.."),
        ("3..-1", DeclaredDim::Interval(3, None), "3.."),
        ("0..", DeclaredDim::Interval(0, None), "-1"),
    ];
    for (text, dim, written) in cases {
        assert_eq!(parse_dim(text), Some(dim.clone()), "{text}");
        assert_eq!(format_dim(&dim), written, "{text}");
    }
    for bad in ["", "x", "-2", "5..2", "1..2..3", "99999999999999999999999"] {
        assert_eq!(parse_dim(bad), None, "{bad}");
    }
    assert_eq!(format_dim(&DeclaredDim::Param("batch".into())), "-1");
}

/// Every Const layer in `text` (top level and inside bodies), in document order:
/// `(name, offset, size, element text)`.
fn const_layers(text: &str) -> Vec<(String, u64, u64, String)> {
    fn walk(el: &Element, src: &str, out: &mut Vec<(String, u64, u64, String)>) {
        if el.name == "layer" && el.attr("type") == Some("Const") {
            let d = el.child("data").expect("Const has <data>");
            let num = |k: &str| d.attr(k).unwrap().trim().parse::<u64>().unwrap();
            let mut s = String::new();
            el.write(src, &mut s);
            out.push((
                el.attr("name").unwrap().to_string(),
                num("offset"),
                num("size"),
                s,
            ));
        }
        for c in el.elements() {
            walk(c, src, out);
        }
    }
    let doc = Document::parse(text).unwrap();
    let mut out = Vec::new();
    walk(&doc.root, text, &mut out);
    out
}

fn bytes_at(bin: &[u8], off: u64, size: u64) -> &[u8] {
    &bin[off as usize..(off + size) as usize]
}

/// `cleanup` after removing a path: the dropped Const's range leaves the `.bin`, later ranges
/// move down, and every remaining constant keeps its bytes.
#[test]
fn removed_const_range_is_dropped_and_offsets_remapped() {
    let src = fixture("qkv_split.tf.xml");
    let orig_text = String::from_utf8(read(&src)).unwrap();
    let orig_bin = read(&bin_path_for(&src));
    let before = const_layers(&orig_text);
    let mut m = OvModel::load(&src).unwrap();

    // Drop the strided_slice_2 -> Sum -> add path and the Const 'strided_slice_2/stack_1'
    // (bytes 32..40, used by no other layer); the Result reads the MatMul.
    let matmul = find(&m, "MatMul");
    let add = find(&m, "add");
    m.graph.redirect(
        slice_opt::ir::OutletId { node: add, port: 0 },
        slice_opt::ir::OutletId {
            node: matmul,
            port: 0,
        },
    );
    for name in ["add", "Sum", "strided_slice_2", "strided_slice_2/stack_1"] {
        let ix = find(&m, name);
        m.graph.g.remove_node(ix);
    }
    let dropped = before
        .iter()
        .find(|c| c.0 == "strided_slice_2/stack_1")
        .unwrap();
    assert_eq!((dropped.1, dropped.2), (32, 8));

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("cut.xml");
    m.save(&out).unwrap();
    let text = String::from_utf8(read(&out)).unwrap();
    let bin = read(&bin_path_for(&out));
    assert_eq!(bin.len() as u64, orig_bin.len() as u64 - dropped.2);

    let after = const_layers(&text);
    assert_eq!(after.len(), before.len() - 1);
    for (name, off, size, el) in &after {
        let (_, o0, s0, el0) = before.iter().find(|c| &c.0 == name).unwrap();
        assert_eq!(size, s0, "{name}");
        assert_eq!(
            bytes_at(&bin, *off, *size),
            bytes_at(&orig_bin, *o0, *s0),
            "{name}"
        );
        // Ranges after the dropped one moved down; the element text is the same otherwise.
        let expect_off = if *o0 >= dropped.1 + dropped.2 {
            o0 - dropped.2
        } else {
            *o0
        };
        assert_eq!(*off, expect_off, "{name}");
        assert_eq!(
            el,
            &el0.replace(
                &format!("offset=\"{o0}\""),
                &format!("offset=\"{expect_off}\"")
            ),
            "{name}"
        );
    }
    // Shared ranges stay shared.
    let off_of = |n: &str| after.iter().find(|c| c.0 == n).unwrap().1;
    assert_eq!(
        off_of("strided_slice_2/stack"),
        off_of("strided_slice_1/stack_1")
    );

    let m2 = OvModel::load(&out).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let m0 = OvModel::load(&src).unwrap();
    for ix in m2.graph.g.node_indices() {
        let n = m2.graph.node(ix);
        if let Some(t) = n.constant() {
            let t0 = m0.graph.node(find(&m0, &n.name)).constant().unwrap();
            assert_eq!(t.raw(), t0.raw(), "{}", n.name);
        }
    }
    let result = find(&m2, "Identity:0");
    assert_eq!(
        m2.graph.input(result, 0).map(|o| o.node),
        Some(find(&m2, "MatMul"))
    );
}

/// A top-level change that moves the ranges the Loop body uses: the body's Const offsets are
/// rewritten (only them), and the body's constants keep their bytes.
#[test]
fn loop_body_constants_survive_compaction() {
    let src = fixture("loop_body_slice.tf.xml");
    let orig_text = String::from_utf8(read(&src)).unwrap();
    let orig_bin = read(&bin_path_for(&src));
    let before = const_layers(&orig_text);
    let mut m = OvModel::load(&src).unwrap();

    // Replace the top-level 'zeros' (bytes 9..25) by a new Const with the same data: the old
    // range is dropped, the new one appended, and every body range after it moves down.
    let zeros = find(&m, "zeros");
    let mut c = Node::op("zeros_new", "Const", "opset1");
    c.kind = m.graph.node(zeros).kind.clone();
    c.outputs = m.graph.node(zeros).outputs.clone();
    c.outputs[0].name = "zeros_new:0".into();
    let c = m.graph.add_node(c);
    m.graph.redirect(
        slice_opt::ir::OutletId {
            node: zeros,
            port: 0,
        },
        slice_opt::ir::OutletId { node: c, port: 0 },
    );
    m.graph.g.remove_node(zeros);
    let old = before.iter().find(|c| c.0 == "zeros").unwrap();
    assert_eq!((old.1, old.2), (9, 16));

    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("loop.xml");
    m.save(&out).unwrap();
    let text = String::from_utf8(read(&out)).unwrap();
    let bin = read(&bin_path_for(&out));
    assert_eq!(bin.len(), orig_bin.len(), "16 bytes dropped, 16 appended");

    let after = const_layers(&text);
    assert_eq!(after.len(), before.len());
    let body_before: Vec<_> = before.iter().filter(|c| c.0 != "zeros").collect();
    let body_after: Vec<_> = after.iter().filter(|c| c.0 != "zeros_new").collect();
    assert_eq!(body_before.len(), body_after.len());
    let mut moved = 0;
    for ((n0, o0, s0, el0), (n1, o1, s1, el1)) in body_before.iter().zip(&body_after) {
        assert_eq!((n0, s0), (n1, s1));
        assert_eq!(
            bytes_at(&bin, *o1, *s1),
            bytes_at(&orig_bin, *o0, *s0),
            "{n0}"
        );
        let expect = if *o0 >= 25 { o0 - 16 } else { *o0 };
        assert_eq!(*o1, expect, "{n0}");
        if o1 != o0 {
            moved += 1;
        }
        assert_eq!(
            el1,
            &el0.replace(&format!("offset=\"{o0}\""), &format!("offset=\"{o1}\"")),
            "{n0}"
        );
    }
    assert!(moved >= 6, "the body ranges moved");
    let new = after.iter().find(|c| c.0 == "zeros_new").unwrap();
    assert_eq!((new.1, new.2), (orig_bin.len() as u64 - 16, 16));
    assert_eq!(bytes_at(&bin, new.1, 16), bytes_at(&orig_bin, 9, 16));

    // Apart from offsets, the Loop layer is written as read.
    let loop_at = |t: &str| {
        let s = t.find("type=\"Loop\"").unwrap();
        let s = t[..s].rfind("<layer").unwrap();
        let e = s + t[s..].find("\n\t\t</layer>").unwrap();
        t[s..e].to_string()
    };
    let mut expect_loop = loop_at(&orig_text);
    for ((_, o0, _, el0), (_, _, _, el1)) in body_before.iter().zip(&body_after) {
        if *o0 >= 25 {
            expect_loop = expect_loop.replacen(el0.as_str(), el1, 1);
        }
    }
    assert_eq!(loop_at(&text), expect_loop);

    let m2 = OvModel::load(&out).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(m2.graph.op_counts().get("Loop"), Some(&1));
    let t = m2.graph.node(find(&m2, "zeros_new")).constant().unwrap();
    assert_eq!(t.raw().unwrap().as_ref(), bytes_at(&orig_bin, 9, 16));
}

/// New constants with the same bytes share one appended range; different ones do not.
#[test]
fn identical_new_constants_share_one_range() {
    let src = fixture("last_token.tf.xml");
    let orig_bin = read(&bin_path_for(&src));
    let mut m = OvModel::load(&src).unwrap();
    let mut add = |name: &str, values: &[i64]| {
        let mut c = Node::op(name, "Const", "opset1");
        c.kind = NodeKind::Const(Box::new(Tensor::from_i64(
            vec![values.len() as u64],
            values,
        )));
        c.outputs = vec![Value {
            name: format!("{name}:0").into(),
            ty: ValueType {
                dtype: Some(DType::I64),
                shape: Some(vec![DeclaredDim::Known(values.len() as u64)]),
            },
            ty_changed: false,
        }];
        m.graph.add_node(c);
    };
    add("new_a", &[7, -3]);
    add("new_b", &[7, -3]);
    add("new_c", &[7, -4]);
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("shared.xml");
    m.save(&out).unwrap();
    let text = String::from_utf8(read(&out)).unwrap();
    let bin = read(&bin_path_for(&out));
    assert_eq!(bin.len(), orig_bin.len() + 32, "two distinct new constants");
    assert_eq!(&bin[..orig_bin.len()], &orig_bin[..]);
    let consts = const_layers(&text);
    let at = |n: &str| {
        let c = consts.iter().find(|c| c.0 == n).unwrap();
        (c.1, c.2)
    };
    assert_eq!(at("new_a"), (orig_bin.len() as u64, 16));
    assert_eq!(at("new_b"), at("new_a"));
    assert_eq!(at("new_c"), (orig_bin.len() as u64 + 16, 16));
    let m2 = OvModel::load(&out).unwrap();
    for (n, v) in [("new_a", [7, -3]), ("new_b", [7, -3]), ("new_c", [7, -4])] {
        let t = m2.graph.node(find(&m2, n)).constant().unwrap();
        assert_eq!(t.to_i64_vec(), Some(v.to_vec()), "{n}");
    }
}

// ---------------------------------------------------------------------------------------------
// The splice writer's corner cases: a changed model is written as edits of the source text.

/// Loads `xml` (with an 8-byte `.bin`), applies `change`, saves, checks the written text is
/// well-formed, and returns it with the reloaded model.
fn splice_case(xml: &str, change: impl FnOnce(&mut OvModel)) -> (String, OvModel) {
    let (dir, p) = write_case(xml, Some(&[0u8; 8]));
    let mut m = OvModel::load(&p).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    change(&mut m);
    let out = dir.path().join("out.xml");
    m.save(&out).unwrap();
    let text = String::from_utf8(read(&out)).unwrap();
    Document::parse(&text).unwrap_or_else(|e| panic!("not well-formed: {e}\n{text}"));
    let m2 = OvModel::load(&out).unwrap_or_else(|e| panic!("{e}\n{text}"));
    (text, m2)
}

/// Removes the layer `name` whose output 0 is replaced by output 0 of `by`.
fn bypass(m: &mut OvModel, name: &str, by: &str) {
    let gone = find(m, name);
    let by = find(m, by);
    m.graph.redirect(
        slice_opt::ir::OutletId {
            node: gone,
            port: 0,
        },
        slice_opt::ir::OutletId { node: by, port: 0 },
    );
    m.graph.g.remove_node(gone);
}

#[test]
fn removed_layer_between_comments_keeps_the_comments() {
    let xml = GOOD
        .replace("OFFSET", "0")
        .replace(
            "\t\t<layer id=\"2\"",
            "\t\t<!-- before add -->\n\t\t<layer id=\"2\"",
        )
        .replace(
            "\t\t<layer id=\"3\"",
            "\t\t<!-- after add -->\n\t\t<layer id=\"3\"",
        )
        .replace(
            "\t\t<edge from-layer=\"1\"",
            "\t\t<!-- edge comment -->\n\t\t<edge from-layer=\"1\"",
        );
    assert_eq!(xml.matches("<!--").count(), 3, "{xml}");
    let (text, m2) = splice_case(&xml, |m| bypass(m, "add", "x"));
    for c in [
        "<!-- before add -->",
        "<!-- after add -->",
        "<!-- edge comment -->",
    ] {
        assert!(text.contains(c), "{c} lost:\n{text}");
    }
    assert!(!text.contains("name=\"add\""), "{text}");
    // x, c, y are left; y reads x (layer 0, port 0 → layer 3, port 0); no edge names layer 2.
    assert_eq!(m2.graph.g.node_count(), 3, "{text}");
    assert_eq!(m2.graph.g.edge_count(), 1, "{text}");
    let y = find(&m2, "y");
    assert_eq!(m2.graph.input(y, 0).map(|o| o.node), Some(find(&m2, "x")));
    assert!(
        text.contains("<edge from-layer=\"0\" from-port=\"0\" to-layer=\"3\" to-port=\"0\""),
        "{text}"
    );
    assert!(!text.contains("layer=\"2\""), "{text}");
}

/// A Parameter `x` and a Const `c` with no edges; `edges` is what stands for `<edges>`.
fn no_edges_case(edges: &str) -> String {
    let good = GOOD.replace("OFFSET", "0");
    let head = &good[..good.find("\t\t<layer id=\"2\"").unwrap()];
    format!("{head}\t</layers>\n{edges}</net>\n")
}

/// Adds a Result `y` reading output 0 of `x`.
fn add_result(m: &mut OvModel) {
    let x = find(m, "x");
    let mut y = Node::op("y", "Result", "opset1");
    y.num_inputs = 1;
    let y = m.graph.add_node(y);
    m.graph
        .connect(slice_opt::ir::OutletId { node: x, port: 0 }, y, 0);
}

#[test]
fn new_edges_go_into_a_self_closing_or_missing_edges_element() {
    for edges in [
        "\t<edges/>\n",
        "\t<edges />\n",
        "\t<edges>\n\t</edges>\n",
        "",
    ] {
        let xml = no_edges_case(edges);
        let (text, m2) = splice_case(&xml, add_result);
        assert_eq!(text.matches("<edges").count(), 1, "one <edges>:\n{text}");
        assert!(
            !text.contains("<edges/>") && !text.contains("<edges />"),
            "{text}"
        );
        assert_eq!(m2.graph.g.node_count(), 3, "{text}");
        assert_eq!(m2.graph.g.edge_count(), 1, "{text}");
        let y = find(&m2, "y");
        assert_eq!(m2.graph.input(y, 0).map(|o| o.node), Some(find(&m2, "x")));
        // The edges come after the layers, inside <net>.
        let (l, e, n) = (
            text.find("</layers>").unwrap(),
            text.find("<edge ").unwrap(),
            text.find("</net>").unwrap(),
        );
        assert!(l < e && e < n, "{text}");
    }
}
