// Shared pieces of the JavaScript benchmark peers (ort_bench.js, tfjs_wasm_bench.js):
// the command line every peer takes, a .npy reader, and the timing loop, so that ONNX
// Runtime and TF.js are measured by exactly the same rules (bench/README.md): one
// first run (reported as first_ms, it carries lazy initialisation), then up to
// --warmup runs while the first --max-seconds last, then timed runs until --iters of
// them are done or --max-seconds have passed (see keepTiming for the --min-iters
// rule), and the median of the timed runs.
'use strict';
const fs = require('fs');
const path = require('path');
const { readNpy } = require('../../tests/lib/npy');

const ROOT = path.resolve(__dirname, '..', '..');
const NODE_MODULES = path.join(ROOT, 'build-ref-npm', 'node_modules');

// Loads an npm package from build-ref-npm only: the benchmark must measure the pinned
// versions scripts/install-ref-npm.sh installs, never whatever else is on the path.
function requirePinned(name) {
  const dir = path.join(NODE_MODULES, name);
  if (!fs.existsSync(dir)) {
    throw new Error(name + ' is not installed in ' + NODE_MODULES + ' (run scripts/install-ref-npm.sh)');
  }
  return { module: require(dir), version: require(path.join(dir, 'package.json')).version };
}

// MODEL NAME=INPUT.npy... [--iters N] [--min-iters N] [--warmup N] [--max-seconds T]
function parseArgs(argv, usage) {
  const opts = { model: null, inputs: {}, iters: 20, minIters: 3, warmup: 2, maxSeconds: 10 };
  const numeric = { '--iters': 'iters', '--min-iters': 'minIters', '--warmup': 'warmup', '--max-seconds': 'maxSeconds' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (numeric[a]) {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v) || v < 0) throw new Error(usage + '\n' + a + ' needs a non-negative number');
      opts[numeric[a]] = v;
    } else if (a.includes('=')) {
      const eq = a.indexOf('=');
      opts.inputs[a.slice(0, eq)] = a.slice(eq + 1);
    } else if (opts.model === null) {
      opts.model = a;
    } else {
      throw new Error(usage + '\nunexpected argument ' + a);
    }
  }
  if (opts.model === null) throw new Error(usage);
  if (opts.iters < 1 || opts.minIters < 1) throw new Error(usage + '\n--iters and --min-iters must be at least 1');
  return opts;
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// runOnce: async () => void, one complete inference including reading the outputs back.
// firstRun (optional) replaces runOnce for the first run, for a peer that settles how
// to run the model on that first run.
async function timeRuns(runOnce, opts, firstRun = runOnce) {
  const { performance } = require('perf_hooks');
  let t0 = performance.now();
  await firstRun();
  const firstMs = performance.now() - t0;
  const budgetMs = opts.maxSeconds * 1000;
  let warmup = 0;
  while (warmup < opts.warmup && performance.now() - t0 < budgetMs) {
    await runOnce();
    warmup++;
  }
  const times = [];
  const start = performance.now();
  for (;;) {
    t0 = performance.now();
    await runOnce();
    const now = performance.now();
    times.push(now - t0);
    if (!keepTiming(times.length, now - start, now - t0, opts.iters, opts.minIters, budgetMs)) break;
  }
  return { first_ms: firstMs, median_ms: median(times), min_ms: Math.min(...times), iters: times.length, warmup };
}

// The stopping rule (torch_bench.py has the same): stop after `iters` runs; within the
// time budget keep going; past it, keep going only to reach `minIters`, and only while
// another run still fits in 3x the budget -- so a model whose single run takes longer
// than the budget gets 1 or 2 timed runs instead of stalling the whole benchmark.
function keepTiming(n, elapsedMs, lastMs, iters, minIters, budgetMs) {
  if (n >= iters) return false;
  if (elapsedMs < budgetMs) return true;
  return n < minIters && elapsedMs + lastMs <= 3 * budgetMs;
}

function fail(e) {
  console.error(String(e && e.stack ? e.stack : e));
  process.exit(1);
}

module.exports = { requirePinned, readNpy, parseArgs, timeRuns, fail, NODE_MODULES };
