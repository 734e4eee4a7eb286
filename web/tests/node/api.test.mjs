// onyx-web's JavaScript API under Node.js (node --test web/tests/node/):
// onnxruntime-web's shapes, both builds, errors as rejected promises, and the
// results beside native onyx's (the Node.js addon, build/node/onyx).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';

import * as ort from '../../dist/onyx.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..', '..');
const MODEL = path.join(root, 'models', 'tiny_cnn.onnx');
const NATIVE = process.env.ONYX_NODE_PACKAGE ?? path.join(root, process.env.ONYX_BUILD_DIR ?? 'build', 'node', 'onyx');
const nativeSkip = existsSync(path.join(NATIVE, 'onyx_node.node')) ? false
  : `the native Node.js addon is not built at ${NATIVE} (ONYX_NODE_PACKAGE names another)`;
const DATA = process.env.ONYX_BACKEND_DATA ?? path.join(root, '..', 'shared', 'onnx-backend-data');
const dataSkip = existsSync(path.join(DATA, 'node')) ? false : `no ONNX backend data at ${DATA}`;

function image(seed = 1, batch = 1) {
  const data = new Float32Array(batch * 3 * 32 * 32);
  let x = seed;
  for (let i = 0; i < data.length; ++i) {
    x = (x * 1103515245 + 12345) % 2147483648;
    data[i] = x / 2147483648 - 0.5;
  }
  return new ort.Tensor('float32', data, [batch, 3, 32, 32]);
}

function assertClose(got, want, tolerance = 1e-5) {
  assert.equal(got.length, want.length);
  for (let i = 0; i < want.length; ++i)
    assert.ok(Math.abs(got[i] - want[i]) <= tolerance * (1 + Math.abs(want[i])), `element ${i}: ${got[i]} vs ${want[i]}`);
}

test('Tensor: onnxruntime-web construction forms and checks', () => {
  const t = new ort.Tensor('float32', new Float32Array(6), [2, 3]);
  assert.equal(t.type, 'float32');
  assert.deepEqual(t.dims, [2, 3]);
  assert.equal(t.size, 6);
  assert.equal(new ort.Tensor(new Int32Array(4)).type, 'int32');
  assert.deepEqual(new ort.Tensor(new BigInt64Array(4)).dims, [4]);
  assert.equal(new ort.Tensor('int64', [1, 2, 3], [3]).data.constructor, BigInt64Array);
  assert.equal(new ort.Tensor(['a', 'b']).type, 'string');
  assert.throws(() => new ort.Tensor('float32', new Float32Array(5), [2, 3]), /need 6 elements, the data has 5/);
  assert.throws(() => new ort.Tensor('float32', new Int32Array(6), [2, 3]), /takes a Float32Array/);
  assert.throws(() => new ort.Tensor('complex', new Float32Array(2)), /unsupported type 'complex'/);
  assert.throws(() => new ort.Tensor('float32', new Float32Array(2), [-2, -1]), /non-negative integers/);
});

test('a session from a path: names, metadata, and a run', async () => {
  const session = await ort.InferenceSession.create(MODEL);
  assert.deepEqual(session.inputNames, ['image']);
  assert.deepEqual(session.outputNames, ['probabilities']);
  assert.deepEqual(session.inputMetadata[0], {
    name: 'image', isTensor: true, type: 'float32', shape: ['batch', 3, 32, 32], onnxType: 'tensor(float)',
  });
  const { probabilities } = await session.run({ image: image() });
  assert.equal(probabilities.type, 'float32');
  assert.equal(probabilities.dims[0], 1);
  const sum = probabilities.data.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(sum - 1) < 1e-5, `softmax sums to ${sum}`);
  await session.release();
  await assert.rejects(session.run({ image: image() }), /released/);
});

test('Node.js takes the SIMD + threads build; results match native onyx', { skip: nativeSkip }, async () => {
  const require = createRequire(import.meta.url);
  const native = require(NATIVE);
  const input = image(7, 2);
  const want = await (await native.InferenceSession.create(MODEL, { intraOpNumThreads: 1 }))
    .run({ image: new native.Tensor('float32', input.data, input.dims) });
  for (const threads of [1, 2]) {
    const session = await ort.InferenceSession.create(readFileSync(MODEL), { intraOpNumThreads: threads });
    assert.deepEqual(session.backend, { variant: 'simd-threaded', threads });
    const got = await session.run({ image: input });
    assertClose(got.probabilities.data, want.probabilities.data);
    await session.release();
  }
});

test('env.wasm.simd = false loads the plain build, with the same results', async () => {
  const input = image(3);
  const fast = await ort.InferenceSession.create(MODEL);
  const want = (await fast.run({ image: input })).probabilities.data;
  ort.env.wasm.simd = false;
  try {
    const plain = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 4 });
    assert.deepEqual(plain.backend, { variant: 'plain', threads: 1 });
    assertClose((await plain.run({ image: input })).probabilities.data, want);
    await plain.release();
  } finally {
    ort.env.wasm.simd = true;
  }
  await fast.release();
});

