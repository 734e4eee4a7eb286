// The SGEMM driver (Goto/van de Geijn blocking, as in BLIS): op(A) and op(B)
// are copied into MR-row and NR-column panels, K in blocks of KC, so the
// register-blocked microkernel of the chosen ISA reads both with unit stride;
// C is split into tiles run in parallel. Also the GEMV paths for M or N == 1,
// the driver for B given by row pointers (sgemm_packed_a_rows_b) and the
// generic GEMM of the non-float types.
#include "providers/cpu/gemm/sgemm.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "providers/cpu/gemm/sgemm_kernels.h"
#include "providers/cpu/gemm/target_clones.h"
#include "providers/cpu/huge_pages.h"

namespace onyx::cpu {

using gemm_detail::SgemmKernel;

struct PackedAccess {
  static const SgemmKernel* kernel(const PackedMatrix& p) { return p.kernel_; }
  static const float* data(const PackedMatrix& p) { return p.data_.get(); }
};

namespace {

inline int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
inline int64_t ceil_div(int64_t v, int64_t m) { return (v + m - 1) / m; }

bool cpu_supports(SgemmIsa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // Needed before __builtin_cpu_supports when called from static initializers.
  __builtin_cpu_init();
#endif
  switch (isa) {
    case SgemmIsa::kAuto:
    case SgemmIsa::kPortable:
      return true;
    case SgemmIsa::kAvx2:
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
      return gemm_detail::avx2_kernel() != nullptr && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
      return false;
#endif
    case SgemmIsa::kAvx512:
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
      return gemm_detail::avx512_kernel() != nullptr && __builtin_cpu_supports("avx512f");
#else
      return false;
#endif
  }
  return false;
}

SgemmIsa detect_best_isa() {
  if (cpu_supports(SgemmIsa::kAvx512)) return SgemmIsa::kAvx512;
  if (cpu_supports(SgemmIsa::kAvx2)) return SgemmIsa::kAvx2;
  return SgemmIsa::kPortable;
}

// The kernel for `isa`; an ISA the CPU cannot run falls back to the best one
// it can (so a forced ISA in a test never executes illegal instructions).
const SgemmKernel& kernel_for(SgemmIsa isa) {
  static const SgemmIsa best = detect_best_isa();
  if (isa == SgemmIsa::kAuto || !cpu_supports(isa)) isa = best;
  switch (isa) {
    case SgemmIsa::kAvx512:
      return *gemm_detail::avx512_kernel();
    case SgemmIsa::kAvx2:
      return *gemm_detail::avx2_kernel();
    default:
      return *gemm_detail::portable_kernel();
  }
}

// A 64-byte aligned float buffer. Small ones are cached per thread (the packing
// buffers of every GEMM call would otherwise be allocated and page-faulted in
// again each time); large ones are allocated for the call.
class Scratch {
 public:
  enum Slot { kBlockA, kBlockB, kWholeB, kSlots };
  Scratch(Slot slot, size_t count) {
    constexpr size_t kCachedLimit = size_t{16} << 20;  // floats: 64 MiB
    if (count > kCachedLimit) {
      owned_.reset(new float[count + 16]);
      data_ = align(owned_.get());
      return;
    }
    Cache& cache = caches()[slot];
    if (cache.capacity < count) {
      cache.storage.reset();
      cache.storage.reset(new float[count + 16]);
      cache.capacity = count;
    }
    data_ = align(cache.storage.get());
  }
  float* data() const { return data_; }

