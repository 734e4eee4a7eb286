// Conv (1-D, 2-D, 3-D and beyond). Float: weights packed once for the SGEMM
// microkernels (at kernel creation when W is a constant), a 1x1, stride-1,
// unpadded convolution is a GEMM on X as it is, depthwise 2-D runs directly,
// 3x3 stride-1 by Winograd F(2x2, 3x3) (conv_winograd.cc), other 1-D/2-D
// ones as a GEMM reading the padded input in place ("phase planes", no
// im2col), and the rest im2col of a few hundred output columns at a time then
// GEMM; bias, activation (FusedConv) in the GEMM's write-back. double uses
// plain im2col+GEMM; ConvInteger the exact int8 GEMM (quant/qconv_int8.h,
// W packed at kernel creation when constant).
#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/gemm/target_clones.h"
#include "providers/cpu/nn/conv_depthwise.h"
#include "providers/cpu/nn/conv_winograd.h"
#include "providers/cpu/nn/fused_kernels.h"
#include "providers/cpu/nn/im2col.h"
#include "providers/cpu/nn/nn_util.h"
#include "providers/cpu/quant/qconv_int8.h"

namespace onyx::cpu {
namespace {

using nn::im2col;
using nn::Window;

// Y = conv(X, W) + B for one element type that has a GEMM (float, double).
template <typename T>
void convolve(const T* x, const T* weights, const T* bias, T* y, int64_t batch, int64_t in_channels,
              int64_t out_channels, int64_t group, const Window& w, ThreadPool* pool) {
  const int64_t cg = in_channels / group;
  const int64_t mg = out_channels / group;
  const int64_t in_size = w.input_size();
  const int64_t out_size = w.output_size();
  const int64_t kg = cg * w.kernel_size();
  bool pointwise = true;  // 1x1, stride 1, no padding: X is already the column matrix
  for (size_t d = 0; d < w.rank(); ++d) {
    pointwise = pointwise && w.kernel[d] == 1 && w.strides[d] == 1 && w.pads[d] == 0 && w.pads[d + w.rank()] == 0;
  }
  // One image and group: Y_g (mg x out) = W_g (mg x kg) * col (kg x out) (+ bias).
  auto run_one = [&](int64_t n, int64_t g, T* col, ThreadPool* inner_pool) {
    const T* xg = x + (n * in_channels + g * cg) * in_size;
    T* yg = y + (n * out_channels + g * mg) * out_size;
    const T* source = xg;
    if (!pointwise) {
      im2col(xg, cg, w, col, inner_pool);
      source = col;
    }
    T beta = T(0);
    if (bias != nullptr) {
      for (int64_t m = 0; m < mg; ++m) std::fill(yg + m * out_size, yg + (m + 1) * out_size, bias[g * mg + m]);
      beta = T(1);
    }
    gemm<T>(false, false, mg, out_size, kg, T(1), weights + g * mg * kg, kg, source, out_size, beta, yg, out_size,
            inner_pool);
  };
  const size_t col_count = pointwise ? 0 : static_cast<size_t>(kg * out_size);
  if (group == 1 || pool == nullptr) {
    std::vector<T> col(col_count);
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t g = 0; g < group; ++g) run_one(n, g, col.data(), pool);
    return;
  }
  // Grouped (depthwise included): each (image, group) is small, so run them in
  // parallel with single-threaded GEMMs.
  parallel_for(pool, batch * group, 2.0 * static_cast<double>(mg * kg * out_size), [&](int64_t begin, int64_t end) {
    std::vector<T> col(col_count);
    for (int64_t task = begin; task < end; ++task) run_one(task / group, task % group, col.data(), nullptr);
  });
}

// im2col restricted to output columns [j0, j1) of a 1-D or 2-D window: writes
// the (channels * kernel_size) x (j1 - j0) column matrix, row-major.
void im2col_columns(const float* x, int64_t channels, const Window& w, int64_t j0, int64_t j1, float* col) {
  const size_t rank = w.rank();
  const int64_t in_size = w.input_size(), kernel_size = w.kernel_size(), width = j1 - j0;
  const int64_t ih_n = rank == 2 ? w.input[0] : 1, iw_n = w.input[rank - 1];
  const int64_t ow_n = w.output[rank - 1];
  const int64_t kw_n = w.kernel[rank - 1];
  const int64_t sh = rank == 2 ? w.strides[0] : 1, sw = w.strides[rank - 1];
  const int64_t dh = rank == 2 ? w.dilations[0] : 1, dw = w.dilations[rank - 1];
  const int64_t ph = rank == 2 ? w.pads[0] : 0, pw = w.pads[rank - 1];
  for (int64_t row = 0; row < channels * kernel_size; ++row) {
    const int64_t c = row / kernel_size;
    const int64_t kh = (row % kernel_size) / kw_n;
    const int64_t kw = row % kw_n;
    const float* xc = x + c * in_size;
    float* dst = col + row * width - j0;  // dst[j] for j in [j0, j1)
    const int64_t iw0 = kw * dw - pw;
    // Output columns whose input column ow * sw + iw0 is inside [0, iw_n).
    const int64_t lo_all = iw0 >= 0 ? 0 : std::min(ow_n, (-iw0 + sw - 1) / sw);
    const int64_t hi_all = iw_n - iw0 <= 0 ? 0 : std::min(ow_n, (iw_n - iw0 + sw - 1) / sw);
    for (int64_t j = j0; j < j1;) {
      const int64_t oh = j / ow_n, ow_begin = j % ow_n;
      const int64_t ow_end = std::min(ow_n, ow_begin + (j1 - j));
      float* out = dst + oh * ow_n;
      const int64_t ih = oh * sh - ph + kh * dh;
      if (ih < 0 || ih >= ih_n) {
        std::fill(out + ow_begin, out + ow_end, 0.0f);
      } else {
        const float* xrow = xc + ih * iw_n;
        const int64_t lo = std::clamp(lo_all, ow_begin, ow_end), hi = std::clamp(hi_all, lo, ow_end);
        std::fill(out + ow_begin, out + lo, 0.0f);
        if (sw == 1) {
          std::memcpy(out + lo, xrow + lo + iw0, static_cast<size_t>(hi - lo) * sizeof(float));
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) out[ow] = xrow[ow * sw + iw0];
        }
        std::fill(out + hi, out + ow_end, 0.0f);
      }
      j += ow_end - ow_begin;
    }
  }
}

