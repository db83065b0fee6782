use super::super::proto::{
    tensor_proto::Segment, NodeProto, OperatorSetIdProto, StringStringEntryProto,
};
use super::*;
use std::io::Write;

fn kv(k: &str, v: &str) -> StringStringEntryProto {
    StringStringEntryProto {
        key: Some(k.into()),
        value: Some(v.into()),
    }
}

fn full_tensor(big: usize) -> TensorProto {
    TensorProto {
        dims: vec![2, 3, -1],
        data_type: Some(1),
        segment: Some(Segment {
            begin: Some(1),
            end: Some(2),
        }),
        float_data: vec![1.0, 2.5],
        int32_data: vec![-1, 7],
        string_data: vec![Bytes::from_static(b"ab"), Bytes::from(vec![3u8; big])],
        int64_data: vec![1 << 40, -3],
        name: Some("t".into()),
        doc_string: Some(String::new()),
        raw_data: Some(Bytes::from(vec![9u8; big])),
        external_data: vec![kv("location", "x.data")],
        data_location: Some(0),
        double_data: vec![0.5],
        uint64_data: vec![u64::MAX],
        metadata_props: vec![kv("a", "b")],
    }
}

#[test]
fn streamed_bytes_equal_prost_encoding() {
    for big in [0, 10, BIG, 3 * FLUSH_AT] {
        let g = GraphProto {
            node: vec![NodeProto {
                name: Some("n".into()),
                op_type: Some("Identity".into()),
                input: vec!["a".into()],
                output: vec!["b".into()],
                ..Default::default()
            }],
            name: Some("g".into()),
            initializer: vec![full_tensor(big), TensorProto::default(), full_tensor(5)],
            doc_string: Some("d".into()),
            metadata_props: vec![kv("x", "y")],
            ..Default::default()
        };
        let m = ModelProto {
            ir_version: Some(8),
            opset_import: vec![OperatorSetIdProto {
                domain: None,
                version: Some(17),
            }],
            producer_name: Some("p".into()),
            producer_version: Some("1".into()),
            domain: Some(String::new()),
            model_version: Some(-1),
            doc_string: Some("doc".into()),
            graph: Some(g),
            metadata_props: vec![kv("k", "v")],
            ..Default::default()
        };
        let want = m.encode_to_vec();
        assert_eq!(encode_streamed(&m, &[]).unwrap(), want, "big = {big}");
        // The same with the tensor bytes inside a "mapped" file.
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&want).unwrap();
        let map = Bytes::from(want.clone());
        let m2 = ModelProto::decode(map.clone()).unwrap();
        let src = [Source {
            map,
            file: Some(Arc::new(f)),
        }];
        assert_eq!(encode_streamed(&m2, &src).unwrap(), want, "big = {big}");
        assert_eq!(
            encode_streamed(&ModelProto::default(), &src).unwrap(),
            ModelProto::default().encode_to_vec()
        );
    }
}

/// Unchanged stretches of the source are copied as one range: the bytes must still be
/// exactly prost's, whatever changed around, inside or between the big tensors.
#[test]
fn coalesced_copies_equal_prost_encoding() {
    let tensor = |k: u8| TensorProto {
        dims: vec![BIG as i64 * 2],
        data_type: Some(2),
        name: Some(format!("w{k}")),
        raw_data: Some(Bytes::from(
            (0..BIG * 2)
                .map(|i| (i as u8).wrapping_mul(k))
                .collect::<Vec<u8>>(),
        )),
        ..Default::default()
    };
    let m = ModelProto {
        ir_version: Some(8),
        producer_name: Some("p".into()),
        graph: Some(GraphProto {
            node: vec![NodeProto {
                op_type: Some("Identity".into()),
                input: vec!["w0".into()],
                output: vec!["y".into()],
                ..Default::default()
            }],
            initializer: (0..6).map(tensor).collect(),
            name: Some("g".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let bytes = m.encode_to_vec();
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(&bytes).unwrap();
    let map = Bytes::from(bytes.clone());
    let src = [Source {
        map: map.clone(),
        file: Some(Arc::new(f)),
    }];
    let read = ModelProto::decode(map).unwrap();
    type Change = fn(&mut ModelProto);
    let changes: [(&str, Change); 7] = [
        ("unchanged", |_| {}),
        ("producer renamed (first bytes differ)", |m| {
            m.producer_name = Some("q".into())
        }),
        ("a middle tensor's bytes replaced", |m| {
            let t = &mut m.graph.as_mut().unwrap().initializer[3];
            t.raw_data = Some(Bytes::from(vec![7u8; BIG * 2]));
        }),
        ("a middle tensor renamed (header differs)", |m| {
            m.graph.as_mut().unwrap().initializer[2].name = Some("renamed".into());
        }),
        ("a middle tensor removed", |m| {
            m.graph.as_mut().unwrap().initializer.remove(2);
        }),
        ("two tensors swapped", |m| {
            m.graph.as_mut().unwrap().initializer.swap(1, 4);
        }),
        ("a tensor added at the end", |m| {
            let t = m.graph.as_ref().unwrap().initializer[0].clone();
            m.graph.as_mut().unwrap().initializer.push(t);
        }),
    ];
    for (what, change) in changes {
        let mut m2 = read.clone();
        change(&mut m2);
        assert_eq!(
            encode_streamed(&m2, &src).unwrap(),
            m2.encode_to_vec(),
            "{what}"
        );
    }
}

/// Lazy bytes (`ir::Lazy`) behind a placeholder `raw_data` are written as the bytes their
/// producer makes, the file being the protobuf encoding of the record with those bytes; the
/// record given back by `GraphOut::into_proto` carries them too.
#[test]
fn lazy_raw_data_is_written_as_produced() {
    use crate::ir::{Lazy, Produce};
    #[derive(Debug)]
    struct Counting(usize);
    impl Produce for Counting {
        fn len(&self) -> usize {
            self.0
        }
        fn runs(&self, f: &mut dyn FnMut(&[u8])) {
            // Runs of 1000 bytes (the last shorter), byte k = k % 253.
            let all: Vec<u8> = (0..self.0).map(|k| (k % 253) as u8).collect();
            for c in all.chunks(1000) {
                f(c)
            }
        }
    }
    for len in [BIG, FLUSH_AT + 17, 3 * FLUSH_AT + 5] {
        let want: Vec<u8> = (0..len).map(|k| (k % 253) as u8).collect();
        let lazy = Lazy::new(std::sync::Arc::new(Counting(len)));
        let placeholder = lazy.placeholder();
        assert_eq!(placeholder.len(), len);
        let tensor = |raw: Bytes| TensorProto {
            dims: vec![len as i64],
            data_type: Some(2),
            name: Some("w".into()),
            raw_data: Some(raw),
            ..Default::default()
        };
        let g = GraphProto {
            initializer: vec![
                tensor(Bytes::from_static(b"small")),
                tensor(placeholder.clone()),
            ],
            ..Default::default()
        };
        let m = ModelProto {
            ir_version: Some(8),
            graph: Some(g.clone()),
            ..Default::default()
        };
        let mut expect = m.clone();
        if let Some(g) = expect.graph.as_mut() {
            g.initializer[1].raw_data = Some(Bytes::from(want.clone()));
        }
        assert_eq!(
            encode_streamed(&m, &[]).expect("write"),
            expect.encode_to_vec(),
            "{len}"
        );
        let back = GraphOut::untouched(&g).into_proto().expect("proto");
        assert_eq!(back.initializer[1].raw_data.as_deref(), Some(&want[..]));
        assert!(Lazy::behind(&placeholder).is_some());
    }
}
