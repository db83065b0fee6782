#!/usr/bin/env python3
"""Where runtimes that run the same slice flavour disagree, in the conformance data (issue 42,
pattern G).

Reads `slice.jsonl(.gz)` and `strided_slice.jsonl(.gz)` (default: tests/data/) and keeps every
runtime's raw answer beside `expected_*`. For each flavour it lists the cases where the raw answers
of the runtimes that run it differ, and checks a rule on the decoded parameters that must select
exactly those cases:

ONNX Slice (ONNX Runtime, the ONNX reference evaluator, OpenVINO's CPU plugin and its reference
evaluation all run it; errors count as one answer whatever their text):
  - `ort_reverse_max_end`: a sliced axis of size > 0 with step < 0 and end exactly INT32_MAX or
    INT64_MAX. The spec (and the ONNX reference, OpenVINO) clamp the end to dim - 1 and select
    nothing; ONNX Runtime reads the end as "past the start" and selects through element 0
    (microsoft/onnxruntime#2272).
  - `ref_reverse_start_below_dim`: a sliced axis of size > 0 with step < 0, start < -dim and
    end < -dim. The spec (and ONNX Runtime, OpenVINO) clamp the start to 0 and take element 0;
    the ONNX reference evaluator slices as numpy does (a start below -dim selects nothing).
  The script also models each runtime's reading (spec clamping; ORT: such an end is the edge;
  ONNX reference: numpy slicing) and checks that every raw answer (shape and indices) is the one
  its reading gives.

OpenVINO Slice-8 (CPU plugin vs reference evaluation): any case where they differ is listed.

OpenVINO StridedSlice-1 (CPU plugin vs its reference evaluation, i.e. constant folding): the
data's own split is `expected_ov_alt` (policy v2); the rule checked against it is an entry with the
shrink and begin_mask bits (not ellipsis or new-axis) and begin != 0. TensorFlow StridedSlice has
one runtime: no split is possible.

Exit status 1 when a rule does not select exactly the disagreeing cases.
"""

import argparse
import gzip
import json
import os
import sys

import numpy as np

I32_MAX = 2**31 - 1
I64_MAX = 2**63 - 1


def load(d, name):
    for p in (os.path.join(d, name + ".gz"), os.path.join(d, name)):
        if os.path.exists(p):
            op = gzip.open if p.endswith(".gz") else open
            with op(p, "rt") as f:
                return [json.loads(line) for line in f]
    sys.exit(f"{name} not found in {d}")


def answer(a):
    if a is None:
        return None
    if "error" in a:
        return ("error",)
    idx = a.get("indices")
    return (tuple(a["shape"]), None if idx is None else tuple(idx))


def axes_of(r):
    """The sliced axes as (axis, start, end, step), or None when the case is invalid."""
    rank = len(r["input_shape"])
    n = len(r["starts"])
    axes = r["axes"] if r["axes"] is not None else list(range(n))
    steps = r["steps"] if r["steps"] is not None else [1] * n
    if len(r["ends"]) != n or len(axes) != n or len(steps) != n:
        return None
    out, seen = [], set()
    for a, b, e, s in zip(axes, r["starts"], r["ends"], steps):
        a = a + rank if a < 0 else a
        if not 0 <= a < rank or a in seen or s == 0:
            return None
        seen.add(a)
        out.append((a, b, e, s))
    return out


def spec_range(d, b, e, s):
    """ONNX spec clamping: the selected indices on an axis of size d."""
    if b < 0:
        b += d
    if e < 0:
        e += d
    if s > 0:
        b, e = min(max(b, 0), d), min(max(e, 0), d)
    else:
        b, e = min(max(b, 0), d - 1), min(max(e, -1), d - 1)
    return list(range(b, e, s))


def ort_range(d, b, e, s):
    if s < 0 and e in (I32_MAX, I64_MAX):
        e = -(2**63)  # read as the edge: through element 0
    return spec_range(d, b, e, s)


def numpy_range(d, b, e, s):
    return list(range(d))[slice(b, e, s)]


def reading(r, rng):
    shape = r["input_shape"]
    plan = axes_of(r)
    if plan is None:
        return ("error",)
    per = [list(range(d)) for d in shape]
    for a, b, e, s in plan:
        per[a] = rng(shape[a], b, e, s)
    out_shape = tuple(len(p) for p in per)
    data = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)
    if 0 in out_shape:
        return (out_shape, ())
    sel = data[np.ix_(*per)] if per else data
    return (out_shape, tuple(int(x) for x in np.asarray(sel).reshape(-1)))


