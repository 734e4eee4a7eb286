// InferenceSession: reads the model, builds and checks the graph, partitions it
// across providers, plans it, and runs it. A session never changes after
// creation; every run keeps its state in its own frames.
#include "onyx/session.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

#include "graph/builder.h"
#include "graph/to_proto.h"
#include "model/reader.h"
#include "model/writer.h"
#include "providers/cpu/layout/layout_passes.h"
#include "providers/execution_provider.h"
#include "providers/testing/test_device.h"
#include "session/executor.h"
#include "session/memory_pattern.h"
#include "session/memory_usage.h"
#include "session/planner.h"
#include "session/prepare.h"
#include "session/session_factory.h"
#include "tensor/arena.h"

namespace onyx {

struct InferenceSession::Impl {
  SessionOptions options;
  model::ModelProto model;
  std::unique_ptr<graph::Graph> graph;
  std::vector<std::unique_ptr<ExecutionProvider>> providers;
  DataTransferRegistry transfers;
  mutable session::MemoryPatterns patterns;
  std::unique_ptr<session::GraphPlan> plan;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<session::Profiler> profiler;  // created before the model is read
  int64_t profiling_start_ns = 0;               // kept after end_profiling, as onnxruntime does
  std::vector<ValueMetadata> inputs;  // graph inputs that are not initializers
  std::vector<ValueMetadata> outputs;
  std::vector<ValueMetadata> overridable;
  ModelMetadata metadata;
  std::map<std::string, int64_t> opsets;

  Status init(const std::vector<std::string>& provider_names);
  void start_profiling();
  Status check_feed(const ValueMetadata& meta, const Value& value) const;
  Status run(const std::vector<std::string>& output_names, const Feeds& feeds, const RunOptions& run_options,
             std::vector<Value>* outputs) const;
  // Runs and leaves output i where `devices[i]` says (nullptr: the host).
  // `destinations[i]`, when given and not null, is a tensor of the caller's
  // that kernels write output i into when they make it with its type and shape.
  Status run_to(const std::vector<std::string>& output_names, const Feeds& feeds, const RunOptions& run_options,
                const std::vector<const Device*>& devices, std::vector<Value>* outputs,
                const std::vector<const Tensor*>& destinations = {}) const;
  const ExecutionProvider* provider_for(const Device& device) const;
};

namespace {

ValueMetadata metadata_of(const graph::ValueEntry& v) {
  ValueMetadata m;
  m.name = v.name;
  m.type = v.info.type;
  m.has_shape = v.info.has_shape;
  for (const graph::Dim& d : v.info.shape) {
    m.dims.push_back(d.value);
    m.dim_params.push_back(d.is_known() ? std::string() : d.symbol);
  }
  return m;
}

std::string shape_description(const ValueMetadata& m) {
  std::string s = "[";
  for (size_t i = 0; i < m.dims.size(); ++i) {
    if (i) s += ",";
    s += m.dims[i] >= 0 ? std::to_string(m.dims[i]) : (m.dim_params[i].empty() ? "?" : m.dim_params[i]);
  }
  return s + "]";
}

// The intra-op pool: intra_op_num_threads threads (0: one per physical core).
// Workers spin briefly between parallel sections of a run; the config entry
// session.intra_op.allow_spinning=0 turns that off and
// onyx.intra_op.spin_microseconds sets how long they spin.
Result<ThreadPoolOptions> thread_pool_options(const SessionOptions& options) {
  ThreadPoolOptions pool;
  pool.threads = options.intra_op_num_threads > 0 ? options.intra_op_num_threads : ThreadPool::default_thread_count();
  auto spin = options.config_entries.find("onyx.intra_op.spin_microseconds");
  if (spin != options.config_entries.end()) {
    try {
      size_t used = 0;
      const int value = std::stoi(spin->second, &used);
      if (used != spin->second.size() || value < 0) throw std::invalid_argument(spin->second);
      pool.spin_microseconds = value;
    } catch (const std::exception&) {
      return invalid_argument(
          "session config entry onyx.intra_op.spin_microseconds must be a non-negative integer, got '", spin->second,
          "'");
    }
  }
  auto allow = options.config_entries.find("session.intra_op.allow_spinning");
  if (allow != options.config_entries.end()) {
    if (allow->second != "0" && allow->second != "1") {
      return invalid_argument("session config entry session.intra_op.allow_spinning must be 0 or 1, got '",
                              allow->second, "'");
    }
    if (allow->second == "0") pool.spin_microseconds = 0;
  }
  return pool;
}

}  // namespace

Status InferenceSession::Impl::init(const std::vector<std::string>& provider_names) {
  // Providers in the order given; CPU is always the last resort. A provider
  // that cannot load is an error, unless the CPU provider is listed after
  // it: scripts often list CUDA first and CPU as the fallback.
  bool has_cpu = false;
  for (size_t i = 0; i < provider_names.size(); ++i) {
    const std::string& name = provider_names[i];
    if (name == kCpuProviderName && has_cpu) continue;
    ProviderOptions provider_options;
    provider_options.session = &options;
    auto given = options.provider_options.find(name);
    if (given != options.provider_options.end()) provider_options.values = given->second;
    Result<std::unique_ptr<ExecutionProvider>> p = create_provider(name, provider_options);
    if (!p.is_ok()) {
      const bool cpu_after = std::find(provider_names.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                                       provider_names.end(), std::string(kCpuProviderName)) != provider_names.end();
      if (!cpu_after) {
        return Status(p.status().code(),
                      str_cat("execution provider '", name, "' cannot be used: ", p.status().message(),
                              " (list CPUExecutionProvider after it to fall back to the CPU)"));
      }
      if (options.log_severity_level <= 2) {
        std::fprintf(stderr, "onyx warning: execution provider '%s' cannot be used (%s); falling back to the CPU\n",
                     name.c_str(), p.status().message().c_str());
      }
      continue;
    }
    has_cpu = has_cpu || name == kCpuProviderName;
    providers.push_back(std::move(p).value());
  }
  if (!has_cpu) {
    ProviderOptions cpu_options;
    cpu_options.session = &options;
    auto given = options.provider_options.find(kCpuProviderName);
    if (given != options.provider_options.end()) cpu_options.values = given->second;
    ONYX_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionProvider> cpu, create_provider(kCpuProviderName, cpu_options));
    providers.push_back(std::move(cpu));
  }
  std::vector<const ExecutionProvider*> provider_list;
  for (const auto& p : providers) {
    provider_list.push_back(p.get());
    transfers.add(p->data_transfer());
  }

