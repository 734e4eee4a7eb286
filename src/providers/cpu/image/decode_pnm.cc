// PNM (Netpbm PBM, PGM and PPM, plain P1-P3 and raw P4-P6) decoding, written
// here so it needs no library. Samples with another maximum than 255 are
// rescaled to 0..255.
#include <cctype>

#include "providers/cpu/image/image_codecs.h"

namespace onyx::cpu::image {
namespace {

// Reads the whitespace- and comment-separated header numbers and, for plain
// files, the samples.
class PnmReader {
 public:
  PnmReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool next_number(uint64_t& value) {
    skip_space();
    if (pos_ >= size_ || !std::isdigit(data_[pos_])) return false;
    value = 0;
    while (pos_ < size_ && std::isdigit(data_[pos_])) {
      value = value * 10 + (data_[pos_++] - '0');
      if (value > 0xffffffffu) return false;
    }
    return true;
  }
  // Plain PBM packs no separators between bits: each 0 or 1 is one sample.
  bool next_bit(uint64_t& value) {
    skip_space();
    if (pos_ >= size_ || (data_[pos_] != '0' && data_[pos_] != '1')) return false;
    value = data_[pos_++] - '0';
    return true;
  }
  size_t pos() const { return pos_; }
  void advance(size_t n) { pos_ += n; }

 private:
  void skip_space() {
    while (pos_ < size_) {
      if (data_[pos_] == '#') {
        while (pos_ < size_ && data_[pos_] != '\n' && data_[pos_] != '\r') ++pos_;
      } else if (std::isspace(data_[pos_])) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 2;  // after the magic number
};

}  // namespace

Result<DecodedImage> decode_pnm(const uint8_t* data, size_t size, const std::string& label) {
  if (size < 2 || data[0] != 'P' || data[1] < '1' || data[1] > '6') {
    return invalid_argument(label, ": not a PNM file (expected magic P1 to P6)");
  }
  const int kind = data[1] - '0';
  const bool bitmap = kind == 1 || kind == 4;
  const bool color = kind == 3 || kind == 6;
  const bool raw = kind >= 4;
  PnmReader reader(data, size);
  uint64_t width = 0, height = 0, maxval = 1;
  if (!reader.next_number(width) || !reader.next_number(height) || (!bitmap && !reader.next_number(maxval))) {
    return invalid_argument(label, ": PNM P", kind, " header is malformed or truncated");
  }
  if (maxval == 0 || maxval > 65535) {
    return invalid_argument(label, ": PNM maximum sample value is ", maxval, ", expected 1 to 65535");
  }
  DecodedImage image;
  ONYX_RETURN_IF_ERROR(allocate_pixels(image, static_cast<int64_t>(height), static_cast<int64_t>(width),
                                       color ? 3 : 1, label, "PNM"));
  const uint64_t samples = height * width * (color ? 3 : 1);
  uint8_t* out = image.pixels.data();
  // Bitmaps store 1 for black; other kinds scale 0..maxval to 0..255.
  auto scale = [&](uint64_t v) -> uint8_t {
    if (bitmap) return v ? 0 : 255;
    if (v > maxval) v = maxval;
    if (maxval == 255) return static_cast<uint8_t>(v);
    return static_cast<uint8_t>((v * 255 + maxval / 2) / maxval);
  };
  auto truncated = [&] { return invalid_argument(label, ": PNM P", kind, " pixel data is truncated or malformed"); };

  if (!raw) {
    for (uint64_t i = 0; i < samples; ++i) {
      uint64_t v = 0;
      if (!(bitmap ? reader.next_bit(v) : reader.next_number(v))) return truncated();
      out[i] = scale(v);
    }
    return image;
  }
  reader.advance(1);  // the single whitespace byte that ends the header
  const size_t start = reader.pos();
  if (start > size) return truncated();
  const uint8_t* src = data + start;
  const size_t available = size - start;
  if (bitmap) {  // rows of bits, each row padded to a byte
    const uint64_t row_bytes = (width + 7) / 8;
    if (row_bytes * height > available) return truncated();
    for (uint64_t y = 0; y < height; ++y) {
      for (uint64_t x = 0; x < width; ++x) {
        out[y * width + x] = scale((src[y * row_bytes + x / 8] >> (7 - x % 8)) & 1u);
      }
    }
    return image;
  }
  const uint64_t bytes_per_sample = maxval > 255 ? 2 : 1;
  if (samples * bytes_per_sample > available) return truncated();
  for (uint64_t i = 0; i < samples; ++i) {
    const uint64_t v = bytes_per_sample == 2 ? (static_cast<uint64_t>(src[2 * i]) << 8) | src[2 * i + 1] : src[i];
    out[i] = scale(v);
  }
  return image;
}

}  // namespace onyx::cpu::image
