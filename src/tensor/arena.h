// A memory arena over any Allocator, in the manner of onnxruntime's BFC arena:
// regions are taken from the backing allocator, cut into chunks and reused,
// so that a run's buffers need no call to the backing allocator once warm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx {

// onnxruntime's arena_extend_strategy values.
enum class ArenaExtendStrategy { kNextPowerOfTwo = 0, kSameAsRequested = 1 };

// onnxruntime's OrtArenaCfg keys (plus bypass_bytes, onyx's own).
struct ArenaConfig {
  // 0: no limit. Regions and bypassed blocks together never exceed it; a
  // request that would throws onyx::Error naming the limit.
  size_t max_mem = 0;
  ArenaExtendStrategy arena_extend_strategy = ArenaExtendStrategy::kNextPowerOfTwo;
  // kNextPowerOfTwo: the first region is initial_chunk_size_bytes, the second
  // initial_growth_chunk_size_bytes, and each later one twice the one before,
  // up to max_power_of_two_extend_bytes. A request bigger than the region due
  // doubles it until it fits (past the cap: the region is the request's size).
  // kSameAsRequested: every region is the rounded request; these are unused.
  size_t initial_chunk_size_bytes = 1 << 20;
  size_t initial_growth_chunk_size_bytes = 2 << 20;
  // A free chunk is split when its remainder after a request is at least the
  // request itself, or larger than this (bounds the bytes a chunk may waste).
  size_t max_dead_bytes_per_chunk = 128 << 20;
  size_t max_power_of_two_extend_bytes = 1 << 30;
  // Requests of this many bytes and more go straight to the backing allocator
  // (cpu_allocator() maps them on their own already); 0: none do.
  size_t bypass_bytes = 64 << 20;
};

// Parses onnxruntime's arena config keys ("max_mem", "arena_extend_strategy",
// "initial_chunk_size_bytes", "max_dead_bytes_per_chunk",
// "initial_growth_chunk_size_bytes", "max_power_of_two_extend_bytes") from
// decimal strings; "-1" keeps a key's default, as in onnxruntime. An unknown
// key, or a value that is not a count in range, is an error naming both.
Result<ArenaConfig> parse_arena_config(const std::map<std::string, std::string>& entries);

struct ArenaStats {
  size_t in_use_bytes = 0;              // chunks handed out (their rounded sizes) plus bypassed blocks
  size_t reserved_bytes = 0;            // regions held from the backing allocator
  size_t peak_in_use_bytes = 0;         // the most in_use_bytes has been
  size_t allocations = 0;               // allocate calls served so far, bypassed ones included
  size_t regions = 0;                   // regions held now
  size_t bypassed = 0;                  // allocate calls sent to the backing allocator so far
  size_t bypassed_in_use_bytes = 0;     // bytes of bypassed blocks not yet freed
  size_t free_chunks = 0;               // free chunks in all regions (one per empty region)
  size_t largest_free_chunk_bytes = 0;  // the biggest request served without a new region
};

// Best fit from power-of-two size-class bins of free chunks; chunks are split
// on allocation and coalesced with their free neighbours on deallocation.
// Every pointer is 64-byte aligned (onyx's SIMD kernels need it), a zero-byte
// request gets a unique pointer, and allocate/deallocate are O(log chunks)
// under one mutex. Chunk bookkeeping lives outside the memory it describes,
// so the backing allocator may hand out device memory. Under AddressSanitizer
// free chunks of host memory are poisoned, so reading one is reported.
class ArenaAllocator final : public Allocator {
 public:
  // `backing` must outlive the arena. Throws onyx::Error on a null backing
  // allocator or a zero chunk size.
  explicit ArenaAllocator(Allocator* backing, ArenaConfig config = {});
  ~ArenaAllocator() override;  // returns every region (and bypassed block) to the backing allocator
  ArenaAllocator(const ArenaAllocator&) = delete;
  ArenaAllocator& operator=(const ArenaAllocator&) = delete;

  // Throws onyx::Error past max_mem, or when the backing allocator fails even
  // after the arena has handed its empty regions back.
  void* allocate(size_t bytes) override;
  void deallocate(void* pointer, size_t bytes) override;
  Device device() const override { return backing_->device(); }

  // Hands every region with no live chunk back to the backing allocator.
  void shrink();
  ArenaStats stats() const;
  const ArenaConfig& config() const { return config_; }

