#!/usr/bin/env python3
"""Time slice-opt against cp and its peers on the generated models; write bench/RESULTS.md.

Called by bench/run.sh (which generates the models and builds the binary first). Every run is
`/usr/bin/time -v timeout -s KILL $TIMEOUT <cmd>`: wall clock and "Maximum resident set size"
come from GNU time. Inputs are read into the page cache before a model's runs (all tools see a
warm cache); outputs are deleted and `sync`ed between runs (outside the timed region).

The tools of a model run in rounds: each round runs every tool once, one after the other (cp,
slice-opt, the peers: A B A B, as bench/pairs.py does), so each pair of tools is measured in
the same machine state. A tool's figures are medians over its rounds; its ratios to `cp` and
slice-opt's ratio to it are medians of the per-round ratios. `--also NAME=BINARY` adds another
slice-opt build to every round (a before/after comparison).
"""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

PY = sys.executable
ONNXOPT = (
    "import onnx, onnxoptimizer, sys; "
    "onnx.save(onnxoptimizer.optimize(onnx.load(sys.argv[1])), sys.argv[2])"
)
ONNX_RT = "import onnx, sys; onnx.save(onnx.load(sys.argv[1]), sys.argv[2])"
OV_RT = (
    "import openvino as ov, sys; "
    "ov.save_model(ov.Core().read_model(sys.argv[1]), sys.argv[2], compress_to_fp16=False)"
)


def files_of(path):
    return [path, path[:-4] + ".bin"] if path.endswith(".xml") else [path]


def size_of(path):
    return sum(os.path.getsize(f) for f in files_of(path) if os.path.exists(f))


def rm_outputs(path):
    for f in files_of(path):
        if os.path.exists(f):
            os.remove(f)


