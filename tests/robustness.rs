//! Layer: robustness: the public API on random and mutated input.
//!
//! Random bytes and mutated models thrown at the public API: loading and the default pipeline must
//! return `Ok` or a typed error, never panic.

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

// ----- Random specs at the semantics core -----

use slice_opt::semantics::decode::{OvMasks, TfMasks};
use slice_opt::semantics::{
    gather, onnx_slice, output_shape, ov_slice8, resolve_dims, strided_slice, Clamp, Dim, Flavour,
    StridedSliceSpec,
};

/// Any `i64`, with the edges (and `None` = not constant) drawn often.
fn param() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        3 => any::<i64>().prop_map(Some),
        3 => (-8i64..8).prop_map(Some),
        1 => Just(Some(i64::MIN)),
        1 => Just(Some(i64::MAX)),
        1 => Just(None),
    ]
}

fn params() -> impl Strategy<Value = Vec<Option<i64>>> {
    proptest::collection::vec(param(), 0..6)
}

fn any_i64s() -> impl Strategy<Value = Vec<i64>> {
    proptest::collection::vec(
        prop_oneof![any::<i64>(), -8i64..8, Just(i64::MIN), Just(i64::MAX)],
        0..6,
    )
}

fn dims() -> impl Strategy<Value = Vec<u64>> {
    proptest::collection::vec(
        prop_oneof![
            4 => 0u64..5,
            1 => Just(i64::MAX as u64),
            1 => Just(u64::MAX),
            1 => Just(1u64 << 40)
        ],
        0..5,
    )
}

fn apply(plan: &slice_opt::semantics::SlicePlan, dims: &[u64], clamp: Clamp) {
    let known: Vec<Dim> = dims
        .iter()
        .map(|&d| i64::try_from(d).map_or_else(|_| Dim::unknown(), Dim::known))
        .collect();
    let syms: Vec<Dim> = (0..dims.len())
        .map(|i| Dim::symbol(&format!("d{i}")))
        .collect();
    let _ = plan.to_string();
    let _ = plan.to_python();
    let _ = slice_opt::check::python_notation(plan);
    let _ = output_shape(plan, dims, clamp);
    let _ = gather(plan, dims, clamp, 1 << 12);
    let _ = resolve_dims(plan, &known, clamp);
    let _ = resolve_dims(plan, &syms, clamp);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// StridedSlice (TF bit masks or OV mask lists, both flavours), ONNX Slice (any opset) and
    /// Slice-8 with any values, non-constant entries and lengths that need not agree: decoding
    /// and everything done with a plan return `Ok` or a `SliceError`, never panic.
    #[test]
    fn random_specs_never_panic_the_semantics_core(
        dims in dims(),
        begin in params(),
        end in params(),
        strides in proptest::option::of(params()),
        bits in proptest::collection::vec(any::<i64>(), 5),
        lists in proptest::collection::vec(any_i64s(), 5),
        axes in proptest::option::of(any_i64s()),
        opset in any::<u32>(),
        rank_delta in -1i64..2,
    ) {
        // The rank the decoder is told may disagree with the dims (a malformed model).
        let rank = (dims.len() as i64 + rank_delta).max(0) as usize;
        let tf = StridedSliceSpec {
            begin: begin.clone(),
            end: end.clone(),
            strides: strides.clone(),
            ..StridedSliceSpec::from_tf_bits(&[], &[], None, TfMasks {
                begin: bits[0], end: bits[1], ellipsis: bits[2], new_axis: bits[3], shrink: bits[4],
            })
        };
        let ov = StridedSliceSpec {
            begin: begin.clone(),
            end: end.clone(),
            strides: strides.clone(),
            ..StridedSliceSpec::from_ov_lists(&[], &[], None, OvMasks {
                begin: &lists[0], end: &lists[1], ellipsis: &lists[2], new_axis: &lists[3], shrink: &lists[4],
            })
        };
        for spec in [&tf, &ov] {
            for flavour in [Flavour::Tf, Flavour::Ov] {
                if let Ok(plan) = strided_slice(spec, flavour, rank) {
                    apply(&plan, &dims, flavour.clamp());
                }
            }
        }
        for plan in [
            onnx_slice(&begin, &end, axes.as_deref(), strides.as_deref(), rank, opset),
            ov_slice8(&begin, &end, strides.as_deref(), axes.as_deref(), rank),
        ]
        .into_iter()
        .flatten()
        {
            apply(&plan, &dims, Clamp::Ov);
        }
    }
}

// ----- Random OpenVINO IR -----

/// A layer: type, `data` attributes, input ports' dims, output ports' dims.
type Layer = (
    String,
    Vec<(String, String)>,
    Vec<Vec<String>>,
    Vec<Vec<String>>,
);

