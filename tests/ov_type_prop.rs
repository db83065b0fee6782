//! Issue #16, acceptance 3: OpenVINO's own shape-inference tests for Slice-8, transcribed.
//!
//! Each case is built as IR the way `ov.save_model` writes it (the data Parameter's intervals in
//! its `shape` attribute, its port dims `-1`; dynamic rank as `shape="..."` with no port dims),
//! loaded, and inferred. The expected shapes are OpenVINO's, copied from
//! `src/core/tests/type_prop/slice.cpp` (openvinotoolkit/openvino), test name in each case.
//! Every inferred dim must equal OpenVINO's or be provably tighter: each of our intervals is
//! also checked against the numeric result for every input size in it (up to 100 for
//! unbounded dims), so "tighter" is never "wrong".

use std::io::Write;

use slice_opt::passes::infer::infer_node;
use slice_opt::passes::slice_node::{declared_shape, to_dim};
use slice_opt::semantics::{output_shape, ov_slice8, Clamp};
use slice_opt::Model;

const I32MAX: i64 = i32::MAX as i64;
const I32MIN: i64 = i32::MIN as i64;

/// An OpenVINO `Dimension`: `(lo, hi)`, `hi = -1` unbounded (OpenVINO's spelling).
type D = (i64, i64);

fn s(v: i64) -> D {
    (v, v)
}
const DYN: D = (0, -1);

/// How a slice parameter input is given.
enum P {
    Const(Vec<i64>),
    /// A Parameter of this length (values unknown).
    Param(usize),
}

struct Case {
    name: &'static str,
    /// `Slice` (opset8) or `StridedSlice` (opset1, with `attrs`: its masks).
    op: &'static str,
    attrs: &'static str,
    /// `None`: dynamic rank.
    data: Option<Vec<D>>,
    start: P,
    stop: P,
    step: P,
    axes: Option<P>,
    /// `None`: dynamic rank.
    expected: Option<Vec<D>>,
}

fn ov_dim(d: D) -> String {
    match d {
        (lo, hi) if lo == hi => lo.to_string(),
        (0, -1) => "?".into(),
        (lo, -1) => format!("{lo}.."),
        (0, hi) => format!("..{hi}"),
        (lo, hi) => format!("{lo}..{hi}"),
    }
}

