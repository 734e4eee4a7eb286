// com.microsoft.nchwc Conv: a direct 2-D convolution on the blocked-channel
// layout, Y = activation(conv(X, W) + B + Sum), Y blocked. Three forms, told
// apart by group, W's dims and the block size B:
//   regular    group 1, I % B == 0, X blocked, W data
//   [O/B][I/B][kh][kw][bi][bo]; NCHW input group 1, I < B, X a plain NCHW
//   tensor, W data [O/B][I][kh][kw][bo]; depthwise  group == O, I == 1, X
//   blocked, W data [O/B][kh][kw][bo].
// W is repacked once (at creation when it is a constant) so that the F output
// blocks a tile computes read one sequential stream. The regular form reads X
// where it is: tiles of interior pixels take every tap, the pixels whose
// windows the edges clip take only the taps inside (the clipped columns of a
// row range in tiles down the column), so the inner loops never test bounds
// and nothing is copied. The NCHW-input form copies a padded input instead.
// Work is cut into tasks of (image, group of output blocks, pixel range); the
// taps are taken in chunks whose weights stay in L2, with the partial sums in
// Y.
#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "providers/cpu/contrib/fused_activation.h"
#include "providers/cpu/math/fast_math.h"
#include "providers/cpu/nchwc/nchwc.h"
#include "providers/cpu/nchwc/nchwc_conv_util.h"
#include "providers/cpu/nchwc/nchwc_geometry.h"
#include "providers/cpu/nchwc/nchwc_kernels.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using nchwc::ConvJob;
using nchwc::group_begin;
using nchwc::Kernels;

// Up to this much packed W, a task computes all output blocks of its pixels.
constexpr int64_t kAllGroupsWeightBytes = 384 * 1024;

enum class ConvForm { kRegular, kNchwInput, kDepthwise };

// The output pixels of a convolution that reads its input unpadded, by
// window: the windows of the interior rectangle lie inside the input; the
// others are clipped by its edges and read only their taps inside. A clipping
// is a (row, column) pair of distinct row and column clippings; each keeps
// its tap list, ascending.
class EdgeWindows {
 public:
  EdgeWindows(int64_t out_h, int64_t out_w, int64_t in_h, int64_t in_w, int64_t kh, int64_t kw, int64_t sh,
              int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl, int64_t planes)
      : out_w_(out_w) {
    using Range = std::pair<int64_t, int64_t>;  // taps [first, second) along one axis
    auto clip = [](int64_t start, int64_t d, int64_t k, int64_t limit) {
      int64_t lo = 0, hi = 0;
      nchwc::window_range(start, d, k, limit, lo, hi);
      return Range{std::min(lo, k), std::min(hi, k)};  // one empty range for windows wholly before the input
    };
    // Distinct clippings per axis (index 0: the whole window), and each
    // row's and column's.
    auto classify = [&](int64_t count, int64_t stride, int64_t dilation, int64_t k, int64_t pad, int64_t limit,
                        std::vector<Range>& distinct, std::vector<int32_t>& of, int64_t& lo, int64_t& hi) {
      distinct = {Range{0, k}};
      of.resize(static_cast<size_t>(count));
      lo = count, hi = 0;
      for (int64_t i = 0; i < count; ++i) {
        const Range r = clip(i * stride - pad, dilation, k, limit);
        auto it = std::find(distinct.begin(), distinct.end(), r);
        if (it == distinct.end()) it = distinct.insert(distinct.end(), r);
        of[static_cast<size_t>(i)] = static_cast<int32_t>(it - distinct.begin());
        if (it == distinct.begin()) lo = std::min(lo, i), hi = i + 1;  // whole windows are contiguous
      }
      if (lo >= hi) lo = hi = 0;
    };
    std::vector<Range> rows, cols;
    classify(out_h, sh, dh, kh, pt, in_h, rows, row_kind_, row_lo_, row_hi_);
    classify(out_w, sw, dw, kw, pl, in_w, cols, col_kind_, col_lo_, col_hi_);
    col_kinds_ = static_cast<int64_t>(cols.size());
    ids_.resize(rows.size() * cols.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      for (size_t c = 0; c < cols.size(); ++c) {
        if (r == 0 && c == 0) continue;  // whole: the interior calls
        std::vector<int32_t>& ids = ids_[r * cols.size() + c];
        for (int64_t p = 0; p < planes; ++p) {
          for (int64_t i = rows[r].first; i < rows[r].second; ++i) {
            for (int64_t j = cols[c].first; j < cols[c].second; ++j) {
              ids.push_back(static_cast<int32_t>((p * kh + i) * kw + j));
            }
          }
        }
      }
    }
  }

