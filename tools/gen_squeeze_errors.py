"""Writes tests/data/squeeze_errors/ (models and squeeze_errors.expected.json): what ONNX Runtime and
OpenVINO do at a `Squeeze` of an axis whose size is not 1, for `tests/squeeze_errors.rs` (issue 42:
may a bound such as `seq >= 1` be taken from such a `Squeeze`, as one every successful run satisfies?).

The ONNX specification (Squeeze-1/11/13/21) says "If an axis is selected with shape entry not equal to
one, an error is raised". A bound taken from it would hold for every successful run only if every
runtime reading the file raised that error. Measured here at the sizes where the axis is not 1:

  squeeze_tail.onnx    (opset 13) `x: float[B, S, 3]`, `t = x[:, -1:]` (Slice, start -1, end
                       INT64_MAX, axis 1), `y = Squeeze(t, axes=[1])`: the Keras GRU/LSTM exports'
                       `y[:, -1]` (tf2onnx's Slice + Squeeze). Outputs `y` and `t`. At S = 0, `t`
                       has 0 rows and the Squeeze's axis is 0.
  squeeze_tail11.onnx  the same in opset 11 (`axes` an attribute).
  squeeze_input.onnx   (opset 13) `y = Squeeze(x, axes=[1])` straight on the input (`S` must be 1).
  squeeze_tail.xml     `squeeze_tail.onnx` as OpenVINO IR (`ov.save_model` of `read_model`).

Each at B = 2 and S in 0..3, in ONNX Runtime (CPU), in OpenVINO compiled with the input shapes the
file declares (dynamic), and in OpenVINO after `model.reshape` to the static input shape (how
OpenVINO users commonly fix sizes). A run either gives the output shapes or raises (`error`).

Usage: python3 tools/gen_squeeze_errors.py   (onnx, onnxruntime, openvino, numpy)
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
OUT = os.path.join(ROOT, "tests", "data", "squeeze_errors")
SIZES = [(2, 0), (2, 1), (2, 2), (2, 3)]
INT64_MAX = 2**63 - 1


def squeeze_tail(opset):
    inits = [
        h.make_tensor("starts", T.INT64, [1], [-1]),
        h.make_tensor("ends", T.INT64, [1], [INT64_MAX]),
        h.make_tensor("axes", T.INT64, [1], [1]),
    ]
    nodes = [h.make_node("Slice", ["x", "starts", "ends", "axes"], ["t"], name="tail")]
    if opset >= 13:
        nodes.append(h.make_node("Squeeze", ["t", "axes"], ["y"], name="squeeze"))
    else:
        nodes.append(h.make_node("Squeeze", ["t"], ["y"], name="squeeze", axes=[1]))
    g = h.make_graph(
        nodes,
        "squeeze_tail",
        [h.make_tensor_value_info("x", T.FLOAT, ["B", "S", 3])],
        [h.make_tensor_value_info("y", T.FLOAT, None), h.make_tensor_value_info("t", T.FLOAT, None)],
        inits,
    )
    return finish(g, opset)


def squeeze_input():
    g = h.make_graph(
        [h.make_node("Squeeze", ["x", "axes"], ["y"], name="squeeze")],
        "squeeze_input",
        [h.make_tensor_value_info("x", T.FLOAT, ["B", "S", 3])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
        [h.make_tensor("axes", T.INT64, [1], [1])],
    )
    return finish(g, 13)


def finish(g, opset):
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)], producer_name="gen_squeeze_errors")
    m.ir_version = 8
    return m


def shapes(run):
    try:
        return {"shapes": run()}
    except Exception as e:  # noqa: BLE001
        return {"error": str(e).strip().splitlines()[0][:200]}


def ov_run(path, x, static):
    core = ov.Core()
    model = core.read_model(path)
    if static:
        model.reshape({model.inputs[0]: list(x.shape)})
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    res = compiled({compiled.inputs[0]: x})
    return {o.get_any_name(): list(res[o].shape) for o in compiled.outputs}


def main():
    os.makedirs(OUT, exist_ok=True)
    files = {
        "squeeze_tail.onnx": squeeze_tail(13),
        "squeeze_tail11.onnx": squeeze_tail(11),
        "squeeze_input.onnx": squeeze_input(),
    }
    for name, m in files.items():
        onnx.save(m, os.path.join(OUT, name))
    ov.save_model(ov.Core().read_model(os.path.join(OUT, "squeeze_tail.onnx")),
                  os.path.join(OUT, "squeeze_tail.xml"), compress_to_fp16=False)
    rows = {}
    for name in list(files) + ["squeeze_tail.xml"]:
        path = os.path.join(OUT, name)
        rows[name] = []
        for b, s in SIZES:
            x = np.zeros((b, s, 3), np.float32)
            row = {"B": b, "S": s}
            if name.endswith(".onnx"):
                sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
                outs = [o.name for o in sess.get_outputs()]
                row["onnxruntime"] = shapes(lambda: {n: list(a.shape) for n, a in zip(outs, sess.run(outs, {"x": x}))})
            row["openvino"] = shapes(lambda: ov_run(path, x, False))
            row["openvino_static"] = shapes(lambda: ov_run(path, x, True))
            rows[name].append(row)
            print(name, json.dumps(row))
    with open(os.path.join(OUT, "squeeze_errors.expected.json"), "w") as f:
        json.dump({"generator": "tools/gen_squeeze_errors.py",
                   "versions": {"onnxruntime": ort.__version__, "openvino": ov.__version__, "onnx": onnx.__version__},
                   "models": rows}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
