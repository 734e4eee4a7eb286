// Portable packed SGEMM (Goto/van de Geijn blocking): op(A) and op(B) are
// copied into MR-row and NR-column panels so the register-blocked microkernel
// reads both with unit stride; the C matrix is split into tiles run in parallel.
// The microkernel uses GCC/Clang vector extensions, which lower to SSE on
// x86-64 baseline, NEON on ARM and SIMD128 on WebAssembly.
#include "providers/cpu/gemm/sgemm.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

namespace onyx::cpu {
namespace {

typedef float Vec4 __attribute__((vector_size(16)));

// 6 rows x 8 columns: 12 four-wide accumulators plus two B vectors and one
// broadcast A value fit in the 16 vector registers of SSE and NEON.
constexpr int64_t kMR = 6;
constexpr int64_t kNR = 8;
// Blocks: an MC x KC block of A (about 96 KiB) stays in L2, one KC x NR panel
// of B (8 KiB) stays in L1 while the microkernel walks the A panels.
constexpr int64_t kMC = 96;
constexpr int64_t kKC = 256;
constexpr int64_t kNC = 256;

inline Vec4 load4(const float* p) {
  Vec4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void store4(float* p, Vec4 v) { std::memcpy(p, &v, sizeof(v)); }

// Computes the 6x8 tile acc = a_panel * b_panel over k, then writes it to C:
// C = acc + C when `accumulate` (a later K block), else acc + beta * C.
// m, n (<= MR, NR) clip the tile at the matrix edge.
void microkernel_6x8(int64_t k, const float* a, const float* b, float* c, int64_t ldc, int64_t m, int64_t n,
                     float beta, bool accumulate) {
  Vec4 acc[kMR][2];
  for (int64_t i = 0; i < kMR; ++i) acc[i][0] = acc[i][1] = Vec4{0, 0, 0, 0};
  for (int64_t p = 0; p < k; ++p) {
    const Vec4 b0 = load4(b);
    const Vec4 b1 = load4(b + 4);
    for (int64_t i = 0; i < kMR; ++i) {
      const Vec4 ai = Vec4{a[i], a[i], a[i], a[i]};
      acc[i][0] += ai * b0;
      acc[i][1] += ai * b1;
    }
    a += kMR;
    b += kNR;
  }
  if (m == kMR && n == kNR) {
    for (int64_t i = 0; i < kMR; ++i) {
      float* row = c + i * ldc;
      if (accumulate) {
        store4(row, load4(row) + acc[i][0]);
        store4(row + 4, load4(row + 4) + acc[i][1]);
      } else if (beta == 0.0f) {
        store4(row, acc[i][0]);
        store4(row + 4, acc[i][1]);
      } else {
        const Vec4 bv = Vec4{beta, beta, beta, beta};
        store4(row, bv * load4(row) + acc[i][0]);
        store4(row + 4, bv * load4(row + 4) + acc[i][1]);
      }
    }
    return;
  }
  float tile[kMR][kNR];
  for (int64_t i = 0; i < kMR; ++i) {
    store4(tile[i], acc[i][0]);
    store4(tile[i] + 4, acc[i][1]);
  }
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) {
      if (accumulate) {
        row[j] += tile[i][j];
      } else if (beta == 0.0f) {
        row[j] = tile[i][j];
      } else {
        row[j] = beta * row[j] + tile[i][j];
      }
    }
  }
}

// Packs rows [i0, i0+mc) x cols [p0, p0+kc) of alpha*op(A) into MR-row panels,
// k-major inside a panel; rows past the edge are zero.
void pack_a(bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float alpha,
            float* dst) {
  for (int64_t ip = 0; ip < mc; ip += kMR) {
    const int64_t rows = std::min(kMR, mc - ip);
    for (int64_t p = 0; p < kc; ++p) {
      for (int64_t r = 0; r < kMR; ++r) {
        float v = 0.0f;
        if (r < rows) {
          const int64_t i = i0 + ip + r;
          const int64_t kk = p0 + p;
          v = alpha * (trans_a ? A[kk * lda + i] : A[i * lda + kk]);
        }
        dst[p * kMR + r] = v;
      }
    }
    dst += kc * kMR;
  }
}

// Packs rows [p0, p0+kc) x cols [j0, j0+nc) of op(B) into NR-column panels.
void pack_b(bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* dst) {
  for (int64_t jp = 0; jp < nc; jp += kNR) {
    const int64_t cols = std::min(kNR, nc - jp);
    if (!trans_b && cols == kNR) {
      for (int64_t p = 0; p < kc; ++p) std::memcpy(dst + p * kNR, B + (p0 + p) * ldb + j0 + jp, kNR * sizeof(float));
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t c = 0; c < kNR; ++c) {
          float v = 0.0f;
          if (c < cols) {
            const int64_t j = j0 + jp + c;
            const int64_t kk = p0 + p;
            v = trans_b ? B[j * ldb + kk] : B[kk * ldb + j];
          }
          dst[p * kNR + c] = v;
        }
      }
    }
    dst += kc * kNR;
  }
}

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// A 64-byte aligned scratch buffer of floats.
class Scratch {
 public:
  explicit Scratch(size_t count) : storage_(new float[count + 16]) {
    auto address = reinterpret_cast<uintptr_t>(storage_.get());
    data_ = reinterpret_cast<float*>((address + 63) & ~uintptr_t{63});
  }
  float* data() { return data_; }

