// Session and run options, named as onnxruntime names them so that scripts
// written for it read the same.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "onyx/tensor.h"

namespace onyx {

class KernelRegistry;

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
  // Kernels of users' operators (custom ops), one registry per custom op
  // domain, made by the C API (AddCustomOpDomain, RegisterCustomOpsLibrary_V2)
  // or register_custom_ops_library(). They run on the CPU provider and take
  // precedence over its own kernels for the same op.
  std::vector<std::shared_ptr<const KernelRegistry>> custom_op_registries;
};

// A flag one thread sets while another reads it (RunOptions::terminate).
// Copies take the value, not the identity.
class AtomicFlag {
 public:
  AtomicFlag() = default;
  AtomicFlag(bool value) : value_(value) {}  // NOLINT: assigned like a bool
  AtomicFlag(const AtomicFlag& other) : value_(other.get()) {}
  AtomicFlag& operator=(const AtomicFlag& other) {
    set(other.get());
    return *this;
  }
  AtomicFlag& operator=(bool value) {
    set(value);
    return *this;
  }
  operator bool() const { return get(); }  // NOLINT
  bool get() const { return value_.load(std::memory_order_relaxed); }
  void set(bool value) { value_.store(value, std::memory_order_relaxed); }

 private:
  std::atomic<bool> value_{false};
};

struct RunOptions {
  int log_severity_level = 2;
  std::string run_tag;
  // Set from another thread to stop a run between nodes.
  AtomicFlag terminate;
  // onnxruntime's run config entries.
  std::map<std::string, std::string> config_entries;
};

}  // namespace onyx
