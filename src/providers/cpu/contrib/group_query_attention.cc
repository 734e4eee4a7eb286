// com.microsoft GroupQueryAttention: causal attention where groups of query
// heads share one key/value head, with a KV cache (past_key/past_value in,
// present_key/present_value out, per-batch lengths in seqlens_k), optional
// rotary embedding of Q and K, local window, softcap, smooth softmax / head
// sinks, an additive attention bias and the QK scores output. onnxruntime's
// quantized caches (PER_TENSOR, PER_CHANNEL with k_scale/v_scale), Q/K RMS
// norms, query_seqlens and window-sized caches are not supported.
//
// The cache is used in place: when present_key is bound to past_key's own
// buffer (onnxruntime-genai's past_present_share_buffer, through IoBinding)
// only the new rows are written, and past rows are always read where they lie
// (float32 and int8 caches).
//
// onyx's own extension, k_quant_type = v_quant_type = "PER_TOKEN": the caches
// (past_key, past_value, present_key, present_value) are int8 tensors
// [batch, kv_heads, max_length, head + 4], each row `head` int8 values
// (symmetric, round-to-nearest, scale = max|x| / 127) followed by that row's
// float32 scale in its last 4 bytes. New rows are quantized as they are
// appended (after rotary); attention dequantizes them as it reads.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "providers/cpu/attention/flash_attention.h"
#include "providers/cpu/contrib/float_io.h"
#include "providers/cpu/tensor/tensor_util.h"

