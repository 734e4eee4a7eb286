// Conv or ConvTranspose followed by BatchNormalization (inference) becomes
// one node: the normalisation is a per-output-channel scale and shift, folded
// into the weights and bias: W' = W * s, B' = (B - mean) * s + beta,
// s = gamma / sqrt(var + eps). Conv's W is [O, I/group, k...]; ConvTranspose's
// is [I, O/group, k...], output channel g * O/group + j for input channel i
// of group g = i / (I/group).
#include <cmath>
#include <vector>

#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

class ConvBatchNormFusion final : public Pass {
 public:
  std::string name() const override { return "conv_batchnorm_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& bn = ctx.node(index);
    if (!is_op(bn, "BatchNormalization") || bn.inputs.size() != 5 || bn.outputs.empty()) return std::nullopt;
    if (attribute_int(bn, "training_mode", 0) != 0 || bn.since_version < 6) return std::nullopt;
    for (size_t o = 1; o < bn.outputs.size(); ++o) {
      if (bn.outputs[o] != graph::kNoValue && (ctx.is_pinned(bn.outputs[o]) || !ctx.consumers(bn.outputs[o]).empty())) {
        return std::nullopt;
      }
    }
    const int32_t x = bn.inputs[0];
    const int32_t conv_index = ctx.producer_index(x);
    if (conv_index < 0 || !ctx.only_used_by(x, index)) return std::nullopt;
    const graph::Node& conv = ctx.node(static_cast<size_t>(conv_index));
    const bool transposed = is_op(conv, "ConvTranspose");
    if ((!transposed && !is_op(conv, "Conv")) || conv.inputs.size() < 2 || conv.outputs.size() != 1) {
      return std::nullopt;
    }
    const Tensor* w = ctx.constant(conv.inputs[1]);
    const Tensor* b = conv.inputs.size() > 2 && conv.inputs[2] >= 0 ? ctx.constant(conv.inputs[2]) : nullptr;
    if (w == nullptr || w->dtype() != DataType::kFloat || w->rank() < 3) return std::nullopt;
    if (conv.inputs.size() > 2 && conv.inputs[2] >= 0 && b == nullptr) return std::nullopt;
    const int64_t group = attribute_int(conv, "group", 1);
    if (group < 1 || (transposed && w->dim(0) % group != 0)) return std::nullopt;
    const int64_t channels = transposed ? w->dim(1) * group : w->dim(0);
    const Tensor* params[4];
    for (int i = 0; i < 4; ++i) {
      params[i] = ctx.constant(bn.inputs[static_cast<size_t>(i + 1)]);
      if (params[i] == nullptr || params[i]->dtype() != DataType::kFloat || params[i]->size() != channels) {
        return std::nullopt;
      }
    }
    if (b != nullptr && (b->dtype() != DataType::kFloat || b->size() != channels)) return std::nullopt;
    const float epsilon = attribute_float(bn, "epsilon", 1e-5f);
    const float* gamma = params[0]->data<float>();
    const float* beta = params[1]->data<float>();
    const float* mean = params[2]->data<float>();
    const float* var = params[3]->data<float>();
    Tensor new_w(DataType::kFloat, w->shape());
    Tensor new_b(DataType::kFloat, {channels});
    std::vector<float> scale(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      scale[static_cast<size_t>(c)] = gamma[c] / std::sqrt(var[c] + epsilon);
      const float bias = b != nullptr ? b->data<float>()[c] : 0.0f;
      new_b.data<float>()[c] = (bias - mean[c]) * scale[static_cast<size_t>(c)] + beta[c];
    }
    // W as rows of `taps` weights, each row for one (first, second) pair of
    // its leading dims; the row's output channel depends on the layout.
    const int64_t rows = w->dim(0) * w->dim(1), taps = w->size() / std::max<int64_t>(rows, 1);
    const int64_t in_per_group = transposed ? w->dim(0) / group : 0, out_per_group = w->dim(1);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t first = r / w->dim(1), second = r % w->dim(1);
      const int64_t c = transposed ? first / in_per_group * out_per_group + second : first;
      const float s = scale[static_cast<size_t>(c)];
      for (int64_t t = 0; t < taps; ++t) new_w.data<float>()[r * taps + t] = w->data<float>()[r * taps + t] * s;
    }
    Patch patch;
    patch.remove(static_cast<size_t>(conv_index));
    patch.remove(index);
    graph::Node fused = conv;
    const std::string base = conv.name.empty() ? "conv" : conv.name;
    fused.inputs = {conv.inputs[0], patch.new_constant(base + "_W_bn", new_w), patch.new_constant(base + "_B_bn", new_b)};
    fused.outputs = {bn.outputs[0]};
    patch.add_nodes.push_back(std::move(fused));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_conv_batchnorm_fusion_pass() { return std::make_unique<ConvBatchNormFusion>(); }

}  // namespace onyx::optimizer
