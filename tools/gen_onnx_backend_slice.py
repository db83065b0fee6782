"""Writes the ONNX backend node test models for Slice (`test_slice*`) into tests/data/onnx_backend/.

The onnx wheel ships the test-case generators but not their model files; this script runs the
generators of the Slice cases and saves each model with `onnx.save` (so the files are exactly as
the onnx Python package writes them), plus the inputs/outputs as .npz.

Usage: python3 tools/gen_onnx_backend_slice.py [OUT_DIR]
"""

import os
import sys

import numpy as np
import onnx
from onnx.backend.test.case.node import collect_testcases


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join("tests", "data", "onnx_backend")
    os.makedirs(out, exist_ok=True)
    cases = collect_testcases("Slice")
    n = 0
    for case in cases:
        if not case.name.startswith("test_slice"):
            continue
        onnx.save(case.model, os.path.join(out, case.name + ".onnx"))
        for inputs, outputs in case.data_sets:
            np.savez(
                os.path.join(out, case.name + ".io.npz"),
                **{f"x{i}": a for i, a in enumerate(inputs)},
                **{f"y{i}": a for i, a in enumerate(outputs)},
            )
            break
        n += 1
    print(f"wrote {n} models to {out}")


if __name__ == "__main__":
    main()
