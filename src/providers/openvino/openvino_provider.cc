// The OpenVINO provider: its options, what it claims (OpenVINO's own answer:
// the candidates are converted by the ONNX frontend and queried on the
// device, node by node), and its registration when this library loads.
#include "providers/openvino/openvino_provider.h"

#include <openvino/frontend/manager.hpp>
#include <openvino/op/util/framework_node.hpp>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "graph/subgraphs.h"
#include "graph/to_proto.h"
#include "model/writer.h"
#include "providers/node_groups.h"

namespace onyx::openvino {
namespace {

int64_t int_attribute(const graph::Node& node, const char* name, int64_t default_value) {
  const graph::Attribute* a = node.attribute(name);
  return a != nullptr ? a->i : default_value;
}

std::string string_attribute(const graph::Node& node, const char* name, const char* default_value) {
  const graph::Attribute* a = node.attribute(name);
  return a != nullptr ? a->s : default_value;
}

DataType elem_type(const graph::Graph& graph, int32_t v) {
  return v == graph::kNoValue ? DataType::kUndefined : graph.values[static_cast<size_t>(v)].info.type.elem_type;
}

// Why OpenVINO must not run `node`, though its frontend converts it and the
// CPU plugin reports it supported: each case gives results against the ONNX
// spec in the ONNX backend node suite (openvino 2026.4). nullptr: no reason.
const char* deny_reason(const graph::Graph& graph, const graph::Node& node) {
  const std::string& op = node.op_type;
  for (int32_t v : node.inputs) {
    if (elem_type(graph, v) == DataType::kDouble)
      return "the CPU plugin computes double in float: inf and large values saturate";
  }
  for (int32_t v : node.outputs) {
    if (elem_type(graph, v) == DataType::kDouble)
      return "the CPU plugin computes double in float: inf and large values saturate";
  }
  if (node.domain == "com.microsoft" && op == "FusedGemm") {
    return "returns zeros (a saved onyx-optimized bert_toy_optimized, pytest --providers)";
  }
  if (!node.domain.empty()) return nullptr;
  if (op == "Dropout") return "returns zeros or garbage instead of its input at inference";
  if (op == "Tile" && node.inputs.size() > 1 && !graph.initializers.count(node.inputs[1])) {
    return "with repeats computed at run time its output is garbage";
  }
  if (op == "TopK") return "equal values come out in the wrong order (the spec wants the lower index first)";
  if (op == "Resize") {
    if (string_attribute(node, "mode", "nearest") == "cubic") return "cubic interpolation differs from the spec";
    if (int_attribute(node, "antialias", 0) != 0) return "antialiasing differs from the spec";
    if (string_attribute(node, "coordinate_transformation_mode", "half_pixel") == "align_corners") {
      return "align_corners differs from the spec when downsampling";
    }
    if (string_attribute(node, "keep_aspect_ratio_policy", "stretch") != "stretch") {
      return "keep_aspect_ratio_policy not_larger/not_smaller gives the wrong output shape";
    }
  }
  if (op == "MaxPool" && int_attribute(node, "ceil_mode", 0) != 0)
    return "ceil_mode counts a last window the spec drops";
  if (op == "NonMaxSuppression") return "boxes at exactly the IoU threshold are suppressed";
  if (op == "RoiAlign" && string_attribute(node, "mode", "avg") == "max") return "mode=max differs from the spec";
  if ((op == "RNN" || op == "GRU" || op == "LSTM") && int_attribute(node, "layout", 0) != 0) {
    return "layout=1 (batch first) gives wrong results";
  }
  if (op == "DynamicQuantizeLinear") return "rounds halves away from zero, not to even";
  if (op == "QuantizeLinear") {
    const DataType out = node.outputs.empty() ? DataType::kUndefined : elem_type(graph, node.outputs[0]);
    if (out == DataType::kUInt16 || out == DataType::kInt16) return "16-bit outputs round halves wrongly";
    if (node.inputs.size() > 1 && !graph.initializers.count(node.inputs[1])) {
      return "with a scale computed at run time a value comes out one off (DynamicQuantizeLinear's function body)";
    }
  }
  if (op == "LSTM" && node.inputs.size() > 7 && node.inputs[7] != graph::kNoValue)
    return "peepholes give wrong results";
  if ((op == "ReduceMax" || op == "ReduceMin") && !node.inputs.empty()) {
    const DataType t = elem_type(graph, node.inputs[0]);
    if (t == DataType::kFloat || t == DataType::kFloat16 || t == DataType::kBFloat16) {
      return "infinities saturate to the largest finite value (a row of -inf gives -3.4e38)";
    }
  }
  if (op == "Attention") return "causal masks with past keys give wrong results";
  if (op == "DFT") return "onesided and inverse transforms give wrong shapes";
  if ((op == "Max" || op == "Min" || op == "Sum" || op == "Mean") && node.inputs.size() == 1) {
    return "with a single input it returns garbage";
  }
  if (op == "Einsum" && !node.outputs.empty()) {
    const graph::TypeAndShape& out = graph.values[static_cast<size_t>(node.outputs[0])].info;
    if (out.has_shape && out.shape.empty()) return "a scalar result comes out as zero";
  }
  return nullptr;
}

// A tensor OpenVINO's CPU plugin can take: of a type it has, of a known rank
// (many of its ops refuse a dynamic rank at compile time, though the query
// accepts them), and not empty (it gives empty tensors the wrong shapes).
bool is_tensor_openvino_has(const graph::Graph& graph, int32_t v) {
  const graph::TypeAndShape& info = graph.values[static_cast<size_t>(v)].info;
  if (info.type.kind != ValueType::Kind::kTensor || !info.has_shape) return false;
  for (const graph::Dim& d : info.shape) {
    if (d.value == 0) return false;
  }
  return to_ov_type(info.type.elem_type) != ov::element::dynamic;
}

// What OpenVINO could run at all, before asking it: tensors of types it has,
// no subgraphs, no onyx-internal ops.
bool may_claim(const graph::Graph& graph, const graph::Node& node) {
  if (graph::has_subgraphs(node) || deny_reason(graph, node) != nullptr) return false;
  if (node.domain.rfind("com.onyx", 0) == 0 || node.domain == "com.microsoft.nchwc") return false;
  for (int32_t v : node.inputs) {
    if (v != graph::kNoValue && !is_tensor_openvino_has(graph, v)) return false;
  }
  for (int32_t v : node.outputs) {
    if (v != graph::kNoValue && !is_tensor_openvino_has(graph, v)) return false;
  }
  return !node.outputs.empty();
}

// `nodes` of `graph` as a standalone graph: what they read from elsewhere
// becomes graph inputs (constants stay initializers), and every value they
// make is a graph output, so that each keeps its name through conversion.
graph::Graph standalone_graph(const graph::Graph& graph, const std::vector<size_t>& nodes) {
  graph::Graph sub;
  sub.name = "openvino_query";
  std::unordered_set<int32_t> produced;
  for (size_t n : nodes) {
    for (int32_t out : graph.nodes[n].outputs) {
      if (out != graph::kNoValue) produced.insert(out);
    }
  }
  std::unordered_map<int32_t, int32_t> ids;
  auto map_value = [&](int32_t v, bool* added) {
    auto it = ids.find(v);
    *added = it == ids.end();
    if (!*added) return it->second;
    const int32_t id = sub.value_id(graph.value_name(v));
    sub.values[static_cast<size_t>(id)].info = graph.values[static_cast<size_t>(v)].info;
    ids.emplace(v, id);
    return id;
  };
  for (size_t n : nodes) {
    graph::Node node = graph.nodes[n];
    node.execution_provider.clear();
    for (int32_t& in : node.inputs) {
      if (in == graph::kNoValue) continue;
      const int32_t outer = in;
      bool added = false;
      in = map_value(outer, &added);
      if (!added || produced.count(outer)) continue;
      auto constant = graph.initializers.find(outer);
      if (constant != graph.initializers.end() && !graph.values[static_cast<size_t>(outer)].is_graph_input) {
        sub.initializers[in] = constant->second;
        sub.values[static_cast<size_t>(in)].is_initializer = true;
      } else {
        sub.inputs.push_back(in);
        sub.values[static_cast<size_t>(in)].is_graph_input = true;
      }
    }
    for (int32_t& out : node.outputs) {
      if (out == graph::kNoValue) continue;
      bool added = false;
      out = map_value(out, &added);
      sub.outputs.push_back(out);
    }
    sub.nodes.push_back(std::move(node));
  }
  return sub;
}

Result<int64_t> parse_count(const std::string& key, const std::string& value) {
  char* end = nullptr;
  const long long n = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end == nullptr || *end != '\0' || n < 1 || n > 4096) {
    return invalid_argument("OpenVINOExecutionProvider option '", key, "': '", value,
                            "' is not a count (a whole number from 1)");
  }
  return static_cast<int64_t>(n);
}

bool known_device(const std::string& device) {
  for (const char* prefix : {"CPU", "GPU", "NPU", "AUTO", "HETERO:", "MULTI:"}) {
    const std::string p = prefix;
    if (device == p || device.rfind(p + (p.back() == ':' ? "" : "."), 0) == 0 ||
        (p == "AUTO" && device.rfind("AUTO:", 0) == 0)) {
      return true;
    }
  }
  return false;
}

}  // namespace