// W of one group (mg x kg, row-major) packed for sgemm_packed_a.
std::vector<PackedMatrix> pack_weights(const float* weights, int64_t group, int64_t mg, int64_t kg) {
  std::vector<PackedMatrix> packed;
  packed.reserve(static_cast<size_t>(group));
  for (int64_t g = 0; g < group; ++g) packed.push_back(pack_a(false, mg, kg, weights + g * mg * kg, kg));
  return packed;
}

// dst[j] = src[2 * j] for j < n: one phase of a stride-2 row (a fixed stride
// lets the compiler vectorize the loads with permutes).
ONYX_TARGET_CLONES
void copy_every_second(const float* src, float* dst, int64_t n) {
  for (int64_t j = 0; j < n; ++j) dst[j] = src[2 * j];
}

// The input of one image laid out so that sgemm_packed_a_rows_b can read the
// column matrix of a 1-D or 2-D convolution in place: zero-padded, and for a
// stride s split into s x s phase planes, plane (rh, rw) of channel c holding
// padded(c, i * sh + rh, j * sw + rw) for i < hq, j < wq. Then the tap (kh, kw)
// of output (oh, ow) is at a fixed offset from oh * wq + ow: the GEMM columns
// are q = oh * wq + ow, of which those with ow >= Wo are computed and dropped.
struct PhasePlanes {
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pl = 0;
  int64_t ih = 1, iw = 1, oh = 1, ow = 1, kh = 1, kw = 1;
  int64_t hq = 1, wq = 1;
  int64_t plane = 1, channel_stride = 1;
  // Only the phases some tap reads are stored (a 1x1 stride-2 kernel reads
  // one of four): slot[rh * sw + rw] is the phase's place, -1 when unused.
  std::vector<int64_t> slot;
  std::vector<int64_t> phases;  // rh * sw + rw of each stored phase, in order

  explicit PhasePlanes(const Window& w) {
    const size_t r = w.rank();
    if (r == 2) {
      sh = w.strides[0], dh = w.dilations[0], pt = w.pads[0], ih = w.input[0], oh = w.output[0], kh = w.kernel[0];
    }
    sw = w.strides[r - 1], dw = w.dilations[r - 1], pl = w.pads[r - 1], iw = w.input[r - 1], ow = w.output[r - 1];
    kw = w.kernel[r - 1];
    const int64_t hp = ih + pt + (r == 2 ? w.pads[r] : 0), wp = iw + pl + w.pads[2 * r - 1];
    hq = (hp + sh - 1) / sh;
    wq = (wp + sw - 1) / sw;
    // With stride 1 across, a row needs no right padding of its own: reads
    // past its end land in the next row's left padding (or the zeroed slack
    // after the last row), which is zero as long as it is at least as wide.
    // (The output row must still fit: not so with pads wider than the kernel.)
    const int64_t tight = iw + pl + std::max<int64_t>(0, w.pads[2 * r - 1] - pl);
    if (sw == 1 && tight >= ow) wq = tight;
    plane = hq * wq;
    slot.assign(static_cast<size_t>(sh * sw), -1);
    for (int64_t a = 0; a < kh; ++a)
      for (int64_t b = 0; b < kw; ++b) slot[static_cast<size_t>(((a * dh) % sh) * sw + (b * dw) % sw)] = 0;
    for (size_t p = 0; p < slot.size(); ++p) {
      if (slot[p] < 0) continue;
      slot[p] = static_cast<int64_t>(phases.size());
      phases.push_back(static_cast<int64_t>(p));
    }
    channel_stride = static_cast<int64_t>(phases.size()) * plane;
  }
  int64_t columns() const { return oh * wq; }

