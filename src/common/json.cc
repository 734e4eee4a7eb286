#include "common/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_set>

namespace onyx {
namespace {

// Floating-point <charconv> where the standard library has it (libstdc++);
// libc++ before LLVM 17 (Emscripten's, for web/) has only the integer forms,
// so there the C library does the same job.
#if defined(__cpp_lib_to_chars)
bool parse_double(const char* first, const char* last, double& value) {
  auto [end, ec] = std::from_chars(first, last, value);
  return ec == std::errc() && end == last;
}
// The shortest scientific form that reads back as `value`: "-1.2345e+20".
std::string shortest_scientific(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  return std::string(buffer, end);
}
#else
bool parse_double(const char* first, const char* last, double& value) {
  const std::string text(first, last);  // strtod needs the terminator
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(value);
}
std::string shortest_scientific(double value) {
  char buffer[64];
  for (int digits = 0; digits < 17; ++digits) {
    std::snprintf(buffer, sizeof(buffer), "%.*e", digits, value);
    if (std::strtod(buffer, nullptr) == value) return buffer;
  }
  std::snprintf(buffer, sizeof(buffer), "%.17e", value);
  return buffer;
}
#endif

}  // namespace


const char* json_kind_name(Json::Kind kind) {
  switch (kind) {
    case Json::Kind::kNull:
      return "null";
    case Json::Kind::kBool:
      return "a bool";
    case Json::Kind::kInt:
      return "an integer";
    case Json::Kind::kDouble:
      return "a number";
    case Json::Kind::kString:
      return "a string";
    case Json::Kind::kArray:
      return "an array";
    case Json::Kind::kObject:
      return "an object";
  }
  return "?";
}

namespace {

[[noreturn]] void wrong_kind(const char* expected, Json::Kind found) {
  throw Error(invalid_argument("expected ", expected, ", found ", json_kind_name(found)));
}

}  // namespace

bool Json::as_bool() const {
  if (kind_ != Kind::kBool) wrong_kind("a bool", kind_);
  return bool_;
}

int64_t Json::as_int() const {
  if (kind_ != Kind::kInt) wrong_kind("an integer", kind_);
  return int_;
}

double Json::as_double() const {
  if (kind_ == Kind::kInt) return static_cast<double>(int_);
  if (kind_ != Kind::kDouble) wrong_kind("a number", kind_);
  return double_;
}

const std::string& Json::as_string() const {
  if (kind_ != Kind::kString) wrong_kind("a string", kind_);
  return string_;
}

const Json::Array& Json::as_array() const {
  if (kind_ != Kind::kArray) wrong_kind("an array", kind_);
  return array_;
}

const Json::Object& Json::as_object() const {
  if (kind_ != Kind::kObject) wrong_kind("an object", kind_);
  return object_;
}

const Json* Json::find(std::string_view key) const {
  for (const auto& [name, value] : as_object()) {
    if (name == key) return &value;
  }
  return nullptr;
}

const Json& Json::at(std::string_view key) const {
  const Json* value = find(key);
  if (value == nullptr) throw Error(invalid_argument("the key '", key, "' is missing"));
  return *value;
}

Json& Json::set(const std::string& key, Json value) {
  as_object();  // checks the kind
  for (auto& [name, member] : object_) {
    if (name == key) return member = std::move(value);
  }
  object_.emplace_back(key, std::move(value));
  return object_.back().second;
}

void Json::push_back(Json value) {
  as_array();
  array_.push_back(std::move(value));
}

namespace {

// Deep enough for any header; keeps a hostile file from exhausting the stack.
constexpr int kMaxDepth = 256;

class Parser {
 public:
  Parser(std::string_view text, bool large_integers_as_doubles)
      : text_(text), large_integers_as_doubles_(large_integers_as_doubles) {}

  Result<Json> document() {
    Json value;
    skip_space();
    ONYX_RETURN_IF_ERROR(parse_value(value, 0));
    skip_space();
    if (pos_ != text_.size()) return error("unexpected text after the document");
    return value;
  }

 private:
  Status error(const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return invalid_argument("JSON: ", what, " at line ", line, ", column ", column, " (byte ", pos_, ")");
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++pos_;
  }

