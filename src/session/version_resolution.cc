// Until the generated schema table lands, a node's version is its domain's opset.
#include "session/version_resolution.h"

namespace onyx::session {

Status resolve_versions(graph::Graph& graph) {
  for (graph::Node& node : graph.nodes) {
    node.since_version = node.opset;
    for (auto& [name, attr] : node.attributes) {
      if (attr.g) ONYX_RETURN_IF_ERROR(resolve_versions(*attr.g));
      for (auto& g : attr.graphs) ONYX_RETURN_IF_ERROR(resolve_versions(*g));
    }
  }
  return Status::ok();
}

}  // namespace onyx::session
