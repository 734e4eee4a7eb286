// Module::export_model_for_inferencing: the forward part of the eval (or
// training) model that computes the asked outputs, with the state's current
// parameters as initializers. It keeps the same nodes, inputs, initializers
// and value_info as the Python export (api.py), so either gives the model
// the other does.
#include <algorithm>
#include <map>
#include <set>

#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "graph/to_proto.h"
#include "model/reader.h"
#include "model/tensor_proto.h"
#include "model/writer.h"
#include "training_api/checkpoint.h"
#include "training_api/module_impl.h"

namespace onyx::training {

namespace {

constexpr char kTrainingDomain[] = "ai.onnx.preview.training";

void replace_all(std::string& text, const std::string& what) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at)) text.erase(at, what.size());
}

// Each value's declared ValueInfo (value_info, then outputs, then inputs: a
// later one replaces an earlier one, as Python's dict does), replaced by
// what shape inference finds where it finds a type.
std::map<std::string, model::ValueInfoProto> value_infos(const model::ModelProto& source) {
  std::map<std::string, model::ValueInfoProto> infos;
  const model::GraphProto& graph = *source.graph;
  for (const auto* list : {&graph.value_info, &graph.output, &graph.input}) {
    for (const model::ValueInfoProto& vi : *list) infos[vi.name] = vi;
  }
  Result<std::unique_ptr<graph::Graph>> built = graph::build_graph(source);
  if (!built.is_ok()) return infos;  // the outputs then go out with their declared types, or none
  graph::InferenceOptions options;
  options.error_on_mismatch = false;
  if (!graph::infer_shapes(*built.value(), options).is_ok()) return infos;
  for (const graph::ValueEntry& value : built.value()->values) {
    if (value.info.type.kind != ValueType::Kind::kUnknown) infos[value.name] = graph::value_info_to_proto(value);
  }
  return infos;
}

}  // namespace

void Module::export_model_for_inferencing(const std::string& path, const std::vector<std::string>& output_names) const {
  if (output_names.empty()) {
    throw Error(invalid_argument("export_model_for_inferencing needs at least one graph output name"));
  }
  const Impl::Mode& mode = impl_->eval ? *impl_->eval : impl_->train;
  Result<model::ModelProto> read = model::read_model_file(mode.path);
  if (!read.is_ok())
    throw Error(Status(read.status().code(), str_cat("cannot read '", mode.path, "': ", read.status().message())));
  const model::ModelProto& source = read.value();
  const model::GraphProto& graph = *source.graph;
  const training_api::TrainingMetadata& meta = mode.meta;

  std::map<std::string, const model::NodeProto*> produced;
  for (const model::NodeProto& node : graph.node) {
    for (const std::string& o : node.output) {
      if (!o.empty()) produced[o] = &node;
    }
  }
  std::set<std::string> inputs, inits;
  for (const model::ValueInfoProto& i : graph.input) inputs.insert(i.name);
  for (const model::TensorProto& t : graph.initializer) inits.insert(t.name);
  for (const std::string& name : output_names) {
    if (!produced.count(name) && !inputs.count(name) && !inits.count(name)) {
      throw Error(
          invalid_argument("export_model_for_inferencing: '", name, "' is not a value of the model '", mode.path, "'"));
    }
    if (name == meta.loss) {
      throw Error(invalid_argument("export_model_for_inferencing: '", name, "' is the loss, which needs the target"));
    }
  }

  // The nodes the outputs need, walking back from them.
  std::set<std::string> needed;
  std::set<const model::NodeProto*> keep;
  std::vector<std::string> stack(output_names.begin(), output_names.end());
  auto push_inputs = [&](const model::NodeProto& node) {
    for (const std::string& i : node.input) {
      if (!i.empty()) stack.push_back(i);
    }
  };
  while (!stack.empty()) {
    const std::string v = stack.back();
    stack.pop_back();
    if (!needed.insert(v).second) continue;
    auto it = produced.find(v);
    if (it == produced.end() || !keep.insert(it->second).second) continue;
    push_inputs(*it->second);
    for (const model::AttributeProto& a : it->second->attribute) {
      // Values a subgraph reads from the outer scope.
      std::vector<std::shared_ptr<model::GraphProto>> subgraphs = a.graphs;
      if (a.g) subgraphs.insert(subgraphs.begin(), a.g);
      for (const auto& sub : subgraphs) {
        for (const model::NodeProto& n : sub->node) push_inputs(n);
      }
    }
  }

  auto out_graph = std::make_shared<model::GraphProto>();
  for (const model::NodeProto& node : graph.node) {
    if (!keep.count(&node)) continue;
    model::NodeProto copy = node;
    if (copy.op_type == "BatchNormalization" && (copy.domain.empty() || copy.domain == "ai.onnx")) {
      std::erase_if(copy.attribute, [](const model::AttributeProto& a) { return a.name == "training_mode"; });
      copy.output.resize(std::min<size_t>(copy.output.size(), 1));
    }
    out_graph->node.push_back(std::move(copy));
  }
  std::vector<std::string> params = meta.parameters;
  params.insert(params.end(), meta.state.begin(), meta.state.end());
  const std::set<std::string> param_set(params.begin(), params.end());
  for (const model::ValueInfoProto& i : graph.input) {
    if (needed.count(i.name) && !param_set.count(i.name)) out_graph->input.push_back(i);
  }
  if (needed.count(meta.target)) {
    throw Error(
        invalid_argument("export_model_for_inferencing: the outputs depend on the loss target '", meta.target, "'"));
  }
  for (const model::TensorProto& t : graph.initializer) {
    if (needed.count(t.name)) out_graph->initializer.push_back(t);
  }
  for (const std::string& name : params) {
    if (needed.count(name))
      out_graph->initializer.push_back(model::tensor_to_proto(impl_->state->parameter(name).data, name));
  }
  const std::map<std::string, model::ValueInfoProto> infos = value_infos(source);
  for (const std::string& name : output_names) {
    auto it = infos.find(name);
    model::ValueInfoProto untyped;
    untyped.name = name;
    out_graph->output.push_back(it != infos.end() ? it->second : untyped);
  }
  const std::set<std::string> outputs(output_names.begin(), output_names.end());
  for (const model::ValueInfoProto& vi : graph.value_info) {
    if (needed.count(vi.name) && !outputs.count(vi.name)) out_graph->value_info.push_back(vi);
  }
  out_graph->name = graph.name;
  replace_all(out_graph->name, "_eval");
  replace_all(out_graph->name, "_training");

  model::ModelProto out;
  out.ir_version = source.ir_version;
  for (const model::OperatorSetIdProto& o : source.opset_import) {
    if (o.domain != kTrainingDomain) out.opset_import.push_back(o);
  }
  out.producer_name = "onyx.training";
  out.graph = out_graph;
  for (const model::StringStringEntryProto& p : source.metadata_props) {
    if (p.key != training_api::kMetadataKey) out.metadata_props.push_back(p);
  }
  const std::string bytes = model::serialize_model(out);
  throw_if_error(training_api::replace_file(
      path, [&](std::FILE* f) { return std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size(); }));
}

}  // namespace onyx::training
