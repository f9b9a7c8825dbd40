#!/usr/bin/env python3
"""Quantized (int8) ONNX models made by onnxruntime.quantization, run by kiln and checked
against ONNX Runtime on the same quantized file.

Models. The fp32 networks are the seeded, calibrated ones of test_torchvision_models.py
(build_model / calibrate: random weights, no download), exported at opset 17 with static
shapes -- the image models at batch TEST_BATCH (4 test images in one run), the
transformer encoder (4 layers, d_model 256, seq 128) at batch 1 -- and quantized here,
at test time:
  resnet50/qdq            quantize_static, QuantFormat.QDQ, per-channel QInt8 weights,
  mobilenet_v2/qdq        QUInt8 activations (QuantizeLinear/DequantizeLinear pairs
                          around float Conv/Add/Gemm/GlobalAveragePool)
  resnet50/qoperator      quantize_static, QuantFormat.QOperator, same types: QLinearConv
  mobilenet_v2/qoperator  (depthwise too in mobilenet_v2), QLinearAdd,
                          QLinearGlobalAveragePool, QGemm, MaxPool on uint8
  transformer_encoder/dynamic
                          quantize_dynamic, QInt8 weights (the default):
                          DynamicQuantizeLinear + MatMulInteger (+ Cast/Mul rescale)
Static calibration: MinMax over N_CALIB images of a seeded standard-normal
CalibrationDataReader (CALIB_SEED; distinct from the test images, which are
default_rng(SEED) like the fp32 tests'). bench/quantize.py quantizes the benchmark's
int8 models with this module's quantize(), so both see the same recipe.
Pre-processing: every fp32 file goes through
onnxruntime.quantization.shape_inference.quant_pre_process first, as ONNX Runtime's
quantization guide recommends: ONNX shape inference (the quantizer needs tensor shapes
and types) and ORT's basic graph optimisations (constant folding; in the transformer
MatMul+Add become Gemm). Symbolic shape inference is skipped (skip_symbolic_shape:
it needs sympy, which the pins leave out, and these static-shaped exports do not need
it).
Every model is quantized with the quantizer's defaults for the op types: the QOperator
classifiers end in com.microsoft.QGemm.

Reference: ONNX Runtime (the PyPI onnxruntime of PINS, CPU) on the same quantized file,
graph optimisations off (ORT_DISABLE_ALL: every node runs as written, a QDQ model's
QuantizeLinear/DequantizeLinear around float kernels included).
int8 results are not unique: a value computed a hair either side of k+0.5 rounds to k
or k+1, a flipped quantum moves the next layer's inputs, and a deep random-weight network
carries such flips to visible output differences. So kiln is held to ONNX Runtime's own
disagreement with itself on the same quantized network. Per model, elementwise over
the output:
  ref    = ORT(file, ORT_DISABLE_ALL);
  spread = max over ONNX Runtime's other runs of the same quantized network of |run - ref|:
           ORT(file, ORT_ENABLE_ALL) (which fuses QDQ groups into its int8 kernels --
           QLinearConv, QLinearAdd, MatMulIntegerToFloat -- that round differently),
           and for a QOperator model, whose two levels run the same kernels, also
           ORT(QDQ twin, ORT_DISABLE_ALL): the same network quantized the same way in
           QDQ format (the NET/qdq model) and run as float ops. ORT(QDQ twin,
           ORT_ENABLE_ALL) equals ORT(QOperator file) bit for bit, so the twin is the
           QOperator network, not another one;
  qerr   = |ref - ORT(fp32 file, ORT_DISABLE_ALL)|: what int8 quantization itself does;
  err    = |kiln - ref|.
Pass when
  * max(err)  <= max(2 * max(spread),  FLOOR_FRAC * max(qerr))   (every element),
  * mean(err) <= max(2 * mean(spread), FLOOR_FRAC * mean(qerr)), and
  * image classifiers: kiln's top-1 class equals ref's for every test image, or, on an
    image where ONNX Runtime's runs disagree among themselves, one of theirs, or a
    class whose ref logit ties ref's top one (a quantized output can: QGemm's); where
    kiln's own output ties at the top, each tied class is kiln's top-1.
Factor 2: kiln may round differently from either ORT path, as they do from each other.
The floor (FLOOR_FRAC = 0.05 of the quantization error) only keeps the bound from
collapsing to 0 when ONNX Runtime's runs agree bit for bit (a model whose QDQ groups
all fuse into kernels rounding like the float ops); none of the models here relies on
it except the transformer's max (0.05 * qerr 1.6 = 0.08 > 2 * spread 0.02; kiln is at
1e-6). It is not enough on its own for a deep network: measured, kiln's QLinearAdd
rounds exactly (round-half-even of (a-za)*sa/sc + (b-zb)*sb/sc + zc computed in
float64) where ONNX Runtime's MLAS kernel misrounds near-ties (e.g. 164.50001 -> 164;
3 of 3.2M values in resnet50's layer1.0, 7 of 100k in mobilenet_v2's features.6), every
uint8 tensor before is bit-identical, and those few flips grow to output differences
of 11-20% of qerr against the QOperator file -- which is why the QDQ twin is in the
spread (ONNX Runtime's own float-QDQ vs int8-kernel difference there is 33-49% of
qerr). The QDQ models show the same effect from the float side: kiln's first Conv
differs from ONNX Runtime's in the last bits (max 2e-6, measured with every tensor made
a graph output), 18 of 3.2M values of resnet50's first QuantizeLinear land on the other
side of a tie, and kiln (cpu or interpreter) ends about as far from ORT_DISABLE_ALL as
ORT_ENABLE_ALL does.

Prints per model: the quantized graph's op histogram, max/mean |err| with their bounds,
ORT's spread and qerr, top-1 agreement (with the top-1 logit margin over the runner-up:
random-weight networks tend to pick one class for every input, so a small margin is
what makes agreement meaningful), and wall times of quantization, ONNX Runtime
(session + first run, each level) and kiln (the `kiln run` process, which includes
compilation; informational, never asserted). Then "N passed, N failed"; exit 1 on any
failure.

Stages: the fp32 export needs torch 1.13 / torchvision 0.14, which are Debian's
(/usr/bin/python3, python3-torch); quantization and the reference need the pinned
onnx/onnxruntime, which live in a virtual environment of their own (PINS, made once
and reused by tests/python/run_tests.py's rerun_in_venv; default build-venvs/quant-venv,
shared by every build directory). So this script runs the export in a /usr/bin/python3 process, then re-runs
itself inside the venv for the rest.

Usage: test_quantized_models.py --kiln PATH [--venv DIR] [--work DIR] [-k SUBSTR]
       [--quick] [--keep]
  --quick: mobilenet_v2/qdq only (about 20 s once the venv exists).
  The default set takes about a minute on 2 cores once the venv exists (the first run
  makes the venv from PyPI: ~20 s), most of it the fp32 exports and the quantization.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import test_torchvision_models as tv  # noqa: E402  (build_model, calibrate, SEED; numpy-only at import)

PINS = ["numpy==2.4.6", "onnx==1.23.2", "onnxruntime==1.31.1"]  # the ONNX suite's pins (less ml_dtypes)
VENV_NAME = "quant-venv"
TORCH_PYTHON = "/usr/bin/python3"  # Debian's, with python3-torch / python3-torchvision
OPSET = 17
SEED = tv.SEED          # test images: default_rng(SEED).standard_normal, like the fp32 tests
CALIB_SEED = tv.SEED + 100
N_CALIB = 8             # calibration images
TEST_BATCH = 4          # test images (one batch) for the image models
SPREAD_FACTOR = 2.0
FLOOR_FRAC = 0.05
KILN_TIMEOUT_S = 600

# label -> (fp32 network, quantization)
MODELS = [
    ("resnet50/qdq", "resnet50", "qdq"),
    ("mobilenet_v2/qdq", "mobilenet_v2", "qdq"),
    ("resnet50/qoperator", "resnet50", "qoperator"),
    ("mobilenet_v2/qoperator", "mobilenet_v2", "qoperator"),
    ("transformer_encoder/dynamic", "transformer_encoder", "dynamic"),
]
QUICK = ["mobilenet_v2/qdq"]
CLASSIFIERS = ("resnet50", "mobilenet_v2")


def log(msg):
    print("quantized_models: " + msg, flush=True)


def input_shape(net, batch):
    return (batch, 128, 256) if net == "transformer_encoder" else (batch, 3, 224, 224)


def test_batch(net):
    return TEST_BATCH if net in CLASSIFIERS else 1


def test_input(net, batch):
    import numpy as np
    return np.random.default_rng(SEED).standard_normal(input_shape(net, batch)).astype(np.float32)


def calibration_images(net):
    """N_CALIB seeded standard-normal inputs at batch 1, shape (N_CALIB, ...)."""
    import numpy as np
    return np.random.default_rng(CALIB_SEED).standard_normal((N_CALIB,) + input_shape(net, 1)[1:]).astype(np.float32)


def selected(args):
    names = QUICK if args.quick else [m[0] for m in MODELS]
    return [m for m in MODELS if m[0] in names and args.k in m[0]]


# ------------------------------------------------------------ stage 1: fp32 export ---

def export_fp32(net, batch, path):
    """Exports the seeded network of test_torchvision_models at a static batch (opset 17,
    constant folding; no dynamic axes, so every runtime and the quantizer see fixed
    shapes). Runs under Debian's python3 (torch 1.13)."""
    import torch
    m, _ = tv.build_model(net, False)
    x = torch.from_numpy(test_input(net, batch))
    tmp = path + ".partial"
    # Not under torch.no_grad(): see test_torchvision_models.export.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (x,), tmp, opset_version=OPSET, input_names=["x"], output_names=["y"],
                          do_constant_folding=True)
    os.replace(tmp, path)


