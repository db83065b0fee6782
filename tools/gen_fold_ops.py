"""Fixtures of issue 43's fold rows: one small model per case, every input a constant, and the
value a real runtime computes for it, for `tests/fold_ops.rs`.

ONNX: a one-node model whose inputs are initializers; the expected output is what ONNX Runtime
(all graph optimizations off) gives for the same node with the same values fed as inputs.
Also two ONNX chains over a fixed-size input whose dims only inference knows (`facts_*`).
IR: a one-op OpenVINO model over `Constant`s (opset 13 ops through `openvino.opset13`), saved
with `ov.save_model`; the expected output is what OpenVINO CPU gives for that model.

Writes tests/data/fold_ops/{NAME.onnx, NAME.xml/.bin} and tests/data/fold_ops/expected.json
(per file: dtype name, shape, values as a flat list; floats as strings (`-inf`), booleans as
0/1).

Usage: /work/venv-exports/bin/python tools/gen_fold_ops.py
"""

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "fold_ops")

I64, I32, I8, B, F, D = np.int64, np.int32, np.int8, np.bool_, np.float32, np.float64


def a(v, dt):
    return np.array(v, dtype=dt)


# name, op, inputs (None = omitted), attributes
ONNX_CASES = [
    ("equal_i64", "Equal", [a([[1, 2, 3]], I64), a([[1], [3]], I64)], {}),
    ("less_i32", "Less", [a([-5, 0, 7], I32), a(0, I32)], {}),
    ("less_or_equal", "LessOrEqual", [a([1, 2, 3], I64), a([2, 2, 2], I64)], {}),
    ("greater", "Greater", [a([[1, 5], [9, -2]], I64), a([4, 0], I64)], {}),
    ("greater_or_equal", "GreaterOrEqual", [a([1, 2, 3], I64), a(2, I64)], {}),
    ("equal_bool", "Equal", [a([True, False, True], B), a([True, True, False], B)], {}),
    ("and", "And", [a([[True, False], [True, True]], B), a([True, False], B)], {}),
    ("or", "Or", [a([True, False, False], B), a([False, False, True], B)], {}),
    ("xor", "Xor", [a([True, False, True], B), a(True, B)], {}),
    ("not", "Not", [a([[True, False]], B)], {}),
    ("neg_i64", "Neg", [a([3, -4, 0], I64)], {}),
    ("neg_i8_wraps", "Neg", [a([-128, 5, -7], I8)], {}),
    ("abs_i32", "Abs", [a([-3, 4, -2147483647], I32)], {}),
    ("min_variadic", "Min", [a([5, 1, 9], I64), a(4, I64), a([[7], [0]], I64)], {}),
    ("max_i32", "Max", [a([5, -1, 9], I32), a([6, -3, 2], I32)], {}),
    ("mod_floor", "Mod", [a([-7, 7, -7, 7, 6], I64), a([2, -2, -2, 2, 3], I64)], {}),
    ("mod_fmod", "Mod", [a([-7, 7, -7, 7, 6], I64), a([2, -2, -2, 2, 3], I64)], {"fmod": 1}),
    ("mod_i32", "Mod", [a([-9, 9, 10], I32), a(4, I32)], {}),
    ("where_i64", "Where", [a([[True, False, True]], B), a([1, 2, 3], I64), a([[10], [20]], I64)], {}),
    ("where_f32", "Where", [a([[True, False], [False, True]], B), a(-np.inf, F), a([0.0, 1.5], F)], {}),
    ("expand_i64", "Expand", [a([[1], [2]], I64), a([2, 3], I64)], {}),
    ("expand_bidir", "Expand", [a([[1, 2, 3]], I32), a([2, 1], I64)], {}),
    ("expand_f32_rank_up", "Expand", [a([0.5, -1.0], F), a([3, 1, 2], I64)], {}),
    ("trilu_upper", "Trilu", [a(np.arange(1, 13).reshape(3, 4), I64)], {}),
    ("trilu_lower_k", "Trilu", [a(np.arange(1, 13).reshape(3, 4), I64), a(-1, I64)], {"upper": 0}),
    ("trilu_upper_k2_batched", "Trilu", [a(np.arange(1, 19).reshape(2, 3, 3), F), a(1, I64)], {}),
    ("reduce_prod_all", "ReduceProd", [a([2, 3, 4], I64)], {"keepdims": 0}),
    ("reduce_prod_axes_attr", "ReduceProd", [a([[1, 2, 3], [4, 5, 6]], I64)], {"axes": [1]}),
    ("reduce_sum_axes_input", "ReduceSum", [a([[1, 2, 3], [4, 5, 6]], I64), a([0], I64)], {"keepdims": 0}),
    ("reduce_sum_neg_axis", "ReduceSum", [a([[1, 2, 3], [4, 5, 6]], I32), a([-1], I64)], {}),
    ("size", "Size", [a(np.zeros((2, 3, 4)), F)], {}),
    # Float arithmetic of shape chains (tf2onnx, optimum): in the type, IEEE rounding.
    ("add_f32", "Add", [a([0.1, 1e8, 16777216.0], F), a([0.2, 3.0, 1.0], F)], {}),
    ("sub_f32", "Sub", [a([[1.0], [0.3]], F), a([0.1, 1e-8], F)], {}),
    ("mul_f32", "Mul", [a([4097.0, 1.1, -0.0], F), a(4097.0, F)], {}),
    ("div_f32", "Div", [a([1.0, 7.0, -1.0, 10.0], F), a([3.0, 2.0, 0.0, 3.0], F)], {}),
    ("div_f64", "Div", [a([1.0, 7.0, 10.0], D), a(3.0, D)], {}),
    ("max_f32", "Max", [a([0.5, -1.0, 3.0], F), a(0.0, F), a([[1.0], [-7.5]], F)], {}),
    ("min_f32", "Min", [a([0.5, -1.0, 3.0], F), a([1.0, -2.0, 3.0], F)], {}),
    ("neg_f32", "Neg", [a([1.5, -0.0, -3.0], F)], {}),
    ("abs_f32", "Abs", [a([1.5, -0.0, -3.25], F)], {}),
    ("floor_f32", "Floor", [a([1.5, -1.5, 2.0, -0.2, 1e10], F)], {}),
    ("ceil_f32", "Ceil", [a([1.5, -1.5, 2.0, -0.2, 1e10], F)], {}),
    ("sqrt_f32", "Sqrt", [a([2.0, 64.0, 0.0, 1e-3], F)], {}),
    ("reciprocal_f32", "Reciprocal", [a([3.0, -0.5, 7.0], F)], {}),
    ("round_f32", "Round", [a([0.5, 1.5, 2.5, -2.5, 2.4999998, -0.7], F)], {}),
    ("clip_i64", "Clip", [a([-5, 0, 5, 12], I64), a(0, I64), a(10, I64)], {}),
    ("clip_f32_max_only", "Clip", [a([-5.5, 0.0, 5.5], F), None, a(1.25, F)], {}),
    ("clip_min_over_max", "Clip", [a([-5, 0, 5], I32), a(4, I32), a(2, I32)], {}),
    ("range_f32", "Range", [a(0.1, F), a(1.0, F), a(0.1, F)], {}),
    ("range_f32_down", "Range", [a(3.0, F), a(-1.0, F), a(-0.7, F)], {}),
    ("cast_f32_to_i32", "Cast", [a([2.7, -2.7, -0.5, 1e9], F)], {"to": onnx.TensorProto.INT32}),
    ("cast_f32_to_i64", "Cast", [a([3.999999, -7.25, 65536.5], F)], {"to": onnx.TensorProto.INT64}),
    # 2^60 + 2^36 + 1: to f32 in one rounding is 2^60 + 2^37; through f64 it would be 2^60.
    ("cast_i64_to_f32", "Cast", [a([2**60 + 2**36 + 1, -3, 16777217], I64)], {"to": onnx.TensorProto.FLOAT}),
    ("cast_i64_to_f64", "Cast", [a([2**53 + 1, 5], I64)], {"to": onnx.TensorProto.DOUBLE}),
    ("less_f32", "Less", [a([0.1, -0.0, 2.0], F), a([0.2, 0.0, 1.0], F)], {}),
    ("equal_f32", "Equal", [a([0.1, -0.0, 2.0], F), a([0.1, 0.0, 2.5], F)], {}),
    ("greater_or_equal_f64", "GreaterOrEqual", [a([0.1, -1.0, 2.0], D), a(0.1, D)], {}),
    ("pow_f32_exact", "Pow", [a([16.0, 2.25, 3.0, -2.0], F), a([0.5, 0.5, 3.0, 3.0], F)], {}),
    ("transpose_f32", "Transpose", [a(np.arange(24).reshape(2, 3, 4), F)], {"perm": [2, 0, 1]}),
    ("transpose_default", "Transpose", [a(np.arange(6).reshape(2, 3), I64)], {}),
]