 private:
  struct Cache {
    std::unique_ptr<float[]> storage;
    size_t capacity = 0;
  };
  static Cache* caches() {
    thread_local Cache per_thread[kSlots];
    return per_thread;
  }
  static float* align(float* p) {
    auto address = reinterpret_cast<uintptr_t>(p);
    return reinterpret_cast<float*>((address + 63) & ~uintptr_t{63});
  }
  std::unique_ptr<float[]> owned_;
  float* data_ = nullptr;
};

// dst[p * width + r] = src[r * ld + p] for r < rows, p < kc, and zero for
// rows <= r < width: `rows` rows of a matrix become one k-major panel.
void transpose_into_panel(const float* src, int64_t ld, int64_t rows, int64_t kc, int64_t width, float* dst) {
  int64_t r = 0;
#if defined(__SSE2__)
  // 4 x 4 register transposes: a scalar copy would spend most of its time on
  // strided single-float stores.
  for (; r + 4 <= rows; r += 4) {
    const float* s0 = src + r * ld;
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4) {
      __m128 x0 = _mm_loadu_ps(s0 + p), x1 = _mm_loadu_ps(s0 + ld + p);
      __m128 x2 = _mm_loadu_ps(s0 + 2 * ld + p), x3 = _mm_loadu_ps(s0 + 3 * ld + p);
      _MM_TRANSPOSE4_PS(x0, x1, x2, x3);
      _mm_storeu_ps(dst + p * width + r, x0);
      _mm_storeu_ps(dst + (p + 1) * width + r, x1);
      _mm_storeu_ps(dst + (p + 2) * width + r, x2);
      _mm_storeu_ps(dst + (p + 3) * width + r, x3);
    }
    for (; p < kc; ++p)
      for (int64_t q = 0; q < 4; ++q) dst[p * width + r + q] = s0[q * ld + p];
  }
#endif
  for (; r < rows; ++r) {
    const float* row = src + r * ld;
    for (int64_t p = 0; p < kc; ++p) dst[p * width + r] = row[p];
  }
  for (r = rows; r < width; ++r)
    for (int64_t p = 0; p < kc; ++p) dst[p * width + r] = 0.0f;
}

// Packs rows [i0, i0+mb) x depth [p0, p0+kc) of op(A) into MR-row panels,
// k-major inside a panel (dst[panel][p][r]); rows past mb are zero.
void pack_a_block(const SgemmKernel& kern, bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t mb,
                  int64_t p0, int64_t kc, float* dst) {
  const int64_t mr = kern.mr;
  for (int64_t ip = 0; ip < mb; ip += mr) {
    const int64_t rows = std::min(mr, mb - ip);
    if (trans_a) {
      // A is K x M: a panel row p is `rows` adjacent floats of A's row p0+p.
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = A + (p0 + p) * lda + i0 + ip;
        float* out = dst + p * mr;
        std::memcpy(out, src, static_cast<size_t>(rows) * sizeof(float));
        std::fill(out + rows, out + mr, 0.0f);
      }
    } else {
      // A is M x K: the panel is the transpose of `rows` rows of A.
      transpose_into_panel(A + (i0 + ip) * lda + p0, lda, rows, kc, mr, dst);
    }
    dst += kc * mr;
  }
}

// Packs depth [p0, p0+kc) x columns [j0, j0+nb) of op(B) into NR-column
// panels (dst[panel][p][c]); columns past nb are zero.
void pack_b_block(const SgemmKernel& kern, bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t kc,
                  int64_t j0, int64_t nb, float* dst) {
  const int64_t nr = kern.nr;
  for (int64_t jp = 0; jp < nb; jp += nr) {
    const int64_t cols = std::min(nr, nb - jp);
    if (!trans_b) {
      for (int64_t p = 0; p < kc; ++p) {
        float* out = dst + p * nr;
        std::memcpy(out, B + (p0 + p) * ldb + j0 + jp, static_cast<size_t>(cols) * sizeof(float));
        std::fill(out + cols, out + nr, 0.0f);
      }
    } else {
      // B is N x K: the panel is the transpose of `cols` rows of B.
      transpose_into_panel(B + (j0 + jp) * ldb + p0, ldb, cols, kc, nr, dst);
    }
    dst += kc * nr;
  }
}

// The whole op(B) (K x N) in the packed layout: K blocks one after another,
// each holding every NR panel of that depth range. The block starting at
// depth p0 begins at p0 * round_up(N, NR); inside it, the panel of column j
// (a multiple of NR) begins at j * kc. Packed A is the same with MR and M.
void pack_b_whole(const SgemmKernel& kern, bool trans_b, const float* B, int64_t ldb, int64_t K, int64_t N, float* dst,
                  ThreadPool* pool) {
  const int64_t n_pad = round_up(N, kern.nr);
  const int64_t panels = n_pad / kern.nr, blocks = ceil_div(K, kern.kc);
  parallel_for(pool, blocks * panels, static_cast<double>(kern.kc * kern.nr), [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t p0 = (t / panels) * kern.kc, j = (t % panels) * kern.nr;
      const int64_t kc = std::min(kern.kc, K - p0);
      pack_b_block(kern, trans_b, B, ldb, p0, kc, j, std::min(kern.nr, N - j), dst + p0 * n_pad + j * kc);
    }
  });
}

