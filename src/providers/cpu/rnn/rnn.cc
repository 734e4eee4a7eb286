// RNN (opset 1, 7, 14, 22): the simple recurrent layer
// H_t = f(X_t W^T + H_{t-1} R^T + Wb + Rb), in every direction, with optional
// sequence_lens, initial_h, clip and the batch-major layout of opset 14.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "providers/cpu/rnn/rnn_util.h"

namespace onyx::cpu {
namespace {

class RnnKernel final : public Kernel {
 public:
  explicit RnnKernel(const KernelInfo& info)
      : hidden_(info.attr_int("hidden_size", 0)),
        clip_(info.attr_float("clip", 0.0f)),
        batch_major_(info.attr_int("layout", 0) == 1) {
    if (info.attr_int("layout", 0) != 0 && !batch_major_) {
      throw Error(invalid_model(info.label(), ": attribute layout is ", info.attr_int("layout", 0), ", expected 0 or 1"));
    }
    num_directions_ = rnn::parse_direction(info, &reverse_);
    activations_ = rnn::parse_activations(info, 1, num_directions_, {"Tanh"});
    packed_ = rnn::pack_constant_weights(info, 1, num_directions_, {1});
  }

  bool needs_constant_data(size_t i) const override { return (i != 1 && i != 2) || packed_.empty(); }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x != nullptr && x->dtype() == DataType::kDouble) return run<double>(ctx);
    return run<float>(ctx);
  }

 private:
  template <typename C>
  Status run(KernelContext& ctx) const {
    constexpr bool kFloat = std::is_same_v<C, float>;
    rnn::RecurrentInputs<C> in;
    ONYX_RETURN_IF_ERROR(
        rnn::load_recurrent_inputs(ctx, 1, hidden_, num_directions_, batch_major_, false, in, !kFloat || packed_.empty()));
    const int64_t S = in.seq, B = in.batch, H = in.hidden, D = num_directions_;
    // Float packs W and R once per run when they were not constants.
    rnn::PackedWeights packed;
    if constexpr (kFloat) {
      packed = !packed_.empty() ? packed_ : rnn::pack_weights(in.w.data(), in.r.data(), D, 1, H, in.input_size, {1});
    }
    std::vector<C> y(static_cast<size_t>(S * D * B * H), C(0)), y_h(in.initial_h);
    const int64_t max_len = B == 0 ? 0 : *std::max_element(in.lens.begin(), in.lens.end());
    for (int64_t d = 0; d < D; ++d) {
      const bool reverse = D == 2 ? d == 1 : reverse_;
      const rnn::Activation& f = activations_[static_cast<size_t>(d)];
      const C* bias = &in.bias[static_cast<size_t>(d * 2 * H)];
      std::vector<C> gate_bias(static_cast<size_t>(H));
      for (int64_t i = 0; i < H; ++i) gate_bias[static_cast<size_t>(i)] = bias[i] + bias[H + i];
      std::vector<C> xw;
      if constexpr (kFloat) {
        xw = rnn::project_inputs(in, packed.w[static_cast<size_t>(d)], 1, gate_bias, ctx.thread_pool());
      } else {
        xw = rnn::project_inputs(in, d, 1, gate_bias, ctx.thread_pool());
      }
      C* h = &y_h[static_cast<size_t>(d * B * H)];
      std::vector<C> rec(static_cast<size_t>(B * H));
      for (int64_t s = 0; s < max_len; ++s) {
        if constexpr (kFloat) {
          sgemm_packed_b(false, B, 1.0f, h, H, packed.r_block(d, 0), 0.0f, rec.data(), H, ctx.thread_pool());
        } else {
          const C* r = &in.r[static_cast<size_t>(d * H * H)];
          gemm<C>(false, true, B, H, H, C(1), h, H, r, H, C(0), rec.data(), H, ctx.thread_pool());
        }
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = in.lens[static_cast<size_t>(b)];
          if (s >= len) continue;  // past this sequence's end: its state stays, Y stays zero
          const int64_t t = reverse ? len - 1 - s : s;
          C* g = &rec[static_cast<size_t>(b * H)];
          const C* xt = &xw[static_cast<size_t>((t * B + b) * H)];
          for (int64_t i = 0; i < H; ++i) g[i] += xt[i];
          rnn::clip_values(g, H, clip_);
          f.apply(g, H);
          std::copy(g, g + H, h + b * H);
          std::copy(g, g + H, &y[static_cast<size_t>(((t * D + d) * B + b) * H)]);
        }
      }
    }
    rnn::write_outputs(ctx, ctx.input_tensor(0)->dtype(), batch_major_, in, y, y_h);
    return Status::ok();
  }

  int64_t hidden_;
  float clip_;
  bool batch_major_;
  bool reverse_ = false;
  int64_t num_directions_ = 1;
  std::vector<rnn::Activation> activations_;
  rnn::PackedWeights packed_;  // W and R, when constants
};

ONYX_REGISTER_CPU_KERNEL("", "RNN", 1, 6, types::floats(), RnnKernel);
ONYX_REGISTER_CPU_KERNEL("", "RNN", 7, 13, types::floats(), RnnKernel);
ONYX_REGISTER_CPU_KERNEL("", "RNN", 14, 21, types::floats(), RnnKernel);
ONYX_REGISTER_CPU_KERNEL("", "RNN", 22, kLatestVersion, types::floats(), RnnKernel);

}  // namespace
}  // namespace onyx::cpu
