#!/usr/bin/env python3
"""Fixtures for issue 42 pattern A (Reshape targets built from `Shape`) and C (the ops exports put
on a slice's path: Mod, Where/Equal, ReduceProd of a shape, ScatterND), with ONNX Runtime as the
oracle (tests/propagation.rs, `reshape_targets_*`).

    python3 tools/gen_reshape_fixtures.py   # writes tests/data/propagation/reshape_targets.{onnx,json}

The model is built with onnx's helper, the way torch exports `x.view(*x.shape[:-1], 4, -1)`,
`input_ids.view(-1, seq)`, `attn.reshape(bsz, q_len, -1)` and `x.view(b * s, 64)`. Every node output
is exposed and ONNX Runtime runs it over a grid of (b, s) that includes 0, recording each value's
shape (and small integer values). Where a runtime refuses a size set, the run records the error.

Expected dims (derivations from the ONNX Reshape spec; allowzero=0 unless said: a 0 copies the
input dim at its position, one -1 takes the element count over the product of the others):
  r1  x[b,s,64] -> [b, s, 4, -1]           = [b, s, 4, 16]   (b*s*64 / (b*s*4); b, s copy themselves)
  r2  x -> [b, s, -1, 16]                  = [b, s, 4, 16]
  r3  tb[b,s,4,16] -> [b, s, -1]            = [b, s, 64]
  r4  ids[b,s] -> [-1, s]                  = [b, s]          (input_ids.view(-1, seq))
  r5  x -> [b, s, 4, 16] (gathered b, s)   = [b, s, 4, 16]
  r6  x -> [-1, 64]                         = [b*s, 64]
  r6b x -> [b*s, 64]                        = [b*s, 64]       (b*s = 0 only where x is empty; 64 >= 1
                                                               forces a copied dim to 0 too)
  r7  r6[b*s,64] -> [b, s, -1]              = [b, ?, ?]       (b: 0 only where b*s is 0; s = 0 copies
                                                               64: ONNX Runtime gives [b, 64, 0])
  r8  r6 -> [b, s, -1], allowzero=1         = [b, s, ?]       (b*s*64/(b*s) = 64 where b, s >= 1; a 0
                                                               beside a -1 is invalid by the spec with
                                                               allowzero=1, and ONNX Runtime 1.32 then
                                                               divides the non-zero dims: b=0, s=2
                                                               gives [0, 2, 32])
  r9  pad s to a multiple of 8 (Mod), then -> [b, -1, 8, 64] = [b, (s + (8 - s%8)%8)/8, 8, 64]
  r10 Where(Equal(s, -1), INT_MAX, s)       = s, so x -> [b, that, 64] = [b, s, 64]
  r11 x -> ReduceProd(Shape(x))             = [b*s*64]
  r12 ids -> [-1, Shape(ScatterND(ids, ...))[1]] = [b, s]
  r13 Expand(ids[b, 1, s], Where(Equal(t, -ones), ones, t)) for t = [b, -1, s]: the -1 becomes 1
      (b, s >= 0 never equal -1) = [b, 1, s]
  r14 x[b, s, 64] + pos[16, 64][:s]         = [b, s, 64]      (Slice: min(s, 16) rows; broadcasting s with
                                                               min(s, 16) is valid only where they are
                                                               equal or one is 1, and min(s, 16) = 1
                                                               where s = 1)
  r15 LSTM over [s, b, 64], hidden 3        = Y [s, 1, b, 3], Y_h, Y_c [1, b, 3]
  r16 bidirectional GRU over [s, b, 64]     = Y [s, 2, b, 3], Y_h [2, b, 3]
  r17 ReverseSequence of [s, b, 64]         = [s, b, 64]
  r18 x -> Concat(Split(Shape(x), [2, 1])[0], [-1]) = [b, s, 64]
  r19 ids[Where(And(Less([1, 1], 0), [T, F]), 1e9, [0, s])]: the condition is [F, F], so the
      ends are [0, s]: ids[0:0, 0:s] = [0, s]
"""
import itertools
import json
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "propagation")
sys.path.insert(0, os.path.join(ROOT, "tools"))
from propagation_oracle import run_grid  # noqa: E402


