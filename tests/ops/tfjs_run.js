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

// ---- .npy (version 1.0, little-endian, C order) ----
const NPY_TYPES = {
  '<f4': ['float32', Float32Array], '<i4': ['int32', Int32Array], '|b1': ['bool', Uint8Array],
  '<i8': ['int64', BigInt64Array], '<f8': ['float64', Float64Array], '|u1': ['uint8', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(file + ': not a .npy file');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + hlen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const t = NPY_TYPES[descr];
  if (!t) throw new Error(file + ': unsupported dtype ' + descr);
  const n = shape.reduce((a, b) => a * b, 1);
  const bytes = buf.subarray(start, start + n * t[1].BYTES_PER_ELEMENT);
  const data = new t[1](new ArrayBuffer(bytes.length));
  new Uint8Array(data.buffer).set(bytes);
  return {dtype: t[0], shape, data};
}

function writeNpy(file, dtype, shape, values) {
  let descr, arr;
  if (dtype === 'float32') {
    descr = '<f4';
    arr = Float32Array.from(values);
  } else if (dtype === 'int32') {
    descr = '<i4';
    arr = Int32Array.from(values);
  } else if (dtype === 'bool') {
    descr = '|b1';
    arr = Uint8Array.from(values, (v) => (v ? 1 : 0));
  } else {
    throw new Error('cannot write dtype ' + dtype);
  }
  const shapeText = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shapeText}, }`;
  const pad = 64 - ((10 + header.length + 1) % 64);
  header += ' '.repeat(pad % 64) + '\n';
  const head = Buffer.alloc(10);
  head.write('\x93NUMPY', 0, 'latin1');
  head[6] = 1;
  head[7] = 0;
  head.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, 'latin1'), Buffer.from(arr.buffer)]));
}

function toTensor(tf, npy) {
  if (npy.dtype === 'int64') return tf.tensor(Int32Array.from(npy.data, (v) => Number(v)), npy.shape, 'int32');
  if (npy.dtype === 'float64') return tf.tensor(Float32Array.from(npy.data), npy.shape, 'float32');
  if (npy.dtype === 'uint8') return tf.tensor(Int32Array.from(npy.data), npy.shape, 'int32');
  if (npy.dtype === 'bool') return tf.tensor(npy.data, npy.shape, 'bool');
  return tf.tensor(npy.data, npy.shape, npy.dtype);
}

async function runJob(tf, job) {
  const outDir = path.join(job.dir, 'tfjs');
  fs.mkdirSync(outDir, {recursive: true});
  try {
    const model = JSON.parse(fs.readFileSync(path.join(job.dir, 'model.json'), 'utf8'));
    const specs = [];
    const buffers = [];
    for (const group of model.weightsManifest || []) {
      for (const w of group.weights) specs.push(w);
      for (const p of group.paths) buffers.push(fs.readFileSync(path.join(job.dir, p)));
    }
    const all = Buffer.concat(buffers);
    const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.length);
    const artifacts = {
      modelTopology: model.modelTopology,
      format: model.format,
      generatedBy: model.generatedBy,
      convertedBy: model.convertedBy,
      signature: model.signature,
      weightSpecs: specs,
      weightData,
    };
    const gm = await tf.loadGraphModel({load: async () => artifacts});
    const feeds = {};
    for (const [name, file] of Object.entries(job.inputs)) feeds[name] = toTensor(tf, readNpy(file));
    const keys = Object.keys(job.outputs);
    const names = keys.map((k) => job.outputs[k]);
    let outs = await gm.executeAsync(feeds, names);
    if (!Array.isArray(outs)) outs = [outs];
    for (let i = 0; i < keys.length; i++) {
      const t = outs[i];
      writeNpy(path.join(outDir, keys[i] + '.npy'), t.dtype, t.shape, await t.data());
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
