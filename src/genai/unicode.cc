#include "genai/unicode.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace onyx::genai::unicode {

namespace {

struct CodePointRange {
  char32_t first;
  char32_t last;
  uint8_t value;
};
struct Decomposition {
  char32_t code_point;
  char32_t first;
  char32_t second;
};
struct Composition {
  char32_t first;
  char32_t second;
  char32_t composite;
};

#include "genai/unicode_tables.inc"

uint8_t range_value(const CodePointRange* begin, const CodePointRange* end, char32_t cp) {
  const CodePointRange* it =
      std::upper_bound(begin, end, cp, [](char32_t c, const CodePointRange& r) { return c < r.first; });
  if (it == begin) return 0;
  --it;
  return cp <= it->last ? it->value : 0;
}

// The classes of ASCII, looked up on every character of most text.
const std::array<CharClass, 128> kAsciiClasses = [] {
  std::array<CharClass, 128> table{};
  for (char32_t c = 0; c < 128; ++c) {
    table[c] = static_cast<CharClass>(range_value(std::begin(kCategoryRanges), std::end(kCategoryRanges), c));
  }
  return table;
}();

// Hangul syllables compose and decompose by arithmetic (Unicode 3.12).
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

uint8_t combining_class(char32_t cp) {
  if (cp < 0x300) return 0;
  return range_value(std::begin(kCombiningClassRanges), std::end(kCombiningClassRanges), cp);
}

void decompose(char32_t cp, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t index = cp - kSBase;
    out.push_back(kLBase + index / kNCount);
    out.push_back(kVBase + (index % kNCount) / kTCount);
    if (index % kTCount != 0) out.push_back(kTBase + index % kTCount);
    return;
  }
  const Decomposition* it = std::lower_bound(std::begin(kDecompositions), std::end(kDecompositions), cp,
                                             [](const Decomposition& d, char32_t c) { return d.code_point < c; });
  if (it == std::end(kDecompositions) || it->code_point != cp) {
    out.push_back(cp);
    return;
  }
  decompose(it->first, out);
  if (it->second != 0) decompose(it->second, out);
}

// The composite of (first, second), or 0.
char32_t compose(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase && second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 && second > kTBase &&
      second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  const Composition* it =
      std::lower_bound(std::begin(kCompositions), std::end(kCompositions), std::make_pair(first, second),
                       [](const Composition& c, const auto& key) { return std::make_pair(c.first, c.second) < key; });
  if (it != std::end(kCompositions) && it->first == first && it->second == second) return it->composite;
  return 0;
}

}  // namespace

char32_t next_code_point(std::string_view text, size_t& pos) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  const unsigned char lead = s[pos];
  if (lead < 0x80) {
    ++pos;
    return lead;
  }
  size_t length = utf8_length(lead);
  if (length == 1 || pos + length > n) {
    ++pos;
    return 0xFFFD;
  }
  char32_t cp = lead & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07);
  for (size_t i = 1; i < length; ++i) {
    if ((s[pos + i] & 0xC0) != 0x80) {
      ++pos;
      return 0xFFFD;
    }
    cp = (cp << 6) | (s[pos + i] & 0x3F);
  }
  const char32_t minimum = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000;
  if (cp < minimum || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) {
    ++pos;
    return 0xFFFD;
  }
  pos += length;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// Bytes of the well-formed sequence starting at s[pos] (0 when it is not),
// and in `prefix` how many of its bytes form a well-formed prefix (Unicode's
// "maximal subpart", at least 1).
size_t well_formed_length(const unsigned char* s, size_t n, size_t pos, size_t& prefix) {
  const unsigned char lead = s[pos];
  prefix = 1;
  if (lead < 0x80) return 1;
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  for (size_t i = 1; i < length; ++i) {
    if (pos + i >= n) return 0;
    const unsigned char c = s[pos + i];
    if (i == 1 ? (c < low || c > high) : (c & 0xC0) != 0x80) return 0;
    prefix = i + 1;
  }
  return length;
}

}  // namespace

std::string utf8_lossy(std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  std::string out;
  out.reserve(n);
  size_t pos = 0;
  while (pos < n) {
    size_t prefix = 0;
    const size_t length = well_formed_length(s, n, pos, prefix);
    if (length != 0) {
      out.append(bytes.substr(pos, length));
      pos += length;
    } else {
      out.append("\xEF\xBF\xBD");
      pos += prefix;
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t prefix = 0;
    const size_t length = well_formed_length(s, bytes.size(), pos, prefix);
    if (length == 0) return false;
    pos += length;
  }
  return true;
}

CharClass char_class(char32_t cp) {
  if (cp < 128) return kAsciiClasses[cp];
  return static_cast<CharClass>(range_value(std::begin(kCategoryRanges), std::end(kCategoryRanges), cp));
}

namespace {

std::string nfc_span(std::string_view text) {
  std::vector<char32_t> chars;
  chars.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) decompose(next_code_point(text, pos), chars);
  // Canonical ordering: a stable sort of each run of non-starters by class.
  for (size_t i = 0; i < chars.size();) {
    if (combining_class(chars[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < chars.size() && combining_class(chars[j]) != 0) ++j;
    std::stable_sort(chars.begin() + static_cast<std::ptrdiff_t>(i), chars.begin() + static_cast<std::ptrdiff_t>(j),
                     [](char32_t a, char32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  // Canonical composition: each character joins the last starter unless a
  // character between them blocks it (same or higher class, or a starter).
  std::vector<char32_t> out;
  out.reserve(chars.size());
  size_t starter = SIZE_MAX;
  uint8_t last_class = 0;  // class of the last character kept after the starter
  for (char32_t c : chars) {
    const uint8_t cls = combining_class(c);
    if (starter != SIZE_MAX) {
      const bool adjacent = out.size() - 1 == starter;
      if (adjacent || (last_class != 0 && last_class < cls)) {
        const char32_t composite = compose(out[starter], c);
        if (composite != 0) {
          out[starter] = composite;
          continue;
        }
      }
    }
    if (cls == 0) starter = out.size();
    last_class = cls;
    out.push_back(c);
  }
  std::string result;
  result.reserve(text.size());
  for (char32_t c : out) append_utf8(result, c);
  return result;
}

}  // namespace

std::string nfc(std::string_view text) {
  // ASCII is NFC and blocks composition and reordering on both sides (no
  // composition has an ASCII second character), so only each run of
  // non-ASCII bytes, with the ASCII character before it, needs the work.
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t begin = pos;
    while (begin < text.size() && static_cast<unsigned char>(text[begin]) < 0x80) ++begin;
    if (begin == text.size()) {
      out.append(text.substr(pos));
      break;
    }
    if (begin > pos) --begin;  // the starter before the run
    out.append(text.substr(pos, begin - pos));
    size_t end = begin + 1;
    while (end < text.size() && static_cast<unsigned char>(text[end]) >= 0x80) ++end;
    out += nfc_span(text.substr(begin, end - begin));
    pos = end;
  }
  return out;
}

}  // namespace onyx::genai::unicode
