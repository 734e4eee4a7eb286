// What a served model has done: counts and times for the protocol's
// statistics extension (GET /v2/models/NAME/stats) and for Prometheus
// (GET /metrics).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace onyx::serving {

// Counts observations at or below each bound (Prometheus buckets; the last,
// +Inf, is the total count).
template <size_t N>
struct Histogram {
  std::array<double, N> bounds;
  std::array<uint64_t, N> counts{};
  uint64_t total = 0;
  double sum = 0;

  void observe(double value) {
    for (size_t i = 0; i < N; ++i) {
      if (value <= bounds[i]) ++counts[i];
    }
    ++total;
    sum += value;
  }
};

struct Duration {
  uint64_t count = 0;
  uint64_t ns = 0;
  void add(uint64_t nanoseconds) {
    ++count;
    ns += nanoseconds;
  }
};

class Statistics {
 public:
  struct Snapshot {
    Duration success;  // whole requests that succeeded, arrival to response
    Duration fail;
    Duration queue;                       // arrival to the start of the run that served it
    Duration compute;                     // the runs, once per request
    uint64_t inference_count = 0;         // rows (batch entries) served
    uint64_t execution_count = 0;         // session runs
    int64_t last_inference_ms = 0;        // since the epoch
    std::map<int64_t, Duration> batches;  // run batch size -> runs, compute time
    Histogram<14> request_seconds{{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}};
    Histogram<14> queue_seconds{{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}};
    Histogram<9> batch_sizes{{1, 2, 4, 8, 16, 32, 64, 128, 256}};
  };

  void record_request(bool ok, uint64_t ns) {
    std::lock_guard<std::mutex> lock(mutex_);
    (ok ? data_.success : data_.fail).add(ns);
    data_.request_seconds.observe(static_cast<double>(ns) * 1e-9);
    data_.last_inference_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
  }
  // One run of `requests` requests with `rows` rows together.
  void record_execution(int64_t rows, size_t requests, uint64_t compute_ns) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++data_.execution_count;
    data_.inference_count += static_cast<uint64_t>(rows);
    for (size_t i = 0; i < requests; ++i) data_.compute.add(compute_ns);
    data_.batches[rows].add(compute_ns);
    data_.batch_sizes.observe(static_cast<double>(rows));
  }
  void record_queue(uint64_t ns) {
    std::lock_guard<std::mutex> lock(mutex_);
    data_.queue.add(ns);
    data_.queue_seconds.observe(static_cast<double>(ns) * 1e-9);
  }
  Snapshot snapshot() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return data_;
  }

 private:
  mutable std::mutex mutex_;
  Snapshot data_;
};

}  // namespace onyx::serving
