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

const DESCR = {
  '<f4': ['float32', Float32Array], '<i4': ['int32', Int32Array], '|b1': ['bool', Uint8Array],
  '<i8': ['int64', BigInt64Array], '|u1': ['uint8', Uint8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(file + ': not a .npy file');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const dims = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const entry = DESCR[descr];
  if (!entry) throw new Error(file + ': unsupported dtype ' + descr);
  const [type, Ctor] = entry;
  const n = dims.reduce((a, b) => a * b, 1);
  const start = hstart + hlen;
  const copy = new Uint8Array(n * Ctor.BYTES_PER_ELEMENT);
  copy.set(buf.subarray(start, start + copy.length));
  let data = new Ctor(copy.buffer, 0, n);
  if (type === 'int64') return { type: 'int32', dims, data: Int32Array.from(data, (v) => Number(v)) };
  if (type === 'uint8') return { type: 'int32', dims, data: Int32Array.from(data) };
  return { type, dims, data };
}

function writeNpy(file, dtype, dims, data) {
  const descr = { float32: '<f4', int32: '<i4', bool: '|b1' }[dtype];
  if (!descr) throw new Error('output dtype ' + dtype + ' cannot be written as .npy');
  const shape = dims.length === 0 ? '()' : dims.length === 1 ? '(' + dims[0] + ',)' : '(' + dims.join(', ') + ')';
  let header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ', }';
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre.writeUInt16LE(header.length, 8);
  // TF.js sometimes hands back data of another array type than its dtype says.
  let typed;
  if (dtype === 'bool') typed = Uint8Array.from(data, (v) => (v ? 1 : 0));
  else if (dtype === 'float32') typed = data instanceof Float32Array ? data : Float32Array.from(data);
  else typed = data instanceof Int32Array ? data : Int32Array.from(data);
  const body = Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

function safeName(name) {
  return name.replace(/:0$/, '').replace(/[^A-Za-z0-9_.-]/g, '_');
}

async function loadModel(tf, modelJson) {
  const json = JSON.parse(fs.readFileSync(modelJson, 'utf8'));
  const dir = path.dirname(modelJson);
  const weightSpecs = [];
  const shards = [];
  for (const group of json.weightsManifest || []) {
    for (const w of group.weights) weightSpecs.push(w);
    for (const p of group.paths) shards.push(fs.readFileSync(path.join(dir, p)));
  }
  const all = Buffer.concat(shards);
  const weightData = all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength);
  const artifacts = {
    modelTopology: json.modelTopology, weightSpecs, weightData, format: json.format,
    generatedBy: json.generatedBy, convertedBy: json.convertedBy, signature: json.signature,
    userDefinedMetadata: json.userDefinedMetadata, modelInitializer: json.modelInitializer,
  };
  return tf.loadGraphModel(tf.io.fromMemory(artifacts));
}

async function runOne(tf, job) {
  const model = await loadModel(tf, job.model);
  const feeds = {};
  for (const [name, file] of Object.entries(job.inputs || {})) {
    const t = readNpy(file);
    feeds[name] = tf.tensor(t.data, t.dims, t.type);
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
    writeNpy(path.join(job.out, file), t.dtype, t.shape, await t.data());
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
