// ONNX backend node cases through onyx-web, in a browser page
// (web/tests/conformance.html) or in Node.js (web/tests/node/conformance.mjs):
// the same checks as native `onyx conformance` (tools/conformance.cc): outputs
// of the suite's test data sets, floats within atol + rtol * |expected|,
// everything else exact, NaN where NaN is expected.
//
// A case is {name, model, sets: [{inputs: [path], outputs: [path]}], rtol, atol};
// `read(path)` returns a Promise of its bytes (Uint8Array).

function kindOf(type) {
  if (type.startsWith('seq(')) return 'sequence';
  if (type.startsWith('optional(')) return 'optional';
  return 'tensor';
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

function bfloatToFloat(b) {
  u32[0] = b << 16;
  return f32[0];
}

function elements(tensor) {
  const { type, data } = tensor;
  if (type === 'float16') return Array.from(data, halfToFloat);
  if (type === 'bfloat16') return Array.from(data, bfloatToFloat);
  if (type === 'int64' || type === 'uint64') return Array.from(data, (v) => v);
  return data;
}

const FLOATS = new Set(['float32', 'float64', 'float16', 'bfloat16']);

function describe(value) {
  if (value === null) return 'an empty optional';
  if (Array.isArray(value)) return `a sequence of ${value.length}`;
  return `${value.type}[${value.dims.join(',')}]`;
}

// '' when `got` matches `want`, else why not.
export function compare(got, want, rtol, atol, what) {
  if (want === null) return got === null ? '' : `${what}: expected an empty optional, got ${describe(got)}`;
  if (got === null) return `${what}: got an empty optional, expected ${describe(want)}`;
  if (Array.isArray(want)) {
    if (!Array.isArray(got)) return `${what}: expected a sequence, got ${describe(got)}`;
    if (got.length !== want.length) return `${what}: sequence has ${got.length} items, expected ${want.length}`;
    for (let i = 0; i < want.length; ++i) {
      const r = compare(got[i], want[i], rtol, atol, `${what}[${i}]`);
      if (r) return r;
    }
    return '';
  }
  if (Array.isArray(got)) return `${what}: expected a tensor, got ${describe(got)}`;
  if (got.type !== want.type) return `${what}: type ${got.type}, expected ${want.type}`;
  if (got.dims.join(',') !== want.dims.join(','))
    return `${what}: shape [${got.dims}], expected [${want.dims}]`;
  const exact = !FLOATS.has(want.type);
  const g = elements(got);
  const w = elements(want);
  let mismatches = 0;
  let first = -1;
  for (let i = 0; i < w.length; ++i) {
    const a = g[i];
    const b = w[i];
    let ok;
    if (typeof b === 'number' && Number.isNaN(b)) ok = Number.isNaN(a);
    else if (typeof b === 'number' && !Number.isFinite(b)) ok = a === b;
    else if (exact) ok = a === b;
    else ok = Math.abs(a - b) <= atol + rtol * Math.abs(b);
    if (!ok) {
      if (first < 0) first = i;
      ++mismatches;
    }
  }
  if (mismatches === 0) return '';
  return `${what}: ${mismatches} of ${w.length} values differ; first at ${first}: got ${g[first]}, expected ${w[first]}`;
}

// Runs one case; resolves to '' when it passes, else the reason.
export async function runCase(ort, c, read) {
  let session;
  try {
    session = await ort.InferenceSession.create(await read(c.model), { intraOpNumThreads: 1 });
    for (const set of c.sets) {
      if (set.inputs.length > session.inputNames.length)
        return `the data set has ${set.inputs.length} inputs, the model takes ${session.inputNames.length}`;
      const feeds = {};
      for (let i = 0; i < set.inputs.length; ++i) {
        const meta = session.inputMetadata[i];
        feeds[meta.name] = await ort.decodeProto(await read(set.inputs[i]), kindOf(meta.onnxType));
      }
      const got = await session.run(feeds);
      const names = session.outputNames;
      if (set.outputs.length !== names.length)
        return `the model gave ${names.length} outputs, the data set has ${set.outputs.length}`;
      for (let i = 0; i < names.length; ++i) {
        const meta = session.outputMetadata[i];
        const want = await ort.decodeProto(await read(set.outputs[i]), kindOf(meta.onnxType));
        const r = compare(got[names[i]], want, c.rtol ?? 1e-3, c.atol ?? 1e-7, `output '${names[i]}'`);
        if (r) return r;
      }
    }
    return '';
  } catch (e) {
    return String(e && e.message ? e.message : e);
  } finally {
    if (session) await session.release();
  }
}

// Runs every case; onProgress(done, total) after each. Resolves to
// {name: reason} with '' for a pass.
export async function runCases(ort, cases, read, onProgress) {
  const results = {};
  let done = 0;
  for (const c of cases) {
    results[c.name] = await runCase(ort, c, read);
    ++done;
    if (onProgress) onProgress(done, cases.length);
  }
  return results;
}
