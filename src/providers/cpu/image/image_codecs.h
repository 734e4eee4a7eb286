// The still-image decoders behind ImageDecoder: one function per file format,
// each giving 8-bit interleaved pixels. BMP and PNM are decoded here; the rest
// go through Debian's image libraries when the build found them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "onyx/status.h"

namespace onyx::cpu::image {

// Interleaved 8-bit pixels, row-major, top row first.
struct DecodedImage {
  int64_t height = 0;
  int64_t width = 0;
  int channels = 0;  // 1 (gray), 3 (RGB) or 4 (RGBA)
  std::vector<uint8_t> pixels;
};

enum class ImageFormat { kUnknown, kBmp, kJpeg, kJpeg2000, kPng, kPnm, kTiff, kWebp };

// The format named by the file's leading magic bytes.
ImageFormat detect_format(const uint8_t* data, size_t size);
const char* format_name(ImageFormat format);
// False when onyx was built without the library that decodes `format`.
bool built_with(ImageFormat format);

// Each decoder prefixes its errors with `label` (the node).
Result<DecodedImage> decode_bmp(const uint8_t* data, size_t size, const std::string& label);
Result<DecodedImage> decode_pnm(const uint8_t* data, size_t size, const std::string& label);
Result<DecodedImage> decode_jpeg(const uint8_t* data, size_t size, const std::string& label);
Result<DecodedImage> decode_jpeg2000(const uint8_t* data, size_t size, const std::string& label);
Result<DecodedImage> decode_png(const uint8_t* data, size_t size, const std::string& label);
Result<DecodedImage> decode_tiff(const uint8_t* data, size_t size, const std::string& label);
Result<DecodedImage> decode_webp(const uint8_t* data, size_t size, const std::string& label);

// Images larger than this many pixels are refused before any buffer is made,
// so a forged header cannot ask for terabytes.
constexpr int64_t kMaxPixels = int64_t{1} << 28;

// Checks decoded dimensions against kMaxPixels and allocates the pixel buffer.
Status allocate_pixels(DecodedImage& image, int64_t height, int64_t width, int channels, const std::string& label,
                       const char* format);

// The error a decoder gives when its library was not found at build time.
Status missing_library(const std::string& label, const char* format, const char* package);

}  // namespace onyx::cpu::image
