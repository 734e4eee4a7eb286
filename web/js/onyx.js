// onyx-web: run ONNX models in the browser and in Node.js with onyx compiled
// to WebAssembly. The API has onnxruntime-web's shape: InferenceSession,
// Tensor and env, so that a page written for it works with
// `import * as ort from 'onyx-web'`.
//
// Two builds of the module ship in wasm/: onyx-simd-threaded (wasm SIMD128
// and pthreads, which need SharedArrayBuffer, so a cross-origin isolated
// page) and onyx-plain (neither). The first session loads the best one the
// engine supports, unless env.wasm.simd or env.wasm.numThreads say otherwise.

const isNode = typeof process !== 'undefined' && process.versions != null && process.versions.node != null;

// The largest numThreads the threaded build can give: its pthreads are
// started with the module (a page cannot start one while a run blocks it).
const MAX_THREADS = 8;

export const env = {
  wasm: {
    // 0: the default, min(4, half the logical cores), as onnxruntime-web.
    numThreads: 0,
    // false forces the plain build even where SIMD is supported.
    simd: true,
    // Where the wasm/ files are (a URL or path prefix); default: beside this module.
    wasmPaths: undefined,
  },
  logLevel: 'warning',
  // What was loaded, once a session was created: {variant, simd, threads}.
  loaded: undefined,
};

// ---------------------------------------------------------------------------
// Element types: onnxruntime-web's names and typed arrays, and the ONNX
// TensorProto codes the module uses. Types onnxruntime-web lacks (bfloat16,
// the float8 types, float4) travel as their raw bits; the sub-byte integer
// types hold one element per array item.
const TYPES = {
  float32: [1, Float32Array],
  uint8: [2, Uint8Array],
  int8: [3, Int8Array],
  uint16: [4, Uint16Array],
  int16: [5, Int16Array],
  int32: [6, Int32Array],
  int64: [7, BigInt64Array],
  string: [8, Array],
  bool: [9, Uint8Array],
  float16: [10, Uint16Array],
  float64: [11, Float64Array],
  uint32: [12, Uint32Array],
  uint64: [13, BigUint64Array],
  bfloat16: [16, Uint16Array],
  float8e4m3fn: [17, Uint8Array],
  float8e4m3fnuz: [18, Uint8Array],
  float8e5m2: [19, Uint8Array],
  float8e5m2fnuz: [20, Uint8Array],
  uint4: [21, Uint8Array],
  int4: [22, Int8Array],
  float4e2m1: [23, Uint8Array],
  float8e8m0: [24, Uint8Array],
  uint2: [25, Uint8Array],
  int2: [26, Int8Array],
};
const TYPE_BY_CODE = new Map(Object.entries(TYPES).map(([name, [code]]) => [code, name]));

function typeFromArray(data) {
  if (data instanceof Float32Array) return 'float32';
  if (data instanceof Float64Array) return 'float64';
  if (data instanceof Int32Array) return 'int32';
  if (data instanceof BigInt64Array) return 'int64';
  if (data instanceof Uint8Array) return 'uint8';
  if (data instanceof Int8Array) return 'int8';
  if (data instanceof Uint16Array) return 'uint16';
  if (data instanceof Int16Array) return 'int16';
  if (data instanceof Uint32Array) return 'uint32';
  if (data instanceof BigUint64Array) return 'uint64';
  if (Array.isArray(data) && data.every((v) => typeof v === 'string')) return 'string';
  if (Array.isArray(data) && data.every((v) => typeof v === 'boolean')) return 'bool';
  throw new TypeError('Tensor: cannot infer the element type of this data; pass the type first');
}

