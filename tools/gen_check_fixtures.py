"""Writes the fixtures of `check`'s CI formats and of declared dims wrong at some size
(tests/data/check/, used by tests/check_formats.rs and tools/check_formats_check.py).

    /work/venv-exports/bin/python tools/gen_check_fixtures.py   # needs torch, onnx

- three_verdicts.onnx: four Slices of one graph, built with onnx.helper, whose declared output
  shapes are chosen: `x[:, 2:5]` declared [batch, 4] (the ONNX Slice spec gives 3: mismatch),
  `x[:, 1:]` declared [batch, ?] (9 is known: tighter, a looser declaration), `x[1:]` along an axis
  the graph's input `axis` gives (unknown), `x[:, :3]` declared [batch, 3] (ok).
- narrow_tail.dynamo18.onnx: torch's dynamo exporter (opset 18) on `narrow(x, 1, 1, 2)` and
  `x[:, -2:]` with a dynamic `seq`; the exporter declares both outputs `2` (true for seq >= 3 and
  seq >= 2 only).
- patches.dynamo18.onnx: a patch embedding with dynamic `height` and `width`; the exporter
  declares dims in Python syntax (`((height//8))*((width//8)) + 1`) and `3` for `h[:, -3:]`.
"""
import os
import sys

import onnx
from onnx import TensorProto, helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "check")


def three_verdicts():
    def const(name, vals):
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, [len(vals)], vals))

    nodes = [
        const("s_a", [2]), const("e_a", [5]), const("ax1", [1]),
        const("s_b", [1]), const("e_end", [2**62]),
        const("s_d", [0]), const("e_d", [3]),
        helper.make_node("Slice", ["x", "s_a", "e_a", "ax1"], ["a"], name="wrong_declared"),
        helper.make_node("Slice", ["x", "s_b", "e_end", "ax1"], ["b"], name="loose_declared"),
        helper.make_node("Slice", ["x", "s_b", "e_end", "axis"], ["c"], name="axis_unknown"),
        helper.make_node("Slice", ["x", "s_d", "e_d", "ax1"], ["d"], name="right_declared"),
    ]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 10])
    axis = helper.make_tensor_value_info("axis", TensorProto.INT64, [1])
    outs = [
        helper.make_tensor_value_info("a", TensorProto.FLOAT, ["batch", 4]),
        helper.make_tensor_value_info("b", TensorProto.FLOAT, ["batch", None]),
        helper.make_tensor_value_info("c", TensorProto.FLOAT, [None, None]),
        helper.make_tensor_value_info("d", TensorProto.FLOAT, ["batch", 3]),
    ]
    # `b`'s second dim: neither a value nor a name (`?`).
    for o in outs[1:3]:
        for d in o.type.tensor_type.shape.dim:
            if not d.dim_param and not d.dim_value:
                d.Clear()
    g = helper.make_graph(nodes, "three_verdicts", [x, axis], outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="gen_check_fixtures")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "three_verdicts.onnx"))


def dynamo():
    import torch

    class NarrowTail(torch.nn.Module):
        def forward(self, x):
            return torch.narrow(x, 1, 1, 2) * 2, x[:, -2:] + 1

    class Patches(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.conv = torch.nn.Conv2d(3, 4, 8, stride=8)
            self.cls = torch.nn.Parameter(torch.zeros(1, 1, 4))

        def forward(self, img):
            h = self.conv(img).flatten(2).transpose(1, 2)
            h = torch.cat([self.cls.expand(h.shape[0], -1, -1), h], 1)
            return h[:, 1:] * 2, h[:, -3:]

    seq = torch.export.Dim("seq")
    torch.onnx.export(NarrowTail().eval(), (torch.randn(2, 5, 8),), os.path.join(OUT, "narrow_tail.dynamo18.onnx"),
                      dynamo=True, opset_version=18, dynamic_shapes={"x": {1: seq}}, input_names=["x"],
                      external_data=False)
    H, W = torch.export.Dim("height", min=16), torch.export.Dim("width", min=16)
    torch.onnx.export(Patches().eval(), (torch.randn(2, 3, 32, 48),), os.path.join(OUT, "patches.dynamo18.onnx"),
                      dynamo=True, opset_version=18, dynamic_shapes={"img": {2: H, 3: W}}, input_names=["img"],
                      external_data=False)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    three_verdicts()
    if "--no-torch" not in sys.argv:
        dynamo()
    for f in sorted(os.listdir(OUT)):
        m = onnx.load(os.path.join(OUT, f))
        print(f, [(o.name, [d.dim_param or (d.dim_value if d.HasField("dim_value") else "?") for d in o.type.tensor_type.shape.dim]) for o in m.graph.output])
