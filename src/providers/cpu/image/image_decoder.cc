// ImageDecoder (opset 20): decodes one encoded image (a 1-D uint8 tensor holding
// a BMP, JPEG, JPEG 2000, PNG, PNM, TIFF or WebP file) into an (H, W, C) uint8
// tensor in RGB, BGR or Grayscale order.
#include <cstring>

#include "providers/cpu/image/image_codecs.h"
#include "providers/kernel.h"

namespace onyx::cpu::image {

ImageFormat detect_format(const uint8_t* data, size_t size) {
  auto starts_with = [&](const char* magic, size_t n, size_t offset = 0) {
    return size >= offset + n && std::memcmp(data + offset, magic, n) == 0;
  };
  if (starts_with("BM", 2)) return ImageFormat::kBmp;
  if (starts_with("\xff\xd8\xff", 3)) return ImageFormat::kJpeg;
  if (starts_with("\x00\x00\x00\x0cjP  \r\n\x87\n", 12) || starts_with("\xff\x4f\xff\x51", 4)) {
    return ImageFormat::kJpeg2000;
  }
  if (starts_with("\x89PNG\r\n\x1a\n", 8)) return ImageFormat::kPng;
  if (size >= 2 && data[0] == 'P' && data[1] >= '1' && data[1] <= '6') return ImageFormat::kPnm;
  if (starts_with("II*\0", 4) || starts_with("MM\0*", 4)) return ImageFormat::kTiff;
  if (starts_with("RIFF", 4) && starts_with("WEBP", 4, 8)) return ImageFormat::kWebp;
  return ImageFormat::kUnknown;
}

const char* format_name(ImageFormat format) {
  switch (format) {
    case ImageFormat::kBmp: return "BMP";
    case ImageFormat::kJpeg: return "JPEG";
    case ImageFormat::kJpeg2000: return "JPEG 2000";
    case ImageFormat::kPng: return "PNG";
    case ImageFormat::kPnm: return "PNM";
    case ImageFormat::kTiff: return "TIFF";
    case ImageFormat::kWebp: return "WebP";
    case ImageFormat::kUnknown: break;
  }
  return "unknown";
}

bool built_with(ImageFormat format) {
  switch (format) {
    case ImageFormat::kBmp:
    case ImageFormat::kPnm: return true;  // decoded here, no library
#ifdef ONYX_HAVE_JPEG
    case ImageFormat::kJpeg: return true;
#endif
#ifdef ONYX_HAVE_OPENJPEG
    case ImageFormat::kJpeg2000: return true;
#endif
#ifdef ONYX_HAVE_PNG
    case ImageFormat::kPng: return true;
#endif
#ifdef ONYX_HAVE_TIFF
    case ImageFormat::kTiff: return true;
#endif
#ifdef ONYX_HAVE_WEBP
    case ImageFormat::kWebp: return true;
#endif
    default: return false;
  }
}

Status allocate_pixels(DecodedImage& image, int64_t height, int64_t width, int channels, const std::string& label,
                       const char* format) {
  if (height <= 0 || width <= 0 || width > kMaxPixels || height > kMaxPixels / width) {
    return invalid_argument(label, ": ", format, " image has size ", width, "x", height,
                            ", expected a positive size of at most ", kMaxPixels, " pixels");
  }
  image.height = height;
  image.width = width;
  image.channels = channels;
  image.pixels.assign(static_cast<size_t>(height * width * channels), 0);
  return Status::ok();
}

Status missing_library(const std::string& label, const char* format, const char* package) {
#if defined(__EMSCRIPTEN__)
  // onyx-web (web/) is built without codec libraries: there is nothing to install.
  (void)package;
  return not_implemented(label, ": onyx's WebAssembly build has no ", format,
                         " decoder (BMP and PNM images decode; decode others in the page, e.g. with "
                         "Tensor.fromImage)");
#else
  return not_implemented(label, ": onyx was built without ", format, " support (install ", package,
                         " and rebuild)");
#endif
}

namespace {

enum class PixelFormat { kRgb, kBgr, kGrayscale };

// Luma from RGB with the ITU-R 601 weights in 16-bit fixed point, rounded: the
// conversion the ONNX reference (Pillow's convert("L")) uses.
inline uint8_t luma(uint8_t r, uint8_t g, uint8_t b) {
  return static_cast<uint8_t>((r * 19595u + g * 38470u + b * 7471u + 0x8000u) >> 16);
}

class ImageDecoderKernel final : public Kernel {
 public:
  explicit ImageDecoderKernel(const KernelInfo& info) {
    const std::string format = info.attr_string("pixel_format", "RGB");
    if (format == "RGB") {
      pixel_format_ = PixelFormat::kRgb;
    } else if (format == "BGR") {
      pixel_format_ = PixelFormat::kBgr;
    } else if (format == "Grayscale") {
      pixel_format_ = PixelFormat::kGrayscale;
    } else {
      throw Error(invalid_model(info.label(), ": attribute pixel_format is '", format,
                                "', expected 'RGB', 'BGR' or 'Grayscale'"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* encoded = ctx.input_tensor(0);
    if (encoded == nullptr) return invalid_argument(ctx.label(), ": input encoded_stream is missing");
    if (encoded->dtype() != DataType::kUInt8 || encoded->rank() != 1) {
      return invalid_argument(ctx.label(), ": input encoded_stream is ", encoded->describe(),
                              ", expected a 1-D uint8 tensor");
    }
    const auto* data = encoded->data<uint8_t>();
    const auto size = static_cast<size_t>(encoded->size());
    const ImageFormat format = detect_format(data, size);
    Result<DecodedImage> decoded = invalid_argument(ctx.label(), ": input encoded_stream (", size,
                                                    " bytes) is not a BMP, JPEG, JPEG 2000, PNG, PNM, TIFF or WebP file");
    switch (format) {
      case ImageFormat::kBmp: decoded = decode_bmp(data, size, ctx.label()); break;
      case ImageFormat::kJpeg: decoded = decode_jpeg(data, size, ctx.label()); break;
      case ImageFormat::kJpeg2000: decoded = decode_jpeg2000(data, size, ctx.label()); break;
      case ImageFormat::kPng: decoded = decode_png(data, size, ctx.label()); break;
      case ImageFormat::kPnm: decoded = decode_pnm(data, size, ctx.label()); break;
      case ImageFormat::kTiff: decoded = decode_tiff(data, size, ctx.label()); break;
      case ImageFormat::kWebp: decoded = decode_webp(data, size, ctx.label()); break;
      case ImageFormat::kUnknown: break;
    }
    if (!decoded.is_ok()) return decoded.status();
    const DecodedImage& image = decoded.value();
    if (image.channels != 1 && image.channels != 3 && image.channels != 4) {
      return runtime_error(ctx.label(), ": ", format_name(format), " decoder gave ", image.channels,
                           " channels, expected 1, 3 or 4");
    }
    const int out_channels = pixel_format_ == PixelFormat::kGrayscale ? 1 : 3;
    Tensor& out = ctx.allocate_output(0, DataType::kUInt8, {image.height, image.width, out_channels});
    uint8_t* dst = out.data<uint8_t>();
    const uint8_t* src = image.pixels.data();
    const int64_t pixels = image.height * image.width;
    const int in_channels = image.channels;
    // Alpha, where present, is dropped: the op's outputs have no alpha channel.
    for (int64_t p = 0; p < pixels; ++p) {
      const uint8_t* s = src + p * in_channels;
      const uint8_t r = s[0];
      const uint8_t g = in_channels == 1 ? s[0] : s[1];
      const uint8_t b = in_channels == 1 ? s[0] : s[2];
      switch (pixel_format_) {
        case PixelFormat::kRgb:
          dst[3 * p] = r;
          dst[3 * p + 1] = g;
          dst[3 * p + 2] = b;
          break;
        case PixelFormat::kBgr:
          dst[3 * p] = b;
          dst[3 * p + 1] = g;
          dst[3 * p + 2] = r;
          break;
        case PixelFormat::kGrayscale: dst[p] = in_channels == 1 ? s[0] : luma(r, g, b); break;
      }
    }
    return Status::ok();
  }

 private:
  PixelFormat pixel_format_ = PixelFormat::kRgb;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "ImageDecoder", 20, kLatestVersion, {DataType::kUInt8}, ImageDecoderKernel);

}  // namespace onyx::cpu::image
