"""Issue 43, acceptance 1: with every symbol of an export-corpus model fixed to one set of sizes,
what constant shape plumbing does slice-opt leave that onnxsim (ONNX) / OpenVINO `reshape` +
`save_model` (IR) removes; are the outputs equal; how long does each take.

For each model of `tests/data/exports` (the manifests give its inputs and size assignments; the
first assignment is used):
  ONNX  ours: the model with its symbols fixed (by `--dim NAME=SIZE`, and `--input-shape` for an
        input with a dim like `past + seq` or named otherwise than in the manifest, when `slice-opt --help` lists them; else, or with
        `--no-dim`, here: graph inputs, value_info and outputs whose dim_param is a fixed name or an
        expression over them get the number), then `slice-opt FIXED -o OUT` (default passes);
        theirs: `onnxsim MODEL OUT --overwrite-input-shape name:d0,d1 ...`.
  IR    ours: `--input-shape` for every Parameter (or, as above, the shape attribute and port
        dims set here), then slice-opt;
        theirs: `core.read_model`, `model.reshape({name: shape})`, `ov.save_model(..., compress_to_fp16=False)`.
Counts per op type what remains in each; lists the nodes of the shape-plumbing kinds (by output
name) that theirs removed and ours kept, each marked int/float (element type) and `/const` when it
depends on no input's elements at the fixed sizes (a missed fold; without the mark theirs removed it
by another rewrite, e.g. merging two Reshapes), and (ONNX) where the constant ones come from: the
ops ours left although all their inputs are constants (`Log`, `Cos`...: what ours does not evaluate
stops the folds after it); compares outputs (ONNX Runtime for ONNX, OpenVINO CPU for
IR) against the original model at those sizes; times both (wall, best of 3, whole process).

Usage: /work/venv-exports/bin/python tools/fold_vs_onnxsim.py --bin target/debug/slice-opt
           [--dir tests/data/exports] [--only SUBSTR] [--ext .onnx|.xml] [--json FILE] [--runs 3] [-v]
Needs onnx, onnxruntime, onnxsim (0.8.1, the newest on PyPI), openvino, numpy.
"""

import argparse
import collections
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exports_check import Expr, feeds_for  # noqa: E402

# The kinds acceptance 1 names (ONNX and OpenVINO spellings).
KINDS_ONNX = {
    "Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Cast", "Equal", "Less",
    "Greater", "LessOrEqual", "GreaterOrEqual", "Not", "And", "Or", "Where", "Min", "Max", "Neg",
    "Abs", "Mod", "Div", "Mul", "Add", "Sub", "Expand", "Range", "ConstantOfShape", "ReduceProd",
    "ReduceSum", "Identity", "If", "Trilu", "Slice", "Reshape",
}
KINDS_OV = {
    "ShapeOf", "Gather", "Unsqueeze", "Squeeze", "Concat", "Convert", "Equal", "Less", "Greater",
    "LessEqual", "GreaterEqual", "LogicalNot", "LogicalAnd", "LogicalOr", "Select", "Minimum",
    "Maximum", "Negative", "Abs", "FloorMod", "Mod", "Divide", "Multiply", "Add", "Subtract",
    "Broadcast", "Range", "ReduceProd", "ReduceSum", "If", "StridedSlice", "Slice", "Reshape",
}


def best_of(cmd, runs, env=None):
    best = None
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        dt = time.perf_counter() - t0
        if p.returncode != 0:
            return None, p.stderr.strip().splitlines()[-1:] or [f"exit {p.returncode}"]
        best = dt if best is None else min(best, dt)
    return best, None


def sizes_env(spec):
    return dict(spec["sizes"][0])


def input_shapes(spec, env):
    out = {}
    for name, inp in spec["inputs"].items():
        out[name] = [d if isinstance(d, int) else int(Expr(d, True).eval(env)) for d in inp["shape"]]
    return out


# ---------------------------------------------------------------- ONNX


