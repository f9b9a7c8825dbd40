#!/bin/sh
# Parses, with the OpenCL plugin's parser, the HLO text kiln actually hands a plugin: every
# tests/hlo/corpus/*.hlo, examples/*.hlo and tests/plugin/*.hlo printed through
# `KILN compile F --disable_passes all`. Files kiln itself cannot compile are skipped
# (that is kiln's business, not the plugin's); every printed module must parse.
#
# usage: parse_kiln_printed.sh KILN TEST_OCL_PARSE     (run from the repository root)
set -u
KILN="${1:?usage: parse_kiln_printed.sh KILN TEST_OCL_PARSE}"
TEST="${2:?usage: parse_kiln_printed.sh KILN TEST_OCL_PARSE}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT INT TERM
n=0
skipped=0
for f in tests/hlo/corpus/*.hlo examples/*.hlo tests/plugin/*.hlo; do
  [ -e "$f" ] || continue
  out="$TMP/$(echo "$f" | tr '/' '_')"
  if "$KILN" compile "$f" --disable_passes all >"$out" 2>"$out.err"; then
    n=$((n + 1))
  else
    echo "skip $f (kiln: $(head -c 200 "$out.err" | tr '\n' ' '))"
    rm -f "$out"
    skipped=$((skipped + 1))
  fi
  rm -f "$out.err"
done
echo "kiln printed $n modules ($skipped skipped)"
[ "$n" -gt 0 ] || { echo "parse_kiln_printed: nothing to parse" >&2; exit 1; }
"$TEST" "$TMP"/*.hlo
