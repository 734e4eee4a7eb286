// GRU (opset 1, 3, 7, 14, 22): gated recurrent unit with update gate z, reset
// gate r and candidate h, where the reset applies before the recurrent matmul
// (linear_before_reset = 0) or to its result (1); every direction, optional
// sequence_lens, initial_h, clip and the batch-major layout of opset 14.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "providers/cpu/rnn/rnn_util.h"

namespace onyx::cpu {
namespace {

class GruKernel final : public Kernel {
 public:
  explicit GruKernel(const KernelInfo& info)
      : hidden_(info.attr_int("hidden_size", 0)),
        clip_(info.attr_float("clip", 0.0f)),
        batch_major_(info.attr_int("layout", 0) == 1),
        linear_before_reset_(info.attr_int("linear_before_reset", 0) != 0) {
    if (info.attr_int("layout", 0) != 0 && !batch_major_) {
      throw Error(invalid_model(info.label(), ": attribute layout is ", info.attr_int("layout", 0), ", expected 0 or 1"));
    }
    num_directions_ = rnn::parse_direction(info, &reverse_);
    activations_ = rnn::parse_activations(info, 2, num_directions_, {"Sigmoid", "Tanh"});
    packed_ = rnn::pack_constant_weights(info, 3, num_directions_, {2, 1});
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
        rnn::load_recurrent_inputs(ctx, 3, hidden_, num_directions_, batch_major_, false, in, !kFloat || packed_.empty()));
    const int64_t S = in.seq, B = in.batch, H = in.hidden, D = num_directions_;
    // Float packs W and R once per run when they were not constants.
    rnn::PackedWeights packed;
    if constexpr (kFloat) {
      packed = !packed_.empty() ? packed_ : rnn::pack_weights(in.w.data(), in.r.data(), D, 3, H, in.input_size, {2, 1});
    }
    std::vector<C> y(static_cast<size_t>(S * D * B * H), C(0)), y_h(in.initial_h);
    const int64_t max_len = B == 0 ? 0 : *std::max_element(in.lens.begin(), in.lens.end());
    ThreadPool* pool = ctx.thread_pool();
    for (int64_t d = 0; d < D; ++d) {
      const bool reverse = D == 2 ? d == 1 : reverse_;
      const rnn::Activation& f = activations_[static_cast<size_t>(d * 2)];
      const rnn::Activation& g = activations_[static_cast<size_t>(d * 2 + 1)];
      const C* wb = &in.bias[static_cast<size_t>(d * 6 * H)];
      const C* rb = wb + 3 * H;
      // z and r take both biases; Rb_h folds into the input side only when the
      // reset gate multiplies H before the matmul (it is then outside r's reach).
      std::vector<C> gate_bias(static_cast<size_t>(3 * H));
      for (int64_t i = 0; i < 3 * H; ++i) {
        const bool fold_rb = i < 2 * H || !linear_before_reset_;
        gate_bias[static_cast<size_t>(i)] = wb[i] + (fold_rb ? rb[i] : C(0));
      }
      std::vector<C> xw;
      if constexpr (kFloat) {
        xw = rnn::project_inputs(in, packed.w[static_cast<size_t>(d)], 3, gate_bias, pool);
      } else {
        xw = rnn::project_inputs(in, d, 3, gate_bias, pool);
      }
      // out [B, block rows] = a [B, H] times block (0: z and r, 1: h) of R, transposed.
      auto times_r = [&](const C* a, int64_t block, C* out) {
        const int64_t n = block == 0 ? 2 * H : H;
        if constexpr (kFloat) {
          sgemm_packed_b(false, B, 1.0f, a, H, packed.r_block(d, block), 0.0f, out, n, pool);
        } else {
          const C* r = &in.r[static_cast<size_t>((d * 3 + 2 * block) * H * H)];
          gemm<C>(false, true, B, n, H, C(1), a, H, r, H, C(0), out, n, pool);
        }
      };
      const C* rb_h = rb + 2 * H;
      C* h = &y_h[static_cast<size_t>(d * B * H)];
      std::vector<C> zr(static_cast<size_t>(B * 2 * H)), hr(static_cast<size_t>(B * H)), reset_h(static_cast<size_t>(B * H));
      for (int64_t s = 0; s < max_len; ++s) {
        times_r(h, 0, zr.data());
        if (linear_before_reset_) times_r(h, 1, hr.data());
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = in.lens[static_cast<size_t>(b)];
          if (s >= len) continue;
          const int64_t t = reverse ? len - 1 - s : s;
          C* gates = &zr[static_cast<size_t>(b * 2 * H)];
          const C* xt = &xw[static_cast<size_t>((t * B + b) * 3 * H)];
          for (int64_t i = 0; i < 2 * H; ++i) gates[i] += xt[i];
          rnn::clip_values(gates, 2 * H, clip_);
          f.apply(gates, 2 * H);
          if (!linear_before_reset_) {
            const C* r = gates + H;
            for (int64_t i = 0; i < H; ++i) reset_h[static_cast<size_t>(b * H + i)] = r[i] * h[b * H + i];
          }
        }
        if (!linear_before_reset_) times_r(reset_h.data(), 1, hr.data());
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = in.lens[static_cast<size_t>(b)];
          if (s >= len) continue;
          const int64_t t = reverse ? len - 1 - s : s;
          const C* z = &zr[static_cast<size_t>(b * 2 * H)];
          const C* r = z + H;
          const C* xt = &xw[static_cast<size_t>((t * B + b) * 3 * H)] + 2 * H;
          C* cand = &hr[static_cast<size_t>(b * H)];
          for (int64_t i = 0; i < H; ++i) cand[i] = xt[i] + (linear_before_reset_ ? r[i] * (cand[i] + rb_h[i]) : cand[i]);
          rnn::clip_values(cand, H, clip_);
          g.apply(cand, H);
          C* hb = h + b * H;
          C* yt = &y[static_cast<size_t>(((t * D + d) * B + b) * H)];
          for (int64_t i = 0; i < H; ++i) {
            hb[i] = (C(1) - z[i]) * cand[i] + z[i] * hb[i];
            yt[i] = hb[i];
          }
        }
      }
    }
    rnn::write_outputs(ctx, ctx.input_tensor(0)->dtype(), batch_major_, in, y, y_h);
    return Status::ok();
  }

  int64_t hidden_;
  float clip_;
  bool batch_major_;
  bool linear_before_reset_;
  bool reverse_ = false;
  int64_t num_directions_ = 1;
  std::vector<rnn::Activation> activations_;
  rnn::PackedWeights packed_;  // W and R, when constants
};

ONYX_REGISTER_CPU_KERNEL("", "GRU", 1, 2, types::floats(), GruKernel);
ONYX_REGISTER_CPU_KERNEL("", "GRU", 3, 6, types::floats(), GruKernel);
ONYX_REGISTER_CPU_KERNEL("", "GRU", 7, 13, types::floats(), GruKernel);
ONYX_REGISTER_CPU_KERNEL("", "GRU", 14, 21, types::floats(), GruKernel);
ONYX_REGISTER_CPU_KERNEL("", "GRU", 22, kLatestVersion, types::floats(), GruKernel);

}  // namespace
}  // namespace onyx::cpu
