// The "onyx.training" metadata that generate_artifacts writes into each
// model (python/onyx/training/artifacts.py): which inputs and outputs are
// parameters, gradients, state and the user's.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "onyx/status.h"
#include "common/json.h"

namespace onyx::training_api {

inline constexpr char kMetadataKey[] = "onyx.training";

// The training or eval model's.
struct TrainingMetadata {
  std::string loss;
  std::string target;
  std::vector<std::string> user_outputs;
  std::vector<std::string> parameters;                             // trainable, in checkpoint order
  std::vector<std::string> state;                                  // updated by the training model, not trained
  std::vector<std::pair<std::string, std::string>> gradients;      // parameter -> its gradient output
  std::vector<std::pair<std::string, std::string>> state_updates;  // output -> the state it updates
};

// The optimizer model's.
struct OptimizerMetadata {
  std::vector<std::string> parameters;
  std::vector<std::string> states;  // moment keys per parameter
  double default_learning_rate = 1e-3;
};

// `properties` are the model's metadata_props; `kind` ("training", "eval",
// "optimizer") goes into the error when the metadata is absent.
Result<TrainingMetadata> training_metadata(const std::map<std::string, std::string>& properties,
                                           const std::string& path, const std::string& kind);
Result<OptimizerMetadata> optimizer_metadata(const std::map<std::string, std::string>& properties,
                                             const std::string& path);

}  // namespace onyx::training_api
