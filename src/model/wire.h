// Protobuf wire-format primitives (varints, tags, fixed-width and
// length-delimited fields) shared by the ONNX reader and writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace onyx::model::wire {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,  // deprecated groups: never used by ONNX, rejected
  kEndGroup = 4,
  kFixed32 = 5,
};

// Field numbers are 29 bits; anything above is a corrupt tag.
inline constexpr uint64_t kMaxFieldNumber = (1u << 29) - 1;

// A bounds-checked read position inside [begin, end) of a buffer whose first
// byte is `origin`, so every error can name an absolute byte offset. The
// primitives return false (and leave the cursor where the bad field started)
// instead of reading past `end`.
class Cursor {
 public:
  Cursor(const char* origin, const char* begin, const char* end)
      : origin_(origin), pos_(begin), end_(end), field_start_(offset()) {}
  explicit Cursor(std::string_view bytes) : Cursor(bytes.data(), bytes.data(), bytes.data() + bytes.size()) {}

  bool at_end() const { return pos_ >= end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - pos_); }
  size_t offset() const { return static_cast<size_t>(pos_ - origin_); }
  const char* origin() const { return origin_; }

  // Where the field being decoded began (its tag), for error messages.
  void mark_field_start() { field_start_ = offset(); }
  size_t field_start() const { return field_start_; }

  bool read_varint(uint64_t& value) {
    const char* p = pos_;
    uint64_t result = 0;
    // A varint has at most 10 bytes; the 10th may only carry the top bit.
    for (int shift = 0; shift < 70; shift += 7) {
      if (p >= end_) return false;
      const uint8_t byte = static_cast<uint8_t>(*p++);
      if (shift == 63 && byte > 1) return false;
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        pos_ = p;
        value = result;
        return true;
      }
    }
    return false;
  }

  bool read_fixed32(uint32_t& value) {
    if (remaining() < 4) return false;
    unsigned char b[4];
    std::memcpy(b, pos_, 4);
    value = static_cast<uint32_t>(b[0]) | (static_cast<uint32_t>(b[1]) << 8) | (static_cast<uint32_t>(b[2]) << 16) |
            (static_cast<uint32_t>(b[3]) << 24);
    pos_ += 4;
    return true;
  }

  bool read_fixed64(uint64_t& value) {
    uint32_t lo = 0, hi = 0;
    if (remaining() < 8) return false;
    read_fixed32(lo);
    read_fixed32(hi);
    value = static_cast<uint64_t>(lo) | (static_cast<uint64_t>(hi) << 32);
    return true;
  }

  // Reads a length prefix and the bytes it announces. The length is checked
  // against the bytes that are really left before anything is taken.
  bool read_length_delimited(std::string_view& bytes) {
    const char* start = pos_;
    uint64_t length = 0;
    if (!read_varint(length)) return false;
    if (length > remaining()) {
      pos_ = start;
      return false;
    }
    bytes = std::string_view(pos_, static_cast<size_t>(length));
    pos_ += length;
    return true;
  }

  // A cursor over bytes previously returned by read_length_delimited.
  Cursor sub(std::string_view bytes) const { return Cursor(origin_, bytes.data(), bytes.data() + bytes.size()); }

  // Skips one field's payload of the given wire type.
  bool skip(WireType type) {
    uint64_t ignored = 0;
    std::string_view bytes;
    switch (type) {
      case WireType::kVarint: return read_varint(ignored);
      case WireType::kFixed64:
        if (remaining() < 8) return false;
        pos_ += 8;
        return true;
      case WireType::kLengthDelimited: return read_length_delimited(bytes);
      case WireType::kFixed32:
        if (remaining() < 4) return false;
        pos_ += 4;
        return true;
      default: return false;
    }
  }

 private:
  const char* origin_;
  const char* pos_;
  const char* end_;
  size_t field_start_ = 0;
};

inline size_t varint_size(uint64_t value) {
  size_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

// Appends wire-format fields to a string. Nested messages are written in
// place: begin_message leaves one byte for the length and end_message widens
// it when the body turned out longer than 127 bytes (only the body moves).
class Writer {
 public:
  explicit Writer(std::string& out) : out_(out) {}

  std::string& out() { return out_; }

  void varint(uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
  }
  void tag(uint32_t field, WireType type) { varint((static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(type)); }
  void fixed32(uint32_t value) {
    char b[4] = {static_cast<char>(value), static_cast<char>(value >> 8), static_cast<char>(value >> 16),
                 static_cast<char>(value >> 24)};
    out_.append(b, 4);
  }
  void fixed64(uint64_t value) {
    fixed32(static_cast<uint32_t>(value));
    fixed32(static_cast<uint32_t>(value >> 32));
  }

  // Single fields. Signed values are sign-extended to 64 bits, as protobuf
  // does for int32/int64/enum fields.
  void int_field(uint32_t field, int64_t value) {
    tag(field, WireType::kVarint);
    varint(static_cast<uint64_t>(value));
  }
  void uint_field(uint32_t field, uint64_t value) {
    tag(field, WireType::kVarint);
    varint(value);
  }
  void float_field(uint32_t field, float value) {
    uint32_t bits = 0;
    std::memcpy(&bits, &value, 4);
    tag(field, WireType::kFixed32);
    fixed32(bits);
  }
  void double_field(uint32_t field, double value) {
    uint64_t bits = 0;
    std::memcpy(&bits, &value, 8);
    tag(field, WireType::kFixed64);
    fixed64(bits);
  }
  void bytes_field(uint32_t field, std::string_view bytes) {
    tag(field, WireType::kLengthDelimited);
    varint(bytes.size());
    out_.append(bytes.data(), bytes.size());
  }

  // Starts a length-delimited field whose body the caller appends next.
  size_t begin_message(uint32_t field) {
    tag(field, WireType::kLengthDelimited);
    out_.push_back('\0');
    return out_.size();
  }
  void end_message(size_t body_start) {
    const size_t length = out_.size() - body_start;
    const size_t n = varint_size(length);
    if (n > 1) out_.insert(body_start, n - 1, '\0');
    size_t pos = body_start - 1;
    uint64_t value = length;
    while (value >= 0x80) {
      out_[pos++] = static_cast<char>((value & 0x7f) | 0x80);
      value >>= 7;
    }
    out_[pos] = static_cast<char>(value);
  }

 private:
  std::string& out_;
};

}  // namespace onyx::model::wire
