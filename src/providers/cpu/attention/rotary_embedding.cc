// RotaryEmbedding (opset 23): rotates pairs of each head's leading
// rotary_embedding_dim features by position-dependent angles (RoPE), pairing
// the two halves or, when interleaved, adjacent features.
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class RotaryEmbeddingKernel final : public Kernel {
 public:
  explicit RotaryEmbeddingKernel(const KernelInfo& info)
      : interleaved_(info.attr_int("interleaved", 0) != 0),
        rotary_dim_(info.attr_int("rotary_embedding_dim", 0)),
        num_heads_(info.attr_int("num_heads", 0)) {
    if (rotary_dim_ < 0 || num_heads_ < 0) {
      throw Error(invalid_model(info.label(), ": attributes rotary_embedding_dim ", rotary_dim_, " and num_heads ", num_heads_,
                                " must not be negative"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* cos = ctx.input_count() > 1 ? ctx.input_tensor(1) : nullptr;
    const Tensor* sin = ctx.input_count() > 2 ? ctx.input_tensor(2) : nullptr;
    const Tensor* positions = ctx.input_count() > 3 ? ctx.input_tensor(3) : nullptr;
    if (x == nullptr || cos == nullptr || sin == nullptr) {
      return invalid_argument(ctx.label(), ": inputs X, cos_cache and sin_cache are required");
    }
    int64_t batch = 0, heads = 0, seq = 0, head_size = 0;
    // Strides (in elements) of X for batch, head and sequence; features are contiguous.
    int64_t stride_b = 0, stride_h = 0, stride_s = 0;
    if (x->rank() == 4) {
      batch = x->dim(0), heads = x->dim(1), seq = x->dim(2), head_size = x->dim(3);
      stride_s = head_size, stride_h = seq * head_size, stride_b = heads * seq * head_size;
    } else if (x->rank() == 3) {
      if (num_heads_ <= 0 || x->dim(2) % num_heads_ != 0) {
        return invalid_argument(ctx.label(), ": 3-D input X ", x->describe(), " needs attribute num_heads dividing its hidden size, got ",
                                num_heads_);
      }
      batch = x->dim(0), seq = x->dim(1), heads = num_heads_, head_size = x->dim(2) / num_heads_;
      stride_h = head_size, stride_s = heads * head_size, stride_b = seq * heads * head_size;
    } else {
      return invalid_argument(ctx.label(), ": input X is ", x->describe(),
                              ", expected rank 4 (batch, heads, sequence, head_size) or 3 (batch, sequence, hidden)");
    }
    const int64_t rotary_dim = rotary_dim_ == 0 ? head_size : rotary_dim_;
    if (rotary_dim > head_size || rotary_dim % 2 != 0) {
      return invalid_argument(ctx.label(), ": rotary_embedding_dim ", rotary_dim, " must be even and at most the head size ", head_size);
    }
    const int64_t half = rotary_dim / 2;
    if (cos->dtype() != x->dtype() || sin->dtype() != x->dtype() || cos->shape() != sin->shape()) {
      return invalid_argument(ctx.label(), ": cos_cache ", cos->describe(), " and sin_cache ", sin->describe(),
                              " must have one shape and the element type of X ", x->describe());
    }
    int64_t max_position = 0;
    if (positions != nullptr) {
      if (positions->dtype() != DataType::kInt64 || positions->rank() != 2 || positions->dim(0) != batch || positions->dim(1) != seq) {
        return invalid_argument(ctx.label(), ": input position_ids is ", positions->describe(), ", expected int64[", batch, ", ", seq, "]");
      }
      if (cos->rank() != 2 || cos->dim(1) != half) {
        return invalid_argument(ctx.label(), ": cos_cache is ", cos->describe(), ", expected [max_position_id_plus_1, ", half,
                                "] with position_ids");
      }
      max_position = cos->dim(0);
      const int64_t* p = positions->data<int64_t>();
      for (int64_t i = 0; i < positions->size(); ++i) {
        if (p[i] < 0 || p[i] >= max_position) {
          return invalid_argument(ctx.label(), ": position_ids holds ", p[i], ", outside [0, ", max_position, ")");
        }
      }
    } else if (cos->rank() != 3 || cos->dim(0) != batch || cos->dim(1) != seq || cos->dim(2) != half) {
      return invalid_argument(ctx.label(), ": cos_cache is ", cos->describe(), ", expected [", batch, ", ", seq, ", ", half,
                              "] without position_ids");
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    const bool interleaved = interleaved_;
    Status status = dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xp = x->data<T>();
      const T* cp = cos->data<T>();
      const T* sp = sin->data<T>();
      const int64_t* pos = positions ? positions->data<int64_t>() : nullptr;
      T* yp = y.data<T>();
      parallel_for(ctx.thread_pool(), batch * seq, static_cast<double>(heads * head_size * 4), [&](int64_t begin, int64_t end) {
        for (int64_t bs = begin; bs < end; ++bs) {
          const int64_t b = bs / seq, s = bs % seq;
          const int64_t cache_row = pos ? pos[bs] : bs;
          const T* c_row = cp + cache_row * half;
          const T* s_row = sp + cache_row * half;
          for (int64_t h = 0; h < heads; ++h) {
            const int64_t base = b * stride_b + h * stride_h + s * stride_s;
            const T* in = xp + base;
            T* out = yp + base;
            for (int64_t i = 0; i < half; ++i) {
              const int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
              const C x1 = static_cast<C>(in[i1]), x2 = static_cast<C>(in[i2]);
              const C c = static_cast<C>(c_row[i]), sn = static_cast<C>(s_row[i]);
              out[i1] = static_cast<T>(c * x1 - sn * x2);
              out[i2] = static_cast<T>(sn * x1 + c * x2);
            }
            for (int64_t i = rotary_dim; i < head_size; ++i) out[i] = in[i];
          }
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return invalid_argument(ctx.label(), ": input X: ", status.message());
    return Status::ok();
  }

 private:
  bool interleaved_;
  int64_t rotary_dim_, num_heads_;
};

ONYX_REGISTER_CPU_KERNEL("", "RotaryEmbedding", 23, kLatestVersion,
                         (std::vector<DataType>{DataType::kFloat, DataType::kFloat16, DataType::kBFloat16}), RotaryEmbeddingKernel);

}  // namespace
}  // namespace onyx::cpu