  opsets = graph::opset_map(model.opset_import);
  if (options.log_severity_level <= 0) session::log_memory_usage("reading the model");
  const int64_t preparation_start = profiler ? profiler->now_us() : 0;
  ONYX_RETURN_IF_ERROR(cpu::check_nchwc_block(model));
  ONYX_ASSIGN_OR_RETURN(session::PreparedGraph prepared, session::prepare_graph(model, options, provider_list));
  graph = std::move(prepared.graph);
  if (profiler) {
    profiler->record_session_event("graph_preparation", preparation_start, profiler->now_us() - preparation_start);
  }

  ONYX_ASSIGN_OR_RETURN(ThreadPoolOptions pool_options, thread_pool_options(options));
  pool = std::make_unique<ThreadPool>(pool_options);

  // What graph preparation read of the model file (weights it rewrote, for
  // one) need not stay resident; kernels read what they pack again.
  model::release_mapped_pages(model.backing);
  session::return_free_memory_to_system();
  // Written before the kernels are created: creating them frees the data of
  // weights every reader has pre-packed.
  if (!options.optimized_model_filepath.empty()) {
    for (const graph::Node& node : graph->nodes) {
      if (node.fused_graph) {
        return invalid_argument("cannot save the optimized model to '", options.optimized_model_filepath,
                                "': ", node.execution_provider, " compiled part of it into ", node.name,
                                ", which only that provider can run");
      }
    }
    model::ModelProto optimized = graph::graph_to_model(*graph, model);
    cpu::split_onyx_only_nodes(optimized);
    cpu::record_nchwc_block(optimized);
    ONYX_RETURN_IF_ERROR(model::write_model_file(optimized, options.optimized_model_filepath));
  }
  const int64_t planning_start = profiler ? profiler->now_us() : 0;
  ONYX_ASSIGN_OR_RETURN(plan,
                        session::make_plan_releasing_weights(*graph, provider_list, transfers, model.ir_version < 4));
  if (profiler) profiler->record_session_event("planning", planning_start, profiler->now_us() - planning_start);
  // Weights still read from the model file at run time come back page by page
  // as runs read them (a Gather reads a few rows of its table, not all).
  model::release_mapped_pages(model.backing);
  if (options.log_severity_level <= 0) session::log_memory_usage("creating kernels");

