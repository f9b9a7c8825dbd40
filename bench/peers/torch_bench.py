"""Benchmark peer: PyTorch eager (Debian python3-torch) on the very nn.Module an ONNX
model of the benchmark was exported from (bench/models.py saves it next to the .onnx
with torch.save, so the weights are identical), with 2 intra-op threads (the machine's
cores), eval() and torch.no_grad(). Timing follows the same rules as the JavaScript
peers (bench/peers/common.js): one first run (first_ms), up to --warmup runs while the
first --max-seconds last, then timed runs until --iters are done or --max-seconds have
passed (bench/peers/timing.py has the --min-iters rule). Prints one
JSON line: median_ms, first_ms, min_ms, iters, load_ms, version, threads, blas.

Usage: /usr/bin/python3 bench/peers/torch_bench.py MODULE.pt INPUT.npy [--iters N]
       [--min-iters N] [--warmup N] [--max-seconds T]
"""

import argparse
import json
import os
import re
import statistics
import time

import numpy as np
import torch

from timing import add_timing_args, check_timing_args, warm_and_time  # bench/peers/timing.py, beside this script

THREADS = 2


def loaded_blas():
    """Real paths of the BLAS libraries mapped into this process. torch's nn.Linear
    and matmul go through the system BLAS (Debian builds torch with BLAS_INFO=generic:
    whatever libblas.so.3 the alternatives system points at), while convolutions use
    oneDNN, so which library this is decides the PyTorch numbers of the
    matmul-heavy models; RESULTS.md names it."""
    found = set()
    with open('/proc/self/maps') as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and re.search(r'blas|mkl_rt|libmkl', os.path.basename(parts[5])):
                found.add(os.path.realpath(parts[5]))
    return sorted(found)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('module')
    ap.add_argument('input')
    add_timing_args(ap)
    args = ap.parse_args()
    check_timing_args(ap, args)
    torch.set_num_threads(THREADS)
    t0 = time.perf_counter()
    module = torch.load(args.module)
    module.eval()
    load_ms = (time.perf_counter() - t0) * 1e3
    x = torch.from_numpy(np.load(args.input))

    def run_once():
        with torch.no_grad():
            module(x)

    first_start = time.perf_counter()
    run_once()
    first_ms = (time.perf_counter() - first_start) * 1e3
    times, warmup = warm_and_time(run_once, first_start, args)
    print(json.dumps({'median_ms': statistics.median(times), 'first_ms': first_ms, 'min_ms': min(times),
                      'iters': len(times), 'warmup': warmup, 'load_ms': load_ms, 'version': torch.__version__,
                      'threads': torch.get_num_threads(), 'blas': loaded_blas()}))


if __name__ == '__main__':
    main()
