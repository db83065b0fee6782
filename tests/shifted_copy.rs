//! Layer: formats (saving: unchanged tensors copied), ONNX and OpenVINO IR.
//!
//! Big unchanged tensors are copied from the input file into the output, also when a pass changed
//! the records before them so that they land shifted (at another offset modulo the page size: the
//! save reads them through buffers) or shifted by whole pages (copied file to file). Either way the
//! output holds exactly the input's bytes. ONNX and OpenVINO IR.

mod common;

use std::path::Path;

use prost::Message;
use slice_opt::formats::onnx::proto;
use slice_opt::{Model, Pipeline};

/// Bytes no two positions of which (64 bytes apart or more) repeat: a tensor found in a file
/// by its first 64 bytes is found once.
fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            // xorshift32
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// Where `needle` starts in `hay` (it must occur exactly once).
fn find_once(hay: &[u8], needle: &[u8]) -> usize {
    let at: Vec<usize> = hay
        .windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        at.len(),
        1,
        "the tensor's first bytes occur {} times",
        at.len()
    );
    at[0]
}

/// The shifts modulo the page size of the runs include one by whole pages (copied file to
/// file) and at least three others (read through buffers).
fn assert_both_ways(seen: &[i64]) {
    assert!(
        seen.contains(&0),
        "a page-aligned shift was exercised: {seen:?}"
    );
    assert!(
        seen.iter().filter(|&&s| s != 0).count() >= 3,
        "unaligned shifts were exercised: {seen:?}"
    );
}

fn run_default_passes(input: &Path, output: &Path) {
    let mut m = Model::load(input).unwrap_or_else(|e| panic!("{e}"));
    Pipeline::new()
        .run(&mut m)
        .unwrap_or_else(|e| panic!("{e}"));
    m.save(output).unwrap_or_else(|e| panic!("{e}"));
}

fn u8_tensor(name: &str, data: Vec<u8>) -> proto::TensorProto {
    proto::TensorProto {
        name: Some(name.into()),
        dims: vec![data.len() as i64],
        data_type: Some(2),
        raw_data: Some(bytes::Bytes::from(data)),
        ..Default::default()
    }
}

fn u8_io(name: &str, n: usize) -> proto::ValueInfoProto {
    common::tensor_value(name, 2, &[Some(n as u64)])
}

/// A model whose first node, a Slice of constants named with `name_len` characters, is folded
/// away, followed by two big weights (3.5 MB and 1.2 MB, more than the save's buffers) that
/// the rest of the graph adds to its inputs.
fn onnx_model(name_len: usize, w1: &[u8], w2: &[u8]) -> Vec<u8> {
    let mut slice = common::node("Slice", &"s".repeat(name_len), &["c", "st", "en"], &["sl"]);
    slice.doc_string = None;
    let graph = proto::GraphProto {
        name: Some("g".into()),
        node: vec![
            slice,
            common::node("Add", "add0", &["x", "sl"], &["y"]),
            common::node("Add", "add1", &["a", "w1"], &["o1"]),
            common::node("Add", "add2", &["b", "w2"], &["o2"]),
        ],
        initializer: vec![
            u8_tensor("c", (0..16).collect()),
            common::i64_tensor("st", &[2]),
            common::i64_tensor("en", &[6]),
            u8_tensor("w1", w1.to_vec()),
            u8_tensor("w2", w2.to_vec()),
        ],
        input: vec![u8_io("x", 4), u8_io("a", w1.len()), u8_io("b", w2.len())],
        output: vec![u8_io("y", 4), u8_io("o1", w1.len()), u8_io("o2", w2.len())],
        ..Default::default()
    };
    common::model(graph).encode_to_vec()
}