  // The interior rectangle (rows and columns whose windows lie inside) for
  // the kernel's interior_only calls.
  void set_interior(nchwc::ConvJob& job) const {
    job.row_lo = row_lo_, job.row_hi = row_hi_, job.col_lo = col_lo_, job.col_hi = col_hi_;
  }

  // Calls f(a, b, step, ids, count) for calls that together cover the pixels
  // [q0, q1): step 0, the interior pixels (one call, tiles running on across
  // rows); step 1, runs of one clipping along a row that does not see every
  // kh; step out_w, the clipped columns of the rows that do, down the column
  // (so their tiles hold several pixels). ids is the clipping's taps in
  // [t0, t1).
  template <typename F>
  void for_each_call(int64_t q0, int64_t q1, int64_t t0, int64_t t1, F&& f) const {
    auto emit = [&](int64_t a, int64_t b, int64_t step, size_t kind) {
      const std::vector<int32_t>& ids = ids_[kind];
      const auto lo = std::lower_bound(ids.begin(), ids.end(), static_cast<int32_t>(t0));
      const auto hi = std::lower_bound(lo, ids.end(), static_cast<int32_t>(t1));
      // Never null: a window wholly in the padding has no taps (bias only).
      static constexpr int32_t kNoTaps = 0;
      f(a, b, step, lo == hi ? &kNoTaps : &*lo, static_cast<int64_t>(hi - lo));
    };
    auto kind_at = [&](int64_t row, int64_t col) {
      return static_cast<size_t>(row_kind_[static_cast<size_t>(row)] * col_kinds_ + col_kind_[static_cast<size_t>(col)]);
    };
    if (row_lo_ < row_hi_ && col_lo_ < col_hi_) f(q0, q1, int64_t{0}, nullptr, int64_t{0});
    for (int64_t a = q0; a < q1;) {
      const int64_t row = a / out_w_;
      const int64_t row_end = std::min(q1, (row + 1) * out_w_);
      if (row >= row_lo_ && row < row_hi_) {
        a = row_end;
        continue;
      }
      const size_t kind = kind_at(row, a % out_w_);
      int64_t b = a + 1;
      while (b < row_end && kind_at(row, b % out_w_) == kind) ++b;
      emit(a, b, 1, kind);
      a = b;
    }
    if (row_lo_ >= row_hi_) return;
    for (int64_t ow = 0; ow < out_w_; ++ow) {
      if (ow >= col_lo_ && ow < col_hi_) continue;
      const int64_t first = std::max(row_lo_, (q0 - ow + out_w_ - 1) / out_w_);
      const int64_t last = std::min(row_hi_ - 1, (q1 - 1 - ow) / out_w_);
      if (q1 - 1 < ow || first > last) continue;
      emit(first * out_w_ + ow, last * out_w_ + ow + 1, out_w_, kind_at(row_lo_, ow));
    }
  }

 private:
  int64_t out_w_ = 1, row_lo_ = 0, row_hi_ = 0, col_lo_ = 0, col_hi_ = 0, col_kinds_ = 1;
  std::vector<int32_t> row_kind_, col_kind_;  // index into the distinct clippings of its axis
  std::vector<std::vector<int32_t>> ids_;     // per (row kind, column kind)
};

