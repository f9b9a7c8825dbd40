#!/bin/sh
# Fails unless the shared library $1 exports exactly one defined dynamic symbol,
# kiln_plugin_init: a plugin that leaks its statically linked kiln (or anything else)
# would clash with the host or other plugins.
set -e
lib="$1"
syms=$(nm -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)
if [ "$syms" != "kiln_plugin_init" ]; then
  echo "$lib exports more than kiln_plugin_init:" >&2
  echo "$syms" | grep -v '^kiln_plugin_init$' | head -20 >&2
  exit 1
fi
echo "$lib: exports only kiln_plugin_init"
