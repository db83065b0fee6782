//! Layer: `check` (its CI output formats, directory mode, `--fail-on`), through the binary.
//!
//! The formats a CI reads (`--format github|sarif|junit`), their structure checked here on a model
//! with a mismatch, a looser declaration (`tighter`), an unknown and an ok row; `check DIR` with
//! one exit code; `--fail-on`; and declared dims (constants and expressions) of dynamo exports
//! judged at the sizes the model admits, with the smallest wrong sizes (issue 45: `check` in CI).
//!
//! The fixtures are `tests/data/check/` (tools/gen_check_fixtures.py) and the dynamo exports of
//! `tests/data/exports/`. Which row is which verdict follows from how each fixture was built
//! (the ONNX Slice spec gives the true sizes); every size asserted wrong here was run in ONNX
//! Runtime by tools/check_formats_check.py, which also validates the SARIF output against the
//! official 2.1.0 schema and the JUnit output with junitparser.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn slice_opt(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_slice-opt"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run slice-opt")
}

const THREE: &str = "tests/data/check/three_verdicts.onnx";

/// The node names of three_verdicts.onnx and the verdict each was built to get: `x[:, 2:5]`
/// declared [batch, 4] (3 by the Slice spec), `x[:, 1:]` declared [batch, ?] (9 is known),
/// `x[:, 1:]` along an axis only known at run time, `x[:, :3]` declared [batch, 3].
const BUILT: [(&str, &str); 4] = [
    ("wrong_declared", "mismatch"),
    ("loose_declared", "tighter"),
    ("axis_unknown", "unknown"),
    ("right_declared", "ok"),
];

fn failing(verdict: &str, fail_on: &str) -> bool {
    match verdict {
        "mismatch" | "invalid" => true,
        "tighter" => fail_on != "mismatch",
        "unknown" => fail_on == "unknown",
        _ => false,
    }
}

/// Undoes GitHub's escaping (`%25`, `%0D`, `%0A`, and `%3A`, `%2C` in properties); refuses a
/// `%` that starts no escape and a character the escaping removes.
fn gh_unescape(s: &str, property: bool) -> Result<String, String> {
    let escapes: &[&str] = if property {
        &["%25", "%0D", "%0A", "%3A", "%2C"]
    } else {
        &["%25", "%0D", "%0A"]
    };
    for (i, _) in s.match_indices('%') {
        if !escapes.iter().any(|e| s[i..].starts_with(e)) {
            return Err(format!("bad escape in {s:?}"));
        }
    }
    if s.contains(['\r', '\n']) || (property && s.contains([',', ':'])) {
        return Err(format!("unescaped character in {s:?}"));
    }
    Ok(s.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%"))
}

/// One workflow command `::cmd k=v,k=v::message`, read by the documented grammar.
fn gh_parse(line: &str) -> Result<(String, BTreeMap<String, String>, String), String> {
    let rest = line.strip_prefix("::").ok_or("no leading ::")?;
    let (head, msg) = rest.split_once("::").ok_or("no :: before the message")?;
    let (cmd, params) = head.split_once(' ').unwrap_or((head, ""));
    if !["error", "warning", "notice", "debug"].contains(&cmd) {
        return Err(format!("unknown command {cmd}"));
    }
    let mut props = BTreeMap::new();
    for kv in params.split(',').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').ok_or("a parameter without =")?;
        if !["file", "line", "endLine", "col", "endColumn", "title"].contains(&k) {
            return Err(format!("unknown parameter {k}"));
        }
        props.insert(k.to_string(), gh_unescape(v, true)?);
    }
    Ok((cmd.to_string(), props, gh_unescape(msg, false)?))
}

