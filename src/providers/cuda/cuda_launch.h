// The CUDA kernels of the provider (the .cu files), as plain functions the
// C++ kernels call: pointers in device memory, shapes already checked and
// collapsed, work queued on `stream`. This header is all the .cu files see
// of onyx, so nvcc compiles none of the core's headers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace onyx::cuda {

// The element types the arithmetic kernels run: float32, and float16
// computed in float32.
enum class Element : int32_t { kFloat = 0, kHalf = 1 };

// A shape of at most kMaxRank dims after merging, with each operand's
// strides in elements (0 where it is broadcast).
constexpr int kMaxRank = 8;
struct Strided {
  int32_t rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t strides[3][kMaxRank] = {};  // up to three operands (a, b; or source)
};

enum class BinaryOp : int32_t { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kPRelu };
// y[i] = op(a[...], b[...]) over `n` output elements; `shape` gives a's
// strides in strides[0] and b's in strides[1]; rank 0 means all three are
// contiguous and of n elements.
cudaError_t launch_binary(BinaryOp op, Element type, const void* a, const void* b, void* y, int64_t n,
                          const Strided& shape, cudaStream_t stream);

enum class UnaryOp : int32_t {
  kRelu,
  kSigmoid,
  kTanh,
  kExp,
  kLog,
  kSqrt,
  kNeg,
  kAbs,
  kReciprocal,
  kErf,
  kFloor,
  kCeil,
  kLeakyRelu,    // alpha
  kElu,          // alpha
  kHardSigmoid,  // alpha, beta
  kHardSwish,
  kSoftplus,
  kGelu,   // alpha = 1: the tanh approximation
  kClip,   // alpha = min, beta = max
  kScale,  // alpha * x
};
cudaError_t launch_unary(UnaryOp op, Element type, const void* x, void* y, int64_t n, float alpha, float beta,
                         cudaStream_t stream);

// Float32 <-> float16 (Cast between the two).
cudaError_t launch_convert(Element from, Element to, const void* x, void* y, int64_t n, cudaStream_t stream);

// dst (contiguous, `shape` dims) = src read through strides[0], for
// elements of 1, 2, 4 or 8 bytes: Transpose, broadcasts (stride 0).
cudaError_t launch_strided_copy(const void* src, void* dst, int element_bytes, int64_t n, const Strided& shape,
                                cudaStream_t stream);

// Softmax (or LogSoftmax) of x viewed as [outer, axis, inner] along axis.
cudaError_t launch_softmax(Element type, bool log, const void* x, void* y, int64_t outer, int64_t axis, int64_t inner,
                           cudaStream_t stream);

// LayerNormalization of `rows` rows of `cols` elements: (x - mean) /
// sqrt(var + epsilon) * scale (+ bias), statistics in float32; scale and
// bias have `cols` elements (bias may be null).
cudaError_t launch_layer_norm(Element type, const void* x, const void* scale, const void* bias, void* y, int64_t rows,
                              int64_t cols, float epsilon, cudaStream_t stream);

}  // namespace onyx::cuda
