// Streams and events: the order in which a provider's work runs on its
// device, and how one stream waits for another. A kernel provider's stream
// runs its kernels and copies in order; where a value made on one stream is
// read on another, the executor records an event after the producer and the
// reader's stream waits for it before the reader runs. The CPU provider's
// stream is synchronous: its events are complete when recorded.
#pragma once

#include <memory>

#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx {

// A point in a stream's work. Complete once everything queued on that stream
// before it was recorded has finished.
class Event {
 public:
  virtual ~Event() = default;
  // Blocks the calling (host) thread until the event completes.
  virtual Status wait_on_host() const = 0;
};

class Stream {
 public:
  virtual ~Stream() = default;
  virtual Device device() const = 0;
  // An event after everything queued so far.
  virtual std::shared_ptr<Event> record_event() = 0;
  // Work queued on this stream from now on starts after `event` completes.
  virtual Status wait_for(const Event& event) = 0;
  // Blocks the host until all queued work has finished.
  virtual Status synchronize() = 0;
};

// The stream of a provider whose work runs on the calling thread: every
// event is complete when recorded, so waiting costs nothing.
class SynchronousStream final : public Stream {
 public:
  explicit SynchronousStream(Device device = {}) : device_(device) {}
  Device device() const override { return device_; }
  std::shared_ptr<Event> record_event() override;
  Status wait_for(const Event&) override { return Status::ok(); }
  Status synchronize() override { return Status::ok(); }

 private:
  Device device_;
};

}  // namespace onyx