void pack_a_whole(const SgemmKernel& kern, bool trans_a, const float* A, int64_t lda, int64_t M, int64_t K,
                  float* dst) {
  const int64_t m_pad = round_up(M, kern.mr);
  for (int64_t p0 = 0; p0 < K; p0 += kern.kc) {
    const int64_t kc = std::min(kern.kc, K - p0);
    pack_a_block(kern, trans_a, A, lda, 0, M, p0, kc, dst + p0 * m_pad);
  }
}

// The microkernels' view of `ep` for the tile whose first element is C(row0, col0).
gemm_detail::TileEpilogue tile_epilogue(const GemmEpilogue& ep, int64_t row0, int64_t col0) {
  return {ep.row_bias != nullptr ? ep.row_bias + row0 : nullptr, ep.col_bias != nullptr ? ep.col_bias + col0 : nullptr,
          static_cast<int>(ep.activation), ep.clip_min, ep.clip_max, ep.leaky_alpha};
}

// Adds the biases and applies the activation to an m x n tile of C whose
// first element is C(row0, col0) (the GEMV paths; tiles do it in the kernel).
ONYX_TARGET_CLONES
void apply_epilogue(float* c, int64_t ldc, int64_t m, int64_t n, int64_t row0, int64_t col0, const GemmEpilogue& ep) {
  const float* col_bias = ep.col_bias != nullptr ? ep.col_bias + col0 : nullptr;
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    const float rb = ep.row_bias != nullptr ? ep.row_bias[row0 + i] : 0.0f;
    if (col_bias != nullptr) {
      for (int64_t j = 0; j < n; ++j) row[j] += rb + col_bias[j];
    } else if (rb != 0.0f) {
      for (int64_t j = 0; j < n; ++j) row[j] += rb;
    }
    switch (ep.activation) {
      case GemmActivation::kNone:
        break;
      case GemmActivation::kRelu:
        for (int64_t j = 0; j < n; ++j) row[j] = row[j] > 0.0f ? row[j] : 0.0f;
        break;
      case GemmActivation::kClip: {
        const float lo = ep.clip_min, hi = ep.clip_max;
        for (int64_t j = 0; j < n; ++j) row[j] = std::min(std::max(row[j], lo), hi);
        break;
      }
      case GemmActivation::kLeakyRelu: {
        const float slope = ep.leaky_alpha;
        for (int64_t j = 0; j < n; ++j) row[j] = row[j] >= 0.0f ? row[j] : row[j] * slope;
        break;
      }
    }
  }
}

// The dots kernel for `isa`: its own, else the AVX2 one (AVX-512 has none).
gemm_detail::DotsKernel dots_for(SgemmIsa isa) {
  const SgemmKernel& kern = kernel_for(isa);
  if (kern.dots != nullptr) return kern.dots;
  if (cpu_supports(SgemmIsa::kAvx2)) return gemm_detail::avx2_kernel()->dots;
  return gemm_detail::portable_kernel()->dots;
}

// y[j] = alpha * sum_k x[k] * Mat(k, j) + beta * y[j*incy] for j < n, with
// Mat(k, j) = trans_mat ? mat[j*ld + k] : mat[k*ld + j]. Used when M or N is 1
// and the matrix is not packed, where packing would only add traffic.
ONYX_TARGET_CLONES
void gemv_columns(const float* mat, int64_t ld, const float* xv, int64_t k, int64_t j0, int64_t width, float* acc) {
  // Mat(k, j) = mat[k*ld + j]: rows of the matrix scaled and summed.
  std::fill(acc, acc + width, 0.0f);
  for (int64_t p = 0; p < k; ++p) {
    const float xp = xv[p];
    const float* row = mat + p * ld + j0;
    for (int64_t j = 0; j < width; ++j) acc[j] += xp * row[j];
  }
}

