// PNG decoding through libpng. Samples are taken as stored (no gamma
// correction, as Pillow does): palettes expand to RGB, 16-bit samples keep
// their high byte, transparency becomes an alpha channel.
#include "providers/cpu/image/image_codecs.h"

#ifdef ONYX_HAVE_PNG
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <png.h>
#endif

namespace onyx::cpu::image {

#ifdef ONYX_HAVE_PNG
namespace {

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t pos;
  char message[256];
};

void read_bytes(png_structp png, png_bytep out, png_size_t length) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (length > source->size - source->pos) png_error(png, "file is truncated");
  std::memcpy(out, source->data + source->pos, length);
  source->pos += length;
}

void on_error(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(source->message, sizeof(source->message), "%s", message);
  png_longjmp(png, 1);
}
void on_warning(png_structp, png_const_charp) {}

// Plain C-style so that the longjmp skips no destructor: every object with one
// lives in the caller. Returns false with source->message set on failure.
bool decode_into(PngSource* source, png_structp png, png_infop info, DecodedImage* image, std::vector<png_bytep>* rows,
                 const std::string* label, Status* status) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_fn(png, source, read_bytes);
  png_read_info(png, info);
  const png_byte color_type = png_get_color_type(png, info);
  const png_byte bit_depth = png_get_bit_depth(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  if (bit_depth == 16) png_set_strip_16(png);
  // Gray with alpha has no place among 1, 3 or 4 channels: widen it to RGBA.
  if (color_type == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int channels = png_get_channels(png, info);
  if (channels == 2) png_error(png, "gray with alpha after transformations");
  *status = allocate_pixels(*image, png_get_image_height(png, info), png_get_image_width(png, info), channels, *label,
                            "PNG");
  if (!status->is_ok()) return true;
  const size_t row_bytes = png_get_rowbytes(png, info);
  if (row_bytes != static_cast<size_t>(image->width) * static_cast<size_t>(channels)) {
    png_error(png, "unexpected row size");
  }
  rows->resize(static_cast<size_t>(image->height));
  for (size_t y = 0; y < rows->size(); ++y) (*rows)[y] = image->pixels.data() + y * row_bytes;
  png_read_image(png, rows->data());
  png_read_end(png, nullptr);
  return true;
}

}  // namespace
#endif

Result<DecodedImage> decode_png(const uint8_t* data, size_t size, const std::string& label) {
#ifdef ONYX_HAVE_PNG
  PngSource source{data, size, 0, {}};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, on_error, on_warning);
  if (png == nullptr) return runtime_error(label, ": cannot create a PNG reader");
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return runtime_error(label, ": cannot create a PNG reader");
  }
  DecodedImage image;
  std::vector<png_bytep> rows;
  Status status;
  const bool decoded = decode_into(&source, png, info, &image, &rows, &label, &status);
  png_destroy_read_struct(&png, &info, nullptr);
  if (!decoded) return invalid_argument(label, ": PNG data is invalid: ", source.message);
  if (!status.is_ok()) return status;
  return image;
#else
  return missing_library(label, "PNG", "libpng-dev");
#endif
}

}  // namespace onyx::cpu::image
