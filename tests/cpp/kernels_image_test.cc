// Tests of ImageDecoder (images built here in each format, decoded and compared
// with the pixels they were made from), of the ai.onnx.preview.training
// optimizers and of DeformConv, against reference loops written in the test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "providers/cpu/image/image_codecs.h"

namespace onyx {
namespace {

using testing::attr_float;
using testing::attr_int;
using testing::attr_ints;
using testing::attr_string;
using testing::random_floats;
using testing::run_kernel;
using Bytes = std::vector<uint8_t>;
using cpu::image::ImageFormat;

// ---------------------------------------------------------------- image helpers

// The test picture: every pixel and channel differs, so a swapped channel,
// flipped row or shifted column shows.
uint8_t sample(int64_t y, int64_t x, int c) { return static_cast<uint8_t>((y * 37 + x * 11 + c * 71 + 5) & 255); }

// Pillow's RGB to L conversion (ITU-R 601 weights in 16-bit fixed point), which
// the ONNX reference uses for Grayscale.
uint8_t luma(int r, int g, int b) { return static_cast<uint8_t>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16); }

void put16le(Bytes& b, uint32_t v) {
  b.push_back(v & 0xff);
  b.push_back((v >> 8) & 0xff);
}
void put32le(Bytes& b, uint32_t v) {
  put16le(b, v & 0xffff);
  put16le(b, v >> 16);
}
void put32be(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back((v >> s) & 0xff);
}

Tensor encoded(const Bytes& bytes) {
  return Tensor::from_vector<uint8_t>(bytes, {static_cast<int64_t>(bytes.size())});
}

testing::KernelRun decode(const Bytes& bytes, const std::string& pixel_format = "RGB") {
  return run_kernel("ImageDecoder", 20, {encoded(bytes)}, {attr_string("pixel_format", pixel_format)});
}

// Expects the decoder's output to be the (H, W, 3) RGB image `rgb`, in every
// pixel format.
void expect_decodes_to(const Bytes& bytes, int64_t h, int64_t w, const std::vector<uint8_t>& rgb) {
  for (const std::string format : {"RGB", "BGR", "Grayscale"}) {
    SCOPED_TRACE(format);
    auto run = decode(bytes, format);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    const Tensor& out = run.outputs[0].tensor();
    const int64_t c = format == "Grayscale" ? 1 : 3;
    ASSERT_EQ(out.dtype(), DataType::kUInt8);
    ASSERT_EQ(out.shape(), (Shape{h, w, c}));
    const uint8_t* got = out.data<uint8_t>();
    for (int64_t p = 0; p < h * w; ++p) {
      const uint8_t* s = &rgb[static_cast<size_t>(3 * p)];
      if (format == "RGB") {
        ASSERT_EQ(got[3 * p], s[0]) << "pixel " << p;
        ASSERT_EQ(got[3 * p + 1], s[1]) << "pixel " << p;
        ASSERT_EQ(got[3 * p + 2], s[2]) << "pixel " << p;
      } else if (format == "BGR") {
        ASSERT_EQ(got[3 * p], s[2]) << "pixel " << p;
        ASSERT_EQ(got[3 * p + 1], s[1]) << "pixel " << p;
        ASSERT_EQ(got[3 * p + 2], s[0]) << "pixel " << p;
      } else {
        ASSERT_EQ(got[p], luma(s[0], s[1], s[2])) << "pixel " << p;
      }
    }
  }
}

std::vector<uint8_t> test_picture(int64_t h, int64_t w) {
  std::vector<uint8_t> rgb;
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) rgb.push_back(sample(y, x, c));
  return rgb;
}

// Feeds every prefix and many single-byte corruptions of a valid file to the
// decoder: each must give a value or an error, never a crash.
void expect_survives_damage(const Bytes& valid) {
  for (size_t n = 0; n < valid.size(); n += (valid.size() > 200 ? 7 : 1)) {
    Bytes prefix(valid.begin(), valid.begin() + static_cast<std::ptrdiff_t>(n));
    if (prefix.empty()) prefix.push_back(0);
    (void)decode(prefix);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    Bytes damaged = valid;
    damaged[rng() % damaged.size()] = static_cast<uint8_t>(rng());
    damaged[rng() % damaged.size()] ^= 0xff;
    auto run = decode(damaged);
    if (run.status.is_ok()) {
      const Tensor& out = run.outputs[0].tensor();
      EXPECT_EQ(out.rank(), 3);
    }
  }
}

// ---------------------------------------------------------------- encoders written for the tests