def onnx_nodes(g, acc):
    for n in g.node:
        acc.append(n)
        for a in n.attribute:
            if a.g is not None and a.HasField("g"):
                onnx_nodes(a.g, acc)
            for sg in a.graphs:
                onnx_nodes(sg, acc)
    return acc


def fix_onnx(src, dst, env, shapes):
    import onnx

    m = onnx.load(src)
    g = m.graph

    def fix_vi(vi):
        t = vi.type.tensor_type
        if not t.HasField("shape"):
            return
        for d in t.shape.dim:
            if d.HasField("dim_param"):
                try:
                    v = int(Expr(d.dim_param, True).eval(env))
                except Exception:
                    continue
                d.ClearField("dim_param")
                d.dim_value = v

    inits = {i.name for i in g.initializer}
    for vi in g.input:
        if vi.name in inits:
            continue
        if vi.name in shapes:
            t = vi.type.tensor_type
            for d, v in zip(t.shape.dim, shapes[vi.name]):
                d.ClearField("dim_param")
                d.dim_value = v
        fix_vi(vi)
    for vi in list(g.value_info) + list(g.output):
        fix_vi(vi)
    onnx.save(m, dst)


def value_types(m):
    """Output name -> "int" (integer or bool element type), "float" or "?" (ONNX shape inference)."""
    import onnx

    try:
        m = onnx.shape_inference.infer_shapes(m)
    except Exception:
        pass
    ints = {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.INT16,
            onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.BOOL}
    out = {}
    for vi in list(m.graph.value_info) + list(m.graph.output) + list(m.graph.input):
        et = vi.type.tensor_type.elem_type
        if et:
            out[vi.name] = "int" if et in ints else "float"
    return out


def data_dependent(g):
    """Names of the values of top graph `g` that depend on a graph input's elements (a `Shape` or
    `Size` output depends only on dims, fixed here, so it does not); every other value is a
    constant at the fixed sizes, which a complete fold removes."""
    inits = {i.name for i in g.initializer}
    dep = {i.name for i in g.input if i.name not in inits}
    for n in g.node:  # ONNX nodes are topologically sorted
        if n.op_type in ("Shape", "Size"):
            continue
        captured = set()
        for a in n.attribute:
            if a.HasField("g"):
                captured |= {i for m in a.g.node for i in m.input}
        if any(i in dep for i in list(n.input) + list(captured)):
            dep.update(n.output)
    return dep


def blockers(g, names, dep):
    """For the values `names` of top graph `g` that are constant at the fixed sizes (not in
    `dep`): the op types of the nodes where ours stopped folding, counted: the constant ancestors
    whose inputs are all constants already (`Log`, `Cos`...: what ours does not evaluate keeps
    everything after it)."""
    prod = {o: n for n in g.node for o in n.output}
    inits = {i.name for i in g.initializer}
    out = collections.Counter()
    seen = set()
    stack = [v for v in names if v not in dep]
    while stack:
        v = stack.pop()
        n = prod.get(v)
        if n is None or id(n) in seen or n.op_type == "Constant":
            continue
        seen.add(id(n))
        ins = [i for i in n.input if i]
        if all(i in inits or (i in prod and prod[i].op_type == "Constant") for i in ins):
            out[n.op_type] += 1
        stack.extend(i for i in ins if i not in dep)
    return out


def ort_outputs(path, feeds):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in s.get_inputs()]
    return s.run(None, {k: v for k, v in feeds.items() if k in names})