void gemv(bool trans_mat, int64_t n, int64_t k, float alpha, const float* mat, int64_t ld, const float* x,
          int64_t incx, float beta, float* y, int64_t incy, ThreadPool* pool) {
  std::vector<float> xs(static_cast<size_t>(k));
  for (int64_t p = 0; p < k; ++p) xs[static_cast<size_t>(p)] = alpha * x[p * incx];
  const float* xv = xs.data();
  const gemm_detail::DotsKernel dots = dots_for(SgemmIsa::kAuto);
  constexpr int64_t kChunk = 256;
  const int64_t chunks = ceil_div(n, kChunk);
  parallel_for(pool, chunks, 2.0 * static_cast<double>(k * kChunk), [&](int64_t begin, int64_t end) {
    float acc[kChunk];
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      const int64_t j0 = chunk * kChunk;
      const int64_t width = std::min(kChunk, n - j0);
      if (trans_mat) {
        // Mat(k, j) = mat[j*ld + k]: a dot product per output.
        dots(width, k, mat + j0 * ld, ld, xv, k, 1, nullptr, acc, 1);
      } else {
        gemv_columns(mat, ld, xv, k, j0, width, acc);
      }
      for (int64_t j = 0; j < width; ++j) {
        float* out = y + (j0 + j) * incy;
        *out = beta == 0.0f ? acc[j] : acc[j] + beta * *out;
      }
    }
  });
}

// Where the driver finds an operand: packed (whole, in the layout of
// pack_b_whole) or as a row-major matrix to pack block by block.
struct Operand {
  const float* packed = nullptr;
  const float* data = nullptr;
  int64_t ld = 0;
  bool trans = false;
};

// Column panels up to which run_gemm reads a row-major A in place.
constexpr int64_t kInPlaceAPanels = 8;

// ONYX_SGEMM_PACK_A=1 packs A always (to test and time the packed path).
bool in_place_a_allowed() {
  static const bool allowed = [] {
    const char* v = std::getenv("ONYX_SGEMM_PACK_A");
    return v == nullptr || std::string(v) != "1";
  }();
  return allowed;
}

