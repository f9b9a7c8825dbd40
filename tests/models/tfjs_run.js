// Runs TF.js graph models with TensorFlow.js (npm @tensorflow/tfjs, cpu backend), the
// independent reference for kiln's TF importer and executor (tests/models/test_tfjs_models.py).
//
//   node tests/models/tfjs_run.js --batch JOBS.json
//
// JOBS.json is a list of {"model": ".../model.json", "out": DIR, "inputs": {NAME: "x.npy"}}.
// Each job loads the model from memory (tf.io.fromMemory: model.json plus its weight
// shards concatenated in manifest order), runs it with executeAsync (control flow
// needs it) and writes DIR/<output>.npy per model output -- the output name with a
// trailing ":0" dropped and characters outside [A-Za-z0-9_.-] made '_' -- and
// DIR/outputs.json listing {name, file, dtype, shape} in output order. A job that
// fails writes DIR/ERROR.txt instead. The module comes from $KILN_TFJS_MODULE, else
// build-ref-npm/node_modules/@tensorflow/tfjs under the repository root.
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

function safeName(name) {
  return name.replace(/:0$/, '').replace(/[^A-Za-z0-9_.-]/g, '_');
}

async function runOne(tf, job) {
  const model = await loadGraphModelFromFiles(tf, job.model);
  const feeds = {};
  for (const [name, file] of Object.entries(job.inputs || {})) {
    feeds[name] = npyToTensor(tf, readNpy(file));
  }
  const names = model.outputs.map((o) => o.name);
  // With a signature, kiln names results by the signature's keys: use them for files.
  const json = JSON.parse(fs.readFileSync(job.model, 'utf8'));
  const keyOf = {};
  const sigOutputs = (json.signature && json.signature.outputs) || {};
  for (const [key, info] of Object.entries(sigOutputs)) {
    keyOf[info.name] = key;
    keyOf[String(info.name).replace(/:0$/, '')] = key;
  }
  let outs = await model.executeAsync(feeds, names);
  if (!Array.isArray(outs)) outs = [outs];
  fs.mkdirSync(job.out, { recursive: true });
  const listing = [];
  for (let i = 0; i < outs.length; i++) {
    const t = outs[i];
    const file = safeName(keyOf[names[i]] !== undefined ? keyOf[names[i]] : names[i]) + '.npy';
    writeTensorNpy(path.join(job.out, file), t.dtype, t.shape, await t.data());
    listing.push({ name: names[i], file, dtype: t.dtype, shape: t.shape });
    t.dispose();
  }
  for (const t of Object.values(feeds)) t.dispose();
  model.dispose();
  fs.writeFileSync(path.join(job.out, 'outputs.json'), JSON.stringify(listing));
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length !== 2 || args[0] !== '--batch') {
    console.error('usage: node tfjs_run.js --batch JOBS.json');
    process.exit(2);
  }
  const tf = loadTf();
  await tf.setBackend('cpu');
  await tf.ready();
  const jobs = JSON.parse(fs.readFileSync(args[1], 'utf8'));
  for (const job of jobs) {
    try {
      await runOne(tf, job);
    } catch (e) {
      fs.mkdirSync(job.out, { recursive: true });
      fs.writeFileSync(path.join(job.out, 'ERROR.txt'), String(e && e.stack ? e.stack : e));
    }
  }
}

main().catch((e) => {
  console.error(String(e && e.stack ? e.stack : e));
  process.exit(1);
});
