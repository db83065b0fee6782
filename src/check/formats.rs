//! The check's results in the formats CI systems read: GitHub Actions workflow commands
//! (annotations), SARIF 2.1.0 (code scanning) and JUnit XML (test reports).
//!
//! Each takes the checked models ([`Checked`]: a report, or why the model could not be read)
//! and the strictness ([`FailOn`]): a row whose verdict fails at that strictness is an error
//! (annotation, SARIF `fail` result, JUnit `<failure>`); the other rows are passes or notes.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{CheckReport, CheckRow, FailOn, Verdict};

/// One checked model, as the formats take it.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The model's path, as given (a relative path stays relative: CI systems resolve it
    /// against the repository's root).
    pub path: String,
    /// The report, or why the model could not be read.
    pub report: Result<CheckReport, String>,
    /// The line of each node in the model's file, by node name, where the file is text
    /// (OpenVINO IR: the line of its `<layer>`; see [`ir_layer_lines`]). Others are at line 1.
    pub lines: BTreeMap<String, u64>,
}

impl Checked {
    fn line(&self, row: &CheckRow) -> u64 {
        self.lines.get(&row.node).copied().unwrap_or(1)
    }
}

/// The line (1-based) of each `<layer ... name="...">` of an OpenVINO IR XML text, by layer
/// name (the first layer of each name).
pub fn ir_layer_lines(xml: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (i, line) in xml.lines().enumerate() {
        let Some(at) = line.find("<layer ") else {
            continue;
        };
        let tag = &line[at..];
        let Some(n) = tag.find(" name=\"") else {
            continue;
        };
        let rest = &tag[n + 7..];
        let Some(end) = rest.find('"') else {
            continue;
        };
        let name = xml_unescape(&rest[..end]);
        out.entry(name).or_insert(i as u64 + 1);
    }
    out
}

fn xml_unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// The text of a row's problem: `declared ..., inferred ...: detail`.
fn row_text(row: &CheckRow) -> String {
    let mut s = format!(
        "{}: declared {}, inferred {}",
        row.verdict.name(),
        row.declared,
        row.inferred
    );
    if !row.detail.is_empty() {
        s = format!("{s} ({})", row.detail);
    }
    if !row.warning.is_empty() {
        s = format!("{s}; warning: {}", row.warning);
    }
    s
}

/// True for a verdict worth a note even where it does not fail (`tighter`, `unknown`).
fn noteworthy(v: Verdict) -> bool {
    !matches!(v, Verdict::Ok | Verdict::Undeclared)
}

/// GitHub's escaping of a workflow command's message (`%`, CR, LF).
pub fn github_escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// GitHub's escaping of a workflow command's property value (as data, and `:` `,`).
pub fn github_escape_property(s: &str) -> String {
    github_escape_data(s)
        .replace(':', "%3A")
        .replace(',', "%2C")
}

/// GitHub Actions workflow commands: one `::error` annotation per row that fails at
/// `fail_on`, and per model that cannot be read, on the model's file (the layer's line for
/// IR), with the node's path in the message.
pub fn github(models: &[Checked], fail_on: FailOn) -> Vec<String> {
    let mut out = Vec::new();
    for m in models {
        let file = github_escape_property(&m.path);
        match &m.report {
            Err(e) => out.push(format!(
                "::error file={file},line=1,title={}::{}",
                github_escape_property("slice-opt: unreadable model"),
                github_escape_data(&format!("{}: {e}", m.path))
            )),
            Ok(r) => {
                for row in r.rows.iter().filter(|row| row.verdict.fails(fail_on)) {
                    let title = format!("slice-opt {}: {}", row.verdict.name(), row.path);
                    let msg = format!("{}: {} ({}): {}", m.path, row.path, row.op, row_text(row));
                    out.push(format!(
                        "::error file={file},line={},title={}::{}",
                        m.line(row),
                        github_escape_property(&title),
                        github_escape_data(&msg)
                    ));
                }
            }
        }
    }
    out
}

/// The rules of the SARIF output: one per verdict, and one for a model that cannot be read.
const RULES: [(&str, &str, &str); 7] = [
    (
        "mismatch",
        "Mismatch",
        "The declared shape of a slice's output is wrong for some input size the model admits.",
    ),
    (
        "invalid",
        "Invalid",
        "The slice's parameters are invalid (the node cannot run).",
    ),
    (
        "tighter",
        "Looser declaration",
        "The model declares less than is known about the slice's output (a `?`, a fresh name or a wider interval where the dim is known).",
    ),
    (
        "unknown",
        "Unknown",
        "Not enough is known to infer the slice's output shape.",
    ),
    (
        "undeclared",
        "Undeclared",
        "The model declares no shape for the slice's output.",
    ),
    (
        "ok",
        "Ok",
        "The declared shape of the slice's output agrees with the inferred one.",
    ),
    (
        "unreadable",
        "Unreadable model",
        "The model cannot be read.",
    ),
];

