#!/usr/bin/env python3
"""Models where the runtimes disagree on an ONNX Slice (issue 42, pattern G), with ONNX Runtime's
outputs, and a check that the default passes leave ONNX Runtime's outputs unchanged.

  python3 tools/gen_disagree.py --out tests/data/disagree     # write the models + <name>.io.npz
  python3 tools/gen_disagree.py --check --bin target/release/slice-opt   # CI

Each model has one Slice in a split class (see src/semantics/disagree.rs):
- `ort_max_end_*`: a reverse range ending at INT64_MAX / INT32_MAX (ONNX Runtime selects
  through element 0, the spec and the ONNX reference evaluator nothing);
- `ref_below_dim_*`: a reverse range starting and ending below -dim (the ONNX reference
  evaluator selects nothing, the spec and ONNX Runtime element 0);
- `both_const`: conformance case sl-1-00118, in both classes;
- `shape_chain`: `Reshape(x, Slice(Shape(x), -1:INT64_MAX:-1))`: ONNX Runtime reverses the shape,
  the spec gives an empty target (which cannot reshape 24 elements): a fold that wrote the spec's
  answer would break the model in ONNX Runtime.
`*_const` slice a constant (what `fold` would fold), `*_input` a graph input with a symbolic dim
(what `infer` writes a dim for).

`<name>.io.npz` holds the inputs (`in_<name>`) and ONNX Runtime's outputs (`out_<name>`) of the
model as generated, and, for information, the ONNX reference evaluator's (`ref_<name>`, or
`ref_error` when it refuses). `--check` runs `slice-opt` (default passes) on each model, runs the
result in ONNX Runtime and compares with the stored outputs; it also checks the Slice is still
there. Needs onnx, onnxruntime, numpy.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

I32_MAX = 2**31 - 1
I64_MAX = 2**63 - 1
I64_MIN = -(2**63)


def i64(name, v):
    return numpy_helper.from_array(np.array(v, dtype=np.int64), name)


def slice_model(name, shape, starts, ends, axes, steps, const, sym=None):
    """One Slice of `x` (a constant arange, or an int32 input with dim 0 named `sym`)."""
    inits = [i64("starts", starts), i64("ends", ends), i64("axes", axes), i64("steps", steps)]
    inputs = []
    if const:
        data = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
        inits.insert(0, numpy_helper.from_array(data, "x"))
    else:
        dims = [sym if (i == 0 and sym) else d for i, d in enumerate(shape)]
        inputs.append(helper.make_tensor_value_info("x", TensorProto.INT32, dims))
    node = helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"],
                            name="the_slice")
    out = helper.make_tensor_value_info("y", TensorProto.INT32, None)
    g = helper.make_graph([node], name, inputs, [out], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def shape_chain():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Slice", ["s", "starts", "ends", "axes", "steps"], ["r"],
                         name="the_slice"),
        helper.make_node("Reshape", ["x", "r"], ["y"], name="reshape"),
    ]
    inits = [i64("starts", [-1]), i64("ends", [I64_MAX]), i64("axes", [0]), i64("steps", [-1])]
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    g = helper.make_graph(nodes, "shape_chain", [x], [out], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


def models():
    return {
        "ort_max_end_const": slice_model("m", [4, 10], [2], [I64_MAX], [0], [-1], True),
        "ort_max_end_input": slice_model("m", [6, 10], [2], [I32_MAX], [0], [-1], False, "n"),
        "ref_below_dim_const": slice_model("m", [3, 5], [-4], [-4], [0], [-1], True),
        "ref_below_dim_input": slice_model("m", [3, 5], [-4], [I64_MIN], [0], [-1], False, "n"),
        "both_const": slice_model("m", [1, 1, 4, 1], [-1, -6], [I64_MAX, -6], [0, 1],
                                  [-1, -1], True),
        "shape_chain": shape_chain(),
    }


def feeds(m, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for i in m.graph.input:
        dims = [d.dim_value if d.HasField("dim_value") else 3
                for d in i.type.tensor_type.shape.dim]
        dt = helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)
        out[i.name] = (rng.integers(-100, 100, size=dims)).astype(dt)
    return out


def ort_run(path, inputs):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(None, inputs)))


def slices(path):
    m = onnx.load(path)
    return [(n.name, list(n.input)) for n in m.graph.node if n.op_type == "Slice"]


def generate(out_dir):
    from onnx.reference import ReferenceEvaluator
    os.makedirs(out_dir, exist_ok=True)
    for k, (name, m) in enumerate(sorted(models().items())):
        path = os.path.join(out_dir, name + ".onnx")
        onnx.save(m, path)
        inputs = feeds(m, k)
        outs = ort_run(path, inputs)
        arrays = {f"in_{n}": v for n, v in inputs.items()}
        arrays.update({f"out_{n}": v for n, v in outs.items()})
        try:
            ref = ReferenceEvaluator(m).run(None, inputs)
            arrays.update({f"ref_{o.name}": v for o, v in zip(m.graph.output, ref)})
        except Exception as e:  # the reference evaluator refuses the spec's empty Reshape
            arrays["ref_error"] = np.array(str(e).splitlines()[0][:200])
        np.savez(os.path.join(out_dir, name + ".io.npz"), **arrays)
        shapes = {n: list(v.shape) for n, v in outs.items()}
        refs = {n[4:]: list(v.shape) for n, v in arrays.items() if n.startswith("ref_")
                and n != "ref_error"}
        print(f"{name}: ONNX Runtime {shapes}, ONNX reference {refs or arrays.get('ref_error')}")


def check(data_dir, binary):
    failed = 0
    names = sorted(f[:-5] for f in os.listdir(data_dir) if f.endswith(".onnx"))
    if len(names) != len(models()):
        print(f"expected {len(models())} models in {data_dir}, found {len(names)}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            src = os.path.join(data_dir, name + ".onnx")
            dst = os.path.join(tmp, name + ".onnx")
            report = os.path.join(tmp, name + ".json")
            r = subprocess.run([binary, src, "-o", dst, "-q", "--report", report],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name}: slice-opt failed: {r.stderr.strip()}")
                failed += 1
                continue
            io = np.load(os.path.join(data_dir, name + ".io.npz"))
            inputs = {k[3:]: io[k] for k in io.files if k.startswith("in_")}
            problems = []
            for label, path in (("before", src), ("after", dst)):
                try:
                    got = ort_run(path, inputs)
                except Exception as e:  # e.g. a Reshape to a folded (spec) target
                    problems.append(f"{label}: ONNX Runtime fails: {str(e).splitlines()[0][-160:]}")
                    continue
                for k in io.files:
                    if k.startswith("out_"):
                        want = io[k]
                        g = got.get(k[4:])
                        if g is None or g.shape != want.shape or not np.array_equal(g, want):
                            problems.append(f"{label}: output {k[4:]} "
                                            f"{None if g is None else g.shape} != {want.shape}")
            if slices(src) != slices(dst):
                problems.append(f"the Slice changed: {slices(src)} -> {slices(dst)}")
            text = open(report).read()
            if "runtimes disagree" not in text:
                problems.append("the report does not say the runtimes disagree")
            status = "ok" if not problems else "FAILED: " + "; ".join(problems)
            failed += bool(problems)
            print(f"{name}: ONNX Runtime outputs before and after the default passes: {status}")
    print(f"{len(names) - failed} of {len(names)} models unchanged in ONNX Runtime")
    return 1 if failed else 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "data", "disagree"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--bin", default=os.path.join("target", "release", "slice-opt"))
    a = ap.parse_args()
    if a.check:
        sys.exit(check(a.out, a.bin))
    generate(a.out)


if __name__ == "__main__":
    main()