def c(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def model():
    N = helper.make_node
    nodes = [
        N("Shape", ["x"], ["xs"]),
        N("Gather", ["xs", "i0"], ["b_"]),
        N("Gather", ["xs", "i1"], ["s_"]),
        N("Unsqueeze", ["b_", "ax0"], ["b1"]),
        N("Unsqueeze", ["s_", "ax0"], ["s1"]),
        N("Slice", ["xs", "z1", "m1"], ["head"]),
        # r1, r2: x.view(*x.shape[:-1], 4, -1) / (..., -1, 16)
        N("Concat", ["head", "c4_m1"], ["t1"], axis=0),
        N("Reshape", ["x", "t1"], ["r1"]),
        N("Concat", ["head", "m1_c16"], ["t2"], axis=0),
        N("Reshape", ["x", "t2"], ["r2"]),
        # r3: heads transposed and back, merged: t.reshape(*t.shape[:2], -1)
        N("Transpose", ["r1"], ["tr"], perm=[0, 2, 1, 3]),
        N("Transpose", ["tr"], ["tb"], perm=[0, 2, 1, 3]),
        N("Shape", ["tb"], ["tbs"]),
        N("Slice", ["tbs", "z1", "c2"], ["hb"]),
        N("Concat", ["hb", "m1"], ["t3"], axis=0),
        N("Reshape", ["tb", "t3"], ["r3"]),
        # r4: input_ids.view(-1, seq)
        N("Shape", ["ids"], ["ids_s"]),
        N("Gather", ["ids_s", "i1"], ["seq"]),
        N("Unsqueeze", ["seq", "ax0"], ["seq1"]),
        N("Concat", ["m1", "seq1"], ["t4"], axis=0),
        N("Reshape", ["ids", "t4"], ["r4"]),
        # r5: q.view(bsz, q_len, 4, 16) from gathered sizes
        N("Concat", ["b1", "s1", "c4_c16"], ["t5"], axis=0),
        N("Reshape", ["x", "t5"], ["r5"]),
        # r6, r6b: x.view(-1, 64), x.view(b * s, 64)
        N("Reshape", ["x", "m1_c64"], ["r6"]),
        N("Mul", ["b_", "s_"], ["bs"]),
        N("Unsqueeze", ["bs", "ax0"], ["bs1"]),
        N("Concat", ["bs1", "c64"], ["t6"], axis=0),
        N("Reshape", ["x", "t6"], ["r6b"]),
        # r7, r8: back from 2-D: r6.view(b, s, -1)
        N("Concat", ["b1", "s1", "m1"], ["t7"], axis=0),
        N("Reshape", ["r6", "t7"], ["r7"]),
        N("Reshape", ["r6", "t7"], ["r8"], allowzero=1),
        # r9: pad the sequence to a multiple of 8: p = (8 - s % 8) % 8
        N("Mod", ["s_", "c8s"], ["sm"]),
        N("Sub", ["c8s", "sm"], ["sp"]),
        N("Mod", ["sp", "c8s"], ["p"]),
        N("Unsqueeze", ["p", "ax0"], ["p1"]),
        N("Concat", ["zeros4", "p1", "zero1"], ["pads"], axis=0),
        N("Pad", ["x", "pads"], ["xp"]),
        N("Concat", ["b1", "m1_c8_c64"], ["t9"], axis=0),
        N("Reshape", ["xp", "t9"], ["r9"]),
        # r10: tf2onnx's `size == -1 ? INT_MAX : size`
        N("Equal", ["s1", "m1"], ["eq"]),
        N("Where", ["eq", "imax", "s1"], ["w"]),
        N("Concat", ["b1", "w", "c64"], ["t10"], axis=0),
        N("Reshape", ["x", "t10"], ["r10"]),
        # r11: x.reshape(x.numel())
        N("ReduceProd", ["xs"], ["numel"], keepdims=1),
        N("Reshape", ["x", "numel"], ["r11"]),
        # r12: a ScatterND keeps its data's shape
        N("ScatterND", ["ids", "no_idx", "no_upd"], ["sc"]),
        N("Shape", ["sc"], ["scs"]),
        N("Gather", ["scs", "i1"], ["sc_seq"]),
        N("Unsqueeze", ["sc_seq", "ax0"], ["sc_seq1"]),
        N("Concat", ["m1", "sc_seq1"], ["t12"], axis=0),
        N("Reshape", ["ids", "t12"], ["r12"]),
        # r13: TorchScript's expand target: Where(Equal(t, -ones), ones, t) turns t's -1 into 1
        # (ConstantOfShape with an int64 `value` attribute)
        N("Concat", ["b1", "m1", "s1"], ["esh"], axis=0),
        N("Shape", ["esh"], ["esh_s"]),
        N("ConstantOfShape", ["esh_s"], ["ones"],
          value=helper.make_tensor("value", TensorProto.INT64, [1], [1])),
        N("Mul", ["ones", "m1s"], ["neg"]),
        N("Equal", ["esh", "neg"], ["eqe"]),
        N("Where", ["eqe", "ones", "esh"], ["wsh"]),
        N("Unsqueeze", ["ids", "ax1"], ["ids3"]),
        N("Expand", ["ids3", "wsh"], ["r13"]),
        # r14: a position table sliced to the sequence and added back (tf2onnx's h + wpe[:T]):
        # [b, s, 64] + [min(s, 16), 64]: valid only where they broadcast, so = [b, s, 64]
        N("Slice", ["pos", "z1", "s1", "z1"], ["pos_s"]),
        N("Add", ["x", "pos_s"], ["r14"]),
        # r15: LSTM over [s, b, 64] (hidden 3): Y [s, 1, b, 3], Y_h and Y_c [1, b, 3];
        # r16: bidirectional GRU over [s, b, 64]: Y [s, 2, b, 3], Y_h [2, b, 3]
        N("Transpose", ["x"], ["xsb"], perm=[1, 0, 2]),
        N("LSTM", ["xsb", "lstm_w", "lstm_r"], ["r15", "r15h", "r15c"], hidden_size=3),
        N("GRU", ["xsb", "gru_w", "gru_r"], ["r16", "r16h"], hidden_size=3,
          direction="bidirectional"),
        # r17: ReverseSequence keeps its data's shape: [s, b, 64]
        N("ConstantOfShape", ["b1"], ["lens"],
          value=helper.make_tensor("value", TensorProto.INT64, [1], [0])),
        N("ReverseSequence", ["xsb", "lens"], ["r17"], batch_axis=1, time_axis=0),
        # r18: a shape split in two (Split of a value): x.view(*Split(Shape(x), [2, 1])[0], -1)
        N("Split", ["xs", "split21"], ["hd2", "tl1"], axis=0),
        N("Concat", ["hd2", "m1"], ["t18"], axis=0),
        N("Reshape", ["x", "t18"], ["r18"]),
        # r19: tf2onnx's strided-slice end under a mask: Where(And(Less(strides, 0), end_mask),
        # 1e9, [0, s]) is [0, s] (the strides are positive), then ids[0:0, 0:s]
        N("Less", ["strides11", "zero_i"], ["neg_stride"]),
        N("And", ["neg_stride", "mask_tf"], ["use_max"]),
        N("Concat", ["z1", "s1"], ["end0s"], axis=0),
        N("Where", ["use_max", "big", "end0s"], ["end19"]),
        N("Slice", ["ids", "zz", "end19", "ax01"], ["r19"]),
    ]
    inits = [
        c("i0", 0), c("i1", 1), c("ax0", [0]), c("z1", [0]), c("m1", [-1]), c("c2", [2]),
        c("c4_m1", [4, -1]), c("m1_c16", [-1, 16]), c("c4_c16", [4, 16]), c("m1_c64", [-1, 64]),
        c("c64", [64]), c("c8s", 8), c("zeros4", [0, 0, 0, 0]), c("zero1", [0]),
        c("m1_c8_c64", [-1, 8, 64]), c("imax", [2147483647]),
        c("no_idx", np.zeros((0, 2))), c("no_upd", np.zeros((0,))), c("m1s", -1), c("ax1", [1]), c("split21", [2, 1]),
        c("strides11", [1, 1]), c("zero_i", 0), c("mask_tf", [True, False], np.bool_),
        c("big", [1000000000, 1000000000]), c("zz", [0, 0]), c("ax01", [0, 1]),
        c("pos", np.zeros((16, 64)), np.float32),
        c("lstm_w", np.full((1, 12, 64), 0.01), np.float32), c("lstm_r", np.full((1, 12, 3), 0.01), np.float32),
        c("gru_w", np.full((2, 9, 64), 0.01), np.float32), c("gru_r", np.full((2, 9, 3), 0.01), np.float32),
    ]
    outs = ["r1", "r2", "r3", "r4", "r5", "r6", "r6b", "r7", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
            "r15", "r15h", "r15c", "r16", "r16h", "r17", "r18", "r19"]
    g = helper.make_graph(
        nodes,
        "reshape_targets",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "s", 64]),
            helper.make_tensor_value_info("ids", TensorProto.INT64, ["b", "s"]),
        ],
        [helper.make_empty_tensor_value_info(o) for o in outs],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def sub_model(m, out):
    """The part of `m` that computes `out`, every value of it an output."""
    need, nodes = {out}, []
    for n in reversed(m.graph.node):
        if any(o in need for o in n.output):
            nodes.append(n)
            need.update(i for i in n.input if i)
    nodes.reverse()
    g = helper.make_graph(
        nodes, out, list(m.graph.input),
        [helper.make_empty_tensor_value_info(out)],
        [t for t in m.graph.initializer if t.name in need],
    )
    sm = helper.make_model(g, opset_imports=list(m.opset_import))
    sm.ir_version = m.ir_version
    return sm