namespace onyx::cpu {
namespace {

// What compute fills anew each call, kept per thread so that a decode step
// allocates nothing of its own (several runs may call compute at once).
struct Scratch {
  std::vector<int64_t> past_rows, key_rows, positions;
  std::vector<float> q, new_k, new_v;
};
Scratch& thread_scratch() {
  thread_local Scratch scratch;
  return scratch;
}

// Resizes a scratch vector to n; one a prompt grew past kKeptElements is
// released by the next smaller call, so an idle thread does not hold a
// prompt's queries.
constexpr size_t kKeptElements = size_t{1} << 16;
template <class T>
void resize_scratch(std::vector<T>& v, size_t n) {
  if (v.capacity() > kKeptElements && n <= kKeptElements) std::vector<T>().swap(v);
  v.resize(n);
}

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
    const std::string k_quant = info.attr_string("k_quant_type", "NONE"),
                      v_quant = info.attr_string("v_quant_type", "NONE");
    for (const std::string& kind : {k_quant, v_quant}) {
      if (kind != "NONE" && kind != "PER_TOKEN") {
        throw Error(
            not_implemented(info.label(), ": quantized KV cache ", kind,
                            " is not supported (k_quant_type and v_quant_type may be NONE or onyx's PER_TOKEN)"));
      }
    }
    if (k_quant != v_quant) {
      throw Error(not_implemented(info.label(), ": k_quant_type ", k_quant, " and v_quant_type ", v_quant,
                                  " differ; an int8 PER_TOKEN cache quantizes both"));
    }
    quantized_ = k_quant == "PER_TOKEN";
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
    const DataType cache_dtype = quantized_ ? DataType::kInt8 : dtype;
    for (const auto& [t, name] : {std::pair<const Tensor*, const char*>{key, "key"}, {value, "value"}, {past_key, "past_key"},
                                  {past_value, "past_value"}, {cos_cache, "cos_cache"}, {sin_cache, "sin_cache"},
                                  {attn_bias, "attention_bias"}, {head_sink, "head_sink"}}) {
      const bool is_cache = t == past_key || t == past_value;
      if (t != nullptr && is_cache && t->dtype() != cache_dtype) {
        return invalid_argument(ctx.label(), ": input ", name, " has type ", dtype_name(t->dtype()), ", expected ",
                                quantized_ ? "int8 (k_quant_type and v_quant_type are PER_TOKEN)" : dtype_name(dtype),
                                quantized_ ? "" : " like query");
      }
      if (t != nullptr && !is_cache && t->dtype() != dtype) {
        return invalid_argument(ctx.label(), ": input ", name, " has type ", dtype_name(t->dtype()), ", expected ", dtype_name(dtype),
                                " like query");
      }
    }
    const int64_t batch = query->dim(0), seq = query->dim(1), heads = num_heads_, kv_heads = kv_num_heads_;
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
      // An int8 row holds the head's values and then its float scale.
      const int64_t row = quantized_ ? head + attention::kInt8RowExtraBytes : head;
      if (past_key->rank() != 4 || past_key->dim(0) != batch || past_key->dim(1) != kv_heads ||
          past_key->dim(3) != row || past_value->shape() != past_key->shape()) {
        return invalid_argument(
            ctx.label(), ": inputs past_key ", past_key->describe(), " and past_value ", past_value->describe(),
            ", expected two [", batch, ", ", kv_heads, ", past_sequence, ", row, "]",
            quantized_ ? str_cat(" (head size ", head, " + 4 bytes of scale per int8 row)") : std::string());
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
    // Per-call arrays live in this thread's scratch: a decode step is short
    // enough that six allocations showed up next to its attention.
    Scratch& scratch = thread_scratch();
    std::vector<int64_t>& past_rows = scratch.past_rows;
    std::vector<int64_t>& key_rows = scratch.key_rows;
    resize_scratch(past_rows, static_cast<size_t>(batch));
    resize_scratch(key_rows, static_cast<size_t>(batch));
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
    // float32 tables are read in place: they are [max_sequence, rotary_dim / 2].
    std::vector<float> cos_storage, sin_storage;
    const float* cos_f = nullptr;
    const float* sin_f = nullptr;
    if (do_rotary_) {
      if (dtype == DataType::kFloat) {
        cos_f = cos_cache->data<float>();
        sin_f = sin_cache->data<float>();
      } else {
        cos_storage = read_floats(*cos_cache);
        sin_storage = read_floats(*sin_cache);
        cos_f = cos_storage.data();
        sin_f = sin_storage.data();
      }
    }
    std::vector<int64_t>& positions = scratch.positions;
    if (do_rotary_) {
      resize_scratch(positions, static_cast<size_t>(batch * seq));
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
      const float* c = cos_f + position * rotary_half;
      const float* sn = sin_f + position * rotary_half;
      for (int64_t i = 0; i < rotary_half; ++i) {
        const int64_t i1 = rotary_interleaved_ ? 2 * i : i;
        const int64_t i2 = rotary_interleaved_ ? 2 * i + 1 : i + rotary_half;
        const float a = x[i1], b = x[i2];
        x[i1] = a * c[i] - b * sn[i];
        x[i2] = b * c[i] + a * sn[i];
      }
    };

    // Q [batch, heads, seq, head] and the new keys and values [batch,
    // kv_heads, seq, head], as floats, queries and keys rotated.
    std::vector<float> q_in, k_in, v_in;
    auto floats_of = [&](const Tensor* t, std::vector<float>& storage) -> const float* {
      if (t == nullptr) return nullptr;
      if (dtype == DataType::kFloat) return t->data<float>();
      storage = read_floats(*t);
      return storage.data();
    };
    const float* qf = floats_of(query, q_in);
    const float* kf = floats_of(key, k_in);
    const float* vf = floats_of(value, v_in);
    const int64_t q_stride = packed ? (heads + 2 * kv_heads) * head : heads * head;  // per token
    std::vector<float>& q = scratch.q;
    std::vector<float>& new_k = scratch.new_k;
    std::vector<float>& new_v = scratch.new_v;
    resize_scratch(q, static_cast<size_t>(batch * heads * seq * head));
    resize_scratch(new_k, static_cast<size_t>(batch * kv_heads * seq * head));
    resize_scratch(new_v, new_k.size());
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t s = 0; s < seq; ++s) {
        const float* token = qf + (b * seq + s) * q_stride;
        for (int64_t n = 0; n < heads; ++n) {
          float* dst = q.data() + ((b * heads + n) * seq + s) * head;
          std::copy(token + n * head, token + (n + 1) * head, dst);
          if (do_rotary_) rotate(dst, positions[static_cast<size_t>(b * seq + s)]);
        }
        for (int64_t n = 0; n < kv_heads; ++n) {
          const float* ks = packed ? token + (heads + n) * head : kf + ((b * seq + s) * kv_heads + n) * head;
          const float* vs = packed ? token + (heads + kv_heads + n) * head : vf + ((b * seq + s) * kv_heads + n) * head;
          float* kd = new_k.data() + ((b * kv_heads + n) * seq + s) * head;
          std::copy(ks, ks + head, kd);
          std::copy(vs, vs + head, new_v.data() + ((b * kv_heads + n) * seq + s) * head);
          if (do_rotary_) rotate(kd, positions[static_cast<size_t>(b * seq + s)]);
        }
      }
    }

