"""slice_opt: shape inference, constant folding, lowering and raising of StridedSlice/Slice in
ONNX and OpenVINO IR models, from Python.

    >>> import onnx, slice_opt
    >>> model = onnx.load("models/last_token.onnx")
    >>> optimized, report = slice_opt.optimize(model)
    >>> report.summary["nodes_after"] <= report.summary["nodes_before"]
    True

A model is an ``onnx.ModelProto``, the ``bytes`` of a serialized ONNX model, or a path
(``str`` or ``os.PathLike``) to an ``.onnx`` file or an OpenVINO IR ``.xml`` (with its ``.bin``
beside it). :func:`optimize` returns the same kind it was given (``bytes`` for ``bytes``, a
``ModelProto`` for a ``ModelProto``). The work is done in Rust with the GIL released. Every error
is a :class:`SliceOptError` (one of its subclasses) carrying ``file``, ``node``, ``op`` and
``input``.

The command line's options are keyword arguments: ``passes``, ``fold_limit``, ``verify``,
``dims`` (``--dim``: fix or bound a symbolic dim of the inputs), ``input_shapes``
(``--input-shape``: an input's whole shape) and ``assumptions`` (``--dim``/``--assume`` as
assumptions only).
"""

import json
import os
from dataclasses import dataclass, field
from typing import (
    Any,
    Dict,
    List,
    Literal,
    Mapping,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    TypedDict,
    Union,
)

from . import _native
from ._errors import (
    Error,
    InputError,
    PassError,
    SliceError,
    SliceOptError,
    UsageError,
    VerificationError,
)

