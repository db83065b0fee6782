#!/usr/bin/env python3
"""Packs the OpenVINO IR fixtures (models/*.xml + .bin) into seeds for the `ir_reader` target.

Format of one input: [u32 little-endian length of the XML][XML bytes][.bin bytes].
Pairs whose .bin is larger than 64 KiB are skipped (keep the corpus small).

Usage: python3 fuzz/pack_ir_corpus.py   (from the repository root)
"""
import glob
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus", "ir_reader")
MAX_BIN = 64 * 1024

os.makedirs(OUT, exist_ok=True)
for xml in sorted(glob.glob(os.path.join(ROOT, "models", "*.xml"))):
    stem = os.path.basename(xml)[: -len(".xml")]
    binp = xml[: -len(".xml")] + ".bin"
    with open(xml, "rb") as f:
        x = f.read()
    b = b""
    if os.path.exists(binp):
        if os.path.getsize(binp) > MAX_BIN:
            print(f"skip {stem} (.bin too large)")
            continue
        with open(binp, "rb") as f:
            b = f.read()
    with open(os.path.join(OUT, f"{stem}.ir"), "wb") as f:
        f.write(struct.pack("<I", len(x)) + x + b)
    print(f"{stem}: {len(x)} + {len(b)} bytes")
