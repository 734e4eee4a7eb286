// Module, Optimizer and LinearLRScheduler: python/onyx/training/api.py's
// classes, step for step, so that both give the same numbers.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "training_api/module_impl.h"

namespace onyx::training {

namespace {

std::string model_path(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(invalid_argument(what, ": no model file at '", path, "'"));
  }
  return path;
}

std::unique_ptr<InferenceSession> open_session(const std::string& path, const SessionOptions& options) {
  try {
    return InferenceSession::from_file(path, options, {"CPUExecutionProvider"});
  } catch (const Error& error) {
    throw Error(Status(error.code(), str_cat("cannot load '", path, "': ", error.what())));
  }
}

template <typename T>
T value_or_throw(Result<T> result) {
  throw_if_error(result.status());
  return std::move(result).value();
}

Module::Impl::Io io_of(const InferenceSession& session, const training_api::TrainingMetadata& meta) {
  Module::Impl::Io io;
  std::set<std::string> params(meta.parameters.begin(), meta.parameters.end());
  params.insert(meta.state.begin(), meta.state.end());
  for (const ValueMetadata& input : session.inputs()) {
    (params.count(input.name) ? io.param_inputs : io.user_inputs).push_back(input.name);
  }
  std::set<std::string> outputs;
  for (const ValueMetadata& output : session.outputs()) outputs.insert(output.name);
  std::map<std::string, std::string> gradients(meta.gradients.begin(), meta.gradients.end());
  for (const std::string& p : meta.parameters) {
    auto it = gradients.find(p);
    if (it != gradients.end() && outputs.count(it->second)) io.grads.emplace_back(it->second, p);
  }
  for (const auto& [out, stat] : meta.state_updates) {
    if (outputs.count(out)) io.updates.emplace_back(out, stat);
  }
  io.user_outputs = meta.user_outputs;
  io.run_outputs = io.user_outputs;
  for (const auto& grad : io.grads) io.run_outputs.push_back(grad.first);
  for (const auto& update : io.updates) io.run_outputs.push_back(update.first);
  return io;
}

Module::Impl::Mode open_mode(const std::string& path, const std::string& what, const std::string& kind,
                             const SessionOptions& options) {
  Module::Impl::Mode mode;
  mode.path = model_path(path, what);
  mode.session = open_session(mode.path, options);
  mode.meta =
      value_or_throw(training_api::training_metadata(mode.session->metadata().custom_metadata_map, mode.path, kind));
  mode.io = io_of(*mode.session, mode.meta);
  return mode;
}

template <typename T>
void add_elements(Tensor& sum, const Tensor& addend) {
  T* out = sum.data<T>();
  const T* in = addend.data<T>();
  for (int64_t i = 0; i < sum.size(); ++i)
    out[i] = static_cast<T>(static_cast<float>(out[i]) + static_cast<float>(in[i]));
}

// sum += addend, element type by element type as numpy adds them.
void accumulate(Tensor& sum, const Tensor& addend, const std::string& param) {
  if (sum.dtype() != addend.dtype() || sum.shape() != addend.shape()) {
    throw Error(runtime_error("the gradient of '", param, "' was ", sum.describe(), " and is now ", addend.describe()));
  }
  switch (sum.dtype()) {
    case DataType::kFloat: {
      float* out = sum.data<float>();
      const float* in = addend.data<float>();
      for (int64_t i = 0; i < sum.size(); ++i) out[i] += in[i];
      break;
    }
    case DataType::kDouble: {
      double* out = sum.data<double>();
      const double* in = addend.data<double>();
      for (int64_t i = 0; i < sum.size(); ++i) out[i] += in[i];
      break;
    }
    case DataType::kFloat16:
      add_elements<Float16>(sum, addend);
      break;
    case DataType::kBFloat16:
      add_elements<BFloat16>(sum, addend);
      break;
    default:
      throw Error(not_implemented("cannot accumulate the ", dtype_name(sum.dtype()), " gradient of '", param, "'"));
  }
}

// A run's output to keep: its own buffer when nothing else shares it (no
// copy), else a copy, since the accumulator is written in place.
Tensor own(Value&& value) {
  Tensor tensor = std::move(value.tensor());
  return tensor.owns_buffer_alone() ? tensor : tensor.clone();
}

Tensor zeros_like(const Tensor& tensor) {
  Tensor zeros(tensor.dtype(), tensor.shape());
  std::fill_n(static_cast<char*>(zeros.raw_data()), zeros.bytes(), 0);
  return zeros;
}

}  // namespace

