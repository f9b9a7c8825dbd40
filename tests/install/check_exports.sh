#!/bin/sh
# usage: check_exports.sh LIBKILN_SO KILN_H
# Fails unless LIBKILN_SO (the real file, libkiln.so.MAJOR.MINOR.PATCH) exports exactly the
# functions that KILN_H declares KILN_API, each as a function under the version node
# KILN_<MAJOR>, nothing else (internal names such as kiln_flags or kiln_cpu_ipow start with
# kiln_ too and must stay inside), and carries the SONAME libkiln.so.<MAJOR>, with MAJOR,
# MINOR and PATCH read from the header's KILN_VERSION_* macros.
set -eu
lib="$1"
header="$2"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kiln-exports.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0

version_part() { sed -n "s/^#define KILN_VERSION_$1 *\([0-9][0-9]*\).*/\1/p" "$header"; }
major=$(version_part MAJOR)
minor=$(version_part MINOR)
patch=$(version_part PATCH)
if [ -z "$major" ] || [ -z "$minor" ] || [ -z "$patch" ]; then
  echo "$header: no KILN_VERSION_MAJOR/MINOR/PATCH" >&2
  exit 1
fi

# The header's public functions: every line that starts with KILN_API names one, before
# its '(' (a declaration whose name is not on that line is an error here, and in CMake).
grep '^KILN_API ' "$header" >"$tmp/decls" || true
sed -n 's/^KILN_API [^(]*[^A-Za-z0-9_]\([A-Za-z_][A-Za-z0-9_]*\) *(.*/\1/p' "$tmp/decls" | sort -u >"$tmp/expected"
if [ "$(wc -l <"$tmp/decls")" -ne "$(wc -l <"$tmp/expected")" ] || [ ! -s "$tmp/expected" ]; then
  echo "$header: could not read a function name from every KILN_API line" >&2
  exit 1
fi

# What the library exports: defined dynamic symbols, less the version node itself.
nm -D --defined-only --with-symbol-versions "$lib" >"$tmp/nm"
awk 'NF >= 3 && $2 != "A" { print $3 }' "$tmp/nm" | sed 's/@.*//' | sort -u >"$tmp/actual"
if ! cmp -s "$tmp/expected" "$tmp/actual"; then
  echo "$lib: exports differ from the KILN_API functions of $header" >&2
  echo "  declared but not exported:" >&2
  comm -23 "$tmp/expected" "$tmp/actual" | sed 's/^/    /' >&2
  echo "  exported but not declared:" >&2
  comm -13 "$tmp/expected" "$tmp/actual" | head -40 | sed 's/^/    /' >&2
  fail=1
fi
# Each one a function (T), versioned KILN_<MAJOR> as the default version (@@).
bad=$(awk -v node="KILN_$major" 'NF >= 3 && $2 != "A" {
  n = $3; sub(/^[^@]*/, "", n)
  if ($2 != "T" || n != "@@" node) print "    " $0 }' "$tmp/nm")
if [ -n "$bad" ]; then
  echo "$lib: exports that are not functions versioned @@KILN_$major:" >&2
  echo "$bad" >&2
  fail=1
fi

soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" != "libkiln.so.$major" ]; then
  echo "$lib: SONAME is '$soname', expected libkiln.so.$major" >&2
  fail=1
fi
base=$(basename "$lib")
if [ "$base" != "libkiln.so.$major.$minor.$patch" ]; then
  echo "$lib: file name is $base, expected libkiln.so.$major.$minor.$patch" >&2
  fail=1
fi
[ "$fail" -eq 0 ] || exit 1
echo "$lib: SONAME $soname, exports exactly the $(wc -l <"$tmp/expected") KILN_API functions of $header (@@KILN_$major)"
