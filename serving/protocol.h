// The Open Inference Protocol's (KServe v2) inference request and response
// bodies: JSON tensors, and the binary tensor data extension (a JSON header
// of Inference-Header-Content-Length bytes followed by raw tensor bytes).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model_config.h"
#include "onyx/session.h"
#include "scheduler.h"

namespace onyx::serving {

struct RequestedOutput {
  std::string name;
  bool binary = false;
};

struct ParsedRequest {
  std::optional<std::string> id;
  std::unique_ptr<InferRequest> request;
  std::vector<RequestedOutput> outputs;  // in the order of request->output_names
};

// Reads an inference request for `session` served with `config`. `json_length`
// is the Inference-Header-Content-Length header's value (the whole body is
// JSON when absent). Throws ServeError(400) naming what is wrong: malformed
// JSON, an unknown or missing input, a type, shape or element count that
// does not match the model, a batch above max_batch_size.
ParsedRequest parse_infer_request(const std::string& body, std::optional<size_t> json_length,
                                  const InferenceSession& session, const ModelConfig& config);

struct Response {
  std::string body;
  // Set when outputs are binary: the JSON header's length, for the
  // Inference-Header-Content-Length header.
  std::optional<size_t> json_length;
};

Response make_infer_response(const std::string& model_name, int64_t version, const std::optional<std::string>& id,
                             const std::vector<RequestedOutput>& outputs, const std::vector<Value>& values);

// The model metadata response (GET /v2/models/NAME[/versions/V]).
std::string model_metadata_json(const std::string& name, const std::vector<int64_t>& versions,
                                const InferenceSession& session);
// The model's configuration as JSON (GET .../config), the way Triton shows it.
std::string model_config_json(const ModelConfig& config, const InferenceSession& session);
// {"error": message}
std::string error_json(const std::string& message);

}  // namespace onyx::serving
