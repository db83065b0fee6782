#!/usr/bin/env python3
"""Oracle for whole-graph shape propagation (tests/propagation.rs): runs ONNX models in ONNX
Runtime over a grid of input sizes with every intermediate value exposed as an output, and
records each value's shape per run (or the runtime's refusal).

    python3 tools/propagation_oracle.py            # writes tests/data/propagation/*.json

Models: models/gpt2_causal_mask.onnx (issue 17, acceptance 2: q_len x k_len grid) and
tests/data/propagation/ops_mix.onnx, built here: one or more nodes of every op family the
propagation has a rule for, on inputs with symbolic dims.
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


def c(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.array(values, dtype=dtype), name)


def ops_mix():
    """x[N, 3, H, W] float, y[N, T, 16] float."""
    N = helper.make_node
    nodes = [
        # conv / pool family
        N("Conv", ["x", "w1", "b1"], ["conv"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        N("Relu", ["conv"], ["relu"]),
        N("MaxPool", ["relu"], ["pool"], kernel_shape=[2, 2], strides=[2, 2]),
        N("AveragePool", ["x"], ["apool"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        N("Conv", ["x", "w2"], ["conv_same"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER", dilations=[1, 1]),
        N("ConvTranspose", ["conv", "wt"], ["deconv"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        N("GlobalAveragePool", ["pool"], ["gap"]),
        N("Flatten", ["gap"], ["flat"], axis=1),
        N("Gemm", ["flat", "wg"], ["gemm"], transB=1),
        N("Resize", ["x", "", "scales"], ["resized"], mode="nearest"),
        # shapes as values
        N("Shape", ["y"], ["ys"]),
        N("Gather", ["ys", "i0"], ["n"]),
        N("Gather", ["ys", "i1"], ["t"]),
        N("Mul", ["n", "t"], ["nt"]),
        N("Unsqueeze", ["nt", "ax0"], ["nt1"]),
        N("Concat", ["nt1", "c16"], ["tgt"], axis=0),
        N("Reshape", ["y", "tgt"], ["y2d"]),
        N("Reshape", ["y", "neg_shape"], ["yflat"]),
        N("Shape", ["x"], ["xs"]),
        N("Slice", ["xs", "s2", "s4"], ["hw"]),
        N("Div", ["hw", "two"], ["hw2"]),
        N("Concat", ["i0_1", "c3", "hw2"], ["small"], axis=0),
        N("Slice", ["small", "s1", "s2"], ["c3v"]),
        N("Size", ["y"], ["ysize"]),
        N("ConstantOfShape", ["hw"], ["zeros_hw"]),
        N("Range", ["zero", "t", "one"], ["rng"]),
        N("Cast", ["rng"], ["rngf"], to=TensorProto.FLOAT),
        # manipulation
        N("Transpose", ["y"], ["yt"], perm=[0, 2, 1]),
        N("MatMul", ["y", "yt"], ["att"]),
        N("Softmax", ["att"], ["att_sm"], axis=-1),
        N("MatMul", ["att_sm", "y"], ["ctx"]),
        N("Split", ["ctx", "split"], ["q", "k"], axis=2),
        N("Add", ["q", "k"], ["qk"]),
        N("Unsqueeze", ["qk", "ax1"], ["qk4"]),
        N("Squeeze", ["qk4", "ax1"], ["qk3"]),
        N("Expand", ["bias1", "ys"], ["bias_e"]),
        N("Greater", ["y", "bias_e"], ["gt"]),
        N("Where", ["gt", "y", "bias_e"], ["wh"]),
        N("Tile", ["y", "reps"], ["tiled"]),
        N("Pad", ["y", "pads"], ["padded"]),
        N("ReduceMean", ["y"], ["rmean"], axes=[1], keepdims=1),
        N("ReduceSum", ["y", "ax1"], ["rsum"], keepdims=0),
        N("LayerNormalization", ["y", "ln_s", "ln_b"], ["ln"], axis=-1),
        N("TopK", ["y", "k3"], ["topv", "topi"], axis=-1),
        N("Einsum", ["y", "yt"], ["ein"], equation="btc,bcs->bts"),
        N("GatherElements", ["y", "ge_idx"], ["ge"], axis=1),
        N("Concat", ["y", "padded", "tiled"], ["ycat"], axis=1),
        N("ArgMax", ["y"], ["amax"], axis=2, keepdims=0),
    ]
    inits = [
        c("w1", np.ones((4, 3, 3, 3)), np.float32),
        c("b1", np.ones(4), np.float32),
        c("w2", np.ones((5, 3, 3, 3)), np.float32),
        c("wt", np.ones((4, 2, 3, 3)), np.float32),
        c("wg", np.ones((6, 4)), np.float32),
        c("scales", [1.0, 1.0, 2.0, 2.0], np.float32),
        c("i0", 0), c("i1", 1), c("ax0", [0]), c("ax1", [1]), c("c16", [16]),
        c("neg_shape", [-1]), c("s2", [2]), c("s4", [4]), c("two", 2), c("i0_1", [1]),
        c("c3", [3]), c("s1", [1]), c("zero", 0), c("one", 1), c("split", [8, 8]),
        c("bias1", [0.5], np.float32), c("reps", [1, 2, 1]), c("pads", [0, 1, 0, 0, 2, 0]),
        c("ln_s", np.ones(16), np.float32), c("ln_b", np.zeros(16), np.float32), c("k3", [3]),
        c("ge_idx", np.zeros((1, 1, 16))),
    ]
    outs = [
        "pool", "apool", "conv_same", "deconv", "gemm", "resized", "y2d", "yflat", "c3v",
        "ysize", "zeros_hw", "rngf", "qk3", "wh", "rmean", "rsum", "ln", "topv", "topi",
        "ein", "ge", "ycat", "amax",
    ]
    g = helper.make_graph(
        nodes,
        "ops_mix",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "T", 16]),
        ],
        [helper.make_empty_tensor_value_info(o) for o in outs],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def expose_all(model):
    """A copy of `model` whose every node output is a graph output."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o and o not in have:
                m.graph.output.append(helper.make_empty_tensor_value_info(o))
                have.add(o)
    return m


