// Partitioning, kernel creation, device copies and lifetimes.
#include "session/planner.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <unordered_map>

#include "graph/subgraphs.h"
#include "model/reader.h"
#include "session/memory_usage.h"
#include "session/partition.h"

namespace onyx::session {
namespace {

std::string domain_name(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

// Prefixes the node's label unless the kernel already named it.
std::string labelled(const std::string& label, const std::string& message) {
  return message.rfind(label, 0) == 0 ? message : label + ": " + message;
}

void collect_unsupported(const graph::Graph& graph, const std::vector<const ExecutionProvider*>& providers,
                         std::set<std::string>& missing) {
  for (const graph::Node& node : graph.nodes) {
    bool found = false;
    for (const ExecutionProvider* p : providers) {
      if (p->kernels().find(node.domain, node.op_type, node.since_version) != nullptr) {
        found = true;
        break;
      }
    }
    if (!found) {
      missing.insert(str_cat("(", domain_name(node.domain), ", ", node.op_type, ", ", node.since_version, ")"));
    }
    for (const auto& [name, attr] : node.attributes) {
      if (attr.g) collect_unsupported(*attr.g, providers, missing);
      for (const auto& g : attr.graphs) collect_unsupported(*g, providers, missing);
    }
  }
}

}  // namespace

std::vector<std::string> unsupported_ops(const graph::Graph& graph,
                                         const std::vector<const ExecutionProvider*>& providers) {
  std::set<std::string> missing;
  collect_unsupported(graph, providers, missing);
  return {missing.begin(), missing.end()};
}

namespace {

// Tracks the readers of each initializer while kernels are created, to free
// the ones no kernel needs the data of (see make_plan_releasing_weights).
class WeightRelease {
 public:
  explicit WeightRelease(graph::Graph& graph) : graph_(graph) {
    for (const graph::Node& node : graph.nodes) {
      for (int32_t in : node.inputs) {
        if (in != graph::kNoValue && graph.initializers.count(in)) ++pending_[in];
      }
      for (const std::string& name : graph::outer_scope_reads(node)) keep(graph.find_value(name));
    }
    for (int32_t id : graph.inputs) keep(id);  // overridable: a feed may replace it
    for (int32_t id : graph.outputs) keep(id);
    // Initializers no node reads (left behind by graph rewrites) are dead now.
    for (auto& [id, tensor] : graph.initializers) {
      if (pending_.count(id) == 0 && needed_.count(id) == 0) drop_data(tensor);
    }
  }

  void keep(int32_t id) {
    if (id >= 0) needed_.insert(id);
  }

  // Whether the kernel about to be created is the last reader of initializer
  // `id` (reading it once) and no earlier reader, graph input or output or
  // subgraph keeps it, and no other initializer shares its buffer: then the
  // data is dropped right after, unless this kernel needs it.
  bool sole_reader(int32_t id) const {
    auto it = pending_.find(id);
    if (it == pending_.end() || it->second != 1 || needed_.count(id) != 0) return false;
    const Tensor& tensor = graph_.initializers.at(id);
    if (tensor.raw_data() == nullptr || !tensor.device().is_cpu()) return false;
    for (const auto& [other, t] : graph_.initializers) {
      if (other != id && t.shares_buffer_with(tensor)) return false;
    }
    return true;
  }

  // The kernel of `node` exists; `kernel` is null where the node reads its
  // inputs another way (a copy to another device).
  void created(const graph::Node& node, const Kernel* kernel) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int32_t id = node.inputs[i];
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      if (kernel == nullptr || kernel->needs_constant_data(i)) needed_.insert(id);
      if (--it->second > 0) continue;
      Tensor& tensor = graph_.initializers.at(id);
      if (needed_.count(id) == 0) {
        drop_data(tensor);  // every reader keeps its own copy
      } else if (tensor.device().is_cpu() && tensor.raw_data() != nullptr) {
        model::release_mapped_pages(tensor.raw_data(), tensor.bytes());
      }
    }
  }

