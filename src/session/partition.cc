// Partitioning and the providers' own passes.
#include "session/partition.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "graph/builder.h"
#include "graph/subgraphs.h"

namespace onyx::session {
namespace {

std::string domain_name(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

// The group as a standalone graph, and the fused node that stands for it in
// `graph`: inputs are the values entering the group that are not constants
// (constants become the fused graph's own initializers, shared, not
// copied), outputs the values something outside the group reads.
Status fuse_group(const graph::Graph& graph, const std::vector<size_t>& group, const ExecutionProvider& provider,
                  int index, graph::Node& fused_node) {
  std::unordered_set<size_t> members(group.begin(), group.end());
  std::unordered_set<std::string> read_outside;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const graph::Node& node = graph.nodes[n];
    if (members.count(n)) continue;
    for (int32_t in : node.inputs) {
      if (in != graph::kNoValue) read_outside.insert(graph.value_name(in));
    }
    for (std::string& name : graph::outer_scope_reads(node)) read_outside.insert(std::move(name));
  }
  for (int32_t out : graph.outputs) read_outside.insert(graph.value_name(out));

  auto sub = std::make_shared<graph::Graph>();
  sub->name = str_cat(provider.name(), "_fused_", index);
  std::unordered_set<int32_t> produced;
  for (size_t n : group) {
    for (int32_t out : graph.nodes[n].outputs) {
      if (out != graph::kNoValue) produced.insert(out);
    }
  }
  std::unordered_map<int32_t, int32_t> ids;  // graph value -> fused graph value
  auto map_value = [&](int32_t v) {
    auto it = ids.find(v);
    if (it != ids.end()) return it->second;
    const int32_t id = sub->value_id(graph.value_name(v));
    sub->values[static_cast<size_t>(id)].info = graph.values[static_cast<size_t>(v)].info;
    ids.emplace(v, id);
    return id;
  };
  std::vector<graph::Node> nodes;
  for (size_t n : group) {
    graph::Node node = graph.nodes[n];
    for (int32_t& in : node.inputs) {
      if (in == graph::kNoValue) continue;
      const int32_t outer = in;
      const bool known = ids.count(outer) != 0;
      in = map_value(outer);
      if (known || produced.count(outer)) continue;
      auto constant = graph.initializers.find(outer);
      if (constant != graph.initializers.end() && !graph.values[static_cast<size_t>(outer)].is_graph_input) {
        sub->initializers[in] = constant->second;
        sub->values[static_cast<size_t>(in)].is_initializer = true;
      } else {
        sub->inputs.push_back(in);
        sub->values[static_cast<size_t>(in)].is_graph_input = true;
        fused_node.inputs.push_back(outer);
      }
    }
    for (int32_t& out : node.outputs) {
      if (out == graph::kNoValue) continue;
      const int32_t outer = out;
      out = map_value(outer);
      if (read_outside.count(graph.value_name(outer))) {
        sub->outputs.push_back(out);
        fused_node.outputs.push_back(outer);
      }
    }
    nodes.push_back(std::move(node));
  }
  ONYX_RETURN_IF_ERROR(graph::sort_nodes(*sub, nodes));
  fused_node.name = sub->name;
  fused_node.op_type = sub->name;
  fused_node.domain = "com.onyx.fused";
  fused_node.since_version = 1;
  fused_node.opset = 1;
  fused_node.execution_provider = provider.name();
  fused_node.fused_graph = std::move(sub);
  return Status::ok();
}

// Why no provider takes `node`: the CPU kernel's type mismatch when one exists.
std::string why_unclaimed(const graph::Graph& graph, const graph::Node& node,
                          const std::vector<const ExecutionProvider*>& providers) {
  for (const ExecutionProvider* p : providers) {
    std::string why;
    if (p->kernels().find(graph, node, &why) == nullptr &&
        p->kernels().find(node.domain, node.op_type, node.since_version) != nullptr && !why.empty()) {
      return str_cat(" for these types (", p->name(), " has one, but not for ", why, ")");
    }
  }
  return "";
}

Status partition_in(graph::Graph& graph, const std::vector<const ExecutionProvider*>& providers, bool top_level) {
  int fused_count = 0;
  for (const ExecutionProvider* provider : providers) {
    std::vector<size_t> remaining;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (graph.nodes[n].execution_provider.empty()) remaining.push_back(n);
    }
    if (remaining.empty()) break;
    const bool compiles = provider->kind() == ExecutionProvider::Kind::kCompiler;
    // Compiled groups inside control flow are left to kernel providers.
    if (compiles && !top_level) continue;
    std::vector<NodeGroup> groups = provider->claim(graph, remaining);
    std::set<size_t> taken;
    std::vector<graph::Node> fused;
    for (const NodeGroup& group : groups) {
      for (size_t n : group.nodes) {
        if (n >= graph.nodes.size() || !graph.nodes[n].execution_provider.empty() || !taken.insert(n).second) {
          return runtime_error("provider ", provider->name(), " claimed node ", n,
                               ", which does not exist or is already claimed");
        }
      }
      if (group.nodes.empty()) continue;
      if (!compiles || (group.nodes.size() == 1 && provider->kernels().find(graph, graph.nodes[group.nodes[0]]))) {
        for (size_t n : group.nodes) graph.nodes[n].execution_provider = provider->name();
        continue;
      }
      for (size_t n : group.nodes) {
        if (graph::has_subgraphs(graph.nodes[n])) {
          return runtime_error("provider ", provider->name(), " claimed ", graph.nodes[n].label(n),
                               ", which holds a subgraph, into a fused group");
        }
      }
      graph::Node node;
      ONYX_RETURN_IF_ERROR(fuse_group(graph, group.nodes, *provider, fused_count++, node));
      fused.push_back(std::move(node));
    }
    if (fused.empty()) continue;
    std::vector<graph::Node> nodes;
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      if (!taken.count(n) || graph.nodes[n].execution_provider == provider->name()) {
        nodes.push_back(std::move(graph.nodes[n]));
      }
    }
    for (graph::Node& node : fused) nodes.push_back(std::move(node));
    for (graph::ValueEntry& v : graph.values) v.producer = -1;
    Status sorted = graph::sort_nodes(graph, nodes);
    if (!sorted.is_ok()) {
      return runtime_error(
          "provider ", provider->name(),
          " claimed a group of nodes that a path leaves and re-enters, so it cannot run as one: ", sorted.message());
    }
  }
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    graph::Node& node = graph.nodes[n];
    if (node.execution_provider.empty()) {
      return not_implemented(node.label(n), ": no execution provider has a kernel for (", domain_name(node.domain),
                             ", ", node.op_type, ", ", node.since_version, ")", why_unclaimed(graph, node, providers));
    }
    for (auto& [name, attr] : node.attributes) {
      if (attr.g) ONYX_RETURN_IF_ERROR(partition_in(*attr.g, providers, false));
      for (auto& g : attr.graphs) ONYX_RETURN_IF_ERROR(partition_in(*g, providers, false));
    }
  }
  return Status::ok();
}

