// A served model's configuration: Triton's config.pbtxt (protobuf text
// format), the part of it that applies to onyx, with defaults filled in from
// the model itself when the file is absent or silent (Triton calls this
// auto-complete).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "onyx/session.h"

namespace onyx::serving {

// A request or configuration the server refuses, with the HTTP status that
// says whose fault it is (400 the client's, 404 unknown, 503 overloaded).
class ServeError : public std::runtime_error {
 public:
  ServeError(int http_status, const std::string& message) : std::runtime_error(message), http_status_(http_status) {}
  int http_status() const { return http_status_; }

 private:
  int http_status_;
};

struct TensorConfig {
  std::string name;
  std::string datatype;       // the protocol's name ("FP32"); empty when not given
  std::vector<int64_t> dims;  // without the batch dimension when max_batch_size > 0
  bool has_dims = false;
};

struct ModelConfig {
  std::string name;
  std::string platform = "onnxruntime_onnx";
  std::string backend = "onyx";
  std::string default_model_filename = "model.onnx";
  // Largest batch a request or a dynamic batch may have; 0: the model is not
  // batched by the server (requests pass through whole). -1 until decided.
  int64_t max_batch_size = -1;
  bool dynamic_batching = false;
  bool dynamic_batching_given = false;
  int64_t max_queue_delay_us = 0;
  std::vector<int64_t> preferred_batch_sizes;
  int64_t max_queue_size = 0;    // 0: the server's default
  int64_t instance_count = 1;    // threads running the one session concurrently
  int64_t intra_op_threads = 0;  // 0: the server's default
  std::vector<std::string> providers;
  enum class VersionPolicy { kLatest, kAll, kSpecific };
  VersionPolicy version_policy = VersionPolicy::kLatest;
  int64_t latest_versions = 1;
  std::vector<int64_t> specific_versions;
  std::vector<TensorConfig> inputs;
  std::vector<TensorConfig> outputs;
};

// Parses config.pbtxt text; `source` names the file in errors. Fields that
// would change what a model computes or how requests are scheduled and that
// onyx does not implement (sequence_batching, ensemble_scheduling, ...) are
// refused by name rather than ignored.
ModelConfig parse_model_config(std::string_view text, const std::string& source);

// Fills what the configuration left open from the loaded model: a model whose
// inputs and outputs all start with the same free dimension is batched along
// it (max_batch_size `default_max_batch_size`, dynamic batching on); checks
// that the inputs and outputs it names exist with the types it says, and
// that every input is servable (outputs that are not, such as a ZipMap's
// sequence of maps, are left out of the model's metadata and responses).
void complete_model_config(ModelConfig& config, const InferenceSession& session, int64_t default_max_batch_size);

// A value the protocol can carry: a tensor of a type it names.
bool servable(const ValueMetadata& value);

// The protocol's datatype names ("FP32", "INT64", "BYTES", ...) for onyx's
// element types; empty for a type the protocol has no name for.
std::string protocol_datatype(DataType dtype);
// The inverse; DataType::kUndefined for an unknown name. Accepts Triton's
// config spelling too ("TYPE_FP32", "TYPE_STRING").
DataType datatype_from_protocol(std::string_view name);

}  // namespace onyx::serving
