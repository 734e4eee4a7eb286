// Type declarations of onyx-web (web/js/onyx.js): onnxruntime-web's API shape.

export type TensorType =
  | 'float32' | 'uint8' | 'int8' | 'uint16' | 'int16' | 'int32' | 'int64' | 'string' | 'bool'
  | 'float16' | 'float64' | 'uint32' | 'uint64' | 'bfloat16' | 'float8e4m3fn' | 'float8e4m3fnuz'
  | 'float8e5m2' | 'float8e5m2fnuz' | 'uint4' | 'int4' | 'float4e2m1' | 'float8e8m0' | 'uint2' | 'int2';

export type TensorData =
  | Float32Array | Float64Array | Int8Array | Uint8Array | Int16Array | Uint16Array | Int32Array
  | Uint32Array | BigInt64Array | BigUint64Array | string[];

export class Tensor {
  constructor(type: TensorType, data: TensorData | readonly number[] | readonly bigint[] | readonly boolean[],
              dims?: readonly number[]);
  constructor(data: TensorData | readonly boolean[], dims?: readonly number[]);
  readonly type: TensorType;
  readonly data: TensorData;
  readonly dims: readonly number[];
  readonly size: number;
  readonly location: 'cpu';
  getData(): Promise<TensorData>;
  dispose(): void;
  /** onnxruntime-web's image factory: [1, C, H, W] (or NHWC) of (pixel + bias) / mean. Pages only. */
  static fromImage(image: ImageData | ImageBitmap | HTMLImageElement | HTMLCanvasElement | string,
                   options?: ImageOptions & { resizedWidth?: number; resizedHeight?: number;
                                              dataType?: 'float32' | 'uint8'; tensorFormat?: ImageFormat }): Promise<Tensor>;
  toImageData(options?: ImageOptions & { format?: ImageFormat }): ImageData;
  toDataURL(options?: ImageOptions & { format?: ImageFormat }): string;
}

export type ImageFormat = 'RGB' | 'RGBA' | 'BGR' | 'RBG';
type Norm = number | [number, number, number] | [number, number, number, number];
export interface ImageOptions {
  tensorLayout?: 'NCHW' | 'NHWC';
  /** Per channel; defaults mean 255 and bias 0. */
  norm?: { mean?: Norm; bias?: Norm };
}

/** onnxruntime's ValueMetadata, plus the ONNX type. */
export interface ValueMetadata {
  name: string;
  isTensor: boolean;
  /** Tensors: the element type. */
  type?: TensorType;
  /** Tensors of known rank: numbers, symbols as strings, -1 where unknown. */
  shape?: (number | string)[];
  /** onyx-web only: the ONNX type, e.g. "tensor(float)", "seq(tensor(int64))". */
  onnxType: string;
}

export type OnnxValue = Tensor | Tensor[] | null;

export namespace InferenceSession {
  interface SessionOptions {
    executionProviders?: (string | { name: string })[];
    intraOpNumThreads?: number;
    graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
    logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
    enableProfiling?: boolean;
    enableMemPattern?: boolean;
    enableCpuMemArena?: boolean;
    executionMode?: 'sequential' | 'parallel';
    freeDimensionOverrides?: { [symbol: string]: number };
    /** Session config entries; nested objects are joined with '.' ({session: {a: '1'}} is 'session.a'). */
    extra?: Record<string, unknown>;
  }
  type FeedsType = { [name: string]: OnnxValue };
  type FetchesType = readonly string[] | { [name: string]: unknown };
  type ReturnType = { [name: string]: OnnxValue };
}

export class InferenceSession {
  static create(model: string | ArrayBuffer | Uint8Array,
                options?: InferenceSession.SessionOptions): Promise<InferenceSession>;
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly ValueMetadata[];
  readonly outputMetadata: readonly ValueMetadata[];
  run(feeds: InferenceSession.FeedsType, fetches?: InferenceSession.FetchesType,
      options?: unknown): Promise<InferenceSession.ReturnType>;
  release(): Promise<void>;
  /** Stops profiling; returns the Chrome-trace events (onnxruntime-web returns nothing). */
  endProfiling(): { name: string; cat: string; dur: number; ts: number; args: Record<string, unknown> }[];
  /** onyx-web only: the build and thread count this session runs with. */
  readonly backend: { variant: 'simd-threaded' | 'plain'; threads: number };
}

export const env: {
  wasm: { numThreads: number; simd: boolean; wasmPaths?: string };
  logLevel: 'verbose' | 'info' | 'warning' | 'error' | 'fatal';
  loaded?: { variant: 'simd-threaded' | 'plain'; simd: boolean; threads: boolean };
};

/** onyx-web only: decodes a serialized TensorProto, SequenceProto or OptionalProto. */
export function decodeProto(bytes: Uint8Array, kind?: 'tensor' | 'sequence' | 'optional',
                            options?: { variant?: 'simd-threaded' | 'plain' }): Promise<OnnxValue>;

export const version: string;
