"""Shapes in from Python (issues 43 and 45): ``dims=`` and ``input_shapes=``, the command line's
``--dim`` and ``--input-shape``, on ``optimize`` (path to path, bytes, ModelProto) and
``infer_shapes``, and ``dims=`` as bounds on ``check``/``info``. Expected shapes come from ONNX
Runtime running the original model at the sizes given; the transformed files are compared with
the command line's bytes.

The command line is found as in test_api.py ($SLICE_OPT_BIN, else target/release/slice-opt,
else target/debug/slice-opt).
"""

import ast
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import slice_opt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INT64_MAX = (1 << 63) - 1


def binary():
    for p in (
        os.environ.get("SLICE_OPT_BIN"),
        os.path.join(ROOT, "target", "release", "slice-opt"),
        os.path.join(ROOT, "target", "debug", "slice-opt"),
    ):
        if p and os.path.exists(p):
            return p
    pytest.fail("no slice-opt binary: build it (cargo build --release) or set SLICE_OPT_BIN")


def const(name, values):
    return helper.make_node(
        "Constant", [], [name], name=name,
        value=helper.make_tensor(name, TensorProto.INT64, [len(values)], values),
    )


def shapes_model():
    """``x: [batch, seq, 16]`` and ``y: [?, 6]`` (a dim without a name):
    ``a = x[:, 1:][:, :, 2:10]`` (``[batch, seq - 1, 8]``), ``b = x[:, :Shape(x)[1] - 1]`` (its
    end computed from the shape: constant once ``seq`` is fixed), ``c = y[1:, ::2]``."""
    nodes = [
        const("one", [1]),
        const("big", [INT64_MAX]),
        const("zero", [0]),
        const("two", [2]),
        const("ten", [10]),
        const("step2", [2]),
        const("ax0", [0]),
        const("ax1", [1]),
        const("ax2", [2]),
        const("ax01", [0, 1]),
        const("st01", [1, 0]),
        const("en01", [INT64_MAX, INT64_MAX]),
        const("sp01", [1, 2]),
        helper.make_node("Slice", ["x", "one", "big", "ax1"], ["a1"], name="slice_a1"),
        helper.make_node("Slice", ["a1", "two", "ten", "ax2"], ["a"], name="slice_a"),
        helper.make_node("Shape", ["x"], ["xs"], name="shape_x"),
        helper.make_node("Gather", ["xs", "ax1"], ["seq1"], name="gather_seq", axis=0),
        helper.make_node("Sub", ["seq1", "one"], ["end_b"], name="end_b"),
        helper.make_node("Slice", ["x", "zero", "end_b", "ax1"], ["b"], name="slice_b"),
        helper.make_node("Slice", ["y", "st01", "en01", "ax01", "sp01"], ["c"], name="slice_c"),
    ]
    graph = helper.make_graph(
        nodes,
        "shapes_in",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", 16]),
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 6]),
        ],
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [None] * 3),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [None] * 3),
            helper.make_tensor_value_info("c", TensorProto.FLOAT, [None] * 2),
        ],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


MODEL = shapes_model()
OUTPUTS = ["a", "b", "c"]


@pytest.fixture()
def model_path(tmp_path):
    p = tmp_path / "shapes_in.onnx"
    onnx.save(MODEL, str(p))
    return str(p)


