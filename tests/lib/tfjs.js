// TensorFlow.js helpers shared by the reference runners (tests/models/tfjs_run.js,
// tests/ops/tfjs_run.js) and the benchmark peer (bench/peers/tfjs_wasm_bench.js):
// loading a graph model from model.json and its weight shards on disk (no fetch),
// .npy inputs as TF.js tensors, and TF.js outputs written as .npy.
'use strict';

const fs = require('fs');
const path = require('path');
const { writeNpy } = require('./npy');

async function loadGraphModelFromFiles(tf, modelJson) {
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

// t: what npy.readNpy returns. TF.js has no int64, uint8 or float64 tensors: graph
// models take those as int32 / float32.
function npyToTensor(tf, t) {
  if (t.type === 'int64') return tf.tensor(Int32Array.from(t.data, (v) => Number(v)), t.dims, 'int32');
  if (t.type === 'uint8') return tf.tensor(Int32Array.from(t.data), t.dims, 'int32');
  if (t.type === 'float64') return tf.tensor(Float32Array.from(t.data), t.dims, 'float32');
  return tf.tensor(t.data, t.dims, t.type);
}

// values: what tensor.data() gives, which is not always the array type its dtype says.
function writeTensorNpy(file, dtype, shape, values) {
  let typed;
  if (dtype === 'float32') typed = values instanceof Float32Array ? values : Float32Array.from(values);
  else if (dtype === 'int32') typed = values instanceof Int32Array ? values : Int32Array.from(values);
  else if (dtype === 'bool') typed = values;
  else throw new Error('output dtype ' + dtype + ' cannot be written as .npy');
  writeNpy(file, dtype, shape, typed);
}

module.exports = { loadGraphModelFromFiles, npyToTensor, writeTensorNpy };
