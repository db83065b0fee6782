#!/usr/bin/env python3
"""Regenerate the StridedSlice / Slice conformance vectors from the real runtimes.

Writes ``strided_slice.jsonl.gz`` and ``slice.jsonl.gz`` (gzipped JSON lines, one case per line) in
the format documented in ``/work/shared/conformance/README.md``. Each case runs on an input of
``arange(prod(input_shape))`` (int32) reshaped to ``input_shape``, so an answer is its output shape
plus the flat input indices it selects: ``{"shape": [...], "indices": [...]}``, or
``{"error": "<first line of the runtime's message>"}``.

Runtimes
  StridedSlice  tf      TensorFlow ``tf.strided_slice`` (eager, integer bitmasks)
                ov_cpu  OpenVINO ``opset1.strided_slice`` compiled on the CPU plugin with
                        INFERENCE_PRECISION_HINT=f32; also records ``inferred``, the node's inferred
                        output partial shape (e.g. "[1,5,1,0,1]")
                ov_ref  the same node with every input a Constant, folded by the ConstantFolding
                        pass (OpenVINO's reference evaluation)
                OpenVINO gets the bits of the integer masks as 0/1 lists of length len(begin),
                or the case's ``ov_masks`` lists when set.
  Slice         ort       ONNX Runtime (CPU EP); Slice-1 attributes for opset 9, inputs as
                          initializers for opsets 10 and 13
                onnx_ref  onnx.reference.ReferenceEvaluator (null for opset 9)
                ov_cpu / ov_ref  OpenVINO ``opset8.slice``, as above (steps null = all ones)

``agree`` and ``expected_*`` follow the README's rules:
  * answers are compared on shape + indices; two errors count as equal whatever their text;
  * a *garbage* answer holds values that are not input elements: an index outside
    [0, prod(input_shape)), or (when the runtime was run here) values that do not follow the input.
    Every runtime is run twice, on x and on x + 2**24; a real selection shifts by 2**24, while
    uninitialised or out-of-bounds memory does not. OpenVINO's reference evaluation and, more
    rarely, its CPU plugin return such values, and they sometimes look like valid indices (0, 2, 48).
    An empty result is never garbage;
  * StridedSlice: ``expected_tf`` = tf. ``expected_ov`` = ov_cpu, except: if ov_cpu failed to compile
    (an error raised by compile_model, not by shape inference, or a crash) and ov_ref has a clean
    result, ov_ref; if ov_cpu is garbage, ov_ref if it is clean with the same shape, else tf if it
    has the same shape (integer-mask cases only); if ov_ref and tf agree on a clean result against
    ov_cpu (integer-mask cases only), theirs. ``agree``: no answer is garbage and
    tf == ov_cpu == ov_ref; for ``ov_masks`` cases, which have no TensorFlow equivalent, only
    ov_cpu == ov_ref is required;
  * Slice: ``expected_onnx`` = majority of (ort, onnx_ref, ov_cpu), ``expected_ov`` = majority of
    (ov_cpu, ov_ref, ort, onnx_ref); garbage answers do not vote, nulls are skipped, and a tie goes to
    the earliest in that order (the op's own family first: three-way splits do happen, e.g.
    sl-1-00118). ``agree``: no answer is garbage and all non-null answers are equal.

OpenVINO is not deterministic here: its CPU plugin sometimes fails to compile ("Exception from
src/inference/src/cpp/core.cpp") a model it compiles on the next try, and its reference evaluation
sometimes fails a bounds check, or returns a different shape, on one run only. So ov_cpu and ov_ref
are run 3 times per case (9 if those disagree) and the most frequent answer is kept; such cases are
reported on stderr. Its CPU plugin also corrupts its heap (glibc abort) on some StridedSlice cases
with mask lists longer than ``begin``, so the runtimes run in a child process and a crash becomes the
answer ``{"error": "runtime process crashed (SIGABRT)"}``.

Usage (from the repository root)
  # re-run the runtimes on the parameters of existing case files (ids and parameters kept)
  python3 tools/gen_conformance.py --from-cases /work/shared/conformance --out tests/data

  # verify: regenerate and compare with the input files instead of writing (per-runtime counts)
  python3 tools/gen_conformance.py --from-cases /work/shared/conformance --check --limit 300

  # new random cases (about a third hard: 0-size dims, rank 0..8, INT64/INT32 bounds, several
  # ellipsis bits, stride 0, out-of-range shrink, ov_masks lists, invalid Slice axes)
  python3 tools/gen_conformance.py --random 1000 --seed 7 --out /tmp/vectors

Options
  --from-cases DIR   read DIR/{strided_slice,slice}.jsonl[.gz]
  --random N --seed S  generate N new cases per op (ids ss-rS-NNNNN / sl-rS-NNNNN)
  --out DIR          write DIR/strided_slice.jsonl.gz and DIR/slice.jsonl.gz
  --ops OPS          comma list of strided_slice,slice (default both)
  --limit K          only the first K cases of each file
  --check            compare the regenerated answers with the input file's and print, per runtime,
                     how many are identical / both errors (text differs) / both garbage / different;
                     the same for agree and expected_*. Writes nothing unless --out is also given.
  --verbose          with --check: print every differing case id
  --attempts A       runs of each OpenVINO runtime per case (default 3; 3*A more if they disagree)
  --no-sandbox       run the runtimes in this process instead of a child process (a runtime that
                     crashes then ends the run; by default it becomes an error answer)

When a runtime is not installed (e.g. no TensorFlow in CI), --from-cases keeps the input file's
raw answer for it and says so on stderr; --random needs every runtime. Versions used for the
published vectors: TensorFlow 2.21, OpenVINO 2026.4, ONNX Runtime 1.32, onnx 1.23; other versions
are reported on stderr. No network access. Requires numpy, plus the runtimes:
  pip install tensorflow-cpu openvino onnxruntime onnx numpy
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import math
import os
import random
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
PROBE_OFFSET = 1 << 24  # second run on x + PROBE_OFFSET; inputs stay far below 2**31 - 2**24

OPS = {"strided_slice": "StridedSlice", "slice": "Slice"}
RUNTIMES = {"strided_slice": ["tf", "ov_cpu", "ov_ref"], "slice": ["ort", "onnx_ref", "ov_cpu", "ov_ref"]}
EXPECTED_VERSIONS = {"tensorflow": "2.21", "openvino": "2026.4", "onnxruntime": "1.32", "onnx": "1.23"}
MASKS = ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")

Answer = dict[str, Any]


def log(*args: Any) -> None:
    print(*args, file=sys.stderr, flush=True)


def first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def i64(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.int64).reshape([len(values)])


def input_of(case: dict) -> np.ndarray:
    return np.arange(math.prod(case["input_shape"]), dtype=np.int32).reshape(case["input_shape"])


# --------------------------------------------------------------------------------------------
# Runtimes. Each runner takes (case, [x, x + PROBE_OFFSET]) and returns the two outputs plus
# extra answer fields, or raises; `measure` turns that into a raw answer and its metadata.
# --------------------------------------------------------------------------------------------

class Meta:
    """What we know about an answer beyond the file: whether its values follow the input
    (None = not run here), for errors the stage that raised ("compile", "crash" or None), and,
    when repeated runs disagreed, a summary of what they gave (`flaky`)."""

    def __init__(self, stable: bool | None = None, stage: str | None = None):
        self.stable, self.stage = stable, stage
        self.flaky: str | None = None


def measure(runner: Callable, case: dict) -> tuple[Answer, Meta]:
    x = input_of(case)
    try:
        outs, extra = runner(case, [x, x + np.int32(PROBE_OFFSET)])
    except Exception as exc:  # noqa: BLE001 - any runtime failure is an answer
        return {"error": first_line(exc)}, Meta(stage=getattr(exc, "conformance_stage", None))
    y = np.asarray(outs[0])
    answer: Answer = {"shape": [int(d) for d in y.shape], "indices": y.reshape(-1).tolist()}
    answer.update(extra)
    probe = outs[1]
    stable = y.size == 0 or (
        probe is not None and np.asarray(probe).shape == y.shape
        and np.array_equal(y.astype(np.int64) + PROBE_OFFSET, np.asarray(probe).astype(np.int64)))
    return answer, Meta(stable=stable)


def probe_twice(run_one: Callable[[np.ndarray], Any], xs: list[np.ndarray]) -> list[Any]:
    """Run on the real input; a failure on the shifted one only marks the answer unstable."""
    first = run_one(xs[0])
    try:
        second = run_one(xs[1])
    except Exception:  # noqa: BLE001
        second = None
    return [first, second]


class Runtimes:
    """Lazily imports the runtimes; a missing one is reported once and skipped."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self._mods: dict[str, Any] = {}

    def _load(self, pkg: str) -> Any:
        if pkg not in self._mods:
            try:
                if pkg == "tensorflow":
                    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
                    import tensorflow as mod
                elif pkg == "openvino":
                    import openvino as mod
                elif pkg == "onnxruntime":
                    import onnxruntime as mod
                    mod.set_default_logger_severity(4)
                elif pkg == "onnx":
                    import onnx as mod
                else:
                    raise ValueError(pkg)
            except ImportError as exc:
                if not self.quiet:
                    log(f"[gen_conformance] {pkg} is not installed ({exc})")
                mod = None
            else:
                ver = getattr(mod, "__version__", "?")
                want = EXPECTED_VERSIONS[pkg]
                note = "" if ver.startswith(want) else f"  (the published vectors used {want})"
                if not self.quiet:
                    log(f"[gen_conformance] {pkg} {ver}{note}")
            self._mods[pkg] = mod
        return self._mods[pkg]

    PACKAGE = {"tf": "tensorflow", "ov_cpu": "openvino", "ov_ref": "openvino",
               "ort": "onnxruntime", "onnx_ref": "onnx"}

    def has(self, runtime: str) -> bool:
        pkgs = [self.PACKAGE[runtime]] + (["onnx"] if runtime == "ort" else [])
        return all(self._load(p) is not None for p in pkgs)

    def runner(self, op: str, runtime: str) -> Callable:
        return getattr(self, f"_{op}_{runtime}")

    def measure(self, op: str, runtime: str, case: dict) -> tuple[Answer, Meta]:
        return measure(self.runner(op, runtime), case)

    # ---- OpenVINO helpers ----
    def _ov_core(self) -> Any:
        if "ov_core" not in self._mods:
            self._mods["ov_core"] = self._load("openvino").Core()
        return self._mods["ov_core"]

    def _ov_cpu(self, build: Callable, case: dict, xs: list[np.ndarray]) -> tuple[list, dict]:
        ov = self._load("openvino")
        param = ov.opset1.parameter(case["input_shape"], np.int32)
        node = build(param)  # shape inference errors are raised here
        inferred = str(node.get_output_partial_shape(0))
        try:
            compiled = self._ov_core().compile_model(
                ov.Model([node.output(0)], [param]), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
        except Exception as exc:
            exc.conformance_stage = "compile"
            raise
        request = compiled.create_infer_request()
        outs = probe_twice(lambda x: np.array(request.infer([x])[compiled.output(0)]), xs)
        return outs, {"inferred": inferred}

    def _ov_ref(self, build: Callable, xs: list[np.ndarray]) -> tuple[list, dict]:
        ov = self._load("openvino")
        from openvino.passes import ConstantFolding, Manager

        def fold(x: np.ndarray) -> np.ndarray:
            node = build(ov.op.Constant(x))
            model = ov.Model([node.output(0)], [])
            manager = Manager()
            manager.register_pass(ConstantFolding())
            manager.run_passes(model)
            src = model.get_results()[0].input_value(0).get_node()
            if src.get_type_name() != "Constant":
                raise RuntimeError(f"constant folding left a {src.get_type_name()} node")
            return np.array(src.get_data()).reshape(list(src.get_output_shape(0)))

        return probe_twice(fold, xs), {}

    # ---- StridedSlice ----
    @staticmethod
    def ov_mask_lists(case: dict) -> dict[str, list[int]]:
        if case.get("ov_masks") is not None:
            return case["ov_masks"]
        n = len(case["begin"])
        return {m: [(case[m] >> i) & 1 for i in range(n)] for m in MASKS}

    def _ss_builder(self, case: dict) -> Callable:
        ov = self._load("openvino")
        masks = self.ov_mask_lists(case)

        def build(data: Any) -> Any:
            const = lambda v: ov.op.Constant(i64(v))  # noqa: E731 - also handles empty lists
            return ov.opset1.strided_slice(
                data, const(case["begin"]), const(case["end"]), const(case["strides"]),
                masks["begin_mask"], masks["end_mask"], masks["new_axis_mask"],
                masks["shrink_axis_mask"], masks["ellipsis_mask"])
        return build

    def _strided_slice_tf(self, case: dict, xs: list[np.ndarray]) -> tuple[list, dict]:
        tf = self._load("tensorflow")

        def run(x: np.ndarray) -> np.ndarray:
            return tf.strided_slice(
                tf.constant(x), tf.constant(i64(case["begin"])), tf.constant(i64(case["end"])),
                tf.constant(i64(case["strides"])), begin_mask=case["begin_mask"],
                end_mask=case["end_mask"], ellipsis_mask=case["ellipsis_mask"],
                new_axis_mask=case["new_axis_mask"], shrink_axis_mask=case["shrink_axis_mask"]).numpy()
        return probe_twice(run, xs), {}

    def _strided_slice_ov_cpu(self, case: dict, xs: list[np.ndarray]) -> tuple[list, dict]:
        return self._ov_cpu(self._ss_builder(case), case, xs)

    def _strided_slice_ov_ref(self, case: dict, xs: list[np.ndarray]) -> tuple[list, dict]:
        return self._ov_ref(self._ss_builder(case), xs)

    # ---- Slice ----
    def onnx_model(self, case: dict) -> Any:
        onnx = self._load("onnx")
        from onnx import TensorProto, helper, numpy_helper
        opset = case["onnx_opset"]
        x = helper.make_tensor_value_info("x", TensorProto.INT32, case["input_shape"])
        y = helper.make_tensor_value_info("y", TensorProto.INT32, None)
        inits = []
        if opset == 9:  # Slice-1: starts/ends/axes are attributes, no steps
            attrs = {"starts": case["starts"], "ends": case["ends"]}
            if case["axes"] is not None:
                attrs["axes"] = case["axes"]
            node = helper.make_node("Slice", ["x"], ["y"], **attrs)
        else:
            names = ["x"]
            for key in ("starts", "ends", "axes", "steps"):
                if case[key] is not None:
                    names.append(key)
                    inits.append(numpy_helper.from_array(i64(case[key]), key))
                elif key == "axes" and case["steps"] is not None:
                    names.append("")  # omitted optional input
            node = helper.make_node("Slice", names, ["y"])
        graph = helper.make_graph([node], "slice", [x], [y], initializer=inits)
        return helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                 ir_version=8)

    def _slice_ort(self, case: dict, xs: list[np.ndarray]) -> tuple[list, dict]:
        ort = self._load("onnxruntime")
        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        sess = ort.InferenceSession(self.onnx_model(case).SerializeToString(), opts,
                                    providers=["CPUExecutionProvider"])
        return probe_twice(lambda x: sess.run(None, {"x": x})[0], xs), {}

    def _slice_onnx_ref(self, case: dict, xs: list[np.ndarray]) -> tuple[list, dict]:
        from onnx.reference import ReferenceEvaluator
        evaluator = ReferenceEvaluator(self.onnx_model(case))
        return probe_twice(lambda x: evaluator.run(None, {"x": x})[0], xs), {}

    def _slice_builder(self, case: dict) -> Callable:
        ov = self._load("openvino")
        steps = case["steps"] if case["steps"] is not None else [1] * len(case["starts"])

        def build(data: Any) -> Any:
            args = [data, ov.op.Constant(i64(case["starts"])), ov.op.Constant(i64(case["ends"])),
                    ov.op.Constant(i64(steps))]
            if case["axes"] is not None:
                args.append(ov.op.Constant(i64(case["axes"])))
            return ov.opset8.slice(*args)
        return build

    def _slice_ov_cpu(self, case: dict, xs: list[np.ndarray]) -> tuple[list, dict]:
        return self._ov_cpu(self._slice_builder(case), case, xs)

    def _slice_ov_ref(self, case: dict, xs: list[np.ndarray]) -> tuple[list, dict]:
        return self._ov_ref(self._slice_builder(case), xs)