test('errors reject with onyx\'s message', async () => {
  await assert.rejects(ort.InferenceSession.create(new Uint8Array([1, 2, 3, 4])), /model|protobuf|parse|read/i);
  await assert.rejects(ort.InferenceSession.create(path.join(here, 'no_such.onnx')), /no_such\.onnx/);
  await assert.rejects(ort.InferenceSession.create(42), TypeError);
  const session = await ort.InferenceSession.create(MODEL);
  // Wrong element type, wrong rank, unknown input, unknown output: each names what it is about.
  await assert.rejects(session.run({ image: new ort.Tensor('int32', new Int32Array(3072), [1, 3, 32, 32]) }),
                       /image/);
  await assert.rejects(session.run({ image: new ort.Tensor('float32', new Float32Array(3072), [3072]) }), /image/);
  await assert.rejects(session.run({ picture: image() }), /picture/);
  await assert.rejects(session.run({ image: image() }, ['scores']), /'scores' is not an output/);
  await assert.rejects(session.run({ image: 'not a tensor' }), /expected a Tensor/);
  // The session still works after the failures.
  assert.equal((await session.run({ image: image() })).probabilities.dims[0], 1);
  await session.release();
});

test('strings, sequences and optionals cross the API (backend node cases)', { skip: dataSkip }, async () => {
  const { runCase } = await import('../conformance.js');
  const read = async (p) => new Uint8Array(readFileSync(p));
  const names = ['test_string_concat', 'test_regex_full_match_basic', 'test_sequence_insert_at_back',
                 'test_optional_get_element_sequence', 'test_optional_has_element_empty_optional_input',
                 'test_split_to_sequence_1', 'test_cast_FLOAT_to_BFLOAT16', 'test_castlike_FLOAT_to_FLOAT16'];
  for (const name of names) {
    const dir = path.join(DATA, 'node', name);
    const sets = [{ inputs: [], outputs: [] }];
    for (const f of ['input_0', 'input_1', 'input_2']) {
      if (existsSync(path.join(dir, 'test_data_set_0', `${f}.pb`))) sets[0].inputs.push(path.join(dir, 'test_data_set_0', `${f}.pb`));
    }
    for (const f of ['output_0', 'output_1']) {
      if (existsSync(path.join(dir, 'test_data_set_0', `${f}.pb`))) sets[0].outputs.push(path.join(dir, 'test_data_set_0', `${f}.pb`));
    }
    assert.equal(await runCase(ort, { name, model: path.join(dir, 'model.onnx'), sets }, read), '', name);
  }
});

test('a string tensor round-trips through a model', { skip: dataSkip }, async () => {
  const session = await ort.InferenceSession.create(path.join(DATA, 'node', 'test_string_concat', 'model.onnx'));
  const [a, b] = session.inputNames;
  assert.deepEqual(session.inputMetadata[0].shape, [2]);
  const out = await session.run({ [a]: new ort.Tensor(['héllo', '']), [b]: new ort.Tensor([' wörld ✓', 'y']) });
  assert.deepEqual(out[session.outputNames[0]].data, ['héllo wörld ✓', 'y']);
  await session.release();
});

test('session options: free dimensions, config entries, profiling', async () => {
  const session = await ort.InferenceSession.create(MODEL, {
    freeDimensionOverrides: { batch: 2 }, extra: { session: { intra_op: { allow_spinning: '0' } } },
    enableProfiling: true, executionMode: 'sequential', enableMemPattern: false,
  });
  // The override fixed the symbolic batch: a batch of 1 is refused, naming the input.
  await assert.rejects(session.run({ image: image(1, 1) }), /image/);
  const { probabilities } = await session.run({ image: image(1, 2) });
  assert.deepEqual(probabilities.dims, [2, 10]);
  const events = session.endProfiling();
  const nodes = events.filter((e) => e.cat === 'Node');
  assert.ok(nodes.length > 0 && nodes.every((e) => typeof e.args.op_name === 'string' && e.dur >= 0));
  assert.ok(nodes.some((e) => e.args.op_name.includes('Conv')), JSON.stringify(nodes.map((e) => e.args.op_name)));
  await session.release();
  await assert.rejects(ort.InferenceSession.create(MODEL, { extra: { bad: [1] } }), /extra 'bad'/);
  await assert.rejects(ort.InferenceSession.create(MODEL, { executionMode: 'sideways' }), TypeError);
  await assert.rejects(ort.InferenceSession.create(MODEL, { graphOptimizationLevel: 'most' }), TypeError);
});

test('more threads than the module has workers: later sessions get what is left, never an abort', async () => {
  const sessions = [];
  for (let i = 0; i < 6; ++i) sessions.push(await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 3 }));
  // 7 workers: 2 + 2 + 2 + 1, then none left.
  assert.deepEqual(sessions.map((s) => s.backend.threads), [3, 3, 3, 2, 1, 1]);
  for (const s of sessions) assert.equal((await s.run({ image: image() })).probabilities.dims[1], 10);
  for (const s of sessions) await s.release();
  const all = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 8 });
  assert.equal(all.backend.threads, 8);
  assert.equal((await all.run({ image: image() })).probabilities.dims[1], 10);
  await all.release();
});