  for (int32_t id : graph->inputs) {
    const graph::ValueEntry& v = graph->values[static_cast<size_t>(id)];
    (v.is_initializer ? overridable : inputs).push_back(metadata_of(v));
  }
  for (int32_t id : graph->outputs) outputs.push_back(metadata_of(graph->values[static_cast<size_t>(id)]));

  metadata.producer_name = model.producer_name;
  metadata.graph_name = model.graph->name;
  metadata.domain = model.domain;
  metadata.description = model.doc_string;
  metadata.graph_description = model.graph->doc_string;
  metadata.version = model.model_version;
  for (const auto& kv : model.metadata_props) metadata.custom_metadata_map[kv.key] = kv.value;
  return Status::ok();
}

void InferenceSession::Impl::start_profiling() {
  if (!options.enable_profiling) return;
  profiler = std::make_unique<session::Profiler>();
  profiling_start_ns = profiler->start_time_ns();
}

Status InferenceSession::Impl::check_feed(const ValueMetadata& meta, const Value& value) const {
  const ValueType& want = meta.type;
  if (want.kind == ValueType::Kind::kTensor) {
    if (!value.is_tensor()) {
      return invalid_argument("input '", meta.name, "': expected ", want.to_string(), ", got ",
                              value.type().to_string());
    }
    const Tensor& t = value.tensor();
    if (want.elem_type != DataType::kUndefined && t.dtype() != want.elem_type) {
      return invalid_argument("input '", meta.name, "' has type tensor(", dtype_name(t.dtype()), "), expected ",
                              want.to_string());
    }
    if (meta.has_shape) {
      if (t.rank() != static_cast<int64_t>(meta.dims.size())) {
        return invalid_argument("input '", meta.name, "' has rank ", t.rank(), " (shape ", shape_to_string(t.shape()),
                                "), expected rank ", meta.dims.size(), " (shape ", shape_description(meta), ")");
      }
      for (size_t d = 0; d < meta.dims.size(); ++d) {
        if (meta.dims[d] >= 0 && t.dim(static_cast<int64_t>(d)) != meta.dims[d]) {
          return invalid_argument("input '", meta.name, "' has shape ", shape_to_string(t.shape()), ", expected ",
                                  shape_description(meta), " (dimension ", d, " must be ", meta.dims[d], ")");
        }
      }
    }
  } else if (want.kind == ValueType::Kind::kSequence && !value.is_sequence()) {
    return invalid_argument("input '", meta.name, "': expected ", want.to_string(), ", got ", value.type().to_string());
  } else if (want.kind == ValueType::Kind::kMap && !value.is_map()) {
    return invalid_argument("input '", meta.name, "': expected ", want.to_string(), ", got ", value.type().to_string());
  }
  return Status::ok();
}

Status InferenceSession::Impl::run(const std::vector<std::string>& output_names, const Feeds& feeds,
                                   const RunOptions& run_options, std::vector<Value>* result) const {
  return run_to(output_names, feeds, run_options, {}, result);
}

const ExecutionProvider* InferenceSession::Impl::provider_for(const Device& device) const {
  for (const auto& p : providers) {
    if (p->device().same_device(device) && p->allocator(device.memory) != nullptr) return p.get();
  }
  return nullptr;
}

