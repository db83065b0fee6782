"""Issue 43, acceptance 2: with bounds (`--dim seq=1..4096`), IR writes the interval, ONNX writes
the symbol, and every slice dim written holds for every size in range, checked in the runtimes at
the ends of the range and inside.

For every model (the ONNX and IR files of models/ and of the export corpus tests/data/exports/,
whose manifests give the inputs' dims over named sizes) one symbol is bounded:
  ONNX  `slice-opt MODEL -o OUT --dim NAME=LO..HI` (NAME: the model's own dim_param for it);
  IR    `slice-opt MODEL -o OUT --input-shape INPUT=D1,... --dim NAME=LO..HI` for every input
        (IR dims have no names: each input's dims are given as the manifest names them, `?` for a
        dim that is an expression such as `past+seq`).
Then OUT is run in ONNX Runtime (ONNX) / OpenVINO CPU, f32 (IR) with every top-level slice output
made a graph output, at sizes LO, LO+1, the middle, HI-1 and HI of the bounded symbol (the other
symbols at the manifest's first assignment), and every slice output dim written in OUT (ONNX
value_info / graph outputs, evaluated with the inputs' dim names bound to the fed sizes; IR port
`<dim>`s, an interval must contain the size) is compared with the size the runtime gives:
  exact   a number or an expression that evaluates to the real size at every size tried;
  within  an interval that contains the real size at every size tried;
  unknown nothing written (`-1`, no dim_param);
  wrong   anything else.
HI is 4096 where the model runs there, else 512, 64, 32 or 16 (a position table may be shorter).
Also checked: OUT's input declares the symbol (ONNX dim_param) / its interval (IR Parameter
`shape` attribute `..LO..HI..`, port `<dim>-1</dim>` as `ov.save_model` writes it).

Usage:
  python3 tools/shapes_in_check.py --bin target/release/slice-opt [--only SUBSTRING] [-v]
Needs onnx, onnxruntime, openvino, numpy. Exits 1 when a dim is wrong, an input does not carry
the symbol or interval, or a model cannot be judged.
"""

import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import exports_check as ec  # noqa: E402  (manifest inputs, runtime truths, dim expressions)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HIS = [4096, 512, 64, 32, 16]

# models/: the inputs of the models with a dynamic dim, over named sizes (as the export manifests
# write them), and the sizes of the other names.
MODELS = {
    "pos_embedding": ({"x": ["batch", "seq", 16]}, {"batch": 2, "seq": 10}),
    # k_len bounded from q_len up (the model slices `bias[k_len - q_len : k_len]`)
    "gpt2_causal_mask": ({"q": ["b", 2, "q_len", 8], "k": ["b", 2, "k_len", 8]},
                         {"b": 1, "q_len": 3, "k_len": 7}, "k_len", 3),
    "kv_cache_tail": ({"x0": [1, "seq", 8]}, {"seq": 6}),
    "last_token": ({"x0": ["seq", 7, 16]}, {"seq": 6}),
    "dynamic_batch_tail": ({"x0": ["seq", 9, 6]}, {"seq": 6}),
    "causal_mask_dynamic": ({"x0": ["batch", "seq", 8]}, {"batch": 2, "seq": 6}),
    "shape_slice_reshape": ({"x0": ["seq", 6, 4]}, {"seq": 6}),
}
# The symbol bounded, by preference.
BOUNDED = ["seq", "sequence_length", "q_len", "decoder_sequence_length", "encoder_sequence_length"]


def corpus():
    """(path, spec) for every model: spec = {"inputs": {name: {"shape": [...]}}, "sizes": [...]}."""
    out = []
    for name, (inputs, sizes, *bounded) in MODELS.items():
        spec = {"inputs": {n: {"dtype": "float32", "shape": s, "fill": "normal"} for n, s in inputs.items()},
                "sizes": [sizes]}
        if bounded:
            spec["bounded"], spec["lo"] = bounded
        for ext in (".onnx", ".tf.xml", ".onnx.xml"):
            p = os.path.join(ROOT, "models", name + ext)
            if os.path.exists(p):
                out.append((p, spec))
    d = os.path.join(ROOT, "tests", "data", "exports")
    for mf in sorted(glob.glob(os.path.join(d, "manifest*.json"))):
        with open(mf) as f:
            data = json.load(f)
        no_slices = set(data.get("no_slices", []))
        for fname, spec in sorted(data["models"].items()):
            p = os.path.join(d, fname)
            if fname not in no_slices and os.path.exists(p):
                out.append((p, spec))
    return out