ONNX_OPSET = {"ReduceProd": 13, "Trilu": 14}


def onnx_case(name, op, inputs, attrs):
    opset = ONNX_OPSET.get(op, 13)
    names = ["" if v is None else f"i{k}" for k, v in enumerate(inputs)]
    node = helper.make_node(op, names, ["y"], name=op.lower(), **attrs)
    out = onnx.ValueInfoProto(name="y")
    # What ONNX Runtime computes: the same node with the values fed as graph inputs.
    feeds = {n: v for n, v in zip(names, inputs) if v is not None}
    gin = [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
        for n, v in feeds.items()
    ]
    run = helper.make_model(helper.make_graph([node], name, gin, [out]),
                            opset_imports=[helper.make_opsetid("", opset)])
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(run.SerializeToString(), so, providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, feeds)
    # The fixture: the same node over initializers.
    inits = [numpy_helper.from_array(v, n) for n, v in feeds.items()]
    m = helper.make_model(helper.make_graph([node], name, [], [out], initializer=inits),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(OUT, f"{name}.onnx"))
    return y


def facts_cases():
    """Issue 43 item 2: shape plumbing on a value whose dims only inference knows (a `Relu` of a
    fixed-size input, no `value_info`): `Shape` (with `start`), `Size` and what follows fold."""
    x = helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(np.dtype(F)), [2, 3, 4])
    c = lambda n, v: helper.make_node("Constant", [], [n], value=numpy_helper.from_array(np.array(v, I64)))  # noqa: E731
    chains = {
        "facts_shape_gather_mul": [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("Shape", ["r"], ["s"]),
            c("one", [1]),
            helper.make_node("Gather", ["s", "one"], ["g"], axis=0),
            c("two", 2),
            helper.make_node("Mul", ["g", "two"], ["m"]),
            helper.make_node("Concat", ["s", "m"], ["y"], axis=0),
        ],
        "facts_shape_start_size": [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("Shape", ["r"], ["s"], start=1),
            helper.make_node("Size", ["r"], ["n"]),
            helper.make_node("Unsqueeze", ["n", "zero"], ["nu"]),
            c("zero", [0]),
            helper.make_node("Concat", ["s", "nu"], ["y"], axis=0),
        ],
    }
    out = []
    for name, nodes in chains.items():
        # Topological order: constants first.
        nodes = [n for n in nodes if n.op_type == "Constant"] + [n for n in nodes if n.op_type != "Constant"]
        m = helper.make_model(helper.make_graph(nodes, name, [x], [onnx.ValueInfoProto(name="y")]),
                              opset_imports=[helper.make_opsetid("", 15)])
        m.ir_version = 8
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        (y,) = sess.run(None, {"x": np.random.default_rng(0).standard_normal((2, 3, 4)).astype(F)})
        onnx.save(m, os.path.join(OUT, f"{name}.onnx"))
        out.append((f"{name}.onnx", y))
    return out


