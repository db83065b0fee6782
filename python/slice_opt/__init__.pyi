# Type stubs of the public API of slice_opt (checked against the package by mypy's stubtest in
# python/tests/test_stubs.py).
import os
from dataclasses import dataclass
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
    TypeVar,
    Union,
    overload,
)

from typing_extensions import TypeAlias

from . import _native as _native
from ._errors import (
    Error as Error,
    InputError as InputError,
    PassError as PassError,
    SliceError as SliceError,
    SliceOptError as SliceOptError,
    UsageError as UsageError,
    VerificationError as VerificationError,
)

__version__: str
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
DEFAULT_PASSES: Tuple[str, ...]
DEFAULT_FOLD_LIMIT: int
PASSES: Tuple[str, ...]

class _ModelProtoLike(Protocol):
    """An ``onnx.ModelProto`` (anything with ``SerializeToString``)."""

    def SerializeToString(self) -> bytes: ...

_Proto = TypeVar("_Proto", bound=_ModelProtoLike)
_Path: TypeAlias = Union[str, os.PathLike[str]]
_Bytes: TypeAlias = Union[bytes, bytearray, memoryview]

# onnx.ModelProto | bytes | str | os.PathLike[str]
Model: TypeAlias = Any

#: ``"seq=1..4096"``, ``"k_len >= q_len"``, a list of them, or ``{"seq": (1, 4096), "n": 8}``.
Assumptions: TypeAlias = Union[
    str,
    Sequence[str],
    Mapping[str, Union[int, str, Tuple[Optional[int], Optional[int]]]],
    None,
]

#: ``{"batch": 1, "seq": (1, 4096), "past": "0..512"}``, ``["batch=1", "seq=1..4096"]`` or one text.
Dims: TypeAlias = Union[
    str,
    Sequence[str],
    Mapping[str, Union[int, str, Tuple[Optional[int], Optional[int]]]],
    None,
]

#: One dim of ``input_shapes=``: a size, a name, ``None``/``"?"`` (unknown) or bounds.
InputDimValue: TypeAlias = Union[int, str, None, Tuple[Optional[int], Optional[int]]]

#: ``{"x": [1, "seq", None, (1, 2048)]}``, ``{"x": "1,seq,?,1..2048"}``, ``["x=1,seq,?"]`` or one text.
InputShapes: TypeAlias = Union[
    str,
    Sequence[str],
    Mapping[str, Union[str, Sequence[InputDimValue]]],
    None,
]

_Passes: TypeAlias = Union[str, Sequence[str], None]
_Verify: TypeAlias = Union[bool, Literal["onnxruntime"]]

@dataclass
class PassReport:
    name: str
    changes: List[Dict[str, str]]
    skipped: List[Dict[str, str]]
    seconds: float

@dataclass
class Report:
    passes: List[PassReport]
    summary: Dict[str, Any]
    verification: Optional[str] = ...
    raw: Dict[str, Any] = ...
    def table(self) -> str: ...

Verdict: TypeAlias = Union[
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
    """One row of :func:`check` (``slice-opt check --format json``)."""

    detail: str
    wrong_at: Dict[str, int]
    warning: str

class SliceInfo(TypedDict):
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

def summary_table(s: Dict[str, Any]) -> str: ...
def _settings(
    assumptions: Assumptions, dims: Dims = ..., input_shapes: InputShapes = ...
) -> Dict[str, Any]: ...

# A ModelProto in: a ModelProto of the same type out.
@overload
def optimize(
    model: _Proto,
    passes: _Passes = ...,
    fold_limit: int = ...,
    verify: _Verify = ...,
    output: None = ...,
    *,
    assumptions: Assumptions = ...,
    dims: Dims = ...,
    input_shapes: InputShapes = ...,
) -> Tuple[_Proto, Report]: ...
# Bytes in: bytes out.
@overload
def optimize(
    model: _Bytes,
    passes: _Passes = ...,
    fold_limit: int = ...,
    verify: _Verify = ...,
    output: None = ...,
    *,
    assumptions: Assumptions = ...,
    dims: Dims = ...,
    input_shapes: InputShapes = ...,
) -> Tuple[bytes, Report]: ...
# A path with output=: the output path.
@overload
def optimize(
    model: _Path,
    passes: _Passes,
    fold_limit: int,
    verify: _Verify,
    output: _Path,
    *,
    assumptions: Assumptions = ...,
    dims: Dims = ...,
    input_shapes: InputShapes = ...,
) -> Tuple[str, Report]: ...
@overload
def optimize(
    model: _Path,
    passes: _Passes = ...,
    fold_limit: int = ...,
    verify: _Verify = ...,
    *,
    output: _Path,
    assumptions: Assumptions = ...,
    dims: Dims = ...,
    input_shapes: InputShapes = ...,
) -> Tuple[str, Report]: ...
# An ONNX path without output=: an onnx.ModelProto.
@overload
def optimize(
    model: _Path,
    passes: _Passes = ...,
    fold_limit: int = ...,
    verify: _Verify = ...,
    output: None = ...,
    *,
    assumptions: Assumptions = ...,
    dims: Dims = ...,
    input_shapes: InputShapes = ...,
) -> Tuple[Any, Report]: ...
@overload
def infer_shapes(
    model: _Proto,
    output: None = ...,
    *,
    assumptions: Assumptions = ...,
    dims: Dims = ...,
    input_shapes: InputShapes = ...,
) -> _Proto: ...
@overload
def infer_shapes(
    model: _Bytes,
    output: None = ...,
    *,
    assumptions: Assumptions = ...,
    dims: Dims = ...,
    input_shapes: InputShapes = ...,
) -> bytes: ...
@overload
def infer_shapes(
    model: _Path,
    output: _Path,
    *,
    assumptions: Assumptions = ...,
    dims: Dims = ...,
    input_shapes: InputShapes = ...,
) -> str: ...
@overload
def infer_shapes(
    model: _Path,
    output: None = ...,
    *,
    assumptions: Assumptions = ...,
    dims: Dims = ...,
    input_shapes: InputShapes = ...,
) -> Any: ...
def check(
    model: Union[_ModelProtoLike, _Bytes, _Path],
    *,
    assumptions: Assumptions = ...,
    dims: Dims = ...,
) -> List[CheckRow]: ...
def info(
    model: Union[_ModelProtoLike, _Bytes, _Path],
    *,
    assumptions: Assumptions = ...,
    dims: Dims = ...,
) -> Info: ...
