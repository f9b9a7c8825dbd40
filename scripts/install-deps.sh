#!/usr/bin/env bash
# Installs what kiln's build, tests and demo need, by package name from Debian's
# registry. Idempotent: packages already present are not touched, so a second run is a
# quick no-op. Runs as root (CI, developer machines) or through sudo when available.
set -euo pipefail

DEBIAN_PACKAGES=(cmake ninja-build gcc make python3 python3-numpy)
# clang + its runtime for the libFuzzer targets and sanitizer builds.
DEBIAN_PACKAGES+=(clang libclang-rt-14-dev)
# Model importers: protobuf-c (runtime + code generator) and the onnx.proto that
# Debian's ONNX package ships; python3-onnx builds test models.
DEBIAN_PACKAGES+=(protobuf-c-compiler libprotobuf-c-dev libonnx-dev python3-onnx)
DEBIAN_PACKAGES+=(llvm-14-dev libdnnl-dev)  # the cpu backend: LLVM JIT kernels, oneDNN dot/conv
DEBIAN_PACKAGES+=(liblapack3)  # the cpu backend runs JAX's LAPACK custom-calls through it (dlopen, no link)
DEBIAN_PACKAGES+=(pkgconf binutils)  # tests/install: pkg-config builds against the installed tree, nm/readelf
DEBIAN_PACKAGES+=(python3-dev python3-venv)  # tests/python: build the kiln extension, its test venv
DEBIAN_PACKAGES+=(python3-torch python3-torchvision)  # export torchvision models (tests/models/test_torchvision_models.py)
# plugins/opencl: the OpenCL headers and ICD loader it builds against, and PoCL, a real
# OpenCL implementation on the CPU that its tests and `kiln conformance --device opencl` run on.
DEBIAN_PACKAGES+=(opencl-headers ocl-icd-opencl-dev pocl-opencl-icd)

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
bash "$(dirname "${BASH_SOURCE[0]}")/install-ref-env.sh"
bash "$(dirname "${BASH_SOURCE[0]}")/install-ref-npm.sh"
