// A small, strict JSON reader and writer: the training files' metadata,
// the checkpoint header and the "onyx.training" model metadata. The core may
// not depend on third-party libraries, and these documents are small.
//
// Objects keep their keys in the order read or added, as Python's dicts do,
// so a header written here has the same bytes as Python's json.dumps of the
// same dict (default separators ", " and ": ", ensure_ascii, floats as repr).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onyx/status.h"

namespace onyx {

class Json {
 public:
  enum class Kind { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;                                                             // null
  Json(bool value) : kind_(Kind::kBool), bool_(value) {}                        // NOLINT: a JSON value of any type
  Json(int value) : kind_(Kind::kInt), int_(value) {}                           // NOLINT
  Json(int64_t value) : kind_(Kind::kInt), int_(value) {}                       // NOLINT
  Json(double value) : kind_(Kind::kDouble), double_(value) {}                  // NOLINT
  Json(std::string value) : kind_(Kind::kString), string_(std::move(value)) {}  // NOLINT
  Json(const char* value) : Json(std::string(value)) {}                         // NOLINT
  Json(Array value) : kind_(Kind::kArray), array_(std::move(value)) {}          // NOLINT
  Json(Object value) : kind_(Kind::kObject), object_(std::move(value)) {}       // NOLINT
  static Json array() { return Json(Array{}); }
  static Json object() { return Json(Object{}); }

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kDouble; }

  // Typed access; the wrong kind throws onyx::Error saying what was expected
  // and what was found ("expected a string, found an array").
  bool as_bool() const;
  int64_t as_int() const;
  double as_double() const;  // an integer converts
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;

  // Object members: find returns nullptr when absent; at throws naming the key.
  const Json* find(std::string_view key) const;
  const Json& at(std::string_view key) const;
  // Replaces the member's value, or appends the member.
  Json& set(const std::string& key, Json value);
  // Appends to an array.
  void push_back(Json value);

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  int64_t int_ = 0;
  double double_ = 0.0;
  std::string string_;
  Array array_;
  Object object_;
};

// "null", "a bool", "an integer", "a number", "a string", "an array", "an object".
const char* json_kind_name(Json::Kind kind);

// Parses one JSON document (surrounding whitespace allowed). Errors name what
// is wrong and where: "JSON: expected ',' or '}' at line 1, column 9 (byte 8)".
// Integers without fraction or exponent read as kInt (int64; larger ones are
// an error), the rest as kDouble. NaN and Infinity are not JSON and refused.
Result<Json> parse_json(std::string_view text);
// As above, but an integer beyond int64 reads as a kDouble, as Python's json
// writes 1e30 given as an int (transformers' model_max_length).
Result<Json> parse_json(std::string_view text, bool large_integers_as_doubles);

// Writes `value` as Python's json.dumps does by default. Non-finite numbers
// and strings that are not UTF-8 are errors.
Result<std::string> to_json(const Json& value);

}  // namespace onyx
