#include "graph/subgraphs.h"

namespace onyx::graph {
void append_outer_scope_reads(const Graph& sub, std::vector<std::string>& names) {
  for (int32_t v : sub.outer_scope_values) names.push_back(sub.value_name(v));
  for (const Node& node : sub.nodes) {
    for (const auto& [name, attr] : node.attributes) {
      if (attr.g) append_outer_scope_reads(*attr.g, names);
      for (const auto& g : attr.graphs) append_outer_scope_reads(*g, names);
    }
  }
}

bool has_subgraphs(const Node& node) {
  for (const auto& [name, attr] : node.attributes) {
    if (attr.g || !attr.graphs.empty()) return true;
  }
  return false;
}

std::vector<std::string> outer_scope_reads(const Node& node) {
  std::vector<std::string> names;
  for (const auto& [name, attr] : node.attributes) {
    if (attr.g) append_outer_scope_reads(*attr.g, names);
    for (const auto& g : attr.graphs) append_outer_scope_reads(*g, names);
  }
  return names;
}

}  // namespace onyx::graph
