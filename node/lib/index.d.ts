// Types of onyx's Node.js binding (node/lib/index.js): onnxruntime-node's
// InferenceSession and Tensor, plus onyx's `customOpsLibraries` option.

export declare namespace Tensor {
  type Type =
    | 'float32'
    | 'float64'
    | 'int8'
    | 'uint8'
    | 'int16'
    | 'uint16'
    | 'int32'
    | 'uint32'
    | 'int64'
    | 'uint64'
    | 'bool'
    | 'float16'
    | 'string';

  interface DataTypeMap {
    float32: Float32Array;
    float64: Float64Array;
    int8: Int8Array;
    uint8: Uint8Array;
    int16: Int16Array;
    uint16: Uint16Array;
    int32: Int32Array;
    uint32: Uint32Array;
    int64: BigInt64Array;
    uint64: BigUint64Array;
    bool: Uint8Array;
    float16: Uint16Array;
    string: string[];
  }

  type DataType = DataTypeMap[Type];
}

export declare class Tensor<T extends Tensor.Type = Tensor.Type> {
  /** Over `data` without a copy when it is a typed array of the type's kind;
   *  a plain array is copied. `dims` defaults to [data.length]. */
  constructor(type: T, data: Tensor.DataTypeMap[T] | readonly (number | bigint | boolean | string)[], dims?: readonly number[]);
  constructor(data: Tensor.DataType | readonly string[] | readonly boolean[], dims?: readonly number[]);

  readonly type: T;
  readonly data: Tensor.DataTypeMap[T];
  readonly cpuData: Tensor.DataTypeMap[T];
  readonly dims: readonly number[];
  readonly size: number;
  readonly location: 'cpu';
  getData(): Promise<Tensor.DataTypeMap[T]>;
  /** A tensor of other dims over the same data. */
  reshape(dims: readonly number[]): Tensor<T>;
  dispose(): void;
}

export declare namespace InferenceSession {
  type ExecutionProviderName =
    | 'cpu'
    | 'openvino'
    | 'cuda'
    | 'dnnl'
    | 'tensorrt'
    | 'dml'
    | 'coreml'
    | 'qnn'
    | 'webgpu'
    | 'xnnpack'
    | `${string}ExecutionProvider`;

  /** A provider with its options, as onnxruntime names them (OpenVINO:
   *  device_type, precision, num_of_threads, num_streams, cache_dir). */
  interface ExecutionProviderOption {
    readonly name: ExecutionProviderName;
    readonly [option: string]: unknown;
  }

  interface SessionOptions {
    /** Providers in order of preference; the CPU provider is always the last fallback. */
    executionProviders?: readonly (ExecutionProviderName | ExecutionProviderOption)[];
    intraOpNumThreads?: number;
    interOpNumThreads?: number;
    graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'layout' | 'all';
    executionMode?: 'sequential' | 'parallel';
    enableCpuMemArena?: boolean;
    enableMemPattern?: boolean;
    enableProfiling?: boolean;
    profileFilePrefix?: string;
    logId?: string;
    /** 0 verbose, 1 info, 2 warning, 3 error, 4 fatal. */
    logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
    optimizedModelFilePath?: string;
    /** Sizes for symbolic dimensions, by name. */
    freeDimensionOverrides?: { readonly [dimensionName: string]: number };
    /** Session config entries (AddSessionConfigEntry); nested objects are joined with dots. */
    extra?: Record<string, unknown>;
    /** onyx's: shared libraries of custom operators, each loaded (once per
     *  process) and its RegisterCustomOps called on these options, as
     *  SessionOptions.register_custom_ops_library does in Python. */
    customOpsLibraries?: readonly string[];
  }

  interface RunOptions {
    logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
    tag?: string;
    /** Run config entries (AddRunConfigEntry). */
    extra?: Record<string, unknown>;
  }

  type FeedsType = { readonly [name: string]: Tensor };
  type FetchesType = readonly string[] | { readonly [name: string]: Tensor | null };
  type ReturnType = { readonly [name: string]: Tensor };

  interface TensorValueMetadata {
    readonly name: string;
    readonly isTensor: true;
    /** A Tensor type, or ONNX's name for element types the binding cannot hold (bfloat16...). */
    readonly type: Tensor.Type | string;
    /** A symbolic dimension by its name; an unknown one is -1. */
    readonly shape: readonly (number | string)[];
  }
  interface NonTensorValueMetadata {
    readonly name: string;
    readonly isTensor: false;
  }
  type ValueMetadata = TensorValueMetadata | NonTensorValueMetadata;

  interface ModelMetadata {
    readonly producerName: string;
    readonly graphName: string;
    readonly domain: string;
    readonly description: string;
    readonly graphDescription: string;
    readonly version: number;
    readonly customMetadataMap: { readonly [key: string]: string };
  }
}

export declare class InferenceSession {
  /** Loads and prepares a model off the event loop. Rejects with onyx's message. */
  static create(path: string, options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
  static create(buffer: Uint8Array | ArrayBufferLike, options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
  static create(
    buffer: ArrayBufferLike,
    byteOffset: number,
    byteLength?: number,
    options?: InferenceSession.SessionOptions,
  ): Promise<InferenceSession>;

  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly InferenceSession.ValueMetadata[];
  readonly outputMetadata: readonly InferenceSession.ValueMetadata[];
  readonly modelMetadata: InferenceSession.ModelMetadata;

  /** Runs on libuv's thread pool (runs may overlap); feeds' typed arrays are
   *  read in place and must not change until the promise settles. A Tensor
   *  in `fetches` receives its output in place. Rejects with onyx's message. */
  run(feeds: InferenceSession.FeedsType, options?: InferenceSession.RunOptions): Promise<InferenceSession.ReturnType>;
  run(
    feeds: InferenceSession.FeedsType,
    fetches: InferenceSession.FetchesType,
    options?: InferenceSession.RunOptions,
  ): Promise<InferenceSession.ReturnType>;

  /** Frees the session once the runs in flight are done; later runs reject. */
  release(): Promise<void>;
}

/** The execution providers this build of onyx can create, by their full names. */
export declare function availableProviders(): string[];

/** onyx's version ("0.1.0"). */
export declare const version: string;
