"""Benchmark peer: XLA:CPU through JAX (the pinned JAX of build-ref-env/, made by
scripts/install-ref-env.sh) running a program of bench/jax_models.py -- the same
function whose HLO text kiln runs -- on the same input .npy files.

Threads: XLA:CPU's intra-op pool (its Eigen pool, which runs the parallel loops of its
kernels and its dots/convolutions) is sized by the PJRT CPU client from the environment
variable PJRT_NPROC (then NPROC, else all cores); this script sets PJRT_NPROC to THREADS
(2, the machine's cores: what kiln's OpenMP pool uses, and what the other peers are given)
and XLA_FLAGS="--xla_cpu_multi_thread_eigen=true" (XLA's default, stated) before JAX is
imported. The JSON line reports how many "XLAEigen" threads the process really has.

Compile time: `jax.jit(f, keep_unused=True).lower(*args)` (tracing to StableHLO; lower_ms)
then `.compile()` (XLA's pass pipeline and LLVM codegen; compile_ms), each timed on its
own, in a fresh process, so nothing is cached (JAX's persistent compilation cache is off
unless configured, and this script does not configure it).

Timing follows bench/peers/timing.py (as tf_bench.py does): one first run (first_ms), up
to --warmup runs while the first --max-seconds last, then timed runs until --iters runs or
--max-seconds. The inputs are put on the device once (jax.device_put); every run calls the
compiled executable and reads every output back with np.asarray (so a run includes
waiting for the result). The first run's outputs are compared with the reference
outputs in DIR (ref_N.npy, from jax_models.py: max_abs_diff, max_abs_ref), so a broken
thread setting or input file shows up. Prints one JSON line: median_ms, first_ms, min_ms,
iters, warmup, lower_ms, compile_ms, version, threads, xla_flags, max_abs_diff,
max_abs_ref.

Usage: build-ref-env/bin/python bench/peers/jax_bench.py NAME DIR [--iters N]
       [--min-iters N] [--warmup N] [--max-seconds T]
(DIR: what `jax_models.py NAME DIR` wrote.)
"""

import argparse
import json
import os
import statistics
import sys
import time

from timing import add_timing_args, check_timing_args, warm_and_time  # bench/peers/timing.py, beside this script

THREADS = 2
XLA_FLAGS = '--xla_cpu_multi_thread_eigen=true'
PEERS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(PEERS))
import jax_models  # noqa: E402  (bench/jax_models.py: the programs)


def eigen_threads():
    """How many threads of this process XLA named as its Eigen pool's ("tf_XLAEigen")."""
    n = 0
    for tid in os.listdir('/proc/self/task'):
        try:
            with open('/proc/self/task/%s/comm' % tid) as f:
                n += 'XLAEigen' in f.read()
        except OSError:
            pass
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('name', choices=jax_models.NAMES)
    ap.add_argument('dir')
    add_timing_args(ap)
    args = ap.parse_args()
    check_timing_args(ap, args)

    os.environ['PJRT_NPROC'] = str(THREADS)
    os.environ['XLA_FLAGS'] = XLA_FLAGS
    os.environ['JAX_PLATFORMS'] = 'cpu'
    os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
    import numpy as np
    import jax

    with open(os.path.join(args.dir, 'meta.json')) as f:
        meta = json.load(f)
    fn, _ = jax_models.build(args.name)
    host_args = [np.load(os.path.join(args.dir, meta['inputs']['p%d' % i])) for i in range(len(meta['inputs']))]
    dev_args = [jax.device_put(a) for a in host_args]
    jax.block_until_ready(dev_args)

    t0 = time.perf_counter()
    lowered = jax.jit(fn, keep_unused=True).lower(*dev_args)
    lower_ms = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    compiled = lowered.compile()
    compile_ms = (time.perf_counter() - t0) * 1e3

    def run_once():
        return [np.asarray(v) for v in jax.tree_util.tree_leaves(compiled(*dev_args))]

    first_start = time.perf_counter()
    first = run_once()
    first_ms = (time.perf_counter() - first_start) * 1e3
    diff = ref_max = None
    refs = [np.load(os.path.join(args.dir, meta['refs']['output_%d' % i])) for i in range(len(meta['refs']))]
    if len(refs) != len(first):
        raise SystemExit('jax_bench: %d outputs, the reference has %d' % (len(first), len(refs)))
    for i, (got, ref) in enumerate(zip(first, refs)):
        if got.shape != ref.shape:
            raise SystemExit('jax_bench: output %d has shape %s, the reference %s' % (i, got.shape, ref.shape))
        if ref.size:
            diff = max(diff or 0.0, float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)))))
            ref_max = max(ref_max or 0.0, float(np.max(np.abs(ref.astype(np.float64)))))
    times, warmup = warm_and_time(run_once, first_start, args)
    print(json.dumps({'median_ms': statistics.median(times), 'first_ms': first_ms, 'min_ms': min(times),
                      'iters': len(times), 'warmup': warmup, 'lower_ms': lower_ms, 'compile_ms': compile_ms,
                      'version': jax.__version__, 'threads': eigen_threads(), 'pjrt_nproc': THREADS,
                      'xla_flags': XLA_FLAGS, 'max_abs_diff': diff, 'max_abs_ref': ref_max}))


if __name__ == '__main__':
    main()