def main():
    ort.set_default_logger_severity(3)
    rng = np.random.default_rng(0)
    m = model()
    onnx.save(m, os.path.join(OUT, "reshape_targets.onnx"))
    grid = [{"b": b, "s": s} for b, s in itertools.product((0, 1, 2, 3), (0, 1, 2, 5, 8, 9, 16, 17))]
    inputs = {
        tuple(z.items()): {
            "x": rng.standard_normal((z["b"], z["s"], 64)).astype(np.float32),
            "ids": rng.integers(0, 100, (z["b"], z["s"])).astype(np.int64),
        }
        for z in grid
    }
    feeds = lambda z: inputs[tuple(z.items())]
    # One sub-model per output: a size set one Reshape refuses (a -1 beside a 0) still gives
    # every other output's shapes.
    runs = [{"bindings": z, "shapes": {}, "values": {}, "refused": []} for z in grid]
    rnn = {"r15", "r16"}
    for out in [o.name for o in m.graph.output]:
        sub_grid = [z for z in grid if z["b"] > 0 and z["s"] > 0] if out.rstrip("hc") in rnn else grid
        subs = iter(run_grid(sub_model(m, out), feeds, sub_grid))
        for run in runs:
            if run["bindings"] not in sub_grid:
                continue
            sub = next(subs)
            if "error" in sub:
                run["refused"].append(out)
                continue
            run["shapes"].update(sub["shapes"])
            run["values"].update(sub["values"])
    with open(os.path.join(OUT, "reshape_targets.json"), "w") as f:
        json.dump({"model": "tests/data/propagation/reshape_targets.onnx", "runs": runs}, f, indent=0)
    for r in runs:
        print(r["bindings"], "refused:", r["refused"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