  // Fills the planes of `channels` channels from x (C x ih x iw).
  void fill(const float* x, int64_t channels, float* planes, ThreadPool* pool) const {
    const int64_t count = static_cast<int64_t>(phases.size());
    parallel_for(pool, channels * count, static_cast<double>(plane), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t c = t / count, phase = phases[static_cast<size_t>(t % count)];
        const int64_t rh = phase / sw, rw = phase % sw;
        const float* xc = x + c * ih * iw;
        float* dst = planes + c * channel_stride + (t % count) * plane;
        // Plane columns j with 0 <= j * sw + rw - pl < iw.
        const int64_t j_lo = std::min(wq, std::max<int64_t>(0, (pl - rw + sw - 1) / sw));
        const int64_t j_hi = std::max(j_lo, std::min(wq, (iw + pl - rw + sw - 1) / sw));
        for (int64_t i = 0; i < hq; ++i) {
          float* row = dst + i * wq;
          const int64_t in_row = i * sh + rh - pt;
          if (in_row < 0 || in_row >= ih) {
            std::fill(row, row + wq, 0.0f);
            continue;
          }
          const float* src = xc + in_row * iw;
          std::fill(row, row + j_lo, 0.0f);
          if (sw == 1) {
            std::memcpy(row + j_lo, src + j_lo + rw - pl, static_cast<size_t>(j_hi - j_lo) * sizeof(float));
          } else if (sw == 2) {
            copy_every_second(src + j_lo * 2 + rw - pl, row + j_lo, j_hi - j_lo);
          } else {
            for (int64_t j = j_lo; j < j_hi; ++j) row[j] = src[j * sw + rw - pl];
          }
          std::fill(row + j_hi, row + wq, 0.0f);
        }
      }
    });
  }

  // Offset of each GEMM row (c, kh, kw), in W's order, from column 0.
  std::vector<int64_t> offsets(int64_t channels) const {
    std::vector<int64_t> off(static_cast<size_t>(channels * kh * kw));
    size_t k = 0;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t a = 0; a < kh; ++a)
        for (int64_t b = 0; b < kw; ++b) {
          const int64_t th = a * dh, tw = b * dw;
          const int64_t phase = slot[static_cast<size_t>((th % sh) * sw + tw % sw)];
          off[k++] = c * channel_stride + phase * plane + (th / sh) * wq + tw / sw;
        }
    return off;
  }
};

// A float buffer of at least `count` elements, kept per thread between calls:
// a fresh allocation of a few MiB would page-fault in on every run. The
// contents are not initialized.
float* thread_buffer(int slot, size_t count) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& b = buffers[slot];
  if (b.size() < count) {
    b.clear();
    b.shrink_to_fit();
    b.resize(count);
  }
  return b.data();
}

