#!/usr/bin/env python3
"""Generate the benchmark models for slice-opt (never into git: default /tmp/slice-opt-bench).

Models (all opset 17, one dynamic-batch input `x` of shape [batch, 256]):

* big_1gb.onnx   -- 5,000 MatMul weights of 256x200 float32 (~205 KB each, ~1.02 GB in total,
                    stored inside the protobuf) and 5,000 slice nodes on the dynamic activations.
* nodes_1k/10k/100k.onnx -- the same pattern without weights: N slice nodes whose parameters are
                    small constant initializers.
* big_1gb.xml/.bin, nodes_100k.xml/.bin -- the IR equivalents, built with the OpenVINO Python
                    API (StridedSlice-1 / Slice-8) and written by save_model(compress_to_fp16=False).

Each slice "branch" i is one of:
  * plain (8 in 10): Slice(h_i, starts=[a], ends=[a+128], axes=[1]) with its own constant params;
  * shape chain (1 in 10): Shape(x) -> Gather(0) -> Unsqueeze -> ends of Slice(h_i, axes=[0]),
    followed by the plain slice on axis 1 (a dynamic-end slice, realistic for exporters);
  * constant slice (1 in 10): the plain slice plus Add of Slice(c_i[256] constant, [a:a+128])
    -- a slice fold can evaluate.
The 128-wide branch outputs are summed pairwise (a balanced Add tree, depth log2 N) into `y`.

* wide_1k/10k/100k.onnx -- K slice *chains* (issue 19): Slice then Slice, on the graph input `x`
                    [8, 8] (even chains) or on a small 8x8 constant (odd chains: fold
                    evaluates them), joined by Add chains into 64 outputs. Node count ~3K.
* wide_sym_100k.onnx -- the same 100,000 chains on `x: [n, 8]` (a symbolic first dim, issue 44):
                    symbolic propagation against the static wide_100k.
* weight_slice.onnx -- ~512 MB: 32 weights of 16 MB ([2048, 2048] float32) each sliced
                    `w[:, 0:128]` (what a fused-QKV split gives) feeding MatMuls, plus 2,000
                    small constant slice chains.

* half_kept.onnx -- ~537 MB (issue 44): 32 weights of 16 MB ([16384, 256] float32) each cut in
                    half by `w[:, 0:128]` feeding MatMuls: a fold of 256 MB, half the file.
* half_kept.xml/.bin -- the IR equivalent (StridedSlice-1 on each weight Const), built with the
                    OpenVINO Python API.

* concat_100k.onnx -- issue 18's attack 7: a Concat of 100,000 graph inputs ([1, 2] float32)
                    sliced `c[1:-1]`, and a Concat of 100,000 constant scalars ([1] int64) whose
                    Gather gives the start of a second Slice (fold evaluates that chain).

A manifest.json beside the models records node counts and sizes for run.sh.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D_IN = 256
D_HID = 200
WIDTH = 128


def build(n_slices, weights, seed=0):
    rng = np.random.default_rng(seed)
    nodes = []
    inits = []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    x = "x"
    nodes.append(helper.make_node("Shape", [x], ["x_shape"], name="x_shape"))
    const("zero_idx", np.array(0, dtype=np.int64))
    const("axes0", np.array([0], dtype=np.int64))
    nodes.append(helper.make_node("Gather", ["x_shape", "zero_idx"], ["batch"], name="batch", axis=0))
    nodes.append(helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch_1d"], name="batch_1d"))

    outs = []
    for i in range(n_slices):
        p = f"b{i}"
        if weights:
            w = rng.standard_normal((D_IN, D_HID), dtype=np.float32)
            const(f"{p}_w", w)
            nodes.append(helper.make_node("MatMul", [x, f"{p}_w"], [f"{p}_h"], name=f"{p}_mm"))
            h, width_in = f"{p}_h", D_HID
        else:
            h, width_in = x, D_IN
        kind = i % 10
        if kind == 1:
            # dynamic end from the Shape -> Gather chain: h[0:batch]
            const(f"{p}_s0", np.array([0], dtype=np.int64))
            nodes.append(
                helper.make_node("Slice", [h, f"{p}_s0", "batch_1d", "axes0"], [f"{p}_d"], name=f"{p}_dyn")
            )
            h = f"{p}_d"
        a = int(rng.integers(0, width_in - WIDTH + 1))
        const(f"{p}_st", np.array([a], dtype=np.int64))
        const(f"{p}_en", np.array([a + WIDTH], dtype=np.int64))
        const(f"{p}_ax", np.array([1], dtype=np.int64))
        if i % 3 == 0:
            const(f"{p}_sp", np.array([1], dtype=np.int64))
            ins = [h, f"{p}_st", f"{p}_en", f"{p}_ax", f"{p}_sp"]
        else:
            ins = [h, f"{p}_st", f"{p}_en", f"{p}_ax"]
        nodes.append(helper.make_node("Slice", ins, [f"{p}_s"], name=f"{p}_slice"))
        out = f"{p}_s"
        if kind == 2:
            c = rng.standard_normal(D_IN, dtype=np.float32)
            const(f"{p}_c", c)
            c0 = int(rng.integers(0, D_IN - WIDTH + 1))
            const(f"{p}_cst", np.array([c0], dtype=np.int64))
            const(f"{p}_cen", np.array([c0 + WIDTH], dtype=np.int64))
            const(f"{p}_cax", np.array([0], dtype=np.int64))
            nodes.append(
                helper.make_node(
                    "Slice", [f"{p}_c", f"{p}_cst", f"{p}_cen", f"{p}_cax"], [f"{p}_cs"], name=f"{p}_cslice"
                )
            )
            nodes.append(helper.make_node("Add", [out, f"{p}_cs"], [f"{p}_b"], name=f"{p}_bias"))
            out = f"{p}_b"
        outs.append(out)

    # balanced Add tree
    level = 0
    while len(outs) > 1:
        nxt = []
        for j in range(0, len(outs) - 1, 2):
            name = f"sum{level}_{j // 2}"
            nodes.append(helper.make_node("Add", [outs[j], outs[j + 1]], [name], name=name))
            nxt.append(name)
        if len(outs) % 2:
            nxt.append(outs[-1])
        outs = nxt
        level += 1
    nodes.append(helper.make_node("Identity", [outs[0]], ["y"], name="y"))

    graph = helper.make_graph(
        nodes,
        "slice_opt_bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", D_IN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", WIDTH])],
        initializer=inits,
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="slice-opt-bench"
    )
    model.ir_version = 8
    return model


def build_wide(k, seed=0, batch=8):
    """K chains `Slice(Slice(src))`, src = x (even) or an 8x8 constant (odd); 64 Add chains.

    `batch` is x's first dim: 8, or a dim_param name (`"n"`: the symbolic wide graph of issue 44,
    the same nodes on `x: [n, 8]`).
    """
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    const("s0", np.array([0, 0], np.int64))
    const("e1", np.array([8, 6], np.int64))
    const("s1", np.array([0, 1], np.int64))
    const("e2", np.array([8, 5], np.int64))
    const("ax", np.array([0, 1], np.int64))
    lanes = [None] * 64
    for i in range(k):
        src = "x" if i % 2 == 0 else const(f"c{i}", rng.standard_normal((8, 8)).astype(np.float32))
        a, b = f"w{i}_a", f"w{i}_b"
        if src == "x":
            # [batch, 8]: slice batch rows 0..8 is not known constant; use axes [1] only
            nodes.append(helper.make_node("Slice", [src, "s1_1", "e1_1", "ax1"], [a], name=a))
            nodes.append(helper.make_node("Slice", [a, "s2_1", "e2_1", "ax1"], [b], name=b))
        else:
            nodes.append(helper.make_node("Slice", [src, "s0", "e1", "ax"], [a], name=a))
            nodes.append(helper.make_node("Slice", [a, "s1", "e2", "ax"], [b], name=b))
        lane = i % 64
        if lanes[lane] is None:
            lanes[lane] = b
        else:
            out = f"w{i}_sum"
            nodes.append(helper.make_node("Add", [lanes[lane], b], [out], name=out))
            lanes[lane] = out
    const("s1_1", np.array([0], np.int64))
    const("e1_1", np.array([6], np.int64))
    const("s2_1", np.array([1], np.int64))
    const("e2_1", np.array([5], np.int64))
    const("ax1", np.array([1], np.int64))
    outputs = []
    for j, lane in enumerate(l for l in lanes if l is not None):
        nodes.append(helper.make_node("Identity", [lane], [f"y{j}"], name=f"y{j}"))
        outputs.append(helper.make_tensor_value_info(f"y{j}", TensorProto.FLOAT, [8, 4]))
    graph = helper.make_graph(
        nodes, "slice_opt_wide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 8])], outputs,
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="slice-opt-bench")
    model.ir_version = 8
    return model


def build_weight_slice(n_weights=32, dim=2048, chains=2000, seed=0, cols=None):
    """n_weights [dim, cols] (default [dim, dim]) float32 weights sliced [:, 0:128] into MatMuls
    + small constant chains."""
    cols = dim if cols is None else cols
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    const("ws", np.array([0], np.int64))
    const("we", np.array([128], np.int64))
    const("wa", np.array([1], np.int64))
    acc = None
    for i in range(n_weights):
        w = const(f"w{i}", rng.standard_normal((dim, cols), dtype=np.float32))
        ws = f"w{i}_s"
        nodes.append(helper.make_node("Slice", [w, "ws", "we", "wa"], [ws], name=ws))
        mm = f"mm{i}"
        nodes.append(helper.make_node("MatMul", ["x", ws], [mm], name=mm))
        if acc is None:
            acc = mm
        else:
            nodes.append(helper.make_node("Add", [acc, mm], [f"acc{i}"], name=f"acc{i}"))
            acc = f"acc{i}"
    const("cs", np.array([2], np.int64))
    const("ce", np.array([130], np.int64))
    const("ca", np.array([0], np.int64))
    for i in range(chains):
        c = const(f"c{i}", rng.standard_normal((256,)).astype(np.float32))
        s1 = f"c{i}_s"
        nodes.append(helper.make_node("Slice", [c, "cs", "ce", "ca"], [s1], name=s1))
        out = f"c{i}_add"
        nodes.append(helper.make_node("Add", [acc, s1], [out], name=out))
        acc = out
    nodes.append(helper.make_node("Identity", [acc], ["y"], name="y"))
    graph = helper.make_graph(
        nodes, "slice_opt_weight_slice",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", dim])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 128])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="slice-opt-bench")
    model.ir_version = 8
    return model


def build_half_kept(n_weights=32, rows=16384, cols=256):
    """Issue 44's model: each weight [rows, cols] cut in half by w[:, 0:128] (no other chains)."""
    return build_weight_slice(n_weights, dim=rows, chains=0, cols=cols)