// 24-bit bottom-up BMP; rows padded to 4 bytes.
Bytes make_bmp24(int64_t h, int64_t w) {
  const uint32_t stride = static_cast<uint32_t>((w * 3 + 3) / 4 * 4);
  Bytes b = {'B', 'M'};
  put32le(b, 54 + stride * h);
  put32le(b, 0);
  put32le(b, 54);
  put32le(b, 40);
  put32le(b, static_cast<uint32_t>(w));
  put32le(b, static_cast<uint32_t>(h));
  put16le(b, 1);
  put16le(b, 24);
  for (int i = 0; i < 6; ++i) put32le(b, 0);
  for (int64_t y = h - 1; y >= 0; --y) {
    for (int64_t x = 0; x < w; ++x)
      for (int c = 2; c >= 0; --c) b.push_back(sample(y, x, c));
    for (uint32_t pad = static_cast<uint32_t>(w * 3); pad < stride; ++pad) b.push_back(0);
  }
  return b;
}

// 32-bit top-down BMP (negative height); the fourth byte is padding, not alpha.
Bytes make_bmp32_top_down(int64_t h, int64_t w) {
  Bytes b = {'B', 'M'};
  put32le(b, static_cast<uint32_t>(54 + 4 * w * h));
  put32le(b, 0);
  put32le(b, 54);
  put32le(b, 40);
  put32le(b, static_cast<uint32_t>(w));
  put32le(b, static_cast<uint32_t>(-h));
  put16le(b, 1);
  put16le(b, 32);
  for (int i = 0; i < 6; ++i) put32le(b, 0);
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      for (int c = 2; c >= 0; --c) b.push_back(sample(y, x, c));
      b.push_back(0x5a);
    }
  return b;
}

// 8-bit palette BMP whose index at (y, x) is (y * w + x) % 256 and whose
// palette entry i is (i, 255 - i, i * 3).
Bytes make_bmp8(int64_t h, int64_t w, std::vector<uint8_t>& rgb) {
  const uint32_t stride = static_cast<uint32_t>((w + 3) / 4 * 4);
  Bytes b = {'B', 'M'};
  put32le(b, 54 + 1024 + stride * h);
  put32le(b, 0);
  put32le(b, 54 + 1024);
  put32le(b, 40);
  put32le(b, static_cast<uint32_t>(w));
  put32le(b, static_cast<uint32_t>(h));
  put16le(b, 1);
  put16le(b, 8);
  for (int i = 0; i < 6; ++i) put32le(b, 0);
  for (int i = 0; i < 256; ++i) {
    b.push_back(static_cast<uint8_t>(i * 3));
    b.push_back(static_cast<uint8_t>(255 - i));
    b.push_back(static_cast<uint8_t>(i));
    b.push_back(0);
  }
  rgb.clear();
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x) {
      const int i = static_cast<int>((y * w + x) % 256);
      rgb.insert(rgb.end(), {static_cast<uint8_t>(i), static_cast<uint8_t>(255 - i), static_cast<uint8_t>(i * 3)});
    }
  for (int64_t y = h - 1; y >= 0; --y) {
    for (int64_t x = 0; x < w; ++x) b.push_back(static_cast<uint8_t>((y * w + x) % 256));
    for (uint32_t pad = static_cast<uint32_t>(w); pad < stride; ++pad) b.push_back(0);
  }
  return b;
}

// A 4x3 RLE8 BMP (palette entry i is (10 i, 20 i, 30 i)) whose stream uses a
// run, a padded literal, a cursor move and the end marker; see the test.
Bytes make_bmp_rle8() {
  const Bytes stream = {4, 1, 0, 0,                   // bottom row: four of index 1, end of line
                        0, 3, 2, 3, 4, 0, 1, 5, 0, 0,  // literal 2 3 4 (padded), one 5, end of line
                        0, 2, 2, 0, 2, 6, 0, 1};       // move right 2, two of index 6, end of bitmap
  Bytes b = {'B', 'M'};
  put32le(b, static_cast<uint32_t>(54 + 1024 + stream.size()));
  put32le(b, 0);
  put32le(b, 54 + 1024);
  put32le(b, 40);
  put32le(b, 4);
  put32le(b, 3);
  put16le(b, 1);
  put16le(b, 8);
  put32le(b, 1);  // BI_RLE8
  put32le(b, static_cast<uint32_t>(stream.size()));
  for (int i = 0; i < 4; ++i) put32le(b, 0);
  for (int i = 0; i < 256; ++i) b.insert(b.end(), {static_cast<uint8_t>(30 * i), static_cast<uint8_t>(20 * i), static_cast<uint8_t>(10 * i), 0});
  b.insert(b.end(), stream.begin(), stream.end());
  return b;
}

