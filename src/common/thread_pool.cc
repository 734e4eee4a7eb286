// Intra-op thread pool. The caller takes a share of every parallel_for, so a
// pool of size 1 has no workers and runs everything inline.
#include "common/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <set>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace onyx {
namespace {

inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Pauses between clock reads while spinning: a clock read costs ~20 ns, a pause
// ~10-140 ns depending on the CPU.
constexpr int kPausesPerClockRead = 16;

}  // namespace

// One parallel_for: chunks are claimed by the caller and any worker that picks
// the job up; `done` counts finished chunks. Each thread first claims its own
// chunk (the caller chunk 0, worker i chunk i), so consecutive calls over the
// same range give a thread the same part, whose data it wrote or read last
// time and still holds in its cache; then it scans `next` for chunks nobody
// has claimed. Workers hold the job by shared_ptr, so one that arrives after
// the last chunk was claimed only sees next >= chunks and never touches `fn`,
// which lives on the caller's stack.
struct ThreadPool::Job {
  static constexpr int64_t kInlineChunks = 16;
  const std::function<void(int64_t, int64_t)>* fn = nullptr;
  int64_t n = 0;
  int64_t per_chunk = 0;
  int64_t chunks = 0;
  std::atomic<bool>* taken = nullptr;  // chunks entries: inline_taken, or heap_taken for many chunks
  std::atomic<bool> inline_taken[kInlineChunks];
  std::unique_ptr<std::atomic<bool>[]> heap_taken;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};

  void init(int64_t chunk_count) {
    chunks = chunk_count;
    if (chunk_count > kInlineChunks) {
      heap_taken = std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(chunk_count));
      taken = heap_taken.get();
    } else {
      taken = inline_taken;
    }
    for (int64_t c = 0; c < chunk_count; ++c) taken[c].store(false, std::memory_order_relaxed);
  }

  // Runs chunk `preferred` if nobody has, then chunks until none is left.
  void run_chunks(int64_t preferred) {
    if (preferred < chunks) run_if_free(preferred);
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= chunks) return;
      run_if_free(c);
    }
  }
  void run_if_free(int64_t c) {
    if (taken[c].exchange(true, std::memory_order_acq_rel)) return;
    const int64_t begin = c * per_chunk;
    const int64_t end = std::min(n, begin + per_chunk);
    if (begin < end) (*fn)(begin, end);
    if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) done.notify_all();
  }
  bool exhausted() const { return next.load(std::memory_order_relaxed) >= chunks; }
};

ThreadPool::ThreadPool(int threads) : ThreadPool(ThreadPoolOptions{threads}) {}

