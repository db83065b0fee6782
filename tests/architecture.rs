//! Layer: the source tree (imports between the modules of `src/`).
//!
//! The layer rules of `ARCHITECTURE.md`, checked on the source: reads every `src/**/*.rs`, collects
//! what each file imports from the crate (`crate::…` and `super::…` paths, in `use` statements and
//! inline) and fails on any import that breaks a rule. Plain std, no parser: comments and string
//! literals are blanked before paths are read, so a path in a doc comment is not an import.
//!
//! The rules:
//! - **layers**: every top-level module has a floor ([`FLOORS`]); a file imports only from its
//!   own module or from a floor below. This says "`semantics` imports nothing of the crate",
//!   "`ir` knows no file format", "`formats` never imports `shape`, `passes` or `pipeline`",
//!   "passes never call the pipeline", and that no arrow runs back up;
//! - **circles**: no circle of imports between top-level modules (nor between two modules of
//!   one floor);
//! - **formats apart**: `formats/onnx` and `formats/openvino` never import each other;
//! - **slice op types**: the op-type strings `"StridedSlice"` and `"Slice"` appear only in
//!   `shape/slice_node.rs` (in-file `#[cfg(test)]` modules and `tests.rs` test modules, which
//!   build fixtures, excepted);
//! - **fold rows**: the table of ops `fold` evaluates is written only in the family files of
//!   `ops/eval/` (each declares its rows, `row("Op", …)` / `OpEntry { … }`, beside their
//!   functions), and the op names of those rows appear as string literals neither in
//!   `passes/fold.rs` nor in `ops/registry.rs`: a new op's fold is one file.
//!
//! [`ALLOWED`] lists known breaks, each as `(file, what)`; it is empty, and a break that gets
//! in fails this test with the file, line and rule. Issue 41 (the house).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// Top-level modules by floor, bottom first. A file may import its own top-level module and
/// any module on a lower floor.
const FLOORS: &[&[&str]] = &[
    &["semantics"],
    &["ir"],
    &["ops"],
    &["error"],
    &["formats"],
    &["shape"],
    &["summary"],
    &["report"],
    &["passes"],
    &["subgraph"],
    &["pipeline"],
    &["check", "verify"],
    &["run"],
    &["lib", "main", "cli"],
];

/// Known breaks: `(file under src/, the violation's `what`)`. It started with the 22 breaks of
/// 7dea807 and is empty since the house moves of issue 41; an entry added here needs a reason.
const ALLOWED: &[(&str, &str)] = &[];

/// The one file that may name slice op types.
const SLICE_NODE: &str = "shape/slice_node.rs";

/// Where the fold table's rows are written (the family files).
const EVAL_DIR: &str = "ops/eval/";

/// The files that look ops up in the fold table: they never spell an op name of it.
const FOLD_LOOKUP: &[&str] = &["passes/fold.rs", "ops/registry.rs"];

/// The op names of the fold rows in `src` (`row("Name", …)`, on one line or more), read from
/// the raw source.
fn row_names(src: &str) -> Vec<String> {
    src.match_indices("row(")
        .filter(|(at, _)| !src[..*at].ends_with("fn ") && !src[..*at].ends_with("::"))
        .filter_map(|(at, m)| {
            let rest = src[at + m.len()..].trim_start().strip_prefix('"')?;
            rest.find('"').map(|end| rest[..end].to_string())
        })
        .collect()
}

