'use strict';
// models/tiny_cnn.onnx from Node.js: the input every language feeds, the
// session's metadata, outputs (bit for bit the Python API's when
// tests/python/test_node_api.py names its reference in
// ONYX_TINY_CNN_REFERENCE), and runs that leave the event loop free.
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const test = require('node:test');
const v8 = require('node:v8');
const vm = require('node:vm');
const { Worker } = require('node:worker_threads');

const ort = require('../lib');

const MODEL = path.join(__dirname, '..', '..', 'models', 'tiny_cnn.onnx');
const IMAGE_SIZE = 3 * 32 * 32;

// Element i = ((i*7) % 101 - 50) / 64, exact in float32, per image of the batch.
function tinyCnnImage(batch = 1) {
  const data = new Float32Array(batch * IMAGE_SIZE);
  for (let b = 0; b < batch; ++b) {
    for (let i = 0; i < IMAGE_SIZE; ++i) data[b * IMAGE_SIZE + i] = (((i * 7) % 101) - 50) / 64;
  }
  return new ort.Tensor('float32', data, [batch, 3, 32, 32]);
}

function sameBits(a, b) {
  return Buffer.compare(Buffer.from(a.buffer, a.byteOffset, a.byteLength), Buffer.from(b.buffer, b.byteOffset, b.byteLength)) === 0;
}

test('metadata: names, types and shapes of the inputs and outputs', async () => {
  const session = await ort.InferenceSession.create(MODEL);
  assert.deepEqual(session.inputNames, ['image']);
  assert.deepEqual(session.outputNames, ['probabilities']);
  assert.deepEqual(session.inputMetadata, [{ name: 'image', isTensor: true, type: 'float32', shape: ['batch', 3, 32, 32] }]);
  assert.equal(session.outputMetadata[0].name, 'probabilities');
  assert.equal(session.outputMetadata[0].type, 'float32');
  assert.equal(session.outputMetadata[0].shape.at(-1), 10);
  assert.equal(session.modelMetadata.graphName, 'tiny_cnn');
  assert.equal(typeof session.modelMetadata.producerName, 'string');
  assert.deepEqual(session.modelMetadata.customMetadataMap, {});
  assert.ok(ort.availableProviders().includes('CPUExecutionProvider'));
  assert.match(ort.version, /^\d+\.\d+\.\d+/);
  await session.release();
});

test('outputs of the shared input, with one thread', async () => {
  const session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1, graphOptimizationLevel: 'all' });
  const { probabilities } = await session.run({ image: tinyCnnImage() });
  assert.ok(probabilities instanceof ort.Tensor);
  assert.equal(probabilities.type, 'float32');
  assert.deepEqual(probabilities.dims, [1, 10]);
  assert.ok(probabilities.data instanceof Float32Array);
  const sum = probabilities.data.reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(sum - 1) < 1e-5, `probabilities sum to ${sum}`);
  // 9 significant digits give back the same float32 (the lines the Python test parses).
  console.log(`output probabilities: ${Array.from(probabilities.data, (v) => v.toPrecision(9)).join(' ')}`);
  if (process.env.ONYX_TINY_CNN_REFERENCE) {
    const reference = new Float32Array(new Uint8Array(fs.readFileSync(process.env.ONYX_TINY_CNN_REFERENCE)).buffer);
    assert.ok(sameBits(probabilities.data, reference), `${probabilities.data} differs from Python's ${reference}`);
  }
});

test('a model from bytes gives the same outputs as from its path', async () => {
  const options = { intraOpNumThreads: 1 };
  const fromPath = await ort.InferenceSession.create(MODEL, options);
  const bytes = fs.readFileSync(MODEL);
  const fromBuffer = await ort.InferenceSession.create(bytes, options);
  // An ArrayBuffer with the model at an offset, as onnxruntime-node takes it.
  const padded = new Uint8Array(bytes.length + 16);
  padded.set(bytes, 16);
  const fromOffset = await ort.InferenceSession.create(padded.buffer, 16, bytes.length, options);
  const feeds = { image: tinyCnnImage() };
  const expected = (await fromPath.run(feeds)).probabilities.data;
  for (const session of [fromBuffer, fromOffset]) {
    assert.deepEqual(session.inputNames, ['image']);
    assert.ok(sameBits((await session.run(feeds)).probabilities.data, expected));
  }
});

