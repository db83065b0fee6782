"""``verify="onnxruntime"``: the original and the result run in ONNX Runtime on the same seeded
random inputs; every output must match.

Input dims: a named symbol gets one size everywhere; symbolic and unknown dims are tried at 3,
then 64, then 512 (axis 0 at 1 from the second try on), keeping the first size with which the
original runs. Inputs above 1 GiB are not run. Integer inputs take values 0..3, floats
[-1, 1), booleans both values at random.

Under ``assumptions=``, a named symbol with bounds (``seq=1..4096``) takes the size nearest the
one tried within them, and a size is used only if every fact (``k_len >= q_len``) holds at it:
the result is exact only where they hold. ``dims=`` joins them (a fixed size is the bound
``n..n``), and ``input_shapes=`` sets an input's dims one by one: a size is used as given, a name
is a symbol as above, bounds clamp the size tried, ``?`` is tried as an unknown dim: the original
runs at the sizes the result was given.
"""

import ast
import operator
from fractions import Fraction
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from ._errors import VerificationError

MAX_INPUT_BYTES = 1 << 30
SIZES = (3, 64, 512)
RUNS = 3
SEED = 0x5EED

_DTYPES = {
    "tensor(float)": "float32",
    "tensor(double)": "float64",
    "tensor(float16)": "float16",
    "tensor(int64)": "int64",
    "tensor(int32)": "int32",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}


Bounds = Dict[str, Tuple[int, Optional[int]]]
#: ``input_shapes=`` as ``{input: [dim]}``, each dim an int (a size), a str (a symbol), a
#: ``(lo, hi)`` (bounds) or None (``?``).
Shapes = Dict[str, List[Union[int, str, Tuple[int, Optional[int]], None]]]
Fact = Tuple[str, Callable[[Dict[str, int]], Optional[bool]]]


def _is_fact(text: str) -> bool:
    return "<" in text or ">" in text or "==" in text


def _bounds(texts: Sequence[str]) -> Bounds:
    """``NAME=LO..HI`` / ``NAME=LO..`` / ``NAME=..HI`` / ``NAME=V`` texts (already accepted by the
    library) as ``{name: (lo, hi)}``."""
    out: Bounds = {}
    for t in texts:
        if _is_fact(t):
            continue
        name, _, rng = t.partition("=")
        lo_s, dots, hi_s = rng.partition("..")
        if not dots:
            lo_s = hi_s = rng
        lo = int(lo_s) if lo_s.strip() else 0
        hi = int(hi_s) if hi_s.strip() else None
        out[name.strip()] = (lo, hi)
    return out


def _range(text: str) -> Tuple[int, Optional[int]]:
    lo_s, dots, hi_s = text.partition("..")
    if not dots:
        lo_s = hi_s = text
    return (int(lo_s) if lo_s.strip() else 0, int(hi_s) if hi_s.strip() else None)


def _shapes(texts: Sequence[str]) -> Shapes:
    """``INPUT=D1,D2,...`` texts (already accepted by the library) as ``{input: [dim]}``."""
    out: Shapes = {}
    for t in texts:
        name, _, dims = t.rpartition("=")
        shape: List[Union[int, str, Tuple[int, Optional[int]], None]] = []
        for d in (x.strip() for x in dims.split(",")) if dims.strip() else ():
            if d == "?":
                shape.append(None)
            elif ".." in d:
                lo, hi = _range(d)
                shape.append(lo if hi == lo else (lo, hi))
            elif d.isdigit():
                shape.append(int(d))
            else:
                shape.append(d)
        out[name.strip()] = shape
    return out


def _dims_of(sess, shapes: Shapes) -> List[Tuple[str, List[object]]]:
    """Each input's name and dims: those of ``input_shapes=`` where it gives the input (its
    ``?`` the model's dim there), else the model's."""
    out: List[Tuple[str, List[object]]] = []
    for i in sess.get_inputs():
        model = list(i.shape or [])
        given = shapes.get(i.name)
        if given is None or len(given) != len(model):
            out.append((i.name, model))
        else:
            out.append((i.name, [m if g is None else g for g, m in zip(given, model)]))
    return out


_BIN = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_CMP = {
    ast.GtE: operator.ge,
    ast.Gt: operator.gt,
    ast.LtE: operator.le,
    ast.Lt: operator.lt,
    ast.Eq: operator.eq,
}
_FUNCS: Dict[str, Callable[..., Fraction]] = {
    "min": min,
    "max": max,
    "floor": lambda x: Fraction(x.__floor__()),
    "ceil": lambda x: Fraction(x.__ceil__()),
}


