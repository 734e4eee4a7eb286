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

// The types convert_into handles directly.
bool is_plain(DataType t) {
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

// Converts between plain types into an allocated y of x's shape.
Status convert_into(const Tensor& x, Tensor& y, ThreadPool* pool) {
  const int64_t n = x.size();
  const DataType to = y.dtype();
  return dispatch_all(x.dtype(), [&](auto from_tag) -> Status {
    using From = typename decltype(from_tag)::type;
    return dispatch_all(to, [&](auto to_tag) -> Status {
      using To = typename decltype(to_tag)::type;
      const From* in = x.data<From>();
      To* out = y.data<To>();
      if constexpr (std::is_same_v<From, To>) {
        for (int64_t k = 0; k < n; ++k) out[k] = in[k];
      } else if constexpr (std::is_same_v<To, std::string>) {
        math::unary_map(pool, n, in, out, [](From v) { return number_to_string(v); }, 100.0);
      } else if constexpr (std::is_same_v<From, std::string>) {
        for (int64_t k = 0; k < n; ++k) {
          if (!parse_number<To>(in[k], out[k])) {
            return invalid_argument("input element ", k, " is '", in[k], "', which is not a number (casting to ",
                                    dtype_name(to), ")");
          }
        }
      } else {
        math::unary_map(pool, n, in, out, [](From v) { return convert_number<From, To>(v); });
      }
      return Status::ok();
    });
  });
}

// ---------------------------------------------------------------------------
// The small formats: float8 (4 kinds), float4e2m1, float8e8m0 and the 4- and
// 2-bit integers. In memory each element is one byte holding its code (the
// signed sub-byte integers sign-extended), as the model reader unpacks them.

// A small IEEE-like binary float format.
struct MiniFloat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  double max;              // largest finite value
  enum class Specials { kFnNaN, kFnuz, kIeee, kNone } specials;
  uint8_t nan_code;        // the code a NaN input becomes
};

const MiniFloat* mini_float(DataType t) {
  static const MiniFloat e4m3fn{4, 3, 7, 448.0, MiniFloat::Specials::kFnNaN, 0x7F};
  static const MiniFloat e4m3fnuz{4, 3, 8, 240.0, MiniFloat::Specials::kFnuz, 0x80};
  static const MiniFloat e5m2{5, 2, 15, 57344.0, MiniFloat::Specials::kIeee, 0x7E};
  static const MiniFloat e5m2fnuz{5, 2, 16, 57344.0, MiniFloat::Specials::kFnuz, 0x80};
  static const MiniFloat e2m1{2, 1, 1, 6.0, MiniFloat::Specials::kNone, 0x08};  // no NaN: the reference writes -0
  switch (t) {
    case DataType::kFloat8E4M3FN: return &e4m3fn;
    case DataType::kFloat8E4M3FNUZ: return &e4m3fnuz;
    case DataType::kFloat8E5M2: return &e5m2;
    case DataType::kFloat8E5M2FNUZ: return &e5m2fnuz;
    case DataType::kFloat4E2M1: return &e2m1;
    default: return nullptr;
  }
}

// Bits of the 4- and 2-bit integer types; 0 for other types.
int small_int_bits(DataType t) {
  switch (t) {
    case DataType::kInt4: case DataType::kUInt4: return 4;
    case DataType::kInt2: case DataType::kUInt2: return 2;
    default: return 0;
  }
}
bool small_int_signed(DataType t) { return t == DataType::kInt4 || t == DataType::kInt2; }

bool is_small(DataType t) {
  return mini_float(t) != nullptr || small_int_bits(t) != 0 || t == DataType::kFloat8E8M0;
}