class WorkerDied(Exception):
    pass


def _worker(conn: Any, quiet: bool) -> None:
    rts = Runtimes(quiet)
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request[0] == "has":
            conn.send(rts.has(request[1]))
        else:
            answer, meta = rts.measure(*request[1:])
            conn.send((answer, meta.stable, meta.stage))


class Sandbox:
    """Runs the runtimes in a child process, so that one crashing (OpenVINO's CPU plugin corrupts
    its heap on some StridedSlice mask lists) does not end the run. A call whose process dies is
    retried once in a fresh process; if that dies too, the answer is an error "runtime process
    crashed (SIGABRT)" and counts like a compile failure."""

    TIMEOUT = 600.0

    def __init__(self) -> None:
        import multiprocessing
        self.ctx = multiprocessing.get_context("spawn")  # no fork of a threaded runtime
        self.proc: Any = None
        self.conn: Any = None
        self.started = 0
        self.last_call = "nothing"
        self._has: dict[str, bool] = {}

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child, self.started > 0), daemon=True)
        self.proc.start()
        child.close()
        self.started += 1

    def _stop(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join()
            self.conn.close()
        self.proc = self.conn = None

    def _ask(self, request: tuple) -> Any:
        if self.proc is None:
            self._start()
        reason = None
        try:
            self.conn.send(request)
            if self.conn.poll(self.TIMEOUT):
                return self.conn.recv()
            reason = f"timed out after {self.TIMEOUT:.0f} s"
        except (EOFError, OSError):
            self.proc.join(10)
            code = self.proc.exitcode
            if code is not None and code < 0:
                import signal
                reason = signal.Signals(-code).name
            else:
                reason = f"exit code {code}"
        self._stop()
        raise WorkerDied(reason)

    def has(self, runtime: str) -> bool:
        if runtime not in self._has:
            self._has[runtime] = self._ask(("has", runtime))
        return self._has[runtime]

    def measure(self, op: str, runtime: str, case: dict) -> tuple[Answer, Meta]:
        request = ("measure", op, runtime, case)
        try:
            answer, stable, stage = self._ask(request)
        except WorkerDied as first:
            log(f"[gen_conformance] {case['id']} {runtime}: runtime process died ({first}); "
                "retrying in a fresh process")
            try:
                answer, stable, stage = self._ask(request)
                log(f"[gen_conformance] {case['id']} {runtime}: fine on retry; the call before it "
                    f"({self.last_call}) probably corrupted memory")
            except WorkerDied as second:
                log(f"[gen_conformance] {case['id']} {runtime}: died again ({second}); recorded as a crash")
                answer, stable, stage = {"error": f"runtime process crashed ({second})"}, None, "crash"
        self.last_call = f"{case['id']} {runtime}"
        return answer, Meta(stable, stage)

    def close(self) -> None:
        self._stop()


# --------------------------------------------------------------------------------------------
# agree / expected_* (README rules)
# --------------------------------------------------------------------------------------------

def is_ok(a: Answer | None) -> bool:
    return a is not None and "error" not in a


def result_key(a: Answer | None) -> Any:
    """Comparison key: shape + indices; every error is the same key."""
    if a is None:
        return None
    if "error" in a:
        return "error"
    return (tuple(a["shape"]), tuple(a["indices"]))


def is_garbage(a: Answer | None, meta: Meta | None, n: int) -> bool:
    if not is_ok(a):
        return False
    if meta is not None and meta.stable is False:
        return True
    return any(not 0 <= i < n for i in a["indices"])


def clean(a: Answer) -> Answer:
    return {"shape": a["shape"], "indices": a["indices"]} if is_ok(a) else {"error": a["error"]}


def compile_failure(a: Answer, meta: Meta | None) -> bool:
    if meta is not None and meta.stage is not None:
        return meta.stage in ("compile", "crash")
    text = a.get("error", "")  # an answer kept from a file
    return "src/inference/" in text or text.startswith("runtime process crashed")


def decide_strided_slice(case: dict, metas: dict[str, Meta | None]) -> tuple[bool, Answer, Answer]:
    n = math.prod(case["input_shape"])
    tf, cpu, ref = case["tf"], case["ov_cpu"], case["ov_ref"]
    int_masks = case.get("ov_masks") is None  # else TF ran a different op
    garbage = {k: is_garbage(case[k], metas.get(k), n) for k in ("tf", "ov_cpu", "ov_ref")}
    ref_clean = is_ok(ref) and not garbage["ov_ref"]
    tf_clean = int_masks and is_ok(tf) and not garbage["tf"]

    if not is_ok(cpu):
        exp_ov = ref if compile_failure(cpu, metas.get("ov_cpu")) and ref_clean else cpu
    elif garbage["ov_cpu"]:
        if ref_clean and ref["shape"] == cpu["shape"]:
            exp_ov = ref
        elif tf_clean and tf["shape"] == cpu["shape"]:
            exp_ov = tf
        else:
            exp_ov = cpu
            log(f"[gen_conformance] {case['id']}: ov_cpu is garbage and nothing replaces it")
    elif ref_clean and tf_clean and result_key(ref) == result_key(tf) != result_key(cpu):
        exp_ov = ref
    else:
        exp_ov = cpu

    compared = ("tf", "ov_cpu", "ov_ref") if int_masks else ("ov_cpu", "ov_ref")
    agree = not any(garbage.values()) and len({result_key(case[k]) for k in compared}) == 1
    return agree, clean(tf), clean(exp_ov)


def majority(case: dict, order: list[str], metas: dict[str, Meta | None]) -> Answer:
    n = math.prod(case["input_shape"])
    present = [k for k in order if case.get(k) is not None]
    voters = [k for k in present if not is_garbage(case[k], metas.get(k), n)] or present
    counts = collections.Counter(result_key(case[k]) for k in voters)
    best = max(counts.values())
    winner = next(k for k in voters if counts[result_key(case[k])] == best)  # ties: earliest
    return clean(case[winner])


def decide_slice(case: dict, metas: dict[str, Meta | None]) -> tuple[bool, Answer, Answer]:
    n = math.prod(case["input_shape"])
    present = [k for k in RUNTIMES["slice"] if case.get(k) is not None]
    agree = (not any(is_garbage(case[k], metas.get(k), n) for k in present)
             and len({result_key(case[k]) for k in present}) == 1)
    exp_onnx = majority(case, ["ort", "onnx_ref", "ov_cpu"], metas)
    exp_ov = majority(case, ["ov_cpu", "ov_ref", "ort", "onnx_ref"], metas)
    return agree, exp_onnx, exp_ov


# --------------------------------------------------------------------------------------------
# Building a case record
# --------------------------------------------------------------------------------------------

PARAMS = {
    "strided_slice": ["id", "op", "input_shape", "dtype", "begin", "end", "strides", "begin_mask",
                      "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask", "ov_masks"],
    "slice": ["id", "op", "onnx_opset", "input_shape", "dtype", "starts", "ends", "axes", "steps"],
}
ANSWER_ORDER = {"strided_slice": ["tf", "ov_ref", "ov_cpu"],
                "slice": ["ort", "onnx_ref", "ov_ref", "ov_cpu"]}
EXPECTED = {"strided_slice": ["expected_tf", "expected_ov"], "slice": ["expected_onnx", "expected_ov"]}


REPEATED = ("ov_cpu", "ov_ref")  # OpenVINO's answers are not always the same from run to run


def measure_repeated(rts: Runtimes | Sandbox, op: str, rt: str, case: dict,
                     attempts: int) -> tuple[Answer, Meta]:
    """OpenVINO sometimes fails to compile a model it compiles on the next try, and its reference
    evaluation sometimes fails a bounds check on one run and passes on the next. So its runtimes
    are run `attempts` times, 3x as many if those disagree, and the most frequent answer is kept
    (garbage answers count as one kind per shape; ties go to the earliest). Disagreement is
    reported on stderr and in Meta.flaky."""
    first = rts.measure(op, rt, case)
    if attempts <= 1 or rt not in REPEATED or first[1].stage == "crash":
        return first
    n = math.prod(case["input_shape"])

    def kind(run: tuple[Answer, Meta]) -> str:
        answer, meta = run
        if is_garbage(answer, meta, n):
            return f"garbage of shape {answer['shape']}"
        return json.dumps(answer)

    runs = [first] + [rts.measure(op, rt, case) for _ in range(attempts - 1)]
    if len({kind(r) for r in runs}) > 1:
        runs += [rts.measure(op, rt, case) for _ in range(2 * attempts)]
    counts = collections.Counter(kind(r) for r in runs)
    best = max(counts.values())
    answer, meta = next(r for r in runs if counts[kind(r)] == best)
    if len(counts) > 1:
        meta.flaky = "; ".join(f"{v}x {k[:100]}" for k, v in counts.most_common())
        log(f"[gen_conformance] {case['id']} {rt}: not reproducible over {len(runs)} runs: {meta.flaky}")
    return answer, meta


def run_case(op: str, params: dict, rts: Runtimes | Sandbox, old: dict | None,
             attempts: int = 3) -> tuple[dict, dict]:
    """Returns the full record (file key order) and the metadata of the answers run here."""
    record = {k: params[k] for k in PARAMS[op]}
    answers: dict[str, Answer | None] = {}
    metas: dict[str, Meta | None] = {}
    for rt in ANSWER_ORDER[op]:
        if op == "slice" and rt == "onnx_ref" and params["onnx_opset"] == 9:
            answers[rt], metas[rt] = None, None
        elif rts.has(rt):
            answers[rt], metas[rt] = measure_repeated(rts, op, rt, params, attempts)
        elif old is not None and rt in old:
            answers[rt], metas[rt] = old[rt], None
        else:
            raise SystemExit(f"{rt} is needed to generate new {OPS[op]} cases but is not installed")
    record.update(answers)
    decide = decide_strided_slice if op == "strided_slice" else decide_slice
    agree, exp_a, exp_b = decide(record, metas)
    record["agree"] = agree
    record[EXPECTED[op][0]], record[EXPECTED[op][1]] = exp_a, exp_b
    return record, metas


# --------------------------------------------------------------------------------------------
# Random cases
# --------------------------------------------------------------------------------------------

SPECIAL = [INT64_MIN, INT64_MIN + 1, INT32_MIN, INT32_MAX, INT64_MAX - 1, INT64_MAX]
DIMS = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 8, 10, 12]
STEPS = [1] * 8 + [-1] * 4 + [2, 2, -2, -2, 3, 3, -3, -3]