test('a Tensor in fetches receives its output in place', async () => {
  const session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1 });
  const feeds = { image: tinyCnnImage() };
  const expected = (await session.run(feeds, ['probabilities'])).probabilities.data;
  const out = new ort.Tensor('float32', new Float32Array(10), [1, 10]);
  const results = await session.run(feeds, { probabilities: out });
  assert.equal(results.probabilities, out);
  assert.ok(sameBits(out.data, expected));
  // A tensor of the wrong shape is refused, naming the output.
  const wrong = new ort.Tensor('float32', new Float32Array(5), [1, 5]);
  await assert.rejects(session.run(feeds, { probabilities: wrong }), /probabilities/);
});

test('runs overlap on one session and agree', async () => {
  const session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1 });
  const feeds = { image: tinyCnnImage(2) };
  const results = await Promise.all([1, 2, 3, 4].map(() => session.run(feeds)));
  assert.deepEqual(results[0].probabilities.dims, [2, 10]);
  for (const r of results) assert.ok(sameBits(r.probabilities.data, results[0].probabilities.data));
  // Both images of the batch are the same image.
  const p = results[0].probabilities.data;
  assert.ok(sameBits(p.subarray(0, 10), p.subarray(10, 20)));
});

test('run() leaves the event loop free: a timer fires while a run is in flight', async () => {
  const session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1 });
  // A batch large enough that one run takes some 100 ms here, whatever the
  // machine (timed after a first run, which also plans the memory).
  const small = { image: tinyCnnImage(8) };
  await session.run(small);
  let start = performance.now();
  await session.run(small);
  const perImage = (performance.now() - start) / 8;
  const batch = Math.min(1024, Math.max(8, Math.ceil(100 / perImage)));
  const feeds = { image: tinyCnnImage(batch) };

  let inFlight = true;
  let ticksInFlight = 0;
  const timer = setInterval(() => {
    if (inFlight) ticksInFlight += 1;
  }, 1);
  start = performance.now();
  const { probabilities } = await session.run(feeds);
  inFlight = false;
  clearInterval(timer);
  const ms = performance.now() - start;
  assert.deepEqual(probabilities.dims, [batch, 10]);
  console.log(`run of batch ${batch}: ${ms.toFixed(1)} ms, ${ticksInFlight} timer ticks while in flight`);
  assert.ok(ticksInFlight >= 1, `no timer fired during a ${ms.toFixed(1)} ms run: the run blocked the event loop`);
});

test('a released session refuses to run', async () => {
  const session = await ort.InferenceSession.create(MODEL);
  const feeds = { image: tinyCnnImage() };
  // A run in flight when release() is called still completes.
  const inFlight = session.run(feeds);
  await session.release();
  assert.deepEqual((await inFlight).probabilities.dims, [1, 10]);
  await assert.rejects(session.run(feeds), /the session was released/);
});

test('a run keeps its inputs alive: the caller may drop them at once', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1 });
  const expected = (await session.run({ image: tinyCnnImage(16) })).probabilities.data;
  // No reference to the feeds is kept here while the runs are in flight.
  const runs = [0, 1, 2, 3].map(() => session.run({ image: tinyCnnImage(16) }));
  for (let i = 0; i < 5; ++i) gc();
  for (const { probabilities } of await Promise.all(runs)) assert.ok(sameBits(probabilities.data, expected));
});

test('the addon works in worker threads too', async () => {
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    const ort = require(workerData.package);
    (async () => {
      const session = await ort.InferenceSession.create(workerData.model, { intraOpNumThreads: 1 });
      const image = new Float32Array(${IMAGE_SIZE});
      for (let i = 0; i < image.length; ++i) image[i] = (((i * 7) % 101) - 50) / 64;
      const { probabilities } = await session.run({ image: new ort.Tensor('float32', image, [1, 3, 32, 32]) });
      parentPort.postMessage(probabilities.data);
    })();`;
  const session = await ort.InferenceSession.create(MODEL, { intraOpNumThreads: 1 });
  const expected = (await session.run({ image: tinyCnnImage() })).probabilities.data;
  const fromWorkers = await Promise.all([0, 1].map(() => new Promise((resolve, reject) => {
    const worker = new Worker(source, { eval: true, workerData: { package: path.join(__dirname, '..', 'lib'), model: MODEL } });
    worker.once('message', resolve);
    worker.once('error', reject);
  })));
  for (const data of fromWorkers) assert.ok(sameBits(data, expected));
});
