'use strict';
// onyx for Node.js, in the shape of onnxruntime-node: `const ort = require('onyx')`,
// then `await ort.InferenceSession.create(path)` and `await session.run(feeds)`.
// The native addon (onyx_node.node, node/src/onyx_node.cc) runs sessions on
// libuv's thread pool over onyx's C API; this file checks arguments and turns
// onnxruntime-node's options into the addon's plain ones.

const fs = require('node:fs');
const path = require('node:path');

// The addon: $ONYX_NODE_ADDON, else beside this package (<build>/node/onyx,
// where the build puts both), else a source checkout's build/ folder.
function loadBinding() {
  if (process.env.ONYX_NODE_ADDON) {
    const file = path.resolve(process.env.ONYX_NODE_ADDON);
    if (!fs.existsSync(file)) throw new Error(`ONYX_NODE_ADDON names ${file}, which does not exist`);
    return require(file);
  }
  const candidates = [
    path.join(__dirname, '..', 'onyx_node.node'),
    path.join(__dirname, '..', '..', 'build', 'node', 'onyx', 'onyx_node.node'),
  ];
  for (const file of candidates) {
    if (fs.existsSync(file)) return require(file);
  }
  throw new Error(
    `onyx's native addon (onyx_node.node) was not found in ${candidates.join(' or ')}: build it with ` +
      '`cmake --build build` (it needs node_api.h, from libnode-dev) or set ONYX_NODE_ADDON to its path');
}

const binding = loadBinding();

// ---- Tensor ---------------------------------------------------------------------

// Tensor types and the typed arrays that hold them, as onnxruntime-node has them.
const TYPED_ARRAYS = {
  float32: Float32Array,
  float64: Float64Array,
  int8: Int8Array,
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
  bool: Uint8Array,
  float16: Uint16Array,
};

function typeOfTypedArray(data) {
  if (data instanceof Uint8ClampedArray) return 'uint8';
  for (const [type, ArrayType] of Object.entries(TYPED_ARRAYS)) {
    if (type !== 'bool' && type !== 'float16' && data instanceof ArrayType) return type;
  }
  return undefined;
}

function checkDims(dims) {
  if (!Array.isArray(dims)) throw new TypeError('A tensor\'s dims must be an array of numbers');
  let size = 1;
  for (const d of dims) {
    if (!Number.isSafeInteger(d) || d < 0) {
      throw new RangeError(`A tensor's dims must be non-negative integers, not ${String(d)}`);
    }
    size *= d;
  }
  return size;
}

class Tensor {
  // new Tensor(type, data, dims?) or new Tensor(data, dims?).
  // A typed array of the type's kind is used as it is, not copied: the run
  // reads the caller's memory. A plain array is copied into a typed array.
  constructor(arg0, arg1, arg2) {
    let type;
    let data;
    let dims;
    if (typeof arg0 === 'string') {
      [type, data, dims] = [arg0, arg1, arg2];
      if (type === 'string') {
        if (!Array.isArray(data) || !data.every((s) => typeof s === 'string')) {
          throw new TypeError('A string tensor\'s data must be an array of strings');
        }
      } else if (!(type in TYPED_ARRAYS)) {
        throw new TypeError(`Unsupported tensor type: ${type}`);
      } else if (ArrayBuffer.isView(data)) {
        const ArrayType = TYPED_ARRAYS[type];
        const fits = data instanceof ArrayType || (type === 'uint8' && data instanceof Uint8ClampedArray);
        if (!fits) {
          throw new TypeError(`A ${type} tensor's data must be a ${ArrayType.name}, not a ${data.constructor.name}`);
        }
      } else if (Array.isArray(data)) {
        data = fromArray(type, data);
      } else {
        throw new TypeError(`A ${type} tensor's data must be a ${TYPED_ARRAYS[type].name} or an array`);
      }
    } else {
      [data, dims] = [arg0, arg1];
      if (ArrayBuffer.isView(data)) {
        type = typeOfTypedArray(data);
        if (type === undefined) throw new TypeError(`Unsupported typed array for a tensor: ${data.constructor.name}`);
      } else if (Array.isArray(data) && data.length > 0 && data.every((s) => typeof s === 'string')) {
        type = 'string';
      } else if (Array.isArray(data) && data.length > 0 && data.every((b) => typeof b === 'boolean')) {
        type = 'bool';
        data = Uint8Array.from(data, (b) => (b ? 1 : 0));
      } else {
        throw new TypeError('A tensor needs a type, or data that is a typed array, strings or booleans');
      }
    }
    dims = dims === undefined ? [data.length] : Array.from(dims);
    const size = checkDims(dims);
    if (size !== data.length) {
      throw new RangeError(`Tensor's size(${size}) does not match data length(${data.length}).`);
    }
    this.type = type;
    this.data = data;
    this.dims = Object.freeze(dims);
    this.size = size;
    this.location = 'cpu';
  }

