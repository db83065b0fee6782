"""Fixtures for tests/fold_split.rs (issue 43 acceptance 1, issue 42 pattern G): a float-to-integer
`Cast` of `-inf` (T5's relative-position buckets take `Log(0)`) is computed differently by the
runtimes (ONNX Runtime: the type's minimum; OpenVINO's CPU plugin, which computes i64 in i32:
-2^31), so `fold` must not fold it; the `Where` after it discards those elements, so what it
gives is the same in both and folds.

Writes tests/data/fold_split/{bucket,cast_only}.onnx (no inputs, one output `v`) and
expected.json: each model's `v` in ONNX Runtime and OpenVINO (CPU, f32), and for `cast_only`
also the two runtimes' `Cast` of the same values fed at run time (a Parameter, so OpenVINO's CPU
plugin computes it rather than its constant folding).

Usage: python3 tools/gen_fold_split.py   (onnx, onnxruntime 1.32.0, openvino 2026.4.1)
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
from onnx import TensorProto as T
from onnx import helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "fold_split")
REL = np.array([0.0, 1.0, 4.0, 20.0, 0.0, 7.0], np.float32)


def const(name, arr):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(arr, name))


def bucket_nodes(src):
    # T5: large = max_exact + (log(rel / max_exact) / log(max_distance / max_exact) * (nb - max_exact)).long()
    #     bucket = where(rel < max_exact, rel, min(large, nb - 1))
    return [
        const("max_exact", np.array(4.0, np.float32)),
        const("scale", np.array(8.0 / np.log(32.0), np.float32)),
        const("max_exact_i", np.array(4, np.int64)),
        const("last", np.array(15, np.int64)),
        helper.make_node("Div", [src, "max_exact"], ["ratio"]),
        helper.make_node("Log", ["ratio"], ["log"]),
        helper.make_node("Mul", ["log", "scale"], ["scaled"]),
        helper.make_node("Cast", ["scaled"], ["as_int"], to=T.INT64),
        helper.make_node("Add", ["as_int", "max_exact_i"], ["large"]),
        helper.make_node("Min", ["large", "last"], ["large_c"]),
        helper.make_node("Cast", [src], ["rel_i"], to=T.INT64),
        helper.make_node("Less", [src, "max_exact"], ["small"]),
        helper.make_node("Where", ["small", "rel_i", "large_c"], ["v"]),
    ]


def model(nodes, inputs, out_type):
    g = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("v", out_type, [len(REL)])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def run(m, feeds):
    ort_v = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    core = ov.Core()
    c = core.compile_model(core.read_model(m.SerializeToString(), b""), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    ov_v = c(feeds)[c.outputs[0]] if feeds else c({})[c.outputs[0]]
    return [int(x) for x in ort_v], [int(x) for x in ov_v]


def main():
    os.makedirs(OUT, exist_ok=True)
    expected = {}
    bucket = model([const("rel", REL)] + bucket_nodes("rel"), [], T.INT64)
    onnx.save(bucket, os.path.join(OUT, "bucket.onnx"))
    o, v = run(bucket, {})
    # the same buckets computed at run time, in both runtimes' CPU kernels
    fed = model(bucket_nodes("rel"), [helper.make_tensor_value_info("rel", T.FLOAT, [len(REL)])], T.INT64)
    fo, fv = run(fed, {"rel": REL})
    assert o == v == fo == fv, (o, v, fo, fv)
    expected["bucket"] = {"onnxruntime": o, "openvino": v, "fed_onnxruntime": fo, "fed_openvino": fv}

    cast_nodes = [
        const("max_exact", np.array(4.0, np.float32)),
        helper.make_node("Div", ["rel", "max_exact"], ["ratio"]),
        helper.make_node("Log", ["ratio"], ["log"]),
        helper.make_node("Cast", ["log"], ["v"], to=T.INT64),
    ]
    cast_only = model([const("rel", REL)] + cast_nodes, [], T.INT64)
    onnx.save(cast_only, os.path.join(OUT, "cast_only.onnx"))
    o, v = run(cast_only, {})
    fed = model(cast_nodes, [helper.make_tensor_value_info("rel", T.FLOAT, [len(REL)])], T.INT64)
    fo, fv = run(fed, {"rel": REL})
    expected["cast_only"] = {"onnxruntime": o, "openvino": v, "fed_onnxruntime": fo, "fed_openvino": fv}
    expected["versions"] = {"onnxruntime": ort.__version__, "openvino": ov.__version__, "onnx": onnx.__version__}
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
    print(json.dumps(expected))


if __name__ == "__main__":
    main()
