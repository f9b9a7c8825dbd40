#!/usr/bin/env bash
# Entry point of kiln's benchmark: measures kiln next to ONNX Runtime, PyTorch,
# TF.js-wasm, TensorFlow (plain and XLA auto-jit, in build-venvs/tf-venv) and
# XLA:CPU through JAX (the JAX set, in build-ref-env) on this machine and writes
# bench/RESULTS.md (see bench/README.md). All the work is in bench/bench.py; this
# wrapper exists so the benchmark runs with Debian's python3 (where python3-torch and
# numpy live) whatever python is first on PATH.
#
#   bench/run.sh [--quick] [--models a,b] [--iters N] [--max-seconds T] [--repeats R] [--kiln PATH] [--device D]
#                [--tf-venv DIR] [--jax-env DIR] [--results FILE] [--overhead | --overhead-only]
#
# --models takes model names and the set name jax (every program of bench/jax_models.py):
#   bench/run.sh --models jax
#   bench/run.sh --models jax_convnet,jax_transformer --quick --results /tmp/jax.md
#
# --overhead also measures the per-call overhead of kiln's C and Python APIs next to ONNX
# Runtime's (bench/overhead/run.sh, a few minutes; its libkiln.so is the one beside
# --kiln, default build/) after the model benchmark; --overhead-only measures just that.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

OVERHEAD=0
MODELS=1
KILN=""
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --overhead) OVERHEAD=1; shift ;;
    --overhead-only) OVERHEAD=1; MODELS=0; shift ;;
    --kiln) KILN="$2"; ARGS+=("$1" "$2"); shift 2 ;;
    --kiln=*) KILN="${1#--kiln=}"; ARGS+=("$1"); shift ;;
    *) ARGS+=("$1"); shift ;;
  esac
done

STATUS=0
if [ "$MODELS" = 1 ]; then
  /usr/bin/python3 "$HERE/bench.py" --command "bench/run.sh ${ARGS[*]:-}" "${ARGS[@]}" || STATUS=$?
fi
if [ "$OVERHEAD" = 1 ]; then
  OVERHEAD_ARGS=()
  if [ -n "$KILN" ]; then OVERHEAD_ARGS=(--build-dir "$(dirname "$KILN")"); fi
  "$HERE/overhead/run.sh" "${OVERHEAD_ARGS[@]}" || { rc=$?; [ "$STATUS" != 0 ] || STATUS=$rc; }
fi
exit "$STATUS"
