#!/usr/bin/env python3
"""kiln's float8 / float4 / int4 / int2 conversions against ml_dtypes' tables, computed at test time.

ml_dtypes defines these types for JAX and XLA, and ONNX's reference implementation casts
with it, so its conversions are the ones kiln's evaluator and cpu backend must give. For
each format, one HLO module runs through `kiln run` on the interpreter and on the cpu
device, its inputs and outputs travelling by the CLI's .npy mapping (src/hlo/npy.h:
float8/float4 as uint8 bit patterns, int4/int2 as int8 and uint4/uint2 as uint8 values). Checked,
bit for bit (NaN by NaN-ness and sign where ml_dtypes returns a float NaN):
  * every pattern of each format to f32, f16 and f64, and back from the f32;
  * every one of the 65536 f16 patterns to each format;
  * f32 probes: every value of the format, the midpoints between neighbours and the
    floats either side of each, the overflow boundary, and 20000 random f32 bit patterns
    (NaNs and infinities among them) to each format;
  * every int4 / uint4 / int2 / uint2 value to f32 and s32, and s32 values -40..40 to
    each (wrapping, as an integer convert does; float -> int4 saturates in kiln and XLA where
    ml_dtypes wraps, so floats are not compared there).
Doubles are not compared: kiln rounds a double once, ml_dtypes rounds it through float
first (base/minifloat.h; test_minifloat.c pins the difference).

The references live in the ONNX suite's environment (onnx-suite-venv, PINS of
run_onnx_suite.py), made or reused beside the kiln binary.

Usage: test_narrow_types.py --kiln PATH [--venv DIR] [--keep]
Prints "N passed, N failed" and exits 1 if anything failed.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

FLOATS = {  # HLO name: ml_dtypes name
    "f8e4m3fn": "float8_e4m3fn",
    "f8e4m3fnuz": "float8_e4m3fnuz",
    "f8e5m2": "float8_e5m2",
    "f8e5m2fnuz": "float8_e5m2fnuz",
    "f8e8m0fnu": "float8_e8m0fnu",
    "f4e2m1fn": "float4_e2m1fn",
}
INTS = {"s4": "int4", "u4": "uint4", "s2": "int2", "u2": "uint2"}
INT_RANGES = {"s4": (-8, 7), "u4": (0, 15), "s2": (-2, 1), "u2": (0, 3)}
DEVICES = ("interpreter", "cpu")


def outer(argv):
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import run_onnx_suite  # noqa: E402  (the suite's pins: one environment for both)
    import run_tests  # noqa: E402
    return run_tests.rerun_in_venv(__file__, argv, run_onnx_suite.PINS, "onnx-suite-venv", "narrow_types")


# ----------------------------------------------------------------- inside the venv ---

def f32_probes(np, dt, bits):
    """The values of format dt, their midpoints and the floats either side, the overflow
    side of the largest value, and random f32 bit patterns."""
    vals = np.unique(np.abs(bits.view(dt).astype(np.float64)))
    vals = vals[np.isfinite(vals)]
    top = vals[-1] * 2
    pts = np.concatenate([vals, [top, top * 1.5, 1e30, np.inf, np.nan]])
    mids = (pts[:-1] + pts[1:]) / 2
    pts = np.concatenate([pts, mids]).astype(np.float32)
    pts = np.concatenate([pts, np.nextafter(pts, np.float32(0)), np.nextafter(pts, np.float32(np.inf))])
    rand = np.random.RandomState(7).randint(0, 2 ** 32, size=20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    pts = np.concatenate([pts, -pts, rand])
    return pts.astype(np.float32)


def same_floats(np, got, want):
    """Equal values with equal zero signs; NaN where NaN, of the same sign."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(want)
    ok = (np.isnan(got) == nan) & (np.signbit(got) == np.signbit(want))
    ok &= nan | (got == want)
    return ok


