// Compiled (never run) by tests/python/test_web.py with `tsc --noEmit --strict`:
// onyx.d.ts describes the API the way a page written for onnxruntime-web uses it.
import * as ort from '../js/onyx.js';

async function classify(url: string, pixels: Float32Array): Promise<number[]> {
  ort.env.wasm.numThreads = 2;
  ort.env.wasm.simd = true;
  const session: ort.InferenceSession = await ort.InferenceSession.create(url, {
    executionProviders: ['wasm'],
    graphOptimizationLevel: 'all',
    freeDimensionOverrides: { batch: 1 },
    extra: { session: { intra_op: { allow_spinning: '0' } } },
  });
  const input = new ort.Tensor('float32', pixels, [1, 3, 224, 224]);
  const feeds: ort.InferenceSession.FeedsType = { [session.inputNames[0]]: input };
  const results = await session.run(feeds, [session.outputNames[0]]);
  const output = results[session.outputNames[0]];
  if (output === null || Array.isArray(output)) throw new Error('expected a tensor');
  const meta: ort.ValueMetadata = session.inputMetadata[0];
  const dims: readonly number[] = output.dims;
  const backend: 'simd-threaded' | 'plain' = session.backend.variant;
  await session.release();
  return [meta.isTensor ? 1 : 0, dims.length, backend.length, ...Array.from(output.data as Float32Array)];
}

const ids = new ort.Tensor('int64', BigInt64Array.from([1n, 2n]), [1, 2]);
const words = new ort.Tensor(['a', 'b']);
const flags = new ort.Tensor('bool', new Uint8Array([1, 0]), [2]);
const decoded: Promise<ort.OnnxValue> = ort.decodeProto(new Uint8Array(0), 'tensor');

async function picture(image: HTMLImageElement): Promise<ImageData> {
  const t = await ort.Tensor.fromImage(image, { resizedWidth: 224, resizedHeight: 224, norm: { mean: [58.4, 57.1, 57.4], bias: [-123.7, -116.3, -103.5] } });
  return t.toImageData({ format: 'RGB', tensorLayout: 'NCHW' });
}
export { classify, ids, words, flags, decoded, picture };
