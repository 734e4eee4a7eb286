// ArenaAllocator: regions from a backing allocator, cut into chunks kept in
// power-of-two size-class bins; and parse_arena_config for onnxruntime's keys.
#include "tensor/arena.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <new>
#include <system_error>
#include <type_traits>

#if defined(__SANITIZE_ADDRESS__)
#define ONYX_ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ONYX_ARENA_ASAN 1
#endif
#endif
#if defined(ONYX_ARENA_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace onyx {

namespace {

constexpr size_t kAlignment = 64;  // every chunk starts and ends on this, as cpu_allocator's blocks do
// Rounding a request up to kAlignment must not wrap around.
constexpr size_t kLargestRequest = std::numeric_limits<size_t>::max() - kAlignment;

size_t round_up(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// The chunk a request needs: a zero-byte request still gets a chunk of its
// own, so that its pointer is unique.
size_t chunk_bytes_for(size_t bytes) { return std::max(kAlignment, round_up(bytes)); }

size_t saturating_double(size_t bytes) {
  return bytes > std::numeric_limits<size_t>::max() / 2 ? std::numeric_limits<size_t>::max() : bytes * 2;
}

// Bin i holds free chunks of [64 << i, 128 << i) bytes.
int bin_index(size_t bytes) { return static_cast<int>(std::bit_width(bytes / kAlignment)) - 1; }

void poison(bool enabled, uintptr_t address, size_t bytes) {
#if defined(ONYX_ARENA_ASAN)
  if (enabled) __asan_poison_memory_region(reinterpret_cast<void*>(address), bytes);
#endif
}

void unpoison(bool enabled, uintptr_t address, size_t bytes) {
#if defined(ONYX_ARENA_ASAN)
  if (enabled) __asan_unpoison_memory_region(reinterpret_cast<void*>(address), bytes);
#endif
}

size_t required_size(const char* name, size_t value) {
  if (value == 0) throw Error(invalid_argument("ArenaAllocator: ", name, " must be at least 1 byte"));
  return value;
}

}  // namespace

// Memory of one region, as the backing allocator gave it.
struct ArenaAllocator::Region {
  void* raw;         // what to hand back
  size_t raw_bytes;  // what was asked for
  uintptr_t base;    // 64-byte aligned start of the chunks
  size_t bytes;      // the chunks' total
  Chunk* first;      // the chunk at base; chunks link to their neighbours in address order
};

// A piece of a region, in use or free. The record lives outside the memory it
// describes, so the backing allocator may hand out device memory.
struct ArenaAllocator::Chunk {
  uintptr_t address;
  size_t size;       // a multiple of 64
  size_t requested;  // the bytes of the allocate call it serves, while in use
  Chunk* prev;       // neighbours in the same region, or null at its ends
  Chunk* next;
  Region* region;
  bool in_use;
};

bool ArenaAllocator::BySizeThenAddress::operator()(const Chunk* a, const Chunk* b) const {
  return a->size != b->size ? a->size < b->size : a->address < b->address;
}
bool ArenaAllocator::BySizeThenAddress::operator()(const Chunk* a, const Key& b) const {
  return a->size != b.size ? a->size < b.size : a->address < b.address;
}
bool ArenaAllocator::BySizeThenAddress::operator()(const Key& a, const Chunk* b) const {
  return a.size != b->size ? a.size < b->size : a.address < b->address;
}

ArenaAllocator::ArenaAllocator(Allocator* backing, ArenaConfig config)
    : backing_(backing),
      config_(config),
      // Shadow memory covers host addresses only: device memory is not poisoned.
      poison_(backing != nullptr && backing->device().is_cpu()) {
  if (backing_ == nullptr) throw Error(invalid_argument("ArenaAllocator: the backing allocator is null"));
  required_size("initial_chunk_size_bytes", config_.initial_chunk_size_bytes);
  required_size("initial_growth_chunk_size_bytes", config_.initial_growth_chunk_size_bytes);
  required_size("max_power_of_two_extend_bytes", config_.max_power_of_two_extend_bytes);
  if (config_.arena_extend_strategy != ArenaExtendStrategy::kNextPowerOfTwo &&
      config_.arena_extend_strategy != ArenaExtendStrategy::kSameAsRequested) {
    throw Error(invalid_argument("ArenaAllocator: unknown arena_extend_strategy ",
                                 static_cast<int>(config_.arena_extend_strategy)));
  }
  due_region_bytes_ = chunk_bytes_for(config_.initial_chunk_size_bytes);
  bins_.reserve(kBins);
  for (int i = 0; i < kBins; ++i) bins_.emplace_back(BySizeThenAddress(), PoolAllocator<Chunk*>(&nodes_));
}

ArenaAllocator::~ArenaAllocator() {
  // Live chunks are the caller's leak; their memory goes back all the same.
  for (auto& region : regions_) {
    unpoison(poison_, region->base, region->bytes);
    backing_->deallocate(region->raw, region->raw_bytes);
  }
  for (auto& [pointer, block] : bypassed_) backing_->deallocate(block.raw, block.raw_bytes);
}

void* ArenaAllocator::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (config_.bypass_bytes != 0 && bytes >= config_.bypass_bytes) return allocate_bypass(bytes);
  if (bytes > kLargestRequest) throw Error(runtime_error("arena: cannot allocate ", bytes, " bytes: too large"));
  const size_t rounded = chunk_bytes_for(bytes);
  Chunk* chunk = find_free_chunk(rounded);
  if (chunk == nullptr) chunk = extend(rounded);
  return use_chunk(chunk, rounded, bytes);
}

