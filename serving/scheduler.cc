#include "scheduler.h"

#include <cstring>

namespace onyx::serving {
namespace {

uint64_t nanoseconds_between(Clock::time_point a, Clock::time_point b) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

// The requests' tensors for one input, joined along the first dimension.
Tensor concatenate(const std::vector<std::unique_ptr<InferRequest>>& batch, size_t input, int64_t rows) {
  const Tensor& first = batch[0]->feeds[input].second.tensor();
  Shape shape = first.shape();
  shape[0] = rows;
  Tensor joined(first.dtype(), shape);
  if (first.dtype() == DataType::kString) {
    std::string* out = joined.data<std::string>();
    for (const auto& request : batch) {
      const Tensor& part = request->feeds[input].second.tensor();
      for (int64_t i = 0; i < part.size(); ++i) *out++ = part.data<std::string>()[i];
    }
    return joined;
  }
  char* out = static_cast<char*>(joined.raw_data());
  for (const auto& request : batch) {
    const Tensor& part = request->feeds[input].second.tensor();
    std::memcpy(out, part.raw_data(), part.bytes());
    out += part.bytes();
  }
  return joined;
}

// Rows [begin, begin + count) of `whole`, sharing its memory.
Tensor rows_of(const std::shared_ptr<Tensor>& whole, int64_t begin, int64_t count) {
  Shape shape = whole->shape();
  const int64_t row_elements = shape[0] == 0 ? 0 : whole->size() / shape[0];
  shape[0] = count;
  char* data =
      static_cast<char*>(whole->raw_data()) + static_cast<size_t>(begin * row_elements) * dtype_size(whole->dtype());
  return Tensor::borrow(whole->dtype(), shape, data, whole->device(), whole);
}

}  // namespace

Scheduler::Scheduler(std::shared_ptr<const InferenceSession> session, SchedulerOptions options, Statistics* statistics)
    : session_(std::move(session)), options_(options), statistics_(statistics) {
  for (int64_t i = 0; i < std::max<int64_t>(1, options_.instance_count); ++i) threads_.emplace_back([this] { work(); });
}

Scheduler::~Scheduler() { stop(); }

std::future<std::vector<Value>> Scheduler::submit(std::unique_ptr<InferRequest> request) {
  std::future<std::vector<Value>> result = request->result.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw ServeError(503, "the model is being unloaded");
    if (queue_.size() >= options_.max_queue_size) {
      throw ServeError(503, "the model's queue is full (" + std::to_string(options_.max_queue_size) +
                                " requests waiting; max_queue_size in its config.pbtxt); retry later");
    }
    queue_.push_back(std::move(request));
  }
  changed_.notify_all();
  return result;
}

void Scheduler::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

size_t Scheduler::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.size();
}

std::vector<std::unique_ptr<InferRequest>> Scheduler::take(std::unique_lock<std::mutex>& lock) {
  std::vector<std::unique_ptr<InferRequest>> batch;
  const bool batching = options_.dynamic_batching && options_.max_batch_size > 0;
  if (batching) {
    // One thread at a time forms a batch; the others wait for the next.
    forming_ = true;
    const int64_t target = options_.preferred_batch_size > 0 ? options_.preferred_batch_size : options_.max_batch_size;
    const Clock::time_point deadline = queue_.front()->arrival + options_.max_queue_delay;
    while (true) {
      int64_t rows = 0;
      const std::string& key = queue_.front()->batch_key;
      for (const auto& r : queue_) {
        if (r->batch_key == key && rows + r->batch <= options_.max_batch_size) rows += r->batch;
      }
      if (rows >= target || stopping_ || Clock::now() >= deadline) break;
      changed_.wait_until(lock, deadline);
    }
    forming_ = false;
  }
  // The head, then (batching) every queued request that fits with it, in order.
  batch.push_back(std::move(queue_.front()));
  queue_.pop_front();
  if (batching) {
    int64_t rows = batch[0]->batch;
    for (auto it = queue_.begin(); it != queue_.end() && rows < options_.max_batch_size;) {
      if ((*it)->batch_key == batch[0]->batch_key && rows + (*it)->batch <= options_.max_batch_size) {
        rows += (*it)->batch;
        batch.push_back(std::move(*it));
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return batch;
}

void Scheduler::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return (!queue_.empty() && !forming_) || (stopping_ && queue_.empty()); });
    if (queue_.empty()) return;  // stopping, and nothing left
    std::vector<std::unique_ptr<InferRequest>> batch = take(lock);
    lock.unlock();
    changed_.notify_all();  // another thread may form the next batch now
    execute(batch);
    lock.lock();
  }
}

void Scheduler::execute(std::vector<std::unique_ptr<InferRequest>>& batch) {
  const Clock::time_point start = Clock::now();
  for (const auto& r : batch) statistics_->record_queue(nanoseconds_between(r->arrival, start));
  try {
    InferRequest& head = *batch[0];
    if (batch.size() == 1) {
      std::vector<Value> outputs = session_->run(head.output_names, head.feeds);
      statistics_->record_execution(std::max<int64_t>(1, head.batch), 1, nanoseconds_between(start, Clock::now()));
      head.result.set_value(std::move(outputs));
      return;
    }
    int64_t rows = 0;
    for (const auto& r : batch) rows += r->batch;
    Feeds feeds;
    for (size_t i = 0; i < head.feeds.size(); ++i) feeds.emplace_back(head.feeds[i].first, concatenate(batch, i, rows));
    std::vector<Value> outputs = session_->run(head.output_names, feeds);
    statistics_->record_execution(rows, batch.size(), nanoseconds_between(start, Clock::now()));
    std::vector<std::shared_ptr<Tensor>> whole;
    for (size_t o = 0; o < outputs.size(); ++o) {
      const Tensor& t = outputs[o].tensor();
      if (!outputs[o].is_tensor() || t.rank() == 0 || t.dim(0) != rows) {
        throw ServeError(500, "output '" + head.output_names[o] + "' of a batch of " + std::to_string(rows) +
                                  " rows is " + outputs[o].describe() +
                                  ": its first dimension is not the batch; set max_batch_size: 0 in the model's "
                                  "config.pbtxt");
      }
      whole.push_back(std::make_shared<Tensor>(t));
    }
    int64_t begin = 0;
    for (auto& r : batch) {
      std::vector<Value> mine;
      for (const auto& w : whole) mine.emplace_back(rows_of(w, begin, r->batch));
      begin += r->batch;
      r->result.set_value(std::move(mine));
    }
  } catch (...) {
    const std::exception_ptr error = std::current_exception();
    for (auto& r : batch) {
      try {
        r->result.set_exception(error);
      } catch (const std::future_error&) {
        // already answered
      }
    }
  }
}

}  // namespace onyx::serving