  bool consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Status parse_value(Json& out, int depth) {
    if (depth > kMaxDepth) return error("nesting deeper than 256 levels");
    if (at_end()) return error("unexpected end of the text, expected a value");
    const char c = peek();
    if (c == '{') return parse_object(out, depth);
    if (c == '[') return parse_array(out, depth);
    if (c == '"') {
      std::string s;
      ONYX_RETURN_IF_ERROR(parse_string(s));
      out = Json(std::move(s));
      return Status::ok();
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(out);
    if (consume("true")) {
      out = Json(true);
      return Status::ok();
    }
    if (consume("false")) {
      out = Json(false);
      return Status::ok();
    }
    if (consume("null")) {
      out = Json();
      return Status::ok();
    }
    return error(str_cat("unexpected character '", c, "', expected a value"));
  }

  Status parse_object(Json& out, int depth) {
    ++pos_;  // '{'
    Json::Object members;
    std::unordered_set<std::string> seen;  // the keys, once there are kScanMembers
    skip_space();
    if (peek() == '}') {
      ++pos_;
      out = Json(std::move(members));
      return Status::ok();
    }
    while (true) {
      skip_space();
      if (peek() != '"') return error("expected a string key");
      std::string key;
      ONYX_RETURN_IF_ERROR(parse_string(key));
      skip_space();
      if (peek() != ':') return error("expected ':' after an object key");
      ++pos_;
      skip_space();
      Json value;
      ONYX_RETURN_IF_ERROR(parse_value(value, depth + 1));
      // Python keeps the last of repeated keys; a file that repeats one was
      // not written by onyx, so refuse it rather than guess. Large objects (a
      // tokenizer's vocabulary) check through a set, small ones by a scan.
      bool repeated = false;
      if (members.size() < kScanMembers) {
        for (const auto& member : members) repeated = repeated || member.first == key;
        if (!repeated && members.size() + 1 == kScanMembers) {
          for (const auto& member : members) seen.insert(member.first);
          seen.insert(key);
        }
      } else {
        repeated = !seen.insert(key).second;
      }
      if (repeated) return error(str_cat("the key '", key, "' appears twice"));
      members.emplace_back(std::move(key), std::move(value));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        out = Json(std::move(members));
        return Status::ok();
      }
      return error("expected ',' or '}'");
    }
  }

  Status parse_array(Json& out, int depth) {
    ++pos_;  // '['
    Json::Array items;
    skip_space();
    if (peek() == ']') {
      ++pos_;
      out = Json(std::move(items));
      return Status::ok();
    }
    while (true) {
      skip_space();
      Json value;
      ONYX_RETURN_IF_ERROR(parse_value(value, depth + 1));
      items.push_back(std::move(value));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        out = Json(std::move(items));
        return Status::ok();
      }
      return error("expected ',' or ']'");
    }
  }

  Status parse_hex4(uint32_t& code) {
    code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = peek();
      uint32_t digit;
      if (h >= '0' && h <= '9') {
        digit = static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        digit = static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        digit = static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return error("expected 4 hex digits after \\u");
      }
      code = code * 16 + digit;
      ++pos_;
    }
    return Status::ok();
  }

  static void append_utf8(std::string& out, uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  Status parse_string(std::string& out) {
    ++pos_;  // '"'
    while (true) {
      if (at_end()) return error("unterminated string");
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return Status::ok();
      }
      if (static_cast<unsigned char>(c) < 0x20) return error("a control character inside a string (escape it)");
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (at_end()) return error("unterminated string");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t code;
          ONYX_RETURN_IF_ERROR(parse_hex4(code));
          if (code >= 0xd800 && code < 0xdc00) {  // a high surrogate: its low half must follow
            if (!consume("\\u")) return error("a UTF-16 high surrogate without its low surrogate");
            uint32_t low;
            ONYX_RETURN_IF_ERROR(parse_hex4(low));
            if (low < 0xdc00 || low >= 0xe000) return error("a UTF-16 high surrogate without its low surrogate");
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          } else if (code >= 0xdc00 && code < 0xe000) {
            return error("a UTF-16 low surrogate without its high surrogate");
          }
          append_utf8(out, code);
          break;
        }
        default:
          pos_ -= 2;
          return error(str_cat("unknown escape '\\", e, "'"));
      }
    }
  }

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  Status parse_number(Json& out) {
    const size_t start = pos_;
    bool integral = true;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
      if (is_digit(peek())) return error("a number with a leading zero");
    } else if (is_digit(peek())) {
      while (is_digit(peek())) ++pos_;
    } else {
      return error("expected a digit");
    }
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!is_digit(peek())) return error("expected a digit after '.'");
      while (is_digit(peek())) ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!is_digit(peek())) return error("expected a digit in the exponent");
      while (is_digit(peek())) ++pos_;
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      int64_t value = 0;
      auto [end, ec] = std::from_chars(first, last, value);
      if (ec == std::errc() && end == last) {
        out = Json(value);
        return Status::ok();
      }
      if (!large_integers_as_doubles_ || ec != std::errc::result_out_of_range) {
        pos_ = start;
        return error("an integer outside the int64 range");
      }
    }
    double value = 0.0;
    if (!parse_double(first, last, value) || !std::isfinite(value)) {
      pos_ = start;
      return error("a number outside the double range");
    }
    out = Json(value);
    return Status::ok();
  }

  std::string_view text_;
  bool large_integers_as_doubles_ = false;
  static constexpr size_t kScanMembers = 16;
  size_t pos_ = 0;
};

