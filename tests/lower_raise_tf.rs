//! Issue 43: `lower` then `raise` (separate runs, and `--passes lower,raise`) leave OpenVINO IR
//! converted from TensorFlow as they found it: every StridedSlice back with the same shrink and
//! new-axis bits, and at most the original number of layers (Loop bodies included).
//!
//! Expected values are read from the original files (tests/data/tf_ir/, written by
//! `openvino.convert_model` of TensorFlow functions: tools/gen_tf_ir.py), never from our
//! output. Outputs in OpenVINO are compared by tools/lower_raise_tf_check.py.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// A mask attribute as 0/1 values, trailing zeros dropped (an entry not written is 0).
fn bits(s: &str) -> Vec<u8> {
    let mut v: Vec<u8> = s
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| u8::from(x != "0"))
        .collect();
    while v.last() == Some(&0) {
        v.pop();
    }
    v
}

/// The value of attribute `name` in the tag text `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    let len = tag[at..].find('"')?;
    Some(&tag[at..at + len])
}

/// The layers of an IR file, bodies included, and per StridedSlice (by name; a name repeated
/// in a body gets a `#k` suffix) its shrink and new-axis bits.
#[allow(clippy::type_complexity)]
fn structure(path: &Path) -> (usize, BTreeMap<String, (Vec<u8>, Vec<u8>)>) {
    let xml = std::fs::read_to_string(path).expect("reads the IR");
    let mut layers = 0;
    let mut slices = BTreeMap::new();
    for chunk in xml.split("<layer ").skip(1) {
        layers += 1;
        let head = &chunk[..chunk.find('>').expect("a layer tag ends")];
        if attr(head, "type") != Some("StridedSlice") {
            continue;
        }
        let name = attr(head, "name").expect("a layer has a name").to_string();
        let data_at = chunk.find("<data ").expect("a StridedSlice has data");
        let data = &chunk[data_at..data_at + chunk[data_at..].find('>').expect("data ends")];
        let masks = (
            bits(attr(data, "shrink_axis_mask").unwrap_or("")),
            bits(attr(data, "new_axis_mask").unwrap_or("")),
        );
        let mut key = name.clone();
        let mut k = 1;
        while slices.contains_key(&key) {
            key = format!("{name}#{k}");
            k += 1;
        }
        slices.insert(key, masks);
    }
    (layers, slices)
}

fn slice_opt(input: &Path, output: &Path, passes: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_slice-opt"))
        .arg(input)
        .arg("-o")
        .arg(output)
        .args(["--passes", passes, "-q"])
        .output()
        .expect("slice-opt runs");
    assert!(
        out.status.success(),
        "slice-opt --passes {passes} {}: {}",
        input.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Lower then raise `name` both ways; both results hold the original StridedSlices (same
/// names, same shrink and new-axis bits) and no more layers.
fn round_trip(name: &str) {
    let original = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/tf_ir")
        .join(format!("{name}.xml"));
    let (layers, slices) = structure(&original);
    assert!(!slices.is_empty(), "{name}: the fixture has StridedSlices");
    let dir = tempfile::tempdir().expect("tempdir");
    let low = dir.path().join("low.xml");
    let sep = dir.path().join("sep.xml");
    let one = dir.path().join("one.xml");
    slice_opt(&original, &low, "lower");
    let (_, after_lower) = structure(&low);
    assert!(
        after_lower.is_empty(),
        "{name}: lower leaves {after_lower:?}"
    );
    slice_opt(&low, &sep, "raise");
    slice_opt(&original, &one, "lower,raise");
    for (how, path) in [("lower then raise", &sep), ("lower,raise", &one)] {
        let (n, got) = structure(path);
        assert_eq!(got, slices, "{name} ({how}): StridedSlices and their bits");
        assert!(n <= layers, "{name} ({how}): {n} layers, {layers} before");
    }
}

/// `x[:, -1]`, `x[:, 0]`, `x[..., 0]`, `x[:, -1, tf.newaxis]`, reverse ranges, ellipsis and new
/// axes on dims of unknown size.
#[test]
fn idioms_come_back() {
    round_trip("idioms");
}

/// `x[:, i]`, `x[:, i:i+2]`, `x[i, ..., 1]`, `x[:, -i-1::-1]` with a run-time `i`: the shrink of
/// a run-time index `lower` clamps into the axis is recognised, guard included.
#[test]
fn run_time_begins_come_back() {
    round_trip("runtime_begin");
}

/// Slices inside a `while_loop` body (OpenVINO Loop), `x[:, i]` with the loop counter.
#[test]
fn loop_body_slices_come_back() {
    round_trip("while_loop");
}

/// A new axis next to a shrunk one in either order, strides, shrink of -2, on a static batch.
#[test]
fn more_idioms_come_back() {
    round_trip("idioms_more");
}
