// Dead-code elimination: removes nodes none of whose outputs is used (by a
// node, a subgraph or the graph's outputs), and initializers nothing reads.
#include <functional>
#include <unordered_set>

#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

class DeadCodeElimination final : public Pass {
 public:
  std::string name() const override { return "dead_code_elimination"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& node = ctx.node(index);
    // A node without outputs exists for a side effect we cannot see.
    if (node.outputs.empty()) return std::nullopt;
    for (int32_t out : node.outputs) {
      if (out == graph::kNoValue) continue;
      if (ctx.is_pinned(out) || !ctx.consumers(out).empty()) return std::nullopt;
    }
    Patch patch;
    patch.remove(index);
    return patch;
  }

  int finish(graph::Graph& graph) override {
    std::unordered_set<int32_t> used(graph.outputs.begin(), graph.outputs.end());
    for (const graph::Node& node : graph.nodes) {
      for (int32_t in : node.inputs) used.insert(in);
    }
    std::unordered_set<std::string> outer_reads;
    std::function<void(const graph::Graph&)> visit = [&](const graph::Graph& sub) {
      for (int32_t v : sub.outer_scope_values) outer_reads.insert(sub.value_name(v));
      for (const graph::Node& n : sub.nodes) {
        for (const auto& [name, a] : n.attributes) {
          if (a.g) visit(*a.g);
          for (const auto& g : a.graphs) visit(*g);
        }
      }
    };
    for (const graph::Node& node : graph.nodes) {
      for (const auto& [name, a] : node.attributes) {
        if (a.g) visit(*a.g);
        for (const auto& g : a.graphs) visit(*g);
      }
    }
    int removed = 0;
    for (auto it = graph.initializers.begin(); it != graph.initializers.end();) {
      graph::ValueEntry& v = graph.values[static_cast<size_t>(it->first)];
      // Initializers that are also inputs belong to the model's interface.
      if (!v.is_graph_input && !used.count(it->first) && !outer_reads.count(v.name)) {
        v.is_initializer = false;
        it = graph.initializers.erase(it);
        ++removed;
      } else {
        ++it;
      }
    }
    return removed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dead_code_elimination_pass() { return std::make_unique<DeadCodeElimination>(); }

}  // namespace onyx::optimizer
