// Benchmark peer: TensorFlow.js with its WebAssembly backend (npm
// @tensorflow/tfjs-backend-wasm, same version as @tensorflow/tfjs) on one TF.js graph
// model (model.json + weight shards). The .wasm binaries are loaded from the npm
// package directory (setWasmPaths), so nothing is fetched at run time. It asks for 2
// threads, but TF.js 4.22 reports no multithread support under Node (its
// WASM_HAS_MULTITHREAD_SUPPORT flag is hard-wired false there, tfjs issue #3830; forcing
// it fails because the threaded build starts workers from blob: URLs, which Node
// rejects), so in practice this is the single-threaded SIMD build; the JSON line says
// which build ran (threads, simd) so RESULTS.md can state it. The model runs with
// execute() when it has no control flow and executeAsync() otherwise ("exec" says
// which); a timed run includes reading every output back.
// Prints one JSON line: median_ms, first_ms, min_ms, iters, load_ms, version, threads,
// simd, exec. Timing rules: bench/peers/common.js.
//
//   node bench/peers/tfjs_wasm_bench.js model.json NAME=INPUT.npy... [--iters N] [--max-seconds T]
'use strict';
const fs = require('fs');
const path = require('path');
const { performance } = require('perf_hooks');
const { requirePinned, readNpy, parseArgs, timeRuns, fail, NODE_MODULES } = require('./common');
const { loadGraphModelFromFiles, npyToTensor } = require('../../tests/lib/tfjs');

const USAGE = 'usage: node tfjs_wasm_bench.js model.json NAME=INPUT.npy... [--iters N] [--min-iters N] [--warmup N] [--max-seconds T]';
const REQUESTED_THREADS = 2;

async function main() {
  const opts = parseArgs(process.argv.slice(2), USAGE);
  const { module: tf, version } = requirePinned('@tensorflow/tfjs');
  const { module: wasm, version: wasmVersion } = requirePinned('@tensorflow/tfjs-backend-wasm');
  if (wasmVersion !== version) {
    throw new Error('@tensorflow/tfjs-backend-wasm ' + wasmVersion + ' does not match @tensorflow/tfjs ' + version);
  }
  wasm.setWasmPaths(path.join(NODE_MODULES, '@tensorflow', 'tfjs-backend-wasm', 'dist') + path.sep);
  wasm.setThreadsCount(REQUESTED_THREADS);
  if (!(await tf.setBackend('wasm'))) throw new Error('the TF.js wasm backend failed to initialise');
  await tf.ready();
  const simd = await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT');
  const threads = wasm.getThreadsCount();

  const t0 = performance.now();
  const model = await loadGraphModelFromFiles(tf, opts.model);
  const loadMs = performance.now() - t0;
  const feeds = {};
  for (const [name, file] of Object.entries(opts.inputs)) feeds[name] = npyToTensor(tf, readNpy(file));
  const names = model.outputs.map((o) => o.name);

  let exec = 'execute';
  const runWith = async (mode) => {
    let outs = mode === 'execute' ? model.execute(feeds, names) : await model.executeAsync(feeds, names);
    if (!Array.isArray(outs)) outs = [outs];
    await Promise.all(outs.map((t) => t.data()));
    for (const t of outs) t.dispose();
  };
  const firstRun = async () => {
    try {
      await runWith('execute');
    } catch (e) {
      // execute() refuses graphs with dynamic ops (control flow, NonMaxSuppression) by
      // design, before running anything; any other error is a real failure.
      if (!/executeAsync/.test(String(e && e.message))) throw e;
      exec = 'executeAsync';
      await runWith(exec);
    }
  };
  const result = await timeRuns(() => runWith(exec), opts, firstRun);
  console.log(JSON.stringify({ ...result, load_ms: loadMs, version, threads, requested_threads: REQUESTED_THREADS, simd, exec }));
}

main().catch(fail);
