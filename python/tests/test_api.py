"""The Python package (issue 20, acceptance 1): every ONNX fixture in models/ through the API
(ModelProto in, ModelProto out) with outputs compared to the fixture's recorded outputs in ONNX
Runtime; `check` rows equal to the command line's JSON; errors as exceptions; IR paths (outputs
compared in OpenVINO); the summary equal to the command line's `--report`; `python -m slice_opt`.

The command line is found at $SLICE_OPT_BIN, else target/release/slice-opt, else
target/debug/slice-opt (CI builds the release binary first).
"""

import glob
import json
import os
import subprocess
import sys
import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import slice_opt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "models")
ONNX_FIXTURES = sorted(glob.glob(os.path.join(MODELS, "*.onnx")))
IR_FIXTURES = sorted(glob.glob(os.path.join(MODELS, "*.xml")))


def binary():
    for p in (
        os.environ.get("SLICE_OPT_BIN"),
        os.path.join(ROOT, "target", "release", "slice-opt"),
        os.path.join(ROOT, "target", "debug", "slice-opt"),
    ):
        if p and os.path.exists(p):
            return p
    pytest.fail("no slice-opt binary: build it (cargo build --release) or set SLICE_OPT_BIN")


def io(name):
    z = np.load(os.path.join(MODELS, name + ".io.npz"))
    xs = sorted((k for k in z.files if k.startswith("x")), key=lambda k: int(k[1:]))
    ys = sorted((k for k in z.files if k.startswith("y")), key=lambda k: int(k[1:]))
    return [z[k] for k in xs], [z[k] for k in ys]


def stem(path):
    base = os.path.basename(path)
    for ext in (".onnx.xml", ".tf.xml", ".onnx"):
        if base.endswith(ext):
            return base[: -len(ext)]
    raise AssertionError(base)


def run_ort(model_bytes, inputs):
    sess = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    feeds = {i.name: x for i, x in zip(sess.get_inputs(), inputs)}
    return sess.run(None, feeds)


def test_fixtures_present():
    assert len(ONNX_FIXTURES) >= 15, ONNX_FIXTURES
    assert len(IR_FIXTURES) >= 20, IR_FIXTURES


@pytest.mark.parametrize("path", ONNX_FIXTURES, ids=os.path.basename)
def test_optimize_model_proto_outputs_equal_in_onnxruntime(path):
    model = onnx.load(path)  # external data loaded into the proto
    out, report = slice_opt.optimize(model)
    assert isinstance(out, onnx.ModelProto)
    assert [p.name for p in report.passes] == ["infer", "fold", "cleanup"]
    onnx.checker.check_model(out)
    inputs, expected = io(stem(path))
    got = run_ort(out.SerializeToString(), inputs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)
    # The summary counts what the files hold.
    s = report.summary
    assert s["nodes_before"] == len(model.graph.node)
    assert s["nodes_after"] == len(out.graph.node)
    for row in s["ops"]:
        assert row["before"] == sum(n.op_type == row["op"] for n in model.graph.node), row
        assert row["after"] == sum(n.op_type == row["op"] for n in out.graph.node), row


@pytest.mark.parametrize("path", ONNX_FIXTURES, ids=os.path.basename)
def test_verify_onnxruntime(path):
    _, report = slice_opt.optimize(path, verify="onnxruntime", output=None)
    assert report.verification.startswith("verified in ONNX Runtime"), report.verification


@pytest.mark.parametrize("path", ONNX_FIXTURES + IR_FIXTURES, ids=os.path.basename)
def test_check_rows_equal_the_cli_json(path):
    cli = subprocess.run([binary(), "check", path, "--format", "json"], capture_output=True, text=True)
    assert cli.returncode in (0, 1), cli.stderr
    assert slice_opt.check(path) == json.loads(cli.stdout)["rows"]
    # The same rows from a ModelProto and from bytes.
    if path.endswith(".onnx"):
        m = onnx.load(path)
        rows = slice_opt.check(m)
        assert [(r["node"], r["inferred"], r["verdict"]) for r in rows] == [
            (r["node"], r["inferred"], r["verdict"]) for r in json.loads(cli.stdout)["rows"]
        ]


@pytest.mark.parametrize("path", ONNX_FIXTURES + IR_FIXTURES, ids=os.path.basename)
def test_summary_equals_the_cli_report(path, tmp_path):
    ext = ".xml" if path.endswith(".xml") else ".onnx"
    # Same file name in two folders: an external data file's name holds the output's name.
    (tmp_path / "cli").mkdir()
    (tmp_path / "py").mkdir()
    out_cli = str(tmp_path / "cli" / ("m" + ext))
    rep = str(tmp_path / "r.json")
    cli = subprocess.run([binary(), path, "-o", out_cli, "--report", rep], capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    with open(rep) as f:
        want = json.load(f)["summary"]
    out_py = str(tmp_path / "py" / ("m" + ext))
    result, report = slice_opt.optimize(path, output=out_py)
    assert result == out_py
    got = report.summary
    for k in ("ops", "nodes_before", "nodes_after", "bytes_before", "bytes_after"):
        assert got[k] == want[k], k
    # The table the CLI printed has the same rows.
    for line in report.table().splitlines()[:-1]:
        if line.startswith("| ") and "model size" not in line:
            assert line in cli.stderr, (line, cli.stderr)


@pytest.mark.parametrize("path", [p for p in IR_FIXTURES if os.path.exists(p)], ids=os.path.basename)
def test_ir_paths(path, tmp_path):
    ov = pytest.importorskip("openvino")
    out = str(tmp_path / "out.xml")
    result, report = slice_opt.optimize(path, output=out)
    assert result == out and os.path.exists(out) and os.path.exists(str(tmp_path / "out.bin"))
    inputs, expected = io(stem(path))
    core = ov.Core()
    compiled = core.compile_model(core.read_model(out), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})
    res = compiled(inputs)
    got = [res[o] for o in compiled.outputs]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)
    assert slice_opt.info(path)["format"] == "openvino"
    with pytest.raises(slice_opt.UsageError):
        slice_opt.optimize(path)  # IR needs output=


