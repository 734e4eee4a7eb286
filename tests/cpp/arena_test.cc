// ArenaAllocator: reuse, splitting and coalescing, alignment, both extend
// strategies, the memory limit, shrink, bypass, config parsing, threads, and
// AddressSanitizer's view of freed chunks.
#include "tensor/arena.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define ONYX_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ONYX_TEST_ASAN 1
#endif
#endif
#if defined(ONYX_TEST_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace onyx {
namespace {

constexpr size_t kKiB = 1024, kMiB = kKiB * 1024;

// Passes requests to cpu_allocator(), counting them and the bytes held; fails
// (throws, as cpu_allocator() does) past `capacity`. With `misalign`, hands
// out pointers that are 16 bytes off a 64-byte boundary.
class CountingAllocator final : public Allocator {
 public:
  explicit CountingAllocator(size_t capacity = std::numeric_limits<size_t>::max(), bool misalign = false)
      : capacity_(capacity), offset_(misalign ? 16 : 0) {}
  ~CountingAllocator() override { EXPECT_EQ(held_, 0u) << "the arena did not return everything"; }

  void* allocate(size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (bytes > capacity_ - held_) throw Error(runtime_error("test allocator: out of memory for ", bytes, " bytes"));
    auto* p = static_cast<char*>(cpu_allocator()->allocate(bytes + offset_)) + offset_;
    held_ += bytes;
    sizes_.push_back(bytes);
    live_.emplace_back(p, bytes);
    return p;
  }
  void deallocate(void* pointer, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = std::find(live_.begin(), live_.end(), std::pair<void*, size_t>(pointer, bytes));
    ASSERT_NE(it, live_.end()) << "returned a block with a pointer or size the allocator did not give";
    live_.erase(it);
    held_ -= bytes;
    ++deallocations_;
    cpu_allocator()->deallocate(static_cast<char*>(pointer) - offset_, bytes + offset_);
  }
  Device device() const override { return Device{}; }

  std::vector<size_t> sizes() const {  // of every allocate call, in order
    std::lock_guard<std::mutex> lock(mutex_);
    return sizes_;
  }
  size_t allocations() const { return sizes().size(); }
  size_t deallocations() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return deallocations_;
  }
  size_t held() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_;
  }

 private:
  const size_t capacity_;
  const size_t offset_;
  mutable std::mutex mutex_;
  size_t held_ = 0, deallocations_ = 0;
  std::vector<size_t> sizes_;
  std::vector<std::pair<void*, size_t>> live_;
};

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(Arena, ReusesAFreedChunk) {
  CountingAllocator backing;
  ArenaAllocator arena(&backing);
  void* p = arena.allocate(1000);
  arena.deallocate(p, 1000);
  EXPECT_EQ(arena.allocate(1000), p);
  arena.deallocate(p, 1000);
  EXPECT_EQ(arena.allocate(900), p) << "the best fit is the lowest-addressed chunk of the smallest size";
  arena.deallocate(p, 900);
  EXPECT_EQ(backing.allocations(), 1u);
  EXPECT_EQ(arena.stats().allocations, 3u);
  EXPECT_EQ(arena.stats().in_use_bytes, 0u);
}

