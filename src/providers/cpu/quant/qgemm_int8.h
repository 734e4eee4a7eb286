// Exact 8-bit integer matrix multiply for the quantized kernels:
//   C[i, j] = sum_k (A[i, k] - a_zero[i]) * (B[k, j] - b_zero[j])   (int32)
// with A and B uint8 or int8 in any combination, a_zero one value or one per
// row of A, b_zero one value or one per column of B. The sums are the same
// int32 values as the plain loop's (no intermediate saturation on any path),
// so ops keep the ONNX reference's results.
//
// Both operands are packed into the panels of one microkernel (AVX-512 VNNI
// 8x32, AVX2 4x16 on int16, portable 4x16; qgemm_int8_kernels.h), chosen at
// run time from cpuid or ONYX_INT8_ISA (int8_isa.h). A constant operand (the
// weights) is packed once at kernel creation and shared by every run; zero
// points enter through row sums of A and column sums of B, not per element.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/thread_pool.h"
#include "providers/cpu/quant/int8_isa.h"

namespace onyx::cpu {

namespace qgemm_detail {
struct Int8Kernel;
}

// One 8-bit operand as stored by the caller: element (r, c) of op(X) is
// data[r * stride + c], or data[c * stride + r] when transposed.
struct Int8Matrix {
  const void* data = nullptr;
  bool is_signed = false;  // int8, else uint8
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stride = 0;
  bool transposed = false;
};

// A packed operand: the left one (A, [M, K], zero point per row) or the right
// one (B, [K, N], zero point per column), for the kernel of one ISA. Copies
// share the panels, read-only.
class PackedInt8 {
 public:
  PackedInt8() = default;
  bool empty() const { return kernel_ == nullptr; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  // The ISA it was packed for: the other operand of a product must be packed
  // for the same one (qgemm_int8 checks).
  Int8Isa isa() const { return isa_; }
  const char* kernel_name() const;

 private:
  friend struct PackedInt8Access;
  const qgemm_detail::Int8Kernel* kernel_ = nullptr;
  Int8Isa isa_ = Int8Isa::kAuto;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  int64_t groups_ = 0;  // k groups (K rounded up to the kernel's group)
  std::shared_ptr<unsigned char> panels_;
  // Per row of A or column of B, padded to whole tiles: the zero point in
  // the stored domain (za' or zb') and, for A, rowsum - K * za'; for B, the
  // column sum of B'.
  std::vector<int32_t> zero_;
  std::vector<int32_t> sum_;
};

// `zero_points` holds 1 value (every row / column) or one per row of A /
// column of B, in the operand's own type (0..255 or -128..127). Packing B is
// parallel over `pool` (convolutions pack their columns every run).
PackedInt8 pack_int8_a(const Int8Matrix& a, const int32_t* zero_points, int64_t zero_count,
                       Int8Isa isa = Int8Isa::kAuto);
PackedInt8 pack_int8_b(const Int8Matrix& b, const int32_t* zero_points, int64_t zero_count,
                       Int8Isa isa = Int8Isa::kAuto, ThreadPool* pool = nullptr);

// B [K, N] (not transposed) made row by row while it is packed: `rows(k0,
// count, out)` writes rows k0 .. k0 + count - 1 (count <= 4), N bytes each,
// consecutively into out, from any thread. A convolution's im2col then
// never exists whole: a few rows at a time go from the image to the panels.
using Int8RowSource = std::function<void(int64_t k0, int64_t count, uint8_t* out)>;
PackedInt8 pack_int8_b_rows(int64_t k, int64_t n, bool is_signed, const int32_t* zero_points, int64_t zero_count,
                            Int8Isa isa, ThreadPool* pool, const Int8RowSource& rows);

// Called from the worker that finished C's block rows [i0, i1) x columns
// [j0, j1), while it is still in cache: the caller's requantization.
// `block` points at C(i0, j0), rows `ld` elements apart.
using Int8BlockDone =
    std::function<void(int64_t i0, int64_t i1, int64_t j0, int64_t j1, const int32_t* block, int64_t ld)>;

// C[M, N] (row stride ldc) = the exact product of packed A [M, K] and packed
// B [K, N]. A and B must be packed for the same ISA (an error otherwise is a
// bug in the caller: it throws std::logic_error). With c null, C exists only
// block by block in a per-thread buffer that `done` reads (a requantizing
// caller then never writes the int32 matrix to memory).
void qgemm_int8(const PackedInt8& a, const PackedInt8& b, int32_t* c, int64_t ldc, ThreadPool* pool,
                const Int8BlockDone& done = {});

// Rows of A read in place (a convolution's NHWC image: no im2col, no
// packing per run). Row i of A is `taps` segments of K / taps uint8 values;
// rows(i0, count, out) writes the addresses of the segments of rows i0 ..
// i0 + count - 1, segment t of row i0 + i at out[t * count + i], from any
// thread.
using Int8RowPointers = std::function<void(int64_t i0, int64_t count, const uint8_t** out)>;

// Whether the kernel `isa` resolves to reads rows in place (so weights
// packed for it can run qgemm_int8_indirect).
bool int8_indirect_available(Int8Isa isa = Int8Isa::kAuto);

// Whether qgemm_int8_indirect can run with b: its kernel reads rows in place
// and K / taps is a whole number of the kernel's k groups.
bool int8_indirect_supported(const PackedInt8& b, int64_t taps);

// The column sums of B as stored (B itself for an int8 B), b.cols() values.
std::vector<int32_t> int8_column_sums(const PackedInt8& b);

// C[M, N] = A (uint8, through `rows`) times B (int8, packed; zero points
// ignored) minus adjust[j] per column (N values: a caller folds A's zero
// point and a bias in), block by block to `done` as qgemm_int8's.
void qgemm_int8_indirect(int64_t m, int64_t taps, const Int8RowPointers& rows, const PackedInt8& b,
                         const int32_t* adjust, ThreadPool* pool, const Int8BlockDone& done);

// The plain loop, in int64 then truncated to int32 as the ops' reference
// (tests and one-off checks): zero points as in pack_int8_*.
void qgemm_int8_reference(const Int8Matrix& a, const int32_t* a_zero, int64_t a_zero_count, const Int8Matrix& b,
                          const int32_t* b_zero, int64_t b_zero_count, int32_t* c, int64_t ldc);

}  // namespace onyx::cpu