  get cpuData() {
    return this.data;
  }

  async getData() {
    return this.data;
  }

  // A tensor of other dims over the same data (no copy).
  reshape(dims) {
    return new Tensor(this.type, this.data, dims);
  }

  dispose() {}
}

function fromArray(type, values) {
  if (type === 'bool') return Uint8Array.from(values, (b) => (b ? 1 : 0));
  if (type === 'int64' || type === 'uint64') return TYPED_ARRAYS[type].from(values, (v) => BigInt(v));
  return TYPED_ARRAYS[type].from(values);
}

// ---- Options ----------------------------------------------------------------------

const OPTIMIZATION_LEVELS = { disabled: 0, basic: 1, extended: 2, layout: 3, all: 99 };
const EXECUTION_MODES = { sequential: 0, parallel: 1 };
// onnxruntime-node's short provider names; a full name ("...ExecutionProvider") passes as it is.
const PROVIDER_NAMES = {
  cpu: 'CPUExecutionProvider',
  openvino: 'OpenVINOExecutionProvider',
  cuda: 'CUDAExecutionProvider',
  dnnl: 'DnnlExecutionProvider',
  tensorrt: 'TensorrtExecutionProvider',
  dml: 'DmlExecutionProvider',
  coreml: 'CoreMLExecutionProvider',
  qnn: 'QNNExecutionProvider',
  webgpu: 'WebGpuExecutionProvider',
  xnnpack: 'XnnpackExecutionProvider',
};

function providerName(name) {
  if (typeof name !== 'string') throw new TypeError('An execution provider\'s name must be a string');
  if (name in PROVIDER_NAMES) return PROVIDER_NAMES[name];
  if (name.endsWith('ExecutionProvider')) return name;
  throw new TypeError(`Unknown execution provider '${name}': use ${Object.keys(PROVIDER_NAMES).join(', ')}, ` +
    'or a full name such as CPUExecutionProvider');
}

function optionValue(value) {
  if (typeof value === 'boolean') return value ? '1' : '0';
  return String(value);
}

// `extra` as onnxruntime-node takes it: config entries, nested objects
// joined with dots ({session: {intra_op: {allow_spinning: '0'}}}).
function configEntries(extra, what) {
  if (extra === undefined) return [];
  if (typeof extra !== 'object' || extra === null) throw new TypeError(`${what} must be an object`);
  const entries = [];
  const walk = (object, prefix) => {
    for (const [key, value] of Object.entries(object)) {
      if (typeof value === 'object' && value !== null) {
        walk(value, `${prefix}${key}.`);
      } else if (value !== undefined) {
        entries.push([`${prefix}${key}`, optionValue(value)]);
      }
    }
  };
  walk(extra, '');
  return entries;
}

function integerOption(options, name, min = 0) {
  const value = options[name];
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < min) {
    throw new TypeError(`Session option ${name} must be an integer >= ${min}, not ${String(value)}`);
  }
  return value;
}

function booleanOption(options, name) {
  const value = options[name];
  if (value !== undefined && typeof value !== 'boolean') {
    throw new TypeError(`Session option ${name} must be a boolean`);
  }
  return value;
}