#[test]
fn github_one_error_annotation_per_failing_row() {
    for fail_on in ["mismatch", "looser", "unknown"] {
        let o = slice_opt(&["check", THREE, "--format", "github", "--fail-on", fail_on]);
        assert_eq!(o.status.code(), Some(1), "{fail_on}");
        let out = String::from_utf8(o.stdout).expect("utf8");
        let want: Vec<_> = BUILT.iter().filter(|(_, v)| failing(v, fail_on)).collect();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), want.len(), "{fail_on}: {out}");
        for (line, (node, verdict)) in lines.iter().zip(&want) {
            let (cmd, props, msg) = gh_parse(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(cmd, "error");
            assert_eq!(props.get("file").map(String::as_str), Some(THREE));
            assert!(props.get("line").is_some_and(|l| l.parse::<u64>().is_ok()));
            assert!(props.get("title").is_some_and(|t| t.contains(verdict)));
            assert!(
                msg.contains(THREE) && msg.contains(node) && msg.contains(verdict),
                "{msg}"
            );
        }
    }
}

#[test]
fn github_escapes_properties_and_message() {
    // A model whose path holds `,` `:` and `%`: the file property escapes them.
    let dir = tempfile::tempdir().expect("tempdir");
    let odd = dir.path().join("a,b:c%d.onnx");
    std::fs::copy(repo().join(THREE), &odd).expect("copy");
    let odd = odd.to_str().expect("utf8");
    let o = slice_opt(&["check", odd, "--format", "github"]);
    let out = String::from_utf8(o.stdout).expect("utf8");
    let line = out.lines().next().expect("one annotation");
    assert!(line.contains("%2Cb%3Ac%25d.onnx,"), "{line}");
    let (_, props, msg) = gh_parse(line).expect("grammar");
    assert_eq!(props.get("file").map(String::as_str), Some(odd));
    assert!(msg.starts_with(odd), "{msg}");
}

fn sarif(args: &[&str]) -> (Option<i32>, Value) {
    let mut a = vec!["check"];
    a.extend(args);
    a.extend(["--format", "sarif"]);
    let o = slice_opt(&a);
    let v: Value = serde_json::from_slice(&o.stdout).expect("SARIF is JSON");
    (o.status.code(), v)
}

