// The NCHWc inner loops for AVX-512F: blocks of 16 channels, conv tiles of
// 6 pixels x 4 output blocks (24 zmm accumulators, 4 weight vectors; the input
// broadcasts are FMA memory operands).
#include "providers/cpu/nchwc/nchwc_kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <utility>

#define ONYX_NCHWC_TARGET __attribute__((target("avx512f,avx2,fma,prfchw")))
#define ONYX_NCHWC_NS avx512

namespace onyx::cpu::nchwc::avx512 {
namespace {
#define ONYX_ISA_OP ONYX_NCHWC_TARGET static inline __attribute__((always_inline))
struct Isa {
  using V = __m512;
  static constexpr int kB = 16;
  static constexpr int kMaxP = 6;
  static constexpr int kMaxF = 4;
  static constexpr int kDepthwiseP = 8;
  static constexpr int kWideP = 12;
  static constexpr int kWideF = 2;
  ONYX_ISA_OP V zero() { return _mm512_setzero_ps(); }
  ONYX_ISA_OP V set1(float v) { return _mm512_set1_ps(v); }
  ONYX_ISA_OP V load(const float* p) { return _mm512_loadu_ps(p); }
  ONYX_ISA_OP void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  ONYX_ISA_OP V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  ONYX_ISA_OP V add(V a, V b) { return _mm512_add_ps(a, b); }
  ONYX_ISA_OP V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  ONYX_ISA_OP V max(V a, V b) { return _mm512_maskz_max_ps(0xFFFF, a, b); }
  ONYX_ISA_OP V min(V a, V b) { return _mm512_maskz_min_ps(0xFFFF, a, b); }
  // v where v >= 0, else alpha * v
  ONYX_ISA_OP V leaky(V v, V alpha) {
    const __mmask16 keep = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ);
    return _mm512_mask_blend_ps(keep, _mm512_mul_ps(v, alpha), v);
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
          : [a0] "+v"(acc[0]), [t] "=&v"(t)
          : [w0] "v"(w[0]), [x] "m"(*x));
    } else if constexpr (F == 2) {
      asm("vbroadcastss %[x], %[t]\n\t"
          "vfmadd231ps %[t], %[w0], %[a0]\n\t"
          "vfmadd231ps %[t], %[w1], %[a1]\n\t"
          : [a0] "+v"(acc[0]), [a1] "+v"(acc[1]), [t] "=&v"(t)
          : [w0] "v"(w[0]), [w1] "v"(w[1]), [x] "m"(*x));
    } else if constexpr (F == 3) {
      asm("vbroadcastss %[x], %[t]\n\t"
          "vfmadd231ps %[t], %[w0], %[a0]\n\t"
          "vfmadd231ps %[t], %[w1], %[a1]\n\t"
          "vfmadd231ps %[t], %[w2], %[a2]\n\t"
          : [a0] "+v"(acc[0]), [a1] "+v"(acc[1]), [a2] "+v"(acc[2]), [t] "=&v"(t)
          : [w0] "v"(w[0]), [w1] "v"(w[1]), [w2] "v"(w[2]), [x] "m"(*x));
    } else if constexpr (F == 4) {
      asm("vbroadcastss %[x], %[t]\n\t"
          "vfmadd231ps %[t], %[w0], %[a0]\n\t"
          "vfmadd231ps %[t], %[w1], %[a1]\n\t"
          "vfmadd231ps %[t], %[w2], %[a2]\n\t"
          "vfmadd231ps %[t], %[w3], %[a3]\n\t"
          : [a0] "+v"(acc[0]), [a1] "+v"(acc[1]), [a2] "+v"(acc[2]), [a3] "+v"(acc[3]), [t] "=&v"(t)
          : [w0] "v"(w[0]), [w1] "v"(w[1]), [w2] "v"(w[2]), [w3] "v"(w[3]), [x] "m"(*x));
    }
  }
};
#undef ONYX_ISA_OP
}  // namespace
}  // namespace onyx::cpu::nchwc::avx512

#include "providers/cpu/nchwc/nchwc_kernels_impl.h"

namespace onyx::cpu::nchwc {
const Kernels* avx512_kernels() { return &avx512::kKernels; }
}  // namespace onyx::cpu::nchwc

#else
namespace onyx::cpu::nchwc {
const Kernels* avx512_kernels() { return nullptr; }
}  // namespace onyx::cpu::nchwc
#endif
