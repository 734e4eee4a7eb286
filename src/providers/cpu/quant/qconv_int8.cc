// See qconv_int8.h.
#include "providers/cpu/quant/qconv_int8.h"

#include <algorithm>
#include <cstring>

namespace onyx::cpu::quant {
namespace {

// col[(c * taps + t) * pixels + p] = x[c] at tap t of output pixel p, or
// `pad` outside the image: the columns of one group of one image.
void im2col(const uint8_t* x, int64_t channels, const nn::Window& win, uint8_t pad, uint8_t* col, ThreadPool* pool) {
  const size_t rank = win.rank();
  const int64_t taps = win.kernel_size(), pixels = win.output_size(), plane = win.input_size();
  parallel_for(pool, channels * taps, static_cast<double>(pixels), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> tap(rank), position(rank);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t c = row / taps;
      int64_t rest = row % taps;
      for (size_t d = rank; d-- > 0;) {
        tap[d] = rest % win.kernel[d];
        rest /= win.kernel[d];
      }
      const uint8_t* xc = x + c * plane;
      uint8_t* out = col + row * pixels;
      if (rank == 2) {
        // Rows of the output: a stretch of valid input columns, padding either side.
        const int64_t oh = win.output[0], ow = win.output[1], ih = win.input[0], iw = win.input[1];
        const int64_t sh = win.strides[0], sw = win.strides[1];
        const int64_t off_h = tap[0] * win.dilations[0] - win.pads[0];
        const int64_t off_w = tap[1] * win.dilations[1] - win.pads[1];
        // Output columns whose input column off_w + q * sw is inside [0, iw).
        int64_t q0 = off_w >= 0 ? 0 : (-off_w + sw - 1) / sw;
        int64_t q1 = off_w >= iw ? 0 : (iw - off_w + sw - 1) / sw;
        q0 = std::min(q0, ow);
        q1 = std::clamp(q1, q0, ow);
        for (int64_t r = 0; r < oh; ++r) {
          uint8_t* o = out + r * ow;
          const int64_t in_r = r * sh + off_h;
          if (in_r < 0 || in_r >= ih) {
            std::memset(o, pad, static_cast<size_t>(ow));
            continue;
          }
          std::memset(o, pad, static_cast<size_t>(q0));
          const uint8_t* src = xc + in_r * iw + off_w;
          if (sw == 1) {
            std::memcpy(o + q0, src + q0, static_cast<size_t>(q1 - q0));
          } else {
            for (int64_t q = q0; q < q1; ++q) o[q] = src[q * sw];
          }
          std::memset(o + q1, pad, static_cast<size_t>(ow - q1));
        }
        continue;
      }
      for (int64_t p = 0; p < pixels; ++p) {
        int64_t left = p, offset = 0, stride = 1;
        bool inside = true;
        for (size_t d = rank; d-- > 0;) {
          position[d] = left % win.output[d];
          left /= win.output[d];
          const int64_t coord = position[d] * win.strides[d] - win.pads[d] + tap[d] * win.dilations[d];
          inside = inside && coord >= 0 && coord < win.input[d];
          offset += coord * stride;
          stride *= win.input[d];
        }
        out[p] = inside ? xc[offset] : pad;
      }
    }
  });
}

bool is_pointwise(const nn::Window& win) {
  for (size_t d = 0; d < win.rank(); ++d) {
    if (win.kernel[d] != 1 || win.strides[d] != 1 || win.pads[d] != 0 || win.pads[d + win.rank()] != 0) return false;
  }
  return true;
}

}  // namespace

PackedConvWeights pack_conv_weights(const Tensor& w, const int32_t* zero_points, int64_t zero_count, int64_t group,
                                    Int8Isa isa) {
  PackedConvWeights packed;
  packed.shape = w.shape();
  const int64_t m = w.dim(0), mg = m / group, kg = m == 0 ? 0 : w.size() / m;
  const auto* data = static_cast<const uint8_t*>(w.raw_data());
  for (int64_t g = 0; g < group; ++g) {
    const Int8Matrix wg{data + g * mg * kg, w.dtype() == DataType::kInt8, mg, kg, kg, false};
    packed.groups.push_back(
        pack_int8_a(wg, zero_count > 1 ? zero_points + g * mg : zero_points, zero_count > 1 ? mg : zero_count, isa));
    isa = packed.groups.back().isa();
  }
  return packed;
}

void conv_int8(const Tensor& x, int32_t x_zero, const PackedConvWeights& w, int64_t group, const nn::Window& window,
               int32_t* y, ThreadPool* pool, const ConvBlockDone& done) {
  const int64_t batch = x.dim(0), channels = x.dim(1), cg = channels / group;
  const int64_t m = w.shape[0], mg = m / group;
  const int64_t pixels = window.output_size(), plane = window.input_size();
  const int64_t kg = cg * window.kernel_size();
  const bool pointwise = is_pointwise(window);
  const bool is_signed = x.dtype() == DataType::kInt8;
  const auto* data = static_cast<const uint8_t*>(x.raw_data());
  // The columns of one group (im2col writes every byte: not cleared).
  const std::unique_ptr<uint8_t[]> col(pointwise ? nullptr : new uint8_t[static_cast<size_t>(kg * pixels)]);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t g = 0; g < group; ++g) {
      const uint8_t* xg = data + (n * channels + g * cg) * plane;
      const uint8_t* source = xg;
      if (!pointwise) {
        im2col(xg, cg, window, static_cast<uint8_t>(x_zero), col.get(), pool);
        source = col.get();
      }
      const PackedInt8& wg = w.groups[static_cast<size_t>(g)];
      const PackedInt8 columns =
          pack_int8_b(Int8Matrix{source, is_signed, kg, pixels, pixels, false}, &x_zero, 1, wg.isa(), pool);
      int32_t* out = y != nullptr ? y + (n * m + g * mg) * pixels : nullptr;
      if (done) {
        qgemm_int8(wg, columns, out, pixels, pool,
                   [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, const int32_t* block, int64_t ld) {
                     done(n, g * mg, i0, i1, j0, j1, block, ld);
                   });
      } else {
        qgemm_int8(wg, columns, out, pixels, pool);
      }
    }
  }
}

}  // namespace onyx::cpu::quant