/// One random layer: a type the passes care about, random `data` attributes, random port dims.
fn layer() -> impl Strategy<Value = Layer> {
    let ty = prop_oneof![
        Just("Parameter"),
        Just("Const"),
        Just("StridedSlice"),
        Just("Slice"),
        Just("ShapeOf"),
        Just("Reshape"),
        Just("Squeeze"),
        Just("Unsqueeze"),
        Just("Concat"),
        Just("Gather"),
        Just("Convert"),
        Just("Result"),
        Just("Add"),
    ];
    let value = prop_oneof![
        Just(String::new()),
        Just("i64".to_string()),
        Just("f32".to_string()),
        Just("i32".to_string()),
        Just("u8".to_string()),
        Just("?".to_string()),
        Just("-1".to_string()),
        Just("1..5".to_string()),
        Just("true".to_string()),
        Just("9223372036854775807".to_string()),
        Just("-9223372036854775808".to_string()),
        proptest::collection::vec(-3i64..6, 0..4).prop_map(|v| v
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(",")),
        any::<i64>().prop_map(|v| v.to_string()),
    ];
    let key = prop_oneof![
        Just("element_type"),
        Just("shape"),
        Just("offset"),
        Just("size"),
        Just("begin_mask"),
        Just("end_mask"),
        Just("new_axis_mask"),
        Just("shrink_axis_mask"),
        Just("ellipsis_mask"),
        Just("special_zero"),
        Just("axis"),
        Just("destination_type"),
    ];
    let dim = prop_oneof![
        (0u64..6).prop_map(|d| d.to_string()),
        Just("-1".to_string()),
        Just("?".to_string()),
        Just("1..4".to_string()),
        any::<u64>().prop_map(|d| d.to_string()),
    ];
    let port = proptest::collection::vec(dim, 0..4);
    (
        ty.prop_map(str::to_string),
        proptest::collection::btree_map(key.prop_map(str::to_string), value, 0..6)
            .prop_map(|m| m.into_iter().collect()),
        proptest::collection::vec(port.clone(), 0..4),
        proptest::collection::vec(port, 0..3),
    )
}

fn ir_text(layers: &[Layer], edges: &[(usize, usize, usize, usize)]) -> String {
    let mut s =
        String::from("<?xml version=\"1.0\"?>\n<net name=\"random\" version=\"11\">\n<layers>\n");
    for (id, (ty, data, inputs, outputs)) in layers.iter().enumerate() {
        s += &format!("<layer id=\"{id}\" name=\"l{id}\" type=\"{ty}\" version=\"opset1\">\n<data");
        for (k, v) in data {
            s += &format!(" {k}=\"{v}\"");
        }
        // A Const needs a place in the .bin (which may still be out of range).
        for k in ["offset", "size"] {
            if ty == "Const" && !data.iter().any(|(d, _)| d == k) {
                s += &format!(" {k}=\"{}\"", 8 * (id % 3));
            }
        }
        s += "/>\n";
        let ports = |s: &mut String, tag: &str, list: &[Vec<String>], first: usize| {
            if list.is_empty() {
                return;
            }
            *s += &format!("<{tag}>\n");
            for (i, dims) in list.iter().enumerate() {
                *s += &format!("<port id=\"{}\" precision=\"I64\">", first + i);
                for d in dims {
                    *s += &format!("<dim>{d}</dim>");
                }
                *s += "</port>\n";
            }
            *s += &format!("</{tag}>\n");
        };
        ports(&mut s, "input", inputs, 0);
        ports(&mut s, "output", outputs, inputs.len());
        s += "</layer>\n";
    }
    s += "</layers>\n<edges>\n";
    for (i, &(fl, fp, tl, tp)) in edges.iter().enumerate() {
        // Mostly from an output port to an input port of a later layer; every eighth edge
        // as drawn (dangling ids and ports).
        let (fl, fp, tl, tp) = if i % 8 == 7 {
            (fl, fp, tl, tp)
        } else {
            // Forward only (no cycles).
            let (a, b) = (fl % layers.len(), tl % layers.len());
            let (f, t) = (a.min(b), a.max(b));
            let (fin, fout) = (layers[f].2.len(), layers[f].3.len().max(1));
            (f, fin + fp % fout, t, tp % layers[t].2.len().max(1))
        };
        s += &format!(
            "<edge from-layer=\"{fl}\" from-port=\"{fp}\" to-layer=\"{tl}\" to-port=\"{tp}\"/>\n"
        );
    }
    s += "</edges>\n</net>\n";
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Random IR built from the tokens the reader knows (layer types, attributes, dims, edges),
    /// with a random `.bin`: loading, the passes and writing never panic.
    #[test]
    fn random_ir_never_panics(
        layers in proptest::collection::vec(layer(), 1..7),
        edges in proptest::collection::vec((0usize..7, 0usize..5, 0usize..7, 0usize..5), 0..10),
        bin in proptest::collection::vec(any::<u8>(), 0..256),
    ) {
        let text = ir_text(&layers, &edges);
        if let Ok(m) = OvModel::from_parts("random.xml".as_ref(), text, Some(bytes::Bytes::from(bin))) {
            let mut lowered = Model::OpenVino(m.clone());
            if Pipeline::empty().lower().raise().run(&mut lowered).is_ok() {
                if let Model::OpenVino(l) = &lowered {
                    let _ = l.to_parts();
                }
            }
            run_all(Model::OpenVino(m));
        }
    }
}
