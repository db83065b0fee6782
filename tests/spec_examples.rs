//! Layer: semantics (the seed specs' worked examples).
//!
//! The worked examples of the five seed documents (TensorFlow StridedSlice, OpenVINO
//! StridedSlice-1, the article on mask interplay, OpenVINO Slice-8, ONNX Slice), one named test
//! each. Inputs are `arange`, so selected flat indices are the element values the specs list. Where
//! a spec's prose disagrees with the runtimes, the runtimes decide: said on that test.

use slice_opt::semantics::decode::{constant, OvMasks, TfMasks};
use slice_opt::semantics::{
    gather, onnx_slice, output_shape, ov_slice8, strided_slice, Flavour, SliceError,
    StridedSliceSpec,
};

const LIMIT: u64 = 1 << 24;

fn tf(dims: &[u64], begin: &[i64], end: &[i64], strides: &[i64], m: TfMasks) -> Vec<u64> {
    let spec = StridedSliceSpec::from_tf_bits(begin, end, Some(strides), m);
    let plan = strided_slice(&spec, Flavour::Tf, dims.len()).expect("valid");
    output_shape(&plan, dims, Flavour::Tf.clamp()).expect("valid")
}

fn ov_plan(
    dims: &[u64],
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    m: OvMasks<'_>,
) -> slice_opt::semantics::SlicePlan {
    let spec = StridedSliceSpec::from_ov_lists(begin, end, Some(strides), m);
    strided_slice(&spec, Flavour::Ov, dims.len()).expect("valid")
}

fn ov(dims: &[u64], begin: &[i64], end: &[i64], strides: &[i64], m: OvMasks<'_>) -> Vec<u64> {
    output_shape(
        &ov_plan(dims, begin, end, strides, m),
        dims,
        Flavour::Ov.clamp(),
    )
    .expect("valid")
}

// ----- TensorFlow StridedSlice (seed 000) -----

/// `foo[1, 2:4, None, ..., :-3:-1, :]` on (5,5,5,5,5,5) is (2, 1, 5, 5, 2, 5).
#[test]
fn tf_worked_example_encoding() {
    let m = TfMasks {
        begin: 48,
        end: 32,
        ellipsis: 8,
        new_axis: 4,
        shrink: 1,
    };
    let shape = tf(
        &[5; 6],
        &[1, 2, 0, 0, 0, 0],
        &[2, 4, 0, 0, -3, 0],
        &[1, 1, 1, 1, -1, 1],
        m,
    );
    assert_eq!(shape, vec![2, 1, 5, 5, 2, 5]);
}

/// `foo[2, :]` on (5, 6) gives (6,); `foo[:]` on (3,) takes begin 0, end 3.
#[test]
fn tf_single_index_and_full_range() {
    let m = TfMasks {
        begin: 2,
        end: 2,
        shrink: 1,
        ..Default::default()
    };
    assert_eq!(tf(&[5, 6], &[2, 0], &[3, 0], &[1, 1], m), vec![6]);
    let m = TfMasks {
        begin: 1,
        end: 1,
        ..Default::default()
    };
    assert_eq!(tf(&[3], &[0], &[0], &[1], m), vec![3]);
}

/// `foo[-2::-1]` on `[1, 2, 3, 4]`: the doc says `[4, 3]`, but TensorFlow (and Python) give
/// `[3, 2, 1]`: the prose is wrong, the runtime decides.
#[test]
fn tf_reverse_from_second_to_last() {
    let spec = StridedSliceSpec::from_tf_bits(
        &[-2],
        &[0],
        Some(&[-1]),
        TfMasks {
            end: 1,
            ..Default::default()
        },
    );
    let plan = strided_slice(&spec, Flavour::Tf, 1).expect("valid");
    assert_eq!(
        gather(&plan, &[4], Flavour::Tf.clamp(), LIMIT).expect("valid"),
        vec![2, 1, 0]
    );
}

// ----- OpenVINO StridedSlice-1 (seed 001) -----

/// Example 1, `array[0:4, 1:4, 0:4:2, 1:4:2, 3:0:-1, 3:0:-2]` on 4^6. The spec lists 4 elements
/// `[3, 2, 1, 0]` for `3:0:-1`, but the end is exclusive (OpenVINO and Python give `[3, 2, 1]`):
/// the runtime decides, 3.
#[test]
fn ov_ss_example_basic_strides() {
    let shape = ov(
        &[4; 6],
        &[0, 1, 0, 1, 3, 3],
        &[4, 4, 4, 4, 0, 0],
        &[1, 1, 2, 2, -1, -2],
        OvMasks::default(),
    );
    assert_eq!(shape, vec![4, 3, 2, 2, 3, 2]);
}

