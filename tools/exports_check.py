"""Issue 42: every slice output dim of the export corpus (tests/data/exports/), judged against the
real size at several concrete input sizes, for slice-opt and for the tools a user has beside it.

The corpus is what `tools/gen_exports.py` wrote: tiny random-weight PyTorch models (TorchScript and
dynamo exporters), TensorFlow models through tf2onnx, and their OpenVINO IR. `manifest.*.json` beside
the files gives every model's inputs (dims over named sizes, e.g. `batch`, `seq`, `past`, `past+seq`)
and 3+ size assignments consistent with the model (a mask is `past + seq` long). Beyond those, every
size name is tried at 0 and just past every threshold of
the model (the static dims of a sliced table, constant starts/ends, up to 4096: `wpe[:seq]` on 64 rows
is tried at seq = 65); at these extra sizes a slice is observed on the part of the model that
computes it (the model itself may fail further on: the position table's Add past its 64 rows, the
Keras GRU's `Squeeze` of `y[:, -1]` at seq = 0). A dim that holds only for sizes >= 1 or
below such a threshold (`seq` for `wpe[:seq]`) is judged wrong there; extra sizes run in a child
process (ONNX Runtime's LSTM aborts the process at batch = 0). At an extra size where ONNX Runtime
fails the whole ONNX model (or aborts), OpenVINO reading the ONNX file itself (CPU, f32) judges it
where it runs the whole model (the Keras LSTM exports at seq = 0: ONNX Runtime stops at the Squeeze
of `y[:, -1]`, OpenVINO runs them); a dim is right only if it is right at every judged size in
every runtime that ran the model (or, at an extra size, the slice's part of it) there.

For every top-level Slice / StridedSlice output dim:
  truth      the size ONNX Runtime (ONNX; OpenVINO too where ONNX Runtime fails, see above) /
             OpenVINO CPU, f32 (IR) gives it at each assignment: the slice outputs are made graph
             outputs (ONNX) / results (IR) of a copy of the model;
  slice-opt  `slice-opt check MODEL --format json` (`inferred` column: `5`, `seq - 1`, `(N + 1) / 2`
             with `/` a floor division, `min(..)`, intervals `lo..hi`, `?`);
  ONNX only: ONNX Runtime's symbolic shape inference (`SymbolicShapeInference.infer_shapes`,
             auto_merge), `onnx.shape_inference.infer_shapes(data_prop=True)`, and the dims the
             exporter declared in the file (value_info / graph outputs);
  IR only:   OpenVINO's own `read_model` partial shapes.
Slices inside subgraph bodies (If / Loop) are counted but not observed.
A dim is right when it evaluates to the real size at every assignment (input dim names bound to
the fed sizes; an interval counts only when lo == hi), unknown when it does not evaluate (`?`, an
interval, a name no input carries), wrong when it contradicts any assignment (an interval that does
not contain the size included). Intervals that contain every size are counted apart.

It prints the table per corpus part (ONNX / IR x PyTorch / TensorFlow), the dims ONNX Runtime gets
right that slice-opt leaves unknown (model, node, and the ops where our knowledge stops on the way
to the slice, found by probing: a copy of the model gets a probe Slice on every value, so
`check`'s `input` column shows our shape of it, and `ConstantOfShape` of every integer shape value
shows our value of it), the ops counted, and readability: for the dims both slice-opt and ONNX
Runtime get right, the length of the dim slice-opt writes (`--passes infer`, ONNX `dim_param`)
against ONNX Runtime's, spaces removed, and every dim we write over 80 characters.

Usage:
  python3 tools/exports_check.py --bin target/release/slice-opt [--fail-on wrong] [--json FILE]
       [--markdown FILE] [--dir tests/data/exports] [--only SUBSTRING] [-v]
Needs onnx, onnxruntime, openvino, numpy, and sympy for ONNX Runtime's symbolic shape inference
(onnxruntime does not install it); no torch / TensorFlow.
`--fail-on wrong` exits 1 when slice-opt writes a wrong dim (or a model cannot be judged);
`--fail-on missing` also when ONNX Runtime / OpenVINO gets a dim right that slice-opt leaves unknown
(issue 42's acceptance 1, not met yet).
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
from fractions import Fraction

import numpy as np

INT64_MAX = 2**63 - 1

# ---------------------------------------------------------------- dim expressions


class Unbound(Exception):
    """A name the binding does not give (the dim is unknown, not wrong)."""


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_.:]*)|(\*\*|//|\.\.|[-+*/%(),]))")


def _floor(x):
    return x.numerator // x.denominator if isinstance(x, Fraction) else int(x)


def _ceil(x):
    return -((-x.numerator) // x.denominator) if isinstance(x, Fraction) else int(x)


def _fdiv(a, b):
    return _floor(Fraction(a) / Fraction(b))


FUNCS = {
    "min": lambda *a: min(a),
    "max": lambda *a: max(a),
    "floor": _floor,
    "ceiling": _ceil,
    "ceil": _ceil,
    "mod": lambda a, b: a - b * _fdiv(a, b),
    "floordiv": _fdiv,
    "ceildiv": lambda a, b: _ceil(Fraction(a) / Fraction(b)),
    "inttruediv": lambda a, b: Fraction(a) / Fraction(b),
    "truediv": lambda a, b: Fraction(a) / Fraction(b),
    "floortoint": _floor,
    "ceiltoint": _ceil,
    "trunctoint": lambda a: int(a),
    "abs": abs,
    "pythonmod": lambda a, b: a - b * _fdiv(a, b),
}


class Expr:
    """A parsed dim: an expression over names, or an interval (`lo..hi`, `lo..`, `?`)."""

    def __init__(self, text, floor_slash):
        self.text = text
        self.floor_slash = floor_slash  # our `check` style: `/` is a floor division
        self.toks = []
        pos = 0
        text = text.strip()
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError(f"cannot read {text!r} at {pos}")
            self.toks.append(m.group(1) or m.group(2) or m.group(3))
            pos = m.end()
        self.i = 0
        self.tree = self._expr()
        if self.i != len(self.toks):
            raise ValueError(f"cannot read {text!r}")

    def _peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else None

    def _take(self, t=None):
        tok = self._peek()
        if t is not None and tok != t:
            raise ValueError(f"expected {t} in {self.text!r}")
        self.i += 1
        return tok

    def _expr(self):
        node = self._term()
        while self._peek() in ("+", "-"):
            op = self._take()
            node = (op, node, self._term())
        return node

    def _term(self):
        # A unary minus applies to the whole product (`-x / 2` is -(x / 2), as we print it).
        if self._peek() == "-":
            self._take()
            return ("neg", self._term())
        if self._peek() == "+":
            self._take()
            return self._term()
        node = self._power()
        while self._peek() in ("*", "/", "//", "%"):
            op = self._take()
            node = (op, node, self._power())
        return node

    def _power(self):
        base = self._atom()
        if self._peek() == "**":
            self._take()
            return ("**", base, self._power())
        return base

    def _atom(self):
        tok = self._take()
        if tok is None:
            raise ValueError(f"unexpected end of {self.text!r}")
        if tok == "(":
            node = self._expr()
            self._take(")")
            return node
        if tok == "-":
            return ("neg", self._power())
        if tok.isdigit():
            return ("num", int(tok))
        if self._peek() == "(":
            self._take()
            args = []
            if self._peek() != ")":
                args.append(self._expr())
                while self._peek() == ",":
                    self._take()
                    args.append(self._expr())
            self._take(")")
            return ("call", tok, args)
        return ("name", tok)

    def names(self, node=None):
        node = node or self.tree
        out = set()
        if node[0] == "name":
            out.add(node[1])
        elif node[0] == "call":
            for a in node[2]:
                out |= self.names(a)
        elif node[0] == "neg":
            out |= self.names(node[1])
        elif node[0] != "num":
            out |= self.names(node[1]) | self.names(node[2])
        return out

    def eval(self, binding, node=None):
        node = node or self.tree
        k = node[0]
        if k == "num":
            return node[1]
        if k == "name":
            if node[1] not in binding:
                raise Unbound(node[1])
            return binding[node[1]]
        if k == "neg":
            return -self.eval(binding, node[1])
        if k == "call":
            f = FUNCS.get(node[1].lower())
            if f is None:
                raise Unbound(node[1] + "()")
            return f(*[self.eval(binding, a) for a in node[2]])
        a, b = self.eval(binding, node[1]), self.eval(binding, node[2])
        if k == "+":
            return a + b
        if k == "-":
            return a - b
        if k == "*":
            return a * b
        if k == "**":
            return Fraction(a) ** int(b)
        if k == "//" or (k == "/" and self.floor_slash):
            return _fdiv(a, b)
        if k == "/":
            return Fraction(a) / Fraction(b)
        if k == "%":
            return a - b * _fdiv(a, b)
        raise ValueError(k)


_INTERVAL = re.compile(r"^\s*(\d*)\s*\.\.\s*(\d*)\s*$")


class Judged:
    """One tool's dim: exact (an expression or value), an interval, or nothing."""

    def __init__(self, text, floor_slash=False):
        self.text = None if text is None else str(text)
        self.expr = None
        self.interval = None
        if text is None or isinstance(text, int):
            if isinstance(text, int):
                self.expr = Expr(str(text), floor_slash)
            return
        t = str(text).strip()
        if t in ("?", "", "-1"):
            return
        m = _INTERVAL.match(t)
        if m:
            lo = int(m.group(1)) if m.group(1) else 0
            hi = int(m.group(2)) if m.group(2) else None
            if hi is not None and lo == hi:
                self.expr = Expr(str(lo), floor_slash)
            else:
                self.interval = (lo, hi)
            return
        try:
            self.expr = Expr(t, floor_slash)
        except (ValueError, RecursionError):
            self.expr = None  # not an expression: an opaque name no input carries

    def judge(self, bindings, truths):
        """'right' / 'unknown' / 'wrong', and whether an interval contains every size."""
        if self.interval is not None:
            lo, hi = self.interval
            inside = all(lo <= t and (hi is None or t <= hi) for t in truths)
            return ("unknown" if inside else "wrong"), inside
        if self.expr is None:
            return "unknown", False
        try:
            vals = [self.expr.eval(b) for b in bindings]
        except Unbound:
            return "unknown", False
        except (ZeroDivisionError, OverflowError, TypeError, ValueError, RecursionError):
            return "unknown", False
        ok = all(v == t for v, t in zip(vals, truths))
        return ("right" if ok else "wrong"), False


