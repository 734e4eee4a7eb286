// The sequential executor.
#include "session/executor.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <thread>

namespace onyx::session {
namespace {

class NodeContext final : public KernelContext {
 public:
  NodeContext(const PlanStep& step, Frame& frame, RunState& state) : step_(step), frame_(frame), state_(state) {}

  size_t input_count() const override { return step_.inputs.size(); }
  const Value* input(size_t i) const override {
    if (i >= step_.inputs.size() || step_.inputs[i] == graph::kNoValue) return nullptr;
    const auto slot = static_cast<size_t>(step_.inputs[i]);
    return frame_.present[slot] ? &frame_.slots[slot] : nullptr;
  }
  size_t output_count() const override { return step_.outputs.size(); }
  bool output_requested(size_t i) const override {
    return i < step_.outputs.size() && step_.outputs[i] != graph::kNoValue;
  }
  Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) override {
    Value& v = output_slot(i);
    if (Tensor* placed = placed_output(i, dtype, shape)) {
      v = Value(std::move(*placed));
      return v.tensor();
    }
    if (const Tensor* bound = bound_destination(i, dtype, shape)) {
      v = Value(*bound);
      return v.tensor();
    }
    // A graph output's buffer goes to the caller: never from a run's pattern block.
    Allocator* from = allocator();
    if (step_.outputs[i] != graph::kNoValue && frame_.plan->is_output[static_cast<size_t>(step_.outputs[i])]) {
      from = step_.provider->allocator();
    }
    Result<Tensor> t = Tensor::create(dtype, shape, from);
    if (!t.is_ok()) throw Error(t.status());
    v = Value(std::move(t).value());
    return v.tensor();
  }
  void set_output(size_t i, Value value) override { output_slot(i) = std::move(value); }
  Tensor* reuse_input_as_output(size_t input, size_t output, DataType dtype, const Shape& shape) override {
    if (input >= step_.inputs.size() || output >= step_.outputs.size() || step_.outputs[output] == graph::kNoValue) {
      return nullptr;
    }
    for (const PlacedOutput& p : step_.placed_outputs) {
      if (p.output == output) return nullptr;  // it goes into a Concat's output instead
    }
    if (step_.concat_placement >= 0) return nullptr;
    // An output bound to the caller's tensor is written there instead.
    if (find_destination(output) != nullptr) return nullptr;
    // A graph output goes to the caller: it must not hold a run's pattern block.
    if (state_.host_allocator != nullptr && frame_.plan->is_output[static_cast<size_t>(step_.outputs[output])]) {
      return nullptr;
    }
    const int32_t slot = step_.inputs[input];
    if (slot == graph::kNoValue || !frame_.present[static_cast<size_t>(slot)]) return nullptr;
    // Read by this node once, and by no later step (release_after holds no
    // graph input, output or initializer).
    if (std::count(step_.inputs.begin(), step_.inputs.end(), slot) != 1 ||
        std::find(step_.release_after.begin(), step_.release_after.end(), slot) == step_.release_after.end()) {
      return nullptr;
    }
    const Value& v = frame_.slots[static_cast<size_t>(slot)];
    if (!v.is_tensor()) return nullptr;
    const Tensor& t = v.tensor();
    if (dtype == DataType::kString || t.dtype() != dtype || !t.owns_buffer_alone() ||
        t.device() != allocator()->device() ||
        static_cast<size_t>(shape_size(shape)) * dtype_size(dtype) != t.bytes()) {
      return nullptr;
    }
    Value& out = output_slot(output);
    out = Value(t.reshaped(shape));
    return &out.tensor();
  }
  ThreadPool* thread_pool() const override { return state_.pool; }
  Allocator* allocator() const override {
    return step_.stream == nullptr && state_.host_allocator != nullptr ? state_.host_allocator
                                                                       : step_.provider->allocator();
  }
  Stream* stream() const override { return step_.stream ? state_.streams.stream_of(step_.stream) : nullptr; }
  Status run_subgraph(const std::string& attr_name, const std::vector<Value>& inputs,
                      std::vector<Value>& outputs) override {
    auto it = step_.subgraphs.find(attr_name);
    if (it == step_.subgraphs.end()) return invalid_model(step_.label, ": has no subgraph attribute '", attr_name, "'");
    std::vector<const Value*> bound;
    bound.reserve(inputs.size());
    for (const Value& v : inputs) bound.push_back(&v);
    return run_plan(*it->second, &frame_, bound, state_, outputs);
  }
  std::string label() const override { return step_.label; }

