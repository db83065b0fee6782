//! The semantics core: random StridedSlice (TF and OV flavours, TF bit masks or OV mask lists),
//! ONNX Slice (any opset) and OpenVINO Slice-8 parameters on a small input shape → decode,
//! output shape, symbolic and concrete resolution, gather. Errors are fine; panics are findings,
//! and so is any disagreement between the shape inferred and the indices gathered.
#![no_main]

use std::collections::HashMap;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use slice_opt::semantics::decode::{OvMasks, TfMasks};
use slice_opt::semantics::{
    gather, onnx_slice, output_shape, ov_slice8, resolve_concrete, resolve_dims, strided_slice,
    Clamp, Dim, Flavour, SlicePlan, StridedSliceSpec,
};

/// Gather limit: small input shapes stay far below it, so gather never refuses them.
const LIMIT: u64 = 1 << 16;

/// A parameter value, biased towards the interesting ones.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Val {
    Small(i8),
    Any(i64),
    Min,
    Max,
    I32Min,
    I32Max,
}

impl Val {
    fn get(self) -> i64 {
        match self {
            Val::Small(v) => v as i64,
            Val::Any(v) => v,
            Val::Min => i64::MIN,
            Val::Max => i64::MAX,
            Val::I32Min => i32::MIN as i64,
            Val::I32Max => i32::MAX as i64,
        }
    }
}

/// A value that may also be non-constant (`None` in the decoders).
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Param {
    Const(Val),
    Dynamic,
}

