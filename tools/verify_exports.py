#!/usr/bin/env python3
"""`--verify` over the export corpus: one line per ONNX file, verified or not and why, and counts.

    python3 tools/verify_exports.py [--bin target/debug/slice-opt] [--dir tests/data/exports] [--json out.json]
    python3 tools/verify_exports.py --counts out.json      # the counts of a run written before

Each model is transformed with the default passes and `--verify` into a temporary directory; the
verdict is the `verify` line the CLI prints. Causes of "not verified" are grouped by a short key
(an op tract does not implement, a tract panic, a tract error, ...). Exit 0 unless `--strict`:
then exit 1 when a model is not verified for any reason but an op tract-onnx does not implement
(issue 45, acceptance 1; CI runs it so).
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
    """A short key for why a model was not verified."""
    m = re.search(r"does not implement the op ([A-Za-z0-9_]+)", msg) or re.search(r"Unimplemented\(([A-Za-z0-9_]+)\)", msg)
    if m:
        return "op not in tract-onnx: " + m.group(1)
    if "; with the last: " in msg:
        msg = msg.split("; with the last: ", 1)[1]
    if "Loop detected" in msg:
        return "cycle after inlining an If (Loop detected)"
    if "tract panicked" in msg:
        return "tract panicked: " + re.sub(r"\d+", "N", msg.split("tract panicked:", 1)[1].strip())[:60]
    if "contradict" in msg:
        return "sizes contradict a stated relation"
    if "too large" in msg:
        return "inputs too large"
    if "over the memory budget" in msg:
        return "over the memory budget"
    if "over the time budget" in msg:
        return "over the time budget"
    if "Impossible to unify" in msg or "broadcast" in msg:
        return "tract analysis: shapes do not unify"
    return re.sub(r"\d+", "N", msg)[:90]


def reclassify(path):
    """Prints the counts of a --json file written before (for comparing two runs)."""
    with open(path) as fh:
        rows = json.load(fh)["rows"]
    summarize(rows)


def summarize(rows):
    counts = collections.Counter(r["status"] for r in rows)
    causes = collections.Counter(cause(r["detail"]) for r in rows if r["status"] != "verified")
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())), f"(of {len(rows)})")
    for c, n in causes.most_common():
        print(f"  {n:3}  {c}")
    return counts, causes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/debug/slice-opt")
    ap.add_argument("--dir", default="tests/data/exports")
    ap.add_argument("--json")
    ap.add_argument("--time", default="120", help="--verify-time per model, seconds")
    ap.add_argument("--counts", help="only print the counts of a --json file written before")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 when a model is not verified for a reason other than an op tract lacks")
    args = ap.parse_args()
    if args.counts:
        reclassify(args.counts)
        return 0
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
            line = next((l.strip() for l in text.splitlines() if l.strip().startswith("verify ")), None)
            if line is None:
                status, why = "error", (text.strip().splitlines() or ["(no output)"])[-1]
            else:
                body = line[len("verify"):].strip()
                if body.startswith("NOT verified"):
                    status, why = "not verified", body.split(":", 1)[1].strip() if ":" in body else body
                elif body.startswith("verified"):
                    status, why = "verified", body
                else:
                    status, why = "failed", body
            rows.append({"file": f, "status": status, "detail": why, "exit": p.returncode})
            print(f"{f:50} {status:13} {why[:160]}", flush=True)
    print()
    counts, causes = summarize(rows)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "counts": counts, "causes": causes}, fh, indent=1)
    if args.strict:
        bad = [r for r in rows if r["status"] != "verified" and not cause(r["detail"]).startswith("op not in tract-onnx")]
        for r in bad:
            print(f"FAIL {r['file']}: {r['status']}: {r['detail'][:200]}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