const Module::Impl::Mode& Module::Impl::current() const {
  if (training) return train;
  if (!eval) throw Error(invalid_argument("Module: eval mode needs an eval model (pass eval_model_path)"));
  return *eval;
}

Module::Module(const std::string& train_model_path, CheckpointState& state, const std::string& eval_model_path,
               const SessionOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->state = &state;
  impl_->options = options;
  impl_->train = open_mode(train_model_path, "Module train model", "training", options);
  if (!eval_model_path.empty()) {
    impl_->eval = std::make_unique<Impl::Mode>(open_mode(eval_model_path, "Module eval model", "eval", options));
  }
  const training_api::TrainingMetadata& meta = impl_->train.meta;
  for (const auto* names : {&meta.parameters, &meta.state}) {
    for (const std::string& name : *names) {
      if (!state.has_parameter(name)) {
        throw Error(invalid_argument("the checkpoint has no parameter '", name, "', which the training model '",
                                     impl_->train.path,
                                     "' takes: were the model and the checkpoint written together?"));
      }
    }
  }
}

Module::~Module() = default;
Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;

std::vector<Value> Module::operator()(const std::vector<Value>& user_inputs) {
  const Impl::Mode& mode = impl_->current();
  const Impl::Io& io = mode.io;
  if (user_inputs.size() != io.user_inputs.size()) {
    std::string names;
    for (const std::string& n : io.user_inputs) names += (names.empty() ? "" : ", ") + n;
    throw Error(invalid_argument("Module takes ", io.user_inputs.size(), " inputs (", names, ") for '", mode.path,
                                 "', got ", user_inputs.size()));
  }
  CheckpointState& state = *impl_->state;
  Feeds feeds;
  for (size_t i = 0; i < user_inputs.size(); ++i) feeds.emplace_back(io.user_inputs[i], user_inputs[i]);
  // The parameters are fed as they are: the session reads them, never writes.
  for (const std::string& name : io.param_inputs) feeds.emplace_back(name, state.parameter(name).data);
  std::vector<Value> results = mode.session->run(io.run_outputs, feeds);
  const size_t n_user = io.user_outputs.size();
  if (impl_->training) {
    for (size_t i = 0; i < io.grads.size(); ++i) {
      const std::string& param = io.grads[i].second;
      Value& value = results[n_user + i];
      auto it = state.grads_.find(param);
      if (state.grad_reset_ || it == state.grads_.end()) {
        // The run's fresh output becomes the accumulator.
        state.grads_[param] = own(std::move(value));
      } else {
        accumulate(it->second, value.tensor(), param);
      }
    }
    state.grad_reset_ = false;
    for (size_t i = 0; i < io.updates.size(); ++i) {
      state.mutable_parameter(io.updates[i].second).data = std::move(results[n_user + io.grads.size() + i].tensor());
    }
  }
  results.resize(n_user);
  return results;
}

void Module::lazy_reset_grad() { impl_->state->grad_reset_ = true; }

Module& Module::train(bool mode) {
  impl_->training = mode;
  return *this;
}

Module& Module::eval() {
  if (!impl_->eval)
    throw Error(invalid_argument("Module::eval(): the module has no eval model (pass eval_model_path)"));
  return train(false);
}

bool Module::is_training() const { return impl_->training; }

int64_t Module::parameters_size(bool trainable_only) const {
  int64_t size = 0;
  if (trainable_only) {
    for (const std::string& name : impl_->train.meta.parameters) size += impl_->state->parameter(name).data.size();
  } else {
    for (const Parameter& p : impl_->state->parameters()) size += p.data.size();
  }
  return size;
}

std::vector<std::string> Module::input_names() const { return impl_->current().io.user_inputs; }
std::vector<std::string> Module::output_names() const { return impl_->current().io.user_outputs; }
CheckpointState& Module::state() { return *impl_->state; }

struct Optimizer::Impl {
  CheckpointState* state = nullptr;
  std::unique_ptr<InferenceSession> session;
  training_api::OptimizerMetadata meta;
  std::vector<std::string> outputs;
};

