// Session and run options, named as onnxruntime names them so that scripts
// written for it read the same.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "onyx/tensor.h"

namespace onyx {

enum class GraphOptimizationLevel : int {
  kDisableAll = 0,
  kEnableBasic = 1,
  kEnableExtended = 2,
  kEnableLayout = 3,
  kEnableAll = 99,
};

enum class ExecutionMode : int { kSequential = 0, kParallel = 1 };

struct SessionOptions {
  GraphOptimizationLevel graph_optimization_level = GraphOptimizationLevel::kEnableAll;
  int intra_op_num_threads = 0;  // 0: one per physical core
  int inter_op_num_threads = 0;  // 0: default; used by ExecutionMode::kParallel
  ExecutionMode execution_mode = ExecutionMode::kSequential;
  bool enable_profiling = false;
  std::string profile_file_prefix = "onyx_profile";
  int log_severity_level = 2;  // 0 verbose, 1 info, 2 warning, 3 error, 4 fatal
  std::string log_id;
  std::string optimized_model_filepath;  // when set, the optimized graph is saved here
  std::vector<std::string> disabled_optimizers;
  bool enable_mem_pattern = true;
  bool enable_cpu_mem_arena = true;
  std::map<std::string, std::string> config_entries;
  // Options per execution provider name, as onnxruntime's (name, options)
  // pairs: {"OpenVINOExecutionProvider": {"device_type": "CPU"}}.
  std::map<std::string, std::map<std::string, std::string>> provider_options;
  // Graph-input dimensions fixed before shape inference: every dimension whose
  // dim_param (or denotation) is a key becomes the value (onnxruntime's
  // add_free_dimension_override_by_name / _by_denotation).
  std::map<std::string, int64_t> free_dimension_overrides;
  std::map<std::string, int64_t> free_dimension_overrides_by_denotation;
  // Tensors that replace the model's initializers of the same name, type and
  // shape (onnxruntime's add_initializer). The session shares their buffers.
  std::vector<std::pair<std::string, Tensor>> initializer_overrides;
};

struct RunOptions {
  int log_severity_level = 2;
  std::string run_tag;
  bool terminate = false;  // set from another thread to stop a run between nodes
};

}  // namespace onyx
