"""CI check (issue 3): round-trip every ONNX fixture through `slice-opt --passes none` and verify
with the onnx package that the output is valid (`onnx.checker.check_model`), decodes to the same
ModelProto, and is byte-identical (all fixtures were written by the onnx Python package).

Usage: python3 tools/onnx_roundtrip_check.py [--bin target/release/slice-opt]
"""

import argparse
import glob
import os
import subprocess
import sys
import tempfile

import onnx


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join("target", "release", "slice-opt"))
    args = ap.parse_args()
    fixtures = sorted(glob.glob("tests/data/onnx_backend/*.onnx") + glob.glob("models/*.onnx"))
    ok = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for f in fixtures:
            out = os.path.join(tmp, os.path.basename(f))
            r = subprocess.run([args.bin, f, "-o", out, "--passes", "none", "-q"], capture_output=True, text=True)
            problems = []
            if r.returncode != 0:
                problems.append(f"exit {r.returncode}: {r.stderr.strip()}")
            else:
                try:
                    onnx.checker.check_model(out)
                except Exception as e:  # noqa: BLE001 - report any checker failure
                    problems.append(f"check_model: {e}")
                a, b = onnx.load(f, load_external_data=False), onnx.load(out, load_external_data=False)
                if a != b:
                    problems.append("decoded models differ")
                if open(f, "rb").read() != open(out, "rb").read():
                    problems.append("bytes differ")
            if problems:
                failed += 1
                print(f"FAIL {f}: {'; '.join(problems)}")
            else:
                ok += 1
    print(f"onnx round-trip: {ok} passed, {failed} failed")
    return 1 if failed or ok == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