// C = alpha * op(A) op(B) + beta * C (then the epilogue) for M, N, K > 0.
void run_gemm(const SgemmKernel& kern, int64_t M, int64_t N, int64_t K, float alpha, Operand a, Operand b, float beta,
              float* C, int64_t ldc, const GemmEpilogue& ep, ThreadPool* pool) {
  const int64_t mr = kern.mr, nr = kern.nr;
  const int64_t m_pad = round_up(M, mr), n_pad = round_up(N, nr);
  const int64_t m_panels = m_pad / mr, n_panels = n_pad / nr;
  const int64_t threads = pool == nullptr ? 1 : pool->parallelism();

  // Tasks: a grid of row ranges (of whole MR panels, at most MC rows each) by
  // column ranges. Their count is a multiple of the threads so that the
  // static split of parallel_for gives every thread the same work.
  int64_t row_tasks = ceil_div(m_panels, kern.mc / mr);
  int64_t col_tasks = 1;
  if (threads > 1) {
    if (row_tasks >= threads) {
      row_tasks = std::min(m_panels, round_up(row_tasks, threads));
    } else {
      col_tasks = std::min(n_panels, round_up(ceil_div(2 * threads, row_tasks), threads));
    }
  }
  // With several row ranges, pack B once for all of them rather than once per range.
  std::unique_ptr<Scratch> whole_b;
  if (b.packed == nullptr && row_tasks > 1) {
    whole_b = std::make_unique<Scratch>(Scratch::kWholeB, static_cast<size_t>(n_pad * K));
    pack_b_whole(kern, b.trans, b.data, b.ld, K, N, whole_b->data(), pool);
    b.packed = whole_b->data();
  }
  const int64_t kc_max = std::min(kern.kc, K);
  // A row-major A with few column panels is read in place: packing it costs
  // a load and a scattered store per element, as much as the FMAs of the
  // few panels that would read the packed copy (attention's scores times V,
  // N = 32: 1.6x faster on AVX2, 1.5x on AVX-512). With many panels the two
  // ran alike (AVX2, 8 panels of 16); AVX-512's in-place tile was still 4%
  // ahead at 8 panels of 32.
  const bool a_in_place = a.packed == nullptr && !a.trans && kern.strided_a[0] != nullptr &&
                          n_panels <= kInPlaceAPanels && in_place_a_allowed();
  const int64_t max_rows = ceil_div(m_panels, row_tasks) * mr;
  const int64_t max_cols = ceil_div(n_panels, col_tasks) * nr;
  const bool epilogue = ep.active();

  auto run_task = [&](int64_t task) {
    const int64_t rt = task / col_tasks, ct = task % col_tasks;
    const int64_t i0 = rt * m_panels / row_tasks * mr;
    const int64_t i1 = std::min(M, (rt + 1) * m_panels / row_tasks * mr);
    const int64_t j0 = ct * n_panels / col_tasks * nr;
    const int64_t j1 = std::min(N, (ct + 1) * n_panels / col_tasks * nr);
    if (i0 >= i1 || j0 >= j1) return;
    const int64_t mb = i1 - i0, nb = j1 - j0;
    std::unique_ptr<Scratch> a_block, b_block;
    if (a.packed == nullptr && !a_in_place) {
      a_block = std::make_unique<Scratch>(Scratch::kBlockA, static_cast<size_t>(max_rows * kc_max));
    }
    if (b.packed == nullptr) b_block = std::make_unique<Scratch>(Scratch::kBlockB, static_cast<size_t>(max_cols * kc_max));
    for (int64_t p0 = 0; p0 < K; p0 += kern.kc) {
      const int64_t kc = std::min(kern.kc, K - p0);
      const float* a_pan = nullptr;
      if (a.packed != nullptr) {
        a_pan = a.packed + p0 * m_pad + i0 * kc;
      } else if (!a_in_place) {
        pack_a_block(kern, a.trans, a.data, a.ld, i0, mb, p0, kc, a_block->data());
        a_pan = a_block->data();
      }
      const float* b_pan = nullptr;
      if (b.packed != nullptr) {
        b_pan = b.packed + p0 * n_pad + j0 * kc;
      } else {
        pack_b_block(kern, b.trans, b.data, b.ld, p0, kc, j0, nb, b_block->data());
        b_pan = b_block->data();
      }
      const float tile_beta = p0 == 0 ? beta : 1.0f;
      const bool last = p0 + kc >= K;
      // The NR-wide panel of B stays in L1 while every MR panel of A passes by.
      for (int64_t jr = 0; jr < nb; jr += nr) {
        const int64_t n = std::min(nr, nb - jr);
        const float* b_panel = b_pan + jr * kc;
        for (int64_t ir = 0; ir < mb; ir += mr) {
          const int64_t m = std::min(mr, mb - ir);
          float* c = C + (i0 + ir) * ldc + j0 + jr;
          const gemm_detail::TileEpilogue tile_ep = tile_epilogue(ep, i0 + ir, j0 + jr);
          if (a_in_place) {
            kern.strided_a[m - 1](kc, a.data + (i0 + ir) * a.ld + p0, a.ld, b_panel, c, ldc, n, alpha, tile_beta,
                                  last && epilogue ? &tile_ep : nullptr);
          } else {
            kern.tile[m - 1](kc, a_pan + ir * kc, b_panel, c, ldc, n, alpha, tile_beta,
                             last && epilogue ? &tile_ep : nullptr);
          }
        }
      }
    }
  };
  const int64_t tasks = row_tasks * col_tasks;
  const double task_cost = 2.0 * static_cast<double>(max_rows) * static_cast<double>(max_cols) * static_cast<double>(K);
  parallel_for(pool, tasks, task_cost, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) run_task(t);
  });
}

// M == 1 against a packed B: one row kernel call per NR panel and K block.
void run_row_packed(const SgemmKernel& kern, int64_t N, int64_t K, float alpha, const float* x, const float* b_packed,
                    float beta, float* y, const GemmEpilogue& ep, ThreadPool* pool) {
  const int64_t nr = kern.nr, n_pad = round_up(N, nr), panels = n_pad / nr;
  // K blocks outer: the panels of one K block lie side by side, so a thread's
  // range of panels is read as one sequential stream per K block (panel by
  // panel, it was a jump of a whole K block every 32 KiB, which kept the
  // hardware prefetchers from ever running ahead of this memory-bound loop).
  //
  // Tasks of 8 panels (256 columns), taken by parallel_for_tasks: each thread
  // streams its own contiguous share, and one that finishes first takes the
  // rest of the other's, so a thread that starts late (woken from sleep,
  // or preempted on a busy machine) no longer holds the whole product up.
  constexpr int64_t kPanelsPerTask = 8;
  const int64_t tasks = (panels + kPanelsPerTask - 1) / kPanelsPerTask;
  parallel_for_tasks(pool, tasks, 2.0 * static_cast<double>(K * nr * kPanelsPerTask), [&](int64_t task) {
    const int64_t begin = task * kPanelsPerTask, end = std::min(panels, begin + kPanelsPerTask);
    for (int64_t p0 = 0; p0 < K; p0 += kern.kc) {
      const int64_t kc = std::min(kern.kc, K - p0);
      for (int64_t panel = begin; panel < end; ++panel) {
        const int64_t j = panel * nr, n = std::min(nr, N - j);
        kern.row(kc, x + p0, b_packed + p0 * n_pad + j * kc, y + j, n, alpha, p0 == 0 ? beta : 1.0f);
      }
    }
    if (ep.active()) {
      const int64_t j0 = begin * nr, j1 = std::min(N, end * nr);
      apply_epilogue(y + j0, 0, 1, j1 - j0, 0, j0, ep);
    }
  });
}

