"""Writes tests/data/subgraph/slices.onnx (Slices inside an If branch and a Loop body) and
tests/data/subgraph/slices.expected.json: the output shape of each body Slice as ONNX Runtime
computes it, for `tests/subgraph.rs`.

The model (opset 13):
  inputs  x float [2, 6], c bool [], m int64 [], y float [3, 8], w float [1, 4]
  if_x = If(c)
    then_branch: Slice(x, starts=[1], ends=[5], axes=[1])           (unnamed: path If_x/then_branch/Slice_3)
    else_branch: "else_slice" = Slice(x, [0], [-1], [1], steps=[2])  (x read from the outer scope)
  loop = Loop(m, "", y, w)      body inputs (i, cond, v, g)
    "loop_slice"  = Slice(v, starts=[1], ends=[3], axes=[0])  v kept invariant (Identity) -> scan out
    "outer_slice" = Slice(x, starts=[0], ends=[1], axes=[0])  x from the outer scope   -> scan out
    "grow_slice"  = Slice(g, starts=[0], ends=[2], axes=[1])  g doubles along axis 0 each iteration
                                                               (Concat(g, g)): its dim 0 is unknown
                                                               (not a body output: a scan output
                                                               must keep its shape)
Each body slice's shape is read from ONNX Runtime: the If output (both branches, by c), and the
Loop scan outputs without their leading iteration axis. For grow_slice, ONNX Runtime's final
carried values after m = 1 and m = 3 show that dim 0 changes across iterations (`grow_dim0`).

Usage: python3 tools/gen_subgraph_slices.py
"""

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "subgraph")


def const(name, values):
    return helper.make_node(
        "Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, [len(values)], values)
    )


def build():
    f = TensorProto.FLOAT
    then_g = helper.make_graph(
        [const("t_s", [1]), const("t_e", [5]), const("t_a", [1]),
         helper.make_node("Slice", ["x", "t_s", "t_e", "t_a"], ["t_out"])],
        "then", [], [helper.make_tensor_value_info("t_out", f, None)],
    )
    else_g = helper.make_graph(
        [const("e_s", [0]), const("e_e", [-1]), const("e_a", [1]), const("e_st", [2]),
         helper.make_node("Slice", ["x", "e_s", "e_e", "e_a", "e_st"], ["e_out"], name="else_slice")],
        "else", [], [helper.make_tensor_value_info("e_out", f, None)],
    )
    body = helper.make_graph(
        [
            const("b_s", [1]), const("b_e", [3]), const("b_a0", [0]),
            helper.make_node("Slice", ["v", "b_s", "b_e", "b_a0"], ["v_sl"], name="loop_slice"),
            const("o_s", [0]), const("o_e", [1]),
            helper.make_node("Slice", ["x", "o_s", "o_e", "b_a0"], ["x_sl"], name="outer_slice"),
            const("g_s", [0]), const("g_e", [2]), const("b_a1", [1]),
            helper.make_node("Slice", ["g", "g_s", "g_e", "b_a1"], ["g_sl"], name="grow_slice"),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Identity", ["v"], ["v_out"]),
            helper.make_node("Concat", ["g", "g"], ["g_out"], axis=0),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v", f, None),
            helper.make_tensor_value_info("g", f, None),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("v_out", f, None),
            helper.make_tensor_value_info("g_out", f, None),
            helper.make_tensor_value_info("v_sl", f, None),
            helper.make_tensor_value_info("x_sl", f, None),
        ],
    )
    graph = helper.make_graph(
        [
            helper.make_node("If", ["c"], ["if_out"], name="If_x", then_branch=then_g, else_branch=else_g),
            helper.make_node("Loop", ["m", "", "y", "w"], ["v_fin", "g_fin", "v_scan", "x_scan"],
                             name="Loop_1", body=body),
        ],
        "subgraph_slices",
        [
            helper.make_tensor_value_info("x", f, [2, 6]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("m", TensorProto.INT64, []),
            helper.make_tensor_value_info("y", f, [3, 8]),
            helper.make_tensor_value_info("w", f, [1, 4]),
        ],
        # Top-level outputs must have a shape (checker); these say only the rank.
        [helper.make_tensor_value_info(n, f, [None] * r)
         for n, r in [("if_out", 2), ("v_fin", 2), ("g_fin", 2), ("v_scan", 3), ("x_scan", 3)]],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="slice-opt tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    os.makedirs(OUT, exist_ok=True)
    model = build()
    path = os.path.join(OUT, "slices.onnx")
    onnx.save(model, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    y = np.zeros((3, 8), np.float32)
    w = np.zeros((1, 4), np.float32)
    outs = {}
    for c in (True, False):
        for m in (1, 3):
            r = sess.run(None, {"x": x, "c": np.array(c), "m": np.array(m, np.int64), "y": y, "w": w})
            outs[(c, m)] = dict(zip(["if_out", "v_fin", "g_fin", "v_scan", "x_scan"], r))
    o = outs[(True, 3)]
    expected = {
        "If_x/then_branch/Slice_3": list(outs[(True, 3)]["if_out"].shape),
        "If_x/else_branch/else_slice": list(outs[(False, 3)]["if_out"].shape),
        "Loop_1/body/loop_slice": list(o["v_scan"].shape[1:]),
        "Loop_1/body/outer_slice": list(o["x_scan"].shape[1:]),
        # dim 0 of grow_slice's data input per iteration count: it changes, so it is unknown.
        "grow_dim0": [int(outs[(True, 1)]["g_fin"].shape[0]), int(outs[(True, 3)]["g_fin"].shape[0])],
        "grow_dim1": int(o["g_fin"].shape[1]),
    }
    with open(os.path.join(OUT, "slices.expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print(json.dumps(expected))


if __name__ == "__main__":
    main()
