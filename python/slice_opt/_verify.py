"""``verify="onnxruntime"``: the original and the result run in ONNX Runtime on the same seeded
random inputs; every output must match.

Input dims: a named symbol gets one size everywhere; symbolic and unknown dims are tried at 3,
then 64, then 512 (axis 0 at 1 from the second try on), keeping the first size with which the
original runs. Inputs above 1 GiB are not run. Integer inputs take values 0..3, floats
[-1, 1), booleans both values at random.
"""

from typing import Dict, List, Union

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


def _session(model: Union[bytes, str]):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def _inputs(sess, size: int, batch: int, rng) -> Dict[str, object]:
    import numpy as np

    names: Dict[str, int] = {}
    feeds = {}
    total = 0
    for i in sess.get_inputs():
        dtype = _DTYPES.get(i.type)
        if dtype is None:
            raise ValueError(f"input '{i.name}' has type {i.type}, which verification does not generate")
        shape: List[int] = []
        for axis, d in enumerate(i.shape or []):
            if isinstance(d, int) and d >= 0:
                shape.append(d)
            elif isinstance(d, str) and d:
                shape.append(names.setdefault(d, batch if axis == 0 else size))
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


def compare(before: Union[bytes, str], after: Union[bytes, str]) -> str:
    """Runs both models; returns what was verified (or why not), raises VerificationError on a
    difference."""
    import numpy as np

    try:
        sa = _session(before)
    except Exception as e:  # ORT raises its own exception types
        return f"NOT verified: ONNX Runtime cannot load the original: {str(e).splitlines()[0]}"
    sb = _session(after)
    chosen = None
    first_error = None
    for k, size in enumerate(SIZES):
        batch = size if k == 0 else 1
        try:
            feeds = _inputs(sa, size, batch, np.random.default_rng(SEED))
            sa.run(None, feeds)
            chosen = (size, batch)
            break
        except MemoryError as e:
            first_error = first_error or str(e)
            break
        except Exception as e:
            first_error = first_error or str(e).splitlines()[0]
    if chosen is None:
        return f"NOT verified: ONNX Runtime cannot run the original: {first_error}"
    size, batch = chosen
    rng = np.random.default_rng(SEED)
    outputs = 0
    for r in range(RUNS):
        feeds = _inputs(sa, size, batch, rng)
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
    return f"verified in ONNX Runtime: {RUNS} runs, {outputs} outputs equal (unbound dims at {size}, axis 0 at {batch})"
