"""The Python package as pipelines use it (issue 45): path, bytes and ModelProto in for
`optimize`, `check` and `info`; one exception type carrying file, node and input; the command
line's `--dim`/`--assume` as `assumptions=`, with the written dims checked against the shapes
ONNX Runtime computes; the type stubs checked against the package (mypy's stubtest) and used by
a type checker; and, under tools/wheel_check.sh, that the package under test is the installed
wheel with no Rust toolchain on PATH.

The command line is found as in test_api.py ($SLICE_OPT_BIN, else target/release/slice-opt,
else target/debug/slice-opt).
"""

import ast
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from fractions import Fraction

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import slice_opt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "models")
GPT2_MASK = os.path.join(MODELS, "gpt2_causal_mask.onnx")
ASSUME = ["k_len >= q_len", "k_len=1..32"]
WHEEL_CHECK = os.environ.get("SLICE_OPT_WHEEL_CHECK") == "1"


def binary():
    for p in (
        os.environ.get("SLICE_OPT_BIN"),
        os.path.join(ROOT, "target", "release", "slice-opt"),
        os.path.join(ROOT, "target", "debug", "slice-opt"),
    ):
        if p and os.path.exists(p):
            return p
    pytest.fail("no slice-opt binary: build it (cargo build --release) or set SLICE_OPT_BIN")


def cli_flags(assumptions):
    flags = []
    for a in assumptions:
        flags += ["--assume" if any(c in a for c in "<>") or "==" in a else "--dim", a]
    return flags


# --- path, bytes, ModelProto --------------------------------------------------------------


