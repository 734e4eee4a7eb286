// String kernels: StringNormalizer (stopword removal and case change),
// StringConcat (broadcast), StringSplit (padded pieces plus counts) and
// RegexFullMatch (std::regex ECMAScript, which agrees with the spec's RE2
// syntax on the common constructs: classes, \w \d \s \b, groups, alternation,
// bounded repeats).
#include <algorithm>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "providers/cpu/broadcast.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

// --- UTF-8 case mapping ------------------------------------------------------
// Simple one-to-one case mapping for ASCII, Latin-1, Latin Extended-A, Greek
// and Cyrillic; other code points (and invalid bytes) pass through unchanged.

uint32_t lower_code_point(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 0x20;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;
  if (c == 0x178) return 0xFF;
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return c | 1u;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1u) ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 0x20;
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;
  return c;
}

uint32_t upper_code_point(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 0x20;
  if (c < 0x80) return c;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 0x20;
  if (c == 0xFF) return 0x178;
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return c & ~1u;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1u) ? c : c - 1;
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 0x20;
  if (c >= 0x430 && c <= 0x44F) return c - 0x20;
  if (c >= 0x450 && c <= 0x45F) return c - 0x50;
  return c;
}

void append_utf8(std::string& out, uint32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// Maps every decodable code point of `s` through `map`; undecodable bytes are copied.
template <typename Map>
std::string map_case(const std::string& s, Map map) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    int length = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    bool valid = length > 0 && i + static_cast<size_t>(length) <= s.size();
    uint32_t c = length == 1 ? b : length == 2 ? (b & 0x1F) : length == 3 ? (b & 0x0F) : (b & 0x07);
    for (int k = 1; valid && k < length; ++k) {
      const unsigned char next = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      valid = (next & 0xC0) == 0x80;
      c = (c << 6) | (next & 0x3F);
    }
    if (!valid) {
      out += s[i++];
      continue;
    }
    append_utf8(out, map(c));
    i += static_cast<size_t>(length);
  }
  return out;
}

std::string to_lower(const std::string& s) { return map_case(s, lower_code_point); }
std::string to_upper(const std::string& s) { return map_case(s, upper_code_point); }

Status require_string(const KernelContext& ctx, const Tensor* t, const char* name) {
  if (t == nullptr) return invalid_argument(ctx.label(), ": input ", name, " is required");
  if (t->dtype() != DataType::kString) {
    return invalid_argument(ctx.label(), ": input ", name, " has type ", dtype_name(t->dtype()), ", expected string");
  }
  return Status::ok();
}

// --- StringNormalizer ----------------------------------------------------------

class StringNormalizerKernel final : public Kernel {
 public:
  explicit StringNormalizerKernel(const KernelInfo& info)
      : case_sensitive_(info.attr_int("is_case_sensitive", 0) != 0) {
    const std::string action = info.attr_string("case_change_action", "NONE");
    if (action == "LOWER") {
      action_ = 1;
    } else if (action == "UPPER") {
      action_ = 2;
    } else if (action != "NONE") {
      throw Error(invalid_model(info.label(), ": attribute case_change_action is '", action,
                                "', expected NONE, LOWER or UPPER"));
    }
    for (const std::string& word : info.attr_strings("stopwords")) {
      stopwords_.insert(case_sensitive_ ? word : to_lower(word));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    ONYX_RETURN_IF_ERROR(require_string(ctx, x, "X"));
    const bool two_dim = x->rank() == 2;
    if (!(x->rank() == 1 || (two_dim && x->dim(0) == 1))) {
      return invalid_argument(ctx.label(), ": input X has shape ", shape_to_string(x->shape()),
                              ", expected [C] or [1, C]");
    }
    std::vector<std::string> kept;
    const std::string* xp = x->data<std::string>();
    for (int64_t i = 0; i < x->size(); ++i) {
      if (!stopwords_.empty() && stopwords_.count(case_sensitive_ ? xp[i] : to_lower(xp[i])) != 0) continue;
      kept.push_back(action_ == 1 ? to_lower(xp[i]) : action_ == 2 ? to_upper(xp[i]) : xp[i]);
    }
    // All dropped: one empty string (spec).
    if (kept.empty()) kept.emplace_back();
    const int64_t c = static_cast<int64_t>(kept.size());
    Tensor& y = ctx.allocate_output(0, DataType::kString, two_dim ? Shape{1, c} : Shape{c});
    std::move(kept.begin(), kept.end(), y.data<std::string>());
    return Status::ok();
  }

 private:
  bool case_sensitive_;
  int action_ = 0;  // 0 none, 1 lower, 2 upper
  std::set<std::string> stopwords_;
};

// --- StringConcat ----------------------------------------------------------------

class StringConcatKernel final : public Kernel {
 public:
  explicit StringConcatKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* y = ctx.input_tensor(1);
    ONYX_RETURN_IF_ERROR(require_string(ctx, x, "X"));
    ONYX_RETURN_IF_ERROR(require_string(ctx, y, "Y"));
    ONYX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make(ctx.label(), {x->shape(), y->shape()}, {"X", "Y"}));
    Tensor& z = ctx.allocate_output(0, DataType::kString, plan.output_shape());
    const std::string* xp = x->data<std::string>();
    const std::string* yp = y->data<std::string>();
    std::string* zp = z.data<std::string>();
    const int64_t sx = plan.inner_stride(0), sy = plan.inner_stride(1);
    plan.for_each_span(0, plan.output_size(), [&](const int64_t* offsets, int64_t out, int64_t count) {
      for (int64_t k = 0; k < count; ++k) zp[out + k] = xp[offsets[0] + k * sx] + yp[offsets[1] + k * sy];
    });
    return Status::ok();
  }
};

