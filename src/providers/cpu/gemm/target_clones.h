// ONYX_TARGET_CLONES: compile a plain loop function once per x86-64 vector
// ISA (AVX-512, AVX2, baseline) and let the loader pick the clone for the
// running CPU, so auto-vectorized loops use wide registers in a binary built
// for baseline x86-64. Expands to nothing elsewhere (ARM, WebAssembly), under
// AddressSanitizer, and with clang, which (as of clang 14) refuses
// target_clones on function templates.
#pragma once

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(ONYX_NO_TARGET_CLONES)
#define ONYX_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ONYX_TARGET_CLONES
#endif