impl Param {
    fn get(self) -> Option<i64> {
        match self {
            Param::Const(v) => Some(v.get()),
            Param::Dynamic => None,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum InDim {
    /// 0..=6
    Small(u8),
    /// Anything (the no-panic checks only).
    Huge(u64),
}

#[derive(Arbitrary, Debug)]
enum Masks {
    TfBits([Val; 5]),
    OvLists([Vec<Val>; 5]),
}

#[derive(Arbitrary, Debug)]
enum Op {
    StridedSlice {
        begin: Vec<Param>,
        end: Vec<Param>,
        strides: Option<Vec<Param>>,
        masks: Masks,
        ov: bool,
    },
    OnnxSlice {
        starts: Vec<Param>,
        ends: Vec<Param>,
        axes: Option<Vec<Val>>,
        steps: Option<Vec<Param>>,
        opset: u8,
    },
    Slice8 {
        starts: Vec<Param>,
        stops: Vec<Param>,
        steps: Option<Vec<Param>>,
        axes: Option<Vec<Val>>,
    },
}

#[derive(Arbitrary, Debug)]
struct Input {
    dims: Vec<InDim>,
    op: Op,
}

fn params(v: &[Param]) -> Vec<Option<i64>> {
    v.iter().map(|p| p.get()).collect()
}

fn vals(v: &[Val]) -> Vec<i64> {
    v.iter().map(|p| p.get()).collect()
}

fn decode(op: &Op, rank: usize) -> Option<(SlicePlan, Clamp)> {
    match op {
        Op::StridedSlice {
            begin,
            end,
            strides,
            masks,
            ov,
        } => {
            let flavour = if *ov { Flavour::Ov } else { Flavour::Tf };
            let ov_lists: [Vec<i64>; 5];
            let mut spec = match masks {
                Masks::TfBits(m) => StridedSliceSpec::from_tf_bits(
                    &[],
                    &[],
                    None,
                    TfMasks {
                        begin: m[0].get(),
                        end: m[1].get(),
                        ellipsis: m[2].get(),
                        new_axis: m[3].get(),
                        shrink: m[4].get(),
                    },
                ),
                Masks::OvLists(m) => {
                    ov_lists = [
                        vals(&m[0]),
                        vals(&m[1]),
                        vals(&m[2]),
                        vals(&m[3]),
                        vals(&m[4]),
                    ];
                    StridedSliceSpec::from_ov_lists(
                        &[],
                        &[],
                        None,
                        OvMasks {
                            begin: &ov_lists[0],
                            end: &ov_lists[1],
                            ellipsis: &ov_lists[2],
                            new_axis: &ov_lists[3],
                            shrink: &ov_lists[4],
                        },
                    )
                }
            };
            spec.begin = params(begin);
            spec.end = params(end);
            spec.strides = strides.as_deref().map(params);
            let plan = strided_slice(&spec, flavour, rank).ok()?;
            Some((plan, flavour.clamp()))
        }
        Op::OnnxSlice {
            starts,
            ends,
            axes,
            steps,
            opset,
        } => {
            let axes = axes.as_deref().map(vals);
            let steps = steps.as_deref().map(params);
            let plan = onnx_slice(
                &params(starts),
                &params(ends),
                axes.as_deref(),
                steps.as_deref(),
                rank,
                *opset as u32,
            )
            .ok()?;
            Some((plan, Clamp::Ov))
        }
        Op::Slice8 {
            starts,
            stops,
            steps,
            axes,
        } => {
            let axes = axes.as_deref().map(vals);
            let steps = steps.as_deref().map(params);
            let plan = ov_slice8(
                &params(starts),
                &params(stops),
                steps.as_deref(),
                axes.as_deref(),
                rank,
            )
            .ok()?;
            Some((plan, Clamp::Ov))
        }
    }
}

fuzz_target!(|input: Input| {
    let dims: Vec<u64> = input
        .dims
        .iter()
        .take(6)
        .map(|d| match *d {
            InDim::Small(v) => (v % 7) as u64,
            InDim::Huge(v) => v,
        })
        .collect();
    let Some((plan, clamp)) = decode(&input.op, dims.len()) else {
        return;
    };
    // Printing never panics.
    let _ = plan.to_string();
    let _ = plan.to_python();
    let _ = slice_opt::check::python_notation(&plan);
    assert_eq!(plan.input_rank, dims.len());

    let symbolic: Vec<Dim> = dims
        .iter()
        .map(|&d| match i64::try_from(d) {
            Ok(v) => Dim::known(v),
            Err(_) => Dim::unknown(),
        })
        .collect();
    let inferred = resolve_dims(&plan, &symbolic, clamp);
    if let Ok(out) = &inferred {
        assert_eq!(out.len(), plan.output_rank());
    }
    let small = dims.iter().all(|&d| d <= 6);
    if !small {
        let _ = output_shape(&plan, &dims, clamp);
        let _ = gather(&plan, &dims, clamp, LIMIT);
        return;
    }

    // Concrete: shape inferred == shape gathered.
    let shape = output_shape(&plan, &dims, clamp);
    let resolved = resolve_concrete(&plan, &dims, clamp);
    let gathered = gather(&plan, &dims, clamp, LIMIT);
    assert_eq!(shape.is_ok(), resolved.is_ok(), "{plan:?} {dims:?}");
    if !plan.is_constant() {
        assert!(shape.is_err(), "non-constant plan resolved: {plan:?}");
        return;
    }
    match (&shape, &gathered) {
        (Ok(shape), Ok(idx)) => {
            assert_eq!(shape.len(), plan.output_rank());
            assert_eq!(
                shape.iter().product::<u64>(),
                idx.len() as u64,
                "{plan:?} {dims:?}"
            );
            let total: u64 = dims.iter().product();
            assert!(idx.iter().all(|&i| i < total), "{plan:?} {dims:?}");
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        (a, b) => panic!("output_shape {a:?} but gather {b:?} for {plan:?} on {dims:?}"),
    }
    // Numeric inference through the symbolic path (known dims) agrees with the concrete one.
    match (&inferred, &shape) {
        (Ok(sym), Ok(shape)) => {
            let got: Vec<Option<i64>> = sym.iter().map(|d| d.as_known()).collect();
            let want: Vec<Option<i64>> = shape.iter().map(|&d| Some(d as i64)).collect();
            assert_eq!(got, want, "{plan:?} on {dims:?}");
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!("resolve_dims {a:?} but output_shape {b:?} for {plan:?} on {dims:?}"),
    }
    // Symbols bound to the dims evaluate to the same shape.
    if let Ok(shape) = &shape {
        let syms: Vec<Dim> = (0..dims.len())
            .map(|i| Dim::symbol(&format!("d{i}")))
            .collect();
        let bind: HashMap<String, i64> = dims
            .iter()
            .enumerate()
            .map(|(i, &d)| (format!("d{i}"), d as i64))
            .collect();
        let sym = resolve_dims(&plan, &syms, clamp).expect("symbolic resolution of a valid plan");
        let got: Vec<Option<i64>> = sym.iter().map(|d| d.eval(&bind)).collect();
        let want: Vec<Option<i64>> = shape.iter().map(|&d| Some(d as i64)).collect();
        assert_eq!(got, want, "{plan:?} on {dims:?}");
    }
});
