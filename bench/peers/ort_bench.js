// Benchmark peer: ONNX Runtime (npm onnxruntime-node, CPU execution provider) on one
// ONNX model, configured the way a user tuning it for this machine would: 2 intra-op
// threads (the machine's cores), sequential execution, every graph optimisation on.
// Prints one JSON line: median_ms, first_ms, min_ms, iters, load_ms (session
// creation), version, threads. Timing rules: bench/peers/common.js.
//
//   node bench/peers/ort_bench.js MODEL.onnx NAME=INPUT.npy... [--iters N] [--max-seconds T]
'use strict';
const { performance } = require('perf_hooks');
const { requirePinned, readNpy, parseArgs, timeRuns, fail } = require('./common');

const USAGE = 'usage: node ort_bench.js MODEL.onnx NAME=INPUT.npy... [--iters N] [--min-iters N] [--warmup N] [--max-seconds T]';
const INTRA_OP_THREADS = 2;

async function main() {
  const opts = parseArgs(process.argv.slice(2), USAGE);
  const { module: ort, version } = requirePinned('onnxruntime-node');
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(opts.model, {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'all',
    executionMode: 'sequential',
    intraOpNumThreads: INTRA_OP_THREADS,
    interOpNumThreads: 1,
  });
  const loadMs = performance.now() - t0;
  const feeds = {};
  for (const [name, file] of Object.entries(opts.inputs)) {
    const t = readNpy(file);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const missing = session.inputNames.filter((n) => !(n in feeds));
  if (missing.length) throw new Error('missing inputs: ' + missing.join(', ') + ' (the model takes ' + session.inputNames.join(', ') + ')');
  // onnxruntime-node returns outputs already copied into JS typed arrays, so one
  // session.run is a complete inference.
  const result = await timeRuns(async () => { await session.run(feeds); }, opts);
  console.log(JSON.stringify({ ...result, load_ms: loadMs, version, threads: INTRA_OP_THREADS }));
}

main().catch(fail);
