"""``python -m slice_opt``: the command line of the ``slice-opt`` binary, through the Python
package (no tract: ``--verify`` runs in ONNX Runtime).

    python -m slice_opt INPUT -o OUTPUT [--passes LIST] [--fold-limit 16M] [--report FILE.json]
                        [--verify] [--dim NAME=SIZE|LO..HI]... [--input-shape INPUT=D1,...]...
                        [--assume FACT]... [-q|-v]
    python -m slice_opt check MODEL [--format table|json] [--dim ...] [--assume ...]
    python -m slice_opt info MODEL [--format table|json] [--dim ...] [--assume ...]

Exit codes as the binary: 0 success, 1 a pass, check or verification failed, 2 the input could
not be read (or the output could not be written).
"""

import argparse
import json
import sys
from typing import List, Optional

import slice_opt
from slice_opt import Error, InputError


def _size(s: str) -> int:
    s = s.strip()
    mul = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper(), 1)
    num = s[:-1] if mul != 1 else s
    try:
        return int(num) * mul
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{s}' is not a size (e.g. 4096, 16M, 1G)")


def _table(rows: List[List[str]]) -> str:
    widths = [max(len(r[c]) for r in rows if c < len(r)) for c in range(max(map(len, rows)))]
    return "\n".join(
        "  ".join(s if c + 1 == len(r) else s.ljust(widths[c]) for c, s in enumerate(r)).rstrip()
        for r in rows
    )


def _add_assumptions(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=SIZE|LO..HI",
        help="fix or bound a symbolic dim of the inputs (for check and info: bounds only)",
    )
    p.add_argument("--assume", action="append", default=[], metavar="FACT")


def _check(model: str, fmt: str, assumptions: List[str], dims: List[str]) -> int:
    rows = slice_opt.check(model, assumptions=assumptions, dims=dims)
    if fmt == "json":
        settings = slice_opt._settings(assumptions, dims)
        print(json.dumps(json.loads(slice_opt._native.check(model, None, settings)), indent=2))
    else:
        table = [["node", "op", "declared", "inferred", "verdict"]]
        for r in rows:
            v = r["verdict"] if r["verdict"] in ("ok", "undeclared") else f"{r['verdict']}: {r.get('detail', '')}"
            table.append([r["node"], r["op"], r["declared"], r["inferred"], v])
        print(_table(table))
        bad = sum(r["verdict"] in ("mismatch", "invalid") for r in rows)
        print(f"{model}: {len(rows)} slice node(s), {bad} problem(s)")
    return 1 if any(r["verdict"] in ("mismatch", "invalid") for r in rows) else 0


def _info(model: str, fmt: str, assumptions: List[str], dims: List[str]) -> int:
    i = slice_opt.info(model, assumptions=assumptions, dims=dims)
    if fmt == "json":
        print(json.dumps(i, indent=2))
        return 0
    print(f"{i['model']} ({i['format']})")
    print("opsets: " + ", ".join(f"{d} {v}" for d, v in i["opsets"].items()))
    print(f"{i['nodes']} nodes: " + ", ".join(f"{o} {n}" for o, n in i["ops"].items()))
    if not i["slices"]:
        print("no slice nodes")
    else:
        print(_table([["node", "op", "spec"]] + [[s["node"], s["op"], s["spec"]] for s in i["slices"]]))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in ("check", "info"):
            p = argparse.ArgumentParser(prog=f"python -m slice_opt {argv[0]}")
            p.add_argument("model")
            p.add_argument("--format", choices=["table", "json"], default="table")
            _add_assumptions(p)
            a = p.parse_args(argv[1:])
            return (_check if argv[0] == "check" else _info)(a.model, a.format, a.assume, a.dim)
        p = argparse.ArgumentParser(prog="python -m slice_opt", description=__doc__.split("\n\n")[0])
        p.add_argument("input")
        p.add_argument("-o", "--output", required=True)
        p.add_argument("--passes", default="infer,fold,cleanup")
        p.add_argument("--fold-limit", type=_size, default=slice_opt.DEFAULT_FOLD_LIMIT)
        p.add_argument("--report", metavar="FILE.json")
        p.add_argument("--verify", action="store_true")
        _add_assumptions(p)
        p.add_argument(
            "--input-shape",
            action="append",
            default=[],
            metavar="INPUT=D1,D2,...",
            help="the whole shape of one input (each dim a size, a name, ? or lo..hi)",
        )
        g = p.add_mutually_exclusive_group()
        g.add_argument("-q", "--quiet", action="store_true")
        g.add_argument("-v", "--verbose", action="store_true")
        a = p.parse_args(argv)
        _, report = slice_opt.optimize(
            a.input,
            passes=a.passes,
            fold_limit=a.fold_limit,
            verify="onnxruntime" if a.verify else False,
            output=a.output,
            assumptions=a.assume,
            dims=a.dim,
            input_shapes=a.input_shape,
        )
        if a.report:
            with open(a.report, "w") as f:
                json.dump(report.raw, f, indent=2)
        if not a.quiet:
            lines = [f"{a.input} -> {a.output}"]
            for pr in report.passes:
                lines.append(
                    f"  {pr.name:8} {len(pr.changes)} change(s), {len(pr.skipped)} skipped  {pr.seconds:.3f}s"
                )
                if a.verbose:
                    for c in pr.changes:
                        lines.append(f"      {c['node']} ({c['op']}) {c['what']}")
            if report.verification:
                lines.append(f"  verify   {report.verification}")
            lines.append(report.table())
            print("\n".join(lines), file=sys.stderr)
        return 0
    except InputError as e:
        print(f"slice-opt: error: {e}", file=sys.stderr)
        return 2
    except Error as e:
        print(f"slice-opt: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
