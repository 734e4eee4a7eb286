#include "genai/tokenizer_bpe.h"

#include <cstdio>
#include <queue>

#include "genai/unicode.h"
#include "onyx/status.h"

namespace onyx::genai {

namespace {

[[noreturn]] void bad_model(const std::string& file, const std::string& what) {
  throw Error(invalid_argument(file, ": model: ", what));
}

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

}  // namespace

BpeModel::BpeModel(const Json& model, const std::string& file) {
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const Json* value = model.find(key);
    if (value != nullptr && !value->is_null() && !value->as_string().empty()) {
      bad_model(file, std::string("BPE with ") + key + " is not supported");
    }
  }
  if (const Json* dropout = model.find("dropout"); dropout != nullptr && !dropout->is_null()) {
    if (dropout->as_double() != 0.0) bad_model(file, "BPE dropout is not supported (it makes encoding random)");
  }
  const Json& vocab = model.at("vocab");
  if (vocab.kind() != Json::Kind::kObject) bad_model(file, "'vocab' must be an object of token: id");
  vocab_.reserve(vocab.as_object().size());
  for (const auto& [token, id_json] : vocab.as_object()) {
    if (id_json.kind() != Json::Kind::kInt || id_json.as_int() < 0 || id_json.as_int() > INT32_MAX) {
      bad_model(file, "vocab['" + token + "'] must be a non-negative integer id");
    }
    const auto id = static_cast<int32_t>(id_json.as_int());
    vocab_[token] = id;
    if (static_cast<size_t>(id) >= id_to_token_.size()) {
      id_to_token_.resize(static_cast<size_t>(id) + 1);
      has_id_.resize(static_cast<size_t>(id) + 1);
    }
    id_to_token_[static_cast<size_t>(id)] = token;
    has_id_[static_cast<size_t>(id)] = true;
  }

  const Json& merges = model.at("merges");
  if (merges.kind() != Json::Kind::kArray) bad_model(file, "'merges' must be an array");
  merges_.reserve(merges.as_array().size());
  int32_t rank = 0;
  for (const Json& merge : merges.as_array()) {
    std::string left, right;
    if (merge.kind() == Json::Kind::kString) {
      // The older form: "left right".
      const std::string& text = merge.as_string();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
        bad_model(file, "merge '" + text + "' is not two tokens separated by one space");
      }
      left = text.substr(0, space);
      right = text.substr(space + 1);
    } else if (merge.kind() == Json::Kind::kArray && merge.as_array().size() == 2) {
      left = merge.as_array()[0].as_string();
      right = merge.as_array()[1].as_string();
    } else {
      bad_model(file, "merges[" + std::to_string(rank) + "] must be \"a b\" or [\"a\", \"b\"]");
    }
    const int32_t left_id = token_to_id(left);
    const int32_t right_id = token_to_id(right);
    const int32_t new_id = token_to_id(left + right);
    if (left_id < 0 || right_id < 0 || new_id < 0) {
      bad_model(file, "merge '" + left + " " + right + "' uses a token missing from the vocab");
    }
    merges_.emplace(pair_key(left_id, right_id), Merge{rank, new_id});
    ++rank;
  }

  if (const Json* unk = model.find("unk_token"); unk != nullptr && !unk->is_null()) {
    unk_id_ = token_to_id(unk->as_string());
    if (unk_id_ < 0) bad_model(file, "unk_token '" + unk->as_string() + "' is not in the vocab");
  }
  auto flag = [&](const char* key) {
    const Json* value = model.find(key);
    return value != nullptr && !value->is_null() && value->as_bool();
  };
  fuse_unk_ = flag("fuse_unk");
  byte_fallback_ = flag("byte_fallback");
  ignore_merges_ = flag("ignore_merges");
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    byte_ids_[byte] = token_to_id(name);
  }
}

int32_t BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= id_to_token_.size() || !has_id_[static_cast<size_t>(id)]) return nullptr;
  return &id_to_token_[static_cast<size_t>(id)];
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    if (int32_t id = token_to_id(word); id >= 0) {
      ids.push_back(id);
      return;
    }
  }
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t start = ids.size();
  merge_word(word, ids);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() >= kCacheCapacity) cache_.clear();
    cache_.emplace(std::string(word),
                   std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(start), ids.end()));
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& ids) const {
  // The word's symbols as a linked list; merging joins a symbol with its next.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto push = [&](int32_t id) {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, true});
  };
  bool last_was_unk = false;
  for (size_t pos = 0; pos < word.size();) {
    const size_t length = std::min(unicode::utf8_length(static_cast<unsigned char>(word[pos])), word.size() - pos);
    const std::string_view character = word.substr(pos, length);
    pos += length;
    if (int32_t id = token_to_id(character); id >= 0) {
      push(id);
      last_was_unk = false;
      continue;
    }
    if (byte_fallback_) {
      bool all_bytes = true;
      for (char byte : character) all_bytes = all_bytes && byte_ids_[static_cast<unsigned char>(byte)] >= 0;
      if (all_bytes) {
        for (char byte : character) push(byte_ids_[static_cast<unsigned char>(byte)]);
        last_was_unk = false;
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (!(fuse_unk_ && last_was_unk)) push(unk_id_);
      last_was_unk = true;
    }
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  // Merges lowest rank first, the leftmost of equal ranks first.
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Candidate& other) const { return rank != other.rank ? rank > other.rank : pos > other.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = symbols[static_cast<size_t>(left)].next;
    if (right < 0) return;
    auto it = merges_.find(pair_key(symbols[static_cast<size_t>(left)].id, symbols[static_cast<size_t>(right)].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.new_id});
  };
  for (size_t i = 0; i + 1 < symbols.size(); ++i) consider(static_cast<int32_t>(i));
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[static_cast<size_t>(top.pos)];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[static_cast<size_t>(left.next)];
    auto it = merges_.find(pair_key(left.id, right.id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale
    left.id = top.new_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
  for (int32_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next)
    ids.push_back(symbols[static_cast<size_t>(i)].id);
}

}  // namespace onyx::genai