double decode_mini_float(const MiniFloat& f, uint8_t code) {
  const int total = f.exponent_bits + f.mantissa_bits;
  const bool negative = (code >> total) & 1u;
  const int exponent = (code >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
  const int mantissa = code & ((1 << f.mantissa_bits) - 1);
  const int max_exponent = (1 << f.exponent_bits) - 1;
  switch (f.specials) {
    case MiniFloat::Specials::kFnuz:
      if (code == 0x80) return std::numeric_limits<double>::quiet_NaN();
      break;
    case MiniFloat::Specials::kFnNaN:
      if (exponent == max_exponent && mantissa == (1 << f.mantissa_bits) - 1) {
        return std::numeric_limits<double>::quiet_NaN();
      }
      break;
    case MiniFloat::Specials::kIeee:
      if (exponent == max_exponent) {
        return mantissa == 0 ? (negative ? -HUGE_VAL : HUGE_VAL) : std::numeric_limits<double>::quiet_NaN();
      }
      break;
    case MiniFloat::Specials::kNone:
      break;
  }
  double value = exponent == 0
                     ? std::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.mantissa_bits)
                     : std::ldexp(1.0 + std::ldexp(static_cast<double>(mantissa), -f.mantissa_bits), exponent - f.bias);
  return negative ? -value : value;
}

// Rounds to nearest even; out of range saturates to +-max when `saturate`
// (always for float4), else becomes NaN (inf for E5M2), per the Cast spec.
uint8_t encode_mini_float(const MiniFloat& f, double v, bool saturate) {
  const int total = f.exponent_bits + f.mantissa_bits;
  if (std::isnan(v)) return f.nan_code;
  const bool negative = std::signbit(v);
  const uint8_t sign = negative ? static_cast<uint8_t>(1u << total) : 0;
  const bool fnuz = f.specials == MiniFloat::Specials::kFnuz;
  const uint8_t max_exponent = static_cast<uint8_t>((1 << f.exponent_bits) - 1);
  const auto overflow = [&]() -> uint8_t {
    if (saturate || f.specials == MiniFloat::Specials::kNone) {
      return static_cast<uint8_t>(sign | encode_mini_float(f, f.max, false));
    }
    if (f.specials == MiniFloat::Specials::kIeee) return static_cast<uint8_t>(sign | (max_exponent << f.mantissa_bits));
    if (fnuz) return 0x80;
    return static_cast<uint8_t>(sign | f.nan_code);
  };
  double a = std::fabs(v);
  if (std::isinf(a)) return overflow();
  const int min_exponent = 1 - f.bias;  // of the normal numbers
  if (a != 0) {
    int e2;
    std::frexp(a, &e2);
    const int exponent = std::max(e2 - 1, min_exponent);
    const double quantum = std::ldexp(1.0, exponent - f.mantissa_bits);
    a = std::nearbyint(a / quantum) * quantum;  // exact scaling by a power of two, then round half to even
  }
  if (a > f.max) return overflow();
  if (a == 0) return fnuz ? 0 : sign;
  int e2;
  std::frexp(a, &e2);
  const int exponent = e2 - 1;
  uint32_t exponent_field;
  uint32_t mantissa_field;
  if (exponent < min_exponent) {
    exponent_field = 0;
    mantissa_field = static_cast<uint32_t>(std::ldexp(a, f.bias - 1 + f.mantissa_bits));
  } else {
    exponent_field = static_cast<uint32_t>(exponent + f.bias);
    mantissa_field = static_cast<uint32_t>(std::ldexp(std::ldexp(a, -exponent) - 1.0, f.mantissa_bits));
  }
  return static_cast<uint8_t>(sign | (exponent_field << f.mantissa_bits) | mantissa_field);
}

// float8e8m0: a bare biased exponent, 2^(code - 127); 0xFF is NaN. Follows
// the reference: the float32 exponent field, rounded by `round_mode`.
enum class RoundMode { kUp, kDown, kNearest };

uint8_t encode_e8m0(double v, bool saturate, RoundMode mode) {
  const float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint32_t exponent = (bits >> 23) & 0xFFu;
  if (exponent == 0xFF) return 0xFF;
  bool round_up = false;
  if (mode == RoundMode::kUp) {
    round_up = (bits & 0x7FFFFFu) != 0;
  } else if (mode == RoundMode::kNearest) {
    const bool guard = (bits & 0x400000u) != 0;
    const bool round = (bits & 0x200000u) != 0;
    const bool sticky = (bits & 0x1FFFFFu) != 0;
    round_up = guard && (round || sticky || exponent > 0);
  }
  if (round_up && !(saturate && exponent == 0xFE)) ++exponent;
  return static_cast<uint8_t>(exponent);
}