 private:
  std::unique_ptr<float[]> storage_;
  float* data_;
};

// y[j] = alpha * sum_k x[k] * Mat(k, j) + beta * y[j*incy] for j < n, with
// Mat(k, j) = trans_mat ? mat[j*ld + k] : mat[k*ld + j]. Used when M or N is 1,
// where packing would only add traffic.
void gemv(bool trans_mat, int64_t n, int64_t k, float alpha, const float* mat, int64_t ld, const float* x,
          int64_t incx, float beta, float* y, int64_t incy, ThreadPool* pool) {
  std::vector<float> xs(static_cast<size_t>(k));
  for (int64_t p = 0; p < k; ++p) xs[static_cast<size_t>(p)] = alpha * x[p * incx];
  const float* xv = xs.data();
  auto finish = [&](int64_t j, float sum) {
    float* out = y + j * incy;
    *out = beta == 0.0f ? sum : sum + beta * *out;
  };
  if (trans_mat) {
    parallel_for(pool, n, 2.0 * static_cast<double>(k), [&](int64_t begin, int64_t end) {
      for (int64_t j = begin; j < end; ++j) {
        const float* row = mat + j * ld;
        float partial[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t p = 0;
        for (; p + 8 <= k; p += 8) {
          for (int q = 0; q < 8; ++q) partial[q] += row[p + q] * xv[p + q];
        }
        float sum = 0.0f;
        for (; p < k; ++p) sum += row[p] * xv[p];
        for (float v : partial) sum += v;
        finish(j, sum);
      }
    });
    return;
  }
  constexpr int64_t kChunk = 256;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel_for(pool, chunks, 2.0 * static_cast<double>(k * kChunk), [&](int64_t begin, int64_t end) {
    float acc[kChunk];
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const int64_t j0 = chunk * kChunk;
      const int64_t width = std::min(kChunk, n - j0);
      std::fill(acc, acc + width, 0.0f);
      for (int64_t p = 0; p < k; ++p) {
        const float xp = xv[p];
        const float* row = mat + p * ld + j0;
        for (int64_t j = 0; j < width; ++j) acc[j] += xp * row[j];
      }
      for (int64_t j = 0; j < width; ++j) finish(j0 + j, acc[j]);
    }
  });
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool* pool) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.0f) {
    for (int64_t i = 0; i < M; ++i) {
      float* row = C + i * ldc;
      for (int64_t j = 0; j < N; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
    return;
  }
  if (M == 1) {
    // C row = op(A) row 0 times op(B).
    gemv(trans_b, N, K, alpha, B, ldb, A, trans_a ? lda : 1, beta, C, 1, pool);
    return;
  }
  if (N == 1) {
    // C column = op(A) times op(B) column 0; op(A)(i, k) read as Mat(k, i).
    gemv(!trans_a, M, K, alpha, A, lda, B, trans_b ? 1 : ldb, beta, C, ldc, pool);
    return;
  }

  const int64_t parallelism = pool == nullptr ? 1 : pool->parallelism();
  const int64_t mc = std::min(kMC, round_up(M, kMR));
  const int64_t row_tiles = (M + mc - 1) / mc;
  int64_t nc = std::min(kNC, round_up(N, kNR));
  // Narrow the column tiles when there are too few tiles to feed every thread.
  if (parallelism > 1 && row_tiles * ((N + nc - 1) / nc) < 2 * parallelism) {
    const int64_t wanted_col_tiles = (2 * parallelism + row_tiles - 1) / row_tiles;
    nc = std::max(4 * kNR, round_up((N + wanted_col_tiles - 1) / wanted_col_tiles, kNR));
    nc = std::min(nc, round_up(N, kNR));
  }
  const int64_t col_tiles = (N + nc - 1) / nc;
  const int64_t kc_max = std::min(kKC, K);

  parallel_for(pool, row_tiles * col_tiles, 2.0 * static_cast<double>(mc * nc * K),
               [&](int64_t begin, int64_t end) {
                 Scratch a_pack(static_cast<size_t>(round_up(mc, kMR) * kc_max));
                 Scratch b_pack(static_cast<size_t>(round_up(nc, kNR) * kc_max));
                 for (int64_t tile = begin; tile < end; ++tile) {
                   const int64_t i0 = (tile / col_tiles) * mc;
                   const int64_t j0 = (tile % col_tiles) * nc;
                   const int64_t m_block = std::min(mc, M - i0);
                   const int64_t n_block = std::min(nc, N - j0);
                   for (int64_t p0 = 0; p0 < K; p0 += kKC) {
                     const int64_t kc = std::min(kKC, K - p0);
                     pack_a(trans_a, A, lda, i0, m_block, p0, kc, alpha, a_pack.data());
                     pack_b(trans_b, B, ldb, p0, kc, j0, n_block, b_pack.data());
                     for (int64_t jp = 0; jp < n_block; jp += kNR) {
                       const float* b_panel = b_pack.data() + (jp / kNR) * kc * kNR;
                       for (int64_t ip = 0; ip < m_block; ip += kMR) {
                         const float* a_panel = a_pack.data() + (ip / kMR) * kc * kMR;
                         microkernel_6x8(kc, a_panel, b_panel, C + (i0 + ip) * ldc + j0 + jp, ldc,
                                         std::min(kMR, m_block - ip), std::min(kNR, n_block - jp), beta, p0 > 0);
                       }
                     }
                   }
                 }
               });
}

template <>
void gemm<float>(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool* pool) {
  sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, pool);
}

