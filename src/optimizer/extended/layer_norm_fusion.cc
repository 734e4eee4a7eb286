// LayerNormalization over the last axis from its decomposed forms:
//   PyTorch: d = x - mean(x); y = d / sqrt(mean(d^2) + eps) * gamma + beta
//   TensorFlow: r = gamma / sqrt(mean((x - mean)^2) + eps); y = x * r + (beta - mean * r)
// into ONNX LayerNormalization (opset 17 kernel) with axis -1; and RMSNorm
// (LLaMA, T5: y = x / sqrt(mean(x^2) + eps) * gamma, the reciprocal square
// root written as Reciprocal(Sqrt), Div(1, Sqrt) or a Div of x) into
// SimplifiedLayerNormalization, an onnxruntime contrib op of the ONNX domain.
#include <unordered_set>

#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

// Collects the nodes of one candidate pattern and checks that every value
// they produce, except the final result, is read only inside the pattern.
class Group {
 public:
  explicit Group(const PassContext& ctx) : ctx_(ctx) {}
  void add(size_t n) { nodes_.insert(n); }
  bool contains(size_t n) const { return nodes_.count(n) != 0; }
  bool closed(int32_t result) const {
    for (size_t n : nodes_) {
      for (int32_t out : ctx_.node(n).outputs) {
        if (out < 0 || out == result) continue;
        if (ctx_.is_pinned(out)) return false;
        for (size_t user : ctx_.consumers(out)) {
          if (!contains(user)) return false;
        }
      }
    }
    return true;
  }
  const std::unordered_set<size_t>& nodes() const { return nodes_; }

 private:
  const PassContext& ctx_;
  std::unordered_set<size_t> nodes_;
};

// The node among `value`'s consumers that is `op_type` and satisfies `pred`.
template <typename Pred>
std::optional<size_t> consumer_op(const PassContext& ctx, int32_t value, const char* op_type, Pred pred) {
  for (size_t user : ctx.consumers(value)) {
    const graph::Node& n = ctx.node(user);
    if (is_op(n, op_type) && pred(n)) return user;
  }
  return std::nullopt;
}

std::optional<int32_t> other_input(const graph::Node& n, int32_t value) {
  if (n.inputs.size() != 2) return std::nullopt;
  if (n.inputs[0] == value) return n.inputs[1];
  if (n.inputs[1] == value) return n.inputs[0];
  return std::nullopt;
}

// True when the ReduceMean reduces exactly the last axis of `rank`, keeping dims.
bool reduces_last_axis(const PassContext& ctx, const graph::Node& r, size_t rank) {
  if (!is_op(r, "ReduceMean") || r.inputs.empty() || r.outputs.size() != 1) return false;
  if (attribute_int(r, "keepdims", 1) != 1) return false;
  std::vector<int64_t> axes;
  if (const graph::Attribute* a = r.attribute("axes")) axes = a->ints;
  if (r.inputs.size() > 1 && r.inputs[1] >= 0) {
    const Tensor* t = ctx.constant(r.inputs[1]);
    if (t == nullptr || t->dtype() != DataType::kInt64) return false;
    axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->size());
  }
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == static_cast<int64_t>(rank) - 1);
}


// The statistics tail both norms share: from the squares (a value read by a
// ReduceMean over the last axis), ReduceMean -> Add(eps) -> Sqrt. Adds the
// three nodes to `group`; gives epsilon and the standard deviation's value.
struct StdDev {
  double epsilon;
  int32_t value;
};

std::optional<StdDev> std_dev_of_squares(const PassContext& ctx, int32_t squares, size_t rank, Group& group) {
  auto var = consumer_op(ctx, squares, "ReduceMean",
                         [&](const graph::Node& n) { return reduces_last_axis(ctx, n, rank); });
  if (!var) return std::nullopt;
  group.add(*var);
  const int32_t var_out = ctx.node(*var).outputs[0];
  std::optional<double> epsilon;
  auto add_eps = consumer_op(ctx, var_out, "Add", [&](const graph::Node& n) {
    auto o = other_input(n, var_out);
    if (o) epsilon = ctx.scalar(*o);
    return o && epsilon;
  });
  if (!add_eps) return std::nullopt;
  group.add(*add_eps);
  auto sqrt_node = consumer_op(ctx, ctx.node(*add_eps).outputs[0], "Sqrt", [](const graph::Node&) { return true; });
  if (!sqrt_node) return std::nullopt;
  group.add(*sqrt_node);
  return StdDev{*epsilon, ctx.node(*sqrt_node).outputs[0]};
}

