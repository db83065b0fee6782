#!/usr/bin/env python3
"""The longest functions and the files over a line limit in a Rust source tree.

    python3 tools/long_fns.py [--top N] [--over LINES] [--file-limit LINES] [DIR|FILE ...]

Lists the N longest functions (default 10; lines from the `fn` line to its closing brace,
doc comments not counted) as `lines  path:line  name`, then every function over `--over`
lines (default 120) if there are more than N, then every file over `--file-limit` lines
(default 800). DIR defaults to `src`. Exits 0 whatever it finds (a report, not a gate).

Braces are counted outside comments, string literals (plain, byte and raw) and char
literals; lifetimes (`'a`) are not char literals. Nested functions and closures count in
their enclosing function, and a nested `fn` is also listed on its own.
Standard library only.
"""

import argparse
import os
import re
import sys

FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?"
                r"(?:extern\s+\"[^\"]*\"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")


def code_chars(text):
    """Yields (index, char) for the characters of `text` outside comments and literals."""
    i, n = 0, len(text)
    depth = 0  # block comment nesting
    while i < n:
        c = text[i]
        if depth:
            if text.startswith("/*", i):
                depth += 1
                i += 2
            elif text.startswith("*/", i):
                depth -= 1
                i += 2
            else:
                i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            depth = 1
            i += 2
            continue
        m = re.match(r'b?r(#*)"', text[i:i + 260])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            i = n if j < 0 else j + len(end)
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "'":
            # A char literal ('x', '\n', '\u{..}'), or a lifetime / label ('a).
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:i + 12])
            if m:
                i += m.end()
                continue
        yield i, c
        i += 1


def functions(path):
    text = open(path, encoding="utf-8").read()
    line_starts = [0]
    for k, ch in enumerate(text):
        if ch == "\n":
            line_starts.append(k + 1)

    def line_of(pos):
        lo, hi = 0, len(line_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if line_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    starts = {}
    for k, line in enumerate(text.split("\n")):
        m = FN.match(line)
        if m:
            starts[line_starts[k] + m.start(1)] = (k + 1, m.group(1))
    out = []
    pending = []  # functions whose body has not opened: (line, name)
    stack = []  # open braces: (line, name) for a function body, None otherwise
    fn_positions = sorted(starts)
    p = 0
    for pos, c in code_chars(text):
        while p < len(fn_positions) and fn_positions[p] <= pos:
            pending.append(starts[fn_positions[p]])
            p += 1
        if c == ";" and pending:
            # A declaration without a body (trait method, extern fn).
            pending.pop()
        elif c == "{":
            stack.append(pending.pop() if pending else None)
        elif c == "}" and stack:
            top = stack.pop()
            if top:
                line, name = top
                out.append((line_of(pos) - line + 1, path, line, name))
    return out, len(line_starts) - (1 if text.endswith("\n") else 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="*", default=["src"])
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--over", type=int, default=120)
    ap.add_argument("--file-limit", type=int, default=800)
    a = ap.parse_args()
    fns, files = [], []
    for d in a.dirs:
        if os.path.isfile(d):
            f, lines = functions(d)
            fns.extend(f)
            files.append((lines, d))
            continue
        for root, _, names in os.walk(d):
            for name in sorted(names):
                if name.endswith(".rs"):
                    path = os.path.join(root, name)
                    f, lines = functions(path)
                    fns.extend(f)
                    files.append((lines, path))
    fns.sort(key=lambda f: (-f[0], f[1], f[2]))
    print(f"longest {a.top} functions:")
    for n, path, line, name in fns[:a.top]:
        print(f"{n:6}  {path}:{line}  {name}")
    over = [f for f in fns if f[0] > a.over]
    print(f"\n{len(over)} functions over {a.over} lines")
    if len(over) > a.top:
        for n, path, line, name in over[a.top:]:
            print(f"{n:6}  {path}:{line}  {name}")
    big = sorted((f for f in files if f[0] > a.file_limit), reverse=True)
    print(f"\n{len(big)} files over {a.file_limit} lines")
    for n, path in big:
        print(f"{n:6}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