ThreadPool::ThreadPool(const ThreadPoolOptions& options)
    : spin_microseconds_(std::max(0, options.spin_microseconds)) {
  for (int i = 1; i < options.threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::begin_run() {
  if (active_runs_.fetch_add(1, std::memory_order_relaxed) != 0 || spin_microseconds_ == 0) return;
  // The first run to begin wakes the sleeping workers, so that they spin (and
  // are running) by the time its first parallel_for comes: waking a thread
  // takes tens of microseconds, more on a virtual machine whose idle CPU
  // halts, and a run that woke its workers at the first parallel_for lost that
  // much of every node until they came. When the runs since the last wake-up
  // posted no job (every op small enough to run inline: a tabular model, a
  // streaming step), the wake-up is skipped: it cost each such run a system
  // call, and a worker spinning beside it for nothing. A job posted later
  // wakes the workers itself, and the run after it wakes them early again.
  if (!posted_.exchange(false, std::memory_order_relaxed)) return;
  // Workers still spinning from the run before (the next run of a loop)
  // need no call. One that falls asleep just now is woken by the first job.
  if (sleepers_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ++run_epoch_;
  if (sleepers_ > 0) wake_.notify_all();
}

namespace {
int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void ThreadPool::end_run() {
  if (active_runs_.fetch_sub(1, std::memory_order_relaxed) == 1 && spin_microseconds_ > 0) {
    idle_since_ns_.store(steady_now_ns(), std::memory_order_relaxed);
  }
}

bool ThreadPool::runs_recent() const {
  if (active_runs_.load(std::memory_order_relaxed) > 0) return true;
  const int64_t grace_ns = int64_t{1000} * std::min(spin_microseconds_, kAfterRunSpinMicroseconds);
  return steady_now_ns() - idle_since_ns_.load(std::memory_order_relaxed) < grace_ns;
}

std::shared_ptr<ThreadPool::Job> ThreadPool::front_job_locked() {
  while (!jobs_.empty() && jobs_.front()->exhausted()) {
    jobs_.pop_front();
    queued_.store(static_cast<int>(jobs_.size()), std::memory_order_relaxed);
  }
  return jobs_.empty() ? nullptr : jobs_.front();
}

bool ThreadPool::spin_for_job() const {
  if (spin_microseconds_ == 0) return false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_microseconds_);
  for (;;) {
    for (int i = 0; i < kPausesPerClockRead; ++i) {
      if (queued_.load(std::memory_order_acquire) > 0) return true;
      cpu_pause();
    }
    if (std::chrono::steady_clock::now() >= deadline || !runs_recent()) return false;
  }
}

void ThreadPool::worker_loop(int index) {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        if (stopping_) return;
        job = front_job_locked();
        if (job) break;
        // Nothing queued: spin (outside the lock) while a run is in progress,
        // then sleep until a job is posted.
        if (spin_microseconds_ > 0 && runs_recent()) {
          lock.unlock();
          const bool found = spin_for_job();
          lock.lock();
          if (found) continue;
          if (stopping_) return;
          job = front_job_locked();
          if (job) break;
        }
        ++sleepers_;
        const uint64_t epoch = run_epoch_;
        wake_.wait(lock, [this, epoch] { return stopping_ || !jobs_.empty() || run_epoch_ != epoch; });
        --sleepers_;
      }
    }
    job->run_chunks(index);
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
  posted_.store(true, std::memory_order_relaxed);
  auto job = std::make_shared<Job>();
  job->fn = &fn;
  job->n = n;
  job->init(chunks);
  job->per_chunk = (n + chunks - 1) / chunks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    front_job_locked();  // drops the finished jobs at the front
    jobs_.push_back(job);
    queued_.store(static_cast<int>(jobs_.size()), std::memory_order_release);
    // Spinning workers see queued_; only sleeping ones need a wake-up call.
    if (sleepers_ > 0) wake_.notify_all();
  }
  job->run_chunks(0);
  // Every chunk is claimed; wait for the ones workers are still running:
  // spin first (they are usually about to finish), then block.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_microseconds_);
  for (;;) {
    int64_t finished = 0;
    for (int i = 0; i < kPausesPerClockRead; ++i) {
      finished = job->done.load(std::memory_order_acquire);
      if (finished >= chunks) break;
      cpu_pause();
    }
    if (finished >= chunks) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      while ((finished = job->done.load(std::memory_order_acquire)) < chunks) job->done.wait(finished);
      break;
    }
  }
  // The finished job stays queued until a worker's next look or the next
  // post drops it (it has no chunk left, so nobody calls fn again): taking
  // the lock here met the worker taking it on its way back from the same
  // job, and the loser slept in the kernel.
}

void parallel_for_tasks(ThreadPool* pool, int64_t count, double cost_per_task, const std::function<void(int64_t)>& fn) {
  if (count <= 0) return;
  const int64_t shares = pool == nullptr ? 1 : std::min<int64_t>(pool->parallelism(), count);
  if (shares == 1) {
    for (int64_t t = 0; t < count; ++t) fn(t);
    return;
  }
  // cursor[s].next is the next unclaimed task of share s, which ends at
  // end(s). One cache line each: a thread claims its own tasks without
  // taking the line from the thread next to it (adjacent cursors made small
  // tasks, such as a 14x14 depthwise block, slower on two threads than one).
  struct alignas(64) Cursor {
    std::atomic<int64_t> next{0};
  };
  constexpr int64_t kInlineShares = 8;
  Cursor inline_cursors[kInlineShares];
  std::unique_ptr<Cursor[]> heap_cursors;
  if (shares > kInlineShares) heap_cursors = std::make_unique<Cursor[]>(static_cast<size_t>(shares));
  Cursor* cursor = shares > kInlineShares ? heap_cursors.get() : inline_cursors;
  for (int64_t s = 0; s < shares; ++s) cursor[s].next.store(s * count / shares, std::memory_order_relaxed);
  auto end = [&](int64_t s) { return (s + 1) * count / shares; };
  auto drain = [&](int64_t s) {
    for (int64_t t = cursor[s].next.fetch_add(1, std::memory_order_relaxed); t < end(s);
         t = cursor[s].next.fetch_add(1, std::memory_order_relaxed)) {
      fn(t);
    }
  };
  const double cost_per_share = cost_per_task * static_cast<double>(count) / static_cast<double>(shares);
  pool->parallel_for(shares, cost_per_share, [&](int64_t first, int64_t last) {
    for (int64_t s = first; s < last; ++s) drain(s);
    for (int64_t i = 1; i < shares; ++i) drain((last - 1 + i) % shares);
  });
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