Status InferenceSession::Impl::run_to(const std::vector<std::string>& output_names, const Feeds& feeds,
                                      const RunOptions& run_options, const std::vector<const Device*>& devices,
                                      std::vector<Value>* result,
                                      const std::vector<const Tensor*>& destinations) const {
  // The whole run, as onnxruntime's "model_run" event: the part of it the
  // nodes' events do not cover is the runtime's own work around the kernels.
  struct RunEvent {
    session::Profiler* profiler;
    int64_t start;
    ~RunEvent() {
      if (profiler) profiler->record_session_event("model_run", start, profiler->now_us() - start);
    }
  } run_event{profiler.get(), profiler ? profiler->now_us() : 0};
  // Bind feeds to graph inputs by name.
  std::vector<const Value*> bound(graph->inputs.size(), nullptr);
  for (const auto& [name, value] : feeds) {
    size_t index = graph->inputs.size();
    for (size_t i = 0; i < graph->inputs.size(); ++i) {
      if (graph->value_name(graph->inputs[i]) == name) index = i;
    }
    if (index == graph->inputs.size()) {
      std::string names;
      for (const auto& m : inputs) names += (names.empty() ? "'" : ", '") + m.name + "'";
      return invalid_argument("unknown input name '", name, "'; the model's inputs are ",
                              names.empty() ? "none" : names);
    }
    if (bound[index] != nullptr) return invalid_argument("input '", name, "' is fed twice");
    const graph::ValueEntry& entry = graph->values[static_cast<size_t>(graph->inputs[index])];
    ONYX_RETURN_IF_ERROR(check_feed(metadata_of(entry), value));
    bound[index] = &value;
  }
  for (size_t i = 0; i < graph->inputs.size(); ++i) {
    const graph::ValueEntry& entry = graph->values[static_cast<size_t>(graph->inputs[i])];
    if (bound[i] == nullptr && !entry.is_initializer) {
      return invalid_argument("missing input '", entry.name, "' (", entry.info.type.to_string(), ")");
    }
  }
  // Which outputs.
  std::vector<size_t> wanted;
  if (output_names.empty()) {
    for (size_t i = 0; i < graph->outputs.size(); ++i) wanted.push_back(i);
  } else {
    for (const std::string& name : output_names) {
      size_t index = graph->outputs.size();
      for (size_t i = 0; i < graph->outputs.size(); ++i) {
        if (graph->value_name(graph->outputs[i]) == name) index = i;
      }
      if (index == graph->outputs.size()) {
        std::string names;
        for (const auto& m : outputs) names += (names.empty() ? "'" : ", '") + m.name + "'";
        return invalid_argument("unknown output name '", name, "'; the model's outputs are ", names);
      }
      wanted.push_back(index);
    }
  }
  // Workers may spin between the parallel sections of this run, never after it.
  ThreadPoolRun running(pool.get());
  session::RunState state;
  state.options = &run_options;
  state.pool = pool.get();
  state.profiler = profiler.get();
  state.transfers = &transfers;
  state.destination_plan = plan.get();
  for (size_t k = 0; k < wanted.size() && k < destinations.size(); ++k) {
    if (destinations[k] != nullptr && destinations[k]->defined()) {
      state.output_destinations.emplace_back(plan->output_slots[wanted[k]], *destinations[k]);
    }
  }
  // Memory pattern: keyed by the feeds' types and shapes.
  std::shared_ptr<Allocator> pattern;
  std::string signature;
  if (options.enable_mem_pattern && options.execution_mode == ExecutionMode::kSequential) {
    for (const Value* v : bound) {
      if (v == nullptr || !v->is_tensor()) {
        signature += v == nullptr ? "-;" : "v;";
        continue;
      }
      signature += std::to_string(static_cast<int>(v->tensor().dtype()));
      signature += shape_to_string(v->tensor().shape());
      signature += ';';
    }
    pattern = patterns.for_run(signature, providers.back()->allocator());
    state.host_allocator = pattern.get();
  }
  std::vector<Value> all;
  Status status = session::run_plan(*plan, nullptr, bound, state, all);
  if (status.is_ok()) status = state.streams.synchronize();
  if (pattern) patterns.finish_run(signature, pattern, status.is_ok());
  // The feeds passed the checks above, so a kernel refusing its inputs is a
  // failure of the run (onnxruntime's FAIL), not a wrong argument of the caller.
  if (status.code() == StatusCode::kInvalidArgument) return runtime_error(status.message());
  ONYX_RETURN_IF_ERROR(status);
  result->clear();
  for (size_t k = 0; k < wanted.size(); ++k) {
    Value value = all[wanted[k]];
    // Outputs come back to the host unless bound elsewhere.
    const Device want = k < devices.size() && devices[k] != nullptr ? *devices[k] : Device{};
    if (value.is_tensor() && value.tensor().defined() && value.tensor().device() != want &&
        !(want.is_cpu() && value.tensor().device().host_readable())) {
      Allocator* target = want.is_cpu() ? cpu_allocator() : nullptr;
      if (target == nullptr) {
        const ExecutionProvider* p = provider_for(want);
        if (p == nullptr) {
          return invalid_argument("output '", graph->value_name(graph->outputs[wanted[k]]), "' is bound to ",
                                  device_to_string(want), ", which no provider of this session has");
        }
        target = p->allocator(want.memory);
      }
      Result<Tensor> moved = transfers.copy_to(value.tensor(), target);
      if (!moved.is_ok()) {
        return Status(moved.status().code(), str_cat("output '", graph->value_name(graph->outputs[wanted[k]]),
                                                     "': ", moved.status().message()));
      }
      value = Value(std::move(moved).value());
    }
    result->push_back(std::move(value));
  }
  return Status::ok();
}

