#!/usr/bin/env python3
"""Checks the OpenCL plugin against kiln's evaluator (the interpreter device), without the
ABI-2 host: every case is printed through `kiln compile F --disable_passes all` (the text
the host sends to compile), run through ocl_run (tests/ocl_run.c: dlopen, compile, random
inputs written as .npy, execute, outputs as .npy), then the same inputs go through
`kiln run F --device interpreter` and the outputs are compared the way `kiln conformance`
does (integers exactly, floats by normalised mean squared error <= 1e-7, 1e-4 for
f16/bf16; NaN and infinity positions must match).

Cases: the conformance generator's op x type x shape matrix (transcribed from
src/tools/cmd_conformance.c; --types narrows it, --no-matrix drops it) plus every
tests/cases/*.hlo (a first line `// ocl_run: FLAGS` passes FLAGS, e.g. --positive or
--donate). Exit status 1 when any supported case fails.

usage: check_against_interpreter.py --kiln KILN --ocl_run OCL_RUN --lib LIB.so
                                    [--types f32,s32] [--no-matrix] [--only SUBSTR] [-j N]
                                    [--host_plugin MANIFEST]
"""
import argparse
import concurrent.futures
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

T_PRED, T_SINT, T_UINT, T_FLOAT = 1, 2, 4, 8
T_NUM = T_SINT | T_UINT | T_FLOAT
T_ALL = T_NUM | T_PRED
T_SNUM = T_SINT | T_FLOAT
T_LOGIC = T_PRED | T_SINT | T_UINT

OPS = [
    ("abs", "unary", T_SNUM, 0), ("negate", "unary", T_SNUM, 0), ("sign", "unary", T_SNUM, 0),
    ("copy", "unary", T_ALL, 0), ("not", "unary", T_LOGIC, 0), ("exponential", "unary", T_FLOAT, 0),
    ("exponential-minus-one", "unary", T_FLOAT, 0), ("log", "unary", T_FLOAT, 1),
    ("log-plus-one", "unary", T_FLOAT, 1), ("sqrt", "unary", T_FLOAT, 1), ("rsqrt", "unary", T_FLOAT, 1),
    ("cbrt", "unary", T_FLOAT, 0), ("tanh", "unary", T_FLOAT, 0), ("logistic", "unary", T_FLOAT, 0),
    ("sine", "unary", T_FLOAT, 0), ("cosine", "unary", T_FLOAT, 0), ("floor", "unary", T_FLOAT, 0),
    ("ceil", "unary", T_FLOAT, 0), ("round-nearest-even", "unary", T_FLOAT, 0),
    ("round-nearest-afz", "unary", T_FLOAT, 0), ("add", "binary", T_NUM, 0), ("subtract", "binary", T_NUM, 0),
    ("multiply", "binary", T_NUM, 0), ("divide", "binary", T_NUM, 1), ("remainder", "binary", T_NUM, 1),
    ("maximum", "binary", T_NUM, 0), ("minimum", "binary", T_NUM, 0), ("power", "binary", T_FLOAT, 1),
    ("atan2", "binary", T_FLOAT, 0), ("and", "binary", T_LOGIC, 0), ("or", "binary", T_LOGIC, 0),
    ("xor", "binary", T_LOGIC, 0), ("compare", "compare", T_ALL, 0), ("select", "select", T_ALL, 0),
    ("clamp", "clamp", T_NUM, 0), ("convert", "convert", T_ALL, 0), ("reduce", "reduce", T_ALL, 0),
    ("dot", "dot", T_NUM, 0), ("broadcast", "broadcast", T_ALL, 0), ("reshape", "reshape", T_ALL, 0),
    ("transpose", "transpose", T_ALL, 0), ("slice", "slice", T_ALL, 0), ("concatenate", "concat", T_ALL, 0),
    ("reverse", "reverse", T_ALL, 0), ("pad", "pad", T_ALL, 0), ("iota", "iota", T_NUM, 0),
    ("convolution", "conv", T_FLOAT | T_SINT, 0), ("tuple", "tuple", T_ALL, 0),
    ("get-tuple-element", "gte", T_ALL, 0), ("constant", "constant", T_ALL, 0),
]
TYPES = ["pred", "s8", "s32", "s64", "u8", "u32", "f16", "bf16", "f32", "f64"]
SHAPES = [[], [7], [2, 3, 4]]


def tclass(t):
    if t == "pred":
        return T_PRED
    if t[0] == "s":
        return T_SINT
    if t[0] == "u":
        return T_UINT
    return T_FLOAT


def shp(t, dims):
    return "%s[%s]" % (t, ",".join(str(d) for d in dims))


