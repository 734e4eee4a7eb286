// TIFF decoding through libtiff: the first directory (page) of the file, read
// with libtiff's RGBA reader, which handles every photometric interpretation,
// bit depth and compression the library knows.
#include "providers/cpu/image/image_codecs.h"

#ifdef ONYX_HAVE_TIFF
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include <tiffio.h>
#endif

namespace onyx::cpu::image {

#ifdef ONYX_HAVE_TIFF
namespace {

// The encoded bytes as a read-only file for TIFFClientOpen.
struct TiffSource {
  const uint8_t* data;
  uint64_t size;
  uint64_t pos;
  char message[256];
};

tmsize_t read_proc(thandle_t handle, void* out, tmsize_t length) {
  auto* source = static_cast<TiffSource*>(handle);
  if (length < 0) return -1;
  const uint64_t left = source->pos < source->size ? source->size - source->pos : 0;
  const uint64_t n = static_cast<uint64_t>(length) < left ? static_cast<uint64_t>(length) : left;
  std::memcpy(out, source->data + source->pos, n);
  source->pos += n;
  return static_cast<tmsize_t>(n);
}
tmsize_t write_proc(thandle_t, void*, tmsize_t) { return -1; }
toff_t seek_proc(thandle_t handle, toff_t offset, int whence) {
  auto* source = static_cast<TiffSource*>(handle);
  uint64_t base = 0;
  if (whence == SEEK_CUR) base = source->pos;
  if (whence == SEEK_END) base = source->size;
  source->pos = base + offset;
  return source->pos;
}
int close_proc(thandle_t) { return 0; }
toff_t size_proc(thandle_t handle) { return static_cast<TiffSource*>(handle)->size; }
int map_proc(thandle_t handle, void** base, toff_t* size) {
  auto* source = static_cast<TiffSource*>(handle);
  *base = const_cast<uint8_t*>(source->data);
  *size = source->size;
  return 1;
}
void unmap_proc(thandle_t, void*, toff_t) {}

int on_error(TIFF*, void* user_data, const char* module, const char* format, va_list args) {
  auto* source = static_cast<TiffSource*>(user_data);
  std::vsnprintf(source->message, sizeof(source->message), format, args);
  return 1;  // handled: libtiff prints nothing
}
int on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

}  // namespace
#endif

Result<DecodedImage> decode_tiff(const uint8_t* data, size_t size, const std::string& label) {
#ifdef ONYX_HAVE_TIFF
  TiffSource source{data, size, 0, {}};
  TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
  if (options == nullptr) return runtime_error(label, ": cannot create a TIFF reader");
  TIFFOpenOptionsSetErrorHandlerExtR(options, on_error, &source);
  TIFFOpenOptionsSetWarningHandlerExtR(options, on_warning, &source);
  // Bounds libtiff's own buffers as kMaxPixels bounds ours.
  TIFFOpenOptionsSetMaxSingleMemAlloc(options, static_cast<tmsize_t>(kMaxPixels) * 4);
  TIFF* tiff = TIFFClientOpenExt("memory", "rm", &source, read_proc, write_proc, seek_proc, close_proc, size_proc,
                                 map_proc, unmap_proc, options);
  TIFFOpenOptionsFree(options);
  if (tiff == nullptr) return invalid_argument(label, ": TIFF data is invalid: ", source.message);

  uint32_t width = 0, height = 0;
  uint16_t samples_per_pixel = 1, photometric = PHOTOMETRIC_RGB, extra_count = 0;
  uint16_t* extra_types = nullptr;
  TIFFGetField(tiff, TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tiff, TIFFTAG_IMAGELENGTH, &height);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_SAMPLESPERPIXEL, &samples_per_pixel);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_PHOTOMETRIC, &photometric);
  TIFFGetFieldDefaulted(tiff, TIFFTAG_EXTRASAMPLES, &extra_count, &extra_types);
  const bool gray = photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_MINISWHITE;
  const bool alpha = extra_count > 0;
  const int channels = gray && !alpha ? 1 : (alpha ? 4 : 3);

  DecodedImage image;
  Status status = allocate_pixels(image, height, width, channels, label, "TIFF");
  if (!status.is_ok()) {
    TIFFClose(tiff);
    return status;
  }
  std::vector<uint32_t> raster(static_cast<size_t>(width) * height);
  const int ok = TIFFReadRGBAImageOriented(tiff, width, height, raster.data(), ORIENTATION_TOPLEFT, 0);
  TIFFClose(tiff);
  if (!ok) return invalid_argument(label, ": TIFF data is invalid: ", source.message);
  uint8_t* out = image.pixels.data();
  for (size_t i = 0; i < raster.size(); ++i, out += channels) {
    const uint32_t pixel = raster[i];
    out[0] = static_cast<uint8_t>(TIFFGetR(pixel));
    if (channels == 1) continue;
    out[1] = static_cast<uint8_t>(TIFFGetG(pixel));
    out[2] = static_cast<uint8_t>(TIFFGetB(pixel));
    if (channels == 4) out[3] = static_cast<uint8_t>(TIFFGetA(pixel));
  }
  return image;
#else
  return missing_library(label, "TIFF", "libtiff-dev");
#endif
}

}  // namespace onyx::cpu::image
