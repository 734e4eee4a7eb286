'use strict';
// Runs models/tiny_cnn.onnx on the input every language feeds it and prints
// its outputs as "output NAME: v0 v1 ..." (9 significant digits, which give
// back the same float32), the lines tests/python/test_node_api.py compares
// with Python's bit for bit.
//
//   NODE_PATH=build/node node node/examples/run_tiny_cnn.js [MODEL]
const path = require('node:path');
const ort = require('onyx');

async function main() {
  const model = process.argv[2] ?? path.join(__dirname, '..', '..', 'models', 'tiny_cnn.onnx');
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
  const image = new Float32Array(3 * 32 * 32);
  for (let i = 0; i < image.length; ++i) image[i] = (((i * 7) % 101) - 50) / 64;
  const outputs = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', image, [1, 3, 32, 32]) });
  for (const [name, tensor] of Object.entries(outputs)) {
    console.log(`output ${name}: ${Array.from(tensor.data, (v) => v.toPrecision(9)).join(' ')}`);
  }
  await session.release();
}

main().catch((error) => {
  console.error(error.message);
  process.exit(1);
});