export class Tensor {
  // new Tensor(type, data, dims?) or new Tensor(data, dims?)
  constructor(typeOrData, dataOrDims, maybeDims) {
    let type, data, dims;
    if (typeof typeOrData === 'string') {
      type = typeOrData;
      data = dataOrDims;
      dims = maybeDims;
    } else {
      data = typeOrData;
      dims = dataOrDims;
      type = typeFromArray(data);
    }
    const entry = TYPES[type];
    if (entry === undefined) throw new TypeError(`Tensor: unsupported type '${type}'`);
    const ArrayType = entry[1];
    if (type === 'string') {
      if (!Array.isArray(data) || !data.every((v) => typeof v === 'string'))
        throw new TypeError('Tensor: a string tensor takes an array of strings');
    } else if (!(data instanceof ArrayType)) {
      if (Array.isArray(data)) {
        data = ArrayType === BigInt64Array || ArrayType === BigUint64Array
          ? ArrayType.from(data, (v) => BigInt(v))
          : ArrayType.from(data, (v) => Number(v));
      } else {
        throw new TypeError(`Tensor: a ${type} tensor takes a ${ArrayType.name}`);
      }
    }
    if (dims === undefined) dims = [data.length];
    if (!Array.isArray(dims) || !dims.every((d) => Number.isInteger(d) && d >= 0))
      throw new TypeError('Tensor: dims must be an array of non-negative integers');
    const size = dims.reduce((a, b) => a * b, 1);
    if (size !== data.length)
      throw new RangeError(`Tensor: dims [${dims}] need ${size} elements, the data has ${data.length}`);
    this.type = type;
    this.data = data;
    this.dims = Object.freeze(dims.slice());
    this.size = size;
    this.location = 'cpu';
  }
  async getData() { return this.data; }
  dispose() { this.data = undefined; }

  // onnxruntime-web's image factory: an ImageData, ImageBitmap, HTML image
  // or canvas, or a URL, as a [1, C, H, W] (tensorLayout 'NCHW', the default)
  // or [1, H, W, C] tensor of tensorFormat 'RGB' (default), 'RGBA', 'BGR' or
  // 'RBG'. float32 elements are (pixel + bias) / mean per channel (defaults
  // 0 and 255: [0, 1]); uint8 ones are the pixels. resizedWidth and
  // resizedHeight scale the image first. Pages only (needs a canvas).
  static async fromImage(image, options = {}) {
    const pixels = await imagePixels(image, options);
    return tensorFromPixels(pixels, options);
  }

  // The inverse, for a float32 or uint8 image tensor: an ImageData (format and
  // tensorLayout as above, pixel = value * mean - bias; alpha 255 when the
  // tensor has none).
  toImageData(options = {}) {
    const layout = options.tensorLayout ?? 'NCHW';
    const format = options.format ?? 'RGB';
    const channels = format.length;
    const [n, a, b, c] = this.dims;
    if (this.dims.length !== 4 || n !== 1) throw new RangeError('toImageData: the tensor is not [1, C, H, W] or [1, H, W, C]');
    const [height, width, tensorChannels] = layout === 'NCHW' ? [b, c, a] : [a, b, c];
    if (tensorChannels !== channels) throw new RangeError(`toImageData: the tensor has ${tensorChannels} channels, format ${format} has ${channels}`);
    const { mean, bias } = normalization(options, channels, this.type);
    const out = new ImageData(width, height);
    for (let y = 0; y < height; ++y) {
      for (let x = 0; x < width; ++x) {
        const pixel = 4 * (y * width + x);
        out.data[pixel + 3] = 255;
        for (let k = 0; k < channels; ++k) {
          const at = layout === 'NCHW' ? (k * height + y) * width + x : (y * width + x) * channels + k;
          out.data[pixel + 'RGBA'.indexOf(format[k])] = Number(this.data[at]) * mean[k] - bias[k];
        }
      }
    }
    return out;
  }

  // toImageData as a data: URL (a PNG).
  toDataURL(options = {}) {
    const imageData = this.toImageData(options);
    const canvas = document.createElement('canvas');
    canvas.width = imageData.width;
    canvas.height = imageData.height;
    canvas.getContext('2d').putImageData(imageData, 0, 0);
    return canvas.toDataURL();
  }
}

// Per-channel mean and bias: a number for every channel or one per channel.
// uint8 tensors hold the pixels as they are.
function normalization(options, channels, dataType) {
  if (dataType === 'uint8') return { mean: Array(channels).fill(1), bias: Array(channels).fill(0) };
  const spread = (value, fallback, name) => {
    if (value === undefined) return Array(channels).fill(fallback);
    if (typeof value === 'number') return Array(channels).fill(value);
    if (Array.isArray(value) && value.length >= channels) return value.slice(0, channels);
    throw new TypeError(`norm.${name}: a number or ${channels} numbers`);
  };
  return { mean: spread(options.norm?.mean, 255, 'mean'), bias: spread(options.norm?.bias, 0, 'bias') };
}

