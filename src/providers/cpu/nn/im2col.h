// Column matrices of sliding windows, shared by Conv, ConvTranspose and their
// gradients: im2col copies each window's inputs into a column, col2im adds
// columns back into an image (overlapping windows summed).
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/thread_pool.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu::nn {

// Writes the (channels * kernel_size) x output_size column matrix of one image
// and group: row (c, kernel offset), column output position; zero where the
// window reads padding. `x` points at the group's first channel.
template <typename T>
void im2col(const T* x, int64_t channels, const Window& w, T* col, ThreadPool* pool) {
  const int64_t in_size = w.input_size();
  const int64_t out_size = w.output_size();
  const int64_t kernel_size = w.kernel_size();
  const size_t rank = w.rank();
  if (rank <= 2) {
    // 1-D is 2-D with a height of 1.
    const int64_t ih_n = rank == 2 ? w.input[0] : 1, iw_n = w.input[rank - 1];
    const int64_t oh_n = rank == 2 ? w.output[0] : 1, ow_n = w.output[rank - 1];
    const int64_t kw_n = w.kernel[rank - 1];
    const int64_t sh = rank == 2 ? w.strides[0] : 1, sw = w.strides[rank - 1];
    const int64_t dh = rank == 2 ? w.dilations[0] : 1, dw = w.dilations[rank - 1];
    const int64_t ph = rank == 2 ? w.pads[0] : 0, pw = w.pads[rank - 1];
    parallel_for(pool, channels * kernel_size, static_cast<double>(out_size), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t c = row / kernel_size;
        const int64_t kh = (row % kernel_size) / kw_n;
        const int64_t kw = row % kw_n;
        const T* xc = x + c * in_size;
        T* dst = col + row * out_size;
        for (int64_t oh = 0; oh < oh_n; ++oh) {
          const int64_t ih = oh * sh - ph + kh * dh;
          T* out = dst + oh * ow_n;
          if (ih < 0 || ih >= ih_n) {
            std::fill(out, out + ow_n, T(0));
            continue;
          }
          const T* xrow = xc + ih * iw_n;
          const int64_t iw0 = kw * dw - pw;
          if (sw == 1) {
            // Valid output columns are those with 0 <= ow + iw0 < iw_n.
            const int64_t lo = std::clamp<int64_t>(-iw0, 0, ow_n);
            const int64_t hi = std::clamp<int64_t>(iw_n - iw0, lo, ow_n);
            std::fill(out, out + lo, T(0));
            std::memcpy(out + lo, xrow + lo + iw0, static_cast<size_t>(hi - lo) * sizeof(T));
            std::fill(out + hi, out + ow_n, T(0));
          } else {
            for (int64_t ow = 0; ow < ow_n; ++ow) {
              const int64_t iw = ow * sw + iw0;
              out[ow] = (iw >= 0 && iw < iw_n) ? xrow[iw] : T(0);
            }
          }
        }
      }
    });
    return;
  }
  // Any spatial rank: walk kernel and output positions as mixed-radix counters.
  parallel_for(pool, channels * kernel_size, static_cast<double>(out_size * rank), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> koff(rank), opos(rank);
    for (int64_t row = begin; row < end; ++row) {
      const int64_t c = row / kernel_size;
      int64_t rest = row % kernel_size;
      for (size_t d = rank; d-- > 0;) {
        koff[d] = rest % w.kernel[d];
        rest /= w.kernel[d];
      }
      const T* xc = x + c * in_size;
      T* dst = col + row * out_size;
      std::fill(opos.begin(), opos.end(), 0);
      for (int64_t o = 0; o < out_size; ++o) {
        int64_t offset = 0;
        bool inside = true;
        for (size_t d = 0; d < rank; ++d) {
          const int64_t i = opos[d] * w.strides[d] - w.pads[d] + koff[d] * w.dilations[d];
          if (i < 0 || i >= w.input[d]) {
            inside = false;
            break;
          }
          offset = offset * w.input[d] + i;
        }
        dst[o] = inside ? xc[offset] : T(0);
        for (size_t d = rank; d-- > 0;) {
          if (++opos[d] < w.output[d]) break;
          opos[d] = 0;
        }
      }
    }
  });
}

