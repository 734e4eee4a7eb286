// Softmax, LogSoftmax and LayerNormalization on CUDA. A row (the softmax
// axis when it is innermost, a LayerNormalization row) is one block of 256
// threads that reduces through warp shuffles and shared memory; statistics
// are kept in float32 for both element types. A softmax over an axis that is
// not innermost is one thread per (outer, inner) pair, whose reads along the
// axis are coalesced across neighbouring threads.
#include <cuda_fp16.h>

#include <cfloat>

#include "providers/cuda/cuda_launch.h"

namespace onyx::cuda {
namespace {

constexpr int kRowThreads = 256;

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half(v); }

// The block's maximum (Max) or sum of `v`, returned to every thread.
template <bool Max>
__device__ float block_reduce(float v) {
  __shared__ float partial[kRowThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, v, offset);
    v = Max ? fmaxf(v, other) : v + other;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // partial may still be read from the previous reduction
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < kRowThreads / 32; ++w) v = Max ? fmaxf(v, partial[w]) : v + partial[w];
  return v;
}

template <typename T>
__global__ void softmax_rows(bool log, const T* x, T* y, int64_t cols) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
  float m = -FLT_MAX;
  for (int64_t c = threadIdx.x; c < cols; c += kRowThreads) m = fmaxf(m, load(x, base + c));
  m = block_reduce<true>(m);
  float s = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += kRowThreads) s += expf(load(x, base + c) - m);
  s = block_reduce<false>(s);
  const float log_sum = logf(s);
  for (int64_t c = threadIdx.x; c < cols; c += kRowThreads) {
    const float v = load(x, base + c) - m;
    store(y, base + c, log ? v - log_sum : expf(v) / s);
  }
}

template <typename T>
__global__ void softmax_strided(bool log, const T* x, T* y, int64_t outer, int64_t axis, int64_t inner) {
  const int64_t pairs = outer * inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs; p += step) {
    const int64_t o = p / inner, i = p - o * inner;
    const int64_t base = o * axis * inner + i;
    float m = -FLT_MAX;
    for (int64_t a = 0; a < axis; ++a) m = fmaxf(m, load(x, base + a * inner));
    float s = 0.0f;
    for (int64_t a = 0; a < axis; ++a) s += expf(load(x, base + a * inner) - m);
    const float log_sum = logf(s);
    for (int64_t a = 0; a < axis; ++a) {
      const float v = load(x, base + a * inner) - m;
      store(y, base + a * inner, log ? v - log_sum : expf(v) / s);
    }
  }
}

template <typename T>
__global__ void layer_norm_rows(const T* x, const T* scale, const T* bias, T* y, int64_t cols, float epsilon) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += kRowThreads) sum += load(x, base + c);
  const float mean = block_reduce<false>(sum) / static_cast<float>(cols);
  float squares = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += kRowThreads) {
    const float d = load(x, base + c) - mean;
    squares += d * d;
  }
  const float inv_std = rsqrtf(block_reduce<false>(squares) / static_cast<float>(cols) + epsilon);
  for (int64_t c = threadIdx.x; c < cols; c += kRowThreads) {
    float v = (load(x, base + c) - mean) * inv_std * load(scale, c);
    if (bias != nullptr) v += load(bias, c);
    store(y, base + c, v);
  }
}

template <typename T>
cudaError_t softmax(bool log, const void* x, void* y, int64_t outer, int64_t axis, int64_t inner, cudaStream_t stream) {
  const T* in = static_cast<const T*>(x);
  T* out = static_cast<T*>(y);
  if (inner == 1) {
    softmax_rows<T><<<static_cast<unsigned int>(outer), kRowThreads, 0, stream>>>(log, in, out, axis);
  } else {
    const int64_t blocks = (outer * inner + 255) / 256;
    softmax_strided<T><<<static_cast<unsigned int>(blocks < 65535 * 8 ? blocks : 65535 * 8), 256, 0, stream>>>(
        log, in, out, outer, axis, inner);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t layer_norm(const void* x, const void* scale, const void* bias, void* y, int64_t rows, int64_t cols,
                       float epsilon, cudaStream_t stream) {
  layer_norm_rows<T><<<static_cast<unsigned int>(rows), kRowThreads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias), static_cast<T*>(y), cols,
      epsilon);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_softmax(Element type, bool log, const void* x, void* y, int64_t outer, int64_t axis, int64_t inner,
                           cudaStream_t stream) {
  if (outer == 0 || axis == 0 || inner == 0) return cudaSuccess;
  if (outer > 0x7fffffffll || outer * inner > 0x7fffffffll * 256) return cudaErrorInvalidConfiguration;
  return type == Element::kFloat ? softmax<float>(log, x, y, outer, axis, inner, stream)
                                 : softmax<__half>(log, x, y, outer, axis, inner, stream);
}

cudaError_t launch_layer_norm(Element type, const void* x, const void* scale, const void* bias, void* y, int64_t rows,
                              int64_t cols, float epsilon, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return cudaSuccess;
  if (rows > 0x7fffffffll) return cudaErrorInvalidConfiguration;
  return type == Element::kFloat ? layer_norm<float>(x, scale, bias, y, rows, cols, epsilon, stream)
                                 : layer_norm<__half>(x, scale, bias, y, rows, cols, epsilon, stream);
}

}  // namespace onyx::cuda