function stringOption(options, name) {
  const value = options[name];
  if (value !== undefined && typeof value !== 'string') throw new TypeError(`Session option ${name} must be a string`);
  return value;
}

function nativeSessionOptions(options) {
  if (options === undefined) options = {};
  if (typeof options !== 'object' || options === null) throw new TypeError('Session options must be an object');
  const native = {
    intraOpNumThreads: integerOption(options, 'intraOpNumThreads'),
    interOpNumThreads: integerOption(options, 'interOpNumThreads'),
    logSeverityLevel: integerOption(options, 'logSeverityLevel'),
    enableCpuMemArena: booleanOption(options, 'enableCpuMemArena'),
    enableMemPattern: booleanOption(options, 'enableMemPattern'),
    logId: stringOption(options, 'logId'),
    optimizedModelFilePath: stringOption(options, 'optimizedModelFilePath'),
    configEntries: configEntries(options.extra, 'Session option extra'),
    executionProviders: [],
    freeDimensionOverrides: [],
    customOpsLibraries: [],
  };
  if (options.graphOptimizationLevel !== undefined) {
    const level = OPTIMIZATION_LEVELS[options.graphOptimizationLevel];
    if (level === undefined) {
      throw new TypeError(`Session option graphOptimizationLevel must be one of ${Object.keys(OPTIMIZATION_LEVELS).join(', ')}`);
    }
    native.graphOptimizationLevel = level;
  }
  if (options.executionMode !== undefined) {
    const mode = EXECUTION_MODES[options.executionMode];
    if (mode === undefined) throw new TypeError('Session option executionMode must be \'sequential\' or \'parallel\'');
    native.executionMode = mode;
  }
  if (options.enableProfiling) native.profileFilePrefix = stringOption(options, 'profileFilePrefix') ?? 'onyx_profile';
  for (const provider of options.executionProviders ?? []) {
    if (typeof provider === 'string') {
      native.executionProviders.push({ name: providerName(provider), options: [] });
    } else if (typeof provider === 'object' && provider !== null) {
      const { name, ...providerOptions } = provider;
      native.executionProviders.push({
        name: providerName(name),
        options: Object.entries(providerOptions).map(([key, value]) => [key, optionValue(value)]),
      });
    } else {
      throw new TypeError('executionProviders must hold names or {name, ...options} objects');
    }
  }
  for (const [name, size] of Object.entries(options.freeDimensionOverrides ?? {})) {
    if (!Number.isSafeInteger(size) || size < 0) {
      throw new TypeError(`freeDimensionOverrides.${name} must be a non-negative integer`);
    }
    native.freeDimensionOverrides.push([name, size]);
  }
  const libraries = options.customOpsLibraries ?? [];
  if (!Array.isArray(libraries) || !libraries.every((p) => typeof p === 'string')) {
    throw new TypeError('Session option customOpsLibraries must be an array of paths');
  }
  native.customOpsLibraries = libraries;
  return native;
}

function nativeRunOptions(options) {
  if (options === undefined) options = {};
  if (typeof options !== 'object' || options === null) throw new TypeError('Run options must be an object');
  const native = { configEntries: configEntries(options.extra, 'Run option extra') };
  if (options.logSeverityLevel !== undefined) native.logSeverityLevel = integerOption(options, 'logSeverityLevel');
  if (options.tag !== undefined) native.tag = stringOption(options, 'tag');
  return native;
}

// ---- InferenceSession ----------------------------------------------------------------

const CONSTRUCTING = Symbol('onyx.InferenceSession');

class InferenceSession {
  #handle;

  // Use InferenceSession.create.
  constructor(token, native) {
    if (token !== CONSTRUCTING) throw new TypeError('Use InferenceSession.create(pathOrBuffer, options)');
    this.#handle = native.handle;
    this.inputNames = Object.freeze(native.inputNames);
    this.outputNames = Object.freeze(native.outputNames);
    this.inputMetadata = Object.freeze(native.inputMetadata);
    this.outputMetadata = Object.freeze(native.outputMetadata);
    this.modelMetadata = Object.freeze(native.modelMetadata);
  }

