// See qconv_int8.h.
#include "providers/cpu/quant/qconv_int8.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "providers/cpu/quant/quant_vec.h"

namespace onyx::cpu::quant {
namespace {

// Row `row` = c * taps + t of one group's columns (im2col): x[c] at tap t
// of every output pixel, or `pad` outside the image.
void im2col_row(const uint8_t* x, const nn::Window& win, uint8_t pad, int64_t row, uint8_t* out) {
  const size_t rank = win.rank();
  const int64_t taps = win.kernel_size(), pixels = win.output_size(), plane = win.input_size();
  const int64_t c = row / taps;
  int64_t rest = row % taps;
  int64_t tap[8];
  int64_t position[8];
  std::vector<int64_t> tap_big, position_big;
  int64_t* tap_index = tap;
  int64_t* pos = position;
  if (rank > 8) {
    tap_big.resize(rank);
    position_big.resize(rank);
    tap_index = tap_big.data();
    pos = position_big.data();
  }
  for (size_t d = rank; d-- > 0;) {
    tap_index[d] = rest % win.kernel[d];
    rest /= win.kernel[d];
  }
  const uint8_t* xc = x + c * plane;
  if (rank == 2) {
    // Rows of the output: a stretch of valid input columns, padding either side.
    const int64_t oh = win.output[0], ow = win.output[1], ih = win.input[0], iw = win.input[1];
    const int64_t sh = win.strides[0], sw = win.strides[1];
    const int64_t off_h = tap_index[0] * win.dilations[0] - win.pads[0];
    const int64_t off_w = tap_index[1] * win.dilations[1] - win.pads[1];
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
      // The padding is a pixel or two wide: plain stores, not a memset call.
      for (int64_t q = 0; q < q0; ++q) o[q] = pad;
      const uint8_t* src = xc + in_r * iw + off_w;
      if (sw == 1) {
        std::memcpy(o + q0, src + q0, static_cast<size_t>(q1 - q0));
      } else {
        for (int64_t q = q0; q < q1; ++q) o[q] = src[q * sw];
      }
      for (int64_t q = q1; q < ow; ++q) o[q] = pad;
    }
    return;
  }
  for (int64_t p = 0; p < pixels; ++p) {
    int64_t left = p, offset = 0, stride = 1;
    bool inside = true;
    for (size_t d = rank; d-- > 0;) {
      pos[d] = left % win.output[d];
      left /= win.output[d];
      const int64_t coord = pos[d] * win.strides[d] - win.pads[d] + tap_index[d] * win.dilations[d];
      inside = inside && coord >= 0 && coord < win.input[d];
      offset += coord * stride;
      stride *= win.input[d];
    }
    out[p] = inside ? xc[offset] : pad;
  }
}

bool is_pointwise(const nn::Window& win) {
  for (size_t d = 0; d < win.rank(); ++d) {
    if (win.kernel[d] != 1 || win.strides[d] != 1 || win.pads[d] != 0 || win.pads[d + win.rank()] != 0) return false;
  }
  return true;
}

}  // namespace

// The channels of a pixel in the in-place convolution's NHWC image: C
// rounded up to whole groups of four (a 3-channel stem conv reads four bytes
// a pixel; the fourth meets zero weights).
int64_t in_place_channels(int64_t c) { return (c + 3) / 4 * 4; }

// W [M, C, taps] of int8 as B [taps * C', M] (row t * C' + c holds W[:, c,
// t], zero rows for the padded channels), packed for the in-place
// convolution; empty when the kernel cannot read rows in place.
PackedInt8 pack_in_place(const Tensor& w, Int8Isa isa) {
  const int64_t m = w.dim(0), c = w.dim(1), taps = w.size() / std::max<int64_t>(m * c, 1);
  const int64_t cp = in_place_channels(c), k = taps * cp;
  const auto* src = w.data<int8_t>();
  std::vector<int8_t> b(static_cast<size_t>(k * m), 0);
  for (int64_t o = 0; o < m; ++o)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t t = 0; t < taps; ++t) b[static_cast<size_t>((t * cp + ci) * m + o)] = src[(o * c + ci) * taps + t];
  PackedInt8 packed = pack_int8_b(Int8Matrix{b.data(), true, k, m, m, false}, nullptr, 0, isa);
  if (!int8_indirect_supported(packed, taps)) return {};
  return packed;
}