class LayerNormFusion final : public Pass {
 public:
  std::string name() const override { return "layer_norm_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& mean_node = ctx.node(index);
    if (mean_node.inputs.empty() || mean_node.inputs[0] < 0) return std::nullopt;
    const int32_t x = mean_node.inputs[0];
    const graph::TypeAndShape& xi = ctx.info(x);
    if (!xi.has_shape || xi.shape.empty() || !xi.shape.back().is_known()) return std::nullopt;
    if (ctx.elem_type(x) != DataType::kFloat) return std::nullopt;
    const size_t rank = xi.shape.size();
    const int64_t width = xi.shape.back().value;
    if (!reduces_last_axis(ctx, mean_node, rank)) return std::nullopt;
    if (!ctx.has_kernel("", "LayerNormalization", 17)) return std::nullopt;
    const int32_t mean = mean_node.outputs[0];
    Group group(ctx);
    group.add(index);
    // d = x - mean
    auto sub = consumer_op(ctx, mean, "Sub", [&](const graph::Node& n) {
      return n.inputs.size() == 2 && n.inputs[0] == x && n.inputs[1] == mean;
    });
    if (!sub) return std::nullopt;
    group.add(*sub);
    const int32_t d = ctx.node(*sub).outputs[0];
    // d^2 as Pow(d, 2) or Mul(d, d)
    std::optional<size_t> square = consumer_op(ctx, d, "Pow", [&](const graph::Node& n) {
      return n.inputs.size() == 2 && n.inputs[0] == d && ctx.is_constant_value(n.inputs[1], 2.0);
    });
    if (!square) {
      square = consumer_op(ctx, d, "Mul", [&](const graph::Node& n) {
        return n.inputs.size() == 2 && n.inputs[0] == d && n.inputs[1] == d;
      });
    }
    if (!square) return std::nullopt;
    group.add(*square);
    const std::optional<StdDev> sd = std_dev_of_squares(ctx, ctx.node(*square).outputs[0], rank, group);
    if (!sd) return std::nullopt;
    const std::optional<double> epsilon = sd->epsilon;
    const int32_t std_dev = sd->value;
    auto vector_constant = [&](int32_t v) {
      const Tensor* t = ctx.constant(v);
      return t != nullptr && t->dtype() == DataType::kFloat && t->rank() == 1 && t->size() == width;
    };
    int32_t gamma = -1, beta = -1, result = -1;
    if (auto div = consumer_op(ctx, std_dev, "Div", [&](const graph::Node& n) {
          return n.inputs.size() == 2 && n.inputs[0] == d && n.inputs[1] == std_dev;
        })) {
      // PyTorch: (d / std) * gamma + beta
      group.add(*div);
      const int32_t normalized = ctx.node(*div).outputs[0];
      auto mul = consumer_op(ctx, normalized, "Mul", [&](const graph::Node& n) {
        auto o = other_input(n, normalized);
        return o && vector_constant(*o);
      });
      if (!mul) return std::nullopt;
      group.add(*mul);
      gamma = *other_input(ctx.node(*mul), normalized);
      const int32_t scaled = ctx.node(*mul).outputs[0];
      auto add = consumer_op(ctx, scaled, "Add", [&](const graph::Node& n) {
        auto o = other_input(n, scaled);
        return o && vector_constant(*o);
      });
      if (!add) return std::nullopt;
      group.add(*add);
      beta = *other_input(ctx.node(*add), scaled);
      result = ctx.node(*add).outputs[0];
    } else if (auto recip = consumer_op(ctx, std_dev, "Reciprocal", [](const graph::Node&) { return true; })) {
      // TensorFlow: r = gamma / std; x * r + (beta - mean * r)
      group.add(*recip);
      const int32_t inv = ctx.node(*recip).outputs[0];
      auto mul_gamma = consumer_op(ctx, inv, "Mul", [&](const graph::Node& n) {
        auto o = other_input(n, inv);
        return o && vector_constant(*o);
      });
      if (!mul_gamma) return std::nullopt;
      group.add(*mul_gamma);
      gamma = *other_input(ctx.node(*mul_gamma), inv);
      const int32_t r = ctx.node(*mul_gamma).outputs[0];
      auto mul_x = consumer_op(ctx, r, "Mul", [&](const graph::Node& n) { return other_input(n, r) == x; });
      auto mul_mean = consumer_op(ctx, r, "Mul", [&](const graph::Node& n) { return other_input(n, r) == mean; });
      if (!mul_x || !mul_mean) return std::nullopt;
      group.add(*mul_x);
      group.add(*mul_mean);
      const int32_t shift = ctx.node(*mul_mean).outputs[0];
      auto sub_beta = consumer_op(ctx, shift, "Sub", [&](const graph::Node& n) {
        return n.inputs.size() == 2 && n.inputs[1] == shift && vector_constant(n.inputs[0]);
      });
      if (!sub_beta) return std::nullopt;
      group.add(*sub_beta);
      beta = ctx.node(*sub_beta).inputs[0];
      const int32_t a = ctx.node(*mul_x).outputs[0];
      const int32_t b = ctx.node(*sub_beta).outputs[0];
      auto add = consumer_op(ctx, a, "Add", [&](const graph::Node& n) { return other_input(n, a) == b; });
      if (!add) return std::nullopt;
      group.add(*add);
      result = ctx.node(*add).outputs[0];
    } else {
      return std::nullopt;
    }
    if (!group.closed(result)) return std::nullopt;
    Patch patch;
    for (size_t n : group.nodes()) patch.remove(n);
    graph::Node ln = make_node("LayerNormalization", "", 17, {x, gamma, beta}, {result},
                               mean_node.name.empty() ? "LayerNorm" : mean_node.name + "_layer_norm");
    ln.attributes["axis"] = graph::Attribute::make_int("axis", -1);
    ln.attributes["epsilon"] = graph::Attribute::make_float("epsilon", static_cast<float>(*epsilon));
    patch.add_nodes.push_back(std::move(ln));
    return patch;
  }
};

