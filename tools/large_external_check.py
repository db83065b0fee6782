#!/usr/bin/env python3
"""Issue #9, acceptance 3: a 2 GB+ ONNX model with external data, processed with peak RSS
below the model's size, and the result still computing what the original computed.

    python3 tools/large_external_check.py [--bin target/release/slice-opt] [--dir /tmp/slice-opt-large]
                                          [--gb 2.25] [--keep]

Writes (not stored in git; needs about 2.5x `--gb` of free disk):
  DIR/in/large.onnx + DIR/in/large.onnx.data   the model: `--gb` GiB of f32 weights in one
      external data file, written tensor by tensor (never the whole model in memory), and
  DIR/out/large.onnx (+ its data files)        slice-opt's output (default passes).

The graph: a chain of blocks `h = Relu(MatMul(Slice(h, ...), W_i) + b_i)` over `x: [N, 1024]`
(W_i 1024 x 16384 f32, 64 MiB each, the Slice on the dynamic activations: shapes to infer),
plus a position table `P: [32768, 1024]` (128 MiB) sliced by constant starts/ends twice
(`P[0:512]`, `P[1024:1536:2]`): constant slices of external data that `fold` must fold,
writing the folded constants to a new external data file beside the output.

Checks, each printed and all required for exit 0:
  1. slice-opt exits 0; its peak RSS (`/usr/bin/time -v`) is below the model's size on disk;
  2. both Slice nodes on P are folded away; the folded constants are external (the output
     .onnx stays small) and hold exactly P[0:512] and P[1024:1536:2] (read with numpy);
  3. ONNX Runtime gives the same outputs for the original and the output model on one input.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D = 1024
W_COLS = 16384  # W_i: D x W_COLS f32 = 64 MiB
P_ROWS = 32768  # P: P_ROWS x D f32 = 128 MiB
ALIGN = 4096


def weight(i, shape):
    """Deterministic, cheap, not constant: small values so the chain stays finite."""
    rng = np.random.default_rng(i)
    return (rng.random(shape, dtype=np.float32) - 0.5) * (2.0 / shape[0])


def ext(t, loc, off, length):
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", loc), ("offset", str(off)), ("length", str(length))):
        e = t.external_data.add()
        e.key, e.value = k, v


def generate(d, gb):
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "large.onnx")
    loc = "large.onnx.data"
    blocks = max(1, int(gb * 2**30 - P_ROWS * D * 4) // (D * W_COLS * 4))
    inits, nodes = [], []
    off = 0
    with open(os.path.join(d, loc), "wb") as f:

        def put(name, arr):
            nonlocal off
            pad = (-off) % ALIGN
            f.write(b"\0" * pad)
            off += pad
            t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=arr.shape)
            f.write(np.ascontiguousarray(arr, dtype="<f4").tobytes())
            ext(t, loc, off, arr.nbytes)
            off += arr.nbytes
            inits.append(t)

        put("P", weight(10_000, (P_ROWS, D)))
        for i in range(blocks):
            put(f"W{i}", weight(i, (D, W_COLS)))
            sys.stdout.write(f"\r  writing weights {i + 1}/{blocks}")
            sys.stdout.flush()
        print()

    def i64(name, vals):
        inits.append(numpy_helper.from_array(np.array(vals, dtype=np.int64), name))

    i64("zero", [0])
    i64("d", [D])
    i64("ax1", [1])
    i64("p0s", [0])
    i64("p0e", [512])
    i64("p1s", [1024])
    i64("p1e", [1536])
    i64("ax0", [0])
    i64("two", [2])
    h = "x"
    for i in range(blocks):
        # W_i is D x W_COLS: keep the first D columns of h's product, then the next block.
        nodes.append(helper.make_node("Slice", [h, "zero", "d", "ax1"], [f"s{i}"], name=f"slice_act{i}"))
        nodes.append(helper.make_node("MatMul", [f"s{i}", f"W{i}"], [f"m{i}"], name=f"matmul{i}"))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [f"h{i}"], name=f"relu{i}"))
        h = f"h{i}"
    nodes.append(helper.make_node("Slice", ["P", "p0s", "p0e", "ax0"], ["p0"], name="slice_p0"))
    nodes.append(helper.make_node("Slice", ["P", "p1s", "p1e", "ax0", "two"], ["p1"], name="slice_p1"))
    nodes.append(helper.make_node("ReduceSum", [h], ["y"], name="sum_y", keepdims=1))
    graph = helper.make_graph(
        nodes,
        "large",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", D])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("p0", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("p1", TensorProto.FLOAT, None),
        ],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    return path, blocks


def size_of(onnx_path):
    d = os.path.dirname(onnx_path)
    total = os.path.getsize(onnx_path)
    m = onnx.load(onnx_path, load_external_data=False)
    locs = {e.value for t in m.graph.initializer for e in t.external_data if e.key == "location"}
    return total + sum(os.path.getsize(os.path.join(d, l)) for l in locs), m


def read_initializer(model, d, name):
    t = next(t for t in model.graph.initializer if t.name == name)
    if t.data_location != TensorProto.EXTERNAL:
        return numpy_helper.to_array(t), False
    kv = {e.key: e.value for e in t.external_data}
    arr = np.fromfile(os.path.join(d, kv["location"]), dtype="<f4", count=int(kv["length"]) // 4,
                      offset=int(kv.get("offset", 0)))
    return arr.reshape(tuple(t.dims)), True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="target/release/slice-opt")
    ap.add_argument("--dir", default="/tmp/slice-opt-large")
    ap.add_argument("--gb", type=float, default=2.25, help="GiB of weights (default 2.25)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    a = ap.parse_args()
    ind, outd = os.path.join(a.dir, "in"), os.path.join(a.dir, "out")
    shutil.rmtree(outd, ignore_errors=True)
    os.makedirs(outd)
    src = os.path.join(ind, "large.onnx")
    if os.path.exists(src) and os.path.exists(src + ".data") and os.path.getsize(src + ".data") >= a.gb * 2**30 * 0.99:
        print(f"reusing {src}")
    else:
        shutil.rmtree(ind, ignore_errors=True)
        print(f"generating {src} ({a.gb} GiB of weights)")
        generate(ind, a.gb)
    in_size, _ = size_of(src)
    print(f"model size: {in_size / 2**30:.3f} GiB ({in_size} bytes) in {ind}")
    ok = True
    if in_size < 2 * 10**9:
        print(f"FAIL: the model is below 2 GB")
        ok = False

    dst = os.path.join(outd, "large.onnx")
    cmd = ["/usr/bin/time", "-v", a.bin, src, "-o", dst]
    print("$ " + " ".join(cmd))
    r = subprocess.run(cmd, capture_output=True, text=True)
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", r.stderr).group(1)
    rss = rss_kb * 1024
    print(f"slice-opt exit {r.returncode}, wall {wall}, peak RSS {rss / 2**20:.0f} MiB "
          f"= {rss / in_size:.3f}x the model size")
    if r.returncode != 0:
        print(r.stderr[-3000:])
        sys.exit(1)
    if rss >= in_size:
        print("FAIL: peak RSS is not below the model size")
        ok = False

    out_size, out = size_of(dst)
    print(f"output: {os.path.getsize(dst)} bytes .onnx, {out_size / 2**30:.3f} GiB with data files: "
          + ", ".join(sorted(os.listdir(outd))))
    slices = [n.name for n in out.graph.node if n.op_type == "Slice"]
    print(f"Slice nodes left: {len(slices)} (the activation slices: {sum(s.startswith('slice_act') for s in slices)})")
    if any(s in ("slice_p0", "slice_p1") for s in slices):
        print("FAIL: a constant slice of P was not folded")
        ok = False
    P = np.fromfile(src + ".data", dtype="<f4", count=P_ROWS * D).reshape(P_ROWS, D)
    produced = {n.output[0]: n for n in out.graph.node}
    for name, want in (("p0", P[0:512]), ("p1", P[1024:1536:2])):
        # The graph output is the folded initializer itself or an Identity of it.
        src_name = name
        if name in produced and produced[name].op_type == "Identity":
            src_name = produced[name].input[0]
        try:
            got, external = read_initializer(out, outd, src_name)
        except StopIteration:
            print(f"FAIL: output {name} is not a constant")
            ok = False
            continue
        same = got.shape == want.shape and np.array_equal(got, want)
        print(f"folded {name}: shape {got.shape}, external {external}, equals numpy slice of P: {same}")
        ok &= same and external
    if os.path.getsize(dst) > 1 << 20:
        print("FAIL: the output .onnx holds tensor data inline")
        ok = False
    del P

    import onnxruntime as ort

    x = (np.random.default_rng(7).random((2, D), dtype=np.float32) - 0.5)
    outs = []
    for p in (src, dst):
        s = ort.InferenceSession(p, providers=["CPUExecutionProvider"])
        outs.append(s.run(["y", "p0", "p1"], {"x": x}))
        del s
    for name, u, v in zip(("y", "p0", "p1"), *outs):
        same = u.shape == v.shape and np.array_equal(u, v)
        print(f"ONNX Runtime {name}: original {u.shape} vs output {v.shape}: {'equal' if same else 'DIFFERENT'}")
        ok &= same
    if not a.keep:
        shutil.rmtree(outd, ignore_errors=True)
    print("OK" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
