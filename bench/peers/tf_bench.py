"""Benchmark peer: TensorFlow 2.21 (tensorflow-cpu from PyPI, in the venv of
bench/tf_models.py's PINS) running a SavedModel's serving_default signature, the way a
TF serving process does: tf.saved_model.load, then the signature's concrete function
(graph execution of the traced tf.function, Grappler and oneDNN as TF ships them) on
inputs made tf.constant once. Threads: intra-op 2 (the machine's cores), inter-op 1,
set before the first op runs.

--xla turns on XLA auto-clustering: TF_XLA_FLAGS="--tf_xla_auto_jit=2
--tf_xla_cpu_global_jit" is put in the environment before TensorFlow is imported, so
the functions' graphs are clustered and compiled by XLA:CPU. TensorFlow logs
"Compiled cluster using XLA!" once when a cluster was compiled; the script keeps its
own stderr in a file while it runs (then copies it back) and reports that as
xla_compiled, so a run where nothing was clustered is visible as such.

Timing follows bench/peers/common.js (as torch_bench.py does): one first run
(first_ms), up to --warmup runs while the first --max-seconds last, then timed runs
until --iters runs or --max-seconds (bench/peers/timing.py has the --min-iters rule). A run
includes reading every output back to numpy. With --ref KEY=REF.npy the first run's
outputs are compared with those arrays (max_abs_diff, max_abs_ref). Prints one JSON
line: median_ms, first_ms, min_ms, iters, warmup, load_ms, version, threads, xla,
xla_compiled, max_abs_diff.

Usage: VENV/bin/python bench/peers/tf_bench.py SAVED_MODEL_DIR KEY=X.npy... [--xla]
       [--ref KEY=REF.npy]... [--iters N] [--min-iters N] [--warmup N] [--max-seconds T]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

from timing import add_timing_args, check_timing_args, warm_and_time  # bench/peers/timing.py, beside this script

INTRA_THREADS = 2
INTER_THREADS = 1
XLA_FLAGS = '--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit'
XLA_LOG_LINE = 'Compiled cluster using XLA'


def pairs(items, what):
    out = {}
    for item in items:
        if '=' not in item:
            raise SystemExit('tf_bench: %s %r is not KEY=FILE.npy' % (what, item))
        k, v = item.split('=', 1)
        out[k] = v
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('model')
    ap.add_argument('inputs', nargs='+')
    ap.add_argument('--xla', action='store_true')
    ap.add_argument('--ref', action='append', default=[])
    add_timing_args(ap)
    args = ap.parse_args()
    check_timing_args(ap, args)
    inputs, refs = pairs(args.inputs, 'input'), pairs(args.ref, '--ref')

    if args.xla:
        os.environ['TF_XLA_FLAGS'] = XLA_FLAGS
        os.environ['TF_CPP_MIN_LOG_LEVEL'] = '0'  # the "Compiled cluster" line is INFO
    else:
        os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    # TensorFlow's C++ logging writes to fd 2: keep it in a file to look for the XLA line.
    log_file = tempfile.TemporaryFile()
    saved_stderr = os.dup(2)
    os.dup2(log_file.fileno(), 2)
    try:
        import numpy as np
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(INTRA_THREADS)
        tf.config.threading.set_inter_op_parallelism_threads(INTER_THREADS)
        t0 = time.perf_counter()
        loaded = tf.saved_model.load(args.model)
        fn = loaded.signatures['serving_default']
        load_ms = (time.perf_counter() - t0) * 1e3
        feeds = {k: tf.constant(np.load(p)) for k, p in inputs.items()}

        def run_once():
            return {k: v.numpy() for k, v in fn(**feeds).items()}

        first_start = time.perf_counter()
        first = run_once()
        first_ms = (time.perf_counter() - first_start) * 1e3
        diff = ref_max = None
        for k, p in refs.items():
            ref = np.load(p)
            if k not in first or first[k].shape != ref.shape:
                raise SystemExit('tf_bench: output %s: %s, reference shape %s' % (
                    k, 'missing' if k not in first else 'shape %s' % (first[k].shape,), ref.shape))
            if ref.size:
                d = float(np.max(np.abs(first[k].astype(np.float64) - ref.astype(np.float64))))
                diff = max(diff or 0.0, d)
                ref_max = max(ref_max or 0.0, float(np.max(np.abs(ref.astype(np.float64)))))
        times, warmup = warm_and_time(run_once, first_start, args)
        threads = {'intra_op': tf.config.threading.get_intra_op_parallelism_threads(),
                   'inter_op': tf.config.threading.get_inter_op_parallelism_threads()}
        version = tf.__version__
    finally:
        sys.stderr.flush()
        os.dup2(saved_stderr, 2)
        log_file.seek(0)
        log = log_file.read().decode(errors='replace')
        sys.stderr.write(log[-20000:])
    print(json.dumps({'median_ms': statistics.median(times), 'first_ms': first_ms, 'min_ms': min(times),
                      'iters': len(times), 'warmup': warmup, 'load_ms': load_ms, 'version': version,
                      'threads': threads, 'xla': args.xla, 'xla_flags': XLA_FLAGS if args.xla else None,
                      'xla_compiled': XLA_LOG_LINE in log, 'max_abs_diff': diff, 'max_abs_ref': ref_max}))


if __name__ == '__main__':
    main()
