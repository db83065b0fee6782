#!/usr/bin/env python3
"""Fixture for issue 42 pattern E (value bounds in OpenVINO IR): integer values computed from an
interval dim (`ShapeOf` of a Parameter `[1..10, 4]`) through Gather, Convert, Add, Multiply,
FloorMod, Squeeze/Unsqueeze and Concat, used as a Reshape target (special_zero both ways), a
Broadcast target and a Range length (tests/propagation.rs, `ov_value_bounds_*`).

    python3 tools/gen_ov_value_bounds.py   # writes tests/data/propagation/ov_value_bounds.{xml,bin,json}

The JSON records, for every op output: OpenVINO's own partial shape (min, max per dim, as
`read_model` infers it) and the real shape OpenVINO's CPU plugin gives at n = 1, 2, 3, 5, 7, 10.
"""
import json
import os
import sys

import numpy as np
import openvino as ov
import openvino.opset13 as ops

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "propagation")
SIZES = [1, 2, 3, 5, 7, 10]


def i64(v):
    return ops.constant(np.array(v, dtype=np.int64))


def model():
    p = ops.parameter(ov.PartialShape([ov.Dimension(1, 10), 4]), np.float32, name="p")
    s = ops.shape_of(p, output_type="i64")
    s.set_friendly_name("s")
    n = ops.gather(s, i64([0]), i64(0))  # [n]
    n.set_friendly_name("n")
    n32 = ops.convert(n, "i32")
    n32.set_friendly_name("n32")
    n64 = ops.convert(n32, "i64")
    n64.set_friendly_name("n64")
    n2 = ops.add(n64, i64([2]))  # [n + 2]
    n2.set_friendly_name("n2")
    nn = ops.multiply(n64, n64)  # [n * n]
    nn.set_friendly_name("nn")
    nm = ops.floor_mod(n64, i64([4]))  # [n mod 4]
    nm.set_friendly_name("nm")
    sq = ops.squeeze(n2, i64([0]))  # n + 2, scalar
    sq.set_friendly_name("sq")
    un = ops.unsqueeze(sq, i64([0]))
    un.set_friendly_name("un")
    # Reshape p[n, 4] to [n, 2, 2] (special_zero false: every element taken as it is) and to
    # [0, 2, -1] (special_zero true: 0 copies n, -1 = 4n / (2n) = 2).
    t1 = ops.concat([n64, i64([2, 2])], 0)
    t1.set_friendly_name("t1")
    r1 = ops.reshape(p, t1, special_zero=False)
    r1.set_friendly_name("r1")
    r2 = ops.reshape(p, i64([0, 2, -1]), special_zero=True)
    r2.set_friendly_name("r2")
    # [-1] flattens: 4n elements.
    r3 = ops.reshape(p, i64([-1]), special_zero=False)
    r3.set_friendly_name("r3")
    # Broadcast a [1, 1] constant to [n + 2, n * n].
    t4 = ops.concat([un, nn], 0)
    t4.set_friendly_name("t4")
    b4 = ops.broadcast(ops.constant(np.ones((1, 1), np.float32)), t4)
    b4.set_friendly_name("b4")
    # Range(0, n mod 4 + n, 1): n + n mod 4 elements.
    lim = ops.squeeze(ops.add(nm, n64), i64([0]))
    lim.set_friendly_name("lim")
    rg = ops.range(i64(0), lim, i64(1), "i64")
    rg.set_friendly_name("rg")
    outs = [r1, r2, r3, b4, rg, n32]
    return ov.Model([o.output(0) for o in outs], [p], "ov_value_bounds")


def main():
    m = model()
    xml = os.path.join(OUT, "ov_value_bounds.xml")
    ov.save_model(m, xml, compress_to_fp16=False)
    core = ov.Core()
    m = core.read_model(xml)
    names = {}
    for op in m.get_ordered_ops():
        if op.get_type_name() in ("Parameter", "Result", "Constant"):
            continue
        ps = op.output(0).get_partial_shape()
        names[op.get_friendly_name()] = [[d.get_min_length(), d.get_max_length()] for d in ps]
    # Real shapes: a model whose outputs are every op's first output, in that order.
    named = [op for op in m.get_ordered_ops() if op.get_friendly_name() in names]
    probe = ov.Model([op.output(0) for op in named], m.get_parameters(), "probe")
    compiled = core.compile_model(probe, "CPU")
    runs = []
    for n in SIZES:
        res = compiled.create_infer_request().infer({"p": np.zeros((n, 4), np.float32)})
        shapes, values = {}, {}
        for op, out in zip(named, compiled.outputs):
            arr = np.asarray(res[out])
            shapes[op.get_friendly_name()] = list(arr.shape)
            if arr.dtype.kind in "iu" and arr.size <= 64:
                values[op.get_friendly_name()] = arr.reshape(-1).tolist()
        runs.append({"bindings": {"n": n}, "shapes": shapes, "values": values})
    with open(os.path.join(OUT, "ov_value_bounds.json"), "w") as f:
        json.dump({"model": "tests/data/propagation/ov_value_bounds.xml", "openvino": names, "runs": runs},
                  f, indent=0)
    for k, v in names.items():
        print(k, v, runs[-1]["shapes"].get(k), runs[-1]["values"].get(k))
    return 0


if __name__ == "__main__":
    sys.exit(main())