def build_case(op, kind, t, v):
    dims = SHAPES[v]
    S = shp(t, dims)
    T = t
    zero = "false" if t == "pred" else "0"
    h = "HloModule conformance_%s\n\n" % op
    if kind == "unary":
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s %s(p0)\n}\n" % (S, S, op)
    if kind == "binary":
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  ROOT r = %s %s(p0, p1)\n}\n" % (S, S, S, op)
    if kind == "compare":
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  ROOT r = %s compare(p0, p1), direction=%s\n}\n" % (
            S, S, shp("pred", dims), ["LT", "EQ", "GE"][v])
    if kind == "select":
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  p2 = %s parameter(2)\n  ROOT r = %s select(p0, p1, p2)\n}\n" % (
            shp("pred", dims), S, S, S)
    if kind == "clamp":
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  p2 = %s parameter(2)\n  ROOT r = %s clamp(p0, p1, p2)\n}\n" % (
            S, S, S, S)
    if kind == "convert":
        frm = "s32" if t == "f32" else "f32"
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s convert(p0)\n}\n" % (shp(frm, dims), S)
    if kind == "reduce":
        if not dims:
            return None
        comb = "or" if t == "pred" else "add"
        return h + ("combine {\n  x = %s[] parameter(0)\n  y = %s[] parameter(1)\n  ROOT z = %s[] %s(x, y)\n}\n\n" % (T, T, T, comb) +
                    "ENTRY e {\n  p0 = %s parameter(0)\n  c = %s[] constant(%s)\n  ROOT r = %s reduce(p0, c), dimensions={0}, to_apply=combine\n}\n" % (
                        S, T, zero, shp(t, dims[1:])))
    if kind == "dot":
        if v == 0:
            return h + "ENTRY e {\n  p0 = %s[4] parameter(0)\n  p1 = %s[4] parameter(1)\n  ROOT r = %s[] dot(p0, p1), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n}\n" % (T, T, T)
        if v == 1:
            return h + "ENTRY e {\n  p0 = %s[3,4] parameter(0)\n  p1 = %s[4,5] parameter(1)\n  ROOT r = %s[3,5] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n" % (T, T, T)
        return h + "ENTRY e {\n  p0 = %s[2,3,4] parameter(0)\n  p1 = %s[2,4,5] parameter(1)\n  ROOT r = %s[2,3,5] dot(p0, p1), lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}\n}\n" % (T, T, T)
    if kind == "broadcast":
        return h + [
            "ENTRY e {\n  p0 = %s[] parameter(0)\n  ROOT r = %s[5] broadcast(p0), dimensions={}\n}\n",
            "ENTRY e {\n  p0 = %s[7] parameter(0)\n  ROOT r = %s[7,3] broadcast(p0), dimensions={0}\n}\n",
            "ENTRY e {\n  p0 = %s[3] parameter(0)\n  ROOT r = %s[2,3,4] broadcast(p0), dimensions={1}\n}\n"][v] % (T, T)
    if kind == "reshape":
        if v == 0:
            return h + "ENTRY e {\n  p0 = %s[] parameter(0)\n  ROOT r = %s[1,1] reshape(p0)\n}\n" % (T, T)
        if v == 1:
            return h + "ENTRY e {\n  p0 = %s[7] parameter(0)\n  ROOT r = %s[7,1] reshape(p0)\n}\n" % (T, T)
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s[6,4] reshape(p0)\n}\n" % (S, T)
    if kind == "transpose":
        if v == 0:
            return None
        if v == 1:
            return h + "ENTRY e {\n  p0 = %s[3,5] parameter(0)\n  ROOT r = %s[5,3] transpose(p0), dimensions={1,0}\n}\n" % (T, T)
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s[4,2,3] transpose(p0), dimensions={2,0,1}\n}\n" % (S, T)
    if kind == "slice":
        if v == 0:
            return None
        if v == 1:
            return h + "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s[3] slice(p0), slice={[1:6:2]}\n}\n" % (S, T)
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s[2,2,2] slice(p0), slice={[0:2], [1:3], [0:4:2]}\n}\n" % (S, T)
    if kind == "concat":
        if v == 0:
            return None
        if v == 1:
            return h + "ENTRY e {\n  p0 = %s[7] parameter(0)\n  p1 = %s[2] parameter(1)\n  ROOT r = %s[9] concatenate(p0, p1), dimensions={0}\n}\n" % (T, T, T)
        return h + "ENTRY e {\n  p0 = %s[2,3,4] parameter(0)\n  p1 = %s[2,1,4] parameter(1)\n  ROOT r = %s[2,4,4] concatenate(p0, p1), dimensions={1}\n}\n" % (T, T, T)
    if kind == "reverse":
        if v == 0:
            return None
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  ROOT r = %s reverse(p0), dimensions={%s}\n}\n" % (S, S, "0" if v == 1 else "0,2")
    if kind == "pad":
        if v == 0:
            return None
        if v == 1:
            return h + "ENTRY e {\n  p0 = %s parameter(0)\n  c = %s[] constant(%s)\n  ROOT r = %s[10] pad(p0, c), padding=2_1_0\n}\n" % (S, T, zero, T)
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  c = %s[] constant(%s)\n  ROOT r = %s[4,7,4] pad(p0, c), padding=1_1_0x0_2_1x0_0_0\n}\n" % (S, T, zero, T)
    if kind == "iota":
        if v == 0:
            return None
        if v == 1:
            return h + "ENTRY e {\n  ROOT r = %s[7] iota(), iota_dimension=0\n}\n" % T
        return h + "ENTRY e {\n  ROOT r = %s iota(), iota_dimension=1\n}\n" % S
    if kind == "conv":
        if v == 0:
            return None
        if v == 1:
            return h + "ENTRY e {\n  p0 = %s[2,7,3] parameter(0)\n  p1 = %s[3,3,2] parameter(1)\n  ROOT r = %s[2,5,2] convolution(p0, p1), window={size=3}, dim_labels=b0f_0io->b0f\n}\n" % (T, T, T)
        return h + "ENTRY e {\n  p0 = %s[1,5,5,2] parameter(0)\n  p1 = %s[3,3,2,4] parameter(1)\n  ROOT r = %s[1,3,3,4] convolution(p0, p1), window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n" % (T, T, T)
    if kind == "tuple":
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  ROOT r = (%s, %s) tuple(p0, p1)\n}\n" % (S, S, S, S)
    if kind == "gte":
        return h + "ENTRY e {\n  p0 = %s parameter(0)\n  p1 = %s parameter(1)\n  t = (%s, %s) tuple(p0, p1)\n  ROOT r = %s get-tuple-element(t), index=1\n}\n" % (S, S, S, S, S)
    if kind == "constant":
        if v == 0:
            return h + "ENTRY e {\n  ROOT r = %s[] constant(%s)\n}\n" % (T, "true" if t == "pred" else "3")
        if v == 1:
            return h + "ENTRY e {\n  ROOT r = %s[3] constant({%s})\n}\n" % (T, "true, false, true" if t == "pred" else "1, 2, 5")
        return None
    return None


