// JPEG decoding through libjpeg (libjpeg-turbo on Debian), with the library's
// default settings (accurate integer IDCT, fancy upsampling) as Pillow uses them,
// so results match the ONNX reference bit for bit.
#include "providers/cpu/image/image_codecs.h"

#ifdef ONYX_HAVE_JPEG
#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>
#endif

namespace onyx::cpu::image {

#ifdef ONYX_HAVE_JPEG
namespace {

// libjpeg reports fatal errors through error_exit, which must not return: it
// jumps back to decode_into with the message kept here.
struct ErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr info) {
  auto* errors = reinterpret_cast<ErrorManager*>(info->err);
  (*info->err->format_message)(info, errors->message);
  std::longjmp(errors->jump, 1);
}
void on_message(j_common_ptr) {}  // warnings are not printed

// Plain C-style so that the longjmp skips no destructor: every object with one
// lives in the caller. Returns false with errors->message set on failure.
bool decode_into(const uint8_t* data, size_t size, jpeg_decompress_struct* info, ErrorManager* errors,
                 DecodedImage* image, const std::string* label, Status* status) {
  info->err = jpeg_std_error(&errors->base);
  errors->base.error_exit = on_error;
  errors->base.output_message = on_message;
  if (setjmp(errors->jump)) {
    jpeg_destroy_decompress(info);
    return false;
  }
  jpeg_create_decompress(info);
  jpeg_mem_src(info, data, static_cast<unsigned long>(size));
  jpeg_read_header(info, TRUE);
  // Gray stays gray; YCbCr and RGB become RGB; CMYK and YCCK stay CMYK and are
  // turned into RGB below.
  const bool cmyk = info->jpeg_color_space == JCS_CMYK || info->jpeg_color_space == JCS_YCCK;
  if (info->jpeg_color_space == JCS_GRAYSCALE) {
    info->out_color_space = JCS_GRAYSCALE;
  } else if (cmyk) {
    info->out_color_space = JCS_CMYK;
  } else {
    info->out_color_space = JCS_RGB;
  }
  jpeg_start_decompress(info);
  const int channels = info->out_color_space == JCS_GRAYSCALE ? 1 : 3;
  *status = allocate_pixels(*image, info->output_height, info->output_width, channels, *label, "JPEG");
  if (!status->is_ok()) {
    jpeg_destroy_decompress(info);
    return true;
  }
  const size_t in_row = static_cast<size_t>(info->output_width) * static_cast<size_t>(info->output_components);
  std::vector<uint8_t>& pixels = image->pixels;
  uint8_t* cmyk_row = nullptr;
  if (cmyk) {
    // The CMYK row is decoded after the RGB rows' end; the buffer grows once.
    pixels.resize(pixels.size() + in_row);
    cmyk_row = pixels.data() + pixels.size() - in_row;
  }
  while (info->output_scanline < info->output_height) {
    const size_t y = info->output_scanline;
    JSAMPROW row = cmyk ? cmyk_row : pixels.data() + y * in_row;
    jpeg_read_scanlines(info, &row, 1);
    if (cmyk) {
      // Adobe writes inverted CMYK: the stored value is 255 - ink, so a
      // colour is the product of the stored ink and key values.
      const bool inverted = info->saw_Adobe_marker;
      uint8_t* dst = pixels.data() + y * static_cast<size_t>(info->output_width) * 3;
      for (size_t x = 0; x < info->output_width; ++x) {
        const uint8_t* s = cmyk_row + 4 * x;
        for (int c = 0; c < 3; ++c) {
          const unsigned ink = inverted ? s[c] : 255u - s[c];
          const unsigned key = inverted ? s[3] : 255u - s[3];
          dst[3 * x + c] = static_cast<uint8_t>((ink * key + 127) / 255);
        }
      }
    }
  }
  if (cmyk) pixels.resize(pixels.size() - in_row);
  jpeg_finish_decompress(info);
  jpeg_destroy_decompress(info);
  return true;
}

}  // namespace
#endif

Result<DecodedImage> decode_jpeg(const uint8_t* data, size_t size, const std::string& label) {
#ifdef ONYX_HAVE_JPEG
  DecodedImage image;
  jpeg_decompress_struct info{};
  ErrorManager errors{};
  Status status;
  if (!decode_into(data, size, &info, &errors, &image, &label, &status)) {
    return invalid_argument(label, ": JPEG data is invalid: ", errors.message);
  }
  if (!status.is_ok()) return status;
  return image;
#else
  return missing_library(label, "JPEG", "libjpeg-dev");
#endif
}

}  // namespace onyx::cpu::image
