// A fixed pool of worker threads for intra-op parallelism. parallel_for splits
// work by its cost and stays on the calling thread when the work is small; the
// caller always takes part in its own parallel_for.
//
// Between parallel_for calls a worker spins for a short, bounded time before it
// sleeps, so that the next call of the same run does not pay a wake-up — but
// only while a run is in progress (between begin_run and end_run), and for a
// grace of at most kAfterRunSpinMicroseconds after the last run ends, so that
// the next run of a loop finds the workers awake. Past that no thread spins:
// an idle pool uses no CPU.
//
// Several threads may call parallel_for at once (several runs of one session).
// Their jobs share the workers: each caller works on its own job and the
// workers help whichever job is oldest, so at most (callers + workers) threads
// are busy and a caller never waits for a worker to become free.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace onyx {

struct ThreadPoolOptions {
  int threads = 1;  // total parallelism including the caller; 1 means no workers
  // How long an idle worker spins (with a pause instruction) before it sleeps,
  // while a run is in progress. 0 never spins.
  int spin_microseconds = 50;
};

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  explicit ThreadPool(const ThreadPoolOptions& options);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int parallelism() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) over [0, n) in chunks. `cost_per_item` is a rough
  // count of operations per item; work under ~64K operations runs inline.
  // Chunks are equal and, while every thread arrives in time, the same thread
  // runs the same chunk of the same n in consecutive calls (the caller the
  // first), so data a kernel leaves in a thread's cache is read there next.
  void parallel_for(int64_t n, double cost_per_item, const std::function<void(int64_t, int64_t)>& fn);

  // A run began / ended. Workers spin between jobs only while some run is in
  // progress, or just ended; calls nest and may come from several threads.
  // The first run to begin wakes the sleeping workers ahead of its first
  // parallel_for, unless the run before it posted no job (a model whose every
  // op ran inline, where the wake-up would be all the pool did).
  void begin_run();
  void end_run();

  // The number of physical cores (falls back to hardware_concurrency).
  static int default_thread_count();

 private:
  struct Job;
  void worker_loop(int index);  // index: 1.. (the caller of parallel_for is 0)
  // The oldest job with unclaimed chunks (dropping exhausted ones), or null. Needs mutex_.
  std::shared_ptr<Job> front_job_locked();
  // After the last run ends, workers keep spinning this long (or the spin
  // time, when shorter) before they sleep.
  static constexpr int kAfterRunSpinMicroseconds = 100;
  // True while a run is in progress or the last one ended less than the
  // after-run spin ago.
  bool runs_recent() const;
  // Spins while runs_recent(), for at most the spin time, until a job is queued.
  bool spin_for_job() const;

  const int spin_microseconds_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;  // guarded by mutex_
  std::atomic<int> sleepers_{0};           // workers waiting on wake_; changed under mutex_
  uint64_t run_epoch_ = 0;                 // counts begin_run calls that woke workers; guarded by mutex_
  bool stopping_ = false;                  // guarded by mutex_
  std::atomic<int> queued_{0};             // jobs_.size(), readable without the lock
  std::atomic<int> active_runs_{0};
  std::atomic<int64_t> idle_since_ns_{0};  // steady-clock time the last run ended
  std::atomic<bool> posted_{true};  // a job was posted since the last begin_run that woke workers
};

// Tells `pool` (may be null) that a run is in progress for the guard's lifetime.
class ThreadPoolRun {
 public:
  explicit ThreadPoolRun(ThreadPool* pool) : pool_(pool) {
    if (pool_) pool_->begin_run();
  }
  ~ThreadPoolRun() {
    if (pool_) pool_->end_run();
  }
  ThreadPoolRun(const ThreadPoolRun&) = delete;
  ThreadPoolRun& operator=(const ThreadPoolRun&) = delete;

 private:
  ThreadPool* pool_;
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

// Runs fn(task) for every task in [0, count), tasks of about equal cost,
// `cost_per_task` operations each. Each thread owns one contiguous share of
// the tasks and works through it in order, so consecutive calls with the
// same count give a thread the same share (a convolution reads the rows the
// same thread wrote in the layer before); a thread that finishes its share
// takes what is left of the others', from the front, so a late thread delays
// nobody.
void parallel_for_tasks(ThreadPool* pool, int64_t count, double cost_per_task, const std::function<void(int64_t)>& fn);

}  // namespace onyx