Optimizer::Optimizer(const std::string& optimizer_model_path, Module& module) : impl_(std::make_unique<Impl>()) {
  const std::string path = model_path(optimizer_model_path, "Optimizer model");
  impl_->state = module.impl_->state;
  impl_->session = open_session(path, module.impl_->options);
  impl_->meta = value_or_throw(training_api::optimizer_metadata(impl_->session->metadata().custom_metadata_map, path));
  const std::vector<std::string>& trainable = module.impl_->train.meta.parameters;
  for (const std::string& p : impl_->meta.parameters) {
    if (std::find(trainable.begin(), trainable.end(), p) == trainable.end()) {
      throw Error(invalid_argument("the optimizer model '", path, "' updates '", p,
                                   "', which the training model does not train"));
    }
  }
  CheckpointState& state = *impl_->state;
  if (!state.optimizer_) state.optimizer_ = OptimizerState{0, impl_->meta.default_learning_rate, {}};
  for (const std::string& p : impl_->meta.parameters) {
    for (const std::string& key : impl_->meta.states) {
      Tensor& moment = state.optimizer_->moment(p, key);
      if (!moment.defined()) moment = zeros_like(state.parameter(p).data);
    }
  }
  for (const std::string& p : impl_->meta.parameters) {
    impl_->outputs.push_back(p + ".updated");
    for (const std::string& key : impl_->meta.states) impl_->outputs.push_back(str_cat(p, ".", key, ".updated"));
  }
}

Optimizer::~Optimizer() = default;
Optimizer::Optimizer(Optimizer&&) noexcept = default;
Optimizer& Optimizer::operator=(Optimizer&&) noexcept = default;

void Optimizer::step() {
  CheckpointState& state = *impl_->state;
  OptimizerState& opt = *state.optimizer_;
  const int64_t step = opt.step + 1;
  Feeds feeds;
  // As Python feeds them: the rate as a float32 scalar, the step as int64.
  feeds.emplace_back("learning_rate", Tensor::scalar<float>(static_cast<float>(opt.learning_rate)));
  feeds.emplace_back("step", Tensor::scalar<int64_t>(step));
  for (const std::string& p : impl_->meta.parameters) {
    auto grad = state.grads_.find(p);
    if (state.grad_reset_ || grad == state.grads_.end()) {
      throw Error(
          invalid_argument("Optimizer::step(): no gradient for '", p, "'; run a training step (module(...)) first"));
    }
    feeds.emplace_back(p, state.parameter(p).data);
    feeds.emplace_back(p + "_grad", grad->second);
    for (const std::string& key : impl_->meta.states) feeds.emplace_back(str_cat(p, ".", key), opt.moment(p, key));
  }
  std::vector<Value> results = impl_->session->run(impl_->outputs, feeds);
  size_t at = 0;
  for (const std::string& p : impl_->meta.parameters) {
    state.mutable_parameter(p).data = std::move(results[at++].tensor());
    for (const std::string& key : impl_->meta.states) opt.moment(p, key) = std::move(results[at++].tensor());
  }
  opt.step = step;
}

void Optimizer::set_learning_rate(double learning_rate) { impl_->state->optimizer_->learning_rate = learning_rate; }
double Optimizer::learning_rate() const { return impl_->state->optimizer_->learning_rate; }
int64_t Optimizer::step_count() const { return impl_->state->optimizer_->step; }

LinearLRScheduler::LinearLRScheduler(Optimizer& optimizer, int64_t warmup_step_count, int64_t total_step_count,
                                     double initial_lr)
    : optimizer_(&optimizer), warmup_(warmup_step_count), total_(total_step_count), initial_(initial_lr) {
  if (warmup_step_count < 0 || total_step_count < warmup_step_count) {
    throw Error(invalid_argument("LinearLRScheduler needs 0 <= warmup_step_count <= total_step_count, got ",
                                 warmup_step_count, " and ", total_step_count));
  }
  count_ = optimizer.step_count();
  optimizer.set_learning_rate(rate(count_));
}

// The same operations in the same order as Python's, so the rates are the
// same doubles.
double LinearLRScheduler::rate(int64_t count) const {
  if (count < warmup_)
    return initial_ * static_cast<double>(count) / static_cast<double>(std::max<int64_t>(1, warmup_));
  const double left = static_cast<double>(total_ - count) / static_cast<double>(std::max<int64_t>(1, total_ - warmup_));
  return initial_ * std::max(0.0, left);
}

void LinearLRScheduler::step() {
  ++count_;
  optimizer_->set_learning_rate(rate(count_));
}

}  // namespace onyx::training
