// WebP decoding (lossy and lossless, first frame) through libwebp.
#include "providers/cpu/image/image_codecs.h"

#ifdef ONYX_HAVE_WEBP
#include <webp/decode.h>
#endif

namespace onyx::cpu::image {

Result<DecodedImage> decode_webp(const uint8_t* data, size_t size, const std::string& label) {
#ifdef ONYX_HAVE_WEBP
  WebPBitstreamFeatures features;
  const VP8StatusCode code = WebPGetFeatures(data, size, &features);
  if (code != VP8_STATUS_OK) {
    return invalid_argument(label, ": WebP data is invalid (libwebp status ", static_cast<int>(code), ")");
  }
  const int channels = features.has_alpha ? 4 : 3;
  DecodedImage image;
  ONYX_RETURN_IF_ERROR(allocate_pixels(image, features.height, features.width, channels, label, "WebP"));
  const int stride = features.width * channels;
  uint8_t* decoded = features.has_alpha
                         ? WebPDecodeRGBAInto(data, size, image.pixels.data(), image.pixels.size(), stride)
                         : WebPDecodeRGBInto(data, size, image.pixels.data(), image.pixels.size(), stride);
  if (decoded == nullptr) return invalid_argument(label, ": WebP data is invalid or truncated");
  return image;
#else
  return missing_library(label, "WebP", "libwebp-dev");
#endif
}

}  // namespace onyx::cpu::image
