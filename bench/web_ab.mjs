// Two builds of onyx-web against each other in one Node.js process, their
// runs alternated, so that a busy machine slows both alike:
//   node bench/web_ab.mjs DIST_A DIST_B MODEL [THREADS] [RUNS]
// DIST_*: folders holding onyx.js and wasm/ (web/dist, or a copy of it made
// before a change). Prints the median run of each (float inputs of 0.3,
// symbolic dimensions as 1).
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [distA, distB, model, threadsArg, runsArg] = process.argv.slice(2);
if (!model) {
  console.error('usage: node bench/web_ab.mjs DIST_A DIST_B MODEL [THREADS] [RUNS]');
  process.exit(2);
}
const threads = Number(threadsArg || 1);
const runs = Number(runsArg || 40);
const load = (dist) => import(pathToFileURL(path.resolve(dist, 'onyx.js')).href);

async function runner(ort) {
  const s = await ort.InferenceSession.create(model, { intraOpNumThreads: threads });
  const meta = s.inputMetadata[0];
  const dims = meta.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  const x = new ort.Tensor('float32', new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(0.3), dims);
  const fetches = s.outputMetadata.filter((m) => m.isTensor).map((m) => m.name);
  return async () => {
    const start = performance.now();
    await s.run({ [meta.name]: x }, fetches);
    return performance.now() - start;
  };
}

const a = await runner(await load(distA));
const b = await runner(await load(distB));
for (let i = 0; i < 3; ++i) { await a(); await b(); }
const ta = [];
const tb = [];
for (let i = 0; i < runs; ++i) { ta.push(await a()); tb.push(await b()); }
const median = (v) => v.sort((x, y) => x - y)[v.length >> 1];
console.log(`${path.basename(model)}, ${threads} thread(s), median of ${runs}: ` +
            `A ${median(ta).toFixed(2)} ms, B ${median(tb).toFixed(2)} ms, B / A ${(median(tb) / median(ta)).toFixed(2)}`);
