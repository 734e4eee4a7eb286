// Dense matrix multiply for CPU kernels: a packed, cache-blocked, multithreaded
// float GEMM (the base ISA-specific microkernels plug into) and a simple
// generic GEMM for the other element types.
#pragma once

#include <cstdint>

#include "common/thread_pool.h"

namespace onyx::cpu {

// C = alpha * op(A) * op(B) + beta * C, all row-major; op(X) is X or X^T.
// op(A) is M x K, op(B) is K x N, C is M x N. When beta == 0, C is only written
// (its old contents, NaN included, are ignored). `pool` may be null.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool* pool);

// The same contract for every type: gemm<float> is sgemm; double and the
// integer types (int32, int64, uint32, uint64; these wrap around on overflow)
// use cache-friendly loops parallel over rows, not packed.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc, ThreadPool* pool);
template <>
void gemm<float>(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool* pool);

}  // namespace onyx::cpu
