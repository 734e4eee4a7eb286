// The graph preparation steps, in order.
#include "session/prepare.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "session/memory_usage.h"
#include "session/model_overrides.h"
#include "session/partition.h"
#include "session/planner.h"
#include "session/version_resolution.h"
#include "training/gradient.h"

namespace onyx::session {

namespace {

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    if (comma > start) names.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

// Gradient checkpointing from the session's config entries:
// onyx.training.recompute = "all" (every activation but one in sqrt(n)),
// "cheap" (the same, but keeping the outputs of costly ops such as MatMul and
// Conv) or a comma-separated list of values; with "all" or "cheap",
// onyx.training.keep = values to keep all the same.
Result<training::GradientOptions> training_options(const SessionOptions& options) {
  training::GradientOptions gradient;
  auto recompute = options.config_entries.find("onyx.training.recompute");
  if (recompute != options.config_entries.end() && !recompute->second.empty() && recompute->second != "none") {
    if (recompute->second == "all" || recompute->second == "cheap") {
      gradient.recompute_all = true;
      gradient.keep_costly = recompute->second == "cheap";
    } else {
      gradient.recompute = split_names(recompute->second);
    }
  }
  auto keep = options.config_entries.find("onyx.training.keep");
  if (keep != options.config_entries.end()) {
    if (!gradient.recompute_all) {
      return invalid_argument("session config entry onyx.training.keep needs onyx.training.recompute=all or cheap");
    }
    gradient.keep = split_names(keep->second);
  }
  return gradient;
}

}  // namespace

Result<PreparedGraph> prepare_graph(const model::ModelProto& model, const SessionOptions& options,
                                    const std::vector<const ExecutionProvider*>& providers) {
  PreparedGraph prepared;
  // An op with no kernel whose ONNX schema defines it as a function runs
  // through that function's body. The config entry onyx.prefer_function_bodies=1
  // expands every such op, kernel or not (to check kernels against bodies).
  graph::BuildLimits limits;
  auto prefer = options.config_entries.find("onyx.prefer_function_bodies");
  const bool prefer_bodies = prefer != options.config_entries.end() && prefer->second == "1";
  // A training graph (one with a Gradient node) runs ops without a gradient
  // rule through their function bodies, whose ops have rules.
  bool differentiates = false;
  if (model.graph != nullptr) {  // a model without a graph is refused by build_graph below
    for (const auto& node : model.graph->node) {
      differentiates = differentiates || (node.op_type == "Gradient" && node.domain == "ai.onnx.preview.training");
    }
  }
  limits.expand_schema_function = [&](const std::string& domain, const std::string& op_type, int version) {
    if (prefer_bodies) return true;
    if (differentiates && !training::has_gradient_rule(domain, op_type)) return true;
    for (const ExecutionProvider* p : providers) {
      if (p->kernels().find(domain, op_type, version) != nullptr) return false;
    }
    return true;
  };
  const bool verbose = options.log_severity_level <= 0;
  ONYX_ASSIGN_OR_RETURN(prepared.graph, graph::build_graph(model, limits));
  if (verbose) log_memory_usage("building the graph");
  graph::Graph& graph = *prepared.graph;
  ONYX_RETURN_IF_ERROR(resolve_versions(graph));
  graph::InferenceOptions inference;
  // Before IR version 4 every initializer was also listed as an input, and
  // was a constant all the same.
  inference.initializers_in_inputs_are_constant = model.ir_version < 4;
  // Users' custom ops infer their outputs' types and shapes themselves.
  if (!options.custom_op_registries.empty()) {
    inference.external = [&options](const graph::Node& node, const std::vector<const graph::TypeAndShape*>& inputs,
                                    std::vector<graph::TypeAndShape>& outputs) -> Result<bool> {
      for (const auto& registry : options.custom_op_registries) {
        const KernelDef* def = registry->find(node.domain, node.op_type, node.since_version);
        if (def != nullptr && def->infer) return def->infer(node, inputs, outputs);
      }
      return false;
    };
  }
  // The internal ops of gradient graphs have no schema: their types come
  // from training::infer_internal_op.
  inference.external = [custom = inference.external](const graph::Node& node,
                                                     const std::vector<const graph::TypeAndShape*>& inputs,
                                                     std::vector<graph::TypeAndShape>& outputs) -> Result<bool> {
    if (node.domain == training::kInternalDomain) return training::infer_internal_op(node, inputs, outputs);
    return custom ? custom(node, inputs, outputs) : Result<bool>(false);
  };
  ONYX_RETURN_IF_ERROR(apply_model_overrides(graph, *model.graph, options));
  if (differentiates) {
    // Gradient rules read what inference knows of ranks and types.
    ONYX_RETURN_IF_ERROR(graph::infer_shapes(graph, inference));
    ONYX_ASSIGN_OR_RETURN(training::GradientOptions gradient_options, training_options(options));
    ONYX_RETURN_IF_ERROR(training::expand_gradient_nodes(graph, gradient_options));
    ONYX_RETURN_IF_ERROR(resolve_versions(graph));
    if (verbose) log_memory_usage("expanding Gradient nodes");
  }
  ONYX_RETURN_IF_ERROR(graph::infer_shapes(graph, inference));
  if (verbose) log_memory_usage("shape inference");

  std::vector<std::string> missing = unsupported_ops(graph, providers);
  if (!missing.empty()) {
    std::string list;
    for (const std::string& m : missing) list += "\n  " + m;
    return not_implemented("the model uses ", missing.size(),
                           " operator(s) onyx does not support (domain, op_type, version):", list);
  }

  optimizer::OptimizerOptions optimization;
  optimization.level = options.graph_optimization_level;
  optimization.disabled_optimizers = options.disabled_optimizers;
#ifndef NDEBUG
  optimization.verify_after_each_pass = true;
#endif
  optimization.initializers_in_inputs_are_constant = inference.initializers_in_inputs_are_constant;
  optimization.external_inference = inference.external;
  // onnxruntime's switch for its QDQ transformations, with the same meaning.
  auto disable_qdq = options.config_entries.find("session.disable_quant_qdq");
  optimization.qdq_fusions = disable_qdq == options.config_entries.end() || disable_qdq->second != "1";
  auto budget = options.config_entries.find("onyx.constant_folding_budget_bytes");
  if (budget != options.config_entries.end()) {
    try {
      optimization.constant_folding_budget_bytes = static_cast<size_t>(std::stoull(budget->second));
    } catch (const std::exception&) {
      return invalid_argument("session config entry onyx.constant_folding_budget_bytes must be a byte count, got '",
                              budget->second, "'");
    }
  }
  ONYX_ASSIGN_OR_RETURN(prepared.statistics, optimize_for_providers(graph, providers, optimization));
  if (verbose) {
    log_memory_usage("optimization");
    for (const auto& s : prepared.statistics) {
      std::fprintf(stderr, "onyx verbose: pass %s applied %d times, -%d/+%d nodes, %.3f ms\n", s.pass.c_str(),
                   s.applied, s.nodes_removed, s.nodes_added, s.milliseconds);
    }
  }
  return prepared;
}

}  // namespace onyx::session