// RGBA pixels of an image, scaled to resizedWidth x resizedHeight if given.
async function imagePixels(image, options) {
  if (typeof document === 'undefined' && typeof OffscreenCanvas === 'undefined')
    throw new Error('Tensor.fromImage needs a canvas (a page or a worker), which Node.js does not have');
  if (typeof image === 'string') {
    const response = await fetch(image);
    if (!response.ok) throw new Error(`Tensor.fromImage: could not fetch ${image}: HTTP ${response.status}`);
    image = await createImageBitmap(await response.blob());
  }
  const isImageData = typeof ImageData !== 'undefined' && image instanceof ImageData;
  const width0 = image.naturalWidth || image.width;
  const height0 = image.naturalHeight || image.height;
  const width = options.resizedWidth ?? width0;
  const height = options.resizedHeight ?? height0;
  if (isImageData && width === width0 && height === height0) return { data: image.data, width, height };
  const canvas = typeof OffscreenCanvas !== 'undefined' ? new OffscreenCanvas(width, height)
                                                        : Object.assign(document.createElement('canvas'), { width, height });
  const ctx = canvas.getContext('2d', { willReadFrequently: true });
  if (isImageData) {
    // ImageData cannot be drawn scaled: through a bitmap first.
    image = await createImageBitmap(image);
  }
  ctx.drawImage(image, 0, 0, width, height);
  return { data: ctx.getImageData(0, 0, width, height).data, width, height };
}

function tensorFromPixels({ data, width, height }, options) {
  const format = options.tensorFormat ?? 'RGB';
  if (!['RGB', 'RGBA', 'BGR', 'RBG'].includes(format)) throw new TypeError(`tensorFormat '${format}' is not RGB, RGBA, BGR or RBG`);
  const layout = options.tensorLayout ?? 'NCHW';
  if (layout !== 'NCHW' && layout !== 'NHWC') throw new TypeError(`tensorLayout '${layout}' is not NCHW or NHWC`);
  const dataType = options.dataType ?? 'float32';
  if (dataType !== 'float32' && dataType !== 'uint8') throw new TypeError(`dataType '${dataType}' is not float32 or uint8`);
  const channels = format.length;
  const { mean, bias } = normalization(options, channels, dataType);
  const out = dataType === 'float32' ? new Float32Array(channels * width * height) : new Uint8Array(channels * width * height);
  const source = [...format].map((c) => 'RGBA'.indexOf(c));
  for (let i = 0; i < width * height; ++i) {
    for (let k = 0; k < channels; ++k) {
      const value = (data[4 * i + source[k]] + bias[k]) / mean[k];
      out[layout === 'NCHW' ? k * width * height + i : i * channels + k] = value;
    }
  }
  const dims = layout === 'NCHW' ? [1, channels, height, width] : [1, height, width, channels];
  return new Tensor(dataType, out, dims);
}

// ---------------------------------------------------------------------------
// Loading the module.

const SIMD_PROBE = new Uint8Array([
  // (module (func (result v128) i32.const 0 i8x16.splat))
  0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 8, 1, 6, 0, 65, 0, 253, 15, 11,
]);

function simdSupported() {
  try { return WebAssembly.validate(SIMD_PROBE); } catch { return false; }
}

function threadsSupported() {
  if (typeof SharedArrayBuffer === 'undefined') return false;
  if (!isNode && typeof crossOriginIsolated !== 'undefined' && !crossOriginIsolated) return false;
  try {
    return new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }).buffer instanceof SharedArrayBuffer;
  } catch { return false; }
}

function defaultThreads() {
  const cores = isNode ? (globalThis.navigator?.hardwareConcurrency ?? 1)
                       : (typeof navigator !== 'undefined' ? navigator.hardwareConcurrency || 1 : 1);
  return Math.min(4, Math.ceil(cores / 2));
}

const EXPORT_NAMES = { 'simd-threaded': 'createOnyxSimdThreaded', plain: 'createOnyxPlain' };
const modules = new Map();  // variant -> Promise<module>