void merge(std::vector<optimizer::PassStatistics>& into, const std::vector<optimizer::PassStatistics>& from) {
  for (const auto& s : from) {
    auto it = std::find_if(into.begin(), into.end(), [&](const auto& t) { return t.pass == s.pass; });
    if (it == into.end()) {
      into.push_back(s);
      continue;
    }
    it->applied += s.applied;
    it->nodes_removed += s.nodes_removed;
    it->nodes_added += s.nodes_added;
    it->milliseconds += s.milliseconds;
  }
}

}  // namespace

Status partition_graph(graph::Graph& graph, const std::vector<const ExecutionProvider*>& providers) {
  return partition_in(graph, providers, true);
}

Result<std::vector<optimizer::PassStatistics>> run_provider_passes(
    graph::Graph& graph, const std::vector<const ExecutionProvider*>& providers,
    const optimizer::OptimizerOptions& options) {
  std::vector<optimizer::PassStatistics> stats;
  for (const ExecutionProvider* provider : providers) {
    std::vector<optimizer::PassList> levels = provider->passes(options.level);
    if (levels.empty()) continue;
    optimizer::OptimizerOptions own = options;
    own.owner = provider->name();
    own.ops = provider->op_support();
    ONYX_ASSIGN_OR_RETURN(std::vector<optimizer::PassStatistics> s, optimizer::run_passes(graph, levels, own));
    merge(stats, s);
  }
  return stats;
}

Result<std::vector<optimizer::PassStatistics>> optimize_for_providers(
    graph::Graph& graph, const std::vector<const ExecutionProvider*>& providers,
    const optimizer::OptimizerOptions& options) {
  optimizer::OptimizerOptions independent = options;
  independent.owner.clear();
  // Folding evaluates with the host's kernels: the CPU provider's, always last.
  if (independent.ops == nullptr && !providers.empty()) independent.ops = providers.back()->op_support();
  ONYX_ASSIGN_OR_RETURN(std::vector<optimizer::PassStatistics> stats, optimizer::optimize_graph(graph, independent));
  ONYX_RETURN_IF_ERROR(partition_graph(graph, providers));
  ONYX_ASSIGN_OR_RETURN(std::vector<optimizer::PassStatistics> own, run_provider_passes(graph, providers, options));
  merge(stats, own);
  return stats;
}

const ExecutionProvider* provider_of(const graph::Node& node, const std::vector<const ExecutionProvider*>& providers) {
  for (const ExecutionProvider* p : providers) {
    if (p->name() == node.execution_provider) return p;
  }
  return nullptr;
}

}  // namespace onyx::session