/// Lines of blanked `code` that write a fold row: a call `row(` (not the `fn row(` that
/// defines it) or an `OpEntry { … }` literal naming an op (a string literal inside: not the
/// struct, nor the body of `row` building one from its arguments).
fn row_lines(code: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for (pat, not_after) in [("row(", "fn "), ("OpEntry {", "struct ")] {
        for (at, _) in code.match_indices(pat) {
            let before = &code[..at];
            if before.chars().next_back().is_some_and(ident_char) || before.ends_with(not_after) {
                continue;
            }
            if pat.ends_with('{') {
                let mut depth = 0;
                let end = code[at..]
                    .char_indices()
                    .find(|&(_, c)| {
                        depth += match c {
                            '{' => 1,
                            '}' => -1,
                            _ => 0,
                        };
                        c == '}' && depth == 0
                    })
                    .map_or(code.len(), |(end, _)| at + end);
                if !code[at..end].contains('"') {
                    continue;
                }
            }
            out.push(line_of(code, at));
        }
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Violation {
    file: String,
    line: usize,
    rule: &'static str,
    /// What was found (a path, an arrow or a string), the key [`ALLOWED`] matches.
    what: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "src/{}:{}: [{}] {}",
            self.file, self.line, self.rule, self.what
        )
    }
}

/// One crate import: the top-level module it reaches (`formats`), its second segment when
/// there is one (`onnx`), the line, and the path as written.
#[derive(Debug, Clone)]
struct Import {
    top: String,
    sub: Option<String>,
    line: usize,
    path: String,
}

/// Blanks comments and the contents of string and char literals (keeping newlines so line
/// numbers hold). Returns the blanked code and the string literals with their lines.
fn blank(src: &str) -> (String, Vec<(usize, String)>) {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut strings = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let keep_newlines = |s: &[char], out: &mut String| {
        for &c in s {
            out.push(if c == '\n' { '\n' } else { ' ' });
        }
    };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let start = i;
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            let i_end = i.min(b.len());
            line += b[start..i_end].iter().filter(|&&c| c == '\n').count();
            keep_newlines(&b[start..i_end], &mut out);
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_char(prev(&b, i)) {
            // Raw string r"…" / r#"…"#.
            let start = i;
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            let body_start = j;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    break;
                }
                j += 1;
            }
            strings.push((line, b[body_start..j.min(b.len())].iter().collect()));
            let end = (j + 1 + hashes).min(b.len());
            line += b[start..end].iter().filter(|&&c| c == '\n').count();
            keep_newlines(&b[start..end], &mut out);
            i = end;
        } else if c == '"' {
            let start = i;
            let mut j = i + 1;
            while j < b.len() && b[j] != '"' {
                if b[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            strings.push((line, b[start + 1..j.min(b.len())].iter().collect()));
            let end = (j + 1).min(b.len());
            line += b[start..end].iter().filter(|&&c| c == '\n').count();
            out.push('"');
            keep_newlines(
                &b[start + 1..end.saturating_sub(1).max(start + 1)],
                &mut out,
            );
            out.push('"');
            i = end;
        } else if c == '\'' && is_char_literal(&b, i) {
            let mut j = i + 1;
            if b.get(j) == Some(&'\\') {
                j += 2;
            }
            while j < b.len() && b[j] != '\'' {
                j += 1;
            }
            let end = (j + 1).min(b.len());
            keep_newlines(&b[i..end], &mut out);
            i = end;
        } else {
            if c == '\n' {
                line += 1;
            }
            out.push(c);
            i += 1;
        }
    }
    (out, strings)
}

fn prev(b: &[char], i: usize) -> char {
    if i == 0 {
        ' '
    } else {
        b[i - 1]
    }
}