__all__ = [
    "optimize",
    "check",
    "info",
    "infer_shapes",
    "Report",
    "PassReport",
    "CheckRow",
    "Info",
    "SliceInfo",
    "Verdict",
    "Assumptions",
    "Dims",
    "InputShapes",
    "SliceOptError",
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


class _ModelProtoLike(Protocol):
    """An ``onnx.ModelProto`` (anything with ``SerializeToString``)."""

    def SerializeToString(self) -> bytes: ...


#: The verdict of a :func:`check` row.
Verdict = Union[
    Literal["ok"],
    Literal["undeclared"],
    Literal["unknown"],
    Literal["tighter"],
    Literal["mismatch"],
    Literal["invalid"],
]


class _CheckRowKeys(TypedDict):
    node: str
    path: str
    op: str
    declared: str
    inferred: str
    input: str
    verdict: Verdict


class CheckRow(_CheckRowKeys, total=False):
    """One row of :func:`check` (``slice-opt check --format json``): ``detail`` says why for
    anything but ``ok``; ``wrong_at``, for a mismatch of a dim that depends on the inputs'
    sizes, the smallest sizes found at which the declared dim is wrong (``{"seq": 2}``);
    ``warning`` is there for a node whose result depends on the runtime."""

    detail: str
    wrong_at: Dict[str, int]
    warning: str


class SliceInfo(TypedDict):
    """One slice node of :func:`info`: ``spec`` in Python slice notation, ``input`` the shape
    of its data input."""

    node: str
    path: str
    input: str
    op: str
    spec: str


class Info(TypedDict):
    """What :func:`info` returns (``slice-opt info --format json``)."""

    model: str
    format: Literal["onnx", "openvino"]
    opsets: Dict[str, int]
    nodes: int
    ops: Dict[str, int]
    slices: List[SliceInfo]


#: What ``assumptions=`` takes: one text or a list of them in the command line's syntax
#: (``"seq=1..4096"`` as ``--dim``, ``"k_len >= q_len"`` as ``--assume``), or a mapping from a
#: symbol to its bounds (``{"seq": (1, 4096), "batch": (1, None), "n": 8, "m": "1..64"}``).
Assumptions = Union[
    str,
    Sequence[str],
    Mapping[str, Union[int, str, Tuple[Optional[int], Optional[int]]]],
    None,
]


#: What ``dims=`` takes (the command line's ``--dim``): a mapping from a symbol to a size or its
#: bounds (``{"batch": 1, "seq": (1, 4096), "past": "0..512", "n": (1, None)}``), or texts in
#: the command line's syntax (``["batch=1", "seq=1..4096"]``, or one text).
Dims = Union[
    str,
    Sequence[str],
    Mapping[str, Union[int, str, Tuple[Optional[int], Optional[int]]]],
    None,
]

#: One dim of ``input_shapes=``: a size, a symbol's name, ``None`` or ``"?"`` (unknown), bounds
#: ``(lo, hi)`` (``hi`` None: unbounded) or a text ``"1..2048"``.
InputDimValue = Union[int, str, None, Tuple[Optional[int], Optional[int]]]

#: What ``input_shapes=`` takes (the command line's ``--input-shape``): a mapping from an input
#: to its whole shape, as a list of dims (``{"x": [1, "seq", None, (1, 2048)]}``) or a text
#: (``{"x": "1,seq,?,1..2048"}``), or texts ``["x=1,seq,?"]`` (or one text).
InputShapes = Union[
    str,
    Sequence[str],
    Mapping[str, Union[str, Sequence[InputDimValue]]],
    None,
]


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


def _assumption_texts(assumptions: Assumptions) -> List[str]:
    """``assumptions=`` as the command line's texts (``seq=1..4096``, ``k_len >= q_len``)."""
    if assumptions is None:
        return []
    if isinstance(assumptions, str):
        return [assumptions]
    if isinstance(assumptions, Mapping):
        out = []
        for name, b in assumptions.items():
            if isinstance(b, bool) or not isinstance(name, str):
                raise UsageError(f"assumptions: {name!r}: {b!r} is not a size or bounds")
            if isinstance(b, int):
                out.append(f"{name}={b}")
            elif isinstance(b, str):
                out.append(f"{name}={b}")
            elif isinstance(b, (tuple, list)) and len(b) == 2:
                lo, hi = ("" if v is None else str(int(v)) for v in b)
                out.append(f"{name}={lo}..{hi}")
            else:
                raise UsageError(f"assumptions: {name!r}: {b!r} is not a size or bounds")
        return out
    texts = list(assumptions)
    for t in texts:
        if not isinstance(t, str):
            raise UsageError(f"assumptions: {t!r} is not a text")
    return texts


def _size_text(v: Any, what: str) -> str:
    """A size (an ``int`` >= 0, not a ``bool``) as text; else a :class:`UsageError`."""
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise UsageError(f"{what}: {v!r} is not a size (an int >= 0)")
    return str(v)


def _bounds_text(v: Any, what: str) -> str:
    """``(lo, hi)`` (either None: open) as ``lo..hi``; else a :class:`UsageError`."""
    if not isinstance(v, (tuple, list)) or len(v) != 2:
        raise UsageError(f"{what}: {v!r} is not a size, bounds (lo, hi) or a text")
    lo, hi = ("" if x is None else _size_text(x, what) for x in v)
    return f"{lo}..{hi}"


def _texts(value: Any, what: str) -> List[str]:
    """One text or a sequence of texts as a list; else a :class:`UsageError`."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, (bytes, bytearray)) or not isinstance(value, Sequence):
        raise UsageError(
            f"{what}: expected a mapping or texts, not {type(value).__name__}"
        )
    texts = list(value)
    for t in texts:
        if not isinstance(t, str):
            raise UsageError(f"{what}: {t!r} is not a text")
    return texts


def _checked_text(t: str, what: str) -> str:
    if "\n" in t or "\r" in t:
        raise UsageError(f"{what}: {t!r} holds a line break")
    return t


def _dim_texts(dims: Dims) -> List[str]:
    """``dims=`` as the command line's ``--dim`` texts (``batch=1``, ``seq=1..4096``)."""
    if dims is None:
        return []
    if isinstance(dims, Mapping):
        out = []
        for name, b in dims.items():
            if not isinstance(name, str) or not name.strip():
                raise UsageError(f"dims: {name!r} is not a symbol's name")
            what = f"dims: {name!r}"
            if isinstance(b, str):
                out.append(f"{name}={b}")
            elif isinstance(b, int) and not isinstance(b, bool):
                out.append(f"{name}={_size_text(b, what)}")
            else:
                out.append(f"{name}={_bounds_text(b, what)}")
        return [_checked_text(t, "dims") for t in out]
    return [_checked_text(t, "dims") for t in _texts(dims, "dims")]


def _input_dim_text(d: Any, what: str) -> str:
    if d is None:
        return "?"
    if isinstance(d, str):
        if "," in d or "=" in d:
            raise UsageError(f"{what}: {d!r} is not one dim")
        return d
    if isinstance(d, int) and not isinstance(d, bool):
        return _size_text(d, what)
    return _bounds_text(d, what)


def _input_shape_texts(input_shapes: InputShapes) -> List[str]:
    """``input_shapes=`` as the command line's ``--input-shape`` texts (``x=1,seq,?,1..2048``)."""
    if input_shapes is None:
        return []
    if isinstance(input_shapes, Mapping):
        out = []
        for name, shape in input_shapes.items():
            if not isinstance(name, str) or not name.strip():
                raise UsageError(f"input_shapes: {name!r} is not an input's name")
            what = f"input_shapes: {name!r}"
            if isinstance(shape, str):
                out.append(f"{name}={shape}")
            elif isinstance(shape, (bytes, bytearray)) or not isinstance(shape, Sequence):
                raise UsageError(f"{what}: {shape!r} is not a shape (a list of dims or a text)")
            else:
                out.append(f"{name}=" + ",".join(_input_dim_text(d, what) for d in shape))
        return [_checked_text(t, "input_shapes") for t in out]
    return [_checked_text(t, "input_shapes") for t in _texts(input_shapes, "input_shapes")]


def _settings(
    assumptions: Assumptions, dims: Dims = None, input_shapes: InputShapes = None
) -> Dict[str, Any]:
    """The keyword arguments of :func:`optimize`, :func:`check` and :func:`info` that shape how
    the model is read, for ``_native`` (``Settings`` in src/lib.rs: a key per field)."""
    return {
        "assumptions": _assumption_texts(assumptions),
        "dims": _dim_texts(dims),
        "input_shapes": _input_shape_texts(input_shapes),
    }


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
    *,
    assumptions: Assumptions = None,
    dims: Dims = None,
    input_shapes: InputShapes = None,
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
        assumptions: what holds for the model's symbolic dims (``--dim``/``--assume``): texts
            such as ``"seq=1..4096"`` or ``"k_len >= q_len"``, or a mapping such as
            ``{"seq": (1, 4096)}``. Written dims are exact where they hold, and shorter; an ONNX
            result records them in ``metadata_props`` (``slice_opt.assumptions``). Without
            them, those a model records are used. ``verify=`` runs at sizes within the bounds
            and checks the facts at them.
        dims: sizes or bounds of the inputs' symbolic dims (``--dim``): ``{"batch": 1,
            "seq": (1, 4096), "past": "0..512"}`` or texts ``["batch=1", "seq=1..4096"]``. A
            fixed symbol is written as its size everywhere the model declares it (inputs,
            ``value_info``, outputs; IR Parameters), and what becomes constant folds; a bounded
            one keeps its name in ONNX and is written as an interval in IR. Each is also an
            assumption (as ``--dim`` is). A name no input has is refused (:class:`InputError`).
        input_shapes: whole shapes of inputs (``--input-shape``), for dims without names:
            ``{"x": [1, "seq", None, (1, 2048)]}``, ``{"x": "1,seq,?,1..2048"}`` or texts
            ``["x=1,seq,?"]``; each dim a size, a name, ``None``/``"?"`` (unknown) or bounds.
            An unknown input, a rank mismatch or a size against a static dim is refused
            (:class:`InputError`). ``verify=`` runs the original at the sizes given.

    Returns:
        ``(result, report)``: result is a ``ModelProto`` for a ``ModelProto`` (or an ONNX path
        without ``output``), ``bytes`` for ``bytes``, the output path for ``output=``; report is
        a :class:`Report`.

    Raises:
        SliceOptError: one of InputError, SliceError, PassError, UsageError,
            VerificationError.
    """
    kind, name, data = _source(model)
    verify_with = _verify_backend(verify)
    out_path = os.fspath(output) if output is not None else None
    if kind != "path" and out_path is not None:
        raise UsageError("output= is for a model given as a path")
    settings = _settings(assumptions, dims, input_shapes)
    result_bytes, raw = _native.optimize(
        name, data, out_path, _passes(passes), int(fold_limit), settings
    )
    verification = None
    if verify_with:
        from . import _verify

        if kind == "path" and name.lower().endswith(".xml"):
            verification = "not verified in ONNX Runtime: an OpenVINO IR model (rewrites are validated by the semantics core)"
        else:
            before = data if data is not None else name
            after = result_bytes if result_bytes is not None else out_path
            verification = _verify.compare(
                before,
                after,
                settings["dims"] + settings["assumptions"],
                settings["input_shapes"],
            )
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
            import onnxruntime  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401
        except ImportError as e:
            raise UsageError(f"verify='onnxruntime' needs onnxruntime and numpy: {e}") from e
        return "onnxruntime"
    raise UsageError(f"verify must be False, True or 'onnxruntime', not {verify!r}")


def infer_shapes(
    model: Model,
    output: Union[str, "os.PathLike[str]", None] = None,
    *,
    assumptions: Assumptions = None,
    dims: Dims = None,
    input_shapes: InputShapes = None,
) -> Any:
    """Runs only the ``infer`` pass: every Slice/StridedSlice output gets its inferred shape
    (symbolic where the dims are) written into the model. Returns the model of the same kind
    (or the output path). ``assumptions``, ``dims`` and ``input_shapes`` as for
    :func:`optimize` (the inputs' shapes are written first)."""
    result, _ = optimize(
        model,
        passes=("infer",),
        output=output,
        assumptions=assumptions,
        dims=dims,
        input_shapes=input_shapes,
    )
    return result


def check(model: Model, *, assumptions: Assumptions = None, dims: Dims = None) -> List[CheckRow]:
    """Declared versus inferred shape of every slice node: the rows of
    ``slice-opt check --format json`` (each a dict with ``node``, ``path``, ``op``,
    ``declared``, ``inferred``, ``input``, ``verdict`` — ``ok``, ``undeclared``, ``unknown``,
    ``tighter``, ``mismatch`` or ``invalid`` — and ``detail``, ``wrong_at`` and ``warning``
    when there is one).

    ``model`` is a path, ``bytes`` or a ``ModelProto``; ``assumptions`` as for
    :func:`optimize` (``--dim``/``--assume``). ``dims`` as for :func:`optimize`, but as
    ``slice-opt check --dim`` is: bounds (a size: ``n..n``) the inferred dims are exact
    within, the model itself left as it is (no ``input_shapes``: the command line's ``check``
    has no ``--input-shape``). The rows are the same whatever the kind of
    ``model``; the command line's exit code 1 is a row whose verdict is ``mismatch`` or
    ``invalid``."""
    kind, name, data = _source(model)
    settings = _settings(assumptions, dims)
    rows: List[CheckRow] = json.loads(_native.check(name, data, settings))["rows"]
    return rows


def info(model: Model, *, assumptions: Assumptions = None, dims: Dims = None) -> Info:
    """A summary of a model, as ``slice-opt info --format json``: ``model``, ``format``,
    ``opsets``, ``nodes``, ``ops`` (op type to count) and ``slices`` (each slice node in Python
    slice notation). ``model`` is a path, ``bytes`` or a ``ModelProto`` (``model`` then reads
    ``model.onnx``); ``assumptions`` as for :func:`optimize`, ``dims`` as for :func:`check`
    (bounds only)."""
    kind, name, data = _source(model)
    result: Info = json.loads(_native.info(name, data, _settings(assumptions, dims)))
    return result