ov::element::Type to_ov_type(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat:
      return ov::element::f32;
    case DataType::kFloat16:
      return ov::element::f16;
    case DataType::kBFloat16:
      return ov::element::bf16;
    case DataType::kDouble:
      return ov::element::f64;
    case DataType::kInt8:
      return ov::element::i8;
    case DataType::kUInt8:
      return ov::element::u8;
    case DataType::kInt16:
      return ov::element::i16;
    case DataType::kUInt16:
      return ov::element::u16;
    case DataType::kInt32:
      return ov::element::i32;
    case DataType::kUInt32:
      return ov::element::u32;
    case DataType::kInt64:
      return ov::element::i64;
    case DataType::kUInt64:
      return ov::element::u64;
    case DataType::kBool:
      return ov::element::boolean;
    default:
      return ov::element::dynamic;
  }
}

Result<OpenVinoOptions> OpenVinoOptions::parse(const std::map<std::string, std::string>& values) {
  OpenVinoOptions o;
  for (const auto& [key, value] : values) {
    if (key == "device_type") {
      if (!known_device(value)) {
        return invalid_argument("OpenVINOExecutionProvider option 'device_type': '", value,
                                "' is not a device (CPU, GPU, NPU, AUTO)");
      }
      o.device_type = value;
    } else if (key == "precision") {
      if (value != "FP32" && value != "FP16" && value != "ACCURACY") {
        return invalid_argument("OpenVINOExecutionProvider option 'precision': '", value,
                                "' is not one of FP32, FP16, ACCURACY");
      }
      o.precision = value;
    } else if (key == "num_of_threads") {
      ONYX_ASSIGN_OR_RETURN(o.num_of_threads, parse_count(key, value));
    } else if (key == "num_streams") {
      ONYX_ASSIGN_OR_RETURN(o.num_streams, parse_count(key, value));
    } else if (key == "cache_dir") {
      o.cache_dir = value;
    } else {
      return invalid_argument("OpenVINOExecutionProvider has no option '", key,
                              "' (it has device_type, precision, num_of_threads, num_streams, cache_dir)");
    }
  }
  // onnxruntime's defaults: full precision on the CPU, half on GPUs and NPUs.
  if (o.precision.empty()) o.precision = o.device_type.rfind("CPU", 0) == 0 ? "FP32" : "FP16";
  return o;
}