uint32_t crc32(const uint8_t* data, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void png_chunk(Bytes& b, const char* type, const Bytes& payload) {
  put32be(b, static_cast<uint32_t>(payload.size()));
  Bytes typed(type, type + 4);
  typed.insert(typed.end(), payload.begin(), payload.end());
  b.insert(b.end(), typed.begin(), typed.end());
  put32be(b, crc32(typed.data(), typed.size()));
}

// A PNG of colour type `color_type` (0 gray, 2 RGB, 6 RGBA), 8-bit, with its
// rows in stored (uncompressed) deflate blocks. `channel(y, x, c)` gives samples.
template <typename Channel>
Bytes make_png(int64_t h, int64_t w, int color_type, Channel channel) {
  const int channels = color_type == 0 ? 1 : (color_type == 2 ? 3 : 4);
  Bytes raw;
  for (int64_t y = 0; y < h; ++y) {
    raw.push_back(0);  // filter: none
    for (int64_t x = 0; x < w; ++x)
      for (int c = 0; c < channels; ++c) raw.push_back(channel(y, x, c));
  }
  Bytes z = {0x78, 0x01};
  for (size_t pos = 0; pos < raw.size();) {
    const size_t n = std::min<size_t>(raw.size() - pos, 65535);
    z.push_back(pos + n == raw.size() ? 1 : 0);
    put16le(z, static_cast<uint32_t>(n));
    put16le(z, static_cast<uint32_t>(~n & 0xffff));
    z.insert(z.end(), raw.begin() + static_cast<std::ptrdiff_t>(pos), raw.begin() + static_cast<std::ptrdiff_t>(pos + n));
    pos += n;
  }
  uint32_t a = 1, s = 0;
  for (uint8_t v : raw) {
    a = (a + v) % 65521;
    s = (s + a) % 65521;
  }
  put32be(z, (s << 16) | a);
  Bytes b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes header;
  put32be(header, static_cast<uint32_t>(w));
  put32be(header, static_cast<uint32_t>(h));
  header.insert(header.end(), {8, static_cast<uint8_t>(color_type), 0, 0, 0});
  png_chunk(b, "IHDR", header);
  png_chunk(b, "IDAT", z);
  png_chunk(b, "IEND", {});
  return b;
}

// An uncompressed little-endian RGB TIFF, one strip.
Bytes make_tiff(int64_t h, int64_t w) {
  Bytes b = {'I', 'I', 42, 0};
  const uint32_t entries = 10;
  const uint32_t ifd = 8, bits_at = ifd + 2 + entries * 12 + 4, data_at = bits_at + 6;
  put32le(b, ifd);
  put16le(b, entries);
  auto entry = [&](uint16_t tag, uint16_t type, uint32_t count, uint32_t value) {
    put16le(b, tag);
    put16le(b, type);
    put32le(b, count);
    put32le(b, value);
  };
  const uint32_t bytes = static_cast<uint32_t>(h * w * 3);
  entry(256, 4, 1, static_cast<uint32_t>(w));  // ImageWidth
  entry(257, 4, 1, static_cast<uint32_t>(h));  // ImageLength
  entry(258, 3, 3, bits_at);                   // BitsPerSample 8,8,8
  entry(259, 3, 1, 1);                         // Compression: none
  entry(262, 3, 1, 2);                         // Photometric: RGB
  entry(273, 4, 1, data_at);                   // StripOffsets
  entry(277, 3, 1, 3);                         // SamplesPerPixel
  entry(278, 4, 1, static_cast<uint32_t>(h));  // RowsPerStrip
  entry(279, 4, 1, bytes);                     // StripByteCounts
  entry(284, 3, 1, 1);                         // PlanarConfiguration: contiguous
  put32le(b, 0);
  for (int i = 0; i < 3; ++i) put16le(b, 8);
  const auto rgb = test_picture(h, w);
  b.insert(b.end(), rgb.begin(), rgb.end());
  return b;
}

// An 8x8 JPEG of the single colour (200, 100, 50), quality 100, made with libjpeg.
const Bytes kSolidJpeg = {
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00,
    0x00, 0xff, 0xdb, 0x00, 0x43, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0xff, 0xdb, 0x00, 0x43, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01,
    0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x08, 0x00, 0x08,
    0x03, 0x01, 0x22, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01, 0xff, 0xc4, 0x00, 0x15, 0x00, 0x01, 0x01, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0xff, 0xc4, 0x00, 0x14, 0x10,
    0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xc4,
    0x00, 0x14, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x09, 0xff, 0xc4, 0x00, 0x14, 0x11, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0xff, 0xda, 0x00, 0x0c, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3f, 0x00, 0x9f,
    0x00, 0x57, 0x9b, 0x07, 0xff, 0xd9};

// A lossless 4x3 WebP (made with libwebp) of the pixels
// (20i, 255 - 10i, 37i mod 256) for i = y * 4 + x.
const Bytes kLosslessWebp = {
    0x52, 0x49, 0x46, 0x46, 0x32, 0x00, 0x00, 0x00, 0x57, 0x45, 0x42, 0x50, 0x56, 0x50, 0x38, 0x4c, 0x26, 0x00, 0x00,
    0x00, 0x2f, 0x03, 0x80, 0x00, 0x00, 0x5f, 0x20, 0x24, 0x48, 0xfe, 0x1f, 0xa6, 0xda, 0xdc, 0x30, 0x14, 0x53, 0x32,
    0xff, 0x19, 0xed, 0x40, 0x10, 0x40, 0xa2, 0x10, 0x4b, 0x2c, 0xb3, 0xcc, 0x32, 0xcb, 0xa4, 0x11, 0xfd, 0x0f, 0x4c,
    0x77};

// ---------------------------------------------------------------- ImageDecoder

TEST(ImageDecoder, Bmp24BottomUpWithRowPadding) {
  expect_decodes_to(make_bmp24(4, 5), 4, 5, test_picture(4, 5));
}

TEST(ImageDecoder, Bmp32TopDownIgnoresPaddingByte) {
  expect_decodes_to(make_bmp32_top_down(3, 6), 3, 6, test_picture(3, 6));
}

TEST(ImageDecoder, Bmp8Palette) {
  std::vector<uint8_t> rgb;
  const Bytes bmp = make_bmp8(5, 7, rgb);
  expect_decodes_to(bmp, 5, 7, rgb);
}

TEST(ImageDecoder, BmpRle8) {
  // Rows top to bottom; pixels the stream skips keep index 0.
  const int indices[12] = {0, 0, 6, 6, 2, 3, 4, 5, 1, 1, 1, 1};
  std::vector<uint8_t> rgb;
  for (int i : indices) rgb.insert(rgb.end(), {static_cast<uint8_t>(10 * i), static_cast<uint8_t>(20 * i), static_cast<uint8_t>(30 * i)});
  expect_decodes_to(make_bmp_rle8(), 3, 4, rgb);
}

TEST(ImageDecoder, PnmBinaryAndPlain) {
  const int64_t h = 3, w = 4;
  const auto rgb = test_picture(h, w);
  Bytes p6;
  const std::string header = "P6\n# a comment\n4 3\n255\n";
  p6.assign(header.begin(), header.end());
  p6.insert(p6.end(), rgb.begin(), rgb.end());
  expect_decodes_to(p6, h, w, rgb);

  std::string plain = "P3 4 3 255\n";
  for (uint8_t v : rgb) plain += std::to_string(v) + " ";
  expect_decodes_to(Bytes(plain.begin(), plain.end()), h, w, rgb);
}

TEST(ImageDecoder, PnmGrayScalesMaxvalAndBitmap) {
  // P5 with maxval 15: sample v becomes round(v * 255 / 15) = 17 v.
  std::string p5 = "P5 4 2 15\n";
  Bytes bytes(p5.begin(), p5.end());
  std::vector<uint8_t> rgb;
  for (int i = 0; i < 8; ++i) {
    bytes.push_back(static_cast<uint8_t>(i * 2));
    rgb.insert(rgb.end(), 3, static_cast<uint8_t>(i * 2 * 17));
  }
  expect_decodes_to(bytes, 2, 4, rgb);
  // P4: 1 is black; rows are padded to whole bytes.
  std::string p4 = "P4 3 2\n";
  Bytes bitmap(p4.begin(), p4.end());
  bitmap.push_back(0b10100000);
  bitmap.push_back(0b01000000);
  const uint8_t pattern[6] = {0, 255, 0, 255, 0, 255};
  rgb.clear();
  for (uint8_t v : pattern) rgb.insert(rgb.end(), 3, v);
  expect_decodes_to(bitmap, 2, 3, rgb);
}

TEST(ImageDecoder, Png) {
  if (!cpu::image::built_with(ImageFormat::kPng)) GTEST_SKIP() << "built without libpng";
  const int64_t h = 5, w = 6;
  expect_decodes_to(make_png(h, w, 2, sample), h, w, test_picture(h, w));
  // RGBA drops alpha; gray widens to three equal channels.
  expect_decodes_to(make_png(h, w, 6, [](int64_t y, int64_t x, int c) { return c == 3 ? uint8_t{9} : sample(y, x, c); }),
                    h, w, test_picture(h, w));
  std::vector<uint8_t> gray_rgb;
  for (int64_t p = 0; p < h * w; ++p) gray_rgb.insert(gray_rgb.end(), 3, sample(p / w, p % w, 0));
  expect_decodes_to(make_png(h, w, 0, sample), h, w, gray_rgb);
}

TEST(ImageDecoder, Tiff) {
  if (!cpu::image::built_with(ImageFormat::kTiff)) GTEST_SKIP() << "built without libtiff";
  expect_decodes_to(make_tiff(4, 7), 4, 7, test_picture(4, 7));
}

TEST(ImageDecoder, JpegSolidColour) {
  if (!cpu::image::built_with(ImageFormat::kJpeg)) GTEST_SKIP() << "built without libjpeg";
  auto run = decode(kSolidJpeg);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Tensor& out = run.outputs[0].tensor();
  ASSERT_EQ(out.shape(), (Shape{8, 8, 3}));
  // Lossy even at quality 100: allow the rounding of the colour transform.
  const int want[3] = {200, 100, 50};
  for (int64_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out.data<uint8_t>()[i], want[i % 3], 2) << "element " << i;
  auto gray = decode(kSolidJpeg, "Grayscale");
  ASSERT_TRUE(gray.status.is_ok()) << gray.status.message();
  ASSERT_EQ(gray.outputs[0].tensor().shape(), (Shape{8, 8, 1}));
  EXPECT_NEAR(gray.outputs[0].tensor().data<uint8_t>()[0], luma(200, 100, 50), 2);
}

TEST(ImageDecoder, WebpLossless) {
  if (!cpu::image::built_with(ImageFormat::kWebp)) GTEST_SKIP() << "built without libwebp";
  std::vector<uint8_t> rgb;
  for (int i = 0; i < 12; ++i) {
    rgb.insert(rgb.end(), {static_cast<uint8_t>(i * 20), static_cast<uint8_t>(255 - i * 10),
                           static_cast<uint8_t>((i * 37) & 255)});
  }
  expect_decodes_to(kLosslessWebp, 3, 4, rgb);
}

TEST(ImageDecoder, MissingLibrariesAreReportedByName) {
  // Only formats this build lacks can be checked; a full build has none.
  const std::pair<ImageFormat, Bytes> samples[] = {
      {ImageFormat::kJpeg, kSolidJpeg},
      {ImageFormat::kWebp, kLosslessWebp},
      {ImageFormat::kPng, make_png(2, 2, 2, sample)},
      {ImageFormat::kTiff, make_tiff(2, 2)},
  };
  for (const auto& [format, bytes] : samples) {
    if (cpu::image::built_with(format)) continue;
    auto run = decode(bytes);
    EXPECT_EQ(run.status.code(), StatusCode::kNotImplemented);
    EXPECT_NE(run.status.message().find("built without"), std::string::npos) << run.status.message();
  }
}

TEST(ImageDecoder, BadInputIsAnErrorNotACrash) {
  auto garbage = decode({1, 2, 3, 4, 5});
  EXPECT_FALSE(garbage.status.is_ok());
  EXPECT_NE(garbage.status.message().find("test node"), std::string::npos);
  EXPECT_FALSE(run_kernel("ImageDecoder", 20, {Tensor::from_vector<float>({1.0f}, {1})}).status.is_ok());
  EXPECT_FALSE(run_kernel("ImageDecoder", 20, {encoded(make_bmp24(2, 2))}, {attr_string("pixel_format", "CMYK")})
                   .status.is_ok());
  // A header claiming a huge image is refused before any allocation.
  Bytes huge = make_bmp24(2, 2);
  huge[18] = huge[19] = huge[20] = 0xff;
  huge[21] = 0x7f;
  EXPECT_FALSE(decode(huge).status.is_ok());

  std::vector<uint8_t> rgb;
  expect_survives_damage(make_bmp24(3, 5));
  expect_survives_damage(make_bmp8(3, 5, rgb));
  expect_survives_damage(make_bmp_rle8());
  const std::string p6 = "P6 2 2 255\n123456789012";
  expect_survives_damage(Bytes(p6.begin(), p6.end()));
  expect_survives_damage(make_png(3, 4, 2, sample));
  expect_survives_damage(make_tiff(3, 4));
  expect_survives_damage(kSolidJpeg);
  expect_survives_damage(kLosslessWebp);
}

// ---------------------------------------------------------------- optimizers

constexpr const char* kTraining = "ai.onnx.preview.training";

Tensor floats(const std::vector<float>& v) { return Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())}); }