InferenceSession::InferenceSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

InferenceSession::~InferenceSession() {
  if (impl_ && impl_->profiler) impl_->profiler->write(impl_->options.profile_file_prefix);
}

std::unique_ptr<InferenceSession> InferenceSession::from_file(const std::string& path, const SessionOptions& options,
                                                              const std::vector<std::string>& providers) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->start_profiling();
  session::Profiler* profiler = impl->profiler.get();
  // The Python binding raises InvalidProtobuf for errors that start "cannot load model".
  Result<model::ModelProto> model = model::read_model_file(path);
  if (!model.is_ok()) {
    throw Error(Status(model.status().code(), "cannot load model '" + path + "': " + model.status().message()));
  }
  impl->model = std::move(model).value();
  if (profiler) profiler->record_session_event("model_loading_uri", 0, profiler->now_us());
  const int64_t init_start = profiler ? profiler->now_us() : 0;
  throw_if_error(impl->init(providers));
  if (profiler) profiler->record_session_event("session_initialization", init_start, profiler->now_us() - init_start);
  return std::unique_ptr<InferenceSession>(new InferenceSession(std::move(impl)));
}

std::unique_ptr<InferenceSession> InferenceSession::from_bytes(std::string_view bytes, const SessionOptions& options,
                                                               const std::vector<std::string>& providers) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->start_profiling();
  session::Profiler* profiler = impl->profiler.get();
  // The Python binding raises InvalidProtobuf for errors that start "cannot load model".
  Result<model::ModelProto> model = model::read_model_bytes(bytes);
  if (!model.is_ok()) {
    throw Error(Status(model.status().code(), "cannot load model from bytes: " + model.status().message()));
  }
  impl->model = std::move(model).value();
  if (profiler) profiler->record_session_event("model_loading_array", 0, profiler->now_us());
  const int64_t init_start = profiler ? profiler->now_us() : 0;
  throw_if_error(impl->init(providers));
  if (profiler) profiler->record_session_event("session_initialization", init_start, profiler->now_us() - init_start);
  return std::unique_ptr<InferenceSession>(new InferenceSession(std::move(impl)));
}

std::unique_ptr<InferenceSession> session::SessionFactory::from_model(model::ModelProto model,
                                                                      const SessionOptions& options,
                                                                      const std::vector<std::string>& providers) {
  auto impl = std::make_unique<InferenceSession::Impl>();
  impl->options = options;
  impl->start_profiling();
  impl->model = std::move(model);
  throw_if_error(impl->init(providers));
  return std::unique_ptr<InferenceSession>(new InferenceSession(std::move(impl)));
}

std::vector<Value> InferenceSession::run(const std::vector<std::string>& output_names, const Feeds& feeds,
                                         const RunOptions& run_options) const {
  std::vector<Value> outputs;
  throw_if_error(impl_->run(output_names, feeds, run_options, &outputs));
  return outputs;
}

Status InferenceSession::run(const std::vector<std::string>& output_names, const Feeds& feeds,
                             const RunOptions& run_options, std::vector<Value>* outputs) const {
  return impl_->run(output_names, feeds, run_options, outputs);
}

void IoBinding::bind_input(const std::string& name, Value value) {
  for (auto& [n, v] : inputs_) {
    if (n == name) {
      v = std::move(value);
      return;
    }
  }
  inputs_.emplace_back(name, std::move(value));
}

void IoBinding::bind_output(const std::string& name, Device device) {
  for (Output& o : outputs_) {
    if (o.name == name) {
      o = Output{name, device, Tensor()};
      return;
    }
  }
  outputs_.push_back(Output{name, device, Tensor()});
}

void IoBinding::bind_output(const std::string& name, Tensor destination) {
  const Device device = destination.device();
  bind_output(name, device);
  for (Output& o : outputs_) {
    if (o.name == name) o.destination = std::move(destination);
  }
}

std::vector<std::string> IoBinding::output_names() const {
  std::vector<std::string> names;
  for (const Output& o : outputs_) names.push_back(o.name);
  return names;
}

