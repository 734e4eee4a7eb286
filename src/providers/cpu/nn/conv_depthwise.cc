// Depthwise 2-D convolution. 3x3 (the MobileNet/EfficientNet case): the
// channel is copied once into a zero-padded plane, then every output element
// is its 9 taps summed in registers, the loop over output columns vectorized
// (AVX-512 and AVX2 through target clones). Other kernels: each output row is
// built in place by adding one shifted input row per tap.
#include "providers/cpu/nn/conv_depthwise.h"

#include <algorithm>
#include <vector>

#include "providers/cpu/gemm/target_clones.h"

namespace onyx::cpu::nn {
namespace {

struct Geometry {
  int64_t ih_n, iw_n, oh_n, ow_n, kh_n, kw_n, sh, sw, dh, dw, ph, pw;
};

// One channel of one image.
ONYX_TARGET_CLONES
void depthwise_channel(const float* x, const float* wc, float bias, float* y, const Geometry& g) {
  for (int64_t oh = 0; oh < g.oh_n; ++oh) {
    float* out = y + oh * g.ow_n;
    std::fill(out, out + g.ow_n, bias);
    for (int64_t kh = 0; kh < g.kh_n; ++kh) {
      const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
      if (ih < 0 || ih >= g.ih_n) continue;
      const float* xrow = x + ih * g.iw_n;
      for (int64_t kw = 0; kw < g.kw_n; ++kw) {
        const float wv = wc[kh * g.kw_n + kw];
        const int64_t iw0 = kw * g.dw - g.pw;  // input column of output column 0
        // Output columns whose input column ow * sw + iw0 is inside [0, iw_n).
        const int64_t lo = iw0 >= 0 ? 0 : std::min(g.ow_n, (-iw0 + g.sw - 1) / g.sw);
        const int64_t hi = g.iw_n - iw0 <= 0 ? 0 : std::min(g.ow_n, (g.iw_n - iw0 + g.sw - 1) / g.sw);
        if (g.sw == 1) {
          const float* src = xrow + iw0;
          for (int64_t ow = lo; ow < hi; ++ow) out[ow] += wv * src[ow];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) out[ow] += wv * xrow[ow * g.sw + iw0];
        }
      }
    }
  }
}

// 3x3, dilation 1: `padded` is the channel with its zero border, `pw_n`
// floats wide, so no tap needs a bounds check.
template <int64_t kStride>
ONYX_TARGET_CLONES void depthwise_3x3_padded(const float* padded, int64_t pw_n, const float* wc, float bias,
                                             float* y, int64_t oh_n, int64_t ow_n) {
  const float w0 = wc[0], w1 = wc[1], w2 = wc[2], w3 = wc[3], w4 = wc[4], w5 = wc[5], w6 = wc[6], w7 = wc[7],
              w8 = wc[8];
  for (int64_t oh = 0; oh < oh_n; ++oh) {
    const float* r0 = padded + oh * kStride * pw_n;
    const float* r1 = r0 + pw_n;
    const float* r2 = r1 + pw_n;
    float* out = y + oh * ow_n;
    for (int64_t ow = 0; ow < ow_n; ++ow) {
      const int64_t c = ow * kStride;
      out[ow] = bias + w0 * r0[c] + w1 * r0[c + 1] + w2 * r0[c + 2] + w3 * r1[c] + w4 * r1[c + 1] + w5 * r1[c + 2] +
                w6 * r2[c] + w7 * r2[c + 1] + w8 * r2[c + 2];
    }
  }
}

// Copies channel `x` (ih_n x iw_n) into `padded` (rows x cols, zero border
// starting `ph` rows above and `pw` columns left of the input).
void pad_channel(const float* x, const Geometry& g, int64_t rows, int64_t cols, float* padded) {
  std::fill(padded, padded + rows * cols, 0.0f);
  for (int64_t ih = 0; ih < g.ih_n; ++ih) {
    const int64_t r = ih + g.ph;
    if (r < 0 || r >= rows) continue;
    const int64_t c0 = std::max<int64_t>(0, g.pw), i0 = std::max<int64_t>(0, -g.pw);
    const int64_t count = std::min(g.iw_n - i0, cols - c0);
    if (count > 0) std::copy(x + ih * g.iw_n + i0, x + ih * g.iw_n + i0 + count, padded + r * cols + c0);
  }
}

}  // namespace

void depthwise_conv2d(const float* x, const float* weights, const float* bias, float* y, int64_t batch,
                      int64_t channels, const Window& w, ThreadPool* pool) {
  const Geometry g{w.input[0],   w.input[1],   w.output[0], w.output[1], w.kernel[0], w.kernel[1],
                   w.strides[0], w.strides[1], w.dilations[0], w.dilations[1], w.pads[0], w.pads[1]};
  const int64_t in_size = g.ih_n * g.iw_n, out_size = g.oh_n * g.ow_n, taps = g.kh_n * g.kw_n;
  const bool is_3x3 = g.kh_n == 3 && g.kw_n == 3 && g.dh == 1 && g.dw == 1 && g.sh == g.sw && (g.sh == 1 || g.sh == 2);
  // The padded plane covers every row and column a tap of an output reads.
  const int64_t padded_rows = (g.oh_n - 1) * g.sh + 3, padded_cols = (g.ow_n - 1) * g.sw + 3;
  parallel_for(pool, batch * channels, 2.0 * static_cast<double>(out_size * taps), [&](int64_t begin, int64_t end) {
    std::vector<float> padded(is_3x3 ? static_cast<size_t>(padded_rows * padded_cols) : 0);
    for (int64_t task = begin; task < end; ++task) {
      if (is_3x3) {
        const int64_t c = task % channels;
        pad_channel(x + task * in_size, g, padded_rows, padded_cols, padded.data());
        const float b = bias != nullptr ? bias[c] : 0.0f;
        if (g.sh == 1) {
          depthwise_3x3_padded<1>(padded.data(), padded_cols, weights + c * 9, b, y + task * out_size, g.oh_n, g.ow_n);
        } else {
          depthwise_3x3_padded<2>(padded.data(), padded_cols, weights + c * 9, b, y + task * out_size, g.oh_n, g.ow_n);
        }
        continue;
      }
      const int64_t c = task % channels;
      depthwise_channel(x + task * in_size, weights + c * taps, bias != nullptr ? bias[c] : 0.0f, y + task * out_size,
                        g);
    }
  });
}

}  // namespace onyx::cpu::nn
