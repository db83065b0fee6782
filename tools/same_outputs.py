#!/usr/bin/env python3
"""Runs two slice-opt binaries on every model of models/ and tests/data/ (ONNX and IR) under
several pass sets and compares what they write, byte for byte: every output file (the model,
its .bin, external data), the exit code, and the --report JSON with its timings taken out.
A refactoring that claims no behaviour change must leave no difference.

    tools/same_outputs.py BASE_BINARY NEW_BINARY [--passes default,lower,raise,lower,raise]
        [--also /tmp/slice-opt-bench/big_1gb.onnx ...]

Pass sets are separated by ';' in --passes (default: `default;lower;raise;lower,raise`, where
`default` runs without --passes). Prints one line per difference and a count; exits 1 when any
run differs. Needs only the Python standard library.
"""

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def models():
    out = []
    for d in ("models", "tests/data"):
        for p in sorted((ROOT / d).rglob("*")):
            if p.suffix in (".onnx", ".xml") and p.is_file():
                out.append(p)
    return out


def strip_times(v):
    """The report without wall times (they differ from run to run)."""
    if isinstance(v, dict):
        return {k: strip_times(x) for k, x in v.items() if not k.endswith("seconds")}
    if isinstance(v, list):
        return [strip_times(x) for x in v]
    return v


def run(binary, model, passes, out_dir):
    out = out_dir / ("out" + model.suffix)
    report = out_dir / "report.json"
    cmd = [binary, str(model), "-o", str(out), "-q", "--report", str(report)]
    if passes != "default":
        cmd += ["--passes", passes]
    p = subprocess.run(cmd, capture_output=True)
    files = {}
    for f in sorted(out_dir.iterdir()):
        if f.name != "report.json":
            files[f.name] = f
    rep = None
    if report.exists():
        try:
            rep = strip_times(json.loads(report.read_text()))
        except ValueError:
            rep = report.read_bytes()
    # Paths in messages name the output directory, which differs between the two runs.
    err = p.stderr.replace(str(out_dir).encode(), b"OUT")
    return p.returncode, files, rep, err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--passes", default="default;lower;raise;lower,raise")
    ap.add_argument("--also", nargs="+", default=[], metavar="MODEL",
                    help="more models (.onnx/.xml files, or folders of them: the bench's)")
    ap.add_argument("--only-also", action="store_true", help="only the --also models")
    a = ap.parse_args()
    pass_sets = a.passes.split(";")
    diffs = 0
    runs = 0
    extra = []
    for p in map(Path, a.also):
        extra += sorted(q for q in p.glob("*") if q.suffix in (".onnx", ".xml")) if p.is_dir() else [p]
    for model in ([] if a.only_also else models()) + [p.resolve() for p in extra]:
        for passes in pass_sets:
            with tempfile.TemporaryDirectory() as t:
                bd, nd = Path(t) / "base", Path(t) / "new"
                bd.mkdir()
                nd.mkdir()
                b = run(a.base, model, passes, bd)
                n = run(a.new, model, passes, nd)
                runs += 1
                rel = model.relative_to(ROOT) if model.is_relative_to(ROOT) else model
                name = f"{rel} [{passes}]"
                why = []
                if b[0] != n[0]:
                    why.append(f"exit {b[0]} vs {n[0]}")
                if sorted(b[1]) != sorted(n[1]):
                    why.append(f"files {sorted(b[1])} vs {sorted(n[1])}")
                for f in sorted(set(b[1]) & set(n[1])):
                    if not filecmp.cmp(b[1][f], n[1][f], shallow=False):
                        why.append(f"{f} differs")
                if b[2] != n[2]:
                    why.append("report differs")
                if b[3] != n[3]:
                    why.append(f"stderr differs: {b[3][:200]!r} vs {n[3][:200]!r}")
                if why:
                    diffs += 1
                    print(f"DIFF {name}: {'; '.join(why)}")
    print(f"{runs} runs ({len(pass_sets)} pass sets), {diffs} with a difference")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