def same(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return False
        if x.dtype.kind == "f":
            if not np.allclose(x, y, rtol=1e-4, atol=1e-5, equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def onnx_model(args, fname, spec, tmp, dim_flag):
    import onnx

    src = os.path.join(args.dir, fname)
    env = sizes_env(spec)
    shapes = input_shapes(spec, env)
    fixed = os.path.join(tmp, "fixed.onnx")
    ours = os.path.join(tmp, "ours.onnx")
    sim = os.path.join(tmp, "sim.onnx")
    fix_onnx(src, fixed, env, shapes)
    if dim_flag:
        cmd = [args.bin, src, "-o", ours, "-q"]
        m0 = onnx.load(src, load_external_data=False)
        names = set()
        for vi in m0.graph.input:
            params = [d.dim_param for d in vi.type.tensor_type.shape.dim if d.dim_param]
            if vi.name in shapes and any(not p.isidentifier() or p not in env for p in params):
                cmd += ["--input-shape", f"{vi.name}={','.join(map(str, shapes[vi.name]))}"]
            else:
                names |= {p for p in params if p in env}
        for k in sorted(names):
            cmd += ["--dim", f"{k}={env[k]}"]
    else:
        cmd = [args.bin, fixed, "-o", ours, "-q"]
    t_ours, err_ours = best_of(cmd, args.runs)
    ov = [f"{k}:{','.join(map(str, v))}" for k, v in shapes.items()]
    onnxsim = shutil.which("onnxsim") or os.path.join(os.path.dirname(sys.executable), "onnxsim")
    t_sim, err_sim = best_of([onnxsim, src, sim, "--overwrite-input-shape", *ov], args.runs)
    r = {"model": fname, "t_ours": t_ours, "t_sim": t_sim, "err_ours": err_ours, "err_sim": err_sim}
    before = onnx_nodes(onnx.load(src, load_external_data=False).graph, [])
    r["before"] = collections.Counter(n.op_type for n in before)
    if t_ours is not None:
        r["ours"] = collections.Counter(n.op_type for n in onnx_nodes(onnx.load(ours).graph, []))
    if t_sim is not None:
        r["sim"] = collections.Counter(n.op_type for n in onnx_nodes(onnx.load(sim).graph, []))
    if t_ours is not None and t_sim is not None:
        ours_model = onnx.load(ours)
        ours_nodes = onnx_nodes(ours_model.graph, [])
        elem = value_types(ours_model)
        sim_outs = {o for n in onnx_nodes(onnx.load(sim).graph, []) for o in n.output}
        dep = data_dependent(ours_model.graph)
        r["kept"] = sorted(
            (n.op_type, n.name, elem.get(n.output[0], "?") + ("" if n.output[0] in dep else "/const"))
            for n in ours_nodes
            if n.op_type in KINDS_ONNX and n.output and n.output[0] not in sim_outs
        )
        r["blocked"] = blockers(
            ours_model.graph, [n.output[0] for n in ours_nodes if n.op_type in KINDS_ONNX
                               and n.output and n.output[0] not in sim_outs], dep)
        feeds = feeds_for(spec, env, 0)
        ref = ort_outputs(src, feeds)
        r["eq_ours"] = same(ref, ort_outputs(ours, feeds))
        r["eq_sim"] = same(ref, ort_outputs(sim, feeds))
    return r


# ---------------------------------------------------------------- IR


def ir_layers(root, acc):
    for layer in root.iter("layer"):
        acc.append(layer)
    return acc


def ir_types(path):
    root = ET.parse(path).getroot()
    top = root.find("layers")
    c = collections.Counter()
    names = []
    for layer in root.iter("layer"):
        if layer.get("type") in ("Parameter", "Result", "Const"):
            continue
        c[layer.get("type")] += 1
        names.append((layer.get("type"), layer.get("name")))
    del top
    return c, names


def fix_ir(src, dst, shapes):
    """Sets every top-level Parameter named in `shapes` to its static shape (attribute and port)."""
    tree = ET.parse(src)
    root = tree.getroot()
    for layer in root.find("layers").findall("layer"):
        if layer.get("type") != "Parameter" or layer.get("name") not in shapes:
            continue
        dims = shapes[layer.get("name")]
        layer.find("data").set("shape", ",".join(map(str, dims)))
        port = layer.find("output").find("port")
        for d, v in zip(port.findall("dim"), dims):
            d.text = str(v)
    tree.write(dst)
    shutil.copy(src[:-4] + ".bin", dst[:-4] + ".bin")


OV_SCRIPT = r"""
import sys, json, openvino as ov
src, dst, shapes = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
core = ov.Core()
m = core.read_model(src)
m.reshape({k: ov.PartialShape(v) for k, v in shapes.items()})
ov.save_model(m, dst, compress_to_fp16=False)
"""


def ov_outputs(path, feeds, shapes=None):
    import openvino as ov

    core = ov.Core()
    m = core.read_model(path)
    if shapes:
        m.reshape({k: ov.PartialShape(v) for k, v in shapes.items()})
    c = core.compile_model(m, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    names = {p.get_any_name() for p in m.inputs}
    res = c({k: v for k, v in feeds.items() if k in names})
    return [res[o] for o in c.outputs]


def ir_model(args, fname, spec, tmp, dim_flag):
    src = os.path.join(args.dir, fname)
    env = sizes_env(spec)
    shapes = input_shapes(spec, env)
    fixed = os.path.join(tmp, "fixed.xml")
    ours = os.path.join(tmp, "ours.xml")
    theirs = os.path.join(tmp, "ov.xml")
    fix_ir(src, fixed, shapes)
    if dim_flag:
        cmd = [args.bin, src, "-o", ours, "-q"]
        for k, v in shapes.items():
            cmd += ["--input-shape", f"{k}={','.join(map(str, v))}"]
    else:
        cmd = [args.bin, fixed, "-o", ours, "-q"]
    t_ours, err_ours = best_of(cmd, args.runs)
    t_ov, err_ov = best_of(
        [sys.executable, "-c", OV_SCRIPT, src, theirs, json.dumps(shapes)], args.runs
    )
    r = {"model": fname, "t_ours": t_ours, "t_sim": t_ov, "err_ours": err_ours, "err_sim": err_ov}
    r["before"], _ = ir_types(src)
    if t_ours is not None:
        r["ours"], ours_names = ir_types(ours)
    if t_ov is not None:
        r["sim"], ov_names = ir_types(theirs)
    if t_ours is not None and t_ov is not None:
        ov_set = {n for _, n in ov_names}
        r["kept"] = sorted((t, n, "?") for t, n in ours_names if t in KINDS_OV and n not in ov_set)
        feeds = feeds_for(spec, env, 0)
        try:
            ref = ov_outputs(src, feeds)
            r["eq_ours"] = same(ref, ov_outputs(ours, feeds))
            r["eq_sim"] = same(ref, ov_outputs(theirs, feeds))
        except Exception as e:  # a model OpenVINO cannot run at these sizes
            r["eq_ours"] = r["eq_sim"] = f"not run: {str(e).splitlines()[0][:80]}"
        if r["eq_ours"] is not True:
            # OpenVINO computes some originals differently once their shapes are static (the
            # optimum T5 encoder: 0.33 apart), or cannot compile the dynamic original here
            # (bert.pt: its CPU transformations meet an i32/i64 GreaterEqual): then ours is
            # compared with the original reshaped to these sizes in memory and compiled, what
            # OpenVINO itself computes for the model at these sizes.
            try:
                static = ov_outputs(src, feeds, shapes)
                r["eq_ours_static"] = same(static, ov_outputs(ours, feeds))
                r["eq_sim_static"] = same(static, ov_outputs(theirs, feeds))
            except Exception as e:  # noqa: BLE001
                r["eq_ours_static"] = f"not run: {str(e).splitlines()[0][:80]}"
    return r


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--dir", default="tests/data/exports")
    ap.add_argument("--only", default="")
    ap.add_argument("--ext", default="", help="only models whose file name ends so (.onnx, .xml)")
    ap.add_argument("--json")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--no-dim", action="store_true", help="fix the sizes here even if --dim exists")
    args = ap.parse_args()
    help_text = subprocess.run([args.bin, "--help"], capture_output=True, text=True).stdout
    dim_flag = bool(re.search(r"--dim <NAME=SIZE", help_text)) and not args.no_dim
    manifest = {}
    for mf in sorted(glob.glob(os.path.join(args.dir, "manifest*.json"))):
        with open(mf) as f:
            manifest.update(json.load(f)["models"])
    rows = []
    for fname in sorted(manifest):
        if (args.only not in fname or not fname.endswith(args.ext)
                or not os.path.exists(os.path.join(args.dir, fname))):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            try:
                if fname.endswith(".onnx"):
                    r = onnx_model(args, fname, manifest[fname], tmp, dim_flag)
                elif fname.endswith(".xml"):
                    r = ir_model(args, fname, manifest[fname], tmp, dim_flag)
                else:
                    continue
            except Exception as e:
                r = {"model": fname, "error": f"{type(e).__name__}: {str(e)[:200]}"}
        rows.append(r)
        print_row(r, args.v)
        sys.stdout.flush()
    print_summary(rows, dim_flag)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1, default=lambda o: dict(o))


def total(c):
    return sum(c.values()) if c else 0


def print_row(r, verbose):
    if "error" in r:
        print(f"{r['model']:48} ERROR {r['error']}")
        return
    ratio = (r["t_ours"] / r["t_sim"]) if r.get("t_ours") and r.get("t_sim") else None
    kept = r.get("kept")
    print(
        f"{r['model']:48} nodes {total(r['before']):4} -> ours {total(r.get('ours')):4}"
        f" theirs {total(r.get('sim')):4} | kept-not-theirs {len(kept) if kept is not None else '-':>3}"
        f" | eq ours {r.get('eq_ours', '-')} theirs {r.get('eq_sim', '-')}"
        + (f" (vs OpenVINO's static original: ours {r['eq_ours_static']} theirs {r.get('eq_sim_static', '-')})"
           if "eq_ours_static" in r else "")
        + f" | t ours {r['t_ours'] or 0:.3f}s theirs {r['t_sim'] or 0:.3f}s"
        f" ratio {f'{ratio:.3f}' if ratio else '-'}"
        + (f" | ERR ours {r['err_ours']}" if r["err_ours"] else "")
        + (f" | ERR theirs {r['err_sim']}" if r["err_sim"] else "")
    )
    if kept:
        by = collections.Counter(f"{t}/{e}" for t, _, e in kept)
        print("    kept by kind/type: " + ", ".join(f"{k} {v}" for k, v in by.most_common()))
        if r.get("blocked"):
            print("    constant chains stop at (inputs all constant): "
                  + ", ".join(f"{k} {v}" for k, v in r["blocked"].most_common()))
        if verbose:
            for t, n, e in kept:
                print(f"      {t:16} {e:5} {n}")


def print_summary(rows, dim_flag):
    print(f"\n(symbols fixed by {'--dim' if dim_flag else 'this script'})")
    for fmt in (".onnx", ".xml"):
        part = [r for r in rows if r["model"].endswith(fmt) and "kept" in r]
        if not part:
            continue
        kinds = collections.Counter(f"{t}/{e}" for r in part for t, _, e in r["kept"])
        n_clean = sum(1 for r in part if not r["kept"])
        n_int = sum(1 for r in part if not [k for k in r["kept"] if k[2] != "float"])
        n_const = sum(1 for r in part if not [k for k in r["kept"] if k[2].startswith("int/const")])
        eq = sum(1 for r in part if r.get("eq_ours") is True)
        eq_static = sum(1 for r in part if r.get("eq_ours") is not True and r.get("eq_ours_static") is True)
        fast = sum(1 for r in part if r["t_ours"] <= r["t_sim"] / 10)
        print(
            f"{fmt}: {len(part)} models; none kept that theirs removes: {n_clean} (none integer/bool/unknown-typed:"
            f" {n_int}; none integer and constant at these sizes: {n_const}); outputs equal:"
            f" {eq}" + (f" (+ {eq_static} equal to OpenVINO's own result for the original reshaped to these"
                          " sizes, where the dynamic original differs or does not run)" if eq_static else "")
            + f"; ours <= 1/10 of theirs: {fast}"
        )
        print("  kept (theirs removed) by kind/type: " + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))


if __name__ == "__main__":
    main()