// Y = conv(X, W) + B through sgemm_packed_a_rows_b on phase planes (no im2col):
// tasks are (group, column chunk, row range), each a single-threaded GEMM
// into a small buffer whose valid columns are then copied to Y, adding the
// residual and activation there when there is a residual.
void convolve_planes(const float* x, const std::vector<PackedMatrix>& packed, const float* bias, float* y,
                     int64_t batch, int64_t in_channels, int64_t out_channels, int64_t group, const Window& w,
                     ThreadPool* pool, const float* residual, const GemmEpilogue& activation) {
  const PhasePlanes pp(w);
  const int64_t cg = in_channels / group, mg = out_channels / group;
  const int64_t out_size = w.output_size(), columns = pp.columns();
  const PackedMatrix& first = packed.front();
  const int64_t mr = sgemm_tile_rows(first), nr = sgemm_tile_cols(first);
  const std::vector<int64_t> offsets = pp.offsets(cg);
  // Whole tiles read up to NR floats past the last column, a row past the last
  // plane: that slack is zeroed, so the dropped columns compute on zeros.
  const size_t plane_floats = static_cast<size_t>(in_channels * pp.channel_stride);
  const size_t slack = static_cast<size_t>(pp.wq + 2 * nr);
  float* planes = thread_buffer(0, plane_floats + slack);
  std::fill(planes + plane_floats, planes + plane_floats + slack, 0.0f);
  const int64_t threads = pool == nullptr ? 1 : pool->parallelism();
  // A chunk of columns whose mg x cols buffer stays in L2 (128 KiB) while the
  // K blocks accumulate into it.
  // Tasks are (group, column chunk, row range) with a rows x cols buffer of
  // at most 128 KiB, so it stays in L2 while the K blocks accumulate into it;
  // and a row range's block of A is read once for all its columns. The chunk
  // count is a multiple of the threads, so that they share the chunks evenly.
  constexpr int64_t kBufferFloats = 32768;
  const int64_t cols_max = std::max(nr, int64_t{512} / nr * nr);
  int64_t chunks = (columns + cols_max - 1) / cols_max;
  if (threads > 1 && chunks * group >= threads) chunks = (chunks + threads - 1) / threads * threads;
  const int64_t cols = ((columns + chunks - 1) / chunks + nr - 1) / nr * nr;
  chunks = (columns + cols - 1) / cols;
  const int64_t m_panels = (mg + mr - 1) / mr;
  const int64_t panels_per_task = std::clamp<int64_t>(kBufferFloats / cols / mr, 1, m_panels);
  int64_t m_splits = (m_panels + panels_per_task - 1) / panels_per_task;
  while (threads > 1 && group * chunks * m_splits < 2 * threads && m_splits * 2 <= m_panels) m_splits *= 2;
  const int64_t rows_max = (m_panels + m_splits - 1) / m_splits * mr;
  const int64_t tasks = group * chunks * m_splits;
  for (int64_t n = 0; n < batch; ++n) {
    pp.fill(x + n * in_channels * pp.ih * pp.iw, in_channels, planes, pool);
    float* yn = y + n * out_channels * out_size;
    const float* zn = residual != nullptr ? residual + n * out_channels * out_size : nullptr;
    parallel_for(pool, tasks, 2.0 * static_cast<double>(rows_max * cols * cg * pp.kh * pp.kw),
                 [&](int64_t begin, int64_t end) {
                   float* tile = thread_buffer(1, static_cast<size_t>(rows_max * cols));
                   for (int64_t t = begin; t < end; ++t) {
                     const int64_t g = t / (chunks * m_splits), chunk = (t / m_splits) % chunks, ms = t % m_splits;
                     const int64_t i0 = ms * m_panels / m_splits * mr;
                     const int64_t i1 = std::min(mg, (ms + 1) * m_panels / m_splits * mr);
                     const int64_t q0 = chunk * cols, q1 = std::min(columns, q0 + cols);
                     if (i0 >= i1) continue;
                     GemmEpilogue ep = activation;
                     ep.row_bias = bias != nullptr ? bias + g * mg : nullptr;
                     ep.col_bias = nullptr;
                     if (zn != nullptr) ep.activation = GemmActivation::kNone;  // after the residual, below
                     sgemm_packed_a_rows_b(packed[static_cast<size_t>(g)], i0, i1, q1 - q0,
                                           planes + g * cg * pp.channel_stride + q0, offsets.data(), 0.0f, tile,
                                           cols, ep);
                     // Copy the valid columns (ow < Wo) of each output row.
                     for (int64_t m = i0; m < i1; ++m) {
                       const float* src = tile + (m - i0) * cols;
                       const int64_t channel = (g * mg + m) * out_size;
                       for (int64_t q = q0; q < q1;) {
                         const int64_t orow = q / pp.wq, ocol = q % pp.wq;
                         const int64_t next = std::min(q1, (orow + 1) * pp.wq);
                         const int64_t valid = std::max<int64_t>(0, std::min(pp.ow, ocol + next - q) - ocol);
                         float* dst = yn + channel + orow * pp.ow + ocol;
                         if (zn == nullptr) {
                           std::memcpy(dst, src + (q - q0), static_cast<size_t>(valid) * sizeof(float));
                         } else {
                           const float* z = zn + channel + orow * pp.ow + ocol;
                           for (int64_t j = 0; j < valid; ++j) dst[j] = src[q - q0 + j] + z[j];
                           nn::apply_gemm_activation(dst, valid, activation);
                         }
                         q = next;
                       }
                     }
                   }
                 });
  }
}

// y[i] = act(y[i] + residual[i]) (residual may be null) where the GEMM's
// write-back could not do it (the depthwise kernel).
void apply_residual_and_activation(float* y, const float* residual, int64_t n, const GemmEpilogue& act,
                                   ThreadPool* pool) {
  parallel_for(pool, n, 2.0, [&](int64_t begin, int64_t end) {
    if (residual != nullptr)
      for (int64_t i = begin; i < end; ++i) y[i] += residual[i];
    nn::apply_gemm_activation(y + begin, end - begin, act);
  });
}

// Output positions per image below which a convolution is a GEMV per
// position: the packed kernels compute whole tiles of 16 (AVX2) or 32
// (AVX-512) columns, so one to four columns (a Conv1d over a streaming
// model's few frames) would waste most of each tile.
constexpr int64_t kFewColumns = 4;

// Each output position's receptive field (its column of im2col) as a row of
// `patches`: patches[j * kg + (c * kh_n + kh) * kw_n + kw], zero outside the
// input, for the first `positions` output positions of a 1-D or 2-D window.
void gather_patches(const float* x, int64_t channels, const Window& w, int64_t positions, float* patches) {
  const size_t rank = w.rank();
  const int64_t in_size = w.input_size(), kg = channels * w.kernel_size();
  const int64_t ih_n = rank == 2 ? w.input[0] : 1, iw_n = w.input[rank - 1];
  const int64_t ow_n = w.output[rank - 1];
  const int64_t kh_n = rank == 2 ? w.kernel[0] : 1, kw_n = w.kernel[rank - 1];
  const int64_t sh = rank == 2 ? w.strides[0] : 1, sw = w.strides[rank - 1];
  const int64_t dh = rank == 2 ? w.dilations[0] : 1, dw = w.dilations[rank - 1];
  const int64_t ph = rank == 2 ? w.pads[0] : 0, pw = w.pads[rank - 1];
  for (int64_t j = 0; j < positions; ++j) {
    const int64_t oh = j / ow_n, iw0 = (j % ow_n) * sw - pw;
    // The kernel columns kw whose input column iw0 + kw * dw is inside [0, iw_n).
    const int64_t kw_lo = iw0 >= 0 ? 0 : std::min(kw_n, (-iw0 + dw - 1) / dw);
    const int64_t kw_hi = iw_n - iw0 <= 0 ? 0 : std::max(kw_lo, std::min(kw_n, (iw_n - iw0 + dw - 1) / dw));
    float* dst = patches + j * kg;
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t kh = 0; kh < kh_n; ++kh, dst += kw_n) {
        const int64_t ih = oh * sh - ph + kh * dh;
        if (ih < 0 || ih >= ih_n) {
          std::fill(dst, dst + kw_n, 0.0f);
          continue;
        }
        const float* xrow = x + c * in_size + ih * iw_n + iw0;
        std::fill(dst, dst + kw_lo, 0.0f);
        if (dw == 1) {
          std::memcpy(dst + kw_lo, xrow + kw_lo, static_cast<size_t>(kw_hi - kw_lo) * sizeof(float));
        } else {
          for (int64_t kw = kw_lo; kw < kw_hi; ++kw) dst[kw] = xrow[kw * dw];
        }
        std::fill(dst + kw_hi, dst + kw_n, 0.0f);
      }
    }
  }
}

