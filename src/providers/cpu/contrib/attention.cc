// com.microsoft Attention (onnxruntime's fused BERT/GPT attention): one input
// projection to Q, K, V (weights packed for the SGEMM once when constant),
// then multi-head scaled dot-product attention with a key mask (mask_index in
// its 1-D, 2-D, 3-D and 4-D forms), causal masking, past key/values and an
// additive attention_bias broadcast over batch and heads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "providers/cpu/attention/attention_core.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using attention::HeadView;

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
    if (info.attr_int("past_present_share_buffer", 0) != 0) {
      throw Error(not_implemented(info.label(), ": past_present_share_buffer is not supported"));
    }
    // Constant weights (what fused models have) are packed for the SGEMM here, once.
    const Tensor* w = info.constant_input(1);
    if (w != nullptr && w->dtype() == DataType::kFloat && w->rank() == 2 && w->size() > 0) {
      packed_weights_ = pack_b(false, w->dim(0), w->dim(1), w->data<float>(), w->dim(1));
      packed_shape_ = w->shape();
    }
  }

  Status compute(KernelContext& ctx) const override {
    auto in = [&](size_t i) { return ctx.input_count() > i ? ctx.input_tensor(i) : nullptr; };
    const Tensor* input = in(0);
    const Tensor* weights = in(1);
    const Tensor* bias = in(2);
    const Tensor* mask = in(3);
    const Tensor* past = in(4);
    const Tensor* attn_bias = in(5);
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
    if (qh <= 0 || vh <= 0 || qh + kh + vh != total || qh != kh || qh % num_heads_ != 0 || vh % num_heads_ != 0) {
      return invalid_argument(ctx.label(), ": weights has ", total, " columns, which does not split into q, k, v hidden sizes divisible by num_heads ", num_heads_);
    }
    if (bias != nullptr && (bias->dtype() != DataType::kFloat || bias->size() != total)) {
      return invalid_argument(ctx.label(), ": input bias is ", bias->describe(), ", expected float[", total, "]");
    }
    const int64_t heads = num_heads_, hd = qh / heads, vd = vh / heads;
    int64_t past_len = 0;
    if (past != nullptr) {
      if (past->dtype() != DataType::kFloat || past->rank() != 5 || past->dim(0) != 2 || past->dim(1) != batch || past->dim(2) != heads ||
          past->dim(4) != hd || qh != vh) {
        return invalid_argument(ctx.label(), ": input past is ", past->describe(), ", expected float[2, ", batch, ", ", heads,
                                ", past_sequence, ", hd, "] (and equal q and v hidden sizes)");
      }
      past_len = past->dim(3);
    }
    const int64_t kv_len = past_len + seq;
    // mask_index: end positions [batch] (or [3 * batch + 2], whose first batch
    // values are those), end and start positions [2 * batch], or 0/1 per key
    // [batch, kv], per query and key [batch, seq, kv], or a [batch, 1, max,
    // max] 0/1 matrix (max >= kv) read at rows past..past+seq.
    enum class MaskKind { kNone, kEnd, kStartEnd, kRaw2D, kRaw3D, kRaw4D } mask_kind = MaskKind::kNone;
    if (mask != nullptr) {
      if (mask->dtype() != DataType::kInt32) {
        return invalid_argument(ctx.label(), ": input mask_index has type ", dtype_name(mask->dtype()), ", expected int32");
      }
      if (mask->rank() == 1 && (mask->dim(0) == batch || mask->dim(0) == 3 * batch + 2)) mask_kind = MaskKind::kEnd;
      else if (mask->rank() == 1 && mask->dim(0) == 2 * batch) mask_kind = MaskKind::kStartEnd;
      else if (mask->rank() == 2 && mask->dim(0) == batch && mask->dim(1) == kv_len) mask_kind = MaskKind::kRaw2D;
      else if (mask->rank() == 3 && mask->dim(0) == batch && mask->dim(1) == seq && mask->dim(2) == kv_len) mask_kind = MaskKind::kRaw3D;
      else if (mask->rank() == 4 && mask->dim(0) == batch && mask->dim(1) == 1 && mask->dim(2) == mask->dim(3) && mask->dim(2) >= kv_len) {
        mask_kind = MaskKind::kRaw4D;
      } else {
        return invalid_argument(ctx.label(), ": input mask_index is ", mask->describe(), ", expected [", batch, "], [", 2 * batch, "], [",
                                3 * batch + 2, "], [", batch, ", ", kv_len, "], [", batch, ", ", seq, ", ", kv_len, "] or [", batch,
                                ", 1, max_sequence >= ", kv_len, ", max_sequence]");
      }
    }
    if (attn_bias != nullptr) {
      if (attn_bias->rank() != 4 || (attn_bias->dim(0) != batch && attn_bias->dim(0) != 1) ||
          (attn_bias->dim(1) != heads && attn_bias->dim(1) != 1) || attn_bias->dim(2) != seq || attn_bias->dim(3) != kv_len ||
          attn_bias->dtype() != DataType::kFloat) {
        return invalid_argument(ctx.label(), ": input attention_bias is ", attn_bias->describe(), ", expected float[", batch, " or 1, ",
                                heads, " or 1, ", seq, ", ", kv_len, "]");
      }
    }

    // QKV projection: [batch * seq, total] = input * weights + bias, one SGEMM
    // with the bias added in its write-back.
    const int64_t rows = batch * seq;
    std::vector<float> qkv(static_cast<size_t>(rows * total));
    GemmEpilogue projection_bias;
    projection_bias.col_bias = bias ? bias->data<float>() : nullptr;
    if (!packed_weights_.empty() && weights->shape() == packed_shape_) {
      sgemm_packed_b(false, rows, 1.0f, input->data<float>(), in_hidden, packed_weights_, 0.0f, qkv.data(), total, ctx.thread_pool(),
                     projection_bias);
    } else {
      sgemm(false, false, rows, total, in_hidden, 1.0f, input->data<float>(), in_hidden, weights->data<float>(), total, 0.0f, qkv.data(),
            total, ctx.thread_pool(), projection_bias);
    }

    Tensor& y = ctx.allocate_output(0, DataType::kFloat, {batch, seq, vh});
    const bool want_present = ctx.output_count() > 1 && ctx.output_requested(1);
    if (want_present && vd != hd) {
      return invalid_argument(ctx.label(), ": output present needs equal q and v head sizes, got ", hd, " and ", vd);
    }

    attention::ScaledDotProduct sdp;
    sdp.batch = batch;
    sdp.heads = heads;
    sdp.q_len = seq;
    sdp.kv_len = kv_len;
    sdp.head_size = hd;
    sdp.v_head_size = vd;
    sdp.scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(hd));
    // Q, K and V are read in place from the projection: head n of row s is
    // columns [n * hd, (n + 1) * hd) of its part.
    sdp.q = {qkv.data(), seq * total, hd, total};
    const HeadView<const float> new_keys{qkv.data() + qh, seq * total, hd, total};
    const HeadView<const float> new_values{qkv.data() + qh + kh, seq * total, vd, total};
    // With past keys and values, each head's rows are past then new: built in
    // the present output when it is requested, else in a local buffer.
    std::vector<float> kv_buffer;
    if (past_len > 0 || want_present) {
      float* present = nullptr;
      if (want_present) {
        present = ctx.allocate_output(1, DataType::kFloat, {2, batch, heads, kv_len, hd}).data<float>();
      } else {
        kv_buffer.resize(static_cast<size_t>(2 * batch * heads * kv_len * hd));
        present = kv_buffer.data();
      }
      const auto keys = attention::contiguous_heads(present, heads, kv_len, hd);
      const auto values = attention::contiguous_heads(present + batch * heads * kv_len * hd, heads, kv_len, hd);
      if (past_len > 0) {
        const float* pp = past->data<float>();
        attention::copy_heads(attention::contiguous_heads(pp, heads, past_len, hd), nullptr, batch, heads, past_len, hd, keys, 0);
        attention::copy_heads(attention::contiguous_heads(pp + batch * heads * past_len * hd, heads, past_len, hd), nullptr, batch, heads,
                              past_len, hd, values, 0);
      }
      attention::copy_heads(new_keys, nullptr, batch, heads, seq, hd, keys, past_len);
      attention::copy_heads(new_values, nullptr, batch, heads, seq, vd, values, past_len);
      sdp.k = {keys.data, keys.batch_stride, keys.head_stride, keys.row_stride};
      sdp.v = {values.data, values.batch_stride, values.head_stride, values.row_stride};
    } else {
      sdp.k = new_keys;
      sdp.v = new_values;
    }
    sdp.out = attention::interleaved_heads(y.data<float>(), heads, seq, vd);

    // The key mask as one additive row per batch where it does not depend on
    // the query (the 1-D and 2-D forms).
    const int32_t* pm = mask ? mask->data<int32_t>() : nullptr;
    const float filter = mask_filter_value_;
    std::vector<float> key_bias;
    if (mask_kind == MaskKind::kEnd || mask_kind == MaskKind::kStartEnd || mask_kind == MaskKind::kRaw2D) {
      key_bias.assign(static_cast<size_t>(batch * kv_len), 0.0f);
      for (int64_t b = 0; b < batch; ++b) {
        float* kb = key_bias.data() + b * kv_len;
        for (int64_t j = 0; j < kv_len; ++j) {
          bool masked = false;
          if (mask_kind == MaskKind::kRaw2D) masked = pm[b * kv_len + j] <= 0;
          else masked = j >= pm[b] || (mask_kind == MaskKind::kStartEnd && j < pm[batch + b]);
          kb[j] = masked ? filter : 0.0f;
        }
      }
    }
    const float* pab = attn_bias ? attn_bias->data<float>() : nullptr;
    const int64_t ab_batch = attn_bias && attn_bias->dim(0) != 1 ? attn_bias->dim(1) * seq * kv_len : 0;
    const int64_t ab_head = attn_bias && attn_bias->dim(1) != 1 ? seq * kv_len : 0;
    const int64_t max_len = mask_kind == MaskKind::kRaw4D ? mask->dim(2) : 0;
    const bool causal = unidirectional_;
    if (mask_kind != MaskKind::kNone || pab != nullptr || causal) {
      sdp.adjust_row = [&](int64_t b, int64_t n, int64_t i, float* row) {
        if (!key_bias.empty()) {
          const float* kb = key_bias.data() + b * kv_len;
          for (int64_t j = 0; j < kv_len; ++j) row[j] += kb[j];
        } else if (mask_kind == MaskKind::kRaw3D || mask_kind == MaskKind::kRaw4D) {
          const int32_t* mr = mask_kind == MaskKind::kRaw3D ? pm + (b * seq + i) * kv_len : pm + (b * max_len + past_len + i) * max_len;
          for (int64_t j = 0; j < kv_len; ++j) row[j] += mr[j] > 0 ? 0.0f : filter;
        }
        // Future keys are excluded outright (not by mask_filter_value), so a
        // row whose past keys are all padded still attends to them only.
        if (causal) std::fill(row + std::min(kv_len, past_len + i + 1), row + kv_len, -std::numeric_limits<float>::infinity());
        if (pab != nullptr) {
          const float* abi = pab + b * ab_batch + n * ab_head + i * kv_len;
          for (int64_t j = 0; j < kv_len; ++j) row[j] += abi[j];
        }
      };
    }
    attention::run_scaled_dot_product(sdp, ctx.thread_pool());
    return Status::ok();
  }

  // With the weights packed, compute() reads only their shape.
  bool needs_constant_data(size_t i) const override { return i != 1 || packed_weights_.empty(); }

 private:
  int64_t num_heads_ = 0;
  bool unidirectional_ = false;
  std::vector<int64_t> qkv_sizes_;
  float mask_filter_value_ = -10000.0f;
  float scale_ = 0.0f;
  PackedMatrix packed_weights_;  // weights packed at creation when constant
  Shape packed_shape_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "Attention", 1, kLatestVersion, {DataType::kFloat}, AttentionKernel);

}  // namespace
}  // namespace onyx::cpu