void expect_close(const Value& got, const std::vector<double>& want) {
  const Tensor& t = got.tensor();
  ASSERT_EQ(t.size(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    const double g = t.dtype() == DataType::kDouble ? t.data<double>()[i] : t.data<float>()[i];
    EXPECT_NEAR(g, want[i], 1e-5 * (1 + std::fabs(want[i]))) << "element " << i;
  }
}

TEST(TrainingOptimizers, AdagradUpdatesEveryTensor) {
  const float r = 0.1f, decay = 0.1f, eps = 1e-5f, norm = 0.01f;
  const int64_t t = 3;
  const std::vector<std::vector<float>> x = {random_floats(3, 1), random_floats(5, 2)};
  const std::vector<std::vector<float>> g = {random_floats(3, 3), random_floats(5, 4)};
  const std::vector<std::vector<float>> h = {random_floats(3, 5, 0, 1), random_floats(5, 6, 0, 1)};
  auto run = run_kernel("Adagrad", 1,
                        {Tensor::scalar(r), Tensor::scalar(t), floats(x[0]), floats(x[1]), floats(g[0]), floats(g[1]),
                         floats(h[0]), floats(h[1])},
                        {attr_float("decay_factor", decay), attr_float("epsilon", eps), attr_float("norm_coefficient", norm)},
                        4, kTraining);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (size_t k = 0; k < 2; ++k) {
    std::vector<double> x_new, h_new;
    const double rate = r / (1.0 + t * double(decay));
    for (size_t i = 0; i < x[k].size(); ++i) {
      const double gr = double(norm) * x[k][i] + g[k][i];
      const double hn = h[k][i] + gr * gr;
      h_new.push_back(hn);
      x_new.push_back(x[k][i] - rate * gr / (std::sqrt(hn) + eps));
    }
    expect_close(run.outputs[k], x_new);
    expect_close(run.outputs[2 + k], h_new);
  }
}

TEST(TrainingOptimizers, AdamWithAndWithoutBiasCorrection) {
  const float r = 0.05f, alpha = 0.9f, beta = 0.99f, eps = 1e-6f, norm = 0.001f, post = 0.01f;
  const auto x = random_floats(6, 11), g = random_floats(6, 12), v = random_floats(6, 13), h = random_floats(6, 14, 0, 1);
  for (int64_t t : {0, 4}) {
    SCOPED_TRACE(t);
    auto run = run_kernel("Adam", 1, {Tensor::scalar(r), Tensor::scalar(t), floats(x), floats(g), floats(v), floats(h)},
                          {attr_float("alpha", alpha), attr_float("beta", beta), attr_float("epsilon", eps),
                           attr_float("norm_coefficient", norm), attr_float("norm_coefficient_post", post)},
                          3, kTraining);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    std::vector<double> x_new, v_new, h_new;
    const double rate = t > 0 ? r * std::sqrt(1 - std::pow(double(beta), double(t))) / (1 - std::pow(double(alpha), double(t))) : r;
    for (size_t i = 0; i < x.size(); ++i) {
      const double gr = double(norm) * x[i] + g[i];
      const double vn = alpha * double(v[i]) + (1 - double(alpha)) * gr;
      const double hn = beta * double(h[i]) + (1 - double(beta)) * gr * gr;
      v_new.push_back(vn);
      h_new.push_back(hn);
      x_new.push_back((1 - double(post)) * (x[i] - rate * vn / (std::sqrt(hn) + eps)));
    }
    expect_close(run.outputs[0], x_new);
    expect_close(run.outputs[1], v_new);
    expect_close(run.outputs[2], h_new);
  }
}

TEST(TrainingOptimizers, MomentumStandardAndNesterov) {
  const float r = 0.1f, alpha = 0.9f, beta = 0.5f, norm = 0.01f;
  const auto x = random_floats(4, 21), g = random_floats(4, 22), v = random_floats(4, 23);
  for (const std::string mode : {"standard", "nesterov"}) {
    for (int64_t t : {0, 2}) {
      SCOPED_TRACE(mode + " T=" + std::to_string(t));
      auto run = run_kernel("Momentum", 1, {Tensor::scalar(r), Tensor::scalar(t), floats(x), floats(g), floats(v)},
                            {attr_float("alpha", alpha), attr_float("beta", beta), attr_float("norm_coefficient", norm),
                             attr_string("mode", mode)},
                            2, kTraining);
      ASSERT_TRUE(run.status.is_ok()) << run.status.message();
      std::vector<double> x_new, v_new;
      const double b = t > 0 ? beta : 1.0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double gr = double(norm) * x[i] + g[i];
        const double vn = double(alpha) * v[i] + b * gr;
        v_new.push_back(vn);
        x_new.push_back(x[i] - r * (mode == "nesterov" ? gr + double(alpha) * vn : vn));
      }
      expect_close(run.outputs[0], x_new);
      expect_close(run.outputs[1], v_new);
    }
  }
}