/// Example 2, clamping: begin `[1234, 2]`, end `[1234, 4321]`, stride `[1, -1]` on (2, 2). The
/// spec claims `[1, 1]` ("begin == end gives one element"); OpenVINO's shape inference clamps
/// begin and end to the same value and gives `[0, 0]`: the runtime decides.
#[test]
fn ov_ss_example_clamping() {
    let shape = ov(
        &[2, 2],
        &[1234, 2],
        &[1234, 4321],
        &[1, -1],
        OvMasks::default(),
    );
    assert_eq!(shape, vec![0, 0]);
}

/// Example 3, `array[0:2, 0:2, 0:-1]` on (2, 3, 4) is (2, 2, 3).
#[test]
fn ov_ss_example_negative_end() {
    assert_eq!(
        ov(
            &[2, 3, 4],
            &[0, 0, 0],
            &[2, 2, -1],
            &[1, 1, 1],
            OvMasks::default()
        ),
        vec![2, 2, 3]
    );
}

/// Example 4, `array[1:, :, ::-1]` on (2, 3, 4). The spec's comment says the last axis is
/// `[3, 2, 1]` (end_mask = "0" in reverse), contradicting its own equivalence with `::-1`;
/// OpenVINO's shape inference uses `-1 - dim` for a masked reverse end: 4 elements.
#[test]
fn ov_ss_example_begin_end_masks() {
    let m = OvMasks {
        begin: &[0, 1, 1],
        end: &[1, 1, 1],
        new_axis: &[0, 0, 0],
        shrink: &[0, 0, 0],
        ellipsis: &[0, 0, 0],
    };
    let plan = ov_plan(&[2, 3, 4], &[1, 1, 123], &[0, 0, 2], &[1, 1, -1], m);
    assert_eq!(
        output_shape(&plan, &[2, 3, 4], Flavour::Ov.clamp()).expect("valid"),
        vec![1, 3, 4]
    );
    assert_eq!(plan.to_string(), "x[1:, :, ::-1]");
}

/// Example 5, `array[np.newaxis, 0:2, np.newaxis, 0:4]` on (2, 4) is (1, 2, 1, 4). (The spec's
/// XML has new_axis_mask of length 4 and the other masks of length 4 too.)
#[test]
fn ov_ss_example_new_axis() {
    let z = &[0, 0, 0, 0][..];
    let m = OvMasks {
        begin: z,
        end: z,
        new_axis: &[1, 0, 1, 0],
        shrink: z,
        ellipsis: z,
    };
    assert_eq!(
        ov(
            &[2, 4],
            &[1234, 0, -1, 0],
            &[1234, 2, 9876, 4],
            &[132, 1, 241, 1],
            m
        ),
        vec![1, 2, 1, 4]
    );
}

/// Example 6, `array[0:1, 0, 0:384, 0:640, 0:8]` on (1, 2, 384, 640, 8) is (1, 384, 640, 8).
#[test]
fn ov_ss_example_shrink() {
    let z = &[0, 0, 0, 0, 0][..];
    let m = OvMasks {
        begin: z,
        end: z,
        new_axis: z,
        shrink: &[0, 1, 0, 0, 0],
        ellipsis: z,
    };
    assert_eq!(
        ov(
            &[1, 2, 384, 640, 8],
            &[0; 5],
            &[1, 0, 384, 640, 8],
            &[1; 5],
            m
        ),
        vec![1, 384, 640, 8]
    );
}

/// Example 7, `array[0:4, ..., 0:5]`. The prose says "10D" but the XML lists 12 dims of 10; with
/// 12 dims the ellipsis covers 10 of them: (4, 10 x 10, 5).
#[test]
fn ov_ss_example_ellipsis() {
    let z = &[0, 0, 0][..];
    let m = OvMasks {
        begin: z,
        end: z,
        new_axis: z,
        shrink: z,
        ellipsis: &[0, 1, 0],
    };
    let mut want = vec![4];
    want.extend([10; 10]);
    want.push(5);
    assert_eq!(ov(&[10; 12], &[0, 0, 0], &[4, 0, 5], &[1, -1, 1], m), want);
}

