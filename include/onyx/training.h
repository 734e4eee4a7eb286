// On-device training in C++, with the classes of onnxruntime's training API
// and of onyx.training.api (Python): the same files, the same behaviour.
//
//   auto state = onyx::training::CheckpointState::load_checkpoint("out/checkpoint");
//   onyx::training::Module module("out/training_model.onnx", state, "out/eval_model.onnx");
//   onyx::training::Optimizer optimizer("out/optimizer_model.onnx", module);
//   auto loss = module({x, target})[0];
//   optimizer.step();
//   module.lazy_reset_grad();
//
// The artifacts come from onyx.training.artifacts.generate_artifacts; a
// checkpoint saved here loads in Python and the other way round
// (docs/training.md describes the files). Every error is an onyx::Error whose
// message names the file and what is wrong with it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "onyx/options.h"
#include "onyx/status.h"
#include "onyx/tensor.h"
#include "onyx/value.h"

namespace onyx::training {

// A value of the checkpoint's property bag ("int", "float" or "str" in the file).
using PropertyValue = std::variant<int64_t, double, std::string>;

struct Parameter {
  std::string name;
  Tensor data;
  bool requires_grad = true;
};

// What the optimizer carries from step to step.
struct OptimizerState {
  int64_t step = 0;  // steps taken
  double learning_rate = 0.0;
  // Per parameter, its moments by key ("exp_avg", "exp_avg_sq" for AdamW),
  // both in the order the file (or the optimizer) lists them.
  std::vector<std::pair<std::string, std::vector<std::pair<std::string, Tensor>>>> moments;

  // nullptr when the parameter has no moment of that key.
  const Tensor* find(const std::string& param, const std::string& key) const;
  // The moment, added (undefined) when absent.
  Tensor& moment(const std::string& param, const std::string& key);
};

// The training state: parameters, their gradients, the optimizer state and a
// property bag.
class CheckpointState {
 public:
  CheckpointState() = default;

  static CheckpointState load_checkpoint(const std::string& path);
  // Writes to a temporary file beside `path`, then renames it over `path`,
  // so a process killed while saving leaves the previous checkpoint whole.
  static void save_checkpoint(const CheckpointState& state, const std::string& path,
                              bool include_optimizer_state = false);

  // Parameters in checkpoint order.
  const std::vector<Parameter>& parameters() const { return params_; }
  bool has_parameter(const std::string& name) const { return index_.count(name) != 0; }
  const Parameter& parameter(const std::string& name) const;  // throws naming a missing one
  void add_parameter(const std::string& name, Tensor data, bool requires_grad = true);
  // Copies `value` (same element type and shape) into a new buffer.
  void set_parameter(const std::string& name, const Tensor& value);
  // The gradient accumulated since Module::lazy_reset_grad(); an undefined
  // Tensor when there is none.
  Tensor gradient(const std::string& name) const;

  bool has_optimizer_state() const { return optimizer_.has_value(); }
  // Throws when no optimizer has run and the checkpoint held no optimizer state.
  OptimizerState& optimizer_state();
  const OptimizerState& optimizer_state() const;
  void set_optimizer_state(std::optional<OptimizerState> state) { optimizer_ = std::move(state); }

  // The property bag, in insertion order.
  const std::vector<std::pair<std::string, PropertyValue>>& properties() const { return properties_; }
  bool has_property(const std::string& name) const;
  const PropertyValue& property(const std::string& name) const;  // throws naming a missing one
  void set_property(const std::string& name, PropertyValue value);
  void erase_property(const std::string& name);

 private:
  friend class Module;
  friend class Optimizer;
  Parameter& mutable_parameter(const std::string& name);

  std::vector<Parameter> params_;
  std::unordered_map<std::string, size_t> index_;  // name -> position in params_
  std::unordered_map<std::string, Tensor> grads_;
  // Set by lazy_reset_grad(): the next training step writes the gradients
  // instead of adding to them.
  bool grad_reset_ = true;
  std::optional<OptimizerState> optimizer_;
  std::vector<std::pair<std::string, PropertyValue>> properties_;
};

// Runs the training model (train mode) or the eval model (eval mode) with the
// parameters of a CheckpointState fed as inputs.
class Module {
 public:
  // `eval_model_path` may be empty (then eval() is an error). The state must
  // outlive the module.
  Module(const std::string& train_model_path, CheckpointState& state, const std::string& eval_model_path = "",
         const SessionOptions& options = {});
  ~Module();
  Module(Module&&) noexcept;
  Module& operator=(Module&&) noexcept;

  // Takes the model's user inputs in order (the forward model's inputs, then
  // the loss target) and returns the loss and the additional outputs. In
  // train mode the gradients add up in the state until lazy_reset_grad().
  std::vector<Value> operator()(const std::vector<Value>& user_inputs);
  // The next training step writes the gradients instead of adding to them.
  void lazy_reset_grad();

  Module& train(bool mode = true);
  Module& eval();  // throws without an eval model
  bool is_training() const;

  // Elements of the trainable parameters (or of every parameter of the state).
  int64_t parameters_size(bool trainable_only = true) const;
  // The user inputs and outputs of the current mode's model.
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;

  // Writes the forward model that computes `output_names`, with the current
  // parameters as initializers (no loss, no gradients, no target):
  // onnxruntime runs it.
  void export_model_for_inferencing(const std::string& path, const std::vector<std::string>& output_names) const;

  CheckpointState& state();

  struct Impl;

 private:
  friend class Optimizer;
  std::unique_ptr<Impl> impl_;
};

// Runs the optimizer model over the module's parameters and gradients.
class Optimizer {
 public:
  Optimizer(const std::string& optimizer_model_path, Module& module);
  ~Optimizer();
  Optimizer(Optimizer&&) noexcept;
  Optimizer& operator=(Optimizer&&) noexcept;

  // One update with the gradients accumulated since lazy_reset_grad().
  void step();
  void set_learning_rate(double learning_rate);
  double learning_rate() const;
  int64_t step_count() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Warms the learning rate up linearly from 0 to initial_lr over
// warmup_step_count steps, then decays it linearly to 0 at total_step_count.
// It counts from the optimizer's step count, so a run resumed from a
// checkpoint continues the schedule where it stopped.
class LinearLRScheduler {
 public:
  LinearLRScheduler(Optimizer& optimizer, int64_t warmup_step_count, int64_t total_step_count, double initial_lr);
  void step();

 private:
  double rate(int64_t count) const;
  Optimizer* optimizer_;
  int64_t warmup_;
  int64_t total_;
  double initial_;
  int64_t count_;
};

}  // namespace onyx::training
