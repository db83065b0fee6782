from typing import List, Optional, Tuple

DEFAULT_FOLD_LIMIT: int

def optimize(
    name: str,
    data: Optional[bytes],
    output: Optional[str],
    passes: List[str],
    fold_limit: int,
) -> Tuple[Optional[bytes], str]: ...
def check(name: str, data: Optional[bytes]) -> str: ...
def info(name: str, data: Optional[bytes]) -> str: ...
def pass_names() -> List[str]: ...