# ---------------------------------------------------------------- inputs


def feeds_for(spec, sizes, seed):
    """Inputs of one model at one size assignment (dims in the manifest are names, ints or
    expressions over the names)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    env = dict(sizes)
    for name, inp in spec["inputs"].items():
        shape = [d if isinstance(d, int) else int(Expr(d, True).eval(env)) for d in inp["shape"]]
        dt = np.dtype(inp["dtype"])
        fill = inp.get("fill", "normal")
        if fill == "ones":
            a = np.ones(shape, dt)
        elif fill == "zeros":
            a = np.zeros(shape, dt)
        elif fill == "ids":
            a = rng.integers(0, inp.get("high", 2), shape).astype(dt)
        elif fill == "positions":
            # position ids after `past` cached positions: past .. past + seq - 1 along the last axis
            start = int(Expr(inp.get("start", "0"), True).eval(env))
            a = np.broadcast_to(np.arange(start, start + shape[-1]), shape).astype(dt).copy()
        elif fill == "value":
            a = np.full(shape, int(Expr(str(inp["value"]), True).eval(env)), dt)
        else:
            a = rng.standard_normal(shape).astype(dt)
        feeds[name] = a
    return feeds


# ---------------------------------------------------------------- ONNX


def onnx_dims(vi):
    out = []
    t = vi.type.tensor_type
    if not t.HasField("shape"):
        return None
    for d in t.shape.dim:
        if d.HasField("dim_value"):
            out.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            out.append(d.dim_param)
        else:
            out.append(None)
    return out


def onnx_value_dims(model):
    g = model.graph
    found = {}
    for vi in list(g.value_info) + list(g.output) + list(g.input):
        d = onnx_dims(vi)
        if d is not None:
            found[vi.name] = d
    return found


def onnx_node_key(n):
    return n.name if n.name else f"({n.output[0]})"


def onnx_slices(model):
    return [n for n in model.graph.node if n.op_type in ("Slice", "StridedSlice")]


def count_body_slices(model):
    import onnx

    count = 0

    def walk(graph, top):
        nonlocal count
        for n in graph.node:
            if not top and n.op_type in ("Slice", "StridedSlice"):
                count += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g, False)
                for g in a.graphs:
                    walk(g, False)

    walk(model.graph, True)
    return count


def onnx_truth(path, names, feeds_list, n_base=None, partial=()):
    """The shapes of the values `names` at each feed. The first `n_base` feeds (the manifest's
    sizes; all when None) must run. An extra feed on which the whole model fails is not observed
    (None for every slice), except the feeds `partial` (every extra size: 0 and past a
    threshold): there each slice is observed on the part of the model that computes it (its
    ancestors): a slice none of whose ancestors fails is still judged (the position table
    `wpe[:seq]` gives 64 rows at seq = 65 before the Add that fails; the Keras GRU's `Loop`
    gives its scan output 0 rows at seq = 0 before the `Squeeze` that fails); a slice whose
    ancestors fail is not observed (None)."""
    import onnx
    import onnxruntime as ort

    m = onnx.load(path)
    have = {o.name for o in m.graph.output}
    for n in names:
        if n not in have:
            m.graph.output.append(onnx.helper.make_empty_tensor_value_info(n))
    so = ort.SessionOptions()
    so.log_severity_level = 3
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    # an extra size the model does not run at is expected: no error log for it
    quiet = ort.RunOptions()
    quiet.log_severity_level = 4
    n_base = len(feeds_list) if n_base is None else n_base
    out = []
    parts = {}
    for k, feeds in enumerate(feeds_list):
        try:
            res = sess.run(names, feeds, quiet if k >= n_base else None)
            out.append({n: list(r.shape) for n, r in zip(names, res)})
            continue
        except Exception:  # noqa: BLE001
            if k < n_base:
                raise
        # the whole model fails here: OpenVINO may still run it (`ov_onnx_truth`)
        shapes = {WHOLE_FAILED: True}
        if k not in partial:
            out.append({**{n: None for n in names}, **shapes})
            continue
        for n in names:
            if n not in parts:
                try:
                    parts[n] = onnx_part_session(m, n, so)
                except Exception:  # noqa: BLE001
                    parts[n] = None
            part = parts[n]
            shapes[n] = None
            if part is None:
                continue
            sub, inputs = part
            try:
                shapes[n] = list(sub.run([n], {i: feeds[i] for i in inputs if i in feeds}, quiet)[0].shape)
            except Exception:  # noqa: BLE001
                pass
        out.append(shapes)
    return out


def onnx_part_session(m, target, so):
    """An ONNX Runtime session of the nodes of `m` that `target` depends on (outer-scope names a
    subgraph body reads included), with `target` as its one output; and its graph inputs."""
    import onnx
    import onnxruntime as ort

    g = m.graph
    producer = {}
    for k, n in enumerate(g.node):
        for o in n.output:
            producer[o] = k

    def reads(n):
        names = list(n.input)
        for a in n.attribute:
            for body in ([a.g] if a.type == onnx.AttributeProto.GRAPH else []) + list(a.graphs):
                for bn in body.node:
                    names.extend(reads(bn))
        return names

    keep, seen, todo = set(), set(), [target]
    while todo:
        v = todo.pop()
        if not v or v in seen:
            continue
        seen.add(v)
        k = producer.get(v)
        if k is None or k in keep:
            continue
        keep.add(k)
        todo.extend(reads(g.node[k]))
    sub = onnx.ModelProto()
    sub.CopyFrom(m)
    sg = sub.graph
    del sg.node[:]
    sg.node.extend(g.node[k] for k in sorted(keep))
    inputs = [i for i in g.input if i.name in seen]
    del sg.input[:]
    sg.input.extend(inputs)
    del sg.output[:]
    sg.output.append(onnx.helper.make_empty_tensor_value_info(target))
    sess = ort.InferenceSession(sub.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess, [i.name for i in inputs]


# The key `onnx_truth` adds to a feed's shapes when ONNX Runtime fails the whole model there.
WHOLE_FAILED = "__ort_whole_model_failed__"


def ov_feeds(compiled, feeds):
    """A compiled OpenVINO model's inputs from feeds by name (a Parameter may carry more names
    than the input's: `/Concat_output_0` beside `past.0.key`)."""
    return {p.get_any_name(): feeds[next(n for n in sorted(p.get_names()) if n in feeds)] for p in compiled.inputs}