def export_stage(argv):
    """--export-stage WORK NET:BATCH...: writes WORK/NET-bBATCH/fp32.onnx."""
    import torch
    torch.set_num_threads(2)
    work = argv[0]
    for spec in argv[1:]:
        net, batch = spec.split(":")
        d = os.path.join(work, "%s-b%s" % (net, batch))
        os.makedirs(d, exist_ok=True)
        t0 = time.time()
        export_fp32(net, int(batch), os.path.join(d, "fp32.onnx"))
        log("exported %s at batch %s in %.1f s" % (net, batch, time.time() - t0))
    return 0


# ------------------------------------------------------- quantization (in the venv) ---

def cpu_has_vnni():
    """Whether this CPU multiplies u8 x s8 with 32-bit accumulation (AVX512-VNNI,
    AVX-VNNI or AMX), from /proc/cpuinfo's flags; True where they cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), None)
    except OSError:
        return True
    return flags is None or bool({"avx512_vnni", "avx_vnni", "amx_int8"} & set(flags))


def quantize(kind, src, dst, net, tmp_dir=None):
    """Quantizes the fp32 file src into dst: kind 'qdq' / 'qoperator' (static,
    per-channel QInt8 weights, QUInt8 activations, MinMax-calibrated on
    calibration_images(net) fed in batches of src's own static batch size) or
    'dynamic'. Needs onnx and onnxruntime (the venv).
    On a CPU without VNNI the weights are quantized to 7 bits (reduce_range), as ONNX
    Runtime's quantization guide advises there: its u8 x s8 kernels then add pairs of
    products in saturating 16 bits, so with full-range weights the reference itself
    would clip (kiln's integer products are exact either way)."""
    reduce_range = not cpu_has_vnni()
    import numpy as np
    import onnx
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process
    tmp_dir = tmp_dir or os.path.dirname(os.path.abspath(dst))
    pre = os.path.join(tmp_dir, os.path.basename(dst) + ".pre.onnx")
    quant_pre_process(src, pre, skip_symbolic_shape=True)
    try:
        if kind == "dynamic":
            quantize_dynamic(pre, dst, weight_type=QuantType.QInt8, reduce_range=reduce_range)
            return
        model = onnx.load(pre, load_external_data=False)
        name = model.graph.input[0].name
        batch = model.graph.input[0].type.tensor_type.shape.dim[0].dim_value
        images = calibration_images(net)
        if not batch or N_CALIB % batch:
            raise ValueError("%d calibration images do not split into batches of %r" % (N_CALIB, batch))

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.batches = iter([images[i:i + batch] for i in range(0, N_CALIB, batch)])

            def get_next(self):
                b = next(self.batches, None)
                return None if b is None else {name: np.ascontiguousarray(b)}

        quantize_static(pre, dst, Reader(), quant_format=QuantFormat.QDQ if kind == "qdq" else QuantFormat.QOperator,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True,
                        reduce_range=reduce_range)
    finally:
        if os.path.exists(pre):
            os.remove(pre)


# ------------------------------------------------------------- checks (in the venv) ---

def run_ort(path, x, level):
    """(output, seconds for session creation + one run)."""
    import onnxruntime as ort
    t0 = time.time()
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    y = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    return y, time.time() - t0


def run_kiln(kiln, path, xp, out):
    """(output or error text, seconds)."""
    import numpy as np
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.time()
    try:
        r = subprocess.run([kiln, "run", path, "-i", "x=" + xp, "-o", out], capture_output=True, text=True,
                           timeout=KILN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "kiln timed out after %d s" % KILN_TIMEOUT_S, time.time() - t0
    dt = time.time() - t0
    if r.returncode != 0:
        err = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
        return "kiln exit %d: %s" % (r.returncode, "\n".join(err[-5:])[:1500]), dt
    return np.load(os.path.join(out, "y.npy")), dt


def op_histogram(path):
    import onnx
    from collections import Counter
    c = Counter(n.op_type for n in onnx.load(path, load_external_data=False).graph.node)
    return ", ".join("%s %d" % kv for kv in sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))


def top1_check(got, ref, others):
    """(agree count, n, failures text or None, smallest top-1 margin of ref, classes text).
    kiln must give ref's class, or, where the ORT runs disagree on an image, any of theirs,
    or a class tied with ref's at the top (a quantized output can tie: margin 0). A
    class tied at kiln's top counts as kiln's (argmax would name the lowest index)."""
    import numpy as np
    n = got.shape[0]
    kt = got.reshape(n, -1).argmax(1)
    rt = ref.reshape(n, -1).argmax(1)
    ots = [o.reshape(n, -1).argmax(1) for o in others]
    srt = np.sort(ref.reshape(n, -1), 1)
    margin = float((srt[:, -1] - srt[:, -2]).min())
    r = ref.reshape(n, -1)
    g = got.reshape(n, -1)
    # kiln's top class is any class at kiln's maximum: a quantized output can tie there
    # too, and argmax then names the lowest index, which says nothing.
    def kiln_top(i, c):
        return g[i, c] == g[i, kt[i]]
    bad = [i for i in range(n) if not kiln_top(i, rt[i]) and all(not kiln_top(i, ot[i]) for ot in ots)
           and r[i, kt[i]] != r[i, rt[i]]]
    msg = None
    if bad:
        msg = "; ".join("image %d: kiln class %d, ORT %d (other ORT runs %s)" % (
            i, kt[i], rt[i], "/".join(str(ot[i]) for ot in ots)) for i in bad)
    classes = "kiln %s, ORT %s%s" % (" ".join(map(str, kt)), " ".join(map(str, rt)),
                                     "".join(" / %s" % " ".join(map(str, ot)) for ot in ots))
    return n - len(bad), n, msg, margin, classes


def check_model(label, net, kind, work, kiln):
    """Prints the model's lines; returns True when it passes."""
    import numpy as np
    import onnxruntime as ort
    none_, all_ = ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    batch = test_batch(net)
    d = os.path.join(work, label.replace("/", "_"))
    os.makedirs(d, exist_ok=True)
    fp32 = os.path.join(work, "%s-b%d" % (net, batch), "fp32.onnx")
    q = os.path.join(d, "model.onnx")
    # A QOperator model's QDQ twin is NET/qdq's model (the same recipe in QDQ format).
    twin = os.path.join(work, "%s_qdq" % net, "model.onnx") if kind == "qoperator" else None
    t0 = time.time()
    try:
        quantize(kind, fp32, q, net, tmp_dir=d)
        if twin and not os.path.exists(twin):
            os.makedirs(os.path.dirname(twin), exist_ok=True)
            quantize("qdq", fp32, twin, net, tmp_dir=d)
    except Exception as e:  # noqa: BLE001
        print("FAIL %s: quantization failed: %s" % (label, str(e).splitlines()[0][:300]), flush=True)
        return False
    quant_s = time.time() - t0
    x = test_input(net, batch)
    xp = os.path.join(d, "x.npy")
    np.save(xp, x)
    ref, t_none = run_ort(q, x, none_)
    ref_all, t_all = run_ort(q, x, all_)
    others = [ref_all]
    if twin:
        others.append(run_ort(twin, x, none_)[0])
    f32, _ = run_ort(fp32, x, none_)
    got, kiln_s = run_kiln(kiln, q, xp, os.path.join(d, "kiln"))
    print("     %s: %s" % (label, op_histogram(q)), flush=True)
    times = "quantize %.1f s, ORT %.2f s (all-opt %.2f s), kiln %.1f s" % (quant_s, t_none, t_all, kiln_s)
    if isinstance(got, str):
        print("FAIL %-28s %s | %s" % (label, got, times), flush=True)
        return False
    r64 = ref.astype(np.float64)
    spread = np.max([np.abs(o.astype(np.float64) - r64) for o in others], axis=0)
    qerr = np.abs(r64 - f32.astype(np.float64))
    problems = []
    if got.shape != ref.shape or got.dtype != ref.dtype:
        problems.append("output %s %s, ORT %s %s" % (got.dtype, got.shape, ref.dtype, ref.shape))
        err = np.full(ref.shape, np.inf)
    else:
        err = np.abs(got.astype(np.float64) - r64)
        err[np.isnan(err)] = np.inf
    max_bound = max(SPREAD_FACTOR * spread.max(), FLOOR_FRAC * qerr.max())
    mean_bound = max(SPREAD_FACTOR * spread.mean(), FLOOR_FRAC * qerr.mean())
    if not err.max() <= max_bound:
        i = np.unravel_index(np.argmax(err), err.shape)
        problems.append("max|err| %.4g > %.4g at %s: kiln %r, ORT %r" % (
            err.max(), max_bound, tuple(int(k) for k in i), float(got[i]) if got.shape == ref.shape
            else float("nan"), float(ref[i])))
    if not err.mean() <= mean_bound:
        problems.append("mean|err| %.4g > %.4g" % (err.mean(), mean_bound))
    top = "top-1 n/a"
    if net in CLASSIFIERS and got.shape == ref.shape:
        agree, n, msg, margin, classes = top1_check(got, ref, others)
        top = "top-1 %d/%d (%s; ORT margin >= %.3g)" % (agree, n, classes, margin)
        if msg:
            problems.append(msg)
    ok = not problems
    print("%s %-28s max|err| %.3g (<= %.3g)  mean|err| %.3g (<= %.3g)  ORT spread max %.3g mean %.3g  "
          "qerr max %.3g mean %.3g  mean|ref| %.3g  %s | %s" % (
              "PASS" if ok else "FAIL", label, err.max(), max_bound, err.mean(), mean_bound, spread.max(),
              spread.mean(), qerr.max(), qerr.mean(), np.abs(r64).mean(), top, times), flush=True)
    for p in problems:
        print("     " + p, flush=True)
    return ok


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--venv", help="the venv of PINS (default: build-venvs/%s)" % VENV_NAME)
    ap.add_argument("--work", help="scratch directory (default: a temporary one, removed after a pass)")
    ap.add_argument("-k", default="", help="only models whose label contains this")
    ap.add_argument("--quick", action="store_true", help="only " + ", ".join(QUICK))
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory")
    return ap.parse_args(argv)


def inner(argv):
    args = parse(argv)
    import onnxruntime
    kiln = os.path.abspath(args.kiln)
    log("onnxruntime %s; rule: max|err| <= max(%g*max spread, %g*max qerr), mean likewise; top-1 equal%s"
        % (onnxruntime.__version__, SPREAD_FACTOR, FLOOR_FRAC,
           "" if cpu_has_vnni() else "; no VNNI on this CPU: 7-bit weights (reduce_range)"))
    passed = failed = 0
    for label, net, kind in selected(args):
        try:
            ok = check_model(label, net, kind, args.work, kiln)
        except Exception as e:  # noqa: BLE001
            print("FAIL %s: %s: %s" % (label, type(e).__name__, str(e).splitlines()[0][:300] if str(e) else ""),
                  flush=True)
            ok = False
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed), flush=True)
    return 1 if failed else 0