TEST(TrainingOptimizers, DoubleTensorsAndBadInputs) {
  const std::vector<double> x = {1.0, -2.0}, g = {0.5, 0.25}, v = {0.0, 1.0};
  auto d = [](const std::vector<double>& values) { return Tensor::from_vector<double>(values, {2}); };
  const std::vector<graph::Attribute> attrs = {attr_float("alpha", 0.5f), attr_float("beta", 1.0f),
                                               attr_float("norm_coefficient", 0.0f), attr_string("mode", "standard")};
  auto run = run_kernel("Momentum", 1, {Tensor::scalar(1.0f), Tensor::scalar(int64_t{1}), d(x), d(g), d(v)}, attrs, 2,
                        kTraining);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  expect_close(run.outputs[1], {0.5, 0.75});
  expect_close(run.outputs[0], {0.5, -2.75});
  // One state tensor short; a mismatched shape; T of the wrong type; no mode.
  EXPECT_FALSE(run_kernel("Momentum", 1, {Tensor::scalar(1.0f), Tensor::scalar(int64_t{1}), d(x), d(g)}, attrs, 2,
                          kTraining).status.is_ok());
  EXPECT_FALSE(run_kernel("Momentum", 1,
                          {Tensor::scalar(1.0f), Tensor::scalar(int64_t{1}), d(x), d(g), Tensor::from_vector<double>({1, 2, 3}, {3})},
                          attrs, 2, kTraining).status.is_ok());
  EXPECT_FALSE(run_kernel("Momentum", 1, {Tensor::scalar(1.0f), Tensor::scalar(1.0f), d(x), d(g), d(v)}, attrs, 2,
                          kTraining).status.is_ok());
  EXPECT_FALSE(run_kernel("Momentum", 1, {Tensor::scalar(1.0f), Tensor::scalar(int64_t{1}), d(x), d(g), d(v)},
                          {attr_float("alpha", 0.5f)}, 2, kTraining).status.is_ok());
}

