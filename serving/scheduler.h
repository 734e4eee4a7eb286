// Runs a served model's requests: a bounded queue, `instance_count` threads
// that run the one session concurrently, and dynamic batching, which joins
// queued requests of the same shape into one run along the batch dimension
// and splits the outputs back.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model_config.h"
#include "onyx/session.h"
#include "statistics.h"

namespace onyx::serving {

using Clock = std::chrono::steady_clock;

struct InferRequest {
  Feeds feeds;                            // in the model's input order
  std::vector<std::string> output_names;  // never empty
  int64_t batch = 0;                      // rows along the first dimension; 0 when not batched
  // Requests with the same key can share a run: inputs' types and shapes
  // past the batch dimension, and the outputs asked for.
  std::string batch_key;
  Clock::time_point arrival = Clock::now();
  std::promise<std::vector<Value>> result;
};

struct SchedulerOptions {
  int64_t max_batch_size = 0;  // 0: each request runs alone
  bool dynamic_batching = false;
  std::chrono::microseconds max_queue_delay{0};
  int64_t preferred_batch_size = 0;  // largest preferred size; 0: none
  size_t max_queue_size = 1024;
  int64_t instance_count = 1;
};

class Scheduler {
 public:
  Scheduler(std::shared_ptr<const InferenceSession> session, SchedulerOptions options, Statistics* statistics);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues the request; its future gives the outputs or throws what the run
  // threw. Throws ServeError(503) when the queue is full or the model is
  // being unloaded.
  std::future<std::vector<Value>> submit(std::unique_ptr<InferRequest> request);
  // Refuses new requests, finishes the queued ones and joins the threads.
  void stop();
  size_t queued() const;

 private:
  void work();
  // Takes the next run's requests: the head of the queue and, with dynamic
  // batching, the queued requests that fit with it (waiting up to the queue
  // delay for more). Called with the lock held.
  std::vector<std::unique_ptr<InferRequest>> take(std::unique_lock<std::mutex>& lock);
  void execute(std::vector<std::unique_ptr<InferRequest>>& batch);

  std::shared_ptr<const InferenceSession> session_;
  SchedulerOptions options_;
  Statistics* statistics_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<InferRequest>> queue_;
  bool stopping_ = false;
  bool forming_ = false;  // a thread is waiting for a batch to fill
  std::vector<std::thread> threads_;
};

}  // namespace onyx::serving