class Runner:
    def __init__(self, kiln, tmp):
        self.kiln, self.tmp = kiln, tmp
        self.passed, self.failed = 0, 0

    def run(self, name, hlo, inputs, device):
        import numpy as np
        d = os.path.join(self.tmp, name + "-" + device)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "m.hlo"), "w") as f:
            f.write(hlo)
        cmd = [self.kiln, "run", os.path.join(d, "m.hlo"), "-o", os.path.join(d, "out"), "--device", device]
        for i, a in enumerate(inputs):
            p = os.path.join(d, "in%d.npy" % i)
            np.save(p, a)
            cmd += ["-i", "p%d=%s" % (i, p)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("kiln failed (%d): %s" % (r.returncode, r.stderr.strip()))
        outs, k = [], 0
        while os.path.isfile(os.path.join(d, "out", "output_%d.npy" % k)):
            outs.append(np.load(os.path.join(d, "out", "output_%d.npy" % k)))
            k += 1
        return outs

    def check(self, what, ok, detail=""):
        import numpy as np
        ok = np.asarray(ok)
        if ok.all():
            self.passed += 1
            return
        self.failed += 1
        bad = np.flatnonzero(~ok.ravel())
        print("FAIL %s: %d elements differ, first at %s %s" % (what, bad.size, bad[:5].tolist(), detail))


def check_float_format(r, np, hlo_t, dt, device):
    n = 256 if hlo_t.startswith("f8") else 16
    bits = np.arange(n, dtype=np.uint8)
    f16 = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    probes = f32_probes(np, dt, bits)
    hlo = """HloModule narrow
ENTRY main {
  p0 = %(t)s[%(n)d] parameter(0)
  w32 = f32[%(n)d] convert(p0)
  w16 = f16[%(n)d] convert(p0)
  w64 = f64[%(n)d] convert(p0)
  back = %(t)s[%(n)d] convert(w32)
  p1 = f16[65536] parameter(1)
  from16 = %(t)s[65536] convert(p1)
  p2 = f32[%(m)d] parameter(2)
  from32 = %(t)s[%(m)d] convert(p2)
  ROOT r = (f32[%(n)d], f16[%(n)d], f64[%(n)d], %(t)s[%(n)d], %(t)s[65536], %(t)s[%(m)d]) tuple(w32, w16, w64, back, from16, from32)
}
""" % {"t": hlo_t, "n": n, "m": probes.size}
    w32, w16, w64, back, from16, from32 = r.run(hlo_t, hlo, [bits, f16, probes], device)
    tag = "%s on %s" % (hlo_t, device)
    ref = bits.view(dt)
    r.check(tag + ": every pattern to f32", same_floats(np, w32, ref.astype(np.float32)))
    r.check(tag + ": every pattern to f16", same_floats(np, w16, ref.astype(np.float16)))
    r.check(tag + ": every pattern to f64", same_floats(np, w64, ref.astype(np.float64)))
    r.check(tag + ": f32 back to the pattern", back == ref.astype(np.float32).astype(dt).view(np.uint8))
    r.check(tag + ": every f16 pattern", from16 == f16.astype(dt).view(np.uint8))
    want = probes.astype(dt).view(np.uint8)
    r.check(tag + ": f32 probes", from32 == want, "(inputs %s)" % probes[from32 != want][:3].tolist())


def check_int_format(r, np, hlo_t, dt, device):
    lo, hi = INT_RANGES[hlo_t]
    vals = np.arange(lo, hi + 1).astype(np.int8 if lo < 0 else np.uint8)
    wide = np.arange(-40, 41, dtype=np.int32)
    hlo = """HloModule narrow
ENTRY main {
  p0 = %(t)s[%(n)d] parameter(0)
  f = f32[%(n)d] convert(p0)
  s = s32[%(n)d] convert(p0)
  p1 = s32[81] parameter(1)
  w = %(t)s[81] convert(p1)
  ROOT r = (f32[%(n)d], s32[%(n)d], %(t)s[81]) tuple(f, s, w)
}
""" % {"t": hlo_t, "n": vals.size}
    f, s, w = r.run(hlo_t, hlo, [vals, wide], device)
    tag = "%s on %s" % (hlo_t, device)
    ref = vals.astype(dt)
    r.check(tag + ": every value to f32", f == ref.astype(np.float32))
    r.check(tag + ": every value to s32", s == ref.astype(np.int32))
    r.check(tag + ": s32 wraps", w.astype(np.int32) == wide.astype(dt).astype(np.int32))


def inner(argv):
    import numpy as np
    import ml_dtypes
    np.seterr(all="ignore")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inner", action="store_true")
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--venv")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="kiln_narrow_")
    r = Runner(os.path.abspath(args.kiln), tmp)
    print("narrow_types: ml_dtypes %s, numpy %s" % (ml_dtypes.__version__, np.__version__))
    try:
        for device in DEVICES:
            for hlo_t, name in FLOATS.items():
                check_float_format(r, np, hlo_t, np.dtype(getattr(ml_dtypes, name)), device)
            for hlo_t, name in INTS.items():
                check_int_format(r, np, hlo_t, np.dtype(getattr(ml_dtypes, name)), device)
    except RuntimeError as e:
        r.failed += 1
        print("FAIL %s" % e)
    if args.keep:
        print("kept %s" % tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (r.passed, r.failed))
    return 1 if r.failed else 0


if __name__ == "__main__":
    if "--inner" in sys.argv[1:]:
        sys.exit(inner(sys.argv[1:]))
    sys.exit(outer(sys.argv[1:]))