def if_cases():
    """Issue 43: an `If` whose condition folds (Equal of a dim of a fixed-size input) is replaced
    by the branch it takes, which folds in turn. The branches read an outer initializer and name
    their values like each other's (`t`, `u`)."""
    x = helper.make_tensor_value_info("x", helper.np_dtype_to_tensor_dtype(np.dtype(F)), [2, 3])
    a = numpy_helper.from_array(a_([1.5, 2.5, 3.5], F), "a")
    c = lambda n, v, dt=I64: helper.make_node("Constant", [], [n], value=numpy_helper.from_array(a_(v, dt)))  # noqa: E731

    def branch(name, nodes, out):
        return helper.make_graph(nodes, name, [], [onnx.ValueInfoProto(name=out)])

    then_b = branch("then", [c("t", [10.0, 20.0, 30.0], F), helper.make_node("Add", ["a", "t"], ["u"])], "u")
    else_b = branch("else", [c("t", [2.0, 2.0, 2.0], F), helper.make_node("Mul", ["a", "t"], ["u"])], "u")
    out = []
    for name, want in [("if_then", 2), ("if_else", 3)]:
        nodes = [
            helper.make_node("Shape", ["x"], ["s"]),
            c("zero", 0),
            helper.make_node("Gather", ["s", "zero"], ["d0"], axis=0),
            c("want", want),
            helper.make_node("Equal", ["d0", "want"], ["cond"]),
            helper.make_node("If", ["cond"], ["y"], name="the_if", then_branch=then_b, else_branch=else_b),
        ]
        m = helper.make_model(helper.make_graph(nodes, name, [x], [onnx.ValueInfoProto(name="y")], initializer=[a]),
                              opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        (y,) = sess.run(None, {"x": np.zeros((2, 3), F)})
        onnx.save(m, os.path.join(OUT, f"{name}.onnx"))
        out.append((f"{name}.onnx", y))
    return out


def a_(v, dt):
    return np.array(v, dtype=dt)


def ov_cases():
    import openvino as ov
    import openvino.opset13 as ops

    c = lambda v, dt: ops.constant(np.array(v, dtype=dt))  # noqa: E731
    return [
        ("ov_floor_mod", lambda: ops.floor_mod(c([-7, 7, -7, 7], I64), c([2, -2, -2, 2], I64))),
        ("ov_mod", lambda: ops.mod(c([-7, 7, -7, 7], I64), c([2, -2, -2, 2], I64))),
        ("ov_less_equal", lambda: ops.less_equal(c([1, 2, 3], I64), c(2, I64))),
        ("ov_not_equal", lambda: ops.not_equal(c([1, 2, 3], I32), c([1, 0, 3], I32))),
        ("ov_logical_and", lambda: ops.logical_and(c([True, False, True], B), c(True, B))),
        ("ov_logical_not", lambda: ops.logical_not(c([True, False], B))),
        ("ov_minimum", lambda: ops.minimum(c([[5, 1]], I64), c([[2], [3]], I64))),
        ("ov_maximum", lambda: ops.maximum(c([5, -1], I32), c(0, I32))),
        ("ov_negative", lambda: ops.negative(c([3, -4], I64))),
        ("ov_select", lambda: ops.select(c([True, False, True], B), c([1, 2, 3], I64), c(-1, I64))),
        ("ov_broadcast_numpy", lambda: ops.broadcast(c([[1], [2]], I64), c([3, 2, 4], I64))),
        ("ov_broadcast_bidir", lambda: ops.broadcast(c([[1], [2]], I32), c([1, 3], I64),
                                                     broadcast_spec="BIDIRECTIONAL")),
        ("ov_reduce_prod", lambda: ops.reduce_prod(c([[2, 3], [4, 5]], I64), c([1], I64), False)),
        ("ov_reduce_sum_keep", lambda: ops.reduce_sum(c([[2, 3], [4, 5]], I64), c([0], I64), True)),
        ("ov_convert_f32_i32", lambda: ops.convert(c([2.7, -2.7, -0.5, 1e9], F), "i32")),
        ("ov_convert_i64_f32", lambda: ops.convert(c([2**60 + 2**36 + 1, -3], I64), "f32")),
        ("ov_multiply_f32", lambda: ops.multiply(c([4097.0, 1.1], F), c(4097.0, F))),
        ("ov_divide_f32", lambda: ops.divide(c([1.0, -7.0, 10.0], F), c(3.0, F))),
        ("ov_subtract_f32", lambda: ops.subtract(c([1.0, 0.3], F), c(0.1, F))),
        ("ov_maximum_f32", lambda: ops.maximum(c([0.5, -1.0], F), c([[0.0], [-3.0]], F))),
        ("ov_floor", lambda: ops.floor(c([1.5, -1.5, -0.2], F))),
        ("ov_ceiling", lambda: ops.ceiling(c([1.5, -1.5, -0.2], F))),
        ("ov_sqrt", lambda: ops.sqrt(c([2.0, 64.0, 1e-3], F))),
        ("ov_power_exact", lambda: ops.power(c([16.0, 3.0], F), c([0.5, 3.0], F))),
        ("ov_less_f32", lambda: ops.less(c([0.1, -0.0, 2.0], F), c([0.2, 0.0, 1.0], F))),
        ("ov_transpose", lambda: ops.transpose(c(np.arange(24).reshape(2, 3, 4), F), c([1, 2, 0], I64))),
    ], ov


def main():
    os.makedirs(OUT, exist_ok=True)
    expected = {}

    def record(fname, y):
        y = np.asarray(y)
        kind = "float" if y.dtype.kind == "f" else "int"
        vals = [repr(float(v)) if kind == "float" else int(v) for v in y.reshape(-1)]
        expected[fname] = {"dtype": str(y.dtype), "shape": list(y.shape), "values": vals}

    for name, op, inputs, attrs in ONNX_CASES:
        record(f"{name}.onnx", onnx_case(name, op, inputs, attrs))
    for fname, y in facts_cases():
        record(fname, y)
    for fname, y in if_cases():
        record(fname, y)
    cases, ov = ov_cases()
    core = ov.Core()
    for name, build in cases:
        node = build()
        model = ov.Model([ov.opset13.result(node)], [], name)
        path = os.path.join(OUT, f"{name}.xml")
        ov.save_model(model, path, compress_to_fp16=False)
        compiled = core.compile_model(core.read_model(path), "CPU")
        y = compiled({})[compiled.outputs[0]]
        record(f"{name}.xml", y)
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
