// Dense matrix multiply for CPU kernels: a packed, cache-blocked, multithreaded
// float GEMM with register-blocked microkernels per ISA (chosen at run time),
// operands that can be packed once (constant weights), a fused bias and
// activation in the write-back, and a simple generic GEMM for other types.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

#include "common/thread_pool.h"

namespace onyx::cpu {

namespace gemm_detail {
struct SgemmKernel;
}

// The instruction set of the SGEMM microkernels. kAuto is the widest one the
// running CPU supports; the others exist to test and benchmark each kernel.
enum class SgemmIsa { kAuto, kPortable, kAvx2, kAvx512 };

const char* sgemm_isa_name(SgemmIsa isa);
// The ISAs this CPU (and this build's architecture) can run, kPortable first.
std::vector<SgemmIsa> available_sgemm_isas();
// The ISA kAuto resolves to.
SgemmIsa best_sgemm_isa();

enum class GemmActivation { kNone, kRelu, kClip, kLeakyRelu };

// Applied to C after the product, in the tile write-back while the tile is
// still in L1: C(i, j) = act(alpha * op(A) op(B)(i, j) + beta * C(i, j)
//                            + row_bias[i] + col_bias[j]).
// A default-constructed epilogue does nothing.
struct GemmEpilogue {
  const float* row_bias = nullptr;  // M values, e.g. Conv's bias per output channel
  const float* col_bias = nullptr;  // N values, e.g. Gemm's C of shape [N]
  GemmActivation activation = GemmActivation::kNone;
  float clip_min = -std::numeric_limits<float>::infinity();  // kClip bounds
  float clip_max = std::numeric_limits<float>::infinity();
  float leaky_alpha = 0.01f;  // kLeakyRelu slope for x < 0

  bool active() const { return row_bias != nullptr || col_bias != nullptr || activation != GemmActivation::kNone; }
};

// One GEMM operand packed into the panels of one microkernel: made once (for
// constant weights, at kernel creation) and then shared read-only by every
// run and thread. It records the kernel it was packed for, so it is used with
// that kernel whatever ISA a later call asks for.
class PackedMatrix {
 public:
  PackedMatrix() = default;
  bool empty() const { return data_ == nullptr; }
  // The shape of op(X): M x K for a packed A, K x N for a packed B.
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const char* kernel_name() const;

 private:
  friend PackedMatrix pack_a(bool, int64_t, int64_t, const float*, int64_t, SgemmIsa);
  friend PackedMatrix pack_b(bool, int64_t, int64_t, const float*, int64_t, SgemmIsa,
                             const std::function<void(const float*, size_t)>&);
  friend struct PackedAccess;
  const gemm_detail::SgemmKernel* kernel_ = nullptr;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  std::shared_ptr<float> data_;
};

// Packs op(A) (M x K) as the left operand, or op(B) (K x N) as the right one.
PackedMatrix pack_a(bool trans_a, int64_t M, int64_t K, const float* A, int64_t lda, SgemmIsa isa = SgemmIsa::kAuto);
// `consumed`, when given, is called with each stretch of B (pointer, bytes)
// once it is packed, in order, so that a caller that owns B alone may drop
// it as it goes (a 400 MB fully connected weight need not exist twice).
PackedMatrix pack_b(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, SgemmIsa isa = SgemmIsa::kAuto,
                    const std::function<void(const float*, size_t)>& consumed = {});

// C = alpha * op(A) * op(B) + beta * C, all row-major; op(X) is X or X^T.
// op(A) is M x K, op(B) is K x N, C is M x N. When beta == 0, C is only written
// (its old contents, NaN included, are ignored). `pool` may be null.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool* pool,
           const GemmEpilogue& epilogue = {}, SgemmIsa isa = SgemmIsa::kAuto);

// The same with A packed by pack_a (M and K from it) ...
void sgemm_packed_a(const PackedMatrix& A, bool trans_b, int64_t N, float alpha, const float* B, int64_t ldb,
                    float beta, float* C, int64_t ldc, ThreadPool* pool, const GemmEpilogue& epilogue = {});
// ... or with B packed by pack_b (K and N from it).
void sgemm_packed_b(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda, const PackedMatrix& B,
                    float beta, float* C, int64_t ldc, ThreadPool* pool, const GemmEpilogue& epilogue = {});

// Y[i * ldy + j] = sum_p A[i * lda + p] * X[j * ldx + p] (+ bias[i] when not
// null) for i < M, j < cols: each row of a row-major A against `cols` vectors,
// A read once per four of them. For a few vectors (a convolution with a few
// output positions), where tiles of 16 or 32 columns would waste most of
// their work and packing A would cost more than the product.
void sgemm_dots(int64_t M, int64_t K, const float* A, int64_t lda, const float* X, int64_t ldx, int64_t cols,
                const float* bias, float* Y, int64_t ldy, ThreadPool* pool, SgemmIsa isa = SgemmIsa::kAuto);

// The tile of A's microkernel: rows of an MR panel and columns of an NR panel.
int64_t sgemm_tile_rows(const PackedMatrix& A);
int64_t sgemm_tile_cols(const PackedMatrix& A);
// Whether sgemm_packed_a_rows_b runs with A's microkernel (AVX2 and AVX-512).
bool sgemm_has_row_pointer_b(const PackedMatrix& A);

// C = op(A)[rows i0..i1) * B + beta * C, then the epilogue (its row_bias
// indexed by A's row), single-threaded, where B (K x N) is given by rows:
// B(p, j) = x[offsets[p] + j]. Every row must be readable up to
// round_up(N, sgemm_tile_cols(A)) floats (the microkernel loads whole tiles
// and only masks the stores). i0 is a multiple of sgemm_tile_rows(A); C
// points at row i0. Convolutions use it with rows pointing into a padded
// input, instead of copying the column matrix (im2col) and packing it.
void sgemm_packed_a_rows_b(const PackedMatrix& A, int64_t i0, int64_t i1, int64_t N, const float* x,
                           const int64_t* offsets, float beta, float* C, int64_t ldc, const GemmEpilogue& epilogue = {});

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
