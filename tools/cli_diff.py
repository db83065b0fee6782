#!/usr/bin/env python3
"""Compare the command line's outputs of two slice-opt binaries on every model of the tree.

For each model (`models/`, `tests/data/`, recursively: `.onnx` and `.xml`; or the MODEL paths
given) and each pass set (the default, `lower`, `raise`, `lower,raise`), both binaries write the
model and the JSON report; `check --format json` and `info --format json` run too. Written files
are compared byte for byte, reports and JSON output after dropping their timings, exit codes,
and stdout/stderr with the temporary paths and timings masked. Prints one line per difference
and a count; exit 1 when something differs.

    python3 tools/cli_diff.py BASE_BINARY NEW_BINARY [--keep DIR] [MODEL ...]

With `--keep DIR`, the outputs stay in DIR/base and DIR/new for inspection (`diff` them).
"""

import argparse
import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

PASS_SETS = ["infer,fold,cleanup", "lower", "raise", "lower,raise"]
TIMING_KEYS = {"load_seconds", "save_seconds", "seconds", "elapsed", "millis", "time"}


def models(root):
    found = []
    for top in ("models", "tests/data"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith(".onnx") or f.endswith(".xml"):
                    found.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(found)


def scrub(v):
    """A report without its timings (keys naming seconds or times, at any depth)."""
    if isinstance(v, dict):
        return {
            k: scrub(x)
            for k, x in v.items()
            if k not in TIMING_KEYS and not k.endswith("_seconds") and not k.endswith("_ms")
        }
    if isinstance(v, list):
        return [scrub(x) for x in v]
    return v


SECONDS = re.compile(r"\d+\.\d+s\b")


def run(binary, args, tmp):
    """Exit code, stdout and stderr, with the temporary paths and the timings masked."""
    p = subprocess.run([binary] + args, capture_output=True, text=True, timeout=600)
    mask = lambda t: SECONDS.sub("<t>s", t.replace(tmp, "<tmp>"))
    return p.returncode, mask(p.stdout), mask(p.stderr)


def json_or_text(text):
    try:
        return scrub(json.loads(text))
    except ValueError:
        return text


def compare_dirs(a, b):
    diffs = []
    names = sorted(set(os.listdir(a)) | set(os.listdir(b)))
    for n in names:
        pa, pb = os.path.join(a, n), os.path.join(b, n)
        if not (os.path.exists(pa) and os.path.exists(pb)):
            diffs.append(f"{n}: written by one side only")
        elif n.endswith(".json"):
            with open(pa) as fa, open(pb) as fb:
                if json_or_text(fa.read()) != json_or_text(fb.read()):
                    diffs.append(f"{n}: report differs")
        elif not filecmp.cmp(pa, pb, shallow=False):
            diffs.append(f"{n}: bytes differ")
    return diffs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--keep")
    ap.add_argument("models", nargs="*")
    a = ap.parse_intermixed_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    work = a.keep or tempfile.mkdtemp(prefix="cli_diff.")
    total, differing = 0, 0
    for m in a.models or models(root):
        stem = m.replace("/", "__")
        ext = ".xml" if m.endswith(".xml") else ".onnx"
        jobs = [
            ("check", ["check", m, "--format", "json"], None),
            ("info", ["info", m, "--format", "json"], None),
        ]
        for ps in PASS_SETS:
            jobs.append((ps, [m, "--passes", ps], ps.replace(",", "+")))
        for label, args, tag in jobs:
            total += 1
            outs = {}
            for side, binary in (("base", a.base), ("new", a.new)):
                d = os.path.join(work, side, stem, tag or label)
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
                extra = []
                if tag:
                    extra = ["-o", os.path.join(d, "out" + ext), "--report",
                             os.path.join(d, "report.json")]
                code, out, err = run(binary, args + extra, os.path.join(work, side))
                outs[side] = (d, code, json_or_text(out), err)
            (da, ca, oa, ea), (db, cb, ob, eb) = outs["base"], outs["new"]
            diffs = compare_dirs(da, db)
            if ca != cb:
                diffs.append(f"exit {ca} -> {cb}")
            if oa != ob:
                diffs.append("stdout differs")
            if ea != eb:
                diffs.append("stderr differs")
            if diffs:
                differing += 1
                print(f"DIFF {m} [{label}]: " + "; ".join(diffs))
    print(f"{differing} of {total} runs differ (outputs in {work})")
    if not a.keep and differing == 0:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