def outer(argv):
    args = parse(argv)
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    import run_tests  # noqa: E402  (tests/python: one home for pinned venvs)
    models = selected(args)
    if not models:
        log("no model matches")
        print("0 passed, 1 failed")
        return 1
    work = os.path.abspath(args.work or tempfile.mkdtemp(prefix="kiln-quant-"))
    os.makedirs(work, exist_ok=True)
    specs = sorted({"%s:%d" % (net, test_batch(net)) for _, net, _ in models})
    t0 = time.time()
    r = subprocess.run([TORCH_PYTHON, os.path.abspath(__file__), "--export-stage", work] + specs)
    if r.returncode != 0:
        log("the fp32 export (%s, torch) failed with exit %d" % (TORCH_PYTHON, r.returncode))
        print("0 passed, 1 failed")
        return 1
    log("fp32 exports in %.1f s" % (time.time() - t0))
    rest = [a for a in argv]
    if not args.work:
        rest += ["--work", work]
    rc = run_tests.rerun_in_venv(__file__, rest, PINS, VENV_NAME, "quantized_models")
    if rc == 0 and not args.work and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    elif not args.work:
        log("files kept in %s" % work)
    return rc


if __name__ == "__main__":
    if sys.argv[1:2] == ["--export-stage"]:
        sys.exit(export_stage(sys.argv[2:]))
    if "--inner" in sys.argv[1:]:
        sys.exit(inner(sys.argv[1:]))
    sys.exit(outer(sys.argv[1:]))
