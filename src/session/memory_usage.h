// The process's resident memory, read from /proc/self/status, for verbose
// session logs and for `onyx bench`. Zero where /proc is not available.
#pragma once

#include <cstdint>
#include <string>

namespace onyx::session {

struct MemoryUsage {
  int64_t resident_bytes = 0;       // VmRSS
  int64_t peak_resident_bytes = 0;  // VmHWM
};

MemoryUsage memory_usage();

// Hands memory the C library holds free back to the system (glibc keeps
// freed blocks in its heap, so freeing a weight in the middle of it would not
// lower resident memory). Does nothing elsewhere.
void return_free_memory_to_system();

// Writes "onyx verbose: memory after <stage>: ..." to stderr.
void log_memory_usage(const std::string& stage);

}  // namespace onyx::session