double decode_e8m0(uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(code) - 127);
}

// Wraps an integer into a `bits`-bit field (high bits discarded, like any
// narrowing integer cast), sign-extended for the signed types.
uint8_t encode_small_int(int64_t v, int bits, bool is_signed) {
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  uint8_t code = static_cast<uint8_t>(static_cast<uint64_t>(v) & mask);
  if (is_signed && (code & (1u << (bits - 1)))) code = static_cast<uint8_t>(code | ~mask);
  return code;
}

struct CastOptions {
  bool saturate = true;
  RoundMode round_mode = RoundMode::kUp;
};

// Small types pass through a wide intermediate: double for float formats
// (exact for all of them), int64 for the small integers.
Status cast_small(const Tensor& x, Tensor& y, const CastOptions& options, ThreadPool* pool) {
  const int64_t n = x.size();
  Tensor wide;
  if (is_small(x.dtype())) {
    const uint8_t* codes = x.data<uint8_t>();
    if (const MiniFloat* f = mini_float(x.dtype())) {
      wide = Tensor(DataType::kDouble, x.shape());
      double* out = wide.data<double>();
      for (int64_t k = 0; k < n; ++k) out[k] = decode_mini_float(*f, codes[k]);
    } else if (x.dtype() == DataType::kFloat8E8M0) {
      wide = Tensor(DataType::kDouble, x.shape());
      double* out = wide.data<double>();
      for (int64_t k = 0; k < n; ++k) out[k] = decode_e8m0(codes[k]);
    } else {
      wide = Tensor(DataType::kInt64, x.shape());
      int64_t* out = wide.data<int64_t>();
      const bool is_signed = small_int_signed(x.dtype());
      for (int64_t k = 0; k < n; ++k) {
        out[k] = is_signed ? static_cast<int64_t>(static_cast<int8_t>(codes[k])) : static_cast<int64_t>(codes[k]);
      }
    }
  } else {
    const bool floating = x.dtype() == DataType::kFloat || x.dtype() == DataType::kDouble ||
                          x.dtype() == DataType::kFloat16 || x.dtype() == DataType::kBFloat16 ||
                          x.dtype() == DataType::kString;
    wide = Tensor(floating ? DataType::kDouble : DataType::kInt64, x.shape());
    ONYX_RETURN_IF_ERROR(convert_into(x, wide, pool));
  }
  if (!is_small(y.dtype())) return convert_into(wide, y, pool);

  uint8_t* codes = y.data<uint8_t>();
  const bool wide_is_double = wide.dtype() == DataType::kDouble;
  const auto as_double = [&](int64_t k) {
    return wide_is_double ? wide.data<double>()[k] : static_cast<double>(wide.data<int64_t>()[k]);
  };
  if (const MiniFloat* f = mini_float(y.dtype())) {
    for (int64_t k = 0; k < n; ++k) codes[k] = encode_mini_float(*f, as_double(k), options.saturate);
  } else if (y.dtype() == DataType::kFloat8E8M0) {
    for (int64_t k = 0; k < n; ++k) codes[k] = encode_e8m0(as_double(k), options.saturate, options.round_mode);
  } else {
    const int bits = small_int_bits(y.dtype());
    const bool is_signed = small_int_signed(y.dtype());
    for (int64_t k = 0; k < n; ++k) {
      const int64_t v = wide_is_double ? convert_number<double, int64_t>(wide.data<double>()[k]) : wide.data<int64_t>()[k];
      codes[k] = encode_small_int(v, bits, is_signed);
    }
  }
  return Status::ok();
}

bool is_castable(DataType t) { return is_plain(t) || is_small(t); }

