#!/usr/bin/env python3
"""Issue 17, acceptance 1 (rank part): for each ONNX model, how many top-level slices have a data
input of known rank for slice-opt (`check --format json`, column `input`) and for ONNX's own
`onnx.shape_inference.infer_shapes(model, data_prop=True)`; and which slices ONNX knows and we
do not (must be none).

    python3 tools/rank_counts.py [--bin target/release/slice-opt] [model.onnx ...]

Default models: /tmp/corpus/onnx/*.onnx (the PyPI wheel corpus). Slices inside If/Loop/Scan
bodies are counted apart ("in bodies"): `check` lists top-level slices only for now.
Exit status 1 if some slice's rank is known to ONNX but not to slice-opt.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

import onnx
from onnx import shape_inference

SLICES = ("Slice", "StridedSlice")


def ranks(graph):
    out = {}
    for vi in list(graph.value_info) + list(graph.input) + list(graph.output):
        t = vi.type.tensor_type
        if vi.type.HasField("tensor_type") and t.HasField("shape"):
            out[vi.name] = len(t.shape.dim)
    for init in graph.initializer:
        out[init.name] = len(init.dims)
    for n in graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    out[n.output[0]] = len(a.t.dims)
    return out


def body_slices(graph):
    count = 0
    for n in graph.node:
        for a in n.attribute:
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs)):
                count += sum(1 for m in g.node if m.op_type in SLICES) + body_slices(g)
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=None)
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = args.bin or next(
        (p for p in (os.path.join(root, "target", d, "slice-opt") for d in ("release", "debug")) if os.path.exists(p)),
        None,
    )
    models = args.models or sorted(glob.glob("/tmp/corpus/onnx/*.onnx"))
    print("| model | top-level slices | rank known: slice-opt | rank known: ONNX data_prop | ONNX only | in bodies |")
    print("|---|---:|---:|---:|---:|---:|")
    missing_total = 0
    for path in models:
        m = onnx.load(path)
        top = [n for n in m.graph.node if n.op_type in SLICES]
        try:
            inferred = shape_inference.infer_shapes(m, data_prop=True)
            onnx_ranks = ranks(inferred.graph)
        except Exception as e:  # ONNX refuses the model
            print(f"  ({os.path.basename(path)}: infer_shapes failed: {e})", file=sys.stderr)
            onnx_ranks = {}
        onnx_known = {n.name or n.output[0] for n in top if n.input[0] in onnx_ranks}
        res = subprocess.run([binary, "check", "--format", "json", path], capture_output=True, text=True)
        try:
            rows = json.loads(res.stdout)["rows"]
        except (ValueError, KeyError):
            print(f"  ({os.path.basename(path)}: check failed: {res.stderr.strip()[:200]})", file=sys.stderr)
            rows = []
        ours = {r["node"].strip("()") for r in rows if r.get("input", "?") != "?"}
        only_onnx = sorted(onnx_known - ours)
        missing_total += len(only_onnx)
        print(
            f"| {os.path.basename(path)} | {len(top)} | {len(ours)} | {len(onnx_known)} | {len(only_onnx)} | {body_slices(m.graph)} |"
        )
        for name in only_onnx[:10]:
            print(f"  ONNX knows the rank, slice-opt does not: {name}", file=sys.stderr)
    return 1 if missing_total else 0


if __name__ == "__main__":
    sys.exit(main())