// Python's repr of a float: the shortest digits that read back the same,
// in fixed notation for exponents -4..15 ("0.001", "100.0") and scientific
// otherwise ("1e-05", "1.5e+16").
std::string python_float_repr(double value) {
  if (value == 0.0) return std::signbit(value) ? "-0.0" : "0.0";
  std::string sci = shortest_scientific(value);  // "-1.2345e+20"
  std::string sign;
  if (sci[0] == '-') {
    sign = "-";
    sci.erase(0, 1);
  }
  const size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string out = sign;
  if (exponent < -4 || exponent >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof(exp), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out + exp;
  }
  if (exponent < 0) return out + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  const size_t whole = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= whole) return out + digits + std::string(whole - digits.size(), '0') + ".0";
  return out + digits.substr(0, whole) + "." + digits.substr(whole);
}

// Decodes one UTF-8 sequence at s[i]; false when it is malformed.
bool next_code_point(const std::string& s, size_t& i, uint32_t& code) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char lead = byte(i);
  size_t length;
  if (lead < 0x80) {
    code = lead;
    length = 1;
  } else if ((lead & 0xe0) == 0xc0) {
    code = lead & 0x1fu;
    length = 2;
  } else if ((lead & 0xf0) == 0xe0) {
    code = lead & 0x0fu;
    length = 3;
  } else if ((lead & 0xf8) == 0xf0) {
    code = lead & 0x07u;
    length = 4;
  } else {
    return false;
  }
  if (i + length > s.size()) return false;
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return false;
    code = (code << 6) | (byte(i + k) & 0x3fu);
  }
  static const uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || code > 0x10ffff || (code >= 0xd800 && code < 0xe000)) return false;
  i += length;
  return true;
}

// As Python's ensure_ascii: printable ASCII as is, the rest escaped.
Status write_string(const std::string& s, std::string& out) {
  out += '"';
  char escape[16];
  for (size_t i = 0; i < s.size();) {
    uint32_t code;
    if (!next_code_point(s, i, code)) return invalid_argument("JSON: a string that is not UTF-8 at byte ", i);
    switch (code) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (code >= 0x20 && code < 0x7f) {
      out += static_cast<char>(code);
    } else if (code < 0x10000) {
      std::snprintf(escape, sizeof(escape), "\\u%04x", code);
      out += escape;
    } else {
      const uint32_t v = code - 0x10000;
      std::snprintf(escape, sizeof(escape), "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
      out += escape;
    }
  }
  out += '"';
  return Status::ok();
}

Status write_value(const Json& value, std::string& out) {
  switch (value.kind()) {
    case Json::Kind::kNull:
      out += "null";
      break;
    case Json::Kind::kBool:
      out += value.as_bool() ? "true" : "false";
      break;
    case Json::Kind::kInt:
      out += std::to_string(value.as_int());
      break;
    case Json::Kind::kDouble:
      if (!std::isfinite(value.as_double())) return invalid_argument("JSON: cannot write ", value.as_double());
      out += python_float_repr(value.as_double());
      break;
    case Json::Kind::kString:
      return write_string(value.as_string(), out);
    case Json::Kind::kArray: {
      out += '[';
      const char* separator = "";
      for (const Json& item : value.as_array()) {
        out += separator;
        ONYX_RETURN_IF_ERROR(write_value(item, out));
        separator = ", ";
      }
      out += ']';
      break;
    }
    case Json::Kind::kObject: {
      out += '{';
      const char* separator = "";
      for (const auto& [key, member] : value.as_object()) {
        out += separator;
        ONYX_RETURN_IF_ERROR(write_string(key, out));
        out += ": ";
        ONYX_RETURN_IF_ERROR(write_value(member, out));
        separator = ", ";
      }
      out += '}';
      break;
    }
  }
  return Status::ok();
}

}  // namespace

Result<Json> parse_json(std::string_view text) { return Parser(text, false).document(); }

Result<Json> parse_json(std::string_view text, bool large_integers_as_doubles) {
  return Parser(text, large_integers_as_doubles).document();
}

Result<std::string> to_json(const Json& value) {
  std::string out;
  ONYX_RETURN_IF_ERROR(write_value(value, out));
  return out;
}

}  // namespace onyx
