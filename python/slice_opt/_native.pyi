from typing import Any, Dict, List, Optional, Tuple

__all__ = ["optimize", "check", "info", "pass_names", "DEFAULT_FOLD_LIMIT"]

DEFAULT_FOLD_LIMIT: int

# settings: {"assumptions": [texts], "dims": [texts], "input_shapes": [texts]} (``Settings``
# in src/lib.rs; a key per field).
def optimize(
    name: str,
    data: Optional[bytes],
    output: Optional[str],
    passes: List[str],
    fold_limit: int,
    settings: Dict[str, Any],
) -> Tuple[Optional[bytes], str]: ...
def check(name: str, data: Optional[bytes], settings: Dict[str, Any]) -> str: ...
def info(name: str, data: Optional[bytes], settings: Dict[str, Any]) -> str: ...
def pass_names() -> List[str]: ...
