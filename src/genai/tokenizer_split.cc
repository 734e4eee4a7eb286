#include "genai/tokenizer_split.h"

#include "genai/unicode.h"

namespace onyx::genai {

namespace {

constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

using unicode::CharClass;

// A cursor over UTF-8 text that reads one character ahead.
class Text {
 public:
  explicit Text(std::string_view text) : text_(text) {}
  size_t size() const { return text_.size(); }
  // The character at pos (pos < size()) and where the next one starts.
  char32_t at(size_t pos, size_t& next) const {
    next = pos;
    return unicode::next_code_point(text_, next);
  }
  CharClass class_at(size_t pos, size_t& next) const { return unicode::char_class(at(pos, next)); }
  // End of the run of characters of class `cls` starting at pos, taking at most max_count.
  size_t run_end(size_t pos, CharClass cls, size_t max_count = SIZE_MAX) const {
    size_t count = 0;
    while (pos < size() && count < max_count) {
      size_t next = 0;
      if (class_at(pos, next) != cls) break;
      pos = next;
      ++count;
    }
    return pos;
  }
  size_t newline_run_end(size_t pos) const {
    while (pos < size() && (text_[pos] == '\r' || text_[pos] == '\n')) ++pos;
    return pos;
  }
  // 's 't 're 've 'm 'll 'd at pos (pos holds the apostrophe): the match end, or 0.
  size_t contraction(size_t pos, bool ignore_case) const {
    std::string_view rest = text_.substr(pos + 1);
    auto lower = [&](size_t i) -> char {
      const char c = rest[i];
      return ignore_case && c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
    };
    if (rest.empty()) return 0;
    const char c0 = lower(0);
    if (c0 == 's' || c0 == 't' || c0 == 'm' || c0 == 'd') return pos + 2;
    // U+017F LATIN SMALL LETTER LONG S folds to 's'.
    if (ignore_case && rest.size() >= 2 && rest[0] == '\xC5' && rest[1] == '\xBF') return pos + 3;
    if (rest.size() < 2) return 0;
    const char c1 = lower(1);
    if ((c0 == 'r' && c1 == 'e') || (c0 == 'v' && c1 == 'e') || (c0 == 'l' && c1 == 'l')) return pos + 3;
    return 0;
  }
  // \s+(?!\S)|\s+ at pos, a whitespace character.
  size_t whitespace(size_t pos) const {
    const size_t end = run_end(pos, CharClass::kSpace);
    if (end == size()) return end;
    // The run is followed by a non-space: give back its last character,
    // unless that leaves nothing (then \s+ takes the whole run).
    size_t last = end - 1;
    while (last > pos && (static_cast<unsigned char>(text_[last]) & 0xC0) == 0x80) --last;
    return last > pos ? last : end;
  }

 private:
  std::string_view text_;
};

inline bool is_other(CharClass cls) { return cls == CharClass::kOther; }

size_t match_gpt2(const Text& text, size_t pos) {
  size_t next = 0;
  const char32_t c = text.at(pos, next);
  if (c == '\'') {
    if (size_t end = text.contraction(pos, false)) return end;
  }
  const CharClass cls = unicode::char_class(c);
  // ` ?X+` for X in letters, numbers, others: a space joins the run after it.
  if (c == ' ' && next < text.size()) {
    size_t after = 0;
    const CharClass next_class = text.class_at(next, after);
    if (next_class != CharClass::kSpace) return text.run_end(next, next_class);
  }
  if (cls != CharClass::kSpace) return text.run_end(pos, cls);
  return text.whitespace(pos);
}

size_t match_llama3(const Text& text, size_t pos, size_t max_digits) {
  size_t next = 0;
  const char32_t c = text.at(pos, next);
  if (c == '\'') {
    if (size_t end = text.contraction(pos, true)) return end;
  }
  const CharClass cls = unicode::char_class(c);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (cls == CharClass::kLetter) return text.run_end(pos, CharClass::kLetter);
  if (c != '\r' && c != '\n' && cls != CharClass::kNumber && next < text.size()) {
    size_t after = 0;
    if (text.class_at(next, after) == CharClass::kLetter) return text.run_end(next, CharClass::kLetter);
  }
  // \p{N}{1,max_digits}
  if (cls == CharClass::kNumber) return text.run_end(pos, CharClass::kNumber, max_digits);
  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
  if (c == ' ' && next < text.size()) {
    size_t after = 0;
    if (is_other(text.class_at(next, after))) {
      return text.newline_run_end(text.run_end(next, CharClass::kOther));
    }
  }
  if (is_other(cls)) return text.newline_run_end(text.run_end(pos, CharClass::kOther));
  // \s*[\r\n]+: the whitespace run up to and including its last newline.
  const size_t end = text.run_end(pos, CharClass::kSpace);
  for (size_t i = end; i > pos; --i) {
    size_t ignored = 0;
    const char32_t r = text.at(i - 1, ignored);
    if (r == '\r' || r == '\n') return i;
  }
  return text.whitespace(pos);
}

}  // namespace

std::optional<SplitRegex> find_split_regex(std::string_view pattern) {
  if (pattern == kGpt2Pattern) return SplitRegex::kGpt2;
  if (pattern == kLlama3Pattern) return SplitRegex::kLlama3;
  if (pattern == kQwen2Pattern) return SplitRegex::kQwen2;
  return std::nullopt;
}

void split_by_regex(SplitRegex regex, std::string_view text, std::vector<std::pair<size_t, size_t>>& matches) {
  const Text cursor(text);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = 0;
    switch (regex) {
      case SplitRegex::kGpt2:
        end = match_gpt2(cursor, pos);
        break;
      case SplitRegex::kLlama3:
        end = match_llama3(cursor, pos, 3);
        break;
      case SplitRegex::kQwen2:
        end = match_llama3(cursor, pos, 1);
        break;
    }
    matches.emplace_back(pos, end);
    pos = end;
  }
}

}  // namespace onyx::genai
