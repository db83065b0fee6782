"""Issue 15, acceptance 3, in ONNX Runtime: the exporter-style shape chains that
`cargo test --test fold_conformance exporter_shape_chains_fold_completely` folds (it writes each
original and folded model to target/tmp/fold_chains/) give the same outputs in ONNX Runtime, and
no Shape, Gather, Unsqueeze, Squeeze, Concat, Cast, Range, ConstantOfShape or integer arithmetic
node is left.

Usage: cargo test --test fold_conformance exporter_shape_chains && python3 tools/fold_chain_check.py
"""

import glob
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

CHAIN = {"Shape", "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast", "Range", "ConstantOfShape", "Sub", "Div"}


def run(path, feeds):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def main() -> int:
    files = sorted(glob.glob(os.path.join("target", "tmp", "fold_chains", "*.orig.onnx")))
    if not files:
        print("no models: run the cargo test first")
        return 1
    bad = 0
    for orig in files:
        folded = orig.replace(".orig.onnx", ".folded.onnx")
        m = onnx.load(orig)
        feeds = {}
        for i in m.graph.input:
            shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
            n = int(np.prod(shape)) if shape else 1
            feeds[i.name] = np.sin(np.arange(n, dtype=np.float32) * 0.37).reshape(shape)
        a, b = run(orig, feeds), run(folded, feeds)
        ops = [n.op_type for n in onnx.load(folded).graph.node]
        left = sorted(set(ops) & CHAIN)
        same = len(a) == len(b) and all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a, b))
        name = os.path.basename(orig).replace(".orig.onnx", "")
        before = len(m.graph.node)
        print(f"{name}: {before} -> {len(ops)} nodes {ops}; outputs {'equal' if same else 'DIFFER'} in ONNX Runtime; chain ops left: {left or 'none'}")
        bad += (not same) or bool(left)
    print(f"{len(files) - bad}/{len(files)} ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
