use super::*;
use proptest::prelude::*;

fn declared_dim() -> impl Strategy<Value = DeclaredDim> {
    prop_oneof![
        prop_oneof![
            Just(0u64),
            Just(127),
            Just(128),
            Just(1 << 40),
            Just(u64::MAX),
            any::<u64>()
        ]
        .prop_map(DeclaredDim::Known),
        "[a-z_ +*/()0-9\\-]{0,40}|é{60,70}".prop_map(DeclaredDim::Param),
        (any::<u64>(), proptest::option::of(any::<u64>()))
            .prop_map(|(lo, hi)| DeclaredDim::Interval(lo, hi)),
        Just(DeclaredDim::Unknown),
    ]
}

proptest! {
    /// A new `value_info` record written straight to bytes is prost's encoding of the
    /// message `value_info_proto` builds, for any name, element type and shape (varints of
    /// one to ten bytes, symbolic dims past 127 bytes, dims with neither field).
    #[test]
    fn new_value_info_is_prosts_encoding(
        name in "[a-z0-9_/.:]{0,20}|x{120,140}|ü{0,3}",
        dtype in proptest::option::of(prop_oneof![
            Just(DType::F32), Just(DType::I64), Just(DType::U8), Just(DType::Bool),
            Just(DType::BF16), Just(DType::String),
        ]),
        shape in proptest::option::of(proptest::collection::vec(declared_dim(), 0..70)),
    ) {
        let ty = ValueType { dtype, shape };
        let want = value_info_proto(&name, &ty, None).encode_to_vec();
        let got = new_value_info(&name, &ty);
        prop_assert_eq!(got.as_ref(), &want[..]);
    }
}

fn attr(name: &str, kind: AttributeType) -> proto::AttributeProto {
    let mut a = proto::AttributeProto {
        name: Some(name.into()),
        ..Default::default()
    };
    a.set_type(kind);
    match kind {
        AttributeType::Int => a.i = Some(-7),
        AttributeType::Ints => a.ints = vec![1, -2, 3],
        AttributeType::Float => a.f = Some(0.5),
        AttributeType::Floats => a.floats = vec![1.5, -2.0],
        AttributeType::String => a.s = Some(b"abc".to_vec().into()),
        _ => a.strings = vec![b"x".to_vec().into(), b"".to_vec().into()],
    }
    a
}

/// An ordinary node: names (one non-ASCII), an omitted optional input, two outputs, every
/// plain attribute kind, a doc string and an overload.
fn ordinary() -> NodeProto {
    NodeProto {
        input: vec!["x".into(), "".into(), "ß_ends".into()],
        output: vec!["y".into(), "y2".into()],
        name: Some("slice_1".into()),
        op_type: Some("Slice".into()),
        domain: Some("".into()),
        overload: Some("o".into()),
        doc_string: Some("doc".into()),
        attribute: [
            AttributeType::Int,
            AttributeType::Ints,
            AttributeType::Float,
            AttributeType::Floats,
            AttributeType::String,
            AttributeType::Strings,
        ]
        .iter()
        .enumerate()
        .map(|(i, &k)| attr(&format!("a{i}"), k))
        .collect(),
        ..Default::default()
    }
}

