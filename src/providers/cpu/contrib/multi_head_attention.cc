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

#include "providers/cpu/contrib/float_io.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/math/fast_math.h"

namespace onyx::cpu {
namespace {

std::string describe_or_missing(const Tensor* t) { return t ? t->describe() : std::string("missing"); }

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

    // Gather Q [batch, heads, q_len, head], K [batch, heads, total, head] and
    // V [batch, heads, total, v_head] in float, bias added, past first.
    const std::vector<float> qf = read_floats(*query);
    const std::vector<float> kf = key ? read_floats(*key) : std::vector<float>();
    const std::vector<float> vf = value ? read_floats(*value) : std::vector<float>();
    const std::vector<float> bf = bias ? read_floats(*bias) : std::vector<float>();
    auto bias_at = [&](int64_t i) { return bf.empty() ? 0.0f : bf[static_cast<size_t>(i)]; };
    std::vector<float> q(static_cast<size_t>(batch * heads * q_len * head));
    std::vector<float> k(static_cast<size_t>(batch * heads * total * head));
    std::vector<float> v(static_cast<size_t>(batch * heads * total * v_head));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t n = 0; n < heads; ++n) {
        for (int64_t s = 0; s < q_len; ++s) {
          float* dst = q.data() + ((b * heads + n) * q_len + s) * head;
          const float* src = layout == Layout::kPackedQkv ? qf.data() + ((b * q_len + s) * heads + n) * 3 * head
                                                          : qf.data() + (b * q_len + s) * hidden + n * head;
          for (int64_t h = 0; h < head; ++h) dst[h] = src[h] + bias_at(n * head + h);
        }
        for (int64_t s = 0; s < kv_len; ++s) {
          float* kd = k.data() + ((b * heads + n) * total + past_len + s) * head;
          float* vd = v.data() + ((b * heads + n) * total + past_len + s) * v_head;
          const float* ks = nullptr;
          const float* vs = nullptr;
          bool add_bias = !bf.empty();
          switch (layout) {
            case Layout::kPackedQkv:
              ks = qf.data() + ((b * q_len + s) * heads + n) * 3 * head + head;
              vs = ks + head;
              break;
            case Layout::kPackedKv:
              ks = kf.data() + ((b * kv_len + s) * heads + n) * 2 * head;
              vs = ks + head;
              break;
            case Layout::kKvPerHead:  // already projected per head: no bias (as onnxruntime)
              ks = kf.data() + ((b * heads + n) * kv_len + s) * head;
              vs = vf.data() + ((b * heads + n) * kv_len + s) * v_head;
              add_bias = false;
              break;
            case Layout::kSeparate:
              ks = kf.data() + (b * kv_len + s) * hidden + n * head;
              vs = vf.data() + (b * kv_len + s) * v_hidden + n * v_head;
              break;
          }
          for (int64_t h = 0; h < head; ++h) kd[h] = ks[h] + (add_bias ? bias_at(hidden + n * head + h) : 0.0f);
          for (int64_t h = 0; h < v_head; ++h) vd[h] = vs[h] + (add_bias ? bias_at(2 * hidden + n * v_head + h) : 0.0f);
        }
      }
    }
    if (past_len > 0) {
      const std::vector<float> pk = read_floats(*past_key), pv = read_floats(*past_value);
      for (int64_t bn = 0; bn < batch * heads; ++bn) {
        std::copy(pk.begin() + bn * past_len * head, pk.begin() + (bn + 1) * past_len * head, k.begin() + bn * total * head);
        std::copy(pv.begin() + bn * past_len * v_head, pv.begin() + (bn + 1) * past_len * v_head, v.begin() + bn * total * v_head);
      }
    }

    Tensor& y = ctx.allocate_output(0, dtype, {batch, q_len, v_hidden});
    if (ctx.output_count() > 1 && ctx.output_requested(1)) {
      write_floats(ctx.allocate_output(1, dtype, {batch, heads, total, head}), k.data(), static_cast<int64_t>(k.size()));
    }
    if (ctx.output_count() > 2 && ctx.output_requested(2)) {
      write_floats(ctx.allocate_output(2, dtype, {batch, heads, total, v_head}), v.data(), static_cast<int64_t>(v.size()));
    }
    const bool want_qk = ctx.output_count() > 3 && ctx.output_requested(3);
    std::vector<float> qk(want_qk ? static_cast<size_t>(batch * heads * q_len * total) : 0);
    std::vector<float> out(static_cast<size_t>(batch * q_len * v_hidden));
    const std::vector<float> abf = attn_bias ? read_floats(*attn_bias) : std::vector<float>();
    const int32_t* pm = mask ? mask->data<int32_t>() : nullptr;
    const float scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(head));
    const float lowest = std::numeric_limits<float>::lowest();

    // Per (batch, head): scores = scale * Q K^T and out = P V with the SGEMM
    // (parallel over batch * heads, so each product runs single-threaded), the
    // masks and bias applied per score row, and softmax with the vector exp.
    parallel_for(ctx.thread_pool(), batch * heads, static_cast<double>(q_len * total * (head + v_head)), [&](int64_t begin, int64_t end) {
      std::vector<float> scores(static_cast<size_t>(q_len * total));
      for (int64_t bn = begin; bn < end; ++bn) {
        const int64_t b = bn / heads, n = bn % heads;
        const float* kb = k.data() + bn * total * head;
        const float* vb = v.data() + bn * total * v_head;
        const float* ab = abf.empty() ? nullptr
                                      : abf.data() + ((attn_bias->dim(0) == 1 ? 0 : b) * attn_bias->dim(1) + (attn_bias->dim(1) == 1 ? 0 : n)) *
                                                         q_len * total;
        sgemm(false, true, q_len, total, head, scale, q.data() + bn * q_len * head, head, kb, head, 0.0f, scores.data(), total, nullptr);
        for (int64_t i = 0; i < q_len; ++i) {
          float* row = scores.data() + i * total;
          switch (mask_kind) {
            case MaskKind::kNone: break;
            case MaskKind::kLengths:
              for (int64_t j = std::max<int64_t>(0, pm[b]); j < total; ++j) row[j] += mask_filter_value_;
              break;
            case MaskKind::kKeys:
              for (int64_t j = 0; j < total; ++j) row[j] += pm[b * total + j] == 0 ? mask_filter_value_ : 0.0f;
              break;
            case MaskKind::kQueryKeys:
              for (int64_t j = 0; j < total; ++j) row[j] += pm[(b * q_len + i) * total + j] == 0 ? mask_filter_value_ : 0.0f;
              break;
          }
          if (ab != nullptr) {
            const float* abi = ab + i * total;
            for (int64_t j = 0; j < total; ++j) row[j] += abi[j];
          }
          // Causal: onnxruntime leaves the last query row unmasked (it only
          // matters when kv_sequence differs from sequence).
          if (unidirectional_ && i < q_len - 1) {
            for (int64_t j = std::max<int64_t>(0, past_len + i + 1); j < total; ++j) row[j] = lowest;
          }
          if (want_qk) std::copy(row, row + total, qk.begin() + (bn * q_len + i) * total);
          const float peak = max_array(row, total);
          const float sum = fast_exp_shifted_sum(row, peak, row, total);
          scale_array(row, 1.0f / sum, total);
        }
        sgemm(false, false, q_len, v_head, total, 1.0f, scores.data(), total, vb, v_head, 0.0f,
              out.data() + b * q_len * v_hidden + n * v_head, v_hidden, nullptr);
      }
    });
    write_floats(y, out.data(), static_cast<int64_t>(out.size()));
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
