#!/usr/bin/env python3
"""slice-opt against `onnx.load` + `onnx.save`, in back-to-back pairs on the same model.

Each pair measures as `bench.py` does (output deleted and `sync` before every run): slice-opt
best of 3, then the peer once, right after, so both see the machine in the same state. It
prints every pair's ratio and how many pairs are at or under `--bar` (issue 19: 0.5x).

    python3 bench/pairs.py --binary target/release/slice-opt --pairs 8 wide_100k.onnx nodes_100k.onnx

Models are read from `--bench-dir` (`bench/gen_models.py` makes them); outputs are written
beside them and removed. Needs `onnx`.
"""

import argparse
import os
import subprocess
import sys
import time

PEER = "import sys, onnx; m = onnx.load(sys.argv[1]); onnx.save(m, sys.argv[2])"


def timed(cmd, out):
    if os.path.exists(out):
        os.remove(out)
    subprocess.run(["sync"], check=True)
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--bench-dir", default="/tmp/slice-opt-bench")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--reps", type=int, default=3, help="slice-opt runs per pair (best kept)")
    ap.add_argument("--bar", type=float, default=0.5)
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    for model in args.models:
        path = os.path.join(args.bench_dir, model)
        out = os.path.join(args.bench_dir, "out_pairs" + os.path.splitext(model)[1])
        ratios = []
        for k in range(args.pairs):
            ours = min(timed([args.binary, path, "-o", out, "-q"], out) for _ in range(args.reps))
            peer = timed([sys.executable, "-c", PEER, path, out], out)
            ratios.append(ours / peer)
            print(f"{model} pair {k}: slice-opt {ours:.3f} s, onnx.load+save {peer:.3f} s, "
                  f"{ours / peer:.3f}x", flush=True)
        if os.path.exists(out):
            os.remove(out)
        met = sum(r <= args.bar for r in ratios)
        print(f"{model}: {met} of {len(ratios)} pairs at or under {args.bar}x "
              f"(ratios {min(ratios):.3f}-{max(ratios):.3f})", flush=True)


if __name__ == "__main__":
    main()
