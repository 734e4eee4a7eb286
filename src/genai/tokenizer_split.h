// The pre-tokenizer regexes of byte-level BPE tokenizers, matched by hand:
// GPT-2's (also what the ByteLevel pre-tokenizer uses) and the one Llama 3
// and Qwen2 share, which differ only in how many digits go together. Each
// matcher follows the regex's alternatives in order, with the backtracking
// Oniguruma would do, so the pieces are those `tokenizers` makes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onyx::genai {

enum class SplitRegex {
  kGpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kLlama3,  // (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  kQwen2,   // as kLlama3 with \p{N} one digit at a time
};

// The known regex `pattern` is, or nullopt.
std::optional<SplitRegex> find_split_regex(std::string_view pattern);

// The matches of `regex` in `text`, as [begin, end) byte ranges, in order.
// These regexes match every character, so the ranges tile the text.
void split_by_regex(SplitRegex regex, std::string_view text, std::vector<std::pair<size_t, size_t>>& matches);

}  // namespace onyx::genai
