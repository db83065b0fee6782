use super::*;

#[test]
fn a_bin_keeps_its_layout_from_64_mb_up_to_a_256th_unreferenced() {
    let len = KEEP_LAYOUT_MIN;
    assert!(keeps_layout(len, len));
    assert!(keeps_layout(len, len - len / 256));
    assert!(!keeps_layout(len, len - len / 256 - 1));
    assert!(!keeps_layout(len, 0));
    assert!(
        !keeps_layout(len - 1, len - 1),
        "shorter than 64 MB: compacted"
    );
    assert!(keeps_layout(u64::MAX, u64::MAX - u64::MAX / 256));
}

/// Lazy bytes produced from a file map whose pages the `.bin` writer gives back behind it are
/// written as produced (runs front to back and back to front, as a reversed slice reads), and
/// the map still reads the file's bytes afterwards: giving pages back loses nothing.
#[test]
fn lazy_bytes_from_a_released_map_are_written_as_produced() {
    use crate::ir::{Lazy, Produce};
    use std::io::{Read, Seek};
    use std::sync::Arc;
    /// 512 bytes of every 1,024 (half of each row, as `w[:, 0:128]` of f32 rows of 256),
    /// forward or backward.
    #[derive(Debug)]
    struct HalfRows {
        src: Bytes,
        backward: bool,
    }
    impl HalfRows {
        fn starts(&self) -> Vec<usize> {
            let mut v: Vec<usize> = (0..self.src.len() / 1024).map(|r| r * 1024).collect();
            if self.backward {
                v.reverse();
            }
            v
        }
    }
    impl Produce for HalfRows {
        fn len(&self) -> usize {
            self.src.len() / 2
        }
        fn runs(&self, f: &mut dyn FnMut(&[u8])) {
            for s in self.starts() {
                f(&self.src[s..s + 512])
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.bin");
    // 12 MiB, more than `RELEASE_EVERY` read in each direction; byte k = k % 251.
    let content: Vec<u8> = (0..12usize << 20).map(|k| (k % 251) as u8).collect();
    std::fs::write(&path, &content).unwrap();
    let map = crate::formats::fs::map_file_sparse(&path).unwrap();
    let fwd = HalfRows {
        src: map.clone(),
        backward: false,
    };
    let bwd = HalfRows {
        src: map.clone(),
        backward: true,
    };
    let mut want: Vec<u8> = map[..100].to_vec();
    for p in [&fwd, &bwd] {
        for s in p.starts() {
            want.extend_from_slice(&content[s..s + 512]);
        }
    }
    let (fwd, bwd) = (
        Lazy::new(Arc::new(fwd)).placeholder(),
        Lazy::new(Arc::new(bwd)).placeholder(),
    );
    let parts = vec![
        Out::Original(0..100),
        Out::New(fwd.as_ref()),
        Out::New(bwd.as_ref()),
    ];
    let tmp = crate::formats::output::Staged::new(&dir.path().join("out.bin")).unwrap();
    // SAFETY: `map` is the whole read-only map of a file nothing changes.
    unsafe { write_parts_releasing(&tmp, parts.into_iter(), &map, None) }.unwrap();
    let mut got = Vec::new();
    let mut f = tmp.as_file();
    f.seek(std::io::SeekFrom::Start(0)).unwrap();
    f.read_to_end(&mut got).unwrap();
    assert_eq!(got.len(), want.len());
    assert!(
        got == want,
        "the written bytes differ from the produced ones"
    );
    assert!(
        map.as_ref() == content.as_slice(),
        "the map reads the file's bytes after its pages were given back"
    );
}
