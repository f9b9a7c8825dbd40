"""Shared helpers of the kiln Python package tests (tests/python): repository paths,
the reference test modules of tests/models and tests/hlo loaded under private names
(their cases, tolerances and comparisons are reused, not copied), and small models
built at test time."""

import importlib.util
import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # JAX is the reference on CPU only

import numpy as np  # noqa: E402
import pytest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
NPM_DIR = os.path.join(ROOT, "build-ref-npm")


def load_module(name, relpath):
    """Imports ROOT/relpath as module `name` (once); its directory joins sys.path so its
    own sibling imports work."""
    if name in sys.modules:
        return sys.modules[name]
    path = os.path.join(ROOT, relpath)
    d = os.path.dirname(path)
    if d not in sys.path:
        sys.path.insert(0, d)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def build_dir():
    d = os.environ.get("KILN_TEST_BUILD_DIR")
    if not d:
        pytest.fail("KILN_TEST_BUILD_DIR is not set: run the suite through tests/python/run_tests.py")
    return d


# An HLO module that spins in a while loop for n iterations (s32 parameter 1) over a
# vector: slow on the interpreter in proportion to n, so one model can serve both
# long and short runs (the GIL and concurrency tests).
SPIN_HLO = """HloModule spin

cond {
  cp = (s32[], s32[], f32[64]) parameter(0)
  ci = s32[] get-tuple-element(cp), index=0
  cn = s32[] get-tuple-element(cp), index=1
  ROOT lt = pred[] compare(ci, cn), direction=LT
}

body {
  bp = (s32[], s32[], f32[64]) parameter(0)
  bi = s32[] get-tuple-element(bp), index=0
  one = s32[] constant(1)
  bi1 = s32[] add(bi, one)
  bn = s32[] get-tuple-element(bp), index=1
  bv = f32[64] get-tuple-element(bp), index=2
  bs = f32[64] sine(bv)
  ROOT bt = (s32[], s32[], f32[64]) tuple(bi1, bn, bs)
}

ENTRY main {
  x = f32[64] parameter(0)
  n = s32[] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], s32[], f32[64]) tuple(zero, n, x)
  w = (s32[], s32[], f32[64]) while(init), condition=cond, body=body
  ROOT r = f32[64] get-tuple-element(w), index=2
}
"""


def spin_reference(x, n):
    v = x.astype(np.float32)
    for _ in range(int(n)):
        v = np.sin(v)
    return v
