// com.microsoft RotaryEmbedding (RoPE): rotates the first rotary_embedding_dim
// values of each head of each token by the angle of its position, read from
// cos_cache/sin_cache rows; pairs are (i, i + dim/2), or (2i, 2i + 1) when
// interleaved. Input is [batch, sequence, hidden] or [batch, heads, sequence, head].
#include <string>
#include <vector>

#include "providers/cpu/contrib/float_io.h"

namespace onyx::cpu {
namespace {

class RotaryEmbeddingKernel final : public Kernel {
 public:
  explicit RotaryEmbeddingKernel(const KernelInfo& info)
      : num_heads_(info.attr_int("num_heads", 0)),
        rotary_dim_(info.attr_int("rotary_embedding_dim", 0)),
        interleaved_(info.attr_int("interleaved", 0) != 0) {
    // `scale` and `is_packed_batching` change nothing on CPU (as in onnxruntime):
    // padded batches rotate by their given position_ids all the same.
    if (num_heads_ < 0 || rotary_dim_ < 0 || rotary_dim_ % 2 != 0) {
      throw Error(invalid_model(info.label(), ": attributes num_heads ", num_heads_, " and rotary_embedding_dim ", rotary_dim_,
                                " must be non-negative, rotary_embedding_dim even"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* positions = ctx.input_tensor(1);
    const Tensor* cos_cache = ctx.input_tensor(2);
    const Tensor* sin_cache = ctx.input_tensor(3);
    if (x == nullptr || !is_float_type(x->dtype()) || (x->rank() != 3 && x->rank() != 4)) {
      return invalid_argument(ctx.label(), ": input is ", x ? x->describe() : std::string("missing"),
                              ", expected a float [batch, sequence, hidden] or [batch, heads, sequence, head_size]");
    }
    if (cos_cache == nullptr || sin_cache == nullptr || cos_cache->rank() != 2 || cos_cache->shape() != sin_cache->shape() ||
        cos_cache->dtype() != x->dtype() || sin_cache->dtype() != x->dtype()) {
      return invalid_argument(ctx.label(), ": inputs cos_cache ", cos_cache ? cos_cache->describe() : std::string("missing"),
                              " and sin_cache ", sin_cache ? sin_cache->describe() : std::string("missing"), ", expected two ",
                              dtype_name(x->dtype()), "[max_sequence, rotary_dim / 2] of one shape");
    }
    const int64_t batch = x->dim(0);
    const bool per_head_layout = x->rank() == 4;
    const int64_t seq = per_head_layout ? x->dim(2) : x->dim(1);
    const int64_t max_pos = cos_cache->dim(0), half = cos_cache->dim(1);
    int64_t heads = 0, head = 0;
    if (per_head_layout) {
      heads = x->dim(1);
      head = x->dim(3);
    } else {
      const int64_t hidden = x->dim(2);
      if (rotary_dim_ > 0 && num_heads_ == 0) {
        return invalid_argument(ctx.label(), ": attribute rotary_embedding_dim needs num_heads for a 3-D input");
      }
      if (num_heads_ > 0) {
        heads = num_heads_;
      } else {
        // Without num_heads the head size is the cache's full rotation width.
        if (half <= 0 || hidden % (2 * half) != 0) {
          return invalid_argument(ctx.label(), ": hidden size ", hidden, " is not a multiple of head size ", 2 * half,
                                  " taken from cos_cache ", cos_cache->describe(), "; set num_heads");
        }
        heads = hidden / (2 * half);
      }
      if (hidden % heads != 0) {
        return invalid_argument(ctx.label(), ": hidden size ", hidden, " is not divisible by num_heads ", heads);
      }
      head = hidden / heads;
    }
    const int64_t rot = rotary_dim_ > 0 ? rotary_dim_ : head;
    if (rot > head || rot % 2 != 0 || half != rot / 2) {
      return invalid_argument(ctx.label(), ": cos_cache is ", cos_cache->describe(), ", expected [max_sequence, ", rot / 2,
                              "] for rotary dim ", rot, " of head size ", head);
    }
    if (positions == nullptr || positions->dtype() != DataType::kInt64 ||
        !((positions->rank() == 1 && positions->dim(0) == 1) || (positions->rank() == 2 && positions->dim(0) == batch && positions->dim(1) == seq))) {
      return invalid_argument(ctx.label(), ": input position_ids is ", positions ? positions->describe() : std::string("missing"),
                              ", expected int64[1] (a start position) or int64[", batch, ", ", seq, "]");
    }
    const int64_t* pos = positions->data<int64_t>();
    const bool start_only = positions->rank() == 1;
    for (int64_t i = 0; i < (start_only ? 1 : batch * seq); ++i) {
      const int64_t last = start_only ? pos[0] + seq - 1 : pos[i];
      if (pos[i] < 0 || (seq > 0 && last >= max_pos)) {
        return invalid_argument(ctx.label(), ": position ", start_only ? last : pos[i], " is out of range of cos_cache rows [0, ",
                                max_pos, ")");
      }
    }

    const std::vector<float> xf = read_floats(*x), cf = read_floats(*cos_cache), sf = read_floats(*sin_cache);
    std::vector<float> out(xf);
    // Element (b, n, s, d) lives at stride_s * s + stride_n * n + d from its batch.
    const int64_t stride_s = per_head_layout ? head : heads * head;
    const int64_t stride_n = per_head_layout ? seq * head : head;
    parallel_for(ctx.thread_pool(), batch * seq, static_cast<double>(heads * rot * 4), [&](int64_t begin, int64_t end) {
      for (int64_t bs = begin; bs < end; ++bs) {
        const int64_t b = bs / seq, s = bs % seq;
        const int64_t p = start_only ? pos[0] + s : pos[bs];
        const float* c = cf.data() + p * half;
        const float* sn = sf.data() + p * half;
        for (int64_t n = 0; n < heads; ++n) {
          const int64_t base = b * heads * seq * head + s * stride_s + n * stride_n;
          const float* src = xf.data() + base;
          float* dst = out.data() + base;
          for (int64_t i = 0; i < half; ++i) {
            const int64_t i1 = interleaved_ ? 2 * i : i;
            const int64_t i2 = interleaved_ ? 2 * i + 1 : i + half;
            dst[i1] = src[i1] * c[i] - src[i2] * sn[i];
            dst[i2] = src[i2] * c[i] + src[i1] * sn[i];
          }
        }
      }
    });
    write_floats(ctx.allocate_output(0, x->dtype(), x->shape()), out.data(), static_cast<int64_t>(out.size()));
    return Status::ok();
  }

 private:
  int64_t num_heads_;
  int64_t rotary_dim_;
  bool interleaved_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "RotaryEmbedding", 1, kLatestVersion, types::floats(), RotaryEmbeddingKernel);

}  // namespace
}  // namespace onyx::cpu