class NchwcConvKernel final : public Kernel {
 public:
  explicit NchwcConvKernel(const KernelInfo& info) : label_(info.label()) {
    kernels_ = nchwc::required_kernels(info);
    block_ = kernels_->block;
    window_ = nchwc::Window2D::parse(info, /*needs_kernel_shape=*/false);
    group_ = info.attr_int("group", 1);
    if (group_ < 1) throw Error(invalid_model(label_, ": group must be positive, got ", group_));
    fused_ = FusedActivation::parse(info, info.attr_string("activation", ""), info.attr_floats("activation_params"));
    // Sigmoid, Tanh, HardSwish and QuickGelu go over each task's stored
    // output instead, while it is still in cache.
    post_activation_ = !nchwc::register_activation(fused_, activation_);

    if (const Tensor* w = info.constant_input(1)) {
      // A W that this node alone reads, in a buffer of its own (the layout
      // pass's reordered weight), is packed where it is and kept, instead of
      // into a copy: writing a copy into fresh pages was a third of creating
      // a session of Inception-v1 here.
      const bool adopt = info.consumes_constant(1) && w->owns_buffer_alone() && w->device().is_cpu();
      const Status s = prepare_weights(*w, packed_, adopt);
      if (!s.is_ok()) throw Error(s);
      prepacked_ = true;
    }
    if (info.has_input(2)) {
      if (const Tensor* b = info.constant_input(2)) {
        const Status s = check_bias(*b);
        if (!s.is_ok()) throw Error(s);
        bias_.assign(b->data<float>(), b->data<float>() + b->size());
        has_constant_bias_ = true;
      }
    }
  }

  // A constant W is repacked at creation; compute() then reads only its type.
  bool needs_constant_data(size_t i) const override { return i != 1 || !prepacked_; }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* w = ctx.input_tensor(1);
    if (x == nullptr || w == nullptr) return invalid_argument(label_, ": inputs X and W are required");
    if (x->dtype() != DataType::kFloat || w->dtype() != DataType::kFloat) {
      return invalid_argument(label_, ": X and W must be tensor(float), got ", x->describe(), " and ", w->describe());
    }
    if (x->rank() != 4) return invalid_argument(label_, ": input X has rank ", x->rank(), ", expected 4 (N,C,H,W)");
    Packed run_packed;
    const Packed* packed = &packed_;
    if (!prepacked_) {
      ONYX_RETURN_IF_ERROR(prepare_weights(*w, run_packed));
      packed = &run_packed;
    }
    const int64_t B = block_;
    const int64_t n_images = x->dim(0), channels = x->dim(1), in_h = x->dim(2), in_w = x->dim(3);
    const int64_t expected_channels = packed->form == ConvForm::kDepthwise ? packed->out_channels : packed->in_channels;
    if (channels != expected_channels) {
      return invalid_argument(label_, ": input X has ", channels, " channels, expected ", expected_channels,
                              packed->form == ConvForm::kNchwInput ? " (an NCHW tensor)" : " (blocked)");
    }
    const int64_t kh = packed->kernel_h, kw = packed->kernel_w;
    int64_t out_h = 0, out_w = 0, pt = 0, pb = 0, pl = 0, pr = 0;
    ONYX_RETURN_IF_ERROR(window_.resolve(label_, 0, in_h, kh, out_h, pt, pb));
    ONYX_RETURN_IF_ERROR(window_.resolve(label_, 1, in_w, kw, out_w, pl, pr));
    const int64_t out_c = packed->out_channels, out_blocks = out_c / B;

    const float* bias = nullptr;
    if (has_constant_bias_) {
      bias = bias_.data();
    } else if (const Tensor* b = ctx.input_tensor(2)) {
      ONYX_RETURN_IF_ERROR(check_bias(*b, packed->out_channels));
      bias = b->data<float>();
    }
    const Shape y_shape = {n_images, out_c, out_h, out_w};
    const float* sum = nullptr;
    if (const Tensor* s = ctx.input_tensor(3)) {
      if (s->dtype() != DataType::kFloat || s->shape() != y_shape) {
        return invalid_argument(label_, ": input Sum is ", s->describe(), ", expected float[", n_images, ",", out_c,
                                ",", out_h, ",", out_w, "] like Y");
      }
      sum = s->data<float>();
    }
    // Taps: (input plane, kh, kw), each of `lanes` input lanes; tiles of F
    // output blocks take them in chunks of at most max_chunk_taps.
    const ConvForm form = packed->form;
    const int64_t lanes = form == ConvForm::kRegular ? B : 1;
    const int64_t tap_planes = form == ConvForm::kDepthwise ? 1 : packed->in_channels / lanes;
    const int64_t tap_count = tap_planes * kh * kw;
    const int64_t F = form == ConvForm::kDepthwise ? 1 : kernels_->max_filter_blocks;
    const int64_t max_chunk_taps =
        std::max<int64_t>(1, nchwc::kWeightChunkBytes / (F * lanes * B * static_cast<int64_t>(sizeof(float))));
    // Y may take Sum's buffer when Sum is not read after this node: each
    // output element is then read as Sum and written as Y in the same
    // write-back. That holds when every tile takes all taps at once (a
    // first chunk would overwrite Sum before the last one adds it).
    Tensor* in_place = sum != nullptr && (form == ConvForm::kDepthwise || tap_count <= max_chunk_taps)
                           ? ctx.reuse_input_as_output(3, 0, DataType::kFloat, y_shape)
                           : nullptr;
    Tensor& y = in_place != nullptr ? *in_place : ctx.allocate_output(0, DataType::kFloat, y_shape);
    const int64_t out_hw = out_h * out_w;
    if (y.size() == 0) return Status::ok();