// Three neighbouring chunks freed in every order: at each step the free
// chunks are the runs of free neighbours, and at the end one chunk is the
// whole region again.
TEST(Arena, SplitsAndCoalescesNeighboursInAnyOrder) {
  std::array<int, 3> order = {0, 1, 2};
  do {
    ArenaConfig config;
    config.initial_chunk_size_bytes = 64 * kKiB;
    ArenaAllocator arena(cpu_allocator(), config);
    std::array<char*, 3> blocks;
    for (auto& block : blocks) block = static_cast<char*>(arena.allocate(1000));
    EXPECT_EQ(blocks[1], blocks[0] + 1024);
    EXPECT_EQ(blocks[2], blocks[1] + 1024);
    ArenaStats stats = arena.stats();
    EXPECT_EQ(stats.regions, 1u);
    EXPECT_EQ(stats.in_use_bytes, 3 * 1024u);
    EXPECT_EQ(stats.free_chunks, 1u);  // the region's tail
    EXPECT_EQ(stats.largest_free_chunk_bytes, 61 * kKiB);

    std::array<bool, 4> free = {false, false, false, true};  // the three blocks, then the tail
    for (int index : order) {
      arena.deallocate(blocks[index], 1000);
      free[index] = true;
      size_t runs = 0;
      for (size_t i = 0; i < free.size(); ++i) runs += free[i] && (i == 0 || !free[i - 1]);
      stats = arena.stats();
      EXPECT_EQ(stats.free_chunks, runs) << "after freeing block " << index;
    }
    stats = arena.stats();
    EXPECT_EQ(stats.free_chunks, 1u);
    EXPECT_EQ(stats.largest_free_chunk_bytes, 64 * kKiB);
    EXPECT_EQ(stats.in_use_bytes, 0u);
    EXPECT_EQ(stats.peak_in_use_bytes, 3 * 1024u);
  } while (std::next_permutation(order.begin(), order.end()));
}

// Odd sizes, from a backing allocator that aligns to 64 bytes and from one
// that does not: every pointer is aligned and no two blocks overlap.
TEST(Arena, AlignsEveryPointer) {
  for (bool misaligned_backing : {false, true}) {
    CountingAllocator backing(std::numeric_limits<size_t>::max(), misaligned_backing);
    ArenaConfig config;
    config.initial_chunk_size_bytes = 4 * kKiB;
    config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
    ArenaAllocator arena(&backing, config);
    const std::vector<size_t> sizes = {0, 1, 3, 7, 63, 64, 65, 127, 129, 1000, 4093, 4097, 65537, 0, 1};
    std::vector<unsigned char*> blocks;
    for (size_t i = 0; i < sizes.size(); ++i) {
      auto* p = static_cast<unsigned char*>(arena.allocate(sizes[i]));
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(aligned64(p)) << sizes[i] << " bytes, misaligned backing " << misaligned_backing;
      std::memset(p, static_cast<int>(i), sizes[i]);
      blocks.push_back(p);
    }
    EXPECT_EQ(std::set<unsigned char*>(blocks.begin(), blocks.end()).size(), blocks.size())
        << "zero-byte requests get unique pointers too";
    for (size_t i = 0; i < sizes.size(); ++i) {
      for (size_t j = 0; j < sizes[i]; ++j) ASSERT_EQ(blocks[i][j], static_cast<unsigned char>(i)) << "overlap";
      arena.deallocate(blocks[i], sizes[i]);
    }
  }
}

TEST(Arena, NextPowerOfTwoDoublesTheGrowthChunk) {
  CountingAllocator backing;
  ArenaConfig config;
  config.initial_chunk_size_bytes = 1 * kMiB;
  config.initial_growth_chunk_size_bytes = 2 * kMiB;
  config.max_power_of_two_extend_bytes = 8 * kMiB;
  config.bypass_bytes = 0;
  ArenaAllocator arena(&backing, config);
  // 768 KiB blocks: one fills the 1 MiB region (the rest is too small to
  // split off), two fill 2 MiB, five fit in 4 MiB.
  const std::vector<size_t> reserved_after = {1, 3, 3, 7, 7, 7, 7, 7, 15, 15};
  for (size_t i = 0; i < reserved_after.size(); ++i) {
    arena.allocate(768 * kKiB);
    EXPECT_EQ(arena.stats().reserved_bytes, reserved_after[i] * kMiB) << "after block " << i;
  }
  // Past max_power_of_two_extend_bytes a region is the request's size, and
  // the next region due stays at the cap.
  arena.allocate(20 * kMiB);
  EXPECT_EQ(arena.stats().reserved_bytes, 35 * kMiB);
  arena.allocate(9 * kMiB);
  EXPECT_EQ(arena.stats().reserved_bytes, 44 * kMiB);
  EXPECT_EQ(backing.sizes(), (std::vector<size_t>{1 * kMiB, 2 * kMiB, 4 * kMiB, 8 * kMiB, 20 * kMiB, 9 * kMiB}));
  EXPECT_EQ(arena.stats().regions, 6u);
}

