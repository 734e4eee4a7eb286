'use strict';
// Every Tensor type through a model and back (strings, int64 in BigInt64Array,
// bool, float16 bits...), over models made here: a few lines of protobuf
// encoding write an ONNX Identity model for each element type, so that this
// test needs nothing but node.
const assert = require('node:assert/strict');
const test = require('node:test');

const ort = require('../lib');

// ---- A minimal ONNX writer: varints and length-delimited fields ----

function varint(value) {
  const bytes = [];
  let v = BigInt(value);
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v) byte |= 0x80;
    bytes.push(byte);
  } while (v);
  return Buffer.from(bytes);
}
const intField = (number, value) => Buffer.concat([varint(number << 3), varint(value)]);
const bytesField = (number, payload) => {
  const bytes = typeof payload === 'string' ? Buffer.from(payload) : payload;
  return Buffer.concat([varint((number << 3) | 2), varint(bytes.length), bytes]);
};

// ValueInfoProto{name, type: TypeProto{tensor_type{elem_type, shape{dim*}}}}
function valueInfo(name, elemType, dims) {
  const shape = Buffer.concat(dims.map((d) => bytesField(1, typeof d === 'string' ? bytesField(2, d) : intField(1, d))));
  const tensorType = Buffer.concat([intField(1, elemType), bytesField(2, shape)]);
  return Buffer.concat([bytesField(1, name), bytesField(2, bytesField(1, tensorType))]);
}

// Y = Identity(X), X and Y of `elemType` and shape ['n'].
function identityModel(elemType) {
  const node = Buffer.concat([bytesField(1, 'X'), bytesField(2, 'Y'), bytesField(3, 'copy'), bytesField(4, 'Identity')]);
  const graph = Buffer.concat([
    bytesField(1, node),
    bytesField(2, 'identity'),
    bytesField(11, valueInfo('X', elemType, ['n'])),
    bytesField(12, valueInfo('Y', elemType, ['n'])),
  ]);
  const opset = Buffer.concat([bytesField(1, ''), intField(2, 17)]);
  return Buffer.concat([intField(1, 8), bytesField(2, 'onyx node test'), bytesField(7, graph), bytesField(8, opset)]);
}

// ONNX's TensorProto.DataType numbers, and data of each type.
const CASES = [
  ['float32', 1, Float32Array.from([1.5, -2.25, 3e38, Number.NaN])],
  ['uint8', 2, Uint8Array.from([0, 1, 255])],
  ['int8', 3, Int8Array.from([-128, 0, 127])],
  ['uint16', 4, Uint16Array.from([0, 65535])],
  ['int16', 5, Int16Array.from([-32768, 32767])],
  ['int32', 6, Int32Array.from([-(2 ** 31), 2 ** 31 - 1])],
  ['int64', 7, BigInt64Array.from([-(2n ** 63n), 2n ** 63n - 1n, 0n])],
  ['string', 8, ['', 'onyx', 'naïve ☃', 'a much longer string than the others']],
  ['bool', 9, Uint8Array.from([1, 0, 1])],
  ['float16', 10, Uint16Array.from([0x3c00, 0xc000, 0x7bff])],
  ['float64', 11, Float64Array.from([Math.PI, -0, 1e308])],
  ['uint32', 12, Uint32Array.from([0, 2 ** 32 - 1])],
  ['uint64', 13, BigUint64Array.from([0n, 2n ** 64n - 1n])],
];

for (const [type, elemType, data] of CASES) {
  test(`${type} tensors go in and come back`, async () => {
    const session = await ort.InferenceSession.create(identityModel(elemType));
    assert.deepEqual(session.inputMetadata, [{ name: 'X', isTensor: true, type, shape: ['n'] }]);
    const input = new ort.Tensor(type, data, [data.length]);
    const { Y } = await session.run({ X: input });
    assert.equal(Y.type, type);
    assert.deepEqual(Y.dims, [data.length]);
    assert.equal(Y.data.constructor, data.constructor);
    assert.deepEqual(Array.from(Y.data), Array.from(data));
    if (type !== 'string') {
      // The output is a copy: it outlives the input's memory (Identity may share it inside onyx).
      assert.notEqual(Y.data.buffer, data.buffer);
      const before = Array.from(Y.data);
      data.fill(data instanceof BigInt64Array || data instanceof BigUint64Array ? 0n : 0);
      assert.deepEqual(Array.from(Y.data), before);
      data.set(before);
    }
  });
}

test('empty tensors', async () => {
  const session = await ort.InferenceSession.create(identityModel(1));
  const { Y } = await session.run({ X: new ort.Tensor('float32', new Float32Array(0), [0]) });
  assert.deepEqual(Y.dims, [0]);
  assert.equal(Y.data.length, 0);
});

test('Tensor constructors as in onnxruntime-node', () => {
  const floats = new Float32Array([1, 2, 3, 4, 5, 6]);
  const t = new ort.Tensor(floats, [2, 3]);
  assert.equal(t.type, 'float32');
  assert.equal(t.data, floats); // no copy
  assert.equal(t.size, 6);
  assert.equal(t.reshape([3, 2]).data, floats);
  assert.deepEqual(new ort.Tensor(new BigInt64Array(2)).dims, [2]);
  assert.equal(new ort.Tensor(['a', 'b']).type, 'string');
  assert.deepEqual(Array.from(new ort.Tensor([true, false]).data), [1, 0]);
  assert.deepEqual(Array.from(new ort.Tensor('int64', [1, 2]).data), [1n, 2n]);
  assert.ok(new ort.Tensor('float32', [1, 2]).data instanceof Float32Array);
});
