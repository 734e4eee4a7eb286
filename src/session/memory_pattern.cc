// Recording, laying out and replaying memory patterns.
#include "session/memory_pattern.h"

#include <algorithm>

namespace onyx::session {
namespace {

size_t rounded(size_t bytes) { return ((bytes == 0 ? 1 : bytes) + 63) / 64 * 64; }

}  // namespace

void* MemoryRecorder::allocate(size_t bytes) {
  void* p = base_->allocate(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  live_[p] = requests_.size();
  requests_.push_back({rounded(bytes), tick_++, SIZE_MAX});
  return p;
}

void MemoryRecorder::deallocate(void* pointer, size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(pointer);
    if (it != live_.end()) {
      requests_[it->second].end = tick_++;
      live_.erase(it);
    }
  }
  base_->deallocate(pointer, bytes);
}

std::shared_ptr<const MemoryPattern> MemoryRecorder::pattern() const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto pattern = std::make_shared<MemoryPattern>();
  const size_t n = requests_.size();
  pattern->sizes.resize(n);
  pattern->offsets.resize(n);
  // Largest first, each at the lowest offset free of every placed request
  // whose lifetime overlaps its own.
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return requests_[a].bytes > requests_[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const Request& r = requests_[i];
    std::vector<std::pair<size_t, size_t>> taken;  // (offset, end) of overlapping lifetimes
    for (size_t j : placed) {
      const Request& q = requests_[j];
      if (q.start < r.end && r.start < q.end) taken.emplace_back(pattern->offsets[j], pattern->offsets[j] + q.bytes);
    }
    std::sort(taken.begin(), taken.end());
    size_t offset = 0;
    for (const auto& [begin, end] : taken) {
      if (begin >= offset + r.bytes) break;
      offset = std::max(offset, end);
    }
    pattern->sizes[i] = r.bytes;
    pattern->offsets[i] = offset;
    pattern->block_bytes = std::max(pattern->block_bytes, offset + r.bytes);
    placed.push_back(i);
  }
  return pattern;
}

PatternAllocator::PatternAllocator(Allocator* base, std::shared_ptr<const MemoryPattern> pattern)
    : base_(base), hold_(base->weak_from_this().lock()), pattern_(std::move(pattern)) {
  if (pattern_->block_bytes > 0) block_ = static_cast<char*>(base_->allocate(pattern_->block_bytes));
}

PatternAllocator::~PatternAllocator() {
  if (block_ != nullptr) base_->deallocate(block_, pattern_->block_bytes);
}

void* PatternAllocator::allocate(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const size_t i = next_++;
    if (!stopped_ && block_ != nullptr && i < pattern_->sizes.size() && pattern_->sizes[i] == rounded(bytes)) {
      const size_t offset = pattern_->offsets[i];
      const size_t end = offset + pattern_->sizes[i];
      // A part still in use where this one goes: the run differs from the
      // recorded one (a buffer lives longer); stop replaying.
      auto it = live_.lower_bound(offset);
      bool clash = it != live_.end() && it->first < end;
      if (!clash && it != live_.begin()) {
        --it;
        clash = it->first + it->second > offset;
      }
      if (!clash) {
        live_.emplace(offset, pattern_->sizes[i]);
        ++served_;
        return block_ + offset;
      }
    }
    stopped_ = true;
  }
  return base_->allocate(bytes);
}

void PatternAllocator::deallocate(void* pointer, size_t bytes) {
  char* p = static_cast<char*>(pointer);
  if (block_ != nullptr && p >= block_ && p < block_ + pattern_->block_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(static_cast<size_t>(p - block_));
    return;
  }
  base_->deallocate(pointer, bytes);
}

std::shared_ptr<Allocator> MemoryPatterns::for_run(const std::string& signature, Allocator* base) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = patterns_.find(signature);
  if (it != patterns_.end()) {
    if (!it->second) return nullptr;  // this signature's runs do not repeat
    return std::make_shared<PatternAllocator>(base, it->second);
  }
  // A signature is recorded the second time it comes, so that a workload of
  // ever new shapes keeps no per-shape state; past kMaxSignatures shapes no
  // new one is. One recording at a time per signature; other runs meanwhile
  // allocate as usual.
  auto seen = seen_.find(signature);
  if (seen == seen_.end()) {
    if (seen_.size() < kMaxSignatures) seen_.emplace(signature, 1);
    return nullptr;
  }
  if (recording_[signature]) return nullptr;
  recording_[signature] = true;
  return std::make_shared<MemoryRecorder>(base);
}

void MemoryPatterns::finish_run(const std::string& signature, const std::shared_ptr<Allocator>& used,
                                bool succeeded) {
  if (!used) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto* recorder = dynamic_cast<MemoryRecorder*>(used.get())) {
    recording_[signature] = false;
    if (succeeded) patterns_[signature] = recorder->pattern();
    return;
  }
  // A replay that had to stop: this signature's runs differ (data-dependent
  // sizes or control flow), so it allocates as usual from now on.
  if (auto* replay = dynamic_cast<PatternAllocator*>(used.get()); replay != nullptr && replay->diverged()) {
    patterns_[signature] = nullptr;
  }
}

}  // namespace onyx::session
