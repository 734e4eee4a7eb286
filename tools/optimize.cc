// `onyx optimize IN OUT [--level L] [--stats]`: writes the graph a session
// would run at that optimization level, as an .onnx file.
#include <cstdio>
#include <map>

#include "cli.h"
#include "graph/to_proto.h"
#include "model/reader.h"
#include "model/writer.h"
#include "session/prepare.h"

namespace onyx::cli {

int optimize_command(const std::vector<std::string>& args) {
  std::vector<std::string> paths;
  SessionOptions options;
  bool stats = false;
  const std::map<std::string, GraphOptimizationLevel> levels = {
      {"disable", GraphOptimizationLevel::kDisableAll},   {"basic", GraphOptimizationLevel::kEnableBasic},
      {"extended", GraphOptimizationLevel::kEnableExtended}, {"layout", GraphOptimizationLevel::kEnableLayout},
      {"all", GraphOptimizationLevel::kEnableAll}};
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--level") {
      if (i + 1 >= args.size() || levels.count(args[i + 1]) == 0) {
        std::fprintf(stderr, "onyx optimize: --level takes disable, basic, extended, layout or all\n");
        return kExitUsage;
      }
      options.graph_optimization_level = levels.at(args[++i]);
    } else if (args[i] == "--stats") {
      stats = true;
    } else if (!args[i].empty() && args[i][0] == '-') {
      std::fprintf(stderr, "onyx optimize: unknown option '%s'\n", args[i].c_str());
      return kExitUsage;
    } else {
      paths.push_back(args[i]);
    }
  }
  if (paths.size() != 2) {
    std::fprintf(stderr, "usage: onyx optimize IN OUT [--level disable|basic|extended|layout|all] [--stats]\n");
    return kExitUsage;
  }
  Result<model::ModelProto> model = model::read_model_file(paths[0]);
  if (!model.is_ok()) {
    std::fprintf(stderr, "onyx optimize: cannot load '%s': %s\n", paths[0].c_str(), model.status().message().c_str());
    return kExitFailure;
  }
  auto cpu = make_cpu_provider();
  Result<session::PreparedGraph> prepared = session::prepare_graph(*model, options, {cpu.get()});
  throw_if_error(prepared.status());
  if (stats) {
    std::printf("%-36s %8s %8s %8s %10s\n", "pass", "applied", "removed", "added", "ms");
    for (const auto& s : prepared->statistics) {
      std::printf("%-36s %8d %8d %8d %10.3f\n", s.pass.c_str(), s.applied, s.nodes_removed, s.nodes_added, s.milliseconds);
    }
  }
  std::printf("nodes %zu -> %zu\n", model->graph->node.size(), prepared->graph->nodes.size());
  throw_if_error(model::write_model_file(graph::graph_to_model(*prepared->graph, *model), paths[1]));
  std::printf("wrote %s\n", paths[1].c_str());
  return kExitOk;
}

}  // namespace onyx::cli
