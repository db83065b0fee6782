#!/usr/bin/env bash
# One command: generate the models if missing, build slice-opt, time it against cp and its
# peers, write bench/RESULTS.md. See bench/README.md.
#
# Environment: BENCH_DIR (models and scratch outputs, default /tmp/slice-opt-bench),
# REPS (runs of cp and slice-opt, best wall, default 3), PEER_REPS (default 1),
# TIMEOUT (seconds per run, default 300), MODELS (comma list, default all),
# CARGO_TARGET_DIR (default <repo>/target), PYTHON (default python3).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
BENCH_DIR="${BENCH_DIR:-/tmp/slice-opt-bench}"
PYTHON="${PYTHON:-python3}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"

[ -x /usr/bin/time ] || { echo "run.sh: needs GNU time at /usr/bin/time" >&2; exit 2; }
"$PYTHON" -c 'import numpy, onnx, onnxruntime, openvino' 2>/dev/null || {
    echo "run.sh: pip install onnx onnxruntime openvino onnxsim onnxslim onnxoptimizer numpy" >&2
    exit 2
}

echo "== models in $BENCH_DIR" >&2
"$PYTHON" "$here/gen_models.py" --out "$BENCH_DIR"

echo "== cargo build --release" >&2
(cd "$root" && cargo build --release --quiet && cargo build --release --quiet --example scan_floor)
bin="$CARGO_TARGET_DIR/release/slice-opt"

echo "== benchmark" >&2
args=(--bench-dir "$BENCH_DIR" --binary "$bin" --out "$here/RESULTS.md"
      --reps "${REPS:-3}" --peer-reps "${PEER_REPS:-1}" --timeout "${TIMEOUT:-300}"
      --floor "$CARGO_TARGET_DIR/release/examples/scan_floor")
[ -n "${MODELS:-}" ] && args+=(--models "$MODELS")
"$PYTHON" "$here/bench.py" "${args[@]}"
