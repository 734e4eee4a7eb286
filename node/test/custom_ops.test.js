'use strict';
// The example custom-operator library (examples/custom_op_library, built
// outside the tree) inside a model, from Node.js. tests/python/test_node_api.py
// builds the library and the model and names them in ONYX_CUSTOM_OP_LIBRARY
// and ONYX_CUSTOM_OP_MODEL; without them these tests are skipped.
const assert = require('node:assert/strict');
const test = require('node:test');

const ort = require('../lib');

const LIBRARY = process.env.ONYX_CUSTOM_OP_LIBRARY;
const MODEL = process.env.ONYX_CUSTOM_OP_MODEL;
const skip = LIBRARY && MODEL ? false : 'set ONYX_CUSTOM_OP_LIBRARY and ONYX_CUSTOM_OP_MODEL (tests/python/test_node_api.py does)';

function session() {
  return ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1, customOpsLibraries: [LIBRARY] });
}

test('the library\'s ops run: Y = 2*tanh(X), Z = X', { skip }, async () => {
  const s = await session();
  // The op's shape inference gives the outputs' types and shapes.
  assert.deepEqual(s.outputMetadata, [
    { name: 'Y', isTensor: true, type: 'float32', shape: [2, 3] },
    { name: 'Z', isTensor: true, type: 'float32', shape: [2, 3] },
  ]);
  const x = Float32Array.from([0.5, 1, 1.5, 2, 2.5, 3]);
  const { Y, Z } = await s.run({ X: new ort.Tensor('float32', x, [2, 3]) });
  assert.deepEqual(Y.dims, [2, 3]);
  x.forEach((v, i) => {
    const expected = 2 * Math.tanh(v);
    assert.ok(Math.abs(Y.data[i] - expected) <= 1e-6 * Math.abs(expected), `Y[${i}] = ${Y.data[i]}, not ${expected}`);
  });
  assert.deepEqual(Array.from(Z.data), Array.from(x));
});

test('a failing custom op rejects, naming its node', { skip }, async () => {
  const s = await session();
  const x = new Float32Array(6).fill(1);
  x[5] = -2;
  await assert.rejects(s.run({ X: new ort.Tensor('float32', x, [2, 3]) }),
    /CheckPositive 'positive_check'.*element 5 is -2, not positive/);
  // The session still runs good input afterwards.
  const { Z } = await s.run({ X: new ort.Tensor('float32', new Float32Array(6).fill(1), [2, 3]) });
  assert.deepEqual(Array.from(Z.data), [1, 1, 1, 1, 1, 1]);
});

test('without the library the model is refused, naming the op', { skip }, async () => {
  await assert.rejects(ort.InferenceSession.create(MODEL), /ai\.onyx\.example.*ScaledTanh/);
});
