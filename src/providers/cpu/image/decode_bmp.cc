// BMP (Windows bitmap) decoding, written here so it needs no library: the core,
// OS/2 and V2-V5 info headers; 1, 4, 8, 16, 24 and 32 bits per pixel;
// uncompressed, RLE4, RLE8 and bit-field pixel layouts.
#include <cstring>

#include "providers/cpu/image/image_codecs.h"

namespace onyx::cpu::image {
namespace {

uint16_t read_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t read_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

// One colour channel held in a bit field of a 16- or 32-bit pixel.
struct BitField {
  uint32_t mask = 0;
  int shift = 0;
  uint32_t max = 0;  // the field's largest value
  bool present() const { return mask != 0; }
  uint8_t extract(uint32_t pixel) const {
    if (mask == 0) return 255;
    const uint32_t v = (pixel & mask) >> shift;
    if (max == 255) return static_cast<uint8_t>(v);
    return static_cast<uint8_t>((static_cast<uint64_t>(v) * 255 + max / 2) / max);
  }
  static BitField from_mask(uint32_t mask) {
    BitField f;
    f.mask = mask;
    if (mask == 0) return f;
    while (((mask >> f.shift) & 1u) == 0) ++f.shift;
    f.max = mask >> f.shift;
    return f;
  }
};

enum Compression : uint32_t { kRgb = 0, kRle8 = 1, kRle4 = 2, kBitFields = 3, kAlphaBitFields = 6 };

}  // namespace

Result<DecodedImage> decode_bmp(const uint8_t* data, size_t size, const std::string& label) {
  auto truncated = [&](const char* what) {
    return invalid_argument(label, ": BMP file (", size, " bytes) is truncated in its ", what);
  };
  if (size < 14 + 12) return truncated("headers");
  const uint32_t pixel_offset = read_u32(data + 10);
  const uint32_t header_size = read_u32(data + 14);
  if (header_size < 12 || 14 + static_cast<uint64_t>(header_size) > size) return truncated("info header");
  const uint8_t* h = data + 14;
  int64_t width = 0, height = 0;
  uint32_t bpp = 0, compression = kRgb, colors_used = 0;
  size_t palette_entry = 4;
  if (header_size == 12) {  // BITMAPCOREHEADER: 16-bit sizes, 3-byte palette entries
    width = read_u16(h + 4);
    height = static_cast<int16_t>(read_u16(h + 6));
    bpp = read_u16(h + 10);
    palette_entry = 3;
  } else {
    if (header_size < 16) return truncated("info header");
    width = static_cast<int32_t>(read_u32(h + 4));
    height = static_cast<int32_t>(read_u32(h + 8));
    bpp = read_u16(h + 14);
    if (header_size >= 20) compression = read_u32(h + 16);
    if (header_size >= 36) colors_used = read_u32(h + 32);
  }
  const bool top_down = height < 0;
  if (top_down) height = -height;

  // Bit-field masks sit in the header from V2 on, or just after a 40-byte header.
  BitField red, green, blue, alpha;
  bool has_alpha = false;
  uint64_t palette_offset = 14 + static_cast<uint64_t>(header_size);
  if (compression == kBitFields || compression == kAlphaBitFields) {
    if (header_size < 40) return invalid_argument(label, ": BMP bit-field masks with a ", header_size, "-byte header");
    const uint8_t* masks = h + 40;
    const bool inline_masks = header_size >= 52;
    const int count = compression == kAlphaBitFields ? 4 : 3;
    if (!inline_masks) {
      if (palette_offset + 4 * count > size) return truncated("bit-field masks");
      palette_offset += 4 * count;
    }
    red = BitField::from_mask(read_u32(masks));
    green = BitField::from_mask(read_u32(masks + 4));
    blue = BitField::from_mask(read_u32(masks + 8));
    if (count == 4 || header_size >= 56) alpha = BitField::from_mask(read_u32(masks + 12));
    has_alpha = alpha.present();
  } else if (bpp == 16) {  // 5-5-5 by default
    red = BitField::from_mask(0x7c00);
    green = BitField::from_mask(0x03e0);
    blue = BitField::from_mask(0x001f);
  } else if (bpp == 32) {  // BGRX: the fourth byte is not alpha without a mask saying so
    red = BitField::from_mask(0x00ff0000);
    green = BitField::from_mask(0x0000ff00);
    blue = BitField::from_mask(0x000000ff);
  } else if (compression != kRgb && compression != kRle8 && compression != kRle4) {
    return not_implemented(label, ": BMP compression ", compression, " is not supported (expected none, RLE or bit fields)");
  }
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32) {
    return invalid_argument(label, ": BMP has ", bpp, " bits per pixel, expected 1, 4, 8, 16, 24 or 32");
  }
  if ((compression == kRle8 && bpp != 8) || (compression == kRle4 && bpp != 4)) {
    return invalid_argument(label, ": BMP RLE", compression == kRle8 ? 8 : 4, " compression with ", bpp,
                            " bits per pixel");
  }