 private:
  // Only the element type and shape remain.
  static void drop_data(Tensor& tensor) {
    if (tensor.dtype() == DataType::kString || tensor.raw_data() == nullptr) return;
    const size_t bytes = tensor.bytes();
    tensor = Tensor::borrow(tensor.dtype(), tensor.shape(), nullptr, tensor.device());
    // Hand a large weight's memory back now, before the next kernel packs its own.
    if (bytes >= kTrimBytes) return_free_memory_to_system();
  }
  static constexpr size_t kTrimBytes = size_t{1} << 20;

  graph::Graph& graph_;
  std::unordered_map<int32_t, int> pending_;  // initializer -> readers whose kernel is not created yet
  std::set<int32_t> needed_;
};

// A tensor value's shape when every dimension is known statically.
std::optional<Shape> static_shape(const graph::Graph& graph, int32_t value) {
  const graph::TypeAndShape& info = graph.values[static_cast<size_t>(value)].info;
  if (info.type.kind != ValueType::Kind::kTensor) return std::nullopt;
  return info.known_shape();
}

// Concat in place: when a Concat's output is one block per input (every axis
// before the concatenated one has size 1, as in a channel concat at batch 1),
// the host kernels producing its inputs write them straight into their
// blocks of the Concat's output, and the Concat copies only what is not
// already there. An input qualifies when the Concat is its only reader, it is
// not a graph output and its shape is known when planning; the run checks
// the actual type and shape again (executor.cc).
void place_concat_inputs(const graph::Graph& graph, GraphPlan& plan) {
  auto on_host = [](const ExecutionProvider* p) { return p == nullptr || p->device().is_cpu(); };
  std::vector<int64_t> producer(plan.slot_count, -1);
  std::vector<int> uses(plan.slot_count, 0);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    for (int32_t in : step.inputs) {
      if (in != graph::kNoValue) ++uses[static_cast<size_t>(in)];
    }
    if (step.kind != PlanStep::Kind::kNode) continue;
    for (int32_t out : step.outputs) {
      if (out != graph::kNoValue) producer[static_cast<size_t>(out)] = static_cast<int64_t>(s);
    }
    std::vector<std::string> names;
    for (const auto& [attr_name, sub] : step.subgraphs) graph::append_outer_scope_reads(*sub->graph, names);
    for (const std::string& name : names) {
      const int32_t id = graph.find_value(name);
      if (id >= 0) uses[static_cast<size_t>(id)] += 2;  // never placed
    }
  }
  for (int32_t out : plan.output_slots) uses[static_cast<size_t>(out)] += 2;
  for (int32_t out : graph.outputs) uses[static_cast<size_t>(out)] += 2;

  for (PlanStep& concat : plan.steps) {
    if (concat.kind != PlanStep::Kind::kNode || !on_host(concat.provider)) continue;
    const graph::Node& node = graph.nodes[concat.node_index];
    if (node.op_type != "Concat" || !node.domain.empty() || node.outputs.size() != 1) continue;
    const std::optional<Shape> out_shape = static_shape(graph, node.outputs[0]);
    const DataType dtype = graph.values[static_cast<size_t>(node.outputs[0])].info.type.elem_type;
    if (!out_shape || out_shape->empty() || dtype == DataType::kString || dtype_size(dtype) == 0) continue;
    const auto axis_attr = node.attributes.find("axis");
    int64_t axis = axis_attr != node.attributes.end() ? axis_attr->second.i : 1;
    const auto rank = static_cast<int64_t>(out_shape->size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) continue;
    bool one_block = true;
    for (int64_t d = 0; d < axis; ++d) one_block = one_block && (*out_shape)[static_cast<size_t>(d)] == 1;
    if (!one_block) continue;

    std::vector<std::pair<size_t, PlacedOutput>> placed;  // (producer step, output)
    size_t offset = 0;
    bool consistent = true;
    for (int32_t in : concat.inputs) {
      const std::optional<Shape> shape = in == graph::kNoValue || static_cast<size_t>(in) >= graph.values.size()
                                             ? std::nullopt
                                             : static_shape(graph, in);
      if (!shape) {
        consistent = false;
        break;
      }
      const size_t bytes = static_cast<size_t>(shape_size(*shape)) * dtype_size(dtype);
      const int64_t p = producer[static_cast<size_t>(in)];
      if (p >= 0 && uses[static_cast<size_t>(in)] == 1 && !graph.initializers.count(in) &&
          graph.values[static_cast<size_t>(in)].info.type.elem_type == dtype &&
          on_host(plan.steps[static_cast<size_t>(p)].provider)) {
        const PlanStep& step = plan.steps[static_cast<size_t>(p)];
        PlacedOutput out;
        out.output =
            static_cast<size_t>(std::find(step.outputs.begin(), step.outputs.end(), in) - step.outputs.begin());
        out.byte_offset = offset;
        out.dtype = dtype;
        out.shape = *shape;
        placed.emplace_back(static_cast<size_t>(p), std::move(out));
      }
      offset += bytes;
    }
    const size_t total = static_cast<size_t>(shape_size(*out_shape)) * dtype_size(dtype);
    if (!consistent || offset != total || placed.empty()) continue;
    const auto id = static_cast<int32_t>(plan.placements.size());
    const bool is_output =
        std::find(graph.outputs.begin(), graph.outputs.end(), node.outputs[0]) != graph.outputs.end();
    plan.placements.push_back({dtype, *out_shape, is_output});
    concat.concat_placement = id;
    for (auto& [step, out] : placed) {
      out.placement = static_cast<size_t>(id);
      plan.steps[step].placed_outputs.push_back(std::move(out));
    }
  }
}

