#!/usr/bin/env python3
"""`--verify` over the export corpus: one line per ONNX file, verified or not and why, and counts.

    python3 tools/verify_exports.py [--bin target/debug/slice-opt] [--dir tests/data/exports] [--json out.json]

Each model is transformed with the default passes and `--verify` into a temporary directory; the
verdict is the `verify` line the CLI prints. Causes of "not verified" are grouped by a short key
(an op tract does not implement, a tract panic, a tract error, ...). Exit 0 always: it measures.
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile


def cause(msg):
    m = re.search(r"(?:no|unsupported|unimplemented|unknown) (?:op|operator)[^']*'?([A-Za-z0-9_]+)", msg, re.I)
    if m:
        return "op not in tract: " + m.group(1)
    if "tract panicked" in msg:
        return "tract panicked: " + re.sub(r"\d+", "N", msg.split("tract panicked:", 1)[1].strip())[:70]
    if "Loop detected" in msg:
        return "Loop detected (cycle)"
    if "too large" in msg:
        return "inputs too large"
    if "over the" in msg:
        return "over a budget"
    return re.sub(r"\d+", "N", msg)[:90]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/debug/slice-opt")
    ap.add_argument("--dir", default="tests/data/exports")
    ap.add_argument("--json")
    ap.add_argument("--time", default="120", help="--verify-time per model, seconds")
    args = ap.parse_args()
    files = sorted(f for f in os.listdir(args.dir) if f.endswith(".onnx"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            out = os.path.join(tmp, f)
            p = subprocess.run(
                [args.bin, os.path.join(args.dir, f), "-o", out, "--verify", "--verify-time", args.time],
                capture_output=True, text=True,
            )
            text = p.stdout + p.stderr
            line = next((l.strip() for l in text.splitlines() if l.strip().startswith("verify")), None)
            if line is None:
                status, why = "error", (text.strip().splitlines() or ["(no output)"])[-1]
            else:
                body = line[len("verify"):].strip()
                if body.startswith("NOT verified") or body.startswith("not verified"):
                    status, why = "not verified", body.split(":", 1)[1].strip() if ":" in body else body
                elif body.startswith("FAILED") or "failed" in body.lower().split(":")[0]:
                    status, why = "failed", body
                else:
                    status, why = "verified", body
            rows.append({"file": f, "status": status, "detail": why, "exit": p.returncode})
            print(f"{f:50} {status:13} {why[:160]}", flush=True)
    counts = collections.Counter(r["status"] for r in rows)
    causes = collections.Counter(cause(r["detail"]) for r in rows if r["status"] != "verified")
    print()
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())), f"(of {len(rows)})")
    for c, n in causes.most_common():
        print(f"  {n:3}  {c}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "counts": counts, "causes": causes}, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
