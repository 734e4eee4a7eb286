// Common-subexpression elimination: two nodes with the same op, version,
// attributes and inputs compute the same outputs; the later one goes and its
// consumers read the earlier one's outputs. Inputs are the same when they are
// the same value or constants with equal type, shape and bytes (two
// initializers holding the same weights, as models built with placeholder
// weights have).
#include <cstring>
#include <unordered_map>
#include <vector>

#include "graph/subgraphs.h"
#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

constexpr size_t kMaxTensorAttributeBytes = 4096;

// Ops whose outputs differ between two evaluations with the same inputs.
bool is_nondeterministic(const graph::Node& node) {
  return node.op_type == "RandomNormal" || node.op_type == "RandomUniform" || node.op_type == "RandomNormalLike" ||
         node.op_type == "RandomUniformLike" || node.op_type == "Multinomial" || node.op_type == "Bernoulli" ||
         node.op_type == "Dropout";
}

// Host constants whose bytes can be compared; nullptr for anything else.
const Tensor* comparable_constant(const PassContext& ctx, int32_t value) {
  if (value == graph::kNoValue) return nullptr;
  const Tensor* t = ctx.constant(value);
  if (t == nullptr || !t->device().is_cpu() || t->dtype() == DataType::kString) return nullptr;
  return t;
}

// A key that is equal for equal nodes; nullopt for nodes never merged.
// Constant inputs enter by type and shape only: nodes with equal keys are
// then told apart by the constants' bytes (same_constants).
std::optional<std::string> node_key(const PassContext& ctx, const graph::Node& node) {
  if (is_nondeterministic(node) || node.recompute || graph::has_subgraphs(node) || node.outputs.empty()) return std::nullopt;
  std::string key;
  auto add = [&key](const std::string& piece) {
    key += piece;
    key += '|';
  };
  add(node.domain);
  add(node.op_type);
  add(std::to_string(node.since_version));
  for (int32_t in : node.inputs) {
    if (const Tensor* t = comparable_constant(ctx, in)) {
      key += 'c';
      add(std::to_string(static_cast<int>(t->dtype())));
      add(shape_to_string(t->shape()));
    } else {
      add(std::to_string(in));
    }
  }
  add(std::to_string(node.outputs.size()));
  for (int32_t out : node.outputs) add(out == graph::kNoValue ? "0" : "1");
  for (const auto& [name, a] : node.attributes) {
    add(name);
    add(std::to_string(static_cast<int>(a.type)));
    switch (a.type) {
      case graph::AttributeType::kFloat: key.append(reinterpret_cast<const char*>(&a.f), sizeof(float)); break;
      case graph::AttributeType::kInt: add(std::to_string(a.i)); break;
      case graph::AttributeType::kString:
        add(std::to_string(a.s.size()));
        add(a.s);
        break;
      case graph::AttributeType::kFloats:
        key.append(reinterpret_cast<const char*>(a.floats.data()), a.floats.size() * sizeof(float));
        add(std::to_string(a.floats.size()));
        break;
      case graph::AttributeType::kInts:
        for (int64_t v : a.ints) add(std::to_string(v));
        break;
      case graph::AttributeType::kStrings:
        for (const std::string& s : a.strings) {
          add(std::to_string(s.size()));
          add(s);
        }
        break;
      case graph::AttributeType::kTensor:
      case graph::AttributeType::kSparseTensor: {
        const Tensor& t = a.t;
        if (!t.device().is_cpu() || t.dtype() == DataType::kString || t.bytes() > kMaxTensorAttributeBytes) {
          return std::nullopt;
        }
        add(std::to_string(static_cast<int>(t.dtype())));
        add(shape_to_string(t.shape()));
        key.append(static_cast<const char*>(t.raw_data()), t.bytes());
        break;
      }
      default: return std::nullopt;
    }
  }
  return key;
}

// Nodes whose keys are equal read equal values at every input: the same
// value, or constants of the same type and shape whose bytes are equal.
bool same_constants(const PassContext& ctx, const graph::Node& a, const graph::Node& b) {
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    if (a.inputs[i] == b.inputs[i]) continue;
    const Tensor* x = comparable_constant(ctx, a.inputs[i]);
    const Tensor* y = comparable_constant(ctx, b.inputs[i]);
    if (x == nullptr || y == nullptr || x->bytes() != y->bytes()) return false;
    if (x->raw_data() != y->raw_data() && std::memcmp(x->raw_data(), y->raw_data(), x->bytes()) != 0) return false;
  }
  return true;
}

class CommonSubexpressionElimination final : public Pass {
 public:
  std::string name() const override { return "common_subexpression_elimination"; }

  void begin_sweep(const PassContext& ctx) override {
    by_key_.clear();
    for (size_t n = 0; n < ctx.node_count(); ++n) {
      if (std::optional<std::string> key = node_key(ctx, ctx.node(n))) by_key_[std::move(*key)].push_back(n);
    }
  }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& node = ctx.node(index);
    std::optional<std::string> key = node_key(ctx, node);
    if (!key) return std::nullopt;
    auto it = by_key_.find(*key);
    if (it == by_key_.end()) return std::nullopt;
    // The first node (in graph order) equal to this one is kept.
    size_t kept_index = index;
    for (size_t candidate : it->second) {
      if (candidate == index) break;
      if (same_constants(ctx, ctx.node(candidate), node)) {
        kept_index = candidate;
        break;
      }
    }
    if (kept_index == index) return std::nullopt;
    const graph::Node& kept = ctx.node(kept_index);
    Patch patch;
    patch.remove(index);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      if (node.outputs[o] == graph::kNoValue) continue;
      if (ctx.is_pinned(node.outputs[o])) return std::nullopt;
      patch.replace(node.outputs[o], kept.outputs[o]);
    }
    return patch;
  }

 private:
  std::unordered_map<std::string, std::vector<size_t>> by_key_;  // node indices in graph order
};

}  // namespace

std::unique_ptr<Pass> make_common_subexpression_elimination_pass() {
  return std::make_unique<CommonSubexpressionElimination>();
}

}  // namespace onyx::optimizer