@pytest.mark.parametrize("name", ["gpt2_causal_mask.onnx", "qkv_split.onnx", "channel_reverse.onnx"])
def test_check_and_info_take_a_path_bytes_or_a_model_proto(name):
    path = os.path.join(MODELS, name)
    cli = subprocess.run([binary(), "check", path, "--format", "json"], capture_output=True, text=True)
    assert cli.returncode in (0, 1), cli.stderr
    want = [(r["node"], r["declared"], r["inferred"], r["verdict"]) for r in json.loads(cli.stdout)["rows"]]
    data = open(path, "rb").read()
    for model in (path, data, bytearray(data), onnx.load(path)):
        rows = slice_opt.check(model)
        assert [(r["node"], r["declared"], r["inferred"], r["verdict"]) for r in rows] == want, type(model)
    cli = subprocess.run([binary(), "info", path, "--format", "json"], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    want_info = json.loads(cli.stdout)
    for model in (path, data, onnx.load(path)):
        got = slice_opt.info(model)
        for k in ("format", "opsets", "nodes", "ops", "slices"):
            assert got[k] == want_info[k], (k, type(model))


CHECK_FIXTURES = sorted(glob.glob(os.path.join(ROOT, "tests", "data", "check", "*.onnx")))


def test_check_rows_of_the_check_fixtures_equal_the_cli_json():
    """tests/data/check: dynamo exports with declared dims wrong at some sizes (rows with
    ``wrong_at``), and a model with a mismatch, a looser and an unknown row."""
    assert CHECK_FIXTURES
    wrong_at = 0
    for path in CHECK_FIXTURES:
        cli = subprocess.run([binary(), "check", path, "--format", "json"], capture_output=True, text=True)
        assert cli.returncode in (0, 1), cli.stderr
        want = json.loads(cli.stdout)["rows"]
        data = open(path, "rb").read()
        for model in (path, data, onnx.load(path)):
            rows = slice_opt.check(model)
            assert rows == want, (path, type(model))
        wrong_at += sum("wrong_at" in r for r in want)
    assert wrong_at > 0


def test_optimize_returns_the_kind_it_was_given(tmp_path):
    data = open(GPT2_MASK, "rb").read()
    out, _ = slice_opt.optimize(data)
    assert isinstance(out, bytes)
    out, _ = slice_opt.optimize(memoryview(data))
    assert isinstance(out, bytes)
    out, _ = slice_opt.optimize(onnx.load(GPT2_MASK))
    assert isinstance(out, onnx.ModelProto)
    target = tmp_path / "o.onnx"
    out, _ = slice_opt.optimize(GPT2_MASK, output=target)
    assert out == str(target) and target.exists()


def test_a_model_proto_is_recognised_by_its_method_not_by_importing_onnx():
    """Anything named ModelProto with SerializeToString is serialized with it."""

    class ModelProto:
        def __init__(self, data):
            self.data = data
            self.calls = 0

        def SerializeToString(self):
            self.calls += 1
            return self.data

    fake = ModelProto(open(GPT2_MASK, "rb").read())
    rows = slice_opt.check(fake)
    assert fake.calls == 1 and [r["path"] for r in rows] == ["Slice_7", "Slice_8"]
    with pytest.raises(slice_opt.UsageError):
        slice_opt.check(object())


# --- one exception type with file, node and input -----------------------------------------


def test_one_exception_type():
    for cls in (
        slice_opt.InputError,
        slice_opt.SliceError,
        slice_opt.PassError,
        slice_opt.UsageError,
        slice_opt.VerificationError,
    ):
        assert issubclass(cls, slice_opt.SliceOptError)
    assert slice_opt.Error is slice_opt.SliceOptError


def test_dangling_input_names_file_node_and_input(tmp_path):
    m = onnx.load(GPT2_MASK)
    mul = [n for n in m.graph.node if n.op_type == "Mul"][0]
    mul.input[1] = "no_such_value"  # input 1 of the Mul
    path = tmp_path / "dangling.onnx"
    onnx.save(m, str(path))
    for model, file in ((m, "model.onnx"), (m.SerializeToString(), "model.onnx"), (str(path), str(path))):
        for call in (slice_opt.check, slice_opt.info, slice_opt.optimize):
            with pytest.raises(slice_opt.SliceOptError) as e:
                call(model)
            err = e.value
            assert isinstance(err, slice_opt.InputError), type(err)
            assert (err.file, err.op, err.input) == (file, "Mul", 1), (call, str(err))
            assert err.node and "no_such_value" in str(err)


def zero_step_slice():
    """Slice(x, starts=[0], ends=[4], axes=[1], steps=[0]): step 0 is invalid (ONNX Slice spec:
    'steps' is input 4, and a step cannot be 0)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [
        numpy_helper.from_array(np.array([v], dtype=np.int64), n)
        for n, v in (("starts", 0), ("ends", 4), ("axes", 1), ("steps", 0))
    ]
    node = helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"], name="bad_slice")
    g = helper.make_graph([node], "g", [x], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def test_a_zero_step_names_the_steps_input(tmp_path):
    m = zero_step_slice()
    path = tmp_path / "zero_step.onnx"
    onnx.save(m, str(path))
    for model, file in ((m, "model.onnx"), (str(path), str(path))):
        with pytest.raises(slice_opt.SliceError) as e:
            slice_opt.optimize(model)
        err = e.value
        assert (err.file, err.node, err.op, err.input) == (file, "bad_slice", "Slice", 4), str(err)
    # check reports it as a row, not an error.
    assert [r["verdict"] for r in slice_opt.check(m)] == ["invalid"]


def test_a_zero_stride_in_ir_names_the_stride_input(tmp_path):
    """OpenVINO StridedSlice-1: inputs data, begin, end, stride. channel_reverse.tf.xml reads
    the stride [1, -1] from bytes 8..16 of its .bin; the -1 becomes 0."""
    src = os.path.join(MODELS, "channel_reverse.tf.xml")
    xml = str(tmp_path / "m.xml")
    shutil.copy(src, xml)
    b = bytearray(open(src[:-4] + ".bin", "rb").read())
    stride = ET.parse(src).getroot().find(".//layer[@name='strided_slice/stack_2']/data")
    assert stride is not None and (stride.get("offset"), stride.get("size")) == ("8", "8")
    assert list(np.frombuffer(bytes(b[8:16]), dtype=np.int32)) == [1, -1]
    b[12:16] = bytes(4)
    open(xml[:-4] + ".bin", "wb").write(bytes(b))
    with pytest.raises(slice_opt.SliceError) as e:
        slice_opt.optimize(xml, output=str(tmp_path / "o.xml"))
    err = e.value
    assert (err.file, err.node, err.op, err.input) == (xml, "strided_slice", "StridedSlice", 3), str(err)


def test_unreadable_and_usage_errors():
    with pytest.raises(slice_opt.InputError) as e:
        slice_opt.info(b"not a model at all")
    assert e.value.file == "model.onnx" and e.value.node is None and e.value.input is None
    with pytest.raises(slice_opt.UsageError) as e:
        slice_opt.check(GPT2_MASK, assumptions=["k_len >> q_len"])
    assert "k_len >> q_len" in str(e.value)
    with pytest.raises(slice_opt.UsageError):
        slice_opt.optimize(GPT2_MASK, assumptions=["seq=ten"])
    with pytest.raises(slice_opt.UsageError):
        slice_opt.optimize(GPT2_MASK, assumptions={"seq": 1.5})


# --- assumptions= -------------------------------------------------------------------------


def dims_of(model, name):
    for v in list(model.graph.value_info) + list(model.graph.output):
        if v.name == name:
            return [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
    raise KeyError(name)


def evaluate(dim, sizes):
    """A written dim (an int or an expression of the symbols with +, -, *, min, max and
    floor(a/b), the sympy form ONNX Runtime writes too) at sizes, in exact rationals."""
    if isinstance(dim, int):
        return dim
    tree = ast.parse(dim, mode="eval")
    for n in ast.walk(tree):
        assert isinstance(
            n, (ast.Expression, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.UnaryOp,
                ast.USub, ast.Name, ast.Load, ast.Constant, ast.Call)
        ), ast.dump(n)
        if isinstance(n, ast.Call):
            assert isinstance(n.func, ast.Name) and n.func.id in ("min", "max", "floor"), ast.dump(n)
    names = {k: Fraction(v) for k, v in sizes.items()}
    value = eval(
        compile(tree, "<dim>", "eval"),
        {"__builtins__": {}, "min": min, "max": max, "floor": math.floor},
        names,
    )
    assert Fraction(value).denominator == 1, (dim, sizes, value)
    return int(value)


def ort_shapes(model, names, sizes):
    """The shapes ONNX Runtime gives the values `names` of gpt2_causal_mask at `sizes`."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    del m.graph.value_info[:]
    for n in names:
        m.graph.output.append(helper.make_tensor_value_info(n, TensorProto.FLOAT, None))
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = {
        "q": np.zeros((sizes["b"], 2, sizes["q_len"], 8), np.float32),
        "k": np.zeros((sizes["b"], 2, sizes["k_len"], 8), np.float32),
    }
    return [list(r.shape) for r in sess.run(names, feeds)]


@pytest.mark.parametrize(
    "assumptions",
    [ASSUME, {"k_len": (1, 32)} , "k_len >= q_len"],
    ids=["list", "mapping", "one-text"],
)
def test_assumptions_written_dims_hold_in_onnxruntime(assumptions):
    m = onnx.load(GPT2_MASK)
    plain, _ = slice_opt.optimize(m, passes=("infer",))
    out, _ = slice_opt.optimize(m, passes=("infer",), assumptions=assumptions)
    # The assumptions were used: other dims are written, and recorded in the model.
    assert dims_of(out, "mask") != dims_of(plain, "mask")
    texts = slice_opt._assumption_texts(assumptions)
    recorded = {p.key: p.value for p in out.metadata_props}["slice_opt.assumptions"]
    assert sorted(recorded.splitlines()) == sorted(texts)
    # Where they hold, the written dims are the shapes ONNX Runtime computes.
    for b, q, k in ((1, 1, 1), (2, 3, 7), (1, 5, 5), (3, 1, 32), (1, 32, 32)):
        sizes = {"b": b, "q_len": q, "k_len": k}
        got = ort_shapes(m, ["rows", "mask"], sizes)
        for name, shape in zip(["rows", "mask"], got):
            assert [evaluate(d, sizes) for d in dims_of(out, name)] == shape, (name, sizes)


def test_assumptions_equal_the_command_lines(tmp_path):
    flags = cli_flags(ASSUME)
    cli = subprocess.run([binary(), "check", GPT2_MASK, "--format", "json"] + flags, capture_output=True, text=True)
    assert cli.returncode in (0, 1), cli.stderr
    want = json.loads(cli.stdout)
    assert want["assumptions"]
    rows = slice_opt.check(GPT2_MASK, assumptions=ASSUME)
    assert rows == want["rows"]
    assert rows != slice_opt.check(GPT2_MASK)
    # The transformed file: the same bytes as the command line's.
    out_cli = tmp_path / "cli.onnx"
    r = subprocess.run([binary(), GPT2_MASK, "-o", str(out_cli), "-q"] + flags, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    out_py = tmp_path / "py.onnx"
    slice_opt.optimize(GPT2_MASK, output=out_py, assumptions=ASSUME)
    assert out_py.read_bytes() == out_cli.read_bytes()
    # info reads the input shapes under them too.
    cli = subprocess.run([binary(), "info", GPT2_MASK, "--format", "json"] + flags, capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert slice_opt.info(GPT2_MASK, assumptions=ASSUME)["slices"] == json.loads(cli.stdout)["slices"]
    # And python -m slice_opt takes --dim/--assume like the command line.
    r = subprocess.run(
        [sys.executable, "-m", "slice_opt", "check", GPT2_MASK, "--format", "json"] + flags,
        capture_output=True,
        text=True,
    )
    assert r.returncode in (0, 1), r.stderr
    assert json.loads(r.stdout)["rows"] == want["rows"]


def test_assumptions_are_per_call():
    """A call's assumptions do not leak into the next call (they are installed for the call's
    thread only while it runs)."""
    before = slice_opt.check(GPT2_MASK)
    slice_opt.check(GPT2_MASK, assumptions=ASSUME)
    slice_opt.optimize(GPT2_MASK, assumptions=ASSUME)
    assert slice_opt.check(GPT2_MASK) == before


def named_sizes(verification):
    m = re.search(r"named dims at (\{[^}]*\})", verification)
    assert m, verification
    return ast.literal_eval(m.group(1))


def test_verify_runs_at_sizes_the_assumptions_allow():
    m = onnx.load(GPT2_MASK)
    _, rep = slice_opt.optimize(m, assumptions=["k_len >= q_len + 2", "q_len=1..1"], verify=True)
    assert rep.verification.startswith("verified in ONNX Runtime"), rep.verification
    s = named_sizes(rep.verification)
    assert s["q_len"] == 1 and s["k_len"] >= s["q_len"] + 2, s
    _, rep = slice_opt.optimize(m, assumptions={"b": 1, "k_len": (5, 5)}, verify=True)
    s = named_sizes(rep.verification)
    assert (s["b"], s["k_len"]) == (1, 5), s
    # A fact no size satisfies: not verified, and not an error.
    _, rep = slice_opt.optimize(m, assumptions=["k_len >= 2*k_len + 1"], verify=True)
    assert rep.verification.startswith("NOT verified: no sizes"), rep.verification


# --- the stubs ----------------------------------------------------------------------------

TYPED_OK = """
from typing import List, Optional
import onnx
import slice_opt

m = onnx.ModelProto()
p: onnx.ModelProto = slice_opt.optimize(m, assumptions=["seq=1..4096"])[0]
b: bytes = slice_opt.optimize(b"", passes="infer", fold_limit=1 << 20)[0]
o: str = slice_opt.optimize("a.onnx", output="b.onnx", assumptions={"seq": (1, None)})[0]
rows: List[slice_opt.CheckRow] = slice_opt.check(b"", assumptions="k >= q")
v: slice_opt.Verdict = rows[0]["verdict"]
n: int = slice_opt.info(m)["nodes"]
rep: slice_opt.Report = slice_opt.optimize(m, verify="onnxruntime")[1]
q: onnx.ModelProto = slice_opt.optimize(m, dims={"batch": 1, "seq": (1, 4096), "past": "0..512"})[0]
o2: str = slice_opt.optimize("a.onnx", output="b.onnx", dims=["batch=1"], input_shapes={"x": [1, "seq", None, (1, 2048)]})[0]
b2: bytes = slice_opt.infer_shapes(b"", input_shapes={"x": "1,seq,?,1..2048"}, dims="seq=4")
r2: List[slice_opt.CheckRow] = slice_opt.check(m, dims={"seq": (1, None)})
try:
    slice_opt.info("x.onnx")
except slice_opt.SliceOptError as e:
    f: Optional[str] = e.file
    i: Optional[int] = e.input
"""

# Each line is wrong; the type checker must say so on every one.
TYPED_BAD = [
    's: str = slice_opt.optimize(b"")[0]',
    'slice_opt.check("m.onnx", fold_limit=3)',
    'x: str = slice_opt.info("m.onnx")["nodes"]',
    'slice_opt.optimize("m.onnx", assumptions=3)',
    'slice_opt.optimize("m.onnx", verify="tract")',
    "slice_opt.optimize(12345)",
    'slice_opt.SliceOptError("m").input.bit_length()',
    'slice_opt.check("m.onnx", input_shapes={"x": [1]})',
    'slice_opt.optimize("m.onnx", dims={"seq": 1.5})',
    'slice_opt.optimize("m.onnx", input_shapes={"x": [1.5]})',
]


def mypy_or_skip():
    try:
        from mypy import api
    except ImportError:
        if WHEEL_CHECK:
            pytest.fail("mypy is not installed (tools/wheel_check.sh installs it)")
        pytest.skip("mypy is not installed")
    return api


def test_stubs_match_the_package(tmp_path):
    mypy_or_skip()
    # slice_opt._verify is private and has no stub of its own (stubtest reads the .py): on
    # Python 3.9 stubtest takes its `from typing import Sequence` for a definition that does not
    # match the runtime object.
    allow = tmp_path / "allowlist.txt"
    allow.write_text("slice_opt\\._verify\\.(Sequence|Callable|Dict|List|Optional|Tuple|Union)\n")
    r = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "slice_opt", "--allowlist", str(allow), "--ignore-unused-allowlist"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_stubs_type_the_api(tmp_path):
    api = mypy_or_skip()
    good = tmp_path / "good.py"
    good.write_text(TYPED_OK)
    out, err, rc = api.run(["--strict", "--no-incremental", "--cache-dir", os.devnull, str(good)])
    assert rc == 0, out + err
    bad = tmp_path / "bad.py"
    bad.write_text("import onnx\nimport slice_opt\n" + "\n".join(TYPED_BAD) + "\n")
    out, err, rc = api.run(["--strict", "--no-incremental", "--cache-dir", os.devnull, str(bad)])
    lines = {int(x) for x in re.findall(r"bad\.py:(\d+): error", out)}
    assert lines == set(range(3, 3 + len(TYPED_BAD))), out


# --- the wheel ----------------------------------------------------------------------------


@pytest.mark.skipif(not WHEEL_CHECK, reason="only under tools/wheel_check.sh")
def test_installed_wheel_without_a_rust_toolchain():
    assert shutil.which("cargo") is None and shutil.which("rustc") is None
    pkg = os.path.dirname(slice_opt.__file__)
    assert os.path.commonpath([pkg, sys.prefix]) == sys.prefix, pkg
    assert os.path.basename(slice_opt._native.__file__) == "_native.abi3.so"
    for f in ("__init__.pyi", "_native.pyi", "py.typed"):
        assert os.path.exists(os.path.join(pkg, f)), f