    // The present caches [batch, kv_heads, present_len, head (+ 4 when int8)]:
    // the cached rows, then the new ones, then zeros. When present is bound
    // to past's own buffer only the new rows are written.
    std::vector<float> k_floats, v_floats;
    std::vector<int8_t> k_bytes, v_bytes;
    ONYX_ASSIGN_OR_RETURN(const attention::KvCache k_cache, fill_cache(ctx, 1, past_key, dtype, new_k, past_rows, batch,
                                                                       seq, head, present_len, k_floats, k_bytes));
    ONYX_ASSIGN_OR_RETURN(
        const attention::KvCache v_cache,
        fill_cache(ctx, 2, past_value, dtype, new_v, past_rows, batch, seq, head, present_len, v_floats, v_bytes));

    const std::vector<float> abf =
        attn_bias && dtype != DataType::kFloat ? read_floats(*attn_bias) : std::vector<float>();
    const std::vector<float> sink = head_sink ? read_floats(*head_sink) : std::vector<float>();
    const bool want_qk = qk_output_ != 0 && ctx.output_count() > 3 && ctx.output_requested(3);
    if (ctx.output_count() > 3 && ctx.output_requested(3) && !want_qk) {
      return invalid_argument(ctx.label(), ": output output_qk is requested but attribute qk_output is 0");
    }
    std::vector<float> qk(want_qk ? static_cast<size_t>(batch * heads * seq * present_len) : 0, 0.0f);
    std::vector<float> out_scratch;
    Tensor& output = ctx.allocate_output(0, dtype, {batch, seq, heads * head});
    float* out = nullptr;
    if (dtype == DataType::kFloat) {
      out = output.data<float>();
    } else {
      out_scratch.resize(static_cast<size_t>(batch * seq * heads * head));
      out = out_scratch.data();
    }

    attention::GroupedAttention problem;
    problem.batch = batch;
    problem.seq = seq;
    problem.heads = heads;
    problem.kv_heads = kv_heads;
    problem.head = head;
    problem.q = q.data();
    problem.k = k_cache;
    problem.v = v_cache;
    problem.past = past_rows.data();
    problem.key_rows = key_rows.data();
    problem.causal = causal_;
    problem.local_window = local_window_;
    problem.scale = scale_ != 0.0f ? scale_ : 1.0f / std::sqrt(static_cast<float>(head));
    problem.softcap = softcap_;
    if (attn_bias != nullptr) {
      problem.bias = dtype == DataType::kFloat ? attn_bias->data<float>() : abf.data();
      problem.bias_row_stride = attn_bias->dim(3);
      problem.bias_head_stride = attn_bias->dim(1) == 1 ? 0 : seq * attn_bias->dim(3);
      problem.bias_batch_stride = attn_bias->dim(0) == 1 ? 0 : attn_bias->dim(1) * seq * attn_bias->dim(3);
    }
    problem.smooth_softmax = smooth_softmax_;
    problem.head_sink = sink.empty() ? nullptr : sink.data();
    if (want_qk) {
      problem.qk = qk.data();
      problem.qk_kind = static_cast<int>(qk_output_);
      problem.qk_row = present_len;
    }
    problem.out = out;
    attention::run_grouped_attention(problem, ctx.thread_pool());

