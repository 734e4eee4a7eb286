// com.onyx.nchwc PointwiseDepthwiseConv: a 1x1 convolution and the depthwise
// convolution that alone reads its output, as one kernel on blocked tensors:
//   T = act1(conv1x1(X, W1) + B1),  Y = act2(depthwise(T, W2) + B2).
// The layout pass forms it where T is large (the expansion layers of
// MobileNet-style blocks, six times wider than their input): the pair works
// down the image in bands of output rows, each thread keeping only the rows of
// T its band reads, in a buffer that stays in L2. T is never written to memory
// and read back, which is most of the pair's time when it is several MiB.
// Rows a band shares with the next one are moved, not computed again.
//
// Inputs: X (blocked, I channels), W1 [C, I, 1, 1] as OIHWBiBo, B1
// (optional), W2 [C, 1, kh, kw] as OIHWBo, B2 (optional). Attributes: the
// depthwise window (kernel_shape, strides, pads, dilations, auto_pad),
// `activation` / `activation_params` for Y and `pointwise_activation` /
// `pointwise_activation_params` for T, as FusedConv names them; only the
// activations the tiles apply in registers (Relu, LeakyRelu, Clip,
// HardSigmoid).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "providers/cpu/nchwc/nchwc.h"
#include "providers/cpu/nchwc/nchwc_conv_util.h"
#include "providers/cpu/nchwc/nchwc_geometry.h"
#include "providers/cpu/nchwc/nchwc_kernels.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using nchwc::ConvJob;
using nchwc::Kernels;

// Bytes of T a band holds (all channel blocks of its rows): with the input
// rows and the pointwise weights, well inside a core's L2.
constexpr int64_t kBandBytes = 256 * 1024;

class PointwiseDepthwiseKernel final : public Kernel {
 public:
  explicit PointwiseDepthwiseKernel(const KernelInfo& info) : label_(info.label()) {
    kernels_ = nchwc::required_kernels(info);
    block_ = kernels_->block;
    window_ = nchwc::Window2D::parse(info, /*needs_kernel_shape=*/false);
    group_ = info.attr_int("group", 0);
    pointwise_activation_ = parse_activation(info, "pointwise_activation");
    depthwise_activation_ = parse_activation(info, "activation");
    const Tensor* w1 = info.constant_input(1);
    const Tensor* b1 = info.has_input(2) ? info.constant_input(2) : nullptr;
    const Tensor* w2 = info.constant_input(3);
    const Tensor* b2 = info.has_input(4) ? info.constant_input(4) : nullptr;
    if (w1 != nullptr && w2 != nullptr && (b1 != nullptr || !info.has_input(2)) &&
        (b2 != nullptr || !info.has_input(4))) {
      const Status s = prepare(w1, b1, w2, b2, packed_);
      if (!s.is_ok()) throw Error(s);
      prepacked_ = true;
    }
  }