def ov_onnx_truth(path, names, feeds_list):
    """The shapes of the ONNX values `names` at each feed in OpenVINO (CPU, f32) reading the ONNX
    file itself: each value is made a result of the model. A feed on which the whole model
    fails (or a file OpenVINO does not read: the Keras GRU's `Loop`) is not observed (None)."""
    import openvino as ov

    none = [{n: None for n in names} for _ in feeds_list]
    core = ov.Core()
    try:
        model = core.read_model(path)
        have = {n for o in model.outputs for n in o.get_names()}
        extra = [n for n in names if n not in have]
        if extra:
            model.add_outputs(extra)
        compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        where = {}
        for k, o in enumerate(compiled.outputs):
            for n in o.get_names():
                where.setdefault(n, k)
    except Exception:  # noqa: BLE001
        return none
    out = []
    for feeds in feeds_list:
        req = compiled.create_infer_request()
        try:
            req.infer(ov_feeds(compiled, feeds))
        except Exception:  # noqa: BLE001
            out.append({n: None for n in names})
            continue
        out.append({n: list(req.get_output_tensor(where[n]).shape) if n in where else None for n in names})
    return out


def isolated_truth(tmp, kind, path, names, feeds_list, partial):
    """`onnx_truth` / `ir_truth` of extra feeds (sizes 0, sizes past a threshold: none of them
    need run) in a child process: a runtime may abort on them (ONNX Runtime's LSTM at batch = 0
    ends the process). A child that dies is retried one feed at a time; a feed whose child dies
    is not observed (None)."""
    if not feeds_list:
        return []

    def run(idx):
        job = os.path.join(tmp, "child.npz")
        np.savez(job, **{f"{k}|{n}": feeds_list[k][n] for k in idx for n in feeds_list[k]})
        spec = os.path.join(tmp, "child.json")
        with open(spec, "w") as f:
            json.dump({"kind": kind, "path": path, "names": names, "feeds": job, "idx": idx,
                       "partial": [k for k in idx if k in partial]}, f)
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child-truth", spec],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return None
        return json.loads(r.stdout.strip().splitlines()[-1])

    got = run(list(range(len(feeds_list))))
    if got is None:
        got = []
        for k in range(len(feeds_list)):
            one = run([k])
            # a child that dies (ONNX Runtime's LSTM at batch = 0) did not run the whole model
            dead = {WHOLE_FAILED: True} if kind == "onnx" else {}
            got.extend(one if one is not None else [{**{n: None for n in names}, **dead}])
    return got


