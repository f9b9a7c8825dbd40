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

// ---- .npy (format 1.0/2.0, little-endian, C order) ----
const DESCR = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array],
  '|i1': ['int8', Int8Array], '<i2': ['int16', Int16Array], '<i4': ['int32', Int32Array],
  '<i8': ['int64', BigInt64Array], '|u1': ['uint8', Uint8Array], '<u2': ['uint16', Uint16Array],
  '<u4': ['uint32', Uint32Array], '<u8': ['uint64', BigUint64Array], '|b1': ['bool', Uint8Array],
  '<f2': ['float16', Uint16Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(file + ': not a .npy file');
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(file + ': fortran order not supported');
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)[1];
  const dims = shapeText.split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const entry = DESCR[descr];
  if (!entry) throw new Error(file + ': unsupported dtype ' + descr);
  const [type, Ctor] = entry;
  const n = dims.reduce((a, b) => a * b, 1);
  const start = hstart + hlen;
  const bytes = buf.subarray(start, start + n * Ctor.BYTES_PER_ELEMENT);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  let data = new Ctor(copy.buffer, 0, n);
  if (type === 'bool') data = Uint8Array.from(data, (v) => (v ? 1 : 0));
  return { type, dims, data };
}

function writeNpy(file, type, dims, data) {
  const descr = Object.keys(DESCR).find((k) => DESCR[k][0] === type);
  if (!descr) throw new Error('output type ' + type + ' cannot be written as .npy');
  const shape = dims.length === 0 ? '()' : dims.length === 1 ? '(' + dims[0] + ',)' : '(' + dims.join(', ') + ')';
  let header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ', }';
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  let body;
  if (type === 'bool') body = Buffer.from(Uint8Array.from(data, (v) => (v ? 1 : 0)));
  else body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
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