def build_half_kept_ir(xml, n_weights=32, rows=16384, cols=256, seed=0):
    """`build_half_kept` as OpenVINO IR: StridedSlice-1 [:, 0:128] on each weight Const (the
    same float32 values), MatMuls summed into one output."""
    import openvino as ov
    import openvino.opset13 as ops

    rng = np.random.default_rng(seed)
    x = ops.parameter(ov.PartialShape([-1, rows]), ov.Type.f32, name="x")
    acc = None
    for i in range(n_weights):
        w = ops.constant(rng.standard_normal((rows, cols), dtype=np.float32))
        s = ops.strided_slice(w, ops.constant(np.array([0, 0], np.int64)), ops.constant(np.array([0, 128], np.int64)),
                              ops.constant(np.array([1, 1], np.int64)), begin_mask=[1, 0], end_mask=[1, 0])
        mm = ops.matmul(x, s, False, False)
        acc = mm if acc is None else ops.add(acc, mm)
    m = ov.Model([ops.result(acc)], [x], "slice_opt_half_kept")
    ov.save_model(m, xml, compress_to_fp16=False)


def build_concat(k):
    inputs = [helper.make_tensor_value_info(f"x{i}", TensorProto.FLOAT, [1, 2]) for i in range(k)]
    inputs.append(helper.make_tensor_value_info("v", TensorProto.FLOAT, [k + 5]))
    inits = [helper.make_tensor(f"k{i}", TensorProto.INT64, [1], [i]) for i in range(k)]
    inits += [
        helper.make_tensor("s1", TensorProto.INT64, [1], [1]),
        helper.make_tensor("e1", TensorProto.INT64, [1], [-1]),
        helper.make_tensor("g", TensorProto.INT64, [1], [3]),
        helper.make_tensor("e2", TensorProto.INT64, [1], [k]),
    ]
    nodes = [
        helper.make_node("Concat", [f"x{i}" for i in range(k)], ["c"], axis=0, name="concat_inputs"),
        helper.make_node("Slice", ["c", "s1", "e1"], ["y"], name="slice_inputs"),
        helper.make_node("Concat", [f"k{i}" for i in range(k)], ["kc"], axis=0, name="concat_consts"),
        helper.make_node("Gather", ["kc", "g"], ["start"], axis=0, name="gather"),
        helper.make_node("Slice", ["v", "start", "e2"], ["z"], name="slice_consts"),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [k - 2, 2]),
               helper.make_tensor_value_info("z", TensorProto.FLOAT, [k - 3])]
    graph = helper.make_graph(nodes, "slice_opt_concat", inputs, outputs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def check_onnx(path, big, run=True):
    if big:
        onnx.checker.check_model(path)  # by path: works for >2GB-protobuf-safe models too
    else:
        onnx.checker.check_model(onnx.load(path))
    if not run:
        return None
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal((3, D_IN), dtype=np.float32)
    (y,) = sess.run(None, {"x": x})
    assert y.shape == (3, WIDTH), y.shape
    return y


def build_ir(n, weights, xml, seed=0):
    """The same graph built with the OpenVINO Python API and written by `openvino.save_model`.

    (`openvino.convert_model` on the ONNX is superlinear in the fan-out of `x`: over 2 minutes
    for nodes_10k, so the IR is built directly; slices are `StridedSlice-1` (and `Slice-8` for
    the dynamic-end chain), the weights the same float32 values as in the ONNX model.)
    """
    import openvino as ov
    import openvino.opset13 as ops

    rng = np.random.default_rng(seed)
    x = ops.parameter(ov.PartialShape([-1, 256]), ov.Type.f32, name="x")
    shp = ops.shape_of(x, output_type="i64")
    batch = ops.gather(shp, ops.constant(np.array([0], np.int64)), ops.constant(np.array(0, np.int64)))
    outs = []
    for i in range(n):
        if weights:
            w = ops.constant(rng.standard_normal((256, 200), dtype=np.float32))
            h = ops.matmul(x, w, False, False); win = 200
        else:
            h = x; win = 256
        if i % 10 == 1:
            h = ops.slice(h, ops.constant(np.array([0], np.int64)), batch, ops.constant(np.array([1], np.int64)), ops.constant(np.array([0], np.int64)))
        a = int(rng.integers(0, win - 128 + 1))
        s = ops.strided_slice(h, ops.constant(np.array([0, a], np.int64)), ops.constant(np.array([0, a + 128], np.int64)),
                              ops.constant(np.array([1, 1], np.int64)), begin_mask=[1, 0], end_mask=[1, 0])
        if i % 10 == 2:
            c = ops.constant(rng.standard_normal(256, dtype=np.float32))
            c0 = int(rng.integers(0, 129))
            cs = ops.strided_slice(c, ops.constant(np.array([c0], np.int64)), ops.constant(np.array([c0 + 128], np.int64)),
                                   ops.constant(np.array([1], np.int64)), begin_mask=[0], end_mask=[0])
            s = ops.add(s, cs)
        outs.append(s)
    while len(outs) > 1:
        nxt = [ops.add(outs[j], outs[j + 1]) for j in range(0, len(outs) - 1, 2)]
        if len(outs) % 2: nxt.append(outs[-1])
        outs = nxt
    m = ov.Model([ops.result(outs[0])], [x], "slice_opt_bench")
    ov.save_model(m, xml, compress_to_fp16=False)
    core = ov.Core()
    core.read_model(xml)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("BENCH_DIR", "/tmp/slice-opt-bench"))
    ap.add_argument("--force", action="store_true", help="regenerate even if the files exist")
    ap.add_argument("--no-check", action="store_true", help="skip onnx.checker/ORT/OpenVINO validation")
    ap.add_argument("names", nargs="*", help="only these models (e.g. wide_100k nodes_100k); default: all")
    ap.add_argument("--only", nargs="+", default=[], help="the same as the positional names")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    manifest_path = os.path.join(args.out, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path) and not args.force:
        manifest = json.load(open(manifest_path))

    specs = [
        ("nodes_1k", 1000, False, False),
        ("nodes_10k", 10000, False, False),
        ("nodes_100k", 100000, False, True),
        ("big_1gb", 5000, True, True),
        ("wide_1k", 1000, "wide", False),
        ("wide_10k", 10000, "wide", False),
        ("wide_100k", 100000, "wide", False),
        ("wide_sym_100k", 100000, "wide_sym", False),
        ("weight_slice", 32, "weight_slice", False),
        ("concat_100k", 100000, "concat", False),
        ("half_kept", 32, "half_kept", True),
    ]
    args.names = list(args.names) + list(args.only)
    unknown = set(args.names) - {spec[0] for spec in specs}
    if unknown:
        ap.error(f"unknown model(s): {', '.join(sorted(unknown))}")
    for name, n, weights, ir in specs:
        if args.names and name not in args.names:
            continue
        path = os.path.join(args.out, name + ".onnx")
        xml = os.path.join(args.out, name + ".xml")
        if not args.force and name in manifest and os.path.exists(path) and (not ir or os.path.exists(xml)):
            print(f"{name}: exists", file=sys.stderr)
            continue
        t = time.time()
        if weights == "wide":
            model = build_wide(n)
        elif weights == "wide_sym":
            model = build_wide(n, batch="n")
        elif weights == "weight_slice":
            model = build_weight_slice(n)
        elif weights == "concat":
            model = build_concat(n)
        elif weights == "half_kept":
            model = build_half_kept(n)
        else:
            model = build(n, weights)
        info = {
            "slices": sum(1 for nd in model.graph.node if nd.op_type == "Slice"),
            "nodes": len(model.graph.node),
            "initializers": len(model.graph.initializer),
        }
        onnx.save(model, path)
        del model
        info["bytes"] = os.path.getsize(path)
        print(f"{name}: {info} in {time.time() - t:.1f}s", file=sys.stderr)
        if not args.no_check:
            # ONNX Runtime session creation is superlinear in this fan-out (7 s at 10k): the
            # 100k model gets onnx.checker only.
            if weights in ("wide", "wide_sym", "weight_slice", "concat", "half_kept"):
                onnx.checker.check_model(path)
            else:
                check_onnx(path, weights, run=n <= 10000)
        if ir:
            t = time.time()
            if weights == "half_kept":
                build_half_kept_ir(xml, n)
            else:
                build_ir(n, weights, xml)
            info["ir_bytes"] = os.path.getsize(xml) + os.path.getsize(xml[:-4] + ".bin")
            import xml.etree.ElementTree as ET

            layers = ET.parse(xml).getroot().find("layers")
            types = [l.get("type") for l in layers]
            info["ir_nodes"] = len(types)
            info["ir_slices"] = sum(1 for ty in types if ty in ("StridedSlice", "Slice"))
            print(f"{name}.xml: {info} in {time.time() - t:.1f}s", file=sys.stderr)
        manifest[name] = info
        with open(manifest_path, "w") as f:
            json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
