"""Issue 45, acceptance 2 and 3: `slice-opt check`'s CI formats validated by independent
parsers, and every size `check` reports a declared dim wrong at confirmed by ONNX Runtime.

    python3 tools/check_formats_check.py [--bin target/debug/slice-opt]

Needs: jsonschema, junitparser, onnx, onnxruntime, sympy (pip install jsonschema junitparser
onnx onnxruntime sympy). Exit 0 when every check holds, 1 otherwise (each failure printed).

Formats (on tests/data/check/three_verdicts.onnx: a mismatch, a tighter (looser declaration), an
unknown and an ok row; at --fail-on mismatch and --fail-on unknown; and on a directory with a
model that cannot be read):
- SARIF against the official SARIF 2.1.0 JSON schema (tests/data/sarif-schema-2.1.0.json, OASIS
  errata01, draft-04), one result per row, rule ids = verdicts, artifact = the model file;
- JUnit XML read by junitparser: one test case per slice, a failure per failing row;
- GitHub workflow commands by the documented grammar (`::error file=F,line=L,title=T::MESSAGE`,
  properties escaped %25 %0D %0A %3A %2C, the message %25 %0D %0A), one per failing row, the
  file and the node's path in the message.

Sizes: every dynamo export (opset 18) in tests/data/exports and tests/data/check, checked with
`--format json`; each `mismatch` row with `wrong_at` is run in ONNX Runtime at those sizes (the
inputs built from the graph's declared input shapes), and the slice's actual dim is compared with
the declared dim evaluated at those sizes (sympy, from the model's own text); and at every binding
`check` tries before it (smaller sizes), where the declared dim must be right or the model must
not run.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIXTURE = "tests/data/check/three_verdicts.onnx"
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL", msg)


def run(bin_, args):
    p = subprocess.run([bin_] + args, cwd=ROOT, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def rows_of(bin_, model, extra=()):
    rc, out, err = run(bin_, ["check", model, "--format", "json", *extra])
    return json.loads(out)["rows"]


FAILING = {
    "mismatch": {"mismatch", "invalid"},
    "looser": {"mismatch", "invalid", "tighter"},
    "unknown": {"mismatch", "invalid", "tighter", "unknown"},
}

# --- GitHub workflow commands -------------------------------------------------------------
# https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions
# `::{command} {parameters}::{message}`; parameters `key=value` separated by `,`; the toolkit
# (actions/toolkit packages/core/src/command.ts) escapes data `%`->%25 `\r`->%0D `\n`->%0A and
# property values also `:`->%3A `,`->%2C.
GH_LINE = re.compile(r"^::(error|warning|notice|debug)(?: ([^:]*))?::(.*)$")
GH_KEYS = {"file", "line", "endLine", "col", "endColumn", "title"}


def gh_unescape(s, prop):
    escapes = ["%25", "%0D", "%0A"] + (["%3A", "%2C"] if prop else [])
    # every % starts one of the escapes; no raw CR/LF (and no raw : , in a property)
    for m in re.finditer("%", s):
        if s[m.start():m.start() + 3] not in escapes:
            raise ValueError(f"bad escape at {m.start()} in {s!r}")
    if "\r" in s or "\n" in s or (prop and ("," in s or ":" in s)):
        raise ValueError(f"unescaped character in {s!r}")
    return (s.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",")
            .replace("%25", "%"))


def check_github(bin_, model, fail_on):
    rows = rows_of(bin_, model)
    rc, out, err = run(bin_, ["check", model, "--format", "github", "--fail-on", fail_on])
    lines = out.splitlines()
    want = [r for r in rows if r["verdict"] in FAILING[fail_on]]
    if len(lines) != len(want):
        fail(f"github {fail_on}: {len(lines)} lines for {len(want)} failing rows")
    for line, row in zip(lines, want):
        m = GH_LINE.match(line)
        if not m:
            fail(f"github: not a workflow command: {line!r}")
            continue
        cmd, params, msg = m.groups()
        props = {}
        try:
            for kv in (params or "").split(","):
                k, v = kv.split("=", 1)
                if k not in GH_KEYS:
                    raise ValueError(f"unknown parameter {k}")
                props[k] = gh_unescape(v, True)
            msg = gh_unescape(msg, False)
        except ValueError as e:
            fail(f"github: {e}: {line!r}")
            continue
        if cmd != "error" or props.get("file") != model or not props.get("line", "").isdigit():
            fail(f"github: wrong command, file or line: {line!r}")
        if model not in msg or row["path"] not in msg or row["verdict"] not in msg:
            fail(f"github: message lacks the file, the node path or the verdict: {msg!r}")
    want_rc = 1 if want else 0
    if rc != want_rc:
        fail(f"github {fail_on}: exit {rc}, expected {want_rc}")
    print(f"github --fail-on {fail_on}: {len(lines)} annotation(s) for {len(want)} failing row(s) of {len(rows)}, exit {rc}")


def check_sarif(bin_, target, fail_on, models_rows):
    import jsonschema

    with open(os.path.join(ROOT, "tests/data/sarif-schema-2.1.0.json")) as f:
        schema = json.load(f)
    rc, out, err = run(bin_, ["check", target, "--format", "sarif", "--fail-on", fail_on])
    log = json.loads(out)
    v = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
    errs = sorted(v.iter_errors(log), key=lambda e: list(e.path))
    for e in errs[:5]:
        fail(f"sarif: schema: {list(e.path)}: {e.message}")
    run_ = log["runs"][0]
    results = run_["results"]
    nrows = sum(len(r) if r is not None else 1 for r in models_rows.values())
    if len(results) != nrows:
        fail(f"sarif: {len(results)} results for {nrows} rows")
    uris = [a["location"]["uri"] for a in run_["artifacts"]]
    if sorted(uris) != sorted(models_rows):
        fail(f"sarif: artifacts {uris} are not the models {sorted(models_rows)}")
    rule_ids = {r["id"] for r in run_["tool"]["driver"]["rules"]}
    i = 0
    for model, rows in models_rows.items():
        for row in rows if rows is not None else [None]:
            res = results[i]
            i += 1
            want_rule = row["verdict"] if row else "unreadable"
            loc = res["locations"][0]["physicalLocation"]["artifactLocation"]
            if res["ruleId"] != want_rule or res["ruleId"] not in rule_ids or loc["uri"] != model:
                fail(f"sarif: result {i}: rule {res['ruleId']} at {loc['uri']}, expected {want_rule} at {model}")
            failing = row is None or row["verdict"] in FAILING[fail_on]
            if (res["kind"] == "fail") != failing or (res["level"] == "error") != failing:
                fail(f"sarif: result {i}: kind {res['kind']} level {res['level']} for {want_rule}")
    print(f"sarif {target} --fail-on {fail_on}: valid against the 2.1.0 schema ({len(errs)} errors), {len(results)} results, exit {rc}")
    return rc


def check_junit(bin_, target, fail_on, models_rows):
    from junitparser import JUnitXml, Failure, Error

    rc, out, err = run(bin_, ["check", target, "--format", "junit", "--fail-on", fail_on])
    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write(out)
    try:
        xml = JUnitXml.fromfile(f.name)
    finally:
        os.unlink(f.name)
    suites = list(xml)
    if len(suites) != len(models_rows):
        fail(f"junit: {len(suites)} suites for {len(models_rows)} models")
    cases = failures_ = errors = 0
    for suite, (model, rows) in zip(suites, models_rows.items()):
        tcs = list(suite)
        if suite.name != model:
            fail(f"junit: suite {suite.name} is not {model}")
        if rows is None:
            if not (len(tcs) == 1 and any(isinstance(r, Error) for r in tcs[0].result)):
                fail(f"junit: unreadable {model} is not one test case with an error")
            errors += 1
            cases += 1
            continue
        if [t.name for t in tcs] != [r["path"] for r in rows]:
            fail(f"junit: test cases {[t.name for t in tcs]} are not the slices {[r['path'] for r in rows]}")
        for t, r in zip(tcs, rows):
            failed = any(isinstance(x, Failure) for x in t.result)
            if failed != (r["verdict"] in FAILING[fail_on]):
                fail(f"junit: {t.name}: failure {failed} for verdict {r['verdict']}")
            failures_ += failed
        cases += len(tcs)
    if (xml.tests, xml.failures, xml.errors) != (cases, failures_, errors):
        fail(f"junit: totals {xml.tests}/{xml.failures}/{xml.errors}, counted {cases}/{failures_}/{errors}")
    print(f"junit {target} --fail-on {fail_on}: {cases} test case(s), {failures_} failure(s), {errors} error(s), exit {rc}")
    return rc


def formats(bin_):
    rows = rows_of(bin_, FIXTURE)
    verdicts = sorted(r["verdict"] for r in rows)
    if verdicts != ["mismatch", "ok", "tighter", "unknown"]:
        fail(f"{FIXTURE}: verdicts {verdicts}")
    for fo in ["mismatch", "looser", "unknown"]:
        check_github(bin_, FIXTURE, fo)
        check_sarif(bin_, FIXTURE, fo, {FIXTURE: rows})
        check_junit(bin_, FIXTURE, fo, {FIXTURE: rows})
    # A directory: the fixtures, a subfolder, and a model that cannot be read.
    os.makedirs(os.path.join(ROOT, "target"), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.join(ROOT, "target"))
    try:
        rel = os.path.relpath(tmp, ROOT)
        os.makedirs(os.path.join(tmp, "sub"))
        shutil.copy(os.path.join(ROOT, FIXTURE), os.path.join(tmp, "a.onnx"))
        shutil.copy(os.path.join(ROOT, "tests/data/check/narrow_tail.dynamo18.onnx"), os.path.join(tmp, "sub", "b.onnx"))
        with open(os.path.join(tmp, "sub", "broken.onnx"), "wb") as f:
            f.write(b"\x08\x07garbage")
        with open(os.path.join(tmp, "pom.xml"), "w") as f:
            f.write("<project/>\n")
        models = {f"{rel}/a.onnx": rows_of(bin_, f"{rel}/a.onnx"),
                  f"{rel}/sub/b.onnx": rows_of(bin_, f"{rel}/sub/b.onnx"),
                  f"{rel}/sub/broken.onnx": None}
        models = dict(sorted(models.items()))
        for fo in ["mismatch", "unknown"]:
            rc1 = check_sarif(bin_, rel, fo, models)
            rc2 = check_junit(bin_, rel, fo, models)
            if rc1 != 2 or rc2 != 2:
                fail(f"directory with an unreadable model: exit {rc1}, {rc2}, expected 2")
    finally:
        shutil.rmtree(tmp)


# --- sizes ----------------------------------------------------------------------------------
def declared_at(m, out, axis, at):
    """The declared dim `axis` of value `out` in model `m`, evaluated at sizes `at` (sympy)."""
    import sympy

    vi = next(v for v in list(m.graph.value_info) + list(m.graph.output) if v.name == out)
    d = vi.type.tensor_type.shape.dim[axis]
    if d.HasField("dim_value"):
        return vi, d.dim_value, str(d.dim_value)
    loc = {k: sympy.Symbol(k, integer=True, nonnegative=True) for k in at}
    loc.update({"Max": sympy.Max, "Min": sympy.Min, "Mod": sympy.Mod, "floor": sympy.floor})
    return vi, int(sympy.sympify(d.dim_param, locals=loc).subs({loc[k]: v for k, v in at.items()})), d.dim_param


def ort_dim(path, out, elem_type, axis, at):
    """The dim `axis` of value `out` when ONNX Runtime runs the model at sizes `at` (inputs of
    zeros shaped by the graph's declared input shapes), or the error."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    m2 = onnx.load(path)
    if out not in [o.name for o in m2.graph.output]:
        m2.graph.output.append(onnx.helper.make_tensor_value_info(out, elem_type, None))
    feeds = {}
    inits = {t.name for t in m2.graph.initializer}
    for i in m2.graph.input:
        if i.name in inits:
            continue
        shape = [dd.dim_value if dd.HasField("dim_value") else at.get(dd.dim_param, 2)
                 for dd in i.type.tensor_type.shape.dim]
        feeds[i.name] = np.zeros(shape, onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type))
    try:
        sess = ort.InferenceSession(m2.SerializeToString(), providers=["CPUExecutionProvider"])
        return sess.run([out], feeds)[0].shape[axis], None
    except Exception as e:  # the model does not run at these sizes
        return None, str(e).splitlines()[0][:160]


