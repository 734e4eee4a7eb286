// The instruction sets of the 8-bit integer kernels (the int8 GEMM of the
// quantized ops, MatMulNBits' int8 path): which ones this CPU runs, and the
// one a call uses, so that every kernel family chooses the same way and one
// switch (ONYX_INT8_ISA) forces them all.
#pragma once

#include <vector>

namespace onyx::cpu {

// kAuto is the best the CPU has; the others are there so that tests and
// benchmarks run each path the machine can. ONYX_INT8_ISA=portable, avx2 or
// avx512vnni forces one for kAuto (in sessions too); a path the CPU cannot
// run falls back to the best one it can.
enum class Int8Isa { kAuto, kPortable, kAvx2, kAvx512Vnni };

// The ISAs this CPU runs, kPortable first. kAvx512Vnni needs AVX-512 F, BW,
// VL and VNNI (vpdpbusd on zmm registers).
std::vector<Int8Isa> available_int8_isas();
const char* int8_isa_name(Int8Isa isa);
// The path a call asking for `isa` takes: never kAuto, always one the CPU runs.
Int8Isa resolve_int8_isa(Int8Isa isa);

}  // namespace onyx::cpu
