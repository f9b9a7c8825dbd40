// Runs an ONNX model with ONNX Runtime (npm onnxruntime-node, CPU execution provider),
// the independent reference for kiln's ONNX op tests (tests/ops/test_onnx_ops.py).
//
//   node tests/ops/ort_run.js MODEL.onnx OUT_DIR [NAME=INPUT.npy ...]
//   node tests/ops/ort_run.js --batch JOBS.json
//
// Writes OUT_DIR/<output name>.npy for every model output. A batch file lists many
// runs, [{"model": M, "out": DIR, "inputs": {"NAME": "PATH.npy"}}, ...], done in one
// process (ONNX Runtime loads once); a run that fails writes its message to
// DIR/ERROR.txt and the batch goes on. The module is looked up in
// $KILN_ORT_MODULE, else build-ref-npm/node_modules/onnxruntime-node under the repository
// root (install: npm install --ignore-scripts --prefix build-ref-npm onnxruntime-node@1.30.0;
// the package ships its native binaries, so --ignore-scripts loses nothing on linux x64),
// else onnxruntime-web (wasm) from the same places as a fallback.
'use strict';
const fs = require('fs');
const path = require('path');
const { readNpy, writeNpy } = require('../lib/npy');

const root = path.resolve(__dirname, '..', '..');
function loadOrt() {
  const candidates = [];
  if (process.env.KILN_ORT_MODULE) candidates.push(process.env.KILN_ORT_MODULE);
  candidates.push(path.join(root, 'build-ref-npm', 'node_modules', 'onnxruntime-node'));
  candidates.push('onnxruntime-node');
  candidates.push(path.join(root, 'build-ref-npm', 'node_modules', 'onnxruntime-web'));
  candidates.push('onnxruntime-web');
  const errors = [];
  for (const c of candidates) {
    try {
      return require(c);
    } catch (e) {
      errors.push(c + ': ' + e.message.split('\n')[0]);
    }
  }
  throw new Error('no ONNX Runtime module found:\n  ' + errors.join('\n  '));
}

async function runOne(ort, model, outDir, feedsSpec) {
  const feeds = {};
  for (const [name, file] of Object.entries(feedsSpec)) {
    const t = readNpy(file);
    feeds[name] = new ort.Tensor(t.type, t.data, t.dims);
  }
  const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], graphOptimizationLevel: 'disabled' });
  const results = await session.run(feeds);
  fs.mkdirSync(outDir, { recursive: true });
  for (const name of session.outputNames) {
    const t = results[name];
    writeNpy(path.join(outDir, name + '.npy'), t.type, t.dims, t.data);
  }
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length === 2 && args[0] === '--batch') {
    const ort = loadOrt();
    const jobs = JSON.parse(fs.readFileSync(args[1], 'utf8'));
    for (const job of jobs) {
      try {
        await runOne(ort, job.model, job.out, job.inputs || {});
      } catch (e) {
        fs.mkdirSync(job.out, { recursive: true });
        fs.writeFileSync(path.join(job.out, 'ERROR.txt'), String(e && e.message ? e.message : e));
      }
    }
    return;
  }
  if (args.length < 2) {
    console.error('usage: node ort_run.js MODEL.onnx OUT_DIR [NAME=INPUT.npy ...] | --batch JOBS.json');
    process.exit(2);
  }
  const ort = loadOrt();
  const feeds = {};
  for (const a of args.slice(2)) {
    const eq = a.indexOf('=');
    feeds[a.slice(0, eq)] = a.slice(eq + 1);
  }
  await runOne(ort, args[0], args[1], feeds);
}

main().catch((e) => {
  console.error(String(e && e.message ? e.message : e));
  process.exit(1);
});