void ArenaAllocator::deallocate(void* pointer, size_t bytes) {
  if (pointer == nullptr) return;
  Bypassed block{};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = in_use_.find(pointer); it != in_use_.end()) {
      Chunk* chunk = it->second;
      assert(bytes == chunk->requested && "deallocate's size differs from allocate's");
      in_use_.erase(it);
      release_chunk(chunk);
      return;
    }
    auto it = bypassed_.find(pointer);
    if (it == bypassed_.end()) {
      // Freeing twice or freeing another allocator's memory corrupts whatever
      // reuses it next: stop here, where the cause is still on the stack.
      std::fprintf(stderr,
                   "onyx ArenaAllocator: deallocate(%p, %zu) of memory that is not a live allocation of this arena\n",
                   pointer, bytes);
      std::abort();
    }
    block = it->second;
    bypassed_.erase(it);
    stats_.in_use_bytes -= block.bytes;
    stats_.bypassed_in_use_bytes -= block.bytes;
  }
  // Unmapping a large block takes a while: others need not wait for it. It
  // counts against max_mem until it is gone.
  backing_->deallocate(block.raw, block.raw_bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  bypassed_raw_bytes_ -= block.raw_bytes;
}

void ArenaAllocator::shrink() {
  std::lock_guard<std::mutex> lock(mutex_);
  shrink_locked();
}

ArenaStats ArenaAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  ArenaStats stats = stats_;
  stats.regions = regions_.size();
  if (nonempty_bins_ != 0) {
    const int top = 63 - std::countl_zero(nonempty_bins_);
    stats.largest_free_chunk_bytes = (*bins_[top].rbegin())->size;
  }
  return stats;
}

ArenaAllocator::Chunk* ArenaAllocator::find_free_chunk(size_t rounded) {
  // Every chunk of a higher bin is larger than any of this one, so the first
  // fit here, or else the smallest chunk of the next non-empty bin, is the
  // best fit overall.
  const int index = bin_index(rounded);
  const Bin& bin = bins_[index];
  if (auto it = bin.lower_bound(BySizeThenAddress::Key{rounded, 0}); it != bin.end()) return *it;
  const uint64_t higher = index + 1 < kBins ? nonempty_bins_ & (~uint64_t{0} << (index + 1)) : 0;
  if (higher == 0) return nullptr;
  return *bins_[std::countr_zero(higher)].begin();
}

