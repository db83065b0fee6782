#!/usr/bin/env bash
# Issue 45, acceptance 5: the Python package as a wheel. Builds it once (`pip wheel ./python`,
# maturin as the PEP 517 backend), checks that it is one abi3 wheel, installs it in a fresh venv
# whose PATH has no Rust toolchain (`cargo` and `rustc` must not be found there; the wheel is
# installed with --no-index, so nothing can be built), and runs python/tests there with pytest.
#
#   tools/wheel_check.sh [--bin PATH] [--python PYTHON] [--also PYTHON]... [--compat TAG] [--keep]
#
#   --bin     the slice-opt command line the tests compare with ($SLICE_OPT_BIN, else
#             target/release/slice-opt); it is a program, not a toolchain
#   --python  the interpreter that builds the wheel and makes the venv (default python3)
#   --also    another interpreter (python3.9, python3.13): the same wheel installed and tested
#             in a fresh venv of it too (the abi3 wheel serves every CPython >= 3.9)
#   --compat  a platform tag maturin checks the module against and gives the wheel
#             (manylinux_2_34: the tag PyPI takes); default: maturin's PEP 517 default, a
#             plain linux_x86_64 wheel
#   --keep    keep the work directory (wheel, venvs) and print its path
#
# The build uses $CARGO_TARGET_DIR when set (CI: the release target/), else python/target.
# The test dependencies (pytest, onnx, onnxruntime, numpy, openvino, mypy for the stub check)
# come from the package index as binary wheels. Exit 0 only if every step passed.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
py=python3
bin=${SLICE_OPT_BIN:-$root/target/release/slice-opt}
keep=0
also=()
wheel_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --also) also+=("$2"); shift 2 ;;
    --compat) wheel_args+=(-C "build-args=--compatibility $2"); shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "wheel_check: unknown argument $1" >&2; exit 2 ;;
  esac
done
fail() { echo "wheel_check: FAIL: $*" >&2; exit 1; }
[ -x "$bin" ] || fail "no slice-opt binary at $bin (build it: cargo build --release, or give --bin)"
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")

work=$(mktemp -d "${TMPDIR:-/tmp}/wheel_check.XXXXXX")
if [ "$keep" = 1 ]; then
  trap 'echo "wheel_check: kept $work"' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi
now() { date +%s.%N; }
secs() { "$py" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }

