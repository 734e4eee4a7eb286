// Conv followed by Add of a per-channel constant becomes Conv with that bias;
// Conv followed by Mul of a per-channel constant scales its weights and bias.
// BatchNormalization (inference) followed by either folds it into its own
// scale and bias the same way (Caffe2 exports follow every BN with a Mul and
// an Add). "Per channel" means a constant of shape [C,1,...,1],
// [1,C,1,...,1] or one element.
#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

// The constant's values per output channel (size C), or nullopt when its
// shape does not broadcast against [N, C, spatial...] one value per channel.
std::optional<std::vector<float>> per_channel(const Tensor& t, int64_t channels, size_t conv_rank) {
  if (t.dtype() != DataType::kFloat || t.rank() > static_cast<int64_t>(conv_rank)) return std::nullopt;
  if (t.size() == 1) return std::vector<float>(static_cast<size_t>(channels), t.data<float>()[0]);
  if (t.size() != channels) return std::nullopt;
  // Aligned to the right, the channel dim of the output is rank-1 - (conv_rank - 2) from the end.
  const int64_t channel_axis = t.rank() - static_cast<int64_t>(conv_rank) + 1;
  if (channel_axis < 0) return std::nullopt;
  for (int64_t d = 0; d < t.rank(); ++d) {
    if (d != channel_axis && t.dim(d) != 1) return std::nullopt;
  }
  return std::vector<float>(t.data<float>(), t.data<float>() + channels);
}

// y = BN(x) then y * c (or y + c): gamma and beta scale by c (beta moves by c).
std::optional<Patch> fold_into_batchnorm(const PassContext& ctx, size_t op_index, size_t bn_index, int32_t other) {
  const graph::Node& op = ctx.node(op_index);
  const graph::Node& bn = ctx.node(bn_index);
  if (bn.inputs.size() != 5 || bn.since_version < 6 || attribute_int(bn, "training_mode", 0) != 0) return std::nullopt;
  for (size_t o = 1; o < bn.outputs.size(); ++o) {
    if (bn.outputs[o] != graph::kNoValue) return std::nullopt;
  }
  const Tensor* c = ctx.constant(other);
  const Tensor* gamma = ctx.constant(bn.inputs[1]);
  const Tensor* beta = ctx.constant(bn.inputs[2]);
  const graph::TypeAndShape& y = ctx.info(bn.outputs[0]);
  if (c == nullptr || gamma == nullptr || beta == nullptr || !y.has_shape || y.shape.size() < 2) return std::nullopt;
  if (gamma->dtype() != DataType::kFloat || beta->dtype() != DataType::kFloat || gamma->size() != beta->size()) {
    return std::nullopt;
  }
  const int64_t channels = gamma->size();
  auto values = per_channel(*c, channels, y.shape.size());
  if (!values || ctx.elem_type(op.outputs[0]) != DataType::kFloat) return std::nullopt;
  Tensor new_gamma(DataType::kFloat, {channels});
  Tensor new_beta(DataType::kFloat, {channels});
  const bool is_add = is_op(op, "Add");
  for (int64_t ch = 0; ch < channels; ++ch) {
    const float v = (*values)[static_cast<size_t>(ch)];
    new_gamma.data<float>()[ch] = gamma->data<float>()[ch] * (is_add ? 1.0f : v);
    new_beta.data<float>()[ch] = is_add ? beta->data<float>()[ch] + v : beta->data<float>()[ch] * v;
  }
  Patch patch;
  graph::Node fused = bn;
  const std::string base = bn.name.empty() ? "bn" : bn.name;
  fused.inputs[1] = patch.new_constant(base + (is_add ? "_scale_add" : "_scale_mul"), new_gamma);
  fused.inputs[2] = patch.new_constant(base + (is_add ? "_B_add" : "_B_mul"), new_beta);
  fused.outputs = {op.outputs[0]};
  patch.remove(bn_index);
  patch.remove(op_index);
  patch.add_nodes.push_back(std::move(fused));
  return patch;
}

class ConvAddMulFusion final : public Pass {
 public:
  std::string name() const override { return "conv_add_mul_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& op = ctx.node(index);
    const bool is_add = is_op(op, "Add");
    if ((!is_add && !is_op(op, "Mul")) || op.inputs.size() != 2 || op.outputs.size() != 1) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      const int32_t x = op.inputs[static_cast<size_t>(side)];
      const int32_t other = op.inputs[static_cast<size_t>(1 - side)];
      const int32_t conv_index = ctx.producer_index(x);
      if (conv_index < 0 || !ctx.only_used_by(x, index)) continue;
      const graph::Node& conv = ctx.node(static_cast<size_t>(conv_index));
      if (is_op(conv, "BatchNormalization")) {
        if (std::optional<Patch> patch = fold_into_batchnorm(ctx, index, static_cast<size_t>(conv_index), other)) {
          return patch;
        }
        continue;
      }
      if (!is_op(conv, "Conv") || conv.inputs.size() < 2 || conv.outputs.size() != 1) continue;
      const Tensor* w = ctx.constant(conv.inputs[1]);
      const Tensor* c = ctx.constant(other);
      if (w == nullptr || c == nullptr || w->dtype() != DataType::kFloat || w->rank() < 3) continue;
      const bool has_bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
      const Tensor* b = has_bias ? ctx.constant(conv.inputs[2]) : nullptr;
      const int64_t channels = w->dim(0);
      if (has_bias && (b == nullptr || b->dtype() != DataType::kFloat || b->size() != channels)) continue;
      auto values = per_channel(*c, channels, static_cast<size_t>(w->rank()));
      if (!values) continue;
      // The op's result must keep the conv output's shape (no broadcast growth).
      if (ctx.elem_type(op.outputs[0]) != DataType::kFloat) continue;
      Tensor new_b(DataType::kFloat, {channels});
      for (int64_t ch = 0; ch < channels; ++ch) new_b.data<float>()[ch] = b != nullptr ? b->data<float>()[ch] : 0.0f;
      Patch patch;
      graph::Node fused = conv;
      const std::string base = conv.name.empty() ? "conv" : conv.name;
      if (is_add) {
        for (int64_t ch = 0; ch < channels; ++ch) new_b.data<float>()[ch] += (*values)[static_cast<size_t>(ch)];
        fused.inputs = {conv.inputs[0], conv.inputs[1], patch.new_constant(base + "_B_add", new_b)};
      } else {
        Tensor new_w(DataType::kFloat, w->shape());
        const int64_t per = w->size() / std::max<int64_t>(channels, 1);
        for (int64_t ch = 0; ch < channels; ++ch) {
          const float s = (*values)[static_cast<size_t>(ch)];
          for (int64_t i = 0; i < per; ++i) new_w.data<float>()[ch * per + i] = w->data<float>()[ch * per + i] * s;
          new_b.data<float>()[ch] *= s;
        }
        fused.inputs = {conv.inputs[0], patch.new_constant(base + "_W_mul", new_w)};
        if (has_bias) fused.inputs.push_back(patch.new_constant(base + "_B_mul", new_b));
      }
      fused.outputs = {op.outputs[0]};
      patch.remove(static_cast<size_t>(conv_index));
      patch.remove(index);
      patch.add_nodes.push_back(std::move(fused));
      return patch;
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<Pass> make_conv_add_mul_fusion_pass() { return std::make_unique<ConvAddMulFusion>(); }

}  // namespace onyx::optimizer