ov::AnyMap OpenVinoOptions::compile_properties() const {
  ov::AnyMap p;
  if (precision == "FP32") {
    // Without the hint the CPU plugin runs float models in bfloat16 where the
    // CPU has AMX or AVX512-BF16, which is not what FP32 promises.
    p.emplace(ov::hint::inference_precision.name(), ov::element::f32);
  } else if (precision == "FP16") {
    p.emplace(ov::hint::inference_precision.name(), ov::element::f16);
  } else if (precision == "ACCURACY") {
    p.emplace(ov::hint::execution_mode.name(), ov::hint::ExecutionMode::ACCURACY);
  }
  if (num_of_threads > 0) p.emplace(ov::inference_num_threads.name(), static_cast<int32_t>(num_of_threads));
  if (num_streams > 0) {
    p.emplace(ov::num_streams.name(), ov::streams::Num(static_cast<int32_t>(num_streams)));
  } else {
    p.emplace(ov::hint::performance_mode.name(), ov::hint::PerformanceMode::LATENCY);
  }
  if (!cache_dir.empty()) p.emplace(ov::cache_dir.name(), cache_dir);
  return p;
}

std::string serialize_for_openvino(const graph::Graph& graph) {
  model::ModelProto original;
  original.ir_version = 10;
  original.producer_name = "onyx";
  return model::serialize_model(graph::graph_to_model(graph, original));
}