template <typename T, bool integral>
struct WrapAround {
  using type = T;
};
template <typename T>
struct WrapAround<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc, ThreadPool* pool) {
  if (M <= 0 || N <= 0) return;
  // Row i of C is a sum of rows of op(B); give op(B) unit stride along N first.
  std::vector<T> b_rows;
  if (trans_b && K > 0) {
    b_rows.resize(static_cast<size_t>(K * N));
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) b_rows[static_cast<size_t>(k * N + j)] = B[j * ldb + k];
    B = b_rows.data();
    ldb = N;
  }
  // Integers wrap around (as ONNX and numpy do) by computing in their unsigned
  // counterpart, where overflow is defined.
  using Acc = typename WrapAround<T, std::is_integral_v<T>>::type;
  parallel_for(pool, M, 2.0 * static_cast<double>(N * K), [&](int64_t begin, int64_t end) {
    std::vector<Acc> acc(static_cast<size_t>(N));
    for (int64_t i = begin; i < end; ++i) {
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t k = 0; k < K; ++k) {
        const Acc a = static_cast<Acc>(trans_a ? A[k * lda + i] : A[i * lda + k]);
        const T* row = B + k * ldb;
        for (int64_t j = 0; j < N; ++j) acc[static_cast<size_t>(j)] += a * static_cast<Acc>(row[j]);
      }
      T* out = C + i * ldc;
      for (int64_t j = 0; j < N; ++j) {
        const Acc v = static_cast<Acc>(alpha) * acc[static_cast<size_t>(j)];
        out[j] = beta == T(0) ? static_cast<T>(v) : static_cast<T>(v + static_cast<Acc>(beta) * static_cast<Acc>(out[j]));
      }
    }
  });
}

#define ONYX_INSTANTIATE_GEMM(T)                                                                               \
  template void gemm<T>(bool, bool, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, int64_t, T, T*, \
                        int64_t, ThreadPool*)
ONYX_INSTANTIATE_GEMM(double);
ONYX_INSTANTIATE_GEMM(int32_t);
ONYX_INSTANTIATE_GEMM(int64_t);
ONYX_INSTANTIATE_GEMM(uint32_t);
ONYX_INSTANTIATE_GEMM(uint64_t);
#undef ONYX_INSTANTIATE_GEMM

}  // namespace onyx::cpu