def _fact(text: str) -> Fact:
    """A fact as a function of the sizes: True or False where it can be evaluated, None where it
    names a symbol no input has or uses syntax this evaluator does not read."""
    try:
        tree: Optional[ast.AST] = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        tree = None

    def ev(n: ast.AST, sizes: Dict[str, int]) -> Fraction:
        if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
            return Fraction(n.value)
        if isinstance(n, ast.Name):
            return Fraction(sizes[n.id])
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand, sizes)
        if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
            return Fraction(_BIN[type(n.op)](ev(n.left, sizes), ev(n.right, sizes)))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _FUNCS:
            return Fraction(_FUNCS[n.func.id](*(ev(a, sizes) for a in n.args)))
        raise ValueError(ast.dump(n))

    def holds(sizes: Dict[str, int]) -> Optional[bool]:
        if not isinstance(tree, ast.Compare):
            return None
        try:
            left = ev(tree.left, sizes)
            for op, right_node in zip(tree.ops, tree.comparators):
                if type(op) not in _CMP:
                    return None
                right = ev(right_node, sizes)
                if not _CMP[type(op)](left, right):
                    return False
                left = right
            return True
        except (KeyError, ValueError, ZeroDivisionError, TypeError):
            return None

    return text, holds


def _session(model: Union[bytes, str]):
    import onnxruntime as ort  # type: ignore[import-untyped,import-not-found,unused-ignore]

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def _clamp(v: int, b: Optional[Tuple[int, Optional[int]]]) -> int:
    if b is None:
        return v
    lo, hi = b
    v = max(v, lo)
    return v if hi is None else min(v, hi)


#: How many combinations of sizes are tried for the facts to hold.
MAX_COMBINATIONS = 4096


def _sizes(sess, size: int, batch: int, bounds: Bounds, shapes: Optional[Shapes] = None) -> Dict[str, int]:
    """The size of every named symbol of the inputs."""
    names: Dict[str, int] = {}
    for _, dims in _dims_of(sess, shapes or {}):
        for axis, d in enumerate(dims):
            if isinstance(d, str) and d and d not in names:
                names[d] = _clamp(batch if axis == 0 else size, bounds.get(d))
    return names


def _satisfying(names: Dict[str, int], bounds: Bounds, facts: Sequence[Fact]) -> Tuple[Optional[Dict[str, int]], List[str]]:
    """Sizes near ``names`` (each symbol at its size, one or two more, one less, or double,
    within its bounds) at which no fact is false, trying ``names`` first; and the facts that
    could not be evaluated there. ``(None, [the first fact false everywhere tried])`` when
    there are none."""
    import itertools

    def verdicts(sizes: Dict[str, int]) -> List[Tuple[str, Optional[bool]]]:
        return [(t, holds(sizes)) for t, holds in facts]

    keys = list(names)
    options = []
    for k in keys:
        v = names[k]
        seen: List[int] = []
        for c in (v, v + 1, v + 2, v - 1, 2 * v):
            c = _clamp(max(c, 1), bounds.get(k))
            if c not in seen:
                seen.append(c)
        options.append(seen)
    first_false = ""
    for combo in itertools.islice(itertools.product(*options), MAX_COMBINATIONS):
        sizes = dict(zip(keys, combo))
        vs = verdicts(sizes)
        false = [t for t, v in vs if v is False]
        if not false:
            return sizes, [t for t, v in vs if v is None]
        first_false = first_false or false[0]
    return None, [first_false]