def rand_shape(rng: random.Random, rank: int, hard: bool, max_size: int) -> list[int]:
    while True:
        shape = [rng.choice(DIMS) for _ in range(rank)]
        if hard and rank and rng.random() < 0.3:
            for _ in range(rng.randint(1, 2)):
                shape[rng.randrange(rank)] = 0
        if math.prod(shape) <= max_size:
            return shape


def rand_bound(rng: random.Random, hard: bool) -> int:
    if rng.random() < (0.15 if hard else 0.04):
        return rng.choice(SPECIAL)
    return rng.randint(-6, 6) if rng.random() < 0.75 else rng.randint(-12, 12)


def rand_step(rng: random.Random, hard: bool) -> int:
    return 0 if rng.random() < (0.03 if hard else 0.01) else rng.choice(STEPS)


def rand_bits(rng: random.Random, n: int, p: float) -> int:
    return sum(1 << i for i in range(n) if rng.random() < p)


def random_strided_slice(rng: random.Random, ident: str) -> dict:
    hard = rng.random() < 1 / 3
    rank = rng.randint(0, 8 if hard else 6)
    shape = rand_shape(rng, rank, hard, 15625)
    n = rng.randint(0, rank + 3 if hard else min(8, rank + 2))
    case = {"id": ident, "op": "StridedSlice", "input_shape": shape, "dtype": "int32",
            "begin": [rand_bound(rng, hard) for _ in range(n)],
            "end": [rand_bound(rng, hard) for _ in range(n)],
            "strides": [rand_step(rng, hard) for _ in range(n)],
            "begin_mask": rand_bits(rng, n, 0.25), "end_mask": rand_bits(rng, n, 0.25),
            "ellipsis_mask": 0, "new_axis_mask": rand_bits(rng, n, 0.1),
            "shrink_axis_mask": rand_bits(rng, n, 0.15), "ov_masks": None}
    if n and rng.random() < 0.3:
        case["ellipsis_mask"] = 1 << rng.randrange(n)
        if hard and n > 1 and rng.random() < 0.2:  # several ellipsis bits
            case["ellipsis_mask"] |= 1 << rng.randrange(n)
    if rng.random() < 0.12:  # OpenVINO-only mask lists, shorter or longer than begin
        same = rng.random() < 0.5
        delta = rng.choice([d for d in range(-min(n, 5), 4) if d]) if n else rng.randint(1, 3)
        lists = {}
        for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"):
            d = delta if same else rng.choice([d for d in range(-min(n, 5), 4)])
            length = max(0, n + d)
            p_pad = 0.1 if m == "ellipsis_mask" else 0.4
            lists[m] = [(case[m] >> i) & 1 if i < n else int(rng.random() < p_pad)
                        for i in range(length)]
        if any(len(v) != n for v in lists.values()):
            case["ov_masks"] = lists
    return case