// Writes x converted to `to` as output 0. Same type: the output shares x's buffer.
Status cast_to(KernelContext& ctx, const Tensor& x, DataType to, const CastOptions& options) {
  if (!is_castable(x.dtype())) {
    return not_implemented(ctx.label(), ": casting from ", dtype_name(x.dtype()), " is not supported");
  }
  if (x.dtype() == to) {
    ctx.set_output(0, Value(x));
    return Status::ok();
  }
  Tensor& y = ctx.allocate_output(0, to, x.shape());
  if (is_small(x.dtype()) || is_small(to)) return math::with_label(ctx.label(), cast_small(x, y, options, ctx.thread_pool()));
  return math::with_label(ctx.label(), convert_into(x, y, ctx.thread_pool()));
}

// Version 1 names the target type as a string ("FLOAT", "INT64", ...).
int64_t dtype_from_name(const std::string& label, const std::string& name) {
  for (int32_t t = 1; t <= static_cast<int32_t>(DataType::kBFloat16); ++t) {
    if (dtype_is_known(t) && equals_ignoring_case(dtype_name(static_cast<DataType>(t)), name.c_str())) return t;
  }
  throw Error(invalid_model(label, ": attribute to = '", name, "' is not an ONNX element type name"));
}

// `saturate` (version 19) and `round_mode` (version 24) only affect the small float formats.
CastOptions read_options(const KernelInfo& info) {
  CastOptions options;
  options.saturate = info.attr_int("saturate", 1) != 0;
  const std::string mode = info.attr_string("round_mode", "up");
  if (mode == "up") {
    options.round_mode = RoundMode::kUp;
  } else if (mode == "down") {
    options.round_mode = RoundMode::kDown;
  } else if (mode == "nearest") {
    options.round_mode = RoundMode::kNearest;
  } else {
    throw Error(invalid_model(info.label(), ": attribute round_mode is '", mode, "', expected up, down or nearest"));
  }
  return options;
}

class CastKernel final : public Kernel {
 public:
  explicit CastKernel(const KernelInfo& info) : options_(read_options(info)) {
    const graph::Attribute* attribute = info.attr("to");
    if (attribute == nullptr) throw Error(invalid_model(info.label(), ": attribute 'to' is missing"));
    int64_t to = attribute->i;
    if (attribute->type == graph::AttributeType::kString) to = dtype_from_name(info.label(), attribute->s);
    if (to < 0 || to > INT32_MAX || !dtype_is_known(static_cast<int32_t>(to))) {
      throw Error(invalid_model(info.label(), ": attribute to = ", to, " is not an ONNX element type"));
    }
    to_ = static_cast<DataType>(to);
    if (!is_castable(to_)) {
      throw Error(not_implemented(info.label(), ": casting to ", dtype_name(to_), " is not supported"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "input"));
    return cast_to(ctx, *x, to_, options_);
  }

 private:
  CastOptions options_;
  DataType to_ = DataType::kUndefined;
};

class CastLikeKernel final : public Kernel {
 public:
  explicit CastLikeKernel(const KernelInfo& info) : options_(read_options(info)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 0, "input"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* like, math::required_input(ctx, 1, "target_type"));
    if (!is_castable(like->dtype())) {
      return not_implemented(ctx.label(), ": casting to ", dtype_name(like->dtype()), " is not supported");
    }
    return cast_to(ctx, *x, like->dtype(), options_);
  }

 private:
  CastOptions options_;
};

}  // namespace

// 6 dropped the string-valued `to`; 9/13 added string and bfloat16; 19 added
// float8 and `saturate`; 21-25 the 4- and 2-bit types and float8e8m0 with `round_mode`.
ONYX_REGISTER_CPU_KERNEL("", "Cast", 1, 5, types::all_with_small_formats(), CastKernel);
ONYX_REGISTER_CPU_KERNEL("", "Cast", 6, kLatestVersion, types::all_with_small_formats(), CastKernel);
ONYX_REGISTER_CPU_KERNEL("", "CastLike", 15, kLatestVersion, types::all_with_small_formats(), CastLikeKernel);

}  // namespace onyx::cpu
