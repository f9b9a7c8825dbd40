#!/usr/bin/env bash
# Per-call overhead of kiln next to ONNX Runtime, from C and from Python (bench/README.md,
# "Per-call overhead"): builds the C driver against a kiln build tree, writes the one-Add
# model, installs kiln's Python package and onnxruntime into a venv, runs every driver
# alternating kiln and ONNX Runtime --repeats times each, and writes the section
# "Per-call overhead" of bench/RESULTS.md (the rest of the file is kept).
#
#   bench/overhead/run.sh [--build-dir DIR] [--iters N] [--warmup W] [--repeats R]
#                         [--results FILE] [--no-python] [--no-pin]
#
#   --build-dir DIR  kiln's CMake build directory holding libkiln.so (default: $KILN_BUILD_DIR,
#                    else build/); include/ is this checkout's
#   --iters N        timed calls per process and API (default 100000)
#   --warmup W       untimed calls before them (default 1000)
#   --repeats R      processes per runtime and driver (default 3)
#   --no-python      C only (no venv, nothing from PyPI)
#   --no-pin         let the scheduler place the processes; by default every process of
#                    repeat r runs pinned (taskset) to the r-th CPU of this process's
#                    affinity set, round robin, so kiln and ONNX Runtime see the same CPUs
#                    (on a shared VM the two vCPUs often differ in speed by 1.5x at a time)
# Environment: CC (default cc), OVERHEAD_VENV (default bench/.venv-overhead: created on
# first use from PyPI with onnxruntime at onnxruntime-node's version and numpy at
# scripts/install-ref-env.sh's pin, the Python tests' pins; the tests' venv,
# BUILD/python-venv, works too: kiln's package is reinstalled into it).
# Needs scripts/install-ref-npm.sh (ONNX Runtime's library ships in onnxruntime-node) and
# Debian's python3-onnx (the model is written with onnx.helper). Exit status 1 when any
# measurement failed (the section lists it), 2 on bad usage or a missing prerequisite.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BENCH="$(dirname "$HERE")"
ROOT="$(dirname "$BENCH")"
PY=/usr/bin/python3

BUILD_DIR="${KILN_BUILD_DIR:-$ROOT/build}"
ITERS=100000
WARMUP=1000
REPEATS=3
RESULTS="$BENCH/RESULTS.md"
PYTHON=1
PIN=1
COMMAND="bench/overhead/run.sh${*:+ $*}"

die() { echo "overhead: error: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) BUILD_DIR="$2"; shift 2 ;;
    --iters) ITERS="$2"; shift 2 ;;
    --warmup) WARMUP="$2"; shift 2 ;;
    --repeats) REPEATS="$2"; shift 2 ;;
    --results) RESULTS="$2"; shift 2 ;;
    --no-python) PYTHON=0; shift ;;
    --no-pin) PIN=0; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ "$ITERS" =~ ^[1-9][0-9]*$ && "$WARMUP" =~ ^[0-9]+$ && "$REPEATS" =~ ^[1-9][0-9]*$ ]] ||
  die "--iters and --repeats take positive integers, --warmup a non-negative one"

[ -d "$BUILD_DIR" ] || die "no build directory $BUILD_DIR (build kiln: make, or pass --build-dir)"
BUILD_DIR="$(cd "$BUILD_DIR" && pwd)"
LIBDIR=""
for d in "$BUILD_DIR" "$BUILD_DIR/lib" "$BUILD_DIR/src/api"; do
  if [ -e "$d/libkiln.so" ]; then LIBDIR="$d"; break; fi
done
[ -n "$LIBDIR" ] || die "no libkiln.so in $BUILD_DIR (build kiln: make, or pass --build-dir)"
[ -f "$ROOT/include/kiln/kiln.h" ] || die "no include/kiln/kiln.h in $ROOT"
ORT_PKG="$ROOT/build-ref-npm/node_modules/onnxruntime-node"
ORT_LIB="$ORT_PKG/bin/napi-v6/linux/x64/libonnxruntime.so.1"
[ -f "$ORT_LIB" ] || die "no $ORT_LIB (run scripts/install-ref-npm.sh)"
"$PY" -c 'import onnx' 2>/dev/null || die "$PY has no onnx module (apt-get install python3-onnx)"

