// The memory pattern (SessionOptions::enable_mem_pattern, as onnxruntime
// documents it): for inputs of fixed shapes, a run records the size
// and lifetime of every host buffer its kernels allocate; the buffers are
// then laid out in one block (offsets by best fit over their lifetimes), and
// later runs with the same input shapes take one block and hand out its
// parts, instead of one allocation per buffer.
//
// The replay is checked as it goes: a request whose size differs from the
// recorded one, or whose place is still held by a buffer that lives longer
// than recorded, ends the replay for that run and from then on the run
// allocates as usual. So a pattern never makes a run wrong, only faster.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "onyx/tensor.h"

namespace onyx::session {

struct MemoryPattern {
  size_t block_bytes = 0;
  std::vector<size_t> sizes;    // per request, in order (64-byte multiples)
  std::vector<size_t> offsets;  // per request, into the block
};

// Wraps the host allocator for the first run of a shape signature and
// records what it hands out.
class MemoryRecorder final : public Allocator {
 public:
  explicit MemoryRecorder(Allocator* base) : base_(base), hold_(base->weak_from_this().lock()) {}
  void* allocate(size_t bytes) override;
  void deallocate(void* pointer, size_t bytes) override;
  Device device() const override { return base_->device(); }
  // The layout of what was recorded (requests still live count as living to
  // the end).
  std::shared_ptr<const MemoryPattern> pattern() const;

 private:
  struct Request {
    size_t bytes;
    size_t start;
    size_t end;
  };
  Allocator* base_;
  std::shared_ptr<Allocator> hold_;  // keeps a shared base (a session's arena) alive
  mutable std::mutex mutex_;
  std::vector<Request> requests_;
  std::map<void*, size_t> live_;  // pointer -> request index
  size_t tick_ = 0;
};

// Serves one run's requests from one block laid out by a pattern.
class PatternAllocator final : public Allocator {
 public:
  PatternAllocator(Allocator* base, std::shared_ptr<const MemoryPattern> pattern);
  ~PatternAllocator() override;
  void* allocate(size_t bytes) override;
  void deallocate(void* pointer, size_t bytes) override;
  Device device() const override { return base_->device(); }
  // Requests served from the block, and whether the replay stopped early.
  size_t served() const { return served_; }
  bool diverged() const { return stopped_; }

 private:
  Allocator* base_;
  std::shared_ptr<Allocator> hold_;  // keeps a shared base (a session's arena) alive
  std::shared_ptr<const MemoryPattern> pattern_;
  char* block_ = nullptr;
  std::mutex mutex_;
  size_t next_ = 0;
  size_t served_ = 0;
  bool stopped_ = false;
  std::map<size_t, size_t> live_;  // offset -> bytes, of block parts in use
};

// A session's patterns, one per input shape signature. Thread-safe.
class MemoryPatterns {
 public:
  // The allocator host kernels use for a run with `signature`: nullptr the
  // first time (and for signatures past the first kMaxSignatures, or whose
  // runs differ), a recorder the second, a pattern allocator after that
  // (shared ownership: tensors the run makes keep it alive).
  std::shared_ptr<Allocator> for_run(const std::string& signature, Allocator* base);
  // After a run: keeps what the recorder learned.
  void finish_run(const std::string& signature, const std::shared_ptr<Allocator>& used, bool succeeded);

 private:
  static constexpr size_t kMaxSignatures = 16;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const MemoryPattern>> patterns_;
  std::map<std::string, bool> recording_;
  std::map<std::string, int> seen_;
};

}  // namespace onyx::session