/// The case as OpenVINO IR: data Parameter, parameter inputs, Slice-8, Result.
fn build(case: &Case) -> (String, Vec<u8>) {
    let mut bin = Vec::new();
    let mut layers = String::new();
    let mut edges = String::new();
    let (shape_attr, port) = match &case.data {
        None => ("...".to_string(), String::new()),
        Some(dims) => (
            dims.iter()
                .map(|&d| ov_dim(d))
                .collect::<Vec<_>>()
                .join(","),
            dims.iter()
                .map(|&(lo, hi)| {
                    if lo == hi {
                        format!("<dim>{lo}</dim>")
                    } else {
                        "<dim>-1</dim>".into()
                    }
                })
                .collect(),
        ),
    };
    layers.push_str(&format!(
        "<layer id=\"0\" name=\"data\" type=\"Parameter\" version=\"opset1\"><data shape=\"{shape_attr}\" element_type=\"f32\"/><output><port id=\"0\" precision=\"FP32\" names=\"data\">{port}</port></output></layer>\n"
    ));
    edges.push_str("<edge from-layer=\"0\" from-port=\"0\" to-layer=\"100\" to-port=\"0\"/>\n");
    let mut inputs = format!("<port id=\"0\" precision=\"FP32\">{port}</port>");
    let params: Vec<&P> = [
        Some(&case.start),
        Some(&case.stop),
        Some(&case.step),
        case.axes.as_ref(),
    ]
    .into_iter()
    .flatten()
    .collect();
    for (i, p) in params.iter().enumerate() {
        let id = i + 1;
        let len = match p {
            P::Const(v) => v.len(),
            P::Param(n) => *n,
        };
        match p {
            P::Const(v) => {
                let offset = bin.len();
                bin.extend(v.iter().flat_map(|x| x.to_le_bytes()));
                layers.push_str(&format!(
                    "<layer id=\"{id}\" name=\"p{id}\" type=\"Const\" version=\"opset1\"><data element_type=\"i64\" shape=\"{len}\" offset=\"{offset}\" size=\"{}\"/><output><port id=\"0\" precision=\"I64\"><dim>{len}</dim></port></output></layer>\n",
                    len * 8
                ));
            }
            P::Param(_) => layers.push_str(&format!(
                "<layer id=\"{id}\" name=\"p{id}\" type=\"Parameter\" version=\"opset1\"><data shape=\"{len}\" element_type=\"i64\"/><output><port id=\"0\" precision=\"I64\" names=\"p{id}\"><dim>{len}</dim></port></output></layer>\n"
            )),
        }
        edges.push_str(&format!(
            "<edge from-layer=\"{id}\" from-port=\"0\" to-layer=\"100\" to-port=\"{id}\"/>\n"
        ));
        inputs.push_str(&format!(
            "<port id=\"{id}\" precision=\"I64\"><dim>{len}</dim></port>"
        ));
    }
    let out = params.len() + 1;
    layers.push_str(&format!(
        "<layer id=\"100\" name=\"op\" type=\"{}\" version=\"{}\"><data {}/><input>{inputs}</input><output><port id=\"{out}\" precision=\"FP32\" names=\"y\"/></output></layer>\n\
         <layer id=\"101\" name=\"out\" type=\"Result\" version=\"opset1\"><input><port id=\"0\" precision=\"FP32\"/></input></layer>\n",
        case.op,
        if case.op == "Slice" { "opset8" } else { "opset1" },
        case.attrs
    ));
    edges.push_str(&format!(
        "<edge from-layer=\"100\" from-port=\"{out}\" to-layer=\"101\" to-port=\"0\"/>\n"
    ));
    (
        format!("<?xml version=\"1.0\"?>\n<net name=\"case\" version=\"11\">\n<layers>\n{layers}</layers>\n<edges>\n{edges}</edges>\n</net>\n"),
        bin,
    )
}