// Y = conv(X, W) + B for 1-D and 2-D windows with at most kFewColumns output
// positions: each output channel's row of W against every position's patch at
// once (sgemm_dots), so W is read once per image and group.
void convolve_few_columns(const float* x, const float* weights, const float* bias, float* y, int64_t batch,
                          int64_t in_channels, int64_t out_channels, int64_t group, const Window& w, ThreadPool* pool) {
  const int64_t cg = in_channels / group, mg = out_channels / group;
  const int64_t in_size = w.input_size(), out_size = w.output_size(), kg = cg * w.kernel_size();
  std::vector<float> patches(static_cast<size_t>(kg * out_size));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t g = 0; g < group; ++g) {
      gather_patches(x + (n * in_channels + g * cg) * in_size, cg, w, out_size, patches.data());
      sgemm_dots(mg, kg, weights + g * mg * kg, kg, patches.data(), kg, out_size,
                 bias != nullptr ? bias + g * mg : nullptr, y + (n * out_channels + g * mg) * out_size, out_size, pool);
    }
}

// Y = conv(X, W) + B in float, then + residual and the activation when given
// (FusedConv). `packed` holds W packed per group (from the
// kernel's creation) or is null, and W is packed here.
void convolve_float(const float* x, const float* weights, const std::vector<PackedMatrix>* packed, const float* bias,
                    float* y, int64_t batch, int64_t in_channels, int64_t out_channels, int64_t group, const Window& w,
                    ThreadPool* pool, const float* residual = nullptr, const GemmEpilogue& activation = {},
                    const nn::WinogradWeights* winograd = nullptr) {
  const int64_t cg = in_channels / group;
  const int64_t mg = out_channels / group;
  const int64_t in_size = w.input_size();
  const int64_t out_size = w.output_size();
  const int64_t kg = cg * w.kernel_size();
  if (w.rank() == 2 && cg == 1 && mg == 1) {
    nn::depthwise_conv2d(x, weights, bias, y, batch, in_channels, w, pool);
    if (residual != nullptr || activation.active()) {
      apply_residual_and_activation(y, residual, batch * out_channels * out_size, activation, pool);
    }
    return;
  }
  if (out_size <= kFewColumns && w.rank() <= 2) {
    convolve_few_columns(x, weights, bias, y, batch, in_channels, out_channels, group, w, pool);
    if (residual != nullptr || activation.active()) {
      apply_residual_and_activation(y, residual, batch * out_channels * out_size, activation, pool);
    }
    return;
  }
  if (nn::winograd_applies(w, group, in_channels, out_channels)) {
    nn::WinogradWeights winograd_here;
    if (winograd == nullptr || winograd->empty()) {
      winograd_here = nn::winograd_transform_weights(weights, out_channels, in_channels);
      winograd = &winograd_here;
    }
    if (sgemm_has_row_pointer_b(winograd->u.front())) {
      nn::winograd_convolve(x, *winograd, bias, y, batch, in_channels, out_channels, w, pool, residual, activation);
      return;
    }
  }
  std::vector<PackedMatrix> packed_here;
  if (packed == nullptr) {
    packed_here = pack_weights(weights, group, mg, kg);
    packed = &packed_here;
  }
  bool pointwise = true;  // 1x1, stride 1, no padding: X is already the column matrix
  for (size_t d = 0; d < w.rank(); ++d) {
    pointwise = pointwise && w.kernel[d] == 1 && w.strides[d] == 1 && w.pads[d] == 0 && w.pads[d + w.rank()] == 0;
  }
  if (!pointwise && w.rank() <= 2 && sgemm_has_row_pointer_b(packed->front())) {
    // Phase planes instead of im2col, unless the dropped columns (ow >= Wo)
    // would cost more than the copy they save.
    const PhasePlanes pp(w);
    const int64_t nr = sgemm_tile_cols(packed->front());
    auto tiles = [nr](int64_t c) { return (c + nr - 1) / nr; };
    if (4 * tiles(pp.columns()) <= 5 * tiles(out_size)) {
      convolve_planes(x, *packed, bias, y, batch, in_channels, out_channels, group, w, pool, residual, activation);
      return;
    }
  }
  auto epilogue_for = [&](int64_t g) {
    GemmEpilogue ep = activation;
    ep.row_bias = bias != nullptr ? bias + g * mg : nullptr;
    ep.col_bias = nullptr;
    return ep;
  };
  // With a residual Z, Y starts as Z and the GEMM accumulates into it (beta 1).
  const float beta = residual != nullptr ? 1.0f : 0.0f;
  auto load_residual = [&](int64_t n, int64_t g, int64_t j0, int64_t j1) {
    if (residual == nullptr) return;
    const int64_t offset = (n * out_channels + g * mg) * out_size;
    for (int64_t m = 0; m < mg; ++m) {
      std::copy(residual + offset + m * out_size + j0, residual + offset + m * out_size + j1,
                y + offset + m * out_size + j0);
    }
  };
  const int64_t threads = pool == nullptr ? 1 : pool->parallelism();
  // Columns per im2col chunk: the chunk (kg x width floats) stays within about
  // 256 KiB of L2 while the GEMM packs and reads it.
  const int64_t chunk = std::max<int64_t>(64, (int64_t{1} << 16) / std::max<int64_t>(kg, 1) / 32 * 32);
  const int64_t chunks = (out_size + chunk - 1) / chunk;
  const int64_t tasks = batch * group * chunks;
  // Grouped pointwise convolutions are as many small GEMMs as groups (a
  // ShuffleNet unit: 4 of 34x34 by 784 columns): one task each, rather than
  // each GEMM shared out in turn.
  const bool column_tasks = pointwise ? group > 1 : w.rank() <= 2;
  if (column_tasks && (threads == 1 || tasks >= 2 * threads)) {
    // Tasks are (image, group, column chunk), each one single-threaded GEMM.
    const int64_t chunk_cols = std::min(chunk, out_size);
    parallel_for(pool, tasks, 2.0 * static_cast<double>(mg * kg * chunk_cols), [&](int64_t begin, int64_t end) {
      std::vector<float> col(pointwise ? 0 : static_cast<size_t>(kg * chunk_cols));
      for (int64_t task = begin; task < end; ++task) {
        const int64_t image_group = task / chunks, g = image_group % group, n = image_group / group;
        const int64_t j0 = (task % chunks) * chunk, j1 = std::min(out_size, j0 + chunk);
        const float* xg = x + (n * in_channels + g * cg) * in_size;
        const float* source = xg + j0;  // pointwise: X's rows are the columns
        int64_t ld = in_size;
        if (!pointwise) {
          im2col_columns(xg, cg, w, j0, j1, col.data());
          source = col.data();
          ld = j1 - j0;
        }
        load_residual(n, g, j0, j1);
        sgemm_packed_a((*packed)[static_cast<size_t>(g)], false, j1 - j0, 1.0f, source, ld, beta,
                       y + (n * out_channels + g * mg) * out_size + j0, out_size, nullptr, epilogue_for(g));
      }
    });
    return;
  }
  // Few large GEMMs (pointwise, 3-D and beyond, or too few chunks to share):
  // one per image and group, each multithreaded.
  std::vector<float> col(pointwise ? 0 : static_cast<size_t>(kg * out_size));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t g = 0; g < group; ++g) {
      const float* xg = x + (n * in_channels + g * cg) * in_size;
      const float* source = xg;
      if (!pointwise) {
        im2col(xg, cg, w, col.data(), pool);
        source = col.data();
      }
      load_residual(n, g, 0, out_size);
      sgemm_packed_a((*packed)[static_cast<size_t>(g)], false, out_size, 1.0f, source, out_size, beta,
                     y + (n * out_channels + g * mg) * out_size, out_size, pool, epilogue_for(g));
    }
}