fn raw_of(m: &proto::ModelProto, name: &str) -> Vec<u8> {
    let g = m.graph.as_ref().expect("a graph");
    let t = g
        .initializer
        .iter()
        .find(|t| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no initializer {name}"));
    t.raw_data.as_ref().expect("raw data").to_vec()
}

#[test]
fn onnx_weights_land_shifted_and_page_shifted_intact() {
    let w1 = pattern(3_500_000 + 13, 7);
    let w2 = pattern(1_200_000 + 5, 11);
    let dir = tempfile::tempdir().unwrap();
    // The shift of the weights in the output as the folded node's name grows by one byte
    // grows by one byte (the name's length takes two bytes from 128 to 16383 characters).
    let shift = |name_len: usize| -> (i64, Vec<u8>) {
        let bytes = onnx_model(name_len, &w1, &w2);
        let input = dir.path().join(format!("m{name_len}.onnx"));
        let output = dir.path().join(format!("m{name_len}.out.onnx"));
        std::fs::write(&input, &bytes).unwrap();
        run_default_passes(&input, &output);
        let out = std::fs::read(&output).unwrap();
        let d = find_once(&bytes, &w1[..64]) as i64 - find_once(&out, &w1[..64]) as i64;
        (d, out)
    };
    let (d0, _) = shift(200);
    let aligned_len = 200 + (4096 - d0.rem_euclid(4096)) as usize % 4096;
    let mut seen = Vec::new();
    for name_len in [200, 201, 333, aligned_len] {
        let (d, out) = shift(name_len);
        seen.push(d.rem_euclid(4096));
        let m = proto::ModelProto::decode(&out[..]).expect("the output decodes");
        assert!(
            raw_of(&m, "w1") == w1,
            "w1 differs (name {name_len}, shift {d})"
        );
        assert!(
            raw_of(&m, "w2") == w2,
            "w2 differs (name {name_len}, shift {d})"
        );
        let g = m.graph.as_ref().unwrap();
        assert!(
            g.node.iter().all(|n| n.op_type.as_deref() != Some("Slice")),
            "the constant Slice was folded"
        );
    }
    assert_both_ways(&seen);
}

/// An IR whose `.bin` holds a constant StridedSlice's data (`pad` bytes of it unused) and then
/// a big constant added to a parameter: folding drops the small constants from the `.bin`, so
/// the big one moves by their size.
fn ov_model(pad: usize, big: &[u8]) -> (String, Vec<u8>) {
    let mut bin: Vec<u8> = (0..16i32).flat_map(|v| v.to_le_bytes()).collect();
    bin.extend(std::iter::repeat_n(0xEEu8, pad));
    let params = bin.len();
    for v in [[1i64], [5], [1]] {
        bin.extend(v[0].to_le_bytes());
    }
    let big_at = bin.len();
    bin.extend_from_slice(big);
    let n = big.len();
    let konst = |id: usize,
                 name: &str,
                 ty: &str,
                 shape: &str,
                 off: usize,
                 size: usize,
                 prec: &str,
                 dims: &str| {
        format!("<layer id=\"{id}\" name=\"{name}\" type=\"Const\" version=\"opset1\"><data element_type=\"{ty}\" shape=\"{shape}\" offset=\"{off}\" size=\"{size}\"/><output><port id=\"0\" precision=\"{prec}\">{dims}</port></output></layer>\n")
    };
    let mut layers = String::new();
    layers += &konst(0, "data", "i32", "16", 0, 64, "I32", "<dim>16</dim>");
    layers += &konst(1, "begin", "i64", "1", params, 8, "I64", "<dim>1</dim>");
    layers += &konst(2, "end", "i64", "1", params + 8, 8, "I64", "<dim>1</dim>");
    layers += &konst(
        3,
        "stride",
        "i64",
        "1",
        params + 16,
        8,
        "I64",
        "<dim>1</dim>",
    );
    layers += "<layer id=\"4\" name=\"ss\" type=\"StridedSlice\" version=\"opset1\"><data begin_mask=\"0\" end_mask=\"0\" new_axis_mask=\"\" shrink_axis_mask=\"\" ellipsis_mask=\"\"/><input><port id=\"0\" precision=\"I32\"><dim>16</dim></port><port id=\"1\" precision=\"I64\"><dim>1</dim></port><port id=\"2\" precision=\"I64\"><dim>1</dim></port><port id=\"3\" precision=\"I64\"><dim>1</dim></port></input><output><port id=\"4\" precision=\"I32\" names=\"s\"><dim>4</dim></port></output></layer>\n";
    layers += "<layer id=\"5\" name=\"r0\" type=\"Result\" version=\"opset1\"><input><port id=\"0\" precision=\"I32\"><dim>4</dim></port></input></layer>\n";
    layers += &format!("<layer id=\"6\" name=\"p\" type=\"Parameter\" version=\"opset1\"><data shape=\"{n}\" element_type=\"u8\"/><output><port id=\"0\" precision=\"U8\" names=\"p\"><dim>{n}</dim></port></output></layer>\n");
    layers += &konst(
        7,
        "big",
        "u8",
        &n.to_string(),
        big_at,
        n,
        "U8",
        &format!("<dim>{n}</dim>"),
    );
    layers += &format!("<layer id=\"8\" name=\"add\" type=\"Add\" version=\"opset1\"><data auto_broadcast=\"numpy\"/><input><port id=\"0\" precision=\"U8\"><dim>{n}</dim></port><port id=\"1\" precision=\"U8\"><dim>{n}</dim></port></input><output><port id=\"2\" precision=\"U8\" names=\"o\"><dim>{n}</dim></port></output></layer>\n");
    layers += &format!("<layer id=\"9\" name=\"r1\" type=\"Result\" version=\"opset1\"><input><port id=\"0\" precision=\"U8\"><dim>{n}</dim></port></input></layer>\n");
    let edges = [
        (0, 0, 4, 0),
        (1, 0, 4, 1),
        (2, 0, 4, 2),
        (3, 0, 4, 3),
        (4, 4, 5, 0),
        (6, 0, 8, 0),
        (7, 0, 8, 1),
        (8, 2, 9, 0),
    ]
    .iter()
    .map(|(a, ap, b, bp)| {
        format!("<edge from-layer=\"{a}\" from-port=\"{ap}\" to-layer=\"{b}\" to-port=\"{bp}\"/>\n")
    })
    .collect::<String>();
    let xml = format!("<?xml version=\"1.0\"?>\n<net name=\"shifted\" version=\"11\">\n<layers>\n{layers}</layers>\n<edges>\n{edges}</edges>\n</net>\n");
    (xml, bin)
}

/// The bytes of the Const layer `name` of the IR `xml` (read from its `.bin`).
fn ov_const(xml_path: &Path, name: &str) -> Vec<u8> {
    let xml = std::fs::read_to_string(xml_path).unwrap();
    let bin = std::fs::read(xml_path.with_extension("bin")).unwrap();
    let at = xml
        .find(&format!("name=\"{name}\" type=\"Const\""))
        .unwrap_or_else(|| panic!("no Const {name} in\n{xml}"));
    let attr = |key: &str| -> usize {
        let rest = &xml[at..];
        let k = rest.find(&format!(" {key}=\"")).expect("attribute") + key.len() + 3;
        let v = &rest[k..];
        v[..v.find('"').unwrap()].parse().unwrap()
    };
    let (off, size) = (attr("offset"), attr("size"));
    bin[off..off + size].to_vec()
}

#[test]
fn ir_constant_lands_shifted_and_page_shifted_intact() {
    let big = pattern(2_700_000 + 3, 5);
    let dir = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for pad in [1usize, 1000, 4096 - 64 - 24 + 4096, 3] {
        let (xml, bin) = ov_model(pad, &big);
        let input = dir.path().join(format!("m{pad}.xml"));
        std::fs::write(&input, &xml).unwrap();
        std::fs::write(input.with_extension("bin"), &bin).unwrap();
        let output = dir.path().join(format!("m{pad}.out.xml"));
        run_default_passes(&input, &output);
        let out_bin = std::fs::read(output.with_extension("bin")).unwrap();
        let d = find_once(&bin, &big[..64]) as i64 - find_once(&out_bin, &big[..64]) as i64;
        seen.push(d.rem_euclid(4096));
        assert!(
            ov_const(&output, "big") == big,
            "the constant differs (pad {pad}, shift {d})"
        );
        let text = std::fs::read_to_string(&output).unwrap();
        assert!(
            !text.contains("type=\"StridedSlice\""),
            "the StridedSlice was folded"
        );
    }
    assert_both_ways(&seen);
}

/// A `.bin` of 64 MB or more whose unreferenced bytes are at most 1/256 of it keeps its layout
/// (new constants after the end); more unreferenced bytes, and it is compacted.
const KEEP_LAYOUT_MIN: usize = 64 << 20;

/// A big constant for a `.bin` of at least [`KEEP_LAYOUT_MIN`] bytes (a 1 MB pattern repeated:
/// built fast in a debug build).
fn big_constant() -> Vec<u8> {
    let mut big = pattern(1 << 20, 7).repeat(KEEP_LAYOUT_MIN >> 20);
    big.extend_from_slice(&[1, 2, 3]);
    big
}

/// The temporary files left in `dir` (a save's are hidden `.slice-opt-*.tmp` files).
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// The `offset` attribute of the Const layer `name` in the IR at `xml_path`.
fn ov_offset(xml_path: &Path, name: &str) -> usize {
    let xml = std::fs::read_to_string(xml_path).unwrap();
    let at = xml
        .find(&format!("name=\"{name}\" type=\"Const\""))
        .unwrap_or_else(|| panic!("no Const {name}"));
    let rest = &xml[at..];
    let k = rest.find(" offset=\"").expect("offset") + 9;
    rest[k..k + rest[k..].find('"').unwrap()].parse().unwrap()
}

/// Runs the default passes on `input` and saves to `output`, with a [`BinCopy`] started
/// before the load when `copy_to` names its output (`Some(output)`: the one saved to).
fn passes_with_copy(input: &Path, output: &Path, copy_to: Option<&Path>) {
    let copy = copy_to.and_then(|o| slice_opt::formats::openvino::BinCopy::start(input, o));
    assert_eq!(
        copy.is_some(),
        copy_to.is_some(),
        "a copy of a 64 MB .bin starts"
    );
    let mut m = Model::load(input).unwrap_or_else(|e| panic!("{e}"));
    Pipeline::new()
        .run(&mut m)
        .unwrap_or_else(|e| panic!("{e}"));
    m.save_with(output, copy).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_big_ir_bin_keeps_its_layout_when_little_of_it_is_unreferenced() {
    let big = big_constant();
    let dir = tempfile::tempdir().unwrap();
    // pad 1: 89 bytes of the `.bin` are left unreferenced by the fold (the StridedSlice's data,
    // the byte after it, its three parameters): far under 1/256 of it. pad = 1/128 of it: over.
    for (pad, kept) in [(1usize, true), (KEEP_LAYOUT_MIN / 128, false)] {
        let (xml, bin) = ov_model(pad, &big);
        let input = dir.path().join(format!("m{pad}.xml"));
        std::fs::write(&input, &xml).unwrap();
        std::fs::write(input.with_extension("bin"), &bin).unwrap();
        let big_at = ov_offset(&input, "big");
        let plain = dir.path().join(format!("m{pad}.plain.xml"));
        passes_with_copy(&input, &plain, None);
        let copied = dir.path().join(format!("m{pad}.copied.xml"));
        passes_with_copy(&input, &copied, Some(&copied));
        for out in [&plain, &copied] {
            let out_bin = std::fs::read(out.with_extension("bin")).unwrap();
            assert!(ov_const(out, "big") == big, "the big constant (pad {pad})");
            let text = std::fs::read_to_string(out).unwrap();
            assert!(
                !text.contains("type=\"StridedSlice\""),
                "folded (pad {pad})"
            );
            // The fold's result: elements 1..5 of 0..16 (i32), 16 new bytes.
            let folded: Vec<u8> = (1..5i32).flat_map(|v| v.to_le_bytes()).collect();
            assert!(
                out_bin.windows(16).any(|w| w == folded),
                "the folded constant is in the .bin (pad {pad})"
            );
            if kept {
                assert_eq!(out_bin.len(), bin.len() + 16, "the original, then 16 bytes");
                assert!(out_bin[..bin.len()] == bin[..], "every byte where it was");
                assert_eq!(
                    ov_offset(out, "big"),
                    big_at,
                    "the big constant did not move"
                );
            } else {
                assert_eq!(out_bin.len(), bin.len() - (64 + pad + 24) + 16, "compacted");
                assert_eq!(ov_offset(out, "big"), big_at - (64 + pad + 24));
            }
        }
        // The copy started before the load changes how the `.bin` is written, not what.
        for ext in ["xml", "bin"] {
            assert!(
                std::fs::read(plain.with_extension(ext)).unwrap()
                    == std::fs::read(copied.with_extension(ext)).unwrap(),
                "the .{ext} with and without the early copy (pad {pad})"
            );
        }
        assert_eq!(temporaries(dir.path()), Vec::<String>::new());
    }
}

/// The model of [`ov_model`] with pad 1 and [`big_constant`], written to `dir/m.xml` and
/// `dir/m.bin`: its path, the big constant and the `.bin`'s bytes.
fn big_ir(dir: &Path) -> (std::path::PathBuf, Vec<u8>, Vec<u8>) {
    let big = big_constant();
    let (xml, bin) = ov_model(1, &big);
    let input = dir.join("m.xml");
    std::fs::write(&input, &xml).unwrap();
    std::fs::write(input.with_extension("bin"), &bin).unwrap();
    (input, big, bin)
}

/// Runs the command line on `input` with `-o output -q`.
fn run_cli(input: &Path, output: &Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_slice-opt"))
        .arg(input)
        .arg("-o")
        .arg(output)
        .arg("-q")
        .output()
        .unwrap()
}

#[test]
fn an_early_bin_copy_is_used_only_for_its_own_output_and_source() {
    let dir = tempfile::tempdir().unwrap();
    let (input, _, bin) = big_ir(dir.path());

    // Dropped unused: the copy stops and leaves nothing.
    let out = dir.path().join("unused.xml");
    drop(slice_opt::formats::openvino::BinCopy::start(&input, &out));
    assert_eq!(temporaries(dir.path()), Vec::<String>::new());
    assert!(!out.with_extension("bin").exists());

    // Started for another output: the save writes its own `.bin`.
    let elsewhere = dir.path().join("elsewhere.xml");
    let saved = dir.path().join("saved.xml");
    let copy = slice_opt::formats::openvino::BinCopy::start(&input, &elsewhere);
    let m = Model::load(&input).unwrap();
    m.save_with(&saved, copy).unwrap();
    assert!(std::fs::read(saved.with_extension("bin")).unwrap() == bin);
    assert!(!elsewhere.with_extension("bin").exists());

    // The `.bin` replaced by another file (same size, other bytes) after the copy started:
    // the model reads the new one, and the save writes the new one's bytes, not the copy's.
    let replaced = dir.path().join("replaced.xml");
    let copy = slice_opt::formats::openvino::BinCopy::start(&input, &replaced);
    let mut other = bin.clone();
    let at = ov_offset(&input, "big");
    other[at..at + 3].copy_from_slice(b"new");
    let swap = dir.path().join("swap.part");
    std::fs::write(&swap, &other).unwrap();
    std::fs::rename(&swap, input.with_extension("bin")).unwrap();
    let m = Model::load(&input).unwrap();
    m.save_with(&replaced, copy).unwrap();
    assert!(std::fs::read(replaced.with_extension("bin")).unwrap() == other);
    assert_eq!(temporaries(dir.path()), Vec::<String>::new());
}

#[test]
fn the_cli_copies_a_big_bin_early_and_leaves_nothing_on_failure() {
    let dir = tempfile::tempdir().unwrap();
    let (input, big, bin) = big_ir(dir.path());

    let out = dir.path().join("out.xml");
    let run = run_cli(&input, &out);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out_bin = std::fs::read(out.with_extension("bin")).unwrap();
    assert!(out_bin[..bin.len()] == bin[..], "the layout is kept");
    assert!(ov_const(&out, "big") == big);

    // The `.bin` target is an unrelated file: the save is refused, the file is untouched and
    // the early copy's temporary file is gone.
    let refused = dir.path().join("refused.xml");
    std::fs::write(refused.with_extension("bin"), b"not a model's").unwrap();
    let run = run_cli(&input, &refused);
    assert!(!run.status.success());
    assert_eq!(
        std::fs::read(refused.with_extension("bin")).unwrap(),
        b"not a model's"
    );
    assert!(!refused.exists());
    assert_eq!(temporaries(dir.path()), Vec::<String>::new());
}