TEST(Arena, NextPowerOfTwoDoublesARegionUntilTheRequestFits) {
  CountingAllocator backing;
  ArenaConfig config;
  config.initial_chunk_size_bytes = 1 * kMiB;
  config.initial_growth_chunk_size_bytes = 2 * kMiB;
  ArenaAllocator arena(&backing, config);
  arena.allocate(3 * kMiB);  // 1 MiB doubled twice
  arena.allocate(3 * kMiB);  // the growth chunk, 2 MiB, doubled once
  arena.allocate(3 * kMiB);  // the next growth chunk: twice the last region
  EXPECT_EQ(backing.sizes(), (std::vector<size_t>{4 * kMiB, 4 * kMiB, 8 * kMiB}));
}

TEST(Arena, SameAsRequestedGrowsByTheRoundedRequest) {
  CountingAllocator backing;
  ArenaConfig config;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  ArenaAllocator arena(&backing, config);
  void* small = arena.allocate(100);
  EXPECT_EQ(arena.stats().reserved_bytes, 128u);
  arena.allocate(1000);
  EXPECT_EQ(arena.stats().reserved_bytes, 128u + 1024u);
  arena.deallocate(small, 100);
  EXPECT_EQ(arena.allocate(64), small) << "a free chunk that fits is used before growing";
  arena.allocate(5000);
  EXPECT_EQ(arena.stats().reserved_bytes, 128u + 1024u + 5056u);
  EXPECT_EQ(backing.sizes(), (std::vector<size_t>{128, 1024, 5056}));
}

TEST(Arena, MemoryLimitThrowsNamingItAndTheArenaStaysUsable) {
  ArenaConfig config;
  config.max_mem = 4 * kMiB;
  config.bypass_bytes = 1 * kMiB;
  ArenaAllocator arena(cpu_allocator(), config);
  void* block = arena.allocate(3 * kMiB - 100);  // bypassed: counts against the limit too
  void* small = arena.allocate(512 * kKiB);      // a 1 MiB region fits beside it
  EXPECT_EQ(arena.stats().reserved_bytes, 1 * kMiB);
  for (size_t bytes : {2 * kMiB, 600 * kKiB, 5 * kMiB}) {
    try {
      arena.allocate(bytes);
      ADD_FAILURE() << bytes << " bytes allocated past the limit";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("max_mem = 4194304"), std::string::npos) << e.what();
    }
  }
  arena.deallocate(block, 3 * kMiB - 100);
  void* big = arena.allocate(3 * kMiB - 100);
  arena.deallocate(big, 3 * kMiB - 100);
  arena.deallocate(small, 512 * kKiB);
  EXPECT_EQ(arena.stats().in_use_bytes, 0u);
}

TEST(Arena, ARegionCutShortByTheLimitStaysAligned) {
  CountingAllocator backing;
  ArenaConfig config;
  config.max_mem = 1 * kMiB + 50;
  config.initial_chunk_size_bytes = 2 * kMiB;
  ArenaAllocator arena(&backing, config);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(aligned64(arena.allocate(1000)));
  EXPECT_EQ(backing.sizes(), std::vector<size_t>{1 * kMiB});
}

TEST(Arena, MemoryLimitHandsBackEmptyRegionsToMakeRoom) {
  CountingAllocator backing;
  ArenaConfig config;
  config.max_mem = 4 * kMiB;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  ArenaAllocator arena(&backing, config);
  arena.deallocate(arena.allocate(3 * kMiB), 3 * kMiB);
  void* p = arena.allocate(3 * kMiB + 512 * kKiB);  // the empty 3 MiB region is in the way
  EXPECT_EQ(backing.deallocations(), 1u);
  EXPECT_EQ(arena.stats().regions, 1u);
  EXPECT_EQ(arena.stats().reserved_bytes, 3 * kMiB + 512 * kKiB);
  arena.deallocate(p, 3 * kMiB + 512 * kKiB);
}

