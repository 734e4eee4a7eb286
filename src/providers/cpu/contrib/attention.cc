// com.microsoft Attention (onnxruntime's fused BERT/GPT attention): one input
// projection to Q, K, V, multi-head scaled dot-product attention with an
// optional key mask, causal mask, past key/values and additive bias.
#include <algorithm>
#include <cmath>
#include <vector>

#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/math/fast_math.h"
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

    // QKV projection: [batch * seq, total] = input * weights + bias, one SGEMM
    // with the bias added in its write-back.
    const int64_t rows = batch * seq;
    std::vector<float> qkv(static_cast<size_t>(rows * total));
    GemmEpilogue projection_bias;
    projection_bias.col_bias = bias ? bias->data<float>() : nullptr;
    sgemm(false, false, rows, total, in_hidden, 1.0f, input->data<float>(), in_hidden, weights->data<float>(), total, 0.0f, qkv.data(),
          total, ctx.thread_pool(), projection_bias);

    Tensor& y = ctx.allocate_output(0, DataType::kFloat, {batch, seq, vh});
    float* present = nullptr;
    if (ctx.output_count() > 1 && ctx.output_requested(1)) {
      if (vd != hd) {
        return invalid_argument(ctx.label(), ": output present needs equal q and v head sizes, got ", hd, " and ", vd);
      }
      present = ctx.allocate_output(1, DataType::kFloat, {2, batch, heads, kv_len, hd}).data<float>();
    }
    const float scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(hd));
    const float* ppast = past ? past->data<float>() : nullptr;
    const int32_t* pm = mask ? mask->data<int32_t>() : nullptr;
    float* py = y.data<float>();
    const float* pab = attn_bias ? attn_bias->data<float>() : nullptr;
    parallel_for(ctx.thread_pool(), batch * heads, static_cast<double>(seq * kv_len * (hd + vd)), [&](int64_t begin, int64_t end) {
      std::vector<float> keys(static_cast<size_t>(kv_len * hd)), values(static_cast<size_t>(kv_len * vd));
      std::vector<float> scores(static_cast<size_t>(seq * kv_len));
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
        // scores = scale * Q K^T, masked row by row, softmax, then out = P V;
        // the products run single-threaded inside this parallel loop.
        sgemm(false, true, seq, kv_len, hd, scale, qkv.data() + b * seq * total + h * hd, total, keys.data(), hd, 0.0f, scores.data(),
              kv_len, nullptr);
        for (int64_t i = 0; i < seq; ++i) {
          float* row = scores.data() + i * kv_len;
          switch (mask_kind) {
            case MaskKind::kNone: break;
            case MaskKind::kEnd:
              for (int64_t j = std::max<int64_t>(0, pm[b]); j < kv_len; ++j) row[j] += mask_filter_value_;
              break;
            case MaskKind::kStartEnd:
              for (int64_t j = 0; j < kv_len; ++j) row[j] += (j >= pm[b] || j < pm[batch + b]) ? mask_filter_value_ : 0.0f;
              break;
            case MaskKind::kRaw2D:
              for (int64_t j = 0; j < kv_len; ++j) row[j] += pm[b * kv_len + j] == 0 ? mask_filter_value_ : 0.0f;
              break;
            case MaskKind::kRaw3D:
              for (int64_t j = 0; j < kv_len; ++j) row[j] += pm[(b * seq + i) * kv_len + j] == 0 ? mask_filter_value_ : 0.0f;
              break;
          }
          // onnxruntime excludes future keys outright (not by mask_filter_value), so a
          // row whose past keys are all padded still attends to them only.
          if (unidirectional_) {
            for (int64_t j = std::max<int64_t>(0, past_len + i + 1); j < kv_len; ++j) row[j] = -INFINITY;
          }
          if (pab != nullptr) {
            const float* abi = pab + (((attn_bias->dim(0) == 1 ? 0 : b) * heads + h) * seq + i) * kv_len;
            for (int64_t j = 0; j < kv_len; ++j) row[j] += abi[j];
          }
          const float peak = max_array(row, kv_len);
          const float sum = fast_exp_shifted_sum(row, peak, row, kv_len);
          scale_array(row, 1.0f / sum, kv_len);
        }
        sgemm(false, false, seq, vd, kv_len, 1.0f, scores.data(), kv_len, values.data(), vd, 0.0f, py + b * seq * vh + h * vd, vh,
              nullptr);
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