/// A path as a SARIF `uri-reference`: relative paths stay relative (with `/`), absolute ones
/// become `file://` URIs; every byte outside the unreserved set and `/` is percent-encoded.
pub fn path_uri(path: &str) -> String {
    let p = path.replace('\\', "/");
    let mut enc = String::with_capacity(p.len());
    for b in p.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            enc.push(b as char);
        } else {
            enc.push_str(&format!("%{b:02X}"));
        }
    }
    if p.starts_with('/') {
        format!("file://{enc}")
    } else {
        enc
    }
}

/// The SARIF rules: one per entry of `RULES`, with its default level.
fn sarif_rules() -> Vec<Value> {
    RULES
        .iter()
        .map(|(id, name, text)| {
            let level = match *id {
                "mismatch" | "invalid" | "unreadable" => "error",
                "tighter" | "unknown" => "note",
                _ => "none",
            };
            json!({
                "id": id,
                "name": name.replace(' ', ""),
                "shortDescription": {"text": text},
                "fullDescription": {"text": text},
                "defaultConfiguration": {"level": level},
                "help": {"text": format!("{text} See `slice-opt check --help`.")},
            })
        })
        .collect()
}

/// A SARIF 2.1.0 log: one run of slice-opt, one artifact per model, one result per row (a
/// row that fails at `fail_on` is a `fail` result of level `error`; `ok` a `pass`; the others
/// `informational`, or `review` for `unknown`), rule ids per verdict kind, and one `fail`
/// result of rule `unreadable` per model that cannot be read. `exit_code` is the run's.
pub fn sarif(models: &[Checked], fail_on: FailOn, exit_code: i32) -> Value {
    let rules = sarif_rules();
    let rule_index = |id: &str| RULES.iter().position(|r| r.0 == id).unwrap_or(0);
    let mut artifacts = Vec::new();
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for (ai, m) in models.iter().enumerate() {
        let uri = path_uri(&m.path);
        artifacts.push(json!({"location": {"uri": uri}}));
        let location = |line: u64, logical: Option<(&str, &str)>| {
            let mut loc = json!({
                "physicalLocation": {
                    "artifactLocation": {"uri": uri, "index": ai},
                    "region": {"startLine": line},
                }
            });
            if let Some((fq, name)) = logical {
                loc["logicalLocations"] = json!([{"fullyQualifiedName": fq, "name": name}]);
            }
            loc
        };
        match &m.report {
            Err(e) => {
                let text = format!("{}: {e}", m.path);
                results.push(json!({
                    "ruleId": "unreadable",
                    "ruleIndex": rule_index("unreadable"),
                    "kind": "fail",
                    "level": "error",
                    "message": {"text": text},
                    "locations": [location(1, None)],
                }));
                notifications.push(json!({
                    "level": "error",
                    "message": {"text": text},
                    "locations": [location(1, None)],
                }));
            }
            Ok(r) => {
                for row in &r.rows {
                    let id = row.verdict.name();
                    let (kind, level) = if row.verdict.fails(fail_on) {
                        ("fail", "error")
                    } else if row.verdict == Verdict::Ok {
                        ("pass", "none")
                    } else if row.verdict == Verdict::Unknown {
                        ("review", "none")
                    } else {
                        ("informational", "none")
                    };
                    let mut props = json!({
                        "node": row.node,
                        "op": row.op,
                        "input": row.input,
                        "declared": row.declared,
                        "inferred": row.inferred,
                        "verdict": id,
                    });
                    if let Some(w) = &row.wrong_at {
                        props["wrong_at"] = json!(w);
                    }
                    if !row.warning.is_empty() {
                        props["warning"] = json!(row.warning);
                    }
                    if !r.assumptions.is_empty() {
                        props["assumptions"] = json!(r.assumptions);
                    }
                    results.push(json!({
                        "ruleId": id,
                        "ruleIndex": rule_index(id),
                        "kind": kind,
                        "level": level,
                        "message": {"text": format!("{} ({}): {}", row.path, row.op, row_text(row))},
                        "locations": [location(m.line(row), Some((&row.path, &row.node)))],
                        "properties": props,
                    }));
                }
            }
        }
    }
    let mut invocation = json!({
        "executionSuccessful": models.iter().all(|m| m.report.is_ok()),
        "exitCode": exit_code,
    });
    if !notifications.is_empty() {
        invocation["toolExecutionNotifications"] = Value::Array(notifications);
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "slice-opt",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "invocations": [invocation],
            "artifacts": artifacts,
            "results": results,
        }]
    })
}

