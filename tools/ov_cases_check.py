"""Reads the IR cases `tests/ov_type_prop.rs` builds with OpenVINO itself and prints the output
partial shape OpenVINO infers for each (its `read_model` runs the op's shape inference): a check
that each transcribed case is built as OpenVINO means it.

Usage:
  OV_CASES_DIR=/tmp/ov_cases cargo test --test ov_type_prop
  python3 tools/ov_cases_check.py /tmp/ov_cases
"""

import glob
import os
import sys

import openvino as ov


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ov_cases"
    core = ov.Core()
    for xml in sorted(glob.glob(os.path.join(d, "*.xml"))):
        name = os.path.basename(xml)[: -len(".xml")]
        try:
            m = core.read_model(xml)
            ops = [op for op in m.get_ops() if op.get_friendly_name() == "op"]
            print(f"{name}: {ops[0].get_output_partial_shape(0)}")
        except Exception as e:  # noqa: BLE001 (a refusal is an answer too)
            print(f"{name}: refused: {str(e).splitlines()[0][:120]}")


if __name__ == "__main__":
    main()