// Validates X and W of a convolution and resolves its window; shared by Conv
// and ConvInteger. Returns the window; out_shape receives Y's shape.
Result<Window> check_conv(const std::string& label, const nn::WindowAttributes& attrs, int64_t group, const Tensor& x,
                          const Tensor& w, Shape& out_shape) {
  if (x.rank() < 3) return invalid_argument(label, ": input X has rank ", x.rank(), ", expected at least 3 (N,C,spatial...)");
  if (w.rank() != x.rank()) {
    return invalid_argument(label, ": input W has rank ", w.rank(), ", expected ", x.rank(), " (the rank of X: M, C/group, kernel...)");
  }
  if (w.dim(1) * group != x.dim(1)) {
    return invalid_argument(label, ": input X has ", x.dim(1), " channels, but W expects ", w.dim(1) * group,
                            " (W.shape[1]=", w.dim(1), " x group=", group, ")");
  }
  if (w.dim(0) % group != 0) {
    return invalid_argument(label, ": W has ", w.dim(0), " output channels, expected a multiple of group ", group);
  }
  const std::vector<int64_t> kernel_from_w = nn::tail(w.shape(), 2);
  ONYX_ASSIGN_OR_RETURN(Window win, nn::resolve_window(label, attrs, nn::tail(x.shape(), 2), kernel_from_w));
  if (win.kernel != kernel_from_w) {
    return invalid_argument(label, ": kernel_shape ", shape_to_string(win.kernel), " does not match W's spatial shape ",
                            shape_to_string(kernel_from_w));
  }
  out_shape = {x.dim(0), w.dim(0)};
  out_shape.insert(out_shape.end(), win.output.begin(), win.output.end());
  return win;
}

