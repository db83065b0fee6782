"""Writes tests/data/subgraph/body_fold.onnx and body_fold.io.npz: an ONNX If whose branches
slice constants, for the passes inside bodies (`tests/body_passes.rs`, `tools/body_check.py`).

The model (opset 13):
  inputs  c bool [], d bool [], x float [2, 6]; initializer W float [4, 6] = arange(24)
  y = If(c)
    then_branch: "w_slice" = Slice(W, starts=[1], ends=[3], axes=[0])   W read from the outer scope
                 t_out = Add(w_slice, x)
    else_branch: K = Constant float [2, 8] = arange(16) / 2             a body-local constant
                 "k_slice" = Slice(K, starts=[0], ends=[6], axes=[1])
                 inner = If(d)                                          nested
                   then_branch: "inner_slice" = Slice(K, [2], [8], [1])  K from the enclosing body
                   else_branch: "inner_x" = Slice(x, [0], [2], [0])      x: not constant
                 e_out = Mul(k_slice, x) + inner
Every body slice but inner_x has constant data and parameters: `fold` makes each a constant of
its body. The expected outputs (io.npz: `case{k}_x{i}` inputs c, d, x and `case{k}_y0` output
y, for k = 0..3 the pairs (c, d) = (0, 0), (0, 1), (1, 0), (1, 1)) are computed by ONNX Runtime
on the model as written here.

It also writes two OpenVINO IR models built with OpenVINO's Python API (IR 11, f32) and their
expected outputs (io.npz: `case{k}_x{i}` inputs, `case{k}_y{j}` outputs, computed by OpenVINO's
CPU plugin in f32 on the model as written):
  body_if.xml: If(c) over x float [2, 6]
    then_body: "k_ss" = StridedSlice-1(K [2, 8] constant, begin [0, 0], end [0, 6], begin_mask
               [1, 0], end_mask [1, 0]) = K[:, 0:6]; + x                 (folds: a body constant)
    else_body: "e_slice" = Slice-8(Concat(x, x, axis 1), [3], [9], [1], axes [1])  (raises)
  body_ti.xml: TensorIterator over xs float [3, 2, 6], sliced along axis 0 (part [1, 2, 6])
    body: "ti_k_ss" = StridedSlice-1(K, [0, 2], [0, 8], masks [1, 0]) = K[:, 2:8]; + part
          "ti_x_ss" = StridedSlice-1(part, [0, 0, 1], [0, 0, 5], masks [1, 1, 0]) = part[:, :, 1:5]
          both concatenated along axis 0: [3, 2, 6] and [3, 2, 4]      (fold and lower)

Usage: python3 tools/gen_body_passes.py
"""

import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "subgraph")


def const(name, values):
    return helper.make_node(
        "Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, [len(values)], values)
    )


