"""slice_opt: shape inference, constant folding, lowering and raising of StridedSlice/Slice in
ONNX and OpenVINO IR models, from Python.

    >>> import onnx, slice_opt
    >>> model = onnx.load("models/last_token.onnx")
    >>> optimized, report = slice_opt.optimize(model)
    >>> report.summary["nodes_after"] <= report.summary["nodes_before"]
    True

A model is an ``onnx.ModelProto``, the ``bytes`` of a serialized ONNX model, or a path
(``str`` or ``os.PathLike``) to an ``.onnx`` file or an OpenVINO IR ``.xml`` (with its ``.bin``
beside it). Functions return the same kind they were given. The work is done in Rust with the
GIL released. Errors are :class:`Error` subclasses carrying ``file``, ``node``, ``op`` and
``input``.
"""

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _native
from ._errors import Error, InputError, PassError, SliceError, UsageError, VerificationError

__all__ = [
    "optimize",
    "check",
    "info",
    "infer_shapes",
    "Report",
    "PassReport",
    "Error",
    "InputError",
    "SliceError",
    "PassError",
    "UsageError",
    "VerificationError",
    "DEFAULT_PASSES",
    "DEFAULT_FOLD_LIMIT",
    "PASSES",
]

__version__ = "0.1.0"

#: The passes :func:`optimize` runs by default.
DEFAULT_PASSES: Tuple[str, ...] = ("infer", "fold", "cleanup")
#: Largest constant ``fold`` may produce by default, in bytes (16 MiB).
DEFAULT_FOLD_LIMIT: int = _native.DEFAULT_FOLD_LIMIT
#: Every pass name.
PASSES: Tuple[str, ...] = tuple(_native.pass_names())

Model = Any  # onnx.ModelProto | bytes | str | os.PathLike


@dataclass
class PassReport:
    """What one pass did.

    Attributes:
        name: the pass (``infer``, ``fold``, ``cleanup``, ``lower``, ``raise``).
        changes: one dict per change: ``node``, ``op``, ``what`` and, where shapes are
            concerned, ``before`` and ``after``.
        skipped: what the pass left alone, with the reason in ``what``.
        seconds: time the pass took.
    """

    name: str
    changes: List[Dict[str, str]]
    skipped: List[Dict[str, str]]
    seconds: float


@dataclass
class Report:
    """What :func:`optimize` did.

    Attributes:
        passes: one :class:`PassReport` per pass, in order.
        summary: op counts before/after (``ops``: list of ``{"op", "before", "after"}`` for
            Slice, StridedSlice, Reshape, Shape, Gather, Constant), ``nodes_before``,
            ``nodes_after``, ``bytes_before``, ``bytes_after`` and ``seconds``: the same
            numbers as the command line's table and ``--report`` JSON.
        verification: what ``verify=`` checked, or None when it was not asked for.
        raw: the report as the command line's ``--report`` JSON would hold it.
    """

    passes: List[PassReport]
    summary: Dict[str, Any]
    verification: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    def table(self) -> str:
        """The summary table the command line prints."""
        return summary_table(self.summary)


def summary_table(s: Dict[str, Any]) -> str:
    """Formats a report's ``summary`` like the command line does."""
    rows = [["", "before", "after"]]
    rows += [[r["op"], str(r["before"]), str(r["after"])] for r in s["ops"]]
    rows.append(["total nodes", str(s["nodes_before"]), str(s["nodes_after"])])
    rows.append(["model size", _human(s["bytes_before"]), _human(s["bytes_after"])])
    w = [max(len(r[c]) for r in rows) for c in range(3)]
    rule = "+-" + "-+-".join("-" * x for x in w) + "-+"
    out = [rule]
    for i, r in enumerate(rows):
        out.append(f"| {r[0]:<{w[0]}} | {r[1]:>{w[1]}} | {r[2]:>{w[2]}} |")
        if i == 0 or i == len(s["ops"]):
            out.append(rule)
    out.append(rule)
    out.append(f"time: {s['seconds']:.2f}s")
    return "\n".join(out)


def _human(n: int) -> str:
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    v, u = float(n), 0
    while v >= 1024 and u + 1 < len(units):
        v /= 1024
        u += 1
    return f"{n} B" if u == 0 else f"{v:.1f} {units[u]}"


def _is_model_proto(m: Any) -> bool:
    return type(m).__name__ == "ModelProto" and hasattr(m, "SerializeToString")


def _source(model: Model) -> Tuple[str, str, Optional[bytes]]:
    """``(kind, name, data)``: kind is ``proto``, ``bytes`` or ``path``."""
    if _is_model_proto(model):
        return "proto", "model.onnx", model.SerializeToString()
    if isinstance(model, (bytes, bytearray, memoryview)):
        return "bytes", "model.onnx", bytes(model)
    if isinstance(model, (str, os.PathLike)):
        return "path", os.fspath(model), None
    raise UsageError(
        f"model must be an onnx.ModelProto, bytes or a path, not {type(model).__name__}"
    )