// ---------------------------------------------------------------- DeformConv

// Bilinear read of plane (h x w) at (py, px), zero outside.
double bilinear(const std::vector<float>& plane, int64_t h, int64_t w, double py, double px) {
  const double y0 = std::floor(py), x0 = std::floor(px);
  double sum = 0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const int64_t y = static_cast<int64_t>(y0) + dy, x = static_cast<int64_t>(x0) + dx;
      if (y < 0 || y >= h || x < 0 || x >= w) continue;
      const double wy = dy ? py - y0 : 1 - (py - y0), wx = dx ? px - x0 : 1 - (px - x0);
      sum += wy * wx * plane[static_cast<size_t>(y * w + x)];
    }
  return sum;
}

TEST(DeformConv, TwoDimensionalWithGroupsOffsetGroupsMaskAndBias) {
  const int64_t N = 2, C = 4, H = 6, W = 7, M = 6, group = 2, og = 2, kh = 3, kw = 2;
  const int64_t sh = 2, sw = 1, dh = 1, dw = 2, pt = 1, pl = 0, pb = 2, pr = 1;
  const int64_t OH = (H + pt + pb - ((kh - 1) * dh + 1)) / sh + 1;
  const int64_t OW = (W + pl + pr - ((kw - 1) * dw + 1)) / sw + 1;
  const auto x = random_floats(static_cast<size_t>(N * C * H * W), 31);
  const auto w = random_floats(static_cast<size_t>(M * (C / group) * kh * kw), 32);
  const auto offset = random_floats(static_cast<size_t>(N * og * kh * kw * 2 * OH * OW), 33, -2.5f, 2.5f);
  const auto mask = random_floats(static_cast<size_t>(N * og * kh * kw * OH * OW), 34, 0, 1);
  const auto bias = random_floats(static_cast<size_t>(M), 35);
  auto t = [](const std::vector<float>& v, Shape s) { return Tensor::from_vector<float>(v, std::move(s)); };
  const std::vector<graph::Attribute> attrs = {attr_ints("kernel_shape", {kh, kw}), attr_ints("strides", {sh, sw}),
                                               attr_ints("dilations", {dh, dw}), attr_ints("pads", {pt, pl, pb, pr}),
                                               attr_int("group", group), attr_int("offset_group", og)};
  for (int threads : {1, 3}) {
    auto run = run_kernel("DeformConv", 22,
                          {t(x, {N, C, H, W}), t(w, {M, C / group, kh, kw}), t(offset, {N, og * kh * kw * 2, OH, OW}),
                           t(bias, {M}), t(mask, {N, og * kh * kw, OH, OW})},
                          attrs, 1, "", threads);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    const Tensor& y = run.outputs[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{N, M, OH, OW}));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t oy = 0; oy < OH; ++oy)
          for (int64_t ox = 0; ox < OW; ++ox) {
            double sum = bias[static_cast<size_t>(m)];
            const int64_t gi = m / (M / group);
            for (int64_t ci = 0; ci < C / group; ++ci) {
              const int64_t c = gi * (C / group) + ci;
              const int64_t o = c / (C / og);
              std::vector<float> plane(x.begin() + (n * C + c) * H * W, x.begin() + (n * C + c + 1) * H * W);
              for (int64_t i = 0; i < kh; ++i)
                for (int64_t j = 0; j < kw; ++j) {
                  const int64_t k = i * kw + j;
                  auto at = [&](int64_t channel) {
                    return offset[static_cast<size_t>(((n * og * kh * kw * 2 + channel) * OH + oy) * OW + ox)];
                  };
                  const double py = oy * sh - pt + i * dh + at((o * kh * kw + k) * 2);
                  const double px = ox * sw - pl + j * dw + at((o * kh * kw + k) * 2 + 1);
                  const double mk = mask[static_cast<size_t>(((n * og * kh * kw + o * kh * kw + k) * OH + oy) * OW + ox)];
                  sum += w[static_cast<size_t>(((m * (C / group) + ci) * kh + i) * kw + j)] * mk * bilinear(plane, H, W, py, px);
                }
            }
            ASSERT_NEAR(y.data<float>()[((n * M + m) * OH + oy) * OW + ox], sum, 1e-4)
                << "at n=" << n << " m=" << m << " y=" << oy << " x=" << ox;
          }
  }
}