std::shared_ptr<ov::Model> convert_onnx(const std::string& bytes, bool partially) {
  // One ONNX frontend for the process, loaded once (sessions may be created
  // from several threads); never destroyed, as the models it made may
  // outlive static destruction order.
  static const ov::frontend::FrontEnd::Ptr& frontend = *[] {
    static ov::frontend::FrontEndManager* manager = new ov::frontend::FrontEndManager();
    return new ov::frontend::FrontEnd::Ptr(manager->load_by_framework("onnx"));
  }();
  std::istringstream stream(bytes);
  std::istream* in = &stream;
  ov::frontend::InputModel::Ptr input = frontend->load(in);
  return partially ? frontend->convert_partially(input) : frontend->convert(input);
}

OpenVinoProvider::OpenVinoProvider(OpenVinoOptions options, std::shared_ptr<ov::Core> core)
    : options_(std::move(options)), core_(std::move(core)) {}

Allocator* OpenVinoProvider::allocator(MemoryType type) const {
  return type == MemoryType::kDefault ? cpu_allocator() : nullptr;
}

std::vector<bool> OpenVinoProvider::supported_nodes(const graph::Graph& graph,
                                                    const std::vector<size_t>& candidates) const {
  std::vector<bool> supported(graph.nodes.size(), false);
  std::vector<size_t> asked;
  for (size_t n : candidates) {
    if (may_claim(graph, graph.nodes[n])) asked.push_back(n);
  }
  // Nodes the frontend cannot convert are dropped and the rest asked again:
  // a node's conversion may depend on what its inputs are (constants, types).
  for (int round = 0; round < 4 && !asked.empty(); ++round) {
    std::shared_ptr<ov::Model> model;
    try {
      model = convert_onnx(serialize_for_openvino(standalone_graph(graph, asked)), true);
    } catch (const std::exception&) {
      return supported;  // OpenVINO cannot read these nodes at all: claim none
    }
    // Tensor name -> the operation that makes it.
    std::unordered_map<std::string, std::shared_ptr<ov::Node>> maker;
    bool any_unconverted = false;
    for (const std::shared_ptr<ov::Node>& op : model->get_ordered_ops()) {
      if (ov::as_type_ptr<ov::op::util::FrameworkNode>(op)) any_unconverted = true;
      for (const ov::Output<ov::Node>& out : op->outputs()) {
        for (const std::string& name : out.get_names()) maker.emplace(name, op);
      }
    }
    std::set<std::string> device_supports;
    if (!any_unconverted) {
      try {
        for (const auto& [op, device] : core_->query_model(model, options_.device_type)) device_supports.insert(op);
      } catch (const std::exception&) {
        return supported;
      }
    }
    std::vector<size_t> next;
    for (size_t n : asked) {
      bool ok = true;
      for (int32_t v : graph.nodes[n].outputs) {
        if (v == graph::kNoValue) continue;
        auto it = maker.find(graph.value_name(v));
        if (it == maker.end() || ov::as_type_ptr<ov::op::util::FrameworkNode>(it->second)) {
          ok = false;
          break;
        }
        if (!any_unconverted && !device_supports.count(it->second->get_friendly_name())) ok = false;
      }
      if (ok) next.push_back(n);
    }
    if (!any_unconverted || next.empty()) {
      for (size_t n : next) supported[n] = true;
      return supported;
    }
    asked = std::move(next);
  }
  return supported;
}

