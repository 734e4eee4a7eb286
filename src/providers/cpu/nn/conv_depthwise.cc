// Depthwise 2-D convolution: each output row is built in place (it stays in
// L1) by adding one shifted input row per kernel tap, so the inner loop is a
// unit-stride multiply-add that the compiler vectorizes (for AVX-512 and AVX2
// through target clones).
#include "providers/cpu/nn/conv_depthwise.h"

#include <algorithm>

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

}  // namespace

void depthwise_conv2d(const float* x, const float* weights, const float* bias, float* y, int64_t batch,
                      int64_t channels, const Window& w, ThreadPool* pool) {
  const Geometry g{w.input[0],   w.input[1],   w.output[0], w.output[1], w.kernel[0], w.kernel[1],
                   w.strides[0], w.strides[1], w.dilations[0], w.dilations[1], w.pads[0], w.pads[1]};
  const int64_t in_size = g.ih_n * g.iw_n, out_size = g.oh_n * g.ow_n, taps = g.kh_n * g.kw_n;
  parallel_for(pool, batch * channels, 2.0 * static_cast<double>(out_size * taps), [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t c = task % channels;
      depthwise_channel(x + task * in_size, weights + c * taps, bias != nullptr ? bias[c] : 0.0f, y + task * out_size,
                        g);
    }
  });
}

}  // namespace onyx::cpu::nn