def run_timed(cmd, timeout):
    """(wall s, max RSS KB, status, user+sys CPU s) of one run."""
    full = ["/usr/bin/time", "-v", "timeout", "-s", "KILL", str(timeout)] + cmd
    t0 = time.perf_counter()
    p = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wall from perf_counter (GNU time's "Elapsed" has a 10 ms resolution, 0 for a small cp);
    # includes the ~1 ms of starting /usr/bin/time and timeout.
    wall = time.perf_counter() - t0
    err = p.stderr
    rss = None
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    if m:
        rss = int(m.group(1))
    cpu = 0.0
    for k in ("User", "System"):
        m = re.search(k + r" time \(seconds\): (\S+)", err)
        if m:
            cpu += float(m.group(1))
    if p.returncode == 0:
        status = "ok"
    elif p.returncode in (124, 137) or "signal 9" in err:
        status = "timeout"
    else:
        # GNU time's own lines ("Command exited with non-zero status 1", then tab-indented
        # statistics) would hide the tool's message (e.g. "No module named onnxsim").
        lines = [l for l in err.splitlines()
                 if l.strip() and not l.startswith("\t") and not l.startswith("Command ")]
        status = "failed (exit %d%s)" % (p.returncode, (": " + lines[-1][:120]) if lines else "")
    return wall, rss, status, cpu


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def measure_rounds(tools, inp, out, rounds, peer_rounds, timeout, skip=None):
    """Runs `tools` ([(name, argv, is_ours)]) in `rounds` rounds, each tool once a round in order
    (peers only in the first `peer_rounds`); a tool that fails or times out is not run again.
    `skip` maps a tool to a status that replaces its runs. Returns one row per tool: medians,
    per-round ratios to cp (`wall_cp`, `rss_cp`) and slice-opt's per-round ratio to it."""
    runs = {name: [] for name, _, _ in tools}
    status = {name: "ok" for name, _, _ in tools}
    for name, st in (skip or {}).items():
        status[name] = st
    for k in range(rounds):
        for name, cmd, ours in tools:
            if status[name] != "ok" or (not ours and k >= peer_rounds):
                runs[name].append(None)
                continue
            rm_outputs(out)
            subprocess.run(["sync"])
            wall, rss, st, cpu = run_timed(cmd, timeout)
            if st != "ok":
                status[name] = st
                runs[name].append(None)
                continue
            runs[name].append({"wall": wall, "rss": rss, "cpu": cpu, "out_bytes": size_of(out)})
            rm_outputs(out)
    rows = []
    cp = runs.get("cp", [])
    ours = runs.get("slice-opt", [])

    def ratios(a, b, key):
        return [x[key] / y[key] for x, y in zip(a, b) if x and y and x[key] and y[key]]

    for name, _, _ in tools:
        got = [r for r in runs[name] if r]
        row = {
            "tool": name,
            "status": status[name],
            "runs": len(got),
            "wall": median([r["wall"] for r in got]),
            "rss": median([r["rss"] for r in got]),
            "cpu": median([r["cpu"] for r in got]),
            "walls": [r["wall"] if r else None for r in runs[name]],
            "rsss": [r["rss"] if r else None for r in runs[name]],
            "wall_cp": median(ratios(runs[name], cp, "wall")),
            "rss_cp": median(ratios(runs[name], cp, "rss")),
            "ours_over": median(ratios(ours, runs[name], "wall")),
        }
        if got:
            row["out_bytes"] = got[-1]["out_bytes"]
            if row["status"] != "ok":
                row["status"] = "ok in %d rounds, then %s" % (len(got), row["status"])
        rows.append(row)
    return rows


def warm(path):
    for f in files_of(path):
        with open(f, "rb") as fh:
            while fh.read(1 << 24):
                pass


def version(mod):
    try:
        m = __import__(mod)
        return getattr(m, "__version__", "?")
    except Exception as e:  # noqa: BLE001
        return "not installed (%s)" % type(e).__name__


def machine_info(binary):
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "?"
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                mem = "%.1f GB" % (int(line.split()[1]) / 1e6)
    except OSError:
        pass
    rev = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
        cwd=os.path.dirname(os.path.abspath(__file__)),
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--", "src"], capture_output=True, text=True,
        cwd=os.path.dirname(os.path.abspath(__file__)),
    ).stdout.strip()
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "date (UTC)": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
        "nproc": os.cpu_count(),
        "CPU": cpu,
        "memory": mem,
        "kernel": platform.release(),
        "load average at start": " ".join("%.2f" % x for x in os.getloadavg()),
        "slice-opt": "%s%s (%s)" % (rev, " + uncommitted src changes" if dirty else "", binary),
        "rustc": rustc,
        "python": platform.python_version(),
        "onnx": version("onnx"),
        "onnxsim": version("onnxsim"),
        "onnxslim": version("onnxslim"),
        "onnxoptimizer": version("onnxoptimizer"),
        "onnxruntime": version("onnxruntime"),
        "openvino": version("openvino"),
        "numpy": version("numpy"),
    }


def tools_for(model, binary):
    if model.endswith(".xml"):
        return [
            ("cp", lambda i, o: ["sh", "-c", 'cp "$1" "$3" && cp "$2" "$4"', "sh",
                                 i, i[:-4] + ".bin", o, o[:-4] + ".bin"]),
            ("slice-opt", lambda i, o: [binary, i, "-o", o, "-q"]),
            ("openvino read_model+save_model", lambda i, o: [PY, "-c", OV_RT, i, o]),
        ]
    sim = shutil.which("onnxsim")
    slim = shutil.which("onnxslim")
    return [
        ("cp", lambda i, o: ["cp", i, o]),
        ("slice-opt", lambda i, o: [binary, i, "-o", o, "-q"]),
        ("onnxsim", lambda i, o: [sim, i, o] if sim else [PY, "-m", "onnxsim", i, o]),
        ("onnxslim", lambda i, o: [slim, i, o] if slim else [PY, "-m", "onnxslim", i, o]),
        ("onnxoptimizer", lambda i, o: [PY, "-c", ONNXOPT, i, o]),
        ("onnx.load+onnx.save", lambda i, o: [PY, "-c", ONNX_RT, i, o]),
    ]


