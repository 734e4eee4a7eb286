// LSTM (opset 1, 7, 14, 22): long short-term memory with gates i, o, f and
// cell candidate c (the spec's order in W, R and B), optional peepholes P,
// coupled input-forget gates (input_forget), clip, every direction, optional
// sequence_lens, initial_h/initial_c and the batch-major layout of opset 14.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "providers/cpu/rnn/rnn_util.h"

namespace onyx::cpu {
namespace {

class LstmKernel final : public Kernel {
 public:
  explicit LstmKernel(const KernelInfo& info)
      : hidden_(info.attr_int("hidden_size", 0)),
        clip_(info.attr_float("clip", 0.0f)),
        batch_major_(info.attr_int("layout", 0) == 1),
        input_forget_(info.attr_int("input_forget", 0) != 0) {
    if (info.attr_int("layout", 0) != 0 && !batch_major_) {
      throw Error(invalid_model(info.label(), ": attribute layout is ", info.attr_int("layout", 0), ", expected 0 or 1"));
    }
    num_directions_ = rnn::parse_direction(info, &reverse_);
    activations_ = rnn::parse_activations(info, 3, num_directions_, {"Sigmoid", "Tanh", "Tanh"});
    packed_ = rnn::pack_constant_weights(info, 4, num_directions_, {4});
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
        rnn::load_recurrent_inputs(ctx, 4, hidden_, num_directions_, batch_major_, true, in, !kFloat || packed_.empty()));
    const int64_t S = in.seq, B = in.batch, H = in.hidden, D = num_directions_;
    // Float packs W and R once per run when they were not constants.
    rnn::PackedWeights packed;
    if constexpr (kFloat) {
      packed = !packed_.empty() ? packed_ : rnn::pack_weights(in.w.data(), in.r.data(), D, 4, H, in.input_size, {4});
    }
    std::vector<C> y(static_cast<size_t>(S * D * B * H), C(0)), y_h(in.initial_h), y_c(in.initial_c);
    const int64_t max_len = B == 0 ? 0 : *std::max_element(in.lens.begin(), in.lens.end());
    ThreadPool* pool = ctx.thread_pool();
    for (int64_t d = 0; d < D; ++d) {
      const bool reverse = D == 2 ? d == 1 : reverse_;
      const rnn::Activation& f = activations_[static_cast<size_t>(d * 3)];
      const rnn::Activation& g = activations_[static_cast<size_t>(d * 3 + 1)];
      const rnn::Activation& h_act = activations_[static_cast<size_t>(d * 3 + 2)];
      const C* bias = &in.bias[static_cast<size_t>(d * 8 * H)];
      std::vector<C> gate_bias(static_cast<size_t>(4 * H));
      for (int64_t i = 0; i < 4 * H; ++i) gate_bias[static_cast<size_t>(i)] = bias[i] + bias[4 * H + i];
      std::vector<C> xw;
      if constexpr (kFloat) {
        xw = rnn::project_inputs(in, packed.w[static_cast<size_t>(d)], 4, gate_bias, pool);
      } else {
        xw = rnn::project_inputs(in, d, 4, gate_bias, pool);
      }
      const C* p_i = &in.peepholes[static_cast<size_t>(d * 3 * H)];
      const C* p_o = p_i + H;
      const C* p_f = p_i + 2 * H;
      C* h = &y_h[static_cast<size_t>(d * B * H)];
      C* c = &y_c[static_cast<size_t>(d * B * H)];
      std::vector<C> rec(static_cast<size_t>(B * 4 * H)), cell_act(static_cast<size_t>(H));
      for (int64_t s = 0; s < max_len; ++s) {
        if constexpr (kFloat) {
          sgemm_packed_b(false, B, 1.0f, h, H, packed.r_block(d, 0), 0.0f, rec.data(), 4 * H, pool);
        } else {
          const C* r = &in.r[static_cast<size_t>(d * 4 * H * H)];
          gemm<C>(false, true, B, 4 * H, H, C(1), h, H, r, H, C(0), rec.data(), 4 * H, pool);
        }
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = in.lens[static_cast<size_t>(b)];
          if (s >= len) continue;
          const int64_t t = reverse ? len - 1 - s : s;
          C* gates = &rec[static_cast<size_t>(b * 4 * H)];
          const C* xt = &xw[static_cast<size_t>((t * B + b) * 4 * H)];
          for (int64_t i = 0; i < 4 * H; ++i) gates[i] += xt[i];
          C* gi = gates;
          C* go = gates + H;
          C* gf = gates + 2 * H;
          C* gc = gates + 3 * H;
          C* cb = c + b * H;
          C* hb = h + b * H;
          for (int64_t i = 0; i < H; ++i) gi[i] += p_i[i] * cb[i];
          rnn::clip_values(gi, H, clip_);
          f.apply(gi, H);
          if (input_forget_) {
            // Coupled gates: forget exactly what is let in.
            for (int64_t i = 0; i < H; ++i) gf[i] = C(1) - gi[i];
          } else {
            for (int64_t i = 0; i < H; ++i) gf[i] += p_f[i] * cb[i];
            rnn::clip_values(gf, H, clip_);
            f.apply(gf, H);
          }
          rnn::clip_values(gc, H, clip_);
          g.apply(gc, H);
          for (int64_t i = 0; i < H; ++i) cb[i] = gf[i] * cb[i] + gi[i] * gc[i];
          for (int64_t i = 0; i < H; ++i) go[i] += p_o[i] * cb[i];
          rnn::clip_values(go, H, clip_);
          f.apply(go, H);
          std::copy(cb, cb + H, cell_act.begin());
          h_act.apply(cell_act.data(), H);
          C* yt = &y[static_cast<size_t>(((t * D + d) * B + b) * H)];
          for (int64_t i = 0; i < H; ++i) {
            hb[i] = go[i] * cell_act[static_cast<size_t>(i)];
            yt[i] = hb[i];
          }
        }
      }
    }
    rnn::write_outputs(ctx, ctx.input_tensor(0)->dtype(), batch_major_, in, y, y_h, &y_c);
    return Status::ok();
  }

  int64_t hidden_;
  float clip_;
  bool batch_major_;
  bool input_forget_;
  bool reverse_ = false;
  int64_t num_directions_ = 1;
  std::vector<rnn::Activation> activations_;
  rnn::PackedWeights packed_;  // W and R, when constants
};

ONYX_REGISTER_CPU_KERNEL("", "LSTM", 1, 6, types::floats(), LstmKernel);
ONYX_REGISTER_CPU_KERNEL("", "LSTM", 7, 13, types::floats(), LstmKernel);
ONYX_REGISTER_CPU_KERNEL("", "LSTM", 14, 21, types::floats(), LstmKernel);
ONYX_REGISTER_CPU_KERNEL("", "LSTM", 22, kLatestVersion, types::floats(), LstmKernel);

}  // namespace
}  // namespace onyx::cpu