TEST(Arena, ShrinkReturnsEmptyRegions) {
  CountingAllocator backing;
  ArenaConfig config;
  config.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
  {
    ArenaAllocator arena(&backing, config);
    void* a = arena.allocate(10 * kKiB);
    void* b = arena.allocate(20 * kKiB);
    void* c = arena.allocate(30 * kKiB);
    EXPECT_EQ(arena.stats().regions, 3u);
    arena.deallocate(a, 10 * kKiB);
    arena.deallocate(c, 30 * kKiB);
    arena.shrink();
    EXPECT_EQ(backing.deallocations(), 2u);
    EXPECT_EQ(arena.stats().regions, 1u);
    EXPECT_EQ(arena.stats().reserved_bytes, 20 * kKiB);
    EXPECT_EQ(backing.held(), 20 * kKiB);
    arena.deallocate(b, 20 * kKiB);
    arena.shrink();
    EXPECT_EQ(backing.deallocations(), 3u);
    EXPECT_EQ(arena.stats().reserved_bytes, 0u);
    EXPECT_EQ(backing.held(), 0u);

    arena.allocate(1000);  // grows again after a full shrink; left live for the destructor
    EXPECT_EQ(backing.held(), 1024u);
  }
  EXPECT_EQ(backing.held(), 0u) << "the destructor returns every region";
}

TEST(Arena, BackingFailureShrinksAndRetriesOnce) {
  CountingAllocator backing(2 * kMiB + 512 * kKiB);
  ArenaConfig config;
  config.initial_chunk_size_bytes = 1 * kMiB;
  config.initial_growth_chunk_size_bytes = 2 * kMiB;
  ArenaAllocator arena(&backing, config);
  arena.deallocate(arena.allocate(1 * kMiB), 1 * kMiB);
  // The 2 MiB region due does not fit beside the empty 1 MiB one: the arena
  // returns that and asks for the request's own size.
  void* p = arena.allocate(1 * kMiB + 512 * kKiB);
  EXPECT_EQ(backing.sizes(), (std::vector<size_t>{1 * kMiB, 1 * kMiB + 512 * kKiB}));
  EXPECT_EQ(arena.stats().regions, 1u);
  EXPECT_EQ(arena.stats().reserved_bytes, 1 * kMiB + 512 * kKiB);
  try {
    arena.allocate(2 * kMiB);
    ADD_FAILURE() << "allocated past the backing allocator's capacity";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test allocator: out of memory"), std::string::npos) << e.what();
  }
  void* q = arena.allocate(512 * kKiB);  // still usable
  arena.deallocate(q, 512 * kKiB);
  arena.deallocate(p, 1 * kMiB + 512 * kKiB);
}

TEST(Arena, BypassesLargeRequests) {
  CountingAllocator backing;
  ArenaConfig config;
  config.bypass_bytes = 256 * kKiB;
  ArenaAllocator arena(&backing, config);
  void* big = arena.allocate(300000);
  EXPECT_TRUE(aligned64(big));
  std::memset(big, 1, 300000);
  ArenaStats stats = arena.stats();
  EXPECT_EQ(stats.bypassed, 1u);
  EXPECT_EQ(stats.bypassed_in_use_bytes, 300000u);
  EXPECT_EQ(stats.in_use_bytes, 300000u);
  EXPECT_EQ(stats.regions, 0u);
  EXPECT_EQ(stats.reserved_bytes, 0u);
  EXPECT_EQ(backing.sizes(), std::vector<size_t>{300000});
  arena.deallocate(big, 300000);
  EXPECT_EQ(backing.deallocations(), 1u);
  EXPECT_EQ(arena.stats().in_use_bytes, 0u);
  void* small = arena.allocate(256 * kKiB - 1);  // just under: from a region
  EXPECT_EQ(arena.stats().regions, 1u);
  EXPECT_EQ(arena.stats().bypassed, 1u);
  arena.deallocate(small, 256 * kKiB - 1);
}