fn ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `'x'` or `'\n'` (a char literal), not a lifetime `'a`.
fn is_char_literal(b: &[char], i: usize) -> bool {
    matches!(
        (b.get(i + 1), b.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// Line ranges (1-based, inclusive) of items under `#[cfg(test)]` in blanked code.
fn test_ranges(code: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = code[from..].find("#[cfg(test)]") {
        let at = from + k;
        let Some(open) = code[at..].find('{').map(|o| at + o) else {
            break;
        };
        // An item without a body (`#[cfg(test)] use …;`) ends at its `;`.
        if let Some(semi) = code[at..].find(';').map(|s| at + s) {
            if semi < open {
                from = semi + 1;
                continue;
            }
        }
        let mut depth = 0;
        let mut end = code.len();
        for (j, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + j;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((line_of(code, at), line_of(code, end)));
        from = end.max(at + 1);
    }
    out
}

/// True for a module's tests in a file of their own (`foo/tests.rs`, declared by
/// `#[cfg(test)] mod tests;`): test code throughout.
fn is_test_module(file: &str) -> bool {
    file == "tests.rs" || file.ends_with("/tests.rs")
}

fn line_of(s: &str, byte: usize) -> usize {
    s[..byte].matches('\n').count() + 1
}

/// The module path of a file: `shape/slice.rs` -> `[shape, slice]`, `shape/mod.rs` ->
/// `[shape]`, `lib.rs` -> `[]`.
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if parts.last().map(String::as_str) == Some("mod") {
        parts.pop();
    }
    if matches!(parts.as_slice(), [one] if one == "lib" || one == "main") {
        parts.clear();
    }
    parts
}

/// The crate imports of one file (`file` relative to `src/`, `code` blanked).
fn imports(file: &str, code: &str) -> Vec<Import> {
    let module = module_of(file);
    // Inline modules (`mod tests {`) open a level that `super::` climbs out of.
    let chars: Vec<(usize, char)> = code.char_indices().collect();
    let mut inline: Vec<(String, i32)> = Vec::new();
    let mut depth = 0i32;
    let mut out = Vec::new();
    let mut k = 0;
    while k < chars.len() {
        let (at, c) = chars[k];
        let before = if at == 0 {
            ' '
        } else {
            code[..at].chars().next_back().unwrap_or(' ')
        };
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                while inline.last().is_some_and(|(_, d)| *d > depth) {
                    inline.pop();
                }
            }
            _ => {}
        }
        let rest = &code[at..];
        if !ident_char(before) && before != '$' && before != ':' {
            if let Some(after) = rest.strip_prefix("mod ") {
                let name: String = after
                    .trim_start()
                    .chars()
                    .take_while(|&c| ident_char(c))
                    .collect();
                let tail = after.trim_start()[name.len()..].trim_start();
                if !name.is_empty() && tail.starts_with('{') {
                    inline.push((name, depth + 1));
                }
            }
            let mut base: Option<Vec<String>> = None;
            let mut tail = rest;
            if let Some(t) = rest.strip_prefix("crate::") {
                base = Some(Vec::new());
                tail = t;
            } else if rest.starts_with("super::") {
                let mut m: Vec<String> = module.clone();
                m.extend(inline.iter().map(|(n, _)| n.clone()));
                while let Some(t) = tail.strip_prefix("super::") {
                    m.pop();
                    tail = t;
                }
                base = Some(m);
            }
            if let Some(base) = base {
                let line = line_of(code, at);
                let consumed = rest.len() - tail.len();
                let mut heads: Vec<String> = Vec::new();
                if tail.starts_with('{') {
                    // `crate::{a::b, c}`: the first segment of each entry of the group.
                    let mut d = 0;
                    let mut entry = String::new();
                    for ch in tail.chars() {
                        match ch {
                            '{' => {
                                d += 1;
                                if d == 1 {
                                    continue;
                                }
                            }
                            '}' => {
                                d -= 1;
                                if d == 0 {
                                    heads.push(std::mem::take(&mut entry));
                                    break;
                                }
                            }
                            ',' if d == 1 => {
                                heads.push(std::mem::take(&mut entry));
                                continue;
                            }
                            _ => {}
                        }
                        entry.push(ch);
                    }
                } else {
                    heads.push(
                        tail.chars()
                            .take_while(|&c| ident_char(c) || c == ':')
                            .collect(),
                    );
                }
                for h in heads {
                    let h: String = h.split_whitespace().collect();
                    let mut full = base.clone();
                    full.extend(
                        h.split("::")
                            .filter(|s| !s.is_empty() && *s != "self")
                            .map(|s| s.trim_matches(|c: char| !ident_char(c)).to_string())
                            .filter(|s| !s.is_empty() && s != "*"),
                    );
                    if full.is_empty() {
                        continue;
                    }
                    // `crate::Result` and the like: items of the crate root, not a module.
                    let top = full[0].clone();
                    if top.chars().next().is_some_and(char::is_uppercase) {
                        continue;
                    }
                    out.push(Import {
                        top,
                        sub: full.get(1).cloned(),
                        line,
                        path: format!("{}{}", &rest[..consumed], h),
                    });
                }
            }
        }
        k += 1;
    }
    out
}

fn floor(module: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&module))
}

