// ONNX Attention (opset 23, 24 and 25): scaled dot-product attention over 3-D
// or 4-D Q/K/V with grouped KV heads, boolean or additive masks, offset-aware
// causal masking, an internal KV cache (past/present), softcap, the optional
// qk_matmul_output debug output, nonpad_kv_seqlen (24+) and sliding windows (25).
#include <cmath>
#include <limits>
#include <vector>

#include "providers/cpu/attention/attention_util.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using attention::describe_or_missing;
using attention::load_floats;
using attention::store_floats;

// Everything about one call's shapes, checked before any work.
struct AttentionShapes {
  bool three_d = false;
  int64_t batch = 0, q_heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, past_len = 0, total_len = 0;
  int64_t head_size = 0, v_head_size = 0;
};

class AttentionKernel final : public Kernel {
 public:
  explicit AttentionKernel(const KernelInfo& info)
      : version_(info.version()),
        is_causal_(info.attr_int("is_causal", 0) != 0),
        q_num_heads_(info.attr_int("q_num_heads", 0)),
        kv_num_heads_(info.attr_int("kv_num_heads", 0)),
        has_heads_attr_(info.has_attr("q_num_heads") || info.has_attr("kv_num_heads")),
        has_scale_(info.has_attr("scale")),
        scale_(info.attr_float("scale", 0.0f)),
        softcap_(info.attr_float("softcap", 0.0f)),
        qk_mode_(info.attr_int("qk_matmul_output_mode", 0)),
        left_window_(info.version() >= 25 ? info.attr_int("left_window_size", -1) : -1),
        right_window_(info.version() >= 25 ? info.attr_int("right_window_size", -1) : -1) {
    if (qk_mode_ < 0 || qk_mode_ > 3) {
      throw Error(invalid_model(info.label(), ": attribute qk_matmul_output_mode is ", qk_mode_, ", expected 0, 1, 2 or 3"));
    }
    if (left_window_ < -1 || right_window_ < -1) {
      throw Error(invalid_model(info.label(), ": window sizes must be -1 or nonnegative, got left_window_size ", left_window_,
                                " and right_window_size ", right_window_));
    }
    const int64_t precision = info.attr_int("softmax_precision", 0);
    if (info.has_attr("softmax_precision") && precision != 1 && precision != 10 && precision != 11 && precision != 16) {
      throw Error(invalid_model(info.label(), ": attribute softmax_precision is ", precision,
                                ", expected 1 (float), 10 (float16), 11 (double) or 16 (bfloat16)"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* q = ctx.input_tensor(0);
    const Tensor* k = ctx.input_count() > 1 ? ctx.input_tensor(1) : nullptr;
    const Tensor* v = ctx.input_count() > 2 ? ctx.input_tensor(2) : nullptr;
    if (q == nullptr || k == nullptr || v == nullptr) {
      return invalid_argument(ctx.label(), ": inputs Q, K and V are required");
    }
    for (const Tensor* t : {q, k, v}) {
      if (!attention::is_float_type(t->dtype())) {
        return invalid_argument(ctx.label(), ": input ", t == q ? "Q" : t == k ? "K" : "V", " has element type ",
                                dtype_name(t->dtype()), ", expected a float type");
      }
    }
    if (k->dtype() != q->dtype()) {
      return invalid_argument(ctx.label(), ": input K has element type ", dtype_name(k->dtype()), ", expected ",
                              dtype_name(q->dtype()), " like Q");
    }
    // 64-bit math when the inputs are double, float otherwise (half types compute in float).
    if (q->dtype() == DataType::kDouble) return run<double>(ctx, *q, *k, *v);
    return run<float>(ctx, *q, *k, *v);
  }

 private:
  Status check_shapes(KernelContext& ctx, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* past_key,
                      const Tensor* past_value, AttentionShapes& s) const {
    if (q.rank() != k.rank() || q.rank() != v.rank() || (q.rank() != 3 && q.rank() != 4)) {
      return invalid_argument(ctx.label(), ": inputs Q, K, V are ", q.describe(), ", ", k.describe(), ", ", v.describe(),
                              ", expected all rank 3 (batch, sequence, hidden) or all rank 4 (batch, heads, sequence, head_size)");
    }
    s.three_d = q.rank() == 3;
    s.batch = q.dim(0);
    if (k.dim(0) != s.batch || v.dim(0) != s.batch) {
      return invalid_argument(ctx.label(), ": batch sizes of Q, K, V differ: ", q.describe(), ", ", k.describe(), ", ", v.describe());
    }
    if (s.three_d) {
      if (q_num_heads_ <= 0 || kv_num_heads_ <= 0) {
        return invalid_argument(ctx.label(), ": 3-D inputs need positive attributes q_num_heads and kv_num_heads, got ",
                                q_num_heads_, " and ", kv_num_heads_);
      }
      s.q_heads = q_num_heads_;
      s.kv_heads = kv_num_heads_;
      if (q.dim(2) % s.q_heads != 0 || k.dim(2) % s.kv_heads != 0 || v.dim(2) % s.kv_heads != 0) {
        return invalid_argument(ctx.label(), ": hidden sizes of Q ", q.describe(), ", K ", k.describe(), ", V ", v.describe(),
                                " are not divisible by q_num_heads ", s.q_heads, " / kv_num_heads ", s.kv_heads);
      }
      s.q_len = q.dim(1);
      s.kv_len = k.dim(1);
      s.head_size = q.dim(2) / s.q_heads;
      if (k.dim(2) / s.kv_heads != s.head_size) {
        return invalid_argument(ctx.label(), ": K ", k.describe(), " has head size ", k.dim(2) / s.kv_heads,
                                ", expected ", s.head_size, " like Q");
      }
      s.v_head_size = v.dim(2) / s.kv_heads;
      if (v.dim(1) != s.kv_len) {
        return invalid_argument(ctx.label(), ": V ", v.describe(), " has sequence length ", v.dim(1), ", expected ", s.kv_len, " like K");
      }
    } else {
      if (version_ >= 25 && has_heads_attr_) {
        return invalid_argument(ctx.label(), ": q_num_heads and kv_num_heads must not be set for 4-D inputs");
      }
      s.q_heads = q.dim(1);
      s.kv_heads = k.dim(1);
      s.q_len = q.dim(2);
      s.kv_len = k.dim(2);
      s.head_size = q.dim(3);
      s.v_head_size = v.dim(3);
      if (k.dim(3) != s.head_size) {
        return invalid_argument(ctx.label(), ": K ", k.describe(), " has head size ", k.dim(3), ", expected ", s.head_size, " like Q");
      }
      if (v.dim(1) != s.kv_heads || v.dim(2) != s.kv_len) {
        return invalid_argument(ctx.label(), ": V is ", v.describe(), ", expected [", s.batch, ", ", s.kv_heads, ", ", s.kv_len,
                                ", v_head_size] like K ", k.describe());
      }
    }
    if (s.kv_heads <= 0 || s.q_heads % s.kv_heads != 0) {
      return invalid_argument(ctx.label(), ": q_num_heads ", s.q_heads, " is not a multiple of kv_num_heads ", s.kv_heads);
    }
    if ((past_key == nullptr) != (past_value == nullptr)) {
      return invalid_argument(ctx.label(), ": past_key and past_value must be given together");
    }
    if (past_key != nullptr) {
      if (past_key->dtype() != k.dtype() || past_key->rank() != 4 || past_key->dim(0) != s.batch ||
          past_key->dim(1) != s.kv_heads || past_key->dim(3) != s.head_size) {
        return invalid_argument(ctx.label(), ": input past_key is ", past_key->describe(), ", expected ", dtype_name(k.dtype()), "[",
                                s.batch, ", ", s.kv_heads, ", past_sequence_length, ", s.head_size, "]");
      }
      s.past_len = past_key->dim(2);
      if (past_value->dtype() != v.dtype() || past_value->rank() != 4 || past_value->dim(0) != s.batch ||
          past_value->dim(1) != s.kv_heads || past_value->dim(2) != s.past_len || past_value->dim(3) != s.v_head_size) {
        return invalid_argument(ctx.label(), ": input past_value is ", past_value->describe(), ", expected ", dtype_name(v.dtype()),
                                "[", s.batch, ", ", s.kv_heads, ", ", s.past_len, ", ", s.v_head_size, "]");
      }
    }
    s.total_len = s.past_len + s.kv_len;
    return Status::ok();
  }

  // Loads a 3-D (batch, seq, heads*size) or 4-D (batch, heads, seq, size) input
  // into a (batch, heads, seq, size) buffer, `seq_offset` rows into a buffer
  // whose sequence extent is `seq_total` (so the past cache can go first).
  template <typename C>
  static void gather_heads(const std::vector<C>& src, bool three_d, int64_t batch, int64_t heads, int64_t seq, int64_t size,
                           std::vector<C>& dst, int64_t seq_total, int64_t seq_offset) {
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t s = 0; s < seq; ++s) {
          const C* from = three_d ? &src[static_cast<size_t>(((b * seq + s) * heads + h) * size)]
                                  : &src[static_cast<size_t>(((b * heads + h) * seq + s) * size)];
          C* to = &dst[static_cast<size_t>(((b * heads + h) * seq_total + seq_offset + s) * size)];
          std::copy(from, from + size, to);
        }
  }

  template <typename C>
  Status run(KernelContext& ctx, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in) const {
    const Tensor* mask = ctx.input_count() > 3 ? ctx.input_tensor(3) : nullptr;
    const Tensor* past_key = ctx.input_count() > 4 ? ctx.input_tensor(4) : nullptr;
    const Tensor* past_value = ctx.input_count() > 5 ? ctx.input_tensor(5) : nullptr;
    const Tensor* nonpad = (version_ >= 24 && ctx.input_count() > 6) ? ctx.input_tensor(6) : nullptr;
    AttentionShapes s;
    ONYX_RETURN_IF_ERROR(check_shapes(ctx, q_in, k_in, v_in, past_key, past_value, s));
    if (nonpad != nullptr) {
      if (past_key != nullptr) {
        return invalid_argument(ctx.label(), ": nonpad_kv_seqlen cannot be combined with past_key/past_value");
      }
      if (nonpad->dtype() != DataType::kInt64 || nonpad->rank() != 1 || nonpad->dim(0) != s.batch) {
        return invalid_argument(ctx.label(), ": input nonpad_kv_seqlen is ", nonpad->describe(), ", expected int64[", s.batch, "]");
      }
    }
    const int64_t B = s.batch, Hq = s.q_heads, Hkv = s.kv_heads, Sq = s.q_len, T = s.total_len, D = s.head_size,
                  Dv = s.v_head_size;
    const int64_t group = Hq / Hkv;

    // Mask: right-aligned broadcast to (B, Hq, Sq, T); a shorter last axis is padded with "masked".
    std::vector<C> mask_values;
    int64_t mask_strides[4] = {0, 0, 0, 0};
    int64_t mask_len = 0;
    if (mask != nullptr) {
      if (mask->rank() < 1 || mask->rank() > 4) {
        return invalid_argument(ctx.label(), ": input attn_mask is ", mask->describe(), ", expected rank 1 to 4 broadcastable to [",
                                B, ", ", Hq, ", ", Sq, ", ", T, "]");
      }
      const int64_t target[4] = {B, Hq, Sq, T};
      const int64_t offset = 4 - mask->rank();
      int64_t stride = 1;
      for (int64_t d = 3; d >= offset; --d) {
        const int64_t dim = mask->dim(d - offset);
        const bool ok = d == 3 ? dim <= T : (dim == 1 || dim == target[d]);
        if (!ok) {
          return invalid_argument(ctx.label(), ": input attn_mask is ", mask->describe(), ", which does not broadcast to [", B, ", ",
                                  Hq, ", ", Sq, ", ", T, "]");
        }
        mask_strides[d] = (dim == 1 && d != 3) ? 0 : stride;
        stride *= dim;
      }
      mask_len = mask->dim(mask->rank() - 1);
      mask_values.resize(static_cast<size_t>(mask->size()));
      const C neg_inf = -std::numeric_limits<C>::infinity();
      Status mask_status = dispatch_numeric_or_bool(mask->dtype(), [&](auto tag) -> Status {
        using M = typename decltype(tag)::type;
        const M* p = mask->data<M>();
        for (size_t i = 0; i < mask_values.size(); ++i) {
          if constexpr (std::is_same_v<M, bool>) {
            mask_values[i] = p[i] ? C(0) : neg_inf;
          } else {
            mask_values[i] = static_cast<C>(static_cast<compute_t<M>>(p[i]));
          }
        }
        return Status::ok();
      });
      if (!mask_status.is_ok()) {
        return invalid_argument(ctx.label(), ": input attn_mask has element type ", dtype_name(mask->dtype()),
                                ", expected bool or a number type");
      }
    }

    // Working copies: Q as (B, Hq, Sq, D); K and V with the past cache in front.
    std::vector<C> raw, qb(static_cast<size_t>(B * Hq * Sq * D)), kb(static_cast<size_t>(B * Hkv * T * D)),
        vb(static_cast<size_t>(B * Hkv * T * Dv));
    ONYX_RETURN_IF_ERROR(load_floats(q_in, raw, ctx.label() + ": input Q"));
    gather_heads(raw, s.three_d, B, Hq, Sq, D, qb, Sq, 0);
    if (past_key != nullptr) {
      ONYX_RETURN_IF_ERROR(load_floats(*past_key, raw, ctx.label() + ": input past_key"));
      gather_heads(raw, false, B, Hkv, s.past_len, D, kb, T, 0);
      ONYX_RETURN_IF_ERROR(load_floats(*past_value, raw, ctx.label() + ": input past_value"));
      gather_heads(raw, false, B, Hkv, s.past_len, Dv, vb, T, 0);
    }
    ONYX_RETURN_IF_ERROR(load_floats(k_in, raw, ctx.label() + ": input K"));
    gather_heads(raw, s.three_d, B, Hkv, s.kv_len, D, kb, T, s.past_len);
    ONYX_RETURN_IF_ERROR(load_floats(v_in, raw, ctx.label() + ": input V"));
    gather_heads(raw, s.three_d, B, Hkv, s.kv_len, Dv, vb, T, s.past_len);
    raw.clear();
    raw.shrink_to_fit();

    const Shape y_shape = s.three_d ? Shape{B, Sq, Hq * Dv} : Shape{B, Hq, Sq, Dv};
    Tensor& y = ctx.allocate_output(0, q_in.dtype(), y_shape);
    if (ctx.output_count() > 1 && ctx.output_requested(1)) {
      Tensor& present_key = ctx.allocate_output(1, k_in.dtype(), {B, Hkv, T, D});
      store_floats(kb.data(), static_cast<int64_t>(kb.size()), present_key);
    }
    if (ctx.output_count() > 2 && ctx.output_requested(2)) {
      Tensor& present_value = ctx.allocate_output(2, v_in.dtype(), {B, Hkv, T, Dv});
      store_floats(vb.data(), static_cast<int64_t>(vb.size()), present_value);
    }
    Tensor* qk_out = nullptr;
    if (ctx.output_count() > 3 && ctx.output_requested(3)) qk_out = &ctx.allocate_output(3, q_in.dtype(), {B, Hq, Sq, T});
    if (y.size() == 0 && qk_out == nullptr) return Status::ok();

    const C scale = has_scale_ ? static_cast<C>(scale_) : C(1) / std::sqrt(static_cast<C>(D));
    const C softcap = static_cast<C>(softcap_);
    const int64_t* nonpad_values = nonpad ? nonpad->data<int64_t>() : nullptr;
    std::vector<C> y_values(static_cast<size_t>(B * Hq * Sq * Dv));
    std::vector<C> qk_values(qk_out ? static_cast<size_t>(B * Hq * Sq * T) : 0);
    const C neg_inf = -std::numeric_limits<C>::infinity();

    // One (batch, head) pair per item: scores = Q K^T, bias, softmax, then P V.
    parallel_for(ctx.thread_pool(), B * Hq, static_cast<double>(Sq * T * (D + Dv + 8)), [&](int64_t begin, int64_t end) {
      std::vector<C> scores(static_cast<size_t>(Sq * T)), bias(static_cast<size_t>(T));
      for (int64_t item = begin; item < end; ++item) {
        const int64_t b = item / Hq, h = item % Hq, kvh = h / group;
        const C* qp = &qb[static_cast<size_t>(item * Sq * D)];
        const C* kp = &kb[static_cast<size_t>((b * Hkv + kvh) * T * D)];
        const C* vp = &vb[static_cast<size_t>((b * Hkv + kvh) * T * Dv)];
        if (T > 0) gemm<C>(false, true, Sq, T, D, scale, qp, D, kp, D, C(0), scores.data(), T, nullptr);
        // The causal and window frontier sits `offset` keys to the right: the
        // past length, or for an external cache the valid length minus Sq.
        const int64_t offset = nonpad_values ? nonpad_values[b] - Sq : s.past_len;
        C* qk_row_base = qk_out ? &qk_values[static_cast<size_t>(item * Sq * T)] : nullptr;
        for (int64_t i = 0; i < Sq; ++i) {
          C* row = &scores[static_cast<size_t>(i * T)];
          if (softcap > C(0)) {
            for (int64_t j = 0; j < T; ++j) row[j] = softcap * std::tanh(row[j] / softcap);
          }
          if (qk_row_base && qk_mode_ <= 1) std::copy(row, row + T, qk_row_base + i * T);
          bool all_masked = true;
          for (int64_t j = 0; j < T; ++j) {
            C value = 0;
            if (!mask_values.empty()) {
              value = j < mask_len ? mask_values[static_cast<size_t>(b * mask_strides[0] + h * mask_strides[1] +
                                                                     i * mask_strides[2] + j * mask_strides[3])]
                                   : neg_inf;
            }
            const int64_t diff = i + offset - j;  // how far key j lies left of the query's position
            if (is_causal_ && diff < 0) value += neg_inf;
            if (left_window_ >= 0 && diff > left_window_) value += neg_inf;
            if (right_window_ >= 0 && -diff > right_window_) value += neg_inf;
            if (nonpad_values && j >= nonpad_values[b]) value += neg_inf;
            bias[static_cast<size_t>(j)] = value;
            if (!(value == neg_inf)) all_masked = false;
          }
          for (int64_t j = 0; j < T; ++j) row[j] += bias[static_cast<size_t>(j)];
          if (qk_row_base && qk_mode_ == 2) std::copy(row, row + T, qk_row_base + i * T);
          attention::softmax_row(row, T);
          // A row with no attendable key is zero, decided on the bias alone so a
          // NaN or inf logit cannot leak through.
          if (all_masked) std::fill(row, row + T, C(0));
          if (qk_row_base && qk_mode_ == 3) std::copy(row, row + T, qk_row_base + i * T);
        }
        C* yp = &y_values[static_cast<size_t>(item * Sq * Dv)];
        if (T > 0) {
          gemm<C>(false, false, Sq, Dv, T, C(1), scores.data(), T, vp, Dv, C(0), yp, Dv, nullptr);
        } else {
          std::fill(yp, yp + Sq * Dv, C(0));
        }
      }
    });

    if (s.three_d) {
      // (B, Hq, Sq, Dv) -> (B, Sq, Hq * Dv)
      std::vector<C> packed(y_values.size());
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h)
          for (int64_t i = 0; i < Sq; ++i) {
            const C* from = &y_values[static_cast<size_t>(((b * Hq + h) * Sq + i) * Dv)];
            std::copy(from, from + Dv, &packed[static_cast<size_t>(((b * Sq + i) * Hq + h) * Dv)]);
          }
      y_values.swap(packed);
    }
    store_floats(y_values.data(), static_cast<int64_t>(y_values.size()), y);
    if (qk_out) store_floats(qk_values.data(), static_cast<int64_t>(qk_values.size()), *qk_out);
    return Status::ok();
  }

  int version_;
  bool is_causal_;
  int64_t q_num_heads_, kv_num_heads_;
  bool has_heads_attr_;
  bool has_scale_;
  float scale_, softcap_;
  int64_t qk_mode_;
  int64_t left_window_, right_window_;
};

ONYX_REGISTER_CPU_KERNEL("", "Attention", 23, 23, types::floats(), AttentionKernel);
ONYX_REGISTER_CPU_KERNEL("", "Attention", 24, 24, types::floats(), AttentionKernel);
ONYX_REGISTER_CPU_KERNEL("", "Attention", 25, kLatestVersion, types::floats(), AttentionKernel);

}  // namespace
}  // namespace onyx::cpu