TEST(Arena, TensorsLiveInIt) {
  ArenaAllocator arena(cpu_allocator());
  {
    Tensor t(DataType::kFloat, {3, 5}, &arena);
    EXPECT_EQ(t.device(), Device{});
    EXPECT_TRUE(aligned64(t.raw_data()));
    EXPECT_EQ(arena.stats().in_use_bytes, 64u);
  }
  EXPECT_EQ(arena.stats().in_use_bytes, 0u);
}

TEST(Arena, ParsesOnnxruntimeConfigKeys) {
  Result<ArenaConfig> config = parse_arena_config({{"max_mem", "1073741824"},
                                                   {"arena_extend_strategy", "1"},
                                                   {"initial_chunk_size_bytes", "4096"},
                                                   {"max_dead_bytes_per_chunk", "0"},
                                                   {"initial_growth_chunk_size_bytes", "8192"},
                                                   {"max_power_of_two_extend_bytes", "-1"}});
  ASSERT_TRUE(config.is_ok()) << config.status().message();
  EXPECT_EQ(config->max_mem, size_t{1} << 30);
  EXPECT_EQ(config->arena_extend_strategy, ArenaExtendStrategy::kSameAsRequested);
  EXPECT_EQ(config->initial_chunk_size_bytes, 4096u);
  EXPECT_EQ(config->max_dead_bytes_per_chunk, 0u);
  EXPECT_EQ(config->initial_growth_chunk_size_bytes, 8192u);
  EXPECT_EQ(config->max_power_of_two_extend_bytes, ArenaConfig{}.max_power_of_two_extend_bytes) << "-1: the default";
  EXPECT_TRUE(parse_arena_config({}).is_ok());
}

TEST(Arena, ConfigErrorsNameTheKeyAndValue) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"max_memory", "1"},                         // unknown key
      {"max_mem", "lots"},                         // not a number
      {"max_mem", ""},                             // empty
      {"max_mem", " 5"},                           // padded
      {"max_mem", "-2"},                           // negative, not the default marker
      {"max_mem", "1e6"},                          // trailing text
      {"max_mem", "99999999999999999999999"},      // out of range
      {"arena_extend_strategy", "2"},              // no such strategy
      {"initial_chunk_size_bytes", "0"},           // a region of nothing
      {"initial_growth_chunk_size_bytes", "0"},    // likewise
      {"max_power_of_two_extend_bytes", "0x100"},  // decimal only
  };
  for (const auto& [key, value] : bad) {
    Result<ArenaConfig> config = parse_arena_config({{key, value}});
    ASSERT_FALSE(config.is_ok()) << key << " = '" << value << "'";
    const std::string& message = config.status().message();
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(message.find(key), std::string::npos) << message;
    if (key != "max_memory") {
      EXPECT_NE(message.find("'" + value + "'"), std::string::npos) << message;
    }
  }
}

TEST(Arena, RejectsAnUnusableConfig) {
  EXPECT_THROW({ ArenaAllocator arena(nullptr); }, Error);
  ArenaConfig config;
  config.initial_chunk_size_bytes = 0;
  EXPECT_THROW({ ArenaAllocator arena(cpu_allocator(), config); }, Error);
}

