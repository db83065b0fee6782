"""Runs the Loop models of tests/loop_outputs.rs in ONNX Runtime and prints the shape of each
scan output (`rows`) at a few sizes of `x`'s first dim, to confirm the spec derivations those
tests state. Usage: python3 tools/loop_check.py (onnx, onnxruntime, numpy). Output committed as
tools/loop_check.out."""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper


def loop_model(trip, cond_nodes, cond_inits, cond_out):
    body = helper.make_graph(
        [
            helper.make_node("Gather", ["x", "i"], ["row"]),
            helper.make_node("Add", ["acc", "row"], ["acc_out"]),
            helper.make_node("Add", ["k", "one"], ["k_out"]),
            helper.make_node("Identity", ["row"], ["scan_out"]),
        ]
        + cond_nodes,
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("k", TensorProto.INT64, []),
        ],
        [
            helper.make_tensor_value_info(cond_out, TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("k_out", TensorProto.INT64, []),
            helper.make_tensor_value_info("scan_out", TensorProto.FLOAT, [4]),
        ],
        [helper.make_tensor("one", TensorProto.INT64, [], [1])] + cond_inits,
    )
    if cond_out == "cond_in":
        # ONNX Runtime wants a body output produced by a node.
        body.node.append(helper.make_node("Identity", ["cond_in"], ["cond_pass"]))
        body.output[0].name = "cond_pass"
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "idx0"], ["m"]),
    ]
    inits = [
        helper.make_tensor("idx0", TensorProto.INT64, [], [0]),
        helper.make_tensor("true", TensorProto.BOOL, [], [True]),
        helper.make_tensor("zeros", TensorProto.FLOAT, [4], [0] * 4),
        helper.make_tensor("zero", TensorProto.INT64, [], [0]),
    ]
    if trip is None:
        nodes.append(helper.make_node("Identity", ["m"], ["trip"]))
    else:
        inits.append(helper.make_tensor("trip", TensorProto.INT64, [], [trip]))
    nodes.append(
        helper.make_node("Loop", ["trip", "true", "zeros", "zero"], ["acc_final", "k_final", "rows"], body=body)
    )
    g = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["d0", 4])],
        [
            helper.make_tensor_value_info("acc_final", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("k_final", TensorProto.INT64, None),
            helper.make_tensor_value_info("rows", TensorProto.FLOAT, None),
        ],
        inits,
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def cast(i, o, to):
    return helper.make_node("Cast", [i], [o], to=to)


CASES = {
    "passed_through_true": (None, [], [], "cond_in"),
    "tf2onnx_counter": (
        None,
        [
            helper.make_node("Less", ["i", "m"], ["l1"]),
            helper.make_node("Less", ["k_out", "m"], ["l2"]),
            helper.make_node("And", ["l1", "l2"], ["c"]),
        ],
        [],
        "c",
    ),
    "float32_counter": (
        None,
        [cast("k_out", "kf", TensorProto.FLOAT), cast("m", "mf", TensorProto.FLOAT), helper.make_node("Less", ["kf", "mf"], ["c"])],
        [],
        "c",
    ),
    "ends_early_m10": (10, [helper.make_node("Less", ["i", "three"], ["c"])], [helper.make_tensor("three", TensorProto.INT64, [], [3])], "c"),
    "passed_through_true_m10": (10, [], [], "cond_in"),
}

for name, (trip, nodes, inits, out) in CASES.items():
    m = loop_model(trip, nodes, inits, out)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    shapes = []
    # With M = 10 the body reads x[i] for i < 10: x needs 10 rows at least.
    for d0 in (0, 1, 2, 5, 12) if trip is None else (10, 12):
        x = np.ones((d0, 4), np.float32)
        try:
            rows = sess.run(["rows"], {"x": x})[0]
            shapes.append(f"d0={d0}: {list(rows.shape)}")
        except Exception as e:  # noqa: BLE001
            shapes.append(f"d0={d0}: error {str(e).splitlines()[0][:80]}")
    # float32_counter at d0 = 2^24 + 1 (float32(d0 - 1) == float32(d0): one iteration fewer)
    # needs a 256 MiB x: not run here; tests/loop_outputs.rs states the derivation.
    print(f"{name}: " + "; ".join(shapes))

# What float32_counter's early exit rests on: float32(2^24) == float32(2^24 + 1).
print(f"float32(2**24) == float32(2**24 + 1): {bool(np.float32(2**24) == np.float32(2**24 + 1))}")
