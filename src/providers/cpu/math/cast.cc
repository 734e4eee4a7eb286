// Cast and CastLike between float, double, float16, bfloat16, every integer
// type, bool and string, following the conversion rules in the ONNX Cast spec.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "providers/cpu/math/elementwise.h"

namespace onyx::cpu {
namespace {

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<compute_t<T>>;

// Number to number (bool included), per the spec: float -> int is undefined
// out of range (here: NaN gives 0 and values saturate to the 64-bit range,
// then wrap like an integer cast); int -> narrower int discards high bits.
template <typename From, typename To>
To convert_number(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return static_cast<compute_t<From>>(v) != compute_t<From>(0);
  } else if constexpr (std::is_same_v<From, bool>) {
    return static_cast<To>(static_cast<compute_t<To>>(v ? 1 : 0));
  } else if constexpr (kIsFloat<To>) {
    return static_cast<To>(static_cast<compute_t<To>>(static_cast<compute_t<From>>(v)));
  } else if constexpr (kIsFloat<From>) {
    const double d = static_cast<double>(static_cast<compute_t<From>>(v));
    if constexpr (std::is_same_v<To, uint64_t>) {
      if (d >= 9223372036854775808.0) return math::clamp_to_int<uint64_t>(d);
    }
    return static_cast<To>(math::clamp_to_int<int64_t>(d));
  } else {
    return static_cast<To>(v);  // integer to integer: modular (two's complement) since C++20
  }
}

// The shortest decimal that reads back as the same value, laid out like
// numpy's str() (what the ONNX reference produces): "0.1", "100.0", "1e-05",
// "nan", "-inf".
template <typename T>
std::string float_to_string(T value) {
  const double v = static_cast<double>(static_cast<compute_t<T>>(value));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  const int max_digits = std::is_same_v<T, double> ? 17 : 9;
  char buffer[64];
  for (int digits = 1; digits <= max_digits; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*e", digits - 1, v);
    const double back = std::strtod(buffer, nullptr);
    bool same;
    if constexpr (std::is_same_v<T, double>) {
      same = back == v;
    } else if constexpr (std::is_same_v<T, float>) {
      same = static_cast<float>(back) == value;
    } else {
      same = T(static_cast<float>(back)).bits == value.bits;  // equal after rounding to the half type
    }
    if (same || digits == max_digits) break;
  }
  // buffer holds "-d.ddde+XX": split into sign, digits and exponent.
  std::string text(buffer);
  const bool negative = text[0] == '-';
  if (negative) text.erase(0, 1);
  const size_t e = text.find('e');
  const int exponent = std::atoi(text.c_str() + e + 1);
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (text[i] != '.') digits += text[i];
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    char exp_text[16];
    std::snprintf(exp_text, sizeof(exp_text), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp_text;
  } else if (exponent < 0) {
    out.append("0.");
    out.append(static_cast<size_t>(-exponent - 1), '0');
    out.append(digits);
  } else {
    const size_t int_digits = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_digits) {
      out.append(digits);
      out.append(int_digits - digits.size(), '0');
      out.append(".0");
    } else {
      out.append(digits, 0, int_digits);
      out.push_back('.');
      out.append(digits, int_digits, std::string::npos);
    }
  }
  return out;
}

template <typename T>
std::string number_to_string(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "True" : "False";  // numpy's spelling, as the reference writes it
  } else if constexpr (kIsFloat<T>) {
    return float_to_string(v);
  } else {
    return std::to_string(v);
  }
}

bool equals_ignoring_case(const char* a, const char* b) {
  for (; *a != '\0' && *b != '\0'; ++a, ++b) {
    if (std::tolower(static_cast<unsigned char>(*a)) != std::tolower(static_cast<unsigned char>(*b))) return false;
  }
  return *a == *b;
}

// True when only spaces follow `end`.
bool only_space_left(const char* end) {
  while (*end != '\0' && std::isspace(static_cast<unsigned char>(*end))) ++end;
  return *end == '\0';
}

// Parses a decimal or scientific literal ("3.14", "1e-5", "1E8") or one of
// the spec's case-insensitive specials "INF", "+INF", "-INF", "NaN".
bool parse_double(const std::string& text, double& out) {
  const char* s = text.c_str();
  while (std::isspace(static_cast<unsigned char>(*s))) ++s;
  if (*s == '\0') return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(s, &end);
  if (end == s || !only_space_left(end)) return false;
  return true;
}

// Parses a string into To. Integers parse exactly ("9223372036854775807");
// a fractional literal truncates toward zero ("100.5" -> 100).
template <typename To>
bool parse_number(const std::string& text, To& out) {
  if constexpr (std::is_same_v<To, bool>) {
    if (equals_ignoring_case(text.c_str(), "true")) {
      out = true;
      return true;
    }
    if (equals_ignoring_case(text.c_str(), "false")) {
      out = false;
      return true;
    }
    double d;
    if (!parse_double(text, d)) return false;
    out = d != 0.0;
    return true;
  } else if constexpr (kIsFloat<To>) {
    double d;
    if (!parse_double(text, d)) return false;
    out = static_cast<To>(static_cast<compute_t<To>>(d));
    return true;
  } else {
    const char* s = text.c_str();
    char* end = nullptr;
    errno = 0;
    if constexpr (std::is_signed_v<To>) {
      const long long v = std::strtoll(s, &end, 10);
      if (end != s && errno == 0 && only_space_left(end)) {
        out = static_cast<To>(v);
        return true;
      }
    } else {
      const unsigned long long v = std::strtoull(s, &end, 10);
      if (end != s && errno == 0 && only_space_left(end) && std::strchr(s, '-') == nullptr) {
        out = static_cast<To>(v);
        return true;
      }
    }
    double d;
    if (!parse_double(text, d)) return false;
    out = convert_number<double, To>(d);
    return true;
  }
}

