import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ._errors import (
    Error as Error,
    InputError as InputError,
    PassError as PassError,
    SliceError as SliceError,
    UsageError as UsageError,
    VerificationError as VerificationError,
)

__version__: str
DEFAULT_PASSES: Tuple[str, ...]
DEFAULT_FOLD_LIMIT: int
PASSES: Tuple[str, ...]

# onnx.ModelProto | bytes | str | os.PathLike[str]
Model = Any

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

def summary_table(s: Dict[str, Any]) -> str: ...
def optimize(
    model: Model,
    passes: Union[str, Sequence[str], None] = ...,
    fold_limit: int = ...,
    verify: Union[bool, str] = ...,
    output: Union[str, os.PathLike[str], None] = ...,
) -> Tuple[Any, Report]: ...
def infer_shapes(model: Model, output: Union[str, os.PathLike[str], None] = ...) -> Any: ...
def check(model: Model) -> List[Dict[str, Any]]: ...
def info(model: Model) -> Dict[str, Any]: ...
