// Large read-mostly buffers (packed weights) on 2 MiB pages where the OS
// gives them: a decoder streams each of its weight buffers front to back once
// per token, and on 4 KiB pages that stream takes a TLB miss every 4 KiB.
// Linux's transparent huge pages in "madvise" mode (Debian's default) only
// back memory that asks; elsewhere these are no-ops.
//
// Opt-in (ONYX_HUGE_PAGES=1): with the kernel's default defrag policy a
// huge-page fault compacts memory on the spot, and on this 24 GiB machine
// creating a session of a 2.4 GB fp32 decoder took 9-10 s instead of 1.5 s,
// for 5% more decode speed (docs/performance.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace onyx::cpu {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Asks for huge pages over the 2 MiB-aligned part of [data, data + bytes).
// Call it before the memory is first written: pages already touched stay as
// they are until the kernel collapses them. Advice only: a refusal is harmless.
inline bool huge_pages_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("ONYX_HUGE_PAGES");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return enabled;
}

inline void advise_huge_pages(void* data, size_t bytes) {
#if defined(__linux__)
  if (!huge_pages_enabled()) return;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (begin + kHugePageBytes - 1) & ~(uintptr_t{kHugePageBytes} - 1);
  const uintptr_t last = (begin + bytes) & ~(uintptr_t{kHugePageBytes} - 1);
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace onyx::cpu