def test_bytes_in_bytes_out():
    path = os.path.join(MODELS, "last_token.onnx")
    data = open(path, "rb").read()
    out, report = slice_opt.optimize(data, passes="infer,fold,cleanup,lower")
    assert isinstance(out, bytes)
    inputs, expected = io("last_token")
    np.testing.assert_allclose(run_ort(out, inputs)[0], expected[0], rtol=1e-4, atol=1e-4)
    assert report.summary["bytes_before"] == len(data)
    assert report.summary["bytes_after"] == len(out)
    # A round trip gives the same model.
    same, _ = slice_opt.optimize(data, passes=())
    assert onnx.ModelProto.FromString(same) == onnx.ModelProto.FromString(data)


def test_infer_shapes_and_info():
    m = onnx.load(os.path.join(MODELS, "last_token.onnx"))
    inferred = slice_opt.infer_shapes(m)
    assert isinstance(inferred, onnx.ModelProto)
    i = slice_opt.info(m)
    assert i["format"] == "onnx"
    assert i["ops"].get("Slice", 0) == sum(n.op_type == "Slice" for n in m.graph.node)
    assert i["slices"] and i["slices"][0]["spec"].startswith("x[")


def test_errors_are_exceptions(tmp_path):
    with pytest.raises(slice_opt.InputError) as e:
        slice_opt.optimize(b"\x08\x07\x12\xff\xff\xff\xff\x0f garbage")
    assert isinstance(e.value, slice_opt.Error)
    assert e.value.file == "model.onnx"
    bad = tmp_path / "truncated.onnx"
    bad.write_bytes(open(os.path.join(MODELS, "qkv_split.onnx"), "rb").read()[:100])
    with pytest.raises(slice_opt.InputError) as e:
        slice_opt.check(str(bad))
    assert e.value.file == str(bad)
    with pytest.raises(slice_opt.InputError):
        slice_opt.info(str(tmp_path / "missing.onnx"))
    with pytest.raises(slice_opt.UsageError):
        slice_opt.optimize(os.path.join(MODELS, "last_token.onnx"), passes=("infer", "nope"))
    with pytest.raises(slice_opt.UsageError):
        slice_opt.optimize(12345)
    # A node whose input nobody produces names the node.
    m = onnx.load(os.path.join(MODELS, "last_token.onnx"))
    m.graph.node[-1].input[0] = "no_such_value"
    with pytest.raises(slice_opt.Error) as e:
        slice_opt.optimize(m)
    assert e.value.node, str(e.value)


def test_verification_error_on_a_broken_model(tmp_path):
    """verify= compares the result against the original; a result that differs raises."""
    from slice_opt import _verify

    path = os.path.join(MODELS, "channel_reverse.onnx")
    m = onnx.load(path)
    broken = onnx.load(path)
    # Turn the reversal (step -1) into the identity.
    sl = [n for n in broken.graph.node if n.op_type == "Slice"][0]
    sl.op_type = "Identity"
    del sl.input[1:]
    with pytest.raises(slice_opt.VerificationError):
        _verify.compare(m.SerializeToString(), broken.SerializeToString())


def test_gil_is_released_during_passes():
    """Threads run optimize concurrently (each call releases the GIL while in Rust)."""
    path = os.path.join(MODELS, "gpt2_causal_mask.onnx")
    errors = []

    def work():
        try:
            for _ in range(5):
                slice_opt.optimize(path, output=None)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_python_dash_m(tmp_path):
    src = os.path.join(MODELS, "qkv_split.tf.xml")
    out = str(tmp_path / "o.xml")
    r = subprocess.run([sys.executable, "-m", "slice_opt", src, "-o", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "| StridedSlice " in r.stderr and "total nodes" in r.stderr
    r = subprocess.run([sys.executable, "-m", "slice_opt", "check", src, "--format", "json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cli = subprocess.run([binary(), "check", src, "--format", "json"], capture_output=True, text=True)
    assert json.loads(r.stdout)["rows"] == json.loads(cli.stdout)["rows"]
    r = subprocess.run([sys.executable, "-m", "slice_opt", "info", str(tmp_path / "none.onnx")], capture_output=True, text=True)
    assert r.returncode == 2 and "error" in r.stderr
    r = subprocess.run([sys.executable, "-m", "slice_opt", src, "-o", out, "-q"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == ""
