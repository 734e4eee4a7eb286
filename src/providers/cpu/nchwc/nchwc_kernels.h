// The contract between the com.microsoft.nchwc op kernels (nchwc_conv.cc,
// nchwc_pool.cc) and their per-ISA inner loops (nchwc_avx512.cc with blocks
// of 16 channels, nchwc_avx2.cc with blocks of 8). Internal to this folder.
#pragma once

#include <algorithm>
#include <cstdint>

namespace onyx {
class KernelInfo;
}

namespace onyx::cpu::nchwc {

// Taps [lo, hi) of a window starting at input index `start` (stride
// `dilation`) that fall inside [0, limit). A window wholly before the input
// gets lo == hi past `kernel`.
inline void window_range(int64_t start, int64_t dilation, int64_t kernel, int64_t limit, int64_t& lo, int64_t& hi) {
  if (dilation == 1) {
    lo = start < 0 ? -start : 0;
    hi = std::min(kernel, limit - start);
  } else {
    lo = start < 0 ? (-start + dilation - 1) / dilation : 0;
    hi = limit - start <= 0 ? 0 : std::min(kernel, (limit - start + dilation - 1) / dilation);
  }
  if (hi < lo) hi = lo;
}

// The activations a tile applies in registers before it stores. Sigmoid and
// Tanh are applied by the Conv kernel over the stored output instead.
struct Activation {
  enum Kind : int { kNone, kRelu, kLeakyRelu, kClip, kHardSigmoid };
  int kind = kNone;
  float alpha = 0.0f;  // LeakyRelu slope, Clip min, HardSigmoid alpha
  float beta = 0.0f;   // Clip max, HardSigmoid beta
};

// One image of a direct convolution with blocked output
// Y[ob][oh][ow][B] (ob = output block), in output pixels q = oh * out_w + ow.
//
// The input is read through `taps`: output pixel (oh, ow) reads, for tap t,
// lane l, the float at x + oh * x_row_step + ow * x_pixel_step + taps[t] + l.
// The input is padded (or needs no padding), so every tap is in bounds,
// unless the call lists the taps to read (tap_ids).
//   lanes == B: blocked input, tap t = (input block, kh, kw), l = input channel
//   in the block; lanes == 1: NCHW input, tap t = (channel, kh, kw); depthwise:
//   tap t = (kh, kw), l = the channel in the block (vector, not broadcast),
//               and block ob reads x + ob * x_block_stride; x is not padded
//               (see the geometry fields) and taps outside it are skipped.
// Packed weights (regular and NCHW input): for the group of `nob` output
// blocks starting at ob0, the floats at w + ob0 * tap_count * lanes * B are
// [tap][lane][nob][B]. Depthwise: W as given, [O/B][kh][kw][B].
struct ConvJob {
  int lanes = 0;  // B or 1; unused for depthwise
  const float* x = nullptr;
  int64_t x_pixel_step = 0;
  int64_t x_row_step = 0;
  int64_t x_block_stride = 0;
  const int64_t* taps = nullptr;
  int64_t tap_count = 0;
  const float* w = nullptr;
  int64_t weight_count = 0;  // floats at w
  int64_t out_w = 0;
  float* y = nullptr;
  int64_t y_block_stride = 0;   // OH * OW * B
  const float* sum = nullptr;   // blocked like y, or null
  const float* bias = nullptr;  // O floats, or null
  Activation activation;
  bool prefetch_weights = false;  // fetch the next chunk of W into L2 while computing
  // Regular form, unpadded input: when set, the tiles of this call read only
  // taps tap_ids[0..tap_id_count) (ascending, within the call's [t0, t1)):
  // their windows are clipped by the input's edge and the other taps would
  // read outside it. x may then point before the input (the origin of a
  // window that starts in the padding). A window wholly in the padding lists
  // no taps (tap_id_count 0, tap_ids still set).
  const int32_t* tap_ids = nullptr;
  int64_t tap_id_count = 0;
  // Output pixels between consecutive pixels of a conv call: 1 (along a row)
  // or out_w (down a column, q1 - q0 a multiple of it plus one at most).
  int64_t pixel_stride = 1;
  // With interior_only, a conv call computes only the pixels of [q0, q1) in
  // rows [row_lo, row_hi) and columns [col_lo, col_hi) (whose windows lie
  // inside the input), its tiles running on across rows.
  bool interior_only = false;
  int64_t row_lo = 0, row_hi = 0, col_lo = 0, col_hi = 0;
  // Depthwise only: x is the unpadded input (planes of in_h x in_w pixels,
  // x_row_step = stride_h * in_w * B, x_pixel_step = stride_w * B), taps are
  // [kh][kw], and windows are clipped to the input.
  int64_t in_h = 0, in_w = 0, pad_top = 0, pad_left = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
};

// Pooling of one image plane per channel block, blocked in and out.
struct PoolJob {
  const float* x = nullptr;
  float* y = nullptr;
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool is_max = true;
  bool count_include_pad = false;
};

struct Kernels {
  int block;              // B
  int max_filter_blocks;  // output blocks per weight group (F)
  int max_pixels;         // output pixels per tile (P)
  // Output blocks [ob0, ob0 + nob) (nob <= F, one packed weight group) for
  // pixels [q0, q1), over taps [t0, t1). `first`: start from zero, else add
  // to what y holds; `last`: add bias and sum, apply the activation.
  void (*conv)(const ConvJob& job, int64_t ob0, int64_t nob, int64_t q0, int64_t q1, int64_t t0, int64_t t1, bool first,
               bool last);
  // Depthwise: output block ob for pixels [q0, q1), all taps, finished.
  void (*depthwise)(const ConvJob& job, int64_t ob, int64_t q0, int64_t q1);
  // Output rows [r0, r1) of the N * C/B * out_h rows (plane-major).
  void (*pool)(const PoolJob& job, int64_t r0, int64_t r1);
  // y[p][B] = max or mean of x[p][hw][B] for planes [p0, p1).
  void (*global_pool)(const float* x, float* y, int64_t hw, bool is_max, int64_t p0, int64_t p1);
  // Blocked pixels out[i][B] for i < count from a plain tensor: lane k <
  // valid (<= B) reads src[k * channel_stride + i * pixel_stride], the other
  // lanes are zero. NCHW: pixel_stride 1; NHWC: channel_stride 1.
  void (*reorder_in)(const float* src, int64_t channel_stride, int64_t pixel_stride, int64_t valid, int64_t count,
                     float* out);
  // The inverse: dst[k * channel_stride + i * pixel_stride] = in[i][k] for
  // k < valid, i < count.
  void (*reorder_out)(const float* in, int64_t channel_stride, int64_t pixel_stride, int64_t valid, int64_t count,
                      float* dst);
};

// Null when the library was built without that ISA's code.
const Kernels* avx512_kernels();
const Kernels* avx2_kernels();
// The kernels for nchwc_block_size(), or null when it is 1.
const Kernels* kernels();
// kernels() for an op kernel being created: throws onyx::Error naming the
// node when the CPU has neither AVX2 with FMA nor AVX-512F.
const Kernels* required_kernels(const KernelInfo& info);

}  // namespace onyx::cpu::nchwc