 private:
  struct Region;
  struct Chunk;
  // Orders a bin by size, then address: its first chunk of at least n bytes is
  // the best fit, lowest address first.
  struct BySizeThenAddress {
    using is_transparent = void;
    struct Key {
      size_t size;
      uintptr_t address;
    };
    bool operator()(const Chunk* a, const Chunk* b) const;
    bool operator()(const Chunk* a, const Key& b) const;
    bool operator()(const Key& a, const Chunk* b) const;
  };

  // Chunk records and the nodes of the bins and of in_use_ come and go with
  // every allocation: recycled here (under mutex_), they cost no call to
  // malloc once the arena is warm.
  class NodePool {
   public:
    static constexpr size_t kNodeBytes = 64;  // fits a Chunk, a tree node and a hash node
    NodePool() = default;
    NodePool(const NodePool&) = delete;
    NodePool& operator=(const NodePool&) = delete;
    void* take();
    void give(void* node);

   private:
    struct FreeNode {
      FreeNode* next;
    };
    FreeNode* free_ = nullptr;
    std::vector<std::unique_ptr<std::byte[]>> slabs_;
  };
  // Single nodes from a NodePool; anything else (hash buckets) from the heap.
  template <typename T>
  struct PoolAllocator {
    using value_type = T;
    static constexpr bool kPooled = sizeof(T) <= NodePool::kNodeBytes && alignof(T) <= alignof(std::max_align_t);
    explicit PoolAllocator(NodePool* nodes) : pool(nodes) {}
    template <typename U>
    PoolAllocator(const PoolAllocator<U>& other) : pool(other.pool) {}  // NOLINT: rebinding is implicit
    T* allocate(size_t n) {
      return kPooled && n == 1 ? static_cast<T*>(pool->take()) : std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, size_t n) {
      if (kPooled && n == 1) {
        pool->give(p);
      } else {
        std::allocator<T>().deallocate(p, n);
      }
    }
    template <typename U>
    bool operator==(const PoolAllocator<U>& other) const {
      return pool == other.pool;
    }
    NodePool* pool;
  };
  using Bin = std::set<Chunk*, BySizeThenAddress, PoolAllocator<Chunk*>>;
  static constexpr int kBins = 64;  // bin i: sizes in [64 << i, 128 << i)

  // Memory from the backing allocator: raw and raw_bytes as it gave them (what
  // to hand back), and `bytes` usable from the 64-byte aligned `base`.
  struct RawBlock {
    void* raw;
    size_t raw_bytes;
    uintptr_t base;
    size_t bytes;
  };

  Chunk* find_free_chunk(size_t rounded);
  Chunk* extend(size_t rounded);
  void* use_chunk(Chunk* chunk, size_t rounded, size_t requested);
  void release_chunk(Chunk* chunk);
  void* allocate_bypass(size_t bytes);
  void shrink_locked();
  // Up to `bytes` (at least `need`) within max_mem; on failure hands back the
  // empty regions and tries once more for `need` alone.
  RawBlock obtain(size_t bytes, size_t need);
  // Aligns the start even when the backing allocator does not.
  RawBlock backing_allocate(size_t bytes, size_t need);
  size_t next_region_bytes(size_t rounded) const;
  size_t available_bytes() const;  // under max_mem; SIZE_MAX without a limit
  [[noreturn]] void throw_over_limit(size_t bytes) const;

  void insert_free(Chunk* chunk);
  void erase_free(Chunk* chunk);
  Chunk* new_chunk();
  void recycle(Chunk* chunk);

  Allocator* const backing_;
  const ArenaConfig config_;
  const bool poison_;  // host memory under AddressSanitizer

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Region>> regions_;
  NodePool nodes_;              // outlives the containers below
  std::vector<Bin> bins_;       // kBins of them
  uint64_t nonempty_bins_ = 0;  // bit i: bins_[i] has a chunk
  std::unordered_map<const void*, Chunk*, std::hash<const void*>, std::equal_to<const void*>,
                     PoolAllocator<std::pair<const void* const, Chunk*>>>
      in_use_{0, std::hash<const void*>(), std::equal_to<const void*>(),
              PoolAllocator<std::pair<const void* const, Chunk*>>(&nodes_)};
  struct Bypassed {
    void* raw;
    size_t raw_bytes;
    size_t bytes;
  };
  std::unordered_map<const void*, Bypassed> bypassed_;
  size_t bypassed_raw_bytes_ = 0;  // what bypassed blocks hold of the backing allocator
  size_t regions_created_ = 0;
  size_t due_region_bytes_ = 0;  // kNextPowerOfTwo: the next region's size before any doubling
  ArenaStats stats_;
};

}  // namespace onyx
