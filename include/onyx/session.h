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

class InferenceSession {
 public:
  // Loads, checks and prepares the model; throws onyx::Error with a message
  // that names what is wrong (every unsupported op at once).
  // `providers` is an ordered list of provider names ("CPUExecutionProvider"
  // is always appended as the fallback when missing).
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
  // The model's opset imports: domain -> version.
  const std::map<std::string, int64_t>& opsets() const;

  struct Impl;

 private:
  explicit InferenceSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Names of the providers this build can use, most preferred first.
std::vector<std::string> available_providers();
const char* version();

}  // namespace onyx
