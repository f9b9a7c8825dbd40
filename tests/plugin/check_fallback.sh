#!/bin/sh
# How `kiln run` treats a plugin that fails: a compile error falls back to the host
# evaluator with a warning and the right answer; an execute error is a clean error
# (exit 1, message naming the device), never a crash. Also: compile options reach the
# plugin (--plugin_option example.reject_opcodes=negate makes the example plugin's
# compile refuse the module, so the host falls back), and a malformed option is an error.
# usage: check_fallback.sh KILN PLUGIN_DIR HLO_DIR
set -u
KILN=$1 PLUGINS=$2 HLO=$3/negate_constant.hlo
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
fail=0

"$KILN" run "$HLO" -o "$OUT" --plugin "$PLUGINS/tiny_compile_error.kiln-plugin.json" \
  --device tiny_compile_error --json >"$OUT/stdout" 2>"$OUT/stderr"
rc=$?
if [ $rc -ne 0 ] || ! grep -q 'running it on interpreter' "$OUT/stderr" || ! grep -q '"device":"interpreter"' "$OUT/stdout"; then
  echo "compile error: expected a fallback to interpreter (rc=$rc)"; cat "$OUT/stderr"; fail=1
elif ! /usr/bin/python3 -c "import numpy as np, sys; sys.exit(0 if (np.load('$OUT/output_0.npy') == -np.array([1, -2, 3.5, 0], np.float32)).all() else 1)"; then
  echo "compile error: fallback gave a wrong result"; fail=1
fi

"$KILN" run "$HLO" -o "$OUT" --plugin "$PLUGINS/tiny_exec_error.kiln-plugin.json" \
  --device tiny_exec_error >"$OUT/stdout" 2>"$OUT/stderr"
rc=$?
if [ $rc -ne 1 ] || ! grep -q 'tiny_exec_error' "$OUT/stderr"; then
  echo "execute error: expected exit 1 naming the device (rc=$rc)"; cat "$OUT/stderr"; fail=1
fi

EXAMPLE=$(dirname "$PLUGINS")/../plugins/example/example.kiln-plugin.json
"$KILN" run "$HLO" -o "$OUT" --plugin "$EXAMPLE" --device example --json >"$OUT/stdout" 2>"$OUT/stderr"
if [ $? -ne 0 ] || ! grep -q '"device":"example"' "$OUT/stdout"; then
  echo "example plugin: expected the module to run on it"; cat "$OUT/stderr"; fail=1
fi
"$KILN" run "$HLO" -o "$OUT" --plugin "$EXAMPLE" --device example --json \
  --plugin_option example.reject_opcodes=negate >"$OUT/stdout" 2>"$OUT/stderr"
if [ $? -ne 0 ] || ! grep -q 'rejected by compile option example.reject_opcodes' "$OUT/stderr" ||
   ! grep -q '"device":"interpreter"' "$OUT/stdout"; then
  echo "compile option: expected the plugin to refuse and the host to fall back"; cat "$OUT/stderr"; fail=1
fi
"$KILN" run "$HLO" -o "$OUT" --plugin "$EXAMPLE" --device example --plugin_option bogus >"$OUT/stdout" 2>"$OUT/stderr"
if [ $? -ne 1 ] || ! grep -q "plugin_option takes KEY=VALUE (got 'bogus')" "$OUT/stderr"; then
  echo "malformed option: expected exit 1 naming it"; cat "$OUT/stderr"; fail=1
fi

if [ $fail -eq 0 ]; then echo "5 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $fail