// C = beta * C (then the epilogue): the product is empty or scaled by zero.
void scale_only(int64_t M, int64_t N, float beta, float* C, int64_t ldc, const GemmEpilogue& ep) {
  for (int64_t i = 0; i < M; ++i) {
    float* row = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    if (ep.active()) apply_epilogue(row, ldc, 1, N, i, 0, ep);
  }
}

std::shared_ptr<float> allocate_packed(size_t count) {
  // Packed weights of megabytes (a decoder's layers, its lm_head) are read
  // front to back once per token: on huge pages where the OS has them.
  const size_t bytes = count * sizeof(float);
  if (huge_pages_enabled() && bytes >= 4 * kHugePageBytes) {
    const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    if (void* huge = std::aligned_alloc(kHugePageBytes, rounded)) {
      advise_huge_pages(huge, rounded);
      return std::shared_ptr<float>(static_cast<float*>(huge), [](float* q) { std::free(q); });
    }
  }
  auto* p = static_cast<float*>(::operator new(count * sizeof(float), std::align_val_t{64}));
  return std::shared_ptr<float>(p, [](float* q) { ::operator delete(q, std::align_val_t{64}); });
}

}  // namespace

const char* sgemm_isa_name(SgemmIsa isa) {
  switch (isa) {
    case SgemmIsa::kAuto:
      return "auto";
    case SgemmIsa::kPortable:
      return "portable";
    case SgemmIsa::kAvx2:
      return "avx2";
    case SgemmIsa::kAvx512:
      return "avx512";
  }
  return "?";
}

std::vector<SgemmIsa> available_sgemm_isas() {
  std::vector<SgemmIsa> isas;
  for (SgemmIsa isa : {SgemmIsa::kPortable, SgemmIsa::kAvx2, SgemmIsa::kAvx512})
    if (cpu_supports(isa)) isas.push_back(isa);
  return isas;
}

SgemmIsa best_sgemm_isa() { return detect_best_isa(); }

const char* PackedMatrix::kernel_name() const { return kernel_ == nullptr ? "none" : kernel_->name; }

PackedMatrix pack_a(bool trans_a, int64_t M, int64_t K, const float* A, int64_t lda, SgemmIsa isa) {
  PackedMatrix packed;
  const SgemmKernel& kern = kernel_for(isa);
  packed.kernel_ = &kern;
  packed.rows_ = std::max<int64_t>(M, 0);
  packed.cols_ = std::max<int64_t>(K, 0);
  packed.data_ = allocate_packed(static_cast<size_t>(std::max<int64_t>(round_up(packed.rows_, kern.mr) * packed.cols_, 1)));
  if (M > 0 && K > 0) pack_a_whole(kern, trans_a, A, lda, M, K, packed.data_.get());
  return packed;
}

