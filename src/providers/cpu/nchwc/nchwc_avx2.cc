// The NCHWc inner loops for AVX2 with FMA: blocks of 8 channels, conv tiles
// of 6 pixels x 2 output blocks (12 ymm accumulators, 2 weight vectors and
// one broadcast input fill the 16 registers).
#include "providers/cpu/nchwc/nchwc_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <utility>

#define ONYX_NCHWC_TARGET __attribute__((target("avx2,fma,prfchw")))
#define ONYX_NCHWC_NS avx2

namespace onyx::cpu::nchwc::avx2 {
namespace {
#define ONYX_ISA_OP ONYX_NCHWC_TARGET static inline __attribute__((always_inline))
struct Isa {
  using V = __m256;
  static constexpr int kB = 8;
  static constexpr int kMaxP = 6;
  static constexpr int kMaxF = 2;
  static constexpr int kDepthwiseP = 8;
  static constexpr int kWideP = 12;
  static constexpr int kWideF = 1;
  ONYX_ISA_OP V zero() { return _mm256_setzero_ps(); }
  ONYX_ISA_OP V set1(float v) { return _mm256_set1_ps(v); }
  ONYX_ISA_OP V load(const float* p) { return _mm256_loadu_ps(p); }
  ONYX_ISA_OP void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  ONYX_ISA_OP V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  ONYX_ISA_OP V add(V a, V b) { return _mm256_add_ps(a, b); }
  ONYX_ISA_OP V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  ONYX_ISA_OP V max(V a, V b) { return _mm256_max_ps(a, b); }
  ONYX_ISA_OP V min(V a, V b) { return _mm256_min_ps(a, b); }
  // v where v >= 0, else alpha * v
  ONYX_ISA_OP V leaky(V v, V alpha) {
    const V keep = _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ);
    return _mm256_blendv_ps(_mm256_mul_ps(v, alpha), v, keep);
  }
  // acc[f] += w[f] * x[0] for f < F. Written as one asm statement so that
  // the register allocator keeps the whole tile in registers (GCC spills
  // accumulators when it schedules the intrinsics itself).
  template <int F>
  ONYX_ISA_OP void broadcast_fma(V* acc, const V* w, const float* x) {
    V t;
    if constexpr (F == 1) {
      asm("vbroadcastss %[x], %[t]\n\t"
          "vfmadd231ps %[t], %[w0], %[a0]\n\t"
          : [a0] "+x"(acc[0]), [t] "=&x"(t)
          : [w0] "x"(w[0]), [x] "m"(*x));
    } else if constexpr (F == 2) {
      asm("vbroadcastss %[x], %[t]\n\t"
          "vfmadd231ps %[t], %[w0], %[a0]\n\t"
          "vfmadd231ps %[t], %[w1], %[a1]\n\t"
          : [a0] "+x"(acc[0]), [a1] "+x"(acc[1]), [t] "=&x"(t)
          : [w0] "x"(w[0]), [w1] "x"(w[1]), [x] "m"(*x));
    } else if constexpr (F == 3) {
      asm("vbroadcastss %[x], %[t]\n\t"
          "vfmadd231ps %[t], %[w0], %[a0]\n\t"
          "vfmadd231ps %[t], %[w1], %[a1]\n\t"
          "vfmadd231ps %[t], %[w2], %[a2]\n\t"
          : [a0] "+x"(acc[0]), [a1] "+x"(acc[1]), [a2] "+x"(acc[2]), [t] "=&x"(t)
          : [w0] "x"(w[0]), [w1] "x"(w[1]), [w2] "x"(w[2]), [x] "m"(*x));
    } else if constexpr (F == 4) {
      asm("vbroadcastss %[x], %[t]\n\t"
          "vfmadd231ps %[t], %[w0], %[a0]\n\t"
          "vfmadd231ps %[t], %[w1], %[a1]\n\t"
          "vfmadd231ps %[t], %[w2], %[a2]\n\t"
          "vfmadd231ps %[t], %[w3], %[a3]\n\t"
          : [a0] "+x"(acc[0]), [a1] "+x"(acc[1]), [a2] "+x"(acc[2]), [a3] "+x"(acc[3]), [t] "=&x"(t)
          : [w0] "x"(w[0]), [w1] "x"(w[1]), [w2] "x"(w[2]), [w3] "x"(w[3]), [x] "m"(*x));
    }
  }
};
#undef ONYX_ISA_OP
}  // namespace
}  // namespace onyx::cpu::nchwc::avx2

#include "providers/cpu/nchwc/nchwc_kernels_impl.h"

namespace onyx::cpu::nchwc {
const Kernels* avx2_kernels() { return &avx2::kKernels; }
}  // namespace onyx::cpu::nchwc

#else
namespace onyx::cpu::nchwc {
const Kernels* avx2_kernels() { return nullptr; }
}  // namespace onyx::cpu::nchwc
#endif