// --- StringSplit -----------------------------------------------------------------

bool is_python_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

// Python's str.split(delimiter, maxsplit): an empty delimiter splits on runs
// of whitespace and drops leading/trailing whitespace; maxsplit < 0 is unlimited.
std::vector<std::string> split(const std::string& s, const std::string& delimiter, int64_t maxsplit) {
  std::vector<std::string> pieces;
  if (delimiter.empty()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && is_python_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(pieces.size()) == maxsplit) {
        pieces.push_back(s.substr(i));  // the rest keeps its trailing whitespace
        break;
      }
      size_t j = i;
      while (j < s.size() && !is_python_space(s[j])) ++j;
      pieces.push_back(s.substr(i, j - i));
      i = j;
    }
    return pieces;
  }
  size_t start = 0;
  while (true) {
    if (maxsplit >= 0 && static_cast<int64_t>(pieces.size()) == maxsplit) break;
    const size_t found = s.find(delimiter, start);
    if (found == std::string::npos) break;
    pieces.push_back(s.substr(start, found - start));
    start = found + delimiter.size();
  }
  pieces.push_back(s.substr(start));
  return pieces;
}

class StringSplitKernel final : public Kernel {
 public:
  explicit StringSplitKernel(const KernelInfo& info)
      : delimiter_(info.attr_string("delimiter", "")), maxsplit_(info.attr_int("maxsplit", -1)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    ONYX_RETURN_IF_ERROR(require_string(ctx, x, "X"));
    const int64_t n = x->size();
    std::vector<std::vector<std::string>> pieces(static_cast<size_t>(n));
    int64_t widest = 0;
    for (int64_t i = 0; i < n; ++i) {
      pieces[static_cast<size_t>(i)] = split(x->data<std::string>()[i], delimiter_, maxsplit_);
      widest = std::max(widest, static_cast<int64_t>(pieces[static_cast<size_t>(i)].size()));
    }
    Shape shape = x->shape();
    shape.push_back(widest);
    Tensor& y = ctx.allocate_output(0, DataType::kString, shape);
    std::string* yp = y.data<std::string>();
    for (int64_t i = 0; i < n; ++i) {
      auto& row = pieces[static_cast<size_t>(i)];
      for (size_t k = 0; k < row.size(); ++k) yp[i * widest + static_cast<int64_t>(k)] = std::move(row[k]);
    }
    if (ctx.output_count() > 1 && ctx.output_requested(1)) {
      int64_t* counts = ctx.allocate_output(1, DataType::kInt64, x->shape()).data<int64_t>();
      for (int64_t i = 0; i < n; ++i) {
        counts[i] = static_cast<int64_t>(split(x->data<std::string>()[i], delimiter_, maxsplit_).size());
      }
    }
    return Status::ok();
  }

 private:
  std::string delimiter_;
  int64_t maxsplit_;
};

// --- RegexFullMatch --------------------------------------------------------------

class RegexFullMatchKernel final : public Kernel {
 public:
  explicit RegexFullMatchKernel(const KernelInfo& info) : pattern_(info.attr_string("pattern", "")) {
    try {
      regex_ = std::regex(pattern_, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw Error(invalid_model(info.label(), ": attribute pattern '", pattern_, "' is not a valid regex: ", e.what()));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    ONYX_RETURN_IF_ERROR(require_string(ctx, x, "X"));
    Tensor& y = ctx.allocate_output(0, DataType::kBool, x->shape());
    const std::string* xp = x->data<std::string>();
    bool* yp = y.data<bool>();
    for (int64_t i = 0; i < x->size(); ++i) yp[i] = std::regex_match(xp[i], regex_);
    return Status::ok();
  }

 private:
  std::string pattern_;
  std::regex regex_;
};

const std::vector<DataType> kStringTypes = {DataType::kString};

ONYX_REGISTER_CPU_KERNEL("", "StringNormalizer", 10, kLatestVersion, kStringTypes, StringNormalizerKernel);
ONYX_REGISTER_CPU_KERNEL("", "StringConcat", 20, kLatestVersion, kStringTypes, StringConcatKernel);
ONYX_REGISTER_CPU_KERNEL("", "StringSplit", 20, kLatestVersion, kStringTypes, StringSplitKernel);
ONYX_REGISTER_CPU_KERNEL("", "RegexFullMatch", 20, kLatestVersion, kStringTypes, RegexFullMatchKernel);

}  // namespace
}  // namespace onyx::cpu
