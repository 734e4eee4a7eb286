// Common-subexpression elimination: two nodes with the same op, version,
// attributes and inputs compute the same outputs; the later one goes and its
// consumers read the earlier one's outputs.
#include <cstring>
#include <unordered_map>

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

// A key that is equal for equal nodes; nullopt for nodes never merged.
std::optional<std::string> node_key(const graph::Node& node) {
  if (is_nondeterministic(node) || has_subgraph(node) || node.outputs.empty()) return std::nullopt;
  std::string key;
  auto add = [&key](const std::string& piece) {
    key += piece;
    key += '|';
  };
  add(node.domain);
  add(node.op_type);
  add(std::to_string(node.since_version));
  for (int32_t in : node.inputs) add(std::to_string(in));
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

class CommonSubexpressionElimination final : public Pass {
 public:
  std::string name() const override { return "common_subexpression_elimination"; }

  void begin_sweep(const PassContext& ctx) override {
    first_.clear();
    for (size_t n = 0; n < ctx.node_count(); ++n) {
      if (std::optional<std::string> key = node_key(ctx.node(n))) first_.emplace(std::move(*key), n);
    }
  }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& node = ctx.node(index);
    std::optional<std::string> key = node_key(node);
    if (!key) return std::nullopt;
    auto it = first_.find(*key);
    if (it == first_.end() || it->second == index) return std::nullopt;
    const graph::Node& kept = ctx.node(it->second);
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
  std::unordered_map<std::string, size_t> first_;
};

}  // namespace

std::unique_ptr<Pass> make_common_subexpression_elimination_pass() {
  return std::make_unique<CommonSubexpressionElimination>();
}

}  // namespace onyx::optimizer