/// `light_node` gives what prost decodes, field for field.
fn agrees(rec: &[u8], l: &LightNode) {
    let n = NodeProto::decode(rec).expect("a record light_node reads is one prost decodes");
    assert_eq!(l.name, n.name());
    assert_eq!(l.op_type, n.op_type());
    assert_eq!(l.domain, n.domain());
    assert_eq!(
        l.inputs.as_slice(),
        n.input.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(
        l.outputs.as_slice(),
        n.output.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(l.attributes, n.attribute);
}

#[test]
fn an_ordinary_node_record_reads_in_place_as_prost_decodes_it() {
    let rec = ordinary().encode_to_vec();
    let l = light_node(&rec).expect("an ordinary node reads in place");
    assert_eq!(l.inputs.len(), 3);
    assert_eq!(l.outputs.as_slice(), ["y", "y2"]);
    assert_eq!(l.attributes.len(), 6);
    agrees(&rec, &l);
    // Repeated optional fields: the last counts, as in prost.
    let mut twice = rec.clone();
    twice.extend(
        NodeProto {
            name: Some("second".into()),
            ..Default::default()
        }
        .encode_to_vec(),
    );
    let l = light_node(&twice).expect("reads");
    assert_eq!(l.name, "second");
    agrees(&twice, &l);
}

#[test]
fn nodes_that_need_the_full_decode_are_left_to_it() {
    let mut constant = ordinary();
    constant.op_type = Some("Constant".into());
    constant.attribute.clear();
    let mut tensor = ordinary();
    tensor.attribute[0].t = Some(Box::default());
    let mut graph = ordinary();
    graph.attribute[0].g = Some(Box::default());
    let mut meta = ordinary();
    meta.metadata_props = vec![proto::StringStringEntryProto::default()];
    for n in [constant, tensor, graph, meta] {
        assert!(light_node(&n.encode_to_vec()).is_none(), "{n:?}");
    }
    // What prost refuses is never read in place: a string that is not UTF-8 (input,
    // output, name, op_type, doc_string, domain, overload), a string field with a varint
    // wire type, a key above u32::MAX (one that would read as unknown field 99 if cut to
    // 32 bits).
    let mut refused = Vec::new();
    for field in [1u8, 2, 3, 4, 6, 7, 8] {
        let mut rec = ordinary().encode_to_vec();
        rec.extend([field << 3 | 2, 0x02, 0xc3, 0x28]);
        refused.push(rec);
    }
    let mut bad_wire = ordinary().encode_to_vec();
    bad_wire.extend([0x18, 0x01]);
    refused.push(bad_wire);
    let mut big_key = ordinary().encode_to_vec();
    prost::encoding::encode_varint((1u64 << 32) + (99 << 3), &mut big_key);
    big_key.push(0x01);
    refused.push(big_key);
    for rec in refused {
        assert!(NodeProto::decode(&rec[..]).is_err(), "{rec:?}");
        assert!(light_node(&rec).is_none(), "{rec:?}");
    }
}

/// A raw-data initializer: [2, 3] int32 named "w".
fn raw_tensor() -> proto::TensorProto {
    proto::TensorProto {
        dims: vec![2, 3],
        data_type: Some(6),
        name: Some("w".into()),
        doc_string: Some("doc".into()),
        raw_data: Some((0u8..24).collect::<Vec<u8>>().into()),
        ..Default::default()
    }
}

/// The tensor the full decode gives for `rec`, if any.
fn full_tensor(rec: &[u8]) -> Option<Tensor> {
    let t = proto::TensorProto::decode(rec).ok()?;
    let dir = std::env::temp_dir();
    tensor_from_proto(&t, &mut ExternalFiles::new(&dir)).ok()
}

#[test]
fn a_raw_initializer_reads_in_place_as_the_full_decode_gives_it() {
    let rec = Bytes::from(raw_tensor().encode_to_vec());
    let t = light_tensor(&rec).expect("raw data reads in place");
    assert_eq!((t.dtype, t.shape.clone()), (DType::I32, vec![2, 3]));
    assert_eq!(Some(t), full_tensor(&rec));
    // Dims one varint each instead of packed: the same tensor.
    let mut unpacked = raw_tensor();
    unpacked.dims.clear();
    let mut rec = unpacked.encode_to_vec();
    for d in [2u64, 3] {
        rec.push(0x08);
        prost::encoding::encode_varint(d, &mut rec);
    }
    let rec = Bytes::from(rec);
    let t = light_tensor(&rec).expect("unpacked dims read in place");
    assert_eq!(t.shape, [2, 3]);
    assert_eq!(Some(t), full_tensor(&rec));
}

#[test]
fn initializers_that_need_the_full_decode_are_left_to_it() {
    let mut typed = raw_tensor();
    typed.raw_data = None;
    typed.int32_data = (0..6).collect();
    let mut external = raw_tensor();
    external.data_location = Some(1);
    let mut segment = raw_tensor();
    segment.segment = Some(Default::default());
    let mut strings = raw_tensor();
    strings.data_type = Some(8);
    let mut negative = raw_tensor();
    negative.dims = vec![-2, -3];
    let mut short = raw_tensor();
    short.raw_data = Some(vec![0u8; 23].into());
    let mut unknown_type = raw_tensor();
    unknown_type.data_type = Some(1000);
    let mut meta = raw_tensor();
    meta.metadata_props = vec![Default::default()];
    for t in [
        typed,
        external,
        segment,
        strings,
        negative,
        short,
        unknown_type,
        meta,
    ] {
        assert!(
            light_tensor(&Bytes::from(t.encode_to_vec())).is_none(),
            "{t:?}"
        );
    }
    // What prost refuses: a name or doc string that is not UTF-8, a data type with a
    // length-delimited wire type, packed dims cut inside a varint.
    let mut refused = Vec::new();
    for field in [8u8, 12] {
        let mut rec = raw_tensor().encode_to_vec();
        rec.extend([field << 3 | 2, 0x02, 0xc3, 0x28]);
        refused.push(rec);
    }
    let mut bad_wire = raw_tensor().encode_to_vec();
    bad_wire.extend([0x12, 0x01, 0x06]);
    refused.push(bad_wire);
    let mut cut = raw_tensor().encode_to_vec();
    cut.extend([0x0a, 0x01, 0x80]);
    refused.push(cut);
    for rec in refused {
        assert!(proto::TensorProto::decode(&rec[..]).is_err(), "{rec:?}");
        assert!(light_tensor(&Bytes::from(rec.clone())).is_none(), "{rec:?}");
    }
}

/// `rec` with each edit applied in turn (0: replace the byte at the index, 1: insert a
/// byte there, 2: cut the record there), then `tail` appended.
fn edited(mut rec: Vec<u8>, edits: Vec<(prop::sample::Index, u8, u8)>, tail: Vec<u8>) -> Vec<u8> {
    for (at, byte, how) in edits {
        if rec.is_empty() {
            break;
        }
        let i = at.index(rec.len());
        match how {
            0 => rec[i] = byte,
            1 => rec.insert(i, byte),
            _ => rec.truncate(i),
        }
    }
    rec.extend(tail);
    rec
}

/// A needle is found wherever it lies: first bytes, across the boundary of two reads,
/// last bytes; and not found in a file that lacks it or is shorter than it.
/// A chain of `n` `Add` nodes over `n` scalar initializers: node `i` is `n{i}`, computes
/// `v{i} = v{i-1} + c{i}` (`x` for `i = 0`). Every 1000th initializer keeps its value in
/// `int64_data` and every 997th node is a `Constant` (records the full decode reads, in the
/// middle of windows).
fn chain(n: usize) -> ModelProto {
    let vi = |name: &str| ValueInfoProto {
        name: Some(name.into()),
        ..Default::default()
    };
    let initializer = (0..n)
        .map(|i| {
            let mut t = proto::TensorProto {
                data_type: Some(7),
                name: Some(format!("c{i}")),
                ..Default::default()
            };
            if i % 1000 == 0 {
                t.int64_data = vec![i as i64];
            } else {
                t.raw_data = Some((i as i64).to_le_bytes().to_vec().into());
            }
            t
        })
        .collect();
    let node = (0..n)
        .map(|i| {
            let prev = if i == 0 {
                "x".into()
            } else {
                format!("v{}", i - 1)
            };
            let mut node = NodeProto {
                input: vec![prev, format!("c{i}")],
                output: vec![format!("v{i}")],
                name: Some(format!("n{i}")),
                op_type: Some("Add".into()),
                ..Default::default()
            };
            if i % 997 == 0 {
                node.input.clear();
                node.op_type = Some("Constant".into());
                let mut a = attr("value_int", AttributeType::Int);
                a.i = Some(i as i64);
                node.attribute = vec![a];
            }
            node
        })
        .collect();
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        graph: Some(GraphProto {
            node,
            initializer,
            input: vec![vi("x")],
            output: vec![vi(&format!("v{}", n - 1))],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn decoded(m: &ModelProto) -> Result<OnnxModel> {
    OnnxModel::decode(
        Path::new("chain.onnx"),
        Bytes::from(m.encode_to_vec()),
        None,
    )
}

/// Records are read on a thread pool a window ahead of the graph being built: the graph
/// of a file of several windows is still the file's, node for node, in order, and of two
/// faults in different windows the first in the file is reported.
#[test]
fn a_file_of_many_windows_reads_in_file_order() {
    let n = 3 * WINDOW + 17;
    let model = decoded(&chain(n)).expect("chain loads");
    let graph = &model.graph;
    assert_eq!(graph.g.node_count(), 1 + n + n + 1);
    let (mut nodes, mut inits) = (vec![None; n], vec![None; n]);
    for ix in graph.g.node_indices() {
        match graph.node(ix).origin {
            Origin::OnnxNode(i) => nodes[i as usize] = Some(ix),
            Origin::OnnxInitializer(i) => inits[i as usize] = Some(ix),
            _ => {}
        }
    }
    for i in 0..n {
        let (Some(node), Some(init)) = (nodes[i], inits[i]) else {
            panic!("record {i} has no node");
        };
        let c = graph.node(init);
        assert_eq!(c.name, format!("c{i}"));
        let NodeKind::Const(t) = &c.kind else {
            panic!("c{i} is not a constant");
        };
        assert_eq!(t.to_i64_vec(), Some(vec![i as i64]), "c{i}");
        let v = graph.node(node);
        assert_eq!(
            (v.name.as_str(), v.outputs[0].name.as_str()),
            (&*format!("n{i}"), &*format!("v{i}"))
        );
        if i % 997 == 0 {
            assert_eq!(v.op_type, "Constant");
            assert_eq!(v.num_inputs, 0);
            continue;
        }
        assert_eq!(v.op_type, "Add");
        let prev = graph.input(node, 0).expect("input 0 wired");
        let want = if i == 0 {
            "x".to_string()
        } else {
            format!("n{}", i - 1)
        };
        assert_eq!(
            (graph.node(prev.node).name.as_str(), prev.port),
            (want.as_str(), 0),
            "n{i}"
        );
        let c = graph.input(node, 1).expect("input 1 wired");
        assert_eq!(c.node, init, "n{i} input 1");
    }
    let fault = |m: &ModelProto| match decoded(m) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("a faulty model loads"),
    };
    // Two nodes producing a name produced before: the first in the file is named.
    let mut m = chain(n);
    let g = m.graph.as_mut().expect("graph");
    g.node[2 * WINDOW + 5].output[0] = "v5".into();
    g.node[3 * WINDOW + 1].output[0] = "v6".into();
    let e = fault(&m);
    assert!(
        e.contains(&format!("n{}", 2 * WINDOW + 5)) && e.contains("'v5'"),
        "{e}"
    );
    // Two inputs no one produces.
    let mut m = chain(n);
    let g = m.graph.as_mut().expect("graph");
    g.node[WINDOW + 3].input[1] = "nowhere".into();
    g.node[2 * WINDOW + 9].input[1] = "elsewhere".into();
    let e = fault(&m);
    assert!(
        e.contains(&format!("n{}", WINDOW + 3)) && e.contains("'nowhere'"),
        "{e}"
    );
    // Two initializers reusing a name.
    let mut m = chain(n);
    let g = m.graph.as_mut().expect("graph");
    g.initializer[2 * WINDOW + 1].name = Some("c7".into());
    g.initializer[3 * WINDOW + 2].name = Some("c8".into());
    let e = fault(&m);
    assert!(e.contains("'c7' is defined twice"), "{e}");
}

/// The edges of a loaded graph as (source, target, target port) names, in edge-index order.
fn edges_in_order(graph: &Graph) -> Vec<(String, String, u32)> {
    use petgraph::visit::{EdgeRef, IntoEdgeReferences};
    let mut edges: Vec<_> = graph.g.edge_references().collect();
    edges.sort_by_key(|e| e.id());
    edges
        .iter()
        .map(|e| {
            (
                graph.node(e.source()).name.to_string(),
                graph.node(e.target()).name.to_string(),
                e.weight().dst_port,
            )
        })
        .collect()
}

/// Nodes are wired as they are added while what they read is defined, the rest afterwards:
/// a file that lists a consumer before its producer (in the first window, or a later one)
/// loads with every input wired to the producer it names, and the edges are added in file
/// order, node by node and port by port, as when every node is wired after all are added
/// (what passes and the writer see in edge order). A node reading its own output is a cycle.
#[test]
fn nodes_listed_before_their_producers_are_wired_in_file_order() {
    let n = 2 * WINDOW + 40;
    for swapped in [10, WINDOW + 20] {
        let mut m = chain(n);
        let g = m.graph.as_mut().expect("graph");
        // n{swapped + 1} (reading v{swapped}) now comes before n{swapped}.
        g.node.swap(swapped, swapped + 1);
        let expect: Vec<(String, String, u32)> = g
            .node
            .iter()
            .flat_map(|node| {
                let name = node.name().to_string();
                node.input.iter().enumerate().map(move |(p, input)| {
                    let src = match input.strip_prefix('v') {
                        Some(k) => format!("n{k}"),
                        None => input.clone(),
                    };
                    (src, name.clone(), p as u32)
                })
            })
            .chain(std::iter::once((
                format!("n{}", n - 1),
                format!("v{}", n - 1),
                0,
            )))
            .collect();
        let model = decoded(&m).expect("a file out of order loads");
        assert_eq!(edges_in_order(&model.graph), expect, "swapped at {swapped}");
    }
    let mut m = chain(n);
    let g = m.graph.as_mut().expect("graph");
    g.node[WINDOW + 3].input[0] = format!("v{}", WINDOW + 3);
    match decoded(&m) {
        Err(e) => assert!(
            e.to_string().contains("cycle") && e.to_string().contains(&format!("n{}", WINDOW + 3)),
            "{e}"
        ),
        Ok(_) => panic!("a node reading its own output loads"),
    }
}

/// A record that does not walk field by field (here it ends in a protobuf group, which the
/// walk does not take, and prost skips) leaves the whole file to prost, as the split would
/// otherwise keep bytes prost drops: the records are prost's encoding, the group gone. The
/// build finds it while reading the records (a plain node, one that only prost reads, an
/// initializer read in place or not), in any window.
#[test]
fn a_record_that_does_not_walk_leaves_the_file_to_prost() {
    const GROUP: [u8; 6] = [0xa3, 0x06, 0x08, 0x01, 0xa4, 0x06];
    let n = WINDOW + 10;
    let field = |number: u32, payload: &[u8]| {
        let mut out = Vec::new();
        prost::encoding::encode_key(number, prost::encoding::WireType::LengthDelimited, &mut out);
        prost::encoding::encode_varint(payload.len() as u64, &mut out);
        out.extend_from_slice(payload);
        out
    };
    let mut constant = NodeProto {
        output: vec!["k".into()],
        name: Some("k".into()),
        op_type: Some("Constant".into()),
        ..Default::default()
    };
    let mut a = attr("value_int", AttributeType::Int);
    a.i = Some(3);
    constant.attribute = vec![a];
    let plain = NodeProto {
        input: vec![format!("v{}", n - 1), "c0".into()],
        output: vec!["z".into()],
        name: Some("z".into()),
        op_type: Some("Add".into()),
        ..Default::default()
    };
    let typed_init = proto::TensorProto {
        data_type: Some(7),
        name: Some("t".into()),
        int64_data: vec![1],
        ..Default::default()
    };
    let raw_init = proto::TensorProto {
        data_type: Some(7),
        name: Some("r".into()),
        raw_data: Some(2i64.to_le_bytes().to_vec().into()),
        ..Default::default()
    };
    let cases: [(u32, Vec<u8>); 4] = [
        (1, constant.encode_to_vec()),
        (1, plain.encode_to_vec()),
        (5, typed_init.encode_to_vec()),
        (5, raw_init.encode_to_vec()),
    ];
    for (number, record) in cases {
        let mut with_group = record.clone();
        with_group.extend_from_slice(&GROUP);
        // The chain, then one more graph field (protobuf merges them) with the record.
        let mut bytes = chain(n).encode_to_vec();
        bytes.extend(field(7, &field(number, &with_group)));
        let model = decoded_bytes(bytes).expect("a file prost decodes loads");
        let records = if number == 1 {
            &model.records.nodes
        } else {
            &model.records.inits
        };
        assert_eq!(records.len(), n + 1);
        assert_eq!(
            records.last().map(|r| r.to_vec()),
            Some(record),
            "field {number}: the record is prost's, without the group"
        );
        // Without the group, the same record is kept as read (a slice of the file).
        let mut bytes = chain(n).encode_to_vec();
        bytes.extend(field(
            7,
            &field(number, &with_group[..with_group.len() - GROUP.len()]),
        ));
        let model = decoded_bytes(bytes.clone()).expect("loads");
        let last = if number == 1 {
            model.records.nodes.last()
        } else {
            model.records.inits.last()
        };
        let at = last.expect("a record").as_ptr() as usize;
        let map = model.sources[0].map.as_ptr() as usize;
        assert!(
            at >= map && at < map + bytes.len(),
            "field {number}: a slice of the file"
        );
    }
}

fn decoded_bytes(bytes: Vec<u8>) -> Result<OnnxModel> {
    OnnxModel::decode(Path::new("chain.onnx"), Bytes::from(bytes), None)
}

#[test]
fn file_contains_finds_a_needle_across_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let mb = 1 << 20;
    for at in [0, mb - 4, mb - 1, mb, 2 * mb - 3, 3 * mb - 8] {
        let mut bytes = vec![b'l'; 3 * mb];
        bytes[at..at + 8].copy_from_slice(b"location");
        std::fs::write(&path, &bytes).unwrap();
        assert!(file_contains(&path, b"location").unwrap(), "at {at}");
        // One byte of it changed: no match anywhere.
        bytes[at + 7] = b'x';
        std::fs::write(&path, &bytes).unwrap();
        assert!(
            !file_contains(&path, b"location").unwrap(),
            "at {at}, broken"
        );
    }
    std::fs::write(&path, b"locat").unwrap();
    assert!(!file_contains(&path, b"location").unwrap());
    std::fs::write(&path, b"").unwrap();
    assert!(!file_contains(&path, b"location").unwrap());
}

/// Resident size in KB of the mapping that starts at `addr`, from `/proc/self/smaps`.
#[cfg(target_os = "linux")]
fn resident_kb(addr: *const u8) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let start = format!("{:x}-", addr as usize);
    let mut lines = smaps.lines().skip_while(|l| !l.starts_with(&start));
    assert!(lines.next().is_some(), "no mapping starts at {start}");
    let rss = lines.find(|l| l.starts_with("Rss:")).expect("an Rss line");
    rss.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Loading gives back the pages of the model file it read, and a save gives back those it
/// has moved past; what the save writes is still prost's encoding of the model, byte for
/// byte (records written from the file after their pages were given back read the same).
#[cfg(target_os = "linux")]
#[test]
fn pages_of_the_file_read_are_given_back_and_the_bytes_written_are_the_same() {
    let n = 16_000;
    let doc = "d".repeat(1000);
    let node = |i: usize| NodeProto {
        input: vec![format!("v{i}")],
        output: vec![format!("v{}", i + 1)],
        name: Some(format!("n{i}")),
        op_type: Some("Identity".into()),
        doc_string: Some(doc.clone()),
        ..Default::default()
    };
    let vi = |name: &str| ValueInfoProto {
        name: Some(name.into()),
        ..Default::default()
    };
    let m = ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto {
            domain: Some(String::new()),
            version: Some(17),
        }],
        graph: Some(GraphProto {
            node: (0..n).map(node).collect(),
            input: vec![vi("v0")],
            output: vec![vi(&format!("v{n}"))],
            ..Default::default()
        }),
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chain.onnx");
    let bytes = m.encode_to_vec();
    std::fs::write(&path, &bytes).unwrap();
    let file_kb = bytes.len() as u64 / 1024;
    assert!(file_kb > 15_000, "{file_kb} KB");

    let mut model = OnnxModel::load(&path).unwrap();
    let map = model.sources[0].map.as_ptr();
    let after_load = resident_kb(map);
    assert!(
        after_load < 1024,
        "{after_load} KB of {file_kb} KB resident after load"
    );

    // A changed node: the graph is rebuilt, every other record is written from the file.
    let ix = model
        .graph
        .g
        .node_indices()
        .find(|&ix| model.graph.node(ix).name == "n7")
        .unwrap();
    model.graph.node_mut(ix).name = "renamed".into();
    model.graph.node_mut(ix).dirty = true;
    let want = model.to_proto().unwrap().encode_to_vec();
    let out = dir.path().join("out.onnx");
    model.save(&out).unwrap();
    let after_save = resident_kb(map);
    assert!(
        after_save < file_kb / 2,
        "{after_save} KB of {file_kb} KB resident after save"
    );
    assert!(
        std::fs::read(&out).unwrap() == want,
        "the bytes written are prost's"
    );
}

proptest! {
    /// Whatever the bytes, a tensor `light_tensor` reads is the one the full decode gives.
    #[test]
    fn light_tensor_never_reads_what_the_full_decode_would_not(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
        tail in prop::collection::vec(any::<u8>(), 0..12),
    ) {
        let rec = Bytes::from(edited(raw_tensor().encode_to_vec(), edits, tail));
        if let Some(t) = light_tensor(&rec) {
            prop_assert_eq!(Some(t), full_tensor(&rec));
        }
    }
}

proptest! {
    /// Whatever the bytes, a record `light_node` reads is one prost decodes to the same
    /// values: bytes of a real record changed, cut or extended at random.
    #[test]
    fn light_node_never_reads_what_prost_would_not(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
        tail in prop::collection::vec(any::<u8>(), 0..12),
    ) {
        let rec = edited(ordinary().encode_to_vec(), edits, tail);
        if let Some(l) = light_node(&rec) {
            agrees(&rec, &l);
        }
    }
}

/// A graph output whose type a pass marks changed without knowing its element type keeps the
/// declared element type: the ONNX spec requires `elem_type` on a tensor type (ONNX Runtime
/// rejects a model whose output type is `tensor_type {}`), and the pass said nothing about it.
#[test]
fn refined_output_keeps_its_declared_element_type() {
    use proto::type_proto::{Tensor as TT, Value as TV};
    let declared = ValueInfoProto {
        name: Some("y".into()),
        r#type: Some(proto::TypeProto {
            denotation: None,
            value: Some(TV::TensorType(TT {
                elem_type: Some(DType::F32.onnx_code()),
                shape: None,
            })),
        }),
        ..Default::default()
    };
    let ty = ValueType {
        dtype: None,
        shape: Some(vec![DeclaredDim::Known(2), DeclaredDim::Param("n".into())]),
    };
    let vi = value_info_proto("y", &ty, Some(&declared));
    let Some(TV::TensorType(tt)) = vi.r#type.and_then(|t| t.value) else {
        panic!("a tensor type");
    };
    assert_eq!(tt.elem_type, Some(DType::F32.onnx_code()));
    assert_eq!(tt.shape.map(|s| s.dim.len()), Some(2));
}
