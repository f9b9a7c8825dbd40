#!/bin/sh
# How `kiln run` treats plugins, one case per CTest test (the first argument):
#   abi1_runs            an ABI-1 plugin (tiny_ok, through the host's adapter) loads,
#                        `kiln plugins` says "1.0 (adapted)", and it computes a + b
#   internal_error       a compile failing with INTERNAL (tiny_compile_error) fails the
#                        run: exit 1, the message names the device and "compile failed"
#   fallback_flag        the same with --allow_plugin_fallback: a warning, then the
#                        interpreter runs it with the right answer
#   unimplemented        a compile answering UNIMPLEMENTED (tiny_compile_unimplemented)
#                        falls back with a notice, no flag needed
#   exec_error           an execute error is a clean error (exit 1 naming the device)
#   example              the example plugin (ABI 2) runs the module; compile options
#                        reach it (example.reject_opcodes=negate makes it answer
#                        UNIMPLEMENTED, so the host falls back); a malformed option is
#                        an error
#   cxx                  the C++ ABI-2 plugin runs an elementwise module with a large
#                        (hoisted, device-resident) constant; same output as the
#                        interpreter
#   bridge               a model (tests/plugin/addmul.graph) placed on tiny_compile_error:
#                        the cluster's compile error (jit auto) and an op's (jit off)
#                        fail the run with exit 1 naming the device; with
#                        --allow_plugin_fallback it runs, warning once, and matches the
#                        interpreter
#   abi_major_3          a manifest declaring ABI 3 is refused before the library is
#                        opened (its library's init would fail with its own message)
# usage: check_fallback.sh CASE KILN BUILD_DIR SOURCE_DIR
set -u
CASE=$1 KILN=$2 BUILD=$3 SRC=$4
TINY=$BUILD/tests/plugin
EXAMPLE=$BUILD/plugins/example/example.kiln-plugin.json
NEG=$SRC/tests/plugin/negate_constant.hlo
ADD=$SRC/tests/plugin/add_params.hlo
PY=/usr/bin/python3
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
fail=0
bad() { echo "$CASE: $1"; echo "--- stderr:"; cat "$OUT/stderr"; echo "--- stdout:"; cat "$OUT/stdout"; fail=1; }
# negate_constant's answer in output_0.npy?
negated() { $PY -c "import numpy as np, sys; sys.exit(0 if (np.load('$OUT/output_0.npy') == -np.array([1, -2, 3.5, 0], np.float32)).all() else 1)"; }

case $CASE in
abi1_runs)
  "$KILN" plugins --plugin "$TINY/tiny_ok.kiln-plugin.json" >"$OUT/stdout" 2>"$OUT/stderr"
  grep -q 'abi: *1.0 (adapted)' "$OUT/stdout" || bad "kiln plugins should show abi 1.0 (adapted)"
  $PY -c "import numpy as np; np.save('$OUT/a.npy', np.array([1, 2, 3, 4], np.float32)); np.save('$OUT/b.npy', np.array([10, 20, 30, 40], np.float32))"
  "$KILN" run "$ADD" -i p0="$OUT/a.npy" -i p1="$OUT/b.npy" -o "$OUT" --plugin "$TINY/tiny_ok.kiln-plugin.json" \
    --device tiny_ok --json >"$OUT/stdout" 2>"$OUT/stderr"
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q '"device":"tiny_ok"' "$OUT/stdout"; then bad "expected the module to run on tiny_ok (rc=$rc)"
  elif ! $PY -c "import numpy as np, sys; sys.exit(0 if (np.load('$OUT/output_0.npy') == np.array([11, 22, 33, 44], np.float32)).all() else 1)"; then
    bad "wrong result"
  fi ;;
internal_error)
  "$KILN" run "$NEG" -o "$OUT" --plugin "$TINY/tiny_compile_error.kiln-plugin.json" --device tiny_compile_error \
    >"$OUT/stdout" 2>"$OUT/stderr"
  rc=$?
  if [ $rc -ne 1 ] || ! grep -q 'device tiny_compile_error: compile failed: tiny compiler crashed politely' "$OUT/stderr"; then
    bad "expected exit 1 naming the device and 'compile failed' (rc=$rc)"
  elif [ -e "$OUT/output_0.npy" ] || grep -q 'running it on' "$OUT/stderr"; then
    bad "expected no fallback"
  fi ;;