  // create(path, options?), create(bytes: Uint8Array | ArrayBuffer, options?)
  // or create(buffer: ArrayBuffer, byteOffset, byteLength?, options?). The
  // model is loaded and prepared off the event loop.
  static async create(arg0, arg1, arg2, arg3) {
    let model;
    let options = arg1;
    if (typeof arg0 === 'string') {
      model = arg0;
    } else if (arg0 instanceof Uint8Array) {
      model = arg0;
    } else if (arg0 instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && arg0 instanceof SharedArrayBuffer)) {
      if (typeof arg1 === 'number') {
        const byteLength = typeof arg2 === 'number' ? arg2 : arg0.byteLength - arg1;
        model = new Uint8Array(arg0, arg1, byteLength);
        options = typeof arg2 === 'number' ? arg3 : arg2;
      } else {
        model = new Uint8Array(arg0);
      }
    } else {
      throw new TypeError('InferenceSession.create needs a model path, a Uint8Array or an ArrayBuffer');
    }
    const native = await binding.createSession(model, nativeSessionOptions(options));
    return new InferenceSession(CONSTRUCTING, native);
  }

  // run(feeds, options?), run(feeds, fetches: string[], options?) or
  // run(feeds, fetches: {name: Tensor | null}, options?): resolves to
  // {name: Tensor} for the outputs asked for (all by default). The model
  // runs on libuv's thread pool; feeds' typed arrays are read in place and
  // must not change until the promise settles. A Tensor given in `fetches`
  // receives its output in place and is returned as it is.
  async run(feeds, arg1, arg2) {
    if (typeof feeds !== 'object' || feeds === null || feeds instanceof Tensor || Array.isArray(feeds)) {
      throw new TypeError('\'feeds\' must be an object that maps input names to Tensors');
    }
    let outputNames = this.outputNames;
    let given = {};
    let options = arg1;
    if (Array.isArray(arg1)) {
      if (!arg1.every((name) => typeof name === 'string')) throw new TypeError('\'fetches\' must hold output names');
      outputNames = arg1;
      options = arg2;
    } else if (arg1 instanceof Tensor) {
      throw new TypeError('\'fetches\' cannot be a Tensor');
    } else if (typeof arg1 === 'object' && arg1 !== null) {
      const keys = Object.keys(arg1);
      if (keys.length > 0 && keys.every((name) => this.outputNames.includes(name))) {
        outputNames = keys;
        given = arg1;
        options = arg2;
      }
    }
    if (outputNames.length === 0) throw new TypeError('\'fetches\' must name at least one output');
    const inputNames = Object.keys(feeds);
    const inputs = inputNames.map((name) => {
      if (!(feeds[name] instanceof Tensor)) throw new TypeError(`feeds['${name}'] must be a Tensor`);
      return feeds[name];
    });
    const preallocated = outputNames.map((name) => {
      const tensor = given[name];
      if (tensor === undefined || tensor === null) return null;
      if (!(tensor instanceof Tensor)) throw new TypeError(`fetches['${name}'] must be a Tensor or null`);
      return tensor;
    });
    const results = await binding.run(this.#handle, inputNames, inputs, outputNames, preallocated,
      nativeRunOptions(options));
    const outputs = {};
    outputNames.forEach((name, i) => {
      const result = results[i];
      outputs[name] = preallocated[i] ?? new Tensor(result.type, result.data, result.dims);
    });
    return outputs;
  }

  // Frees the session once the runs in flight are done; later runs reject.
  async release() {
    binding.releaseSession(this.#handle);
  }
}

// onyx's providers in this build, by their full names.
function availableProviders() {
  return binding.availableProviders();
}

module.exports = {
  InferenceSession,
  Tensor,
  availableProviders,
  version: binding.version,
};
