"""The timing policy the Python peers share (bench/peers/torch_bench.py, tf_bench.py),
the same as bench/peers/common.js's for the Node peers: after the first run, up to
`warmup` warmup runs within the time budget, then timed runs until `iters` runs or the
budget is spent (past it, only to reach `min_iters` while another run fits in 3x the
budget). Kept in one place so every peer is timed by one rule."""

import time


def add_timing_args(ap):
    """The timing options every Python peer takes (bench.py passes them)."""
    ap.add_argument('--iters', type=int, default=20)
    ap.add_argument('--min-iters', type=int, default=3)
    ap.add_argument('--warmup', type=int, default=2)
    ap.add_argument('--max-seconds', type=float, default=10.0)


def check_timing_args(ap, args):
    if args.iters < 1 or args.min_iters < 1 or args.warmup < 0:
        ap.error('--iters and --min-iters must be at least 1, --warmup at least 0')


def keep_timing(n, elapsed, last, iters, min_iters, budget):
    """Whether to time another run after n runs taking `elapsed` seconds, the last `last`."""
    if n >= iters:
        return False
    if elapsed < budget:
        return True
    return n < min_iters and elapsed + last <= 3 * budget


def warm_and_time(run_once, first_start, args):
    """Warmup runs, then timed runs of run_once (args: warmup, iters, min_iters,
    max_seconds; first_start: perf_counter() when the first run began). Returns (the
    timed runs in ms, the number of warmup runs)."""
    warmup = 0
    while warmup < args.warmup and time.perf_counter() - first_start < args.max_seconds:
        run_once()
        warmup += 1
    times = []
    start = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        run_once()
        now = time.perf_counter()
        times.append((now - t0) * 1e3)
        if not keep_timing(len(times), now - start, now - t0, args.iters, args.min_iters, args.max_seconds):
            return times, warmup