OURS = {"cp", "slice-opt"}


def fmt(v, spec="%.2f"):
    return "—" if v is None else spec % v


def main_table(results, manifest):
    out = []
    for model, rows in results.items():
        base = model[:-5] if model.endswith(".onnx") else model[:-4]
        info = manifest.get(base, {})
        size = rows[0]["in_bytes"]
        if model.endswith(".xml"):
            desc = "%d IR layers, %d slices" % (info.get("ir_nodes", 0), info.get("ir_slices", 0))
        else:
            desc = "%d nodes, %d slices, %d initializers" % (
                info.get("nodes", 0), info.get("slices", 0), info.get("initializers", 0))
        out.append("\n### `%s` (%.1f MB; %s)\n" % (model, size / 1e6, desc))
        out.append("| tool | wall s | wall / cp | CPU s (user+sys) | peak RSS MB | RSS / file size | RSS / cp | slice-opt / tool | runs | status |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for r in rows:
            ok = r["runs"] > 0
            wall = r["wall"] if ok else None
            rss = r["rss"] / 1024 if (ok and r["rss"] is not None) else None
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |" % (
                ("**%s**" % r["tool"]) if r["tool"] == "slice-opt" else r["tool"],
                fmt(wall, "%.3f"),
                fmt(r.get("wall_cp") if ok else None, "%.2f×"),
                fmt(r.get("cpu") if ok else None, "%.2f"),
                fmt(rss, "%.0f"),
                fmt(rss * 1024 * 1024 / size if rss is not None else None, "%.2f×"),
                fmt(r.get("rss_cp") if ok else None, "%.0f×"),
                fmt(r.get("ours_over") if ok and r["tool"] not in OURS else None, "%.2f×"),
                r["runs"],
                r["status"],
            ))
    return "\n".join(out)


SERIES = {
    "nodes": ("nodes_1k", "nodes_10k", "nodes_100k"),
    # Issue 19: K slice chains, K = 1,000 .. 100,000.
    "wide": ("wide_1k", "wide_10k", "wide_100k"),
}