TEST(DeformConv, ThreeDimensionalIntegerOffsetsShiftTheInput) {
  // An offset of +1 on every axis makes the deformable conv a plain conv of the
  // input shifted by one voxel (zero past the far edge).
  const int64_t D = 4, H = 3, W = 5, K = 2;
  const int64_t OD = D - K + 1, OH = H - K + 1, OW = W - K + 1;
  const auto x = random_floats(static_cast<size_t>(D * H * W), 41);
  const auto w = random_floats(static_cast<size_t>(K * K * K), 42);
  const std::vector<float> offset(static_cast<size_t>(K * K * K * 3 * OD * OH * OW), 1.0f);
  auto run = run_kernel("DeformConv", 19,
                        {Tensor::from_vector<float>(x, {1, 1, D, H, W}), Tensor::from_vector<float>(w, {1, 1, K, K, K}),
                         Tensor::from_vector<float>(offset, {1, K * K * K * 3, OD, OH, OW})});
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Tensor& y = run.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{1, 1, OD, OH, OW}));
  auto at = [&](int64_t d, int64_t h, int64_t ww) {
    return d < D && h < H && ww < W ? x[static_cast<size_t>((d * H + h) * W + ww)] : 0.0f;
  };
  for (int64_t d = 0; d < OD; ++d)
    for (int64_t h = 0; h < OH; ++h)
      for (int64_t ww = 0; ww < OW; ++ww) {
        double sum = 0;
        for (int64_t a = 0; a < K; ++a)
          for (int64_t b = 0; b < K; ++b)
            for (int64_t c = 0; c < K; ++c) sum += w[static_cast<size_t>((a * K + b) * K + c)] * at(d + a + 1, h + b + 1, ww + c + 1);
        EXPECT_NEAR(y.data<float>()[(d * OH + h) * OW + ww], sum, 1e-5);
      }
}

TEST(DeformConv, RejectsInconsistentShapes) {
  const Tensor x = Tensor::from_vector<float>(std::vector<float>(9, 1.0f), {1, 1, 3, 3});
  const Tensor w = Tensor::from_vector<float>(std::vector<float>(4, 1.0f), {1, 1, 2, 2});
  const Tensor bad_offset = Tensor::from_vector<float>(std::vector<float>(8 * 3 * 3, 0.0f), {1, 8, 3, 3});
  auto run = run_kernel("DeformConv", 22, {x, w, bad_offset});
  EXPECT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("offset"), std::string::npos) << run.status.message();
  const Tensor wide_w = Tensor::from_vector<float>(std::vector<float>(8, 1.0f), {1, 2, 2, 2});
  EXPECT_FALSE(run_kernel("DeformConv", 22, {x, wide_w, bad_offset}).status.is_ok());
}

}  // namespace
}  // namespace onyx
