// See int8_isa.h: cpuid through the compiler's __builtin_cpu_supports (which
// also checks that the OS saves the wide registers), read once.
#include "providers/cpu/quant/int8_isa.h"

#include <cstdlib>
#include <string>

namespace onyx::cpu {
namespace {

bool cpu_runs(Int8Isa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // Needed before __builtin_cpu_supports when called from static initializers.
  __builtin_cpu_init();
  switch (isa) {
    case Int8Isa::kAuto:
    case Int8Isa::kPortable:
      return true;
    case Int8Isa::kAvx2:
      return __builtin_cpu_supports("avx2");
    case Int8Isa::kAvx512Vnni:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  }
  return false;
#else
  return isa == Int8Isa::kAuto || isa == Int8Isa::kPortable;
#endif
}

Int8Isa best_isa() {
  if (cpu_runs(Int8Isa::kAvx512Vnni)) return Int8Isa::kAvx512Vnni;
  if (cpu_runs(Int8Isa::kAvx2)) return Int8Isa::kAvx2;
  return Int8Isa::kPortable;
}

}  // namespace

std::vector<Int8Isa> available_int8_isas() {
  std::vector<Int8Isa> isas;
  for (Int8Isa isa : {Int8Isa::kPortable, Int8Isa::kAvx2, Int8Isa::kAvx512Vnni})
    if (cpu_runs(isa)) isas.push_back(isa);
  return isas;
}

const char* int8_isa_name(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::kAuto:
      return "auto";
    case Int8Isa::kPortable:
      return "portable";
    case Int8Isa::kAvx2:
      return "avx2";
    case Int8Isa::kAvx512Vnni:
      return "avx512vnni";
  }
  return "?";
}

Int8Isa resolve_int8_isa(Int8Isa isa) {
  static const Int8Isa chosen = [] {
    const char* forced = std::getenv("ONYX_INT8_ISA");
    if (forced != nullptr) {
      for (Int8Isa candidate : {Int8Isa::kPortable, Int8Isa::kAvx2, Int8Isa::kAvx512Vnni})
        if (std::string(forced) == int8_isa_name(candidate) && cpu_runs(candidate)) return candidate;
    }
    return best_isa();
  }();
  if (isa == Int8Isa::kAuto) return chosen;
  return cpu_runs(isa) ? isa : best_isa();
}

}  // namespace onyx::cpu
