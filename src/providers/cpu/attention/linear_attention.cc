// LinearAttention (opset 27): recurrent linear attention over packed
// (batch, time, heads*size) inputs with a (batch, kv_heads, d_k, d_v) state,
// for the linear, gated (decay), delta (DeltaNet) and gated_delta rules, with
// grouped query heads sharing one KV state.
#include <cmath>
#include <string>
#include <vector>

#include "providers/cpu/attention/attention_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using attention::load_floats;
using attention::store_floats;

class LinearAttentionKernel final : public Kernel {
 public:
  explicit LinearAttentionKernel(const KernelInfo& info)
      : q_heads_(info.attr_int("q_num_heads", 0)), kv_heads_(info.attr_int("kv_num_heads", 0)), scale_(info.attr_float("scale", 0.0f)) {
    const std::string rule = info.attr_string("update_rule", "gated_delta");
    if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") {
      throw Error(invalid_model(info.label(), ": attribute update_rule is '", rule,
                                "', expected 'linear', 'gated', 'delta' or 'gated_delta'"));
    }
    gated_ = rule == "gated" || rule == "gated_delta";
    delta_ = rule == "delta" || rule == "gated_delta";
    if (q_heads_ <= 0 || kv_heads_ <= 0 || q_heads_ % kv_heads_ != 0) {
      throw Error(invalid_model(info.label(), ": attributes q_num_heads ", q_heads_, " and kv_num_heads ", kv_heads_,
                                " must be positive with q_num_heads a multiple of kv_num_heads"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    auto input = [&](size_t i) { return ctx.input_count() > i ? ctx.input_tensor(i) : nullptr; };
    const Tensor *q = input(0), *k = input(1), *v = input(2), *past = input(3), *decay = input(4), *beta = input(5);
    if (q == nullptr || k == nullptr || v == nullptr) return invalid_argument(ctx.label(), ": inputs query, key and value are required");
    if (q->rank() != 3 || k->rank() != 3 || v->rank() != 3) {
      return invalid_argument(ctx.label(), ": query ", q->describe(), ", key ", k->describe(), ", value ", v->describe(),
                              " must all be rank 3 (batch, time, heads * size)");
    }
    const int64_t B = q->dim(0), T = q->dim(1), Hq = q_heads_, Hkv = kv_heads_, group = Hq / Hkv;
    if (q->dim(2) % Hq != 0 || v->dim(2) % Hkv != 0) {
      return invalid_argument(ctx.label(), ": query ", q->describe(), " or value ", v->describe(),
                              " last axis is not divisible by its head count");
    }
    const int64_t dk = q->dim(2) / Hq, dv = v->dim(2) / Hkv;
    if (k->dim(0) != B || k->dim(1) != T || k->dim(2) != Hkv * dk) {
      return invalid_argument(ctx.label(), ": key is ", k->describe(), ", expected [", B, ", ", T, ", ", Hkv * dk, "]");
    }
    if (v->dim(0) != B || v->dim(1) != T) {
      return invalid_argument(ctx.label(), ": value is ", v->describe(), ", expected [", B, ", ", T, ", ", Hkv, " * d_v]");
    }
    if (gated_ != (decay != nullptr)) {
      return invalid_argument(ctx.label(), ": input decay is ", gated_ ? "required" : "not allowed", " by this update_rule");
    }
    if (delta_ != (beta != nullptr)) {
      return invalid_argument(ctx.label(), ": input beta is ", delta_ ? "required" : "not allowed", " by this update_rule");
    }
    bool decay_per_key = false;
    if (decay != nullptr) {
      if (decay->rank() != 3 || decay->dim(0) != B || decay->dim(1) != T || (decay->dim(2) != Hkv && decay->dim(2) != Hkv * dk)) {
        return invalid_argument(ctx.label(), ": input decay is ", decay->describe(), ", expected [", B, ", ", T, ", ", Hkv, "] or [",
                                B, ", ", T, ", ", Hkv * dk, "]");
      }
      decay_per_key = decay->dim(2) == Hkv * dk && !(Hkv * dk == Hkv);
    }
    int64_t beta_width = 0;
    if (beta != nullptr) {
      if (beta->rank() != 3 || beta->dim(0) != B || beta->dim(1) != T || (beta->dim(2) != Hkv && beta->dim(2) != 1)) {
        return invalid_argument(ctx.label(), ": input beta is ", beta->describe(), ", expected [", B, ", ", T, ", ", Hkv, "] or [", B,
                                ", ", T, ", 1]");
      }
      beta_width = beta->dim(2);
    }
    if (past != nullptr && (past->rank() != 4 || past->dim(0) != B || past->dim(1) != Hkv || past->dim(2) != dk || past->dim(3) != dv)) {
      return invalid_argument(ctx.label(), ": input past_state is ", past->describe(), ", expected [", B, ", ", Hkv, ", ", dk, ", ", dv, "]");
    }
    std::vector<float> qv, kv, vv, state, dec, bet;
    ONYX_RETURN_IF_ERROR(load_floats(*q, qv, ctx.label() + ": input query"));
    ONYX_RETURN_IF_ERROR(load_floats(*k, kv, ctx.label() + ": input key"));
    ONYX_RETURN_IF_ERROR(load_floats(*v, vv, ctx.label() + ": input value"));
    if (decay) ONYX_RETURN_IF_ERROR(load_floats(*decay, dec, ctx.label() + ": input decay"));
    if (beta) ONYX_RETURN_IF_ERROR(load_floats(*beta, bet, ctx.label() + ": input beta"));
    if (past) {
      ONYX_RETURN_IF_ERROR(load_floats(*past, state, ctx.label() + ": input past_state"));
    } else {
      state.assign(static_cast<size_t>(B * Hkv * dk * dv), 0.0f);
    }
    const float scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(dk));
    std::vector<float> out(static_cast<size_t>(B * T * Hq * dv));
    const bool gated = gated_, delta = delta_;
    // Each (batch, kv head) recurrence is independent.
    parallel_for(ctx.thread_pool(), B * Hkv, static_cast<double>(T * dk * dv * (3 + group)), [&](int64_t begin, int64_t end) {
      std::vector<float> vt(static_cast<size_t>(dv));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t b = item / Hkv, hk = item % Hkv;
        float* S = &state[static_cast<size_t>(item * dk * dv)];
        for (int64_t t = 0; t < T; ++t) {
          const int64_t bt = b * T + t;
          const float* kt = &kv[static_cast<size_t>((bt * Hkv + hk) * dk)];
          const float* vsrc = &vv[static_cast<size_t>((bt * Hkv + hk) * dv)];
          if (gated) {
            for (int64_t d = 0; d < dk; ++d) {
              const float g = decay_per_key ? dec[static_cast<size_t>((bt * Hkv + hk) * dk + d)] : dec[static_cast<size_t>(bt * Hkv + hk)];
              const float factor = std::exp(g);
              float* row = S + d * dv;
              for (int64_t m = 0; m < dv; ++m) row[m] *= factor;
            }
          }
          for (int64_t m = 0; m < dv; ++m) vt[static_cast<size_t>(m)] = vsrc[m];
          if (delta) {
            // v_t <- beta_t * (v_t - S^T k_t): write only what the state does not yet predict.
            const float bt_value = bet[static_cast<size_t>(bt * beta_width + (beta_width == 1 ? 0 : hk))];
            for (int64_t m = 0; m < dv; ++m) {
              float retrieved = 0;
              for (int64_t d = 0; d < dk; ++d) retrieved += S[d * dv + m] * kt[d];
              vt[static_cast<size_t>(m)] = bt_value * (vt[static_cast<size_t>(m)] - retrieved);
            }
          }
          for (int64_t d = 0; d < dk; ++d) {
            float* row = S + d * dv;
            for (int64_t m = 0; m < dv; ++m) row[m] += kt[d] * vt[static_cast<size_t>(m)];
          }
          for (int64_t g = 0; g < group; ++g) {
            const int64_t hq = hk * group + g;
            const float* qt = &qv[static_cast<size_t>((bt * Hq + hq) * dk)];
            float* o = &out[static_cast<size_t>((bt * Hq + hq) * dv)];
            for (int64_t m = 0; m < dv; ++m) o[m] = 0;
            for (int64_t d = 0; d < dk; ++d) {
              const float* row = S + d * dv;
              for (int64_t m = 0; m < dv; ++m) o[m] += qt[d] * row[m];
            }
            for (int64_t m = 0; m < dv; ++m) o[m] *= scale;
          }
        }
      }
    });
    Tensor& y = ctx.allocate_output(0, q->dtype(), {B, T, Hq * dv});
    store_floats(out.data(), static_cast<int64_t>(out.size()), y);
    if (ctx.output_count() > 1 && ctx.output_requested(1)) {
      Tensor& present = ctx.allocate_output(1, past ? past->dtype() : q->dtype(), {B, Hkv, dk, dv});
      store_floats(state.data(), static_cast<int64_t>(state.size()), present);
    }
    return Status::ok();
  }

 private:
  int64_t q_heads_, kv_heads_;
  float scale_;
  bool gated_ = false, delta_ = false;
};

ONYX_REGISTER_CPU_KERNEL("", "LinearAttention", 27, kLatestVersion,
                         (std::vector<DataType>{DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}), LinearAttentionKernel);

}  // namespace
}  // namespace onyx::cpu