  // The colour table, for 1-, 4- and 8-bit images.
  std::vector<uint8_t> palette;  // RGB triples
  if (bpp <= 8) {
    uint64_t entries = colors_used != 0 ? colors_used : (1u << bpp);
    if (entries > 256) entries = 256;
    if (palette_offset + entries * palette_entry > size) return truncated("colour table");
    palette.assign(256 * 3, 0);
    for (uint64_t i = 0; i < entries; ++i) {
      const uint8_t* e = data + palette_offset + i * palette_entry;
      palette[3 * i] = e[2];
      palette[3 * i + 1] = e[1];
      palette[3 * i + 2] = e[0];
    }
  }

  DecodedImage image;
  ONYX_RETURN_IF_ERROR(allocate_pixels(image, height, width, has_alpha ? 4 : 3, label, "BMP"));
  if (pixel_offset >= size) return truncated("pixel data");
  const uint8_t* pixels = data + pixel_offset;
  const size_t available = size - pixel_offset;
  const int channels = image.channels;
  // Row y of the file holds image row (top_down ? y : height - 1 - y).
  auto out_row = [&](int64_t file_row) {
    const int64_t row = top_down ? file_row : height - 1 - file_row;
    return image.pixels.data() + row * width * channels;
  };
  auto put_index = [&](uint8_t* dst, uint32_t index) {
    std::memcpy(dst, &palette[3 * (index & 0xff)], 3);
  };

  if (compression == kRle8 || compression == kRle4) {
    // Runs of one index, or literal index strings, with escapes for line end,
    // file end and cursor moves; pixels never written stay index 0.
    for (int64_t y = 0; y < height; ++y) {
      uint8_t* row = out_row(y);
      for (int64_t x = 0; x < width; ++x) put_index(row + 3 * x, 0);
    }
    size_t pos = 0;
    int64_t x = 0, y = 0;
    auto put = [&](uint32_t index) {
      if (x < width && y < height) put_index(out_row(y) + 3 * x, index);
      ++x;
    };
    while (pos + 1 < available && y < height) {
      const uint8_t count = pixels[pos];
      const uint8_t value = pixels[pos + 1];
      pos += 2;
      if (count > 0) {
        for (int i = 0; i < count; ++i) put(compression == kRle8 ? value : ((i & 1) ? value & 0xf : value >> 4));
      } else if (value == 0) {
        x = 0;
        ++y;
      } else if (value == 1) {
        break;
      } else if (value == 2) {
        if (pos + 1 >= available) return truncated("RLE data");
        x += pixels[pos];
        y += pixels[pos + 1];
        pos += 2;
      } else {
        const size_t bytes = compression == kRle8 ? value : (value + 1u) / 2;
        if (pos + bytes > available) return truncated("RLE data");
        for (int i = 0; i < value; ++i) {
          put(compression == kRle8 ? pixels[pos + i] : ((i & 1) ? pixels[pos + i / 2] & 0xf : pixels[pos + i / 2] >> 4));
        }
        pos += (bytes + 1) & ~size_t{1};  // literal runs are padded to 16 bits
      }
    }
    return image;
  }

  const uint64_t stride = ((static_cast<uint64_t>(bpp) * static_cast<uint64_t>(width) + 31) / 32) * 4;
  // The last row need not carry its padding.
  const uint64_t last_row = (static_cast<uint64_t>(bpp) * static_cast<uint64_t>(width) + 7) / 8;
  if (stride * static_cast<uint64_t>(height - 1) + last_row > available) return truncated("pixel data");
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* src = pixels + stride * static_cast<uint64_t>(y);
    uint8_t* dst = out_row(y);
    for (int64_t x = 0; x < width; ++x, dst += channels) {
      switch (bpp) {
        case 1: put_index(dst, (src[x >> 3] >> (7 - (x & 7))) & 1u); break;
        case 4: put_index(dst, (x & 1) ? src[x >> 1] & 0xf : src[x >> 1] >> 4); break;
        case 8: put_index(dst, src[x]); break;
        case 24:
          dst[0] = src[3 * x + 2];
          dst[1] = src[3 * x + 1];
          dst[2] = src[3 * x];
          break;
        default: {  // 16 or 32 bits through the bit fields
          const uint32_t pixel = bpp == 16 ? read_u16(src + 2 * x) : read_u32(src + 4 * x);
          dst[0] = red.extract(pixel);
          dst[1] = green.extract(pixel);
          dst[2] = blue.extract(pixel);
          if (has_alpha) dst[3] = alpha.extract(pixel);
        }
      }
    }
  }
  return image;
}

}  // namespace onyx::cpu::image