class RmsNormFusion final : public Pass {
 public:
  std::string name() const override { return "rms_norm_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    // From the square: Pow(x, 2) or Mul(x, x).
    const graph::Node& square = ctx.node(index);
    if (square.inputs.size() != 2 || square.outputs.size() != 1) return std::nullopt;
    const int32_t x = square.inputs[0];
    const bool is_square = (is_op(square, "Pow") && ctx.is_constant_value(square.inputs[1], 2.0)) ||
                           (is_op(square, "Mul") && square.inputs[1] == x);
    if (!is_square || x < 0 || ctx.elem_type(x) != DataType::kFloat) return std::nullopt;
    const graph::TypeAndShape& xi = ctx.info(x);
    if (!xi.has_shape || xi.shape.empty() || !xi.shape.back().is_known()) return std::nullopt;
    const size_t rank = xi.shape.size();
    const int64_t width = xi.shape.back().value;
    if (!ctx.has_op("", "SimplifiedLayerNormalization")) return std::nullopt;
    Group group(ctx);
    group.add(index);
    const std::optional<StdDev> sd = std_dev_of_squares(ctx, square.outputs[0], rank, group);
    if (!sd) return std::nullopt;
    const std::optional<double> epsilon = sd->epsilon;
    const int32_t std_dev = sd->value;
    // normalized = x / std, as Div(x, std) or x * (1 / std).
    int32_t normalized = -1;
    if (auto div = consumer_op(ctx, std_dev, "Div", [&](const graph::Node& n) {
          return n.inputs.size() == 2 && n.inputs[0] == x && n.inputs[1] == std_dev;
        })) {
      group.add(*div);
      normalized = ctx.node(*div).outputs[0];
    } else {
      std::optional<size_t> inv = consumer_op(ctx, std_dev, "Reciprocal", [](const graph::Node&) { return true; });
      if (!inv) {
        inv = consumer_op(ctx, std_dev, "Div", [&](const graph::Node& n) {
          return n.inputs.size() == 2 && n.inputs[1] == std_dev && ctx.is_constant_value(n.inputs[0], 1.0);
        });
      }
      if (!inv) return std::nullopt;
      group.add(*inv);
      const int32_t r = ctx.node(*inv).outputs[0];
      auto mul_x = consumer_op(ctx, r, "Mul", [&](const graph::Node& n) { return other_input(n, r) == x; });
      if (!mul_x) return std::nullopt;
      group.add(*mul_x);
      normalized = ctx.node(*mul_x).outputs[0];
    }
    // * gamma (a vector over the last axis)
    auto mul_gamma = consumer_op(ctx, normalized, "Mul", [&](const graph::Node& n) {
      auto o = other_input(n, normalized);
      const Tensor* t = o ? ctx.constant(*o) : nullptr;
      return t != nullptr && t->dtype() == DataType::kFloat && t->rank() == 1 && t->size() == width;
    });
    if (!mul_gamma) return std::nullopt;
    group.add(*mul_gamma);
    const int32_t gamma = *other_input(ctx.node(*mul_gamma), normalized);
    const int32_t result = ctx.node(*mul_gamma).outputs[0];
    if (!group.closed(result)) return std::nullopt;
    Patch patch;
    for (size_t n : group.nodes()) patch.remove(n);
    // onnxruntime has this contrib op in the ONNX domain (since version 1).
    graph::Node rms = make_node("SimplifiedLayerNormalization", "", square.opset, {x, gamma}, {result},
                                square.name.empty() ? "RMSNorm" : square.name + "_rms_norm");
    rms.attributes["axis"] = graph::Attribute::make_int("axis", -1);
    rms.attributes["epsilon"] = graph::Attribute::make_float("epsilon", static_cast<float>(*epsilon));
    patch.refine_info.emplace_back(result, xi);
    patch.add_nodes.push_back(std::move(rms));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_layer_norm_fusion_pass() { return std::make_unique<LayerNormFusion>(); }
std::unique_ptr<Pass> make_rms_norm_fusion_pass() { return std::make_unique<RmsNormFusion>(); }

}  // namespace onyx::optimizer