def random_slice(rng: random.Random, ident: str) -> dict:
    hard = rng.random() < 1 / 3
    rank = rng.randint(1, 8 if hard else 6)
    shape = rand_shape(rng, rank, hard, 5000)
    opset = rng.choices([13, 10, 9], weights=[85, 10, 5])[0]
    n = rng.randint(1, rank)
    axes = None
    if rng.random() < 0.8:
        axes = [a - rank if rng.random() < 0.3 else a for a in rng.sample(range(rank), n)]
    steps = None if opset == 9 or rng.random() < 0.2 else [rand_step(rng, hard) for _ in range(n)]
    starts = [rand_bound(rng, hard) for _ in range(n)]
    ends = [rand_bound(rng, hard) for _ in range(n)]
    if hard and rng.random() < 0.08:  # invalid on purpose: the expected answer is an error
        kind = rng.choice(["dup_axis", "axis_range", "rank0", "too_many"])
        if kind == "dup_axis" and axes is not None and n > 1:
            axes[1] = axes[0] if rng.random() < 0.5 else axes[0] - rank * (1 if axes[0] >= 0 else -1)
        elif kind == "axis_range":
            axes = (axes or list(range(n)))
            axes[rng.randrange(n)] = rng.choice([rank, rank + 1, -rank - 1])
        elif kind == "rank0":
            shape = []
        elif kind == "too_many":
            starts.append(0)
            ends.append(1)
            axes = None if axes is None else axes + [rank]
            steps = None if steps is None else steps + [1]
    return {"id": ident, "op": "Slice", "onnx_opset": opset, "input_shape": shape, "dtype": "int32",
            "starts": starts, "ends": ends, "axes": axes, "steps": steps}