function wasmBase() {
  const given = env.wasm.wasmPaths;
  if (typeof given === 'string') return new URL(given, isNode ? `file://${process.cwd()}/` : location.href);
  return new URL('./wasm/', import.meta.url);
}

function loadScript(url) {
  if (typeof document !== 'undefined') {
    return new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = url;
      script.onload = resolve;
      script.onerror = () => reject(new Error(`onyx-web: could not load ${url}`));
      document.head.appendChild(script);
    });
  }
  if (typeof importScripts === 'function') {
    importScripts(url);
    return Promise.resolve();
  }
  return fetch(url).then((r) => r.text()).then((text) => { (0, eval)(`${text}\n//# sourceURL=${url}`); });
}

async function instantiate(variant) {
  const base = wasmBase();
  const name = `onyx-${variant}`;
  if (isNode) {
    const { createRequire } = await import('node:module');
    const { readFileSync } = await import('node:fs');
    const { fileURLToPath } = await import('node:url');
    const require = createRequire(import.meta.url);
    const factory = require(fileURLToPath(new URL(`${name}.js`, base)));
    // Node's fetch cannot read files: the module is handed its bytes.
    const m = await factory({ wasmBinary: readFileSync(new URL(`${name}.wasm`, base)) });
    // The pthreads' workers (all started with the module) must not keep
    // Node's process alive once the script is done.
    if (m.PThread) for (const w of [...m.PThread.unusedWorkers, ...m.PThread.runningWorkers]) w.unref();
    return m;
  }
  const url = new URL(`${name}.js`, base).href;
  const exportName = EXPORT_NAMES[variant];
  if (typeof globalThis[exportName] !== 'function') await loadScript(url);
  return globalThis[exportName]({
    locateFile: (file) => new URL(file, base).href,
    mainScriptUrlOrBlob: url,
  });
}

function chooseVariant(threads) {
  const simd = env.wasm.simd !== false && simdSupported();
  const canThread = threadsSupported();
  if (threads > 1 && !canThread) {
    console.warn('onyx-web: multi-threading is unavailable (SharedArrayBuffer needs a cross-origin isolated page: ' +
                 'serve it with Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: ' +
                 'require-corp); running on one thread');
  }
  // The threaded build is also the SIMD build: one without the other falls
  // back to plain.
  if (simd && canThread) return 'simd-threaded';
  return 'plain';
}

function moduleFor(variant) {
  if (!modules.has(variant)) {
    const promise = instantiate(variant);
    modules.set(variant, promise);
    promise.catch(() => modules.delete(variant));
  }
  return modules.get(variant);
}

// ---------------------------------------------------------------------------
// Sessions.

// The module's memory as bytes. With threads the memory is a growable
// SharedArrayBuffer whose old views keep their old length: a fresh view each
// time.
function heap(m) {
  return m.wasmMemory ? new Uint8Array(m.wasmMemory.buffer) : m.HEAPU8;
}

function lastError(m) {
  return m.UTF8ToString(m._onyx_web_last_error());
}

function cString(m, text) {
  const bytes = m.lengthBytesUTF8(text) + 1;
  const ptr = m._malloc(bytes);
  m.stringToUTF8(text, ptr, bytes);
  return ptr;
}

function encodeStrings(strings) {
  const encoder = new TextEncoder();
  const parts = strings.map((s) => encoder.encode(s));
  const out = new Uint8Array(parts.reduce((n, p) => n + 4 + p.length, 0));
  const view = new DataView(out.buffer);
  let at = 0;
  for (const p of parts) {
    view.setUint32(at, p.length, true);
    out.set(p, at + 4);
    at += 4 + p.length;
  }
  return out;
}

