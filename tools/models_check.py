"""CI check (issues 5-7): run slice-opt on every fixture under models/ and compare the transformed
model's outputs with the expected outputs in NAME.io.npz, in ONNX Runtime (ONNX) and OpenVINO
(IR, CPU plugin with f32 inference precision). Prints the Slice/StridedSlice node counts before
and after each model.

Usage: python3 tools/models_check.py [--bin target/release/slice-opt] [--passes infer,fold,cleanup]
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np


def slice_count_onnx(path):
    import onnx

    g = onnx.load(path, load_external_data=False).graph
    return sum(1 for n in g.node if n.op_type in ("Slice", "StridedSlice"))


def slice_count_ir(path):
    import xml.etree.ElementTree as ET

    return sum(1 for l in ET.parse(path).getroot().iter("layer") if l.get("type") in ("Slice", "StridedSlice"))


def run_onnx(path, inputs):
    import onnxruntime as ort

    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, {i.name: inputs[k] for k, i in enumerate(s.get_inputs())})


def run_ir(path, inputs):
    import openvino as ov

    core = ov.Core()
    m = core.compile_model(core.read_model(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    res = m(inputs)
    return [res[o] for o in m.outputs]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join("target", "release", "slice-opt"))
    ap.add_argument("--passes", default="infer,fold,cleanup")
    ap.add_argument("--formats", default="onnx,ir")
    args = ap.parse_args()
    formats = args.formats.split(",")
    fixtures = []
    if "onnx" in formats:
        fixtures += [(f, "onnx") for f in sorted(glob.glob("models/*.onnx"))]
    if "ir" in formats:
        fixtures += [(f, "ir") for f in sorted(glob.glob("models/*.xml"))]
    ok = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for f, kind in fixtures:
            base = os.path.basename(f)
            name = base.split(".")[0]
            npz = np.load(f"models/{name}.io.npz")
            inputs = [npz[f"x{i}"] for i in range(len([k for k in npz.files if k.startswith("x")]))]
            expected = [npz[f"y{i}"] for i in range(len([k for k in npz.files if k.startswith("y")]))]
            out = os.path.join(tmp, base)
            r = subprocess.run([args.bin, f, "-o", out, "--passes", args.passes, "-q"], capture_output=True, text=True)
            problem = None
            if r.returncode != 0:
                problem = f"slice-opt exit {r.returncode}: {r.stderr.strip()}"
            else:
                try:
                    got = run_onnx(out, inputs) if kind == "onnx" else run_ir(out, inputs)
                    for k, (g, e) in enumerate(zip(got, expected)):
                        if g.shape != e.shape or not np.allclose(g, e, rtol=1e-4, atol=1e-4):
                            problem = f"output {k} differs (shape {g.shape} vs {e.shape})"
                except Exception as e:  # noqa: BLE001 - any runtime failure is a failed check
                    problem = f"runtime: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
            count = slice_count_onnx if kind == "onnx" else slice_count_ir
            counts = f"slices {count(f)} -> {count(out) if os.path.exists(out) else '?'}"
            if problem:
                failed += 1
                print(f"FAIL {base:32} {counts}: {problem}")
            else:
                ok += 1
                print(f"ok   {base:32} {counts}")
    print(f"models ({args.passes}): {ok} passed, {failed} failed")
    return 1 if failed or ok == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
