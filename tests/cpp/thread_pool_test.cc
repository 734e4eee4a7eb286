// Thread pool: parallel_for covers every index once from any number of
// callers, the caller takes part, and an idle session uses no CPU (workers
// spin only while a run is in progress, and a grace of at most 100 us after).
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "common/thread_pool.h"
#include "onyx/session.h"

namespace onyx {
namespace {

const std::string kModel = std::string(ONYX_SOURCE_DIR) + "/models/tiny_cnn.onnx";

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    for (int spin : {0, 50}) {
      ThreadPool pool(ThreadPoolOptions{threads, spin});
      ThreadPoolRun run(&pool);
      for (int64_t n : {1, 2, 3, 7, 64, 1000, 100003}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        pool.parallel_for(n, 1.0e5, [&](int64_t begin, int64_t end) {
          ASSERT_LE(0, begin);
          ASSERT_LE(begin, end);
          ASSERT_LE(end, n);
          for (int64_t i = begin; i < end; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
        });
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)].load(), 1) << threads << " " << n << " " << i;
      }
    }
  }
}

TEST(ThreadPool, SmallWorkStaysOnTheCaller) {
  ThreadPool pool(4);
  const auto caller = std::this_thread::get_id();
  std::set<std::thread::id> seen;
  pool.parallel_for(100, 1.0, [&](int64_t, int64_t) { seen.insert(std::this_thread::get_id()); });
  EXPECT_EQ(seen, std::set<std::thread::id>{caller});
}

TEST(ThreadPool, CallerTakesPart) {
  ThreadPool pool(ThreadPoolOptions{3, 50});
  ThreadPoolRun run(&pool);
  const auto caller = std::this_thread::get_id();
  std::mutex mutex;
  std::set<std::thread::id> seen;
  for (int i = 0; i < 100; ++i) {
    pool.parallel_for(3, 1.0e6, [&](int64_t, int64_t) {
      std::lock_guard<std::mutex> lock(mutex);
      seen.insert(std::this_thread::get_id());
    });
  }
  EXPECT_TRUE(seen.count(caller)) << "the calling thread never ran a chunk";
}

TEST(ThreadPool, ManyCallersShareThePool) {
  ThreadPool pool(ThreadPoolOptions{3, 20});
  constexpr int kCallers = 6;
  std::atomic<int> errors{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      ThreadPoolRun run(&pool);
      std::mt19937 rng(static_cast<uint32_t>(c));
      for (int r = 0; r < 300; ++r) {
        const int64_t n = 1 + static_cast<int64_t>(rng() % 5000);
        std::vector<int> hits(static_cast<size_t>(n), 0);
        pool.parallel_for(n, 1000.0, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
        });
        for (int h : hits) errors += h != 1;
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(errors.load(), 0);
}

TEST(ThreadPool, NestedParallelForFinishes) {
  ThreadPool pool(ThreadPoolOptions{3, 20});
  std::atomic<int64_t> total{0};
  pool.parallel_for(8, 1.0e6, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      pool.parallel_for(1000, 1.0e3, [&](int64_t b, int64_t e) { total += e - b; });
    }
  });
  EXPECT_EQ(total.load(), 8000);
}

// Each thread starts with its own chunk: in consecutive calls over the same
// n, chunk c runs on the same thread (checked over many calls: a worker that
// is late lets another take its chunk now and then, never most of the time).
TEST(ThreadPool, ChunksStayWithTheirThread) {
  ThreadPool pool(ThreadPoolOptions{3, 100000});
  ThreadPoolRun run(&pool);
  std::mutex mutex;
  std::vector<std::map<std::thread::id, int>> runs_by(3);
  for (int call = 0; call < 200; ++call) {
    pool.parallel_for(3, 1.0e6, [&](int64_t begin, int64_t end) {
      std::lock_guard<std::mutex> lock(mutex);
      for (int64_t c = begin; c < end; ++c) ++runs_by[static_cast<size_t>(c)][std::this_thread::get_id()];
    });
  }
  EXPECT_EQ(runs_by[0][std::this_thread::get_id()] > 100, true) << "the caller does not usually run chunk 0";
  for (const auto& by : runs_by) {
    int most = 0;
    for (const auto& [id, count] : by) most = std::max(most, count);
    EXPECT_GT(most, 100) << "no thread ran this chunk in most calls";
  }
}

TEST(ThreadPool, ParallelForTasksRunsEveryTaskOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(ThreadPoolOptions{threads, 50});
    ThreadPoolRun run(&pool);
    for (int64_t count : {1, 2, 3, 4, 7, 16, 1001}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
      parallel_for_tasks(&pool, count, 1.0e6, [&](int64_t task) {
        ASSERT_LE(0, task);
        ASSERT_LT(task, count);
        hits[static_cast<size_t>(task)].fetch_add(1);
      });
      for (int64_t t = 0; t < count; ++t) ASSERT_EQ(hits[static_cast<size_t>(t)].load(), 1) << threads << " " << count;
    }
  }
  int ran = 0;
  parallel_for_tasks(nullptr, 5, 1.0e6, [&](int64_t) { ++ran; });
  EXPECT_EQ(ran, 5);
}

// A share whose thread is busy elsewhere is taken over: with the worker
// blocked in another caller's job, the caller alone runs every task.
TEST(ThreadPool, ParallelForTasksDoesNotWaitForALateThread) {
  ThreadPool pool(ThreadPoolOptions{2, 0});
  std::atomic<bool> release{false};
  std::atomic<bool> worker_busy{false};
  std::thread other([&] {
    pool.parallel_for(2, 1.0e9, [&](int64_t begin, int64_t) {
      if (begin == 1) {
        worker_busy = true;
        while (!release) std::this_thread::yield();
      }
    });
  });
  while (!worker_busy) std::this_thread::yield();
  std::atomic<int> ran{0};
  parallel_for_tasks(&pool, 10, 1.0e6, [&](int64_t) { ++ran; });
  EXPECT_EQ(ran.load(), 10);
  release = true;
  other.join();
}

double process_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Workers may spin between the parallel sections of a run, and for at most
// 100 us after it: even with a spin time of a second, an idle session costs
// (almost) no CPU.
TEST(ThreadPool, AnIdleSessionUsesNoCpu) {
  SessionOptions options;
  options.intra_op_num_threads = 4;
  options.config_entries["onyx.intra_op.spin_microseconds"] = "1000000";
  auto session = InferenceSession::from_file(kModel, options);
  Tensor image(DataType::kFloat, {1, 3, 32, 32});
  for (int64_t i = 0; i < image.size(); ++i) image.data<float>()[i] = static_cast<float>(i % 17) * 0.1f;
  for (int i = 0; i < 5; ++i) session->run({}, {{"image", Value(image)}});
  const double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double used = process_cpu_seconds() - before;
  // Three spinning workers would use ~600 ms here; a quiet pool uses ~0.
  EXPECT_LT(used, 0.05) << "CPU seconds used by an idle session over 200 ms";
}

TEST(ThreadPool, SpinSettingsAreChecked) {
  SessionOptions options;
  options.config_entries["onyx.intra_op.spin_microseconds"] = "-3";
  EXPECT_THROW(InferenceSession::from_file(kModel, options), Error);
  options.config_entries.clear();
  options.config_entries["session.intra_op.allow_spinning"] = "yes";
  EXPECT_THROW(InferenceSession::from_file(kModel, options), Error);
  options.config_entries["session.intra_op.allow_spinning"] = "0";
  EXPECT_NO_THROW(InferenceSession::from_file(kModel, options));
}

}  // namespace
}  // namespace onyx
