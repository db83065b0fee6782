"""Issue #16, acceptance 2: slice output dims on the dynamic ONNX fixtures, side by side with
ONNX Runtime's symbolic shape inference, each checked against the real shapes.

For every `models/*.onnx` whose graph inputs have a symbolic or unknown dim:
- ours: the dims `slice-opt MODEL -o OUT --passes infer` writes for each slice output (ONNX
  `dim_param` expressions in ONNX Runtime's syntax, values, or nothing);
- ORT: `python -m onnxruntime.tools.symbolic_shape_infer` on the same model;
- truth: the slice outputs' shapes when ONNX Runtime runs the model on `NAME.io.npz`.
A written dim is "right" when, with the input symbols bound to the `.io.npz` sizes, it evaluates
to the real size; "?" is unknown. slice-opt must have no wrong dim and no "?" where ORT is right.

Usage: python3 tools/ort_dims_compare.py [--bin target/debug/slice-opt] [--fail-on wrong|missing]
Exit status 1 when slice-opt writes a wrong dim, or (`--fail-on missing`, the default) misses one
ORT gets right. CI runs `--fail-on missing` (since shape propagation feeds the slices whose
parameters come from `Shape`: 24/24 right, 0 wrong, none missing).
"""

import argparse
import glob
import math
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort


def dims_of(vi):
    out = []
    for d in vi.type.tensor_type.shape.dim:
        if d.HasField("dim_value"):
            out.append(d.dim_value)
        elif d.HasField("dim_param"):
            out.append(d.dim_param)
        else:
            out.append(None)
    return out


def value_dims(model, names):
    g = model.graph
    found = {}
    for vi in list(g.value_info) + list(g.output):
        if vi.name in names and vi.type.tensor_type.HasField("shape"):
            found[vi.name] = dims_of(vi)
    return found


def evaluate(dim, binding):
    """The value of a written dim under `binding` (symbol -> size), or None if unknown."""
    if dim is None:
        return None
    if isinstance(dim, int):
        return dim
    expr = dim
    env = {"min": min, "max": max, "Min": min, "Max": max, "floor": math.floor}
    for name in sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", expr)), key=len, reverse=True):
        if name in env:
            continue
        if name not in binding:
            return None
        env[name] = binding[name]
    try:
        return int(eval(expr, {"__builtins__": {}}, env))  # noqa: S307 (our own test expressions)
    except Exception:
        return None


def binding_of(model, feeds):
    b = {}
    for i in model.graph.input:
        if i.name not in feeds:
            continue
        for d, v in zip(dims_of(i), feeds[i.name].shape):
            if isinstance(d, str):
                b[d] = int(v)
    return b


def real_shapes(path, names, feeds):
    m = onnx.load(path)
    have = {o.name for o in m.graph.output}
    for n in names:
        if n not in have:
            m.graph.output.append(onnx.helper.make_empty_tensor_value_info(n))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(names, feeds)
    return {n: list(o.shape) for n, o in zip(names, outs)}


def show(dims):
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/debug/slice-opt")
    ap.add_argument("--models", default="models")
    ap.add_argument("--fail-on", choices=["wrong", "missing"], default="missing")
    args = ap.parse_args()
    bad = 0
    totals = {"ours_right": 0, "ort_right": 0, "ours_wrong": 0, "ort_wrong": 0, "dims": 0}
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(glob.glob(os.path.join(args.models, "*.onnx"))):
            model = onnx.load(path, load_external_data=False)
            dynamic = any(not isinstance(d, int) for i in model.graph.input for d in dims_of(i))
            npz = path[: -len(".onnx")] + ".io.npz"
            if not dynamic or not os.path.exists(npz):
                continue
            slices = [n.output[0] for n in model.graph.node if n.op_type in ("Slice", "StridedSlice")]
            if not slices:
                continue
            z = np.load(npz)
            feeds = {i.name: z[f"x{k}"] for k, i in enumerate(model.graph.input) if f"x{k}" in z.files}
            name = os.path.basename(path)
            ours_path = os.path.join(tmp, "ours_" + name)
            r = subprocess.run([args.bin, path, "-o", ours_path, "--passes", "infer", "-q"], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name}: slice-opt failed: {r.stderr.strip()}")
                bad += 1
                continue
            ort_path = os.path.join(tmp, "ort_" + name)
            r = subprocess.run(
                [sys.executable, "-m", "onnxruntime.tools.symbolic_shape_infer", "--input", path, "--output", ort_path, "--auto_merge"],
                capture_output=True,
                text=True,
            )
            ort_dims = value_dims(onnx.load(ort_path, load_external_data=False), slices) if r.returncode == 0 else {}
            ours_dims = value_dims(onnx.load(ours_path, load_external_data=False), slices)
            real = real_shapes(path, slices, feeds)
            binding = binding_of(model, feeds)
            print(f"{name}  (inputs {binding})")
            for s in slices:
                truth = real[s]
                o = ours_dims.get(s, [None] * len(truth))
                t = ort_dims.get(s, [None] * len(truth))
                marks = []
                for i, w in enumerate(truth):
                    ov = evaluate(o[i] if i < len(o) else None, binding)
                    tv = evaluate(t[i] if i < len(t) else None, binding)
                    totals["dims"] += 1
                    totals["ours_right"] += ov == w
                    totals["ort_right"] += tv == w
                    totals["ours_wrong"] += ov is not None and ov != w
                    totals["ort_wrong"] += tv is not None and tv != w
                    if ov is not None and ov != w:
                        marks.append(f"dim {i}: ours WRONG ({o[i]} = {ov}, real {w})")
                        bad += 1
                    elif ov is None and tv == w:
                        marks.append(f"dim {i}: ours unknown where ORT is right ({t[i]})")
                        bad += args.fail_on == "missing"
                    if tv is not None and tv != w:
                        marks.append(f"dim {i}: ORT wrong ({t[i]} = {tv}, real {w})")
                print(f"  {s:24} real {show(truth):18} ours {show(o):40} ORT {show(t)}")
                for m in marks:
                    print(f"    {m}")
    print(
        f"{totals['dims']} slice output dims: slice-opt right {totals['ours_right']}, wrong {totals['ours_wrong']}; "
        f"ORT right {totals['ort_right']}, wrong {totals['ort_wrong']}"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