size_t ArenaAllocator::next_region_bytes(size_t rounded) const {
  if (config_.arena_extend_strategy == ArenaExtendStrategy::kSameAsRequested) return rounded;
  const size_t cap = chunk_bytes_for(config_.max_power_of_two_extend_bytes);
  size_t bytes = due_region_bytes_;
  while (bytes < rounded && bytes < cap) bytes = std::min(saturating_double(bytes), cap);
  return std::max(bytes, rounded);  // past the cap a region is the request's own size
}

size_t ArenaAllocator::available_bytes() const {
  if (config_.max_mem == 0) return std::numeric_limits<size_t>::max();
  const size_t used = stats_.reserved_bytes + bypassed_raw_bytes_;
  return used >= config_.max_mem ? 0 : config_.max_mem - used;
}

void ArenaAllocator::throw_over_limit(size_t bytes) const {
  throw Error(runtime_error("arena: cannot allocate ", bytes,
                            " bytes: it would pass the arena's memory limit max_mem = ", config_.max_mem, " bytes (",
                            stats_.reserved_bytes + bypassed_raw_bytes_, " bytes held, ", stats_.in_use_bytes,
                            " of them in use)"));
}

ArenaAllocator::RawBlock ArenaAllocator::backing_allocate(size_t bytes, size_t need) {
  RawBlock block{backing_->allocate(bytes), bytes, 0, 0};
  const auto start = reinterpret_cast<uintptr_t>(block.raw);
  block.base = round_up(start);
  block.bytes = (start + bytes) / kAlignment * kAlignment - block.base;
  if (block.base + need <= start + bytes) return block;
  // A backing allocator with a smaller alignment: ask again with room to
  // align the start (rare; onyx's allocators align to 64 bytes or more).
  backing_->deallocate(block.raw, bytes);
  block.raw_bytes = bytes + kAlignment;
  block.raw = backing_->allocate(block.raw_bytes);
  block.base = round_up(reinterpret_cast<uintptr_t>(block.raw));
  block.bytes = bytes;
  return block;
}

ArenaAllocator::RawBlock ArenaAllocator::obtain(size_t bytes, size_t need) {
  if (need > available_bytes()) {
    // Empty regions count against max_mem too: hand them back to make room.
    shrink_locked();
    if (need > available_bytes()) throw_over_limit(need);
  }
  // Under the limit a region may come out smaller than due, never unaligned.
  bytes = std::max(need, std::min(bytes, available_bytes()) / kAlignment * kAlignment);
  RawBlock block{};
  try {
    block = backing_allocate(bytes, need);
  } catch (const std::exception&) {
    // The backing allocator may lack exactly what empty regions hold: return
    // them and try once more, for no more than is needed.
    const size_t regions_before = regions_.size();
    shrink_locked();
    try {
      block = backing_allocate(need, need);
    } catch (const std::exception& second) {
      throw Error(runtime_error("arena: cannot allocate ", need, " bytes: the backing allocator failed (",
                                second.what(), ") after the arena handed back its ", regions_before - regions_.size(),
                                " empty region(s)"));
    }
  }
  if (block.raw_bytes > available_bytes()) {  // only when alignment padding pushed it over
    backing_->deallocate(block.raw, block.raw_bytes);
    throw_over_limit(need);
  }
  return block;
}

