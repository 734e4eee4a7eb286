// Convex grouping of supported nodes.
#include "providers/node_groups.h"

#include <algorithm>
#include <unordered_set>

#include "graph/subgraphs.h"

namespace onyx {
namespace {

using GroupSet = std::vector<int>;  // small sorted sets of group ids

void insert(GroupSet& set, int g) {
  auto it = std::lower_bound(set.begin(), set.end(), g);
  if (it == set.end() || *it != g) set.insert(it, g);
}

bool contains(const GroupSet& set, int g) { return std::binary_search(set.begin(), set.end(), g); }

// Whether a node that reads from the groups `reads` may join `group`: not
// when one of them already depends, through any chain of groups, on `group`.
bool closes_a_cycle(const std::vector<GroupSet>& depends_on, int group, const GroupSet& reads) {
  std::vector<int> stack;
  std::vector<bool> seen(depends_on.size(), false);
  for (int g : reads) {
    if (g != group) stack.push_back(g);
  }
  while (!stack.empty()) {
    const int g = stack.back();
    stack.pop_back();
    if (g == group) return true;
    if (seen[static_cast<size_t>(g)]) continue;
    seen[static_cast<size_t>(g)] = true;
    for (int d : depends_on[static_cast<size_t>(g)]) stack.push_back(d);
  }
  return false;
}

}  // namespace

std::vector<NodeGroup> connected_groups(const graph::Graph& graph, const std::vector<size_t>& candidates,
                                        const std::function<bool(size_t)>& supported, size_t min_size) {
  const std::unordered_set<size_t> open(candidates.begin(), candidates.end());
  // Per value: the groups that reach it (reach) and those that reach it
  // through a node outside themselves (escaped): a node may join group G
  // only when no input has G escaped.
  std::vector<GroupSet> reach(graph.values.size()), escaped(graph.values.size());
  std::vector<int> group_of_value(graph.values.size(), -1);
  std::vector<NodeGroup> groups;
  // Per group: the groups its nodes read from, directly or through other
  // nodes. Each group being convex is not enough: two groups that each read
  // the other's output (a1 -> b1 and b2 -> a2, b1 and b2 joined through a
  // common producer) would make two fused nodes that wait on each other.
  std::vector<GroupSet> depends_on;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {  // graph nodes are in topological order
    const graph::Node& node = graph.nodes[n];
    std::vector<int32_t> inputs;
    for (int32_t in : node.inputs) {
      if (in != graph::kNoValue) inputs.push_back(in);
    }
    for (const std::string& name : graph::outer_scope_reads(node)) {
      const int32_t id = graph.find_value(name);
      if (id >= 0) inputs.push_back(id);
    }
    GroupSet in_reach, in_escaped;
    for (int32_t v : inputs) {
      for (int g : reach[static_cast<size_t>(v)]) insert(in_reach, g);
      for (int g : escaped[static_cast<size_t>(v)]) insert(in_escaped, g);
    }
    int joined = -1;
    if (open.count(n) && supported(n)) {
      for (int32_t v : inputs) {
        const int g = group_of_value[static_cast<size_t>(v)];
        if (g >= 0 && !contains(in_escaped, g) && !closes_a_cycle(depends_on, g, in_reach)) {
          joined = g;
          break;
        }
      }
      if (joined < 0) {
        joined = static_cast<int>(groups.size());
        groups.emplace_back();
        depends_on.emplace_back();
      }
      groups[static_cast<size_t>(joined)].nodes.push_back(n);
      for (int g : in_reach) {
        if (g != joined) insert(depends_on[static_cast<size_t>(joined)], g);
      }
    }
    // Every group reaching this node other than its own now also reaches
    // through it: for those, this node is outside.
    GroupSet out_escaped = in_escaped;
    for (int g : in_reach) {
      if (g != joined) insert(out_escaped, g);
    }
    GroupSet out_reach = in_reach;
    if (joined >= 0) insert(out_reach, joined);
    for (int32_t out : node.outputs) {
      if (out == graph::kNoValue) continue;
      reach[static_cast<size_t>(out)] = out_reach;
      escaped[static_cast<size_t>(out)] = out_escaped;
      group_of_value[static_cast<size_t>(out)] = joined;
    }
  }
  std::vector<NodeGroup> kept;
  for (NodeGroup& g : groups) {
    if (g.nodes.size() >= min_size) kept.push_back(std::move(g));
  }
  return kept;
}

}  // namespace onyx
