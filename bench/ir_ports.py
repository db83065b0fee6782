#!/usr/bin/env python3
"""Issue 46: OpenVINO IR layers with many ports load in time linear in the ports.

Generates, for each K, an IR of one `Parameter x: f32[1]` feeding every input port of one
`Concat` of K inputs (axis 0, output f32[K]) and, with `--split`, one `Split` of a f32[K]
Parameter into K outputs each read by its own `Result`. Times `slice-opt M.xml -o OUT.xml
--passes none` (load + save) and the default passes, best of `--reps` runs, and prints a
Markdown table with the time per port and the growth of each step over the previous K
divided by the growth of K (1.0: linear; 2.0 per doubling: quadratic).

    python3 bench/ir_ports.py --binary target/release/slice-opt [--ks 12500,25000,...]

Only the Python standard library is needed (the XML is written as text).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time


def concat_ir(k):
    parts = [
        '<?xml version="1.0"?>\n<net name="concat" version="11">\n<layers>\n',
        '<layer id="0" name="x" type="Parameter" version="opset1">'
        '<data shape="1" element_type="f32"/>'
        '<output><port id="0" precision="FP32" names="x"><dim>1</dim></port></output></layer>\n',
        '<layer id="1" name="concat" type="Concat" version="opset1"><data axis="0"/><input>\n',
    ]
    parts.extend(f'<port id="{i}" precision="FP32"><dim>1</dim></port>\n' for i in range(k))
    parts.append(
        f'</input><output><port id="{k}" precision="FP32" names="y"><dim>{k}</dim></port>'
        '</output></layer>\n'
        '<layer id="2" name="y" type="Result" version="opset1"><input>'
        f'<port id="0" precision="FP32"><dim>{k}</dim></port></input></layer>\n'
        '</layers>\n<edges>\n'
    )
    parts.extend(
        f'<edge from-layer="0" from-port="0" to-layer="1" to-port="{i}"/>\n' for i in range(k)
    )
    parts.append(f'<edge from-layer="1" from-port="{k}" to-layer="2" to-port="0"/>\n')
    parts.append("</edges>\n</net>\n")
    return "".join(parts)


def split_ir(k):
    parts = [
        '<?xml version="1.0"?>\n<net name="split" version="11">\n<layers>\n',
        f'<layer id="0" name="x" type="Parameter" version="opset1">'
        f'<data shape="{k}" element_type="f32"/>'
        f'<output><port id="0" precision="FP32" names="x"><dim>{k}</dim></port></output>'
        "</layer>\n",
        '<layer id="1" name="axis" type="Const" version="opset1">'
        '<data element_type="i64" shape="" offset="0" size="8"/>'
        '<output><port id="0" precision="I64"/></output></layer>\n',
        f'<layer id="2" name="split" type="Split" version="opset1"><data num_splits="{k}"/>'
        f'<input><port id="0" precision="FP32"><dim>{k}</dim></port>'
        '<port id="1" precision="I64"/></input><output>\n',
    ]
    parts.extend(
        f'<port id="{i + 2}" precision="FP32" names="y{i}"><dim>1</dim></port>\n' for i in range(k)
    )
    parts.append("</output></layer>\n")
    parts.extend(
        f'<layer id="{i + 3}" name="r{i}" type="Result" version="opset1"><input>'
        '<port id="0" precision="FP32"><dim>1</dim></port></input></layer>\n'
        for i in range(k)
    )
    parts.append("</layers>\n<edges>\n")
    parts.append('<edge from-layer="0" from-port="0" to-layer="2" to-port="0"/>\n')
    parts.append('<edge from-layer="1" from-port="0" to-layer="2" to-port="1"/>\n')
    parts.extend(
        f'<edge from-layer="2" from-port="{i + 2}" to-layer="{i + 3}" to-port="0"/>\n'
        for i in range(k)
    )
    parts.append("</edges>\n</net>\n")
    return "".join(parts)


def best(cmd, reps, timeout):
    walls = []
    for _ in range(reps):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, timeout=timeout)
        walls.append(time.perf_counter() - t0)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return min(walls)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="target/release/slice-opt")
    ap.add_argument("--ks", default="12500,25000,50000,100000,300000")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--split", action="store_true", help="also the Split of K outputs")
    args = ap.parse_args()
    ks = [int(k) for k in args.ks.split(",")]
    shapes = [("concat", concat_ir)] + ([("split", split_ir)] if args.split else [])
    print("| model | ports | size | load+save (`--passes none`) | per port | growth/K | "
          "default passes | growth/K |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="slice-opt-ports-") as d:
        for name, make in shapes:
            prev = None
            for k in ks:
                xml = os.path.join(d, f"{name}_{k}.xml")
                with open(xml, "w") as f:
                    f.write(make(k))
                with open(os.path.join(d, f"{name}_{k}.bin"), "wb") as f:
                    f.write((0).to_bytes(8, "little"))
                out = os.path.join(d, "out.xml")
                rt = best([args.binary, xml, "-o", out, "--passes", "none", "-q"],
                          args.reps, args.timeout)
                dp = best([args.binary, xml, "-o", out, "-q"], args.reps, args.timeout)
                if prev:
                    pk, prt, pdp = prev
                    g1 = f"{(rt / prt) / (k / pk):.2f}"
                    g2 = f"{(dp / pdp) / (k / pk):.2f}"
                else:
                    g1 = g2 = "-"
                size = os.path.getsize(xml) / 1e6
                print(f"| {name} | {k:,} | {size:.1f} MB | {rt:.3f} s | {rt / k * 1e6:.2f} µs "
                      f"| {g1} | {dp:.3f} s | {g2} |", flush=True)
                prev = (k, rt, dp)


if __name__ == "__main__":
    main()