 private:
  // Output i as a view into (or, for the Concat, the whole of) a placement
  // buffer when the plan put it there and the kernel asks for the planned
  // type and shape; nullptr otherwise (the output gets its own buffer, and the
  // Concat copies it as usual).
  Tensor* placed_output(size_t i, DataType dtype, const Shape& shape) {
    if (step_.concat_placement >= 0 && i == 0) {
      Tensor& buffer = frame_.placements[static_cast<size_t>(step_.concat_placement)];
      if (!buffer.defined() || buffer.dtype() != dtype || buffer.shape() != shape) return nullptr;
      scratch_tensor_ = std::move(buffer);
      buffer = Tensor();
      return &scratch_tensor_;
    }
    for (const PlacedOutput& p : step_.placed_outputs) {
      if (p.output != i || p.dtype != dtype || p.shape != shape) continue;
      const Placement& placement = frame_.plan->placements[p.placement];
      Tensor& buffer = frame_.placements[p.placement];
      if (!buffer.defined()) {
        Result<Tensor> t = Tensor::create(placement.dtype, placement.shape,
                                          placement.is_output ? step_.provider->allocator() : allocator());
        if (!t.is_ok()) throw Error(t.status());
        buffer = std::move(t).value();
      }
      scratch_tensor_ = Tensor::borrow(dtype, shape, static_cast<char*>(buffer.raw_data()) + p.byte_offset,
                                       buffer.device(), std::make_shared<Tensor>(buffer));
      return &scratch_tensor_;
    }
    return nullptr;
  }

  // The caller's tensor bound to output i of the main graph, or nullptr.
  const Tensor* find_destination(size_t i) const {
    if (state_.destination_plan != frame_.plan || i >= step_.outputs.size() || step_.outputs[i] == graph::kNoValue) {
      return nullptr;
    }
    for (const auto& [slot, tensor] : state_.output_destinations) {
      if (slot == step_.outputs[i]) return &tensor;
    }
    return nullptr;
  }

  // The bound tensor of output i when the kernel asks for exactly its type and
  // shape in the memory the kernel's provider writes; nullptr otherwise.
  const Tensor* bound_destination(size_t i, DataType dtype, const Shape& shape) const {
    const Tensor* bound = find_destination(i);
    if (bound == nullptr || dtype == DataType::kString || bound->dtype() != dtype || bound->shape() != shape ||
        bound->device() != step_.provider->allocator()->device()) {
      return nullptr;
    }
    return bound;
  }

  Value& output_slot(size_t i) {
    if (i >= step_.outputs.size()) {
      throw Error(
          runtime_error("output index ", i, " is out of range (the node has ", step_.outputs.size(), " outputs)"));
    }
    const int32_t slot = step_.outputs[i];
    if (slot == graph::kNoValue) {
      // The model omitted this optional output: write to a scratch value.
      scratch_.emplace_back();
      return scratch_.back();
    }
    frame_.present[static_cast<size_t>(slot)] = true;
    return frame_.slots[static_cast<size_t>(slot)];
  }

  const PlanStep& step_;
  Frame& frame_;
  RunState& state_;
  std::vector<Value> scratch_;
  Tensor scratch_tensor_;
};

// Prefixes the node's label unless the kernel already named it.
Status with_label(const Status& s, const std::string& label) {
  if (s.is_ok() || s.message().rfind(label, 0) == 0) return s;
  return Status(s.code(), label + ": " + s.message());
}

Status run_copy(const PlanStep& step, Frame& frame, RunState& state) {
  const auto src_slot = static_cast<size_t>(step.inputs[0]);
  const auto dst_slot = static_cast<size_t>(step.outputs[0]);
  if (!frame.present[src_slot]) return Status::ok();
  const Value& src = frame.slots[src_slot];
  if (!src.is_tensor()) {  // sequences and maps live on the host
    frame.slots[dst_slot] = src;
    frame.present[dst_slot] = true;
    return Status::ok();
  }
  const Tensor& t = src.tensor();
  Allocator* target = step.to_host ? cpu_allocator() : step.provider->allocator();
  if (t.device() == target->device()) {
    frame.slots[dst_slot] = src;
    frame.present[dst_slot] = true;
    return Status::ok();
  }
  Stream* stream = state.streams.stream_of(step.provider);
  const DataTransferRegistry host_only;
  const DataTransferRegistry& transfers = state.transfers ? *state.transfers : host_only;
  ONYX_ASSIGN_OR_RETURN(Tensor dst, transfers.copy_to(t, target, stream));
  // The host reads a copy to the host as soon as this step ends.
  if (step.to_host && stream != nullptr) ONYX_RETURN_IF_ERROR(stream->synchronize());
  frame.slots[dst_slot] = Value(std::move(dst));
  frame.present[dst_slot] = true;
  return Status::ok();
}

// `,"input_type_shape":[{"float":[1,3,224,224]},...],"output_type_shape":[...]`
// for the step's present tensor values; other values (sequences, maps, omitted
// optional inputs) appear as empty objects so positions still line up.
std::string describe_shapes(const PlanStep& step, const Frame& frame) {
  std::string out;
  auto list = [&](const char* key, const std::vector<int32_t>& slots) {
    out += ",\"";
    out += key;
    out += "\":[";
    for (size_t i = 0; i < slots.size(); ++i) {
      if (i > 0) out += ',';
      const int32_t slot = slots[i];
      if (slot < 0 || !frame.present[static_cast<size_t>(slot)] ||
          !frame.slots[static_cast<size_t>(slot)].is_tensor()) {
        out += "{}";
        continue;
      }
      const Tensor& t = frame.slots[static_cast<size_t>(slot)].tensor();
      out += "{\"";
      out += dtype_name(t.dtype());
      out += "\":[";
      for (size_t d = 0; d < t.shape().size(); ++d) {
        if (d > 0) out += ',';
        out += std::to_string(t.shape()[d]);
      }
      out += "]}";
    }
    out += ']';
  };
  list("input_type_shape", step.inputs);
  list("output_type_shape", step.outputs);
  return out;
}

}  // namespace

