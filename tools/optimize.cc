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
  std::string in;
  std::string out;
  SessionOptions options;
  bool stats = false;
  const std::map<std::string, GraphOptimizationLevel> levels = {
      {"disable", GraphOptimizationLevel::kDisableAll},   {"basic", GraphOptimizationLevel::kEnableBasic},
      {"extended", GraphOptimizationLevel::kEnableExtended}, {"layout", GraphOptimizationLevel::kEnableLayout},
      {"all", GraphOptimizationLevel::kEnableAll}};
  CommandLine command_line("optimize",
                           "Prepares IN as a session would (graph optimizations for the CPU provider) and writes the "
                           "resulting graph to OUT, an .onnx file that onyx loads as it is. Prints the node count "
                           "before and after.");
  command_line.positional("IN", "the model to optimize, an .onnx file", &in);
  command_line.positional("OUT", "where to write the optimized model; its folder is created if missing", &out);
  command_line.option({"--level"}, "LEVEL", "disable, basic, extended, layout or all (the default)",
                      [&](const std::string& v) {
                        const auto it = levels.find(v);
                        if (it == levels.end()) {
                          throw UsageError("expects disable, basic, extended, layout or all, got '" + v + "'");
                        }
                        options.graph_optimization_level = it->second;
                      });
  command_line.flag({"--stats"}, "also print each pass: times applied, nodes removed and added, milliseconds", &stats);
  command_line.example("onyx optimize model.onnx out/model.opt.onnx --level extended --stats");
  if (!command_line.parse(args)) return kExitOk;
  require_file("IN", in);
  create_folder("OUT", folder_of(out));
  Result<model::ModelProto> model = model::read_model_file(in);
  if (!model.is_ok()) {
    std::fprintf(stderr, "onyx optimize: error: cannot load '%s': %s\n", in.c_str(), model.status().message().c_str());
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
  throw_if_error(model::write_model_file(graph::graph_to_model(*prepared->graph, *model), out));
  std::printf("wrote %s\n", out.c_str());
  return kExitOk;
}

}  // namespace onyx::cli
