"""The package versions the Python test environment pins, taken from the scripts that
install the CLI tests' references so both test the same systems: jax/jaxlib/numpy/...
from scripts/install-ref-env.sh, ONNX Runtime at the version of the npm
onnxruntime-node in scripts/install-ref-npm.sh (the PyPI wheel of the same release),
plus the test runner and the wheel-building and model-building tools."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Not referenced by any script: pytest runs the suite, onnx (onnx.helper) builds the
# ONNX test models (Debian's python3-onnx is outside the venv), wheel lets pip build
# ./python without build isolation (no index lookup at test time).
TOOL_PINS = ["pytest==9.2.0", "onnx==1.19.1", "wheel==0.45.1"]


def _script(name):
    with open(os.path.join(ROOT, "scripts", name)) as f:
        return f.read()


def ref_env_pins():
    """["jax==0.10.2", ...]: the PINS array of scripts/install-ref-env.sh."""
    m = re.search(r"^PINS=\(([^)]*)\)", _script("install-ref-env.sh"), re.M)
    if not m:
        raise RuntimeError("scripts/install-ref-env.sh has no PINS=(...) line")
    return m.group(1).split()


def ort_pin():
    """"onnxruntime==X": the release of onnxruntime-node@X in scripts/install-ref-npm.sh."""
    m = re.search(r"onnxruntime-node@([0-9][0-9A-Za-z.]*)", _script("install-ref-npm.sh"))
    if not m:
        raise RuntimeError("scripts/install-ref-npm.sh pins no onnxruntime-node@VERSION")
    return "onnxruntime==" + m.group(1)


def all_pins(quick=False):
    """Everything the venv needs: quick (the API tests only, e.g. under a sanitizer)
    leaves out the references (jax, ONNX Runtime)."""
    numpy = [p for p in ref_env_pins() if p.startswith("numpy==")]
    if quick:
        return sorted(numpy + TOOL_PINS)
    return sorted(set(ref_env_pins() + [ort_pin()] + TOOL_PINS))