def matrix_cases(types):
    for op, kind, mask, pos in OPS:
        for t in types:
            if not (tclass(t) & mask):
                continue
            for v in range(3):
                text = build_case(op, kind, t, v)
                if text:
                    yield ("%s.%s.%d" % (op, t, v), text, ["--positive"] if pos else [], t)


def file_cases():
    root = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    files = sorted(glob.glob(os.path.join(HERE, "cases", "*.hlo")))
    files += sorted(glob.glob(os.path.join(root, "tests", "hlo", "corpus", "*.hlo")))
    files += sorted(glob.glob(os.path.join(root, "examples", "*.hlo")))
    for f in files:
        text = open(f).read()
        flags = []
        first = text.split("\n", 1)[0]
        if first.startswith("// ocl_run:"):
            flags = first[len("// ocl_run:"):].split()
        base = os.path.basename(f)[:-4]
        yield (base if "/cases/" in f else os.path.basename(os.path.dirname(f)) + "." + base, text, flags, None)


def nmse(got, want, t):
    if got.shape != want.shape:
        return float("inf"), "shape %s vs %s" % (got.shape, want.shape)
    if want.dtype.kind in "iub":
        bad = np.nonzero(got.astype(np.int64) != want.astype(np.int64))
        if len(bad[0]):
            i = tuple(b[0] for b in bad)
            return float("inf"), "int mismatch at %s: got %s want %s (%d wrong)" % (i, got[i], want[i], len(bad[0]))
        return 0.0, ""
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    gn, wn = np.isnan(g), np.isnan(w)
    if (gn != wn).any():
        return float("inf"), "NaN positions differ"
    gi, wi = np.isinf(g), np.isinf(w)
    if (gi != wi).any() or (g[gi] != w[wi]).any():
        return float("inf"), "inf positions differ"
    m = ~(gn | gi)
    with np.errstate(over="ignore", invalid="ignore"):
        err = float(((g[m] - w[m]) ** 2).sum())
        ref = float((w[m] ** 2).sum())
    e = 0.0 if err == 0 else err / max(ref, 1e-30)
    return e, "nmse %.3g" % e