/// Example 8, `array[2:, ..., np.newaxis, :10]` with masks of unequal lengths. The spec allows
/// that; OpenVINO 2026.4 refuses it ("All masks of StridedSlice must have the same size"): the
/// runtime decides, a typed error. With the masks padded to one length, the slice is
/// (8, 10 x 10, 1, 5) on 12 dims of 10 (the spec's own listing drops two of the ten).
#[test]
fn ov_ss_example_unequal_mask_lengths() {
    let (begin, end, strides) = (
        &[2, 1, 10, 10][..],
        &[123, 1, 10, 5][..],
        &[1, -1, 1, 1][..],
    );
    let m = OvMasks {
        begin: &[0, 0, 1, 1],
        end: &[1, 1, 0, 0],
        new_axis: &[0, 0, 1],
        shrink: &[0],
        ellipsis: &[0, 1],
    };
    let spec = StridedSliceSpec::from_ov_lists(begin, end, Some(strides), m);
    assert!(matches!(
        strided_slice(&spec, Flavour::Ov, 12),
        Err(SliceError::UnequalMaskLengths(_))
    ));
    let m = OvMasks {
        begin: &[0, 0, 1, 1],
        end: &[1, 1, 0, 0],
        new_axis: &[0, 0, 1, 0],
        shrink: &[0, 0, 0, 0],
        ellipsis: &[0, 1, 0, 0],
    };
    let mut want = vec![8];
    want.extend([10; 10]);
    want.extend([1, 5]);
    assert_eq!(ov(&[10; 12], begin, end, strides, m), want);
}

/// The spec's "Example" list has eight XML examples (the ninth "example" is the prose's
/// `[0, ..., 0]` on a 10D input): `array[0, ..., 0]` keeps the 8 middle dims.
#[test]
fn ov_ss_example_prose_first_and_last() {
    let z = &[0, 0, 0][..];
    let m = OvMasks {
        begin: z,
        end: z,
        new_axis: z,
        shrink: &[1, 0, 1],
        ellipsis: &[0, 1, 0],
    };
    assert_eq!(
        ov(&[10; 10], &[0, 0, 0], &[1, 0, 1], &[1, 1, 1], m),
        vec![10; 8]
    );
}

// ----- The article on mask interplay (seed 002) -----

/// Input (6, 3, 4, 10), begin [0,0,2,2], end [3,2,4,8], new_axis 0b1001, shrink 4, ellipsis 8:
/// the ellipsis bit overrides the new-axis bit at the same position, result (1, 2, 4, 10).
#[test]
fn article_example_ellipsis_overrides_new_axis() {
    let m = TfMasks {
        new_axis: 0b1001,
        shrink: 4,
        ellipsis: 8,
        ..Default::default()
    };
    assert_eq!(
        tf(
            &[6, 3, 4, 10],
            &[0, 0, 2, 2],
            &[3, 2, 4, 8],
            &[1, 1, 1, 1],
            m
        ),
        vec![1, 2, 4, 10]
    );
}

/// Same input, ellipsis 4: the ellipsis bit overrides the shrink bit, result (1, 2, 3, 4, 10, 1).
#[test]
fn article_example_ellipsis_overrides_shrink() {
    let m = TfMasks {
        new_axis: 0b1001,
        shrink: 4,
        ellipsis: 4,
        ..Default::default()
    };
    assert_eq!(
        tf(
            &[6, 3, 4, 10],
            &[0, 0, 2, 2],
            &[3, 2, 4, 8],
            &[1, 1, 1, 1],
            m
        ),
        vec![1, 2, 3, 4, 10, 1]
    );
}

// ----- OpenVINO Slice-8 (seed 003) -----

fn slice8(
    dims: &[u64],
    start: &[i64],
    stop: &[i64],
    step: &[i64],
    axes: Option<&[i64]>,
) -> (Vec<u64>, Vec<u64>) {
    let plan = ov_slice8(
        &constant(start),
        &constant(stop),
        Some(&constant(step)),
        axes,
        dims.len(),
    )
    .expect("valid");
    let clamp = Flavour::Ov.clamp();
    (
        output_shape(&plan, dims, clamp).expect("valid"),
        gather(&plan, dims, clamp, LIMIT).expect("valid"),
    )
}