// Copies `tensor` into the module and appends it to the feed being built.
function appendTensor(m, feeds, tensor, name) {
  if (!(tensor instanceof Tensor)) throw new TypeError(`input '${name}': expected a Tensor`);
  const code = TYPES[tensor.type][0];
  const bytes = tensor.type === 'string'
    ? encodeStrings(tensor.data)
    : new Uint8Array(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
  const dims = new BigInt64Array(tensor.dims.map((d) => BigInt(d)));
  const dimsPtr = m._malloc(Math.max(8, dims.byteLength));
  const dataPtr = m._malloc(Math.max(1, bytes.byteLength));
  try {
    heap(m).set(new Uint8Array(dims.buffer), dimsPtr);
    heap(m).set(bytes, dataPtr);
    if (m._onyx_web_feeds_append(feeds, code, tensor.dims.length, dimsPtr, dataPtr, bytes.byteLength) !== 0)
      throw new Error(`input '${name}': ${lastError(m)}`);
  } finally {
    m._free(dataPtr);
    m._free(dimsPtr);
  }
}

// The tensor at (output, item) of a results handle, copied out of the module.
function readTensor(m, results, index, item) {
  const code = m._onyx_web_result_type(results, index, item);
  const type = TYPE_BY_CODE.get(code);
  if (type === undefined) throw new Error(`output ${index}: element type ${code} has no JavaScript form`);
  const rank = m._onyx_web_result_rank(results, index, item);
  const dimsPtr = m._onyx_web_result_dims(results, index, item);
  const dims = [];
  for (let i = 0; i < rank; ++i) dims.push(Number(new BigInt64Array(heap(m).buffer, dimsPtr + 8 * i, 1)[0]));
  const size = dims.reduce((a, b) => a * b, 1);
  if (type === 'string') {
    const strings = [];
    const lengthPtr = m._malloc(4);
    const decoder = new TextDecoder();
    try {
      for (let i = 0; i < size; ++i) {
        const ptr = m._onyx_web_result_string(results, index, item, i, lengthPtr);
        const length = new Int32Array(heap(m).buffer, lengthPtr, 1)[0];
        strings.push(decoder.decode(heap(m).slice(ptr, ptr + length)));
      }
    } finally {
      m._free(lengthPtr);
    }
    return new Tensor('string', strings, dims);
  }
  const ArrayType = TYPES[type][1];
  const bytes = m._onyx_web_result_bytes(results, index, item);
  const ptr = m._onyx_web_result_data(results, index, item);
  const copy = new Uint8Array(bytes);
  if (bytes > 0) copy.set(heap(m).subarray(ptr, ptr + bytes));
  return new Tensor(type, new ArrayType(copy.buffer, 0, size), dims);
}

// Every value of a results handle: name -> Tensor, Tensor[] (a sequence) or
// null (an empty optional).
function readResults(m, results) {
  const out = {};
  const count = m._onyx_web_result_count(results);
  for (let i = 0; i < count; ++i) {
    const name = m.UTF8ToString(m._onyx_web_result_name(results, i));
    const kind = m._onyx_web_result_kind(results, i);
    if (kind === 0) {
      out[name] = readTensor(m, results, i, -1);
    } else if (kind === 1) {
      const items = [];
      for (let j = 0; j < m._onyx_web_result_items(results, i); ++j) {
        if (m._onyx_web_result_rank(results, i, j) < 0)
          throw new Error(`output '${name}': a sequence of maps; maps are not returned to JavaScript (fetch the other outputs)`);
        items.push(readTensor(m, results, i, j));
      }
      out[name] = items;
    } else if (kind === 2) {
      out[name] = null;
    } else {
      throw new Error(`output '${name}': maps are not returned to JavaScript`);
    }
  }
  return out;
}

const OPT_LEVELS = { disabled: 0, basic: 1, extended: 2, all: 99 };
const LOG_LEVELS = { verbose: 0, info: 1, warning: 2, error: 3, fatal: 4 };

async function fetchModel(url) {
  if (isNode && !/^https?:/.test(url)) {
    const { readFile } = await import('node:fs/promises');
    return new Uint8Array(await readFile(url.startsWith('file:') ? new URL(url) : url));
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`onyx-web: could not fetch the model at ${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

// A session's module memory and workers, returned on release() or, for a
// session dropped without it, once JavaScript collects the object.
function releaseSession({ m, handle, workers }) {
  m._onyx_web_session_release(handle);
  m.onyxWorkersInUse -= workers;
}
const collected = new FinalizationRegistry(releaseSession);

export class InferenceSession {
  // create(url | path | ArrayBuffer | Uint8Array, options?) -> Promise<InferenceSession>
  // options: executionProviders (['wasm'] or ['cpu']; others fall back with
  // a warning), intraOpNumThreads, graphOptimizationLevel
  // ('disabled'|'basic'|'extended'|'all'), logSeverityLevel (0-4),
  // enableProfiling (then endProfiling() returns the trace), enableMemPattern,
  // enableCpuMemArena, executionMode ('sequential'|'parallel'),
  // freeDimensionOverrides ({symbol: size}), extra (config entries:
  // {session: {key: value}} is 'session.key').
  static async create(model, options = {}) {
    let bytes;
    if (typeof model === 'string') bytes = await fetchModel(model);
    else if (model instanceof Uint8Array) bytes = model;
    else if (model instanceof ArrayBuffer) bytes = new Uint8Array(model);
    else throw new TypeError('InferenceSession.create takes a URL, a path, an ArrayBuffer or a Uint8Array');

    for (const ep of options.executionProviders ?? []) {
      const name = typeof ep === 'string' ? ep : ep?.name;
      if (name !== 'wasm' && name !== 'cpu')
        console.warn(`onyx-web: execution provider '${name}' is not available here; running on wasm`);
    }
    let threads = options.intraOpNumThreads ?? env.wasm.numThreads;
    if (!threads) threads = defaultThreads();
    const variant = chooseVariant(threads);
    if (variant === 'plain') threads = 1;
    threads = Math.max(1, Math.min(MAX_THREADS, threads));
    const m = await moduleFor(variant);
    env.loaded = { variant, simd: variant !== 'plain', threads: variant !== 'plain' };
    // A session's pool takes threads - 1 of the module's workers until it is
    // released; past the last one the module would abort, so a session gets
    // what is left (and a warning).
    m.onyxWorkersInUse = m.onyxWorkersInUse ?? 0;
    const left = MAX_THREADS - 1 - m.onyxWorkersInUse;
    if (threads - 1 > left) {
      console.warn(`onyx-web: ${threads} threads asked for, ${left + 1} available (the other workers belong to ` +
                   'sessions not yet released); running with ' + (left + 1));
      threads = left + 1;
    }

    const level = OPT_LEVELS[options.graphOptimizationLevel ?? 'all'];
    if (level === undefined) throw new TypeError(`graphOptimizationLevel '${options.graphOptimizationLevel}' is not one of ${Object.keys(OPT_LEVELS)}`);
    const logLevel = options.logSeverityLevel ?? LOG_LEVELS[env.logLevel] ?? 2;
    if (options.executionMode !== undefined && !['sequential', 'parallel'].includes(options.executionMode))
      throw new TypeError(`executionMode '${options.executionMode}' is not 'sequential' or 'parallel'`);
    const settings = {
      threads, optLevel: level, logLevel, profiling: Boolean(options.enableProfiling),
      enableMemPattern: options.enableMemPattern ?? true, enableCpuMemArena: options.enableCpuMemArena ?? true,
      parallel: options.executionMode === 'parallel',
      freeDimensionOverrides: options.freeDimensionOverrides ?? {}, extra: options.extra ?? {},
    };
    const ptr = m._malloc(Math.max(1, bytes.byteLength));
    const settingsPtr = cString(m, JSON.stringify(settings));
    let handle;
    try {
      heap(m).set(bytes, ptr);
      handle = m._onyx_web_session_create(ptr, bytes.byteLength, settingsPtr);
    } finally {
      m._free(settingsPtr);
      m._free(ptr);
    }
    if (!handle) throw new Error(lastError(m));
    return new InferenceSession(m, handle, threads, variant);
  }

  constructor(m, handle, threads, variant) {
    this._m = m;
    this._handle = handle;
    this._threads = threads;
    this._variant = variant;
    m.onyxWorkersInUse += threads - 1;
    this._token = { m, handle, workers: threads - 1 };
    collected.register(this, this._token, this._token);
    const io = JSON.parse(m.UTF8ToString(m._onyx_web_session_io(handle)));
    // onnxruntime's ValueMetadata ({name, isTensor, type, shape}: a symbolic
    // dimension as its name, an unknown one as -1), plus the ONNX type.
    const metadata = (v) => (v.onnxType.startsWith('tensor(')
      ? { name: v.name, isTensor: true, type: TYPE_BY_CODE.get(v.elemType), shape: v.shape, onnxType: v.onnxType }
      : { name: v.name, isTensor: false, onnxType: v.onnxType });
    this.inputMetadata = io.inputs.map(metadata);
    this.outputMetadata = io.outputs.map(metadata);
    this.inputNames = io.inputs.map((v) => v.name);
    this.outputNames = io.outputs.map((v) => v.name);
  }

  // run(feeds, fetches?, options?) -> Promise<{name: Tensor}>. fetches: an
  // array of output names or an object whose keys are output names.
  async run(feeds, fetches, options) {
    const m = this._m;
    if (!this._handle) throw new Error('onyx-web: the session was released');
    if (feeds === null || typeof feeds !== 'object') throw new TypeError('run takes an object of input Tensors');
    let names = this.outputNames;
    if (Array.isArray(fetches)) names = fetches;
    else if (fetches && typeof fetches === 'object' && !(fetches instanceof Tensor)) names = Object.keys(fetches);
    for (const n of names)
      if (!this.outputNames.includes(n)) throw new Error(`'${n}' is not an output of the model (outputs: ${this.outputNames.join(', ')})`);

    const handle = m._onyx_web_feeds_create();
    const namesPtr = cString(m, names.join('\n'));
    let results = 0;
    try {
      for (const [name, value] of Object.entries(feeds)) {
        const namePtr = cString(m, name);
        try {
          const kind = Array.isArray(value) ? 1 : value === null ? 2 : 0;
          if (m._onyx_web_feeds_add(handle, namePtr, kind) !== 0) throw new Error(lastError(m));
        } finally {
          m._free(namePtr);
        }
        if (Array.isArray(value)) value.forEach((t) => appendTensor(m, handle, t, name));
        else if (value !== null) appendTensor(m, handle, value, name);
      }
      results = m._onyx_web_run(this._handle, handle, namesPtr);
      if (!results) throw new Error(lastError(m));
      return readResults(m, results);
    } finally {
      if (results) m._onyx_web_results_release(results);
      m._free(namesPtr);
      m._onyx_web_feeds_release(handle);
    }
  }

  // Stops profiling (options.enableProfiling) and returns its events, a
  // Chrome trace: one {name, cat, dur (µs), args: {op_name, ...}} per node
  // run, and the session's own steps. onnxruntime-web's endProfiling returns
  // nothing; onyx-web gives the events instead of writing a file.
  endProfiling() {
    const m = this._m;
    const ptr = m._onyx_web_end_profiling(this._handle);
    if (!ptr) throw new Error(lastError(m));
    const text = m.UTF8ToString(ptr);
    return text ? JSON.parse(text) : [];
  }

  async release() {
    if (!this._handle) return;
    collected.unregister(this._token);
    releaseSession(this._token);
    this._handle = 0;
  }

  // Not in onnxruntime-web: which build runs this session, with how many threads.
  get backend() { return { variant: this._variant, threads: this._threads }; }
}

// Not in onnxruntime-web: decodes a serialized ONNX TensorProto (kind
// 'tensor'), SequenceProto ('sequence') or OptionalProto ('optional'), as
// the ONNX backend suite's test data is stored. Loads the module if needed.
export async function decodeProto(bytes, kind = 'tensor', options = {}) {
  const variant = options.variant ?? chooseVariant(1);
  const m = await moduleFor(variant);
  const code = { tensor: 0, sequence: 1, optional: 2 }[kind];
  if (code === undefined) throw new TypeError(`decodeProto: kind is 'tensor', 'sequence' or 'optional', not '${kind}'`);
  const ptr = m._malloc(Math.max(1, bytes.byteLength));
  let results = 0;
  try {
    heap(m).set(bytes, ptr);
    results = m._onyx_web_tensor_proto_parse(ptr, bytes.byteLength, code);
    if (!results) throw new Error(lastError(m));
    const values = readResults(m, results);
    return Object.values(values)[0];
  } finally {
    if (results) m._onyx_web_results_release(results);
    m._free(ptr);
  }
}

export const version = '0.1.0';
