// The BPE model of a tokenizer.json ("model": {"type": "BPE", ...}): a word
// (one pre-token) to ids by the merges, lowest rank first, as `tokenizers`
// does, with its byte fallback, unknown-token fusing and ignore_merges.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/json.h"

namespace onyx::genai {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // `model` is tokenizer.json's "model" object; errors name `file`.
  BpeModel(const Json& model, const std::string& file);

  // Appends the ids of one pre-token.
  void encode_word(std::string_view word, std::vector<int32_t>& ids) const;
  int32_t token_to_id(std::string_view token) const;
  // nullptr when id is not in the vocabulary.
  const std::string* id_to_token(int32_t id) const;
  int64_t vocab_size() const { return static_cast<int64_t>(id_to_token_.size()); }
  const TokenMap& vocab() const { return vocab_; }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  void merge_word(std::string_view word, std::vector<int32_t>& ids) const;

  TokenMap vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id)
  int32_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  int32_t byte_ids_[256];  // <0xNN> tokens, -1 where absent

  // Pre-tokens seen before, with their ids: text repeats its words.
  static constexpr size_t kCacheCapacity = 1 << 16;
  static constexpr size_t kCacheMaxWordBytes = 256;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace onyx::genai
