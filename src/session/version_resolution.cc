// A node runs at the version of its op's schema in force at the model's opset
// for its domain (the newest since_version not after it). Ops the ONNX schema
// table does not know (experimental ops of old opsets, other domains such as
// com.microsoft) keep the opset itself.
#include "session/version_resolution.h"

#include "graph/schema.h"

namespace onyx::session {

Status resolve_versions(graph::Graph& graph) {
  for (graph::Node& node : graph.nodes) {
    const graph::OpSchema* schema = graph::find_schema_including_deprecated(node.domain, node.op_type, node.opset);
    node.since_version = schema != nullptr ? schema->since_version : node.opset;
    for (auto& [name, attr] : node.attributes) {
      if (attr.g) ONYX_RETURN_IF_ERROR(resolve_versions(*attr.g));
      for (auto& g : attr.graphs) ONYX_RETURN_IF_ERROR(resolve_versions(*g));
    }
  }
  return Status::ok();
}

}  // namespace onyx::session