// Four threads allocate random sizes (some past bypass_bytes), fill each block
// with a pattern of their own and check it before freeing; a quarter of the
// blocks are freed by another thread. Overlapping blocks would break a pattern.
TEST(Arena, StressFromFourThreadsKeepsBlocksApart) {
  ArenaConfig config;
  config.initial_chunk_size_bytes = 64 * kKiB;
  config.initial_growth_chunk_size_bytes = 128 * kKiB;
  config.bypass_bytes = 48 * kKiB;
  ArenaAllocator arena(cpu_allocator(), config);

  struct Block {
    uint64_t* data;
    size_t bytes;
    uint64_t tag;
  };
  auto fill = [](const Block& block) {
    for (size_t i = 0; i < block.bytes / 8; ++i) block.data[i] = block.tag + i;
    std::memset(block.data + block.bytes / 8, static_cast<int>(block.tag & 0xff), block.bytes % 8);
  };
  auto intact = [](const Block& block) {
    for (size_t i = 0; i < block.bytes / 8; ++i) {
      if (block.data[i] != block.tag + i) return false;
    }
    const auto* tail = reinterpret_cast<const unsigned char*>(block.data + block.bytes / 8);
    for (size_t i = 0; i < block.bytes % 8; ++i) {
      if (tail[i] != (block.tag & 0xff)) return false;
    }
    return true;
  };

  std::mutex exchange_mutex;
  std::vector<Block> exchange;  // blocks left for another thread to free
  std::atomic<int> broken{0}, misaligned{0}, allocations{0};
  auto free_block = [&](const Block& block) {
    if (!intact(block)) ++broken;
    arena.deallocate(block.data, block.bytes);
  };
  auto work = [&](int thread) {
    std::mt19937_64 random(1234 + thread);
    std::vector<Block> mine;
    for (uint64_t step = 0; step < 10000; ++step) {
      const uint64_t choice = random() % 8;
      if (choice < 4 || mine.empty()) {
        const size_t bytes = random() % (size_t{1} << (random() % 17));  // 0 .. 64 KiB, mostly small
        Block block{static_cast<uint64_t*>(arena.allocate(bytes)), bytes, (uint64_t(thread) << 56) | (step << 24)};
        ++allocations;
        if (!aligned64(block.data)) ++misaligned;
        fill(block);
        mine.push_back(block);
      } else {
        const size_t index = random() % mine.size();
        const Block block = mine[index];
        mine[index] = mine.back();
        mine.pop_back();
        if (choice == 7) {
          std::lock_guard<std::mutex> lock(exchange_mutex);
          exchange.push_back(block);
        } else {
          free_block(block);
        }
      }
      if (step % 16 == 0) {
        std::vector<Block> theirs;
        {
          std::lock_guard<std::mutex> lock(exchange_mutex);
          theirs.swap(exchange);
        }
        for (const Block& block : theirs) free_block(block);
      }
    }
    for (const Block& block : mine) free_block(block);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(work, t);
  for (auto& thread : threads) thread.join();
  for (const Block& block : exchange) free_block(block);

  EXPECT_EQ(broken.load(), 0) << "blocks overlapped";
  EXPECT_EQ(misaligned.load(), 0);
  const ArenaStats stats = arena.stats();
  EXPECT_EQ(stats.in_use_bytes, 0u);
  EXPECT_EQ(stats.allocations, static_cast<size_t>(allocations.load()));
  EXPECT_GT(stats.bypassed, 0u);
  EXPECT_EQ(stats.free_chunks, stats.regions) << "every region coalesced back into one free chunk";
}

TEST(Arena, FreeingTwiceAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ArenaAllocator arena(cpu_allocator());
        void* p = arena.allocate(100);
        arena.deallocate(p, 100);
        arena.deallocate(p, 100);
      },
      "not a live allocation of this arena");
}

#if defined(ONYX_TEST_ASAN)
TEST(Arena, FreedChunksArePoisonedUnderAsan) {
  ArenaAllocator arena(cpu_allocator());
  auto* p = static_cast<char*>(arena.allocate(100));
  EXPECT_EQ(__asan_region_is_poisoned(p, 128), nullptr) << "the request rounded to 64 bytes is addressable";
  EXPECT_TRUE(__asan_address_is_poisoned(p + 128)) << "the rest of the region is not";
  arena.deallocate(p, 100);
  EXPECT_TRUE(__asan_address_is_poisoned(p));
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ArenaAllocator dying(cpu_allocator());
        auto* q = static_cast<volatile char*>(dying.allocate(256));
        q[0] = 1;
        dying.deallocate(const_cast<char*>(q), 256);
        q[0] = q[0] + 1;
      },
      "use-after-poison");
}
#endif  // ASan only: scripts/sanitize.sh runs it

}  // namespace
}  // namespace onyx
