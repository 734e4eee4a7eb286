// com.microsoft Attention (onnxruntime's fused BERT/GPT attention): one input
// projection to Q, K, V, multi-head scaled dot-product attention with an
// optional key mask, causal mask, past key/values and additive bias.
#include <algorithm>
#include <cmath>
#include <vector>

#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class AttentionKernel final : public Kernel {
 public:
  explicit AttentionKernel(const KernelInfo& info) {
    num_heads_ = info.attr_int("num_heads", 0);
    unidirectional_ = info.attr_int("unidirectional", 0) != 0;
    qkv_sizes_ = info.attr_ints("qkv_hidden_sizes");
    mask_filter_value_ = info.attr_float("mask_filter_value", -10000.0f);
    scale_ = info.attr_float("scale", 0.0f);
    if (num_heads_ <= 0) throw Error(invalid_model(info.label(), ": attribute num_heads must be positive"));
    if (!qkv_sizes_.empty() && qkv_sizes_.size() != 3) {
      throw Error(invalid_model(info.label(), ": attribute qkv_hidden_sizes has ", qkv_sizes_.size(), " values, expected 3"));
    }
    if (info.attr_int("do_rotary", 0) != 0) throw Error(not_implemented(info.label(), ": do_rotary is not supported"));
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* input = ctx.input_tensor(0);
    const Tensor* weights = ctx.input_tensor(1);
    const Tensor* bias = ctx.input_tensor(2);
    const Tensor* mask = ctx.input_count() > 3 ? ctx.input_tensor(3) : nullptr;
    const Tensor* past = ctx.input_count() > 4 ? ctx.input_tensor(4) : nullptr;
    const Tensor* attn_bias = ctx.input_count() > 5 ? ctx.input_tensor(5) : nullptr;
    if (input == nullptr || input->rank() != 3 || input->dtype() != DataType::kFloat) {
      return invalid_argument(ctx.label(), ": input is ", input ? input->describe() : std::string("missing"),
                              ", expected float[batch, sequence, input_hidden]");
    }
    const int64_t batch = input->dim(0), seq = input->dim(1), in_hidden = input->dim(2);
    if (weights == nullptr || weights->rank() != 2 || weights->dtype() != DataType::kFloat || weights->dim(0) != in_hidden) {
      return invalid_argument(ctx.label(), ": input weights is ", weights ? weights->describe() : std::string("missing"),
                              ", expected float[", in_hidden, ", 3 * hidden]");
    }
    const int64_t total = weights->dim(1);
    int64_t qh = total / 3, kh = total / 3, vh = total / 3;
    if (!qkv_sizes_.empty()) {
      qh = qkv_sizes_[0];
      kh = qkv_sizes_[1];
      vh = qkv_sizes_[2];
    }
    if (qh + kh + vh != total || qh != kh || qh % num_heads_ != 0 || vh % num_heads_ != 0) {
      return invalid_argument(ctx.label(), ": weights has ", total, " columns, which does not split into q, k, v hidden sizes divisible by num_heads ", num_heads_);
    }
    if (bias != nullptr && (bias->dtype() != DataType::kFloat || bias->size() != total)) {
      return invalid_argument(ctx.label(), ": input bias is ", bias->describe(), ", expected float[", total, "]");
    }
    const int64_t heads = num_heads_, hd = qh / heads, vd = vh / heads;
    int64_t past_len = 0;
    if (past != nullptr) {
      if (past->rank() != 5 || past->dim(0) != 2 || past->dim(1) != batch || past->dim(2) != heads || past->dim(4) != hd || qh != vh) {
        return invalid_argument(ctx.label(), ": input past is ", past->describe(), ", expected [2, ", batch, ", ", heads, ", past_sequence, ", hd, "]");
      }
      past_len = past->dim(3);
    }
    const int64_t kv_len = past_len + seq;
    // Key mask as an additive bias per (batch, query, key).
    enum class MaskKind { kNone, kEnd, kStartEnd, kRaw2D, kRaw3D } mask_kind = MaskKind::kNone;
    if (mask != nullptr) {
      if (mask->dtype() != DataType::kInt32) {
        return invalid_argument(ctx.label(), ": input mask_index has type ", dtype_name(mask->dtype()), ", expected int32");
      }
      if (mask->rank() == 1 && mask->dim(0) == batch) mask_kind = MaskKind::kEnd;
      else if (mask->rank() == 1 && mask->dim(0) == 2 * batch) mask_kind = MaskKind::kStartEnd;
      else if (mask->rank() == 2 && mask->dim(0) == batch && mask->dim(1) == kv_len) mask_kind = MaskKind::kRaw2D;
      else if (mask->rank() == 3 && mask->dim(0) == batch && mask->dim(1) == seq && mask->dim(2) == kv_len) mask_kind = MaskKind::kRaw3D;
      else return invalid_argument(ctx.label(), ": input mask_index is ", mask->describe(), ", expected [", batch, "], [", 2 * batch,
                                   "], [", batch, ", ", kv_len, "] or [", batch, ", ", seq, ", ", kv_len, "]");
    }
    if (attn_bias != nullptr) {
      if (attn_bias->rank() != 4 || (attn_bias->dim(0) != batch && attn_bias->dim(0) != 1) || attn_bias->dim(1) != heads ||
          attn_bias->dim(2) != seq || attn_bias->dim(3) != kv_len || attn_bias->dtype() != DataType::kFloat) {
        return invalid_argument(ctx.label(), ": input attention_bias is ", attn_bias->describe(), ", expected float[", batch, " or 1, ",
                                heads, ", ", seq, ", ", kv_len, "]");
      }
    }

    // QKV projection: [batch * seq, total].
    const int64_t rows = batch * seq;
    std::vector<float> qkv(static_cast<size_t>(rows * total));
    const float* px = input->data<float>();
    const float* pw = weights->data<float>();
    parallel_for(ctx.thread_pool(), rows, static_cast<double>(in_hidden * total), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        float* out = qkv.data() + r * total;
        for (int64_t c = 0; c < total; ++c) out[c] = bias ? bias->data<float>()[c] : 0.0f;
        for (int64_t p = 0; p < in_hidden; ++p) {
          const float xv = px[r * in_hidden + p];
          const float* wrow = pw + p * total;
          for (int64_t c = 0; c < total; ++c) out[c] += xv * wrow[c];
        }
      }
    });

    Tensor& y = ctx.allocate_output(0, DataType::kFloat, {batch, seq, vh});
    float* present = nullptr;
    if (ctx.output_count() > 1 && ctx.output_requested(1)) {
      present = ctx.allocate_output(1, DataType::kFloat, {2, batch, heads, kv_len, hd}).data<float>();
    }
    const float scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(hd));
    const float* ppast = past ? past->data<float>() : nullptr;
    const int32_t* pm = mask ? mask->data<int32_t>() : nullptr;
    float* py = y.data<float>();
    parallel_for(ctx.thread_pool(), batch * heads, static_cast<double>(seq * kv_len * (hd + vd)), [&](int64_t begin, int64_t end) {
      std::vector<float> keys(static_cast<size_t>(kv_len * hd)), values(static_cast<size_t>(kv_len * vd));
      std::vector<float> scores(static_cast<size_t>(kv_len));
      for (int64_t bh = begin; bh < end; ++bh) {
        const int64_t b = bh / heads, h = bh % heads;
        // Gather this head's keys and values: past first, then the new ones.
        for (int64_t j = 0; j < kv_len; ++j) {
          for (int64_t d = 0; d < hd; ++d) {
            keys[static_cast<size_t>(j * hd + d)] =
                j < past_len ? ppast[((b * heads + h) * past_len + j) * hd + d]
                             : qkv[static_cast<size_t>((b * seq + j - past_len) * total + qh + h * hd + d)];
          }
          for (int64_t d = 0; d < vd; ++d) {
            values[static_cast<size_t>(j * vd + d)] =
                j < past_len ? ppast[(((batch + b) * heads + h) * past_len + j) * vd + d]
                             : qkv[static_cast<size_t>((b * seq + j - past_len) * total + qh + kh + h * vd + d)];
          }
        }
        if (present) {
          for (int64_t j = 0; j < kv_len; ++j) {
            for (int64_t d = 0; d < hd; ++d) present[((b * heads + h) * kv_len + j) * hd + d] = keys[static_cast<size_t>(j * hd + d)];
            for (int64_t d = 0; d < vd; ++d) present[(((batch + b) * heads + h) * kv_len + j) * hd + d] = values[static_cast<size_t>(j * vd + d)];
          }
        }
        for (int64_t i = 0; i < seq; ++i) {
          const float* q = qkv.data() + (b * seq + i) * total + h * hd;
          float peak = -INFINITY;
          for (int64_t j = 0; j < kv_len; ++j) {
            float s = 0;
            for (int64_t d = 0; d < hd; ++d) s += q[d] * keys[static_cast<size_t>(j * hd + d)];
            s *= scale;
            bool masked = false;
            switch (mask_kind) {
              case MaskKind::kNone: break;
              case MaskKind::kEnd: masked = j >= pm[b]; break;
              case MaskKind::kStartEnd: masked = j >= pm[b] || j < pm[batch + b]; break;
              case MaskKind::kRaw2D: masked = pm[b * kv_len + j] == 0; break;
              case MaskKind::kRaw3D: masked = pm[(b * seq + i) * kv_len + j] == 0; break;
            }
            if (masked) s += mask_filter_value_;
            // onnxruntime excludes future keys outright (not by mask_filter_value), so a
            // row whose past keys are all padded still attends to them only.
            if (unidirectional_ && j > past_len + i) s = -INFINITY;
            if (attn_bias) s += attn_bias->data<float>()[(((attn_bias->dim(0) == 1 ? 0 : b) * heads + h) * seq + i) * kv_len + j];
            scores[static_cast<size_t>(j)] = s;
            peak = std::max(peak, s);
          }
          float sum = 0;
          for (int64_t j = 0; j < kv_len; ++j) {
            scores[static_cast<size_t>(j)] = std::exp(scores[static_cast<size_t>(j)] - peak);
            sum += scores[static_cast<size_t>(j)];
          }
          float* out = py + (b * seq + i) * vh + h * vd;
          for (int64_t d = 0; d < vd; ++d) out[d] = 0;
          for (int64_t j = 0; j < kv_len; ++j) {
            const float p = scores[static_cast<size_t>(j)] / sum;
            for (int64_t d = 0; d < vd; ++d) out[d] += p * values[static_cast<size_t>(j * vd + d)];
          }
        }
      }
    });
    return Status::ok();
  }

 private:
  int64_t num_heads_ = 0;
  bool unidirectional_ = false;
  std::vector<int64_t> qkv_sizes_;
  float mask_filter_value_ = -10000.0f;
  float scale_ = 0.0f;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "Attention", 1, kLatestVersion, {DataType::kFloat}, AttentionKernel);

}  // namespace
}  // namespace onyx::cpu