fn cases() -> Vec<Case> {
    let iota = |n: usize| Some(P::Const((0..n as i64).collect()));
    vec![
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs",
            data: Some(vec![s(10); 8]),
            start: P::Const(vec![1, 1, -20, 9, 9, 9, 9, 20]),
            stop: P::Const(vec![8, 8, 20, -11, 0, -10, -11, -20]),
            step: P::Const(vec![1, 2, 1, -1, -1, -1, -2, -1]),
            axes: iota(8),
            expected: Some([7, 4, 10, 10, 9, 9, 5, 10].map(s).to_vec()),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_dif_steps",
            data: Some([5, 5, 5, 5, 9, 9].map(s).to_vec()),
            start: P::Const(vec![0; 6]),
            stop: P::Const(vec![5, 5, 5, 5, 9, 9]),
            step: P::Const(vec![2, 3, 4, 5, 2, 3]),
            axes: None,
            expected: Some([3, 2, 2, 1, 5, 3].map(s).to_vec()),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_dif_neg_steps",
            data: Some([5, 5, 5, 5, 9, 9].map(s).to_vec()),
            start: P::Const(vec![5, 5, 5, 5, 9, 9]),
            stop: P::Const(vec![0; 6]),
            step: P::Const(vec![-2, -3, -4, -5, -2, -3]),
            axes: None,
            expected: Some([2, 2, 1, 1, 4, 3].map(s).to_vec()),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_const_inputs_output_zero_dims",
            data: Some([5, 5, 5, 5, 9, 9].map(s).to_vec()),
            start: P::Const(vec![0, 0, 0, 5, 0, 10]),
            stop: P::Const(vec![5, 5, 5, 5, 9, 9]),
            step: P::Const(vec![2, -3, 1, 5, 2, 1]),
            axes: None,
            expected: Some([3, 0, 5, 0, 5, 0].map(s).to_vec()),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_unordered_axes",
            data: Some(vec![s(10); 8]),
            start: P::Const(vec![1, 1, -20, 9, 9, 9, 9, 20]),
            stop: P::Const(vec![8, 8, 20, -11, 0, -10, -11, -20]),
            step: P::Const(vec![1, 2, 1, -1, -1, -1, -2, -1]),
            axes: Some(P::Const(vec![2, 0, 3, 7, 1, 5, 6, 4])),
            expected: Some([4, 9, 7, 10, 10, 9, 5, 10].map(s).to_vec()),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_const_inputs_not_all_axes_unordered_prop_symbols",
            data: Some(vec![
                s(10),
                s(10),
                s(10),
                s(10),
                s(10),
                s(20),
                (20, 30),
                s(30),
                (2, 5),
                DYN,
            ]),
            start: P::Const(vec![1, 1, -20, 9, 10, 9]),
            stop: P::Const(vec![8, 8, 20, -11, 25, 0]),
            step: P::Const(vec![1, 2, 1, -1, 1, -1]),
            axes: Some(P::Const(vec![1, 0, 2, 3, 6, 4])),
            expected: Some(vec![
                s(4),
                s(7),
                s(10),
                s(10),
                s(9),
                s(20),
                (10, 15),
                s(30),
                (2, 5),
                DYN,
            ]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_data_dynamic_bounds_dimensions",
            data: Some(vec![(1, 5), (10, 20), (20, 30), s(16), (30, 40)]),
            start: P::Const(vec![0, 2, 10, 0, 35]),
            stop: P::Const(vec![1, 8, 25, 16, 40]),
            step: P::Const(vec![1; 5]),
            axes: iota(5),
            expected: Some(vec![s(1), s(6), (10, 15), s(16), (0, 5)]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_data_dynamic_rank",
            data: None,
            start: P::Const(vec![1, 1, -20, 9, 9, 9, 9, 20]),
            stop: P::Const(vec![8, 8, 20, -11, 0, -10, -11, -20]),
            step: P::Const(vec![1, 2, 1, -1, -1, -1, -2, -1]),
            axes: iota(8),
            expected: None,
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_param_inputs_default_axes_symbols_prop",
            data: Some(vec![
                (0, 10),
                (1, 10),
                s(10),
                (3, 5),
                DYN,
                (100, -1),
                (0, 8),
                (4, 8),
                s(16),
            ]),
            start: P::Param(7),
            stop: P::Param(7),
            step: P::Param(7),
            axes: None,
            expected: Some(vec![
                (0, 10),
                (0, 10),
                (0, 10),
                (0, 5),
                DYN,
                DYN,
                (0, 8),
                (4, 8),
                s(16),
            ]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_sss_param_inputs_mixed_neg_const_axes",
            data: Some(vec![(5, 10), s(2), s(7), (0, 4)]),
            start: P::Param(3),
            stop: P::Param(3),
            step: P::Param(3),
            axes: Some(P::Const(vec![0, 3, 1])),
            expected: Some(vec![(0, 10), (0, 2), s(7), (0, 4)]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_sss_param_inputs_mixed_const_axes",
            data: Some(vec![(5, 10), s(2), s(7), (0, 4)]),
            start: P::Param(3),
            stop: P::Param(3),
            step: P::Param(3),
            axes: Some(P::Const(vec![-4, -1, -3])),
            expected: Some(vec![(0, 10), (0, 2), s(7), (0, 4)]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_MAX_MIN_INT_dynamic_dimensions",
            data: Some(vec![
                s(10),
                (10, 20),
                (10, 20),
                (10, 20),
                (10, 20),
                (10, 20),
                (30, 40),
                (0, 50),
                DYN,
            ]),
            start: P::Const(vec![2, 2, I32MIN, I32MIN, I32MIN, I32MIN, I32MIN, 0, 0]),
            stop: P::Const(vec![10, I32MAX, 5, 10, 15, 25, I32MAX, 50, I32MAX]),
            step: P::Const(vec![1; 9]),
            axes: iota(9),
            expected: Some(vec![
                s(8),
                (8, 18),
                s(5),
                s(10),
                (10, 15),
                (10, 20),
                (30, 40),
                (0, 50),
                DYN,
            ]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_MAX_MIN_INT_dynamic_dimensions_neg_step",
            data: Some(vec![
                s(10),
                (10, 20),
                (10, 20),
                (10, 20),
                (11, 20),
                (10, 20),
                (10, 20),
                (30, 40),
                s(20),
                s(20),
                (0, 20),
                DYN,
                DYN,
            ]),
            start: P::Const(vec![
                9, I32MAX, I32MAX, I32MAX, I32MAX, I32MAX, I32MAX, I32MAX, 20, 20, 20, 20, I32MAX,
            ]),
            stop: P::Const(vec![
                1, 1, 4, 10, 10, 15, 25, I32MIN, -21, I32MIN, I32MIN, I32MIN, I32MIN,
            ]),
            step: P::Const(vec![-1; 13]),
            axes: iota(13),
            expected: Some(vec![
                s(8),
                (8, 18),
                (5, 15),
                (0, 9),
                (0, 9),
                (0, 4),
                s(0),
                (30, 40),
                s(20),
                s(20),
                (0, 20),
                (0, 21),
                DYN,
            ]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_data_full_dynamic_dims",
            data: Some(vec![DYN; 4]),
            start: P::Const(vec![2, 10, 35, I32MIN]),
            stop: P::Const(vec![8, 25, 40, -3]),
            step: P::Const(vec![1; 4]),
            axes: iota(4),
            expected: Some(vec![(0, 6), (0, 15), (0, 5), DYN]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_data_full_dynamic_dims_neg_ind",
            data: Some(vec![DYN; 3]),
            start: P::Const(vec![-8, -25, -40]),
            stop: P::Const(vec![-2, -10, -35]),
            step: P::Const(vec![1; 3]),
            axes: iota(3),
            expected: Some(vec![(0, 6), (0, 15), (0, 5)]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_data_full_dynamic_dims_neg_step",
            data: Some(vec![DYN; 3]),
            start: P::Const(vec![8, 25, 40]),
            stop: P::Const(vec![2, 10, 35]),
            step: P::Const(vec![-1; 3]),
            axes: iota(3),
            expected: Some(vec![(0, 6), (0, 15), (0, 5)]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_data_full_dynamic_dims_neg_step_neg_ind",
            data: Some(vec![DYN; 3]),
            start: P::Const(vec![-2, -10, -35]),
            stop: P::Const(vec![-8, -25, -40]),
            step: P::Const(vec![-1; 3]),
            axes: iota(3),
            expected: Some(vec![(0, 6), (0, 15), (0, 5)]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_data_full_dynamic_dims_neg_step_mix_ind",
            data: Some(vec![DYN; 6]),
            start: P::Const(vec![5, 5, 5, -10, I32MAX, I32MAX]),
            stop: P::Const(vec![-10, -10, I32MIN, 5, 5, I32MIN]),
            step: P::Const(vec![-1, -2, -1, -1, -1, -1]),
            axes: iota(6),
            expected: Some(vec![(0, 6), (0, 3), (0, 6), DYN, DYN, DYN]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_dynamic_dims_maxint32",
            data: Some(vec![(0, 2000), DYN, s(4)]),
            start: P::Const(vec![0; 3]),
            stop: P::Const(vec![I32MAX; 3]),
            step: P::Const(vec![1; 3]),
            axes: iota(3),
            expected: Some(vec![(0, 2000), DYN, s(4)]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_dynamic_dims_maxint64",
            data: Some(vec![(0, 2000), DYN, s(4)]),
            start: P::Const(vec![0; 3]),
            stop: P::Const(vec![i64::MAX; 3]),
            step: P::Const(vec![1; 3]),
            axes: iota(3),
            expected: Some(vec![(0, 2000), DYN, s(4)]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_dynamic_dims_maxint64_start1",
            data: Some(vec![(0, 2000), DYN, s(4)]),
            start: P::Const(vec![1]),
            stop: P::Const(vec![i64::MAX]),
            step: P::Const(vec![1]),
            axes: Some(P::Const(vec![1])),
            expected: Some(vec![(0, 2000), DYN, s(4)]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_MAX_MIN_INT_64_dynamic_dimensions_neg_step",
            data: Some(vec![
                s(10),
                (10, 20),
                (10, 20),
                (10, 20),
                (11, 20),
                (10, 20),
                (10, 20),
                (30, 40),
                s(20),
                s(20),
                (0, 20),
                DYN,
                DYN,
            ]),
            start: P::Const(vec![
                9,
                i64::MAX,
                i64::MAX,
                i64::MAX,
                i64::MAX,
                i64::MAX,
                i64::MAX,
                i64::MAX,
                20,
                20,
                20,
                20,
                i64::MAX,
            ]),
            stop: P::Const(vec![
                1,
                1,
                4,
                10,
                10,
                15,
                25,
                i64::MIN,
                -21,
                i64::MIN,
                i64::MIN,
                i64::MIN,
                i64::MIN,
            ]),
            step: P::Const(vec![-1, -2, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1]),
            axes: iota(13),
            expected: Some(vec![
                s(8),
                (4, 9),
                (5, 15),
                (0, 9),
                (0, 9),
                (0, 4),
                s(0),
                (30, 40),
                s(20),
                s(20),
                (0, 20),
                (0, 21),
                DYN,
            ]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_MAX_MIN_64_no_upper_bounds_neg_step",
            data: Some(vec![DYN, (0, i64::MAX), (0, i64::MAX)]),
            start: P::Const(vec![i64::MAX; 3]),
            stop: P::Const(vec![i64::MIN; 3]),
            step: P::Const(vec![-1; 3]),
            axes: iota(3),
            expected: Some(vec![DYN, DYN, DYN]),
        },
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_basic_const_inputs_MAX_MIN_64_no_upper_bounds",
            data: Some(vec![DYN, (0, i64::MAX), (0, i64::MAX)]),
            start: P::Const(vec![i64::MIN; 3]),
            stop: P::Const(vec![i64::MAX; 3]),
            step: P::Const(vec![1; 3]),
            axes: iota(3),
            expected: Some(vec![DYN, DYN, DYN]),
        },
    ]
}

/// From `src/core/tests/type_prop/strided_slice.cpp`.
fn strided_cases() -> Vec<Case> {
    let zero4 = "begin_mask=\"0,0,0,0\" end_mask=\"0,0,0,0\" new_axis_mask=\"0,0,0,0\" ellipsis_mask=\"0,0,0,0\"";
    vec![
        Case {
            name: "StridedSliceShapeInferTest/shrink_2nd_dim",
            op: "StridedSlice",
            attrs: "begin_mask=\"0,0,0,0\" end_mask=\"0,0,0,0\" new_axis_mask=\"0,0,0,0\" shrink_axis_mask=\"0,1,0,0\" ellipsis_mask=\"0,0,0,0\"",
            data: Some(vec![s(1), s(200), s(300), s(3)]),
            start: P::Param(4),
            stop: P::Param(4),
            step: P::Param(4),
            axes: None,
            expected: Some(vec![(0, 1), (0, 300), (0, 3)]),
        },
        Case {
            name: "StridedSliceShapeInferTest/shrink_output_shape_by_axes",
            op: "StridedSlice",
            attrs: "begin_mask=\"1,0,0,0\" end_mask=\"1,0,0,0\" new_axis_mask=\"0,0,0,0\" shrink_axis_mask=\"0,1,0,1\" ellipsis_mask=\"0,0,0,0\"",
            data: Some(vec![s(1), s(200), s(300), s(3)]),
            start: P::Param(4),
            stop: P::Param(4),
            step: P::Param(4),
            axes: None,
            expected: Some(vec![(0, 1), (0, 300)]),
        },
        Case {
            name: "StridedSliceShapeInferTest/extend_output_shape_by_new_axes",
            op: "StridedSlice",
            attrs: "begin_mask=\"1,0,0,0\" end_mask=\"1,0,0,0\" new_axis_mask=\"0,0,1,0\" shrink_axis_mask=\"0,0,0,0\" ellipsis_mask=\"0,0,0,0\"",
            data: Some(vec![s(1), s(200), s(200), s(3)]),
            start: P::Param(4),
            stop: P::Param(4),
            step: P::Param(4),
            axes: None,
            expected: Some(vec![(0, 1), (0, 200), s(1), (0, 200), s(3)]),
        },
        Case {
            name: "StridedSliceShapeInferTest/when_input_has_dynamic_dimension",
            op: "StridedSlice",
            attrs: "begin_mask=\"0,0,0,0\" end_mask=\"0,0,0,0\" new_axis_mask=\"0,0,0,0\" shrink_axis_mask=\"0,0,0,0\" ellipsis_mask=\"0,0,0,0\"",
            data: Some(vec![(8, -1), s(200), s(200), s(3)]),
            start: P::Param(4),
            stop: P::Param(4),
            step: P::Param(4),
            axes: None,
            expected: Some(vec![DYN, (0, 200), (0, 200), (0, 3)]),
        },
        Case {
            name: "StridedSliceShapeInferTest/input_has_dynamic_dimensions_and_shrink_one",
            op: "StridedSlice",
            attrs: "begin_mask=\"0,0,0,0\" end_mask=\"0,0,0,0\" new_axis_mask=\"0,0,0,0\" shrink_axis_mask=\"1,0,0,0\" ellipsis_mask=\"0,0,0,0\"",
            data: Some(vec![(8, 40), s(200), (100, 200), s(3)]),
            start: P::Param(4),
            stop: P::Param(4),
            step: P::Param(4),
            axes: None,
            expected: Some(vec![(0, 200), DYN, (0, 3)]),
        },
        Case {
            name: "strided_slice_reverse_end_is_int64_min",
            op: "StridedSlice",
            attrs: "begin_mask=\"0,0\" end_mask=\"0,0\"",
            data: Some(vec![(0, 20), DYN]),
            start: P::Const(vec![20, 20]),
            stop: P::Const(vec![i64::MIN, i64::MIN]),
            step: P::Const(vec![-1, -1]),
            axes: None,
            expected: Some(vec![(0, 20), DYN]),
        },
        Case {
            name: "strided_slice_out_of_bounds_different_stride",
            op: "StridedSlice",
            attrs: "begin_mask=\"0,0,0,0,0\" end_mask=\"0,0,0,0,0\"",
            data: Some(vec![s(5); 5]),
            start: P::Const(vec![5; 5]),
            stop: P::Const(vec![5; 5]),
            step: P::Const(vec![1, 2, 5, -2, -5]),
            axes: None,
            expected: Some(vec![s(0); 5]),
        },
        Case {
            name: "strided_slice_use_default_ctor",
            op: "StridedSlice",
            attrs: "begin_mask=\"0,0,0\" end_mask=\"0,0,0\" new_axis_mask=\"1,0,0\" shrink_axis_mask=\"0,0,1\" ellipsis_mask=\"0,0,0\"",
            data: Some(vec![s(10), s(11), s(12)]),
            start: P::Const(vec![0; 4]),
            stop: P::Const(vec![1, 5, 20, 20]),
            step: P::Const(vec![1; 4]),
            axes: None,
            expected: Some(vec![s(1), s(5), s(12)]),
        },
    ]
    .into_iter()
    .map(|mut c| {
        if c.attrs.is_empty() {
            c.attrs = zero4;
        }
        c
    })
    .collect()
}

/// `(lo, hi)` with `hi = None` unbounded, from OpenVINO's spelling.
fn norm(d: D) -> (i64, Option<i64>) {
    match d {
        (lo, -1) => (lo, None),
        (lo, i64::MAX) => (lo, None),
        (lo, hi) => (lo, Some(hi)),
    }
}

#[test]
fn openvino_type_prop_slice_cases() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut equal, mut tighter, mut total) = (0, 0, 0);
    let mut report = Vec::new();
    for case in cases().into_iter().chain(strided_cases()) {
        let (xml, bin) = build(&case);
        let path = dir
            .path()
            .join(format!("{}.xml", case.name.replace('/', "_")));
        std::fs::write(&path, xml).expect("write xml");
        std::fs::File::create(path.with_extension("bin"))
            .and_then(|mut f| f.write_all(&bin))
            .expect("write bin");
        let model = Model::load(&path).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let g = model.graph();
        let ix =
            g.g.node_indices()
                .find(|&i| g.node(i).name == "op")
                .expect("op node");
        let result = infer_node(&model, ix).expect("a slice node");
        let Some(expected) = &case.expected else {
            // Dynamic rank: the data's rank is unknown, so is the output's.
            let data = g.input(ix, 0).expect("data input");
            assert!(
                declared_shape(g, data).is_none(),
                "{}: rank should be unknown",
                case.name
            );
            assert!(result.is_err(), "{}: {result:?}", case.name);
            total += 1;
            equal += 1;
            continue;
        };
        let (_, dims) = result.unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(dims.len(), expected.len(), "{}", case.name);
        let data_dims: Vec<_> = declared_shape(g, g.input(ix, 0).expect("data"))
            .expect("data shape")
            .iter()
            .map(to_dim)
            .collect();
        for (i, (ours, &theirs)) in dims.iter().zip(expected).enumerate() {
            total += 1;
            let (lo, hi) = ours.bounds();
            let (lo, hi) = (lo.unwrap_or(0).max(0), hi);
            let (elo, ehi) = norm(theirs);
            let inside = lo >= elo && ehi.is_none_or(|eh| hi.is_some_and(|h| h <= eh));
            assert!(
                inside,
                "{} dim {i}: ours {ours} is looser than OpenVINO's {}",
                case.name,
                ov_dim(theirs)
            );
            if (lo, hi) == (elo, ehi) {
                equal += 1;
            } else {
                tighter += 1;
                report.push(format!(
                    "{} dim {i}: OpenVINO {}, ours {ours}",
                    case.name,
                    ov_dim(theirs)
                ));
            }
        }
        // Never wrong: our bounds contain the numeric result for every input size (constant
        // parameters only), each input dim swept over its interval (capped at 100).
        if let (P::Const(st), P::Const(sp), P::Const(stp), "Slice") =
            (&case.start, &case.stop, &case.step, case.op)
        {
            let axes = match &case.axes {
                Some(P::Const(a)) => Some(a.clone()),
                _ => None,
            };
            let c = |v: &[i64]| v.iter().map(|&x| Some(x)).collect::<Vec<_>>();
            let plan = ov_slice8(
                &c(st),
                &c(sp),
                Some(&c(stp)),
                axes.as_deref(),
                data_dims.len(),
            )
            .expect("plan");
            let ranges: Vec<(u64, u64)> = data_dims
                .iter()
                .map(|d| {
                    let (lo, hi) = d.bounds();
                    let lo = lo.unwrap_or(0).max(0) as u64;
                    (lo, hi.map_or(lo + 100, |h| (h as u64).min(lo + 100)))
                })
                .collect();
            // One axis swept at a time, the others at their lower bound.
            for a in 0..ranges.len() {
                for v in ranges[a].0..=ranges[a].1 {
                    let concrete: Vec<u64> = ranges
                        .iter()
                        .enumerate()
                        .map(|(j, r)| if j == a { v } else { r.0 })
                        .collect();
                    let Ok(shape) = output_shape(&plan, &concrete, Clamp::Ov) else {
                        continue;
                    };
                    for (d, w) in dims.iter().zip(&shape) {
                        let (l, h) = d.bounds();
                        assert!(
                            l.is_none_or(|l| l <= *w as i64) && h.is_none_or(|h| *w as i64 <= h),
                            "{}: {d} does not contain {w} for input {concrete:?}",
                            case.name
                        );
                    }
                }
            }
        }
    }
    println!("ov_type_prop (slice.cpp, strided_slice.cpp): {total} dims, {equal} equal to OpenVINO, {tighter} tighter, 0 looser");
    for r in &report {
        println!("  tighter: {r}");
    }
}

fn load_case(case: &Case, dir: &std::path::Path) -> Model {
    let (xml, bin) = build(case);
    let path = dir.join(format!("{}.xml", case.name.replace('/', "_")));
    std::fs::write(&path, xml).expect("write xml");
    std::fs::write(path.with_extension("bin"), bin).expect("write bin");
    Model::load(&path).unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

/// OpenVINO refuses a mask element other than 0 or 1 ("All masks of StridedSlice must have be
/// 0 or 1", `src/core/src/op/strided_slice.cpp`, seen with `opset8.strided_slice(...,
/// begin_mask=[0, 2])` in OpenVINO 2026.4); so do we.
#[test]
fn strided_slice_mask_values_other_than_0_1_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    for attrs in [
        "begin_mask=\"0,2\" end_mask=\"0,0\"",
        "begin_mask=\"0,0\" end_mask=\"-1,0\"",
    ] {
        let case = Case {
            name: "mask",
            op: "StridedSlice",
            attrs,
            data: Some(vec![s(4), s(6)]),
            start: P::Const(vec![0, 1]),
            stop: P::Const(vec![4, 5]),
            step: P::Const(vec![1, 1]),
            axes: None,
            expected: None,
        };
        let model = load_case(&case, dir.path());
        let g = model.graph();
        let ix =
            g.g.node_indices()
                .find(|&i| g.node(i).name == "op")
                .expect("op");
        let r = infer_node(&model, ix).expect("slice node");
        let err = r.expect_err("must be refused").to_string();
        assert!(err.contains("0 or 1"), "{err}");
    }
}

/// `StridedSliceShapeInferTest/input_is_dynamic_rank` and a Parameter written with
/// `shape="..."`: loads, and the rank stays unknown.
#[test]
fn dynamic_rank_parameter_loads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = Case {
        name: "dynrank",
        op: "StridedSlice",
        attrs: "begin_mask=\"1,0,1,0\" end_mask=\"0,0,0,0\"",
        data: None,
        start: P::Param(4),
        stop: P::Param(4),
        step: P::Param(4),
        axes: None,
        expected: None,
    };
    let model = load_case(&case, dir.path());
    let g = model.graph();
    let ix =
        g.g.node_indices()
            .find(|&i| g.node(i).name == "op")
            .expect("op");
    assert!(declared_shape(g, g.input(ix, 0).expect("data")).is_none());
    assert!(infer_node(&model, ix).expect("slice node").is_err());
    let report = slice_opt::check::check(&model);
    assert!(report.passed(), "{report:?}");
}
