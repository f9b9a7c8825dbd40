"""Per-call overhead of kiln's Python API next to onnxruntime's (bench/overhead).

Runs the model of make_model.py (c = a + b over 16 float32) many times from Python and
times every call on its own with time.perf_counter_ns; prints one JSON line with the
median, p90 and mean (= total / N) in microseconds and one "meta" line. One process
measures one runtime (bench/overhead/run.sh alternates them):

    python overhead_py.py --runtime kiln --model add16.onnx [--iters 100000] [--warmup 1000]
    python overhead_py.py --runtime ort --model add16.onnx

Per call, as a real caller would: kiln.Model(path).run({"a": a, "b": b}) (returns
{name: numpy array}) and onnxruntime.InferenceSession(path).run(None, {"a": a, "b": b})
(returns a list of numpy arrays), both with their defaults (kiln: jit auto, threads 0 =
all cores; onnxruntime: CPUExecutionProvider, default session options). The inputs are
the same numpy arrays every call; the garbage collector stays on, as in a real program.
Run it in an environment with numpy and the runtime measured (run.sh uses
bench/.venv-overhead).
"""

import argparse
import json
import math
import sys
import time

import numpy as np

N = 16


def summarise(samples, total_ns):
    samples.sort()
    n = len(samples)
    median = samples[n // 2] if n % 2 else 0.5 * (samples[n // 2 - 1] + samples[n // 2])
    p90 = samples[max(0, math.ceil(0.9 * n) - 1)]
    return {'median_us': median / 1e3, 'p90_us': p90 / 1e3, 'mean_us': total_ns / n / 1e3, 'min_us': samples[0] / 1e3}


def measure(call, args, warmup, iters):
    for _ in range(warmup):
        call(*args)
    samples = [0] * iters
    clock = time.perf_counter_ns
    t0 = clock()
    for i in range(iters):
        t = clock()
        call(*args)
        samples[i] = clock() - t
    return summarise(samples, clock() - t0)


def timer_overhead_us():
    clock = time.perf_counter_ns
    samples = [0] * 100000
    for i in range(len(samples)):
        t = clock()
        samples[i] = clock() - t
    return summarise(samples, 1)['median_us']


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--runtime', choices=('kiln', 'ort'), required=True)
    ap.add_argument('--model', required=True)
    ap.add_argument('--iters', type=int, default=100000)
    ap.add_argument('--warmup', type=int, default=1000)
    args = ap.parse_args()

    a = (0.5 * np.arange(N, dtype=np.float32) - 3.0).astype(np.float32)
    b = (1.25 * (N - np.arange(N, dtype=np.float32))).astype(np.float32)
    feeds = {'a': a, 'b': b}
    meta = {'driver': 'python', 'runtime': args.runtime, 'python': sys.version.split()[0],
            'numpy': np.__version__}

    if args.runtime == 'kiln':
        import kiln
        model = kiln.Model(args.model)
        call, call_args, api = model.run, (feeds,), 'kiln.Model.run'
        c = model.run(feeds)['c']
        meta.update(version=kiln.version, module=kiln.__file__)
    else:
        import onnxruntime
        sess = onnxruntime.InferenceSession(args.model, providers=['CPUExecutionProvider'])
        call, call_args, api = sess.run, (None, feeds), 'InferenceSession.run'
        c = sess.run(None, feeds)[0]
        meta.update(version=onnxruntime.__version__, providers=sess.get_providers())
    if c.dtype != np.float32 or c.shape != (N,) or not np.array_equal(c, a + b):
        sys.exit('overhead_py: %s: wrong output %r' % (args.runtime, c))

    row = {'driver': 'python', 'runtime': args.runtime, 'api': api}
    row.update(measure(call, call_args, args.warmup, args.iters))
    row.update(iters=args.iters, warmup=args.warmup)
    print(json.dumps(row), flush=True)
    if args.runtime == 'kiln':
        meta['stats'] = {k: v for k, v in model.stats().items()
                         if k in ('device', 'jit', 'nodes', 'clusters', 'op_compiles', 'op_cache_hits')}
    meta['timer_us'] = timer_overhead_us()
    print(json.dumps({'meta': meta}), flush=True)


if __name__ == '__main__':
    main()
