// JPEG 2000 decoding (JP2 files and raw J2K codestreams) through OpenJPEG.
// Components deeper than 8 bits keep their high bits; subsampled components
// are widened to the full grid by repetition.
#include "providers/cpu/image/image_codecs.h"

#ifdef ONYX_HAVE_OPENJPEG
#include <cstdio>
#include <cstring>

#include <openjpeg.h>
#endif

namespace onyx::cpu::image {

#ifdef ONYX_HAVE_OPENJPEG
namespace {

struct Jp2Source {
  const uint8_t* data;
  uint64_t size;
  uint64_t pos;
  char message[256];
};

OPJ_SIZE_T read_proc(void* out, OPJ_SIZE_T length, void* user) {
  auto* source = static_cast<Jp2Source*>(user);
  const uint64_t left = source->pos < source->size ? source->size - source->pos : 0;
  if (left == 0) return static_cast<OPJ_SIZE_T>(-1);  // end of stream
  const uint64_t n = length < left ? length : left;
  std::memcpy(out, source->data + source->pos, n);
  source->pos += n;
  return static_cast<OPJ_SIZE_T>(n);
}
OPJ_OFF_T skip_proc(OPJ_OFF_T count, void* user) {
  auto* source = static_cast<Jp2Source*>(user);
  const int64_t target = static_cast<int64_t>(source->pos) + count;
  if (target < 0 || static_cast<uint64_t>(target) > source->size) return -1;
  source->pos = static_cast<uint64_t>(target);
  return count;
}
OPJ_BOOL seek_proc(OPJ_OFF_T offset, void* user) {
  auto* source = static_cast<Jp2Source*>(user);
  if (offset < 0 || static_cast<uint64_t>(offset) > source->size) return OPJ_FALSE;
  source->pos = static_cast<uint64_t>(offset);
  return OPJ_TRUE;
}
void on_error(const char* message, void* user) {
  auto* source = static_cast<Jp2Source*>(user);
  std::snprintf(source->message, sizeof(source->message), "%s", message);
  // OpenJPEG's messages end in a newline.
  const size_t n = std::strlen(source->message);
  if (n > 0 && source->message[n - 1] == '\n') source->message[n - 1] = '\0';
}
void on_quiet(const char*, void*) {}

// Frees the OpenJPEG objects on every path.
struct Jp2Objects {
  opj_codec_t* codec = nullptr;
  opj_stream_t* stream = nullptr;
  opj_image_t* image = nullptr;
  ~Jp2Objects() {
    if (image != nullptr) opj_image_destroy(image);
    if (stream != nullptr) opj_stream_destroy(stream);
    if (codec != nullptr) opj_destroy_codec(codec);
  }
};

}  // namespace
#endif

Result<DecodedImage> decode_jpeg2000(const uint8_t* data, size_t size, const std::string& label) {
#ifdef ONYX_HAVE_OPENJPEG
  const bool codestream = size >= 4 && std::memcmp(data, "\xff\x4f\xff\x51", 4) == 0;
  Jp2Source source{data, size, 0, "unknown error"};
  Jp2Objects objects;
  objects.codec = opj_create_decompress(codestream ? OPJ_CODEC_J2K : OPJ_CODEC_JP2);
  if (objects.codec == nullptr) return runtime_error(label, ": cannot create a JPEG 2000 reader");
  opj_set_error_handler(objects.codec, on_error, &source);
  opj_set_warning_handler(objects.codec, on_quiet, &source);
  opj_set_info_handler(objects.codec, on_quiet, &source);
  opj_dparameters_t parameters;
  opj_set_default_decoder_parameters(&parameters);
  if (!opj_setup_decoder(objects.codec, &parameters)) return runtime_error(label, ": cannot set up the JPEG 2000 reader");
  objects.stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
  if (objects.stream == nullptr) return runtime_error(label, ": cannot create a JPEG 2000 stream");
  opj_stream_set_user_data(objects.stream, &source, nullptr);
  opj_stream_set_user_data_length(objects.stream, size);
  opj_stream_set_read_function(objects.stream, read_proc);
  opj_stream_set_skip_function(objects.stream, skip_proc);
  opj_stream_set_seek_function(objects.stream, seek_proc);
  if (!opj_read_header(objects.stream, objects.codec, &objects.image) || objects.image == nullptr) {
    return invalid_argument(label, ": JPEG 2000 header is invalid: ", source.message);
  }
  // Refuse absurd sizes before OpenJPEG allocates its tiles.
  const opj_image_t* header = objects.image;
  const int64_t full_width = static_cast<int64_t>(header->x1) - header->x0;
  const int64_t full_height = static_cast<int64_t>(header->y1) - header->y0;
  if (full_width <= 0 || full_height <= 0 || full_width > kMaxPixels || full_height > kMaxPixels / full_width) {
    return invalid_argument(label, ": JPEG 2000 image has size ", full_width, "x", full_height,
                            ", expected a positive size of at most ", kMaxPixels, " pixels");
  }
  if (!opj_decode(objects.codec, objects.stream, objects.image) ||
      !opj_end_decompress(objects.codec, objects.stream)) {
    return invalid_argument(label, ": JPEG 2000 data is invalid: ", source.message);
  }
  const opj_image_t* decoded = objects.image;
  const uint32_t components = decoded->numcomps;
  if (components == 0 || components > 4 || components == 2) {
    return not_implemented(label, ": JPEG 2000 image has ", components, " components, expected 1, 3 or 4");
  }
  const opj_image_comp_t& first = decoded->comps[0];
  const int64_t width = first.w * static_cast<int64_t>(first.dx);
  const int64_t height = first.h * static_cast<int64_t>(first.dy);
  DecodedImage image;
  ONYX_RETURN_IF_ERROR(allocate_pixels(image, height, width, static_cast<int>(components), label, "JPEG 2000"));
  for (uint32_t c = 0; c < components; ++c) {
    const opj_image_comp_t& comp = decoded->comps[c];
    if (comp.data == nullptr || comp.dx == 0 || comp.dy == 0 || comp.prec == 0 || comp.prec > 31) {
      return invalid_argument(label, ": JPEG 2000 component ", c, " is malformed");
    }
    // Signed samples are shifted to unsigned; precision is brought to 8 bits.
    const int64_t offset = comp.sgnd ? (int64_t{1} << (comp.prec - 1)) : 0;
    const int64_t max = (int64_t{1} << comp.prec) - 1;
    for (int64_t y = 0; y < height; ++y) {
      const int64_t sy = y / comp.dy;
      for (int64_t x = 0; x < width; ++x) {
        const int64_t sx = x / comp.dx;
        int64_t v = 0;
        if (sy < comp.h && sx < comp.w) v = comp.data[sy * comp.w + sx] + offset;
        v = v < 0 ? 0 : (v > max ? max : v);
        if (comp.prec > 8) v >>= (comp.prec - 8);
        else if (comp.prec < 8) v = (v * 255 + max / 2) / max;
        image.pixels[static_cast<size_t>((y * width + x) * components + c)] = static_cast<uint8_t>(v);
      }
    }
  }
  return image;
#else
  return missing_library(label, "JPEG 2000", "libopenjp2-7-dev");
#endif
}

}  // namespace onyx::cpu::image
