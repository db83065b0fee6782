//! Random bytes and mutated models thrown at the public API: loading and the default pipeline
//! must return `Ok` or a typed error, never panic.

use proptest::prelude::*;
use slice_opt::formats::onnx::OnnxModel;
use slice_opt::formats::openvino::OvModel;
use slice_opt::{Model, Pipeline};

fn run_all(model: Model) {
    let mut m = model;
    if Pipeline::new().run(&mut m).is_ok() {
        let _ = slice_opt::check::check(&m);
        let _ = slice_opt::check::info(&m);
        match &m {
            Model::Onnx(o) => {
                let _ = o.to_proto();
            }
            Model::OpenVino(o) => {
                let _ = o.to_parts();
            }
        }
    }
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/models/{name}", env!("CARGO_MANIFEST_DIR"))).expect("fixture")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_bytes_never_panic_the_onnx_reader(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Ok(m) = OnnxModel::from_bytes("random.onnx".as_ref(), bytes::Bytes::from(bytes)) {
            run_all(Model::Onnx(m));
        }
    }

    #[test]
    fn mutated_onnx_models_never_panic(pos in 0usize..4096, val in any::<u8>(), which in 0usize..4) {
        let name = ["gpt2_causal_mask.onnx", "ellipsis_shrink.onnx", "const_weight_slice.onnx", "pos_embedding.onnx"][which];
        let mut bytes = fixture(name);
        let p = pos % bytes.len();
        bytes[p] = val;
        if let Ok(m) = OnnxModel::from_bytes("mutated.onnx".as_ref(), bytes::Bytes::from(bytes)) {
            run_all(Model::Onnx(m));
        }
    }

    #[test]
    fn mutated_ir_models_never_panic(pos in 0usize..16384, val in any::<u8>(), which in 0usize..3) {
        let name = ["ellipsis_shrink.tf", "qkv_split.onnx", "causal_mask_dynamic.tf"][which];
        let mut xml = fixture(&format!("{name}.xml"));
        let bin = fixture(&format!("{name}.bin"));
        let p = pos % xml.len();
        // Keep it text: replace with a printable character or a digit.
        const ALPHABET: &[u8] = b" 0123456789-,.<>/=\"abcxyz";
        xml[p] = ALPHABET[val as usize % ALPHABET.len()];
        if let Ok(text) = String::from_utf8(xml) {
            if let Ok(m) = OvModel::from_parts("mutated.xml".as_ref(), text, Some(bytes::Bytes::from(bin))) {
                run_all(Model::OpenVino(m));
            }
        }
    }
}
