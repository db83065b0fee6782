#!/usr/bin/env python3
"""ONNX Runtime's `Sin`, `Cos` and `Log` of f32 tensors, and its cubic `Resize`, as fixtures
for slice-opt's fold of those ops (`src/ops/eval/transcendental.rs`, `src/ops/eval/resize.rs`,
checked by `tests/fold_transcendental.rs`).

ONNX Runtime computes these with vector approximations (Eigen packets of 4 lanes) and the C
library for the elements after the last whole packet, so a value depends on the element's
position and on the tensor's length. Each case here is one single-node model run in ONNX
Runtime (CPU, default session options) on one tensor; the fixture keeps the input and output
bits. Cases: every length 1..70 over several value ranges (rotary angles `position *
inv_freq` up to 4096, small and large angles, Log of integers 1..1e5, of fractions, of T5's
relative-position ratios, of random positive bit patterns with denormals), special values (0,
-0, inf, NaN, negative, denormals) at packet and tail positions, and a few long tensors.
Resize (opset 19, `sizes`): cubic, rank 4 and 2, up and down, every coordinate mode slice-opt
folds (half_pixel, pytorch_half_pixel, asymmetric, align_corners), a = -0.75 and -0.5,
exclude_outside 0 and 1, and ViT's position-embedding case (16 channels, 4x4 -> 8x10).
ScatterND (opset 18, no reduction; pure data movement, checked here as the other folds are):
f32 and int64 data of rank 1..4, index tuples of every length, negative indices, no slice
named twice, including T5's decoder mask case.

Usage: python3 tools/gen_trig_fixtures.py [--out tests/data/trig/ort_trig.bin.gz] [--big]
  --big   many more cases (every length to 300, 20 seeds each, long tensors up to 2^20
          elements): for a local check (`TRIG_FIXTURE=FILE cargo test --test
          fold_transcendental`), too large to commit.
  --stats compare the fixture's ORT values with the C library's (sinf/cosf/logf) and print
          how many differ, by position kind (packet / tail).

Format (little endian, gzip): b"ORTTRIG1", then per case: u8 op (0 Sin, 1 Cos, 2 Log), u32 n,
n u32 input bits, n u32 output bits; or u8 3 (Resize), u8 coordinate mode (index in COORDS),
f32 a, u8 exclude_outside, u8 rank, rank u32 input dims, rank u32 sizes, the input's and the
output's u32 bits; or u8 4 (ScatterND), u8 ONNX element type (1 float, 7 int64), u8 rank
r, r u32 data dims, u8 rank q, q u32 indices dims, then the data's, the indices' (i64), the
updates' and the output's bytes.
"""

import argparse
import ctypes
import gzip
import os
import struct
import sys

import numpy as np

OPS = ["Sin", "Cos", "Log"]
COORDS = ["half_pixel", "pytorch_half_pixel", "asymmetric", "align_corners"]


def resize_session(rank, coord, a, exclude):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    g = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "", "s"], ["y"], mode="cubic",
                          coordinate_transformation_mode=coord, cubic_coeff_a=a,
                          exclude_outside=exclude)],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None] * rank),
         helper.make_tensor_value_info("s", TensorProto.INT64, [rank])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * rank)],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 19)])
    m.ir_version = 9
    onnx.checker.check_model(m)
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def scatter_session(elem):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    g = helper.make_graph(
        [helper.make_node("ScatterND", ["d", "i", "u"], ["y"])],
        "g",
        [helper.make_tensor_value_info("d", elem, None),
         helper.make_tensor_value_info("i", TensorProto.INT64, None),
         helper.make_tensor_value_info("u", elem, None)],
        [helper.make_tensor_value_info("y", elem, None)],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def scatter_cases(big):
    rng = np.random.default_rng(4344)
    for case in range(300 if big else 30):
        r = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.integers(1, 6, r))
        k = int(rng.integers(1, r + 1))
        slots = int(np.prod(shape[:k]))
        m = int(rng.integers(0, slots + 1))
        flat = rng.permutation(slots)[:m]
        idx = np.stack(np.unravel_index(flat, shape[:k]), -1).astype(np.int64).reshape(m, k)
        idx = np.where(rng.random(idx.shape) < 0.3, idx - np.array(shape[:k]), idx)
        lead = (m,) if case % 3 else ((1, m) if case % 2 else (m,))
        idx = idx.reshape(lead + (k,))
        elem = 1 if case % 2 else 7
        dt = np.float32 if elem == 1 else np.int64
        data = (rng.standard_normal(shape) * 100).astype(dt)
        upd = (rng.standard_normal(lead + shape[k:]) * 100).astype(dt)
        yield elem, data, idx, upd
    # T5 decoder (optimum): a [2, 5, 5] mask with one row of updates per batch
    yield 1, np.zeros((2, 5, 5), np.float32), np.array([[0], [1]], np.int64), \
        np.ones((2, 5, 5), np.float32)


