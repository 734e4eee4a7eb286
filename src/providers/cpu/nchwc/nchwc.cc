// cpuid decides the NCHWc block size, and with it the kernels, once per
// process.
#include "providers/cpu/nchwc/nchwc.h"

#include <cstdlib>
#include <cstring>

#include "providers/cpu/nchwc/nchwc_kernels.h"
#include "providers/kernel.h"

namespace onyx::cpu {

int nchwc_block_size() {
  static const int block = [] {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();  // may run before the library's own constructors
    // ONYX_NCHWC_BLOCK=8 picks the AVX2 kernels on an AVX-512 CPU (to test them).
    const char* forced = std::getenv("ONYX_NCHWC_BLOCK");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (forced != nullptr && std::strcmp(forced, "8") == 0 && avx2) return 8;
    if (__builtin_cpu_supports("avx512f")) return 16;
    if (avx2) return 8;
#endif
    return 1;
  }();
  return block;
}

const nchwc::Kernels* nchwc::kernels() {
  static const Kernels* chosen = [] {
    switch (nchwc_block_size()) {
      case 16:
        return avx512_kernels();
      case 8:
        return avx2_kernels();
      default:
        return static_cast<const Kernels*>(nullptr);
    }
  }();
  return chosen;
}

const nchwc::Kernels* nchwc::required_kernels(const KernelInfo& info) {
  const Kernels* k = kernels();
  if (k == nullptr) {
    throw Error(not_implemented(info.label(), ": the NCHWc layout needs a CPU with AVX2 and FMA, or AVX-512F"));
  }
  return k;
}

}  // namespace onyx::cpu
