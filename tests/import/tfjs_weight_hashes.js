// Prints "MODEL WEIGHT DTYPE SHAPE FNV1A" for every weight of a TF.js graph model as
// TensorFlow.js's own io.decodeWeights decodes it (dequantization included): the
// reference for kiln's TF.js weight decoding (tests/import/check_human_models.sh
// compares it with `test_tf_import --weight-hashes`, which prints the same format).
//
//   node tests/import/tfjs_weight_hashes.js MODEL.json
//
// tfjs-core and the cpu backend come from build-ref-npm/ (dependencies of
// @tensorflow/tfjs, installed by scripts/install-ref-npm.sh).
'use strict';
const fs = require('fs');
const path = require('path');

const modules = path.resolve(__dirname, '..', '..', 'build-ref-npm', 'node_modules');
const tf = require(path.join(modules, '@tensorflow', 'tfjs-core'));
require(path.join(modules, '@tensorflow', 'tfjs-backend-cpu'));

function fnv1a(bytes) {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i];
    h = Math.imul(h, 16777619) >>> 0;
  }
  return h >>> 0;
}

(async () => {
  await tf.setBackend('cpu');
  const file = process.argv[2];
  const model = JSON.parse(fs.readFileSync(file));
  const specs = [];
  const shards = [];
  for (const group of model.weightsManifest) {
    specs.push(...group.weights);
    for (const p of group.paths) shards.push(fs.readFileSync(path.join(path.dirname(file), p)));
  }
  const all = Buffer.concat(shards);
  const weights = tf.io.decodeWeights(all.buffer.slice(all.byteOffset, all.byteOffset + all.length), specs);
  const lines = [];
  for (const name of Object.keys(weights)) {
    const t = weights[name];
    const d = t.dataSync();
    const bytes = new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
    lines.push(`${path.basename(file)} ${name} ${t.dtype} ${t.shape.join('x')} ${fnv1a(bytes).toString(16)}`);
  }
  process.stdout.write(lines.sort().join('\n') + '\n');
})();
