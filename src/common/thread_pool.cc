// Intra-op thread pool. The caller takes a share of every parallel_for, so a
// pool of size 1 has no workers and runs everything inline.
#include "common/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <set>
#include <string>

namespace onyx {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_ && queue_.empty()) return;
      task = std::move(queue_.back());
      queue_.pop_back();
    }
    task();
  }
}

void ThreadPool::parallel_for(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  constexpr double kMinCostPerChunk = 65536.0;
  const double total = static_cast<double>(n) * std::max(cost_per_item, 1.0);
  int64_t chunks = std::min<int64_t>(n, static_cast<int64_t>(total / kMinCostPerChunk));
  chunks = std::min<int64_t>(chunks, parallelism());
  if (chunks <= 1 || workers_.empty()) {
    fn(0, n);
    return;
  }
  // Chunks are claimed through a shared counter, so the caller and whichever
  // workers are free split the work; the caller waits for every chunk.
  struct Shared {
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    std::mutex mutex;
    std::condition_variable finished;
  };
  auto shared = std::make_shared<Shared>();
  const int64_t per_chunk = (n + chunks - 1) / chunks;
  auto run_chunks = [shared, per_chunk, n, chunks, &fn] {
    for (;;) {
      const int64_t c = shared->next.fetch_add(1);
      if (c >= chunks) return;
      const int64_t begin = c * per_chunk;
      const int64_t end = std::min(n, begin + per_chunk);
      if (begin < end) fn(begin, end);
      if (shared->done.fetch_add(1) + 1 == chunks) {
        std::lock_guard<std::mutex> lock(shared->mutex);
        shared->finished.notify_all();
      }
    }
  };
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int64_t i = 1; i < chunks; ++i) queue_.push_back(run_chunks);
  }
  wake_.notify_all();
  run_chunks();
  std::unique_lock<std::mutex> lock(shared->mutex);
  shared->finished.wait(lock, [&] { return shared->done.load() >= chunks; });
  // Workers that pick up a queued task after all chunks are claimed return at
  // once; they never touch `fn` then, so leaving here is safe.
}

int ThreadPool::default_thread_count() {
  // Physical cores: distinct (physical id, core id) pairs in /proc/cpuinfo.
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::set<std::pair<int, int>> cores;
  std::string line;
  int physical = 0;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("physical id", 0) == 0) physical = std::stoi(line.substr(line.find(':') + 1));
    if (line.rfind("core id", 0) == 0) cores.insert({physical, std::stoi(line.substr(line.find(':') + 1))});
  }
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  if (!cores.empty()) return std::max(1, std::min(static_cast<int>(cores.size()), hw > 0 ? hw : 1 << 10));
  return hw > 0 ? hw : 1;
}

}  // namespace onyx
