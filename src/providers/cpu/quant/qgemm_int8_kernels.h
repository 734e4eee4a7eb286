// The contract between the int8 GEMM driver (qgemm_int8.cc) and its per-ISA
// microkernels (qgemm_int8_<isa>_<MR>x<NR>.cc): the packed panel layouts and
// one table entry per kernel. Internal to src/providers/cpu/quant/.
//
// Both operands are stored with offsets that make every kernel's products
// exact: A' = A + 128 when A is int8 (so A' is 0..255), B' = B - 128 when B
// is uint8 (so B' is -128..127). The zero points move with them (za' = za +
// 128, zb' = zb - 128), and
//   sum_k (A'[i,k] - za'[i]) (B'[k,j] - zb'[j])
//     = dot(i, j) - zb'[j] * (rowsum A'[i] - K za'[i]) - za'[i] * colsum B'[j]
// in int32 arithmetic modulo 2^32, which gives the exact sum whenever it fits
// in int32 (the ops' contract), without subtracting zero points per element.
#pragma once

#include <cstdint>

namespace onyx::cpu::qgemm_detail {

// Computes one MR x NR tile over `groups` k groups of packed panels:
//   dot(i, j) = sum over the panels' k of a(i, k) * b(k, j)
//   C(i, j)   = dot(i, j) - b_zero[j] * a_term[i] - a_zero[i] * b_sum[j]
// for i < m (the template's row count) and j < n (1..NR); with `accumulate`,
// C(i, j) += dot(i, j) instead (the later blocks of a long K). The per-row and
// per-column arrays are padded to MR and NR, panels with zeros to whole
// groups, MR rows and NR columns, so only C's stores are clipped.
//
// Panel layouts, with G the k values a kernel multiplies per 32-bit lane:
//   a: [groups][MR][G] of A' (k-major groups, rows within a group)
//   b: [groups][NR][G] of B'
// 8-bit kernels (G = 4: portable, AVX-512 VNNI's vpdpbusd) store A' as uint8
// and B' as int8; the 16-bit kernel (G = 2: AVX2's vpmaddwd) stores both as
// int16, so that no product or pair sum can saturate (see the AVX2 file).
using Int8Tile = void (*)(int64_t groups, const void* a, const void* b, const int32_t* a_term, const int32_t* a_zero,
                          const int32_t* b_zero, const int32_t* b_sum, int32_t* c, int64_t ldc, int64_t n,
                          bool accumulate);

// One MR x NR tile whose A rows are read in place (an NHWC image, for a
// convolution without im2col): row i's k values are `taps` segments of
// groups * G uint8 values, segment t starting at rows[t * row_stride + i]
// (no offset: A must be uint8). b is a packed panel of taps * groups groups.
//   C(i, j) = sum over the segments' k of a(i, k) * b(k, j) - adjust[j]
// for i < m (the template's row count) and j < n (1..NR); adjust is padded
// to NR. Kernels without one leave the table entries null.
using Int8IndirectTile = void (*)(int64_t taps, int64_t groups, const uint8_t* const* rows, int64_t row_stride,
                                  const void* b, const int32_t* adjust, int32_t* c, int64_t ldc, int64_t n);

// sums[j] = sum over k of B'(k, j) for one packed panel of NR columns.
using ColumnSums = void (*)(int64_t groups, const void* b, int32_t* sums);

constexpr int kMaxMR = 16;

struct Int8Kernel {
  const char* name;       // e.g. "avx512vnni_8x32": ISA, then MR x NR
  int64_t mr;             // rows of a tile
  int64_t nr;             // columns of a tile
  int64_t group;          // G: k values per 32-bit lane
  int64_t elem_size;      // bytes per stored value: 1 (uint8 A', int8 B') or 2 (int16)
  Int8Tile tile[kMaxMR];  // tile[m - 1] computes m rows, m = 1..mr
  ColumnSums column_sums;
  Int8IndirectTile indirect[kMaxMR];  // the same for rows read in place; null entries where unsupported
};

// The kernels each ISA file provides; nullptr where the file was compiled for
// another architecture. The caller checks the CPU supports the ISA.
const Int8Kernel* portable_int8_kernel();
const Int8Kernel* avx2_int8_kernel();
const Int8Kernel* avx512vnni_int8_kernel();

}  // namespace onyx::cpu::qgemm_detail