int64_t Profiler::now_us() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - origin_).count();
}

void Profiler::record(Event event) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
}

void Profiler::record_session_event(std::string name, int64_t start_us, int64_t duration_us) {
  const size_t thread = std::hash<std::thread::id>()(std::this_thread::get_id()) % 100000;
  std::lock_guard<std::mutex> lock(mutex_);
  session_events_.push_back({std::move(name), "", "", start_us, duration_us, thread, ""});
}

std::string Profiler::write(const std::string& prefix) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto stamp = std::chrono::system_clock::now().time_since_epoch().count();
  const std::string path = prefix + "_" + std::to_string(stamp) + ".json";
  std::ofstream out(path);
  out << "[\n";
  auto escape = [](const std::string& s) {
    std::string r;
    for (char c : s) {
      if (c == '"' || c == '\\') r += '\\';
      if (static_cast<unsigned char>(c) < 0x20) continue;
      r += c;
    }
    return r;
  };
  for (size_t i = 0; i < session_events_.size(); ++i) {
    const Event& e = session_events_[i];
    out << "{\"cat\":\"Session\",\"pid\":1,\"tid\":" << e.thread << ",\"dur\":" << e.duration_us
        << ",\"ts\":" << e.start_us << ",\"ph\":\"X\",\"name\":\"" << escape(e.name) << "\",\"args\":{}}"
        << (i + 1 < session_events_.size() || !events_.empty() ? ",\n" : "\n");
  }
  for (size_t i = 0; i < events_.size(); ++i) {
    const Event& e = events_[i];
    out << "{\"cat\":\"Node\",\"pid\":1,\"tid\":" << e.thread << ",\"dur\":" << e.duration_us
        << ",\"ts\":" << e.start_us << ",\"ph\":\"X\",\"name\":\"" << escape(e.name) << "\",\"args\":{\"op_name\":\""
        << escape(e.op_type) << "\",\"provider\":\"" << escape(e.provider) << "\"" << e.shapes << "}}"
        << (i + 1 < events_.size() ? ",\n" : "\n");
  }
  out << "]\n";
  session_events_.clear();
  events_.clear();
  return path;
}

Stream* RunStreams::stream_of(const ExecutionProvider* provider) {
  if (provider == nullptr || provider->device().is_cpu()) return nullptr;
  for (auto& [p, stream] : streams_) {
    if (p == provider) return stream.get();
  }
  streams_.emplace_back(provider, provider->create_stream());
  return streams_.back().second.get();
}

Status RunStreams::synchronize() {
  for (auto& [p, stream] : streams_) {
    if (stream) ONYX_RETURN_IF_ERROR(stream->synchronize());
  }
  return Status::ok();
}