/// The violations of `files` (`(path under src/, source)`).
fn check(files: &[(String, String)]) -> Vec<Violation> {
    let mut out = Vec::new();
    // Arrows between top-level modules, with one place each is made.
    let mut arrows: BTreeMap<(String, String), (String, usize)> = BTreeMap::new();
    let fold_ops: BTreeSet<String> = files
        .iter()
        .filter(|(f, _)| f.starts_with(EVAL_DIR))
        .flat_map(|(_, src)| row_names(src))
        .collect();
    for (file, src) in files {
        let (code, strings) = blank(src);
        let module = module_of(file);
        let own = module
            .first()
            .cloned()
            .unwrap_or_else(|| file.trim_end_matches(".rs").to_string());
        for imp in imports(file, &code) {
            if imp.top == own {
                let sub_of = |name: &str| module.get(1).map(String::as_str) == Some(name);
                if own == "formats" {
                    for (a, b) in [("onnx", "openvino"), ("openvino", "onnx")] {
                        if sub_of(a) && imp.sub.as_deref() == Some(b) {
                            out.push(Violation {
                                file: file.clone(),
                                line: imp.line,
                                rule: "formats apart",
                                what: format!("formats::{a} imports {}", imp.path),
                            });
                        }
                    }
                }
                continue;
            }
            arrows
                .entry((own.clone(), imp.top.clone()))
                .or_insert_with(|| (file.clone(), imp.line));
            match (floor(&own), floor(&imp.top)) {
                (Some(a), Some(b)) if b >= a => out.push(Violation {
                    file: file.clone(),
                    line: imp.line,
                    rule: "layers",
                    what: format!(
                        "{own} (floor {a}) imports {} (floor {b}): {}",
                        imp.top, imp.path
                    ),
                }),
                (None, _) | (_, None) => out.push(Violation {
                    file: file.clone(),
                    line: imp.line,
                    rule: "layers",
                    what: format!("{own} or {} has no floor in FLOORS: {}", imp.top, imp.path),
                }),
                _ => {}
            }
        }
        // A `tests.rs` is a module's in-file tests moved beside it (`#[cfg(test)] mod tests;`).
        let tests = test_ranges(&code);
        let in_tests = |line: usize| tests.iter().any(|&(a, b)| (a..=b).contains(&line));
        if !file.starts_with(EVAL_DIR) && !is_test_module(file) {
            for line in row_lines(&code).into_iter().filter(|&l| !in_tests(l)) {
                out.push(Violation {
                    file: file.clone(),
                    line,
                    rule: "fold rows",
                    what: format!("a fold row outside {EVAL_DIR}"),
                });
            }
        }
        if FOLD_LOOKUP.contains(&file.as_str()) {
            for (line, s) in &strings {
                if fold_ops.contains(s) && !in_tests(*line) {
                    out.push(Violation {
                        file: file.clone(),
                        line: *line,
                        rule: "fold rows",
                        what: format!("op name \"{s}\" of a fold row outside {EVAL_DIR}"),
                    });
                }
            }
        }
        if file != SLICE_NODE && !is_test_module(file) {
            for (line, s) in &strings {
                if (s == "StridedSlice" || s == "Slice") && !in_tests(*line) {
                    out.push(Violation {
                        file: file.clone(),
                        line: *line,
                        rule: "slice op types",
                        what: format!("\"{s}\" outside {SLICE_NODE}"),
                    });
                }
            }
        }
    }
    for cycle in circles(&arrows) {
        let first = &cycle[0];
        let (file, line) = arrows[&(first.clone(), cycle[1].clone())].clone();
        out.push(Violation {
            file,
            line,
            rule: "circles",
            what: format!("circle {}", cycle.join(" -> ")),
        });
    }
    out.sort();
    out.dedup();
    out
}