def run(cmd):
    """subprocess.run, retried while the binary is being replaced (a rebuild in progress)."""
    import time
    for attempt in range(10):
        try:
            return subprocess.run(cmd, capture_output=True, text=True)
        except OSError:
            if attempt == 9:
                raise
            time.sleep(3)


def run_case(args, name, text, flags, t, tmp):
    d = os.path.join(tmp, name)
    os.makedirs(os.path.join(d, "ocl"), exist_ok=True)
    src = os.path.join(d, "case.hlo")
    with open(src, "w") as f:
        f.write(text)
    p = run([args.kiln, "compile", src, "--disable_passes", "all"])
    if p.returncode:
        return "error", "kiln compile: " + p.stderr.strip()[-300:]
    printed = os.path.join(d, "printed.hlo")
    with open(printed, "w") as f:
        f.write(p.stdout)
    p = run([args.ocl_run, args.lib, printed, os.path.join(d, "ocl")] + flags)
    unsupported = p.returncode == 2
    if unsupported and not args.host_plugin:
        return "unsupported", p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    if p.returncode and not unsupported:
        return "FAIL", "ocl_run: " + p.stderr.strip()[-1500:]
    why_unsupported = p.stderr.strip().splitlines()[-1] if unsupported and p.stderr.strip() else ""
    ins = sorted(glob.glob(os.path.join(d, "ocl", "p*.npy")))
    cmd = [args.kiln, "run", src, "--device", "interpreter", "-o", os.path.join(d, "ref")]
    for i in ins:
        cmd += ["-i", "%s=%s" % (os.path.basename(i)[:-4], i)]
    p = run(cmd)
    if p.returncode:  # the evaluator cannot run it (custom-call, ...): nothing to compare against
        return "skipped", "reference: " + p.stderr.strip()[-300:]
    outs = sorted(glob.glob(os.path.join(d, "ref", "output_*.npy")))
    if not outs:
        return "error", "reference wrote no outputs"
    got_dirs = [] if unsupported else [os.path.join(d, "ocl")]
    if args.host_plugin:
        # The same inputs through kiln's ABI-2 host: placement, clustering, buffers.
        cmd = [args.kiln, "run", src, "--plugin", args.host_plugin, "--device", "opencl", "-o", os.path.join(d, "host")]
        for i in ins:
            cmd += ["-i", "%s=%s" % (os.path.basename(i)[:-4], i)]
        p = run(cmd)
        if p.returncode:
            return "FAIL", "host run: " + p.stderr.strip()[-600:]
        got_dirs.append(os.path.join(d, "host"))
    worst, detail = 0.0, ""
    for o, gdir in [(o, gd) for o in outs for gd in got_dirs]:
        gpath = os.path.join(gdir, os.path.basename(o))
        if not os.path.exists(gpath):
            return "FAIL", "missing " + os.path.basename(o)
        want, got = np.load(o), np.load(gpath)
        if want.dtype == np.float16 and got.dtype == np.float32:
            got = got.astype(np.float16)
        e, det = nmse(got, want, t)
        if e >= worst:
            worst, detail = e, det
    tol = 1e-4 if (t in ("f16", "bf16") or "f16" in text or "bf16" in text) else 1e-7
    if worst > tol:
        return "FAIL", detail
    if unsupported:
        return "hybrid-OK", "plugin declined the module; the host split it: " + detail
    return "OK", detail


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--ocl_run", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--no-matrix", action="store_true")
    ap.add_argument("--no-files", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--host_plugin", default="", help="also run every case through `kiln run --device opencl --plugin MANIFEST`")
    args = ap.parse_args()
    cases = []
    if not args.no_matrix:
        cases += list(matrix_cases(args.types.split(",")))
    if not args.no_files:
        cases += list(file_cases())
    cases = [c for c in cases if args.only in c[0]]
    tmp = tempfile.mkdtemp(prefix="ocl_check_")
    counts = {}
    fails = []
    with concurrent.futures.ThreadPoolExecutor(args.j) as ex:
        futs = [(c[0], ex.submit(run_case, args, c[0], c[1], c[2], c[3], tmp)) for c in cases]
        for name, fu in futs:
            v, det = fu.result()
            counts[v] = counts.get(v, 0) + 1
            print("  %-40s %-11s %s" % (name, v, det), flush=True)
            if v in ("FAIL", "error"):
                fails.append(name)
    print("summary: %s (%d cases)" % (", ".join("%s %d" % kv for kv in sorted(counts.items())), len(cases)))
    if not args.keep:
        subprocess.run(["rm", "-rf", tmp])
    else:
        print("kept", tmp)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