fallback_flag)
  "$KILN" run "$NEG" -o "$OUT" --plugin "$TINY/tiny_compile_error.kiln-plugin.json" --device tiny_compile_error \
    --allow_plugin_fallback --json >"$OUT/stdout" 2>"$OUT/stderr"
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q 'device tiny_compile_error: compile failed (INTERNAL): .*tiny compiler crashed politely; falling back to the next device (--allow_plugin_fallback)' "$OUT/stderr" ||
     ! grep -q '"device":"interpreter"' "$OUT/stdout"; then
    bad "expected a warning and a fallback to interpreter (rc=$rc)"
  elif ! negated; then bad "fallback gave a wrong result"
  fi ;;
unimplemented)
  "$KILN" run "$NEG" -o "$OUT" --plugin "$TINY/tiny_compile_unimplemented.kiln-plugin.json" \
    --device tiny_compile_unimplemented --json >"$OUT/stdout" 2>"$OUT/stderr"
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q 'tiny device does not do this module.*running it on interpreter' "$OUT/stderr" ||
     ! grep -q '"device":"interpreter"' "$OUT/stdout"; then
    bad "expected a notice and a fallback to interpreter (rc=$rc)"
  elif ! negated; then bad "fallback gave a wrong result"
  elif grep -q 'allow_plugin_fallback' "$OUT/stderr"; then bad "UNIMPLEMENTED needs no flag"
  fi ;;
exec_error)
  $PY -c "import numpy as np; np.save('$OUT/a.npy', np.ones(4, np.float32))"
  "$KILN" run "$ADD" -o "$OUT" -i p0="$OUT/a.npy" -i p1="$OUT/a.npy" --plugin "$TINY/tiny_exec_error.kiln-plugin.json" \
    --device tiny_exec_error >"$OUT/stdout" 2>"$OUT/stderr"
  rc=$?
  if [ $rc -ne 1 ] || ! grep -q 'device tiny_exec_error: execute failed: tiny device fell over' "$OUT/stderr"; then
    bad "expected exit 1 naming the device (rc=$rc)"
  fi ;;
example)
  "$KILN" run "$NEG" -o "$OUT" --plugin "$EXAMPLE" --device example --json >"$OUT/stdout" 2>"$OUT/stderr"
  if [ $? -ne 0 ] || ! grep -q '"device":"example"' "$OUT/stdout" || ! negated; then bad "expected the module to run on example"; fi
  "$KILN" run "$NEG" -o "$OUT" --plugin "$EXAMPLE" --device example --json \
    --plugin_option example.reject_opcodes=negate >"$OUT/stdout" 2>"$OUT/stderr"
  if [ $? -ne 0 ] || ! grep -q 'rejected by compile option example.reject_opcodes' "$OUT/stderr" ||
     ! grep -q '"device":"interpreter"' "$OUT/stdout"; then
    bad "compile option: expected the plugin to refuse and the host to fall back"
  fi
  "$KILN" run "$NEG" -o "$OUT" --plugin "$EXAMPLE" --device example --plugin_option bogus >"$OUT/stdout" 2>"$OUT/stderr"
  if [ $? -ne 1 ] || ! grep -q "plugin_option takes KEY=VALUE (got 'bogus')" "$OUT/stderr"; then
    bad "malformed option: expected exit 1 naming it"
  fi ;;
cxx)
  # 1024 f32 = 4096 bytes: the constant is hoisted and uploaded once (PLUGIN_RESIDENT_CONSTANT_MIN_BYTES).
  $PY - "$OUT" <<'PYEOF'
