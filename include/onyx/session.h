// InferenceSession: loads a model once, then runs it any number of times from
// any number of threads. The public C++ API of onyx.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onyx/options.h"
#include "onyx/status.h"
#include "onyx/value.h"

namespace onyx {

// Name, type and shape of a model input or output. A dimension is a number,
// a symbol (dim_params[i] non-empty) or unknown (-1 with an empty symbol).
struct ValueMetadata {
  std::string name;
  ValueType type;
  bool has_shape = false;
  std::vector<int64_t> dims;
  std::vector<std::string> dim_params;
};

struct ModelMetadata {
  std::string producer_name;
  std::string graph_name;
  std::string domain;
  std::string description;
  std::string graph_description;
  int64_t version = 0;
  std::map<std::string, std::string> custom_metadata_map;
};

using Feeds = std::vector<std::pair<std::string, Value>>;

// Inputs and outputs bound to memory before a run (onnxruntime's I/O
// binding): inputs may live on a provider's device, and outputs stay in the
// memory they are bound to (a device, or a caller's tensor) instead of
// coming back to the host.
class IoBinding {
 public:
  void bind_input(const std::string& name, Value value);
  // The output is left in `device`'s memory (copied there if made elsewhere).
  void bind_output(const std::string& name, Device device = {});
  // The output is written into `destination` (same type and shape), which
  // the caller owns.
  void bind_output(const std::string& name, Tensor destination);
  void clear_inputs() { inputs_.clear(); }
  void clear_outputs() {
    outputs_.clear();
    results_.clear();
  }
  const Feeds& inputs() const { return inputs_; }
  std::vector<std::string> output_names() const;
  // The outputs of the last run, in the order they were bound.
  const std::vector<Value>& outputs() const { return results_; }

 private:
  friend class InferenceSession;
  struct Output {
    std::string name;
    Device device;
    Tensor destination;  // defined when bound to a caller's tensor
  };
  Feeds inputs_;
  std::vector<Output> outputs_;
  std::vector<Value> results_;
};

namespace session {
struct SessionFactory;  // src/session/session_factory.h: sessions of models already in memory
}  // namespace session

class InferenceSession {
 public:
  // Loads, checks and prepares the model; throws onyx::Error with a message
  // that names what is wrong (every unsupported op at once).
  // `providers` is an ordered list of provider names ("CPUExecutionProvider"
  // is always appended as the fallback when missing), with their options in
  // SessionOptions::provider_options. A provider that cannot load is an
  // error, unless the CPU provider is listed after it: then a warning, and
  // the session runs without it.
  static std::unique_ptr<InferenceSession> from_file(const std::string& path, const SessionOptions& options = {},
                                                     const std::vector<std::string>& providers = {});
  static std::unique_ptr<InferenceSession> from_bytes(std::string_view bytes, const SessionOptions& options = {},
                                                      const std::vector<std::string>& providers = {});
  ~InferenceSession();

  // Runs the model. `output_names` empty means every graph output, in order.
  // Thread-safe: a session never changes after creation.
  std::vector<Value> run(const std::vector<std::string>& output_names, const Feeds& feeds,
                         const RunOptions& run_options = {}) const;
  // Same, with errors as a Status instead of an exception.
  Status run(const std::vector<std::string>& output_names, const Feeds& feeds, const RunOptions& run_options,
             std::vector<Value>* outputs) const;
  // Runs with the inputs and outputs of `binding`; its outputs() hold the
  // results where they were bound.
  void run_with_binding(IoBinding& binding, const RunOptions& run_options = {}) const;

  // Memory of `device` from the session's provider for it (nullptr when the
  // session has none): for tensors fed to, or bound on, that device.
  Allocator* allocator(const Device& device) const;
  // A copy of `tensor` in `device`'s memory, through the session's providers.
  Tensor copy_to(const Tensor& tensor, const Device& device) const;
  // The options each provider runs with, by provider name.
  std::map<std::string, std::map<std::string, std::string>> provider_options() const;

  const std::vector<ValueMetadata>& inputs() const;
  const std::vector<ValueMetadata>& outputs() const;
  // Initializers that are also graph inputs (overridable constants).
  const std::vector<ValueMetadata>& overridable_initializers() const;
  const ModelMetadata& metadata() const;
  std::vector<std::string> providers() const;
  // Stops profiling and returns the path of the Chrome-trace JSON written.
  std::string end_profiling();
  // When profiling started (with the session), in ns since the epoch; 0 when
  // profiling is off. Profile timestamps are microseconds after it.
  int64_t profiling_start_time_ns() const;
  // Host memory the session's runs have held: the peak and current bytes in
  // use of its CPU memory arena (intermediate values, and outputs until the
  // caller drops them; weights are not counted). -1 each when the session
  // has no arena (SessionOptions::enable_cpu_mem_arena off).
  struct MemoryProfile {
    int64_t peak_bytes = -1;
    int64_t in_use_bytes = -1;
  };
  MemoryProfile memory_profile() const;
  // The model's opset imports: domain -> version.
  const std::map<std::string, int64_t>& opsets() const;

  struct Impl;

 private:
  friend struct session::SessionFactory;
  explicit InferenceSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Loads a custom-operator library (a shared library exporting
// RegisterCustomOps, as include/onyx/onyx_c_api.h describes) and adds its
// operators to `options` (onnxruntime's register_custom_ops_library). The
// library stays loaded for the rest of the process. Throws onyx::Error when
// it cannot be loaded or its registration fails.
void register_custom_ops_library(SessionOptions& options, const std::string& path);

// Names of the providers this build can use, most preferred first.
std::vector<std::string> available_providers();
// Registers the simulated test device's providers (TestDeviceExecutionProvider,
// TestCompilerExecutionProvider), which check copies between memories; for
// tests (`onyx conformance --providers`, pytest --providers).
void register_testing_providers();
// What the simulated test device has done since the last reset, by counter
// name (host_to_device, device_to_host, kernels_run, ...): tests check that
// data stayed on the device.
std::map<std::string, int64_t> testing_device_counters();
void reset_testing_device_counters();
const char* version();

}  // namespace onyx