Status run_plan(const GraphPlan& plan, const Frame* parent, const std::vector<const Value*>& inputs, RunState& state,
                std::vector<Value>& outputs) {
  const graph::Graph& graph = *plan.graph;
  Frame frame;
  frame.plan = &plan;
  frame.parent = parent;
  frame.slots.resize(plan.slot_count);
  frame.present.assign(plan.slot_count, false);
  frame.placements.resize(plan.placements.size());

  for (const auto& [id, tensor] : graph.initializers) {
    frame.slots[static_cast<size_t>(id)] = Value(tensor);
    frame.present[static_cast<size_t>(id)] = true;
  }
  if (inputs.size() > graph.inputs.size()) {
    return invalid_argument("graph '", graph.name, "' takes ", graph.inputs.size(), " inputs, got ", inputs.size());
  }
  for (const auto& [slot, tensor] : plan.device_constants) {
    frame.slots[static_cast<size_t>(slot)] = Value(tensor);
    frame.present[static_cast<size_t>(slot)] = true;
  }
  const DataTransferRegistry host_only;
  const DataTransferRegistry& transfers = state.transfers ? *state.transfers : host_only;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto slot = static_cast<size_t>(graph.inputs[i]);
    if (inputs[i] == nullptr) continue;  // keep the initializer default, if any
    // A feed lives where the plan reads it: on the host, or on the device of
    // its only readers. A feed elsewhere (bound on a device, or on the host
    // for device readers) is copied there first.
    const ExecutionProvider* home = i < plan.input_providers.size() ? plan.input_providers[i] : nullptr;
    const Value& feed = *inputs[i];
    if (feed.is_tensor() && feed.tensor().defined()) {
      const Device& at = feed.tensor().device();
      const bool misplaced = home != nullptr ? at != home->device() : !at.host_readable();
      if (misplaced) {
        Allocator* target = home != nullptr ? home->allocator() : cpu_allocator();
        Stream* stream = state.streams.stream_of(home);
        Result<Tensor> copy = transfers.copy_to(feed.tensor(), target, stream);
        if (!copy.is_ok()) {
          return Status(copy.status().code(),
                        str_cat("input '", graph.value_name(graph.inputs[i]), "': ", copy.status().message()));
        }
        frame.slots[slot] = Value(std::move(copy).value());
        frame.present[slot] = true;
        continue;
      }
    }
    frame.slots[slot] = feed;
    frame.present[slot] = true;
  }
  std::vector<std::shared_ptr<Event>> events(plan.has_events ? plan.steps.size() : 0);
  // Outer-scope values: copied (shared, not deep) from the nearest enclosing frame that has them.
  for (int32_t id : graph.outer_scope_values) {
    const std::string& name = graph.value_name(id);
    for (const Frame* f = parent; f != nullptr; f = f->parent) {
      const int32_t pid = f->plan->graph->find_value(name);
      if (pid >= 0 && f->present[static_cast<size_t>(pid)]) {
        frame.slots[static_cast<size_t>(id)] = f->slots[static_cast<size_t>(pid)];
        frame.present[static_cast<size_t>(id)] = true;
        break;
      }
    }
    if (!frame.present[static_cast<size_t>(id)]) {
      return invalid_model("graph '", graph.name, "' reads '", name,
                           "' from an enclosing graph, which has no value for it");
    }
  }

  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const PlanStep& step = plan.steps[s];
    if (state.options && state.options->terminate)
      return runtime_error("the run was terminated (RunOptions.terminate)");
    const int64_t start = state.profiler ? state.profiler->now_us() : 0;
    Status status;
    Stream* stream = step.stream != nullptr ? state.streams.stream_of(step.stream) : nullptr;
    for (size_t producer : step.waits) {
      const std::shared_ptr<Event>& event = events[producer];
      if (!event) continue;
      // A host step blocks until the event; a device step's stream waits.
      status =
          stream != nullptr && step.kind == PlanStep::Kind::kNode ? stream->wait_for(*event) : event->wait_on_host();
      if (!status.is_ok()) return with_label(status, step.label);
    }
    if (step.kind == PlanStep::Kind::kCopy) {
      status = run_copy(step, frame, state);
    } else {
      NodeContext ctx(step, frame, state);
      try {
        status = step.kernel->compute(ctx);
      } catch (const Error& e) {
        status = Status(e.code(), e.what());
      } catch (const std::bad_alloc&) {
        status = runtime_error("out of memory");
      } catch (const std::exception& e) {
        status = runtime_error(e.what());
      }
    }
    if (status.is_ok() && step.record_event && stream != nullptr) events[s] = stream->record_event();
    if (!status.is_ok()) return with_label(status, step.label);
    if (state.profiler) {
      const graph::Node& node = graph.nodes[step.node_index];
      state.profiler->record(
          {step.kind == PlanStep::Kind::kCopy ? step.label : step.label,
           step.kind == PlanStep::Kind::kCopy ? "Copy" : node.op_type,
           step.provider ? step.provider->name() : "CPUExecutionProvider", start, state.profiler->now_us() - start,
           std::hash<std::thread::id>()(std::this_thread::get_id()) % 100000, describe_shapes(step, frame)});
    }
    for (int32_t slot : step.release_after) {
      frame.slots[static_cast<size_t>(slot)] = Value();
      frame.present[static_cast<size_t>(slot)] = false;
    }
  }

  outputs.clear();
  outputs.reserve(plan.output_slots.size());
  for (size_t i = 0; i < plan.output_slots.size(); ++i) {
    const auto slot = static_cast<size_t>(plan.output_slots[i]);
    if (!frame.present[slot]) {
      return runtime_error("graph output '", graph.value_name(graph.outputs[i]), "' was not produced");
    }
    outputs.push_back(frame.slots[slot]);
  }
  return Status::ok();
}

}  // namespace onyx::session