def child_truth(spec_path):
    """The child of `isolated_truth`: prints the shapes (one JSON line)."""
    with open(spec_path) as f:
        spec = json.load(f)
    data = np.load(spec["feeds"])
    feeds = [{} for _ in spec["idx"]]
    pos = {k: j for j, k in enumerate(spec["idx"])}
    for key in data.files:
        k, n = key.split("|", 1)
        feeds[pos[int(k)]][n] = data[key]
    partial = {pos[k] for k in spec["partial"]}
    if spec["kind"] == "onnx":
        out = onnx_truth(spec["path"], spec["names"], feeds, 0, partial)
    elif spec["kind"] == "onnx-ov":
        out = ov_onnx_truth(spec["path"], spec["names"], feeds)
    else:
        out = ir_truth(spec["path"], feeds, 0)
    print(json.dumps(out))
    return 0


# Constants of a model above which a dim may change form (a position table of 64 rows gives
# `min(seq, 64)`): the sizes past them are tested (up to this value).
THRESHOLD_MAX = 4096


def extra_sizes(spec, thresholds):
    """Assignments beyond the manifest's: each size name at 0 (the others as in the first
    assignment), and each name just past every threshold `t` of the model (`t + 1`, when no
    manifest assignment reaches it). A dim that holds only below a threshold, or only for sizes
    >= 1, is then judged where it does not hold. Returns the assignments and the indices (in
    them) of those past a threshold."""
    base = spec["sizes"]
    names = sorted(base[0])
    seen = {tuple(sorted(s.items())) for s in base}
    out = []

    def add(s):
        key = tuple(sorted(s.items()))
        if key not in seen:
            seen.add(key)
            out.append(s)

    for n in names:
        add({**base[0], n: 0})
    zeros = len(out)
    for t in sorted(thresholds):
        for n in names:
            if all(s[n] <= t for s in base):
                add({**base[0], n: t + 1})
    return out, range(zeros, len(out))


def onnx_thresholds(model, value_dims):
    """The constants a slice compares sizes with: the static dims of every Slice's data (an
    initializer, or a shape `value_dims` gives) and its constant starts/ends, in [2, THRESHOLD_MAX]."""
    from onnx import numpy_helper

    g = model.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = numpy_helper.to_array(a.t)
    found = set()
    for n in onnx_slices(model):
        data = n.input[0]
        if data in consts:
            found.update(int(x) for x in consts[data].shape)
        else:
            found.update(x for x in value_dims.get(data) or [] if isinstance(x, int))
        for i in n.input[1:3]:
            if i in consts and consts[i].dtype.kind in "iu":
                found.update(abs(int(x)) for x in consts[i].ravel()[:16])
    return {t for t in found if 2 <= t <= THRESHOLD_MAX}


def ir_thresholds(model):
    """As `onnx_thresholds`, for an OpenVINO model: static dims of the slices' data, constant
    begins/ends."""
    found = set()
    for op in ir_slices(model):
        ps = op.input(0).get_partial_shape()
        if ps.rank.is_static:
            found.update(d.get_length() for d in ps if d.is_static)
        for k in (1, 2):
            src = op.input(k).get_source_output().get_node()
            if src.get_type_name() == "Constant":
                try:
                    found.update(abs(int(x)) for x in src.get_data().ravel()[:16])
                except Exception:  # noqa: BLE001
                    pass
    return {t for t in found if 2 <= t <= THRESHOLD_MAX}


def onnx_binding(model, feeds):
    b = {}
    for i in model.graph.input:
        if i.name not in feeds:
            continue
        for d, v in zip(onnx_dims(i) or [], feeds[i.name].shape):
            if isinstance(d, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.:]*", d):
                b[d] = int(v)
    return b


def ort_symbolic(model):
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    import io
    import contextlib

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return SymbolicShapeInference.infer_shapes(model, int_max=2**31 - 1, auto_merge=True,
                                                   guess_output_rank=False, verbose=0)


def slice_opt_rows(bin_, path):
    r = subprocess.run([bin_, "check", path, "--format", "json"], capture_output=True, text=True)
    try:
        return json.loads(r.stdout)["rows"], None
    except (ValueError, KeyError):
        return None, f"check exit {r.returncode}: {r.stderr.strip()[:300]}"


def split_shape(text):
    """`[a, min(b, c), ?]` -> ['a', 'min(b, c)', '?']; `?` (unknown rank) -> None."""
    text = text.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    body = text[1:-1]
    out, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def exact_count(dims, symbols):
    """How many of a shape's dims (ours: a split `check` shape; ORT: onnx dims) are exact: values,
    and expressions over the graph inputs' dim names `symbols` (not a fresh name)."""
    if dims is None:
        return -1
    n = 0
    for d in dims:
        if isinstance(d, int):
            n += 1
        elif isinstance(d, str):
            j = Judged(d, True)
            n += j.expr is not None and j.expr.names() <= symbols
    return n


