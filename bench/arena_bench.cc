// What an allocate/deallocate pair costs from ArenaAllocator (over
// cpu_allocator()) and from cpu_allocator() itself, for typical tensor sizes
// and for a run-like mix of lifetimes, on 1 and 2 threads.
// Build and run: see bench/README.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "onyx/tensor.h"
#include "tensor/arena.h"

namespace {

using Clock = std::chrono::steady_clock;

// One thread's work: `pairs` allocate/deallocate pairs on `allocator`.
using Work = std::function<void(onyx::Allocator*, size_t pairs)>;

// Each block is written once at its start and once per 4 KiB page, as a
// kernel writing its output would: page faults are part of an allocator's cost.
void touch(void* pointer, size_t bytes) {
  auto* p = static_cast<volatile char*>(pointer);
  for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
}

Work same_size(size_t bytes) {
  return [bytes](onyx::Allocator* allocator, size_t pairs) {
    for (size_t i = 0; i < pairs; ++i) {
      void* p = allocator->allocate(bytes);
      touch(p, bytes);
      allocator->deallocate(p, bytes);
    }
  };
}

// A CNN-like run: activations of mixed sizes, each freed two allocations
// after it was made (an op's output dies when the next op but one has read it).
Work mixed_run() {
  static const size_t kSizes[] = {200704, 802816, 50176, 401408, 3211264, 100352, 4096, 1605632, 25088, 802816};
  return [](onyx::Allocator* allocator, size_t pairs) {
    void* live[2] = {nullptr, nullptr};
    size_t live_bytes[2] = {0, 0};
    for (size_t i = 0; i < pairs; ++i) {
      const size_t bytes = kSizes[i % std::size(kSizes)];
      void* p = allocator->allocate(bytes);
      touch(p, bytes);
      if (live[i % 2] != nullptr) allocator->deallocate(live[i % 2], live_bytes[i % 2]);
      live[i % 2] = p;
      live_bytes[i % 2] = bytes;
    }
    for (int k = 0; k < 2; ++k) {
      if (live[k] != nullptr) allocator->deallocate(live[k], live_bytes[k]);
    }
  };
}

// Nanoseconds per pair on each of `threads` threads: the fastest of several
// timed series (the machine may be shared).
double ns_per_pair(onyx::Allocator* allocator, const Work& work, int threads, size_t pairs) {
  work(allocator, pairs / 4);  // warm up: regions made, heap grown
  double best = 1e30;
  for (int repeat = 0; repeat < 7; ++repeat) {
    const auto start = Clock::now();
    std::vector<std::thread> others;
    for (int t = 1; t < threads; ++t) others.emplace_back(work, allocator, pairs);
    work(allocator, pairs);
    for (auto& thread : others) thread.join();
    best = std::min(best, std::chrono::duration<double, std::nano>(Clock::now() - start).count());
  }
  return best / static_cast<double>(pairs);
}

}  // namespace

int main() {
  struct Case {
    std::string name;
    Work work;
    size_t pairs;
  };
  const std::vector<Case> cases = {
      {"256 B", same_size(256), 400000},     {"4 KiB", same_size(4096), 400000},
      {"64 KiB", same_size(65536), 200000},  {"1 MiB", same_size(1 << 20), 20000},
      {"16 MiB", same_size(16 << 20), 1000}, {"mixed run (25 KiB..3 MiB)", mixed_run(), 50000},
  };
  std::printf("| case | threads | cpu_allocator() ns | arena ns | arena / cpu |\n|---|---|---|---|---|\n");
  for (const Case& c : cases) {
    for (int threads : {1, 2}) {
      onyx::ArenaAllocator arena(onyx::cpu_allocator());
      const double cpu = ns_per_pair(onyx::cpu_allocator(), c.work, threads, c.pairs);
      const double pooled = ns_per_pair(&arena, c.work, threads, c.pairs);
      std::printf("| %s | %d | %.0f | %.0f | %.2f |\n", c.name.c_str(), threads, cpu, pooled, pooled / cpu);
      std::fflush(stdout);
    }
  }
  return 0;
}
