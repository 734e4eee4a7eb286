// The key/value cache of one Generator, owned by the runtime.
//
// Shared buffers (GroupQueryAttention with search.past_present_share_buffer):
// one tensor per layer for keys and one for values, [rows, kv_heads,
// max_length, row], allocated once; each step binds it both as the past
// input and as the present output, so the kernel appends in place.
// Otherwise each step's present outputs become the next step's past inputs
// (the Values move; nothing is copied).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "genai/model.h"
#include "onyx/session.h"

namespace onyx::genai {

class KvCache {
 public:
  KvCache(const Model::Impl& model, int64_t rows, int64_t max_length);

  // Binds every layer's past input and present output for one run.
  void bind(IoBinding& binding) const;
  // Takes the present outputs of a run (its outputs from `first_output` on,
  // in the order bind() bound them) as the next past.
  void update(const std::vector<Value>& outputs, size_t first_output);
  // Row r of the cache becomes a copy of row source_rows[r] (beam search),
  // for the first `valid_length` positions.
  void reorder(std::span<const int32_t> source_rows, int64_t valid_length);
  // Positions the cache holds along its length axis (max_length when shared).
  int64_t capacity() const;
  bool shared() const { return shared_; }
  // Drops the cache (a new prompt after rewind_to(0) on an unshared cache).
  void reset();
  int64_t bytes() const;

 private:
  const Model::Impl& model_;
  int64_t rows_;
  int64_t max_length_;
  bool shared_;
  std::vector<std::string> past_names_, present_names_;  // keys of every layer, then values
  std::vector<Tensor> past_;                             // same order
};

}  // namespace onyx::genai
