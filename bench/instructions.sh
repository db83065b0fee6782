#!/usr/bin/env bash
# Instruction counts (valgrind callgrind, no cache simulation) of two slice-opt builds on the same
# models with the default passes: a load-independent A/B for machines too busy for wall-clock
# pairs (issue 41, acceptance 3). Counts are repeatable for the same binary and input.
#
#   bench/instructions.sh OLD_BIN NEW_BIN /tmp/slice-opt-bench/wide_100k.onnx /tmp/slice-opt-bench/nodes_100k.onnx
#
# Models come from bench/gen_models.py. Prints one line per model: old, new, ratio.
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 OLD_BIN NEW_BIN MODEL..." >&2; exit 2; }
old=$1 new=$2; shift 2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
count() {
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$1" "$2" -o "$tmp/out.${2##*.}" -q \
    2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
  rm -f "$tmp"/out.*
}
for m in "$@"; do
  a=$(count "$old" "$m"); b=$(count "$new" "$m")
  python3 -c "import sys; a,b=int(sys.argv[1]),int(sys.argv[2]); print(f'{sys.argv[3]}: {a/1e6:,.1f}M -> {b/1e6:,.1f}M instructions ({b/a:.3f}x)')" "$a" "$b" "$(basename "$m")"
done
