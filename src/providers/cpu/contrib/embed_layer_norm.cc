// com.microsoft EmbedLayerNormalization: BERT's embedding layer fused. Looks up
// word, position and (optional) segment embeddings per token, sums them and
// layer-normalizes with gamma and beta; also gives the mask index (the count
// of ones in each row of the mask) and the raw embedding sum.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "providers/cpu/contrib/float_io.h"

namespace onyx::cpu {
namespace {

class EmbedLayerNormKernel final : public Kernel {
 public:
  explicit EmbedLayerNormKernel(const KernelInfo& info) : epsilon_(info.attr_float("epsilon", 1e-12f)) {}

  Status compute(KernelContext& ctx) const override {
    auto in = [&](size_t i) { return ctx.input_count() > i ? ctx.input_tensor(i) : nullptr; };
    const Tensor* input_ids = in(0);
    const Tensor* segment_ids = in(1);
    const Tensor* word = in(2);
    const Tensor* position = in(3);
    const Tensor* segment = in(4);
    const Tensor* gamma = in(5);
    const Tensor* beta = in(6);
    const Tensor* mask = in(7);
    const Tensor* position_ids = in(8);

    if (input_ids == nullptr || input_ids->rank() != 2 || input_ids->dtype() != DataType::kInt32) {
      return invalid_argument(ctx.label(), ": input input_ids is ", input_ids ? input_ids->describe() : std::string("missing"),
                              ", expected int32[batch, sequence]");
    }
    const int64_t batch = input_ids->dim(0), seq = input_ids->dim(1);
    if (word == nullptr || word->rank() != 2 || !is_float_type(word->dtype())) {
      return invalid_argument(ctx.label(), ": input word_embedding is ", word ? word->describe() : std::string("missing"),
                              ", expected a float [vocabulary, hidden]");
    }
    const DataType dtype = word->dtype();
    const int64_t hidden = word->dim(1);
    auto check_table = [&](const Tensor* t, const char* name) -> Status {
      if (t != nullptr && (t->rank() != 2 || t->dtype() != dtype || t->dim(1) != hidden)) {
        return invalid_argument(ctx.label(), ": input ", name, " is ", t->describe(), ", expected ", dtype_name(dtype), "[rows, ", hidden, "]");
      }
      return Status::ok();
    };
    if (position == nullptr) return invalid_argument(ctx.label(), ": input position_embedding is missing");
    ONYX_RETURN_IF_ERROR(check_table(position, "position_embedding"));
    ONYX_RETURN_IF_ERROR(check_table(segment, "segment_embedding"));
    for (const auto& [t, name] : {std::pair<const Tensor*, const char*>{gamma, "gamma"}, {beta, "beta"}}) {
      if (t == nullptr || t->dtype() != dtype || t->rank() != 1 || t->dim(0) != hidden) {
        return invalid_argument(ctx.label(), ": input ", name, " is ", t ? t->describe() : std::string("missing"), ", expected ",
                                dtype_name(dtype), "[", hidden, "]");
      }
    }
    if ((segment_ids == nullptr) != (segment == nullptr)) {
      return invalid_argument(ctx.label(), ": segment_ids and segment_embedding must be given together");
    }
    for (const auto& [t, name] : {std::pair<const Tensor*, const char*>{segment_ids, "segment_ids"}, {mask, "mask"}}) {
      if (t != nullptr && (t->dtype() != DataType::kInt32 || t->shape() != input_ids->shape())) {
        return invalid_argument(ctx.label(), ": input ", name, " is ", t->describe(), ", expected int32[", batch, ", ", seq, "]");
      }
    }
    bool positions_per_batch = false;
    if (position_ids != nullptr) {
      if (position_ids->dtype() != DataType::kInt32 || position_ids->rank() != 2 ||
          (position_ids->dim(0) != batch && position_ids->dim(0) != 1) || position_ids->dim(1) != seq) {
        return invalid_argument(ctx.label(), ": input position_ids is ", position_ids->describe(), ", expected int32[", batch, " or 1, ",
                                seq, "]");
      }
      positions_per_batch = position_ids->dim(0) == batch && batch != 1;
    }

    // Validate every index before reading any table.
    const int32_t* ids = input_ids->data<int32_t>();
    const int32_t* seg_ids = segment_ids ? segment_ids->data<int32_t>() : nullptr;
    const int32_t* pos_ids = position_ids ? position_ids->data<int32_t>() : nullptr;
    const int64_t tokens = batch * seq;
    for (int64_t t = 0; t < tokens; ++t) {
      if (ids[t] < 0 || ids[t] >= word->dim(0)) {
        return invalid_argument(ctx.label(), ": input_ids holds ", ids[t], ", out of range [0, ", word->dim(0), ")");
      }
      if (seg_ids != nullptr && (seg_ids[t] < 0 || seg_ids[t] >= segment->dim(0))) {
        return invalid_argument(ctx.label(), ": segment_ids holds ", seg_ids[t], ", out of range [0, ", segment->dim(0), ")");
      }
      const int64_t pos = pos_ids ? pos_ids[positions_per_batch ? t : t % seq] : t % seq;
      if (pos < 0 || pos >= position->dim(0)) {
        return invalid_argument(ctx.label(), ": position ", pos, " is out of range of position_embedding ", position->describe());
      }
    }

    // Float tables are read in place (BERT's word table is 94 MB); other
    // types are widened once per run.
    std::vector<float> wv, pv, sv, gv, bv;
    auto floats = [&](const Tensor* t, std::vector<float>& buffer) -> const float* {
      if (t == nullptr) return nullptr;
      if (t->dtype() == DataType::kFloat) return t->data<float>();
      buffer = read_floats(*t);
      return buffer.data();
    };
    const float* wf = floats(word, wv);
    const float* pf = floats(position, pv);
    const float* sf = floats(segment, sv);
    const float* gf = floats(gamma, gv);
    const float* bf = floats(beta, bv);
    std::vector<float> sum(static_cast<size_t>(tokens * hidden)), out(static_cast<size_t>(tokens * hidden));
    parallel_for(ctx.thread_pool(), tokens, static_cast<double>(hidden * 8), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t pos = pos_ids ? pos_ids[positions_per_batch ? t : t % seq] : t % seq;
        const float* w = wf + ids[t] * hidden;
        const float* p = pf + pos * hidden;
        const float* sg = seg_ids ? sf + seg_ids[t] * hidden : nullptr;
        float* e = sum.data() + t * hidden;
        double total = 0.0, total_sq = 0.0;
        for (int64_t h = 0; h < hidden; ++h) {
          e[h] = w[h] + p[h] + (sg ? sg[h] : 0.0f);
          total += e[h];
          total_sq += static_cast<double>(e[h]) * e[h];
        }
        const double mean = total / static_cast<double>(hidden);
        const double var = std::max(total_sq / static_cast<double>(hidden) - mean * mean, 0.0);
        const float inv = static_cast<float>(1.0 / std::sqrt(var + epsilon_));
        float* o = out.data() + t * hidden;
        for (int64_t h = 0; h < hidden; ++h) o[h] = (e[h] - static_cast<float>(mean)) * inv * gf[h] + bf[h];
      }
    });
    write_floats(ctx.allocate_output(0, dtype, {batch, seq, hidden}), out.data(), static_cast<int64_t>(out.size()));
    if (ctx.output_count() > 1 && ctx.output_requested(1)) {
      // The mask index counts the ones of each mask row (0 without a mask).
      int32_t* mask_index = ctx.allocate_output(1, DataType::kInt32, {batch}).data<int32_t>();
      for (int64_t b = 0; b < batch; ++b) {
        int32_t count = 0;
        if (mask != nullptr) {
          for (int64_t s = 0; s < seq; ++s) count += mask->data<int32_t>()[b * seq + s] == 1 ? 1 : 0;
        }
        mask_index[b] = count;
      }
    }
    if (ctx.output_count() > 2 && ctx.output_requested(2)) {
      write_floats(ctx.allocate_output(2, dtype, {batch, seq, hidden}), sum.data(), static_cast<int64_t>(sum.size()));
    }
    return Status::ok();
  }

 private:
  float epsilon_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "EmbedLayerNormalization", 1, kLatestVersion, types::floats(), EmbedLayerNormKernel);

}  // namespace
}  // namespace onyx::cpu
