// .npy files (format 1.0/2.0, little-endian, C order) for the Node.js reference
// runners (tests/ops/ort_run.js, tests/models/tfjs_run.js) and the benchmark peers
// (bench/peers): one reader and one writer, so every reference reads inputs the same
// way. readNpy gives {type, dims, data} with data a typed array of the file's element
// type (bool as 0/1 bytes); writeNpy takes a typed array of `type`.
'use strict';

const fs = require('fs');

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
  if (/'fortran_order':\s*True/.test(header)) throw new Error(file + ': Fortran-ordered .npy is not supported');
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)[1];
  const dims = shapeText.split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const entry = DESCR[descr];
  if (!entry) throw new Error(file + ': unsupported .npy dtype ' + descr);
  const [type, Ctor] = entry;
  const n = dims.reduce((a, b) => a * b, 1);
  const start = hstart + hlen;
  const copy = new Uint8Array(n * Ctor.BYTES_PER_ELEMENT);
  copy.set(buf.subarray(start, start + copy.length));
  let data = new Ctor(copy.buffer, 0, n);
  if (type === 'bool') data = Uint8Array.from(data, (v) => (v ? 1 : 0));
  return { type, dims, data };
}

function writeNpy(file, type, dims, data) {
  const descr = Object.keys(DESCR).find((k) => DESCR[k][0] === type);
  if (!descr) throw new Error('output type ' + type + ' cannot be written as .npy');
  const shape = dims.length === 0 ? '()' : dims.length === 1 ? '(' + dims[0] + ',)' : '(' + dims.join(', ') + ')';
  let header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ', }';
  header += ' '.repeat((64 - ((10 + header.length + 1) % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const typed = type === 'bool' ? Uint8Array.from(data, (v) => (v ? 1 : 0)) : data;
  const body = Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

module.exports = { readNpy, writeNpy };
