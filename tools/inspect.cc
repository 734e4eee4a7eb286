// `onyx inspect`: what a model holds and whether onyx can run it.
#include <cstdio>
#include <functional>
#include <map>

#include "cli.h"
#include "graph/builder.h"
#include "model/reader.h"
#include "providers/execution_provider.h"
#include "session/planner.h"
#include "session/version_resolution.h"

namespace onyx::cli {

int inspect_command(const std::vector<std::string>& args) {
  std::string path;
  CommandLine command_line("inspect",
                           "Prints what MODEL holds: IR version, producer, opsets, inputs and outputs with types and "
                           "shapes, a histogram of its ops (subgraphs included), its parameter count, and whether "
                           "the CPU provider has a kernel for every op. Exits 1 when some op is unsupported.");
  command_line.positional("MODEL", "the model, an .onnx file", &path);
  command_line.example("onyx inspect model.onnx");
  if (!command_line.parse(args)) return kExitOk;
  require_file("MODEL", path);
  Result<model::ModelProto> model = model::read_model_file(path);
  if (!model.is_ok()) {
    std::fprintf(stderr, "onyx inspect: error: cannot load '%s': %s\n", path.c_str(), model.status().message().c_str());
    return kExitFailure;
  }
  std::printf("model     %s\n", path.c_str());
  std::printf("ir        %lld, producer %s %s\n", static_cast<long long>(model->ir_version),
              model->producer_name.c_str(), model->producer_version.c_str());
  std::printf("opsets   ");
  for (const auto& o : model->opset_import) {
    std::printf(" %s:%lld", o.domain.empty() ? "ai.onnx" : o.domain.c_str(), static_cast<long long>(o.version));
  }
  std::printf("\n");
  Result<std::unique_ptr<graph::Graph>> built = graph::build_graph(*model);
  if (!built.is_ok()) {
    std::fprintf(stderr, "onyx inspect: error: invalid graph: %s\n", built.status().message().c_str());
    return kExitFailure;
  }
  graph::Graph& g = **built;
  throw_if_error(session::resolve_versions(g));

  auto describe = [&](int32_t id) {
    const graph::ValueEntry& v = g.values[static_cast<size_t>(id)];
    std::string shape;
    if (v.info.has_shape) {
      shape = "[";
      for (size_t i = 0; i < v.info.shape.size(); ++i) {
        if (i) shape += ",";
        const graph::Dim& d = v.info.shape[i];
        shape += d.is_known() ? std::to_string(d.value) : (d.symbol.empty() ? "?" : d.symbol);
      }
      shape += "]";
    }
    std::printf("  %-30s %s%s\n", v.name.c_str(), v.info.type.to_string().c_str(), shape.c_str());
  };
  std::printf("inputs\n");
  for (int32_t id : g.inputs) {
    if (!g.values[static_cast<size_t>(id)].is_initializer) describe(id);
  }
  std::printf("outputs\n");
  for (int32_t id : g.outputs) describe(id);

  std::map<std::string, int> histogram;
  size_t node_count = 0;
  std::function<void(const graph::Graph&)> count = [&](const graph::Graph& graph) {
    for (const graph::Node& n : graph.nodes) {
      ++node_count;
      ++histogram[(n.domain.empty() ? "" : n.domain + ".") + n.op_type];
      for (const auto& [name, a] : n.attributes) {
        if (a.g) count(*a.g);
        for (const auto& sub : a.graphs) count(*sub);
      }
    }
  };
  count(g);
  std::printf("nodes     %zu\n", node_count);
  for (const auto& [op, n] : histogram) std::printf("  %-30s %d\n", op.c_str(), n);

  int64_t params = 0;
  size_t bytes = 0;
  for (const auto& [id, t] : g.initializers) {
    params += t.size();
    bytes += t.bytes();
  }
  std::printf("parameters %lld (%.2f MiB in %zu initializers)\n", static_cast<long long>(params),
              static_cast<double>(bytes) / (1024.0 * 1024.0), g.initializers.size());

  auto cpu = make_cpu_provider();
  std::vector<std::string> missing = session::unsupported_ops(g, {cpu.get()});
  if (missing.empty()) {
    std::printf("supported yes: every op has a kernel\n");
    return kExitOk;
  }
  std::printf("supported no: %zu unsupported (domain, op_type, version):\n", missing.size());
  for (const std::string& m : missing) std::printf("  %s\n", m.c_str());
  return kExitFailure;
}

}  // namespace onyx::cli