// Where a value is read: on the host (nullptr) or on the device of the
// provider running its reader; inputs a kernel keeps in host memory (shape
// tensors) count as host reads.
const ExecutionProvider* reader_location(const ExecutionProvider* provider, const KernelDef* def, size_t input) {
  if (provider == nullptr || provider->device().is_cpu()) return nullptr;
  if (def != nullptr && def->input_on_host(input)) return nullptr;
  return provider;
}

Result<std::unique_ptr<GraphPlan>> plan_graph(const graph::Graph& graph, graph::Graph* releasing,
                                              const std::vector<const ExecutionProvider*>& providers,
                                              const DataTransferRegistry& transfers, bool inputs_are_constant,
                                              bool top_level, const KernelInfo::OuterConstants& outer = {}) {
  std::unique_ptr<WeightRelease> release = releasing ? std::make_unique<WeightRelease>(*releasing) : nullptr;
  auto plan = std::make_unique<GraphPlan>();
  plan->graph = &graph;
  plan->slot_count = graph.values.size();

  // The provider of each node: as partitioning assigned it; a graph that was
  // not partitioned (planned directly) goes to the first provider with a
  // kernel for the node.
  std::vector<const ExecutionProvider*> assigned(graph.nodes.size(), nullptr);
  std::vector<const KernelDef*> defs(graph.nodes.size(), nullptr);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const graph::Node& node = graph.nodes[n];
    const ExecutionProvider* provider = provider_of(node, providers);
    if (provider == nullptr && !node.execution_provider.empty()) {
      return runtime_error(node.label(n), ": assigned to provider ", node.execution_provider,
                           ", which the session does not have");
    }
    if (provider == nullptr) {
      for (const ExecutionProvider* p : providers) {
        if (p->kernels().find(graph, node) != nullptr) {
          provider = p;
          break;
        }
      }
    }
    if (provider == nullptr) {
      return not_implemented(node.label(n), ": no execution provider has a kernel for (", domain_name(node.domain),
                             ", ", node.op_type, ", ", node.since_version, ")");
    }
    assigned[n] = provider;
    if (!node.fused_graph) {
      defs[n] = provider->kernels().find(graph, node);
      if (defs[n] == nullptr) {
        return not_implemented(node.label(n), ": provider ", provider->name(), " has no kernel for (",
                               domain_name(node.domain), ", ", node.op_type, ", ", node.since_version,
                               ") with these input types");
      }
    }
  }

  // Where each value lives: its producer's device; initializers and
  // outer-scope values on the host; a main-graph input on the device of its
  // readers when they are all on one device. Copies are made once per
  // (value, device).
  std::vector<const ExecutionProvider*> location(graph.values.size(), nullptr);  // null: host
  plan->input_providers.assign(graph.inputs.size(), nullptr);
  if (top_level) {
    std::vector<std::set<const ExecutionProvider*>> readers(graph.values.size());
    for (size_t n = 0; n < graph.nodes.size(); ++n) {
      const graph::Node& node = graph.nodes[n];
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (node.inputs[i] == graph::kNoValue) continue;
        readers[static_cast<size_t>(node.inputs[i])].insert(reader_location(assigned[n], defs[n], i));
      }
      for (const std::string& name : graph::outer_scope_reads(node)) {
        const int32_t id = graph.find_value(name);
        if (id >= 0) readers[static_cast<size_t>(id)].insert(nullptr);
      }
    }
    for (int32_t out : graph.outputs) readers[static_cast<size_t>(out)].insert(nullptr);
    for (size_t i = 0; i < graph.inputs.size(); ++i) {
      const auto id = static_cast<size_t>(graph.inputs[i]);
      if (graph.values[id].is_initializer || readers[id].size() != 1 || *readers[id].begin() == nullptr) continue;
      location[id] = *readers[id].begin();
      plan->input_providers[i] = location[id];
    }
  }
  std::map<std::pair<int32_t, const ExecutionProvider*>, int32_t> copies;  // (value, target) -> slot
  std::vector<int64_t> producer_step(graph.values.size(), -1);
  auto on_host = [](const ExecutionProvider* p) { return p == nullptr || p->device().is_cpu(); };
  auto add_copy = [&](int32_t value, const ExecutionProvider* provider, bool to_host, std::vector<PlanStep>& steps) {
    PlanStep copy;
    copy.kind = PlanStep::Kind::kCopy;
    copy.provider = provider;
    copy.to_host = to_host;
    copy.inputs = {value};
    const auto slot = static_cast<int32_t>(plan->slot_count++);
    copy.outputs = {slot};
    copy.label =
        std::string("copy of '") + graph.value_name(value) + (to_host ? "' to the host" : "' to " + provider->name());
    steps.push_back(std::move(copy));
    producer_step.resize(plan->slot_count, -1);
    producer_step[static_cast<size_t>(slot)] = static_cast<int64_t>(steps.size() - 1);
    return slot;
  };
  // A constant a device kernel reads: copied to the device now, once.
  auto place_constant = [&](int32_t value, const ExecutionProvider* target) -> Result<int32_t> {
    const Tensor& tensor = graph.initializers.at(value);
    if (!tensor.device().host_readable() && tensor.device() == target->device()) return value;
    ONYX_ASSIGN_OR_RETURN(Tensor placed, transfers.copy_to(tensor, target->allocator()));
    const auto slot = static_cast<int32_t>(plan->slot_count++);
    producer_step.resize(plan->slot_count, -1);
    plan->device_constants.emplace_back(slot, std::move(placed));
    return slot;
  };
  // The slot holding `value` on the consumer's device, adding copies through
  // the host where the value lives elsewhere.
  auto slot_on = [&](int32_t value, const ExecutionProvider* consumer,
                     std::vector<PlanStep>& steps) -> Result<int32_t> {
    const ExecutionProvider* from = location[static_cast<size_t>(value)];
    if (on_host(from) && on_host(consumer)) return value;
    if (!on_host(from) && !on_host(consumer) && from->device() == consumer->device()) return value;
    const ExecutionProvider* target = on_host(consumer) ? nullptr : consumer;
    auto it = copies.find({value, target});
    if (it != copies.end()) return it->second;
    const bool constant = graph.initializers.count(value) != 0 &&
                          (inputs_are_constant || !graph.values[static_cast<size_t>(value)].is_graph_input);
    if (target != nullptr && on_host(from) && constant) {
      ONYX_ASSIGN_OR_RETURN(int32_t slot, place_constant(value, target));
      copies[{value, target}] = slot;
      return slot;
    }
    int32_t host_slot = value;
    if (!on_host(from)) {
      auto h = copies.find({value, nullptr});
      host_slot = h != copies.end() ? h->second : add_copy(value, from, true, steps);
      copies[{value, nullptr}] = host_slot;
    }
    const int32_t slot = target ? add_copy(host_slot, target, false, steps) : host_slot;
    copies[{value, target}] = slot;
    return slot;
  };

  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const graph::Node& node = graph.nodes[n];
    const ExecutionProvider* provider = assigned[n];
    PlanStep step;
    step.node_index = n;
    step.provider = provider;
    step.label = node.label(n);
    bool copied = false;  // an input goes through a device copy: the copy reads the data
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int32_t in = node.inputs[i];
      if (in == graph::kNoValue) {
        step.inputs.push_back(graph::kNoValue);
        continue;
      }
      ONYX_ASSIGN_OR_RETURN(int32_t slot, slot_on(in, reader_location(provider, defs[n], i), plan->steps));
      step.inputs.push_back(slot);
      copied = copied || slot != in;
    }
    step.outputs = node.outputs;
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const int32_t out = node.outputs[o];
      if (out == graph::kNoValue) continue;
      const bool host_output = defs[n] != nullptr && defs[n]->output_on_host(o);
      location[static_cast<size_t>(out)] = host_output ? nullptr : provider;
      producer_step[static_cast<size_t>(out)] = static_cast<int64_t>(plan->steps.size());
    }
    KernelInfo info(graph, node, n, provider->allocator(), inputs_are_constant);
    if (release && !copied) info.set_sole_reader([&release](int32_t id) { return release->sole_reader(id); });
    if (outer) info.set_outer_constants(outer);
    try {
      Result<std::unique_ptr<Kernel>> kernel =
          node.fused_graph ? provider->compile(*node.fused_graph, info) : defs[n]->factory(info);
      if (!kernel.is_ok()) {
        return Status(kernel.status().code(), labelled(step.label, kernel.status().message()));
      }
      step.kernel = std::move(kernel).value();
    } catch (const Error& e) {
      return Status(e.code(), labelled(step.label, e.what()));
    } catch (const std::exception& e) {
      return invalid_model(labelled(step.label, e.what()));
    }
    if (release) release->created(node, copied ? nullptr : step.kernel.get());
    // A subgraph's kernels see this graph's constants (and those further out)
    // by name, as the weights of an If branch often are: packed once, not
    // per run.
    const KernelInfo::OuterConstants constants_here = [&graph, &outer, inputs_are_constant](const std::string& name) {
      const int32_t id = graph.find_value(name);
      auto it = id >= 0 ? graph.initializers.find(id) : graph.initializers.end();
      if (it != graph.initializers.end()) {
        const bool overridable = !inputs_are_constant && graph.values[static_cast<size_t>(id)].is_graph_input;
        return overridable || it->second.raw_data() == nullptr ? nullptr : &it->second;
      }
      // A name this graph neither defines nor lists comes from further out too.
      const bool from_outside = id < 0 || graph.values[static_cast<size_t>(id)].is_outer_scope;
      return from_outside && outer ? outer(name) : nullptr;
    };
    for (const auto& [name, attr] : node.attributes) {
      if (attr.g) {
        ONYX_ASSIGN_OR_RETURN(std::unique_ptr<GraphPlan> sub,
                              plan_graph(*attr.g, releasing ? attr.g.get() : nullptr, providers, transfers,
                                         inputs_are_constant, false, constants_here));
        step.subgraphs.emplace(name, std::move(sub));
      }
    }
    plan->steps.push_back(std::move(step));
  }
  for (int32_t out : graph.outputs) {
    if (top_level) {
      plan->output_slots.push_back(out);
    } else {
      ONYX_ASSIGN_OR_RETURN(int32_t slot, slot_on(out, nullptr, plan->steps));
      plan->output_slots.push_back(slot);
    }
  }

  // Events: a step reading what a step on another stream made waits for it.
  // A copy runs on its device's stream; host steps on the host's.
  auto stream_of = [&](const PlanStep& step) -> const ExecutionProvider* {
    return on_host(step.provider) && step.kind == PlanStep::Kind::kNode ? nullptr : step.provider;
  };
  for (PlanStep& step : plan->steps) step.stream = stream_of(step);
  plan->is_output.assign(plan->slot_count, 0);
  for (int32_t out : plan->output_slots) plan->is_output[static_cast<size_t>(out)] = 1;
  for (int32_t out : graph.outputs) plan->is_output[static_cast<size_t>(out)] = 1;
  for (size_t s = 0; s < plan->steps.size(); ++s) {
    PlanStep& step = plan->steps[s];
    for (int32_t in : step.inputs) {
      if (in == graph::kNoValue || static_cast<size_t>(in) >= producer_step.size()) continue;
      const int64_t p = producer_step[static_cast<size_t>(in)];
      if (p < 0) continue;
      PlanStep& producer = plan->steps[static_cast<size_t>(p)];
      if (stream_of(producer) == stream_of(step)) continue;
      // A copy to the host completes before it returns (the executor waits
      // for it), so host readers need no event.
      if (producer.kind == PlanStep::Kind::kCopy && producer.to_host) continue;
      producer.record_event = true;
      plan->has_events = true;
      if (std::find(step.waits.begin(), step.waits.end(), static_cast<size_t>(p)) == step.waits.end()) {
        step.waits.push_back(static_cast<size_t>(p));
      }
    }
  }
  place_concat_inputs(graph, *plan);

  // Lifetimes: a slot is released after the last step that reads it. Values
  // a subgraph reads from this graph count as inputs of the node holding it.
  std::vector<int64_t> last_use(plan->slot_count, -1);
  for (size_t s = 0; s < plan->steps.size(); ++s) {
    const PlanStep& step = plan->steps[s];
    for (int32_t in : step.inputs) {
      if (in != graph::kNoValue) last_use[static_cast<size_t>(in)] = static_cast<int64_t>(s);
    }
    if (step.kind == PlanStep::Kind::kNode) {
      std::vector<std::string> names;
      for (const auto& [attr_name, sub] : step.subgraphs) graph::append_outer_scope_reads(*sub->graph, names);
      for (const std::string& name : names) {
        const int32_t id = graph.find_value(name);
        if (id >= 0) last_use[static_cast<size_t>(id)] = static_cast<int64_t>(s);
      }
    }
    // An output nobody reads dies right after its producer.
    for (int32_t out : step.outputs) {
      if (out != graph::kNoValue && last_use[static_cast<size_t>(out)] < static_cast<int64_t>(s)) {
        last_use[static_cast<size_t>(out)] = static_cast<int64_t>(s);
      }
    }
  }
  std::vector<bool> keep(plan->slot_count, false);
  for (int32_t out : plan->output_slots) keep[static_cast<size_t>(out)] = true;
  for (int32_t out : graph.outputs) keep[static_cast<size_t>(out)] = true;
  for (int32_t in : graph.inputs) keep[static_cast<size_t>(in)] = true;
  for (const auto& [id, tensor] : graph.initializers) keep[static_cast<size_t>(id)] = true;
  for (size_t slot = 0; slot < plan->slot_count; ++slot) {
    if (!keep[slot] && last_use[slot] >= 0) {
      plan->steps[static_cast<size_t>(last_use[slot])].release_after.push_back(static_cast<int32_t>(slot));
    }
  }
  return plan;
}

}  // namespace

Result<std::unique_ptr<GraphPlan>> make_plan(const graph::Graph& graph,
                                             const std::vector<const ExecutionProvider*>& providers,
                                             const DataTransferRegistry* transfers) {
  const DataTransferRegistry host_only;
  return plan_graph(graph, nullptr, providers, transfers ? *transfers : host_only, false, true);
}

Result<std::unique_ptr<GraphPlan>> make_plan_releasing_weights(graph::Graph& graph,
                                                               const std::vector<const ExecutionProvider*>& providers,
                                                               const DataTransferRegistry& transfers,
                                                               bool initializers_in_inputs_are_constant) {
  return plan_graph(graph, &graph, providers, transfers, initializers_in_inputs_are_constant, true);
}

}  // namespace onyx::session