/// Each circle of `arrows`, once (from its smallest module, closed: `[a, b, a]`).
fn circles(arrows: &BTreeMap<(String, String), (String, usize)>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (a, b) in arrows.keys() {
        next.entry(a).or_default().insert(b);
    }
    let mut found = BTreeSet::new();
    for &start in next.keys() {
        // Shortest path back to `start` (breadth first), through modules not below it.
        let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
        let mut todo = std::collections::VecDeque::from([start]);
        while let Some(m) = todo.pop_front() {
            for &n in next.get(m).into_iter().flatten() {
                if n == start {
                    let mut path = vec![start.to_string()];
                    let mut at = m;
                    let mut back = vec![m];
                    while at != start {
                        at = parent[at];
                        back.push(at);
                    }
                    back.pop();
                    path.extend(back.iter().rev().map(|s| s.to_string()));
                    path.push(start.to_string());
                    if path.iter().all(|p| p.as_str() >= start) {
                        found.insert(path);
                    }
                    todo.clear();
                    break;
                }
                if n > start && !parent.contains_key(n) {
                    parent.insert(n, m);
                    todo.push_back(n);
                }
            }
        }
    }
    found.into_iter().collect()
}

fn sources(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("src/ is readable")
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            sources(&p, root, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let rel = p.strip_prefix(root).expect("under src/");
            let rel = rel.to_string_lossy().replace('\\', "/");
            out.push((
                rel,
                std::fs::read_to_string(&p).expect("a readable source file"),
            ));
        }
    }
}

#[test]
fn the_house_holds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    assert!(files.len() > 40, "read {} source files", files.len());
    // The fold rows are found where they are written (else their rule would check nothing).
    let rows: Vec<String> = files
        .iter()
        .filter(|(f, _)| f.starts_with(EVAL_DIR))
        .flat_map(|(_, src)| row_names(src))
        .collect();
    assert!(
        rows.iter().any(|r| r == "Reshape") && rows.len() > 20,
        "fold rows under src/{EVAL_DIR}: {rows:?}"
    );
    let all = check(&files);
    let (allowed, broken): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|v| ALLOWED.iter().any(|(f, w)| *f == v.file && *w == v.what));
    let stale: Vec<_> = ALLOWED
        .iter()
        .filter(|(f, w)| !allowed.iter().any(|v| v.file == *f && v.what == *w))
        .collect();
    println!("{} files, {} allowed break(s)", files.len(), allowed.len());
    for v in &allowed {
        println!("  allowed: {v}");
    }
    let mut msg = String::new();
    for v in &broken {
        msg.push_str(&format!("\n  {v}"));
    }
    for (f, w) in &stale {
        msg.push_str(&format!(
            "\n  src/{f}: allowlist entry no longer needed: {w}"
        ));
    }
    assert!(
        broken.is_empty() && stale.is_empty(),
        "{} import rule violation(s), {} stale allowlist entr(ies):{msg}",
        broken.len(),
        stale.len()
    );
}

fn one(file: &str, src: &str) -> Vec<Violation> {
    check(&[(file.to_string(), src.to_string())])
}