#[test]
fn sarif_one_result_per_row_rule_per_verdict() {
    for fail_on in ["mismatch", "unknown"] {
        let (code, log) = sarif(&[THREE, "--fail-on", fail_on]);
        assert_eq!(code, Some(1));
        assert_eq!(log["version"], "2.1.0");
        let run = &log["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "slice-opt");
        let rules: Vec<&str> = run["tool"]["driver"]["rules"]
            .as_array()
            .expect("rules")
            .iter()
            .map(|r| r["id"].as_str().expect("id"))
            .collect();
        assert_eq!(run["artifacts"][0]["location"]["uri"], THREE);
        let results = run["results"].as_array().expect("results");
        assert_eq!(results.len(), BUILT.len());
        for (r, (node, verdict)) in results.iter().zip(BUILT) {
            assert_eq!(r["ruleId"], verdict, "{node}");
            let index = r["ruleIndex"].as_u64().expect("ruleIndex") as usize;
            assert_eq!(rules[index], verdict);
            let loc = &r["locations"][0];
            assert_eq!(loc["physicalLocation"]["artifactLocation"]["uri"], THREE);
            assert_eq!(loc["physicalLocation"]["artifactLocation"]["index"], 0);
            assert_eq!(loc["logicalLocations"][0]["fullyQualifiedName"], node);
            let fails = failing(verdict, fail_on);
            assert_eq!(r["kind"] == "fail", fails, "{node} {fail_on}");
            // SARIF §3.27.9: a result whose kind is not `fail` has level `none`.
            assert_eq!(r["level"], if fails { "error" } else { "none" });
            assert!(r["message"]["text"]
                .as_str()
                .is_some_and(|t| t.contains(node)));
        }
    }
}

/// Test cases of a JUnit report: (suite, case name, failure type, has an error).
fn junit_cases(xml: &str) -> Vec<(String, String, Option<String>, bool)> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(xml);
    let (mut suite, mut out) = (String::new(), Vec::new());
    let attr = |e: &quick_xml::events::BytesStart, k: &[u8]| {
        e.attributes()
            .flatten()
            .find(|a| a.key.as_ref() == k)
            .map(|a| a.unescape_value().expect("attr").into_owned())
    };
    loop {
        match r.read_event().expect("well-formed XML") {
            Event::Start(e) | Event::Empty(e) => match e.name().as_ref() {
                b"testsuite" => suite = attr(&e, b"name").expect("suite name"),
                b"testcase" => out.push((
                    suite.clone(),
                    attr(&e, b"name").expect("case name"),
                    None,
                    false,
                )),
                b"failure" => out.last_mut().expect("in a case").2 = attr(&e, b"type"),
                b"error" => out.last_mut().expect("in a case").3 = true,
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    out
}

#[test]
fn junit_one_case_per_slice_failure_per_failing_row() {
    for fail_on in ["mismatch", "looser", "unknown"] {
        let o = slice_opt(&["check", THREE, "--format", "junit", "--fail-on", fail_on]);
        assert_eq!(o.status.code(), Some(1));
        let xml = String::from_utf8(o.stdout).expect("utf8");
        let cases = junit_cases(&xml);
        assert_eq!(cases.len(), BUILT.len());
        for (c, (node, verdict)) in cases.iter().zip(BUILT) {
            assert_eq!((c.0.as_str(), c.1.as_str()), (THREE, node));
            let want = failing(verdict, fail_on).then(|| verdict.to_string());
            assert_eq!(c.2, want, "{node} {fail_on}");
        }
        let failures = BUILT.iter().filter(|(_, v)| failing(v, fail_on)).count();
        assert!(xml.contains(&format!("tests=\"4\" failures=\"{failures}\"")));
    }
}

#[test]
fn fail_on_sets_the_exit_code() {
    // last_token.onnx declares no shape for its slice (`undeclared`): it passes at every
    // strictness; three_verdicts.onnx fails at each (its mismatch).
    let code = |args: &[&str]| slice_opt(args).status.code();
    for fail_on in ["mismatch", "looser", "tighter", "unknown"] {
        let last = ["check", "models/last_token.onnx", "--fail-on", fail_on];
        assert_eq!(code(&last), Some(0), "{fail_on}");
        assert_eq!(code(&["check", THREE, "--fail-on", fail_on]), Some(1));
    }
    for (fail_on, problems) in [("mismatch", 1), ("looser", 2), ("unknown", 3)] {
        let o = slice_opt(&["check", THREE, "--fail-on", fail_on]);
        let text = String::from_utf8(o.stdout).expect("utf8");
        let want = format!("4 slice node(s), {problems} problem(s)");
        assert!(text.contains(&want), "{fail_on}: {text}");
    }
}

#[test]
fn directory_mode_one_exit_code() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::create_dir_all(d.join("sub/deeper")).expect("mkdir");
    std::fs::create_dir_all(d.join(".git")).expect("mkdir");
    // Models that pass: every fixture of models/ passes `check` (tests/cli.rs).
    std::fs::copy(
        repo().join("models/last_token.onnx"),
        d.join("sub/last_token.onnx"),
    )
    .expect("copy");
    for f in ["last_token.tf.xml", "last_token.tf.bin"] {
        std::fs::copy(repo().join("models").join(f), d.join("sub/deeper").join(f)).expect("copy");
    }
    // Not models: an XML file that is not IR, a file in a hidden folder.
    std::fs::write(d.join("pom.xml"), "<project/>\n").expect("write");
    std::fs::write(d.join(".git/x.onnx"), b"not a model").expect("write");
    let p = d.to_str().expect("utf8");
    let o = slice_opt(&["check", p, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let all: Value = serde_json::from_slice(&o.stdout).expect("json");
    let models: Vec<&str> = all
        .as_array()
        .expect("array")
        .iter()
        .map(|r| r["model"].as_str().expect("model"))
        .collect();
    assert_eq!(models.len(), 2, "{models:?}");
    assert!(models[0].ends_with("sub/deeper/last_token.tf.xml"));
    assert!(models[1].ends_with("sub/last_token.onnx"));
    // A failing model anywhere: exit 1; an unreadable one: exit 2, the others still reported.
    std::fs::copy(repo().join(THREE), d.join("sub/deeper/three.onnx")).expect("copy");
    assert_eq!(slice_opt(&["check", p]).status.code(), Some(1));
    std::fs::write(d.join("broken.onnx"), b"\x08\x07garbage").expect("write");
    let o = slice_opt(&["check", p, "--format", "junit"]);
    assert_eq!(o.status.code(), Some(2));
    let cases = junit_cases(&String::from_utf8(o.stdout).expect("utf8"));
    assert_eq!(cases.iter().filter(|c| c.3).count(), 1);
    assert!(cases.iter().any(|c| c.2.as_deref() == Some("mismatch")));
    // An empty directory is an error, not a pass.
    let empty = tempfile::tempdir().expect("tempdir");
    let o = slice_opt(&["check", empty.path().to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(2));
}

/// The mismatch rows of `check --format json` on a model: node → (dim index, wrong_at).
fn mismatches(args: &[&str]) -> BTreeMap<String, (usize, BTreeMap<String, i64>)> {
    let mut a = vec!["check"];
    a.extend(args);
    a.extend(["--format", "json"]);
    let o = slice_opt(&a);
    let r: Value = serde_json::from_slice(&o.stdout).expect("json");
    let mut out = BTreeMap::new();
    for row in r["rows"].as_array().expect("rows") {
        if row["verdict"] != "mismatch" {
            continue;
        }
        let detail = row["detail"].as_str().expect("detail");
        let dim = detail
            .strip_prefix("dim ")
            .and_then(|s| s.split(':').next())
            .and_then(|s| s.parse().ok())
            .expect("dim index");
        let at: BTreeMap<String, i64> =
            serde_json::from_value(row["wrong_at"].clone()).expect("wrong_at");
        assert!(detail.contains("wrong at"), "{detail}");
        out.insert(row["node"].as_str().expect("node").to_string(), (dim, at));
    }
    out
}

fn at(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[test]
fn a_declared_constant_wrong_at_small_sizes_is_a_mismatch() {
    // dynamo declares `2` for narrow(x, 1, 1, 2) (x[:, 1:3]: 2 only from seq = 3 on) and for
    // x[:, -2:] (2 only from seq = 2 on). Dims are sizes from 0 on: both are wrong at 0.
    let m = mismatches(&["tests/data/check/narrow_tail.dynamo18.onnx"]);
    assert_eq!(m.len(), 2, "{m:?}");
    assert_eq!(m["node_slice_1"], (1, at(&[("seq", 0)])));
    assert_eq!(m["node_slice_2"], (1, at(&[("seq", 0)])));
    // Sizes from 2 on (what torch.export assumed): narrow is wrong at 2, the tail is right.
    let m = mismatches(&[
        "tests/data/check/narrow_tail.dynamo18.onnx",
        "--dim",
        "seq=2..",
    ]);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m["node_slice_1"], (1, at(&[("seq", 2)])));
}

#[test]
fn python_syntax_dims_are_expressions_and_sizes_a_conv_refuses_are_skipped() {
    // `((height//8))*((width//8))` is read as an expression (ok, not `tighter`); `3` for
    // h[:, -3:] of (height//8)*(width//8) + 1 rows is wrong where that is 1 or 2. Below 8 the
    // 8x8 stride-8 Conv does not run (ONNX Runtime: "Invalid input shape"), so the smallest
    // wrong sizes the model admits are 8 x 8 (2 rows).
    let o = slice_opt(&[
        "check",
        "tests/data/check/patches.dynamo18.onnx",
        "--format",
        "json",
    ]);
    let r: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(
        r["rows"][0]["declared"],
        "[2, ((height//8))*((width//8)), 4]"
    );
    assert_eq!(r["rows"][0]["verdict"], "ok");
    let m = mismatches(&["tests/data/check/patches.dynamo18.onnx"]);
    assert_eq!(m["node_slice_2"], (1, at(&[("height", 8), ("width", 8)])));
}

#[test]
fn dynamo_exports_declared_dims_wrong_at_admitted_sizes() {
    let e = |f: &str| format!("tests/data/exports/{f}.dynamo18.onnx");
    // GPT-2's bias[:, :, total - seq:total, :total] is `seq` rows only when seq <= total.
    let m = mismatches(&[&e("pat_gpt2_causal_mask")]);
    assert_eq!(m["node_slice_1"], (2, at(&[("seq", 1), ("total", 0)])));
    assert_eq!(m["node_slice_2"], (2, at(&[("seq", 1), ("total", 0)])));
    // cache[:, :, -seq:] (static cache) and position_bias[:, :, -seq:, :] (T5) take every row
    // at seq = 0 (`-0:` is `0:`), not none.
    let m = mismatches(&[&e("pat_static_cache")]);
    assert_eq!(m["node_slice_6"], (2, at(&[("seq", 0), ("total", 1)])));
    let m = mismatches(&[&e("pat_t5_position_bias")]);
    assert_eq!(m["node_slice_3"], (2, at(&[("past", 1), ("seq", 0)])));
    // Under `--dim seq=1..` the -seq: slices are right.
    let m = mismatches(&[&e("pat_t5_position_bias"), "--dim", "seq=1.."]);
    assert!(m.is_empty(), "{m:?}");
}

#[test]
fn ir_annotations_point_at_the_layer_line() {
    // last_token.tf.xml with the StridedSlice's output port edited from [-1, 16] to [-1, 17].
    let dir = tempfile::tempdir().expect("tempdir");
    let xml = std::fs::read_to_string(repo().join("models/last_token.tf.xml")).expect("read");
    let at = xml
        .find("names=\"strided_slice:0\"")
        .expect("the slice's output port");
    let dim = at + xml[at..].find("<dim>16</dim>").expect("dim 16");
    let edited = format!(
        "{}<dim>17</dim>{}",
        &xml[..dim],
        &xml[dim + "<dim>16</dim>".len()..]
    );
    std::fs::write(dir.path().join("m.xml"), &edited).expect("write");
    std::fs::copy(
        repo().join("models/last_token.tf.bin"),
        dir.path().join("m.bin"),
    )
    .expect("copy");
    // The line of `<layer ... name="strided_slice"`, counted here.
    let layer = edited
        .lines()
        .position(|l| l.contains("<layer ") && l.contains("name=\"strided_slice\""))
        .expect("the layer")
        + 1;
    let m = dir.path().join("m.xml");
    let m = m.to_str().expect("utf8");
    let o = slice_opt(&["check", m, "--format", "github"]);
    let out = String::from_utf8(o.stdout).expect("utf8");
    let (_, props, _) = gh_parse(out.lines().next().expect("one line")).expect("grammar");
    assert_eq!(props.get("line"), Some(&layer.to_string()));
    let (_, log) = sarif(&[m]);
    let region = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
    assert_eq!(region["startLine"], layer as u64);
}

#[test]
fn several_paths_as_a_pre_commit_hook_passes_them() {
    // A changed `.xml` that is not IR is skipped among several paths; the models are checked
    // together with one exit code.
    let dir = tempfile::tempdir().expect("tempdir");
    let pom = dir.path().join("pom.xml");
    std::fs::write(&pom, "<project/>\n").expect("write");
    let pom = pom.to_str().expect("utf8");
    let ok = [
        "check",
        "models/last_token.onnx",
        pom,
        "models/last_token.tf.xml",
    ];
    assert_eq!(slice_opt(&ok).status.code(), Some(0));
    let bad = ["check", "models/last_token.onnx", pom, THREE];
    assert_eq!(slice_opt(&bad).status.code(), Some(1));
}
