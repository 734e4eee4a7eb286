// Element-wise CUDA kernels: binary ops with broadcasting, unary
// activations, float32 <-> float16 conversion, and the strided copy that
// Transpose and broadcasts use. One kernel per element type; the op is a
// runtime switch, uniform across a launch, so that the build instantiates
// a handful of kernels rather than one per op.
#include <cuda_fp16.h>

#include "providers/cuda/cuda_launch.h"

namespace onyx::cuda {
namespace {

constexpr int kThreads = 256;

// Enough blocks to fill the device with a grid-stride loop over n.
unsigned int blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned int>(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half(v); }

__device__ __forceinline__ float apply_binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd:
      return a + b;
    case BinaryOp::kSub:
      return a - b;
    case BinaryOp::kMul:
      return a * b;
    case BinaryOp::kDiv:
      return a / b;
    case BinaryOp::kPow:
      return powf(a, b);
    case BinaryOp::kMax:
      return (a != a || b != b) ? a + b : fmaxf(a, b);  // NaN wins, as on the CPU
    case BinaryOp::kMin:
      return (a != a || b != b) ? a + b : fminf(a, b);
    case BinaryOp::kPRelu:
      return a < 0.0f ? a * b : a;
  }
  return 0.0f;
}

// The offsets of output element i in operands 0..count-1.
template <int Count>
__device__ __forceinline__ void offsets_of(const Strided& s, int64_t i, int64_t (&off)[Count]) {
  for (int k = 0; k < Count; ++k) off[k] = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    const int64_t dim = s.dims[d];
    const int64_t q = i / dim;
    const int64_t r = i - q * dim;
    for (int k = 0; k < Count; ++k) off[k] += r * s.strides[k][d];
    i = q;
  }
}

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* y, int64_t n, Strided s) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    if (s.rank == 0) {
      store(y, i, apply_binary(op, load(a, i), load(b, i)));
    } else {
      int64_t off[2];
      offsets_of<2>(s, i, off);
      store(y, i, apply_binary(op, load(a, off[0]), load(b, off[1])));
    }
  }
}

__device__ __forceinline__ float apply_unary(UnaryOp op, float x, float alpha, float beta) {
  switch (op) {
    case UnaryOp::kRelu:
      return x > 0.0f ? x : 0.0f;
    case UnaryOp::kSigmoid:
      return 1.0f / (1.0f + expf(-x));
    case UnaryOp::kTanh:
      return tanhf(x);
    case UnaryOp::kExp:
      return expf(x);
    case UnaryOp::kLog:
      return logf(x);
    case UnaryOp::kSqrt:
      return sqrtf(x);
    case UnaryOp::kNeg:
      return -x;
    case UnaryOp::kAbs:
      return fabsf(x);
    case UnaryOp::kReciprocal:
      return 1.0f / x;
    case UnaryOp::kErf:
      return erff(x);
    case UnaryOp::kFloor:
      return floorf(x);
    case UnaryOp::kCeil:
      return ceilf(x);
    case UnaryOp::kLeakyRelu:
      return x >= 0.0f ? x : alpha * x;
    case UnaryOp::kElu:
      return x >= 0.0f ? x : alpha * (expf(x) - 1.0f);
    case UnaryOp::kHardSigmoid:
      return fmaxf(0.0f, fminf(1.0f, alpha * x + beta));
    case UnaryOp::kHardSwish:
      return x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f));
    case UnaryOp::kSoftplus:
      return x > 20.0f ? x : log1pf(expf(x));
    case UnaryOp::kGelu:
      if (alpha != 0.0f) {  // tanh approximation: sqrt(2/pi) = 0.7978845608
        return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
      }
      return 0.5f * x * (1.0f + erff(x * 0.70710678118f));
    case UnaryOp::kClip:
      return x != x ? x : fminf(fmaxf(x, alpha), beta);
    case UnaryOp::kScale:
      return alpha * x;
  }
  return 0.0f;
}

template <typename T>
__global__ void unary_kernel(UnaryOp op, const T* x, T* y, int64_t n, float alpha, float beta) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    store(y, i, apply_unary(op, load(x, i), alpha, beta));
  }
}

template <typename From, typename To>
__global__ void convert_kernel(const From* x, To* y, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    store(y, i, load(x, i));
  }
}

// Elements are moved as unsigned integers of their width.
template <typename Word>
__global__ void strided_copy_kernel(const Word* src, Word* dst, int64_t n, Strided s) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t off[1];
    offsets_of<1>(s, i, off);
    dst[i] = src[off[0]];
  }
}

}  // namespace

cudaError_t launch_binary(BinaryOp op, Element type, const void* a, const void* b, void* y, int64_t n,
                          const Strided& shape, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (type == Element::kFloat) {
    binary_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(
        op, static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(y), n, shape);
  } else {
    binary_kernel<__half><<<blocks_for(n), kThreads, 0, stream>>>(
        op, static_cast<const __half*>(a), static_cast<const __half*>(b), static_cast<__half*>(y), n, shape);
  }
  return cudaGetLastError();
}

cudaError_t launch_unary(UnaryOp op, Element type, const void* x, void* y, int64_t n, float alpha, float beta,
                         cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (type == Element::kFloat) {
    unary_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(op, static_cast<const float*>(x),
                                                                static_cast<float*>(y), n, alpha, beta);
  } else {
    unary_kernel<__half><<<blocks_for(n), kThreads, 0, stream>>>(op, static_cast<const __half*>(x),
                                                                 static_cast<__half*>(y), n, alpha, beta);
  }
  return cudaGetLastError();
}

cudaError_t launch_convert(Element from, Element to, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (from == to)
    return cudaMemcpyAsync(y, x, static_cast<size_t>(n) * (from == Element::kFloat ? 4 : 2), cudaMemcpyDeviceToDevice,
                           stream);
  if (from == Element::kFloat) {
    convert_kernel<float, __half>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<__half*>(y), n);
  } else {
    convert_kernel<__half, float>
        <<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<float*>(y), n);
  }
  return cudaGetLastError();
}

cudaError_t launch_strided_copy(const void* src, void* dst, int element_bytes, int64_t n, const Strided& shape,
                                cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  switch (element_bytes) {
    case 1:
      strided_copy_kernel<uint8_t><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint8_t*>(src),
                                                                           static_cast<uint8_t*>(dst), n, shape);
      break;
    case 2:
      strided_copy_kernel<uint16_t><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint16_t*>(src),
                                                                            static_cast<uint16_t*>(dst), n, shape);
      break;
    case 4:
      strided_copy_kernel<uint32_t><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint32_t*>(src),
                                                                            static_cast<uint32_t*>(dst), n, shape);
      break;
    case 8:
      strided_copy_kernel<uint64_t><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const uint64_t*>(src),
                                                                            static_cast<uint64_t*>(dst), n, shape);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace onyx::cuda
