"""CI check (issue 17, acceptance 3): the passes inside subgraph bodies. For each model with
slices in `If`/`Loop` bodies and each pass set, runs slice-opt with a JSON report, then runs the
original and the written model in ONNX Runtime (ONNX) or OpenVINO (IR, CPU plugin, f32 inference
precision) on the inputs of its `.io.npz` and compares both with the expected outputs there.
Prints, per model and pass set, how many body nodes the report names as changed (a path with
`/`) and the Slice/StridedSlice counts inside bodies before and after; `--expect-changes` makes
a pass set that changes nothing in the bodies of a model listed with that pass a failure.

Models: models/loop_body_slice.onnx (ONNX Loop), models/loop_body_slice.tf.xml (IR Loop-5 with
a StridedSlice), models/if_outer_slice.onnx (ONNX If), models/if_outer_slice.onnx.xml (IR If
with Slice-8 in both bodies), tests/data/subgraph/body_fold.onnx (ONNX If with constant
slices, one nested If), tests/data/subgraph/slices.onnx (If and Loop whose body slices a
kept, an outer and a growing carried value; tools/gen_subgraph_slices.py; expected outputs: the
original's in ONNX Runtime), tests/data/subgraph/body_if.xml (IR If: a StridedSlice of a body
constant, a Slice-8), tests/data/subgraph/body_ti.xml (IR TensorIterator: a StridedSlice of a
body constant, one of the iteration's part); see tools/gen_body_passes.py.

Usage: python3 tools/body_check.py [--bin target/release/slice-opt]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models_check import run_ir, run_onnx  # noqa: E402  (ONNX Runtime / OpenVINO f32 runners)

PASS_SETS = ["infer,fold,cleanup", "lower", "raise", "lower,raise"]

# (model, io.npz, pass sets expected to change something inside a body)
MODELS = [
    ("models/loop_body_slice.onnx", "models/loop_body_slice.io.npz", ["infer,fold,cleanup"]),
    ("models/loop_body_slice.tf.xml", "models/loop_body_slice.io.npz", ["infer,fold,cleanup", "lower", "lower,raise"]),
    ("models/if_outer_slice.onnx", "models/if_outer_slice.io.npz", ["infer,fold,cleanup", "raise", "lower,raise"]),
    ("models/if_outer_slice.onnx.xml", "models/if_outer_slice.io.npz", ["raise", "lower,raise"]),
    ("tests/data/subgraph/body_fold.onnx", "tests/data/subgraph/body_fold.io.npz", ["infer,fold,cleanup"]),
    ("tests/data/subgraph/slices.onnx", None, ["infer,fold,cleanup"]),
    ("tests/data/subgraph/body_if.xml", "tests/data/subgraph/body_if.io.npz", PASS_SETS),
    ("tests/data/subgraph/body_ti.xml", "tests/data/subgraph/body_ti.io.npz", ["infer,fold,cleanup", "lower", "lower,raise"]),
]


def slices_cases():
    """tests/data/subgraph/slices.onnx (tools/gen_subgraph_slices.py) has no io.npz: inputs for
    both branches and 1 and 3 iterations; the expected outputs are the original model's in ONNX
    Runtime."""
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    y = (np.arange(24, dtype=np.float32).reshape(3, 8) - 5) * 0.5
    w = np.array([[1.0, -2.0, 3.0, 0.5]], np.float32)
    out = []
    for c in (True, False):
        for m in (1, 3):
            inputs = [x, np.array(c), np.array(m, np.int64), y, w]
            out.append((inputs, run_onnx("tests/data/subgraph/slices.onnx", inputs)))
    return out


def cases(npz):
    """[(inputs, expected outputs)]: `x{i}`/`y{j}`, or `case{k}_x{i}`/`case{k}_y{j}`."""
    if npz is None:
        return slices_cases()
    def one(prefix):
        xs = sorted((k for k in npz.files if k.startswith(prefix + "x")), key=lambda k: int(k[len(prefix) + 1:]))
        ys = sorted((k for k in npz.files if k.startswith(prefix + "y")), key=lambda k: int(k[len(prefix) + 1:]))
        return [npz[k] for k in xs], [npz[k] for k in ys]
    if "x0" in npz.files:
        return [one("")]
    k = 0
    out = []
    while f"case{k}_x0" in npz.files:
        out.append(one(f"case{k}_"))
        k += 1
    return out


def body_slices_onnx(path):
    import onnx

    def walk(g, depth):
        n = 0
        for node in g.node:
            if depth > 0 and node.op_type in ("Slice", "StridedSlice"):
                n += 1
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    n += walk(a.g, depth + 1)
                for sg in a.graphs:
                    n += walk(sg, depth + 1)
        return n

    return walk(onnx.load(path, load_external_data=False).graph, 0)


def tf_nodes(path):
    """Nodes of the `org.tensorflow` domain anywhere in the model (bodies too)."""
    import onnx

    def walk(g):
        n = 0
        for node in g.node:
            n += node.domain == "org.tensorflow"
            for a in node.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    n += walk(a.g)
                for sg in a.graphs:
                    n += walk(sg)
        return n

    return walk(onnx.load(path, load_external_data=False).graph)


def body_slices_ir(path):
    counts = {}
    root = ET.parse(path).getroot()
    for layer in root.find("layers"):
        for body in layer:
            if body.tag in ("body", "then_body", "else_body"):
                for l in body.iter("layer"):
                    t = l.get("type")
                    if t in ("Slice", "StridedSlice"):
                        counts[t] = counts.get(t, 0) + 1
    return ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "none"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join("target", "release", "slice-opt"))
    args = ap.parse_args()
    ok = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for model, io, expect in MODELS:
            kind = "ir" if model.endswith(".xml") else "onnx"
            run = run_ir if kind == "ir" else run_onnx
            count = body_slices_ir if kind == "ir" else body_slices_onnx
            npz = np.load(io) if io else None
            for passes in PASS_SETS:
                base = os.path.basename(model)
                out = os.path.join(tmp, f"{passes.replace(',', '_')}_{base}")
                rep = out + ".json"
                r = subprocess.run([args.bin, model, "-o", out, "--passes", passes, "--report", rep, "-q"],
                                   capture_output=True, text=True)
                problem = None
                changed = []
                note = ""
                if r.returncode != 0:
                    problem = f"slice-opt exit {r.returncode}: {r.stderr.strip()}"
                else:
                    report = json.load(open(rep))
                    changed = [c["node"] for p in report["passes"] for c in p["changes"] if "/" in c["node"]]
                    if passes in expect and not changed:
                        problem = "no body node changed"
                    runnable = out
                    if kind == "onnx":
                        import onnx

                        onnx.checker.check_model(onnx.load(out))
                        if tf_nodes(out):
                            # ONNX Runtime has no TF-style StridedSlice (what `raise` makes in
                            # ONNX): run the model after lowering it back.
                            runnable = out + ".lowered.onnx"
                            r2 = subprocess.run([args.bin, out, "-o", runnable, "--passes", "lower", "-q"],
                                                capture_output=True, text=True)
                            if r2.returncode != 0 or tf_nodes(runnable):
                                problem = problem or f"lowering the raised model failed: {r2.stderr.strip()}"
                            note = f" ({tf_nodes(out)} TF StridedSlice, run after lower)"
                    try:
                        for k, (inputs, want) in enumerate(cases(npz)):
                            for label, path in (("original", model), ("passed", runnable)):
                                got = run(path, inputs)
                                for j, (g, e) in enumerate(zip(got, want)):
                                    if g.shape != e.shape or not np.allclose(g, e, rtol=1e-4, atol=1e-4):
                                        problem = problem or f"case {k}: {label} output {j} differs (shape {g.shape} vs {e.shape})"
                    except Exception as e:  # noqa: BLE001 - any runtime failure is a failed check
                        problem = problem or f"runtime: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
                after = count(out) if os.path.exists(out) else "?"
                line = (f"{base:22} {passes:20} body changes {len(changed):2}  "
                        f"body slices {count(model)} -> {after}  cases {len(cases(npz))}{note}")
                if problem:
                    failed += 1
                    print(f"FAIL {line}: {problem}")
                else:
                    ok += 1
                    print(f"ok   {line}")
    print(f"body passes: {ok} passed, {failed} failed")
    return 1 if failed or ok == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