  // Constant weights and biases are copied at creation.
  bool needs_constant_data(size_t i) const override { return i == 0 || !prepacked_; }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(label_, ": input X is required");
    if (x->dtype() != DataType::kFloat || x->rank() != 4) {
      return invalid_argument(label_, ": input X must be a 4-D float tensor (N,C,H,W), got ", x->describe());
    }
    Packed run_packed;
    const Packed* p = &packed_;
    if (!prepacked_) {
      ONYX_RETURN_IF_ERROR(
          prepare(ctx.input_tensor(1), ctx.input_tensor(2), ctx.input_tensor(3), ctx.input_tensor(4), run_packed));
      p = &run_packed;
    }
    const int64_t B = block_;
    const int64_t n_images = x->dim(0), in_c = x->dim(1), in_h = x->dim(2), in_w = x->dim(3);
    if (in_c != p->in_channels) {
      return invalid_argument(label_, ": input X has ", in_c, " channels, expected ", p->in_channels, " (blocked)");
    }
    const int64_t kh = p->kernel_h, kw = p->kernel_w, C = p->channels;
    int64_t out_h = 0, out_w = 0, pt = 0, pb = 0, pl = 0, pr = 0;
    ONYX_RETURN_IF_ERROR(window_.resolve(label_, 0, in_h, kh, out_h, pt, pb));
    ONYX_RETURN_IF_ERROR(window_.resolve(label_, 1, in_w, kw, out_w, pl, pr));
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, {n_images, C, out_h, out_w});
    if (y.size() == 0) return Status::ok();

    const int64_t sh = window_.stride[0], sw = window_.stride[1], dh = window_.dilation[0], dw = window_.dilation[1];
    const int64_t blocks = C / B, in_blocks = in_c / B, in_plane = in_h * in_w * B;
    // Bands of R output rows (even, so that the depthwise kernel takes its
    // rows in pairs) read rows_for(R) rows of T.
    const int64_t span_h = (kh - 1) * dh + 1;
    auto rows_for = [&](int64_t r) { return (r - 1) * sh + span_h; };
    const int64_t row_bytes = in_w * C * static_cast<int64_t>(sizeof(float));
    int64_t R = 2;
    while (R < out_h && rows_for(R + 2) * row_bytes <= kBandBytes) R += 2;
    const int64_t cap = std::min(in_h, rows_for(R));  // rows of T a band holds at most
    const int64_t t_block_stride = cap * in_w * B;

    // Each thread takes one range of output rows per image: a range's first
    // band computes the rows of T it shares with the range before it again.
    ThreadPool* pool = ctx.thread_pool();
    const int64_t threads = pool != nullptr ? pool->parallelism() : 1;
    const int64_t units = (out_h + 1) / 2;  // row pairs
    const int64_t ranges = std::max<int64_t>(1, std::min(units, threads));
    const double macs_per_task = static_cast<double>(out_h * out_w) / static_cast<double>(ranges) *
                                 static_cast<double>(C * (in_c * sh * sw + kh * kw));

    std::vector<int64_t> pointwise_taps(static_cast<size_t>(in_blocks));
    for (int64_t c = 0; c < in_blocks; ++c) pointwise_taps[static_cast<size_t>(c)] = c * in_plane;
    std::vector<int64_t> depthwise_taps;
    for (int64_t i = 0; i < kh; ++i) {
      for (int64_t j = 0; j < kw; ++j) depthwise_taps.push_back((i * dh * in_w + j * dw) * B);
    }
    ConvJob pointwise;
    pointwise.lanes = static_cast<int>(B);
    pointwise.x_pixel_step = B;
    pointwise.x_row_step = in_w * B;
    pointwise.x_block_stride = in_plane;
    pointwise.taps = pointwise_taps.data();
    pointwise.tap_count = in_blocks;
    pointwise.w = p->w1.data();
    pointwise.weight_count = static_cast<int64_t>(p->w1.size());
    pointwise.out_w = in_w;
    pointwise.y_block_stride = t_block_stride;
    pointwise.bias = p->b1.empty() ? nullptr : p->b1.data();
    pointwise.activation = pointwise_activation_;
    ConvJob depthwise;
    depthwise.lanes = 1;
    depthwise.x_pixel_step = sw * B;
    depthwise.x_row_step = sh * in_w * B;
    depthwise.x_block_stride = t_block_stride;
    depthwise.taps = depthwise_taps.data();
    depthwise.tap_count = kh * kw;
    depthwise.w = p->w2.data();
    depthwise.weight_count = static_cast<int64_t>(p->w2.size());
    depthwise.out_w = out_w;
    depthwise.y_block_stride = out_h * out_w * B;
    depthwise.bias = p->b2.empty() ? nullptr : p->b2.data();
    depthwise.activation = depthwise_activation_;
    depthwise.in_h = in_h, depthwise.in_w = in_w, depthwise.pad_top = pt, depthwise.pad_left = pl;
    depthwise.kernel_h = kh, depthwise.kernel_w = kw, depthwise.stride_h = sh, depthwise.stride_w = sw;
    depthwise.dilation_h = dh, depthwise.dilation_w = dw;

    const Kernels* k = kernels_;
    const int64_t F = k->max_filter_blocks, groups = nchwc::group_count(blocks, F);
    const int64_t max_chunk_taps =
        std::max<int64_t>(1, nchwc::kWeightChunkBytes / (F * B * B * static_cast<int64_t>(sizeof(float))));
    const int64_t chunk_count = (in_blocks + max_chunk_taps - 1) / max_chunk_taps;
    const int64_t chunk_taps = (in_blocks + chunk_count - 1) / chunk_count;
    const float* x_data = x->data<float>();
    float* y_data = y.data<float>();

    parallel_for_tasks(pool, n_images * ranges, macs_per_task, [&](int64_t task) {
      const int64_t n = task / ranges, r = task % ranges;
      const int64_t oh_begin = r * units / ranges * 2, oh_end = std::min(out_h, (r + 1) * units / ranges * 2);
      // Kept between runs (per thread), so a run neither allocates nor faults it in.
      thread_local std::vector<float> scratch;
      const size_t needed = static_cast<size_t>(blocks * t_block_stride + 16);
      if (scratch.size() < needed) scratch.resize(needed);
      float* t = scratch.data() + ((16 - reinterpret_cast<uintptr_t>(scratch.data()) / sizeof(float) % 16) % 16);

      ConvJob pw = pointwise;
      pw.x = x_data + n * in_blocks * in_plane;
      ConvJob dwj = depthwise;
      dwj.y = y_data + n * C * out_h * out_w;
      int64_t held_begin = 0, held_end = 0;  // rows of T in t
      for (int64_t o0 = oh_begin; o0 < oh_end; o0 += R) {
        const int64_t o1 = std::min(oh_end, o0 + R);
        const int64_t a = std::clamp<int64_t>(o0 * sh - pt, 0, in_h);
        const int64_t b = std::clamp<int64_t>((o1 - 1) * sh - pt + span_h, a, in_h);
        int64_t from = a;
        if (a >= held_begin && a < held_end) {
          // The rows this band shares with the last one move to the front.
          if (a > held_begin) {
            for (int64_t ob = 0; ob < blocks; ++ob) {
              float* plane = t + ob * t_block_stride;
              std::memmove(plane, plane + (a - held_begin) * in_w * B,
                           static_cast<size_t>((held_end - a) * in_w * B) * sizeof(float));
            }
          }
          from = held_end;
        }
        held_begin = a, held_end = b;
        // Pixel q of T (q = row * in_w + column) lives at t + (q - a * in_w) * B.
        pw.y = t - a * in_w * B;
        if (from < b) {
          for (int64_t g = 0; g < groups; ++g) {
            const int64_t ob0 = nchwc::group_begin(g, groups, blocks);
            const int64_t nob = nchwc::group_begin(g + 1, groups, blocks) - ob0;
            for (int64_t c0 = 0; c0 < in_blocks; c0 += chunk_taps) {
              const int64_t c1 = std::min(in_blocks, c0 + chunk_taps);
              k->conv(pw, ob0, nob, from * in_w, b * in_w, c0, c1, c0 == 0, c1 == in_blocks);
            }
          }
        }
        // The depthwise kernel reads only rows inside its windows, all in [a, b).
        dwj.x = t - a * in_w * B;
        for (int64_t ob = 0; ob < blocks; ++ob) k->depthwise(dwj, ob, o0 * out_w, o1 * out_w);
      }
    });
    return Status::ok();
  }

 private:
  struct Packed {
    int64_t in_channels = 0, channels = 0, kernel_h = 0, kernel_w = 0;
    std::vector<float> w1, b1, w2, b2;  // w1 in filter groups; biases empty when absent
  };

  nchwc::Activation parse_activation(const KernelInfo& info, const std::string& name) const {
    const std::string kind = info.attr_string(name, "");
    const FusedActivation fused = FusedActivation::parse(info, kind, info.attr_floats(name + "_params"));
    nchwc::Activation a;
    if (!nchwc::register_activation(fused, a)) {
      throw Error(
          invalid_model(label_, ": ", name, " '", kind,
                        "' is not one of the activations this op applies (Relu, LeakyRelu, Clip, HardSigmoid)"));
    }
    return a;
  }

  Status check_bias(const Tensor* b, const char* name, int64_t channels, std::vector<float>& out) const {
    if (b == nullptr) return Status::ok();
    if (b->dtype() != DataType::kFloat || b->rank() != 1 || b->size() != channels) {
      return invalid_argument(label_, ": input ", name, " must be float[", channels, "], got ", b->describe());
    }
    out.assign(b->data<float>(), b->data<float>() + b->size());
    return Status::ok();
  }

  // Checks the weights and biases against each other, the attributes and
  // the block size, and packs W1.
  Status prepare(const Tensor* w1, const Tensor* b1, const Tensor* w2, const Tensor* b2, Packed& out) const {
    const int64_t B = block_;
    if (w1 == nullptr || w2 == nullptr) return invalid_argument(label_, ": inputs W1 and W2 are required");
    if (w1->dtype() != DataType::kFloat || w1->rank() != 4 || w1->dim(2) != 1 || w1->dim(3) != 1) {
      return invalid_argument(label_, ": input W1 must be a float [C, I, 1, 1] tensor, got ", w1->describe());
    }
    const int64_t c = w1->dim(0), i = w1->dim(1);
    if (c <= 0 || i <= 0 || c % B != 0 || i % B != 0) {
      return invalid_model(label_, ": W1 ", w1->describe(), " needs channel counts that are positive multiples of ", B);
    }
    if (w2->dtype() != DataType::kFloat || w2->rank() != 4 || w2->dim(0) != c || w2->dim(1) != 1 || w2->dim(2) <= 0 ||
        w2->dim(3) <= 0) {
      return invalid_argument(label_, ": input W2 must be a float [", c, ", 1, kh, kw] tensor, got ", w2->describe());
    }
    if (group_ != 0 && group_ != c) {
      return invalid_model(label_, ": group ", group_, " does not match the ", c, " channels of W1 and W2");
    }
    if (!window_.kernel.empty() && (window_.kernel[0] != w2->dim(2) || window_.kernel[1] != w2->dim(3))) {
      return invalid_model(label_, ": kernel_shape [", window_.kernel[0], ",", window_.kernel[1],
                           "] does not match W2 ", w2->describe());
    }
    ONYX_RETURN_IF_ERROR(check_bias(b1, "B1", c, out.b1));
    ONYX_RETURN_IF_ERROR(check_bias(b2, "B2", c, out.b2));
    out.in_channels = i;
    out.channels = c;
    out.kernel_h = w2->dim(2);
    out.kernel_w = w2->dim(3);
    out.w1.resize(static_cast<size_t>(w1->size()));
    nchwc::pack_filter_groups(w1->data<float>(), c / B, i, B, kernels_->max_filter_blocks, out.w1.data());
    out.w2.assign(w2->data<float>(), w2->data<float>() + w2->size());
    return Status::ok();
  }

  std::string label_;
  const Kernels* kernels_ = nullptr;
  int64_t block_ = 1;
  nchwc::Window2D window_;
  int64_t group_ = 0;  // 0: not given
  nchwc::Activation pointwise_activation_;
  nchwc::Activation depthwise_activation_;
  bool prepacked_ = false;
  Packed packed_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("com.onyx.nchwc", "PointwiseDepthwiseConv", 1, kLatestVersion, {DataType::kFloat},
                         PointwiseDepthwiseKernel);

}  // namespace onyx::cpu
