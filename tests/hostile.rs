//! Layer: robustness: the binary on hostile and careless input.
//!
//! Hostile and careless input. One test per attack of the issue, each built here in a temporary
//! directory (nothing committed as a binary), asserting the exit code, the message, that every file
//! that existed before is byte-identical afterwards and that no file was added (the whole temporary
//! tree is compared, links and FIFOs included) (issue 18).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use prost::Message;
use slice_opt::formats::onnx::proto;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_slice-opt")
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs slice-opt with `args`; fails the test if it runs more than 60 s (a hang).
fn run(args: &[&Path]) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run slice-opt");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("slice-opt {args:?} hangs (killed after 60 s)");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn p(s: &str) -> &Path {
    Path::new(s)
}

/// What a tree holds: every entry by relative path, with its kind and contents.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Dir,
    Link(PathBuf),
    Other(String),
}

fn snapshot(root: &Path) -> BTreeMap<PathBuf, Entry> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read_dir")
            .map(|e| e.expect("entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let rel = path.strip_prefix(root).expect("inside").to_path_buf();
            let meta = std::fs::symlink_metadata(&path).expect("metadata");
            let t = meta.file_type();
            let e = if t.is_symlink() {
                Entry::Link(std::fs::read_link(&path).expect("read_link"))
            } else if t.is_dir() {
                walk(root, &path, out);
                Entry::Dir
            } else if t.is_file() {
                Entry::File(std::fs::read(&path).expect("read"))
            } else {
                Entry::Other(format!("{t:?}"))
            };
            out.insert(rel, e);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Asserts `out` failed with exit code 2 and a one-line message containing `needle`.
fn assert_refused(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit code; stderr: {err}");
    assert!(err.contains(needle), "stderr should say '{needle}': {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}

/// Asserts that nothing in `root` changed since `before`.
fn assert_unchanged(root: &Path, before: &BTreeMap<PathBuf, Entry>) {
    let after = snapshot(root);
    let added: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    assert!(added.is_empty(), "files were added: {added:?}");
    for (k, v) in before {
        assert_eq!(after.get(k), Some(v), "{} changed", k.display());
    }
}

fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(st.success());
}

fn f32_input(name: &str, n: i64) -> proto::ValueInfoProto {
    use proto::type_proto::{Tensor as TT, Value as TV};
    proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(TV::TensorType(TT {
                elem_type: Some(1),
                shape: Some(proto::TensorShapeProto {
                    dim: vec![proto::tensor_shape_proto::Dimension {
                        value: Some(proto::tensor_shape_proto::dimension::Value::DimValue(n)),
                        ..Default::default()
                    }],
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// An f32 initializer `name` of `n` elements in external data `location` at `offset`.
fn external(name: &str, n: i64, location: &str, offset: u64) -> proto::TensorProto {
    let kv = |k: &str, v: String| proto::StringStringEntryProto {
        key: Some(k.into()),
        value: Some(v),
    };
    proto::TensorProto {
        name: Some(name.into()),
        dims: vec![n],
        data_type: Some(1),
        data_location: Some(1),
        external_data: vec![
            kv("location", location.into()),
            kv("offset", offset.to_string()),
            kv("length", (n as u64 * 4).to_string()),
        ],
        ..Default::default()
    }
}

/// `y = x + w0 + w1 + ...` over f32[n], with the given initializers.
fn add_model(n: i64, inits: Vec<proto::TensorProto>) -> proto::ModelProto {
    let mut nodes = Vec::new();
    let mut prev = "x".to_string();
    for (i, t) in inits.iter().enumerate() {
        let out = if i + 1 == inits.len() {
            "y".to_string()
        } else {
            format!("s{i}")
        };
        nodes.push(common::node(
            "Add",
            &format!("add{i}"),
            &[&prev, t.name()],
            &[&out],
        ));
        prev = out;
    }
    proto::ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        graph: Some(proto::GraphProto {
            name: Some("g".into()),
            node: nodes,
            initializer: inits,
            input: vec![f32_input("x", n)],
            output: vec![f32_input("y", n)],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn write_model(path: &Path, m: &proto::ModelProto) {
    std::fs::write(path, m.encode_to_vec()).expect("write model");
}

/// `dir/m.onnx` adding one external initializer of 4 floats read from `location`.
fn model_with_location(dir: &Path, location: &str) -> PathBuf {
    let m = dir.join("m.onnx");
    write_model(&m, &add_model(4, vec![external("w", 4, location, 0)]));
    m
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// The transform, `info` and `check` all refuse `model` with `needle`, changing nothing.
fn every_command_refuses(root: &Path, model: &Path, out: &Path, needle: &str) {
    let before = snapshot(root);
    assert_refused(&run(&[model, p("-o"), out]), needle);
    assert_refused(&run(&[p("info"), model]), needle);
    assert_refused(&run(&[p("check"), model]), needle);
    assert_unchanged(root, &before);
}

// 1. External data that resolves outside the model's directory.

#[cfg(unix)]
#[test]
fn external_data_linked_outside_the_model_directory_is_refused() {
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("outside")).unwrap();
    std::fs::create_dir_all(root.join("model")).unwrap();
    std::fs::create_dir_all(root.join("out")).unwrap();
    std::fs::write(root.join("outside/secret.bin"), [7u8; 16]).unwrap();
    std::os::unix::fs::symlink("../outside/secret.bin", root.join("model/w.bin")).unwrap();
    let m = model_with_location(&root.join("model"), "w.bin");
    every_command_refuses(
        root,
        &m,
        &root.join("out/m.onnx"),
        "resolves outside the model's directory",
    );
}

#[cfg(unix)]
#[test]
fn external_data_through_a_linked_folder_is_refused() {
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("outside")).unwrap();
    std::fs::create_dir_all(root.join("model")).unwrap();
    std::fs::create_dir_all(root.join("out")).unwrap();
    std::fs::write(root.join("outside/secret.bin"), [7u8; 16]).unwrap();
    std::os::unix::fs::symlink("../outside", root.join("model/sub")).unwrap();
    let m = model_with_location(&root.join("model"), "sub/secret.bin");
    every_command_refuses(
        root,
        &m,
        &root.join("out/m.onnx"),
        "resolves outside the model's directory",
    );
}

#[cfg(unix)]
#[test]
fn external_data_linked_inside_the_model_directory_is_read() {
    // The control: a link that stays inside the directory is fine (the onnx package agrees).
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("model/data")).unwrap();
    std::fs::write(root.join("model/data/real.bin"), [0u8; 16]).unwrap();
    std::os::unix::fs::symlink("data/real.bin", root.join("model/w.bin")).unwrap();
    let m = model_with_location(&root.join("model"), "w.bin");
    let out = run(&[p("info"), &m]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// 2. External data, `.bin` or model that is a FIFO: refused at once, never a hang.

#[cfg(unix)]
#[test]
fn external_data_fifo_is_refused_without_hanging() {
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("out")).unwrap();
    mkfifo(&root.join("w.bin"));
    let m = model_with_location(root, "w.bin");
    every_command_refuses(root, &m, &root.join("out/m.onnx"), "is a FIFO");
}

#[cfg(unix)]
#[test]
fn ir_bin_fifo_and_model_fifo_are_refused_without_hanging() {
    let t = tmp();
    let root = t.path();
    std::fs::copy(repo().join("models/last_token.tf.xml"), root.join("m.xml")).unwrap();
    mkfifo(&root.join("m.bin"));
    every_command_refuses(root, &root.join("m.xml"), &root.join("o.xml"), "is a FIFO");
    mkfifo(&root.join("fifo.onnx"));
    every_command_refuses(
        root,
        &root.join("fifo.onnx"),
        &root.join("o.onnx"),
        "is a FIFO",
    );
}

// 3. Outputs that collide with inputs, with each other, or with unrelated files.

#[test]
fn output_naming_the_input_external_data_is_refused() {
    let t = tmp();
    let root = t.path();
    std::fs::write(root.join("w.bin"), [0u8; 16]).unwrap();
    let m = model_with_location(root, "w.bin");
    let before = snapshot(root);
    let out = run(&[&m, p("-o"), &root.join("w.bin")]);
    assert_refused(&out, "(an input of this run): refusing to write over it");
    assert_unchanged(root, &before);
}

#[test]
fn ir_output_naming_the_input_bin_is_refused() {
    let t = tmp();
    let root = t.path();
    for ext in ["xml", "bin"] {
        std::fs::copy(
            repo().join(format!("models/last_token.tf.{ext}")),
            root.join(format!("m.{ext}")),
        )
        .unwrap();
    }
    let before = snapshot(root);
    // `-o m.bin`: the .xml would go to m.bin, and so would its .bin.
    let out = run(&[&root.join("m.xml"), p("-o"), &root.join("m.bin")]);
    assert_refused(&out, "refusing");
    assert_unchanged(root, &before);
}

#[test]
fn external_data_named_like_the_output_is_copied_under_the_outputs_data_name() {
    // Issue 45: the copy of a data file is named after the output (`out.onnx.data`), so a
    // data file named like the output model no longer claims the model's name.
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::create_dir_all(root.join("b")).unwrap();
    std::fs::write(root.join("a/out.onnx"), [0u8; 16]).unwrap();
    let m = model_with_location(&root.join("a"), "out.onnx");
    let out = run(&[&m, p("-o"), &root.join("b/out.onnx")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(root.join("b/out.onnx.data")).unwrap(),
        [0u8; 16]
    );
    assert!(std::fs::read(root.join("b/out.onnx")).unwrap().len() > 16);
}

#[test]
fn unrelated_file_named_like_a_data_file_is_not_overwritten() {
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::create_dir_all(root.join("b")).unwrap();
    std::fs::write(root.join("a/w.bin"), [0u8; 16]).unwrap();
    // The copy of `w.bin` is named after the output (issue 45).
    std::fs::write(root.join("b/m.onnx.data"), b"somebody else's file").unwrap();
    let m = model_with_location(&root.join("a"), "w.bin");
    let before = snapshot(root);
    let out = run(&[&m, p("-o"), &root.join("b/m.onnx")]);
    assert_refused(&out, "is not a data file of the model being replaced");
    assert_unchanged(root, &before);

    // IR: an unrelated `o.bin` beside a new `o.xml`.
    for ext in ["xml", "bin"] {
        std::fs::copy(
            repo().join(format!("models/last_token.tf.{ext}")),
            root.join(format!("a/m.{ext}")),
        )
        .unwrap();
    }
    std::fs::write(root.join("b/o.bin"), b"somebody else's weights").unwrap();
    let before = snapshot(root);
    let out = run(&[&root.join("a/m.xml"), p("-o"), &root.join("b/o.xml")]);
    assert_refused(&out, "is not a data file of the model being replaced");
    assert_unchanged(root, &before);
}

#[test]
fn rerunning_into_the_same_output_replaces_its_own_data_files() {
    // The control for the test above: the data files of the output being replaced are ours.
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::create_dir_all(root.join("b")).unwrap();
    std::fs::write(root.join("a/w.bin"), [0u8; 16]).unwrap();
    let m = model_with_location(&root.join("a"), "w.bin");
    for _ in 0..2 {
        let out = run(&[&m, p("-o"), &root.join("b/m.onnx")]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        std::fs::read(root.join("b/m.onnx.data")).unwrap(),
        [0u8; 16]
    );
    for ext in ["xml", "bin"] {
        std::fs::copy(
            repo().join(format!("models/last_token.tf.{ext}")),
            root.join(format!("a/m.{ext}")),
        )
        .unwrap();
    }
    for _ in 0..2 {
        let out = run(&[&root.join("a/m.xml"), p("-o"), &root.join("b/o.xml")]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// 4. Outputs that are devices, FIFOs or directories.

#[cfg(unix)]
#[test]
fn output_that_is_a_device_a_fifo_or_a_directory_is_refused() {
    use std::os::unix::fs::FileTypeExt;
    let t = tmp();
    let root = t.path();
    std::fs::copy(repo().join("models/last_token.onnx"), root.join("m.onnx")).unwrap();
    let m = root.join("m.onnx");
    // A device node of our own (the null device, made with mknod when running as root): a
    // regression must not be able to replace the system's /dev/null (an old build did).
    let dev = root.join("null");
    let made = Command::new("mknod")
        .arg(&dev)
        .args(["c", "1", "3"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let device = if made {
        dev.clone()
    } else {
        // Not root: rename over /dev fails anyway, so /dev/null itself is safe to name.
        PathBuf::from("/dev/null")
    };
    let before = snapshot(root);
    assert_refused(&run(&[&m, p("-o"), &device]), "is a device");
    assert!(std::fs::metadata(&device)
        .unwrap()
        .file_type()
        .is_char_device());
    std::os::unix::fs::symlink(&device, root.join("null.onnx")).unwrap();
    mkfifo(&root.join("fifo.onnx"));
    std::fs::create_dir(root.join("dir.onnx")).unwrap();
    let before_links = snapshot(root);
    assert_refused(&run(&[&m, p("-o"), &root.join("null.onnx")]), "is a device");
    assert_refused(&run(&[&m, p("-o"), &root.join("fifo.onnx")]), "is a FIFO");
    assert_refused(
        &run(&[&m, p("-o"), &root.join("dir.onnx")]),
        "is a directory",
    );
    // --report naming the input model.
    assert_refused(
        &run(&[&m, p("-o"), &root.join("o.onnx"), p("--report"), &m]),
        "an input of this run",
    );
    assert_unchanged(root, &before_links);
    assert!(before.len() < before_links.len());
}

// 5. A failure or a signal while writing leaves no file behind.

#[cfg(unix)]
#[test]
fn disk_full_while_copying_the_second_external_file_leaves_nothing() {
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("a")).unwrap();
    std::fs::create_dir_all(root.join("b")).unwrap();
    // a.bin (16 KiB) is copied first and fits; b.bin (8 MiB) passes the file size limit.
    let small = 4096i64;
    let big = 2 << 20;
    std::fs::write(root.join("a/a.bin"), vec![1u8; small as usize * 4]).unwrap();
    std::fs::write(root.join("a/b.bin"), vec![2u8; big as usize * 4]).unwrap();
    let m = root.join("a/m.onnx");
    let mut model = add_model(small, vec![external("wa", small, "a.bin", 0)]);
    // A second, larger input through its own Add, so both files are used.
    let g = model.graph.as_mut().unwrap();
    g.input.push(f32_input("x2", big));
    g.output.push(f32_input("y2", big));
    g.initializer.push(external("wb", big, "b.bin", 0));
    g.node
        .push(common::node("Add", "add_b", &["x2", "wb"], &["y2"]));
    write_model(&m, &model);
    let before = snapshot(root);
    // A "disk" of 1 MiB for this process (RLIMIT_FSIZE; SIGXFSZ ignored so the write fails
    // with EFBIG, as on a full disk, instead of killing the process).
    let script = "trap '' XFSZ; ulimit -f 2048; exec \"$0\" \"$@\"";
    let out = Command::new("sh")
        .args(["-c", script, bin()])
        .arg(&m)
        .arg("-o")
        .arg(root.join("b/m.onnx"))
        .output()
        .expect("sh");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    // b.bin's copy, named after the output (issue 45): `m.onnx.1.data`.
    assert!(err.contains("m.onnx.1.data"), "names the file: {err}");
    assert_unchanged(root, &before);
}

/// Writes an ONNX model of one uint8 initializer of `len` bytes (`y = x + w`) without holding
/// it in memory: the initializer's bytes are the end of the file, a hole made by `set_len`.
fn write_large_model(path: &Path, len: u64) {
    use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};
    use proto::type_proto::{Tensor as TT, Value as TV};
    let vi = |name: &str| proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(TV::TensorType(TT {
                elem_type: Some(2),
                shape: Some(proto::TensorShapeProto {
                    dim: vec![proto::tensor_shape_proto::Dimension {
                        value: Some(proto::tensor_shape_proto::dimension::Value::DimValue(
                            len as i64,
                        )),
                        ..Default::default()
                    }],
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    };
    let graph = proto::GraphProto {
        name: Some("g".into()),
        node: vec![common::node("Add", "add", &["x", "w"], &["y"])],
        input: vec![vi("x")],
        output: vec![vi("y")],
        ..Default::default()
    };
    let tensor = proto::TensorProto {
        name: Some("w".into()),
        dims: vec![len as i64],
        data_type: Some(2),
        ..Default::default()
    };
    let head = proto::ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(13),
        }],
        ..Default::default()
    };
    // Fields may come in any order: the initializer is the graph's last field, its raw_data
    // the tensor's last, the graph the model's last.
    let t = tensor.encode_to_vec();
    let t_len = t.len() as u64 + 1 + encoded_len_varint(len) as u64 + len;
    let g = graph.encode_to_vec();
    let g_len = g.len() as u64 + 1 + encoded_len_varint(t_len) as u64 + t_len;
    let mut buf = head.encode_to_vec();
    encode_key(7, WireType::LengthDelimited, &mut buf);
    encode_varint(g_len, &mut buf);
    buf.extend_from_slice(&g);
    encode_key(5, WireType::LengthDelimited, &mut buf);
    encode_varint(t_len, &mut buf);
    buf.extend_from_slice(&t);
    encode_key(9, WireType::LengthDelimited, &mut buf);
    encode_varint(len, &mut buf);
    let f = std::fs::File::create(path).unwrap();
    std::io::Write::write_all(&mut &f, &buf).unwrap();
    f.set_len(buf.len() as u64 + len).unwrap();
}

#[cfg(unix)]
#[test]
fn a_signal_while_writing_a_512_mb_model_leaves_no_file() {
    use std::os::unix::process::ExitStatusExt;
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("out")).unwrap();
    let m = root.join("big.onnx");
    write_large_model(&m, 512 << 20);
    // The model reads back (and its size is what the acceptance line asks for).
    assert!(std::fs::metadata(&m).unwrap().len() >= 512 << 20);
    let before = snapshot(&root.join("out"));
    for (sig, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        let mut child = Command::new(bin())
            .arg(&m)
            .arg("-o")
            .arg(root.join("out/big.onnx"))
            .args(["--passes", "none"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        // Wait for the temporary file to appear, then interrupt.
        let start = Instant::now();
        let mut seen = false;
        while start.elapsed() < Duration::from_secs(120) {
            let tmp_exists = std::fs::read_dir(root.join("out"))
                .unwrap()
                .filter_map(|e| e.ok())
                .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"));
            if tmp_exists {
                seen = true;
                break;
            }
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            seen,
            "{name}: the write finished before a temporary file was seen"
        );
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(sig), "{name}: ends by the signal");
        assert_unchanged(&root.join("out"), &before);
    }
}

// 6. Duplicate initializer names.

#[test]
fn duplicate_initializer_names_are_refused() {
    let t = tmp();
    let root = t.path();
    let w1 = common::i64_tensor("w", &[1, 2]);
    let w2 = common::i64_tensor("w", &[3, 4]);
    let mut m = add_model(2, vec![]);
    let g = m.graph.as_mut().unwrap();
    g.input = vec![];
    g.initializer = vec![w1, w2];
    g.node = vec![common::node("Identity", "id", &["w"], &["y"])];
    let path = root.join("dup.onnx");
    write_model(&path, &m);
    every_command_refuses(
        root,
        &path,
        &root.join("o.onnx"),
        "initializer 'w' is defined twice",
    );
}

/// The onnx checker (onnx 1.19, `full_check`) refuses a graph input `w` with two
/// initializers `w` ("w initializer name is not unique") and accepts it with one: the input
/// shadows that initializer, which stays in the file.
#[test]
fn a_graph_input_shadows_one_initializer_and_never_two() {
    let t = tmp();
    let root = t.path();
    let model = |inits: Vec<proto::TensorProto>| {
        let mut m = add_model(2, vec![]);
        let g = m.graph.as_mut().unwrap();
        g.input = vec![f32_input("w", 2)];
        g.initializer = inits;
        g.node = vec![common::node("Identity", "id", &["w"], &["y"])];
        m
    };
    let two = root.join("two.onnx");
    write_model(
        &two,
        &model(vec![
            common::i64_tensor("w", &[1, 2]),
            common::i64_tensor("w", &[3, 4]),
        ]),
    );
    every_command_refuses(
        root,
        &two,
        &root.join("o.onnx"),
        "initializer 'w' is defined twice",
    );
    let one = root.join("one.onnx");
    write_model(&one, &model(vec![common::i64_tensor("w", &[1, 2])]));
    let out = root.join("one.opt.onnx");
    let r = run(&[&one, p("-o"), &out]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let written = proto::ModelProto::decode(std::fs::read(&out).unwrap().as_slice()).unwrap();
    let g = written.graph.unwrap();
    assert_eq!(g.input.len(), 1);
    assert_eq!(g.initializer.len(), 1, "the shadowed initializer is kept");
    assert_eq!(g.initializer[0].name(), "w");
}

/// Protobuf strings are UTF-8 (prost refuses the record otherwise): an initializer whose name
/// is not is refused by number, whether its data reads in place (raw data) or not (int64
/// data), and whatever comes before it in the file; nothing is written.
#[test]
fn an_initializer_name_that_is_not_utf8_is_refused() {
    let t = tmp();
    let root = t.path();
    let mut typed = common::i64_tensor("qq", &[5]);
    typed.int64_data = vec![5];
    typed.raw_data = None;
    for bad in [common::i64_tensor("qq", &[5]), typed] {
        let m = add_model(2, vec![common::i64_tensor("a", &[1, 2]), bad]);
        let mut bytes = m.encode_to_vec();
        // The last "qq": the initializer's name (the node reading it comes first).
        let at = bytes
            .windows(2)
            .rposition(|w| w == b"qq")
            .expect("the name is in the record");
        bytes[at..at + 2].copy_from_slice(&[0xff, 0xfe]);
        let model = root.join("m.onnx");
        std::fs::write(&model, &bytes).unwrap();
        every_command_refuses(
            root,
            &model,
            &root.join("o.onnx"),
            "initializer #1: its name does not read",
        );
    }
}

/// The same shadowing when a pass rewrites the graph (the save rebuilds the initializer list
/// instead of copying the graph): the shadowed initializer is written once, in its place among
/// the others, with its bytes; an initializer named like no input is not taken for one.
#[test]
fn a_shadowed_initializer_keeps_its_place_when_the_graph_is_rebuilt() {
    let t = tmp();
    let root = t.path();
    let mut m = add_model(4, vec![]);
    let g = m.graph.as_mut().unwrap();
    g.input = vec![f32_input("x", 4), f32_input("w", 2)];
    g.initializer = vec![
        common::i64_tensor("starts", &[1]),
        common::i64_tensor("w", &[7, 8]),
        common::i64_tensor("ends", &[3]),
    ];
    // The Slice's output type is inferred ([2]): the graph is rebuilt on save.
    g.node = vec![
        common::node("Slice", "s", &["x", "starts", "ends"], &["y"]),
        common::node("Identity", "id", &["w"], &["z"]),
    ];
    // y declared with a wrong length: inference writes [2].
    g.output = vec![f32_input("y", 4), f32_input("z", 2)];
    let input = root.join("m.onnx");
    write_model(&input, &m);
    let out = root.join("m.opt.onnx");
    let r = run(&[&input, p("-o"), &out, p("--passes"), p("infer")]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let written = proto::ModelProto::decode(std::fs::read(&out).unwrap().as_slice()).unwrap();
    let g = written.graph.unwrap();
    let names: Vec<&str> = g.initializer.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["starts", "w", "ends"]);
    assert_eq!(g.initializer[1], common::i64_tensor("w", &[7, 8]));
    assert_eq!(
        g.output[0],
        f32_input("y", 2),
        "the graph was rebuilt with y's inferred type"
    );
}

// 9. IR that OpenVINO's reader refuses; a directory named like a model.

#[test]
fn ir_element_types_openvino_refuses_are_refused() {
    let t = tmp();
    let root = t.path();
    let xml = std::fs::read_to_string(repo().join("models/last_token.tf.xml")).unwrap();
    let bin = std::fs::read(repo().join("models/last_token.tf.bin")).unwrap();
    // What openvino 2025 refuses ("q99" is not a member of enum element::Type_t;
    // "Unsupported element type: q99"), in each attribute.
    let cases = [
        (
            "element_type=\"f32\"",
            "element_type=\"q99\"",
            "element_type=\"q99\"",
        ),
        (
            "precision=\"FP32\"",
            "precision=\"q99\"",
            "precision=\"q99\"",
        ),
        (
            "precision=\"FP32\"",
            "precision=\"Fp32\"",
            "precision=\"Fp32\"",
        ),
    ];
    for (from, to, needle) in cases {
        assert!(xml.contains(from), "fixture has {from}");
        let edited = xml.replacen(from, to, 1);
        std::fs::write(root.join("m.xml"), &edited).unwrap();
        std::fs::write(root.join("m.bin"), &bin).unwrap();
        let before = snapshot(root);
        let out = run(&[p("check"), &root.join("m.xml")]);
        assert_refused(&out, needle);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("node '"), "names the layer: {err}");
        assert_refused(
            &run(&[&root.join("m.xml"), p("-o"), &root.join("o.xml")]),
            needle,
        );
        assert_unchanged(root, &before);
    }
    // Inside a Loop body too.
    let lxml = std::fs::read_to_string(repo().join("models/loop_body_slice.tf.xml")).unwrap();
    let body = lxml.find("<body>").expect("a body");
    let at = body
        + lxml[body..]
            .find("element_type=\"")
            .expect("a body element_type");
    let end = at + lxml[at..].find("\" ").expect("closing quote");
    let edited = format!("{}element_type=\"q99{}", &lxml[..at], &lxml[end..]);
    std::fs::write(root.join("l.xml"), &edited).unwrap();
    std::fs::copy(
        repo().join("models/loop_body_slice.tf.bin"),
        root.join("l.bin"),
    )
    .unwrap();
    assert_refused(
        &run(&[p("check"), &root.join("l.xml")]),
        "element_type=\"q99\"",
    );
    // What it reads: upper-case element types, legacy precisions.
    let edited = xml.replacen("element_type=\"f32\"", "element_type=\"F32\"", 1);
    std::fs::write(root.join("m.xml"), &edited).unwrap();
    let out = run(&[p("check"), &root.join("m.xml")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_directory_named_like_a_model_is_refused() {
    let t = tmp();
    let root = t.path();
    std::fs::create_dir(root.join("x.onnx")).unwrap();
    std::fs::copy(
        repo().join("models/last_token.onnx"),
        root.join("x.onnx/m.onnx"),
    )
    .unwrap();
    let before = snapshot(root);
    assert_refused(
        &run(&[&root.join("x.onnx"), p("-o"), &root.join("y.onnx")]),
        "is a directory",
    );
    assert_refused(&run(&[p("check"), &root.join("x.onnx")]), "is a directory");
    assert_refused(&run(&[p("info"), &root.join("x.onnx")]), "is a directory");
    assert_unchanged(root, &before);
}

// 9. Port dims OpenVINO 2026.4's `read_model` refuses (checked with the openvino package on this
// fixture: u64::MAX, 2^63 and -2 in the Parameter's port are refused; i64::MAX is read).
#[test]
fn ir_dims_openvino_refuses_are_refused() {
    let t = tmp();
    let root = t.path();
    let xml = std::fs::read_to_string(repo().join("models/last_token.tf.xml")).unwrap();
    let bin = std::fs::read(repo().join("models/last_token.tf.bin")).unwrap();
    let from = "<dim>7</dim>";
    assert!(xml.contains(from), "fixture has {from}");
    for dim in ["18446744073709551615", "9223372036854775808", "-2"] {
        let edited = xml.replacen(from, &format!("<dim>{dim}</dim>"), 1);
        std::fs::write(root.join("m.xml"), &edited).unwrap();
        std::fs::write(root.join("m.bin"), &bin).unwrap();
        let before = snapshot(root);
        let needle = format!("dim '{dim}' is not valid");
        let out = run(&[p("check"), &root.join("m.xml")]);
        assert_refused(&out, &needle);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("node 'x0'"),
            "names the layer"
        );
        assert_refused(
            &run(&[&root.join("m.xml"), p("-o"), &root.join("o.xml")]),
            &needle,
        );
        assert_unchanged(root, &before);
    }
}

// 7. A Concat of 100,000 inputs (inference was quadratic: 11 s). Timing is measured by the
// benchmark (`bench/`, model `concat_100k.onnx`), not here; this asserts the answers the spec
// gives and that the run leaves only its output.

#[test]
fn concat_of_100000_inputs_is_inferred_and_folded() {
    const K: usize = 100_000;
    let t = tmp();
    let root = t.path();
    let mut m = add_model(2, vec![]);
    let g = m.graph.as_mut().unwrap();
    g.input = (0..K).map(|i| f32_input(&format!("x{i}"), 2)).collect();
    g.input.push(f32_input("v", K as i64 + 5));
    let xs: Vec<String> = (0..K).map(|i| format!("x{i}")).collect();
    let ks: Vec<String> = (0..K).map(|i| format!("k{i}")).collect();
    g.initializer = (0..K)
        .map(|i| common::i64_tensor(&format!("k{i}"), &[i as i64]))
        .collect();
    g.initializer.extend([
        common::i64_tensor("s1", &[1]),
        common::i64_tensor("e1", &[-1]),
        common::i64_tensor("g", &[3]),
        common::i64_tensor("e2", &[K as i64]),
    ]);
    let refs = |v: &[String]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(",");
    let mut concat = common::node("Concat", "concat_inputs", &[], &["c"]);
    concat.input = refs(&xs).split(',').map(String::from).collect();
    let mut kconcat = common::node("Concat", "concat_consts", &[], &["kc"]);
    kconcat.input = refs(&ks).split(',').map(String::from).collect();
    for n in [&mut concat, &mut kconcat] {
        n.attribute.push(proto::AttributeProto {
            name: Some("axis".into()),
            i: Some(0),
            r#type: Some(proto::attribute_proto::AttributeType::Int as i32),
            ..Default::default()
        });
    }
    let mut gather = common::node("Gather", "gather", &["kc", "g"], &["start"]);
    gather.attribute.push(proto::AttributeProto {
        name: Some("axis".into()),
        i: Some(0),
        r#type: Some(proto::attribute_proto::AttributeType::Int as i32),
        ..Default::default()
    });
    g.node = vec![
        concat,
        common::node("Slice", "slice_inputs", &["c", "s1", "e1"], &["y"]),
        kconcat,
        gather,
        common::node("Slice", "slice_consts", &["v", "start", "e2"], &["z"]),
    ];
    g.output = vec![
        f32_input("y", 2 * K as i64 - 2),
        f32_input("z", K as i64 - 3),
    ];
    let path = root.join("concat.onnx");
    write_model(&path, &m);
    let before = snapshot(root);
    let out = root.join("out.onnx");
    let o = run(&[&path, p("-o"), &out, p("-q")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The input is unchanged and the output is the only file added.
    let mut after = snapshot(root);
    assert!(after.remove(Path::new("out.onnx")).is_some());
    assert_eq!(after, before);
    // ONNX Slice: c = [2K], c[1:-1] has 2K - 2 elements; start = Gather(Concat(0..K), 3) = 3,
    // v[3:K] has K - 3.
    let o = run(&[p("check"), &out, p("--format"), p("json")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let inferred = |name: &str| {
        json["rows"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["node"] == name))
            .map(|r| r["inferred"].as_str().unwrap_or_default().to_string())
    };
    assert_eq!(inferred("slice_inputs").as_deref(), Some("[199998]"));
    assert_eq!(inferred("slice_consts").as_deref(), Some("[99997]"));
    let folded =
        proto::ModelProto::decode(std::fs::read(&out).expect("out").as_slice()).expect("decode");
    let ops: Vec<&str> = folded
        .graph
        .as_ref()
        .unwrap()
        .node
        .iter()
        .map(|n| n.op_type())
        .collect();
    assert_eq!(
        ops,
        ["Concat", "Slice", "Slice"],
        "the constant chain folds"
    );
}

// Issue 46. 1. `--report` joins the one output plan.

/// `root/m` holds an ONNX model with external data (`m.onnx` + `w.bin`) and an IR model
/// (`ir.xml` + `ir.bin`); `root/o` is an empty output folder.
fn report_fixture(root: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(root.join("m")).unwrap();
    std::fs::create_dir_all(root.join("o")).unwrap();
    std::fs::write(root.join("m/w.bin"), [0u8; 16]).unwrap();
    let onnx = model_with_location(&root.join("m"), "w.bin");
    for ext in ["xml", "bin"] {
        std::fs::copy(
            repo().join(format!("models/last_token.tf.{ext}")),
            root.join(format!("m/ir.{ext}")),
        )
        .unwrap();
    }
    (onnx, root.join("m/ir.xml"))
}

#[test]
fn report_naming_a_file_the_run_reads_or_writes_is_refused() {
    let t = tmp();
    let root = t.path();
    let (onnx, ir) = report_fixture(root);
    let out_onnx = root.join("o/out.onnx");
    let out_ir = root.join("o/out.xml");
    let cases: Vec<(&Path, &Path, PathBuf, &str)> = vec![
        // The ONNX input's external data, and the copy of it the save writes beside the output.
        (
            &onnx,
            &out_onnx,
            root.join("m/w.bin"),
            "an input of this run",
        ),
        (
            &onnx,
            &out_onnx,
            root.join("o/out.onnx.data"),
            "the same file twice",
        ),
        (
            &onnx,
            &out_onnx,
            root.join("o/./out.onnx.data"),
            "the same file twice",
        ),
        // The IR input's `.bin`, and the output's `.bin`.
        (&ir, &out_ir, root.join("m/ir.bin"), "an input of this run"),
        (&ir, &out_ir, root.join("o/out.bin"), "the same file twice"),
        // The models themselves.
        (&onnx, &out_onnx, onnx.clone(), "an input of this run"),
        (&ir, &out_ir, ir.clone(), "an input of this run"),
        (&onnx, &out_onnx, out_onnx.clone(), "the same file twice"),
        // A folder that does not exist: refused before the model is written.
        (&onnx, &out_onnx, root.join("nodir/r.json"), "nodir"),
        (&ir, &out_ir, root.join("nodir/r.json"), "nodir"),
        // A directory.
        (&onnx, &out_onnx, root.join("o"), "is a directory"),
    ];
    for (input, output, report, needle) in &cases {
        let before = snapshot(root);
        let out = run(&[input, p("-o"), output, p("--report"), report]);
        assert_refused(&out, needle);
        assert_unchanged(root, &before);
    }
    // The same after a first run wrote the outputs: they are not overwritten by the report.
    for (input, output) in [(&onnx, &out_onnx), (&ir, &out_ir)] {
        let o = run(&[input, p("-o"), output]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert!(root.join("o/out.onnx.data").exists() && root.join("o/out.bin").exists());
    for (input, output, report, needle) in &cases {
        let before = snapshot(root);
        let out = run(&[input, p("-o"), output, p("--report"), report]);
        assert_refused(&out, needle);
        assert_unchanged(root, &before);
    }
    // The control: a report beside the outputs is written, and replaces an old report.
    std::fs::write(root.join("o/r.json"), b"an old report").unwrap();
    for (input, output) in [(&onnx, &out_onnx), (&ir, &out_ir)] {
        let o = run(&[
            input,
            p("-o"),
            output,
            p("--report"),
            &root.join("o/r.json"),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(root.join("o/r.json")).unwrap()).expect("json");
        assert!(r["passes"].is_array(), "{r}");
    }
    let names: Vec<String> = std::fs::read_dir(root.join("o"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "temporary files left: {names:?}");
}

#[cfg(unix)]
#[test]
fn report_that_is_a_device_or_a_fifo_is_refused() {
    let t = tmp();
    let root = t.path();
    let (onnx, _) = report_fixture(root);
    mkfifo(&root.join("fifo.json"));
    std::os::unix::fs::symlink("/dev/null", root.join("null.json")).unwrap();
    let before = snapshot(root);
    let out_onnx = root.join("o/out.onnx");
    for (report, needle) in [("fifo.json", "is a FIFO"), ("null.json", "is a device")] {
        let out = run(&[&onnx, p("-o"), &out_onnx, p("--report"), &root.join(report)]);
        assert_refused(&out, needle);
        assert_unchanged(root, &before);
    }
}

#[test]
fn report_in_directory_mode_is_refused_before_anything_is_written() {
    let t = tmp();
    let root = t.path();
    report_fixture(root);
    std::fs::remove_file(root.join("m/w.bin")).unwrap();
    std::fs::remove_file(root.join("m/m.onnx")).unwrap();
    let before = snapshot(root);
    let out = run(&[
        &root.join("m"),
        p("-o"),
        &root.join("o2"),
        p("--report"),
        &root.join("r.json"),
    ]);
    assert_refused(&out, "directory mode");
    assert_unchanged(root, &before);
}

// Issue 46. 2. Terminals: what comes from a model or a path is printed escaped; a closed stdout
// or stderr ends the run quietly with its usual exit code.

/// `y = x[1:3]` over f32[4] through `k` Slice nodes named `name0`, `name1`, ... (each reads
/// `x`; the last writes `y`), `y` declared as `[declared]`.
fn named_slices(name: &str, k: usize, declared: i64) -> proto::ModelProto {
    let mut m = add_model(4, vec![]);
    let g = m.graph.as_mut().unwrap();
    g.initializer = vec![
        common::i64_tensor("starts", &[1]),
        common::i64_tensor("ends", &[3]),
    ];
    g.node = (0..k)
        .map(|i| {
            let out = if i + 1 == k {
                "y".to_string()
            } else {
                format!("t{i}")
            };
            common::node(
                "Slice",
                &format!("{name}{i}"),
                &["x", "starts", "ends"],
                &[&out],
            )
        })
        .collect();
    g.output = vec![f32_input("y", declared)];
    for i in 0..k.saturating_sub(1) {
        g.output.push(f32_input(&format!("t{i}"), 2));
    }
    m
}

/// No byte of `s` is a control character other than a newline, and no line starts with
/// `fake` (a line the model would have forged).
fn assert_clean(s: &[u8], fake: &str) {
    let text = String::from_utf8_lossy(s);
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "raw control characters printed: {text:?}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with(fake)),
        "a forged line: {text:?}"
    );
}

#[test]
fn model_text_and_paths_are_printed_escaped() {
    let t = tmp();
    let root = t.path();
    // A node name that would end the line, colour the terminal and forge a line of ours.
    let evil = "s\n\x1b[31mslice-opt: error: FAKE\u{202e}\u{9b}";
    let m = root.join("m.onnx");
    write_model(&m, &named_slices(evil, 1, 4));
    let o = run(&[p("info"), &m]);
    assert_eq!(o.status.code(), Some(0));
    assert_clean(&o.stdout, "slice-opt: error: FAKE");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("s\\n\\x1b[31mslice-opt: error: FAKE\\u{202e}\\x9b0"),
        "{out}"
    );
    // check: the table and the JSON (the same value, escaped).
    let o = run(&[p("check"), &m]);
    assert_eq!(o.status.code(), Some(1), "y is declared [4], inferred [2]");
    assert_clean(&o.stdout, "slice-opt: error: FAKE");
    let o = run(&[p("check"), &m, p("--format"), p("json")]);
    assert_clean(&o.stdout, "slice-opt: error: FAKE");
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(json["rows"][0]["node"], format!("{evil}0"));
    // The transform's summary with -v.
    let o = run(&[&m, p("-o"), &root.join("o.onnx"), p("-v")]);
    assert_eq!(o.status.code(), Some(0));
    assert_clean(&o.stderr, "slice-opt: error: FAKE");
    // A path: the error stays one line.
    let bad = root.join("bad\n\x1b[2Jslice-opt: error: FAKE.onnx");
    std::fs::write(&bad, b"not a model").unwrap();
    let o = run(&[p("info"), &bad]);
    assert_refused(&o, "bad\\n\\x1b[2Jslice-opt: error: FAKE.onnx");
    assert_clean(&o.stderr, "slice-opt: error: FAKE");
}

/// Runs slice-opt with the read end of stdout (and of stderr when `stderr` is set) closed
/// before it prints anything; returns its status and what it wrote to the other stream.
#[cfg(unix)]
fn run_closed(args: &[&Path], stderr: bool) -> (std::process::ExitStatus, Vec<u8>) {
    use std::io::Read;
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run slice-opt");
    drop(child.stdout.take());
    let mut other = Vec::new();
    if stderr {
        drop(child.stderr.take());
    } else if let Some(mut e) = child.stderr.take() {
        e.read_to_end(&mut other).unwrap();
    }
    (child.wait().unwrap(), other)
}

#[cfg(unix)]
#[test]
fn a_closed_stdout_or_stderr_ends_the_run_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let t = tmp();
    let root = t.path();
    let m = root.join("m.onnx");
    // 3,000 slices: more output than a pipe holds.
    write_model(&m, &named_slices("slice", 3000, 4));
    let cases: Vec<(Vec<&Path>, bool, i32)> = vec![
        (vec![p("info"), &m], false, 0),
        (vec![p("info"), &m, p("--format"), p("json")], false, 0),
        // y declared [4], inferred [2]: check fails, also with nobody reading.
        (vec![p("check"), &m], false, 1),
        (vec![p("check"), &m, p("--format"), p("json")], false, 1),
    ];
    for (args, both, code) in &cases {
        let (st, err) = run_closed(args, *both);
        let err = String::from_utf8_lossy(&err);
        assert_eq!(st.signal(), None, "{args:?}: killed by a signal");
        assert_eq!(st.code(), Some(*code), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: quiet: {err}");
    }
    // `-v 2>&1 | head`: both streams closed; the model is still written.
    let out = root.join("o.onnx");
    let (st, _) = run_closed(&[&m, p("-o"), &out, p("-v")], true);
    assert_eq!(st.signal(), None, "killed by a signal");
    assert_eq!(st.code(), Some(0));
    assert!(out.exists(), "the output is written");
    // An error with stderr closed: the exit code says it.
    let (st, _) = run_closed(&[p("info"), &root.join("missing.onnx")], true);
    assert_eq!((st.signal(), st.code()), (None, Some(2)));
}

// Issue 46. 3. External data locations resolved as onnx resolves them.

/// A tensor with two `location` entries reads the last (onnx 1.23's `ExternalDataInfo` sets one
/// attribute per entry, in order), and that file is copied beside an output in another folder:
/// the output loads. The first file, not read, is copied too when it exists (onnx 1.23's
/// checker wants every entry to name a regular file), and left out when it does not.
#[test]
fn the_last_of_two_locations_is_read_and_copied() {
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("m")).unwrap();
    std::fs::create_dir_all(root.join("o")).unwrap();
    // a.bin is too short for the tensor: reading it would fail.
    std::fs::write(root.join("m/a.bin"), [9u8; 4]).unwrap();
    let data: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(root.join("m/b.bin"), &data).unwrap();
    let mut w = external("w", 4, "a.bin", 0);
    w.external_data.push(proto::StringStringEntryProto {
        key: Some("location".into()),
        value: Some("b.bin".into()),
    });
    let m = root.join("m/m.onnx");
    write_model(&m, &add_model(4, vec![w]));
    let before = snapshot(&root.join("m"));
    for passes in ["none", "infer,fold,cleanup"] {
        let out = root.join("o/out.onnx");
        let o = run(&[&m, p("-o"), &out, p("--passes"), p(passes)]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(std::fs::read(root.join("o/b.bin")).unwrap(), data);
        assert_eq!(std::fs::read(root.join("o/a.bin")).unwrap(), [9u8; 4]);
        let o = run(&[p("info"), &out]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "the output loads: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_unchanged(&root.join("m"), &before);
    // The first entry naming no file: the model loads and saves; only b.bin is copied.
    std::fs::remove_file(root.join("m/a.bin")).unwrap();
    std::fs::remove_dir_all(root.join("o")).unwrap();
    std::fs::create_dir_all(root.join("o")).unwrap();
    let out = root.join("o/out.onnx");
    let o = run(&[&m, p("-o"), &out]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(root.join("o/b.bin")).unwrap(), data);
    assert!(!root.join("o/a.bin").exists());
}

/// `w.bin` and `./w.bin` name one file: accepted, copied once.
#[test]
fn one_data_file_named_two_ways_is_one_file() {
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("m")).unwrap();
    std::fs::create_dir_all(root.join("o")).unwrap();
    std::fs::write(root.join("m/w.bin"), [0u8; 32]).unwrap();
    let m = root.join("m/m.onnx");
    write_model(
        &m,
        &add_model(
            4,
            vec![
                external("w1", 4, "w.bin", 0),
                external("w2", 4, "./w.bin", 16),
                external("w3", 4, "sub/../w.bin", 0),
            ],
        ),
    );
    // `..` stays refused (the onnx package refuses it too).
    let o = run(&[p("info"), &m]);
    assert_refused(&o, "must be a relative path inside the model's directory");
    write_model(
        &m,
        &add_model(
            4,
            vec![
                external("w1", 4, "w.bin", 0),
                external("w2", 4, "./w.bin", 16),
                external("w3", 4, ".//w.bin", 0),
            ],
        ),
    );
    let before = snapshot(&root.join("m"));
    let out = root.join("o/out.onnx");
    let o = run(&[&m, p("-o"), &out]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(root.join("o/w.bin")).unwrap(), [0u8; 32]);
    let names: Vec<_> = std::fs::read_dir(root.join("o"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "out.onnx and w.bin: {names:?}");
    let o = run(&[p("info"), &out]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_unchanged(&root.join("m"), &before);
}

// Issue 46. 4. IR layers with many ports: an edge is resolved without a scan of the ports (a
// Concat of 100,000 inputs loaded in 13.6 s). Timing is measured by `bench/ir_ports.py`; this
// checks the answers, for port ids that run 0, 1, ... and for ids that do not.

/// IR: `x: f32[1]` into every input port of one Concat of `k` inputs (axis 0) whose port ids
/// are `id(0..k)`, its output (id `out`) into a Result.
fn wide_concat_ir(k: usize, id: impl Fn(usize) -> i64, out: i64) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\"?>\n<net name=\"concat\" version=\"11\">\n<layers>\n\
         <layer id=\"0\" name=\"x\" type=\"Parameter\" version=\"opset1\">\
         <data shape=\"1\" element_type=\"f32\"/><output><port id=\"0\" precision=\"FP32\" \
         names=\"x\"><dim>1</dim></port></output></layer>\n\
         <layer id=\"1\" name=\"concat\" type=\"Concat\" version=\"opset1\"><data axis=\"0\"/>\
         <input>\n",
    );
    for i in 0..k {
        s.push_str(&format!(
            "<port id=\"{}\" precision=\"FP32\"><dim>1</dim></port>\n",
            id(i)
        ));
    }
    s.push_str(&format!(
        "</input><output><port id=\"{out}\" precision=\"FP32\" names=\"y\"><dim>{k}</dim></port>\
         </output></layer>\n<layer id=\"2\" name=\"y\" type=\"Result\" version=\"opset1\"><input>\
         <port id=\"0\" precision=\"FP32\"><dim>{k}</dim></port></input></layer>\n</layers>\n\
         <edges>\n"
    ));
    for i in 0..k {
        s.push_str(&format!(
            "<edge from-layer=\"0\" from-port=\"0\" to-layer=\"1\" to-port=\"{}\"/>\n",
            id(i)
        ));
    }
    s.push_str(&format!(
        "<edge from-layer=\"1\" from-port=\"{out}\" to-layer=\"2\" to-port=\"0\"/>\n</edges>\n</net>\n"
    ));
    s
}

#[test]
fn an_ir_layer_of_20000_ports_loads_and_round_trips() {
    const K: usize = 20_000;
    let t = tmp();
    let root = t.path();
    type PortId = Box<dyn Fn(usize) -> i64>;
    let cases: [(&str, PortId, i64); 2] = [
        ("run", Box::new(|i| i as i64), K as i64),
        // Ids in reverse order with gaps: the index is sorted, not a subtraction.
        ("sorted", Box::new(|i| 3 * (K - i) as i64), 1),
    ];
    for (name, id, out) in cases {
        let xml = root.join(format!("{name}.xml"));
        std::fs::write(&xml, wide_concat_ir(K, &id, out)).unwrap();
        std::fs::write(root.join(format!("{name}.bin")), b"").unwrap();
        let o = run(&[p("info"), &xml]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("Concat 1"),
            "{}",
            String::from_utf8_lossy(&o.stdout)
        );
        // Untouched: written back byte for byte.
        let same = root.join(format!("{name}.same.xml"));
        let o = run(&[&xml, p("-o"), &same, p("--passes"), p("none"), p("-q")]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(std::fs::read(&same).unwrap(), std::fs::read(&xml).unwrap());
        let o = run(&[
            &xml,
            p("-o"),
            &root.join(format!("{name}.opt.xml")),
            p("-q"),
        ]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        // An edge to a port id the layer does not have is refused, naming the layer.
        let bad = std::fs::read_to_string(&xml).unwrap().replacen(
            &format!("to-layer=\"1\" to-port=\"{}\"", id(K / 2)),
            "to-layer=\"1\" to-port=\"-5\"",
            1,
        );
        let badp = root.join(format!("{name}.bad.xml"));
        std::fs::write(&badp, bad).unwrap();
        std::fs::write(root.join(format!("{name}.bad.bin")), b"").unwrap();
        let o = run(&[p("info"), &badp]);
        assert_refused(&o, "layer 1 has no input port -5");
    }
}

// Issue 46. 5. Mapped inputs that shrink under the run; a file size limit.

/// Starts slice-opt on `args`, waits for a temporary file in `out_dir` (the save or the early
/// `.bin` copy has begun), waits `delay` more, truncates `victim` to `keep` bytes, and returns
/// the output.
#[cfg(unix)]
fn truncate_while_running(
    args: &[&Path],
    out_dir: &Path,
    victim: &Path,
    keep: u64,
    delay: Duration,
) -> Output {
    let child = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    let mut seen = false;
    while start.elapsed() < Duration::from_secs(120) {
        let tmp_exists = std::fs::read_dir(out_dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().ends_with(".tmp"));
        if tmp_exists {
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(seen, "no temporary file was seen");
    std::thread::sleep(delay);
    std::fs::OpenOptions::new()
        .write(true)
        .open(victim)
        .unwrap()
        .set_len(keep)
        .unwrap();
    child.wait_with_output().unwrap()
}

#[cfg(unix)]
fn assert_shrunk(o: &Output, name: &str, out_dir: &Path) {
    use std::os::unix::process::ExitStatusExt;
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.signal(), None, "killed by a signal: {err}");
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(name), "names {name}: {err}");
    let left: Vec<_> = std::fs::read_dir(out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "files left: {left:?}");
}

#[cfg(unix)]
#[test]
fn an_onnx_model_truncated_while_mapped_is_a_clean_error() {
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("out")).unwrap();
    let m = root.join("big.onnx");
    write_large_model(&m, 512 << 20);
    let o = truncate_while_running(
        &[
            &m,
            p("-o"),
            &root.join("out/big.onnx"),
            p("--passes"),
            p("none"),
        ],
        &root.join("out"),
        &m,
        100,
        Duration::ZERO,
    );
    assert_shrunk(&o, "big.onnx: the file shrank", &root.join("out"));
}

#[cfg(unix)]
#[test]
fn an_ir_bin_truncated_while_mapped_is_a_clean_error() {
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("out")).unwrap();
    // y = x + w over f32[N], w a 256 MB constant of the .bin (a hole: nothing on disk).
    const N: u64 = 64 << 20;
    let port = |id: u32| format!("<port id=\"{id}\" precision=\"FP32\"><dim>{N}</dim></port>");
    let xml = format!(
        "<?xml version=\"1.0\"?>\n<net name=\"big\" version=\"11\">\n<layers>\n\
         <layer id=\"0\" name=\"x\" type=\"Parameter\" version=\"opset1\"><data shape=\"{N}\" \
         element_type=\"f32\"/><output>{}</output></layer>\n\
         <layer id=\"1\" name=\"w\" type=\"Const\" version=\"opset1\"><data element_type=\"f32\" \
         shape=\"{N}\" offset=\"0\" size=\"{}\"/><output>{}</output></layer>\n\
         <layer id=\"2\" name=\"add\" type=\"Add\" version=\"opset1\"><input>{}{}</input>\
         <output>{}</output></layer>\n\
         <layer id=\"3\" name=\"y\" type=\"Result\" version=\"opset1\"><input>{}</input></layer>\n\
         </layers>\n<edges>\n\
         <edge from-layer=\"0\" from-port=\"0\" to-layer=\"2\" to-port=\"0\"/>\n\
         <edge from-layer=\"1\" from-port=\"0\" to-layer=\"2\" to-port=\"1\"/>\n\
         <edge from-layer=\"2\" from-port=\"2\" to-layer=\"3\" to-port=\"0\"/>\n\
         </edges>\n</net>\n",
        port(0),
        4 * N,
        port(0),
        port(0),
        port(1),
        port(2),
        port(0)
    );
    let m = root.join("m.xml");
    std::fs::write(&m, xml).unwrap();
    std::fs::File::create(root.join("m.bin"))
        .unwrap()
        .set_len(4 * N)
        .unwrap();
    let ok = run(&[p("info"), &m]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let o = truncate_while_running(
        &[
            &m,
            p("-o"),
            &root.join("out/m.xml"),
            p("--passes"),
            p("none"),
        ],
        &root.join("out"),
        &root.join("m.bin"),
        4096,
        // The early copy of the `.bin` starts before the model is loaded: truncated once
        // the load has mapped it.
        Duration::from_millis(30),
    );
    assert_shrunk(&o, "m.bin: the file shrank", &root.join("out"));
}

#[cfg(unix)]
#[test]
fn a_file_size_limit_is_handled_like_a_full_disk() {
    use std::os::unix::process::ExitStatusExt;
    let t = tmp();
    let root = t.path();
    std::fs::create_dir_all(root.join("out")).unwrap();
    // An 8 MiB initializer inside the model; the limit is 1 MiB, and SIGXFSZ is not ignored.
    let m = root.join("m.onnx");
    let mut model = add_model(2, vec![]);
    let g = model.graph.as_mut().unwrap();
    g.initializer = vec![common::i64_tensor("w", &vec![3; 1 << 20])];
    g.node = vec![common::node("Identity", "id", &["w"], &["y"])];
    write_model(&m, &model);
    let before = snapshot(root);
    let out = Command::new("sh")
        .args(["-c", "ulimit -f 2048; exec \"$0\" \"$@\"", bin()])
        .arg(&m)
        .arg("-o")
        .arg(root.join("out/m.onnx"))
        .args(["--passes", "none"])
        .output()
        .expect("sh");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.signal(), None, "killed by a signal: {err}");
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("out/m.onnx"), "names the file: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert_unchanged(root, &before);
}

// Issue 46. 6. IR `If`s nested deeper than the passes enter: a warning naming the depth.

/// IR: `x: f32[2]` through `levels` nested `If`s (each then-branch holds the next; the
/// innermost then-branch and every else-branch pass their input through).
fn nested_if_ir(levels: usize) -> String {
    fn port(id: u32) -> String {
        format!("<port id=\"{id}\" precision=\"FP32\"><dim>2</dim></port>")
    }
    fn cond(id: u32) -> String {
        format!(
            "<layer id=\"{id}\" name=\"c\" type=\"Const\" version=\"opset1\"><data \
             element_type=\"boolean\" shape=\"\" offset=\"0\" size=\"1\"/><output><port id=\"0\" \
             precision=\"BOOL\"/></output></layer>"
        )
    }
    fn passthrough() -> String {
        format!(
            "<layers><layer id=\"0\" name=\"p\" type=\"Parameter\" version=\"opset1\"><data \
             shape=\"2\" element_type=\"f32\"/><output>{}</output></layer><layer id=\"1\" \
             name=\"r\" type=\"Result\" version=\"opset1\"><input>{}</input></layer></layers>\
             <edges><edge from-layer=\"0\" from-port=\"0\" to-layer=\"1\" to-port=\"0\"/></edges>",
            port(0),
            port(0)
        )
    }
    /// A graph: Parameter 0 -> If 2 (condition Const 1) -> Result 3, the If's then-body
    /// holding `inner` levels more.
    fn graph(level: usize, inner: usize, top: bool) -> String {
        let then_body = if inner == 0 {
            passthrough()
        } else {
            graph(level + 1, inner - 1, false)
        };
        let map = "<input external_port_id=\"1\" internal_layer_id=\"0\"/>\
                   <output external_port_id=\"2\" internal_layer_id=\"1\"/>";
        let inner_map = if inner == 0 {
            map.to_string()
        } else {
            "<input external_port_id=\"1\" internal_layer_id=\"0\"/>\
             <output external_port_id=\"2\" internal_layer_id=\"3\"/>"
                .to_string()
        };
        let (open, close) = if top {
            ("<net name=\"nested\" version=\"11\">", "</net>")
        } else {
            ("", "")
        };
        format!(
            "{open}<layers><layer id=\"0\" name=\"x{level}\" type=\"Parameter\" version=\"opset1\">\
             <data shape=\"2\" element_type=\"f32\"/><output>{}</output></layer>{}\
             <layer id=\"2\" name=\"if{level}\" type=\"If\" version=\"opset8\">\
             <then_port_map>{inner_map}</then_port_map><else_port_map>{map}</else_port_map>\
             <input><port id=\"0\" precision=\"BOOL\"/>{}</input><output>{}</output>\
             <then_body>{then_body}</then_body><else_body>{}</else_body></layer>\
             <layer id=\"3\" name=\"y{level}\" type=\"Result\" version=\"opset1\"><input>{}</input>\
             </layer></layers><edges>\
             <edge from-layer=\"0\" from-port=\"0\" to-layer=\"2\" to-port=\"1\"/>\
             <edge from-layer=\"1\" from-port=\"0\" to-layer=\"2\" to-port=\"0\"/>\
             <edge from-layer=\"2\" from-port=\"2\" to-layer=\"3\" to-port=\"0\"/></edges>{close}",
            port(0),
            cond(1),
            port(1),
            port(2),
            passthrough(),
            port(0)
        )
    }
    format!("<?xml version=\"1.0\"?>\n{}\n", graph(1, levels - 1, true))
}

#[test]
fn ir_ifs_nested_deeper_than_the_passes_enter_are_reported() {
    let t = tmp();
    let root = t.path();
    for (levels, warned) in [(64, false), (70, true)] {
        let m = root.join(format!("n{levels}.xml"));
        std::fs::write(&m, nested_if_ir(levels)).unwrap();
        std::fs::write(root.join(format!("n{levels}.bin")), [1u8]).unwrap();
        let out = root.join(format!("o{levels}.xml"));
        let o = run(&[&m, p("-o"), &out]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{levels}: {err}");
        // The If at depth 64 (named if65: the top level's is if1) holds bodies at depth 65.
        let warning = "its bodies are nested 65 levels deep and were left as they are";
        assert_eq!(err.contains(warning), warned, "{levels}: {err}");
        if warned {
            let line = err.lines().find(|l| l.contains(warning)).unwrap();
            assert!(line.contains("/if65 (If)"), "{line}");
            assert!(
                line.trim_start().starts_with("warning if1/then_body/if2/"),
                "{line}"
            );
        }
    }
}

// Issue 46. 7. `--verify` within resources: models beyond what tract handles quickly, or over
// the memory or time budget, are reported NOT verified with the reason (exit 0: nothing
// failed), not run for minutes or gigabytes.

/// A graph value of type f32 and shape `dims`.
#[cfg(feature = "verify")]
fn f32_value(name: &str, dims: &[i64]) -> proto::ValueInfoProto {
    let mut v = f32_input(name, 1);
    if let Some(proto::type_proto::Value::TensorType(t)) =
        v.r#type.as_mut().and_then(|t| t.value.as_mut())
    {
        t.shape = Some(proto::TensorShapeProto {
            dim: dims
                .iter()
                .map(|&d| proto::tensor_shape_proto::Dimension {
                    value: Some(proto::tensor_shape_proto::dimension::Value::DimValue(d)),
                    ..Default::default()
                })
                .collect(),
        });
    }
    v
}

#[cfg(feature = "verify")]
fn assert_not_verified(root: &Path, m: &Path, extra: &[&str], reason: &str) {
    let out = root.join("o.onnx");
    let mut args: Vec<&Path> = vec![m, p("-o"), &out, p("--verify")];
    args.extend(extra.iter().map(|a| p(a)));
    let start = Instant::now();
    let o = run(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("verify "))
        .unwrap_or_else(|| panic!("a verify line: {err}"));
    assert!(line.contains("NOT verified"), "{line}");
    assert!(line.contains(reason), "says '{reason}': {line}");
    eprintln!(
        "{}: {:.1} s: {line}",
        m.display(),
        start.elapsed().as_secs_f64()
    );
}

#[cfg(feature = "verify")]
#[test]
fn verify_reports_a_split_into_6000_outputs_as_not_verified() {
    const K: usize = 6000;
    let t = tmp();
    let root = t.path();
    let mut m = add_model(K as i64, vec![]);
    let g = m.graph.as_mut().unwrap();
    let outs: Vec<String> = (0..K).map(|i| format!("y{i}")).collect();
    let refs: Vec<&str> = outs.iter().map(String::as_str).collect();
    let mut split = common::node("Split", "split", &["x", "split"], &refs);
    split.attribute.push(common::int_attr("axis", 0));
    g.node = vec![split];
    g.initializer = vec![common::i64_tensor("split", &vec![1; K])];
    g.output = outs.iter().map(|o| f32_input(o, 1)).collect();
    let path = root.join("split.onnx");
    write_model(&path, &m);
    assert_not_verified(root, &path, &[], "has 6000 outputs");
}

#[cfg(feature = "verify")]
#[test]
fn verify_reports_a_rank_10000_input_as_not_verified() {
    let t = tmp();
    let root = t.path();
    let mut m = add_model(1, vec![]);
    let g = m.graph.as_mut().unwrap();
    g.input = vec![f32_value("x", &[1; 10_000])];
    g.output = vec![f32_value("y", &[1; 10_000])];
    g.node = vec![common::node("Identity", "id", &["x"], &["y"])];
    let path = root.join("rank.onnx");
    write_model(&path, &m);
    assert_not_verified(root, &path, &[], "'x' has rank 10000");
}

#[cfg(feature = "verify")]
#[test]
fn verify_reports_six_constant_960_mb_ranges_as_not_verified() {
    const N: i64 = 240_000_000;
    let t = tmp();
    let root = t.path();
    let scalar = |name: &str, v: f32| proto::TensorProto {
        name: Some(name.into()),
        data_type: Some(1),
        raw_data: Some(v.to_le_bytes().to_vec().into()),
        ..Default::default()
    };
    let mut m = add_model(1, vec![]);
    let g = m.graph.as_mut().unwrap();
    g.initializer = vec![scalar("s", 0.0), scalar("l", N as f32), scalar("d", 1.0)];
    g.node = (0..6)
        .map(|i| {
            common::node(
                "Range",
                &format!("range{i}"),
                &["s", "l", "d"],
                &[&format!("r{i}")],
            )
        })
        .collect();
    g.node.push(common::node("Identity", "id", &["x"], &["y"]));
    g.output = vec![f32_input("y", 1)];
    g.output
        .extend((0..6).map(|i| f32_input(&format!("r{i}"), N)));
    let path = root.join("ranges.onnx");
    write_model(&path, &m);
    // The default budget (a sixteenth of the machine's memory, at least 1 GiB) is under the
    // 5.76 GB of the six Ranges on machines of less than 92 GB; a budget given says the same.
    assert_not_verified(
        root,
        &path,
        &["--verify-memory", "4G"],
        "over the memory budget",
    );
}

#[cfg(feature = "verify")]
#[test]
fn verify_memory_and_time_budgets_are_flags() {
    let t = tmp();
    let root = t.path();
    let m = root.join("m.onnx");
    std::fs::copy(repo().join("models/last_token.onnx"), &m).unwrap();
    assert_not_verified(
        root,
        &m,
        &["--verify-memory", "1K"],
        "over the memory budget",
    );
    assert_not_verified(
        root,
        &m,
        &["--verify-time", "0.001"],
        "over the time budget",
    );
    // Without --verify the flags are refused (clap: exit 2).
    let o = run(&[
        &m,
        p("-o"),
        &root.join("o.onnx"),
        p("--verify-time"),
        p("5"),
    ]);
    assert_eq!(o.status.code(), Some(2));
}