ArenaAllocator::Chunk* ArenaAllocator::extend(size_t rounded) {
  const RawBlock block = obtain(next_region_bytes(rounded), rounded);
  auto region = std::make_unique<Region>(Region{block.raw, block.raw_bytes, block.base, block.bytes, nullptr});
  Chunk* chunk = new_chunk();
  *chunk = Chunk{block.base, block.bytes, 0, nullptr, nullptr, region.get(), false};
  region->first = chunk;
  regions_.push_back(std::move(region));
  stats_.reserved_bytes += block.raw_bytes;
  poison(poison_, block.base, block.bytes);
  insert_free(chunk);

  if (config_.arena_extend_strategy == ArenaExtendStrategy::kNextPowerOfTwo) {
    ++regions_created_;
    due_region_bytes_ = regions_created_ == 1 ? chunk_bytes_for(config_.initial_growth_chunk_size_bytes)
                                              : std::min(saturating_double(std::max(block.bytes, due_region_bytes_)),
                                                         chunk_bytes_for(config_.max_power_of_two_extend_bytes));
  }
  return chunk;
}

void* ArenaAllocator::use_chunk(Chunk* chunk, size_t rounded, size_t requested) {
  void* pointer = reinterpret_cast<void*>(chunk->address);
  in_use_.emplace(pointer, chunk);
  erase_free(chunk);
  const size_t remainder = chunk->size - rounded;
  if (remainder >= rounded || remainder > config_.max_dead_bytes_per_chunk) {
    Chunk* rest = new_chunk();
    *rest = Chunk{chunk->address + rounded, remainder, 0, chunk, chunk->next, chunk->region, false};
    if (chunk->next != nullptr) chunk->next->prev = rest;
    chunk->next = rest;
    chunk->size = rounded;
    insert_free(rest);
  }
  chunk->in_use = true;
  chunk->requested = requested;
  stats_.in_use_bytes += chunk->size;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  ++stats_.allocations;
  // The request rounded up to 64 bytes is addressable, as with cpu_allocator:
  // SIMD kernels may read a whole vector at a buffer's tail.
  unpoison(poison_, chunk->address, round_up(requested));
  return pointer;
}

void ArenaAllocator::release_chunk(Chunk* chunk) {
  stats_.in_use_bytes -= chunk->size;
  chunk->in_use = false;
  poison(poison_, chunk->address, chunk->size);
  // Free neighbours are never left side by side: merging with both keeps
  // every run of free memory one chunk.
  if (Chunk* next = chunk->next; next != nullptr && !next->in_use) {
    erase_free(next);
    chunk->size += next->size;
    chunk->next = next->next;
    if (chunk->next != nullptr) chunk->next->prev = chunk;
    recycle(next);
  }
  if (Chunk* prev = chunk->prev; prev != nullptr && !prev->in_use) {
    erase_free(prev);
    prev->size += chunk->size;
    prev->next = chunk->next;
    if (prev->next != nullptr) prev->next->prev = prev;
    recycle(chunk);
    chunk = prev;
  }
  insert_free(chunk);
}

void* ArenaAllocator::allocate_bypass(size_t bytes) {
  const RawBlock block = obtain(bytes, bytes);
  void* pointer = reinterpret_cast<void*>(block.base);
  bypassed_.emplace(pointer, Bypassed{block.raw, block.raw_bytes, bytes});
  bypassed_raw_bytes_ += block.raw_bytes;
  stats_.bypassed_in_use_bytes += bytes;
  stats_.in_use_bytes += bytes;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  ++stats_.allocations;
  ++stats_.bypassed;
  return pointer;
}

void ArenaAllocator::shrink_locked() {
  auto empty = [](const std::unique_ptr<Region>& region) {
    return !region->first->in_use && region->first->next == nullptr;
  };
  for (auto& region : regions_) {
    if (!empty(region)) continue;
    erase_free(region->first);
    recycle(region->first);
    region->first = nullptr;
    stats_.reserved_bytes -= region->raw_bytes;
    unpoison(poison_, region->base, region->bytes);
    backing_->deallocate(region->raw, region->raw_bytes);
  }
  std::erase_if(regions_, [](const std::unique_ptr<Region>& region) { return region->first == nullptr; });
}