bool is_castable(DataType t) {
  switch (t) {
    case DataType::kFloat: case DataType::kDouble: case DataType::kFloat16: case DataType::kBFloat16:
    case DataType::kInt8: case DataType::kInt16: case DataType::kInt32: case DataType::kInt64:
    case DataType::kUInt8: case DataType::kUInt16: case DataType::kUInt32: case DataType::kUInt64:
    case DataType::kBool: case DataType::kString:
      return true;
    default:
      return false;
  }
}

// Writes x converted to `to` as output 0. Same type: the output shares x's buffer.
Status cast_to(KernelContext& ctx, const Tensor& x, DataType to) {
  if (!is_castable(x.dtype())) {
    return not_implemented(ctx.label(), ": casting from ", dtype_name(x.dtype()), " is not supported yet");
  }
  if (x.dtype() == to) {
    ctx.set_output(0, Value(x));
    return Status::ok();
  }
  Tensor& y = ctx.allocate_output(0, to, x.shape());
  const int64_t n = x.size();
  return math::with_label(ctx.label(), dispatch_all(x.dtype(), [&](auto from_tag) -> Status {
    using From = typename decltype(from_tag)::type;
    return dispatch_all(to, [&](auto to_tag) -> Status {
      using To = typename decltype(to_tag)::type;
      const From* in = x.data<From>();
      To* out = y.data<To>();
      if constexpr (std::is_same_v<From, To>) {
        for (int64_t k = 0; k < n; ++k) out[k] = in[k];
      } else if constexpr (std::is_same_v<To, std::string>) {
        math::unary_map(ctx.thread_pool(), n, in, out, [](From v) { return number_to_string(v); }, 100.0);
      } else if constexpr (std::is_same_v<From, std::string>) {
        for (int64_t k = 0; k < n; ++k) {
          if (!parse_number<To>(in[k], out[k])) {
            return invalid_argument("input element ", k, " is '", in[k], "', which is not a number (casting to ",
                                    dtype_name(to), ")");
          }
        }
      } else {
        math::unary_map(ctx.thread_pool(), n, in, out, [](From v) { return convert_number<From, To>(v); });
      }
      return Status::ok();
    });
  }));
}

// Version 1 names the target type as a string ("FLOAT", "INT64", ...).
int64_t dtype_from_name(const std::string& label, const std::string& name) {
  for (int32_t t = 1; t <= static_cast<int32_t>(DataType::kBFloat16); ++t) {
    if (dtype_is_known(t) && equals_ignoring_case(dtype_name(static_cast<DataType>(t)), name.c_str())) return t;
  }
  throw Error(invalid_model(label, ": attribute to = '", name, "' is not an ONNX element type name"));
}

class CastKernel final : public Kernel {
 public:
  explicit CastKernel(const KernelInfo& info) {
    const graph::Attribute* attribute = info.attr("to");
    if (attribute == nullptr) throw Error(invalid_model(info.label(), ": attribute 'to' is missing"));
    int64_t to = attribute->i;
    if (attribute->type == graph::AttributeType::kString) to = dtype_from_name(info.label(), attribute->s);
    if (!dtype_is_known(static_cast<int32_t>(to))) {
      throw Error(invalid_model(info.label(), ": attribute to = ", to, " is not an ONNX element type"));
    }
    to_ = static_cast<DataType>(to);
    if (!is_castable(to_)) {
      throw Error(not_implemented(info.label(), ": casting to ", dtype_name(to_), " is not supported yet"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "input"));
    return cast_to(ctx, *x, to_);
  }

 private:
  DataType to_ = DataType::kUndefined;
};

class CastLikeKernel final : public Kernel {
 public:
  explicit CastLikeKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "input"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* like, math::required_input(ctx, 1, "target_type"));
    if (!is_castable(like->dtype())) {
      return not_implemented(ctx.label(), ": casting to ", dtype_name(like->dtype()), " is not supported yet");
    }
    return cast_to(ctx, *x, like->dtype());
  }
};

}  // namespace

// 6 dropped the string-valued `to`; 9/13 added string and bfloat16; 19 added
// `saturate` (only for float8, not supported yet); later versions add more
// element types (float8, int4, ...).
ONYX_REGISTER_CPU_KERNEL("", "Cast", 1, 5, types::all(), CastKernel);
ONYX_REGISTER_CPU_KERNEL("", "Cast", 6, kLatestVersion, types::all(), CastKernel);
ONYX_REGISTER_CPU_KERNEL("", "CastLike", 15, kLatestVersion, types::all(), CastLikeKernel);

}  // namespace onyx::cpu
