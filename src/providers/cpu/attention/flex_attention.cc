// ai.onnx.preview FlexAttention (version 1): scaled dot-product attention over
// rank-4 Q/K/V with grouped KV heads, where optional subgraphs rewrite the
// score tensor before the softmax (score_mod) and the probabilities after it
// (prob_mod), as PyTorch's flex_attention does.
#include <cmath>
#include <vector>

#include "providers/cpu/attention/attention_util.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using attention::load_floats;
using attention::store_floats;

class FlexAttentionKernel final : public Kernel {
 public:
  explicit FlexAttentionKernel(const KernelInfo& info)
      : has_scale_(info.has_attr("scale")),
        scale_(info.attr_float("scale", 0.0f)),
        precision_(info.attr_int("softmax_precision", 0)),
        score_mod_(info.has_attr("score_mod")),
        prob_mod_(info.has_attr("prob_mod")) {
    if (info.has_attr("softmax_precision") && precision_ != 1 && precision_ != 10 && precision_ != 11 && precision_ != 16) {
      throw Error(invalid_model(info.label(), ": attribute softmax_precision is ", precision_,
                                ", expected 1 (float), 10 (float16), 11 (double) or 16 (bfloat16)"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* q = ctx.input_tensor(0);
    const Tensor* k = ctx.input_count() > 1 ? ctx.input_tensor(1) : nullptr;
    const Tensor* v = ctx.input_count() > 2 ? ctx.input_tensor(2) : nullptr;
    if (q == nullptr || k == nullptr || v == nullptr) return invalid_argument(ctx.label(), ": inputs Q, K and V are required");
    if (q->rank() != 4 || k->rank() != 4 || v->rank() != 4) {
      return invalid_argument(ctx.label(), ": Q ", q->describe(), ", K ", k->describe(), ", V ", v->describe(),
                              " must all be rank 4 (batch, heads, sequence, head_size)");
    }
    if (k->dtype() != q->dtype() || v->dtype() != q->dtype() || !attention::is_float_type(q->dtype())) {
      return invalid_argument(ctx.label(), ": Q, K, V have types ", dtype_name(q->dtype()), ", ", dtype_name(k->dtype()), ", ",
                              dtype_name(v->dtype()), ", expected one float type");
    }
    const int64_t B = q->dim(0), Hq = q->dim(1), L = q->dim(2), D = q->dim(3);
    const int64_t Hkv = k->dim(1), S = k->dim(2), Dv = v->dim(3);
    if (k->dim(0) != B || v->dim(0) != B || k->dim(3) != D || v->dim(1) != Hkv || v->dim(2) != S) {
      return invalid_argument(ctx.label(), ": shapes Q ", q->describe(), ", K ", k->describe(), ", V ", v->describe(),
                              " do not agree (expected K [", B, ", kv_heads, S, ", D, "] and V [", B, ", kv_heads, S, v_head_size])");
    }
    if (Hkv <= 0 || Hq % Hkv != 0) {
      return invalid_argument(ctx.label(), ": q heads ", Hq, " is not a multiple of kv heads ", Hkv);
    }
    // The softmax (and the modifier subgraphs) run in softmax_precision:
    // float for non-double inputs unless told otherwise.
    DataType softmax_type = q->dtype() == DataType::kDouble ? DataType::kDouble : DataType::kFloat;
    if (precision_ != 0) softmax_type = static_cast<DataType>(precision_);
    if (softmax_type == DataType::kDouble) return run<double>(ctx, *q, *k, *v, softmax_type, B, Hq, Hkv, L, S, D, Dv);
    return run<float>(ctx, *q, *k, *v, softmax_type, B, Hq, Hkv, L, S, D, Dv);
  }

 private:
  // Runs modifier subgraph `name` on `values` (shape `shape`) in `dtype`, in place.
  template <typename C>
  Status apply_mod(KernelContext& ctx, const char* name, std::vector<C>& values, const Shape& shape, DataType dtype) const {
    Tensor tensor(dtype, shape);
    store_floats(values.data(), static_cast<int64_t>(values.size()), tensor);
    std::vector<Value> outputs;
    ONYX_RETURN_IF_ERROR(ctx.run_subgraph(name, {Value(tensor)}, outputs));
    if (outputs.size() != 1 || !outputs[0].is_tensor() || outputs[0].tensor().shape() != shape ||
        !attention::is_float_type(outputs[0].tensor().dtype())) {
      return invalid_argument(ctx.label(), ": subgraph ", name, " returned ", outputs.empty() ? std::string("nothing") : outputs[0].describe(),
                              ", expected one float tensor of shape ", shape_to_string(shape));
    }
    return load_floats(outputs[0].tensor(), values, ctx.label() + ": output of " + name);
  }

  template <typename C>
  Status run(KernelContext& ctx, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in, DataType softmax_type, int64_t B,
             int64_t Hq, int64_t Hkv, int64_t L, int64_t S, int64_t D, int64_t Dv) const {
    std::vector<C> q, k, v;
    ONYX_RETURN_IF_ERROR(load_floats(q_in, q, ctx.label() + ": input Q"));
    ONYX_RETURN_IF_ERROR(load_floats(k_in, k, ctx.label() + ": input K"));
    ONYX_RETURN_IF_ERROR(load_floats(v_in, v, ctx.label() + ": input V"));
    const int64_t group = Hq / Hkv;
    const C scale = has_scale_ ? static_cast<C>(scale_) : C(1) / std::sqrt(static_cast<C>(D));
    std::vector<C> scores(static_cast<size_t>(B * Hq * L * S));
    if (S > 0 && L > 0) {
      parallel_for(ctx.thread_pool(), B * Hq, static_cast<double>(L * S * D), [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t b = item / Hq, kvh = (item % Hq) / group;  // query head h reads KV head h / group
          gemm<C>(false, true, L, S, D, scale, &q[static_cast<size_t>(item * L * D)], D,
                  &k[static_cast<size_t>((b * Hkv + kvh) * S * D)], D, C(0), &scores[static_cast<size_t>(item * L * S)], S, nullptr);
        }
      });
    }
    const Shape score_shape{B, Hq, L, S};
    if (score_mod_) ONYX_RETURN_IF_ERROR(apply_mod(ctx, "score_mod", scores, score_shape, softmax_type));
    parallel_for(ctx.thread_pool(), B * Hq * L, static_cast<double>(S * 4), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) attention::softmax_row(&scores[static_cast<size_t>(row * S)], S);
    });
    if (prob_mod_) ONYX_RETURN_IF_ERROR(apply_mod(ctx, "prob_mod", scores, score_shape, softmax_type));
    std::vector<C> y(static_cast<size_t>(B * Hq * L * Dv), C(0));
    if (S > 0 && L > 0) {
      parallel_for(ctx.thread_pool(), B * Hq, static_cast<double>(L * S * Dv), [&](int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
          const int64_t b = item / Hq, kvh = (item % Hq) / group;
          gemm<C>(false, false, L, Dv, S, C(1), &scores[static_cast<size_t>(item * L * S)], S,
                  &v[static_cast<size_t>((b * Hkv + kvh) * S * Dv)], Dv, C(0), &y[static_cast<size_t>(item * L * Dv)], Dv, nullptr);
        }
      });
    }
    Tensor& out = ctx.allocate_output(0, q_in.dtype(), {B, Hq, L, Dv});
    store_floats(y.data(), static_cast<int64_t>(y.size()), out);
    return Status::ok();
  }

  bool has_scale_;
  float scale_;
  int64_t precision_;
  bool score_mod_, prob_mod_;
};

ONYX_REGISTER_CPU_KERNEL("ai.onnx.preview", "FlexAttention", 1, kLatestVersion, types::floats(), FlexAttentionKernel);

}  // namespace
}  // namespace onyx::cpu
