//! Layer: shape inference (`passes::infer`) against OpenVINO's shape inference.
//!
//! OpenVINO's own shape-inference tests for Slice-8 and StridedSlice-1, transcribed: the
//! `type_prop` tests (`openvino_type_prop_slice_cases`) and the CPU plugin's shape-inference unit
//! tests (`openvino_cpu_plugin_shape_inference_cases`, see `cpu_cases`) (issue 16, acceptance 3).
//!
//! Each case is built as IR the way `ov.save_model` writes it (the data Parameter's intervals in
//! its `shape` attribute, its port dims `-1`; dynamic rank as `shape="..."` with no port dims),
//! loaded, and inferred. The expected shapes are OpenVINO's, copied from
//! `src/core/tests/type_prop/slice.cpp` (openvinotoolkit/openvino), test name in each case.
//! Every inferred dim must equal OpenVINO's or be provably tighter: each of our intervals is
//! also checked against the numeric result for every input size in it (up to 100 for
//! unbounded dims), so "tighter" is never "wrong".
//!
//! Issue 42, acceptance 2 (`openvino_type_prop_begin_end_from_shape_of`): every type_prop test
//! whose begin/end go through `ShapeOf` of a Parameter with interval dims, built as the C++ test
//! builds it (`ShapeOf`, then `Subtract` of the test's offset), checked against every
//! combination of sizes in the intervals.

use std::io::Write;