def slice_classes(r):
    plan = axes_of(r)
    if plan is None:
        return set()
    shape = r["input_shape"]
    cls = set()
    for a, b, e, s in plan:
        d = shape[a]
        if d == 0 or s > 0:
            continue
        if e in (I32_MAX, I64_MAX):
            cls.add("ort_reverse_max_end")
        if b < -d and e < -d:
            cls.add("ref_reverse_start_below_dim")
    return cls


def check_slices(rows):
    ok = True
    names = ["ort", "onnx_ref", "ov_cpu", "ov_ref"]
    readers = {"ort": ort_range, "onnx_ref": numpy_range, "ov_cpu": spec_range,
               "ov_ref": spec_range}
    split = {"ort_reverse_max_end": [], "ref_reverse_start_below_dim": []}
    differing, ruled = set(), set()
    mismatched = []
    ov8 = []
    for r in rows:
        ans = {n: answer(r.get(n)) for n in names}
        present = {n: a for n, a in ans.items() if a is not None}
        if len(set(present.values())) > 1:
            differing.add(r["id"])
        for n, a in present.items():
            want = reading(r, readers[n])
            if a != want:
                mismatched.append((r["id"], n))
        cls = slice_classes(r)
        # ORT only where the node has steps (opset >= 10): opset 9 cases have no reverse step.
        if cls:
            ruled.add(r["id"])
        for c in cls:
            split[c].append(r["id"])
        if ans["ov_cpu"] != ans["ov_ref"]:
            ov8.append(r["id"])
    print(f"ONNX Slice: {len(rows)} cases, raw answers differ in {len(differing)}")
    for c, ids in split.items():
        print(f"  class {c}: {len(ids)} cases (e.g. {', '.join(ids[:4])})")
    both = set(split["ort_reverse_max_end"]) & set(split["ref_reverse_start_below_dim"])
    print(f"  in both classes: {len(both)}")
    only_rule = sorted(ruled - differing)
    only_data = sorted(differing - ruled)
    print(f"  rule selects {len(ruled)}; differing but not selected: {len(only_data)} "
          f"{only_data[:8]}; selected but agreeing: {len(only_rule)} {only_rule[:8]}")
    print(f"  raw answers not given by the modelled reading: {len(mismatched)} {mismatched[:8]}")
    ok &= not only_rule and not only_data and not mismatched
    print(f"OpenVINO Slice-8: CPU plugin and reference evaluation differ in {len(ov8)} cases "
          f"{ov8[:8]}")
    ok &= not ov8
    return ok


def bit(m, i):
    if isinstance(m, list):
        return i < len(m) and m[i] == 1
    return (m >> i) & 1 == 1


def check_strided(rows):
    ok = True
    masks = ["begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"]
    alt_split, alt_sometimes, ruled = [], [], []
    tf_ov = 0
    for r in rows:
        m = {k: (r["ov_masks"][k] if r.get("ov_masks") and k in r["ov_masks"] else r[k])
             for k in masks}
        entries = [i for i in range(len(r["begin"]))
                   if bit(m["shrink_axis_mask"], i) and bit(m["begin_mask"], i)
                   and not bit(m["ellipsis_mask"], i) and not bit(m["new_axis_mask"], i)
                   and r["begin"][i] != 0]
        alt = r.get("expected_ov_alt")
        if alt is not None:
            if "error" in r["expected_ov"]:
                alt_sometimes.append(r["id"])
            else:
                alt_split.append(r["id"])
        if entries and "error" not in r["expected_ov"] and r["ov_cpu"].get("shape") is not None:
            ruled.append(r["id"])
        if r.get("ov_masks") is None and "error" not in r["expected_tf"] \
                and "error" not in r["expected_ov"]:
            a, b = answer(r["expected_tf"]), answer(r["expected_ov"])
            alt_ans = answer(alt) if alt else None
            if a != b and a != alt_ans:
                tf_ov += 1
    print(f"OpenVINO StridedSlice-1: {len(rows)} cases; expected_ov_alt (plugin vs constant "
          f"folding, both results): {len(alt_split)}; plugin compiles only sometimes: "
          f"{len(alt_sometimes)} {alt_sometimes}")
    missing = sorted(set(alt_split) - set(ruled))
    print(f"  rule 'shrink + begin_mask entry, begin != 0' selects {len(ruled)} valid cases; "
          f"every alt case selected: {not missing} {missing[:8]}; selected without an alt "
          f"(same element, or the plugin's answer broken): {len(set(ruled) - set(alt_split))}")
    ok &= not missing
    print(f"  TensorFlow vs OpenVINO (two flavours, not a split): {tf_ov} cases differ")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--data", default=os.path.join(here, "..", "tests", "data"))
    a = p.parse_args()
    ok = check_slices(load(a.data, "slice.jsonl"))
    ok &= check_strided(load(a.data, "strided_slice.jsonl"))
    print("rules select exactly the disagreeing cases" if ok else "RULE MISMATCH")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