class ConvKernel final : public Kernel {
 public:
  explicit ConvKernel(const KernelInfo& info) : ConvKernel(info, GemmEpilogue{}, false) {}

  ConvKernel(const KernelInfo& info, const GemmEpilogue& activation, bool residual_input)
      : attrs_(nn::WindowAttributes::from(info)),
        group_(info.attr_int("group", 1)),
        activation_(activation),
        residual_input_(residual_input) {
    activation_.row_bias = activation_.col_bias = nullptr;
    attrs_.ceil_mode = false;
    if (group_ < 1) throw Error(invalid_model(info.label(), ": attribute group is ", group_, ", expected >= 1"));
    // A constant float W is packed for the GEMM once, here, not on every run.
    // A W whose shape compute() would reject is left alone: the error comes then.
    const Tensor* w = info.constant_input(1);
    if (w != nullptr && w->dtype() == DataType::kFloat && w->rank() >= 3 && w->dim(0) % group_ == 0 &&
        w->size() > 0) {
      const int64_t mg = w->dim(0) / group_, kg = w->size() / w->dim(0);
      packed_w_ = pack_weights(w->data<float>(), group_, mg, kg);
      packed_w_shape_ = w->shape();
      // 3x3 weights also in the Winograd domain, for the inputs large enough to use it.
      if (group_ == 1 && w->rank() == 4 && w->dim(2) == 3 && w->dim(3) == 3 && w->dim(0) >= 16 && w->dim(1) >= 16) {
        winograd_w_ = nn::winograd_transform_weights(w->data<float>(), w->dim(0), w->dim(1));
      }
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* w = ctx.input_tensor(1);
    const Tensor* b = ctx.input_tensor(2);
    if (x == nullptr || w == nullptr) return invalid_argument(ctx.label(), ": inputs X and W are required");
    if (w->dtype() != x->dtype() || (b != nullptr && b->dtype() != x->dtype())) {
      return invalid_argument(ctx.label(), ": inputs have element types ", dtype_name(x->dtype()), " and ",
                              dtype_name(w->dtype()), ", expected one type");
    }
    Shape out_shape;
    ONYX_ASSIGN_OR_RETURN(Window win, check_conv(ctx.label(), attrs_, group_, *x, *w, out_shape));
    const int64_t batch = x->dim(0), in_channels = x->dim(1), out_channels = w->dim(0);
    if (b != nullptr && (b->rank() != 1 || b->dim(0) != out_channels)) {
      return invalid_argument(ctx.label(), ": input B has shape ", shape_to_string(b->shape()), ", expected [",
                              out_channels, "]");
    }
    const Tensor* z = residual_input_ && ctx.input_count() > 3 ? ctx.input_tensor(3) : nullptr;
    if (z != nullptr && (z->dtype() != x->dtype() || z->shape() != out_shape)) {
      return invalid_argument(ctx.label(), ": input Z is ", z->describe(), ", expected ", dtype_name(x->dtype()),
                              shape_to_string(out_shape), " (the output's type and shape)");
    }
    if ((z != nullptr || activation_.active()) && x->dtype() != DataType::kFloat) {
      return not_implemented(ctx.label(), ": a fused activation or residual needs float inputs, got ",
                             dtype_name(x->dtype()));
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
    if (y.size() == 0) return Status::ok();
    ThreadPool* pool = ctx.thread_pool();
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float>) {
        const bool use_packed = !packed_w_.empty() && w->shape() == packed_w_shape_;
        convolve_float(x->data<float>(), w->data<float>(), use_packed ? &packed_w_ : nullptr,
                       b ? b->data<float>() : nullptr, y.data<float>(), batch, in_channels, out_channels, group_, win,
                       pool, z != nullptr ? z->data<float>() : nullptr, activation_,
                       use_packed ? &winograd_w_ : nullptr);
      } else if constexpr (std::is_same_v<T, double>) {
        convolve<T>(x->data<T>(), w->data<T>(), b ? b->data<T>() : nullptr, y.data<T>(), batch, in_channels,
                    out_channels, group_, win, pool);
      } else {
        const Tensor xf = nn::to_float<T>(*x), wf = nn::to_float<T>(*w);
        Tensor bf;
        if (b != nullptr) bf = nn::to_float<T>(*b);
        std::vector<float> yf(static_cast<size_t>(y.size()));
        convolve_float(xf.data<float>(), wf.data<float>(), nullptr, b ? bf.data<float>() : nullptr, yf.data(), batch,
                       in_channels, out_channels, group_, win, pool);
        nn::from_float<T>(yf.data(), y.size(), y.data<T>());
      }
      return Status::ok();
    });
  }

 private:
  nn::WindowAttributes attrs_;
  int64_t group_;
  GemmEpilogue activation_;  // FusedConv's activation (biases unused); none for Conv
  bool residual_input_;      // FusedConv: input #3 (Z) is added before the activation
  std::vector<PackedMatrix> packed_w_;  // per group, when W is a constant float
  nn::WinogradWeights winograd_w_;      // a constant 3x3 W transformed for Winograd F(2x2, 3x3)
  Shape packed_w_shape_;
};