// The resolved geometry: input/output spatial sizes, kernel, strides,
// dilations and the begin pads (the end pads only shape the output).
struct Geometry {
  std::vector<int64_t> input, output, kernel, strides, dilations, pads_begin;
};

// Adds col ((channels * kernel) x input positions) into y (channels x output positions).
template <typename T>
void col2im(const T* col, int64_t channels, const Geometry& g, T* y) {
  const size_t rank = g.input.size();
  const int64_t in_size = shape_size(g.input), out_size = shape_size(g.output), k_size = shape_size(g.kernel);
  std::vector<int64_t> koff(rank), ipos(rank);
  for (int64_t row = 0; row < channels * k_size; ++row) {
    const int64_t c = row / k_size;
    int64_t rest = row % k_size;
    for (size_t d = rank; d-- > 0;) {
      koff[d] = rest % g.kernel[d];
      rest /= g.kernel[d];
    }
    const T* src = col + row * in_size;
    T* yc = y + c * out_size;
    std::fill(ipos.begin(), ipos.end(), 0);
    for (int64_t i = 0; i < in_size; ++i) {
      int64_t offset = 0;
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t o = ipos[d] * g.strides[d] - g.pads_begin[d] + koff[d] * g.dilations[d];
        if (o < 0 || o >= g.output[d]) {
          inside = false;
          break;
        }
        offset = offset * g.output[d] + o;
      }
      if (inside) yc[offset] += src[i];
      for (size_t d = rank; d-- > 0;) {
        if (++ipos[d] < g.input[d]) break;
        ipos[d] = 0;
      }
    }
  }
}

// The same geometry as a 1-D or 2-D plane (1-D as a height of 1), for
// col2im_chunk.
struct Plane2D {
  int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
  explicit Plane2D(const Geometry& g) {
    const size_t r = g.input.size();
    const bool two = r == 2;
    ih = two ? g.input[0] : 1, oh = two ? g.output[0] : 1, kh = two ? g.kernel[0] : 1;
    sh = two ? g.strides[0] : 1, dh = two ? g.dilations[0] : 1, ph = two ? g.pads_begin[0] : 0;
    iw = g.input[r - 1], ow = g.output[r - 1], kw = g.kernel[r - 1];
    sw = g.strides[r - 1], dw = g.dilations[r - 1], pw = g.pads_begin[r - 1];
  }
};

// Adds col rows of channels [c0, c1) (each kh*kw rows of (r1 - r0) * iw
// floats: input rows r0..r1) into y (channels x oh x ow).
inline void col2im_chunk(const float* col, int64_t c0, int64_t c1, const Plane2D& p, int64_t r0, int64_t r1, float* y) {
  const int64_t width = (r1 - r0) * p.iw, out_size = p.oh * p.ow;
  for (int64_t c = c0; c < c1; ++c) {
    float* yc = y + c * out_size;
    for (int64_t a = 0; a < p.kh; ++a)
      for (int64_t b = 0; b < p.kw; ++b) {
        const float* src = col + ((c * p.kh + a) * p.kw + b) * width;
        const int64_t shift = b * p.dw - p.pw;  // output column = iw * sw + shift
        // Input columns whose output column is inside [0, ow).
        const int64_t lo = shift >= 0 ? 0 : std::min(p.iw, (-shift + p.sw - 1) / p.sw);
        const int64_t hi = std::max(lo, std::min(p.iw, (p.ow - shift + p.sw - 1) / p.sw));
        for (int64_t i = r0; i < r1; ++i) {
          const int64_t o = i * p.sh - p.ph + a * p.dh;
          if (o < 0 || o >= p.oh) continue;
          const float* s_row = src + (i - r0) * p.iw;
          float* y_row = yc + o * p.ow + shift;
          if (p.sw == 1) {
            for (int64_t j = lo; j < hi; ++j) y_row[j] += s_row[j];
          } else {
            for (int64_t j = lo; j < hi; ++j) y_row[j * p.sw] += s_row[j];
          }
        }
      }
  }
}

}  // namespace onyx::cpu::nn
