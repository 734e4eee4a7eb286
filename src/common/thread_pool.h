// A fixed pool of worker threads for intra-op parallelism. parallel_for splits
// work by its cost and stays on the calling thread when the work is small.
// Workers sleep on a condition variable: an idle pool uses no CPU.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace onyx {

class ThreadPool {
 public:
  // `threads` is the total parallelism including the caller; 1 means no workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int parallelism() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) over [0, n) in chunks. `cost_per_item` is a rough
  // count of operations per item; work under ~64K operations runs inline.
  void parallel_for(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& fn);

  // The number of physical cores (falls back to hardware_concurrency).
  static int default_thread_count();

 private:
  struct Job;
  void worker_loop();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<std::function<void()>> queue_;
  bool stopping_ = false;
};

// Runs fn over [0, n) through `pool` when it is not null, else inline.
inline void parallel_for(ThreadPool* pool, int64_t n, double cost_per_item,
                         const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (pool == nullptr) {
    fn(0, n);
    return;
  }
  pool->parallel_for(n, cost_per_item, fn);
}

}  // namespace onyx