# --------------------------------------------------------------------------------------------
# Files and --check
# --------------------------------------------------------------------------------------------

def read_cases(directory: Path, op: str) -> list[dict]:
    for name in (f"{op}.jsonl.gz", f"{op}.jsonl"):
        path = directory / name
        if path.exists():
            opener = gzip.open if name.endswith(".gz") else open
            with opener(path, "rt", encoding="utf-8") as f:
                return [json.loads(line) for line in f if line.strip()]
    raise SystemExit(f"no {op}.jsonl[.gz] in {directory}")


def write_cases(directory: Path, op: str, records: list[dict]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{op}.jsonl.gz"
    with open(path, "wb") as raw, gzip.GzipFile(f"{op}.jsonl", "wb", 9, raw, mtime=0) as f:
        for r in records:
            f.write((json.dumps(r) + "\n").encode("utf-8"))
    return path


class Checker:
    """Counts, per field, how the regenerated record compares with the input file's."""

    def __init__(self, op: str, verbose: bool):
        self.op, self.verbose = op, verbose
        self.counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.examples: dict[tuple[str, str], list[str]] = collections.defaultdict(list)
        self.flaky: dict[str, list[str]] = collections.defaultdict(list)

    def _note(self, field: str, verdict: str, ident: str) -> None:
        self.counts[field][verdict] += 1
        if verdict not in ("identical", "both error", "kept (not installed)"):
            self.examples[(field, verdict)].append(ident)

    def add(self, old: dict, new: dict, metas: dict[str, Meta | None]) -> None:
        n = math.prod(new["input_shape"])
        garbage_involved = False
        for rt in RUNTIMES[self.op]:
            a, b = old.get(rt), new.get(rt)
            meta = metas.get(rt)
            if meta is not None and meta.flaky:
                self.flaky[rt].append(new["id"])
            if rt in metas and meta is None and a == b and a is not None:
                verdict = "kept (not installed)"
            elif a == b:
                verdict = "identical"
            elif a is not None and b is not None and "error" in a and "error" in b:
                verdict = "both error"
            elif meta is not None and meta.flaky:
                verdict = "differ (not reproducible here)"
                garbage_involved = True
            elif is_garbage(a, None, n) or is_garbage(b, meta, n):
                both = is_ok(a) and is_ok(b) and a["shape"] == b["shape"]
                verdict = "garbage, same shape" if both else "differ (garbage)"
                garbage_involved = True
            else:
                verdict = "DIFFER"
            self._note(rt, verdict, new["id"])
        for field in ["agree"] + EXPECTED[self.op]:
            a, b = old.get(field), new[field]
            if a == b:
                verdict = "identical"
            elif isinstance(a, dict) and "error" in a and "error" in b:
                verdict = "both error"
            elif garbage_involved:
                verdict = "differ (a raw answer was garbage or flaky)"
            else:
                verdict = "DIFFER"
            self._note(field, verdict, new["id"])

    def report(self, total: int) -> None:
        print(f"== {OPS[self.op]}: {total} cases")
        for field, counter in self.counts.items():
            parts = ", ".join(f"{v} {k}" for k, v in counter.most_common())
            same = counter["identical"] + counter["both error"] + counter["kept (not installed)"]
            print(f"  {field:14s} {same}/{total} same  [{parts}]")
            for (f, verdict), ids in self.examples.items():
                if f == field:
                    shown = ids if self.verbose else ids[:8]
                    more = "" if len(shown) == len(ids) else f" ... (+{len(ids) - len(shown)})"
                    print(f"      {verdict}: {' '.join(shown)}{more}")
        for rt, ids in self.flaky.items():
            print(f"  {rt}: answers not reproducible within this run in {len(ids)} cases: {' '.join(ids)}")


# --------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--from-cases", type=Path, metavar="DIR")
    src.add_argument("--random", type=int, metavar="N")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, metavar="DIR")
    ap.add_argument("--ops", default="strided_slice,slice")
    ap.add_argument("--limit", type=int, metavar="K")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--attempts", type=int, default=3,
                    help="runs of each OpenVINO runtime per case (3x more if they disagree)")
    ap.add_argument("--no-sandbox", action="store_true",
                    help="run the runtimes in this process (faster to start; a crash ends the run)")
    args = ap.parse_args(argv)

    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    if unknown := [o for o in ops if o not in OPS]:
        ap.error(f"unknown op(s): {unknown}")
    if args.check and args.from_cases is None:
        ap.error("--check compares with --from-cases files")
    if not args.check and args.out is None:
        ap.error("--out is required (or use --check)")

    rts: Runtimes | Sandbox = Runtimes() if args.no_sandbox else Sandbox()
    for op in ops:
        for rt in RUNTIMES[op]:
            if not rts.has(rt):
                log(f"[gen_conformance] {rt}: not installed; "
                    + ("keeping the input file's raw answers" if args.from_cases else "cannot generate"))

    for op in ops:
        if args.from_cases is not None:
            inputs = read_cases(args.from_cases, op)
        else:
            rng = random.Random(f"{args.seed}-{op}")
            gen = random_strided_slice if op == "strided_slice" else random_slice
            prefix = "ss" if op == "strided_slice" else "sl"
            inputs = [gen(rng, f"{prefix}-r{args.seed}-{i:05d}") for i in range(args.random)]
        if args.limit is not None:
            inputs = inputs[: args.limit]

        checker = Checker(op, args.verbose) if args.check else None
        records = []
        for i, old in enumerate(inputs, 1):
            record, metas = run_case(op, old, rts, old if args.from_cases else None, args.attempts)
            records.append(record)
            if checker:
                checker.add(old, record, metas)
            if i % 500 == 0:
                log(f"[gen_conformance] {op}: {i}/{len(inputs)}")
        if checker:
            checker.report(len(records))
        if args.out is not None:
            log(f"[gen_conformance] wrote {len(records)} cases to {write_cases(args.out, op, records)}")
    if isinstance(rts, Sandbox):
        rts.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
