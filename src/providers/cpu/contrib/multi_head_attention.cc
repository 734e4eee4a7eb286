// com.microsoft MultiHeadAttention: scaled dot-product attention over num_heads
// heads of already projected Q, K, V (separate; packed QKV; packed KV; or K/V
// given per head as (batch, heads, kv_seq, head_size)), with the projection bias,
// a key padding mask, an additive attention bias, past key/value with present
// outputs, causal masking and the pre-softmax scores as the optional 4th output.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "providers/cpu/attention/attention_core.h"
#include "providers/cpu/contrib/float_io.h"
#include "providers/cpu/tensor/tensor_util.h"

namespace onyx::cpu {
namespace {

class MultiHeadAttentionKernel final : public Kernel {
 public:
  explicit MultiHeadAttentionKernel(const KernelInfo& info)
      : num_heads_(info.attr_int("num_heads", 0)),
        unidirectional_(info.attr_int("unidirectional", 0) != 0),
        scale_(info.attr_float("scale", 0.0f)),
        mask_filter_value_(info.attr_float("mask_filter_value", -10000.0f)) {
    if (num_heads_ <= 0) throw Error(invalid_model(info.label(), ": attribute num_heads must be positive, got ", num_heads_));
  }

  Status compute(KernelContext& ctx) const override {
    auto in = [&](size_t i) { return ctx.input_count() > i ? ctx.input_tensor(i) : nullptr; };
    const Tensor* query = in(0);
    const Tensor* key = in(1);
    const Tensor* value = in(2);
    const Tensor* bias = in(3);
    const Tensor* mask = in(4);
    const Tensor* attn_bias = in(5);
    const Tensor* past_key = in(6);
    const Tensor* past_value = in(7);
    if (in(8) != nullptr || in(9) != nullptr) {
      return not_implemented(ctx.label(), ": inputs past_sequence_length and cache_indirection (shared KV buffers, beam search) are not supported");
    }
    if (query == nullptr || !is_float_type(query->dtype())) {
      return invalid_argument(ctx.label(), ": input query is ", describe_or_missing(query), ", expected a float tensor");
    }
    const DataType dtype = query->dtype();
    const std::initializer_list<std::pair<const Tensor*, const char*>> float_inputs = {
        {key, "key"}, {value, "value"}, {bias, "bias"}, {attn_bias, "attention_bias"}, {past_key, "past_key"}, {past_value, "past_value"}};
    for (const auto& [t, name] : float_inputs) {
      if (t != nullptr && t->dtype() != dtype) {
        return invalid_argument(ctx.label(), ": input ", name, " has type ", dtype_name(t->dtype()), ", expected ", dtype_name(dtype),
                                " like query");
      }
    }
    const int64_t heads = num_heads_;

    // Work out the layout: batch, query length, kv length, head sizes.
    enum class Layout { kSeparate, kPackedQkv, kPackedKv, kKvPerHead } layout;
    int64_t batch = 0, q_len = 0, kv_len = 0, head = 0, v_head = 0;
    if (query->rank() == 5) {
      if (query->dim(2) != heads || query->dim(3) != 3 || key != nullptr || value != nullptr) {
        return invalid_argument(ctx.label(), ": input query is ", query->describe(), ", expected packed QKV [batch, sequence, ", heads,
                                ", 3, head_size] with key and value omitted");
      }
      layout = Layout::kPackedQkv;
      batch = query->dim(0);
      q_len = kv_len = query->dim(1);
      head = v_head = query->dim(4);
    } else if (query->rank() == 3) {
      batch = query->dim(0);
      q_len = query->dim(1);
      if (query->dim(2) % heads != 0) {
        return invalid_argument(ctx.label(), ": input query is ", query->describe(), ": hidden size ", query->dim(2),
                                " is not divisible by num_heads ", heads);
      }
      head = query->dim(2) / heads;
      if (key == nullptr) return invalid_argument(ctx.label(), ": input key is missing (query is not packed QKV)");
      if (key->rank() == 5) {
        if (key->dim(0) != batch || key->dim(2) != heads || key->dim(3) != 2 || key->dim(4) != head || value != nullptr) {
          return invalid_argument(ctx.label(), ": input key is ", key->describe(), ", expected packed KV [", batch, ", kv_sequence, ",
                                  heads, ", 2, ", head, "] with value omitted");
        }
        layout = Layout::kPackedKv;
        kv_len = key->dim(1);
        v_head = head;
      } else if (key->rank() == 4) {
        if (key->dim(0) != batch || key->dim(1) != heads || key->dim(3) != head || value == nullptr || value->rank() != 4 ||
            value->dim(0) != batch || value->dim(1) != heads || value->dim(2) != key->dim(2)) {
          return invalid_argument(ctx.label(), ": inputs key ", key->describe(), " and value ", describe_or_missing(value),
                                  ", expected [", batch, ", ", heads, ", kv_sequence, ", head, "] and [", batch, ", ", heads,
                                  ", kv_sequence, v_head_size]");
        }
        if (past_key != nullptr || past_value != nullptr) {
          return invalid_argument(ctx.label(), ": past_key/past_value cannot be given with key and value in [batch, heads, kv_sequence, head_size] form");
        }
        layout = Layout::kKvPerHead;
        kv_len = key->dim(2);
        v_head = value->dim(3);
      } else if (key->rank() == 3) {
        if (key->dim(0) != batch || key->dim(2) != heads * head || value == nullptr || value->rank() != 3 ||
            value->dim(0) != batch || value->dim(1) != key->dim(1) || value->dim(2) % heads != 0) {
          return invalid_argument(ctx.label(), ": inputs key ", key->describe(), " and value ", describe_or_missing(value),
                                  ", expected [", batch, ", kv_sequence, ", heads * head, "] and [", batch,
                                  ", kv_sequence, v_hidden] with v_hidden divisible by num_heads ", heads);
        }
        layout = Layout::kSeparate;
        kv_len = key->dim(1);
        v_head = value->dim(2) / heads;
      } else {
        return invalid_argument(ctx.label(), ": input key has rank ", key->rank(), ", expected 3, 4 or 5");
      }
    } else {
      return invalid_argument(ctx.label(), ": input query has rank ", query->rank(), ", expected 3 [batch, sequence, hidden] or 5 (packed QKV)");
    }
    const int64_t hidden = heads * head, v_hidden = heads * v_head;
    if (bias != nullptr && (bias->rank() != 1 || bias->dim(0) != 2 * hidden + v_hidden)) {
      return invalid_argument(ctx.label(), ": input bias is ", bias->describe(), ", expected [", 2 * hidden + v_hidden, "] (q, k and v biases)");
    }
    int64_t past_len = 0;
    if ((past_key == nullptr) != (past_value == nullptr)) {
      return invalid_argument(ctx.label(), ": past_key and past_value must be given together");
    }
    if (past_key != nullptr) {
      if (past_key->rank() != 4 || past_key->dim(0) != batch || past_key->dim(1) != heads || past_key->dim(3) != head ||
          past_value->rank() != 4 || past_value->dim(0) != batch || past_value->dim(1) != heads ||
          past_value->dim(2) != past_key->dim(2) || past_value->dim(3) != v_head) {
        return invalid_argument(ctx.label(), ": inputs past_key ", past_key->describe(), " and past_value ", past_value->describe(),
                                ", expected [", batch, ", ", heads, ", past_sequence, ", head, "] and [", batch, ", ", heads,
                                ", past_sequence, ", v_head, "]");
      }
      past_len = past_key->dim(2);
    }
    const int64_t total = past_len + kv_len;

    // Key padding mask: key lengths [batch] (or the [3 * batch + 2] form whose
    // first batch values are the lengths), or 0/1 per key [batch, total] or per
    // query and key [batch, sequence, total].
    enum class MaskKind { kNone, kLengths, kKeys, kQueryKeys } mask_kind = MaskKind::kNone;
    if (mask != nullptr) {
      if (mask->dtype() != DataType::kInt32) {
        return invalid_argument(ctx.label(), ": input key_padding_mask has type ", dtype_name(mask->dtype()), ", expected int32");
      }
      if (mask->rank() == 1 && (mask->dim(0) == batch || mask->dim(0) == 3 * batch + 2)) mask_kind = MaskKind::kLengths;
      else if (mask->rank() == 2 && mask->dim(0) == batch && mask->dim(1) == total) mask_kind = MaskKind::kKeys;
      else if (mask->rank() == 3 && mask->dim(0) == batch && mask->dim(1) == q_len && mask->dim(2) == total) mask_kind = MaskKind::kQueryKeys;
      else {
        return invalid_argument(ctx.label(), ": input key_padding_mask is ", mask->describe(), ", expected [", batch, "], [",
                                3 * batch + 2, "], [", batch, ", ", total, "] or [", batch, ", ", q_len, ", ", total, "]");
      }
    }
    if (attn_bias != nullptr &&
        (attn_bias->rank() != 4 || (attn_bias->dim(0) != batch && attn_bias->dim(0) != 1) ||
         (attn_bias->dim(1) != heads && attn_bias->dim(1) != 1) || attn_bias->dim(2) != q_len || attn_bias->dim(3) != total)) {
      return invalid_argument(ctx.label(), ": input attention_bias is ", attn_bias->describe(), ", expected [", batch, " or 1, ", heads,
                              " or 1, ", q_len, ", ", total, "]");
    }

    // Q, K and V are read in place where they can be (float inputs without
    // bias, no past); otherwise copied per head with the bias added, K and V
    // after their past rows, into the present outputs when those are asked for.
    std::vector<float> qf, kf, vf;  // float copies of non-float inputs
    auto floats_of = [&](const Tensor* t, std::vector<float>& converted) -> const float* {
      if (t == nullptr) return nullptr;
      if (t->dtype() == DataType::kFloat) return t->data<float>();
      converted = read_floats(*t);
      return converted.data();
    };
    const float* pq = floats_of(query, qf);
    const float* pk = floats_of(key, kf);
    const float* pv = floats_of(value, vf);
    std::vector<float> bias_f;
    const float* pb = floats_of(bias, bias_f);
    using attention::HeadView;
    HeadView<const float> q_view, k_view, v_view;
    switch (layout) {
      case Layout::kPackedQkv:  // [batch, sequence, heads, 3, head]
        q_view = {pq, q_len * heads * 3 * head, 3 * head, heads * 3 * head};
        k_view = {pq + head, q_view.batch_stride, q_view.head_stride, q_view.row_stride};
        v_view = {pq + 2 * head, q_view.batch_stride, q_view.head_stride, q_view.row_stride};
        break;
      case Layout::kPackedKv:  // key [batch, kv_sequence, heads, 2, head]
        q_view = attention::interleaved_heads(pq, heads, q_len, head);
        k_view = {pk, kv_len * heads * 2 * head, 2 * head, heads * 2 * head};
        v_view = {pk + head, k_view.batch_stride, k_view.head_stride, k_view.row_stride};
        break;
      case Layout::kKvPerHead:
        q_view = attention::interleaved_heads(pq, heads, q_len, head);
        k_view = attention::contiguous_heads(pk, heads, kv_len, head);
        v_view = attention::contiguous_heads(pv, heads, kv_len, v_head);
        break;
      case Layout::kSeparate:
        q_view = attention::interleaved_heads(pq, heads, q_len, head);
        k_view = attention::interleaved_heads(pk, heads, kv_len, head);
        v_view = attention::interleaved_heads(pv, heads, kv_len, v_head);
        break;
    }
    // Already projected per head: no bias for K and V (as onnxruntime).
    const bool kv_bias = pb != nullptr && layout != Layout::kKvPerHead;
    std::vector<float> q_buffer;
    if (pb != nullptr) {
      q_buffer.resize(static_cast<size_t>(batch * heads * q_len * head));
      const auto dst = attention::contiguous_heads(q_buffer.data(), heads, q_len, head);
      attention::copy_heads(q_view, pb, batch, heads, q_len, head, dst, 0);
      q_view = {dst.data, dst.batch_stride, dst.head_stride, dst.row_stride};
    }
    const bool want_present_k = ctx.output_count() > 1 && ctx.output_requested(1);
    const bool want_present_v = ctx.output_count() > 2 && ctx.output_requested(2);
    std::vector<float> k_buffer, v_buffer, present_k_f, present_v_f;
    // Builds [batch, heads, total, width] from the past rows and the new ones
    // (bias added): in the present output when float and requested.
    auto gather = [&](const HeadView<const float>& fresh, const float* fresh_bias, const Tensor* past, bool want_present, int out_index,
                      int64_t width, std::vector<float>& local, std::vector<float>& present_float) -> HeadView<const float> {
      const bool needed = fresh_bias != nullptr || past_len > 0 || want_present;
      if (!needed) return fresh;
      float* dst = nullptr;
      if (want_present && dtype == DataType::kFloat) {
        dst = ctx.allocate_output(out_index, dtype, {batch, heads, total, width}).data<float>();
      } else {
        std::vector<float>& storage = want_present ? present_float : local;
        storage.resize(static_cast<size_t>(batch * heads * total * width));
        dst = storage.data();
      }
      const auto view = attention::contiguous_heads(dst, heads, total, width);
      if (past_len > 0) {
        std::vector<float> converted;
        const float* pp = floats_of(past, converted);
        attention::copy_heads(attention::contiguous_heads(pp, heads, past_len, width), nullptr, batch, heads, past_len, width, view, 0);
      }
      attention::copy_heads(fresh, fresh_bias, batch, heads, kv_len, width, view, past_len);
      return {view.data, view.batch_stride, view.head_stride, view.row_stride};
    };
    k_view = gather(k_view, kv_bias ? pb + hidden : nullptr, past_key, want_present_k, 1, head, k_buffer, present_k_f);
    v_view = gather(v_view, kv_bias ? pb + 2 * hidden : nullptr, past_value, want_present_v, 2, v_head, v_buffer, present_v_f);
    if (!present_k_f.empty()) {
      write_floats(ctx.allocate_output(1, dtype, {batch, heads, total, head}), present_k_f.data(), static_cast<int64_t>(present_k_f.size()));
    }
    if (!present_v_f.empty()) {
      write_floats(ctx.allocate_output(2, dtype, {batch, heads, total, v_head}), present_v_f.data(), static_cast<int64_t>(present_v_f.size()));
    }

    Tensor& y = ctx.allocate_output(0, dtype, {batch, q_len, v_hidden});
    std::vector<float> out_f;
    float* py = nullptr;
    if (dtype == DataType::kFloat) {
      py = y.data<float>();
    } else {
      out_f.resize(static_cast<size_t>(batch * q_len * v_hidden));
      py = out_f.data();
    }
    const bool want_qk = ctx.output_count() > 3 && ctx.output_requested(3);
    std::vector<float> qk(want_qk ? static_cast<size_t>(batch * heads * q_len * total) : 0);
    std::vector<float> abf;
    const float* pab = floats_of(attn_bias, abf);
    const int64_t ab_batch = attn_bias && attn_bias->dim(0) != 1 ? attn_bias->dim(1) * q_len * total : 0;
    const int64_t ab_head = attn_bias && attn_bias->dim(1) != 1 ? q_len * total : 0;
    const int32_t* pm = mask ? mask->data<int32_t>() : nullptr;
    const float lowest = std::numeric_limits<float>::lowest();
    const float filter = mask_filter_value_;

    attention::ScaledDotProduct sdp;
    sdp.batch = batch;
    sdp.heads = heads;
    sdp.q_len = q_len;
    sdp.kv_len = total;
    sdp.head_size = head;
    sdp.v_head_size = v_head;
    sdp.scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(head));
    sdp.q = q_view;
    sdp.k = k_view;
    sdp.v = v_view;
    sdp.out = attention::interleaved_heads(py, heads, q_len, v_head);
    sdp.scores_out = want_qk ? qk.data() : nullptr;
    if (mask_kind != MaskKind::kNone || pab != nullptr || unidirectional_) {
      sdp.adjust_row = [&](int64_t b, int64_t n, int64_t i, float* row) {
        switch (mask_kind) {
          case MaskKind::kNone: break;
          case MaskKind::kLengths:
            for (int64_t j = std::max<int64_t>(0, pm[b]); j < total; ++j) row[j] += filter;
            break;
          case MaskKind::kKeys: {
            const int32_t* mr = pm + b * total;
            for (int64_t j = 0; j < total; ++j) row[j] += mr[j] == 0 ? filter : 0.0f;
            break;
          }
          case MaskKind::kQueryKeys: {
            const int32_t* mr = pm + (b * q_len + i) * total;
            for (int64_t j = 0; j < total; ++j) row[j] += mr[j] == 0 ? filter : 0.0f;
            break;
          }
        }
        if (pab != nullptr) {
          const float* abi = pab + b * ab_batch + n * ab_head + i * total;
          for (int64_t j = 0; j < total; ++j) row[j] += abi[j];
        }
        // Causal: onnxruntime leaves the last query row unmasked (it only
        // matters when kv_sequence differs from sequence).
        if (unidirectional_ && i < q_len - 1) std::fill(row + std::min(total, past_len + i + 1), row + total, lowest);
      };
    }
    attention::run_scaled_dot_product(sdp, ctx.thread_pool());
    if (!out_f.empty()) write_floats(y, out_f.data(), static_cast<int64_t>(out_f.size()));
    if (want_qk) write_floats(ctx.allocate_output(3, dtype, {batch, heads, q_len, total}), qk.data(), static_cast<int64_t>(qk.size()));
    return Status::ok();
  }

 private:
  int64_t num_heads_;
  bool unidirectional_;
  float scale_;
  float mask_filter_value_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "MultiHeadAttention", 1, kLatestVersion, types::floats(), MultiHeadAttentionKernel);

}  // namespace
}  // namespace onyx::cpu
