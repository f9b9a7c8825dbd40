#!/usr/bin/env bash
# Entry point of kiln's benchmark: measures kiln next to ONNX Runtime, PyTorch and
# TF.js-wasm on this machine and writes bench/RESULTS.md (see bench/README.md). All the
# work is in bench/bench.py; this wrapper exists so the benchmark runs with Debian's
# python3 (where python3-torch and numpy live) whatever python is first on PATH.
#
#   bench/run.sh [--quick] [--models a,b] [--iters N] [--max-seconds T] [--repeats R] [--kiln PATH] [--device D]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
exec /usr/bin/python3 "$HERE/bench.py" --command "bench/run.sh $*" "$@"