WORK="$BENCH/work/overhead"
mkdir -p "$WORK"
CC="${CC:-cc}"
T0=$(date +%s)
LOAD_START=$(cut -d' ' -f1 /proc/loadavg)

echo "overhead: building the C driver against $LIBDIR/libkiln.so"
"$CC" -std=c11 -O2 -Wall -Wextra -Werror -I"$ROOT/include" "$HERE/overhead_c.c" -L"$LIBDIR" -lkiln \
  -Wl,-rpath,"$LIBDIR" -ldl -lm -o "$WORK/overhead_c"
MODEL="$WORK/add16.onnx"
"$PY" "$HERE/make_model.py" "$MODEL"

JSONL="$WORK/results.jsonl"
: > "$JSONL"
FAILED=0
# A failure of a step or a measuring process: on stderr, and a record for the report.
note_failure() {  # WHAT RC STDERR-FILE
  FAILED=1
  echo "overhead: $1 failed (exit $2):" >&2
  tail -n 20 "$3" >&2
  "$PY" -c 'import json, sys; print(json.dumps({"failure": {"what": "%s (exit %s)" % (sys.argv[1], sys.argv[2]), "stderr": open(sys.argv[3], errors="replace").read()[-4000:]}}))' \
    "$1" "$2" "$3" >> "$JSONL"
}

VENV="${OVERHEAD_VENV:-$BENCH/.venv-overhead}"
PY_RUNTIMES=""
if [ "$PYTHON" = 1 ]; then
  PY_RUNTIMES="kiln ort"
  # The pins the Python tests use too: ONNX Runtime at onnxruntime-node's release,
  # numpy at scripts/install-ref-env.sh's.
  ORT_VERSION=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$ORT_PKG/package.json")
  NUMPY_VERSION=$(sed -n 's/^PINS=(.*numpy==\([^ )]*\).*/\1/p' "$ROOT/scripts/install-ref-env.sh")
  NUMPY_VERSION="${NUMPY_VERSION:-any}"
  rc=0
  if [ ! -x "$VENV/bin/python" ]; then
    echo "overhead: creating $VENV"
    "$PY" -m venv "$VENV" 2> "$WORK/stderr.txt" || rc=$?
  fi
  if [ "$rc" = 0 ] && ! "$VENV/bin/python" -c 'import sys, numpy, wheel, onnxruntime
sys.exit(onnxruntime.__version__ != sys.argv[1] or sys.argv[2] not in ("any", numpy.__version__))' \
      "$ORT_VERSION" "$NUMPY_VERSION" 2>/dev/null; then
    NUMPY_REQ=numpy
    if [ "$NUMPY_VERSION" != any ]; then NUMPY_REQ="numpy==$NUMPY_VERSION"; fi
    echo "overhead: installing $NUMPY_REQ and onnxruntime==$ORT_VERSION into $VENV"
    "$VENV/bin/pip" install -q "$NUMPY_REQ" "onnxruntime==$ORT_VERSION" wheel "setuptools>=61" \
      2> "$WORK/stderr.txt" || rc=$?
  fi
  if [ "$rc" != 0 ]; then
    note_failure "setting up $VENV (Python rows)" "$rc" "$WORK/stderr.txt"
    PY_RUNTIMES=""
  else
    # kiln's package, built from a copy of python/ (the build leaves nothing in the
    # checkout) against this build tree's libkiln.so.
    echo "overhead: installing kiln's Python package (KILN_BUILD_DIR=$BUILD_DIR) into $VENV"
    rm -rf "$WORK/kiln-python"
    mkdir -p "$WORK/kiln-python"
    (cd "$ROOT/python" && tar cf - --exclude=build --exclude='*.egg-info' --exclude='*.so' --exclude=__pycache__ .) |
      (cd "$WORK/kiln-python" && tar xf -)
    KILN_BUILD_DIR="$BUILD_DIR" KILN_INCLUDE_DIR="$ROOT/include" \
      "$VENV/bin/pip" install -q --no-deps --force-reinstall --no-build-isolation "$WORK/kiln-python" \
      > "$WORK/stderr.txt" 2>&1 || rc=$?
    if [ "$rc" != 0 ]; then
      note_failure "pip install ./python (the kiln Python row)" "$rc" "$WORK/stderr.txt"
      PY_RUNTIMES="ort"
    fi
  fi