void ArenaAllocator::insert_free(Chunk* chunk) {
  const int index = bin_index(chunk->size);
  bins_[index].insert(chunk);
  nonempty_bins_ |= uint64_t{1} << index;
  ++stats_.free_chunks;
}

void ArenaAllocator::erase_free(Chunk* chunk) {
  const int index = bin_index(chunk->size);
  bins_[index].erase(chunk);
  if (bins_[index].empty()) nonempty_bins_ &= ~(uint64_t{1} << index);
  --stats_.free_chunks;
}

ArenaAllocator::Chunk* ArenaAllocator::new_chunk() {
  static_assert(sizeof(Chunk) <= NodePool::kNodeBytes && std::is_trivially_destructible_v<Chunk>);
  return new (nodes_.take()) Chunk{};
}

void ArenaAllocator::recycle(Chunk* chunk) { nodes_.give(chunk); }  // Chunk is trivially destructible

void* ArenaAllocator::NodePool::take() {
  if (free_ == nullptr) {
    // Slabs of 256 nodes: one heap call per 256 records, none once warm.
    constexpr size_t kNodesPerSlab = 256;
    slabs_.push_back(std::make_unique<std::byte[]>(kNodeBytes * kNodesPerSlab));
    for (size_t i = kNodesPerSlab; i-- > 0;) give(slabs_.back().get() + i * kNodeBytes);
  }
  FreeNode* node = free_;
  free_ = node->next;
  return node;
}

void ArenaAllocator::NodePool::give(void* node) { free_ = new (node) FreeNode{free_}; }

Result<ArenaConfig> parse_arena_config(const std::map<std::string, std::string>& entries) {
  static constexpr const char* kKeys =
      "max_mem, arena_extend_strategy, initial_chunk_size_bytes, max_dead_bytes_per_chunk, "
      "initial_growth_chunk_size_bytes, max_power_of_two_extend_bytes";
  ArenaConfig config;
  for (const auto& [key, text] : entries) {
    size_t* field = nullptr;
    bool positive = true;  // a region or growth size of 0 bytes means nothing
    if (key == "max_mem") {
      field = &config.max_mem;
      positive = false;  // 0: no limit
    } else if (key == "max_dead_bytes_per_chunk") {
      field = &config.max_dead_bytes_per_chunk;
      positive = false;  // 0: split off every remainder
    } else if (key == "initial_chunk_size_bytes") {
      field = &config.initial_chunk_size_bytes;
    } else if (key == "initial_growth_chunk_size_bytes") {
      field = &config.initial_growth_chunk_size_bytes;
    } else if (key == "max_power_of_two_extend_bytes") {
      field = &config.max_power_of_two_extend_bytes;
    } else if (key != "arena_extend_strategy") {
      return invalid_argument("arena config: unknown key '", key, "' (the keys are ", kKeys, ")");
    }
    if (text == "-1") continue;  // onnxruntime's "use the default"
    unsigned long long value = 0;
    const char* end = text.data() + text.size();
    const auto [stop, error] = std::from_chars(text.data(), end, value);
    if (error == std::errc::result_out_of_range || (error == std::errc() && stop == end && value > SIZE_MAX)) {
      return invalid_argument("arena config: ", key, " = '", text, "' is out of range");
    }
    if (error != std::errc() || stop != end || text.empty()) {
      return invalid_argument("arena config: ", key, " = '", text,
                              "' is not a non-negative decimal integer (or -1 for the default)");
    }
    if (field == nullptr) {
      if (value > 1) {
        return invalid_argument("arena config: arena_extend_strategy = '", text,
                                "' is not 0 (kNextPowerOfTwo), 1 (kSameAsRequested) or -1 (the default)");
      }
      config.arena_extend_strategy = static_cast<ArenaExtendStrategy>(value);
      continue;
    }
    if (positive && value == 0) return invalid_argument("arena config: ", key, " = '", text, "' must be at least 1");
    *field = static_cast<size_t>(value);
  }
  return config;
}

}  // namespace onyx
