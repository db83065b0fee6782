#!/usr/bin/env python3
"""Fixtures of tests/fold_known.rs (issue 43): integer values that values inference knows
exactly on a graph with symbolic inputs (a static dim inside a symbolic shape), which `fold`
turns into constants, and values it must leave (symbolic, or computed in a narrow type that
wraps in the runtime).

Each model has one float input `x` with a symbolic first dim and one integer output `v`. The
expected value of `v` is what ONNX Runtime / OpenVINO CPU computes, at every size of the
symbolic dim in SIZES: a case whose runtime value changes with the size is written as
`"folds": false` (the value must not be folded), one whose value is the same at every size as
`"folds": true` with that value. A refusal case also records the runtime's value at size 1 and
the value a fold that ignores wrapping would give, which must differ.

Usage: /work/venv-exports/bin/python tools/gen_fold_known.py  (writes tests/data/fold_known/)
"""

import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper as h

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests/data/fold_known")
SIZES = [1, 4, 7]
I64 = TensorProto.INT64


def c(name, vals, dtype=I64, dims=None):
    arr = np.array(vals)
    return h.make_tensor(name, dtype, list(arr.shape) if dims is None else dims, arr.ravel().tolist())


def onnx_model(name, nodes, inits, out_type, opset=13, x_dims=("batch", 3, 16)):
    g = h.make_graph(
        nodes,
        name,
        [h.make_tensor_value_info("x", TensorProto.FLOAT, list(x_dims))],
        [h.make_tensor_value_info("v", out_type, None)],
        inits,
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    path = os.path.join(OUT, name + ".onnx")
    onnx.save(m, path)
    return path


def ort_values(path):
    import onnxruntime as ort

    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return [s.run(None, {"x": np.zeros((b, 3, 16), np.float32)})[0] for b in SIZES]


def ov_values(path):
    import openvino as ov

    core = ov.Core()
    cm = core.compile_model(core.read_model(path), "CPU")
    return [cm([np.zeros((b, 3, 16), np.float32)])[cm.outputs[0]] for b in SIZES]


def record(cases, file, values, extra=None):
    first = np.asarray(values[0])
    same = all(np.array_equal(first, np.asarray(v)) and np.asarray(v).shape == first.shape for v in values)
    case = {"folds": bool(same)}
    if same:
        case.update(
            dtype=str(first.dtype),
            shape=list(first.shape),
            values=[int(v) for v in first.ravel()],
        )
    else:
        case["values_by_size"] = {str(b): np.asarray(v).ravel().astype(np.int64).tolist() for b, v in zip(SIZES, values)}
    if extra:
        case.update(extra)
    cases[file] = case


def main():
    os.makedirs(OUT, exist_ok=True)
    cases = {}
    shape = h.make_node("Shape", ["x"], ["s"])

    # 1. Gather of the static dim of a symbolic shape.
    p = onnx_model("gather_static_dim", [shape, h.make_node("Gather", ["s", "two"], ["v"])],
                   [c("two", 2, dims=[])], I64)
    record(cases, os.path.basename(p), ort_values(p))

    # 2. A Slice of a Shape that reads only static dims (a slice folded from the facts).
    p = onnx_model("shape_slice_static", [shape, h.make_node("Slice", ["s", "b", "e"], ["v"])],
                   [c("b", [1]), c("e", [3])], I64)
    record(cases, os.path.basename(p), ort_values(p))

    # 3. Half the last dim (rotate_half's split point in llama-style exports).
    p = onnx_model("half_last_dim", [shape, h.make_node("Gather", ["s", "last"], ["d"]),
                                     h.make_node("Div", ["d", "two"], ["q"]),
                                     h.make_node("Unsqueeze", ["q", "zero"], ["v"])],
                   [c("last", -1, dims=[]), c("two", 2, dims=[]), c("zero", [0])], I64)
    record(cases, os.path.basename(p), ort_values(p))

    # 4. Concat of the two static dims, through Cast to int32 and back.
    p = onnx_model("concat_static_int32", [shape, h.make_node("Cast", ["s"], ["s32"], to=TensorProto.INT32),
                                           h.make_node("Gather", ["s32", "i1"], ["a"]),
                                           h.make_node("Gather", ["s32", "i2"], ["b"]),
                                           h.make_node("Concat", ["a", "b"], ["v"], axis=0)],
                   [c("i1", [1]), c("i2", [2])], TensorProto.INT32)
    record(cases, os.path.basename(p), ort_values(p))

    # 5. d - d of the symbolic dim: 0 at every size.
    p = onnx_model("symbol_minus_itself", [shape, h.make_node("Gather", ["s", "i0"], ["d"]),
                                           h.make_node("Sub", ["d", "d"], ["v"])],
                   [c("i0", 0, dims=[])], I64)
    record(cases, os.path.basename(p), ort_values(p))

    # 6. A dim against -1 (`expand(-1)` in HF masks): never equal.
    p = onnx_model("dim_equal_minus_one", [shape, h.make_node("Equal", ["s", "m1"], ["v"])],
                   [c("m1", [-1])], TensorProto.BOOL)
    record(cases, os.path.basename(p), ort_values(p))

    # 7. Refusal: the symbolic dim itself.
    p = onnx_model("symbolic_dim", [shape, h.make_node("Gather", ["s", "i0"], ["v"])],
                   [c("i0", 0, dims=[])], I64)
    record(cases, os.path.basename(p), ort_values(p))

    # 8. Refusal: int32 arithmetic that wraps in the runtime. d + INT32_MAX has its lower bound
    # in range, so `Less(d + INT32_MAX, 0)` is false for unbounded integers, but the runtime's
    # int32 sum wraps for every d >= 1 and gives true.
    imax = np.iinfo(np.int32).max
    p = onnx_model("int32_wrap", [shape, h.make_node("Cast", ["s"], ["s32"], to=TensorProto.INT32),
                                  h.make_node("Gather", ["s32", "i0"], ["d"]),
                                  h.make_node("Add", ["d", "big"], ["w"]),
                                  h.make_node("Less", ["w", "z"], ["v"])],
                   [c("i0", [0]), c("big", [imax], TensorProto.INT32), c("z", [0], TensorProto.INT32)],
                   TensorProto.BOOL)
    vals = ort_values(p)
    assert all(bool(v[0]) for v in vals), "the runtime's int32 sum wraps"
    # The runtime's value is the same at every size (true), but only through the wrap, which
    # the facts do not follow: `fold` must leave it (`keep`), never write the unwrapped false.
    record(cases, os.path.basename(p), vals, {"unwrapped_value": [0], "keep": True})

    # Reshapes whose target is computed from the input's shape (`reshape(x, concat([shape(x)[:1],
    # [-1]]))`): the output shape ONNX Runtime gives at every size, written to a file of its own
    # (reshapes.json) for the test that checks the constant target `fold` gives instead.
    reshapes = {}
    for name, dims, ends in (("reshape_one_unknown", ("batch", 3, 16), [1]),
                             ("reshape_two_unknown", ("batch", "seq", 16), [2])):
        p = onnx_model(name, [shape, h.make_node("Slice", ["s", "z", "e"], ["head"]),
                              h.make_node("Concat", ["head", "m1"], ["t"], axis=0),
                              h.make_node("Reshape", ["x", "t"], ["v"])],
                       [c("z", [0]), c("e", ends), c("m1", [-1])], TensorProto.FLOAT, x_dims=dims)
        import onnxruntime as ort

        sess = ort.InferenceSession(p, providers=["CPUExecutionProvider"])
        shapes = {}
        for b in SIZES:
            xs = [b if d in ("batch", "seq") else d for d in dims]
            shapes[str(b)] = {"input": xs, "output": list(sess.run(None, {"x": np.zeros(xs, np.float32)})[0].shape)}
        reshapes[os.path.basename(p)] = {"folds": len([d for d in dims if isinstance(d, str)]) <= 1, "shapes": shapes}
    with open(os.path.join(OUT, "reshapes.json"), "w") as f:
        json.dump(reshapes, f, indent=1, sort_keys=True)
        f.write("\n")

    # IR (OpenVINO): ShapeOf + Gather, ShapeOf + StridedSlice.
    import openvino as ov
    from openvino import opset8
    from openvino.opset4 import ops as opset4_ops

    def ir(name, build):
        x = opset8.parameter(ov.PartialShape([-1, 3, 16]), np.float32, name="x")
        v = build(opset8.shape_of(x, "i64"))
        v.get_output_tensor(0).set_names({"v"})
        m = ov.Model([v], [x], name)
        path = os.path.join(OUT, name + ".xml")
        ov.save_model(m, path, compress_to_fp16=False)
        return path

    i64 = lambda a: opset8.constant(np.array(a, np.int64))
    p = ir("ir_gather_static_dim", lambda s: opset8.gather(s, i64(2), i64(0)))
    record(cases, os.path.basename(p), ov_values(p))
    p = ir("ir_strided_slice_static", lambda s: opset8.strided_slice(s, i64([1]), i64([3]), i64([1]), [0], [0]))
    record(cases, os.path.basename(p), ov_values(p))
    p = ir("ir_symbolic_dim", lambda s: opset8.gather(s, i64([0]), i64(0)))
    record(cases, os.path.basename(p), ov_values(p))
    # Range-4's `output_type` (i64) over an i32 start and step, as OpenVINO's PyTorch front end
    # writes `torch.arange(x.size(2))`, then Unsqueeze: the folded constant has the type Range says.
    i32 = lambda a: opset8.constant(np.array(a, np.int32))
    p = ir("ir_range_output_type",
           lambda s: opset8.unsqueeze(
               opset4_ops.range(i32(0), opset8.gather(s, i64(2), i64(0)), i32(1), output_type="i64"),
               i64(0)))
    record(cases, os.path.basename(p), ov_values(p))

    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(cases, f, indent=1, sort_keys=True)
        f.write("\n")
    for k, v in sorted(cases.items()):
        print(k, v)


if __name__ == "__main__":
    main()