PackedMatrix pack_b(bool trans_b, int64_t K, int64_t N, const float* B, int64_t ldb, SgemmIsa isa,
                    const std::function<void(const float*, size_t)>& consumed) {
  PackedMatrix packed;
  const SgemmKernel& kern = kernel_for(isa);
  packed.kernel_ = &kern;
  packed.rows_ = std::max<int64_t>(K, 0);
  packed.cols_ = std::max<int64_t>(N, 0);
  packed.data_ = allocate_packed(static_cast<size_t>(std::max<int64_t>(round_up(packed.cols_, kern.nr) * packed.rows_, 1)));
  if (N <= 0 || K <= 0) return packed;
  if (!consumed) {
    pack_b_whole(kern, trans_b, B, ldb, K, N, packed.data_.get(), nullptr);
    return packed;
  }
  // In the order B is stored, handing back each stretch of B once packed:
  // rows of op(B)^T (panels) when B is transposed, K blocks otherwise.
  float* dst = packed.data_.get();
  const int64_t n_pad = round_up(N, kern.nr), nr = kern.nr;
  if (trans_b) {
    for (int64_t j = 0; j < N; j += nr) {
      const int64_t cols = std::min(nr, N - j);
      for (int64_t p0 = 0; p0 < K; p0 += kern.kc) {
        const int64_t kc = std::min(kern.kc, K - p0);
        pack_b_block(kern, trans_b, B, ldb, p0, kc, j, cols, dst + p0 * n_pad + j * kc);
      }
      consumed(B + j * ldb, static_cast<size_t>(cols * ldb) * sizeof(float));
    }
  } else {
    for (int64_t p0 = 0; p0 < K; p0 += kern.kc) {
      const int64_t kc = std::min(kern.kc, K - p0);
      for (int64_t j = 0; j < N; j += nr) {
        pack_b_block(kern, trans_b, B, ldb, p0, kc, j, std::min(nr, N - j), dst + p0 * n_pad + j * kc);
      }
      consumed(B + p0 * ldb, static_cast<size_t>(kc * ldb) * sizeof(float));
    }
  }
  return packed;
}

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool* pool, const GemmEpilogue& ep,
           SgemmIsa isa) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.0f) {
    scale_only(M, N, beta, C, ldc, ep);
    return;
  }
  if (M == 1) {
    // C row = op(A) row 0 times op(B).
    gemv(trans_b, N, K, alpha, B, ldb, A, trans_a ? lda : 1, beta, C, 1, pool);
    if (ep.active()) apply_epilogue(C, ldc, 1, N, 0, 0, ep);
    return;
  }
  if (N == 1) {
    // C column = op(A) times op(B) column 0; op(A)(i, k) read as Mat(k, i).
    gemv(!trans_a, M, K, alpha, A, lda, B, trans_b ? 1 : ldb, beta, C, ldc, pool);
    if (ep.active()) apply_epilogue(C, ldc, M, 1, 0, 0, ep);
    return;
  }
  Operand a{nullptr, A, lda, trans_a}, b{nullptr, B, ldb, trans_b};
  run_gemm(kernel_for(isa), M, N, K, alpha, a, b, beta, C, ldc, ep, pool);
}

void sgemm_dots(int64_t M, int64_t K, const float* A, int64_t lda, const float* X, int64_t ldx, int64_t cols,
                const float* bias, float* Y, int64_t ldy, ThreadPool* pool, SgemmIsa isa) {
  if (M <= 0 || cols <= 0) return;
  const gemm_detail::DotsKernel dots = dots_for(isa);
  constexpr int64_t kRowsPerTask = 64;
  const int64_t tasks = ceil_div(M, kRowsPerTask);
  parallel_for(pool, tasks, 2.0 * static_cast<double>(K * cols * kRowsPerTask), [&](int64_t begin, int64_t end) {
    const int64_t i0 = begin * kRowsPerTask, i1 = std::min(M, end * kRowsPerTask);
    for (int64_t j = 0; j < cols; j += gemm_detail::kMaxDotColumns) {
      dots(i1 - i0, K, A + i0 * lda, lda, X + j * ldx, ldx, std::min(gemm_detail::kMaxDotColumns, cols - j),
           bias != nullptr ? bias + i0 : nullptr, Y + i0 * ldy + j, ldy);
    }
  });
}

void sgemm_packed_a(const PackedMatrix& A, bool trans_b, int64_t N, float alpha, const float* B, int64_t ldb,
                    float beta, float* C, int64_t ldc, ThreadPool* pool, const GemmEpilogue& ep) {
  const int64_t M = A.rows(), K = A.cols();
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.0f || A.empty()) {
    scale_only(M, N, beta, C, ldc, ep);
    return;
  }
  Operand a{PackedAccess::data(A), nullptr, 0, false}, b{nullptr, B, ldb, trans_b};
  run_gemm(*PackedAccess::kernel(A), M, N, K, alpha, a, b, beta, C, ldc, ep, pool);
}

