// ONNX backend node cases through onyx-web in Node.js:
//   node web/tests/node/conformance.mjs DIR [--filter TEXT]... [--every N] [--json FILE] [--plain]
// DIR holds node/<case>/model.onnx and test_data_set_*/. Prints the pass
// count and each failure; --json writes {case: reason} ('' for a pass).
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

import * as ort from '../../dist/onyx.js';
import { runCases } from '../conformance.js';

const args = process.argv.slice(2);
const filters = [];
let dir;
let every = 1;
let json;
for (let i = 0; i < args.length; ++i) {
  if (args[i] === '--filter') filters.push(args[++i]);
  else if (args[i] === '--every') every = Number(args[++i]);
  else if (args[i] === '--json') json = args[++i];
  else if (args[i] === '--plain') ort.env.wasm.simd = false;
  else dir = args[i];
}
if (!dir) {
  console.error('usage: conformance.mjs DIR [--filter TEXT]... [--every N] [--json FILE] [--plain]');
  process.exit(2);
}

async function listCases(root) {
  const node = path.join(root, 'node');
  const cases = [];
  for (const name of (await readdir(node)).sort()) {
    const caseDir = path.join(node, name);
    let entries;
    try { entries = await readdir(caseDir); } catch { continue; }
    if (!entries.includes('model.onnx')) continue;
    const sets = [];
    for (const set of entries.filter((e) => e.startsWith('test_data_set_')).sort()) {
      const files = await readdir(path.join(caseDir, set));
      const numbered = (prefix) => files.filter((f) => f.startsWith(prefix) && f.endsWith('.pb'))
        .sort((a, b) => Number(a.slice(prefix.length, -3)) - Number(b.slice(prefix.length, -3)))
        .map((f) => path.join(caseDir, set, f));
      sets.push({ inputs: numbered('input_'), outputs: numbered('output_') });
    }
    cases.push({ name, model: path.join(caseDir, 'model.onnx'), sets });
  }
  return cases;
}

let cases = await listCases(dir);
if (filters.length) cases = cases.filter((c) => filters.some((f) => c.name.includes(f)));
cases = cases.filter((_, i) => i % every === 0);
const started = performance.now();
const results = await runCases(ort, cases, async (p) => new Uint8Array(await readFile(p)));
const failed = Object.entries(results).filter(([, reason]) => reason);
for (const [name, reason] of failed) console.log(`FAIL ${name}: ${reason}`);
console.log(`${cases.length - failed.length} of ${cases.length} passed in ` +
            `${((performance.now() - started) / 1000).toFixed(1)} s (${ort.env.loaded?.variant})`);
if (json) await writeFile(json, JSON.stringify(results, null, 1));