def ort_shapes(model, batch, seq, rows):
    """The output shapes ONNX Runtime gives `model` at these sizes."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {
        "x": np.zeros((batch, seq, 16), np.float32),
        "y": np.zeros((rows, 6), np.float32),
    }
    return {n: list(v.shape) for n, v in zip(OUTPUTS, sess.run(OUTPUTS, feeds))}


def written(model, name):
    """The dims `model` declares for `name` (inputs, value_info, outputs): ints, names or ''."""
    g = model.graph
    for v in list(g.input) + list(g.value_info) + list(g.output):
        if v.name == name and v.type.tensor_type.HasField("shape"):
            return [d.dim_param if d.HasField("dim_param") else (d.dim_value if d.HasField("dim_value") else "")
                    for d in v.type.tensor_type.shape.dim]
    raise KeyError(name)


def evaluate(dim, sizes):
    """A written dim (an int or an expression of the symbols with +, -, *, min, max) at sizes."""
    if isinstance(dim, int):
        return dim
    tree = ast.parse(dim, mode="eval")
    for n in ast.walk(tree):
        assert isinstance(
            n, (ast.Expression, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.UnaryOp,
                ast.USub, ast.Name, ast.Load, ast.Constant, ast.Call)
        ), ast.dump(n)
    return eval(compile(tree, "<dim>", "eval"), {"__builtins__": {}, "min": min, "max": max}, dict(sizes))


def ops(model):
    return [n.op_type for n in model.graph.node]


def cli(*args):
    r = subprocess.run([binary(), *args], capture_output=True, text=True)
    return r


# --- dims= fixes a symbol -----------------------------------------------------------------


@pytest.mark.parametrize("dims", [{"seq": 4}, ["seq=4"], "seq=4", {"seq": "4"}, {"seq": (4, 4)}],
                         ids=["mapping", "texts", "one-text", "mapping-text", "mapping-bounds"])
def test_a_fixed_dim_is_written_and_the_slices_hold_in_onnxruntime(dims):
    out, report = slice_opt.optimize(MODEL, dims=dims)
    assert written(out, "x") == ["batch", 4, 16]
    for batch in (1, 3):
        want = ort_shapes(MODEL, batch, 4, 5)
        got = ort_shapes(out, batch, 4, 5)
        assert got == want
        for name in ("a", "b"):
            assert [evaluate(d, {"batch": batch}) for d in written(out, name)] == want[name], name
    assert written(out, "a")[1:] == [3, 8] and written(out, "b")[1:] == [3, 16]


def test_fixed_dims_fold_what_becomes_constant():
    """With every dim of x fixed, the end of `b` computed from Shape(x) is a constant."""
    assert "Shape" in ops(MODEL) and "Gather" in ops(MODEL)
    out, _ = slice_opt.optimize(MODEL, dims={"seq": 4, "batch": 2})
    assert written(out, "x") == [2, 4, 16]
    assert not {"Shape", "Gather", "Sub"} & set(ops(out)), ops(out)
    want = ort_shapes(MODEL, 2, 4, 5)
    assert ort_shapes(out, 2, 4, 5) == want
    assert [written(out, n) for n in ("a", "b")] == [want["a"], want["b"]]


def test_a_fixed_dim_verifies_at_that_size():
    _, rep = slice_opt.optimize(MODEL, dims={"seq": 4, "batch": 2}, verify=True)
    assert rep.verification.startswith("verified in ONNX Runtime"), rep.verification
    named = ast.literal_eval(rep.verification.split("named dims at ", 1)[1].split("}", 1)[0] + "}")
    assert (named["seq"], named["batch"]) == (4, 2), named


def test_dims_equal_the_command_lines(model_path, tmp_path):
    """Path to path (the library's `optimize_file`) and bytes (`Pipeline`): the bytes the
    command line writes with the same --dim/--input-shape."""
    flags = ["--dim", "seq=4", "--dim", "batch=1..8", "--input-shape", "y=5,6"]
    out_cli = tmp_path / "cli.onnx"
    r = cli(model_path, "-o", str(out_cli), "-q", *flags)
    assert r.returncode == 0, r.stderr
    kw = dict(dims={"seq": 4, "batch": (1, 8)}, input_shapes={"y": [5, 6]})
    out_py = tmp_path / "py.onnx"
    assert slice_opt.optimize(model_path, output=out_py, **kw)[0] == str(out_py)
    assert out_py.read_bytes() == out_cli.read_bytes()
    data = open(model_path, "rb").read()
    out_bytes, _ = slice_opt.optimize(data, **kw)
    assert onnx.ModelProto.FromString(out_bytes).graph == onnx.load(str(out_cli)).graph
    # python -m slice_opt takes the command line's flags.
    out_m = tmp_path / "m.onnx"
    r = subprocess.run([sys.executable, "-m", "slice_opt", model_path, "-o", str(out_m), "-q", *flags],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out_m.read_bytes() == out_cli.read_bytes()


# --- dims= bounds a symbol ----------------------------------------------------------------


@pytest.mark.parametrize("dims", [{"seq": (1, 4096)}, {"seq": "1..4096"}, ["seq=1..4096"]],
                         ids=["tuple", "mapping-text", "texts"])
def test_a_bound_keeps_the_symbol_and_the_slices_hold_in_range(dims):
    out, _ = slice_opt.optimize(MODEL, dims=dims)
    assert written(out, "x") == ["batch", "seq", 16]
    recorded = {p.key: p.value for p in out.metadata_props}.get("slice_opt.assumptions", "")
    assert "seq=1..4096" in recorded.splitlines(), recorded
    # Every slice dim holds for every size in range: at the ends and inside.
    for seq in (1, 2, 3, 100, 4096):
        want = ort_shapes(MODEL, 1, seq, 5)
        for name in ("a", "b"):
            assert [evaluate(d, {"batch": 1, "seq": seq}) for d in written(out, name)] == want[name], (name, seq)


# --- input_shapes= ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shapes",
    [{"y": [5, 6]}, {"y": "5,6"}, ["y=5,6"], "y=5,6", {"y": [(5, 5), 6]}, {"y": ("5..5", "6")}],
    ids=["list", "mapping-text", "texts", "one-text", "bounds", "tuple-of-texts"],
)
def test_input_shapes_on_an_unnamed_dim(shapes):
    out, _ = slice_opt.optimize(MODEL, input_shapes=shapes)
    assert written(out, "y") == [5, 6]
    want = ort_shapes(MODEL, 1, 7, 5)
    assert ort_shapes(out, 1, 7, 5) == want
    assert written(out, "c") == want["c"] == [4, 3]


def test_input_shapes_name_an_unnamed_dim_and_verify_runs_the_original_at_the_sizes_given():
    out, _ = slice_opt.optimize(MODEL, input_shapes={"y": ["rows", 6]}, dims={"rows": (2, 64)})
    assert written(out, "y") == ["rows", 6]
    for rows in (2, 3, 64):
        want = ort_shapes(MODEL, 1, 7, rows)
        assert [evaluate(d, {"rows": rows}) for d in written(out, "c")] == want["c"], rows
    # The result takes y with 5 rows only: run at any other size, it fails in ONNX Runtime.
    _, rep = slice_opt.optimize(MODEL, input_shapes={"y": [5, 6]}, verify=True)
    assert rep.verification.startswith("verified in ONNX Runtime"), rep.verification


def test_infer_shapes_takes_dims_and_input_shapes(model_path, tmp_path):
    out = slice_opt.infer_shapes(MODEL, dims={"seq": 4}, input_shapes={"y": [5, 6]})
    assert written(out, "x") == ["batch", 4, 16] and written(out, "y") == [5, 6]
    assert written(out, "c") == [4, 3]
    target = tmp_path / "i.onnx"
    assert slice_opt.infer_shapes(model_path, str(target), dims={"seq": 4}) == str(target)
    assert written(onnx.load(str(target)), "x") == ["batch", 4, 16]


# --- check / info: dims= as bounds --------------------------------------------------------


def test_check_and_info_take_dims_as_bounds_as_the_command_line(model_path):
    r = cli("check", model_path, "--format", "json", "--dim", "seq=2..64")
    assert r.returncode in (0, 1), r.stderr
    want = json.loads(r.stdout)
    for model in (model_path, MODEL):
        assert slice_opt.check(model, dims={"seq": (2, 64)}) == want["rows"]
    r = cli("info", model_path, "--format", "json", "--dim", "seq=4")
    assert r.returncode == 0, r.stderr
    assert slice_opt.info(model_path, dims={"seq": 4})["slices"] == json.loads(r.stdout)["slices"]
    # The command line's check has no --input-shape; neither has check().
    with pytest.raises(TypeError):
        slice_opt.check(model_path, input_shapes={"y": [5, 6]})  # type: ignore[call-arg]
    settings = slice_opt._settings(None, None, {"y": [5, 6]})
    for native in (slice_opt._native.check, slice_opt._native.info):
        with pytest.raises(slice_opt.UsageError):
            native(model_path, None, settings)


# --- refusals: one exception type, one line -----------------------------------------------


REFUSED = [
    # (kwargs, exception class, text the message holds)
    (dict(dims={"nope": 3}), slice_opt.InputError, "nope"),
    (dict(input_shapes={"z": [1, 2]}), slice_opt.InputError, "'z'"),
    (dict(input_shapes={"x": ["batch", "seq", 15]}), slice_opt.InputError, "15"),
    (dict(input_shapes={"y": [5]}), slice_opt.InputError, "1 dims given"),
    (dict(input_shapes={"y": [5, 6, 7]}), slice_opt.InputError, "3 dims given"),
    (dict(input_shapes={"y": [5, None]}), slice_opt.InputError, "is 6 in the model"),
    (dict(dims={"seq": 4}, input_shapes={"x": [2, 5, 16]}), slice_opt.InputError, "cannot both hold"),
    (dict(dims={"seq": "ten"}), slice_opt.UsageError, "ten"),
    (dict(dims=["seq"]), slice_opt.UsageError, "seq"),
    (dict(dims={"seq": -1}), slice_opt.UsageError, "-1"),
    (dict(dims={"seq": 1.5}), slice_opt.UsageError, "1.5"),
    (dict(dims={"seq": True}), slice_opt.UsageError, "True"),
    (dict(dims={"seq": (1, 2, 3)}), slice_opt.UsageError, "(1, 2, 3)"),
    (dict(dims={"seq": (8, 2)}), slice_opt.UsageError, "8..2"),
    (dict(dims=5), slice_opt.UsageError, "int"),
    (dict(input_shapes={"x": "1,,16"}), slice_opt.UsageError, "x=1,,16"),
    (dict(input_shapes={"x": [1.5, "seq", 16]}), slice_opt.UsageError, "1.5"),
    (dict(input_shapes={"x": ["a,b", "seq", 16]}), slice_opt.UsageError, "a,b"),
    (dict(input_shapes=["x"]), slice_opt.UsageError, "x"),
    (dict(input_shapes={"x": 3}), slice_opt.UsageError, "3"),
]


@pytest.mark.parametrize("kw,cls,text", REFUSED, ids=[repr(k) for k, _, _ in REFUSED])
def test_bad_values_raise_one_line(kw, cls, text, model_path, tmp_path):
    for how in ("proto", "path-to-path"):
        with pytest.raises(cls) as e:
            if how == "proto":
                slice_opt.optimize(MODEL, **kw)
            else:
                slice_opt.optimize(model_path, output=str(tmp_path / "o.onnx"), **kw)
        msg = str(e.value)
        assert isinstance(e.value, slice_opt.SliceOptError)
        assert "\n" not in msg and text in msg, (how, msg)
        assert not (tmp_path / "o.onnx").exists()


# --- IR: the Parameter's shape as OpenVINO reads it ---------------------------------------


def test_ir_input_shapes_write_the_interval_openvino_reads(tmp_path):
    ov = pytest.importorskip("openvino")
    xml = os.path.join(ROOT, "models", "causal_mask_dynamic.onnx.xml")
    out_cli = tmp_path / "cli.xml"
    r = cli(xml, "-o", str(out_cli), "-q", "--input-shape", "x0=1,1..2048,8")
    assert r.returncode == 0, r.stderr
    out_py = tmp_path / "py.xml"
    slice_opt.optimize(xml, output=str(out_py), input_shapes={"x0": [1, (1, 2048), 8]})
    assert out_py.read_bytes() == out_cli.read_bytes()
    assert out_py.with_suffix(".bin").read_bytes() == out_cli.with_suffix(".bin").read_bytes()
    core = ov.Core()
    before = core.read_model(xml).inputs[0].get_partial_shape()
    assert before.is_dynamic and not before[1].is_static
    shape = core.read_model(str(out_py)).inputs[0].get_partial_shape()
    assert shape == ov.PartialShape([1, ov.Dimension(1, 2048), 8]), shape
    with pytest.raises(slice_opt.InputError) as e:
        slice_opt.optimize(xml, output=str(tmp_path / "bad.xml"), input_shapes={"x0": [1, 4, 9]})
    assert "\n" not in str(e.value) and "8" in str(e.value)
