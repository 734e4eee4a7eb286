'use strict';
// Errors reach JavaScript as rejected promises carrying onyx's message (and
// its error code as `code`); arguments of the wrong kind as TypeErrors.
const assert = require('node:assert/strict');
const path = require('node:path');
const test = require('node:test');

const ort = require('../lib');

const MODEL = path.join(__dirname, '..', '..', 'models', 'tiny_cnn.onnx');

function image(dims = [1, 3, 32, 32], ArrayType = Float32Array) {
  return new ort.Tensor(new ArrayType(dims.reduce((a, b) => a * b, 1)), dims);
}

test('a missing model file rejects, naming it', async () => {
  const missing = path.join(__dirname, 'no_such_model.onnx');
  await assert.rejects(ort.InferenceSession.create(missing), (error) => {
    assert.ok(error instanceof Error);
    assert.ok(error.message.includes(missing), error.message);
    assert.equal(error.code, 'ONYX_NO_SUCHFILE');
    return true;
  });
});

test('bytes that are not a model reject', async () => {
  await assert.rejects(ort.InferenceSession.create(new Uint8Array([1, 2, 3, 4, 5])), (error) => {
    assert.match(error.message, /cannot load model/);
    assert.equal(error.code, 'ONYX_INVALID_PROTOBUF');
    return true;
  });
});

test('a missing input rejects with a message naming it', async () => {
  const session = await ort.InferenceSession.create(MODEL);
  await assert.rejects(session.run({}), (error) => {
    assert.match(error.message, /missing input 'image'/);
    assert.equal(error.code, 'ONYX_INVALID_ARGUMENT');
    return true;
  });
});

test('feeds of the wrong type, rank or name reject, naming the input', async () => {
  const session = await ort.InferenceSession.create(MODEL);
  await assert.rejects(session.run({ image: image([1, 3, 32, 32], Int32Array) }), /image/);
  await assert.rejects(session.run({ image: image([3, 32, 32]) }), /image/);
  await assert.rejects(session.run({ image: image(), extra: image() }), /extra/);
  await assert.rejects(session.run({ image: image() }, ['nothing']), /nothing/);
  // The session still runs good feeds afterwards.
  assert.deepEqual((await session.run({ image: image() })).probabilities.dims, [1, 10]);
});

test('arguments of the wrong kind are TypeErrors', async () => {
  const session = await ort.InferenceSession.create(MODEL);
  await assert.rejects(session.run({ image: new Float32Array(3072) }), TypeError);
  await assert.rejects(session.run(null), TypeError);
  await assert.rejects(ort.InferenceSession.create(42), TypeError);
  await assert.rejects(ort.InferenceSession.create(MODEL, { graphOptimizationLevel: 'fastest' }), TypeError);
  await assert.rejects(ort.InferenceSession.create(MODEL, { intraOpNumThreads: -1 }), TypeError);
  await assert.rejects(ort.InferenceSession.create(MODEL, { executionProviders: ['nope'] }), TypeError);
  assert.throws(() => new ort.Tensor('float32', new Float32Array(4), [3]), RangeError);
  assert.throws(() => new ort.Tensor('int64', new Float32Array(4)), TypeError);
  assert.throws(() => new ort.Tensor('complex64', [1, 2]), TypeError);
  assert.throws(() => new ort.InferenceSession(), TypeError);
});

test('an execution provider onyx does not have rejects with onyx\'s message', async () => {
  await assert.rejects(
    ort.InferenceSession.create(MODEL, { executionProviders: ['NoSuchExecutionProvider'] }),
    /NoSuchExecutionProvider/);
});

test('a custom operator library that does not load rejects, naming it', async () => {
  const library = path.join(__dirname, 'libno_such_ops.so');
  await assert.rejects(ort.InferenceSession.create(MODEL, { customOpsLibraries: [library] }), (error) => {
    assert.match(error.message, /cannot load the custom operator library/);
    assert.ok(error.message.includes(library), error.message);
    return true;
  });
});