void InferenceSession::run_with_binding(IoBinding& binding, const RunOptions& run_options) const {
  std::vector<const Device*> devices;
  std::vector<const Tensor*> destinations;
  for (const IoBinding::Output& o : binding.outputs_) {
    devices.push_back(&o.device);
    destinations.push_back(&o.destination);
  }
  std::vector<Value> results;
  throw_if_error(impl_->run_to(binding.output_names(), binding.inputs_, run_options, devices, &results, destinations));
  for (size_t k = 0; k < results.size() && k < binding.outputs_.size(); ++k) {
    Tensor& destination = binding.outputs_[k].destination;
    if (!destination.defined()) continue;
    if (!results[k].is_tensor()) {
      throw Error(invalid_argument("output '", binding.outputs_[k].name,
                                   "' is not a tensor; it cannot be written into a bound tensor"));
    }
    const Tensor& made = results[k].tensor();
    if (made.dtype() != destination.dtype() || made.shape() != destination.shape()) {
      throw Error(invalid_argument("output '", binding.outputs_[k].name, "' is ", made.describe(),
                                   ", but the tensor bound for it is ", destination.describe()));
    }
    if (made.raw_data() != destination.raw_data()) throw_if_error(impl_->transfers.copy(made, destination));
    results[k] = Value(destination);
  }
  binding.results_ = std::move(results);
}

Allocator* InferenceSession::allocator(const Device& device) const {
  if (device.is_cpu()) return cpu_allocator();
  const ExecutionProvider* p = impl_->provider_for(device);
  return p ? p->allocator(device.memory) : nullptr;
}

InferenceSession::MemoryProfile InferenceSession::memory_profile() const {
  MemoryProfile profile;
  for (const auto& p : impl_->providers) {
    if (!p->device().is_cpu()) continue;
    if (const auto* arena = dynamic_cast<const ArenaAllocator*>(p->allocator(MemoryType::kDefault))) {
      const ArenaStats stats = arena->stats();
      profile.peak_bytes = static_cast<int64_t>(stats.peak_in_use_bytes);
      profile.in_use_bytes = static_cast<int64_t>(stats.in_use_bytes);
      break;
    }
  }
  return profile;
}

Tensor InferenceSession::copy_to(const Tensor& tensor, const Device& device) const {
  Allocator* target = allocator(device);
  if (target == nullptr) {
    throw Error(invalid_argument("no provider of this session has memory on ", device_to_string(device)));
  }
  Result<Tensor> copy = impl_->transfers.copy_to(tensor, target);
  if (!copy.is_ok()) throw Error(copy.status());
  return std::move(copy).value();
}

std::map<std::string, std::map<std::string, std::string>> InferenceSession::provider_options() const {
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& p : impl_->providers) out[p->name()] = p->options();
  return out;
}

const std::vector<ValueMetadata>& InferenceSession::inputs() const { return impl_->inputs; }
const std::vector<ValueMetadata>& InferenceSession::outputs() const { return impl_->outputs; }
const std::vector<ValueMetadata>& InferenceSession::overridable_initializers() const { return impl_->overridable; }
const ModelMetadata& InferenceSession::metadata() const { return impl_->metadata; }
const std::map<std::string, int64_t>& InferenceSession::opsets() const { return impl_->opsets; }

std::vector<std::string> InferenceSession::providers() const {
  std::vector<std::string> names;
  for (const auto& p : impl_->providers) names.push_back(p->name());
  return names;
}

int64_t InferenceSession::profiling_start_time_ns() const { return impl_->profiling_start_ns; }

std::string InferenceSession::end_profiling() {
  if (!impl_->profiler) return "";
  std::string path = impl_->profiler->write(impl_->options.profile_file_prefix);
  impl_->profiler.reset();
  return path;
}

std::vector<std::string> available_providers() { return registered_providers(); }

void register_testing_providers() { testing::register_test_device_providers(); }

std::map<std::string, int64_t> testing_device_counters() {
  const testing::TestDeviceCounters& c = testing::test_device_counters();
  return {{"host_to_device", c.host_to_device},   {"device_to_host", c.device_to_host},
          {"kernels_run", c.kernels_run},         {"events_recorded", c.events_recorded},
          {"event_waits", c.event_waits},         {"streams_created", c.streams_created},
          {"groups_compiled", c.groups_compiled}, {"fused_runs", c.fused_runs}};
}

void reset_testing_device_counters() { testing::test_device_counters().reset(); }

const char* version() { return ONYX_VERSION; }

}  // namespace onyx
