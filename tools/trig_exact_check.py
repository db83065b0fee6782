#!/usr/bin/env python3
"""Bit-exact companion of `tools/fold_vs_onnxsim.py` for the ONNX export corpus: the same run
(every symbol fixed to the manifest's first sizes, slice-opt's default passes, ONNX Runtime on
the original and on ours at those sizes), and for each model whether ours gives every output
element with the original's exact bits (floats compared as bit patterns), besides the script's
own `np.allclose(rtol=1e-4, atol=1e-5)`.

Folding `Sin`, `Cos`, `Log` (`src/ops/eval/transcendental.rs`) and cubic `Resize`
(`src/ops/eval/resize.rs`) must not change one bit of
any output: run this with the binary before and after such a change and compare.

Usage: /work/venv-exports/bin/python tools/trig_exact_check.py --bin target/release/slice-opt
           [--dir tests/data/exports] [--only SUBSTR] [--json FILE]
Prints one line per model (`exact` / `close` / `DIFFERENT`, and the ops of the original that
slice-opt folds here: Sin, Cos, Log, Resize) and a summary.
"""

import argparse
import glob
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fold_vs_onnxsim as fvo  # noqa: E402


def bits_equal(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if x.dtype.kind == "f":
            w = {2: np.uint16, 4: np.uint32, 8: np.uint64}[x.dtype.itemsize]
            if not np.array_equal(x.view(w), y.view(w)):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--dir", default="tests/data/exports")
    ap.add_argument("--only", default="")
    ap.add_argument("--json")
    a = ap.parse_args()
    import subprocess
    import re

    import onnx

    help_text = subprocess.run([a.bin, "--help"], capture_output=True, text=True).stdout
    dim_flag = bool(re.search(r"--dim <NAME=SIZE", help_text))
    manifest = {}
    for mf in sorted(glob.glob(os.path.join(a.dir, "manifest*.json"))):
        with open(mf) as f:
            manifest.update(json.load(f)["models"])
    # Record every comparison fold_vs_onnxsim makes: (reference, candidate) pairs, ours first.
    seen = []
    close = fvo.same

    def same(x, y):
        seen.append((close(x, y), bits_equal(x, y)))
        return seen[-1][0]

    fvo.same = same
    args = argparse.Namespace(bin=a.bin, dir=a.dir, runs=1)
    rows = []
    for fname in sorted(manifest):
        if a.only not in fname or not fname.endswith(".onnx"):
            continue
        if not os.path.exists(os.path.join(a.dir, fname)):
            continue
        seen.clear()
        with tempfile.TemporaryDirectory() as tmp:
            try:
                fvo.onnx_model(args, fname, manifest[fname], tmp, dim_flag)
            except Exception as e:  # noqa: BLE001
                print(f"{fname:48} error {type(e).__name__}: {str(e)[:150]}")
                rows.append({"model": fname, "error": str(e)[:200]})
                continue
        g = onnx.load(os.path.join(a.dir, fname), load_external_data=False).graph
        trig = sorted({n.op_type for n in g.node if n.op_type in ("Sin", "Cos", "Log", "Resize")})
        if not seen:
            print(f"{fname:48} not compared")
            rows.append({"model": fname, "compared": False})
            continue
        ok_close, ok_exact = seen[0]
        verdict = "exact" if ok_exact else ("close" if ok_close else "DIFFERENT")
        print(f"{fname:48} {verdict:9} {' '.join(trig)}")
        sys.stdout.flush()
        rows.append({"model": fname, "close": ok_close, "exact": ok_exact, "trig": trig})
    done = [r for r in rows if "exact" in r]
    print(
        f"\n{len(done)} models compared: {sum(r['exact'] for r in done)} bit-exact, "
        f"{sum(r['close'] and not r['exact'] for r in done)} only close, "
        f"{sum(not r['close'] for r in done)} different; with Sin/Cos/Log/Resize: "
        f"{sum(r['exact'] for r in done if r['trig'])} of {sum(1 for r in done if r['trig'])} bit-exact"
    )
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r.get("close", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