class ConvIntegerKernel final : public Kernel {
 public:
  explicit ConvIntegerKernel(const KernelInfo& info)
      : attrs_(nn::WindowAttributes::from(info)), group_(info.attr_int("group", 1)) {
    attrs_.ceil_mode = false;
    if (group_ < 1) throw Error(invalid_model(info.label(), ": attribute group is ", group_, ", expected >= 1"));
    // A constant W (with a constant zero point, if any) is packed for the GEMM once, here.
    const Tensor* w = info.constant_input(1);
    const bool zp_given = info.has_input(3);
    const Tensor* zp = zp_given ? info.constant_input(3) : nullptr;
    if (w == nullptr || !is_int8(w->dtype()) || w->rank() < 3 || w->dim(0) % group_ != 0 ||
        (zp_given && zp == nullptr)) {
      return;
    }
    if (zp != nullptr && (zp->dtype() != w->dtype() || (zp->size() != 1 && zp->size() != w->dim(0)))) return;
    const std::vector<int32_t> zero = values(zp);
    packed_w_ = quant::pack_conv_weights(*w, zero.data(), static_cast<int64_t>(zero.size()), group_);
  }

  static bool is_int8(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

  static std::vector<int32_t> values(const Tensor* t) {
    std::vector<int32_t> out;
    for (int64_t i = 0; t != nullptr && i < t->size(); ++i)
      out.push_back(t->dtype() == DataType::kInt8 ? t->data<int8_t>()[i] : t->data<uint8_t>()[i]);
    return out;
  }

  // An 8-bit tensor and its zero point (a scalar, or one per leading-dim
  // slice: W's output channels).
  static Status check(const std::string& label, const char* name, const Tensor& t, const Tensor* zero_point) {
    if (!is_int8(t.dtype())) {
      return invalid_argument(label, ": input ", name, " is ", dtype_name(t.dtype()), ", expected int8 or uint8");
    }
    const int64_t slices = t.dim(0);
    if (zero_point != nullptr && (zero_point->dtype() != t.dtype() || (zero_point->size() != 1 && zero_point->size() != slices))) {
      return invalid_argument(label, ": the zero point of ", name, " is ", zero_point->describe(), ", expected a ",
                              dtype_name(t.dtype()), " scalar or ", slices, " values");
    }
    return Status::ok();
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* w = ctx.input_tensor(1);
    if (x == nullptr || w == nullptr) return invalid_argument(ctx.label(), ": inputs x and w are required");
    Shape out_shape;
    ONYX_ASSIGN_OR_RETURN(Window win, check_conv(ctx.label(), attrs_, group_, *x, *w, out_shape));
    const Tensor* x_zero = ctx.input_tensor(2);
    if (x_zero != nullptr && x_zero->size() != 1) {
      return invalid_argument(ctx.label(), ": input x_zero_point has ", x_zero->size(), " values, expected a scalar");
    }
    const Tensor* w_zero = ctx.input_tensor(3);
    ONYX_RETURN_IF_ERROR(check(ctx.label(), "x", *x, x_zero));
    ONYX_RETURN_IF_ERROR(check(ctx.label(), "w", *w, w_zero));
    Tensor& y = ctx.allocate_output(0, DataType::kInt32, out_shape);
    if (y.size() == 0) return Status::ok();
    quant::PackedConvWeights fresh;
    const quant::PackedConvWeights* weights = &packed_w_;
    if (packed_w_.empty() || packed_w_.shape != w->shape()) {
      const std::vector<int32_t> zero = values(w_zero);
      fresh = quant::pack_conv_weights(*w, zero.data(), static_cast<int64_t>(zero.size()), group_);
      weights = &fresh;
    }
    const std::vector<int32_t> x_zero_value = values(x_zero);
    quant::conv_int8(*x, x_zero_value.empty() ? 0 : x_zero_value[0], *weights, group_, win, y.data<int32_t>(),
                     ctx.thread_pool());
    return Status::ok();
  }

 private:
  nn::WindowAttributes attrs_;
  int64_t group_;
  quant::PackedConvWeights packed_w_;  // a constant W, packed at creation
};

ONYX_REGISTER_CPU_KERNEL("", "ConvInteger", 10, kLatestVersion, (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}),
                         ConvIntegerKernel);

ONYX_REGISTER_CPU_KERNEL("", "Conv", 1, 10, types::floats(), ConvKernel);
ONYX_REGISTER_CPU_KERNEL("", "Conv", 11, kLatestVersion, types::floats(), ConvKernel);

}  // namespace

std::unique_ptr<Kernel> make_conv_kernel(const KernelInfo& info, const GemmEpilogue& activation, bool residual_input) {
  return std::make_unique<ConvKernel>(info, activation, residual_input);
}

}  // namespace onyx::cpu