def run_grid(model, feeds_for, grid, drop_last=False):
    m = expose_all(model)
    if drop_last:
        # Without the final node: the intermediate shapes of every size set the slices accept,
        # including those the final node refuses.
        last = m.graph.node[-1]
        del m.graph.node[-1]
        keep = [o for o in m.graph.output if o.name not in last.output]
        del m.graph.output[:]
        m.graph.output.extend(keep)
    so = ort.SessionOptions()
    so.log_severity_level = 4
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    runs = []
    for bindings in grid:
        try:
            outs = sess.run(None, feeds_for(bindings))
            shapes = {n: list(map(int, np.shape(v))) for n, v in zip(names, outs)}
            values = {
                n: np.asarray(v).reshape(-1).tolist()
                for n, v in zip(names, outs)
                if np.asarray(v).dtype.kind in "iu" and np.asarray(v).size <= 64
            }
            runs.append({"bindings": bindings, "shapes": shapes, "values": values})
        except Exception as e:  # the runtime refuses these sizes
            runs.append({"bindings": bindings, "error": str(e).splitlines()[0][:200]})
    return runs


def main():
    ort.set_default_logger_severity(3)
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(0)
    # Acceptance 2: gpt2_causal_mask over q_len x k_len.
    gpt2 = onnx.load(os.path.join(ROOT, "models", "gpt2_causal_mask.onnx"))
    sizes = [0, 1, 2, 3, 5, 8, 13, 16, 31, 32, 33, 40]
    grid = [{"b": b, "q_len": q, "k_len": k} for b in (1, 2) for q in sizes for k in sizes]
    feeds = lambda s: {
        "q": rng.standard_normal((s["b"], 2, s["q_len"], 8)).astype(np.float32),
        "k": rng.standard_normal((s["b"], 2, s["k_len"], 8)).astype(np.float32),
    }
    runs = run_grid(gpt2, feeds, grid, drop_last=True)
    full = run_grid(gpt2, feeds, grid)
    for r, f in zip(runs, full):
        r["accepted"] = "shapes" in f
    with open(os.path.join(OUT, "gpt2_causal_mask.json"), "w") as f:
        json.dump({"model": "models/gpt2_causal_mask.onnx", "runs": runs}, f, indent=0)
    ok = sum(r["accepted"] for r in runs)
    ran = sum("shapes" in r for r in runs)
    print(f"gpt2_causal_mask: {len(runs)} size sets; mask computed for {ran}; whole model accepted for {ok}")

    mix = ops_mix()
    path = os.path.join(OUT, "ops_mix.onnx")
    onnx.save(mix, path)
    grid = [
        {"N": n, "H": h, "W": w, "T": t}
        for n, h, w, t in itertools.product((1, 2), (8, 9, 16), (8, 11), (4, 7))
    ]
    feeds = lambda s: {
        "x": rng.standard_normal((s["N"], 3, s["H"], s["W"])).astype(np.float32),
        "y": rng.standard_normal((s["N"], s["T"], 16)).astype(np.float32),
    }
    runs = run_grid(mix, feeds, grid)
    with open(os.path.join(OUT, "ops_mix.json"), "w") as f:
        json.dump({"model": "tests/data/propagation/ops_mix.onnx", "runs": runs}, f, indent=0)
    ok = sum("shapes" in r for r in runs)
    print(f"ops_mix: {len(runs)} size sets, {ok} accepted by ONNX Runtime")
    return 0


if __name__ == "__main__":
    sys.exit(main())
