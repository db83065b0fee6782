#!/usr/bin/env python3
"""Graph-shape audit (issue 19: "nothing superlinear on any graph shape").

Generates, for K = 1,000 / 10,000 / 100,000, graphs whose shape stresses one thing each, runs
slice-opt on each with `--passes infer,fold,cleanup` and `--passes raise,lower`, and prints
every step's time per node (from `--report`) and its growth from the smallest K to the largest.
A linear step grows about 1x; 10x per 10x of K is quadratic.

Shapes (every model: opset 17, ONNX `Slice`, one symbolic input dim `n`):
- deep:       `x[1:]` applied K times in a chain (dims `n - 1`, `n - 2`, ... clamped at 0);
- fanout:     K slices `x[s:]` (s = 0, 1, 2) of one input, all reading three shared
              parameter constants, joined by one Concat of K inputs (its length is the sum
              of K clamped dims);
- shapechain: K slices `x[:n - c]` whose end is computed by `Shape(x) - c` per slice,
              joined by one Concat.

Usage: python3 bench/shapes.py --binary target/release/slice-opt [--dir /tmp/slice-opt-shapes]
       [--sizes 1000,10000,100000] [--timeout 120]
Needs: pip install onnx numpy.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh


def const(name, v):
    return nh.from_array(np.array(v, dtype=np.int64), name)


def save(nodes, inputs, outputs, inits, path):
    g = h.make_graph(nodes, os.path.basename(path), inputs, outputs, inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 17)])
    onnx.save(m, path)


def deep(k, path):
    inits = [const("s", [1]), const("e", [2**62]), const("a", [0])]
    nodes, cur = [], "x"
    for i in range(k):
        nodes.append(h.make_node("Slice", [cur, "s", "e", "a"], ["y%d" % i], name="sl%d" % i))
        cur = "y%d" % i
    save(nodes, [h.make_tensor_value_info("x", T.FLOAT, ["n"])],
         [h.make_tensor_value_info(cur, T.FLOAT, None)], inits, path)


def fanout(k, path):
    inits = [const("s0", [0]), const("s1", [1]), const("s2", [2]), const("e", [2**62]),
             const("a", [0])]
    nodes, outs = [], []
    for i in range(k):
        nodes.append(h.make_node("Slice", ["x", "s%d" % (i % 3), "e", "a"], ["y%d" % i],
                                 name="sl%d" % i))
        outs.append("y%d" % i)
    nodes.append(h.make_node("Concat", outs, ["z"], axis=0, name="cat"))
    save(nodes, [h.make_tensor_value_info("x", T.FLOAT, ["n", 4])],
         [h.make_tensor_value_info("z", T.FLOAT, None)], inits, path)


def shapechain(k, path):
    inits = [const("z", [0]), const("a", [0])]
    nodes, outs = [h.make_node("Shape", ["x"], ["sh"], name="shape")], []
    for i in range(k):
        inits.append(const("k%d" % i, [i % 5]))
        nodes.append(h.make_node("Sub", ["sh", "k%d" % i], ["e%d" % i], name="sub%d" % i))
        nodes.append(h.make_node("Slice", ["x", "z", "e%d" % i, "a"], ["y%d" % i],
                                 name="sl%d" % i))
        outs.append("y%d" % i)
    nodes.append(h.make_node("Concat", outs, ["out"], axis=0, name="cat"))
    save(nodes, [h.make_tensor_value_info("x", T.FLOAT, ["n"])],
         [h.make_tensor_value_info("out", T.FLOAT, None)], inits, path)


SHAPES = {"deep": deep, "fanout": fanout, "shapechain": shapechain}
RUNS = ["infer,fold,cleanup", "raise,lower"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="target/release/slice-opt")
    ap.add_argument("--dir", default="/tmp/slice-opt-shapes")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--timeout", type=float, default=120)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    os.makedirs(args.dir, exist_ok=True)
    rows = {}
    for shape, build in SHAPES.items():
        for k in sizes:
            path = os.path.join(args.dir, "%s_%d.onnx" % (shape, k))
            if not os.path.exists(path):
                build(k, path)
            nodes = len(onnx.load(path, load_external_data=False).graph.node)
            for passes in RUNS:
                rep = os.path.join(args.dir, "report.json")
                out = os.path.join(args.dir, "out.onnx")
                t = time.time()
                try:
                    r = subprocess.run([args.binary, path, "-o", out, "-q", "--passes", passes,
                                        "--report", rep], timeout=args.timeout)
                except subprocess.TimeoutExpired:
                    rows[(shape, passes, k)] = "timeout %.0f s" % args.timeout
                    print("%s K=%d %s: timeout" % (shape, k, passes), file=sys.stderr)
                    continue
                wall = time.time() - t
                if r.returncode != 0:
                    rows[(shape, passes, k)] = "exit %d" % r.returncode
                    continue
                rj = json.load(open(rep))
                steps = {"load": rj["load_seconds"], "save": rj["save_seconds"]}
                for p in rj["passes"]:
                    steps[p["pass"]] = steps.get(p["pass"], 0) + p["seconds"]
                rows[(shape, passes, k)] = {s: v / nodes * 1e6 for s, v in steps.items()}
                print("%s K=%d %s: %.2f s" % (shape, k, passes, wall), file=sys.stderr)
    print("| shape | run | step | " + " | ".join("K=%d µs/node" % k for k in sizes)
          + " | growth |")
    print("|---|---|---|" + "---:|" * (len(sizes) + 1))
    for shape in SHAPES:
        for passes in RUNS:
            cells = [rows.get((shape, passes, k)) for k in sizes]
            steps = next((c for c in cells if isinstance(c, dict)), {})
            for step in steps:
                vals = [c.get(step) if isinstance(c, dict) else None for c in cells]
                txt = ["%.3f" % v if v is not None else str(c) for v, c in zip(vals, cells)]
                growth = ("%.1fx" % (vals[-1] / vals[0])
                          if vals[0] and vals[-1] is not None else "n/a")
                print("| %s | %s | %s | %s | %s |" % (shape, passes, step, " | ".join(txt),
                                                     growth))


if __name__ == "__main__":
    main()