def _to_proto(data: bytes):
    import onnx

    return onnx.ModelProto.FromString(data)


def _passes(passes: Union[str, Sequence[str], None]) -> List[str]:
    if passes is None:
        return []
    if isinstance(passes, str):
        return [p.strip() for p in passes.split(",") if p.strip() and p.strip() != "none"]
    return list(passes)


def _report(raw_json: str, verification: Optional[str]) -> Report:
    raw = json.loads(raw_json)
    passes = [
        PassReport(p["pass"], p["changes"], p["skipped"], p["seconds"]) for p in raw["passes"]
    ]
    if verification is not None:
        raw["verification"] = verification
    return Report(passes, raw.get("summary", {}), verification, raw)


def optimize(
    model: Model,
    passes: Union[str, Sequence[str], None] = DEFAULT_PASSES,
    fold_limit: int = DEFAULT_FOLD_LIMIT,
    verify: Union[bool, str] = False,
    output: Union[str, "os.PathLike[str]", None] = None,
) -> Tuple[Any, Report]:
    """Runs passes on a model and returns ``(result, report)``.

    Args:
        model: an ``onnx.ModelProto``, ONNX ``bytes``, or a path to ``.onnx`` / IR ``.xml``.
        passes: pass names in order (``"infer"``, ``"fold"``, ``"cleanup"``, ``"lower"``,
            ``"raise"``), a comma-separated string, or ``()`` / ``"none"`` for a round trip.
        fold_limit: largest constant ``fold`` may produce, in bytes.
        verify: ``False``; ``True`` or ``"onnxruntime"`` runs the original and the result in
            ONNX Runtime on seeded random inputs and raises :class:`VerificationError` if an
            output differs (needs ``onnxruntime`` and ``numpy``; ONNX models only).
        output: for a path, where to write the result (for IR, the ``.xml``; the ``.bin`` goes
            beside it). Without it, an ONNX path gives an ``onnx.ModelProto``; an IR path needs
            it.

    Returns:
        ``(result, report)``: result is a ``ModelProto`` for a ``ModelProto`` (or an ONNX path
        without ``output``), ``bytes`` for ``bytes``, the output path for ``output=``; report is
        a :class:`Report`.

    Raises:
        InputError, SliceError, PassError, UsageError, VerificationError: see :class:`Error`.
    """
    kind, name, data = _source(model)
    verify_with = _verify_backend(verify)
    out_path = os.fspath(output) if output is not None else None
    if kind != "path" and out_path is not None:
        raise UsageError("output= is for a model given as a path")
    result_bytes, raw = _native.optimize(name, data, out_path, _passes(passes), int(fold_limit))
    verification = None
    if verify_with:
        from . import _verify

        if kind == "path" and name.lower().endswith(".xml"):
            verification = "not verified in ONNX Runtime: an OpenVINO IR model (rewrites are validated by the semantics core)"
        else:
            before = data if data is not None else name
            after = result_bytes if result_bytes is not None else out_path
            verification = _verify.compare(before, after)
    if kind == "proto":
        result: Any = _to_proto(result_bytes)
    elif kind == "bytes":
        result = result_bytes
    elif out_path is not None:
        result = out_path
    else:
        result = _to_proto(result_bytes)
    return result, _report(raw, verification)


def _verify_backend(verify: Union[bool, str]) -> Optional[str]:
    if verify is False or verify is None:
        return None
    if verify is True or verify == "onnxruntime":
        try:
            import numpy  # noqa: F401
            import onnxruntime  # noqa: F401
        except ImportError as e:
            raise UsageError(f"verify='onnxruntime' needs onnxruntime and numpy: {e}") from e
        return "onnxruntime"
    raise UsageError(f"verify must be False, True or 'onnxruntime', not {verify!r}")


def infer_shapes(model: Model, output: Union[str, "os.PathLike[str]", None] = None) -> Any:
    """Runs only the ``infer`` pass: every Slice/StridedSlice output gets its inferred shape
    (symbolic where the dims are) written into the model. Returns the model of the same kind
    (or the output path)."""
    result, _ = optimize(model, passes=("infer",), output=output)
    return result


def check(model: Model) -> List[Dict[str, Any]]:
    """Declared versus inferred shape of every slice node: the rows of
    ``slice-opt check --format json`` (each a dict with ``node``, ``op``, ``declared``,
    ``inferred``, ``verdict`` — ``ok``, ``undeclared``, ``unknown``, ``mismatch`` or
    ``invalid`` — and ``detail`` when not ok; subgraph paths where the command line gives
    them)."""
    kind, name, data = _source(model)
    return json.loads(_native.check(name, data))["rows"]


def info(model: Model) -> Dict[str, Any]:
    """A summary of a model, as ``slice-opt info --format json``: ``model``, ``format``,
    ``opsets``, ``nodes``, ``ops`` (op type to count) and ``slices`` (each slice node in Python
    slice notation)."""
    kind, name, data = _source(model)
    return json.loads(_native.info(name, data))