def resize_cases(big):
    rng = np.random.default_rng(4343)
    shapes = [((1, 2, 4, 4), (1, 2, 8, 10)), ((1, 3, 14, 14), (1, 3, 16, 16)),
              ((2, 2, 7, 5), (2, 2, 3, 2)), ((1, 1, 5, 9), (1, 1, 5, 4)), ((6, 4), (13, 1)),
              ((3, 3), (1, 7)), ((1, 2, 1, 1), (1, 2, 3, 4)), ((1, 1, 24, 24), (1, 1, 24, 24))]
    if big:
        shapes += [((1, 4, h, w), (1, 4, oh, ow)) for h, w, oh, ow in rng.integers(1, 30, (200, 4))]
    combos = [(ci, a, e) for ci in range(len(COORDS)) for a in (-0.75, -0.5) for e in (0, 1)]
    for k, (shape, sizes) in enumerate(shapes):
        # every combination for ViT's case (and in --big), four others round robin elsewhere
        pick = combos if big or k == 0 else [combos[(4 * k + j) % len(combos)] for j in range(4)]
        for ci, a, exclude in pick:
            x = rng.standard_normal(shape).astype(np.float32)
            yield ci, a, exclude, x, tuple(int(d) for d in sizes)
    # ViT's (vit.ts15.onnx at 32x40: 16 channels, a 4x4 grid to 8x10)
    yield 0, -0.75, 0, rng.standard_normal((1, 16, 4, 4)).astype(np.float32), (1, 16, 8, 10)


def session(op):
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    g = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n"])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])


