// com.microsoft GroupQueryAttention: causal attention where groups of query
// heads share one key/value head, with a KV cache (past_key/past_value in,
// present_key/present_value out, per-batch lengths in seqlens_k), optional
// rotary embedding of Q and K, local window, softcap, smooth softmax / head
// sinks, an additive attention bias and the QK scores output. Quantized caches,
// Q/K RMS norms, query_seqlens and window-sized caches are not supported.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "providers/cpu/contrib/float_io.h"
#include "providers/cpu/tensor/tensor_util.h"

namespace onyx::cpu {
namespace {

class GroupQueryAttentionKernel final : public Kernel {
 public:
  explicit GroupQueryAttentionKernel(const KernelInfo& info)
      : num_heads_(info.attr_int("num_heads", 0)),
        kv_num_heads_(info.attr_int("kv_num_heads", 0)),
        scale_(info.attr_float("scale", 0.0f)),
        softcap_(info.attr_float("softcap", 0.0f)),
        local_window_(info.attr_int("local_window_size", -1)),
        causal_(info.attr_int("causal", 1) != 0),
        do_rotary_(info.attr_int("do_rotary", 0) != 0),
        rotary_interleaved_(info.attr_int("rotary_interleaved", 0) != 0),
        smooth_softmax_(info.attr_int("smooth_softmax", 0) != 0),
        qk_output_(info.attr_int("qk_output", 0)) {
    if (num_heads_ <= 0 || kv_num_heads_ <= 0 || num_heads_ % kv_num_heads_ != 0) {
      throw Error(invalid_model(info.label(), ": attributes num_heads ", num_heads_, " and kv_num_heads ", kv_num_heads_,
                                " must be positive, num_heads a multiple of kv_num_heads"));
    }
    if (!causal_ && local_window_ > 0) {
      throw Error(invalid_model(info.label(), ": attribute local_window_size must be -1 when causal is 0"));
    }
    if (qk_output_ < 0 || qk_output_ > 2) {
      throw Error(invalid_model(info.label(), ": attribute qk_output is ", qk_output_, ", expected 0, 1 or 2"));
    }
    if (info.attr_int("sliding_window_cache", 0) != 0) {
      throw Error(not_implemented(info.label(), ": sliding_window_cache is not supported"));
    }
    for (const char* name : {"k_quant_type", "v_quant_type"}) {
      if (info.attr_string(name, "NONE") != "NONE") throw Error(not_implemented(info.label(), ": quantized KV cache (", name, ") is not supported"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    auto in = [&](size_t i) { return ctx.input_count() > i ? ctx.input_tensor(i) : nullptr; };
    const Tensor* query = in(0);
    const Tensor* key = in(1);
    const Tensor* value = in(2);
    const Tensor* past_key = in(3);
    const Tensor* past_value = in(4);
    const Tensor* seqlens_k = in(5);
    const Tensor* total_tensor = in(6);
    const Tensor* cos_cache = in(7);
    const Tensor* sin_cache = in(8);
    const Tensor* position_ids = in(9);
    const Tensor* attn_bias = in(10);
    const Tensor* head_sink = in(11);
    for (size_t i = 12; i < 17; ++i) {
      if (in(i) != nullptr) {
        return not_implemented(ctx.label(), ": inputs k_scale, v_scale, q_norm_weight, k_norm_weight and query_seqlens are not supported");
      }
    }
    if (query == nullptr || !is_float_type(query->dtype()) || query->rank() != 3) {
      return invalid_argument(ctx.label(), ": input query is ", describe_or_missing(query), ", expected a float [batch, sequence, hidden]");
    }
    const DataType dtype = query->dtype();
    for (const auto& [t, name] : {std::pair<const Tensor*, const char*>{key, "key"}, {value, "value"}, {past_key, "past_key"},
                                  {past_value, "past_value"}, {cos_cache, "cos_cache"}, {sin_cache, "sin_cache"},
                                  {attn_bias, "attention_bias"}, {head_sink, "head_sink"}}) {
      if (t != nullptr && t->dtype() != dtype) {
        return invalid_argument(ctx.label(), ": input ", name, " has type ", dtype_name(t->dtype()), ", expected ", dtype_name(dtype),
                                " like query");
      }
    }
    const int64_t batch = query->dim(0), seq = query->dim(1), heads = num_heads_, kv_heads = kv_num_heads_;
    const int64_t group = heads / kv_heads;
    const bool packed = key == nullptr;
    int64_t head = 0;
    if (packed) {
      if (value != nullptr || query->dim(2) % (heads + 2 * kv_heads) != 0) {
        return invalid_argument(ctx.label(), ": input query is ", query->describe(), " with key omitted, expected packed QKV of ",
                                heads + 2 * kv_heads, " heads (and value omitted)");
      }
      head = query->dim(2) / (heads + 2 * kv_heads);
    } else {
      if (query->dim(2) % heads != 0) {
        return invalid_argument(ctx.label(), ": input query is ", query->describe(), ": hidden ", query->dim(2), " is not divisible by num_heads ", heads);
      }
      head = query->dim(2) / heads;
      const Shape kv_shape{batch, seq, kv_heads * head};
      if (key->shape() != kv_shape || value == nullptr || value->shape() != kv_shape) {
        return invalid_argument(ctx.label(), ": inputs key ", key->describe(), " and value ", describe_or_missing(value), ", expected [",
                                batch, ", ", seq, ", ", kv_heads * head, "]");
      }
    }
    if ((past_key == nullptr) != (past_value == nullptr)) return invalid_argument(ctx.label(), ": past_key and past_value must be given together");
    int64_t past_capacity = 0;
    if (past_key != nullptr) {
      if (past_key->rank() != 4 || past_key->dim(0) != batch || past_key->dim(1) != kv_heads || past_key->dim(3) != head ||
          past_value->shape() != past_key->shape()) {
        return invalid_argument(ctx.label(), ": inputs past_key ", past_key->describe(), " and past_value ", past_value->describe(),
                                ", expected two [", batch, ", ", kv_heads, ", past_sequence, ", head, "]");
      }
      past_capacity = past_key->dim(2);
    }
    if (seqlens_k == nullptr || seqlens_k->dtype() != DataType::kInt32 || seqlens_k->rank() != 1 || seqlens_k->dim(0) != batch) {
      return invalid_argument(ctx.label(), ": input seqlens_k is ", describe_or_missing(seqlens_k), ", expected int32[", batch, "]");
    }
    if (total_tensor == nullptr || total_tensor->dtype() != DataType::kInt32 || total_tensor->size() != 1) {
      return invalid_argument(ctx.label(), ": input total_sequence_length is ", describe_or_missing(total_tensor), ", expected an int32 scalar");
    }
    const int64_t total = total_tensor->data<int32_t>()[0];
    // A first prompt fills the cache from row 0; later steps append after
    // seqlens_k + 1 - sequence cached rows.
    const bool is_prompt = seq == total;
    const int64_t present_len = std::max(past_capacity, total);
    const int32_t* seqlens = seqlens_k->data<int32_t>();
    std::vector<int64_t> past_rows(static_cast<size_t>(batch)), key_rows(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t rows = static_cast<int64_t>(seqlens[b]) + 1;
      const int64_t past = is_prompt ? 0 : rows - seq;
      if (rows < 1 || rows > total || past < 0 || past > past_capacity || past + seq > present_len) {
        return invalid_argument(ctx.label(), ": seqlens_k[", b, "] is ", seqlens[b], ", which does not fit sequence ", seq,
                                ", past_key length ", past_capacity, " and total_sequence_length ", total);
      }
      past_rows[static_cast<size_t>(b)] = past;
      key_rows[static_cast<size_t>(b)] = rows;
    }
    int64_t rotary_half = 0;
    if (do_rotary_) {
      if (cos_cache == nullptr || sin_cache == nullptr || cos_cache->rank() != 2 || sin_cache->shape() != cos_cache->shape() ||
          2 * cos_cache->dim(1) > head || cos_cache->dim(1) <= 0) {
        return invalid_argument(ctx.label(), ": do_rotary needs cos_cache and sin_cache [max_sequence, rotary_dim / 2] with rotary_dim <= head size ",
                                head, ", got ", describe_or_missing(cos_cache), " and ", describe_or_missing(sin_cache));
      }
      rotary_half = cos_cache->dim(1);
      if (position_ids != nullptr && (position_ids->dtype() != DataType::kInt64 || position_ids->rank() != 2 ||
                                      position_ids->dim(0) != batch || position_ids->dim(1) != seq)) {
        return invalid_argument(ctx.label(), ": input position_ids is ", position_ids->describe(), ", expected int64[", batch, ", ", seq, "]");
      }
    }
    if (attn_bias != nullptr &&
        (attn_bias->rank() != 4 || (attn_bias->dim(0) != batch && attn_bias->dim(0) != 1) ||
         (attn_bias->dim(1) != heads && attn_bias->dim(1) != 1) || attn_bias->dim(2) != seq || attn_bias->dim(3) != total)) {
      return invalid_argument(ctx.label(), ": input attention_bias is ", attn_bias->describe(), ", expected [", batch, " or 1, ", heads,
                              " or 1, ", seq, ", ", total, "]");
    }
    if (head_sink != nullptr && (head_sink->rank() != 1 || head_sink->dim(0) != heads)) {
      return invalid_argument(ctx.label(), ": input head_sink is ", head_sink->describe(), ", expected [", heads, "]");
    }

    // Positions of the new tokens for rotary embedding: a first prompt counts
    // from position_ids[0][0] (or 0), later steps take position_ids as given
    // (or count on from the cached rows).
    const std::vector<float> cos_f = do_rotary_ ? read_floats(*cos_cache) : std::vector<float>();
    const std::vector<float> sin_f = do_rotary_ ? read_floats(*sin_cache) : std::vector<float>();
    std::vector<int64_t> positions;
    if (do_rotary_) {
      positions.resize(static_cast<size_t>(batch * seq));
      const int64_t* pid = position_ids ? position_ids->data<int64_t>() : nullptr;
      for (int64_t b = 0; b < batch; ++b) {
        for (int64_t s = 0; s < seq; ++s) {
          int64_t p = 0;
          if (is_prompt) p = (pid ? pid[0] : 0) + s;
          else p = pid ? pid[b * seq + s] : past_rows[static_cast<size_t>(b)] + s;
          if (p < 0 || p >= cos_cache->dim(0)) {
            return invalid_argument(ctx.label(), ": rotary position ", p, " is out of range of cos_cache rows [0, ", cos_cache->dim(0), ")");
          }
          positions[static_cast<size_t>(b * seq + s)] = p;
        }
      }
    }
    auto rotate = [&](float* x, int64_t position) {
      const float* c = cos_f.data() + position * rotary_half;
      const float* sn = sin_f.data() + position * rotary_half;
      for (int64_t i = 0; i < rotary_half; ++i) {
        const int64_t i1 = rotary_interleaved_ ? 2 * i : i;
        const int64_t i2 = rotary_interleaved_ ? 2 * i + 1 : i + rotary_half;
        const float a = x[i1], b = x[i2];
        x[i1] = a * c[i] - b * sn[i];
        x[i2] = b * c[i] + a * sn[i];
      }
    };

    // Q [batch, heads, seq, head]; the cache [batch, kv_heads, present_len, head]
    // holds the cached rows then the new (rotated) keys and values; the rest is 0.
    const std::vector<float> qf = read_floats(*query);
    const std::vector<float> kf = packed ? std::vector<float>() : read_floats(*key);
    const std::vector<float> vf = packed ? std::vector<float>() : read_floats(*value);
    const int64_t q_stride = packed ? (heads + 2 * kv_heads) * head : heads * head;  // per token
    std::vector<float> q(static_cast<size_t>(batch * heads * seq * head));
    std::vector<float> k_cache(static_cast<size_t>(batch * kv_heads * present_len * head), 0.0f);
    std::vector<float> v_cache(k_cache.size(), 0.0f);
    const std::vector<float> pk = past_key ? read_floats(*past_key) : std::vector<float>();
    const std::vector<float> pv = past_value ? read_floats(*past_value) : std::vector<float>();
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t past = past_rows[static_cast<size_t>(b)];
      for (int64_t s = 0; s < seq; ++s) {
        const float* token = qf.data() + (b * seq + s) * q_stride;
        for (int64_t n = 0; n < heads; ++n) {
          float* dst = q.data() + ((b * heads + n) * seq + s) * head;
          std::copy(token + n * head, token + (n + 1) * head, dst);
          if (do_rotary_) rotate(dst, positions[static_cast<size_t>(b * seq + s)]);
        }
        for (int64_t n = 0; n < kv_heads; ++n) {
          const float* ks = packed ? token + (heads + n) * head : kf.data() + ((b * seq + s) * kv_heads + n) * head;
          const float* vs = packed ? token + (heads + kv_heads + n) * head : vf.data() + ((b * seq + s) * kv_heads + n) * head;
          float* kd = k_cache.data() + ((b * kv_heads + n) * present_len + past + s) * head;
          float* vd = v_cache.data() + ((b * kv_heads + n) * present_len + past + s) * head;
          std::copy(ks, ks + head, kd);
          std::copy(vs, vs + head, vd);
          if (do_rotary_) rotate(kd, positions[static_cast<size_t>(b * seq + s)]);
        }
      }
      for (int64_t n = 0; n < kv_heads && past > 0; ++n) {
        const int64_t from = (b * kv_heads + n) * past_capacity * head, to = (b * kv_heads + n) * present_len * head;
        std::copy(pk.begin() + from, pk.begin() + from + past * head, k_cache.begin() + to);
        std::copy(pv.begin() + from, pv.begin() + from + past * head, v_cache.begin() + to);
      }
    }

    const std::vector<float> abf = attn_bias ? read_floats(*attn_bias) : std::vector<float>();
    const std::vector<float> sink = head_sink ? read_floats(*head_sink) : std::vector<float>();
    const bool want_qk = qk_output_ != 0 && ctx.output_count() > 3 && ctx.output_requested(3);
    std::vector<float> qk(want_qk ? static_cast<size_t>(batch * heads * seq * present_len) : 0, 0.0f);
    std::vector<float> out(static_cast<size_t>(batch * seq * heads * head));
    const float scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(head));
    parallel_for(ctx.thread_pool(), batch * heads, static_cast<double>(seq * present_len * head * 2), [&](int64_t begin, int64_t end) {
      std::vector<float> scores(static_cast<size_t>(present_len));
      for (int64_t bn = begin; bn < end; ++bn) {
        const int64_t b = bn / heads, n = bn % heads;
        const int64_t past = past_rows[static_cast<size_t>(b)];
        const float* kb = k_cache.data() + (b * kv_heads + n / group) * present_len * head;
        const float* vb = v_cache.data() + (b * kv_heads + n / group) * present_len * head;
        const float* ab = abf.empty() ? nullptr
                                      : abf.data() + ((attn_bias->dim(0) == 1 ? 0 : b) * attn_bias->dim(1) + (attn_bias->dim(1) == 1 ? 0 : n)) *
                                                         seq * attn_bias->dim(3);
        for (int64_t i = 0; i < seq; ++i) {
          // Keys [first, last): up to the query's own position when causal, the
          // last local_window_size of them when windowed.
          const int64_t last = causal_ ? std::min(past + i + 1, present_len) : key_rows[static_cast<size_t>(b)];
          const int64_t first = local_window_ > 0 ? std::max<int64_t>(last - local_window_, 0) : 0;
          const float* qi = q.data() + (bn * seq + i) * head;
          float* qk_row = want_qk ? qk.data() + (bn * seq + i) * present_len : nullptr;
          float peak = -INFINITY;
          for (int64_t j = first; j < last; ++j) {
            float dot = 0.0f;
            for (int64_t h = 0; h < head; ++h) dot += qi[h] * kb[j * head + h];
            float s = dot * scale;
            if (qk_output_ == 1 && qk_row) qk_row[j] = s;
            if (softcap_ > 0.0f) s = softcap_ * std::tanh(s / softcap_);
            if (ab != nullptr) s += ab[i * attn_bias->dim(3) + j];
            scores[static_cast<size_t>(j)] = s;
            peak = std::max(peak, s);
          }
          // Smooth softmax adds one more logit (the head's sink, or 0) to the
          // denominator only.
          const bool extra = smooth_softmax_ || !sink.empty();
          const float extra_logit = sink.empty() ? 0.0f : sink[static_cast<size_t>(n)];
          if (extra) peak = std::max(peak, extra_logit);
          float sum = extra ? std::exp(extra_logit - peak) : 0.0f;
          for (int64_t j = first; j < last; ++j) {
            scores[static_cast<size_t>(j)] = std::exp(scores[static_cast<size_t>(j)] - peak);
            sum += scores[static_cast<size_t>(j)];
          }
          float* o = out.data() + ((b * seq + i) * heads + n) * head;
          std::fill(o, o + head, 0.0f);
          for (int64_t j = first; j < last; ++j) {
            const float p = scores[static_cast<size_t>(j)] / sum;
            if (qk_output_ == 2 && qk_row) qk_row[j] = p;
            const float* vj = vb + j * head;
            for (int64_t h = 0; h < head; ++h) o[h] += p * vj[h];
          }
        }
      }
    });
    write_floats(ctx.allocate_output(0, dtype, {batch, seq, heads * head}), out.data(), static_cast<int64_t>(out.size()));
    if (ctx.output_count() > 1 && ctx.output_requested(1)) {
      write_floats(ctx.allocate_output(1, dtype, {batch, kv_heads, present_len, head}), k_cache.data(), static_cast<int64_t>(k_cache.size()));
    }
    if (ctx.output_count() > 2 && ctx.output_requested(2)) {
      write_floats(ctx.allocate_output(2, dtype, {batch, kv_heads, present_len, head}), v_cache.data(), static_cast<int64_t>(v_cache.size()));
    }
    if (ctx.output_count() > 3 && ctx.output_requested(3)) {
      if (!want_qk) return invalid_argument(ctx.label(), ": output output_qk is requested but attribute qk_output is 0");
      write_floats(ctx.allocate_output(3, dtype, {batch, heads, seq, present_len}), qk.data(), static_cast<int64_t>(qk.size()));
    }
    return Status::ok();
  }

 private:
  int64_t num_heads_;
  int64_t kv_num_heads_;
  float scale_;
  float softcap_;
  int64_t local_window_;
  bool causal_;
  bool do_rotary_;
  bool rotary_interleaved_;
  bool smooth_softmax_;
  int64_t qk_output_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "GroupQueryAttention", 1, kLatestVersion, types::floats(), GroupQueryAttentionKernel);

}  // namespace
}  // namespace onyx::cpu