# 1. The wheel, built once.
echo "== pip wheel ./python"
t0=$(now)
(cd "$root" && "$py" -m pip wheel --disable-pip-version-check ./python -w "$work/wheelhouse" ${wheel_args[@]+"${wheel_args[@]}"})
t1=$(now)
build_s=$(secs "$t0" "$t1")
shopt -s nullglob
wheels=("$work"/wheelhouse/*.whl)
shopt -u nullglob
[ "${#wheels[@]}" -eq 1 ] || fail "expected one wheel, got ${#wheels[@]}: ${wheels[*]:-none}"
whl=${wheels[0]}
# The file name's tags and the WHEEL metadata both say abi3; the extension module is the abi3
# one (no interpreter-specific `cpython-3xx` module); the stubs and py.typed are inside.
"$py" - "$whl" <<'PY' || fail "the wheel is not an abi3 wheel with stubs"
import sys, zipfile
path = sys.argv[1]
name = path.rsplit("/", 1)[-1]
dist, version, py_tag, abi_tag, plat = name[:-4].split("-")
assert abi_tag == "abi3", f"file name's ABI tag is {abi_tag}: {name}"
z = zipfile.ZipFile(path)
files = z.namelist()
wheel_meta = [f for f in files if f.endswith(".dist-info/WHEEL")]
assert len(wheel_meta) == 1, wheel_meta
tags = [l.split(":", 1)[1].strip() for l in z.read(wheel_meta[0]).decode().splitlines() if l.startswith("Tag:")]
assert tags and all(t.split("-")[1] == "abi3" for t in tags), tags
natives = [f for f in files if f.startswith("slice_opt/_native") and not f.endswith(".pyi")]
assert natives == ["slice_opt/_native.abi3.so"], natives
for f in ("slice_opt/__init__.pyi", "slice_opt/_native.pyi", "slice_opt/py.typed"):
    assert f in files, f"{f} missing from the wheel"
print(f"wheel: {name} ({z.fp.seek(0, 2) / 1e6:.1f} MB); tags {', '.join(tags)}; module {natives[0]}")
PY

# 2-5, in a fresh venv of interpreter $1 (label $2).
clean_path=""
IFS=: read -r -a dirs <<< "$PATH"
for d in "${dirs[@]}"; do
  [ -n "$d" ] || continue
  if [ -e "$d/cargo" ] || [ -e "$d/rustc" ] || [ -e "$d/rustup" ]; then continue; fi
  clean_path=${clean_path:+$clean_path:}$d
done
summary=()
check_in() {
  local python=$1 label=$2 venv="$work/venv-$2"
  # 2. A fresh venv with the test dependencies (binary wheels from the index).
  echo "== fresh venv ($label: $("$python" --version 2>&1))"
  local t2 t3 t4 t5 t6 t7 rc
  t2=$(now)
  "$python" -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary :all: \
    pytest onnx onnxruntime numpy openvino mypy
  t3=$(now)
  # 3. No Rust toolchain on PATH: every PATH entry holding cargo, rustc or rustup is dropped,
  # and the variables that point at a toolchain are unset.
  run() {
    env -u CARGO_HOME -u RUSTUP_HOME -u CARGO -u RUSTC -u CARGO_TARGET_DIR -u RUSTUP_TOOLCHAIN \
      PATH="$venv/bin:$clean_path" VIRTUAL_ENV="$venv" "$@"
  }
  if run bash -c 'command -v cargo || command -v rustc || command -v rustup'; then
    fail "a Rust toolchain is still on PATH"
  fi
  echo "PATH for the install and the tests has no cargo, rustc or rustup"
  # 4. The wheel installed from the file alone: no index, no source build.
  echo "== pip install the wheel ($label)"
  t4=$(now)
  run "$venv/bin/python" -m pip install --disable-pip-version-check --no-index --no-deps \
    --only-binary :all: "$whl"
  t5=$(now)
  local where
  where=$(cd "$work" && run python -c 'import slice_opt, slice_opt._native as n; print(slice_opt.__file__); print(n.__file__)')
  echo "$where"
  case "$where" in
    "$venv/"*) ;;
    *) fail "slice_opt imported from outside the venv: $where" ;;
  esac
  # 5. The tests, from outside the source tree (python/slice_opt must not shadow the install).
  echo "== pytest python/tests ($label)"
  t6=$(now)
  set +e
  (cd "$work" && run env SLICE_OPT_BIN="$bin" SLICE_OPT_WHEEL_CHECK=1 \
    python -m pytest -q -p no:cacheprovider "$root/python/tests" 2>&1) | tee "$work/pytest-$label.log"
  rc=${PIPESTATUS[0]}
  set -e
  t7=$(now)
  local counts
  counts=$(grep -E '[0-9]+ (passed|failed|error)' "$work/pytest-$label.log" | tail -1)
  summary+=("$label ($("$python" --version 2>&1)): venv + test deps $(secs "$t2" "$t3")s, install $(secs "$t4" "$t5")s, tests $(secs "$t6" "$t7")s: $counts")
  [ "$rc" -eq 0 ] || fail "$label: pytest exit $rc (5 = no tests collected)"
}

check_in "$py" main
for p in "${also[@]}"; do
  check_in "$p" "$(basename "$p")"
done
echo "wheel_check: $(basename "$whl"): built once in ${build_s}s (pip wheel)"
for l in "${summary[@]}"; do echo "wheel_check: $l"; done
echo "wheel_check: OK"
