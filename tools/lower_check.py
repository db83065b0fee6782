"""CI check (issue 7): `lower` and `raise` on OpenVINO IR, judged by the OpenVINO CPU plugin.

For every StridedSlice conformance case (tests/data/strided_slice.jsonl.gz, `expected_ov`; error
cases skipped) an IR model `x -> StridedSlice-1 -> y` is built with the openvino package (`x` an
int32 Parameter), `slice-opt IN.xml -o OUT.xml --passes lower` is run, and OUT.xml is run on
`arange` in OpenVINO CPU (f32 inference precision) and compared with the expected shape and
indices; the output must have no StridedSlice left. Likewise every Slice conformance case
(tests/data/slice.jsonl.gz, `expected_ov`) as `x -> Slice-8 -> y` through `--passes raise`,
which must leave one StridedSlice and no Slice.

Usage: python3 tools/lower_check.py [--bin target/release/slice-opt] [--limit N] [--which lower,raise]
"""

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np

MASKS = ["begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask"]


def cases(name):
    with gzip.open(os.path.join("tests", "data", name), "rt") as f:
        for line in f:
            yield json.loads(line)


def mask_lists(c):
    n = len(c["begin"])
    if c.get("ov_masks"):
        return {m: list(c["ov_masks"][m]) for m in MASKS}
    return {m: [(c[m] >> i) & 1 if i < 64 else 0 for i in range(n)] for m in MASKS}


def i64(v):
    """An i64 constant node (the opset helpers refuse empty arrays)."""
    import openvino as ov

    if len(v) == 0:
        return ov.op.Constant(ov.Type.i64, ov.Shape([0]), [])
    return ov.op.Constant(np.array(v, dtype=np.int64))


def build_strided_slice(c, path):
    import openvino as ov
    import openvino.opset1 as o1

    x = o1.parameter(c["input_shape"], np.int32, name="x")
    m = mask_lists(c)
    y = o1.strided_slice(
        x,
        i64(c["begin"]),
        i64(c["end"]),
        i64(c["strides"]),
        begin_mask=m["begin_mask"],
        end_mask=m["end_mask"],
        new_axis_mask=m["new_axis_mask"],
        shrink_axis_mask=m["shrink_axis_mask"],
        ellipsis_mask=m["ellipsis_mask"],
        name="op",
    )
    ov.save_model(ov.Model([y], [x], "case"), path, compress_to_fp16=False)


def build_slice(c, path):
    import openvino as ov
    import openvino.opset1 as o1
    import openvino.opset8 as o8

    x = o1.parameter(c["input_shape"], np.int32, name="x")
    steps = c["steps"] if c["steps"] is not None else [1] * len(c["starts"])
    args = [x, i64(c["starts"]), i64(c["ends"]), i64(steps)]
    if c["axes"] is not None:
        args.append(i64(c["axes"]))
    y = o8.slice(*args, name="op")
    ov.save_model(ov.Model([y], [x], "case"), path, compress_to_fp16=False)


def layer_types(path):
    return [l.get("type") for l in ET.parse(path).getroot().iter("layer")]


def run_ir(core, path, shape):
    m = core.compile_model(core.read_model(path), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    x = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    return m([x])[m.outputs[0]]


def check(kind, args, core, tmp):
    file, build, passes, gone, want = {
        "lower": ("strided_slice.jsonl.gz", build_strided_slice, "lower", "StridedSlice", None),
        "raise": ("slice.jsonl.gz", build_slice, "raise", "Slice", "StridedSlice"),
    }[kind]
    ok = skipped = 0
    failed = []
    for k, c in enumerate(cases(file)):
        if args.limit and k >= args.limit:
            break
        exp = c["expected_ov"]
        if "error" in exp:
            skipped += 1
            continue
        src = os.path.join(tmp, "in.xml")
        dst = os.path.join(tmp, "out.xml")
        try:
            build(c, src)
        except Exception as e:  # the openvino package refuses the case itself
            failed.append(f"{c['id']}: openvino cannot build the model: {e}")
            continue
        r = subprocess.run([args.bin, src, "-o", dst, "--passes", passes], capture_output=True, text=True)
        if r.returncode != 0:
            failed.append(f"{c['id']}: slice-opt exit {r.returncode}: {r.stderr.strip()[:300]}")
            continue
        types = layer_types(dst)
        if gone in types or (want and types.count(want) != 1):
            failed.append(f"{c['id']}: layers after {passes}: {types}")
            continue
        try:
            y = run_ir(core, dst, c["input_shape"])
        except Exception as e:
            failed.append(f"{c['id']}: OpenVINO cannot run the output: {str(e)[:300]}")
            continue
        if list(y.shape) == exp["shape"] and y.reshape(-1).astype(np.int64).tolist() == exp["indices"]:
            ok += 1
        else:
            failed.append(f"{c['id']}: want {exp['shape']}, got {list(y.shape)} {y.reshape(-1)[:10]}")
    print(f"{kind}: {ok} ok, {len(failed)} failed, {skipped} error cases skipped")
    for f in failed[:20]:
        print("  " + f)
    return not failed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join("target", "release", "slice-opt"))
    ap.add_argument("--limit", type=int, default=0, help="only the first N cases of each file")
    ap.add_argument("--which", default="lower,raise")
    args = ap.parse_args()
    import openvino as ov

    core = ov.Core()
    good = True
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.which.split(","):
            good &= check(kind, args, core, tmp)
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