def smaller(at, lows):
    """Every binding of `at`'s symbols (each >= its lower bound) before `at` in check's order:
    a smaller sum of distances from the lower bounds, or the same sum and lexicographically
    smaller (symbols by name). At most 200."""
    import itertools

    names = sorted(at)
    lo = [lows.get(n, 0) for n in names]
    target = tuple(at[n] - l for n, l in zip(names, lo))
    total = sum(target)
    out = []
    for off in itertools.product(range(total + 1), repeat=len(names)):
        if sum(off) < total or (sum(off) == total and off < target):
            out.append({n: l + o for n, l, o in zip(names, lo, off)})
    return out[:200]


# (model, extra arguments of check, lower bounds they state)
RUNS = [(p, [], {}) for p in sorted(glob.glob(os.path.join(ROOT, "tests/data/exports/*.dynamo18.onnx")) +
                                    glob.glob(os.path.join(ROOT, "tests/data/check/*.dynamo18.onnx")))]
RUNS.append((os.path.join(ROOT, "tests/data/check/narrow_tail.dynamo18.onnx"), ["--dim", "seq=2.."], {"seq": 2}))


def sizes(bin_):
    import onnx
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    checked = confirmed = smallest = 0
    for path, extra, lows in RUNS:
        rel = os.path.relpath(path, ROOT)
        rows = rows_of(bin_, rel, extra)
        m = onnx.load(path)
        for row in rows:
            if row["verdict"] != "mismatch":
                continue
            checked += 1
            at = row.get("wrong_at")
            mdim = re.match(r"dim (\d+):", row.get("detail", ""))
            if not at or not mdim:
                fail(f"{rel} {row['path']}: mismatch without sizes: {row.get('detail')}")
                continue
            axis = int(mdim.group(1))
            node = next(n for n in m.graph.node if n.name == row["node"] or (not n.name and f"({n.output[0]})" == row["node"]))
            out = node.output[0]
            vi, declared, text = declared_at(m, out, axis, at)
            elem = vi.type.tensor_type.elem_type
            actual, err = ort_dim(path, out, elem, axis, at)
            if err:
                fail(f"{rel} {row['path']} at {at}: ONNX Runtime does not run it: {err}")
                continue
            ok = actual != declared
            confirmed += ok
            # Every binding check tries before this one: right there, or the model does not run.
            before = smaller(at, lows)
            wrong_before = []
            for b in before:
                a2, e2 = ort_dim(path, out, elem, axis, b)
                if e2 is None and a2 != declared_at(m, out, axis, b)[1]:
                    wrong_before.append(b)
            smallest += not wrong_before
            print(f"{rel} {' '.join(extra)} {row['path']} dim {axis} at {at}: declared {text} = {declared}, "
                  f"ONNX Runtime gives {actual}: {'wrong, confirmed' if ok else 'NOT wrong'}; "
                  f"{len(before)} smaller binding(s) right or not run{'' if not wrong_before else ', WRONG at ' + str(wrong_before)}")
            if not ok:
                fail(f"{rel} {row['path']}: declared {declared} is right at {at}")
            if wrong_before:
                fail(f"{rel} {row['path']}: not the smallest: also wrong at {wrong_before}")
    print(f"sizes: {checked} mismatch rows in {len(RUNS)} runs over dynamo exports, {confirmed} confirmed wrong "
          f"by ONNX Runtime, {smallest} the smallest such sizes")
    if checked == 0:
        fail("no mismatch row found")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target/debug/slice-opt"))
    ap.add_argument("--only", choices=["formats", "sizes"])
    a = ap.parse_args()
    bin_ = os.path.abspath(a.bin)
    if a.only in (None, "formats"):
        formats(bin_)
    if a.only in (None, "sizes"):
        sizes(bin_)
    print(f"check_formats_check: {len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
