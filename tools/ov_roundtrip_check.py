#!/usr/bin/env python3
"""OpenVINO IR round-trip check for slice-opt (CI script).

(a) Every IR model in tests/data/ir/ (NAME.tf.xml / NAME.onnx.xml with their .bin) is round-tripped
    through slice-opt with no passes; the output must equal the input XML modulo whitespace, have a
    byte-identical .bin, and give the same inference results in OpenVINO (CPU, f32) on the inputs
    of NAME.io.npz, which must also match the recorded outputs (rtol = atol = 1e-4).
(b) IR models built with the OpenVINO Python API (StridedSlice with masks, Slice-8 with negative
    steps, dynamic/interval shapes, a TensorIterator body) are saved with
    openvino.save_model(..., compress_to_fp16=False) and checked the same way on seeded random
    inputs.

The round trip is a command template with {input} and {output}, by default
    target/release/slice-opt {input} -o {output} --passes none
Prints a pass count; exits 1 on any failure, 2 on a usage error.

Requires: pip install openvino numpy
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import traceback

import numpy as np
import openvino as ov

RTOL = ATOL = 1e-4
DEFAULT_CMD = "target/release/slice-opt {input} -o {output} --passes none"
CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}


def strip_ws(text):
    return re.sub(r"\s+", "", text)


def bin_of(xml_path):
    return os.path.splitext(xml_path)[0] + ".bin"


def read_bytes(path):
    if not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return f.read()


def run_roundtrip(template, src, dst):
    args = [a.format(input=src, output=dst) for a in shlex.split(template)]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(
            f"round trip failed ({proc.returncode}): {' '.join(args)}\n{proc.stderr.strip()}"
        )


def infer(core, xml_path, inputs):
    model = core.read_model(xml_path)
    compiled = core.compile_model(model, "CPU", CONFIG)
    feed = {}
    for i, port in enumerate(compiled.inputs):
        feed[port] = inputs[i]
    res = compiled.infer_new_request(feed)
    return [np.asarray(res[o]) for o in compiled.outputs]


def compare(a_list, b_list, what):
    if len(a_list) != len(b_list):
        raise AssertionError(f"{what}: {len(a_list)} vs {len(b_list)} outputs")
    for k, (a, b) in enumerate(zip(a_list, b_list)):
        a = np.asarray(a)
        b = np.asarray(b)
        if a.shape != b.shape:
            raise AssertionError(f"{what}: output {k} shape {a.shape} vs {b.shape}")
        if not np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=RTOL, atol=ATOL):
            diff = np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))
            raise AssertionError(f"{what}: output {k} differs (max abs diff {diff})")


def check_pair(core, template, src, out_dir, inputs, expected=None):
    """Round-trips src into out_dir and checks XML, .bin and inference."""
    dst = os.path.join(out_dir, os.path.basename(src))
    for p in (dst, bin_of(dst)):
        if os.path.exists(p):
            os.remove(p)
    run_roundtrip(template, src, dst)
    with open(src, encoding="utf-8") as f:
        a = f.read()
    with open(dst, encoding="utf-8") as f:
        b = f.read()
    if strip_ws(a) != strip_ws(b):
        raise AssertionError("XML differs modulo whitespace")
    bin_a = read_bytes(bin_of(src)) or b""
    bin_b = read_bytes(bin_of(dst)) or b""
    if bin_a != bin_b:
        raise AssertionError(f".bin differs ({len(bin_a)} vs {len(bin_b)} bytes)")
    got_a = infer(core, src, inputs)
    got_b = infer(core, dst, inputs)
    compare(got_a, got_b, "original vs round trip")
    if expected is not None:
        compare(expected, got_b, "recorded outputs vs round trip")


def npz_for(data_dir, xml_name):
    base = xml_name
    for suffix in (".tf.xml", ".onnx.xml", ".xml"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return os.path.join(data_dir, base + ".io.npz")


def fixture_cases(data_dir):
    for name in sorted(os.listdir(data_dir)):
        if not name.endswith(".xml"):
            continue
        npz = npz_for(data_dir, name)
        yield name, os.path.join(data_dir, name), npz


# --------------------------------------------------------------------------------------------
# Generated models


def const(values, dtype=np.int64):
    return ov.opset8.constant(np.array(values, dtype=dtype))


def gen_models():
    """(name, model, input arrays) for the generated cases."""
    o1, o8 = ov.opset1, ov.opset8
    rng = np.random.default_rng(7)
    cases = []

    def param(shape, name, dtype=np.float32):
        return o8.parameter(ov.PartialShape(shape), ov.Type(np.dtype(dtype)), name=name)

    def rand(shape):
        return rng.standard_normal(shape).astype(np.float32)

    # StridedSlice-1: begin/end masks, new axis, shrink, ellipsis.
    x = param([4, 5, 6, 7], "x")
    ss = o1.strided_slice(
        x,
        const([1, 0, 0, 1]),
        const([3, 0, 0, -1]),
        const([1, 1, 1, 2]),
        begin_mask=[0, 1, 0, 0],
        end_mask=[0, 1, 0, 0],
        new_axis_mask=[0, 0, 1, 0],
        shrink_axis_mask=[0, 0, 0, 0],
        ellipsis_mask=[0, 0, 0, 0],
    )
    cases.append(("ss_masks_new_axis", ov.Model([ss], [x], "ss_masks_new_axis"), [rand([4, 5, 6, 7])]))

    x = param([4, 5, 6, 7], "x")
    ss = o1.strided_slice(
        x,
        const([-1, 0, 2]),
        const([0, 0, 0]),
        const([1, 1, -1]),
        begin_mask=[0, 0, 0],
        end_mask=[1, 0, 1],
        shrink_axis_mask=[1, 0, 0],
        ellipsis_mask=[0, 1, 0],
        new_axis_mask=[0, 0, 0],
    )
    cases.append(("ss_shrink_ellipsis_reverse", ov.Model([ss], [x], "ss_shrink_ellipsis_reverse"), [rand([4, 5, 6, 7])]))

    # StridedSlice on a dynamic batch with i32 indices.
    x = param([-1, 9, 6], "x")
    ss = o1.strided_slice(
        x,
        const([0, 2, -1], np.int32),
        const([0, 0, 0], np.int32),
        const([1, 1, -2], np.int32),
        begin_mask=[1, 0, 0],
        end_mask=[1, 1, 1],
    )
    cases.append(("ss_dynamic_batch", ov.Model([ss], [x], "ss_dynamic_batch"), [rand([3, 9, 6])]))

    # Slice-8 with negative steps and axes.
    x = param([6, 8, 5], "x")
    sl = o8.slice(x, const([-1, 6]), const([-100, 1]), const([-2, -3]), const([0, 1]))
    cases.append(("slice8_negative_steps", ov.Model([sl], [x], "slice8_negative_steps"), [rand([6, 8, 5])]))

    # Slice-8 on interval dims, i32 start/stop, no axes.
    x = ov.opset8.parameter(
        ov.PartialShape([ov.Dimension(1, 10), ov.Dimension(4, -1), 8]), ov.Type.f32, name="x"
    )
    sl = o8.slice(x, const([0, 1, -6], np.int32), const([2, 2**31 - 1, -1], np.int32), const([1, 1, 2], np.int32))
    cases.append(("slice8_interval_dims", ov.Model([sl], [x], "slice8_interval_dims"), [rand([3, 5, 8])]))

    # Slice-8 with a constant input folded by nobody, plus two outputs.
    x = param([2, 12], "x")
    w = const(rng.standard_normal([16, 12]).astype(np.float32), np.float32)
    wsl = o8.slice(w, const([2]), const([10]), const([2]), const([0]))
    mm = o8.matmul(x, wsl, False, True)
    tail = o8.slice(x, const([-4]), const([2**63 - 1]), const([1]), const([-1]))
    cases.append(("slice8_const_weight_two_outputs", ov.Model([mm, tail], [x], "slice8_const_weight_two_outputs"), [rand([2, 12])]))

    # TensorIterator whose body slices each step.
    x = param([2, 5, 6], "x")
    body_in = o8.parameter([2, 1, 6], np.float32, name="step")
    body_sl = o8.slice(body_in, const([1]), const([6]), const([2]), const([2]))
    body_relu = o8.relu(body_sl)
    body_res = o8.result(body_relu)
    body = ov.Model([body_res], [body_in], "ti_body")
    ti = o8.tensor_iterator()
    ti.set_body(body)
    ti.set_sliced_input(body_in, x.output(0), 0, 1, 1, -1, 1)
    out = ti.get_concatenated_slices(body_res.output(0), 0, 1, 1, -1, 1)
    cases.append(("tensor_iterator_slice_body", ov.Model([out], [x], "tensor_iterator_slice_body"), [rand([2, 5, 6])]))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default="tests/data/ir", help="directory of IR fixtures and .io.npz")
    ap.add_argument("--cmd", default=DEFAULT_CMD, help="round-trip command template with {input} and {output}")
    ap.add_argument("--work-dir", default=None, help="where to write outputs (default: a temporary directory)")
    ap.add_argument("--no-fixtures", action="store_true")
    ap.add_argument("--no-generated", action="store_true")
    args = ap.parse_args()
    if "{input}" not in args.cmd or "{output}" not in args.cmd:
        print("--cmd must contain {input} and {output}", file=sys.stderr)
        return 2

    core = ov.Core()
    passed = 0
    failures = []
    tmp = tempfile.TemporaryDirectory() if args.work_dir is None else None
    work = args.work_dir or tmp.name
    os.makedirs(work, exist_ok=True)

    def attempt(label, fn):
        nonlocal passed
        try:
            fn()
            passed += 1
            print(f"ok    {label}")
        except Exception as e:  # noqa: BLE001 - report every failure, then go on
            failures.append(label)
            print(f"FAIL  {label}: {e}")
            if os.environ.get("OV_CHECK_TRACE"):
                traceback.print_exc()

    if not args.no_fixtures:
        if not os.path.isdir(args.data_dir):
            print(f"no such directory: {args.data_dir}", file=sys.stderr)
            return 2
        out_dir = os.path.join(work, "fixtures")
        os.makedirs(out_dir, exist_ok=True)
        for name, path, npz in fixture_cases(args.data_dir):
            def run(path=path, npz=npz):
                if not os.path.exists(npz):
                    raise AssertionError(f"no inputs: {npz} is missing")
                io = np.load(npz)
                xs = [io[k] for k in sorted((k for k in io.files if k.startswith("x")), key=lambda k: int(k[1:]))]
                ys = [io[k] for k in sorted((k for k in io.files if k.startswith("y")), key=lambda k: int(k[1:]))]
                check_pair(core, args.cmd, path, out_dir, xs, ys)

            attempt(f"fixture {name}", run)

    if not args.no_generated:
        src_dir = os.path.join(work, "generated_in")
        out_dir = os.path.join(work, "generated_out")
        os.makedirs(src_dir, exist_ok=True)
        os.makedirs(out_dir, exist_ok=True)
        try:
            cases = gen_models()
        except Exception as e:  # noqa: BLE001
            failures.append("building generated models")
            print(f"FAIL  building generated models: {e}")
            cases = []
        for name, model, inputs in cases:
            def run(name=name, model=model, inputs=inputs):
                src = os.path.join(src_dir, name + ".xml")
                ov.save_model(model, src, compress_to_fp16=False)
                check_pair(core, args.cmd, src, out_dir, inputs)

            attempt(f"generated {name}", run)

    total = passed + len(failures)
    print(f"{passed}/{total} passed")
    if failures:
        print("failed: " + ", ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