use slice_opt::passes::infer::infer_node;
use slice_opt::semantics::{output_shape, ov_slice8, Clamp};
use slice_opt::shape::slice_node::{declared_shape, to_dim};
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
    /// A Const of element type `i32` (OpenVINO's CPU-plugin tests build begin/end/stride so).
    ConstI32(Vec<i32>),
    /// A Parameter of this length (values unknown).
    Param(usize),
    /// Not given (StridedSlice without its optional stride input).
    Absent,
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
    .filter(|p| !matches!(p, P::Absent))
    .collect();
    for (i, p) in params.iter().enumerate() {
        let id = i + 1;
        let len = match p {
            P::Const(v) => v.len(),
            P::ConstI32(v) => v.len(),
            P::Param(n) => *n,
            P::Absent => unreachable!("filtered out"),
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
            P::ConstI32(v) => {
                let offset = bin.len();
                bin.extend(v.iter().flat_map(|x| x.to_le_bytes()));
                layers.push_str(&format!(
                    "<layer id=\"{id}\" name=\"p{id}\" type=\"Const\" version=\"opset1\"><data element_type=\"i32\" shape=\"{len}\" offset=\"{offset}\" size=\"{}\"/><output><port id=\"0\" precision=\"I32\"><dim>{len}</dim></port></output></layer>\n",
                    len * 4
                ));
            }
            P::Absent => {}
            P::Param(_) => layers.push_str(&format!(
                "<layer id=\"{id}\" name=\"p{id}\" type=\"Parameter\" version=\"opset1\"><data shape=\"{len}\" element_type=\"i64\"/><output><port id=\"0\" precision=\"I64\" names=\"p{id}\"><dim>{len}</dim></port></output></layer>\n"
            )),
        }
        edges.push_str(&format!(
            "<edge from-layer=\"{id}\" from-port=\"0\" to-layer=\"100\" to-port=\"{id}\"/>\n"
        ));
        let precision = if matches!(p, P::ConstI32(_)) {
            "I32"
        } else {
            "I64"
        };
        inputs.push_str(&format!(
            "<port id=\"{id}\" precision=\"{precision}\"><dim>{len}</dim></port>"
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
        Case {
            op: "Slice",
            attrs: "",
            name: "slice_v8_inf_dim_start_from_last_N_to_end",
            data: Some(vec![s(1), s(256), DYN]),
            start: P::Const(vec![-7]),
            stop: P::Const(vec![i64::MAX]),
            step: P::Const(vec![1]),
            axes: Some(P::Const(vec![2])),
            expected: Some(vec![s(1), s(256), (0, 7)]),
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
            // OpenVINO's newest test file (3a33e0d); older versions expected `?` for dim 1.
            expected: Some(vec![(0, 200), (0, 200), (0, 3)]),
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
            // OpenVINO's newest test file (3a33e0d); older versions expected `?` for dim 1.
            expected: Some(vec![(0, 20), (0, 21)]),
        },
        Case {
            name: "strided_slice_inf_dim_start_from_last_N_to_end",
            op: "StridedSlice",
            attrs: "begin_mask=\"1,1,0\" end_mask=\"1,1,0\"",
            data: Some(vec![s(1), s(256), DYN]),
            start: P::Const(vec![0, 0, -7]),
            stop: P::Const(vec![0, 0, i64::MAX]),
            step: P::Const(vec![1, 1, 1]),
            axes: None,
            expected: Some(vec![s(1), s(256), (0, 7)]),
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

/// The CPU plugin's shape-inference unit tests for StridedSlice and Slice (openvinotoolkit/openvino,
/// `src/plugins/intel_cpu/tests/unit/shape_inference_test/`): every case of
/// `strided_slice_shape_inference_test.cpp` (`StridedSliceStaticShapeInferenceTest`),
/// `slice_shape_inference_test.cpp` (`SliceStaticShapeInferenceTest`) and
/// `custom_shape_infer/strided_slice.cpp` (`StridedSliceCpuShapeInferenceTest`).
///
/// These tests run static shape inference: the op's data input is a dynamic-rank Parameter and the
/// static input shapes are given at inference time, so the data Parameter here has that static
/// shape. Begin/end/stride (start/stop/step/axes) given as Constants, or as Parameters whose values
/// the test passes in its "constant data" map, are Consts here (for
/// `StridedSliceCpuShapeInferenceTest` both variants, `shape_inference_empty_const_map` and
/// `shape_inference_in_const_map`, so give the same IR: one case stands for both). Masks are
/// written as `ov.save_model` writes `std::vector<int64_t>` attributes (`""` when empty).
///
/// `max_d` in `SliceStaticShapeInferenceTest` is `StaticDimension`'s largest value, which the
/// shared slice rules (`slice_shape_inference_utils.hpp`, `dim::is_inf_bound`) treat as an
/// unbounded dim. IR cannot hold it, so such an input dim is `?` here (port dim `-1`); an expected
/// `max_d` is `?`, and an expected number `v` on such an axis is what OpenVINO computes for the
/// unbounded length, i.e. the upper bound of the sliced dim: compared as `0..v` (a `?` input can be
/// of any size, including 0). The sweep in `run_cases` checks our interval against every size.
fn cpu_cases() -> Vec<Case> {
    const I64MAX: i64 = i64::MAX;
    const I64MIN: i64 = i64::MIN;
    // `std::vector<int64_t>(4, 0)` masks; new_axis/shrink/ellipsis not given (empty).
    const ZERO4: &str = "begin_mask=\"0,0,0,0\" end_mask=\"0,0,0,0\" new_axis_mask=\"\" shrink_axis_mask=\"\" ellipsis_mask=\"\"";
    let st =
        |name, attrs, data: &[i64], b: Vec<i64>, e: Vec<i64>, stride: Vec<i64>, exp: &[i64]| Case {
            name,
            op: "StridedSlice",
            attrs,
            data: Some(data.iter().map(|&d| s(d)).collect()),
            start: P::Const(b),
            stop: P::Const(e),
            step: P::Const(stride),
            axes: None,
            expected: Some(exp.iter().map(|&d| s(d)).collect()),
        };
    let mut v = vec![
        // strided_slice_shape_inference_test.cpp
        st(
            "StridedSliceStaticShapeInferenceTest.reverse_stride_begin_end_clip_to_dimension",
            ZERO4,
            &[3, 4, 5],
            vec![100; 3],
            vec![-100; 3],
            vec![-1; 3],
            &[3, 4, 5],
        ),
        st(
            "StridedSliceStaticShapeInferenceTest.use_begin_end_variant_1",
            ZERO4,
            &[3, 2, 3],
            vec![1, 0, 0],
            vec![2, 1, 3],
            vec![1, 1, 1],
            &[1, 1, 3],
        ),
        st(
            "StridedSliceStaticShapeInferenceTest.use_begin_end_variant_2",
            ZERO4,
            &[3, 2, 3],
            vec![1, 0, 0],
            vec![2, 2, 3],
            vec![1, 1, 1],
            &[1, 2, 3],
        ),
        st(
            "StridedSliceStaticShapeInferenceTest.use_begin_end_variant_3",
            ZERO4,
            &[3, 2, 3],
            vec![2, 0, 0],
            vec![3, 2, 3],
            vec![1, 1, 2],
            &[1, 2, 2],
        ),
        st(
            "StridedSliceStaticShapeInferenceTest.ignore_begin_end",
            "begin_mask=\"0,1,1\" end_mask=\"1,1,1\" new_axis_mask=\"\" shrink_axis_mask=\"\" ellipsis_mask=\"\"",
            &[3, 2, 3],
            vec![1, 0, 0],
            vec![0, 0, 0],
            vec![1, 1, 1],
            &[2, 2, 3],
        ),
        st(
            "StridedSliceStaticShapeInferenceTest.ignore_begin_end_stride_by_two_last_dim",
            "begin_mask=\"1,0,1\" end_mask=\"0,1,1\" new_axis_mask=\"\" shrink_axis_mask=\"\" ellipsis_mask=\"\"",
            &[3, 2, 3],
            vec![0, 1, 0],
            vec![2, 0, 0],
            vec![1, 1, 2],
            &[2, 1, 2],
        ),
        st(
            "StridedSliceStaticShapeInferenceTest.use_reverse_stride_on_last_dimension",
            "begin_mask=\"0,1,1\" end_mask=\"0,1,1\" new_axis_mask=\"\" shrink_axis_mask=\"\" ellipsis_mask=\"\"",
            &[3, 2, 3],
            vec![0, 0, 0],
            vec![1, 0, 0],
            vec![1, 1, -1],
            &[1, 2, 3],
        ),
        // `make_op(data, begin, end, mask, mask)`: no stride argument; OpenVINO's constructor adds
        // the default strides as a Constant of ones, which `ov.save_model` writes as a 4th input.
        st(
            "StridedSliceStaticShapeInferenceTest.default_stride",
            "begin_mask=\"0,1,0\" end_mask=\"0,1,0\" new_axis_mask=\"\" shrink_axis_mask=\"\" ellipsis_mask=\"\"",
            &[3, 2, 3],
            vec![0, 0, 0],
            vec![1, 0, 2],
            vec![1, 1, 1],
            &[1, 2, 2],
        ),
        // The same as `make_op` literally builds it: 3 inputs (the stride input is optional in
        // StridedSlice-1; OpenVINO reads such an IR and infers [1,2,2]).
        Case {
            name: "StridedSliceStaticShapeInferenceTest.default_stride_3_inputs",
            op: "StridedSlice",
            attrs: "begin_mask=\"0,1,0\" end_mask=\"0,1,0\" new_axis_mask=\"\" shrink_axis_mask=\"\" ellipsis_mask=\"\"",
            data: Some(vec![s(3), s(2), s(3)]),
            start: P::Const(vec![0, 0, 0]),
            stop: P::Const(vec![1, 0, 2]),
            step: P::Absent,
            axes: None,
            expected: Some(vec![s(1), s(2), s(2)]),
        },
        // slice_shape_inference_test.cpp
        Case {
            name: "SliceStaticShapeInferenceTest.reverse_steps_start_stop_outside_dimension_default_axes",
            op: "Slice",
            attrs: "",
            data: Some(vec![s(3), s(4), s(5), DYN, DYN]),
            start: P::Const(vec![100, 5, -1, I64MAX, 5]),
            stop: P::Const(vec![-100, I64MIN, -6, 5, -10]),
            step: P::Const(vec![-1, -2, -1, -1, -2]),
            axes: None,
            // OpenVINO: {3, 2, 5, max_d, 3}
            expected: Some(vec![s(3), s(2), s(5), DYN, (0, 3)]),
        },
        Case {
            name: "SliceStaticShapeInferenceTest.reverse_step_on_signle_axis_but_start_stop_steps_in_const_map",
            op: "Slice",
            attrs: "",
            data: Some(vec![s(3), s(4), s(10)]),
            start: P::Const(vec![100]),
            stop: P::Const(vec![2]),
            step: P::Const(vec![-2]),
            axes: Some(P::Const(vec![-1])),
            expected: Some(vec![s(3), s(4), s(4)]),
        },
        // The op is made without axes (its constant-data map also holds axes 0..6 at port 4,
        // which the 4-input op never reads; they equal the default axes).
        Case {
            name: "SliceStaticShapeInferenceTest.forward_step_all_data_in_const_map",
            op: "Slice",
            attrs: "",
            data: Some(vec![s(10), s(10), s(8), DYN, DYN, DYN, s(10)]),
            start: P::Const(vec![0, 2, 10, 3, 3, I64MIN, I64MIN]),
            stop: P::Const(vec![10, 8, 12, 15, I64MAX, -5, -5]),
            step: P::Const(vec![1, 2, 1, 3, 4, 2, 2]),
            axes: None,
            // OpenVINO: {10, 3, 0, 4, max_d, max_d, 3}
            expected: Some(vec![s(10), s(3), s(0), (0, 4), DYN, DYN, s(3)]),
        },
    ];
    // custom_shape_infer/strided_slice.cpp: the INSTANTIATE_TEST_SUITE_P values, in order
    // (input shape, begin, end, stride (all i32), begin/end/new_axis/shrink_axis masks, expected).
    type Row = (
        &'static [i64],
        [&'static [i32]; 3],
        [&'static str; 4],
        &'static [i64],
    );
    let z4 = "0,0,0,0";
    let rows: [Row; 16] = [
        (
            &[3, 4, 5],
            [&[100, 100, 100], &[-100, -100, -100], &[-1, -1, -1]],
            [z4, z4, z4, z4],
            &[3, 4, 5],
        ),
        (
            &[3, 2, 3],
            [&[1, 0, 0], &[2, 1, 3], &[1, 1, 1]],
            [z4, z4, z4, z4],
            &[1, 1, 3],
        ),
        (
            &[3, 2, 3],
            [&[1, 0, 0], &[2, 2, 3], &[1, 1, 1]],
            [z4, z4, z4, z4],
            &[1, 2, 3],
        ),
        (
            &[3, 2, 3],
            [&[2, 0, 0], &[3, 2, 3], &[1, 1, 2]],
            [z4, z4, z4, z4],
            &[1, 2, 2],
        ),
        (
            &[3, 2, 3],
            [&[1, 0, 0], &[0, 0, 0], &[1, 1, 1]],
            ["0,1,1", "1,1,1", "0,0,0", "0,0,0"],
            &[2, 2, 3],
        ),
        (
            &[3, 2, 3],
            [&[0, 1, 0], &[2, 0, 0], &[1, 1, 2]],
            ["1,0,1", "0,1,1", "0,0,0", "0,0,0"],
            &[2, 1, 2],
        ),
        (
            &[3, 2, 3],
            [&[0, 0, 0], &[1, 0, 0], &[1, 1, -1]],
            ["0,1,1", "0,1,1", "0,0,0", "0,0,0"],
            &[1, 2, 3],
        ),
        (
            &[2000, 128],
            [&[0, 0, 0], &[0, 128, 0], &[1, 1, 1]],
            ["0,1,1", "0,0,1", "1,0,0", "0,0,0"],
            &[1, 128, 128],
        ),
        (
            &[3, 192],
            [&[0; 5], &[0; 5], &[1; 5]],
            ["1,0,0,0,1", "1,0,0,0,1", "0,1,1,1,0", ""],
            &[3, 1, 1, 1, 192],
        ),
        (
            &[3, 192],
            [&[0; 5], &[0; 5], &[1; 5]],
            ["1,1,0,0,0", "1,1,0,0,0", "0,0,1,1,1", ""],
            &[3, 192, 1, 1, 1],
        ),
        (
            &[3, 2, 192],
            [&[0; 5], &[0; 5], &[1; 5]],
            ["1,0,1,0,1", "1,0,1,0,1", "0,1,0,1,0", ""],
            &[3, 1, 2, 1, 192],
        ),
        (
            &[3, 2, 192],
            [&[0; 5], &[0; 5], &[1; 5]],
            ["1,0,0,0,1", "1,0,0,0,1", "0,1,0,1,0", "0,0,1,0,0"],
            &[3, 1, 1, 192],
        ),
        (
            &[3, 2, 192],
            [&[0; 5], &[0; 5], &[1; 5]],
            ["1,0,0,0,1", "1,0,0,0,1", "0,1,1,0,0", "0,0,0,1,1"],
            &[3, 1, 1],
        ),
        (
            &[3, 192],
            [&[0; 5], &[0; 5], &[1; 5]],
            ["1,0,0,0,1", "1,0,0,0,1", "0,1,1,1,0", "0,1,1,1,0"],
            &[3, 1, 1, 1, 192],
        ),
        (
            &[3, 192],
            [&[0, 0], &[0, 0], &[1, 1]],
            ["0,1", "0,1", "0,0", "1,0"],
            &[192],
        ),
        (
            &[1, 2, 3],
            [&[0, 0], &[0, 0], &[1, 1]],
            ["1,0", "1,0", "0,1", "0,0"],
            &[1, 1, 2, 3],
        ),
    ];
    const NAMES: [&str; 16] = [
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/0",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/1",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/2",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/3",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/4",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/5",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/6",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/7",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/8",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/9",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/10",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/11",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/12",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/13",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/14",
        "CpuShapeInfer/StridedSliceCpuShapeInferenceTest/15",
    ];
    for ((data, [b, e, stride], [bm, em, nm, sm], exp), name) in rows.into_iter().zip(NAMES) {
        // Leaked once per test run: `Case::attrs` is `&'static str`.
        let attrs: &'static str = Box::leak(
            format!(
                "begin_mask=\"{bm}\" end_mask=\"{em}\" new_axis_mask=\"{nm}\" shrink_axis_mask=\"{sm}\" ellipsis_mask=\"\""
            )
            .into_boxed_str(),
        );
        v.push(Case {
            name,
            op: "StridedSlice",
            attrs,
            data: Some(data.iter().map(|&d| s(d)).collect()),
            start: P::ConstI32(b.to_vec()),
            stop: P::ConstI32(e.to_vec()),
            step: P::ConstI32(stride.to_vec()),
            axes: None,
            expected: Some(exp.iter().map(|&d| s(d)).collect()),
        });
    }
    v
}

#[test]
fn openvino_cpu_plugin_shape_inference_cases() {
    let cases = cpu_cases();
    assert_eq!(cases.len(), 8 + 1 + 3 + 16);
    let counts = run_cases(
        "ov CPU plugin shape_inference_test (slice, strided_slice)",
        cases,
    );
    // Tighter: the two `max_d` axes OpenVINO leaves unbounded, bounded by dims <= i64::MAX.
    assert_eq!(counts, (98, 96, 2));
}

/// The same cases on the data Parameter these tests actually make (`PartialShape::dynamic()`,
/// written `shape="..."`), before static shapes are given: the output rank is unknown, as
/// OpenVINO's `read_model` of the same IR says (`[...]`, checked with `tools/ov_cases_check.py`).
#[test]
fn openvino_cpu_plugin_cases_on_dynamic_rank_data() {
    let cases: Vec<Case> = cpu_cases()
        .into_iter()
        .map(|c| Case {
            name: Box::leak(format!("{}/dynamic_rank", c.name).into_boxed_str()),
            data: None,
            expected: None,
            ..c
        })
        .collect();
    let counts = run_cases("ov CPU plugin cases, dynamic-rank data", cases);
    assert_eq!(counts, (28, 28, 0));
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
    let (total, equal, tighter) = run_cases(
        "ov_type_prop (slice.cpp, strided_slice.cpp)",
        cases().into_iter().chain(strided_cases()).collect(),
    );
    assert_eq!((total, equal, tighter), (169, 163, 6));
}

/// Builds, loads and infers every case; asserts none is looser than OpenVINO (nor wrong, for
/// constant Slice parameters); prints and returns `(dims, equal, tighter)`.
///
/// With `OV_CASES_DIR` set, the IR files are kept there (to read them with OpenVINO itself:
/// `tools/ov_cases_check.py`).
fn run_cases(label: &str, cases: Vec<Case>) -> (usize, usize, usize) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = match std::env::var_os("OV_CASES_DIR") {
        Some(d) => {
            std::fs::create_dir_all(&d).expect("OV_CASES_DIR");
            std::path::PathBuf::from(d)
        }
        None => tmp.path().to_path_buf(),
    };
    let (mut equal, mut tighter, mut total) = (0, 0, 0);
    let mut report = Vec::new();
    for case in cases {
        let (xml, bin) = build(&case);
        let path = dir.join(format!("{}.xml", case.name.replace('/', "_")));
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
    println!("{label}: {total} dims, {equal} equal to OpenVINO, {tighter} tighter, 0 looser");
    for r in &report {
        println!("  tighter: {r}");
    }
    (total, equal, tighter)
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

// ---------------------------------------------------------------------------------------------
// Issue 42, acceptance 2: begin/end (start/stop) computed from `ShapeOf` of a Parameter with
// interval dims. OpenVINO carries the value's bounds (`evaluate_lower/upper`); so must we.

/// A begin/end (start/stop) input of a [`ValueCase`].
enum V {
    /// `Constant::create(element::i64, ...)`.
    Const(Vec<i64>),
    /// `ShapeOf` of an i64 Parameter of this shape; then `Subtract` of a Const `[offset]` when
    /// given (the interval tests' `begin_offset`/`end_offset`).
    ShapeOf(Vec<D>, Option<i64>),
}

/// One OpenVINO type_prop test whose begin/end come from `ShapeOf`.
struct ValueCase {
    name: String,
    /// `Slice` (opset8) or `StridedSlice` (opset1, all masks 0).
    op: &'static str,
    /// `None`: the data is OpenVINO's `Constant::create(element::i64, Shape{1, 10}, ...)`.
    data: Option<Vec<D>>,
    begin: V,
    end: V,
    step: Vec<i64>,
    expected: Vec<D>,
}

/// The `<dim>`s of a port (`-1` for an interval, as `ov.save_model` writes them).
fn port_dims(dims: &[D]) -> String {
    dims.iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                format!("<dim>{lo}</dim>")
            } else {
                "<dim>-1</dim>".into()
            }
        })
        .collect()
}

/// IR under construction: layers, edges, weights, the next layer id.
#[derive(Default)]
struct Ir {
    layers: String,
    edges: String,
    bin: Vec<u8>,
    next: usize,
}

impl Ir {
    fn id(&mut self) -> usize {
        self.next += 1;
        self.next - 1
    }

    /// An i64 Const of this shape and these values.
    fn constant(&mut self, name: &str, shape: &[usize], v: &[i64]) -> usize {
        let id = self.id();
        let offset = self.bin.len();
        self.bin.extend(v.iter().flat_map(|x| x.to_le_bytes()));
        let attr: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        let dims: String = shape.iter().map(|d| format!("<dim>{d}</dim>")).collect();
        self.layers.push_str(&format!(
            "<layer id=\"{id}\" name=\"{name}\" type=\"Const\" version=\"opset1\"><data element_type=\"i64\" shape=\"{}\" offset=\"{offset}\" size=\"{}\"/><output><port id=\"0\" precision=\"I64\">{dims}</port></output></layer>\n",
            attr.join(","),
            v.len() * 8
        ));
        id
    }

    fn edge(&mut self, from: (usize, usize), to: (usize, usize)) {
        self.edges.push_str(&format!(
            "<edge from-layer=\"{}\" from-port=\"{}\" to-layer=\"{}\" to-port=\"{}\"/>\n",
            from.0, from.1, to.0, to.1
        ));
    }

    /// A begin/end input: (layer id, output port).
    fn value(&mut self, tag: &str, v: &V) -> (usize, usize) {
        match v {
            V::Const(vals) => (self.constant(tag, &[vals.len()], vals), 0),
            V::ShapeOf(shape, offset) => {
                let p = self.id();
                let so = self.id();
                let attr: Vec<String> = shape.iter().map(|&d| ov_dim(d)).collect();
                let dims = port_dims(shape);
                let n = shape.len();
                self.layers.push_str(&format!(
                    "<layer id=\"{p}\" name=\"p_{tag}\" type=\"Parameter\" version=\"opset1\"><data shape=\"{}\" element_type=\"i64\"/><output><port id=\"0\" precision=\"I64\" names=\"p_{tag}\">{dims}</port></output></layer>\n\
                     <layer id=\"{so}\" name=\"shape_of_{tag}\" type=\"ShapeOf\" version=\"opset3\"><data output_type=\"i64\"/><input><port id=\"0\" precision=\"I64\">{dims}</port></input><output><port id=\"1\" precision=\"I64\"><dim>{n}</dim></port></output></layer>\n",
                    attr.join(",")
                ));
                self.edge((p, 0), (so, 0));
                let Some(off) = offset else {
                    return (so, 1);
                };
                let c = self.constant(&format!("{tag}_offset"), &[1], &[*off]);
                let sub = self.id();
                self.layers.push_str(&format!(
                    "<layer id=\"{sub}\" name=\"{tag}\" type=\"Subtract\" version=\"opset1\"><data auto_broadcast=\"numpy\"/><input><port id=\"0\" precision=\"I64\"><dim>{n}</dim></port><port id=\"1\" precision=\"I64\"><dim>1</dim></port></input><output><port id=\"2\" precision=\"I64\"><dim>{n}</dim></port></output></layer>\n"
                ));
                self.edge((so, 1), (sub, 0));
                self.edge((c, 0), (sub, 1));
                (sub, 2)
            }
        }
    }
}

/// The case as OpenVINO IR, the graph the C++ test builds: data, `ShapeOf` (and `Subtract`)
/// for begin and end, a constant step, the op, a Result.
fn build_value_case(case: &ValueCase) -> (String, Vec<u8>) {
    let mut ir = Ir::default();
    let data_dims: Vec<D> = case.data.clone().unwrap_or(vec![s(1), s(10)]);
    let (data, prec) = match &case.data {
        Some(dims) => {
            let id = ir.id();
            let shape: Vec<String> = dims.iter().map(|&d| ov_dim(d)).collect();
            ir.layers.push_str(&format!(
                "<layer id=\"{id}\" name=\"data\" type=\"Parameter\" version=\"opset1\"><data shape=\"{}\" element_type=\"f32\"/><output><port id=\"0\" precision=\"FP32\" names=\"data\">{}</port></output></layer>\n",
                shape.join(","),
                port_dims(dims)
            ));
            (id, "FP32")
        }
        None => (
            ir.constant("data", &[1, 10], &[1, 2, 3, 4, 5, 6, 7, 8, 9, 0]),
            "I64",
        ),
    };
    let begin = ir.value("begin", &case.begin);
    let end = ir.value("end", &case.end);
    let n = case.step.len();
    let step = (ir.constant("step", &[n], &case.step), 0);
    let attrs = if case.op == "Slice" {
        String::new()
    } else {
        let zeros = vec!["0"; data_dims.len()].join(",");
        format!("begin_mask=\"{zeros}\" end_mask=\"{zeros}\" new_axis_mask=\"\" shrink_axis_mask=\"\" ellipsis_mask=\"\"")
    };
    let version = if case.op == "Slice" {
        "opset8"
    } else {
        "opset1"
    };
    ir.layers.push_str(&format!(
        "<layer id=\"100\" name=\"op\" type=\"{}\" version=\"{version}\"><data {attrs}/><input><port id=\"0\" precision=\"{prec}\">{}</port><port id=\"1\" precision=\"I64\"><dim>{n}</dim></port><port id=\"2\" precision=\"I64\"><dim>{n}</dim></port><port id=\"3\" precision=\"I64\"><dim>{n}</dim></port></input><output><port id=\"4\" precision=\"{prec}\" names=\"y\"/></output></layer>\n\
         <layer id=\"101\" name=\"out\" type=\"Result\" version=\"opset1\"><input><port id=\"0\" precision=\"{prec}\"/></input></layer>\n",
        case.op,
        port_dims(&data_dims)
    ));
    for (i, from) in [(data, 0), begin, end, step].into_iter().enumerate() {
        ir.edge(from, (100, i));
    }
    ir.edge((100, 4), (101, 0));
    (
        format!("<?xml version=\"1.0\"?>\n<net name=\"case\" version=\"11\">\n<layers>\n{}</layers>\n<edges>\n{}</edges>\n</net>\n", ir.layers, ir.edges),
        ir.bin,
    )
}

/// The interval tests' parameter lists: `(data_shape, begin_shape, end_shape, begin_offset,
/// end_offset, step, exp_shape)`, each shape of one dim.
type IntervalParams = (D, D, D, i64, i64, i64, D);

/// `StridedSliceIntervalTest` (`src/core/tests/type_prop/strided_slice.cpp`), in order.
const STRIDED_SLICE_INTERVAL: [IntervalParams; 27] = [
    ((1024, 1024), (0, 20), (10, 20), 0, 0, 1, (0, 20)),
    ((1024, 1024), (0, 20), (10, 20), 0, 0, 1, (0, 20)),
    ((1024, 1024), (0, 20), (10, 20), 10, 0, 1, (0, 20)),
    ((0, -1), (0, 20), (10, 20), 10, 0, 1, (0, 20)),
    ((1024, 1024), (10, 20), (0, 20), 0, 10, 1, (0, 1013)),
    ((1024, 1024), (0, 10), (0, 5), 0, 10, 1, (1004, 1019)),
    ((120, 1024), (0, 10), (0, 5), 0, 10, 1, (100, 1019)),
    ((1024, 1024), (0, 1030), (0, 2000), 1025, 10, 1, (0, 1024)),
    ((1024, 1024), (0, 10), (10, 20), 10, 0, 1, (0, 20)),
    ((1024, 1024), (1, 12), (0, 18), 10, 0, 2, (0, 9)),
    ((1024, 1024), (10, 20), (0, 20), 0, 10, 2, (0, 507)),
    ((100, 1024), (10, 20), (0, 20), 0, 10, 2, (0, 507)),
    ((1024, 1024), (10, 10), (30, 30), 0, 0, 2, (10, 10)),
    ((1024, 1024), (10, 15), (30, 30), 0, 0, 2, (8, 10)),
    ((1024, 1024), (10, 15), (30, 40), 0, 0, 2, (8, 15)),
    ((20, 1024), (10, 15), (30, 40), 0, 0, 2, (3, 15)),
    // reverse stride
    ((1024, 1024), (0, 20), (10, 20), 10, 0, -1, (0, 1013)),
    ((0, -1), (0, 20), (10, 20), 10, 0, -1, (0, -1)),
    ((1024, 1024), (10, 20), (0, 20), 0, 10, -1, (0, 20)),
    ((1024, 1024), (30, 30), (10, 10), 35, 40, -1, (25, 25)),
    ((1024, 1024), (0, 2000), (0, 1030), 10, 1026, -1, (0, 1024)),
    ((1024, 1024), (30, 30), (10, 10), 0, 0, -2, (10, 10)),
    ((1024, 1024), (20, 30), (10, 10), 0, 0, -2, (5, 10)),
    ((1024, 1024), (20, 30), (10, 10), 40, 0, -2, (497, 502)),
    ((100, 1024), (20, 30), (10, 10), 40, 0, -2, (35, 502)),
    ((1024, 1024), (20, 30), (10, 15), 0, 0, -2, (3, 10)),
    ((10, 1024), (20, 30), (10, 15), 0, 0, -2, (0, 10)),
];

/// `SliceV8IntervalTest` (`src/core/tests/type_prop/slice.cpp`), in order.
const SLICE_V8_INTERVAL: [IntervalParams; 20] = [
    ((1024, 1024), (0, 20), (10, 20), 0, 0, 1, (0, 20)),
    ((1024, 1024), (0, 20), (10, 20), 0, 0, 1, (0, 20)),
    ((0, -1), (0, 20), (10, 20), 10, 0, 1, (0, 20)),
    ((1024, 1024), (0, 10), (0, 5), 0, 10, 1, (1004, 1019)),
    ((120, 1024), (0, 10), (0, 5), 0, 10, 1, (100, 1019)),
    ((1024, 1024), (0, 1030), (0, 2000), 1025, 10, 1, (0, 1024)),
    ((1024, 1024), (1, 12), (0, 18), 10, 0, 2, (0, 9)),
    ((1024, 1024), (10, 20), (0, 20), 0, 10, 2, (0, 507)),
    ((100, 1024), (10, 20), (0, 20), 0, 10, 2, (0, 507)),
    ((1024, 1024), (10, 10), (30, 30), 0, 0, 2, (10, 10)),
    ((20, 1024), (10, 15), (30, 40), 0, 0, 2, (3, 15)),
    // reverse stride
    ((1024, 1024), (0, 20), (10, 20), 10, 0, -1, (0, 1013)),
    ((0, -1), (0, 20), (10, 20), 10, 0, -1, (0, -1)),
    ((1024, 1024), (30, 30), (10, 10), 35, 40, -1, (25, 25)),
    ((1024, 1024), (0, 2000), (0, 1030), 10, 1026, -1, (0, 1024)),
    ((1024, 1024), (30, 30), (10, 10), 0, 0, -2, (10, 10)),
    ((1024, 1024), (20, 30), (10, 10), 0, 0, -2, (5, 10)),
    ((1024, 1024), (20, 30), (10, 10), 40, 0, -2, (497, 502)),
    ((1024, 1024), (20, 30), (10, 15), 0, 0, -2, (3, 10)),
    ((10, 1024), (20, 30), (10, 15), 0, 0, -2, (0, 10)),
];

/// Every type_prop test of Slice-8 and StridedSlice-1 whose begin/end go through `ShapeOf` of a
/// Parameter with interval dims (openvinotoolkit/openvino, `src/core/tests/type_prop/slice.cpp`
/// and `strided_slice.cpp`), test names as gtest prints them.
fn value_cases() -> Vec<ValueCase> {
    let mut v = Vec::new();
    for op in ["StridedSlice", "Slice"] {
        let (b, e) = if op == "Slice" {
            ("slice_v8_start", "stop")
        } else {
            ("strided_slice_begin", "end")
        };
        let pre = if op == "Slice" {
            "slice_v8"
        } else {
            "strided_slice"
        };
        // `*_end_is_shape_of_with_bounds` / `slice_v8_stop_is_shape_of_with_bounds`.
        v.push(ValueCase {
            name: format!("{pre}_{e}_is_shape_of_with_bounds"),
            op,
            data: None,
            begin: V::Const(vec![0, 0]),
            end: V::ShapeOf(vec![s(1), (5, 7)], None),
            step: vec![1, 1],
            expected: vec![s(1), (5, 7)],
        });
        v.push(ValueCase {
            name: format!("{b}_is_shape_of_with_bounds"),
            op,
            data: None,
            begin: V::ShapeOf(vec![s(0), (3, 5)], None),
            end: V::Const(vec![1, 7]),
            step: vec![1, 1],
            expected: vec![s(1), (2, 4)],
        });
        v.push(ValueCase {
            name: format!("{b}_{e}_is_shape_of_with_bounds"),
            op,
            data: None,
            begin: V::ShapeOf(vec![s(0), (3, 5)], None),
            end: V::ShapeOf(vec![s(2), (6, 7)], None),
            step: vec![1, 1],
            expected: vec![s(1), (1, 4)],
        });
        let (list, test): (&[IntervalParams], &str) = if op == "Slice" {
            (
                &SLICE_V8_INTERVAL,
                "SliceV8IntervalTest.start_stop_as_interval",
            )
        } else {
            (
                &STRIDED_SLICE_INTERVAL,
                "StridedSliceIntervalTest.begin_end_as_interval",
            )
        };
        for (i, &(data, bs, es, bo, eo, step, exp)) in list.iter().enumerate() {
            v.push(ValueCase {
                name: format!("type_prop/{test}/{i}"),
                op,
                data: Some(vec![data]),
                begin: V::ShapeOf(vec![bs], Some(bo)),
                end: V::ShapeOf(vec![es], Some(eo)),
                step: vec![step],
                expected: vec![exp],
            });
        }
    }
    v
}

/// The integer values an interval dim takes in the sweep: all of them, an unbounded one up to
/// 2100 past its lower bound (past every constant of these tests, where each output is linear).
fn sweep(d: D) -> std::ops::RangeInclusive<i64> {
    let (lo, hi) = d;
    lo..=if hi < 0 { lo + 2100 } else { hi }
}

/// Every combination of sizes of the case's interval dims: the data dims, the begin values and
/// the end values each takes.
#[allow(clippy::type_complexity)]
fn concrete_values(case: &ValueCase) -> (Vec<Vec<u64>>, Vec<Vec<i64>>, Vec<Vec<i64>>) {
    fn product(dims: &[D], off: i64) -> Vec<Vec<i64>> {
        let mut all = vec![vec![]];
        for &d in dims {
            all = all
                .into_iter()
                .flat_map(|p: Vec<i64>| {
                    sweep(d).map(move |x| {
                        let mut p = p.clone();
                        p.push(x - off);
                        p
                    })
                })
                .collect();
        }
        all
    }
    let data: Vec<D> = case.data.clone().unwrap_or(vec![s(1), s(10)]);
    let datas: Vec<Vec<u64>> = product(&data, 0)
        .into_iter()
        .map(|p| p.into_iter().map(|x| x as u64).collect())
        .collect();
    // On dims up to `m`, an index beyond `±(m + 1)` selects what `±(m + 1)` does (OpenVINO
    // clamps it): one value stands for all of them.
    let m = datas.iter().flatten().max().map_or(0, |&m| m as i64) + 1;
    let value = |v: &V| {
        let mut all = match v {
            V::Const(c) => vec![c.clone()],
            V::ShapeOf(shape, off) => product(shape, off.unwrap_or(0)),
        };
        for p in &mut all {
            for x in p.iter_mut() {
                *x = (*x).clamp(-m, m);
            }
        }
        all.sort_unstable();
        all.dedup();
        all
    };
    (datas, value(&case.begin), value(&case.end))
}

#[test]
fn openvino_type_prop_begin_end_from_shape_of() {
    let cases = value_cases();
    assert_eq!(cases.len(), 3 + 27 + 3 + 20);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = match std::env::var_os("OV_CASES_DIR") {
        Some(d) => {
            std::fs::create_dir_all(&d).expect("OV_CASES_DIR");
            std::path::PathBuf::from(d)
        }
        None => tmp.path().to_path_buf(),
    };
    let (mut total, mut equal, mut tighter, mut hull) = (0, 0, 0, 0);
    let mut looser = Vec::new();
    for case in &cases {
        let (xml, bin) = build_value_case(case);
        let path = dir.join(format!("{}.xml", case.name.replace(['/', '.'], "_")));
        std::fs::write(&path, xml).expect("write xml");
        std::fs::write(path.with_extension("bin"), bin).expect("write bin");
        let model = Model::load(&path).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let g = model.graph();
        let ix =
            g.g.node_indices()
                .find(|&i| g.node(i).name == "op")
                .expect("op node");
        let (_, dims) = infer_node(&model, ix)
            .expect("a slice node")
            .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(dims.len(), case.expected.len(), "{}", case.name);
        // Never wrong: every combination of sizes, through the numeric rule.
        let mut seen: Vec<(i64, i64)> = vec![(i64::MAX, i64::MIN); dims.len()];
        let (datas, begins, ends) = concrete_values(case);
        let c = |v: &[i64]| v.iter().map(|&x| Some(x)).collect::<Vec<_>>();
        let combos = begins
            .iter()
            .flat_map(|b| ends.iter().map(move |e| (b, e)))
            .flat_map(|(b, e)| {
                let plan = ov_slice8(&c(b), &c(e), Some(&c(&case.step)), None, case.step.len())
                    .expect("plan");
                datas
                    .iter()
                    .map(move |data| (b, e, data, output_shape(&plan, data, Clamp::Ov)))
            });
        for (b, e, data, shape) in combos {
            let shape = shape.expect("shape");
            for (i, (d, &w)) in dims.iter().zip(&shape).enumerate() {
                let w = w as i64;
                let (l, h) = d.bounds();
                assert!(
                    l.is_none_or(|l| l <= w) && h.is_none_or(|h| w <= h),
                    "{}: {d} does not contain {w} for data {data:?}, begin {b:?}, end {e:?}",
                    case.name
                );
                seen[i] = (seen[i].0.min(w), seen[i].1.max(w));
            }
        }
        for (i, (ours, &theirs)) in dims.iter().zip(&case.expected).enumerate() {
            total += 1;
            let (lo, hi) = ours.bounds();
            let lo = lo.unwrap_or(0).max(0);
            let (elo, ehi) = norm(theirs);
            let inside = lo >= elo && ehi.is_none_or(|eh| hi.is_some_and(|h| h <= eh));
            if !inside {
                looser.push(format!(
                    "{} dim {i}: ours {ours}, OpenVINO {}",
                    case.name,
                    ov_dim(theirs)
                ));
            } else if (lo, hi) == (elo, ehi) {
                equal += 1;
            } else {
                tighter += 1;
                println!(
                    "  tighter: {} dim {i}: OpenVINO {}, ours {ours}",
                    case.name,
                    ov_dim(theirs)
                );
            }
            // The tightest interval there is: both ends attained by some sizes.
            let bounded_sweep = hi.is_some() || theirs.1 < 0;
            if (Some(lo), hi.or(Some(seen[i].1))) == (Some(seen[i].0), Some(seen[i].1))
                && bounded_sweep
            {
                hull += 1;
            }
        }
    }
    println!(
        "ov_type_prop begin/end from ShapeOf: {} cases, {total} dims: {equal} equal to OpenVINO, {tighter} tighter, {} looser; {hull} the exact hull of the swept sizes",
        cases.len(),
        looser.len()
    );
    for l in &looser {
        println!("  looser: {l}");
    }
    assert!(looser.is_empty(), "{} looser", looser.len());
}

/// `slice_v8_dynamic_dimension_but_slice_min_is_lt_input_min_size` (`slice.cpp`): `x[-7:]` with
/// an i32 stop of `INT32_MAX` on a dim `20..`. OpenVINO says exactly 7: it reads a stop at the
/// maximum of its element type as "to the end". By the op's rule (stops clamp to the dim) that
/// holds for every dim up to `2^31 - 1`; on a dim of `2^31 + 3` (which `20..` allows) the slice
/// has 3 elements. We write `0..7`, right for both; with an `INT64_MAX` stop (no dim is larger)
/// we write 7 (the `resolve` unit test `unknown_dims_get_exact_intervals`).
#[test]
fn int32_max_stop_on_an_unbounded_dim() {
    let dir = tempfile::tempdir().expect("tempdir");
    let case = Case {
        op: "Slice",
        attrs: "",
        name: "slice_v8_dynamic_dimension_but_slice_min_is_lt_input_min_size",
        data: Some(vec![(20, -1)]),
        start: P::ConstI32(vec![-7]),
        stop: P::ConstI32(vec![i32::MAX]),
        step: P::ConstI32(vec![1]),
        axes: Some(P::ConstI32(vec![0])),
        expected: Some(vec![s(7)]),
    };
    let model = load_case(&case, dir.path());
    let g = model.graph();
    let ix =
        g.g.node_indices()
            .find(|&i| g.node(i).name == "op")
            .expect("op");
    let (_, dims) = infer_node(&model, ix)
        .expect("slice node")
        .expect("inferred");
    let plan = ov_slice8(
        &[Some(-7)],
        &[Some(I32MAX)],
        Some(&[Some(1)]),
        Some(&[0]),
        1,
    )
    .expect("plan");
    let (lo, hi) = dims[0].bounds();
    for (d, want) in [(20u64, 7u64), (1 << 20, 7), ((1 << 31) + 3, 3)] {
        let got = output_shape(&plan, &[d], Clamp::Ov).expect("shape")[0];
        assert_eq!(got, want, "dim {d}");
        let w = got as i64;
        assert!(
            lo.is_none_or(|l| l <= w) && hi.is_none_or(|h| w <= h),
            "{} excludes {w} at dim {d}",
            dims[0]
        );
    }
    // Still bounded by the 7 elements the start leaves.
    assert_eq!(hi, Some(7), "{}", dims[0]);
}