def _inputs(
    sess,
    size: int,
    batch: int,
    rng,
    names: Optional[Dict[str, int]] = None,
    shapes: Optional[Shapes] = None,
) -> Dict[str, object]:
    import numpy as np

    names = dict(names or {})
    given = _dims_of(sess, shapes or {})
    feeds = {}
    total = 0
    for i, (_, dims) in zip(sess.get_inputs(), given):
        dtype = _DTYPES.get(i.type)
        if dtype is None:
            raise ValueError(f"input '{i.name}' has type {i.type}, which verification does not generate")
        shape: List[int] = []
        for axis, d in enumerate(dims):
            if isinstance(d, int) and d >= 0:
                shape.append(d)
            elif isinstance(d, str) and d:
                shape.append(names.setdefault(d, batch if axis == 0 else size))
            elif isinstance(d, tuple):
                shape.append(_clamp(batch if axis == 0 else size, d))
            else:
                shape.append(batch if axis == 0 else size)
        total += int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        if total > MAX_INPUT_BYTES:
            raise MemoryError(f"inputs too large to run ({total} bytes above {MAX_INPUT_BYTES})")
        if dtype.startswith("float"):
            v = rng.uniform(-1.0, 1.0, size=shape).astype(dtype)
        elif dtype == "bool":
            v = rng.integers(0, 2, size=shape).astype(bool)
        else:
            v = rng.integers(0, 4, size=shape).astype(dtype)
        feeds[i.name] = v
    return feeds


def _same(a, b) -> str:
    import numpy as np

    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return f"shape {list(b.shape)} vs {list(a.shape)}"
    if a.dtype != b.dtype:
        return f"type {b.dtype} vs {a.dtype}"
    if a.dtype.kind in "fc":
        if not np.allclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True):
            i = int(np.argmax(~np.isclose(a, b, rtol=1e-4, atol=1e-5, equal_nan=True)))
            return f"element {i}: {b.ravel()[i]} vs {a.ravel()[i]}"
        return ""
    return "" if np.array_equal(a, b) else "values differ"


def compare(
    before: Union[bytes, str],
    after: Union[bytes, str],
    assumptions: Sequence[str] = (),
    input_shapes: Sequence[str] = (),
) -> str:
    """Runs both models; returns what was verified (or why not), raises VerificationError on a
    difference. ``assumptions``: the texts of ``dims=`` and ``assumptions=`` (sizes within the
    bounds, facts holding at them); ``input_shapes``: the texts of ``input_shapes=`` (the
    original's inputs run at those shapes)."""
    import numpy as np

    bounds = _bounds(assumptions)
    shapes = _shapes(input_shapes)
    facts = [_fact(t) for t in assumptions if _is_fact(t)]

    try:
        sa = _session(before)
    except Exception as e:  # ORT raises its own exception types
        return f"NOT verified: ONNX Runtime cannot load the original: {str(e).splitlines()[0]}"
    sb = _session(after)
    chosen = None
    first_error = None
    no_sizes = None
    unchecked: List[str] = []
    for k, size in enumerate(SIZES):
        batch = size if k == 0 else 1
        near = _sizes(sa, size, batch, bounds, shapes)
        found, unchecked = _satisfying(near, bounds, facts)
        if found is None:
            no_sizes = no_sizes or f"no sizes near {near} satisfy the assumption '{unchecked[0]}'"
            continue
        names = found
        try:
            feeds = _inputs(sa, size, batch, np.random.default_rng(SEED), names, shapes)
            sa.run(None, feeds)
            chosen = (size, batch, names)
            break
        except MemoryError as e:
            first_error = first_error or str(e)
            break
        except Exception as e:
            first_error = first_error or str(e).splitlines()[0]
    if chosen is None:
        if first_error is None:
            return f"NOT verified: {no_sizes}"
        return f"NOT verified: ONNX Runtime cannot run the original: {first_error}"
    size, batch, names = chosen
    rng = np.random.default_rng(SEED)
    outputs = 0
    for r in range(RUNS):
        feeds = _inputs(sa, size, batch, rng, names, shapes)
        want = sa.run(None, feeds)
        try:
            got = sb.run(None, feeds)
        except Exception as e:
            raise VerificationError(
                f"ONNX Runtime cannot run the transformed model: {str(e).splitlines()[0]}"
            ) from e
        if len(want) != len(got):
            raise VerificationError(f"{len(want)} outputs before, {len(got)} after")
        for i, (w, g) in enumerate(zip(want, got)):
            why = _same(w, g)
            if why:
                raise VerificationError(
                    f"the transformed model differs from the original: run {r}, output "
                    f"{sa.get_outputs()[i].name}: {why}"
                )
        outputs += len(want)
    at = f"unbound dims at {size}, axis 0 at {batch}"
    if bounds or facts or shapes:
        at += f"; named dims at {names}"
    if unchecked:
        at += "; not checked at these sizes: " + ", ".join(f"'{t}'" for t in unchecked)
    return f"verified in ONNX Runtime: {RUNS} runs, {outputs} outputs equal ({at})"
