// Module's state, shared by module.cc (runs, optimizer) and export.cc.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onyx/session.h"
#include "onyx/training.h"
#include "training_api/metadata.h"

namespace onyx::training {

struct Module::Impl {
  // Which of a model's inputs and outputs are which, for one mode.
  struct Io {
    std::vector<std::string> user_inputs;
    std::vector<std::string> param_inputs;
    std::vector<std::string> user_outputs;
    std::vector<std::pair<std::string, std::string>> grads;    // gradient output -> parameter
    std::vector<std::pair<std::string, std::string>> updates;  // output -> state it updates
    std::vector<std::string> run_outputs;                      // user outputs, gradients, updates
  };
  // One mode's model.
  struct Mode {
    std::string path;
    std::unique_ptr<InferenceSession> session;
    training_api::TrainingMetadata meta;
    Io io;
  };

  CheckpointState* state = nullptr;
  SessionOptions options;
  Mode train;
  std::unique_ptr<Mode> eval;  // null without an eval model
  bool training = true;

  const Mode& current() const;
};

}  // namespace onyx::training