/// `s` as XML character data or attribute value: markup characters as entities, line breaks
/// and tabs as character references (kept in attributes), and the characters XML 1.0 cannot
/// hold at all (other C0 controls, U+FFFE, U+FFFF) written as `\u{..}`.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// A JUnit XML report: one `<testsuite>` per model, one `<testcase>` per slice (named by the
/// node's path), a `<failure>` for each row that fails at `fail_on` (its `type` the verdict),
/// the other rows' verdicts in `<system-out>`; a model that cannot be read is a suite with one
/// `<error>` test case. Returned as lines.
pub fn junit(models: &[Checked], fail_on: FailOn) -> Vec<String> {
    let mut body = Vec::new();
    let (mut tests, mut failures, mut errors) = (0usize, 0usize, 0usize);
    for m in models {
        let path = xml_escape(&m.path);
        match &m.report {
            Err(e) => {
                tests += 1;
                errors += 1;
                body.push(format!(
                    "  <testsuite name=\"{path}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">"
                ));
                body.push(format!(
                    "    <testcase name=\"(model)\" classname=\"{path}\" file=\"{path}\">"
                ));
                body.push(format!(
                    "      <error type=\"unreadable\" message=\"{}\"/>",
                    xml_escape(e)
                ));
                body.push("    </testcase>".into());
                body.push("  </testsuite>".into());
            }
            Ok(r) => {
                let failed = r.rows.iter().filter(|x| x.verdict.fails(fail_on)).count();
                tests += r.rows.len();
                failures += failed;
                body.push(format!(
                    "  <testsuite name=\"{path}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" skipped=\"0\">",
                    r.rows.len()
                ));
                if !r.assumptions.is_empty() {
                    body.push("    <properties>".into());
                    body.push(format!(
                        "      <property name=\"assumptions\" value=\"{}\"/>",
                        xml_escape(&r.assumptions.join("; "))
                    ));
                    body.push("    </properties>".into());
                }
                for row in &r.rows {
                    body.push(format!(
                        "    <testcase name=\"{}\" classname=\"{path}\" file=\"{path}\" line=\"{}\">",
                        xml_escape(&row.path),
                        m.line(row)
                    ));
                    let text = xml_escape(&format!("{} ({}): {}", row.path, row.op, row_text(row)));
                    if row.verdict.fails(fail_on) {
                        body.push(format!(
                            "      <failure type=\"{}\" message=\"{text}\">input {}</failure>",
                            row.verdict.name(),
                            xml_escape(&row.input)
                        ));
                    } else if noteworthy(row.verdict) || !row.warning.is_empty() {
                        body.push(format!("      <system-out>{text}</system-out>"));
                    }
                    body.push("    </testcase>".into());
                }
                body.push("  </testsuite>".into());
            }
        }
    }
    let mut out = vec![
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>".to_string(),
        format!(
            "<testsuites name=\"slice-opt check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\">"
        ),
    ];
    out.extend(body);
    out.push("</testsuites>".into());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_escapes_as_documented() {
        // GitHub's toolkit (`@actions/core` command.ts): escapeData `%` `\r` `\n`; escapeProperty
        // also `:` `,`.
        assert_eq!(github_escape_data("a%b\r\nc:d,e"), "a%25b%0D%0Ac:d,e");
        assert_eq!(
            github_escape_property("a%b\r\nc:d,e"),
            "a%25b%0D%0Ac%3Ad%2Ce"
        );
    }

    #[test]
    fn layer_lines_are_found() {
        let xml = "<net>\n<layers>\n<layer id=\"0\" name=\"a&amp;b\" type=\"Parameter\">\n</layer>\n<layer id=\"1\" name=\"s\" type=\"StridedSlice\" version=\"opset1\">\n";
        let l = ir_layer_lines(xml);
        assert_eq!(l.get("a&b"), Some(&3));
        assert_eq!(l.get("s"), Some(&5));
    }

    #[test]
    fn uris_are_encoded() {
        assert_eq!(path_uri("models/a b.onnx"), "models/a%20b.onnx");
        assert_eq!(path_uri("/tmp/x#.onnx"), "file:///tmp/x%23.onnx");
    }

    #[test]
    fn xml_text_holds_no_forbidden_character() {
        assert_eq!(
            xml_escape("a<\u{1}>\n\"'&"),
            "a&lt;\\u{1}&gt;&#10;&quot;&apos;&amp;"
        );
    }
}