    // The input as the kernels read it: padded when the windows leave it.
    const int64_t unit = form == ConvForm::kNchwInput ? 1 : B;  // floats per pixel of a plane
    const int64_t planes = form == ConvForm::kNchwInput ? channels : channels / B;
    const int64_t sh = window_.stride[0], sw = window_.stride[1], dh = window_.dilation[0], dw = window_.dilation[1];
    const int64_t need_h = (out_h - 1) * sh + (kh - 1) * dh + 1, need_w = (out_w - 1) * sw + (kw - 1) * dw + 1;
    // The depthwise kernel clips its windows itself.
    const bool windows_leave = pt > 0 || pl > 0 || need_h > in_h || need_w > in_w;
    // Direct: the regular form reads the input where it is; a window the
    // edge clips reads only its taps inside (EdgeWindows), so there is no
    // padded copy to write and read again. The NCHW-input form is padded.
    const bool direct = form == ConvForm::kRegular && windows_leave;
    const bool pad = form == ConvForm::kNchwInput && windows_leave;
    const int64_t rows = pad ? need_h : in_h, cols = pad ? need_w : in_w;
    const int64_t plane = rows * cols * unit;
    const float* xin = x->data<float>();
    if (pad) {
      // Kept between runs (per calling thread), so a run neither allocates nor faults it in.
      thread_local std::vector<float> padded;
      const size_t needed = static_cast<size_t>(n_images * planes * plane);
      if (padded.size() < needed) padded.resize(needed);
      float* dst = padded.data();
      const int64_t copy_cols = std::min(in_w, cols - pl);
      // Rows of all planes, shared by the threads (inline when small).
      parallel_for(ctx.thread_pool(), n_images * planes * rows, static_cast<double>(cols * unit),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i) {
                       const int64_t p = i / rows, r = i % rows;
                       const float* src = xin + p * in_h * in_w * unit;
                       float* out = dst + p * plane + r * cols * unit;
                       const int64_t ih = r - pt;
                       if (ih < 0 || ih >= in_h || copy_cols <= 0) {
                         std::fill(out, out + cols * unit, 0.0f);
                         continue;
                       }
                       std::fill(out, out + pl * unit, 0.0f);
                       std::memcpy(out + pl * unit, src + ih * in_w * unit,
                                   static_cast<size_t>(copy_cols * unit) * sizeof(float));
                       std::fill(out + (pl + copy_cols) * unit, out + cols * unit, 0.0f);
                     }
                   });
      xin = dst;
    }

    // Tap offsets from a pixel's input origin.
    std::vector<int64_t> taps;
    taps.reserve(static_cast<size_t>(tap_count));
    for (int64_t c = 0; c < tap_planes; ++c) {
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) taps.push_back(c * plane + (i * dh * cols + j * dw) * unit);
      }
    }
    std::optional<EdgeWindows> edges;
    if (direct) edges.emplace(out_h, out_w, in_h, in_w, kh, kw, sh, sw, dh, dw, pt, pl, tap_planes);

    ConvJob base;
    base.lanes = static_cast<int>(lanes);
    base.x_pixel_step = sw * unit;
    base.x_row_step = sh * cols * unit;
    base.x_block_stride = plane;
    base.taps = taps.data();
    base.tap_count = tap_count;
    base.w = packed->weights;
    base.weight_count = packed->weight_count;
    base.out_w = out_w;
    base.y_block_stride = out_hw * B;
    base.bias = bias;
    base.activation = activation_;
    base.in_h = in_h, base.in_w = in_w, base.pad_top = pt, base.pad_left = pl;
    base.kernel_h = kh, base.kernel_w = kw, base.stride_h = sh, base.stride_w = sw;
    base.dilation_h = dh, base.dilation_w = dw;
    if (edges) edges->set_interior(base);
    float* y_data = y.data<float>();
    const int64_t x_image = planes * plane, y_image = out_c * out_hw;
    auto job_for = [&](int64_t n) {
      ConvJob job = base;
      job.x = xin + n * x_image - (direct ? (pt * in_w + pl) * unit : 0);
      job.y = y_data + n * y_image;
      job.sum = sum != nullptr ? sum + n * y_image : nullptr;
      return job;
    };
    auto finish = [&](float* yb, int64_t count) {
      if (post_activation_) fused_.apply(yb, count, nullptr);
    };

    // Tasks: (image, group of output blocks, range of pixels).
    // When all of W fits in L2, a task takes every group instead, for blocks
    // of pixels whose input stays in L1 while each group passes over it;
    // else each group's weights (in chunks of taps) stay in L2 while the
    // task sweeps its pixels.
    const int64_t P = kernels_->max_pixels;
    const int64_t groups = nchwc::group_count(out_blocks, F);
    const int64_t weight_bytes = packed->weight_count * static_cast<int64_t>(sizeof(float));
    const bool all_groups = form != ConvForm::kDepthwise && groups > 1 && weight_bytes <= kAllGroupsWeightBytes;
    const int64_t task_groups = all_groups ? 1 : groups;
    base.prefetch_weights = !all_groups && form != ConvForm::kDepthwise;
    ThreadPool* pool = ctx.thread_pool();
    const int64_t threads = pool != nullptr ? pool->parallelism() : 1;
    const int64_t outer = n_images * task_groups;
    // Ranges of pixels per (image, group). When each task streams its group's
    // weights (not all-groups, not depthwise), splitting the pixels makes every
    // range read those weights again: the fewest ranges whose tasks, dealt out
    // in contiguous shares (parallel_for_tasks), give no thread more than 5%
    // over an equal part (3 groups of 4, 3, 3 blocks at 2 threads: 2 ranges
    // give shares of 11 and 9 blocks' work, 3 ranges 15 and 15). Otherwise
    // about 8 tasks per thread (whole rows of tasks sharing a group's weights
    // stay together).
    int64_t ranges = 1;
    if (threads > 1 && !all_groups && form != ConvForm::kDepthwise) {
      auto imbalance = [&](int64_t r) {
        const int64_t count = outer * r;
        const int64_t shares = std::min(threads, count);
        double worst = 0.0;
        for (int64_t share = 0; share < shares; ++share) {
          double cost = 0.0;
          for (int64_t t = share * count / shares; t < (share + 1) * count / shares; ++t) {
            const int64_t g = (t / r) % task_groups;
            cost += static_cast<double>(group_begin(g + 1, groups, out_blocks) - group_begin(g, groups, out_blocks));
          }
          worst = std::max(worst, cost);
        }
        const double ideal = static_cast<double>(n_images * out_blocks * r) / static_cast<double>(threads);
        return worst / ideal;
      };
      int64_t best = 1;
      double best_imbalance = imbalance(1);
      for (int64_t r = 2; r <= 8 && best_imbalance > 1.05; ++r) {
        const double i = imbalance(r);
        if (i < best_imbalance - 1e-9) best = r, best_imbalance = i;
      }
      ranges = best;
    } else if (threads > 1) {
      ranges = (8 * threads + outer - 1) / outer;
    }
    // Ranges are made of whole units (depthwise: pairs of rows, which its
    // kernel computes together; direct: rows; else tiles of P pixels) and
    // differ by at most one unit, so no thread's share is a range longer
    // than the others' and no task is empty.
    const int64_t unit_pixels = form == ConvForm::kDepthwise ? 2 * out_w : direct ? out_w : P;
    const int64_t units = (out_hw + unit_pixels - 1) / unit_pixels;
    if (direct && ranges > threads) {
      // Direct ranges are whole rows, and a range's clipped columns go down
      // the column in tiles of its rows: ranges of a row or two (SqueezeNet's
      // 13 x 13 and 27 x 27 planes took 13 and 16) run their edge pixels in
      // tiles of one or two. Fewer ranges, of 8 rows or more where the plane
      // allows, a multiple of the threads.
      ranges = threads * std::clamp<int64_t>(units / (8 * threads), 1, ranges / threads);
    }
    ranges = std::max<int64_t>(1, std::min(ranges, units));
    const int64_t task_count = outer * ranges;
    const double macs_per_task = static_cast<double>(out_hw) / static_cast<double>(ranges) *
                                 static_cast<double>(out_c / task_groups * tap_count * lanes);
    // Pixels per block in all-groups mode: about 32 KiB of input rows.
    // (an output pixel moves the window by sw input columns over kh rows)
    const int64_t input_bytes_per_pixel =
        std::max<int64_t>(1, channels * static_cast<int64_t>(sizeof(float)) * sw * kh);
    // Direct: ranges and blocks are whole output rows, so the clipped
    // columns of their rows go down the column in full tiles.
    const int64_t block_pixels =
        direct ? std::max<int64_t>(P, (32 * 1024) / input_bytes_per_pixel / out_w) * out_w
               : std::max<int64_t>(1, (32 * 1024) / input_bytes_per_pixel / P) * P;

    const int64_t chunk_count = (tap_count + max_chunk_taps - 1) / max_chunk_taps;
    const int64_t chunk_taps = (tap_count + chunk_count - 1) / chunk_count;  // equal chunks
    const Kernels* k = kernels_;
    auto run_group = [&](const ConvJob& job, int64_t g, int64_t q0, int64_t q1) {
      const int64_t ob0 = group_begin(g, groups, out_blocks), nob = group_begin(g + 1, groups, out_blocks) - ob0;
      for (int64_t c0 = 0; c0 < tap_count; c0 += chunk_taps) {
        const int64_t c1 = std::min(tap_count, c0 + chunk_taps);
        if (!direct) {
          k->conv(job, ob0, nob, q0, q1, c0, c1, c0 == 0, c1 == tap_count);
          continue;
        }
        edges->for_each_call(q0, q1, c0, c1,
                            [&](int64_t a, int64_t b, int64_t step, const int32_t* ids, int64_t id_count) {
                              if (step == 0) {
                                ConvJob inner = job;
                                inner.interior_only = true;
                                k->conv(inner, ob0, nob, a, b, c0, c1, c0 == 0, c1 == tap_count);
                                return;
                              }
                              ConvJob clipped = job;
                              clipped.tap_ids = ids;
                              clipped.tap_id_count = id_count;
                              clipped.pixel_stride = step;
                              clipped.prefetch_weights = false;
                              k->conv(clipped, ob0, nob, a, b, c0, c1, c0 == 0, c1 == tap_count);
                            });
      }
      for (int64_t ob = ob0; ob < ob0 + nob; ++ob) finish(job.y + ob * job.y_block_stride + q0 * B, (q1 - q0) * B);
    };
    parallel_for_tasks(pool, task_count, macs_per_task, [&](int64_t task) {
      const int64_t r = task % ranges, g = (task / ranges) % task_groups, n = task / ranges / task_groups;
      const int64_t q0 = r * units / ranges * unit_pixels;
      const int64_t q1 = std::min(out_hw, (r + 1) * units / ranges * unit_pixels);
      const ConvJob job = job_for(n);
      if (form == ConvForm::kDepthwise) {
        k->depthwise(job, g, q0, q1);
        finish(job.y + g * job.y_block_stride + q0 * B, (q1 - q0) * B);
      } else if (all_groups) {
        for (int64_t b0 = q0; b0 < q1; b0 += block_pixels) {
          const int64_t b1 = std::min(q1, b0 + block_pixels);
          for (int64_t gi = 0; gi < groups; ++gi) run_group(job, gi, b0, b1);
        }
      } else {
        run_group(job, g, q0, q1);
      }
    });
    return Status::ok();
  }

 private:
  struct Packed {
    ConvForm form = ConvForm::kRegular;
    int64_t out_channels = 0, in_channels = 0, kernel_h = 0, kernel_w = 0;
    const float* weights = nullptr;  // packed W: in data, or in adopted's buffer
    int64_t weight_count = 0;
    std::vector<float> data;
    Tensor adopted;
  };

  Status check_bias(const Tensor& b, int64_t out_channels = -1) const {
    if (b.dtype() != DataType::kFloat || b.rank() != 1) {
      return invalid_argument(label_, ": input B must be a 1-D float tensor, got ", b.describe());
    }
    if (out_channels >= 0 && b.size() != out_channels) {
      return invalid_argument(label_, ": input B has ", b.size(), " values, expected ", out_channels);
    }
    if (out_channels < 0 && b.size() % block_ != 0) {
      return invalid_model(label_, ": input B has ", b.size(), " values, expected a multiple of ", block_);
    }
    return Status::ok();
  }

  // Checks W against the attributes and the block size and packs it: into
  // out.data, or with `adopt` in W's own buffer, which out.adopted then keeps.
  Status prepare_weights(const Tensor& w, Packed& out, bool adopt = false) const {
    const int64_t B = block_;
    if (w.dtype() != DataType::kFloat || w.rank() != 4) {
      return invalid_argument(label_, ": input W must be a 4-D float tensor [O, I/group, kh, kw], got ", w.describe());
    }
    const int64_t o = w.dim(0), i = w.dim(1), kh = w.dim(2), kw = w.dim(3);
    if (o <= 0 || i <= 0 || kh <= 0 || kw <= 0) return invalid_argument(label_, ": input W is empty: ", w.describe());
    if (!window_.kernel.empty() && (window_.kernel[0] != kh || window_.kernel[1] != kw)) {
      return invalid_model(label_, ": kernel_shape [", window_.kernel[0], ",", window_.kernel[1], "] does not match W ",
                           w.describe());
    }
    if (o % B != 0) {
      return invalid_model(label_, ": W has ", o, " output channels, expected a multiple of the block size ", B);
    }
    if (!bias_.empty() && static_cast<int64_t>(bias_.size()) != o) {
      return invalid_model(label_, ": input B has ", bias_.size(), " values, expected ", o);
    }
    out.out_channels = o;
    out.kernel_h = kh;
    out.kernel_w = kw;
    if (group_ == 1) {
      out.in_channels = i;
      if (i % B == 0) {
        out.form = ConvForm::kRegular;
      } else if (i < B) {
        out.form = ConvForm::kNchwInput;
      } else {
        return invalid_model(label_, ": W has ", i, " input channels: expected a multiple of ", B,
                             " (blocked input) or fewer than ", B, " (NCHW input)");
      }
    } else if (group_ == o && i == 1) {
      out.form = ConvForm::kDepthwise;
      out.in_channels = o;
    } else {
      return invalid_model(label_, ": group ", group_, " with W ", w.describe(),
                           " is neither a regular (group 1) nor a depthwise "
                           "(group == O, W [O,1,kh,kw]) convolution");
    }
    const float* src = w.data<float>();
    const int64_t tap_lanes = out.in_channels * kh * kw;  // floats of B per output block
    out.weight_count = w.size();
    if (adopt) {
      out.adopted = w;
      out.weights = src;
      if (out.form == ConvForm::kDepthwise) return Status::ok();  // packed as given
      // Each group's blocks are packed within the group's own span.
      float* data = const_cast<float*>(src);
      const int64_t F = kernels_->max_filter_blocks, blocks = o / B, groups = nchwc::group_count(blocks, F);
      std::vector<float> group_copy;
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t ob0 = group_begin(g, groups, blocks), nob = group_begin(g + 1, groups, blocks) - ob0;
        float* span = data + ob0 * tap_lanes * B;
        group_copy.assign(span, span + nob * tap_lanes * B);
        nchwc::pack_filter_groups(group_copy.data(), nob, tap_lanes, B, nob, span);
      }
      return Status::ok();
    }
    out.data.resize(static_cast<size_t>(w.size()));
    out.weights = out.data.data();
    if (out.form == ConvForm::kDepthwise) {
      std::copy(src, src + w.size(), out.data.begin());
      return Status::ok();
    }
    nchwc::pack_filter_groups(src, o / B, tap_lanes, B, kernels_->max_filter_blocks, out.data.data());
    return Status::ok();
  }

  std::string label_;
  const Kernels* kernels_ = nullptr;
  int64_t block_ = 1;
  nchwc::Window2D window_;
  int64_t group_ = 1;
  FusedActivation fused_;
  nchwc::Activation activation_;
  bool post_activation_ = false;
  bool prepacked_ = false;
  Packed packed_;
  bool has_constant_bias_ = false;
  std::vector<float> bias_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("com.microsoft.nchwc", "Conv", 1, kLatestVersion, {DataType::kFloat}, NchwcConvKernel);

}  // namespace onyx::cpu