def rotary(rng, n):
    """position * inv_freq as the exporters compute it (f32), `n` of them."""
    dim = int(rng.choice([32, 64, 128]))
    base = float(rng.choice([10000.0, 500000.0, 1000000.0]))
    inv = (1.0 / (base ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / dim))).astype(
        np.float32
    )
    start = int(rng.integers(0, 4096))
    pos = (start + np.arange(n // len(inv) + 2)).astype(np.float32)
    return np.outer(pos, inv).astype(np.float32).ravel()[:n]


def values(op, kind, rng, n):
    f32 = np.float32
    if op in ("Sin", "Cos"):
        if kind == 0:
            return rotary(rng, n)
        if kind == 1:
            return (rng.uniform(-10, 10, n)).astype(f32)
        if kind == 2:
            return (rng.uniform(-4096, 4096, n)).astype(f32)
        if kind == 3:
            # just below the packet algorithms' Payne-Hanek thresholds
            return (rng.uniform(-18837, 18837, n)).astype(f32)
        return (rng.uniform(-1, 1, n) * f32(10.0) ** rng.integers(-40, 0, n)).astype(f32)
    if kind == 0:
        return rng.integers(1, 100001, n).astype(f32)
    if kind == 1:
        # T5: relative position / max_exact (buckets 32 or 16, bidirectional or not)
        q = rng.integers(1, 4096, n).astype(f32)
        return (q / f32(rng.choice([8.0, 16.0, 4.0]))).astype(f32)
    if kind == 2:
        return rng.uniform(0, 1, n).astype(f32)
    if kind == 3:
        return rng.uniform(0.5, 2, n).astype(f32)
    bits = rng.integers(0, 0x7F800000, n, dtype=np.int64).astype(np.uint32)
    return bits.view(f32)


SPECIAL = np.array(
    [0.0, -0.0, np.inf, -np.inf, np.nan, -1.0, 1e-45, -1e-45, 1e-40, 1.1754942e-38,
     1.1754944e-38, 3.4e38, 1.0, 2.0, 0.5, 1e-30, 25965.998, 25966.0, 18837.998, 18838.0,
     -25966.0, 1e30, 4096.0, 3.1415927, 1.5707964],
    np.float32,
)


def cases(big):
    rng = np.random.default_rng(43)
    top = 300 if big else 70
    seeds = 20 if big else 1
    for op in OPS:
        for n in range(1, top + 1):
            for s in range(seeds):
                yield op, values(op, (n + s) % 5, rng, n)
        for n in (4, 8, 9, 11, 25, 28):
            for shift in range(min(n, 8) if big else 2):
                x = np.roll(np.resize(SPECIAL, n), shift).astype(np.float32)
                yield op, x
        longs = [1000, 4096] + ([12000, 12824, 12832, 16384, 65536] if big else [])
        for n in longs:
            for kind in range(5 if big else 1):
                yield op, values(op, kind, rng, n)
        if big:
            yield op, values(op, 0, rng, 1 << 20)
        if op == "Log":
            # T5's bucket input at seq 64: |i - j| / 8 for i, j < 64 (zeros included).
            i = np.arange(64)
            rel = np.abs(i[None, :] - i[:, None]).astype(np.float32).ravel()
            yield op, (rel / np.float32(8.0)).astype(np.float32)
            if big:
                i = np.arange(512)
                rel = np.abs(i[None, :] - i[:, None]).astype(np.float32).ravel()
                yield op, (rel / np.float32(16.0)).astype(np.float32)


def write(path, big):
    sessions = {op: session(op) for op in OPS}
    count = 0
    elems = 0
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(b"ORTTRIG1")
        for op, x in cases(big):
            x = np.ascontiguousarray(x, np.float32)
            y = sessions[op].run(None, {"x": x})[0]
            f.write(struct.pack("<BI", OPS.index(op), len(x)))
            f.write(x.view(np.uint32).astype("<u4").tobytes())
            f.write(np.asarray(y, np.float32).view(np.uint32).astype("<u4").tobytes())
            count += 1
            elems += len(x)
        sessions = {}
        for ci, a, exclude, x, sizes in resize_cases(big):
            key = (x.ndim, ci, a, exclude)
            if key not in sessions:
                sessions[key] = resize_session(x.ndim, COORDS[ci], a, exclude)
            y = sessions[key].run(None, {"x": x, "s": np.array(sizes, np.int64)})[0]
            assert y.shape == sizes, (y.shape, sizes)
            f.write(struct.pack("<BBfBB", 3, ci, a, exclude, x.ndim))
            f.write(struct.pack(f"<{x.ndim}I", *x.shape))
            f.write(struct.pack(f"<{x.ndim}I", *sizes))
            f.write(x.ravel().view(np.uint32).astype("<u4").tobytes())
            f.write(np.asarray(y, np.float32).ravel().view(np.uint32).astype("<u4").tobytes())
            count += 1
            elems += y.size
        sessions = {}
        for elem, data, idx, upd in scatter_cases(big):
            if elem not in sessions:
                sessions[elem] = scatter_session(elem)
            y = sessions[elem].run(None, {"d": data, "i": idx, "u": upd})[0]
            f.write(struct.pack("<BBB", 4, elem, data.ndim))
            f.write(struct.pack(f"<{data.ndim}I", *data.shape))
            f.write(struct.pack("<B", idx.ndim))
            f.write(struct.pack(f"<{idx.ndim}I", *idx.shape))
            for a in (data, idx, upd, np.asarray(y, data.dtype)):
                f.write(np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes())
            count += 1
            elems += y.size
    print(f"{path}: {count} cases, {elems} elements, {os.path.getsize(path)} bytes")


def read(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"ORTTRIG1", "not a trig fixture"
    at = 8
    while at < len(data):
        if data[at] == 4:
            _, elem, r = struct.unpack_from("<BBB", data, at)
            at += 3
            dims = struct.unpack_from(f"<{r}I", data, at)
            at += 4 * r
            (q,) = struct.unpack_from("<B", data, at)
            at += 1
            idims = struct.unpack_from(f"<{q}I", data, at)
            at += 4 * q
            w = 4 if elem == 1 else 8
            n, ni = int(np.prod(dims)), int(np.prod(idims))
            k = idims[-1]
            nu = ni // k * int(np.prod(dims[k:])) if k else 0
            at += w * n + 8 * ni + w * nu + w * n
            continue
        if data[at] == 3:
            _, _, _, _, rank = struct.unpack_from("<BBfBB", data, at)
            at += 8
            dims = struct.unpack_from(f"<{2 * rank}I", data, at)
            at += 8 * rank
            n_in, n_out = int(np.prod(dims[:rank])), int(np.prod(dims[rank:]))
            at += 4 * (n_in + n_out)
            continue
        op, n = struct.unpack_from("<BI", data, at)
        at += 5
        x = np.frombuffer(data, "<u4", n, at).view(np.float32)
        at += 4 * n
        y = np.frombuffer(data, "<u4", n, at).view(np.float32)
        at += 4 * n
        yield OPS[op], x, y


def stats(path):
    libm = ctypes.CDLL("libm.so.6")
    fns = {}
    for op, name in (("Sin", "sinf"), ("Cos", "cosf"), ("Log", "logf")):
        fn = getattr(libm, name)
        fn.restype = ctypes.c_float
        fn.argtypes = [ctypes.c_float]
        fns[op] = fn
    tally = {}
    for op, x, y in read(path):
        packets = len(x) // 4 * 4
        c = np.array([fns[op](float(v)) for v in x], np.float32)
        diff = c.view(np.uint32) != y.view(np.uint32)
        t = tally.setdefault(op, [0, 0, 0, 0])
        t[0] += packets
        t[1] += int(diff[:packets].sum())
        t[2] += len(x) - packets
        t[3] += int(diff[packets:].sum())
    for op, (p, dp, s, ds) in tally.items():
        print(f"{op}: packet positions {p}, differ from libm {dp}; tail positions {s}, differ {ds}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="tests/data/trig/ort_trig.bin.gz")
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--stats", metavar="FIXTURE")
    a = ap.parse_args()
    if a.stats:
        stats(a.stats)
        return 0
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    write(a.out, a.big)
    return 0


if __name__ == "__main__":
    sys.exit(main())