#[test]
fn an_upward_import_fails() {
    let v = one("ir/mod.rs", "use crate::shape::Fact;\nfn f() {}\n");
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].rule, "layers");
    assert_eq!(v[0].line, 1);
    assert!(v[0]
        .to_string()
        .contains("src/ir/mod.rs:1: [layers] ir (floor 1) imports shape"));
    // Inline paths, groups and `super::` from a file at the top of a module.
    let v = one(
        "semantics/mod.rs",
        "fn f() { let _ = crate::ir::Graph::default(); }\nuse crate::{ir, formats::Model};\nuse super::passes::x;\n",
    );
    let what: Vec<_> = v
        .iter()
        .map(|v| (v.line, v.what.split(':').next().unwrap().to_string()))
        .collect();
    assert_eq!(
        what,
        vec![
            (1, "semantics (floor 0) imports ir (floor 1)".to_string()),
            (
                2,
                "semantics (floor 0) imports formats (floor 4)".to_string()
            ),
            (2, "semantics (floor 0) imports ir (floor 1)".to_string()),
            (
                3,
                "semantics (floor 0) imports passes (floor 8)".to_string()
            ),
        ]
    );
    // A pass calling the pipeline.
    let v = one(
        "passes/infer.rs",
        "use crate::pipeline::{Change, PassReport};\n",
    );
    assert!(
        v[0].what.starts_with("passes (floor 8) imports pipeline"),
        "{v:?}"
    );
}

#[test]
fn comments_strings_and_own_module_are_not_imports() {
    let src = "//! See [`crate::pipeline`].\n/* crate::passes */\nconst S: &str = \"crate::pipeline\";\nuse crate::semantics::Dim;\nuse super::plan;\nmod tests { use super::*; }\n";
    assert!(one("semantics/resolve.rs", src).is_empty());
}

#[test]
fn a_circle_and_a_sibling_format_fail() {
    let v = check(&[
        ("check.rs".into(), "use crate::verify::x;\n".into()),
        ("verify.rs".into(), "use crate::check::y;\n".into()),
        (
            "formats/openvino/mod.rs".into(),
            "use crate::formats::onnx::map_file;\n".into(),
        ),
    ]);
    let rules: Vec<_> = v.iter().map(|v| (v.rule, v.what.clone())).collect();
    assert!(
        rules.contains(&("circles", "circle check -> verify -> check".into())),
        "{rules:?}"
    );
    assert!(
        rules.iter().any(|(r, _)| *r == "formats apart"),
        "{rules:?}"
    );
}

#[test]
fn slice_op_types_outside_slice_node_fail() {
    let src = "fn f(op: &str) -> bool { op == \"StridedSlice\" }\n#[cfg(test)]\nmod tests { const S: &str = \"Slice\"; }\n";
    let v = one("passes/lower.rs", src);
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(
        v[0].to_string(),
        "src/passes/lower.rs:1: [slice op types] \"StridedSlice\" outside shape/slice_node.rs"
    );
    assert!(one(SLICE_NODE, src).is_empty());
}

#[test]
fn fold_rows_outside_eval_fail() {
    let family = (
        "ops/eval/cast.rs".to_string(),
        "pub(crate) const OPS: &[OpEntry] = &[row(\n    \"Cast\", Onnx, f)];\n".to_string(),
    );
    assert!(check(std::slice::from_ref(&family)).is_empty());
    let registry = "pub const fn row(op: &str) -> OpEntry {\n    OpEntry { op }\n}\nconst X: &[OpEntry] = &[row(\"Neg\", Onnx, Arith, f),\n    OpEntry { op: \"Abs\" }];\nfn f() -> bool { op == \"Cast\" }\n#[cfg(test)]\nmod tests { const T: &str = \"Cast\"; }\n";
    let v = check(&[family, ("ops/registry.rs".into(), registry.into())]);
    let found: Vec<_> = v.iter().map(|v| (v.line, v.what.as_str())).collect();
    assert_eq!(
        found,
        vec![
            (4, "a fold row outside ops/eval/"),
            (5, "a fold row outside ops/eval/"),
            (6, "op name \"Cast\" of a fold row outside ops/eval/"),
        ]
    );
}