def build():
    f = TensorProto.FLOAT
    then_g = helper.make_graph(
        [const("t_s", [1]), const("t_e", [3]), const("t_a", [0]),
         helper.make_node("Slice", ["W", "t_s", "t_e", "t_a"], ["w_sl"], name="w_slice"),
         helper.make_node("Add", ["w_sl", "x"], ["t_out"], name="t_add")],
        "then", [], [helper.make_tensor_value_info("t_out", f, [2, 6])],
    )
    k = (np.arange(16, dtype=np.float32) / 2).reshape(2, 8)
    inner_then = helper.make_graph(
        [const("i_s", [2]), const("i_e", [8]), const("i_a", [1]),
         helper.make_node("Slice", ["K", "i_s", "i_e", "i_a"], ["i_out"], name="inner_slice")],
        "inner_then", [], [helper.make_tensor_value_info("i_out", f, [2, 6])],
    )
    inner_else = helper.make_graph(
        [const("j_s", [0]), const("j_e", [2]), const("j_a", [0]),
         helper.make_node("Slice", ["x", "j_s", "j_e", "j_a"], ["j_out"], name="inner_x")],
        "inner_else", [], [helper.make_tensor_value_info("j_out", f, [2, 6])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Constant", [], ["K"], name="K", value=numpy_helper.from_array(k, "K")),
         const("e_s", [0]), const("e_e", [6]), const("e_a", [1]),
         helper.make_node("Slice", ["K", "e_s", "e_e", "e_a"], ["k_sl"], name="k_slice"),
         helper.make_node("If", ["d"], ["inner"], name="inner_if",
                          then_branch=inner_then, else_branch=inner_else),
         helper.make_node("Mul", ["k_sl", "x"], ["e_mul"], name="e_mul"),
         helper.make_node("Add", ["e_mul", "inner"], ["e_out"], name="e_add")],
        "else", [], [helper.make_tensor_value_info("e_out", f, [2, 6])],
    )
    w = numpy_helper.from_array(np.arange(24, dtype=np.float32).reshape(4, 6), "W")
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="If_0", then_branch=then_g, else_branch=else_g)],
        "body_fold",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("d", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", f, [2, 6])],
        [helper.make_tensor_value_info("y", f, [2, 6])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="slice-opt tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_ov():
    import openvino as ov
    import openvino.opset1 as op1
    import openvino.opset8 as op8

    def i64(v):
        return op8.constant(np.array(v, dtype=np.int64))

    k = (np.arange(16, dtype=np.float32) / 2).reshape(2, 8)
    c = op8.parameter([], ov.Type.boolean, name="c")
    x = op8.parameter([2, 6], ov.Type.f32, name="x")
    tp = op8.parameter([2, 6], ov.Type.f32, name="tx")
    ss = op1.strided_slice(op8.constant(k), i64([0, 0]), i64([0, 6]), i64([1, 1]), [1, 0], [1, 0], name="k_ss")
    tr = op8.result(op8.add(ss, tp, name="t_add"), name="t_res")
    ep = op8.parameter([2, 6], ov.Type.f32, name="ex")
    cat = op8.concat([ep, ep], 1, name="e_cat")
    er = op8.result(op8.slice(cat, i64([3]), i64([9]), i64([1]), i64([1]), name="e_slice"), name="e_res")
    if_op = op8.if_op(c)
    if_op.set_then_body(ov.Model([tr], [tp], "then"))
    if_op.set_else_body(ov.Model([er], [ep], "else"))
    if_op.set_input(x.output(0), tp, ep)
    out = if_op.set_output(tr, er)
    body_if = ov.Model([out], [c, x], "body_if")

    xs = op8.parameter([3, 2, 6], ov.Type.f32, name="xs")
    bp = op8.parameter([1, 2, 6], ov.Type.f32, name="part")
    kss = op1.strided_slice(op8.constant(k), i64([0, 2]), i64([0, 8]), i64([1, 1]), [1, 0], [1, 0], name="ti_k_ss")
    r1 = op8.result(op8.add(bp, kss, name="ti_add"), name="ti_r1")
    pss = op1.strided_slice(bp, i64([0, 0, 1]), i64([0, 0, 5]), i64([1, 1, 1]), [1, 1, 0], [1, 1, 0], name="ti_x_ss")
    r2 = op8.result(pss, name="ti_r2")
    ti = op8.tensor_iterator()
    ti.set_body(ov.Model([r1, r2], [bp], "ti_body"))
    ti.set_sliced_input(bp, xs.output(0), 0, 1, 1, -1, 0)
    o1 = ti.get_concatenated_slices(r1.output(0), 0, 1, 1, -1, 0)
    o2 = ti.get_concatenated_slices(r2.output(0), 0, 1, 1, -1, 0)
    body_ti = ov.Model([o1, o2], [xs], "body_ti")
    return ov, body_if, body_ti


def save_ov():
    ov, body_if, body_ti = build_ov()
    core = ov.Core()
    x = (np.arange(12, dtype=np.float32).reshape(2, 6) - 3.5) * 0.25
    xs = (np.arange(36, dtype=np.float32).reshape(3, 2, 6) - 10.0) * 0.5
    for name, model, cases in [
        ("body_if", body_if, [[np.array(True), x], [np.array(False), x]]),
        ("body_ti", body_ti, [[xs]]),
    ]:
        path = os.path.join(OUT, f"{name}.xml")
        ov.save_model(model, path, compress_to_fp16=False)
        compiled = core.compile_model(core.read_model(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        io = {}
        for k, inputs in enumerate(cases):
            res = compiled(inputs)
            for i, v in enumerate(inputs):
                io[f"case{k}_x{i}"] = v
            for j, o in enumerate(compiled.outputs):
                io[f"case{k}_y{j}"] = res[o]
        np.savez(os.path.join(OUT, f"{name}.io.npz"), **io)


def main():
    os.makedirs(OUT, exist_ok=True)
    save_ov()
    path = os.path.join(OUT, "body_fold.onnx")
    onnx.save(build(), path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = (np.arange(12, dtype=np.float32).reshape(2, 6) - 3.5) * 0.25
    io = {}
    for k, (c, d) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
        feed = {"c": np.array(bool(c)), "d": np.array(bool(d)), "x": x}
        for i, v in enumerate(feed.values()):
            io[f"case{k}_x{i}"] = v
        io[f"case{k}_y0"] = sess.run(None, feed)[0]
    np.savez(os.path.join(OUT, "body_fold.io.npz"), **io)
    print({k: v.tolist() for k, v in io.items()})


if __name__ == "__main__":
    main()
