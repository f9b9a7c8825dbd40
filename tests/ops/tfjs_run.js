// Runs TF.js graph models with TensorFlow.js (npm @tensorflow/tfjs, cpu backend), the
// independent reference for kiln's TensorFlow op tests (tests/ops/test_tf_ops.py).
//
//   node tests/ops/tfjs_run.js --batch JOBS.json
//
// JOBS.json: [{"dir": D, "inputs": {"NAME": "PATH.npy"}, "outputs": {"KEY": "node:port"}}]
// Each D holds model.json + its weight shards; every output is written to
// D/tfjs/KEY.npy. The model is loaded exactly as a TF.js app loads a converted graph
// model (tf.loadGraphModel over the model's artifacts) and run with executeAsync, so
// the op semantics are those of TF.js's graph executor. A job that fails writes its
// message to D/tfjs/ERROR.txt and the batch goes on. The module is looked up in
// $KILN_TFJS_MODULE, else build-ref-npm/node_modules/@tensorflow/tfjs under the
// repository root (npm install --ignore-scripts --prefix build-ref-npm
// @tensorflow/tfjs@4.22.0).
'use strict';
const fs = require('fs');
const path = require('path');
const { readNpy } = require('../lib/npy');
const { loadGraphModelFromFiles, npyToTensor, writeTensorNpy } = require('../lib/tfjs');

const root = path.resolve(__dirname, '..', '..');

function loadTf() {
  const candidates = [];
  if (process.env.KILN_TFJS_MODULE) candidates.push(process.env.KILN_TFJS_MODULE);
  candidates.push(path.join(root, 'build-ref-npm', 'node_modules', '@tensorflow', 'tfjs'));
  candidates.push('@tensorflow/tfjs');
  const errors = [];
  for (const c of candidates) {
    try {
      return require(c);
    } catch (e) {
      errors.push(c + ': ' + e.message.split('\n')[0]);
    }
  }
  throw new Error('no TensorFlow.js module found:\n  ' + errors.join('\n  '));
}

async function runJob(tf, job) {
  const outDir = path.join(job.dir, 'tfjs');
  fs.mkdirSync(outDir, {recursive: true});
  try {
    const gm = await loadGraphModelFromFiles(tf, path.join(job.dir, 'model.json'));
    const feeds = {};
    for (const [name, file] of Object.entries(job.inputs)) feeds[name] = npyToTensor(tf, readNpy(file));
    const keys = Object.keys(job.outputs);
    const names = keys.map((k) => job.outputs[k]);
    let outs = await gm.executeAsync(feeds, names);
    if (!Array.isArray(outs)) outs = [outs];
    for (let i = 0; i < keys.length; i++) {
      const t = outs[i];
      writeTensorNpy(path.join(outDir, keys[i] + '.npy'), t.dtype, t.shape, await t.data());
    }
    tf.dispose(outs);
    tf.dispose(Object.values(feeds));
    gm.dispose();
  } catch (e) {
    fs.writeFileSync(path.join(outDir, 'ERROR.txt'), String(e && e.stack ? e.stack : e));
  }
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length !== 2 || args[0] !== '--batch') {
    process.stderr.write('usage: node tfjs_run.js --batch JOBS.json\n');
    process.exit(2);
  }
  const tf = loadTf();
  await tf.setBackend('cpu');
  const jobs = JSON.parse(fs.readFileSync(args[1], 'utf8'));
  for (const job of jobs) await runJob(tf, job);
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
