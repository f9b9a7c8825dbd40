#!/usr/bin/env bash
# Creates the reference environment for tests/hlo/test_jax_models.py: a Python virtual
# environment at build-ref-env/ (gitignored through /build*/) holding pinned JAX, jaxlib
# and numpy from PyPI. JAX is the "original system" whose HLO kiln must read and whose
# numbers kiln must reproduce, so its version is pinned exactly: a different XLA emits
# different HLO text. Idempotent: when the environment already has the pinned versions
# the script only says so and exits, which keeps repeated CI runs fast.
set -euo pipefail

# Exactly what test_jax_models.py was validated with, dependencies of jax included.
PINS=(jax==0.10.2 jaxlib==0.10.2 numpy==2.4.6 ml_dtypes==0.6.0 scipy==1.17.1 opt_einsum==3.4.0)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ENV_DIR="$ROOT/build-ref-env"
ENV_PY="$ENV_DIR/bin/python"

have_pinned_versions() {
  [ -x "$ENV_PY" ] || return 1
  "$ENV_PY" - "${PINS[@]}" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if all(version(p.split("==")[0]) == p.split("==")[1] for p in sys.argv[1:]) else 1)
EOF
}

if have_pinned_versions; then
  echo "install-ref-env: $ENV_DIR already has ${PINS[*]}; nothing to do"
  exit 0
fi

# The interpreter that builds the environment: the first python3 on PATH that can create
# a venv with pip (a pyenv CPython on developer machines; Debian's /usr/bin/python3,
# which needs the python3-venv package, on a bare machine).
pick_python() {
  local candidate
  for candidate in "$(command -v python3 || true)" /usr/bin/python3; do
    [ -n "$candidate" ] && [ -x "$candidate" ] || continue
    if "$candidate" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! BASE_PY="$(pick_python)"; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
    echo "install-ref-env: no python3 (>= 3.11) with venv+ensurepip; installing python3-venv"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-venv
  fi
  BASE_PY="$(pick_python)" || {
    echo "install-ref-env: error: need python3 >= 3.11 with the venv module" >&2
    exit 1
  }
fi

if [ ! -x "$ENV_PY" ]; then
  echo "install-ref-env: creating virtual environment $ENV_DIR with $BASE_PY ($("$BASE_PY" --version 2>&1))"
  rm -rf "$ENV_DIR"
  "$BASE_PY" -m venv "$ENV_DIR"
fi

echo "install-ref-env: installing ${PINS[*]} into $ENV_DIR"
"$ENV_PY" -m pip install --quiet --disable-pip-version-check --no-cache-dir "${PINS[@]}"

if ! have_pinned_versions; then
  echo "install-ref-env: error: $ENV_DIR does not report the pinned versions after install" >&2
  exit 1
fi
echo "install-ref-env: done ($("$ENV_PY" -c 'import jax, numpy; print("jax", jax.__version__, "numpy", numpy.__version__)'))"
