// Trains with the C++ training API (include/onyx/training.h) on artifacts
// that Python's generate_artifacts wrote; tests/python/test_training_cxx.py
// runs the same steps in Python and compares.
//
//   onyx_train_cxx train ARTIFACTS DATA OUT STEPS OUTPUT_NAME [RESUME_CHECKPOINT]
//     DATA is a checkpoint holding "x" and "target", one batch per step along
//     the first axis. Writes OUT/cxx.ckpt (with the optimizer state),
//     OUT/eval.ckpt (the eval mode's outputs on the first batch, by output
//     name) and OUT/inference.onnx (export_model_for_inferencing of
//     OUTPUT_NAME).
//   onyx_train_cxx copy IN OUT
//     Loads a checkpoint and saves it again, optimizer state included.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "onyx/training.h"

using onyx::training::CheckpointState;

namespace {

// Batch `i` of a [steps, ...] tensor, sharing its buffer.
onyx::Tensor batch(const onyx::Tensor& all, int64_t i) {
  onyx::Shape shape(all.shape().begin() + 1, all.shape().end());
  const size_t bytes = all.bytes() / static_cast<size_t>(all.dim(0));
  auto* data = static_cast<char*>(const_cast<void*>(all.raw_data())) + bytes * static_cast<size_t>(i);
  return onyx::Tensor::borrow(all.dtype(), shape, data);
}

int train(const std::string& artifacts, const std::string& data_path, const std::string& out, int64_t steps,
          const std::string& output_name, const std::string& resume) {
  CheckpointState state = CheckpointState::load_checkpoint(resume.empty() ? artifacts + "/checkpoint" : resume);
  const CheckpointState data = CheckpointState::load_checkpoint(data_path);
  const onyx::Tensor& x = data.parameter("x").data;
  const onyx::Tensor& target = data.parameter("target").data;

  onyx::training::Module module(artifacts + "/training_model.onnx", state, artifacts + "/eval_model.onnx");
  onyx::training::Optimizer optimizer(artifacts + "/optimizer_model.onnx", module);
  onyx::training::LinearLRScheduler scheduler(optimizer, 2, 10, 0.05);
  double loss = 0.0;
  for (int64_t i = 0; i < steps; ++i) {
    std::vector<onyx::Value> outputs = module({batch(x, i), batch(target, i)});
    loss = outputs[0].tensor().data<float>()[0];
    optimizer.step();
    scheduler.step();
    module.lazy_reset_grad();
    std::printf("step %lld loss %.9g lr %.17g\n", static_cast<long long>(optimizer.step_count()), loss,
                optimizer.learning_rate());
  }
  state.set_property("cxx_steps", steps);
  state.set_property("cxx_last_loss", loss);
  state.set_property("cxx_note", std::string("trained in C++"));
  CheckpointState::save_checkpoint(state, out + "/cxx.ckpt", true);

  module.eval();
  std::vector<onyx::Value> outputs = module({batch(x, 0), batch(target, 0)});
  CheckpointState eval_outputs;
  const std::vector<std::string> names = module.output_names();
  for (size_t i = 0; i < names.size(); ++i) eval_outputs.add_parameter(names[i], outputs[i].tensor(), false);
  CheckpointState::save_checkpoint(eval_outputs, out + "/eval.ckpt");
  module.export_model_for_inferencing(out + "/inference.onnx", {output_name});
  std::printf("trainable parameters %lld\n", static_cast<long long>(module.parameters_size()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 3 && args[0] == "copy") {
      CheckpointState::save_checkpoint(CheckpointState::load_checkpoint(args[1]), args[2], true);
      return 0;
    }
    if ((args.size() == 6 || args.size() == 7) && args[0] == "train") {
      return train(args[1], args[2], args[3], std::atoll(args[4].c_str()), args[5], args.size() == 7 ? args[6] : "");
    }
  } catch (const onyx::Error& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: onyx_train_cxx train ARTIFACTS DATA OUT STEPS OUTPUT_NAME [RESUME_CHECKPOINT]\n"
               "       onyx_train_cxx copy IN OUT\n");
  return 2;
}