def plain(d):
    return isinstance(d, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", d) is not None


def pick_symbol(spec):
    if "bounded" in spec:
        return spec["bounded"]
    names = {d for i in spec["inputs"].values() for d in i["shape"] if plain(d)}
    for s in BOUNDED:
        if s in names:
            return s
    return sorted(names)[0] if names else None


def assignments(spec, sym, lo, hi):
    base = dict(spec["sizes"][0])
    return [dict(base, **{sym: s}) for s in sorted({lo, lo + 1, (lo + hi) // 2, hi - 1, hi})]


def onnx_args(path, spec, sym):
    """`--dim NAME=..` with NAME the model's own dim_param for the manifest's `sym`."""
    import onnx

    m = onnx.load(path, load_external_data=False)
    for i in m.graph.input:
        s = spec["inputs"].get(i.name)
        if not s:
            continue
        for d, want in zip(ec.onnx_dims(i) or [], s["shape"]):
            if want == sym and isinstance(d, str):
                return d
    return None


def ir_args(spec):
    args = []
    for name, inp in spec["inputs"].items():
        dims = [str(d) if isinstance(d, int) or plain(d) else "?" for d in inp["shape"]]
        args += ["--input-shape", f"{name}={','.join(dims)}"]
    return args


def ir_written(xml):
    """Slice output port dims by layer name, and the Parameters' `shape` attributes and port dims."""
    root = ET.parse(xml).getroot()
    slices, params = {}, {}
    for layer in root.find("layers"):
        t = layer.get("type")
        dims = [[d.text.strip() for d in p.findall("dim")] for p in layer.findall("output/port")]
        if t in ("Slice", "StridedSlice") and dims:
            slices[layer.get("name")] = dims[0]
        if t == "Parameter":
            params[layer.get("name")] = (layer.find("data").get("shape"), dims[0] if dims else None)
    return slices, params


class quiet_stderr:
    """fd 2 to /dev/null (ONNX Runtime logs the sizes a model refuses, which are expected here)."""

    def __enter__(self):
        sys.stderr.flush()
        self.saved = os.dup(2)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)

    def __exit__(self, *exc):
        os.dup2(self.saved, 2)
        os.close(self.saved)


def judge(path, spec, args, tmp):
    r = {"model": os.path.relpath(path, ROOT), "dims": collections.Counter(), "notes": [], "error": None}
    kind = "ir" if path.endswith(".xml") else "onnx"
    r["kind"] = kind
    sym = pick_symbol(spec)
    if sym is None:
        r["error"] = "no named dim to bound"
        return r
    if kind == "onnx":
        name = onnx_args(path, spec, sym)
        if name is None:
            r["error"] = f"no input dim_param for {sym}"
            return r
        extra = []
    else:
        name, extra = sym, ir_args(spec)
    out = os.path.join(tmp, "out" + (".xml" if kind == "ir" else ".onnx"))
    lo = spec.get("lo", 1)
    for hi in HIS:
        cmd = [args.bin, path, "-o", out, "-q", "--dim", f"{name}={lo}..{hi}"] + extra
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            r["error"] = f"slice-opt exit {p.returncode}: {p.stderr.strip()[:300]}"
            return r
        sizes = assignments(spec, sym, lo, hi)
        feeds = [ec.feeds_for(spec, s, 7 + k) for k, s in enumerate(sizes)]
        try:
            with quiet_stderr():
                if kind == "onnx":
                    import onnx

                    m = onnx.load(out)
                    names = [n.output[0] for n in ec.onnx_slices(m)]
                    truths = ec.onnx_truth(out, names, feeds) if names else [{} for _ in feeds]
                else:
                    truths = ec.ir_truth(out, feeds)
            break
        except Exception as e:  # the runtime refuses this size (a table shorter than hi)
            r["notes"].append(f"hi={hi}: runtime fails ({str(e).splitlines()[0][:120]})")
    else:
        r["error"] = "the runtime runs at no hi tried"
        return r
    r["range"] = f"{name}={lo}..{hi}"
    r["sizes"] = [s[sym] for s in sizes]
    # The input declares the symbol (ONNX) / the interval (IR).
    if kind == "onnx":
        declared = [d for i in m.graph.input for d in (ec.onnx_dims(i) or [])]
        r["input_ok"] = name in declared
        written = ec.onnx_value_dims(m)
        binds = [ec.onnx_binding(m, f) for f in feeds]
        for n in names:
            w = written.get(n)
            for k in range(len(truths[0][n])):
                text = None if w is None or k >= len(w) else w[k]
                verdict = ec.Judged(text).judge(binds, [t[n][k] for t in truths])
                tally(r, verdict, text, n, k, [t[n][k] for t in truths], args)
    else:
        slices, params = ir_written(out)
        iv = f"{lo}..{hi}"
        r["input_ok"] = any(iv in (s or "").split(",") for s, _ in params.values()) and all(
            all(d == "-1" or d.isdigit() for d in (pd or [])) for _, pd in params.values())
        for n, dims in slices.items():
            if n not in truths[0]:
                continue
            for k, text in enumerate(dims):
                verdict = ec.Judged(text).judge([{}] * len(truths), [t[n][k] for t in truths])
                tally(r, verdict, text, n, k, [t[n][k] for t in truths], args)
    return r


def tally(r, verdict, text, node, k, truth, args):
    v, inside = verdict
    key = "within" if inside else {"right": "exact"}.get(v, v)
    r["dims"][key] += 1
    if key == "wrong" or args.verbose:
        r["notes"].append(f"{key.upper()} {node} dim {k}: written {text!r}, real {truth}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "slice-opt"))
    ap.add_argument("--only", default=None, help="models whose path contains this")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    total = collections.Counter()
    bad = 0
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for path, spec in corpus():
            if args.only and args.only not in path:
                continue
            t = time.time()
            r = judge(path, spec, args, tmp)
            c = r["dims"]
            total.update(c)
            ok = r["error"] is None and c["wrong"] == 0 and r.get("input_ok")
            bad += not ok
            total["models"] += 1
            total["input_ok"] += bool(r.get("input_ok"))
            print(f"{'ok  ' if ok else 'FAIL'} {r['kind']:4} {r['model']:58} {r.get('range', ''):22} "
                  f"sizes {r.get('sizes', '')}: {c['exact']} exact, {c['within']} within, "
                  f"{c['unknown']} unknown, {c['wrong']} wrong; input {'ok' if r.get('input_ok') else 'NOT'} "
                  f"({time.time() - t:.1f} s)")
            if r["error"]:
                print(f"     ERROR {r['error']}")
            for n in r["notes"]:
                print(f"     {n}")
    print(f"\n{total['models']} models in {time.time() - t0:.0f} s: slice dims {total['exact']} exact, "
          f"{total['within']} within their interval, {total['unknown']} unknown, {total['wrong']} wrong; "
          f"inputs carrying the symbol / interval: {total['input_ok']}; models failing: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