def written_dims(bin_, path, tmp):
    """The dims `slice-opt --passes infer` writes (ONNX dim_param text), by value name."""
    import onnx

    out = os.path.join(tmp, "written.onnx")
    r = subprocess.run([bin_, path, "-o", out, "--passes", "infer", "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        return {}
    m = onnx.load(out, load_external_data=False)
    os.remove(out)
    return onnx_value_dims(m)


# ---------------------------------------------------------------- probes (where knowledge stops)


def probe_onnx(bin_, model, ort_model, tmp):
    """Our knowledge of every top-level value: (shape dims as `check` prints them or None,
    value elements as printed or None), by value name; and ORT's shapes."""
    import onnx
    from onnx import TensorProto, helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    ort_dims = onnx_value_dims(ort_model) if ort_model is not None else {}
    z = helper.make_tensor("__probe_zero", TensorProto.INT64, [1], [0])
    big = helper.make_tensor("__probe_big", TensorProto.INT64, [1], [INT64_MAX])
    g.initializer.extend([z, big])
    shape_probe, value_probe = {}, {}
    # Values computed from shapes: integer tensors downstream of a Shape node.
    from_shape = set()
    inits = {t.name for t in model.graph.initializer}
    elem = {}
    for vi in list(ort_model.graph.value_info if ort_model is not None else []) + list(model.graph.value_info):
        elem[vi.name] = vi.type.tensor_type.elem_type
    for n in model.graph.node:
        if n.op_type in ("Shape", "Size") or (any(i in from_shape for i in n.input) and n.op_type != "ConstantOfShape"):
            for o in n.output:
                from_shape.add(o)
    k = 0
    for n in model.graph.node:
        for o in n.output:
            if not o or o in inits:
                continue
            name = f"__probe_s{k}"
            g.node.append(helper.make_node("Slice", [o, "__probe_zero", "__probe_big", "__probe_zero"],
                                           [name + "_o"], name=name))
            shape_probe[name] = o
            dims = ort_dims.get(o)
            if o in from_shape and elem.get(o) in (TensorProto.INT64, TensorProto.INT32, TensorProto.BOOL, None) \
                    and dims is not None and len(dims) <= 1:
                src = o
                if elem.get(o) in (TensorProto.INT32, TensorProto.BOOL):
                    src = f"__probe_i{k}"
                    g.node.append(helper.make_node("Cast", [o], [src], name=src, to=TensorProto.INT64))
                if len(dims) == 0:
                    g.node.append(helper.make_node("Unsqueeze", [src, "__probe_zero"], [f"__probe_u{k}"],
                                                   name=f"__probe_u{k}"))
                    src = f"__probe_u{k}"
                # max(v, 0): a reshape target's -1 (or any negative element) is not a shape, and
                # ConstantOfShape of it would be unknown; max(d, 0) is d for a dim.
                pos = f"__probe_m{k}"
                g.node.append(helper.make_node("Max", [src, "__probe_zero"], [pos], name=pos))
                cos = f"__probe_c{k}"
                g.node.append(helper.make_node("ConstantOfShape", [pos], [cos], name=cos))
                pv = f"__probe_v{k}"
                g.node.append(helper.make_node("Slice", [cos, "__probe_zero", "__probe_big", "__probe_zero"],
                                               [pv + "_o"], name=pv))
                value_probe[pv] = o
            k += 1
    p = os.path.join(tmp, "probe.onnx")
    onnx.save(m, p)
    rows, err = slice_opt_rows(bin_, p)
    os.remove(p)
    ours_shape, ours_value = {}, {}
    for r in rows or []:
        if r["node"] in shape_probe:
            ours_shape[shape_probe[r["node"]]] = split_shape(r["input"])
        elif r["node"] in value_probe:
            ours_value[value_probe[r["node"]]] = split_shape(r["input"])
    bools = {o for o, t in elem.items() if t == TensorProto.BOOL}
    return ours_shape, ours_value, ort_dims, from_shape, bools


def loss_points(model, slice_node, probes):
    """The ops where our knowledge stops on the way to `slice_node`: walking back from the slice
    through values we know less of than ONNX Runtime (shape: fewer exact dims; shape values: an
    element we do not know), the producers none of whose inputs is such a value."""
    ours_shape, ours_value, ort_dims, from_shape, bools = probes
    producer = {o: n for n in model.graph.node for o in n.output}
    symbols = {d for i in model.graph.input for d in (onnx_dims(i) or []) if isinstance(d, str)}

    def deficient(v):
        if v not in producer:
            return False
        o = ours_shape.get(v)
        t = ort_dims.get(v)
        if exact_count(o, symbols) < exact_count(t, symbols):
            return True
        if v in from_shape and v in ours_value and v not in bools:
            vals = ours_value[v]
            return vals is None or exact_count(vals, symbols) < len(vals)
        return False

    seen, found = set(), []
    # (value, the op types from its consumer down to the slice)
    stack = [(i, [slice_node.op_type]) for i in slice_node.input if i and deficient(i)]
    while stack:
        v, chain = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        n = producer[v]
        bad_in = [i for i in n.input if i and deficient(i)]
        if not bad_in:
            # A truth value is not judged (ONNX Runtime does not know `T > 0` either); a Cast of
            # one computed from a shape (tf2onnx's `size == -1`) is reported as what computed it.
            if n.op_type == "Cast" and n.input[0] in bools and n.input[0] in producer and ours_value.get(n.input[0]) is None:
                p = producer[n.input[0]]
                found.append((p, " -> ".join([p.op_type, n.op_type] + chain[::-1])))
                continue
            found.append((n, " -> ".join([n.op_type] + chain[::-1])))
        stack.extend((i, chain + [n.op_type]) for i in bad_in)
    return found


# ---------------------------------------------------------------- IR


def ir_slices(model):
    return [op for op in model.get_ordered_ops() if op.get_type_name() in ("Slice", "StridedSlice")]


def ov_dim_text(d):
    if d.is_static:
        return d.get_length()
    lo, hi = d.get_min_length(), d.get_max_length()
    if hi < 0 or hi >= 2**62:
        return f"{lo}.." if lo > 0 else "?"
    return f"{lo}..{hi}"


def ir_truth(xml, feeds_list, n_base=None):
    import openvino as ov

    core = ov.Core()
    model = core.read_model(xml)
    slices = ir_slices(model)
    extra = [op.output(0) for op in slices
             if not any(t.get_node().get_type_name() == "Result" for t in op.output(0).get_target_inputs())]
    if extra:
        model.add_outputs(extra)
    # Each slice's result, by position (the compiled model keeps the model's result order).
    where = {}
    for k, res in enumerate(model.get_results()):
        src = res.input_value(0)
        where.setdefault((src.get_node().get_friendly_name(), src.get_index()), k)
    compiled = core.compile_model(model, "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    names = [op.get_friendly_name() for op in slices]
    out = []
    n_base = len(feeds_list) if n_base is None else n_base
    for k, feeds in enumerate(feeds_list):
        req = compiled.create_infer_request()
        try:
            req.infer(ov_feeds(compiled, feeds))
        except Exception:  # noqa: BLE001
            if k < n_base:
                raise
            # an extra size (0, past a threshold) the model does not run at: not observed
            out.append({name: None for name in names})
            continue
        shapes = {}
        for name in names:
            shapes[name] = list(req.get_output_tensor(where[(name, 0)]).shape)
        out.append(shapes)
    return out


def ir_producers(xml, name):
    import openvino as ov

    model = ov.Core().read_model(xml)
    for op in ir_slices(model):
        if op.get_friendly_name() == name:
            ins = []
            for i in op.inputs():
                ins.append(i.get_source_output().get_node().get_type_name())
            return ins
    return []


# ---------------------------------------------------------------- the measurement


TOOLS_ONNX = ["slice-opt", "ort", "onnx", "declared"]
TOOLS_IR = ["slice-opt", "openvino"]
LABEL = {
    "slice-opt": "slice-opt",
    "ort": "ONNX Runtime symbolic shape inference",
    "onnx": "onnx `infer_shapes(data_prop=True)`",
    "declared": "the exporter's own declared dims",
    "openvino": "OpenVINO `read_model`",
}


def judge_model(args, fname, spec, tmp):
    """Per slice dim: the truth at each assignment and each tool's judgement."""
    path = os.path.join(args.dir, fname)
    kind = "ir" if fname.endswith(".xml") else "onnx"
    sizes = spec["sizes"]
    n_base = len(sizes)
    res = {"model": fname, "kind": kind, "source": spec.get("source", "?"), "dims": [], "notes": []}
    rows, err = slice_opt_rows(args.bin, path)
    if err:
        res["error"] = f"slice-opt check: {err}"
        return res
    # Top-level rows: the path is the node's label (its name, or `Op_i` for an unnamed ONNX node
    # whose `node` is `(output)`); a body slice's path has its body's prefix before the label.
    ours = {}
    for r in rows:
        if r["path"] == r["node"] or (r["node"].startswith("(") and "/" not in r["path"]):
            ours.setdefault(r["node"], r)
    if kind == "onnx":
        import onnx

        model = onnx.load(path)
        slices = onnx_slices(model)
        res["body_slices"] = count_body_slices(model)
        if not slices:
            return res
        names = [n.output[0] for n in slices]
        declared = onnx_value_dims(model)
        try:
            ort_model = ort_symbolic(model)
            ort = onnx_value_dims(ort_model) if ort_model is not None else {}
            if ort_model is None:
                res["notes"].append("ORT symbolic shape inference gave no model")
        except Exception as e:  # noqa: BLE001
            ort_model, ort = None, {}
            res["notes"].append(f"ORT symbolic shape inference failed: {str(e).splitlines()[0][:200] if str(e) else type(e).__name__}")
        extra, past = extra_sizes(spec, onnx_thresholds(model, {**declared, **ort}))
        sizes = sizes + extra
        res["sizes"] = sizes
        feeds_list = [feeds_for(spec, s, 1000 + k) for k, s in enumerate(sizes)]
        try:
            truths = onnx_truth(path, names, feeds_list[:n_base])
            truths += isolated_truth(tmp, "onnx", path, names, feeds_list[n_base:], set(range(len(extra))))
        except Exception as e:  # noqa: BLE001
            res["error"] = f"ONNX Runtime does not run it: {str(e).splitlines()[0][:300]}"
            return res
        # Where ONNX Runtime fails the whole model (an extra size), OpenVINO reading the ONNX
        # file judges it too when it runs the whole model there.
        failed = [k for k, tr in enumerate(truths) if tr.get(WHOLE_FAILED)]
        ov_truths = dict(zip(failed, isolated_truth(tmp, "onnx-ov", path, names,
                                                    [feeds_list[k] for k in failed], set())))
        res["ort_failed_sizes"] = [sizes[k] for k in failed]
        res["openvino_sizes"] = [sizes[k] for k, tr in ov_truths.items()
                                 if any(tr.get(x) is not None for x in names)]
        if res["openvino_sizes"]:
            res["notes"].append("judged by OpenVINO where ONNX Runtime fails the whole model: "
                                + ", ".join(json.dumps(s, sort_keys=True) for s in res["openvino_sizes"]))
        bindings = [onnx_binding(model, f) for f in feeds_list]
        try:
            onnxm = onnx_value_dims(onnx.shape_inference.infer_shapes(model, data_prop=True))
        except Exception as e:  # noqa: BLE001
            onnxm = {}
            res["notes"].append(f"onnx infer_shapes failed: {str(e).splitlines()[0][:200]}")
        written = written_dims(args.bin, path, tmp)
        probes = None
        for n in slices:
            key = onnx_node_key(n)
            row = ours.get(key)
            ours_dims = split_shape(row["inferred"]) if row and row["inferred"] not in ("-",) else None
            out = n.output[0]
            rank = len(truths[0][out])
            # the observations of this slice: (assignment, runtime, shape); an extra size may
            # not run, and one ONNX Runtime fails the whole model at is judged by OpenVINO too
            seen = [(k, "ort", tr[out]) for k, tr in enumerate(truths) if tr[out] is not None and len(tr[out]) == rank]
            seen += [(k, "openvino", tr[out]) for k, tr in sorted(ov_truths.items())
                     if tr[out] is not None and len(tr[out]) == rank]
            for i in range(rank):
                t = [shape[i] for _, _, shape in seen]
                b = [bindings[k] for k, _, _ in seen]
                d = {"node": key, "op": n.op_type, "dim": i, "truth": t, "tools": {}, "text": {},
                     "sizes_seen": len({k for k, _, _ in seen})}
                ov_seen = [(sizes[k], shape[i]) for k, rt, shape in seen if rt == "openvino"]
                if ov_seen:
                    d["openvino_truth"] = ov_seen
                for tool, src, fs in (("slice-opt", ours_dims, True), ("ort", ort.get(out), False),
                                      ("onnx", onnxm.get(out), False), ("declared", declared.get(out), False)):
                    txt = src[i] if src is not None and len(src) == rank else None
                    verdict, inside = Judged(txt, fs).judge(b, t)
                    d["tools"][tool] = verdict
                    d["text"][tool] = txt
                    if inside:
                        d.setdefault("interval_contains", []).append(tool)
                w = written.get(out)
                d["written"] = w[i] if w is not None and len(w) == rank else None
                if d["tools"]["slice-opt"] == "unknown" and d["tools"]["ort"] == "right":
                    if probes is None:
                        try:
                            probes = probe_onnx(args.bin, model, ort_model, tmp) if ort_model is not None else ({}, {}, {}, set(), set())
                        except Exception as e:  # noqa: BLE001
                            res["notes"].append(f"probe failed: {e}")
                            probes = ({}, {}, {}, set(), set())
                    lost = loss_points(model, n, probes)
                    d["lost_at"] = [f"{p.op_type} {onnx_node_key(p)}" for p, _ in lost]
                    d["lost_ops"] = sorted({p.op_type for p, _ in lost})
                    d["chains"] = sorted({c for _, c in lost})
                    d["detail"] = row.get("detail", "") if row else "no check row"
                res["dims"].append(d)
    else:
        import openvino as ov

        model = ov.Core().read_model(path)
        slices = ir_slices(model)
        if not slices:
            return res
        sizes = sizes + extra_sizes(spec, ir_thresholds(model))[0]
        res["sizes"] = sizes
        feeds_list = [feeds_for(spec, s, 1000 + k) for k, s in enumerate(sizes)]
        try:
            truths = ir_truth(path, feeds_list[:n_base])
            truths += isolated_truth(tmp, "ir", path, [op.get_friendly_name() for op in slices],
                                     feeds_list[n_base:], set())
        except Exception as e:  # noqa: BLE001
            res["error"] = f"OpenVINO does not run it: {str(e).splitlines()[0][:300]}"
            return res
        for op in slices:
            key = op.get_friendly_name()
            row = ours.get(key)
            ours_dims = split_shape(row["inferred"]) if row else None
            ps = op.output(0).get_partial_shape()
            ovd = [ov_dim_text(x) for x in ps] if ps.rank.is_static else None
            rank = len(truths[0][key])
            seen = [k for k, tr in enumerate(truths) if tr[key] is not None and len(tr[key]) == rank]
            for i in range(rank):
                t = [truths[k][key][i] for k in seen]
                d = {"node": key, "op": op.get_type_name(), "dim": i, "truth": t, "tools": {}, "text": {},
                     "sizes_seen": len(seen)}
                for tool, src in (("slice-opt", ours_dims), ("openvino", ovd)):
                    txt = src[i] if src is not None and len(src) == rank else None
                    verdict, inside = Judged(txt, True).judge([{}] * len(t), t)
                    d["tools"][tool] = verdict
                    d["text"][tool] = txt
                    if inside:
                        d.setdefault("interval_contains", []).append(tool)
                if d["tools"]["slice-opt"] == "unknown" and d["tools"]["openvino"] == "right":
                    d["lost_ops"] = ["(IR) inputs: " + ", ".join(ir_producers(path, key))]
                    d["detail"] = row.get("detail", "") if row else "no check row"
                res["dims"].append(d)
    return res


def table(results, kind, source):
    tools = TOOLS_ONNX if kind == "onnx" else TOOLS_IR
    dims = [d for r in results if r["kind"] == kind and r["source"] == source for d in r["dims"]]
    models = [r for r in results if r["kind"] == kind and r["source"] == source]
    if not models:
        return None, []
    lines = [f"| {kind.upper()} {source}, {len(models)} models, {len(dims)} slice dims | right | unknown | wrong | interval contains |",
             "|---|---:|---:|---:|---:|"]
    counts = {}
    for t in tools:
        c = collections.Counter(d["tools"][t] for d in dims)
        inside = sum(1 for d in dims if t in d.get("interval_contains", []))
        counts[t] = dict(c, interval=inside)
        lines.append(f"| {LABEL[t]} | {c['right']} | {c['unknown']} | {c['wrong']} | {inside} |")
    return lines, counts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--bin", default=os.path.join(root, "target", "release", "slice-opt"))
    ap.add_argument("--dir", default=os.path.join(root, "tests", "data", "exports"))
    ap.add_argument("--fail-on", choices=["wrong", "missing", "none"], default="none",
                    help="wrong: exit 1 when slice-opt writes a wrong dim or a model cannot be judged; missing: "
                         "also when ONNX Runtime (ONNX) / OpenVINO (IR) gets a dim right that slice-opt leaves unknown")
    ap.add_argument("--json", default=None, help="every dim of every model, and the summary")
    ap.add_argument("--markdown", default=None, help="write the summary (tables, lists) to this file")
    ap.add_argument("--only", default=None, help="models whose file name contains this")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every dim")
    ap.add_argument("--child-truth", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_truth:
        return child_truth(args.child_truth)
    args.bin = os.path.abspath(args.bin)
    try:
        import sympy  # noqa: F401 (ONNX Runtime's symbolic shape inference needs it; onnxruntime does not pull it)
    except ImportError:
        print("WARNING: sympy is not installed: ONNX Runtime's symbolic shape inference cannot run "
              "(its column is all unknown); pip install sympy")
    manifest = {}
    for mf in sorted(glob.glob(os.path.join(args.dir, "manifest*.json"))):
        with open(mf) as f:
            manifest.update(json.load(f)["models"])
    results = []
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        for fname in sorted(manifest):
            if args.only and args.only not in fname:
                continue
            t = time.time()
            r = judge_model(args, fname, manifest[fname], tmp)
            r["seconds"] = round(time.time() - t, 2)
            results.append(r)
            c = collections.Counter(d["tools"]["slice-opt"] for d in r["dims"])
            ref = "ort" if r["kind"] == "onnx" else "openvino"
            cr = collections.Counter(d["tools"][ref] for d in r["dims"])
            print(f"{r['kind']:4} {fname:48} dims {len(r['dims']):4}  ours {c['right']:3} right {c['unknown']:3} unknown "
                  f"{c['wrong']:2} wrong | {ref} {cr['right']:3} right {cr['wrong']:2} wrong  ({r['seconds']} s)")
            if r.get("error"):
                print(f"     ERROR {r['error']}")
            for n in r["notes"]:
                print(f"     note: {n}")
            if r.get("body_slices"):
                print(f"     {r['body_slices']} slices inside subgraph bodies (not observed)")
            for d in r["dims"]:
                if d["tools"]["slice-opt"] == "wrong" or args.verbose:
                    print(f"     {d['tools']['slice-opt'].upper():7} {d['node']} dim {d['dim']}: ours {d['text']['slice-opt']} "
                          f"real {d['truth']}; {ref} {d['text'][ref]}")
    print(f"\n{len(results)} models in {time.time() - t0:.0f} s\n")
    lines, summary = report(results)
    print("\n".join(lines))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "models": results}, f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    errors, wrong = summary["errors"], summary["ours_wrong"]
    print(f"\nexports: {len(results)} models, slice-opt wrong {wrong}, models not judged {errors}")
    missing = summary["missing_onnx"] + summary["missing_ir"]
    if args.fail_on in ("wrong", "missing") and (wrong or errors):
        return 1
    if args.fail_on == "missing" and missing:
        return 1
    return 0


def report(results):
    """The summary as lines (markdown tables, then lists), and as figures."""
    out = []
    say = out.append
    summary = {"tables": {}}
    for kind in ("onnx", "ir"):
        for source in ("pytorch", "tensorflow"):
            lines, counts = table(results, kind, source)
            if lines:
                out.extend(lines + [""])
                summary["tables"][f"{kind}/{source}"] = counts
    # the whole corpus per format
    for kind in ("onnx", "ir"):
        ref = "ort" if kind == "onnx" else "openvino"
        dims = [d for r in results if r["kind"] == kind for d in r["dims"]]
        c = collections.Counter(d["tools"]["slice-opt"] for d in dims)
        cr = collections.Counter(d["tools"][ref] for d in dims)
        say(f"{kind.upper()} all: {len(dims)} slice dims; slice-opt {c['right']} right, {c['unknown']} unknown, "
            f"{c['wrong']} wrong; {LABEL[ref]} {cr['right']} right, {cr['unknown']} unknown, {cr['wrong']} wrong")
    body = sum(r.get("body_slices", 0) for r in results)
    if body:
        say(f"(slices inside subgraph bodies, not observed: {body})")
    errors = [r for r in results if r.get("error")]
    for r in errors:
        say(f"NOT JUDGED {r['model']}: {r['error']}")
    say("")
    # ORT right, ours unknown: the ops where our knowledge stops (pattern C)
    missing = [(r, d) for r in results if r["kind"] == "onnx" for d in r["dims"]
               if d["tools"]["slice-opt"] == "unknown" and d["tools"]["ort"] == "right"]
    ir_missing = [(r, d) for r in results if r["kind"] == "ir" for d in r["dims"]
                  if d["tools"]["slice-opt"] == "unknown" and d["tools"]["openvino"] == "right"]
    say(f"ONNX dims ONNX Runtime gets right and slice-opt leaves unknown: {len(missing)}")
    ops = collections.Counter()
    for r, d in missing:
        for o in d.get("lost_ops") or ["(the slice itself)"]:
            ops[o] += 1
    if ops:
        say("  ops where our knowledge stops on the way to them (dims each; a dim counts for every such op on its way): "
            + ", ".join(f"{o} {c}" for o, c in ops.most_common()))
    by_model = collections.defaultdict(list)
    for r, d in missing:
        by_model[r["model"]].append(d)
    def short(chain, keep=8):
        ops = chain.split(" -> ")
        return chain if len(ops) <= keep else " -> ".join(ops[:3] + ["..."] + ops[-(keep - 3):])

    for m, ds in by_model.items():
        say(f"  {m}: {len(ds)} dims")
        groups = collections.OrderedDict()
        for d in ds:
            groups.setdefault(tuple(d.get("lost_at", [])), []).append(d)
        for lost, gs in groups.items():
            d = gs[0]
            nodes = sorted({g["node"] for g in gs})
            say(f"    {len(gs)} dims of {len(nodes)} slices ({nodes[0]}{', ...' if len(nodes) > 1 else ''}), e.g. dim {d['dim']}: "
                f"ORT {d['text']['ort']}, ours {d['text']['slice-opt'] or '?'}; "
                f"lost at {', '.join(lost[:4]) or '(the slice itself: its inputs are known)'}"
                + (f"; chain {' | '.join(short(c) for c in d['chains'][:2])}" if d.get("chains") else ""))
    say("")
    say(f"IR dims OpenVINO gets right and slice-opt leaves unknown: {len(ir_missing)}")
    for (m, node), ds in sorted(collections.Counter((r["model"], d["node"]) for r, d in ir_missing).items()):
        d = next(d for r, d in ir_missing if r["model"] == m and d["node"] == node)
        say(f"  {m} {node}: {ds} dims (OpenVINO {d['text']['openvino']}, ours {d['text']['slice-opt']}; "
            f"{', '.join(d.get('lost_ops', []))})")
    # the other tools' wrong dims (for the record)
    for tool in ("ort", "onnx", "declared", "openvino"):
        wrong = [(r, d) for r in results for d in r["dims"] if d["tools"].get(tool) == "wrong"]
        if wrong:
            say("")
            say(f"{LABEL[tool]} wrong: {len(wrong)}")
            for r, d in wrong[:12]:
                say(f"  {r['model']} {d['node']} dim {d['dim']}: {d['text'][tool]}, real {d['truth']}")
    # readability
    both = [(r, d) for r in results if r["kind"] == "onnx" for d in r["dims"]
            if d["tools"]["slice-opt"] == "right" and d["tools"]["ort"] == "right"
            and not isinstance(d["text"]["ort"], int)]
    longer = []
    for r, d in both:
        ours_t = d["written"] if d["written"] is not None else d["text"]["slice-opt"]
        a, b = len(str(ours_t).replace(" ", "")), len(str(d["text"]["ort"]).replace(" ", ""))
        if a > b:
            longer.append((r, d, ours_t, a, b))
    say("")
    say(f"readability: {len(both)} symbolic dims both right; ours (as written in the model) longer than "
        f"ONNX Runtime's in {len(longer)}")
    for r, d, o, a, b in longer[:20]:
        say(f"  {r['model']} {d['node']} dim {d['dim']}: ours ({a}) {o}  |  ORT ({b}) {d['text']['ort']}")
    over = []
    for r in results:
        for d in r["dims"]:
            for t in (d.get("written"), d["text"]["slice-opt"]):
                if isinstance(t, str) and len(t) > 80:
                    over.append((r, d, t))
                    break
    say(f"dims we write over 80 characters: {len(over)}")
    for r, d, t in over[:20]:
        say(f"  {r['model']} {d['node']} dim {d['dim']} ({len(t)}): {t}")
    # pattern F: an expression over a name that no graph input carries (unknown here, but it
    # claims a value that holds only if that name is a particular size)
    free = [(r, d) for r in results for d in r["dims"] if d["tools"]["slice-opt"] == "unknown"
            and isinstance(d["text"]["slice-opt"], str) and Judged(d["text"]["slice-opt"], True).expr is not None]
    say(f"dims we write over a name no input carries: {len(free)}")
    for r, d in free[:20]:
        say(f"  {r['model']} {d['node']} dim {d['dim']}: {d['text']['slice-opt']} (real {d['truth']})")
    wrong = sum(1 for r in results for d in r["dims"] if d["tools"]["slice-opt"] == "wrong")
    summary["free_symbol"] = len(free)
    summary.update(missing_onnx=len(missing), missing_ir=len(ir_missing), lost_ops=dict(ops),
                   ours_longer=len(longer), over_80=len(over), errors=len(errors), ours_wrong=wrong)
    return out, summary


if __name__ == "__main__":
    sys.exit(main())