#[test]
fn slice8_example_01_basic() {
    assert_eq!(
        slice8(&[10], &[1], &[8], &[1], Some(&[0])),
        (vec![7], vec![1, 2, 3, 4, 5, 6, 7])
    );
}
#[test]
fn slice8_example_02_axes_default() {
    assert_eq!(
        slice8(&[10], &[1], &[8], &[1], None),
        (vec![7], vec![1, 2, 3, 4, 5, 6, 7])
    );
}
#[test]
fn slice8_example_03_step_2() {
    assert_eq!(
        slice8(&[10], &[1], &[8], &[2], Some(&[0])),
        (vec![4], vec![1, 3, 5, 7])
    );
}
#[test]
fn slice8_example_04_out_of_bounds() {
    assert_eq!(
        slice8(&[10], &[-100], &[100], &[1], Some(&[0])),
        (vec![10], (0..10).collect())
    );
}
#[test]
fn slice8_example_05_backward_all() {
    assert_eq!(
        slice8(&[10], &[9], &[-11], &[-1], Some(&[0])),
        (vec![10], (0..10).rev().collect())
    );
}
#[test]
fn slice8_example_06_backward_stop_0() {
    assert_eq!(
        slice8(&[10], &[9], &[0], &[-1], Some(&[0])),
        (vec![9], (1..10).rev().collect())
    );
}
#[test]
fn slice8_example_07_backward_stop_minus_10() {
    assert_eq!(
        slice8(&[10], &[9], &[-10], &[-1], Some(&[0])),
        (vec![9], (1..10).rev().collect())
    );
}
#[test]
fn slice8_example_08_backward_step_2() {
    assert_eq!(
        slice8(&[10], &[9], &[-11], &[-2], Some(&[0])),
        (vec![5], vec![9, 7, 5, 3, 1])
    );
}
#[test]
fn slice8_example_09_backward_out_of_bounds() {
    assert_eq!(
        slice8(&[10], &[100], &[-100], &[-1], Some(&[0])),
        (vec![10], (0..10).rev().collect())
    );
}
#[test]
fn slice8_example_10_2d() {
    assert_eq!(
        slice8(&[2, 5], &[0, 1], &[2, 4], &[1, 2], Some(&[0, 1])),
        (vec![2, 2], vec![1, 3, 6, 8])
    );
}
#[test]
fn slice8_example_11_3d_all_axes() {
    assert_eq!(
        slice8(
            &[20, 10, 5],
            &[0, 0, 0],
            &[4, 10, 5],
            &[1, 1, 1],
            Some(&[0, 1, 2])
        )
        .0,
        vec![4, 10, 5]
    );
}
#[test]
fn slice8_example_12_3d_last_axis_default() {
    assert_eq!(
        slice8(&[20, 10, 5], &[0, 0], &[4, 10], &[1, 1], Some(&[0, 1])).0,
        vec![4, 10, 5]
    );
}

// ----- ONNX Slice (seed 004) -----

fn onnx(
    dims: &[u64],
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
    opset: u32,
) -> (Vec<u64>, Vec<u64>) {
    let steps = steps.map(constant);
    let plan = onnx_slice(
        &constant(starts),
        &constant(ends),
        axes,
        steps.as_deref(),
        dims.len(),
        opset,
    )
    .expect("valid");
    let clamp = Flavour::Ov.clamp();
    (
        output_shape(&plan, dims, clamp).expect("valid"),
        gather(&plan, dims, clamp, LIMIT).expect("valid"),
    )
}

/// Example 1 (opset 10+): data [[1,2,3,4],[5,6,7,8]], axes [0,1], starts [1,0], ends [2,3],
/// steps [1,2] → [[5, 7]] (flat indices 4 and 6).
#[test]
fn onnx_example_1_steps() {
    for opset in [10, 11, 13] {
        assert_eq!(
            onnx(
                &[2, 4],
                &[1, 0],
                &[2, 3],
                Some(&[0, 1]),
                Some(&[1, 2]),
                opset
            ),
            (vec![1, 2], vec![4, 6])
        );
    }
}

/// Example 2: starts [0,1], ends [-1,1000] → [[2, 3, 4]] (flat indices 1, 2, 3), every opset.
#[test]
fn onnx_example_2_negative_and_large_ends() {
    for opset in [1, 10, 11, 13] {
        assert_eq!(
            onnx(&[2, 4], &[0, 1], &[-1, 1000], None, None, opset),
            (vec![1, 3], vec![1, 2, 3])
        );
    }
}

/// Slice-1 example 1 (no steps): axes [0,1], starts [1,0], ends [2,3] → [[5, 6, 7]].
#[test]
fn onnx_slice1_example_1_attributes() {
    assert_eq!(
        onnx(&[2, 4], &[1, 0], &[2, 3], Some(&[0, 1]), None, 1),
        (vec![1, 3], vec![4, 5, 6])
    );
    let e = onnx_slice(
        &constant(&[0]),
        &constant(&[1]),
        None,
        Some(&constant(&[1])),
        2,
        9,
    );
    assert!(matches!(e, Err(SliceError::StepsUnsupported { .. })));
}

/// `steps` cannot be 0 (versions 10+).
#[test]
fn onnx_zero_step_is_an_error() {
    let e = onnx_slice(
        &constant(&[0]),
        &constant(&[1]),
        None,
        Some(&constant(&[0])),
        2,
        13,
    );
    assert!(matches!(e, Err(SliceError::ZeroStep { .. })));
}
