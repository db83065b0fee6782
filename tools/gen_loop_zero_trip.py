"""Writes tests/data/subgraph/loop_zero_trip{,_tf}.onnx and loop_zero_trip.expected.json: the shapes
ONNX Runtime and OpenVINO give a `Loop`'s scan outputs at zero iterations and after, for
`tests/loop_outputs.rs` (issue 42: a scan output dim must hold at every size a runtime runs).

The model (opset 13): `x: float[B, S, 4]`, `M = Shape(x)[1]` (the scalar `S`), cond `true`,
one carried `s: float[B, 3]` (zeros from `ConstantOfShape([B, 3])`), and three scan outputs,
each declared in the body with its per-iteration shape:
  scan_c  `s + 1`                   [B, 3]  (from the carried value, as the Keras GRU's state)
  scan_x  `Gather(x, i, axis=1)`    [B, 4]  (from the captured input)
  scan_k  a constant                [3]
`loop_zero_trip_tf.onnx` is the same loop with tf2onnx's conditions (the Keras GRU's): the first
`Less(0.0, Cast<float>(M))`, the body's `Less(Cast<float>(i + 1), Cast<float>(M))` (a float32
comparison: the loop's count is not provably `M` up to 2^31 - 1, but an iteration runs exactly
when `M >= 1`).
The ONNX specification does not say what a scan output is when no iteration runs. Measured
(onnxruntime 1.32.0, openvino 2026.4.1): both give `[0] + ` the per-iteration shape with every
dim that is not a number replaced by 0 (`[0, 0, 3]` for scan_c at S = 0, B = 2), and `[S] + `
the per-iteration shape for S >= 1. (The onnx reference evaluator raises at zero iterations,
"need at least one array to concatenate", and concatenates instead of stacking after that:
`[2*B, 3]` at S = 2; it is not recorded. ONNX Runtime gives a rank-1 `[0]` when its own
inference does not find the body output's shape: the body values here are all declared.)

Usage: python3 tools/gen_loop_zero_trip.py   (onnx, onnxruntime, openvino, numpy)
"""

import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
from onnx import TensorProto as T
from onnx import helper as h

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "subgraph")
SIZES = [(2, 0), (0, 0), (3, 0), (2, 1), (1, 5), (3, 2), (0, 3)]
SCANS = ["scan_c", "scan_x", "scan_k"]


def model(tf=False):
    if tf:
        cond = [
            h.make_node("Add", ["i", "one_i"], ["i1"]),
            h.make_node("Cast", ["i1"], ["i1f"], to=T.FLOAT),
            h.make_node("Cast", ["m"], ["mf_in"], to=T.FLOAT),
            h.make_node("Less", ["i1f", "mf_in"], ["cond_out"]),
        ]
        first = [
            h.make_node("Cast", ["m"], ["mf"], to=T.FLOAT),
            h.make_node("Less", ["zero_f", "mf"], ["first"]),
        ]
    else:
        cond = [h.make_node("Identity", ["cond_in"], ["cond_out"])]
        first = [h.make_node("Identity", ["true"], ["first"])]
    body = h.make_graph(
        cond + [
            h.make_node("Add", ["s", "one"], ["s_out"]),
            h.make_node("Identity", ["s_out"], ["scan_c"]),
            h.make_node("Gather", ["x", "i"], ["scan_x"], axis=1),
            h.make_node("Constant", [], ["scan_k"], value=h.make_tensor("k", T.FLOAT, [3], [1, 2, 3])),
        ],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("cond_in", T.BOOL, []),
            h.make_tensor_value_info("s", T.FLOAT, ["B", 3]),
        ],
        [
            h.make_tensor_value_info("cond_out", T.BOOL, []),
            h.make_tensor_value_info("s_out", T.FLOAT, ["B", 3]),
            h.make_tensor_value_info("scan_c", T.FLOAT, ["B", 3]),
            h.make_tensor_value_info("scan_x", T.FLOAT, ["B", 4]),
            h.make_tensor_value_info("scan_k", T.FLOAT, [3]),
        ],
        [h.make_tensor("one", T.FLOAT, [], [1.0]), h.make_tensor("one_i", T.INT64, [], [1])],
    )
    g = h.make_graph(
        [
            h.make_node("Shape", ["x"], ["shape"]),
            h.make_node("Gather", ["shape", "one_i"], ["m"], axis=0),
            h.make_node("Gather", ["shape", "zero_i"], ["b"], axis=0),
            h.make_node("Unsqueeze", ["b", "axis0"], ["b1"]),
            h.make_node("Concat", ["b1", "three"], ["s0_shape"], axis=0),
            h.make_node("ConstantOfShape", ["s0_shape"], ["s0"], value=h.make_tensor("z", T.FLOAT, [1], [0.0])),
        ] + first + [
            h.make_node("Loop", ["m", "first", "s0"], ["s_final"] + SCANS, name="loop", body=body),
        ],
        "loop_zero_trip",
        [h.make_tensor_value_info("x", T.FLOAT, ["B", "S", 4])],
        [h.make_tensor_value_info(n, T.FLOAT, None) for n in ["s_final"] + SCANS],
        [
            h.make_tensor("one_i", T.INT64, [], [1]),
            h.make_tensor("zero_i", T.INT64, [], [0]),
            h.make_tensor("axis0", T.INT64, [1], [0]),
            h.make_tensor("three", T.INT64, [1], [3]),
            h.make_tensor("true", T.BOOL, [], [True]),
            h.make_tensor("zero_f", T.FLOAT, [], [0.0]),
        ],
    )
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)], producer_name="gen_loop_zero_trip")
    m.ir_version = 8
    return m


def main():
    rows = {}
    for name, tf in (("loop_zero_trip", False), ("loop_zero_trip_tf", True)):
        path = os.path.join(OUT, name + ".onnx")
        onnx.save(model(tf), path)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        compiled = ov.Core().compile_model(path, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        rows[name] = []
        for b, s in SIZES:
            x = np.random.default_rng(b * 10 + s).standard_normal((b, s, 4)).astype(np.float32)
            names = ["s_final"] + SCANS
            got_ort = dict(zip(names, (list(a.shape) for a in sess.run(names, {"x": x}))))
            res = compiled({"x": x})
            got_ov = {n: list(res[compiled.output(n)].shape) for n in names}
            rows[name].append({"B": b, "S": s, "onnxruntime": got_ort, "openvino": got_ov})
            print(name, b, s, got_ort, got_ov)
    with open(os.path.join(OUT, "loop_zero_trip.expected.json"), "w") as f:
        json.dump({"generator": "tools/gen_loop_zero_trip.py",
                   "versions": {"onnxruntime": ort.__version__, "openvino": ov.__version__, "onnx": onnx.__version__},
                   "models": rows}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