fi

# Runs one measuring process (pinned to CPU $CPU unless it is empty); its JSON lines go
# to $JSONL, tagged with the repeat and the CPU.
measure() {
  local what="$1"; shift
  local out="$WORK/stdout.txt" err="$WORK/stderr.txt" rc=0
  local pin=()
  if [ -n "$CPU" ]; then pin=(taskset -c "$CPU"); what="$what (cpu $CPU)"; fi
  echo "overhead: $what"
  timeout 900 "${pin[@]}" "$@" > "$out" 2> "$err" || rc=$?
  sed "s/^{/{\"repeat\": $r, \"cpu\": ${CPU:-null}, /" "$out" >> "$JSONL"
  sed -n 's/.*"api": "\([^"]*\)", "median_us": \([0-9.]*\), "p90_us": \([0-9.]*\).*/  \1: median \2 us, p90 \3 us/p' "$out"
  if [ "$rc" != 0 ]; then note_failure "$what" "$rc" "$err"; fi
}

CPUS=()
if [ "$PIN" = 1 ]; then
  if command -v taskset > /dev/null; then
    read -r -a CPUS <<< "$("$PY" -c 'import os; print(" ".join(map(str, sorted(os.sched_getaffinity(0)))))')"
  else
    echo "overhead: no taskset: the processes are not pinned" >&2
  fi
fi

for r in $(seq 1 "$REPEATS"); do
  CPU=""
  if [ "${#CPUS[@]}" -gt 0 ]; then CPU="${CPUS[$(( (r - 1) % ${#CPUS[@]} ))]}"; fi
  # Alternate which runtime goes first from one repeat to the next.
  if [ $((r % 2)) = 1 ]; then ORDER="kiln ort"; else ORDER="ort kiln"; fi
  for rt in $ORDER; do
    measure "C $rt, process $r/$REPEATS" "$WORK/overhead_c" --runtime "$rt" --model "$MODEL" --ort-lib "$ORT_LIB" \
      --iters "$ITERS" --warmup "$WARMUP"
  done
  if [ -n "$PY_RUNTIMES" ]; then
    for rt in $ORDER; do
      case " $PY_RUNTIMES " in *" $rt "*) ;; *) continue ;; esac
      measure "Python $rt, process $r/$REPEATS" "$VENV/bin/python" "$HERE/overhead_py.py" --runtime "$rt" \
        --model "$MODEL" --iters "$ITERS" --warmup "$WARMUP"
    done
  fi
done

LOAD_END=$(cut -d' ' -f1 /proc/loadavg)
VENV_ARGS=(--no-python)
if [ "$PYTHON" = 1 ]; then VENV_ARGS=(--venv "$VENV"); fi
"$PY" "$HERE/report.py" --jsonl "$JSONL" --results "$RESULTS" --build-dir "$BUILD_DIR" \
  "${VENV_ARGS[@]}" --cc "$("$CC" --version | head -n 1)" \
  --iters "$ITERS" --warmup "$WARMUP" --repeats "$REPEATS" --load-start "$LOAD_START" --load-end "$LOAD_END" \
  --pinned "${#CPUS[@]}" --wall-s "$(( $(date +%s) - T0 ))" --command "$COMMAND" || FAILED=1
exit "$FAILED"