void sgemm_packed_b(bool trans_a, int64_t M, float alpha, const float* A, int64_t lda, const PackedMatrix& B,
                    float beta, float* C, int64_t ldc, ThreadPool* pool, const GemmEpilogue& ep) {
  const int64_t K = B.rows(), N = B.cols();
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.0f || B.empty()) {
    scale_only(M, N, beta, C, ldc, ep);
    return;
  }
  const SgemmKernel& kern = *PackedAccess::kernel(B);
  if (M == 1) {
    std::vector<float> x;
    const float* xp = A;
    if (trans_a) {
      x.resize(static_cast<size_t>(K));
      for (int64_t p = 0; p < K; ++p) x[static_cast<size_t>(p)] = A[p * lda];
      xp = x.data();
    }
    run_row_packed(kern, N, K, alpha, xp, PackedAccess::data(B), beta, C, ep, pool);
    return;
  }
  Operand a{nullptr, A, lda, trans_a}, b{PackedAccess::data(B), nullptr, 0, false};
  run_gemm(kern, M, N, K, alpha, a, b, beta, C, ldc, ep, pool);
}

int64_t sgemm_tile_rows(const PackedMatrix& A) { return A.empty() ? 1 : PackedAccess::kernel(A)->mr; }
int64_t sgemm_tile_cols(const PackedMatrix& A) { return A.empty() ? 1 : PackedAccess::kernel(A)->nr; }
bool sgemm_has_row_pointer_b(const PackedMatrix& A) {
  return !A.empty() && PackedAccess::kernel(A)->indirect[0] != nullptr;
}

void sgemm_packed_a_rows_b(const PackedMatrix& A, int64_t i0, int64_t i1, int64_t N, const float* x,
                           const int64_t* offsets, float beta, float* C, int64_t ldc, const GemmEpilogue& ep) {
  const int64_t M = A.rows(), K = A.cols();
  i1 = std::min(i1, M);
  if (i0 >= i1 || N <= 0) return;
  if (K <= 0 || A.empty() || !sgemm_has_row_pointer_b(A)) {
    scale_only(i1 - i0, N, beta, C, ldc, ep);
    return;
  }
  const SgemmKernel& kern = *PackedAccess::kernel(A);
  const int64_t mr = kern.mr, nr = kern.nr, m_pad = round_up(M, mr);
  const float* a_packed = PackedAccess::data(A);
  const bool epilogue = ep.active();
  for (int64_t p0 = 0; p0 < K; p0 += kern.kc) {
    const int64_t kc = std::min(kern.kc, K - p0);
    const float* a_block = a_packed + p0 * m_pad;
    const float tile_beta = p0 == 0 ? beta : 1.0f;
    const bool last = p0 + kc >= K;
    // The B tile (kc rows of NR floats in the image) stays in L1 while every
    // MR panel of A passes by.
    // With at most kWideRows rows, whole kWideCols-wide tiles first.
    int64_t wide_end = 0;
    const gemm_detail::IndirectKernel wide =
        i1 - i0 <= gemm_detail::kWideRows ? kern.indirect_wide[i1 - i0 - 1] : nullptr;
    if (wide != nullptr) {
      wide_end = N / gemm_detail::kWideCols * gemm_detail::kWideCols;
      for (int64_t jr = 0; jr < wide_end; jr += gemm_detail::kWideCols) {
        float* c = C + jr;
        const gemm_detail::TileEpilogue tile_ep = tile_epilogue(ep, i0, jr);
        wide(kc, a_block + i0 * kc, x + jr, offsets + p0, c, ldc, gemm_detail::kWideCols, 1.0f, tile_beta,
             last && epilogue ? &tile_ep : nullptr);
      }
    }
    for (int64_t jr = wide_end; jr < N; jr += nr) {
      const int64_t n = std::min(nr, N - jr);
      for (int64_t ir = i0; ir < i1; ir += mr) {
        const int64_t m = std::min(mr, i1 - ir);
        float* c = C + (ir - i0) * ldc + jr;
        const gemm_detail::TileEpilogue tile_ep = tile_epilogue(ep, ir, jr);
        kern.indirect[m - 1](kc, a_block + ir * kc, x + jr, offsets + p0, c, ldc, n, 1.0f, tile_beta,
                             last && epilogue ? &tile_ep : nullptr);
      }
    }
  }
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