def scaling(binary, bench_dir, manifest, reps, timeout, series="nodes"):
    """Per-step seconds for a model series (`SERIES`): run A = default passes (load, infer, fold,
    cleanup, save), run B = `raise,lower` (every Slice raised to StridedSlice and lowered back)."""
    runs = [["infer", "fold", "cleanup"], ["raise", "lower"]]
    steps = ["load", "infer", "fold", "cleanup", "raise", "lower", "save"]
    names = [n for n in SERIES[series] if n in manifest]
    if not names:
        return "", {}
    table = {}
    for name in names:
        inp = os.path.join(bench_dir, name + ".onnx")
        out = os.path.join(bench_dir, "out_scaling.onnx")
        rep = os.path.join(bench_dir, "report.json")
        warm(inp)
        info = manifest[name]
        size = info["nodes"] + info["initializers"] + 2
        best, totals = {}, {}
        for passes in runs:
            key = ",".join(passes)
            prev = table.get(names[names.index(name) - 1]) if names.index(name) else None
            if prev and prev["totals"].get(key) is not None and isinstance(prev["totals"][key], float):
                guess = prev["totals"][key] * size / prev["size"]
                if guess > timeout:
                    totals[key] = "skipped (linear extrapolation %.0f s > timeout)" % guess
                    continue
            for _ in range(reps):
                rm_outputs(out)
                subprocess.run(["sync"])
                cmd = [binary, inp, "-o", out, "-q", "--passes", key, "--report", rep]
                wall, rss, status, _ = run_timed(cmd, timeout)
                if status != "ok":
                    totals[key] = status
                    break
                r = json.load(open(rep))
                secs = {"load": r.get("load_seconds"), "save": r.get("save_seconds")}
                for p in r["passes"]:
                    secs[p["pass"]] = secs.get(p["pass"], 0) + p["seconds"]
                for k, v in secs.items():
                    if v is not None and (k not in best or v < best[k]):
                        best[k] = v
                if not isinstance(totals.get(key), float) or wall < totals[key]:
                    totals[key] = wall
        rm_outputs(out)
        table[name] = {"best": best, "totals": totals, "size": size}
        print("  scaling %s: %s" % (name, table[name]), file=sys.stderr)
    lines = [
        "Two runs per model: `--passes infer,fold,cleanup` (the default; gives load, infer, "
        "fold, cleanup, save) and `--passes raise,lower` (every Slice raised to StridedSlice, "
        "then lowered back). Seconds from `--report` (load/save timed by the CLI), best of %d "
        "runs per step. Time per graph node in µs; graph size = ONNX nodes + initializers + "
        "graph input/output. Flat per-node time = linear." % reps,
        "",
        "| step | " + " | ".join("%s (%d nodes)" % (n, table[n]["size"]) for n in names)
        + " | largest / 1k, per node |",
        "|---|" + "---:|" * len(names) + "---:|",
    ]
    for s in steps:
        cells = []
        per = []
        for n in names:
            b = table[n]["best"]
            if b.get(s) is None:
                key = "raise,lower" if s in ("raise", "lower") else "infer,fold,cleanup"
                cells.append(str(table[n]["totals"].get(key, "—")))
                per.append(None)
                continue
            us = b[s] / table[n]["size"] * 1e6
            per.append(us)
            cells.append("%.2f µs (%.3f s)" % (us, b[s]))
        last = next((p for p in reversed(per) if p), None)
        ratio = "%.1f×" % (last / per[0]) if len(per) > 1 and per[0] and last else "—"
        lines.append("| %s | %s | %s |" % (s, " | ".join(cells), ratio))
    for key in ("infer,fold,cleanup", "raise,lower"):
        cells = []
        for n in names:
            t = table[n]["totals"].get(key)
            cells.append("%.3f s" % t if isinstance(t, float) else str(t))
        lines.append("| whole run `%s` (wall) | %s | |" % (key, " | ".join(cells)))
    return "\n".join(lines), table


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench-dir", default="/tmp/slice-opt-bench")
    ap.add_argument("--binary", required=True)
    ap.add_argument("--out", required=True, help="RESULTS.md to write")
    ap.add_argument("--reps", type=int, default=3,
                    help="rounds per model (each runs cp, slice-opt and the peers once; medians)")
    ap.add_argument("--peer-reps", type=int, default=1,
                    help="rounds in which the peers run too (the first ones)")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=BINARY",
                    help="another slice-opt binary run in every round (e.g. main's, for before/after)")
    ap.add_argument("--no-scaling", action="store_true", help="skip the per-pass scaling tables")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per run")
    ap.add_argument("--scaling", default="nodes,wide",
                    help="model series for the per-pass scaling tables (%s)" % ", ".join(SERIES))
    ap.add_argument("--models", default="nodes_1k.onnx,nodes_10k.onnx,nodes_100k.onnx,"
                    "nodes_100k.xml,big_1gb.onnx,big_1gb.xml,concat_100k.onnx")
    ap.add_argument("--skip-peers", action="store_true")
    ap.add_argument("--peers", default=None, metavar="NAME,NAME",
                    help="run only these peers (e.g. 'onnx.load+onnx.save'); default: all")
    args = ap.parse_args()

    manifest = json.load(open(os.path.join(args.bench_dir, "manifest.json")))
    also = [tuple(a.split("=", 1)) for a in args.also]
    OURS.update(name for name, _ in also)
    info = machine_info(args.binary)
    t0 = time.time()
    results = {}
    last_wall = {}
    for model in args.models.split(","):
        inp = os.path.join(args.bench_dir, model)
        if not os.path.exists(inp):
            print("skip %s: not generated" % model, file=sys.stderr)
            continue
        ext = ".xml" if model.endswith(".xml") else ".onnx"
        out = os.path.join(args.bench_dir, "out_bench" + ext)
        warm(inp)
        base = model.rsplit(".", 1)[0]
        tools, skip = [], {}
        for tool, mk in tools_for(inp, args.binary):
            if args.skip_peers and tool not in OURS:
                continue
            if args.peers is not None and tool not in OURS and tool not in args.peers.split(","):
                continue
            tools.append((tool, mk(inp, out), tool in OURS))
            if tool == "slice-opt":
                for name, b in also:
                    tools.append((name, [b, inp, "-o", out, "-q"], True))
            # A peer that already timed out (or would, extrapolating linearly from the previous
            # model of the node series) is not run again on a bigger one.
            prev = last_wall.get((tool, model.endswith(".xml")))
            guess = None
            if prev is not None and base.startswith("nodes_"):
                pw, pn = prev
                guess = None if pw is None else pw * manifest[base]["nodes"] / pn
            if base.startswith("nodes_") and prev is not None and (
                prev[0] is None or (guess or 0) > args.timeout
            ):
                why = ("previous model timed out" if prev[0] is None
                       else "linear extrapolation %.0f s > timeout" % guess)
                skip[tool] = "skipped (%s)" % why
        rows = measure_rounds(tools, inp, out, args.reps, args.peer_reps, args.timeout, skip)
        for r in rows:
            tool = r["tool"]
            if base.startswith("nodes_") and tool not in OURS and tool not in skip:
                if r["runs"]:
                    last_wall[(tool, model.endswith(".xml"))] = (r["wall"], manifest[base]["nodes"])
                elif r["status"] == "timeout":
                    last_wall[(tool, model.endswith(".xml"))] = (None, manifest[base]["nodes"])
            r["in_bytes"] = size_of(inp)
            print("%-16s %-32s %s" % (model, tool, r), file=sys.stderr)
        results[model] = rows

    print("per-pass scaling", file=sys.stderr)
    scale_md, scale = [], {}
    for series in ([] if args.no_scaling else args.scaling.split(",")):
        md_part, table = scaling(args.binary, args.bench_dir, manifest, args.reps, args.timeout,
                                 series)
        if md_part:
            scale_md.append("### `%s_*` series\n\n%s\n" % (series, md_part))
            scale.update(table)
    scale_md = "\n".join(scale_md)
    elapsed = time.time() - t0

    md = []
    md.append("# slice-opt benchmark results\n")
    md.append("Produced by `bench/run.sh` (models from `bench/gen_models.py`, see `bench/README.md`) "
              "in %.0f s. Wall time and peak RSS from `/usr/bin/time -v`; ratios are to `cp` of "
              "the same file(s) (the physical floor: read + write every byte). The page cache "
              "is warm for every tool (the input is read once before a model's runs); outputs "
              "are deleted and `sync`ed between runs, outside the timed region. %d rounds a "
              "model, each running every tool once in turn (peers in the first %d): medians, "
              "and ratios as medians of the per-round ratios; per run timeout %d s.\n"
              % (elapsed, args.reps, args.peer_reps, args.timeout))
    md.append("## Machine\n")
    md.append("| | |\n|---|---|")
    for k, v in info.items():
        md.append("| %s | %s |" % (k, v))
    md.append("\nThe machine is shared (other jobs, e.g. a fuzzer, may hold a core): treat small "
              "differences as noise.\n")
    md.append("## Whole-tool runs\n")
    md.append(main_table(results, manifest))
    md.append("\n## Per-pass scaling (slice-opt)\n")
    md.append(scale_md)
    md.append("")
    with open(args.out, "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(args.bench_dir, "results.json"), "w") as f:
        json.dump({"machine": info, "results": results, "scaling": scale}, f, indent=1)
    print("wrote %s (%.0f s)" % (args.out, elapsed), file=sys.stderr)


if __name__ == "__main__":
    main()
