// Runs a GraphPlan: binds inputs, runs each step's kernel or copy, releases
// buffers after their last use, and records a profile when asked.
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "onyx/options.h"
#include "session/plan.h"

namespace onyx::session {

// Chrome-trace events, shared by every run of a session.
class Profiler {
 public:
  struct Event {
    std::string name;
    std::string op_type;
    std::string provider;
    int64_t start_us;
    int64_t duration_us;
    size_t thread;
    // JSON members naming the input and output types and shapes, as
    // onnxruntime's profiles do ("input_type_shape", "output_type_shape").
    std::string shapes;
  };
  void record(Event event);
  // A session-level event (category "Session": model loading, preparation,
  // planning), as onnxruntime's "model_loading_uri" and "session_initialization".
  void record_session_event(std::string name, int64_t start_us, int64_t duration_us);
  int64_t now_us() const;
  // The wall-clock time the profile starts at (its timestamp 0), in ns since the epoch.
  int64_t start_time_ns() const { return start_time_ns_; }
  // Writes the events as a Chrome-trace JSON array and returns the path.
  std::string write(const std::string& prefix);

 private:
  std::mutex mutex_;
  std::vector<Event> session_events_;
  std::vector<Event> events_;
  std::chrono::steady_clock::time_point origin_ = std::chrono::steady_clock::now();
  int64_t start_time_ns_ =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
};

// Values of one graph during one run. Subgraph frames see their parent.
struct Frame {
  const GraphPlan* plan = nullptr;
  const Frame* parent = nullptr;
  std::vector<Value> slots;
  std::vector<bool> present;       // slot holds a value (omitted optional outputs do not)
  std::vector<Tensor> placements;  // this run's buffers of plan->placements (empty until used)
};

// One run's streams: one per device provider, made when first used; the
// host's work needs none.
class RunStreams {
 public:
  // nullptr for the CPU provider.
  Stream* stream_of(const ExecutionProvider* provider);
  // Blocks until every stream's work has finished.
  Status synchronize();

 private:
  std::vector<std::pair<const ExecutionProvider*, std::unique_ptr<Stream>>> streams_;
};

struct RunState {
  const RunOptions* options = nullptr;
  ThreadPool* pool = nullptr;
  Profiler* profiler = nullptr;  // null when profiling is off
  const DataTransferRegistry* transfers = nullptr;
  RunStreams streams;
  // Where host kernels allocate (a memory-pattern allocator), when not their
  // provider's allocator; main-graph outputs never come from it.
  Allocator* host_allocator = nullptr;
  // Outputs of the plan `destination_plan` (the main graph) that the caller
  // bound to tensors of its own (IoBinding), by slot: a kernel that asks for
  // such an output with the bound type, shape and device is handed the bound
  // tensor and writes it in place (a KV cache bound as both a past input and
  // a present output is appended to where it lies). Otherwise the output is
  // allocated as usual and the caller copies it over.
  const GraphPlan* destination_plan = nullptr;
  std::vector<std::pair<int32_t, Tensor>> output_destinations;
};

// Runs `plan` with `inputs` bound to its graph inputs in order (missing
// trailing inputs fall back to initializers), producing the graph outputs.
Status run_plan(const GraphPlan& plan, const Frame* parent, const std::vector<const Value*>& inputs, RunState& state,
                std::vector<Value>& outputs);

}  // namespace onyx::session