std::vector<NodeGroup> OpenVinoProvider::claim(const graph::Graph& graph, const std::vector<size_t>& candidates) const {
  const std::vector<bool> supported = supported_nodes(graph, candidates);
  std::vector<NodeGroup> groups = connected_groups(graph, candidates, [&](size_t n) { return supported[n]; });
  // A group of nothing but view ops (Reshape, Squeeze, ...) is left to the
  // CPU, where they share their input's buffer, while through OpenVINO they
  // would cost a call (about 6 us more than the CPU's on a 64-float tensor,
  // measured with Relu+Sigmoid at one thread) and a copy. Other small groups
  // stay: on large tensors OpenVINO's kernels pay for the call.
  std::vector<NodeGroup> kept;
  for (NodeGroup& group : groups) {
    const bool views_only = std::all_of(group.nodes.begin(), group.nodes.end(), [&](size_t n) {
      const graph::Node& node = graph.nodes[n];
      return node.domain.empty() && (node.op_type == "Reshape" || node.op_type == "Flatten" ||
                                     node.op_type == "Squeeze" || node.op_type == "Unsqueeze" ||
                                     node.op_type == "Identity" || node.op_type == "Shape");
    });
    if (!views_only) kept.push_back(std::move(group));
  }
  return kept;
}

Result<std::unique_ptr<Kernel>> OpenVinoProvider::compile(const graph::Graph& fused, const KernelInfo& info) const {
  return compile_fused_graph(*core_, options_, fused, info.label());
}

std::map<std::string, std::string> OpenVinoProvider::options() const {
  std::map<std::string, std::string> o;
  o["device_type"] = options_.device_type;
  o["precision"] = options_.precision;
  o["num_of_threads"] = std::to_string(options_.num_of_threads);
  o["num_streams"] = std::to_string(options_.num_streams);
  o["cache_dir"] = options_.cache_dir;
  return o;
}

namespace {

Result<std::unique_ptr<ExecutionProvider>> create(const ProviderOptions& given) {
  ONYX_ASSIGN_OR_RETURN(OpenVinoOptions options, OpenVinoOptions::parse(given.values));
  try {
    auto core = std::make_shared<ov::Core>();
    // The device must be there: a GPU build on a machine without one fails
    // here, so that the session falls back to the CPU provider (or says so).
    const std::string device = options.device_type.substr(0, options.device_type.find_first_of(".:"));
    if (device != "AUTO" && device != "HETERO" && device != "MULTI") {
      const std::vector<std::string> devices = core->get_available_devices();
      const bool found =
          std::any_of(devices.begin(), devices.end(), [&](const std::string& d) { return d.rfind(device, 0) == 0; });
      if (!found) {
        std::string have;
        for (const std::string& d : devices) have += (have.empty() ? "" : ", ") + d;
        return invalid_argument("OpenVINOExecutionProvider option 'device_type': OpenVINO has no device '",
                                options.device_type, "' on this machine (it has ", have.empty() ? "none" : have, ")");
      }
    }
    return std::unique_ptr<ExecutionProvider>(new OpenVinoProvider(std::move(options), std::move(core)));
  } catch (const std::exception& e) {
    return runtime_error("OpenVINOExecutionProvider cannot load OpenVINO: ", e.what());
  }
}

// Registers the provider when the core loads this library.
[[maybe_unused]] const bool registered = [] {
  register_provider(kProviderName, create);
  return true;
}();

}  // namespace
}  // namespace onyx::openvino