    if (dtype != DataType::kFloat) write_floats(output, out_scratch.data(), static_cast<int64_t>(out_scratch.size()));
    if (want_qk)
      write_floats(ctx.allocate_output(3, dtype, {batch, heads, seq, present_len}), qk.data(),
                   static_cast<int64_t>(qk.size()));
    return Status::ok();
  }

 private:
  // Makes output `index` (present_key 1, present_value 2) [batch, kv_heads,
  // present_len, head (+ 4)]: per (batch, kv head), the past_rows[b] cached
  // rows of `past`, then the `seq` new rows of `rows` [batch, kv_heads, seq,
  // head], then zeros. When the output is past's own buffer, only the new rows
  // are written. Returns the cache the attention reads: the output itself
  // (float32 and int8), or a float copy of it (other float types, and an
  // output the model omits).
  Result<attention::KvCache> fill_cache(KernelContext& ctx, size_t index, const Tensor* past, DataType dtype,
                                        const std::vector<float>& rows, const std::vector<int64_t>& past_rows,
                                        int64_t batch, int64_t seq, int64_t head, int64_t present_len,
                                        std::vector<float>& floats, std::vector<int8_t>& bytes) const {
    const int64_t kv_heads = kv_num_heads_, capacity = past ? past->dim(2) : 0;
    const bool requested = ctx.output_count() > index && ctx.output_requested(index);
    const Shape shape{batch, kv_heads, present_len, quantized_ ? head + attention::kInt8RowExtraBytes : head};
    const int64_t width = shape[3];
    Tensor* present = requested ? &ctx.allocate_output(index, quantized_ ? DataType::kInt8 : dtype, shape) : nullptr;
    const bool shared = present != nullptr && past != nullptr && present->raw_data() == past->raw_data();
    // Per (batch, kv head): the cached rows then the new ones, in `T` rows of
    // `width`, with `append` writing one new row.
    auto fill = [&](auto* dst, const auto* from, auto append) {
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t cached = past_rows[static_cast<size_t>(b)];
        for (int64_t n = 0; n < kv_heads; ++n) {
          auto* block = dst + (b * kv_heads + n) * present_len * width;
          if (!shared) {
            if (cached > 0)
              std::copy(from + (b * kv_heads + n) * capacity * width,
                        from + ((b * kv_heads + n) * capacity + cached) * width, block);
            std::fill(block + (cached + seq) * width, block + present_len * width, 0);
          }
          for (int64_t s = 0; s < seq; ++s)
            append(rows.data() + ((b * kv_heads + n) * seq + s) * head, block + (cached + s) * width);
        }
      }
    };
    const size_t size = static_cast<size_t>(shape_size(shape));
    if (quantized_) {
      int8_t* dst = present ? present->data<int8_t>() : (bytes.assign(size, 0), bytes.data());
      fill(dst, past ? past->data<int8_t>() : dst,
           [&](const float* x, int8_t* row) { attention::quantize_row_int8(x, head, row); });
      return attention::KvCache{nullptr, dst, present_len};
    }
    if (dtype == DataType::kFloat) {
      float* dst = present ? present->data<float>() : (floats.assign(size, 0.0f), floats.data());
      fill(dst, past ? past->data<float>() : dst, [&](const float* x, float* row) { std::copy(x, x + head, row); });
      return attention::KvCache{dst, nullptr, present_len};
    }
    // float16, bfloat16, double: attend over a float copy; write back only
    // the new rows when the output is past's buffer.
    floats.assign(size, 0.0f);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t cached = past_rows[static_cast<size_t>(b)];
      for (int64_t n = 0; n < kv_heads; ++n) {
        float* block = floats.data() + (b * kv_heads + n) * present_len * head;
        if (cached > 0) read_float_range(*past, (b * kv_heads + n) * capacity * head, cached * head, block);
        std::copy(rows.begin() + (b * kv_heads + n) * seq * head, rows.begin() + (b * kv_heads + n + 1) * seq * head,
                  block + cached * head);
        if (shared)
          write_float_range(*present, ((b * kv_heads + n) * present_len + cached) * head, seq * head,
                            block + cached * head);
      }
    }
    if (present != nullptr && !shared) write_floats(*present, floats.data(), static_cast<int64_t>(size));
    return attention::KvCache{floats.data(), nullptr, present_len};
  }

  // n elements of float-typed `t` from element `offset`, as floats, and back.
  static void read_float_range(const Tensor& t, int64_t offset, int64_t n, float* dst) {
    Status status = dispatch_float(t.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* p = t.data<T>() + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(static_cast<compute_t<T>>(p[i]));
      return Status::ok();
    });
    (void)status;  // the type was checked
  }
  static void write_float_range(Tensor& t, int64_t offset, int64_t n, const float* src) {
    Status status = dispatch_float(t.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      T* p = t.data<T>() + offset;
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<compute_t<T>>(src[i]));
      return Status::ok();
    });
    (void)status;
  }

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
  bool quantized_ = false;  // PER_TOKEN int8 caches
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "GroupQueryAttention", 1, kLatestVersion, types::floats(), GroupQueryAttentionKernel);

}  // namespace
}  // namespace onyx::cpu