PackedConvWeights pack_conv_weights(const Tensor& w, const int32_t* zero_points, int64_t zero_count, int64_t group,
                                    Int8Isa isa, bool in_place) {
  PackedConvWeights packed;
  packed.shape = w.shape();
  bool zero_weights_zero = true;
  for (int64_t i = 0; i < zero_count; ++i) zero_weights_zero = zero_weights_zero && zero_points[i] == 0;
  if (in_place && group == 1 && w.rank() == 4 && w.dtype() == DataType::kInt8 && zero_weights_zero && w.size() > 0) {
    packed.in_place = pack_in_place(w, isa);
    if (!packed.in_place.empty()) {
      packed.in_place_sums = int8_column_sums(packed.in_place);
      return packed;
    }
  }
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
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t g = 0; g < group; ++g) {
      const uint8_t* xg = data + (n * channels + g * cg) * plane;
      const PackedInt8& wg = w.groups[static_cast<size_t>(g)];
      // The columns (im2col, padded with x's zero point) are made a group of
      // rows at a time as they are packed, never whole; a pointwise kernel's
      // columns are X itself.
      const PackedInt8 columns =
          pointwise
              ? pack_int8_b(Int8Matrix{xg, is_signed, kg, pixels, pixels, false}, &x_zero, 1, wg.isa(), pool)
              : pack_int8_b_rows(kg, pixels, is_signed, &x_zero, 1, wg.isa(), pool,
                                 [&](int64_t k0, int64_t count, uint8_t* rows) {
                                   for (int64_t t = 0; t < count; ++t)
                                     im2col_row(xg, window, static_cast<uint8_t>(x_zero), k0 + t, rows + t * pixels);
                                 });
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

bool conv_int8_in_place_ready(const Tensor& x, const PackedConvWeights& w, int64_t group, const nn::Window& window,
                              bool x_nhwc) {
  return !w.in_place.empty() && group == 1 && x.dtype() == DataType::kUInt8 && x.rank() == 4 && window.rank() == 2 &&
         w.shape.size() == 4 && x.dim(x_nhwc ? 3 : 1) == w.shape[1] && window.kernel[0] == w.shape[2] &&
         window.kernel[1] == w.shape[3];
}

namespace {

// One image's convolution from its NHWC pixels (`stride` bytes apart, the
// channels padded to whole groups), blocks of sums to done(n, ...).
void convolve_nhwc_image(const uint8_t* image, int64_t stride, int64_t n, const uint8_t* padding, const int32_t* adjust,
                         const PackedConvWeights& w, const nn::Window& window, ThreadPool* pool,
                         const ConvPixelBlockDone& done) {
  const int64_t ih = window.input[0], iw = window.input[1];
  const int64_t ow = window.output[1], pixels = window.output[0] * ow;
  const int64_t kh = window.kernel[0], kw = window.kernel[1], taps = kh * kw;
  const int64_t sh = window.strides[0], sw = window.strides[1], dh = window.dilations[0], dw = window.dilations[1];
  const int64_t top = window.pads[0], left = window.pads[1];
  qgemm_int8_indirect(
      pixels, taps,
      [&](int64_t p0, int64_t count, const uint8_t** out) {
        for (int64_t i = 0; i < count; ++i) {
          const int64_t p = p0 + i, y = p / ow, xo = p % ow;
          for (int64_t a = 0; a < kh; ++a) {
            const int64_t r = y * sh - top + a * dh;
            for (int64_t b = 0; b < kw; ++b) {
              const int64_t col = xo * sw - left + b * dw;
              const bool inside = r >= 0 && r < ih && col >= 0 && col < iw;
              out[(a * kw + b) * count + i] = inside ? image + (r * iw + col) * stride : padding;
            }
          }
        }
      },
      w.in_place, adjust, pool,
      [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, const int32_t* block, int64_t ld) {
        done(n, i0, i1, j0, j1, block, ld);
      });
}

// C(p, j) = sum (x - x_zero) w + bias = dot - (x_zero * colsum(j) - bias(j)).
std::vector<int32_t> conv_adjust(const PackedConvWeights& w, int32_t x_zero, const int32_t* bias) {
  const int64_t m = w.shape[0];
  std::vector<int32_t> adjust(static_cast<size_t>(m));
  for (int64_t j = 0; j < m; ++j) {
    const uint32_t term =
        static_cast<uint32_t>(x_zero) * static_cast<uint32_t>(w.in_place_sums[static_cast<size_t>(j)]);
    adjust[static_cast<size_t>(j)] = static_cast<int32_t>(term - static_cast<uint32_t>(bias != nullptr ? bias[j] : 0));
  }
  return adjust;
}

}  // namespace

void conv_int8_in_place(const Tensor& x, int32_t x_zero, const PackedConvWeights& w, const int32_t* bias,
                        const nn::Window& window, ThreadPool* pool, const ConvPixelBlockDone& done, bool x_nhwc) {
  const int64_t batch = x.dim(0), channels = x.dim(x_nhwc ? 3 : 1), stride = in_place_channels(channels);
  const int64_t plane = window.input[0] * window.input[1];
  const std::vector<int32_t> adjust = conv_adjust(w, x_zero, bias);
  // Padded channels hold x_zero too (their weights are zero; any byte would do).
  const std::vector<uint8_t> padding(static_cast<size_t>(stride), static_cast<uint8_t>(x_zero));
  const auto* data = static_cast<const uint8_t*>(x.raw_data());
  if (x_nhwc && stride == channels) {
    // Already the layout the GEMM reads: no copy at all.
    for (int64_t n = 0; n < batch; ++n)
      convolve_nhwc_image(data + n * plane * channels, stride, n, padding.data(), adjust.data(), w, window, pool, done);
    return;
  }
  const size_t nhwc_size = static_cast<size_t>(plane * stride);
  std::unique_ptr<uint8_t[]> nhwc_buffer(new uint8_t[nhwc_size]);  // written whole below
  uint8_t* nhwc = nhwc_buffer.get();
  if (stride != channels) std::memset(nhwc, x_zero, nhwc_size);
  for (int64_t n = 0; n < batch; ++n) {
    const uint8_t* image = data + n * channels * plane;
    if (x_nhwc) {
      // Pixels of C channels into rows of `stride`.
      for (int64_t p = 0; p < plane; ++p)
        std::memcpy(nhwc + p * stride, image + p * channels, static_cast<size_t>(channels));
    } else {
      // [C, H*W] -> [H*W, C], a block of 64 pixels of every channel at a time.
      parallel_for(pool, (plane + 63) / 64, static_cast<double>(64 * channels), [&](int64_t begin, int64_t end) {
        for (int64_t blk = begin; blk < end; ++blk) {
          const int64_t p0 = blk * 64, p1 = std::min(plane, p0 + 64);
          transpose_bytes(image + p0, plane, channels, p1 - p0, nhwc + p0 * stride, stride);
        }
      });
    }
    convolve_nhwc_image(nhwc, stride, n, padding.data(), adjust.data(), w, window, pool, done);
  }
}

}  // namespace onyx::cpu::quant
