// Resident memory of the process, from /proc/self/status.
#include "session/memory_usage.h"

#include <cstdio>
#include <fstream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace onyx::session {

MemoryUsage memory_usage() {
  MemoryUsage usage;
  std::ifstream status("/proc/self/status");
  std::string line;
  auto kib = [](const std::string& text) { return std::stoll(text.substr(text.find(':') + 1)) * 1024; };
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) usage.resident_bytes = kib(line);
    if (line.rfind("VmHWM:", 0) == 0) usage.peak_resident_bytes = kib(line);
  }
  return usage;
}

void return_free_memory_to_system() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void log_memory_usage(const std::string& stage) {
  const MemoryUsage usage = memory_usage();
  constexpr double kMiB = 1024.0 * 1024.0;
  std::fprintf(stderr, "onyx verbose: memory after %s: resident %.1f MiB, peak %.1f MiB\n", stage.c_str(),
               static_cast<double>(usage.resident_bytes) / kMiB, static_cast<double>(usage.peak_resident_bytes) / kMiB);
}

}  // namespace onyx::session
