#!/usr/bin/env bash
# Short, bounded libFuzzer runs of every fuzz target (tests/fuzz/fuzz_*.c), built with
# clang under ASan + UBSan. Each target starts from a seed corpus — the HLO files in
# tests/hlo/corpus for the parser, numpy-written .npy files for the .npy reader, the
# .graph files in tests/graph for the graph text parser, plus tests/fuzz/seeds/NAME/ — copied
# into build-fuzz/corpus-NAME so runs never touch the source tree. Any crash, leak,
# timeout or out-of-memory fails the script; the reproducer is left in build-fuzz/.
#
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET]      (default 45)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
SECONDS_PER_TARGET="${1:-${FUZZ_SECONDS:-45}}"
BUILD=build-fuzz
JOBS="${JOBS:-2}"

if ! command -v clang >/dev/null; then
  echo "fuzz: clang not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi

CC=clang cmake -S . -B "$BUILD" -G Ninja -DKILN_FUZZ=ON -DKILN_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
targets=()
for src in tests/fuzz/fuzz_*.c; do
  [ -e "$src" ] || continue
  targets+=("$(basename "$src" .c)")
done
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no fuzz targets in tests/fuzz" >&2
  exit 1
fi
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"

seed_corpus() { # NAME DIR
  local name="$1" dir="$2"
  rm -rf "$dir"
  mkdir -p "$dir"
  case "$name" in
    fuzz_hlo_parser)
      if compgen -G "tests/hlo/corpus/*.hlo" >/dev/null; then cp tests/hlo/corpus/*.hlo "$dir/"; fi
      cp examples/*.hlo "$dir/" 2>/dev/null || true
      ;;
    fuzz_ocl_parse)
      # The OpenCL plugin's parser: the same HLO texts as kiln's parser.
      if compgen -G "tests/hlo/corpus/*.hlo" >/dev/null; then cp tests/hlo/corpus/*.hlo "$dir/"; fi
      cp examples/*.hlo "$dir/" 2>/dev/null || true
      ;;
    fuzz_npy)
      /usr/bin/python3 - "$dir" <<'EOF'
import sys
import numpy as np
d = sys.argv[1]
arrays = [
    np.arange(6, dtype=np.float32).reshape(2, 3), np.array(True), np.zeros((0, 3), np.int64),
    np.arange(4, dtype='>i4'), np.arange(3, dtype=np.float16), np.arange(5, dtype=np.uint8),
    np.array([-1, 2], np.int8), np.array([[1.5]], np.float64), np.arange(4, dtype=np.uint64),
    np.arange(8, dtype=np.int16).reshape(2, 2, 2), np.array([1, 2, 3], np.uint32),
]
for i, a in enumerate(arrays):
    np.save('%s/seed_%02d.npy' % (d, i), a)
with open('%s/seed_v2.npy' % d, 'wb') as f:
    np.lib.format.write_array(f, np.arange(3.0), version=(2, 0))
EOF
      ;;
    fuzz_graph_text)
      if compgen -G "tests/graph/*.graph" >/dev/null; then cp tests/graph/*.graph "$dir/"; fi
      ;;
  esac
  # Any target may also keep hand-picked seeds in tests/fuzz/seeds/NAME/.
  if [ -d "tests/fuzz/seeds/$name" ]; then cp -r "tests/fuzz/seeds/$name/." "$dir/"; fi
}

failed=0
for t in "${targets[@]}"; do
  corpus="$BUILD/corpus-${t#fuzz_}"
  seed_corpus "$t" "$corpus"
  echo "== $t: ${SECONDS_PER_TARGET}s from $(ls "$corpus" | wc -l) seeds"
  if ! (cd "$BUILD" && "./tests/$t" -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 "corpus-${t#fuzz_}" 2>"$t.log"); then
    echo "fuzz: $t FAILED; log: $BUILD/$t.log" >&2
    grep -E "ERROR|SUMMARY|Test unit written" "$BUILD/$t.log" >&2 || tail -20 "$BUILD/$t.log" >&2
    failed=1
  else
    grep -E "stat::number_of_executed_units|Done [0-9]+ runs" "$BUILD/$t.log" | tail -1
  fi
done
if [ $failed -ne 0 ]; then
  echo "fuzz: FAILED" >&2
  exit 1
fi
echo "fuzz: all targets ran clean"