import numpy as np, sys
out = sys.argv[1]
c = ', '.join('%g' % (0.5 * (i % 7) - 1) for i in range(1024))
open(out + '/m.hlo', 'w').write('''HloModule cxx_elementwise

ENTRY main {
  a = f32[1024] parameter(0)
  b = f32[1024] parameter(1)
  w = f32[1024] constant({%s})
  s = f32[1024] add(a, b)
  m = f32[1024] multiply(s, w)
  d = f32[1024] subtract(m, a)
  x = f32[1024] maximum(d, b)
  ROOT n = f32[1024] negate(x)
}
''' % c)
rng = np.random.default_rng(7)
np.save(out + '/a.npy', rng.standard_normal(1024).astype(np.float32))
np.save(out + '/b.npy', rng.standard_normal(1024).astype(np.float32))
PYEOF
  "$KILN" plugins --plugin "$TINY/cxx.kiln-plugin.json" >"$OUT/stdout" 2>"$OUT/stderr"
  grep -q 'abi: *2.0' "$OUT/stdout" || bad "kiln plugins should show abi 2.0"
  mkdir -p "$OUT/cxx" "$OUT/ref"
  "$KILN" run "$OUT/m.hlo" -i p0="$OUT/a.npy" -i p1="$OUT/b.npy" -o "$OUT/cxx" --plugin "$TINY/cxx.kiln-plugin.json" \
    --device cxx --iters 3 --json >"$OUT/stdout" 2>"$OUT/stderr"
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q '"device":"cxx"' "$OUT/stdout"; then bad "expected the module to run on cxx (rc=$rc)"; fi
  "$KILN" run "$OUT/m.hlo" -i p0="$OUT/a.npy" -i p1="$OUT/b.npy" -o "$OUT/ref" --device interpreter >/dev/null 2>"$OUT/stderr" ||
    bad "the interpreter failed"
  $PY -c "import numpy as np, sys; a = np.load('$OUT/cxx/output_0.npy'); b = np.load('$OUT/ref/output_0.npy'); sys.exit(0 if a.shape == b.shape and (a == b).all() else 1)" ||
    bad "cxx and the interpreter disagree"
  # A small constant stays in the module text, which the plugin parses itself.
  "$KILN" run "$SRC/tests/plugin/negate_constant.hlo" -o "$OUT" --plugin "$TINY/cxx.kiln-plugin.json" --device cxx \
    --json >"$OUT/stdout" 2>"$OUT/stderr"
  if [ $? -ne 0 ] || ! grep -q '"device":"cxx"' "$OUT/stdout" || ! negated; then bad "negate_constant on cxx"; fi ;;
bridge)
  GRAPH=$SRC/tests/plugin/addmul.graph
  $PY -c "import numpy as np; np.save('$OUT/x.npy', np.arange(4, dtype=np.float32)); np.save('$OUT/y.npy', np.ones(4, np.float32))"
  for jit in auto off; do
    "$KILN" run "$GRAPH" -i x="$OUT/x.npy" -i y="$OUT/y.npy" -o "$OUT" --plugin "$TINY/tiny_compile_error.kiln-plugin.json" \
      --device tiny_compile_error --jit $jit --min_cluster_size 1 >"$OUT/stdout" 2>"$OUT/stderr"
    rc=$?
    if [ $rc -ne 1 ] || ! grep -q 'device tiny_compile_error: compile failed: tiny compiler crashed politely' "$OUT/stderr"; then
      bad "jit $jit: expected exit 1 naming the device and 'compile failed' (rc=$rc)"
    fi
  done
  mkdir -p "$OUT/ref"
  "$KILN" run "$GRAPH" -i x="$OUT/x.npy" -i y="$OUT/y.npy" -o "$OUT/ref" --device interpreter >/dev/null 2>&1 || bad "interpreter failed"
  "$KILN" run "$GRAPH" -i x="$OUT/x.npy" -i y="$OUT/y.npy" -o "$OUT" --plugin "$TINY/tiny_compile_error.kiln-plugin.json" \
    --device tiny_compile_error --min_cluster_size 1 --allow_plugin_fallback >"$OUT/stdout" 2>"$OUT/stderr"
  rc=$?
  n=$(grep -c 'falling back to the next device (--allow_plugin_fallback)' "$OUT/stderr")
  if [ $rc -ne 0 ] || [ "$n" -ne 1 ]; then bad "with the flag: expected success and one warning (rc=$rc, $n warnings)"
  elif ! $PY -c "import numpy as np, sys; sys.exit(0 if (np.load('$OUT/out.npy') == np.load('$OUT/ref/out.npy')).all() else 1)"; then
    bad "with the flag: wrong result"
  fi ;;
abi_major_3)
  sed -e 's/"major": 1/"major": 3/' "$TINY/tiny_init_error.kiln-plugin.json" |
    sed -e "s|\"libtiny_init_error.so\"|\"$TINY/libtiny_init_error.so\"|" >"$OUT/three.kiln-plugin.json"
  "$KILN" plugins --plugin "$OUT/three.kiln-plugin.json" >"$OUT/stdout" 2>"$OUT/stderr"
  if ! grep -q 'unavailable *incompatible ABI major 3' "$OUT/stdout"; then bad "expected 'incompatible ABI major 3'"
  elif grep -q 'init failed' "$OUT/stdout"; then bad "the library was opened"
  fi ;;
*) echo "unknown case $CASE"; exit 2 ;;
esac

if [ $fail -eq 0 ]; then echo "$CASE: passed"; else echo "$CASE: FAILED"; fi
exit $fail
